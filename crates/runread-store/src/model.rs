//! Records the store keeps.

use serde::{Deserialize, Serialize};

use runread_core::{Feature, Target};
use runread_sessions::{EntrySummary, FileIdentity, Header, Run};

/// A registered workspace root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    pub id: String,
    pub name: String,
    pub path: String,
    pub revision: u64,
    pub enabled: bool,
}

impl Workspace {
    /// Whether `cwd` (a session's working directory) lies inside this workspace.
    pub fn contains(&self, cwd: &str) -> bool {
        let root = self.path.trim_end_matches('/');
        cwd == root
            || cwd
                .strip_prefix(root)
                .is_some_and(|rest| rest.starts_with('/'))
            || root.is_empty()
    }
}

/// One ingested session file and where ingest stopped reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub session_id: String,
    pub agent: String,
    pub path: String,
    pub workspace_id: String,
    pub generation: u64,
    pub header: Header,
    pub identity: FileIdentity,
    /// Bytes consumed: the file offset just past the last complete line read.
    pub consumed: u64,
    /// Lines consumed, the header included.
    pub lines: u64,
    /// SHA-256 of the last complete line consumed (with its newline), to detect rewrites.
    pub tail_sha256: Option<String>,
    /// Line numbers of lines that could not be parsed.
    pub malformed_lines: Vec<u64>,
    /// The file ended in an unfinished line at the last read.
    pub torn: bool,
    pub branch_complete: bool,
    pub session_name: Option<String>,
    pub saved_model: Option<String>,
    pub ingested_at_ms: i64,
}

/// One ingest pass over one file.
#[derive(Debug, Clone)]
pub struct IngestCommit {
    pub session: SessionRecord,
    /// Whether `session.generation` is new: replaces all entries and runs of the session.
    pub new_generation: bool,
    pub new_entries: Vec<EntrySummary>,
    pub runs: Vec<Run>,
}

/// A run with the target that names it and the session file it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    pub target: Target,
    pub run: Run,
    pub session_path: String,
    pub identity: FileIdentity,
    pub ingested_at_ms: i64,
    pub workspace_name: String,
    pub workspace_path: String,
}

/// What an owner granted: one key, one exact target, named features, until an expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub id: String,
    pub key_hash: String,
    pub label: String,
    pub target: Target,
    pub features: Vec<Feature>,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

impl Grant {
    pub fn is_live(&self, now_ms: i64) -> bool {
        self.revoked_at_ms.is_none() && self.expires_at_ms > now_ms
    }
}
