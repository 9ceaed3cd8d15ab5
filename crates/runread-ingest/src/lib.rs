//! Passive ingest: reads agents' session files (Pi, Claude Code, Codex, Gemini CLI,
//! Copilot CLI) into the store's index.
//!
//! Re-ingesting an unchanged file does no work; an appended file costs the new bytes; an
//! identity change — replaced, truncated, rewritten, header changed — starts a new generation,
//! which fails every grant made under the old one; so do appended lines that change what an
//! earlier line recorded (`runread_sessions::rewrites`: Gemini CLI's upserts). A malformed line or a torn last line never
//! aborts ingest: it is counted and reported, and the runs it touches become `unknown`; so does a
//! line of a type runread does not know, whose first in a file each pass logs once.
#![forbid(unsafe_code)]

mod commit;
mod ordered;
mod triage;
mod walk;
pub mod watch;

use std::path::{Path, PathBuf};

use commit::{InOrderCommits, finish};
use ordered::Alone;
pub use triage::{INGEST_PRELOAD_RECORDS_MAX, TAIL_WINDOW_BYTES};
use triage::{Preloaded, ReadJob, Triage, prepare, triage};
pub use walk::{AgentDir, SCAN_DEPTH_MAX, SCAN_FILES_MAX, session_files};

use runread_sessions::file::ReadError;
use runread_sessions::{Agent, ReadAhead};
use runread_store::{Index, StoreError, Workspace};

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// Identity unchanged since the last pass: nothing read.
    Unchanged,
    /// New bytes appended and read.
    Appended { bytes: u64 },
    /// Read from the start as a new generation (first sight, or identity change).
    NewGeneration {
        generation: u64,
        bytes: u64,
        reason: &'static str,
    },
    /// The session's working directory is in no registered workspace.
    OutsideWorkspaces,
    /// The first line is not a Pi session header.
    NotASession,
    /// Another file already holds this session id: on this host, or on another host sharing the
    /// store, which ingested it first (the store answered `Conflict`). Skipped; the pass goes on.
    DuplicateSessionId,
    /// The file could not be read as evidence.
    Unreadable(ReadError),
}

/// Totals of one ingest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub files: u64,
    pub unchanged: u64,
    pub appended: u64,
    pub new_generations: u64,
    pub outside_workspaces: u64,
    pub not_sessions: u64,
    pub duplicates: u64,
    pub unreadable: u64,
    /// Bytes of new lines read.
    pub bytes_read: u64,
    /// Bytes re-read to verify a file's identity (its header line and the window before the
    /// consumed offset): bounded per file, whatever the file's size.
    pub verify_bytes: u64,
    pub malformed_lines: u64,
    /// Lines skipped as the agent's own bookkeeping (Claude Code's queue operations, API request
    /// records, …). A line of a type runread does not know is not skipped: it makes the run it
    /// falls in `unknown` (`runread_sessions::UNRECOGNISED_LINE`).
    pub skipped_lines: u64,
    pub torn_files: u64,
    pub runs: u64,
}

impl Report {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Report) {
        self.files += other.files;
        self.unchanged += other.unchanged;
        self.appended += other.appended;
        self.new_generations += other.new_generations;
        self.outside_workspaces += other.outside_workspaces;
        self.not_sessions += other.not_sessions;
        self.duplicates += other.duplicates;
        self.unreadable += other.unreadable;
        self.bytes_read += other.bytes_read;
        self.verify_bytes += other.verify_bytes;
        self.malformed_lines += other.malformed_lines;
        self.skipped_lines += other.skipped_lines;
        self.torn_files += other.torn_files;
        self.runs += other.runs;
    }

    /// Counts one file's outcome.
    fn count(&mut self, outcome: &FileOutcome) {
        self.files += 1;
        match outcome {
            FileOutcome::Unchanged => self.unchanged += 1,
            FileOutcome::Appended { .. } => self.appended += 1,
            FileOutcome::NewGeneration { .. } => self.new_generations += 1,
            FileOutcome::OutsideWorkspaces => self.outside_workspaces += 1,
            FileOutcome::NotASession => self.not_sessions += 1,
            FileOutcome::DuplicateSessionId => self.duplicates += 1,
            FileOutcome::Unreadable(_) => self.unreadable += 1,
        }
    }
}

/// Progress of an ingest, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub files_done: u64,
    pub files_total: u64,
}

#[derive(Debug)]
pub enum IngestError {
    Store(StoreError),
    /// File notifications could not be set up.
    Watch(String),
    /// A thread reading files for the pass stopped without handing its file over.
    Lost,
}

impl std::fmt::Display for IngestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IngestError::Store(e) => write!(f, "{e}"),
            IngestError::Watch(e) => write!(f, "watch: {e}"),
            IngestError::Lost => write!(f, "a file reader of the pass stopped"),
        }
    }
}

impl From<StoreError> for IngestError {
    fn from(e: StoreError) -> Self {
        IngestError::Store(e)
    }
}

/// Most threads that read and parse files at once during one ingest (the store's writes stay on
/// the calling thread, one file at a time, in file order).
pub const INGEST_READERS_MAX: usize = 4;
/// Most files being read at once, ahead of the next one to commit: bounds what a pass holds in
/// memory.
pub const INGEST_READ_AHEAD_FILES: usize = 4;
/// Ingests every session file of `dir`'s agent in it.
///
/// Each file is looked at (identity against the store's record) and committed on this thread, in
/// file order; the new lines of up to [`INGEST_READ_AHEAD_FILES`] files at a time are read,
/// parsed and hashed meanwhile on up to [`INGEST_READERS_MAX`] threads (`ordered`). A file read
/// before another file's commit is checked against the store again before its own (and read
/// again here if its record moved). So the outcome is the one a pass over the files one by one
/// would have, and a pass with nothing to read starts no thread.
pub fn ingest_dir(
    store: &dyn Index,
    dir: &AgentDir,
    now_ms: i64,
    mut progress: impl FnMut(Progress),
) -> Result<(Report, Vec<(PathBuf, FileOutcome)>), IngestError> {
    let files = dir.session_files();
    let mut preloaded = Preloaded::load(store, &dir.dir)?;
    let workspaces: Vec<Workspace> = store
        .workspaces()?
        .into_iter()
        .filter(|w| w.enabled)
        .collect();
    let mut commits = InOrderCommits {
        store,
        workspaces: &workspaces,
        agent: dir.agent,
        files: &files,
        now_ms,
        report: Report::default(),
        outcomes: Vec::with_capacity(files.len()),
        next: 0,
        made: 0,
    };
    let readers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, INGEST_READERS_MAX);
    let agent = dir.agent;
    // Each file carries the count of this pass's commits when it was looked at: if more were
    // made before its own, it is checked again.
    let read = |(seen, job): (u64, ReadJob), alone| {
        let ahead = match alone {
            Alone::Yes => ReadAhead::Allowed,
            Alone::No => ReadAhead::Off,
        };
        (seen, job.read(agent, ahead))
    };
    ordered::in_order(readers, read, |pool| -> Result<(), IngestError> {
        let lost = |_| IngestError::Lost;
        for path in &files {
            // Triage and commits happen here, in file order; only reading runs on the readers,
            // at most INGEST_READ_AHEAD_FILES files at once.
            while pool.working() >= INGEST_READ_AHEAD_FILES {
                let (seen, prepared) = pool.next().map_err(lost)?.ok_or(IngestError::Lost)?;
                commits.commit(seen, prepared, &mut progress)?;
            }
            match triage(store, Some(&mut preloaded), agent, path)? {
                Triage::Done(prepared) => pool.done((commits.made, prepared)),
                Triage::Read(job) => pool.work((commits.made, job)).map_err(lost)?,
            }
            while let Some((seen, prepared)) = pool.next_ready().map_err(lost)? {
                commits.commit(seen, prepared, &mut progress)?;
            }
        }
        while let Some((seen, prepared)) = pool.next().map_err(lost)? {
            commits.commit(seen, prepared, &mut progress)?;
        }
        Ok(())
    })?;
    Ok((commits.report, commits.outcomes))
}

/// The registered workspace containing `cwd` (the deepest one), if any.
pub fn workspace_for<'a>(workspaces: &'a [Workspace], cwd: &str) -> Option<&'a Workspace> {
    // A cwd that still exists is compared in canonical form, like the registered roots.
    let canonical = std::fs::canonicalize(cwd)
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned));
    let cwd = canonical.as_deref().unwrap_or(cwd);
    if cwd.split('/').any(|c| c == "..") {
        return None;
    }
    workspaces
        .iter()
        .filter(|w| w.contains(cwd))
        .max_by_key(|w| w.path.len())
}

/// Ingests one session file of `agent`, adding its counts to `report`.
pub fn ingest_file(
    store: &dyn Index,
    workspaces: &[Workspace],
    agent: Agent,
    path: &Path,
    now_ms: i64,
    report: &mut Report,
) -> Result<FileOutcome, IngestError> {
    let prepared = prepare(store, agent, path)?;
    finish(
        store, workspaces, agent, path, prepared, false, now_ms, report,
    )
}

/// A copy of the header `line` with its `cwd` replaced, for relocating a bundled sample session
/// under a temporary workspace. Only the header changes; every entry line stays byte-identical.
pub fn relocate_header(line: &str, new_cwd: &str) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(line).ok()?;
    *v.get_mut("cwd")? = serde_json::Value::String(new_cwd.to_owned());
    Some(v.to_string())
}
