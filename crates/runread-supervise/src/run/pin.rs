//! Where the session file is, once known, and what was pinned of it: its session and cwd at the
//! stream's header, its identity and the point a run must follow when the file exists.

use std::path::PathBuf;

use crate::machine::Machine;
use crate::proof::{self, Pinned, Refusal};
use crate::run::prove::settling;

#[derive(Default)]
pub(crate) struct SessionPin {
    pub(crate) path: Option<PathBuf>,
    pub(crate) pinned: Option<Pinned>,
    /// Pinning failed (a link, several links, another cwd): no proof can be built.
    pub(crate) refused: Option<Refusal>,
}

impl SessionPin {
    /// Pins the session at the stream's header: its id and cwd (the supervised `cwd` when the
    /// stream names none), and — when the file already exists (a continued session) — its
    /// identity and the point pinned by the agent's rule.
    pub(crate) async fn at_start(&mut self, machine: &dyn Machine, cwd: &str) {
        let Some((session_id, session_cwd)) = machine.session() else {
            return;
        };
        let session_cwd = session_cwd.unwrap_or_else(|| cwd.to_owned());
        let mut pinned = Pinned {
            session_id: session_id.clone(),
            cwd: session_cwd.clone(),
            identity: None,
            leaf: None,
        };
        // The agent's own spelling of its folder against runread's canonical one: on a
        // case-insensitive volume (macOS) they may differ by case and still be one folder.
        if !runread_platform::names::same(&session_cwd, cwd) {
            self.refused = Some(Refusal::OtherSession);
        }
        if let Some(path) = machine.find_session_file(&session_id, &session_cwd) {
            let read = settling(|| machine.pin(&path, &pinned), |r| r == Refusal::Busy).await;
            match read {
                Ok((identity, leaf)) if identity.nlink == 1 => {
                    pinned.identity = Some(identity);
                    pinned.leaf = leaf;
                }
                Ok(_) => self.refused = Some(Refusal::HardLinked),
                Err(r) => self.refused = Some(r),
            }
            self.path = Some(path);
        }
        self.pinned = Some(pinned);
    }

    /// A new session's file appears after the first message: pinned when first seen.
    pub(crate) fn when_seen(&mut self, machine: &dyn Machine) {
        let Some(pinned) = self.pinned.as_mut() else {
            return;
        };
        if self.path.is_none() {
            self.path = machine.find_session_file(&pinned.session_id, &pinned.cwd);
        }
        if let (Some(path), None) = (&self.path, &pinned.identity) {
            match proof::pin_identity(path) {
                Ok(id) => pinned.identity = Some(id),
                Err(Refusal::NotFound) => {}
                Err(r) => self.refused = Some(r),
            }
        }
    }

    /// The file and its pin, for a proof; a refusal when pinning failed or nothing is known yet.
    pub(crate) fn for_proof(
        &mut self,
        machine: &dyn Machine,
    ) -> Result<(PathBuf, Pinned), Refusal> {
        if let Some(r) = self.refused {
            return Err(r);
        }
        self.when_seen(machine);
        if let Some(r) = self.refused {
            return Err(r);
        }
        let path = self.path.clone().ok_or(Refusal::NotFound)?;
        let pinned = self.pinned.clone().ok_or(Refusal::NotFound)?;
        Ok((path, pinned))
    }
}
