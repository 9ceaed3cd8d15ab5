//! Pi's profile: what `runread-sessions` knows of Pi's records ([`crate::agents`]).

use std::path::{Path, PathBuf};

use crate::file::EvidenceFile;
use crate::model::{Agent, EntrySummary, MessageView, Resume, Scan, ScanError};
use crate::profile::{AgentProfile, DefaultPlace, UsageKind};
use crate::records::{MetadataSources, Records};
use crate::runs::Branch;
use crate::scan::ReadAhead;

pub(crate) struct Pi;

/// Pi, registered in [`crate::agents::profile`].
pub(crate) static PROFILE: Pi = Pi;

impl AgentProfile for Pi {
    fn agent(&self) -> Agent {
        Agent::Pi
    }

    fn dir_flag(&self) -> &'static str {
        "pi"
    }

    fn dir_help(&self) -> &'static str {
        "Pi's sessions directory (default: $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions)"
    }

    /// `$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions`.
    fn default_place(&self) -> DefaultPlace {
        DefaultPlace {
            env: "PI_CODING_AGENT_DIR",
            under_env: &["sessions"],
            under_home: &[".pi", "agent", "sessions"],
        }
    }

    /// Every `*.jsonl` at most [`crate::walk::SCAN_DEPTH_MAX`] levels down.
    fn session_files(&self, dir: &Path) -> Vec<PathBuf> {
        crate::walk::session_files(dir)
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
            children_unobserved_supervised: "extensions can run agents inside Pi's own process; runread cannot see them",
            metadata: MetadataSources {
                saved_model: "model_change",
                run_model: "assistant_messages",
                header_line: "session_header",
            },
            provider_in_run_model: true,
            unrecorded_end: None,
        }
    }

    fn usage_kind(&self) -> UsageKind {
        UsageKind::PerMessage {
            provider_in_model: true,
        }
    }
}
