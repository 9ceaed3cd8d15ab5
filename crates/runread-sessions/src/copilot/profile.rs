//! Copilot CLI's profile: what `runread-sessions` knows of GitHub Copilot CLI's session files
//! ([`crate::agents`]).

use std::path::{Path, PathBuf};

use crate::file::EvidenceFile;
use crate::model::{Agent, EntrySummary, MessageView, Resume, Scan, ScanError};
use crate::profile::{AgentProfile, DefaultPlace, UsageKind};
use crate::records::{CHILDREN_UNOBSERVED_PASSIVE, ChildRecord, MetadataSources, Records};
use crate::runs::Branch;
use crate::scan::ReadAhead;

pub(crate) struct Copilot;

/// Copilot CLI, registered in [`crate::agents::profile`].
pub(crate) static PROFILE: Copilot = Copilot;

impl AgentProfile for Copilot {
    fn agent(&self) -> Agent {
        Agent::Copilot
    }

    fn dir_flag(&self) -> &'static str {
        "copilot"
    }

    fn dir_help(&self) -> &'static str {
        "Copilot CLI's session-state directory (default: $COPILOT_HOME/session-state, else ~/.copilot/session-state)"
    }

    /// `$COPILOT_HOME/session-state` (the variable replaces Copilot CLI's `~/.copilot`), else
    /// `~/.copilot/session-state`.
    fn default_place(&self) -> DefaultPlace {
        DefaultPlace {
            env: "COPILOT_HOME",
            under_env: &["session-state"],
            under_home: &[".copilot", "session-state"],
        }
    }

    /// `<dir>/<session id>/events.jsonl`: one level down.
    fn session_files(&self, dir: &Path) -> Vec<PathBuf> {
        crate::walk::jsonl_files(dir, |depth, name| depth == 1 && name == super::EVENTS_FILE)
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
            child_records: true,
            children_unobserved_supervised: CHILDREN_UNOBSERVED_PASSIVE,
            metadata: MetadataSources {
                saved_model: "session_start",
                run_model: "assistant_messages",
                header_line: "session_start",
            },
            provider_in_run_model: false,
            // Each model call's `session.usage_record` says how it ended (`finishReason`).
            unrecorded_end: None,
        }
    }

    /// `session.usage_record`: one per model call, the main agent's and its subagents'.
    fn usage_kind(&self) -> UsageKind {
        UsageKind::PerCallRecords
    }

    /// Its subagents: each `task` call of the run, recorded inline in the session file
    /// (`subagent.started`, then `subagent.completed` or `subagent.failed`).
    fn children(
        &self,
        session_file: &Path,
        _session_id: &str,
        tool_call_lines: &[Vec<u8>],
    ) -> Option<Vec<Option<ChildRecord>>> {
        let calls: Vec<String> = tool_call_lines
            .iter()
            .flat_map(|line| super::subagent_calls(line))
            .collect();
        if calls.is_empty() {
            return Some(Vec::new());
        }
        Some(super::subagent_records(session_file, &calls))
    }
}
