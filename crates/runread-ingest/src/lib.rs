//! Passive ingest: reads agents' session files (Pi, Claude Code, Codex) into the store's index.
//!
//! Re-ingesting an unchanged file does no work; an appended file costs the new bytes; an
//! identity change — replaced, truncated, rewritten, header changed — starts a new generation,
//! which fails every grant made under the old one. A malformed line or a torn last line never
//! aborts ingest: it is counted and reported, and the runs it touches become `unknown`.
#![forbid(unsafe_code)]

mod ordered;
pub mod watch;

use std::path::{Path, PathBuf};

use ordered::Alone;

use runread_core::limits::EVIDENCE_LINE_MAX_BYTES;
use runread_sessions::file::{self, EvidenceFile, ReadError};
use runread_sessions::{Agent, EntrySummary, FileIdentity, ReadAhead, Resume, ScanError, cut_runs};
use runread_store::{
    INDEX_VERSION, IngestCommit, SessionRecord, SessionStamp, Store, StoreError, Workspace,
};

/// Bytes before the consumed offset that are re-hashed on every append to detect a rewrite.
pub const TAIL_WINDOW_BYTES: u64 = 4_096;
/// Deepest directory level searched under the sessions directory.
pub const SCAN_DEPTH_MAX: usize = 3;
/// Most session files considered in one scan.
pub const SCAN_FILES_MAX: usize = 100_000;
/// How Codex names its rollout files (`rollout-<local time>-<thread id>.jsonl`).
pub const CODEX_ROLLOUT_PREFIX: &str = "rollout-";

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
    /// records, …, and line types runread does not know).
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

/// One agent's directory of session files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDir {
    pub agent: Agent,
    pub dir: PathBuf,
}

impl AgentDir {
    /// Pi's sessions directory `dir`.
    pub fn pi(dir: impl Into<PathBuf>) -> AgentDir {
        AgentDir {
            agent: Agent::Pi,
            dir: dir.into(),
        }
    }

    /// Claude Code's projects directory `dir`.
    pub fn claude(dir: impl Into<PathBuf>) -> AgentDir {
        AgentDir {
            agent: Agent::Claude,
            dir: dir.into(),
        }
    }

    /// Codex's sessions directory `dir` (`YYYY/MM/DD/rollout-….jsonl` under it).
    pub fn codex(dir: impl Into<PathBuf>) -> AgentDir {
        AgentDir {
            agent: Agent::Codex,
            dir: dir.into(),
        }
    }

    /// Where each agent keeps its sessions by default, from the environment: Pi at
    /// `$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions`; Claude Code at
    /// `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`; Codex at `$CODEX_HOME/sessions`,
    /// else `~/.codex/sessions`. `None` for an agent whose place cannot be named (no `HOME`).
    pub fn default_for(agent: Agent) -> Option<AgentDir> {
        let home = || std::env::var_os("HOME").map(PathBuf::from);
        let dir = match agent {
            Agent::Pi => match std::env::var_os("PI_CODING_AGENT_DIR") {
                Some(d) => PathBuf::from(d).join("sessions"),
                None => home()?.join(".pi").join("agent").join("sessions"),
            },
            Agent::Claude => match std::env::var_os("CLAUDE_CONFIG_DIR") {
                Some(d) => PathBuf::from(d).join("projects"),
                None => home()?.join(".claude").join("projects"),
            },
            Agent::Codex => match std::env::var_os("CODEX_HOME") {
                Some(d) => PathBuf::from(d).join("sessions"),
                None => home()?.join(".codex").join("sessions"),
            },
        };
        Some(AgentDir { agent, dir })
    }

    /// The session files in this directory, sorted: Pi's `*.jsonl` files at most
    /// [`SCAN_DEPTH_MAX`] levels down; Claude Code's `<escaped cwd>/<session id>.jsonl` (its
    /// subagents' transcripts, under `<session id>/subagents/`, are not sessions); Codex's
    /// `rollout-*.jsonl` (the date folders are local time: nothing is taken from their names).
    pub fn session_files(&self) -> Vec<PathBuf> {
        // Decided on each directory entry's name and depth, not on its joined path (parsing
        // every path's components was a tenth of a re-ingest's instructions).
        match self.agent {
            Agent::Pi => session_files(&self.dir),
            // `<dir>/<escaped cwd>/<session id>.jsonl`: one level down.
            Agent::Claude => jsonl_files(&self.dir, |depth, _| depth == 1),
            Agent::Codex => jsonl_files(&self.dir, |_, name| {
                name.to_str()
                    .is_some_and(|n| n.starts_with(CODEX_ROLLOUT_PREFIX))
            }),
        }
    }
}

/// Session files (`*.jsonl`) under `dir`, at most [`SCAN_DEPTH_MAX`] levels down, sorted.
/// Directories are walked without following links; a `*.jsonl` that is not a regular file (a
/// symbolic link, a FIFO) is listed too, so that ingest reports it as unreadable instead of
/// passing over it in silence (it is never opened).
pub fn session_files(dir: &Path) -> Vec<PathBuf> {
    jsonl_files(dir, |_, _| true)
}

/// [`session_files`], keeping only those whose depth (0: directly in `dir`) and name `keep`
/// accepts. The first [`SCAN_FILES_MAX`] `*.jsonl` files met count, kept or not.
fn jsonl_files(dir: &Path, keep: impl Fn(usize, &std::ffi::OsStr) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut met = 0usize;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if depth < SCAN_DEPTH_MAX {
                    stack.push((entry.path(), depth + 1));
                }
                continue;
            }
            let name = entry.file_name();
            if Path::new(&name).extension().is_some_and(|e| e == "jsonl") && met < SCAN_FILES_MAX {
                met += 1;
                if keep(depth, &name) {
                    out.push(entry.path());
                }
            }
        }
    }
    sort_paths(&mut out);
    out
}

/// Sorts `paths` in [`Path`]'s order (component by component) without parsing components in
/// every comparison: each path's bytes with every `/` made `0`, compared as bytes. That is the
/// same order for the paths [`session_files`] lists — one directory's, joined with names that
/// hold no `/` and no `0` byte and are never empty, `.` or `..` — because a separator then
/// sorts before any byte a name can hold, as a shorter component sorts before a longer one
/// that starts with it.
fn sort_paths(paths: &mut [PathBuf]) {
    use std::os::unix::ffi::OsStrExt;
    paths.sort_by_cached_key(|p| {
        p.as_os_str()
            .as_bytes()
            .iter()
            .map(|&b| if b == b'/' { 0 } else { b })
            .collect::<Vec<u8>>()
    });
}

/// Most threads that read and parse files at once during one ingest (the store's writes stay on
/// the calling thread, one file at a time, in file order).
pub const INGEST_READERS_MAX: usize = 4;
/// Most files being read at once, ahead of the next one to commit: bounds what a pass holds in
/// memory.
pub const INGEST_READ_AHEAD_FILES: usize = 4;
/// Most store records of a directory's files loaded in one query at the start of a pass (what a
/// pass holds of them in memory); a directory with more is looked up one file at a time.
pub const INGEST_PRELOAD_RECORDS_MAX: u32 = 20_000;

/// The stamps of the store's records of one agent directory's files (what decides that a file
/// is unchanged, without the columns only reading needs), loaded in one query when a pass
/// starts, instead of one query per file, for the common case: a file whose identity equals its
/// loaded record's is unchanged. Every other file (new, grown, replaced, …) is looked up in the
/// store again before anything is decided, so a record that moved since the load — by this
/// pass's own commits or by another writer — is never read against or appended to.
///
/// Why an equal identity needs no second look: the identity holds the inode, size and times to
/// the nanosecond, the status-change time included, so a file that was renamed, replaced,
/// deleted and made again, or written since the record was taken cannot match it; and what this
/// pass commits for a path changes the record of no other path but one whose file was gone (a
/// session that moved), which then cannot match either. The outcome is the one a lookup per file
/// gives.
struct Preloaded {
    /// Every recorded path under the directory starts with this (`None`: nothing preloaded).
    prefix: Option<String>,
    records: std::collections::HashMap<String, SessionStamp>,
}

impl Preloaded {
    /// The records of every path under `dir`, or none if there are more than
    /// [`INGEST_PRELOAD_RECORDS_MAX`] (or `dir` is not UTF-8).
    fn load(store: &dyn Store, dir: &Path) -> Result<Preloaded, IngestError> {
        let none = Preloaded {
            prefix: None,
            records: Default::default(),
        };
        let Some(dir) = dir.to_str() else {
            return Ok(none);
        };
        let prefix = if dir.ends_with('/') {
            dir.to_owned()
        } else {
            format!("{dir}/")
        };
        let found = store.session_stamps_with_path_prefix(&prefix, INGEST_PRELOAD_RECORDS_MAX)?;
        if found.len() > INGEST_PRELOAD_RECORDS_MAX as usize {
            return Ok(none);
        }
        Ok(Preloaded {
            prefix: Some(prefix),
            records: found.into_iter().map(|r| (r.path.clone(), r)).collect(),
        })
    }

    /// The stamp of the store's record of `path` as loaded, taken out (each file of a pass is
    /// looked at once); `None` when `path` was not covered by the load, so it must be asked for.
    fn take(&mut self, path: &str) -> Option<Option<SessionStamp>> {
        let prefix = self.prefix.as_deref()?;
        path.starts_with(prefix).then(|| self.records.remove(path))
    }
}

/// Ingests every session file of `dir`'s agent in it.
///
/// Each file is looked at (identity against the store's record) and committed on this thread, in
/// file order; the new lines of up to [`INGEST_READ_AHEAD_FILES`] files at a time are read,
/// parsed and hashed meanwhile on up to [`INGEST_READERS_MAX`] threads ([`ordered`]). A file read
/// before another file's commit is checked against the store again before its own (and read
/// again here if its record moved). So the outcome is the one a pass over the files one by one
/// would have, and a pass with nothing to read starts no thread.
pub fn ingest_dir(
    store: &dyn Store,
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
    let read = |(seen, path, job): (u64, &Path, ReadJob), alone| {
        let ahead = match alone {
            Alone::Yes => ReadAhead::Allowed,
            Alone::No => ReadAhead::Off,
        };
        (seen, job.read(agent, path, ahead))
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
                Triage::Read(job) => pool.work((commits.made, path, job)).map_err(lost)?,
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

/// The commit side of an [`ingest_dir`] pass: files are committed strictly in file order, each
/// as soon as it and every file before it are prepared.
struct InOrderCommits<'a> {
    store: &'a dyn Store,
    workspaces: &'a [Workspace],
    agent: Agent,
    files: &'a [PathBuf],
    now_ms: i64,
    report: Report,
    outcomes: Vec<(PathBuf, FileOutcome)>,
    /// The index of the next file to commit.
    next: usize,
    /// Commits this pass has made: a file prepared when fewer were made is checked again.
    made: u64,
}

impl InOrderCommits<'_> {
    /// Commits the next file, prepared when `seen` commits of this pass had been made.
    fn commit(
        &mut self,
        seen: u64,
        prepared: Box<Prepared>,
        progress: &mut impl FnMut(Progress),
    ) -> Result<(), IngestError> {
        let path = self.files.get(self.next).ok_or(IngestError::Lost)?;
        let stale = seen != self.made;
        let outcome = finish(
            self.store,
            self.workspaces,
            self.agent,
            path,
            prepared,
            stale,
            self.now_ms,
            &mut self.report,
        )?;
        if matches!(
            outcome,
            FileOutcome::Appended { .. } | FileOutcome::NewGeneration { .. }
        ) {
            self.made += 1;
        }
        self.report.count(&outcome);
        self.outcomes.push((path.clone(), outcome));
        self.next += 1;
        progress(Progress {
            files_done: self.next as u64,
            files_total: self.files.len() as u64,
        });
        Ok(())
    }
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
    store: &dyn Store,
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

/// What reading a file found, before anything is committed: the work that needs no order.
/// Nearly a kilobyte (a session record, counts, what was read), handed from triage to the
/// read-ahead map to the commit: boxed, so each hand-over moves a pointer, not the struct (those
/// copies were the largest share of a re-ingest's time after the store's queries).
struct Prepared {
    /// The store's record of this path when the file was read.
    existing: Existing,
    counts: Report,
    step: Step,
}

/// What a pass knew of the store's record of a file when it looked at the file.
// Only ever inside a boxed `Prepared`: moved as a pointer, so the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Existing {
    /// The whole record, or that there was none.
    Record(Option<SessionRecord>),
    /// Only the preloaded stamp that settled the file as unchanged (`Step::Done`).
    Stamp(SessionStamp),
}

impl Existing {
    /// Whether `now`, the store's record of the path, is still the one the file was looked at
    /// against: for a stamp, a record with that stamp (all the decision was made on).
    fn holds(&self, now: Option<&SessionRecord>) -> bool {
        match self {
            Existing::Record(rec) => rec.as_ref() == now,
            Existing::Stamp(stamp) => now.is_some_and(|r| r.stamp() == *stamp),
        }
    }

    /// The whole record, if one was loaded.
    fn record(&self) -> Option<&SessionRecord> {
        match self {
            Existing::Record(rec) => rec.as_ref(),
            Existing::Stamp(_) => None,
        }
    }
}

enum Step {
    Done(FileOutcome),
    Fresh {
        reason: &'static str,
        scanned: Scanned,
    },
    Append {
        old: Vec<EntrySummary>,
        scanned: Scanned,
    },
}

/// A file read from where ingest resumes, with the identity it was read under and the hash of
/// the window before where reading stopped.
struct Scanned {
    read: runread_sessions::Scan,
    identity: FileIdentity,
    tail: Option<String>,
}

/// Classifies `path` against the store's record of it and reads what is new.
fn prepare(store: &dyn Store, agent: Agent, path: &Path) -> Result<Box<Prepared>, IngestError> {
    Ok(match triage(store, None, agent, path)? {
        Triage::Done(prepared) => prepared,
        Triage::Read(job) => job.read(agent, path, ReadAhead::Allowed),
    })
}

/// What a look at a file and the store's record of it decided, before reading the file.
// A job is large (a session record and counts); it is made and moved once per file to read.
#[allow(clippy::large_enum_variant)]
enum Triage {
    /// Nothing to read (unchanged, unreadable, not a session).
    Done(Box<Prepared>),
    /// New lines to read.
    Read(ReadJob),
}

/// A file to read: from the start, or after what the store's record of it consumed.
struct ReadJob {
    existing: Option<SessionRecord>,
    counts: Report,
    /// The generation's entries so far, when appending (the record is `existing`).
    append: Option<Vec<EntrySummary>>,
    reason: &'static str,
}

/// The cheap part of [`prepare`]: the file's identity against the store's record (the header
/// and the tail window re-hashed when it changed), in file order on the committing thread. The
/// record comes from `preloaded` when it covers `path`, else from the store.
fn triage(
    store: &dyn Store,
    preloaded: Option<&mut Preloaded>,
    agent: Agent,
    path: &Path,
) -> Result<Triage, IngestError> {
    let mut counts = Report::default();
    let done = |existing, counts, outcome| {
        Ok(Triage::Done(Box::new(Prepared {
            existing: Existing::Record(existing),
            counts,
            step: Step::Done(outcome),
        })))
    };
    let Some(path_str) = path.to_str() else {
        return done(None, counts, FileOutcome::NotASession);
    };
    let identity = match file::identity(path) {
        Ok(i) => i,
        Err(e) => return done(None, counts, FileOutcome::Unreadable(e)),
    };
    // A loaded record whose identity the file still has settles it; anything else is asked for.
    if let Some(Some(stamp)) = preloaded.and_then(|p| p.take(path_str))
        && unchanged(
            stamp.agent,
            stamp.index_version,
            &stamp.identity,
            agent,
            &identity,
        )
    {
        return Ok(Triage::Done(Box::new(Prepared {
            existing: Existing::Stamp(stamp),
            counts,
            step: Step::Done(FileOutcome::Unchanged),
        })));
    }
    let existing = store.session_by_path(path_str)?;
    // The record to append to, if the file only grew; else it is read from the start.
    let (append_to, reason) = match &existing {
        None => (None, "new file"),
        Some(rec) if rec.agent != agent => (None, "read as another agent's"),
        Some(rec) => match classify(path, agent, rec, &identity, &mut counts.verify_bytes) {
            Ok(Change::Unchanged) => return done(existing, counts, FileOutcome::Unchanged),
            Ok(Change::Appended) => (Some(rec), ""),
            Ok(Change::Identity(reason)) => (None, reason),
            Err(e) => return done(existing, counts, FileOutcome::Unreadable(e)),
        },
    };
    let append = append_to
        .map(|rec| store.entries(&rec.session_id, rec.generation))
        .transpose()?;
    Ok(Triage::Read(ReadJob {
        existing,
        counts,
        append,
        reason,
    }))
}

impl ReadJob {
    /// The expensive part of [`prepare`]: reads, parses and hashes the file's new lines. Touches
    /// no store, so it runs on any thread.
    fn read(self, agent: Agent, path: &Path, ahead: ReadAhead) -> Box<Prepared> {
        let ReadJob {
            existing,
            mut counts,
            append,
            reason,
        } = self;
        let resume_from = append.as_ref().and(existing.as_ref());
        let resume = match (resume_from, &append) {
            (Some(rec), Some(old)) => Resume::After {
                header: &rec.header,
                offset: rec.consumed,
                lines: rec.lines,
                last_id: old.last().map(|e| e.id.as_str()),
            },
            _ => Resume::Fresh,
        };
        let scanned = scan(
            agent,
            path,
            resume_from.map(|r| &r.identity),
            resume,
            ahead,
            &mut counts,
        );
        let step = match (scanned, append) {
            (Err(outcome), _) => Step::Done(outcome),
            (Ok(scanned), Some(old)) => Step::Append { old, scanned },
            (Ok(scanned), None) => Step::Fresh { reason, scanned },
        };
        Box::new(Prepared {
            existing: Existing::Record(existing),
            counts,
            step,
        })
    }
}

/// Reads `path` from `resume` (opened under `expect`, when resuming), then hashes the window
/// before where reading stopped.
fn scan(
    agent: Agent,
    path: &Path,
    expect: Option<&FileIdentity>,
    resume: Resume<'_>,
    ahead: ReadAhead,
    counts: &mut Report,
) -> Result<Scanned, FileOutcome> {
    let file = EvidenceFile::open(path, expect).map_err(FileOutcome::Unreadable)?;
    let read = match runread_sessions::scan_with(agent, &file, resume, ahead) {
        Ok(r) => r,
        Err(ScanError::NotASession) => return Err(FileOutcome::NotASession),
        Err(ScanError::Read(e)) => return Err(FileOutcome::Unreadable(e)),
    };
    // What was read up to the size at open stands if the file only grew meanwhile.
    file.check_grown_only().map_err(FileOutcome::Unreadable)?;
    counts.bytes_read += read.bytes_read;
    counts.skipped_lines += read.skipped;
    let identity = file.identity();
    let tail = tail_sha256(
        path,
        read.consumed,
        Some(&identity),
        &mut counts.verify_bytes,
    )
    .map_err(FileOutcome::Unreadable)?;
    Ok(Scanned {
        read,
        identity,
        tail,
    })
}

/// Commits what `prepare` read. When the pass committed other files since (`maybe_stale`), only
/// if the store still holds the record it was read against; else the file is read again first.
#[allow(clippy::too_many_arguments)]
fn finish(
    store: &dyn Store,
    workspaces: &[Workspace],
    agent: Agent,
    path: &Path,
    prepared: Box<Prepared>,
    maybe_stale: bool,
    now_ms: i64,
    report: &mut Report,
) -> Result<FileOutcome, IngestError> {
    let Some(path_str) = path.to_str() else {
        return Ok(FileOutcome::NotASession);
    };
    let prepared = if maybe_stale
        && !prepared
            .existing
            .holds(store.session_by_path(path_str)?.as_ref())
    {
        prepare(store, agent, path)?
    } else {
        prepared
    };
    report.add(&prepared.counts);
    match prepared.step {
        Step::Done(outcome) => Ok(outcome),
        Step::Fresh { reason, scanned } => fresh(
            store,
            workspaces,
            agent,
            path_str,
            prepared.existing.record(),
            scanned,
            now_ms,
            reason,
            report,
        ),
        Step::Append { old, scanned } => match prepared.existing {
            Existing::Record(Some(rec)) => append(store, rec, old, scanned, now_ms, report),
            Existing::Record(None) | Existing::Stamp(_) => Err(IngestError::Lost),
        },
    }
}

enum Change {
    Unchanged,
    Appended,
    Identity(&'static str),
}

/// Whether a file read as `agent`'s, whose identity is now `now`, is unchanged since a record
/// of `recorded_agent`'s file with `identity`, in `index_version`, was taken. The same identity
/// (size, times to the nanosecond, inode) is the same bytes, a torn last line included:
/// finishing that line grows the file.
fn unchanged(
    recorded_agent: Agent,
    index_version: u32,
    identity: &FileIdentity,
    agent: Agent,
    now: &FileIdentity,
) -> bool {
    recorded_agent == agent && index_version == INDEX_VERSION && *identity == *now
}

fn classify(
    path: &Path,
    agent: Agent,
    rec: &SessionRecord,
    now: &FileIdentity,
    verify_bytes: &mut u64,
) -> Result<Change, ReadError> {
    if rec.index_version != INDEX_VERSION {
        return Ok(Change::Identity("index format changed"));
    }
    if unchanged(rec.agent, rec.index_version, &rec.identity, agent, now) {
        return Ok(Change::Unchanged);
    }
    if !now.same_object(&rec.identity) {
        return Ok(Change::Identity("file replaced"));
    }
    if now.size < rec.consumed {
        return Ok(Change::Identity("file truncated"));
    }
    // Exactly the header line's bytes plus its newline: an append costs the new bytes, not a re-read.
    let head = file::read_from(
        path,
        0,
        (rec.header.line_bytes + 1).min(EVIDENCE_LINE_MAX_BYTES as u64 + 1),
        Some(&rec.identity),
    )?;
    *verify_bytes += head.bytes.len() as u64;
    let header_line = head.bytes.strip_suffix(b"\n").unwrap_or(&[]);
    if runread_core::sha256_hex(header_line) != rec.header.line_sha256 {
        return Ok(Change::Identity("header changed"));
    }
    if tail_sha256(path, rec.consumed, Some(&rec.identity), verify_bytes)? != rec.tail_sha256 {
        return Ok(Change::Identity("file rewritten"));
    }
    Ok(Change::Appended)
}

fn tail_sha256(
    path: &Path,
    consumed: u64,
    expect: Option<&FileIdentity>,
    verify_bytes: &mut u64,
) -> Result<Option<String>, ReadError> {
    if consumed == 0 {
        return Ok(None);
    }
    let start = consumed.saturating_sub(TAIL_WINDOW_BYTES);
    let chunk = file::read_from(path, start, consumed - start, expect)?;
    *verify_bytes += chunk.bytes.len() as u64;
    if chunk.bytes.len() as u64 != consumed - start {
        return Err(ReadError::Truncated);
    }
    Ok(Some(runread_core::sha256_hex(&chunk.bytes)))
}

#[allow(clippy::too_many_arguments)]
fn fresh(
    store: &dyn Store,
    workspaces: &[Workspace],
    agent: Agent,
    path_str: &str,
    existing: Option<&SessionRecord>,
    scanned: Scanned,
    now_ms: i64,
    reason: &'static str,
    report: &mut Report,
) -> Result<FileOutcome, IngestError> {
    let Scanned {
        read,
        identity,
        tail,
    } = scanned;
    let header = read.header.clone();
    let Some(ws) = workspace_for(workspaces, &header.cwd) else {
        return Ok(FileOutcome::OutsideWorkspaces);
    };
    // Same session id under another path: a move (old path gone) or a duplicate (both present).
    let previous = match existing {
        Some(rec) if rec.session_id == header.session_id => Some(rec.clone()),
        _ => match store.session(&header.session_id)? {
            Some(other) if other.path != path_str => {
                if Path::new(&other.path).exists() {
                    return Ok(FileOutcome::DuplicateSessionId);
                }
                Some(other)
            }
            other => other,
        },
    };
    let generation = previous.as_ref().map_or(1, |p| p.generation + 1);
    let bytes = read.bytes_read;
    let record = SessionRecord {
        session_id: header.session_id.clone(),
        agent,
        path: path_str.to_owned(),
        workspace_id: ws.id.clone(),
        generation,
        header,
        identity,
        consumed: read.consumed,
        lines: read.lines,
        tail_sha256: tail,
        malformed_lines: read.malformed,
        torn: read.torn,
        branch_complete: true,
        session_name: None,
        saved_model: None,
        ingested_at_ms: now_ms,
        over_bounds: read.over_bounds,
        index_version: INDEX_VERSION,
    };
    if commit(store, record, true, read.entries, vec![], report)? == Committed::Conflict {
        return Ok(FileOutcome::DuplicateSessionId);
    }
    Ok(FileOutcome::NewGeneration {
        generation,
        bytes,
        reason,
    })
}

fn append(
    store: &dyn Store,
    mut rec: SessionRecord,
    old: Vec<EntrySummary>,
    scanned: Scanned,
    now_ms: i64,
    report: &mut Report,
) -> Result<FileOutcome, IngestError> {
    let Scanned {
        read,
        identity,
        tail,
    } = scanned;
    let bytes = read.consumed - rec.consumed;
    rec.tail_sha256 = tail;
    rec.identity = identity;
    rec.consumed = read.consumed;
    rec.lines = read.lines;
    rec.malformed_lines.extend(read.malformed);
    rec.torn = read.torn;
    rec.over_bounds = read.over_bounds;
    rec.ingested_at_ms = now_ms;
    let entries = read.entries;
    if commit(store, rec, false, entries, old, report)? == Committed::Conflict {
        return Ok(FileOutcome::DuplicateSessionId);
    }
    Ok(FileOutcome::Appended { bytes })
}

/// Whether a pass's commit was applied.
#[derive(Debug, PartialEq, Eq)]
enum Committed {
    Applied,
    /// The store refused the session id: another host sharing the store ingested it first. Only
    /// that file is skipped: one foreign session must not stop this host's other sessions.
    Conflict,
}

/// Cuts runs over all entries of the generation and writes the pass in one transaction.
fn commit(
    store: &dyn Store,
    mut rec: SessionRecord,
    new_generation: bool,
    new_entries: Vec<EntrySummary>,
    old_entries: Vec<EntrySummary>,
    report: &mut Report,
) -> Result<Committed, IngestError> {
    // Runs are cut over the whole generation; the new entries are moved in and back out rather
    // than copied.
    let old_len = old_entries.len();
    // A new generation has no old entries: the new ones are taken as they are, not copied.
    let mut all = if old_entries.is_empty() {
        new_entries
    } else {
        let mut all = old_entries;
        all.extend(new_entries);
        all
    };
    let agent = rec.agent;
    let mut branch = cut_runs(agent, &all, &rec.malformed_lines, rec.torn);
    if rec.over_bounds
        && let Some(last) = branch.runs.last_mut()
    {
        // Lines past the bound were not read: the last run may go on there.
        last.mark_unknown("session exceeds the evidence line bound");
    }
    let new_entries = if old_len == 0 {
        all
    } else {
        all.split_off(old_len)
    };
    rec.branch_complete = branch.complete;
    rec.session_name = branch.session_name;
    rec.saved_model = branch.saved_model;
    let malformed = rec.malformed_lines.len() as u64;
    let torn = u64::from(rec.torn);
    let runs = branch.runs.len() as u64;
    match store.commit_ingest(&IngestCommit {
        session: rec,
        new_generation,
        new_entries,
        runs: branch.runs,
    }) {
        Ok(()) => {}
        Err(StoreError::Conflict(_)) => return Ok(Committed::Conflict),
        Err(e) => return Err(e.into()),
    }
    // Counted only once stored: a skipped file's lines and runs are not this pass's.
    report.malformed_lines += malformed;
    report.torn_files += torn;
    report.runs += runs;
    Ok(Committed::Applied)
}

/// A copy of the header `line` with its `cwd` replaced, for relocating a bundled sample session
/// under a temporary workspace. Only the header changes; every entry line stays byte-identical.
pub fn relocate_header(line: &str, new_cwd: &str) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(line).ok()?;
    *v.get_mut("cwd")? = serde_json::Value::String(new_cwd.to_owned());
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte order with separators made `0` is `Path`'s order, on names that differ where a
    /// separator meets a byte below and above it.
    #[test]
    fn paths_sort_as_path_orders_them() {
        let names = [
            "a", "a-b", "a.b", "a b", "a0", "a/b", "a/b/c", "a/b-c", "a/b.c", "a-/b", "ab", "a\\b",
            "é", "é/a", "z", "Z", "~", "a/~", "a/ ", "a./b", "-", "--/a",
        ];
        for dir in ["/d", "/d/", "d", "/d//e", "/"] {
            let mut paths: Vec<PathBuf> = names.iter().map(|n| Path::new(dir).join(n)).collect();
            let mut expected = paths.clone();
            expected.sort();
            paths.reverse();
            sort_paths(&mut paths);
            assert_eq!(paths, expected, "under {dir:?}");
        }
    }

    /// The listing as it was made before it was decided on names and depths: every `*.jsonl`
    /// path, then filtered by its parsed path.
    fn listed_by_paths(d: &AgentDir) -> Vec<PathBuf> {
        fn all(dir: &Path) -> Vec<PathBuf> {
            let mut out = Vec::new();
            let mut stack = vec![(dir.to_path_buf(), 0usize)];
            while let Some((d, depth)) = stack.pop() {
                let Ok(rd) = std::fs::read_dir(&d) else {
                    continue;
                };
                for entry in rd.flatten() {
                    let Ok(ft) = entry.file_type() else { continue };
                    let p = entry.path();
                    if ft.is_dir() && depth < SCAN_DEPTH_MAX {
                        stack.push((p, depth + 1));
                    } else if !ft.is_dir()
                        && p.extension().is_some_and(|e| e == "jsonl")
                        && out.len() < SCAN_FILES_MAX
                    {
                        out.push(p);
                    }
                }
            }
            out.sort();
            out
        }
        let files = all(&d.dir).into_iter();
        match d.agent {
            Agent::Pi => files.collect(),
            Agent::Claude => files
                .filter(|p| {
                    p.parent()
                        .and_then(Path::parent)
                        .is_some_and(|grandparent| grandparent == d.dir)
                })
                .collect(),
            Agent::Codex => files
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(CODEX_ROLLOUT_PREFIX))
                })
                .collect(),
        }
    }

    #[test]
    fn each_agents_listing_is_the_one_made_from_parsed_paths() {
        let root = tempfile::tempdir().unwrap();
        let names = [
            "a.jsonl",
            ".jsonl",
            "..jsonl",
            "a.JSONL",
            "a.jsonl.bak",
            "jsonl",
            "rollout-1.jsonl",
            "rollout-.jsonl",
            "rollout.jsonl",
            "x.rollout-.jsonl",
        ];
        let dirs = [
            "",
            "p",
            "p/q",
            "p/q/r",
            "p/q/r/s",
            "rollout-d.jsonl",
            "-a",
            "a-",
        ];
        for d in dirs {
            let d = root.path().join(d);
            std::fs::create_dir_all(&d).unwrap();
            for n in names {
                let p = d.join(n);
                if !p.exists() {
                    std::fs::write(p, b"").unwrap();
                }
            }
        }
        std::os::unix::fs::symlink(root.path().join("a.jsonl"), root.path().join("p/l.jsonl"))
            .unwrap();
        for dir in [
            root.path().to_path_buf(),
            root.path().join("p"),
            PathBuf::from(format!("{}/", root.path().display())),
            root.path().join("p").join("..").join("p"),
        ] {
            for agent in Agent::ALL {
                let d = AgentDir {
                    agent,
                    dir: dir.clone(),
                };
                let listed = d.session_files();
                assert_eq!(listed, listed_by_paths(&d), "{agent:?} under {dir:?}");
                assert!(!listed.is_empty() || agent == Agent::Codex);
            }
        }
    }

    #[test]
    fn session_files_are_listed_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            "a/x.jsonl",
            "a-b/x.jsonl",
            "a.jsonl",
            "a/b/y.jsonl",
            "ab.jsonl",
            "a0/z.jsonl",
        ] {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
        }
        let listed = session_files(dir.path());
        let mut expected = listed.clone();
        expected.sort();
        assert_eq!(listed, expected);
        assert_eq!(listed.len(), 6);
    }
}
