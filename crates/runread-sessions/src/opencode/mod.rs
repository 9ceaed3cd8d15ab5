//! OpenCode (`opencode-ai`) sessions, read from its SQLite database (see [`database`]): each
//! session's event log, one record per line.

mod database;
mod profile;
pub(crate) use profile::PROFILE;

pub use database::{DATABASE_BUSY_TIMEOUT_MS, DATABASES_PER_FOLDER_MAX, SESSIONS_PER_DATABASE_MAX};

use std::path::Path;

use crate::file::EvidenceFile;
use crate::model::{EntrySummary, MessageView, Resume, Scan, ScanError};
use crate::records::ChildRecord;
use crate::runs::Branch;
use crate::scan::ReadAhead;

pub(crate) fn scan(
    _file: &EvidenceFile,
    _resume: Resume<'_>,
    _ahead: ReadAhead,
) -> Result<Scan, ScanError> {
    Err(ScanError::NotASession)
}

pub(crate) fn cut_runs(_entries: &[EntrySummary], _malformed: &[u64], _torn: bool) -> Branch {
    Branch {
        leaf_id: None,
        runs: Vec::new(),
        complete: false,
        session_name: None,
        saved_model: None,
    }
}

pub(crate) fn message_view(_line: &[u8]) -> Option<MessageView> {
    None
}

pub(crate) fn children(
    _session_file: &Path,
    _session_id: &str,
    _tool_call_lines: &[Vec<u8>],
) -> Vec<Option<ChildRecord>> {
    Vec::new()
}

pub(crate) fn rewrites(_old: &[EntrySummary], _new: &[EntrySummary]) -> bool {
    false
}
