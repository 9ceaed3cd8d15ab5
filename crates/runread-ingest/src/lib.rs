//! Passive ingest: reads Pi session files into the store.
//!
//! Re-ingesting an unchanged file does no work; an appended file costs the new bytes; an
//! identity change — replaced, truncated, rewritten, header changed — starts a new generation,
//! which fails every grant made under the old one. A malformed line or a torn last line never
//! aborts ingest: it is counted and reported, and the runs it touches become `unknown`.
#![forbid(unsafe_code)]

pub mod watch;

use std::path::{Path, PathBuf};

use runread_core::limits::{EVIDENCE_FILE_MAX_BYTES, EVIDENCE_FILE_MAX_LINES};
use runread_sessions::file::{self, ReadError};
use runread_sessions::pi::{self, LineOutcome, PiParser};
use runread_sessions::{EntrySummary, FileIdentity, cut_runs};
use runread_store::{IngestCommit, SessionRecord, Store, StoreError, Workspace};

/// Bytes before the consumed offset that are re-hashed on every append to detect a rewrite.
pub const TAIL_WINDOW_BYTES: u64 = 4_096;
/// Longest header line read.
pub const HEADER_MAX_BYTES: u64 = 64 * 1024;
/// Deepest directory level searched under the sessions directory.
pub const SCAN_MAX_DEPTH: usize = 3;
/// Most session files considered in one scan.
pub const SCAN_MAX_FILES: usize = 100_000;

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
    pub torn_files: u64,
    pub runs: u64,
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
}

impl std::fmt::Display for IngestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IngestError::Store(e) => write!(f, "{e}"),
            IngestError::Watch(e) => write!(f, "watch: {e}"),
        }
    }
}

impl From<StoreError> for IngestError {
    fn from(e: StoreError) -> Self {
        IngestError::Store(e)
    }
}

/// Session files (`*.jsonl`, regular, not symlinks) under `dir`, at most [`SCAN_MAX_DEPTH`]
/// levels down, sorted.
pub fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            let p = entry.path();
            if ft.is_dir() && depth < SCAN_MAX_DEPTH {
                stack.push((p, depth + 1));
            } else if ft.is_file()
                && p.extension().is_some_and(|e| e == "jsonl")
                && out.len() < SCAN_MAX_FILES
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Ingests every session file under `dir`.
pub fn ingest_dir(
    store: &dyn Store,
    dir: &Path,
    now_ms: i64,
    mut progress: impl FnMut(Progress),
) -> Result<(Report, Vec<(PathBuf, FileOutcome)>), IngestError> {
    let files = session_files(dir);
    let workspaces: Vec<Workspace> = store
        .workspaces()?
        .into_iter()
        .filter(|w| w.enabled)
        .collect();
    let mut report = Report::default();
    let mut outcomes = Vec::with_capacity(files.len());
    let total = files.len() as u64;
    for (n, path) in files.into_iter().enumerate() {
        let outcome = ingest_file(store, &workspaces, &path, now_ms, &mut report)?;
        report.files += 1;
        match &outcome {
            FileOutcome::Unchanged => report.unchanged += 1,
            FileOutcome::Appended { .. } => report.appended += 1,
            FileOutcome::NewGeneration { .. } => report.new_generations += 1,
            FileOutcome::OutsideWorkspaces => report.outside_workspaces += 1,
            FileOutcome::NotASession => report.not_sessions += 1,
            FileOutcome::DuplicateSessionId => report.duplicates += 1,
            FileOutcome::Unreadable(_) => report.unreadable += 1,
        }
        outcomes.push((path, outcome));
        progress(Progress {
            files_done: n as u64 + 1,
            files_total: total,
        });
    }
    Ok((report, outcomes))
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

/// Ingests one file, adding its counts to `report`.
pub fn ingest_file(
    store: &dyn Store,
    workspaces: &[Workspace],
    path: &Path,
    now_ms: i64,
    report: &mut Report,
) -> Result<FileOutcome, IngestError> {
    let Some(path_str) = path.to_str() else {
        return Ok(FileOutcome::NotASession);
    };
    let identity = match file::identity(path) {
        Ok(i) => i,
        Err(e) => return Ok(FileOutcome::Unreadable(e)),
    };
    let existing = store.session_by_path(path_str)?;
    let (plan, reason) = match &existing {
        None => (Plan::Fresh, "new file"),
        Some(rec) => match classify(path, rec, &identity, &mut report.verify_bytes) {
            Ok(Change::Unchanged) => return Ok(FileOutcome::Unchanged),
            Ok(Change::Appended) => (Plan::Append, ""),
            Ok(Change::Identity(reason)) => (Plan::Fresh, reason),
            Err(e) => return Ok(FileOutcome::Unreadable(e)),
        },
    };
    match plan {
        Plan::Fresh => fresh(
            store,
            workspaces,
            path,
            path_str,
            existing.as_ref(),
            now_ms,
            reason,
            report,
        ),
        Plan::Append => {
            // `existing` is Some on this path.
            let Some(rec) = existing else {
                return Ok(FileOutcome::Unchanged);
            };
            append(store, path, rec, now_ms, report)
        }
    }
}

enum Plan {
    Fresh,
    Append,
}

enum Change {
    Unchanged,
    Appended,
    Identity(&'static str),
}

fn classify(
    path: &Path,
    rec: &SessionRecord,
    now: &FileIdentity,
    verify_bytes: &mut u64,
) -> Result<Change, ReadError> {
    if *now == rec.identity && !rec.torn {
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
        (rec.header.line_bytes + 1).min(HEADER_MAX_BYTES),
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

/// Result of reading complete lines from an offset.
struct Lines {
    identity: FileIdentity,
    /// Offset just past the last complete line.
    consumed: u64,
    /// Complete lines read, with their starting offsets.
    lines: Vec<Vec<u8>>,
    /// The file ends in an unfinished line (or a line longer than the read bound).
    torn: bool,
    bytes_read: u64,
}

/// Reads complete lines from `offset` to the end of the file, in bounded passes of at most
/// [`EVIDENCE_FILE_MAX_BYTES`] and [`EVIDENCE_FILE_MAX_LINES`] each.
fn read_lines(path: &Path, offset: u64, expect: Option<&FileIdentity>) -> Result<Lines, ReadError> {
    let mut out = Lines {
        identity: file::identity(path)?,
        consumed: offset,
        lines: vec![],
        torn: false,
        bytes_read: 0,
    };
    let mut expect = expect.copied();
    loop {
        let chunk = file::read_from(path, out.consumed, EVIDENCE_FILE_MAX_BYTES, expect.as_ref())?;
        if let Some(prev) = expect
            && !prev.same_object(&chunk.identity)
        {
            return Err(ReadError::ChangedDuringRead);
        }
        expect = Some(chunk.identity);
        out.identity = chunk.identity;
        out.bytes_read += chunk.bytes.len() as u64;
        let mut start = 0usize;
        let mut pass_lines = 0u64;
        while let Some(nl) = chunk.bytes.get(start..).and_then(newline_in) {
            let end = start + nl;
            out.lines
                .push(chunk.bytes.get(start..end).unwrap_or(&[]).to_vec());
            start = end + 1;
            pass_lines += 1;
            if pass_lines >= EVIDENCE_FILE_MAX_LINES {
                break;
            }
        }
        out.consumed += start as u64;
        let at_eof = out.consumed >= chunk.identity.size;
        if at_eof {
            return Ok(out);
        }
        if start == 0 {
            // No complete line in a whole bounded window: unfinished at EOF, or a line too long to read.
            out.torn = true;
            return Ok(out);
        }
        if chunk.reaches_eof() && pass_lines < EVIDENCE_FILE_MAX_LINES {
            out.torn = true; // bytes after the last newline: a line still being written
            return Ok(out);
        }
    }
}

/// Offset of the first newline in `bytes`. `BufRead` on a slice searches with the standard
/// library's word-at-a-time `memchr`: several times faster than a byte loop over a session's
/// megabytes of tool output.
fn newline_in(bytes: &[u8]) -> Option<usize> {
    use std::io::BufRead;
    let mut reader = bytes;
    // Reading from a slice cannot fail.
    let n = reader.skip_until(b'\n').ok()?;
    let last = n.checked_sub(1)?;
    (bytes.get(last) == Some(&b'\n')).then_some(last)
}

#[allow(clippy::too_many_arguments)]
fn fresh(
    store: &dyn Store,
    workspaces: &[Workspace],
    path: &Path,
    path_str: &str,
    existing: Option<&SessionRecord>,
    now_ms: i64,
    reason: &'static str,
    report: &mut Report,
) -> Result<FileOutcome, IngestError> {
    let read = match read_lines(path, 0, None) {
        Ok(r) => r,
        Err(e) => return Ok(FileOutcome::Unreadable(e)),
    };
    report.bytes_read += read.bytes_read;
    let mut lines = read.lines.into_iter();
    let Some(header) = lines.next().as_deref().and_then(pi::parse_header) else {
        return Ok(FileOutcome::NotASession);
    };
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
    let mut parser = PiParser::resume(&header, None);
    let mut entries = Vec::new();
    let mut malformed = Vec::new();
    let lines_seen = parse_into(&mut parser, lines, 2, &mut entries, &mut malformed) - 1;
    let tail = match tail_sha256(
        path,
        read.consumed,
        Some(&read.identity),
        &mut report.verify_bytes,
    ) {
        Ok(t) => t,
        Err(e) => return Ok(FileOutcome::Unreadable(e)),
    };
    let bytes = read.bytes_read;
    let record = SessionRecord {
        session_id: header.session_id.clone(),
        agent: "pi".into(),
        path: path_str.to_owned(),
        workspace_id: ws.id.clone(),
        generation,
        header,
        identity: read.identity,
        consumed: read.consumed,
        lines: lines_seen,
        tail_sha256: tail,
        malformed_lines: malformed,
        torn: read.torn,
        branch_complete: true,
        session_name: None,
        saved_model: None,
        ingested_at_ms: now_ms,
    };
    if commit(store, record, true, entries, vec![], report)? == Committed::Conflict {
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
    path: &Path,
    mut rec: SessionRecord,
    now_ms: i64,
    report: &mut Report,
) -> Result<FileOutcome, IngestError> {
    let read = match read_lines(path, rec.consumed, Some(&rec.identity)) {
        Ok(r) => r,
        Err(e) => return Ok(FileOutcome::Unreadable(e)),
    };
    report.bytes_read += read.bytes_read;
    let old = store.entries(&rec.session_id, rec.generation)?;
    let next_line = rec.lines + 1;
    let mut parser = PiParser::resume(&rec.header, old.last().map(|e| e.id.clone()));
    let mut entries = Vec::new();
    let mut malformed = std::mem::take(&mut rec.malformed_lines);
    rec.lines = parse_into(
        &mut parser,
        read.lines.into_iter(),
        next_line,
        &mut entries,
        &mut malformed,
    ) - 1;
    let bytes = read.consumed - rec.consumed;
    rec.tail_sha256 = match tail_sha256(
        path,
        read.consumed,
        Some(&read.identity),
        &mut report.verify_bytes,
    ) {
        Ok(t) => t,
        Err(e) => return Ok(FileOutcome::Unreadable(e)),
    };
    rec.identity = read.identity;
    rec.consumed = read.consumed;
    rec.malformed_lines = malformed;
    rec.torn = read.torn;
    rec.ingested_at_ms = now_ms;
    if commit(store, rec, false, entries, old, report)? == Committed::Conflict {
        return Ok(FileOutcome::DuplicateSessionId);
    }
    Ok(FileOutcome::Appended { bytes })
}

fn parse_into(
    parser: &mut PiParser,
    lines: impl Iterator<Item = Vec<u8>>,
    first_line_no: u64,
    entries: &mut Vec<EntrySummary>,
    malformed: &mut Vec<u64>,
) -> u64 {
    let mut line_no = first_line_no;
    for line in lines {
        match parser.parse_line(&line, line_no) {
            LineOutcome::Entry(e) => entries.push(*e),
            LineOutcome::Malformed | LineOutcome::Header(_) => malformed.push(line_no),
            LineOutcome::Blank => {}
        }
        line_no += 1;
    }
    line_no
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
    // than copied (their bodies are most of a session's bytes).
    let old_len = old_entries.len();
    let mut all = old_entries;
    all.extend(new_entries);
    let branch = cut_runs(&all, &rec.malformed_lines, rec.torn);
    let new_entries = all.split_off(old_len);
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
    use super::newline_in;

    #[test]
    fn newline_search_finds_what_a_byte_scan_finds() {
        let cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"no newline".to_vec(),
            b"\n".to_vec(),
            b"\n\n".to_vec(),
            b"ab\ncd\n".to_vec(),
            "é…\u{2028}\nx".as_bytes().to_vec(),
            [vec![b'x'; 1000], b"\n".to_vec(), vec![b'y'; 7]].concat(),
            vec![b'z'; 4097],
        ];
        for c in cases {
            assert_eq!(newline_in(&c), c.iter().position(|b| *b == b'\n'), "{c:?}");
        }
    }
}
