//! The commit of what a pass read, one file at a time in file order: a new generation or an
//! append, runs cut over the whole generation, one transaction per file.

use std::path::{Path, PathBuf};

use runread_sessions::{Agent, EntrySummary, Unrecognised, cut_runs};
use runread_store::{INDEX_VERSION, Index, IngestCommit, SessionRecord, StoreError, Workspace};

use crate::triage::{Existing, Prepared, Scanned, Step, prepare};
use crate::{FileOutcome, IngestError, Progress, Report, workspace_for};

/// The commit side of an [`ingest_dir`] pass: files are committed strictly in file order, each
/// as soon as it and every file before it are prepared.
pub(crate) struct InOrderCommits<'a> {
    pub(crate) store: &'a dyn Index,
    pub(crate) workspaces: &'a [Workspace],
    pub(crate) agent: Agent,
    pub(crate) files: &'a [PathBuf],
    pub(crate) now_ms: i64,
    pub(crate) report: Report,
    pub(crate) outcomes: Vec<(PathBuf, FileOutcome)>,
    /// The index of the next file to commit.
    pub(crate) next: usize,
    /// Commits this pass has made: a file prepared when fewer were made is checked again.
    pub(crate) made: u64,
}

impl InOrderCommits<'_> {
    /// Commits the next file, prepared when `seen` commits of this pass had been made.
    pub(crate) fn commit(
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

/// Commits what `prepare` read. When the pass committed other files since (`maybe_stale`), only
/// if the store still holds the record it was read against; else the file is read again first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    store: &dyn Index,
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

#[allow(clippy::too_many_arguments)]
pub(crate) fn fresh(
    store: &dyn Index,
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
    let unrecognised = read.first_unrecognised.clone();
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
    if let Some(seen) = &unrecognised {
        warn_unrecognised(agent, seen);
    }
    Ok(FileOutcome::NewGeneration {
        generation,
        bytes,
        reason,
    })
}

pub(crate) fn append(
    store: &dyn Index,
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
    let agent = rec.agent;
    if commit(store, rec, false, entries, old, report)? == Committed::Conflict {
        return Ok(FileOutcome::DuplicateSessionId);
    }
    if let Some(seen) = &read.first_unrecognised {
        warn_unrecognised(agent, seen);
    }
    Ok(FileOutcome::Appended { bytes })
}

/// What the log says in place of a version or a type the file does not record, or that is not a
/// short identifier.
const NOT_SHOWN: &str = "(not recorded, or not shown)";

/// The first line of a type runread does not know that one pass read in one session file, logged
/// once for that file and pass (a warning), for the owner to report: the run it falls in is
/// `unknown` already (`runread_sessions::UNRECOGNISED_LINE`); this says which agent release wrote
/// what. It names the agent, its version where the file records it (Codex's `session_meta`, Claude
/// Code's line; Pi records none) and the line's type, each only as a short identifier
/// ([`Unrecognised`]); never the line's content, its text or the file's path.
pub(crate) fn warn_unrecognised(agent: Agent, seen: &Unrecognised) {
    let version = seen.agent_version.as_deref().unwrap_or(NOT_SHOWN);
    let line_type = seen.line_type.as_deref().unwrap_or(NOT_SHOWN);
    tracing::warn!(
        agent = agent.as_str(),
        version,
        line_type,
        "{} (version {version}) wrote a session line of a type runread does not know; the run it \
         falls in is unknown and its answer is not served. Please report the agent and version to \
         runread.",
        agent.product()
    );
}

/// Whether a pass's commit was applied.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Committed {
    Applied,
    /// The store refused the session id: another host sharing the store ingested it first. Only
    /// that file is skipped: one foreign session must not stop this host's other sessions.
    Conflict,
}

/// Cuts runs over all entries of the generation and writes the pass in one transaction.
pub(crate) fn commit(
    store: &dyn Index,
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
