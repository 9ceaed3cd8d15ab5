//! The neutral model every agent's reader maps into: where a session's lines are and what they
//! are (index entries), what a reader may be shown of a line (a view), and what one streamed pass
//! over a file found. Nothing above this crate knows which agent wrote a file; the agent is a
//! value ([`Agent`]) that picks the reader.

use serde::{Deserialize, Serialize};

use crate::file::ReadError;

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
    /// The agent's version as the file's first line records it (Codex `session_meta.cli_version`),
    /// kept only as a short identifier ([`runread_core::agent::reportable_event_type`]): what the
    /// log names when a later line is of a type runread does not know. `None` for the agents
    /// whose first line records none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_version: Option<String>,
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
    /// A line of a type runread does not know (a newer agent's): it could hold what a run is, so
    /// the run it falls in is `unknown` ([`crate::runs::UNRECOGNISED_LINE`]). Nothing of it is kept.
    Unrecognised,
    /// A line that replaces the whole message list (Gemini CLI's `$set.messages`): the records it
    /// lists are in `listed`, in order.
    Snapshot,
    /// A line that drops a record and every one after it from the message list (Gemini CLI's
    /// `$rewindTo`): the record's id is `parent_id`.
    Rewind,
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
    /// Tokens the model call behind this line reported (Pi's and Claude Code's assistant
    /// messages; Codex's `token_count` events, as the session's running totals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Tokens>,
    /// For an agent whose lines are upserts (Gemini CLI: a later line with the same `id` replaces
    /// the record): the digest of what the record is — its type and its text, never thoughts or
    /// tool calls. A later line of the same record with another digest rewrites history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_sha256: Option<String>,
    /// The records a [`EntryKind::Snapshot`] line lists, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed: Vec<Listed>,
}

/// One record a snapshot line lists: its id and the digest of what it is
/// ([`EntrySummary::record_sha256`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    pub id: String,
    pub sha256: String,
}

/// Tokens one model call (or a session so far) reported: numbers only, never text. Each agent's
/// own names map onto these (see `crate::usage`); what each counts is the agent's: Codex counts
/// cached input within `input` and reasoning within `output`, Pi and Claude Code count cache reads
/// and writes apart from `input`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub input: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
}

impl Tokens {
    /// `self` plus `other`, field by field (saturating).
    pub fn plus(self, other: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
            reasoning: self.reasoning.saturating_add(other.reasoning),
        }
    }

    /// `self` less `earlier`, field by field (a running total since `earlier`; never below 0).
    pub fn since(self, earlier: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_sub(earlier.input),
            output: self.output.saturating_sub(earlier.output),
            cache_read: self.cache_read.saturating_sub(earlier.cache_read),
            cache_write: self.cache_write.saturating_sub(earlier.cache_write),
            reasoning: self.reasoning.saturating_sub(earlier.reasoning),
        }
    }

    /// The counts of a usage object, under the agent's names for input, output, cache read,
    /// cache write and reasoning (`None` for a name the agent does not have). A field that is
    /// absent or not a non-negative integer counts 0; a value that is not an object is no usage.
    pub fn from_json(v: &serde_json::Value, names: [Option<&str>; 5]) -> Option<Tokens> {
        let obj = v.as_object()?;
        let n = |name: Option<&str>| {
            name.and_then(|k| obj.get(k))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        let [input, output, cache_read, cache_write, reasoning] = names;
        Some(Tokens {
            input: n(input),
            output: n(output),
            cache_read: n(cache_read),
            cache_write: n(cache_write),
            reasoning: n(reasoning),
        })
    }
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
            usage: None,
            record_sha256: None,
            listed: Vec::new(),
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
    /// A line of a type runread does not know: its entry (kind [`EntryKind::Unrecognised`], where
    /// it is and its place in the tree or turn), and what a log may say of it.
    Unrecognised(Box<EntrySummary>, Unrecognised),
}

/// What runread's log may say of a line of a type it does not know, for the owner to report: its
/// type and the agent's version, each only when it is a short identifier
/// ([`runread_core::agent::reportable_event_type`]); never anything else of the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrecognised {
    pub line: u64,
    pub line_type: Option<String>,
    pub agent_version: Option<String>,
}

impl Unrecognised {
    /// `line_type` and `agent_version` as the file has them, kept only as short identifiers.
    pub fn new(line: u64, line_type: &str, agent_version: Option<&str>) -> Unrecognised {
        let reportable = |s: &str| runread_core::agent::reportable_event_type(s).map(str::to_owned);
        Unrecognised {
            line,
            line_type: reportable(line_type),
            agent_version: agent_version.and_then(reportable),
        }
    }
}

/// Where a [`crate::scan()`] starts: at the top of a file (its first line is the header), or after the
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
    /// The read stopped at [`EVIDENCE_FILE_MAX_LINES`](runread_core::limits::EVIDENCE_FILE_MAX_LINES): lines after it were not read.
    pub over_bounds: bool,
    /// Bytes of lines read in this pass (the header included).
    pub bytes_read: u64,
    /// Lines skipped as the agent's own bookkeeping ([`LineOutcome::Skipped`]).
    #[doc(alias = "bookkeeping")]
    pub skipped: u64,
    /// The first line of this pass of a type runread does not know ([`LineOutcome::Unrecognised`]).
    pub first_unrecognised: Option<Unrecognised>,
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
            usage: Some(Tokens {
                input: 1,
                output: 2,
                cache_read: 3,
                cache_write: 4,
                reasoning: 5,
            }),
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
