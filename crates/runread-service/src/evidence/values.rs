//! Values more than one tool's output (or module) speaks: the coverage of a kind of work and the
//! reasons a history has a gap.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a kind of work's evidence is covered whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    Complete,
    Incomplete,
}

/// Why a run's history has a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GapReason {
    /// Retention removed events from its start.
    Retention,
    /// A malformed line touches the run.
    Malformed,
    /// The file cannot tell how the run ends.
    TailUnknown,
    /// The session's parent chain is broken.
    BranchIncomplete,
    /// A line no longer reads back as ingested.
    SourceChanged,
    /// The fork's parent, whose history it inherits, is not granted.
    ForkParentNotGranted,
    /// The fork's parent changed where the fork's history begins.
    ForkParentChanged,
}

/// A new id of runread's own records: `prefix` (`r-` a reader, `g-` a grant, `a-` an artifact,
/// `w-` a wait, `sl-` a line of the snapshot log) and 64 random bits in lowercase hex.
pub(crate) fn random_id(prefix: &str) -> Result<String, String> {
    let bytes = runread_core::random_bytes::<8>().map_err(|e| e.to_string())?;
    Ok(bytes.iter().fold(prefix.to_owned(), |mut id, b| {
        id.push_str(&format!("{b:02x}"));
        id
    }))
}
