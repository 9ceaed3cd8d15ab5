//! What this crate knows of one agent's records, as one [`AgentProfile`] in that agent's folder
//! (`pi/`, `claude/`, `codex/`, `gemini/`,
//! `copilot/`), registered in [`crate::agents`].

use std::path::{Path, PathBuf};

use crate::file::{EvidenceFile, FileIdentity, ReadError};
use crate::model::{Agent, EntrySummary, ForkBase, MessageView, Resume, Scan, ScanError};
use crate::records::{ChildRecord, Records};
use crate::runs::Branch;
use crate::scan::ReadAhead;

/// Where an agent keeps its sessions unless told otherwise: under the folder an environment
/// variable names, else under the user's home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultPlace {
    /// The environment variable that moves the agent's home (`CODEX_HOME`).
    pub env: &'static str,
    /// The sessions folder under it.
    pub under_env: &'static [&'static str],
    /// The sessions folder under `$HOME` when the variable is not set.
    pub under_home: &'static [&'static str],
}

impl DefaultPlace {
    /// The folder, from this process's environment; `None` when it cannot be named (no `HOME`).
    pub fn resolve(&self) -> Option<PathBuf> {
        let (mut dir, under) = match std::env::var_os(self.env).filter(|v| !v.is_empty()) {
            Some(d) => (PathBuf::from(d), self.under_env),
            None => (PathBuf::from(std::env::var_os("HOME")?), self.under_home),
        };
        dir.extend(under);
        Some(dir)
    }
}

/// How an agent keeps the tokens its model calls reported ([`crate::usage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageKind {
    /// On each assistant message (a response written as several lines counted once); with the
    /// provider named before the model (`provider/model`) when `provider_in_model`.
    PerMessage { provider_in_model: bool },
    /// As the session's running totals, in events of their own: a run's share is the total at
    /// its last event less the total before it.
    RunningTotals,
    /// In records of their own, one per model call (Copilot CLI's `session.usage_record`): a
    /// run's usage is that of the records between its first line and the next run's.
    PerCallRecords,
}

/// How an agent deletes its own session files: those not written to for `after_days` days go
/// (when it next starts), whatever runread holds of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleanup {
    pub after_days: u32,
    /// The settings file that sets `after_days`; `None`: the agent's default.
    pub set_in: Option<PathBuf>,
}

/// Everything this crate knows of one agent's records: how they are read into the neutral model,
/// where they live, and what they can show. One per agent, in its folder.
pub trait AgentProfile: Sync {
    /// The agent this describes.
    fn agent(&self) -> Agent;
    /// The command-line flag that names one of its session folders (`--pi DIR`) and its help.
    fn dir_flag(&self) -> &'static str;
    fn dir_help(&self) -> &'static str;
    /// Where it keeps its sessions by default.
    fn default_place(&self) -> DefaultPlace;
    /// Its session files under one of its session folders, sorted in path order. For an agent
    /// that keeps its sessions in a database, one name per session ([`AgentProfile::open`]).
    fn session_files(&self, dir: &Path) -> Vec<PathBuf>;
    /// Opens one of its sessions as evidence: a session file, link-safely (see
    /// [`EvidenceFile::open`]); an agent with a database opens the session's records
    /// ([`EvidenceFile::from_records`]).
    fn open(&self, path: &Path, expect: Option<&FileIdentity>) -> Result<EvidenceFile, ReadError> {
        EvidenceFile::open(path, expect)
    }
    /// Whether its sessions change below the top level of its folder (session files in
    /// subfolders: `watch` follows the whole tree). OpenCode's database sits at the top, beside
    /// folders it writes often and that hold no session (its working-tree snapshots, its logs).
    fn sessions_in_subfolders(&self) -> bool {
        true
    }
    /// The identity one of its sessions has now (see [`crate::file::identity`]).
    fn identity(&self, path: &Path) -> Result<FileIdentity, ReadError> {
        crate::file::identity(path)
    }
    /// One streamed pass over one of its session files.
    fn scan(
        &self,
        file: &EvidenceFile,
        resume: Resume<'_>,
        ahead: ReadAhead,
    ) -> Result<Scan, ScanError>;
    /// The runs of one of its sessions, from the session's index entries (in file order).
    fn cut_runs(&self, entries: &[EntrySummary], malformed: &[u64], torn: bool) -> Branch;
    /// What a reader may be shown of one of its message lines; `None`: not a message line.
    fn message_view(&self, line: &[u8]) -> Option<MessageView>;
    /// What its records can show of a run beyond the run's own lines.
    fn records(&self) -> Records;
    /// How it keeps token counts.
    fn usage_kind(&self) -> UsageKind;
    /// The child agents a run started, each with the record it left beside the session file
    /// (see [`crate::agents::children`]). `None`: its children leave no records.
    fn children(
        &self,
        _session_file: &Path,
        _session_id: &str,
        _tool_call_lines: &[Vec<u8>],
    ) -> Option<Vec<Option<ChildRecord>>> {
        None
    }
    /// How it deletes its own session files after a while, as its settings say; `None`: it
    /// keeps them.
    fn cleanup(&self) -> Option<Cleanup> {
        None
    }
    /// Whether `new` (the entries of lines appended since `old` were indexed, in file order)
    /// change what `old` recorded: a record rewritten with other content, which starts a new
    /// generation. Only an agent whose lines are upserts (Gemini CLI) says yes.
    fn rewrites(&self, _old: &[EntrySummary], _new: &[EntrySummary]) -> bool {
        false
    }
    /// Whether one of its session files (`file`, opened) still holds the line a fork's inherited
    /// history ends at. Only an agent whose forks name their base says yes.
    fn holds_fork_base(&self, _file: &EvidenceFile, _base: &ForkBase) -> bool {
        false
    }
}
