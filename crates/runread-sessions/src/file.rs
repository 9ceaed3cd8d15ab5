//! Reading an agent's session file as evidence: link-safe, bounded, and with the file's identity
//! checked before and after every read, so that a file replaced, linked or changed during the read
//! is never taken for the one that was meant.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use runread_core::limits::EVIDENCE_LINE_MAX_BYTES;

/// What identifies one version of a file: where it lives (device, inode), how many names it
/// has, its size, and its modification and status-change times. The status-change time (ctime)
/// is what an in-place rewrite cannot hide: `touch -d` and `utimensat` can restore an mtime, but
/// any write, chmod or time change sets ctime to the current time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

impl FileIdentity {
    /// `None` where the system gives a file no identity (not Unix): such a file is never evidence.
    fn of(meta: &std::fs::Metadata) -> Option<Self> {
        let s = runread_platform::file::Stat::of(meta)?;
        Some(FileIdentity {
            dev: s.dev,
            ino: s.ino,
            nlink: s.nlink,
            size: s.size,
            mtime_ns: s.mtime_ns,
            ctime_ns: s.ctime_ns,
        })
    }

    /// Same file object (device and inode), whatever its content.
    pub fn same_object(&self, other: &FileIdentity) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// Why a file could not be read as evidence. Carries no path and no OS error text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// The file does not exist (any more).
    Missing,
    /// The path is a symbolic link, or the file is not a regular file.
    NotRegular,
    /// The file has more than one name (a hard link).
    HardLinked,
    /// The path pointed to another file object, or the file changed, during the read.
    ChangedDuringRead,
    /// The file is smaller than the offset asked for (truncated since the last read).
    Truncated,
    /// Any other I/O failure.
    Io,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReadError::Missing => "missing",
            ReadError::NotRegular => "not a regular file (a link or a device)",
            ReadError::HardLinked => "hard-linked",
            ReadError::ChangedDuringRead => "changed while being read",
            ReadError::Truncated => "truncated",
            ReadError::Io => "could not be read",
        })
    }
}

/// Bytes read from `offset`, with the file's identity before and after the read.
#[derive(Debug, Clone)]
pub struct ReadChunk {
    pub identity: FileIdentity,
    pub offset: u64,
    pub bytes: Vec<u8>,
}

impl ReadChunk {
    /// Whether this chunk reaches the end of the file as it was when read.
    pub fn reaches_eof(&self) -> bool {
        self.offset + self.bytes.len() as u64 >= self.identity.size
    }
}

/// Current identity of the file at `path`, without following a symbolic link at the leaf.
pub fn identity(path: &Path) -> Result<FileIdentity, ReadError> {
    let meta = std::fs::symlink_metadata(path).map_err(io_kind)?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular);
    }
    FileIdentity::of(&meta).ok_or(ReadError::Io)
}

/// Reads at most `max_bytes` from `offset` of the regular, singly-linked file at `path`.
///
/// The leaf is opened with `O_NOFOLLOW`; the open descriptor must be the object the path names
/// before and after the read, with unchanged size and modification time; otherwise
/// [`ReadError::ChangedDuringRead`]. `expect`, when given, must be the same file object.
pub fn read_from(
    path: &Path,
    offset: u64,
    max_bytes: u64,
    expect: Option<&FileIdentity>,
) -> Result<ReadChunk, ReadError> {
    let before_path = identity(path)?;
    let mut file = runread_platform::file::link_safe(std::fs::OpenOptions::new().read(true))
        .open(path)
        .map_err(|e| {
            if runread_platform::file::refused_link(&e) {
                ReadError::NotRegular
            } else {
                io_kind(e)
            }
        })?;
    let before = fd_identity(&file)?;
    if !before.same_object(&before_path) || before != before_path {
        return Err(ReadError::ChangedDuringRead);
    }
    if let Some(expect) = expect
        && !before.same_object(expect)
    {
        return Err(ReadError::ChangedDuringRead);
    }
    if before.nlink != 1 {
        return Err(ReadError::HardLinked);
    }
    if offset > before.size {
        return Err(ReadError::Truncated);
    }
    file.seek(SeekFrom::Start(offset)).map_err(io_kind)?;
    let want = max_bytes.min(before.size - offset);
    let mut bytes = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    (&mut file)
        .take(want)
        .read_to_end(&mut bytes)
        .map_err(io_kind)?;
    let after = fd_identity(&file)?;
    let after_path = identity(path)?;
    if after != before || after_path != before {
        return Err(ReadError::ChangedDuringRead);
    }
    Ok(ReadChunk {
        identity: before,
        offset,
        bytes,
    })
}

/// One session file held open for a series of reads: opened once without following a link at
/// the leaf, checked to be the object the path names (and the expected one, when given), with one
/// link; every read then goes through that descriptor, and [`EvidenceFile::check_unchanged`]
/// compares the descriptor and the path with what was seen at open.
///
/// Memory is bounded by what the caller asks for: [`EvidenceFile::read_at`] reads at most the
/// length given, and [`EvidenceFile::lines`] holds one line (at most its `max_line` bytes) and a
/// fixed buffer, whatever the file's size.
#[derive(Debug)]
pub struct EvidenceFile {
    file: Backing,
    path: std::path::PathBuf,
    opened: FileIdentity,
}

/// What an [`EvidenceFile`]'s lines are read from.
#[derive(Debug)]
enum Backing {
    /// A session file: its lines at byte offsets.
    Os(File),
    /// A session's records in the agent's own database ([`RecordLog`]): one line per record, at
    /// its position.
    Records(Box<dyn RecordLog>),
}

/// A session an agent keeps as records in its own database rather than as lines of a file
/// (OpenCode's event log): an append-only sequence of records, each at a position (0, 1, 2, …)
/// and read as one line. Everything above treats it as a session file whose "offsets" are
/// positions: a line is a record, the size is the position after the last record, and a log
/// that only grew keeps its lines where they were. What identifies it ([`RecordLog::identity`]):
/// the database file's device and inode, one link, the size as the position past its last
/// record, and as its modification time when the agent last changed the session (not the
/// database file's times, which move with every other session it holds); each record's digest,
/// taken at ingest and checked when served, stands for its content.
///
/// Implemented in the agent's folder; read-only, bounded (a record longer than the line bound is
/// reported by its length, never held) and never blocking the agent.
pub trait RecordLog: std::fmt::Debug + Send + Sync {
    /// The log's identity when it was opened (its records read up to that size).
    fn identity(&self) -> FileIdentity;
    /// At most `batch` records from position `from` up to [`RecordLog::identity`]'s size, in
    /// order: each whole when it is at most `max_line` bytes, else only its length.
    fn records(&self, from: u64, max_line: usize, batch: usize) -> Result<Vec<Record>, ReadError>;
    /// The log's identity now, read again from the database.
    fn current(&self) -> Result<FileIdentity, ReadError>;
}

/// One record of a [`RecordLog`] read as a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub position: u64,
    /// Its bytes, or its length when over the bound asked for.
    pub line: Result<Vec<u8>, u64>,
}

/// Records read from a [`RecordLog`] at a time when streaming lines.
pub const RECORD_READ_BATCH: usize = 256;

/// Bytes read from the file at a time when streaming lines.
pub const LINE_READ_BUFFER_BYTES: usize = 64 * 1024;

impl EvidenceFile {
    /// Opens the regular, singly-linked file at `path`. `expect`, when given, must be the same
    /// file object (device and inode); its size and times may differ.
    pub fn open(path: &Path, expect: Option<&FileIdentity>) -> Result<EvidenceFile, ReadError> {
        let before_path = identity(path)?;
        let file = runread_platform::file::link_safe(std::fs::OpenOptions::new().read(true))
            .open(path)
            .map_err(|e| {
                if runread_platform::file::refused_link(&e) {
                    ReadError::NotRegular
                } else {
                    io_kind(e)
                }
            })?;
        let opened = fd_identity(&file)?;
        if !opened.same_object(&before_path) {
            return Err(ReadError::ChangedDuringRead);
        }
        if let Some(expect) = expect
            && !opened.same_object(expect)
        {
            return Err(ReadError::ChangedDuringRead);
        }
        if opened.nlink != 1 {
            return Err(ReadError::HardLinked);
        }
        Ok(EvidenceFile {
            file: Backing::Os(file),
            path: path.to_path_buf(),
            opened,
        })
    }

    /// A session kept as records in an agent's database (`log`, opened by the agent's folder),
    /// named by `path`. `expect`, when given, must be the same database object.
    pub fn from_records(
        path: &Path,
        log: Box<dyn RecordLog>,
        expect: Option<&FileIdentity>,
    ) -> Result<EvidenceFile, ReadError> {
        let opened = log.identity();
        if let Some(expect) = expect
            && !opened.same_object(expect)
        {
            return Err(ReadError::ChangedDuringRead);
        }
        Ok(EvidenceFile {
            file: Backing::Records(log),
            path: path.to_path_buf(),
            opened,
        })
    }

    /// The file's identity when it was opened.
    /// The path the file was opened at (what lies beside it is found from there).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn identity(&self) -> FileIdentity {
        self.opened
    }

    /// Exactly `len` bytes at `offset`, or [`ReadError::Truncated`] if the file is shorter.
    /// The caller bounds `len`.
    /// A session's records are read whole: `offset` is a record's position and `len` its exact
    /// length, or [`ReadError::Truncated`].
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, ReadError> {
        let file = match &self.file {
            Backing::Os(file) => file,
            Backing::Records(log) => return record_at(log.as_ref(), offset, len),
        };
        let end = offset.checked_add(len as u64).ok_or(ReadError::Truncated)?;
        if end > self.opened.size {
            return Err(ReadError::Truncated);
        }
        let mut bytes = vec![0u8; len];
        runread_platform::file::read_exact_at(file, &mut bytes, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                ReadError::Truncated
            } else {
                io_kind(e)
            }
        })?;
        Ok(bytes)
    }

    /// The complete lines from `offset` up to the size the file had at open (bytes appended
    /// since are left for the next read). A line longer than `max_line` bytes is skipped without
    /// being held, and reported as [`Line::Oversize`].
    pub fn lines(&self, offset: u64, max_line: usize) -> Lines<'_> {
        Lines {
            file: match &self.file {
                Backing::Os(file) => From::Os(file),
                Backing::Records(log) => From::Records(log.as_ref(), Default::default()),
            },
            pos: offset,
            next_read: offset,
            end: self.opened.size,
            buf: Vec::new(),
            window: Vec::new(),
            window_at: 0,
            max_line,
            torn: false,
        }
    }

    /// The file is still exactly as it was at open, through the descriptor and through the path.
    pub fn check_unchanged(&self) -> Result<(), ReadError> {
        let file = match &self.file {
            Backing::Os(file) => file,
            Backing::Records(log) => {
                return if log.current()? == self.opened {
                    Ok(())
                } else {
                    Err(ReadError::ChangedDuringRead)
                };
            }
        };
        let now = fd_identity(file)?;
        let path_now = identity(&self.path)?;
        if now != self.opened || path_now != self.opened {
            return Err(ReadError::ChangedDuringRead);
        }
        Ok(())
    }

    /// The file is still the same object with one link, at least as long as at open, and the
    /// path still names it: what was read up to the size at open still stands if nothing before
    /// that size was rewritten (an appending writer only adds after it). Returns the identity
    /// now.
    pub fn check_grown_only(&self) -> Result<FileIdentity, ReadError> {
        let file = match &self.file {
            Backing::Os(file) => file,
            Backing::Records(log) => {
                let now = log.current()?;
                if !now.same_object(&self.opened) || now.size < self.opened.size {
                    return Err(ReadError::ChangedDuringRead);
                }
                return Ok(now);
            }
        };
        let now = fd_identity(file)?;
        let path_now = identity(&self.path)?;
        if !now.same_object(&self.opened)
            || path_now != now
            || now.nlink != 1
            || now.size < self.opened.size
        {
            return Err(ReadError::ChangedDuringRead);
        }
        Ok(now)
    }
}

impl EvidenceFile {
    /// The SHA-256 of the first line, which is `len` bytes long, and the bytes read to check
    /// it (a file's first line must end there: its newline is read too).
    pub fn first_line_sha256(&self, len: u64) -> Result<(String, u64), ReadError> {
        let bytes = match &self.file {
            Backing::Os(_) => {
                let with_newline = len.saturating_add(1);
                let head = self.read_at(
                    0,
                    usize::try_from(with_newline).map_err(|_| ReadError::Truncated)?,
                )?;
                match head.strip_suffix(b"\n") {
                    Some(line) => line.to_vec(),
                    None => return Ok((String::new(), with_newline)),
                }
            }
            Backing::Records(log) => {
                let first = log
                    .records(0, EVIDENCE_LINE_MAX_BYTES, 1)?
                    .into_iter()
                    .next()
                    .ok_or(ReadError::Truncated)?;
                match first.line {
                    Ok(line) if first.position == 0 => line,
                    _ => return Ok((String::new(), 0)),
                }
            }
        };
        Ok((runread_core::sha256_hex(&bytes), len))
    }

    /// The SHA-256 of what lies just before `consumed`, which a writer that only appends never
    /// changes (`None` at the start), and the bytes read: a file's last `window` bytes, a
    /// database's last record (its position and length when it is over the line bound).
    pub fn sha256_before(
        &self,
        consumed: u64,
        window: u64,
    ) -> Result<Option<(String, u64)>, ReadError> {
        if consumed == 0 {
            return Ok(None);
        }
        let bytes = match &self.file {
            Backing::Os(_) => {
                let start = consumed.saturating_sub(window);
                let len = usize::try_from(consumed - start).map_err(|_| ReadError::Truncated)?;
                self.read_at(start, len)?
            }
            Backing::Records(log) => {
                let last = log
                    .records(consumed - 1, EVIDENCE_LINE_MAX_BYTES, 1)?
                    .into_iter()
                    .next()
                    .filter(|r| r.position == consumed - 1)
                    .ok_or(ReadError::Truncated)?;
                // A record over the bound is never read into memory: its position and length
                // stand for it (a log that is only appended to never changes either).
                last.line.unwrap_or_else(|len| {
                    format!("record {} over the line bound: {len} bytes", last.position)
                        .into_bytes()
                })
            }
        };
        Ok(Some((runread_core::sha256_hex(&bytes), bytes.len() as u64)))
    }
}

/// The record at `position`, exactly `len` bytes long.
fn record_at(log: &dyn RecordLog, position: u64, len: usize) -> Result<Vec<u8>, ReadError> {
    let record = log
        .records(position, len, 1)?
        .into_iter()
        .next()
        .filter(|r| r.position == position)
        .ok_or(ReadError::Truncated)?;
    match record.line {
        Ok(bytes) if bytes.len() == len => Ok(bytes),
        _ => Err(ReadError::Truncated),
    }
}

/// One item of [`Lines`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A complete line without its newline, starting at `offset`.
    Complete { offset: u64, bytes: &'a [u8] },
    /// A line longer than the bound: `len` bytes (without the newline) at `offset`, not kept.
    Oversize { offset: u64, len: u64 },
}

/// Streaming reader of complete lines (see [`EvidenceFile::lines`]).
pub struct Lines<'f> {
    file: From<'f>,
    /// Offset of the next unread line.
    pos: u64,
    /// Offset of the next byte to read into the window.
    next_read: u64,
    /// Lines end at or before this offset (the size at open).
    end: u64,
    /// The line being returned.
    buf: Vec<u8>,
    /// Bytes read ahead from `window_at`, not yet consumed.
    window: Vec<u8>,
    window_at: usize,
    max_line: usize,
    torn: bool,
}

/// Where [`Lines`] reads from: a file's bytes, or a log's records (with those read ahead).
enum From<'f> {
    Os(&'f File),
    Records(&'f dyn RecordLog, std::collections::VecDeque<Record>),
}

impl Lines<'_> {
    /// Offset just past the last complete line returned.
    pub fn consumed(&self) -> u64 {
        self.pos
    }

    /// Whether the read ended in bytes without a newline (a line still being written).
    pub fn torn(&self) -> bool {
        self.torn
    }

    /// Drops the consumed part of the window and reads the next bytes into it. Returns false at
    /// the end.
    fn fill(&mut self) -> Result<bool, ReadError> {
        let From::Os(file) = self.file else {
            return Ok(false);
        };
        if self.window_at > 0 {
            self.window.drain(..self.window_at);
            self.window_at = 0;
        }
        let from = self.next_read;
        if from >= self.end {
            return Ok(false);
        }
        let want = usize::try_from((self.end - from).min(LINE_READ_BUFFER_BYTES as u64))
            .unwrap_or(LINE_READ_BUFFER_BYTES);
        let old = self.window.len();
        self.window.resize(old + want, 0);
        let got = loop {
            match runread_platform::file::read_at(file, &mut self.window[old..], from) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.window.truncate(old);
                    return Err(io_kind(e));
                }
            }
        };
        self.window.truncate(old + got);
        self.next_read += got as u64;
        if got == 0 {
            // Shorter than at open: truncated under us.
            return Err(ReadError::ChangedDuringRead);
        }
        Ok(true)
    }

    /// The next line, or `None` at the end (see [`Lines::torn`]).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Line<'_>>, ReadError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let at = self.next_into(&mut buf);
        self.buf = buf;
        Ok(at?.map(|at| match at {
            LineAt::Complete { offset, .. } => Line::Complete {
                offset,
                bytes: &self.buf,
            },
            LineAt::Oversize { offset, len } => Line::Oversize { offset, len },
        }))
    }

    /// The next line appended to `out` (nothing appended for an oversize line), or `None` at the
    /// end (see [`Lines::torn`]): [`Lines::next`] for a caller that gathers many lines in one
    /// buffer, without copying each twice.
    pub fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<LineAt>, ReadError> {
        if let From::Records(log, ahead) = &mut self.file {
            return next_record(*log, ahead, &mut self.pos, self.end, self.max_line, out);
        }
        let base = out.len();
        let start = self.pos;
        let mut len: u64 = 0;
        let mut oversize = false;
        loop {
            let pending = self.window.get(self.window_at..).unwrap_or(&[]);
            if let Some(nl) = memchr_newline(pending) {
                if !oversize {
                    if len + nl as u64 > self.max_line as u64 {
                        oversize = true;
                        out.truncate(base);
                    } else {
                        out.extend_from_slice(pending.get(..nl).unwrap_or(&[]));
                    }
                }
                len += nl as u64;
                self.window_at += nl + 1;
                self.pos = start + len + 1;
                return Ok(Some(if oversize {
                    LineAt::Oversize { offset: start, len }
                } else {
                    LineAt::Complete {
                        offset: start,
                        len: out.len() - base,
                    }
                }));
            }
            let n = pending.len();
            if !oversize {
                if len + n as u64 > self.max_line as u64 {
                    oversize = true;
                    out.truncate(base);
                } else {
                    out.extend_from_slice(pending);
                }
            }
            len += n as u64;
            self.window_at += n;
            if !self.fill()? {
                // Bytes after the last newline: an unfinished line, left for the next read.
                out.truncate(base);
                self.torn = len > 0;
                self.window.clear();
                self.window_at = 0;
                self.next_read = start;
                self.pos = start;
                return Ok(None);
            }
        }
    }
}

/// The next record of `log` from `*pos` (read ahead in batches into `ahead`) as a line appended
/// to `out`; `None` past `end`. A log has no unfinished line: a record is written whole.
fn next_record(
    log: &dyn RecordLog,
    ahead: &mut std::collections::VecDeque<Record>,
    pos: &mut u64,
    end: u64,
    max_line: usize,
    out: &mut Vec<u8>,
) -> Result<Option<LineAt>, ReadError> {
    if ahead.is_empty() && *pos < end {
        ahead.extend(log.records(*pos, max_line, RECORD_READ_BATCH)?);
    }
    let Some(record) = ahead
        .pop_front()
        .filter(|r| r.position >= *pos && r.position < end)
    else {
        return Ok(None);
    };
    *pos = record.position + 1;
    Ok(Some(match record.line {
        Ok(bytes) => {
            out.extend_from_slice(&bytes);
            LineAt::Complete {
                offset: record.position,
                len: bytes.len(),
            }
        }
        Err(len) => LineAt::Oversize {
            offset: record.position,
            len,
        },
    }))
}

/// Where a line [`Lines::next_into`] read is: [`Line`] without the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineAt {
    /// A complete line of `len` bytes (without its newline) at `offset`, appended to the buffer.
    Complete { offset: u64, len: usize },
    /// A line longer than the bound: `len` bytes at `offset`, not kept.
    Oversize { offset: u64, len: u64 },
}

/// Offset of the first newline in `bytes` (`memchr`'s vectorized search: on a large session it
/// is most of what reading a line costs beside the copy).
fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

fn fd_identity(file: &File) -> Result<FileIdentity, ReadError> {
    let meta = file.metadata().map_err(io_kind)?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular);
    }
    FileIdentity::of(&meta).ok_or(ReadError::Io)
}

fn io_kind(e: std::io::Error) -> ReadError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing,
        _ => ReadError::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    #[test]
    fn reads_a_bounded_slice_with_identity() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"hello\nworld\n").unwrap();
        let c = read_from(&p, 6, 3, None).unwrap();
        assert_eq!(c.bytes, b"wor");
        assert!(!c.reaches_eof());
        let c = read_from(&p, 6, 100, None).unwrap();
        assert_eq!(c.bytes, b"world\n");
        assert!(c.reaches_eof());
    }

    #[test]
    fn refuses_symlink_hardlink_missing_and_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"x\n").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert_eq!(
            read_from(&link, 0, 10, None).unwrap_err(),
            ReadError::NotRegular
        );
        assert_eq!(
            read_from(&p, 5, 10, None).unwrap_err(),
            ReadError::Truncated
        );
        let hard = dir.path().join("hard.jsonl");
        std::fs::hard_link(&p, &hard).unwrap();
        assert_eq!(
            read_from(&p, 0, 10, None).unwrap_err(),
            ReadError::HardLinked
        );
        std::fs::remove_file(&hard).unwrap();
        assert!(read_from(&p, 0, 10, None).is_ok());
        assert_eq!(
            read_from(&dir.path().join("nope"), 0, 10, None).unwrap_err(),
            ReadError::Missing
        );
    }

    /// One streamed line: its offset, and its bytes or (over the bound) its length.
    type Streamed = (u64, Result<Vec<u8>, u64>);

    /// Every line of `bytes` as `Lines` returns them with a line bound of `max`, and the state at
    /// the end (consumed, torn).
    fn stream(bytes: &[u8], from: u64, max: usize) -> (Vec<Streamed>, u64, bool) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, bytes).unwrap();
        let f = EvidenceFile::open(&p, None).unwrap();
        let mut lines = f.lines(from, max);
        let mut out = vec![];
        while let Some(l) = lines.next().unwrap() {
            out.push(match l {
                Line::Complete { offset, bytes } => (offset, Ok(bytes.to_vec())),
                Line::Oversize { offset, len } => (offset, Err(len)),
            });
        }
        (out, lines.consumed(), lines.torn())
    }

    #[test]
    fn lines_stream_with_offsets_across_read_buffers() {
        // Lines shorter than, equal to and longer than the read buffer, and empty lines.
        let big = vec![b'a'; LINE_READ_BUFFER_BYTES * 2 + 7];
        let exact = vec![b'b'; LINE_READ_BUFFER_BYTES - 1];
        let mut file = Vec::new();
        let mut want = Vec::new();
        for l in [&b"one"[..], &big, b"", &exact, "é…".as_bytes(), b"last"] {
            want.push((file.len() as u64, Ok(l.to_vec())));
            file.extend_from_slice(l);
            file.push(b'\n');
        }
        let (got, consumed, torn) = stream(&file, 0, usize::MAX);
        assert_eq!(got, want);
        assert_eq!(consumed, file.len() as u64);
        assert!(!torn);
        // Resuming at a line's offset gives the rest.
        let (got, _, _) = stream(&file, want[3].0, usize::MAX);
        assert_eq!(got, want[3..].to_vec());
    }

    #[test]
    fn an_unfinished_last_line_is_left_unread_and_flagged() {
        let (got, consumed, torn) = stream(b"a\nbc\nunfinished", 0, 100);
        assert_eq!(got.len(), 2);
        assert_eq!(consumed, 5);
        assert!(torn);
        let (got, consumed, torn) = stream(b"", 0, 100);
        assert!(got.is_empty() && consumed == 0 && !torn);
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_unheld_at_n_plus_one_and_kept_at_n() {
        let max = LINE_READ_BUFFER_BYTES + 10;
        for (len, kept) in [(max, true), (max + 1, false)] {
            let mut file = vec![b'x'; len];
            file.extend_from_slice(b"\nnext\n");
            let (got, consumed, torn) = stream(&file, 0, max);
            let first = if kept {
                (0, Ok(vec![b'x'; len]))
            } else {
                (0, Err(len as u64))
            };
            assert_eq!(got, vec![first, (len as u64 + 1, Ok(b"next".to_vec()))]);
            assert_eq!(consumed, file.len() as u64);
            assert!(!torn);
        }
    }

    #[test]
    fn read_at_refuses_past_the_size_at_open_and_checks_see_rewrites() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"hello\nworld\n").unwrap();
        let f = EvidenceFile::open(&p, None).unwrap();
        assert_eq!(f.read_at(6, 5).unwrap(), b"world");
        assert_eq!(f.read_at(8, 5).unwrap_err(), ReadError::Truncated);
        assert!(f.check_unchanged().is_ok());
        // An append: the open file only grew.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"more\n")
            .unwrap();
        assert_eq!(
            f.check_unchanged().unwrap_err(),
            ReadError::ChangedDuringRead
        );
        assert!(f.check_grown_only().is_ok());
        // Replaced by another file at the same path.
        let tmp = dir.path().join("tmp");
        std::fs::write(&tmp, b"hello\nworld\nmore\n").unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        assert_eq!(
            f.check_grown_only().unwrap_err(),
            ReadError::ChangedDuringRead
        );
        let first = f.identity();
        assert_eq!(
            EvidenceFile::open(&p, Some(&first)).unwrap_err(),
            ReadError::ChangedDuringRead
        );
    }

    #[test]
    fn identity_carries_the_status_change_time_a_restored_mtime_cannot_hide() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"aaaa\n").unwrap();
        let before = identity(&p).unwrap();
        let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.write_all_at(b"bbbb", 0).unwrap();
        f.set_modified(mtime).unwrap();
        drop(f);
        let after = identity(&p).unwrap();
        assert_eq!((after.size, after.mtime_ns), (before.size, before.mtime_ns));
        assert_ne!(after, before, "ctime moved");
    }

    #[test]
    fn refuses_a_replaced_file_when_an_identity_is_expected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"one\n").unwrap();
        let first = read_from(&p, 0, 100, None).unwrap().identity;
        let tmp = dir.path().join("tmp");
        let mut f = std::fs::File::create(&tmp).unwrap();
        f.write_all(b"one\n").unwrap();
        drop(f);
        std::fs::rename(&tmp, &p).unwrap();
        assert_eq!(
            read_from(&p, 0, 100, Some(&first)).unwrap_err(),
            ReadError::ChangedDuringRead
        );
    }
}
