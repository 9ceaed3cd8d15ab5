//! The generic streaming scan under every reader: a bounded first line, then the rest line by
//! line in file order, in batches, with a large file's batches read and hashed on a second
//! thread a batch ahead of the parse.

use runread_core::limits::{EVIDENCE_FILE_MAX_LINES, EVIDENCE_LINE_MAX_BYTES};

use crate::file::{EvidenceFile, Line, LineAt, Lines, ReadError};
use crate::model::{Header, LineOutcome, Resume, Scan, ScanError};

/// How a line-per-record agent's file begins: its first line names the session.
pub(crate) struct FirstLine {
    /// Longest first line read to learn the session.
    pub max_bytes: usize,
    /// The session header from the first line; `None`: not a session file of this agent.
    pub parse: fn(&[u8]) -> Option<Header>,
    /// The first line is a line of the conversation too (Claude Code), not only the header
    /// (Codex's `session_meta`).
    pub is_entry: bool,
}

/// One streamed pass over the complete lines of a session file, from where `resume` says: the
/// first line gives the header (and the digest later passes check), `parse_line` the rest, in file
/// order, at most [`EVIDENCE_FILE_MAX_LINES`] lines of at most [`EVIDENCE_LINE_MAX_BYTES`] each.
/// Lines are read in batches; a file with at least [`SCAN_DIGEST_AHEAD_MIN_BYTES`] to read has
/// its batches read and their line digests taken on a second thread while the batch before is
/// parsed here (what `parse_line` gets as its [`LineDigest`]).
pub(crate) fn scan_lines(
    file: &EvidenceFile,
    resume: Resume<'_>,
    first: FirstLine,
    mut parse_line: impl FnMut(&mut Header, &[u8], &LineDigest<'_>, u64, u64) -> LineOutcome,
    ahead: ReadAhead,
) -> Result<Scan, ScanError> {
    let (mut header, start, line_no) = scan_start(file, resume, &first)?;
    let mut out = Scan {
        header: header.clone(),
        entries: Vec::new(),
        malformed: Vec::new(),
        consumed: start,
        lines: line_no - 1,
        torn: false,
        over_bounds: false,
        bytes_read: 0,
        skipped: 0,
        first_unrecognised: None,
    };
    let mut take = |batch: &Batch| take_batch(&mut out, &mut header, batch, &mut parse_line);
    let batches = || Batches {
        lines: file.lines(start, EVIDENCE_LINE_MAX_BYTES),
        next_line_no: line_no,
        ended: false,
        torn: false,
        over_bounds: false,
    };
    let parallel = ahead == ReadAhead::Allowed
        && file.identity().size.saturating_sub(start) >= SCAN_DIGEST_AHEAD_MIN_BYTES
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    // `None`: no second thread (not asked for, or none to be had).
    let read_ahead = if parallel {
        take_read_ahead(batches(), &mut take)?
    } else {
        None
    };
    let (torn, over_bounds) = match read_ahead {
        Some(ended) => ended,
        None => {
            // Read here, every digest taken when asked.
            let (mut lines, mut batch) = (batches(), Batch::default());
            while !lines.ended {
                lines.read_batch(&mut batch)?;
                take(&batch);
            }
            (lines.torn, lines.over_bounds)
        }
    };
    out.torn = torn;
    out.over_bounds = over_bounds;
    out.header = header;
    // What this pass read, each line with its newline (a record as its line and one byte): for a
    // fresh pass whose first line is only the header, that line too.
    if matches!(resume, Resume::Fresh) && start > 0 {
        out.bytes_read += out.header.line_bytes + 1;
    }
    Ok(out)
}

/// Where a scan's lines start: the header (read from the first line of a fresh file), the offset
/// of the first line to parse, and that line's number.
fn scan_start(
    file: &EvidenceFile,
    resume: Resume<'_>,
    first: &FirstLine,
) -> Result<(Header, u64, u64), ScanError> {
    match resume {
        Resume::Fresh => {
            let mut lines = file.lines(0, first.max_bytes);
            let (header, consumed) = match lines.next().map_err(ScanError::Read)? {
                Some(Line::Complete { bytes, .. }) => (
                    (first.parse)(bytes).ok_or(ScanError::NotASession)?,
                    lines.consumed(),
                ),
                _ => return Err(ScanError::NotASession),
            };
            if first.is_entry {
                // The first line is a line of the session too: read it again as one.
                Ok((header, 0, 1))
            } else {
                Ok((header, consumed, 2))
            }
        }
        Resume::After {
            header,
            offset,
            lines,
            ..
        } => Ok((header.clone(), offset, lines + 1)),
    }
}

/// Parses one batch's lines in order into `out`: entries kept, malformed and oversize lines
/// noted by number, bookkeeping counted, and `out`'s consumed offset and line count advanced.
fn take_batch(
    out: &mut Scan,
    header: &mut Header,
    batch: &Batch,
    parse_line: &mut impl FnMut(&mut Header, &[u8], &LineDigest<'_>, u64, u64) -> LineOutcome,
) {
    for (line_no, line) in (batch.first_line_no..).zip(&batch.lines) {
        match *line {
            BatchLine::Oversize { len, .. } => {
                out.bytes_read += len + 1;
                out.malformed.push(line_no);
            }
            BatchLine::Complete {
                offset,
                ref range,
                ref sha256,
                ..
            } => {
                let bytes = batch.data.get(range.clone()).unwrap_or(&[]);
                out.bytes_read += range.len() as u64 + 1;
                let digest = LineDigest {
                    line: bytes,
                    known: sha256.as_ref(),
                };
                match parse_line(header, bytes, &digest, line_no, offset) {
                    LineOutcome::Entry(e) => out.entries.push(*e),
                    LineOutcome::Malformed | LineOutcome::Header(_) => out.malformed.push(line_no),
                    LineOutcome::Blank => {}
                    LineOutcome::Skipped => out.skipped += 1,
                    LineOutcome::Unrecognised(e, seen) => {
                        out.entries.push(*e);
                        out.first_unrecognised.get_or_insert(seen);
                    }
                }
            }
        }
        out.consumed = line.end();
        out.lines = line_no;
    }
}

/// Reads and hashes `lines` on a second thread a batch ahead of `take`, which gets every batch
/// here in file order: neither reading nor hashing needs parse state, so the parse (v1's parent
/// links, the first cwd) stays in file order on this thread. Returns whether the file ended torn
/// and over bounds; `Ok(None)` when no thread could be started (then nothing was read).
fn take_read_ahead(
    lines: Batches<'_>,
    take: &mut impl FnMut(&Batch),
) -> Result<Option<(bool, bool)>, ScanError> {
    std::thread::scope(|scope| -> Result<Option<(bool, bool)>, ScanError> {
        let (ahead_tx, ahead) = std::sync::mpsc::sync_channel::<Ahead>(1);
        // Parsed batches go back to be read into again: their buffers' pages are already the
        // process's (a fresh buffer per batch costs a page fault per 4 KiB read).
        let (spare_tx, spare) = std::sync::mpsc::sync_channel::<Batch>(2);
        let mut lines = lines;
        let spawned = std::thread::Builder::new()
            .name("runread-read-ahead".into())
            .spawn_scoped(scope, move || {
                loop {
                    let mut batch = spare.try_recv().unwrap_or_default();
                    let next = match lines.read_batch(&mut batch) {
                        Ok(()) => {
                            batch.hash_lines();
                            Ahead::Lines(batch)
                        }
                        Err(e) => Ahead::Failed(e),
                    };
                    let failed = matches!(next, Ahead::Failed(_));
                    if ahead_tx.send(next).is_err() || failed {
                        return;
                    }
                    if lines.ended {
                        let _ = ahead_tx.send(Ahead::End {
                            torn: lines.torn,
                            over_bounds: lines.over_bounds,
                        });
                        return;
                    }
                }
            });
        if spawned.is_err() {
            return Ok(None);
        }
        loop {
            match ahead.recv() {
                Ok(Ahead::Lines(batch)) => {
                    take(&batch);
                    // Dropped instead when it grew past a spare's size (a long line), when
                    // the reading thread has enough spares, or when it has ended.
                    if batch.data.capacity() <= 2 * SCAN_BATCH_BYTES {
                        let _ = spare_tx.try_send(batch);
                    }
                }
                Ok(Ahead::End { torn, over_bounds }) => return Ok(Some((torn, over_bounds))),
                Ok(Ahead::Failed(e)) => return Err(e),
                // The reading thread ended without saying why (it panicked).
                Err(_) => return Err(ScanError::Read(ReadError::Io)),
            }
        }
    })
}

/// Whether a scan may read and hash a large file's lines on a second thread. A caller that already
/// keeps every core busy reading other files (ingest's readers) says `Off`: there a second thread
/// per file only competes with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAhead {
    Allowed,
    Off,
}

/// Files with at least this many bytes to read have their lines read and hashed on a second
/// thread, a batch ahead of the parse: below it, a thread costs more than it saves.
pub const SCAN_DIGEST_AHEAD_MIN_BYTES: u64 = 1024 * 1024;

/// A batch of lines gathers lines until it holds at least this many bytes (or the file ends):
/// a scan holds at most three batches in use at once (one being read and hashed, one handed over,
/// one parsed), each at most this plus one line of at most `EVIDENCE_LINE_MAX_BYTES`, and two
/// spare buffers of at most twice this, kept to be read into again.
pub const SCAN_BATCH_BYTES: usize = 256 * 1024;

/// The SHA-256 of one complete line, as a parser asks for it: taken ahead on another thread (a
/// large file's), or when asked.
pub struct LineDigest<'a> {
    line: &'a [u8],
    known: Option<&'a [u8; 32]>,
}

impl<'a> LineDigest<'a> {
    /// The digest of `line`, taken when asked for.
    pub fn of(line: &'a [u8]) -> Self {
        LineDigest { line, known: None }
    }

    /// The line's SHA-256 in lowercase hex.
    pub fn hex(&self) -> String {
        match self.known {
            Some(digest) => {
                debug_assert_eq!(
                    hex::encode(digest),
                    runread_core::sha256_hex(self.line),
                    "a digest taken ahead is of its own line"
                );
                hex::encode(digest)
            }
            None => runread_core::sha256_hex(self.line),
        }
    }
}

/// Complete lines read in file order, a batch at a time, numbered, up to
/// [`EVIDENCE_FILE_MAX_LINES`].
struct Batches<'f> {
    lines: Lines<'f>,
    next_line_no: u64,
    /// No line is left to read (the end, or the line bound).
    ended: bool,
    /// The file ended in an unfinished line.
    torn: bool,
    /// Lines past the line bound were left unread.
    over_bounds: bool,
}

/// What the read-ahead thread hands the parse, in file order.
enum Ahead {
    /// The next lines, each complete one with its SHA-256.
    Lines(Batch),
    /// No more lines: whether the file ended in an unfinished line, whether lines past the line
    /// bound were left unread.
    End { torn: bool, over_bounds: bool },
    /// Reading failed; nothing after it is handed over.
    Failed(ScanError),
}

/// Lines of a file, their bytes in one buffer.
#[derive(Default)]
struct Batch {
    /// The line number of the first line (each next line is the next number).
    first_line_no: u64,
    data: Vec<u8>,
    lines: Vec<BatchLine>,
}

enum BatchLine {
    /// A complete line: its bytes are `range` of the batch's data; `sha256` once taken ahead.
    Complete {
        offset: u64,
        range: std::ops::Range<usize>,
        sha256: Option<[u8; 32]>,
        end: u64,
    },
    Oversize {
        len: u64,
        end: u64,
    },
}

impl BatchLine {
    /// Where the next line starts: past this one's newline in a file, the next position in a
    /// record log (as [`Lines::consumed`] says; a record's position is not a byte offset).
    fn end(&self) -> u64 {
        match *self {
            BatchLine::Complete { end, .. } | BatchLine::Oversize { end, .. } => end,
        }
    }
}

impl Batch {
    /// Takes the SHA-256 of each complete line (an oversize line's is never asked for).
    fn hash_lines(&mut self) {
        use sha2::Digest;
        let data = &self.data;
        for line in &mut self.lines {
            if let BatchLine::Complete { range, sha256, .. } = line {
                *sha256 = Some(sha2::Sha256::digest(data.get(range.clone()).unwrap_or(&[])).into());
            }
        }
    }
}

impl Batches<'_> {
    /// The next lines into `batch` (what it held before is dropped), at least
    /// [`SCAN_BATCH_BYTES`] of them unless the file or the line bound ends first (then
    /// [`Batches::ended`] is set).
    fn read_batch(&mut self, batch: &mut Batch) -> Result<(), ScanError> {
        batch.data.clear();
        batch.lines.clear();
        batch.first_line_no = self.next_line_no;
        while batch.data.len() < SCAN_BATCH_BYTES {
            if self.next_line_no > EVIDENCE_FILE_MAX_LINES {
                let more = self.lines.next().map_err(ScanError::Read)?.is_some();
                self.over_bounds = more || self.lines.torn();
                self.ended = true;
                break;
            }
            let from = batch.data.len();
            match self
                .lines
                .next_into(&mut batch.data)
                .map_err(ScanError::Read)?
            {
                None => {
                    self.torn = self.lines.torn();
                    self.ended = true;
                    break;
                }
                Some(LineAt::Complete { offset, len }) => batch.lines.push(BatchLine::Complete {
                    offset,
                    range: from..from + len,
                    sha256: None,
                    end: self.lines.consumed(),
                }),
                Some(LineAt::Oversize { len, .. }) => batch.lines.push(BatchLine::Oversize {
                    len,
                    end: self.lines.consumed(),
                }),
            }
            self.next_line_no += 1;
        }
        Ok(())
    }
}
