//! OpenCode's profile: what `runread-sessions` knows of OpenCode's database
//! ([`crate::agents`]).

use std::path::{Path, PathBuf};

use crate::file::{EvidenceFile, FileIdentity, ReadError};
use crate::model::{Agent, EntrySummary, MessageView, Resume, Scan, ScanError};
use crate::profile::{AgentProfile, DefaultPlace, UsageKind};
use crate::records::{CHILDREN_UNOBSERVED_PASSIVE, ChildRecord, MetadataSources, Records};
use crate::runs::Branch;
use crate::scan::ReadAhead;

use super::database::{self, EventLog};

pub(crate) struct OpenCode;

/// OpenCode, registered in [`crate::agents::profile`].
pub(crate) static PROFILE: OpenCode = OpenCode;

impl AgentProfile for OpenCode {
    fn agent(&self) -> Agent {
        Agent::OpenCode
    }

    fn dir_flag(&self) -> &'static str {
        "opencode"
    }

    fn dir_help(&self) -> &'static str {
        "OpenCode's data directory, holding opencode.db (default: $XDG_DATA_HOME/opencode, else ~/.local/share/opencode)"
    }

    /// `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`.
    fn default_place(&self) -> DefaultPlace {
        DefaultPlace {
            env: "XDG_DATA_HOME",
            under_env: &["opencode"],
            under_home: &[".local", "share", "opencode"],
        }
    }

    /// One name per top-level session of each database in `dir` (`<database>#<session id>`;
    /// a subagent's session is a child of the run that started it, not a session of its own).
    fn session_files(&self, dir: &Path) -> Vec<PathBuf> {
        database::session_names(dir)
    }

    /// The session's event log, read-only (the `database` module).
    fn open(&self, path: &Path, expect: Option<&FileIdentity>) -> Result<EvidenceFile, ReadError> {
        EvidenceFile::from_records(path, Box::new(EventLog::open(path)?), expect)
    }

    /// Its databases are at the top of the data folder.
    fn sessions_in_subfolders(&self) -> bool {
        false
    }

    fn identity(&self, path: &Path) -> Result<FileIdentity, ReadError> {
        database::identity(path)
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
                run_model: "assistant_messages",
                header_line: "session_created",
            },
            provider_in_run_model: false,
            unrecorded_end: None,
        }
    }

    /// `tokens` on each assistant message (its last event: each model call once).
    fn usage_kind(&self) -> UsageKind {
        UsageKind::PerMessage {
            provider_in_model: false,
        }
    }

    /// Its subagents: each `task` tool call names the child session it ran in.
    fn children(
        &self,
        session_file: &Path,
        session_id: &str,
        tool_call_lines: &[Vec<u8>],
    ) -> Option<Vec<Option<ChildRecord>>> {
        Some(super::children(session_file, session_id, tool_call_lines))
    }

    fn rewrites(&self, old: &[EntrySummary], new: &[EntrySummary]) -> bool {
        super::rewrites(old, new)
    }
}
