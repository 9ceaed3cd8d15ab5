//! The neutral model every agent's reader maps into: where a session's lines are and what they
//! are (index entries), what a reader may be shown of a line (a view), and what one streamed pass
//! over a file found. Nothing above this crate knows which agent wrote a file; the agent is a
//! value ([`Agent`]) that picks the reader.

use serde::{Deserialize, Serialize};

use runread_core::limits::{EVIDENCE_FILE_MAX_LINES, EVIDENCE_LINE_MAX_BYTES};

use crate::file::{EvidenceFile, Line, LineAt, Lines, ReadError};

pub use runread_core::Agent;

/// The session header: the file's first line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub session_id: String,
    pub version: u8,
    pub cwd: String,
    pub timestamp: Option<String>,
    pub parent_session: Option<String>,
    /// SHA-256 of the header line's exact bytes: any change to the header is an identity change.
    pub line_sha256: String,
    /// Length of the header line in bytes (without its newline).
    #[serde(default)]
    pub line_bytes: u64,
    /// Where a forked session's inherited history is (Codex `session_meta.history_base`): the
    /// file holds only the fork's own lines.
    #[serde(default)]
    pub fork: Option<ForkBase>,
}

impl Header {
    /// Where the header line is, for reading it back (the session's first line).
    pub fn line_ref(&self) -> LineRef {
        LineRef {
            line: 1,
            offset: 0,
            bytes: self.line_bytes,
            sha256: self.line_sha256.clone(),
        }
    }
}

/// The end of the history a forked session inherits: the parent session's lines before
/// `end_ordinal_exclusive`, which end at byte `end_byte_offset` of the parent's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkBase {
    pub parent_session_id: String,
    pub end_ordinal_exclusive: u64,
    pub end_byte_offset: u64,
}

/// Kinds of entry. Pi's names; a Claude Code conversation line is a `Message` (user, assistant)
/// or `Other` (an attachment); Codex's turns have kinds of their own (`Turn…`, `ToolExecution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Message,
    SessionInfo,
    ModelChange,
    ThinkingLevelChange,
    Compaction,
    BranchSummary,
    Custom,
    CustomMessage,
    Label,
    Other,
    /// A turn began (Codex `task_started`).
    TurnStart,
    /// A turn ended (Codex `task_complete`): `text_sha256`/`text_bytes` are its reported answer's,
    /// `api_error` says it reported an error.
    TurnEnd,
    /// A turn was interrupted (Codex `turn_aborted`).
    TurnAborted,
    /// A tool execution the agent reports on its own (Codex's `CommandExecution` item): an event
    /// only when no tool call of its turn has its `call_id` (the commands code mode runs).
    ToolExecution,
}

/// What runread keeps of one entry: where its line is, its place in the tree, and the facts runs
/// are cut from. Never the text: bodies and answers are read again from the session file when
/// they are served, and checked against `line_sha256` (the store indexes, it does not copy).
///
/// Stored in the index as JSON without its empty fields (none, false, zero), which read back as
/// their defaults: about half of each row's bytes, so half the store's writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntrySummary {
    /// 1-based line number in the file (the header is line 1).
    pub line: u64,
    /// Byte offset of the line in the file.
    #[serde(default)]
    pub offset: u64,
    /// Length of the line in bytes, without its newline.
    #[serde(default)]
    pub bytes: u64,
    /// SHA-256 of the line's exact bytes, for message entries (the lines a reader is served
    /// from): what is read back when serving must hash to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_sha256: Option<String>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub kind: EntryKind,
    /// `message.role` for message entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub has_tool_call: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// SHA-256 of the canonical JSON (sorted keys, compact) of the whole `message` object, for
    /// the messages that can start or end a run ([`crate::pi::hashed_role`]); `None` for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_sha256: Option<String>,
    /// SHA-256 of the text blocks of an assistant message without tool calls, joined by `\n`
    /// (the final-answer candidate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_sha256: Option<String>,
    /// UTF-8 length of the joined text blocks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub text_bytes: u64,
    /// UTF-8 length of the body a reader is served ([`MessageView::body`]): 0 means there is no
    /// text to read back (a tool call alone, an image).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub body_bytes: u64,
    /// The agent itself truncated this output (Pi `details.truncation.truncated`, `truncated`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upstream_truncated: bool,
    /// `name` of a `session_info` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Lines of one message written as several lines share this (Claude Code writes a response
    /// one line per content block, all with the response's `message.id`): a reader is served
    /// them as one event. `None`: the line is an event of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Written by the agent itself, not by a model (Claude Code's `<synthetic>` messages): never
    /// an answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
    /// The agent recorded a failed model call here (Claude Code's `isApiErrorMessage`, an
    /// `error` on Codex's `task_complete`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub api_error: bool,
    /// The turn the line belongs to (Codex `turn_id`): runs are cut by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    /// The tool call the line is, or reports on (Codex `call_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl EntrySummary {
    /// An entry for the line at 1-based `line`, starting at byte `offset`, `bytes` long, named
    /// `id`, with no facts yet: each reader fills in what its line says.
    pub fn at(line: u64, offset: u64, bytes: u64, id: String) -> Self {
        EntrySummary {
            line,
            offset,
            bytes,
            line_sha256: None,
            id,
            parent_id: None,
            kind: EntryKind::Other,
            role: None,
            stop_reason: None,
            has_tool_call: false,
            provider: None,
            model: None,
            message_sha256: None,
            text_sha256: None,
            text_bytes: 0,
            body_bytes: 0,
            upstream_truncated: false,
            session_name: None,
            timestamp: None,
            group: None,
            synthetic: false,
            api_error: false,
            turn: None,
            call_id: None,
        }
    }

    /// Where this entry's line is, for reading it back; `None` for entries that are never served.
    pub fn line_ref(&self) -> Option<LineRef> {
        Some(LineRef {
            line: self.line,
            offset: self.offset,
            bytes: self.bytes,
            sha256: self.line_sha256.clone()?,
        })
    }
}

/// Where one line of a session file is and what its bytes hash to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRef {
    pub line: u64,
    pub offset: u64,
    pub bytes: u64,
    pub sha256: String,
}

/// What a reader may be shown of one message line, read back when served.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MessageView {
    pub role: String,
    /// Text blocks only (never thinking, never tool-call arguments), or a bash execution's output.
    pub body: String,
    /// The message had content but no text (an image, say).
    pub body_unavailable: bool,
    /// `toolName` of a tool result.
    pub tool_name: Option<String>,
    /// Names of the tools an assistant message called (names only, never arguments).
    pub tool_calls: Vec<String>,
    /// The final-answer text of an assistant message without tool calls: its text blocks joined
    /// by `\n`.
    pub answer: Option<String>,
    /// Facts about the session the line records (Claude Code writes them on every line): the
    /// working directory, the git branch, the agent's version.
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    pub agent_version: Option<String>,
    /// The model provider the session was configured with (Codex `model_provider`).
    pub provider: Option<String>,
}

impl MessageView {
    /// One event made of several lines' views (the lines of one group, in file order): their
    /// non-empty texts joined by `\n`, their tool calls in order, the first of the rest.
    pub fn merge(parts: Vec<MessageView>) -> MessageView {
        let mut iter = parts.into_iter();
        let Some(mut out) = iter.next() else {
            return MessageView::default();
        };
        for p in iter {
            if !p.body.is_empty() {
                if !out.body.is_empty() {
                    out.body.push('\n');
                }
                out.body.push_str(&p.body);
            }
            out.body_unavailable &= p.body_unavailable;
            out.tool_calls.extend(p.tool_calls);
            out.tool_name = out.tool_name.or(p.tool_name);
            out.answer = match (out.answer, p.answer) {
                (Some(a), Some(b)) if a.is_empty() => Some(b),
                (Some(a), Some(b)) if b.is_empty() => Some(a),
                (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
                (a, b) => a.or(b),
            };
            out.cwd = out.cwd.or(p.cwd);
            out.git_branch = out.git_branch.or(p.git_branch);
            out.agent_version = out.agent_version.or(p.agent_version);
            out.provider = out.provider.or(p.provider);
        }
        out
    }
}

/// Joins the texts of consecutive lines of one group (`(group, text)` in file order) as an event
/// joins them: one text per event, its lines' non-empty texts joined by `\n`.
pub fn join_groups(texts: Vec<(Option<String>, String)>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut prev: Option<String> = None;
    for (group, text) in texts {
        match (&prev, &group) {
            (Some(p), Some(g)) if p == g => {
                if let Some(last) = out.last_mut() {
                    if !last.is_empty() && !text.is_empty() {
                        last.push('\n');
                    }
                    last.push_str(&text);
                }
            }
            _ => out.push(text),
        }
        prev = group;
    }
    out
}

/// What one line of a session file turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineOutcome {
    Header(Header),
    Entry(Box<EntrySummary>),
    /// Not JSON, not an object, or missing what its version requires.
    Malformed,
    /// An empty line: skipped, as Pi skips it.
    Blank,
    /// A line the agent keeps for itself (Claude Code's bookkeeping: queue operations, API
    /// request records, cost state, …): not part of any conversation, counted and skipped.
    Skipped,
}

/// Where a [`crate::scan`] starts: at the top of a file (its first line is the header), or after the
/// lines an earlier scan consumed.
#[derive(Debug, Clone, Copy)]
pub enum Resume<'a> {
    Fresh,
    After {
        header: &'a Header,
        /// Offset just past the last complete line consumed.
        offset: u64,
        /// Lines consumed, the header included.
        lines: u64,
        /// The last entry parsed (v1 entries chain to it).
        last_id: Option<&'a str>,
    },
}

/// What one streamed pass over a session file found.
#[derive(Debug, Clone)]
pub struct Scan {
    pub header: Header,
    pub entries: Vec<EntrySummary>,
    /// Line numbers of lines that could not be parsed, or were longer than the line bound.
    pub malformed: Vec<u64>,
    /// Offset just past the last complete line consumed.
    pub consumed: u64,
    /// Lines consumed, the header included.
    pub lines: u64,
    /// The read ended in an unfinished line.
    pub torn: bool,
    /// The read stopped at [`EVIDENCE_FILE_MAX_LINES`]: lines after it were not read.
    pub over_bounds: bool,
    /// Bytes of lines read in this pass (the header included).
    pub bytes_read: u64,
    /// Lines skipped as the agent's own bookkeeping ([`LineOutcome::Skipped`]).
    #[doc(alias = "bookkeeping")]
    pub skipped: u64,
}

/// Why a scan read nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanError {
    Read(ReadError),
    /// The file is not a session file of the agent it was read as.
    NotASession,
}

/// The digest of a final answer made of the texts of several lines (joined by `\n` when served):
/// for one line, the SHA-256 of its text; for several, the SHA-256 over their texts' digests.
/// Ingest computes it from each line's text digest, serving from the texts read back.
pub fn answer_digest<'a>(line_text_sha256s: impl IntoIterator<Item = &'a str>) -> String {
    let digests: Vec<&str> = line_text_sha256s.into_iter().collect();
    match digests.as_slice() {
        [one] => (*one).to_owned(),
        many => runread_core::sha256_hex(many.join("\n").as_bytes()),
    }
}

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
    // What this pass read: for a fresh pass whose first line is only the header, that line too.
    out.bytes_read = out.consumed
        - if matches!(resume, Resume::Fresh) {
            0
        } else {
            start
        };
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
            BatchLine::Oversize { .. } => out.malformed.push(line_no),
            BatchLine::Complete {
                offset,
                ref range,
                ref sha256,
            } => {
                let bytes = batch.data.get(range.clone()).unwrap_or(&[]);
                let digest = LineDigest {
                    line: bytes,
                    known: sha256.as_ref(),
                };
                match parse_line(header, bytes, &digest, line_no, offset) {
                    LineOutcome::Entry(e) => out.entries.push(*e),
                    LineOutcome::Malformed | LineOutcome::Header(_) => out.malformed.push(line_no),
                    LineOutcome::Blank => {}
                    LineOutcome::Skipped => out.skipped += 1,
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
    },
    Oversize {
        offset: u64,
        len: u64,
    },
}

impl BatchLine {
    /// The offset just past the line's newline.
    fn end(&self) -> u64 {
        match *self {
            BatchLine::Complete {
                offset, ref range, ..
            } => offset + range.len() as u64 + 1,
            BatchLine::Oversize { offset, len } => offset + len + 1,
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
                }),
                Some(LineAt::Oversize { offset, len }) => {
                    batch.lines.push(BatchLine::Oversize { offset, len })
                }
            }
            self.next_line_no += 1;
        }
        Ok(())
    }
}

/// Whether a count is zero (an empty field the index does not write).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod stored_form {
    use super::*;

    fn full() -> EntrySummary {
        EntrySummary {
            line_sha256: Some("l".into()),
            parent_id: Some("p".into()),
            kind: EntryKind::Message,
            role: Some("assistant".into()),
            stop_reason: Some("stop".into()),
            has_tool_call: true,
            provider: Some("pv".into()),
            model: Some("m".into()),
            message_sha256: Some("ms".into()),
            text_sha256: Some("t".into()),
            text_bytes: 3,
            body_bytes: 4,
            upstream_truncated: true,
            session_name: Some("n".into()),
            timestamp: Some("ts".into()),
            group: Some("g".into()),
            synthetic: true,
            api_error: true,
            turn: Some("tu".into()),
            call_id: Some("c".into()),
            ..EntrySummary::at(7, 70, 700, "id".into())
        }
    }

    #[test]
    fn empty_fields_are_not_written_and_read_back_as_their_defaults() {
        let bare = EntrySummary::at(2, 20, 200, "b".into());
        let json = serde_json::to_string(&bare).unwrap();
        assert_eq!(
            json,
            r#"{"line":2,"offset":20,"bytes":200,"id":"b","kind":"other"}"#
        );
        assert_eq!(serde_json::from_str::<EntrySummary>(&json).unwrap(), bare);
        let full = full();
        let json = serde_json::to_string(&full).unwrap();
        assert_eq!(serde_json::from_str::<EntrySummary>(&json).unwrap(), full);
    }

    #[test]
    fn rows_written_with_every_field_still_read() {
        // As runread wrote entries before empty fields were left out.
        let old = r#"{"line":2,"offset":20,"bytes":200,"line_sha256":null,"id":"b","parent_id":null,"kind":"other","role":null,"stop_reason":null,"has_tool_call":false,"provider":null,"model":null,"message_sha256":null,"text_sha256":null,"text_bytes":0,"body_bytes":0,"preview":null,"upstream_truncated":false,"session_name":null,"timestamp":null,"group":null,"synthetic":false,"api_error":false,"turn":null,"call_id":null}"#;
        assert_eq!(
            serde_json::from_str::<EntrySummary>(old).unwrap(),
            EntrySummary::at(2, 20, 200, "b".into())
        );
    }
}
