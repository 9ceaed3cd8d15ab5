//! The runs of this invocation as the store knows them: each tracked run's exact target and run
//! id once the session file shows it, and its proof so far.

use std::path::Path;

use runread_core::Target;
use runread_store::{Index, Proof};

use crate::machine::Machine;
use crate::proof::{Pinned, Refusal, Verified};
use crate::run::OnPinned;

#[derive(Default)]
pub(crate) struct RunBook {
    /// One per tracked run: its target and run id once the session file shows it.
    pub(crate) located: Vec<Option<(Target, String)>>,
    /// One per tracked run.
    pub(crate) proofs: Vec<Proof>,
    /// Runs whose verification met a file still being written: verified again once the agent
    /// has exited.
    pub(crate) retry_after_exit: Vec<usize>,
}

impl RunBook {
    /// One slot per tracked run.
    pub(crate) fn grow(&mut self, runs: usize) {
        self.located.resize(runs.max(self.located.len()), None);
        self.proofs
            .resize(runs.max(self.proofs.len()), Proof::Pending);
    }

    pub(crate) fn proof(&self, n: usize) -> Proof {
        self.proofs.get(n).cloned().unwrap_or(Proof::Pending)
    }

    pub(crate) fn set_proof(&mut self, n: usize, proof: Proof) {
        if let Some(slot) = self.proofs.get_mut(n) {
            *slot = proof;
        }
    }

    /// Finds the run id of every tracked run not located yet in the store's index of the pinned
    /// session at `path` (see [`Machine::run_starts`]); `on_pinned` hears of each one found.
    pub(crate) fn locate(
        &mut self,
        store: &dyn Index,
        machine: &dyn Machine,
        (path, pinned): (&Path, &Pinned),
        on_pinned: Option<&OnPinned>,
    ) {
        let runs = machine.run_count();
        self.grow(runs);
        if self.located.iter().take(runs).all(Option::is_some) {
            return;
        }
        let Ok(Some(session)) = store.session_by_path(&path.to_string_lossy()) else {
            return;
        };
        if session.session_id != pinned.session_id {
            return;
        }
        let Ok(entries) = store.entries(&session.session_id, session.generation) else {
            return;
        };
        let starts = machine.run_starts(&entries, pinned.leaf.as_deref());
        for (slot, start) in self.located.iter_mut().zip(starts) {
            let Some(start) = start.filter(|_| slot.is_none()) else {
                continue;
            };
            if let Ok(Some(run)) = store.run(&session.session_id, session.generation, &start) {
                if let Some(hear) = on_pinned {
                    hear(&run.target);
                }
                *slot = Some((run.target.clone(), start));
            }
        }
    }

    /// Locates run `n` as the run `verified` in the store's index of the session at `path`.
    pub(crate) fn locate_verified(
        &mut self,
        store: &dyn Index,
        n: usize,
        (path, pinned): (&Path, &Pinned),
        verified: &Verified,
    ) -> Result<(), Refusal> {
        let session = store
            .session_by_path(&path.to_string_lossy())
            .ok()
            .flatten()
            .filter(|s| s.session_id == pinned.session_id)
            .ok_or(Refusal::NotOnBranch)?;
        let run = store
            .run(
                &session.session_id,
                session.generation,
                &verified.run.run_id,
            )
            .ok()
            .flatten()
            .ok_or(Refusal::NotOnBranch)?;
        if let Some(slot) = self.located.get_mut(n) {
            *slot = Some((run.target.clone(), verified.run.run_id.clone()));
        }
        Ok(())
    }
}
