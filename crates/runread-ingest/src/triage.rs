//! The look at one file against the store's record of it (unchanged, grown, replaced, …) and
//! the read of what is new, before anything is committed.

use std::path::Path;

use runread_sessions::file::{EvidenceFile, ReadError};
use runread_sessions::{Agent, EntrySummary, FileIdentity, ReadAhead, Resume, ScanError};
use runread_store::{INDEX_VERSION, Index, SessionRecord, SessionStamp};

use crate::{FileOutcome, IngestError, Report};

/// Bytes before the consumed offset that are re-hashed on every append to detect a rewrite.
pub const TAIL_WINDOW_BYTES: u64 = 4_096;

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
pub(crate) struct Preloaded {
    /// Every recorded path under the directory starts with this (`None`: nothing preloaded).
    prefix: Option<String>,
    records: std::collections::HashMap<String, SessionStamp>,
}

impl Preloaded {
    /// The records of every path under `dir`, or none if there are more than
    /// [`INGEST_PRELOAD_RECORDS_MAX`] (or `dir` is not UTF-8).
    pub(crate) fn load(store: &dyn Index, dir: &Path) -> Result<Preloaded, IngestError> {
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
    pub(crate) fn take(&mut self, path: &str) -> Option<Option<SessionStamp>> {
        let prefix = self.prefix.as_deref()?;
        path.starts_with(prefix).then(|| self.records.remove(path))
    }
}

/// What reading a file found, before anything is committed: the work that needs no order.
/// Nearly a kilobyte (a session record, counts, what was read), handed from triage to the
/// read-ahead map to the commit: boxed, so each hand-over moves a pointer, not the struct (those
/// copies were the largest share of a re-ingest's time after the store's queries).
pub(crate) struct Prepared {
    /// The store's record of this path when the file was read.
    pub(crate) existing: Existing,
    pub(crate) counts: Report,
    pub(crate) step: Step,
}

/// What a pass knew of the store's record of a file when it looked at the file.
// Only ever inside a boxed `Prepared`: moved as a pointer, so the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Existing {
    /// The whole record, or that there was none.
    Record(Option<SessionRecord>),
    /// Only the preloaded stamp that settled the file as unchanged (`Step::Done`).
    Stamp(SessionStamp),
}

impl Existing {
    /// Whether `now`, the store's record of the path, is still the one the file was looked at
    /// against: for a stamp, a record with that stamp (all the decision was made on).
    pub(crate) fn holds(&self, now: Option<&SessionRecord>) -> bool {
        match self {
            Existing::Record(rec) => rec.as_ref() == now,
            Existing::Stamp(stamp) => now.is_some_and(|r| r.stamp() == *stamp),
        }
    }

    /// The whole record, if one was loaded.
    pub(crate) fn record(&self) -> Option<&SessionRecord> {
        match self {
            Existing::Record(rec) => rec.as_ref(),
            Existing::Stamp(_) => None,
        }
    }
}

pub(crate) enum Step {
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
pub(crate) struct Scanned {
    pub(crate) read: runread_sessions::Scan,
    pub(crate) identity: FileIdentity,
    pub(crate) tail: Option<String>,
}

/// Classifies `path` against the store's record of it and reads what is new.
pub(crate) fn prepare(
    store: &dyn Index,
    agent: Agent,
    path: &Path,
) -> Result<Box<Prepared>, IngestError> {
    Ok(match triage(store, None, agent, path)? {
        Triage::Done(prepared) => prepared,
        Triage::Read(job) => job.read(agent, ReadAhead::Allowed),
    })
}

/// What a look at a file and the store's record of it decided, before reading the file.
// A job is large (a session record and counts); it is made and moved once per file to read.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Triage {
    /// Nothing to read (unchanged, unreadable, not a session).
    Done(Box<Prepared>),
    /// New lines to read.
    Read(ReadJob),
}

/// A file to read: from the start, or after what the store's record of it consumed.
pub(crate) struct ReadJob {
    /// The file, open since it was classified: classified, read and its tail hashed through this
    /// one descriptor.
    file: EvidenceFile,
    existing: Option<SessionRecord>,
    counts: Report,
    /// The generation's entries so far, when appending (the record is `existing`).
    append: Option<Vec<EntrySummary>>,
    reason: &'static str,
}

/// The cheap part of [`prepare`]: the file's identity against the store's record (the header
/// and the tail window re-hashed when it changed), in file order on the committing thread. The
/// record comes from `preloaded` when it covers `path`, else from the store.
pub(crate) fn triage(
    store: &dyn Index,
    preloaded: Option<&mut Preloaded>,
    agent: Agent,
    path: &Path,
) -> Result<Triage, IngestError> {
    let counts = Report::default();
    let Some(path_str) = path.to_str() else {
        return Ok(done(None, counts, FileOutcome::NotASession));
    };
    let identity = match runread_sessions::session_identity(agent, path) {
        Ok(i) => i,
        Err(e) => return Ok(done(None, counts, FileOutcome::Unreadable(e))),
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
    if let Some(rec) = &existing
        && unchanged(
            rec.agent,
            rec.index_version,
            &rec.identity,
            agent,
            &identity,
        )
    {
        return Ok(done(existing, counts, FileOutcome::Unchanged));
    }
    open_and_classify(store, agent, path, existing, counts)
}

/// A file with nothing to read, looked at against `existing`, the store's record of it.
fn done(existing: Option<SessionRecord>, counts: Report, outcome: FileOutcome) -> Triage {
    Triage::Done(Box::new(Prepared {
        existing: Existing::Record(existing),
        counts,
        step: Step::Done(outcome),
    }))
}

/// A file whose identity is not that of `existing`, the store's record of it (or that has none):
/// what to read of it, from the start or after what the record consumed. The file is opened once,
/// here, and classified, read and its tail hashed through that descriptor.
fn open_and_classify(
    store: &dyn Index,
    agent: Agent,
    path: &Path,
    existing: Option<SessionRecord>,
    mut counts: Report,
) -> Result<Triage, IngestError> {
    let file = match runread_sessions::open_session(agent, path, None) {
        Ok(f) => f,
        Err(e) => return Ok(done(existing, counts, FileOutcome::Unreadable(e))),
    };
    // The record to append to, if the file only grew; else it is read from the start.
    let (append_to, reason) = match &existing {
        None => (None, "new file"),
        Some(rec) if rec.agent != agent => (None, "read as another agent's"),
        Some(rec) => match classify(&file, agent, rec, &mut counts.verify_bytes) {
            Ok(Change::Unchanged) => return Ok(done(existing, counts, FileOutcome::Unchanged)),
            Ok(Change::Appended) => (Some(rec), ""),
            Ok(Change::Identity(reason)) => (None, reason),
            Err(e) => return Ok(done(existing, counts, FileOutcome::Unreadable(e))),
        },
    };
    let append = append_to
        .map(|rec| store.entries(&rec.session_id, rec.generation))
        .transpose()?;
    Ok(Triage::Read(ReadJob {
        file,
        existing,
        counts,
        append,
        reason,
    }))
}

impl ReadJob {
    /// The expensive part of [`prepare`]: reads, parses and hashes the file's new lines. Touches
    /// no store, so it runs on any thread.
    pub(crate) fn read(self, agent: Agent, ahead: ReadAhead) -> Box<Prepared> {
        let ReadJob {
            file,
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
        let scanned = scan(agent, &file, resume, ahead, &mut counts);
        let step = match (scanned, append) {
            (Err(outcome), _) => Step::Done(outcome),
            // The new lines change what an earlier line recorded (an agent whose lines are
            // upserts): the file is read again from the start, as a new generation.
            (Ok(scanned), Some(old))
                if runread_sessions::rewrites(agent, &old, &scanned.read.entries) =>
            {
                match scan(agent, &file, Resume::Fresh, ahead, &mut counts) {
                    Ok(scanned) => Step::Fresh {
                        reason: "history rewritten",
                        scanned,
                    },
                    Err(outcome) => Step::Done(outcome),
                }
            }
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

/// Reads `file` from `resume`, then hashes the window before where reading stopped, and checks
/// that the file only grew since it was opened (what was read up to the size at open stands).
pub(crate) fn scan(
    agent: Agent,
    file: &EvidenceFile,
    resume: Resume<'_>,
    ahead: ReadAhead,
    counts: &mut Report,
) -> Result<Scanned, FileOutcome> {
    let read = match runread_sessions::scan_with(agent, file, resume, ahead) {
        Ok(r) => r,
        Err(ScanError::NotASession) => return Err(FileOutcome::NotASession),
        Err(ScanError::Read(e)) => return Err(FileOutcome::Unreadable(e)),
    };
    counts.bytes_read += read.bytes_read;
    counts.skipped_lines += read.skipped;
    let tail = tail_sha256(file, read.consumed, &mut counts.verify_bytes)
        .map_err(FileOutcome::Unreadable)?;
    file.check_grown_only().map_err(FileOutcome::Unreadable)?;
    Ok(Scanned {
        read,
        identity: file.identity(),
        tail,
    })
}

pub(crate) enum Change {
    Unchanged,
    Appended,
    Identity(&'static str),
}

/// Whether a file read as `agent`'s, whose identity is now `now`, is unchanged since a record
/// of `recorded_agent`'s file with `identity`, in `index_version`, was taken. The same identity
/// (size, times to the nanosecond, inode) is the same bytes, a torn last line included:
/// finishing that line grows the file.
pub(crate) fn unchanged(
    recorded_agent: Agent,
    index_version: u32,
    identity: &FileIdentity,
    agent: Agent,
    now: &FileIdentity,
) -> bool {
    recorded_agent == agent && index_version == INDEX_VERSION && *identity == *now
}

/// What became of `file` since `rec` was taken of it (through the open descriptor: the header
/// line and the tail window re-hashed when its identity changed but it may only have grown).
pub(crate) fn classify(
    file: &EvidenceFile,
    agent: Agent,
    rec: &SessionRecord,
    verify_bytes: &mut u64,
) -> Result<Change, ReadError> {
    let now = file.identity();
    if rec.index_version != INDEX_VERSION {
        return Ok(Change::Identity("index format changed"));
    }
    if unchanged(rec.agent, rec.index_version, &rec.identity, agent, &now) {
        return Ok(Change::Unchanged);
    }
    if !now.same_object(&rec.identity) {
        return Ok(Change::Identity("file replaced"));
    }
    if now.size < rec.consumed {
        return Ok(Change::Identity("file truncated"));
    }
    // The header line (an append costs the new bytes, not a re-read) and what lies just before
    // where the last pass stopped: a writer that only appends changed neither.
    let (header_sha256, read) = file.first_line_sha256(rec.header.line_bytes)?;
    *verify_bytes += read;
    if header_sha256 != rec.header.line_sha256 {
        return Ok(Change::Identity("header changed"));
    }
    if tail_sha256(file, rec.consumed, verify_bytes)? != rec.tail_sha256 {
        return Ok(Change::Identity("file rewritten"));
    }
    Ok(Change::Appended)
}

/// The digest of the [`TAIL_WINDOW_BYTES`] before `consumed` (none at the start of a file; a
/// database's session: its last record before it).
pub(crate) fn tail_sha256(
    file: &EvidenceFile,
    consumed: u64,
    verify_bytes: &mut u64,
) -> Result<Option<String>, ReadError> {
    Ok(file
        .sha256_before(consumed, TAIL_WINDOW_BYTES)?
        .map(|(sha256, read)| {
            *verify_bytes += read;
            sha256
        }))
}
