//! Gemini CLI's profile: what `runread-sessions` knows of Gemini CLI's chat files
//! ([`crate::agents`]).

use std::path::{Path, PathBuf};

use crate::file::EvidenceFile;
use crate::model::{Agent, EntrySummary, MessageView, Resume, Scan, ScanError};
use crate::profile::{AgentProfile, DefaultPlace, UsageKind};
use crate::records::{CHILDREN_UNOBSERVED_PASSIVE, ChildRecord, MetadataSources, Records};
use crate::runs::Branch;
use crate::scan::ReadAhead;

pub(crate) struct Gemini;

/// Gemini CLI, registered in [`crate::agents::profile`].
pub(crate) static PROFILE: Gemini = Gemini;

impl AgentProfile for Gemini {
    fn agent(&self) -> Agent {
        Agent::Gemini
    }

    fn dir_flag(&self) -> &'static str {
        "gemini"
    }

    fn dir_help(&self) -> &'static str {
        "Gemini CLI's tmp directory (default: $GEMINI_CLI_HOME/.gemini/tmp, else ~/.gemini/tmp)"
    }

    /// `$GEMINI_CLI_HOME/.gemini/tmp` (the variable moves Gemini CLI's `~`), else
    /// `~/.gemini/tmp`.
    fn default_place(&self) -> DefaultPlace {
        DefaultPlace {
            env: "GEMINI_CLI_HOME",
            under_env: &[".gemini", "tmp"],
            under_home: &[".gemini", "tmp"],
        }
    }

    /// `<dir>/<project>/chats/session-*.jsonl`: two levels down (a subagent's file, under
    /// `chats/<session id>/`, is not a session: it is a child of the run that started it).
    fn session_files(&self, dir: &Path) -> Vec<PathBuf> {
        crate::walk::jsonl_files(dir, |depth, name| {
            depth == 2
                && name
                    .to_str()
                    .is_some_and(|n| n.starts_with(super::SESSION_FILE_PREFIX))
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
            child_records: true,
            children_unobserved_supervised: CHILDREN_UNOBSERVED_PASSIVE,
            metadata: MetadataSources {
                saved_model: "not_recorded",
                run_model: "gemini_messages",
                header_line: "session_metadata",
            },
            provider_in_run_model: false,
            unrecorded_end: Some(super::END_NOT_RECORDED),
        }
    }

    /// `tokens` on each `gemini` message (the record's last line: each response once).
    fn usage_kind(&self) -> UsageKind {
        UsageKind::PerMessage {
            provider_in_model: false,
        }
    }

    /// Its subagents: each `invoke_agent` call names the agent id whose own file is
    /// `chats/<session id>/<agent id>.jsonl` beside the session file.
    fn children(
        &self,
        session_file: &Path,
        session_id: &str,
        tool_call_lines: &[Vec<u8>],
    ) -> Option<Vec<Option<ChildRecord>>> {
        let agents: Vec<String> = tool_call_lines
            .iter()
            .flat_map(|line| super::subagent_calls(line))
            .collect();
        Some(
            agents
                .iter()
                .map(|id| super::subagent_record(session_file, session_id, id))
                .collect(),
        )
    }

    fn rewrites(&self, old: &[EntrySummary], new: &[EntrySummary]) -> bool {
        super::rewrites(old, new)
    }
}
