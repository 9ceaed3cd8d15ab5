//! Supervised evidence as the service sees it: the supervisor's record of a run from the store,
//! and its journal entry checked against the digest the store acknowledged.

use runread_core::limits::WORK_STATE_FRESH_MS;
use runread_journal::{Journal, JournalError, Namespace};
use runread_store::{Proof, RunRecord, SupervisedRun};

use crate::evidence::Reading;

/// What became of the journal entry a `Journaled` proof names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JournalCheck {
    /// No journal entry to check: the proof is not journaled, or there is no journal configured.
    NotApplicable,
    /// The entry is there, private, hashes to the acknowledged digest, names this run, and says
    /// what the store's proof says.
    Verified,
    /// The entry is gone (pruned past retention, or removed).
    Missing,
    /// The entry is there but does not verify, or disagrees with the store.
    Invalid,
}

/// A run's supervised record with its journal entry checked.
#[derive(Debug, Clone)]
pub(crate) struct Supervised {
    pub record: SupervisedRun,
    pub journal: JournalCheck,
}

impl Supervised {
    /// The supervised evidence of `run`, if a supervisor recorded it. Store failure: `Err`.
    pub(crate) fn observe(
        svc: &Reading,
        run: &RunRecord,
    ) -> Result<Option<Supervised>, runread_store::StoreError> {
        let t = &run.target;
        let Some(record) = svc
            .store
            .supervised(&t.session_id, t.generation, &t.run_id)?
        else {
            return Ok(None);
        };
        let journal = match (&record.proof, &svc.config.journal_root) {
            (
                Proof::Journaled {
                    journal_name,
                    journal_sha256,
                    final_entry_id,
                    message_sha256,
                    text_sha256,
                    text_bytes,
                    truncated,
                },
                Some(root),
            ) => {
                let ns = Namespace {
                    instance: t.instance.clone(),
                    workspace_id: t.workspace_id.clone(),
                    session_id: t.session_id.clone(),
                    generation: t.generation,
                    run_id: t.run_id.clone(),
                };
                match Journal::at(root, &t.instance).read_verified(
                    journal_name,
                    journal_sha256,
                    &ns,
                ) {
                    Ok(e)
                        if e.final_entry_id == *final_entry_id
                            && e.message_sha256 == *message_sha256
                            && e.text_sha256 == *text_sha256
                            && e.text_bytes == *text_bytes
                            && e.truncated == *truncated
                            && e.start_entry_id == t.run_id =>
                    {
                        JournalCheck::Verified
                    }
                    Ok(_) => JournalCheck::Invalid,
                    Err(JournalError::Missing) => JournalCheck::Missing,
                    Err(e) => {
                        tracing::warn!(error = %e, "journal entry refused");
                        JournalCheck::Invalid
                    }
                }
            }
            (Proof::Journaled { .. }, None) => JournalCheck::Invalid,
            _ => JournalCheck::NotApplicable,
        };
        Ok(Some(Supervised { record, journal }))
    }

    /// The record is current: the supervisor wrote it within the freshness window, or it is
    /// the supervisor's final word (it stopped supervising).
    pub(crate) fn current(&self, now_ms: i64) -> bool {
        !self.record.supervising
            || now_ms.saturating_sub(self.record.updated_at_ms) <= WORK_STATE_FRESH_MS
    }

    /// The supervisor is alive and its record fresh: a live snapshot.
    pub(crate) fn live(&self, now_ms: i64) -> bool {
        self.record.supervising && self.current(now_ms)
    }
}
