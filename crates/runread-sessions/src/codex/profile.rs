//! Codex's profile: what `runread-sessions` knows of Codex's rollouts ([`crate::agents`]).

use std::path::{Path, PathBuf};

use crate::file::EvidenceFile;
use crate::model::{Agent, EntrySummary, ForkBase, MessageView, Resume, Scan, ScanError};
use crate::profile::{AgentProfile, DefaultPlace, UsageKind};
use crate::records::{MetadataSources, Records};
use crate::runs::Branch;
use crate::scan::ReadAhead;

/// How Codex names its rollout files (`rollout-<local time>-<thread id>.jsonl`).
pub const ROLLOUT_PREFIX: &str = "rollout-";

pub(crate) struct Codex;

/// Codex, registered in [`crate::agents::profile`].
pub(crate) static PROFILE: Codex = Codex;

impl AgentProfile for Codex {
    fn agent(&self) -> Agent {
        Agent::Codex
    }

    fn dir_flag(&self) -> &'static str {
        "codex"
    }

    fn dir_help(&self) -> &'static str {
        "Codex's sessions directory (default: $CODEX_HOME/sessions, else ~/.codex/sessions)"
    }

    /// `$CODEX_HOME/sessions`, else `~/.codex/sessions`.
    fn default_place(&self) -> DefaultPlace {
        DefaultPlace {
            env: "CODEX_HOME",
            under_env: &["sessions"],
            under_home: &[".codex", "sessions"],
        }
    }

    /// `rollout-*.jsonl` (the date folders are local time: nothing is taken from their names).
    fn session_files(&self, dir: &Path) -> Vec<PathBuf> {
        crate::walk::jsonl_files(dir, |_, name| {
            name.to_str().is_some_and(|n| n.starts_with(ROLLOUT_PREFIX))
        })
    }

    fn scan(
        &self,
        file: &EvidenceFile,
        resume: Resume<'_>,
        ahead: ReadAhead,
    ) -> Result<Scan, ScanError> {
        super::scan(file, resume, ahead)
    }

    fn cut_runs(&self, entries: &[EntrySummary], malformed: &[u64], torn: bool) -> Branch {
        super::cut_runs(entries, malformed, torn)
    }

    fn message_view(&self, line: &[u8]) -> Option<MessageView> {
        super::message_view(line)
    }

    fn records(&self) -> Records {
        Records {
            child_records: false,
            children_unobserved_supervised: "Codex's event stream and rollout file do not show child agents",
            metadata: MetadataSources {
                saved_model: "turn_context",
                run_model: "turn_context",
                header_line: "session_meta",
            },
            provider_in_run_model: false,
            unrecorded_end: None,
        }
    }

    fn usage_kind(&self) -> UsageKind {
        UsageKind::RunningTotals
    }

    fn holds_fork_base(&self, file: &EvidenceFile, base: &ForkBase) -> bool {
        super::holds_fork_base(file, base)
    }
}
