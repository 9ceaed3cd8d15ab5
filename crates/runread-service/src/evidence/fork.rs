//! What a forked session inherits. A fork's file (Codex's) holds only its own turns; the history
//! before them is its parent's, in the parent's file, and stays the parent's (its runs keep the
//! parent's target). A reader of the fork is told whether that history is still there as the fork
//! recorded it, never shown it as the fork's own; of a parent outside the fork's workspace it is
//! told nothing, not even whether it exists.

use crate::evidence::values::GapReason;
use runread_store::{SessionRecord, Store, StoreError};

/// Whether the parent still holds what the fork inherits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inherited {
    /// The parent session is ingested and its file holds the fork's base line where the fork
    /// says.
    Available,
    /// No ingested session of the fork's workspace is the parent: never read, outside every
    /// workspace, removed — or read into another workspace, which the fork's reader is not
    /// granted and must not learn exists (all four are told alike).
    NotGranted,
    /// The parent's file is gone, replaced, or no longer holds the base line.
    Changed,
}

impl Inherited {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Inherited::Available => "available",
            Inherited::NotGranted => "not_granted",
            Inherited::Changed => "changed",
        }
    }

    /// The history gap reason a reader of the fork is given, if any.
    pub(crate) fn gap_reason(self) -> Option<GapReason> {
        match self {
            Inherited::Available => None,
            Inherited::NotGranted => Some(GapReason::ForkParentNotGranted),
            Inherited::Changed => Some(GapReason::ForkParentChanged),
        }
    }
}

/// A fork's parent and the state of what it inherits from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fork {
    pub parent_session_id: String,
    pub inherited: Inherited,
}

/// `session`'s fork, when it is one. Only a parent in the fork's own workspace is looked at (its
/// file opened); any other is [`Inherited::NotGranted`] before its file is touched.
pub(crate) fn of(store: &dyn Store, session: &SessionRecord) -> Result<Option<Fork>, StoreError> {
    let Some(base) = &session.header.fork else {
        return Ok(None);
    };
    let inherited = match store.session(&base.parent_session_id)? {
        Some(parent)
            if parent.agent == session.agent && parent.workspace_id == session.workspace_id =>
        {
            if runread_sessions::agents::parent_holds_fork_base(
                parent.agent,
                std::path::Path::new(&parent.path),
                &parent.identity,
                base,
            ) {
                Inherited::Available
            } else {
                Inherited::Changed
            }
        }
        _ => Inherited::NotGranted,
    };
    Ok(Some(Fork {
        parent_session_id: base.parent_session_id.clone(),
        inherited,
    }))
}
