//! Claude Code's profile: what `runread-sessions` knows of Claude Code's records
//! ([`crate::agents`]).

use std::path::{Path, PathBuf};

use crate::file::EvidenceFile;
use crate::model::{Agent, EntrySummary, MessageView, Resume, Scan, ScanError};
use crate::profile::{AgentProfile, Cleanup, DefaultPlace, UsageKind};
use crate::records::{CHILDREN_UNOBSERVED_PASSIVE, ChildRecord, MetadataSources, Records};
use crate::runs::Branch;
use crate::scan::ReadAhead;

pub(crate) struct Claude;

/// Claude Code, registered in [`crate::agents::profile`].
pub(crate) static PROFILE: Claude = Claude;

impl AgentProfile for Claude {
    fn agent(&self) -> Agent {
        Agent::Claude
    }

    fn dir_flag(&self) -> &'static str {
        "claude"
    }

    fn dir_help(&self) -> &'static str {
        "Claude Code's projects directory (default: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects)"
    }

    /// `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`.
    fn default_place(&self) -> DefaultPlace {
        DefaultPlace {
            env: "CLAUDE_CONFIG_DIR",
            under_env: &["projects"],
            under_home: &[".claude", "projects"],
        }
    }

    /// `<dir>/<escaped cwd>/<session id>.jsonl`: one level down (its subagents' transcripts,
    /// under `<session id>/subagents/`, are not sessions).
    fn session_files(&self, dir: &Path) -> Vec<PathBuf> {
        crate::walk::jsonl_files(dir, |depth, _| depth == 1)
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
                saved_model: "model_attachment",
                run_model: "assistant_messages",
                header_line: "session_header",
            },
            provider_in_run_model: false,
            unrecorded_end: None,
        }
    }

    fn usage_kind(&self) -> UsageKind {
        UsageKind::PerMessage {
            provider_in_model: false,
        }
    }

    /// `cleanupPeriodDays` of its settings (`~/.claude/settings.json`), else 30 days.
    fn cleanup(&self) -> Option<Cleanup> {
        Some(super::settings::cleanup())
    }

    /// Its subagents: one record each beside the session file, found by the tool call that
    /// started it.
    fn children(
        &self,
        session_file: &Path,
        session_id: &str,
        tool_call_lines: &[Vec<u8>],
    ) -> Option<Vec<Option<ChildRecord>>> {
        let calls: Vec<String> = tool_call_lines
            .iter()
            .flat_map(|line| super::tool_uses(line))
            .filter(|(_, name)| super::SUBAGENT_TOOLS.contains(&name.as_str()))
            .map(|(id, _)| id)
            .collect();
        let records = super::subagent_records(session_file, session_id);
        Some(
            calls
                .iter()
                .map(|id| {
                    records
                        .iter()
                        .find(|rec| &rec.meta.tool_use_id == id)
                        .map(|rec| ChildRecord {
                            finished: rec.meta.finished,
                            transcript_modified_ns: rec.transcript_modified_ns,
                        })
                })
                .collect(),
        )
    }
}
