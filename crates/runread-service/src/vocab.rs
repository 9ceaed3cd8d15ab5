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
