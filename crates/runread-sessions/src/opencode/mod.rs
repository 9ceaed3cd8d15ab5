//! OpenCode (`opencode-ai`) sessions, read from its SQLite database (its `database` module): each
//! session's event log, one record per line, as the real OpenCode 1.18.33 writes it
//! (`../shared/harness/FORMATS.md`; the committed fixtures in `fixtures/opencode/` are the ground
//! truth).
//!
//! Every line is `{"type":…,"data":…}`. The first, `session.created.1`, is the header (the
//! session's id, directory, parent session, OpenCode's version, creation time). The rest:
//! - `message.updated.1`: a message (`info`: `id`, `role` `user` or `assistant`, an assistant's
//!   `parentID` — its prompt —, `finish`, `error`, `tokens`, `time.completed`);
//! - `message.part.updated.1`: a part of a message (`part`: `id`, `messageID`, `type`): `text`,
//!   `tool` (one tool call and its result: `tool`, `state.status`), and parts runread does not
//!   serve (reasoning, step bookkeeping), skipped;
//! - `session.updated.1`: the session row again (title, totals): skipped.
//!
//! **Upserts.** Each record is the whole message or part after one change, and the same id is
//! written again at every change (a text part empty, then whole; a tool part pending, running,
//! completed; a message gaining `finish`, `time.completed`, tokens; the prompt re-written with a
//! summary after each step). One truth per message or part: its last line (what a reader is
//! served, what usage and the model are read from). Runs are cut again over the whole generation
//! at every pass, replaying the records, as Gemini CLI's are. A later record that changes what a
//! *settled* record was — a message with its `finish` or `error`, a text part with its end time, a
//! tool part completed or failed — in what a reader is served (role, text, tool, how it ended)
//! starts a new generation ([`rewrites`]); a record still being written moving on is a run moving.
//!
//! **Runs.** A run is a `user` message and the `assistant` messages whose `parentID` is its id,
//! in id order (OpenCode's message ids grow with time). Its prompt is the user message's text
//! parts (not `synthetic` or `ignored` ones). `opencode run` quotes a prompt that holds a space
//! before sending it, and stores it so: a prompt part that starts and ends with `"` is served
//! without that one pair of quotes (they are not the user's; a prompt the user quoted loses its
//! outer pair too). The run's last assistant message decides: `finish` `stop` — completed, its
//! answer the message's text parts joined by `\n`; `length` — completed and cut
//! (`final_truncated`); an `error` — failed (only its `name` is kept, never its text), or
//! cancelled when it is `MessageAbortedError` (an abort in OpenCode's own interface; not seen
//! under `opencode run`, which a signal kills outright); no finish
//! (an interrupt kills OpenCode mid-message: no `time.completed`, tool parts left `running`),
//! `tool-calls`, or `unknown` (a broken stream, after which OpenCode asks again in the same run):
//! running while it is the session's last run, else `unknown`. A run with no assistant message
//! likewise.
//!
//! **Parts carry no role.** A part's line does not say whose message it is; OpenCode writes a
//! model's text part with the time it streamed and a prompt's without, and that is the role a
//! line's view reports. A run where that disagrees with the part's message is `unknown`.
//!
//! History serves each message as one event (its lines share a group): a prompt's text, a model
//! message's text and the names of the tools it called, never reasoning, tool inputs or outputs,
//! or error messages. Usage is each assistant message's `tokens`, from its last record (the last
//! line of its event). A `task` tool part runs a subagent in a child session (`session.parent_id`
//! this session; not listed as a session of its own): it is the run's child, named by the part's
//! `state.metadata.sessionId`, finished when the part completed.

mod database;
mod profile;
pub(crate) use profile::PROFILE;

pub use database::{
    DATABASE_BUSY_TIMEOUT_MS, DATABASES_PER_FOLDER_MAX, SESSIONS_PER_DATABASE_MAX, is_session_id,
    session_name_of,
};

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use runread_core::limits::EVIDENCE_LINE_MAX_BYTES;

use crate::file::EvidenceFile;
use crate::model::{
    EntryKind, EntrySummary, Header, LineOutcome, MessageView, Resume, Scan, ScanError, Tokens,
    Unrecognised,
};
use crate::records::ChildRecord;
use crate::scan::{FirstLine, LineDigest, ReadAhead};

/// History roles of OpenCode's records (what `read_history` reports as `role`).
pub mod role {
    /// A prompt: it starts a run.
    pub const USER: &str = "user";
    /// A model message: its text, and the names of the tools it called.
    pub const ASSISTANT: &str = "assistant";
    /// The session's header record (its directory and OpenCode's version).
    pub const SESSION: &str = "session";
}

/// The record that opens a session's log: its header.
pub const SESSION_CREATED: &str = "session.created.1";
/// The session row written again (title, totals): skipped.
pub const SESSION_UPDATED: &str = "session.updated.1";
/// A message, as it stands after one change.
pub const MESSAGE_UPDATED: &str = "message.updated.1";
/// A part of a message, as it stands after one change.
pub const PART_UPDATED: &str = "message.part.updated.1";
/// The tool OpenCode runs subagents with.
pub const SUBAGENT_TOOL: &str = "task";
/// How a `task` part's output begins: the child session's id follows, up to a `"`.
const TASK_OUTPUT_OPEN: &str = "<task id=\"";
/// The error OpenCode records when a message was aborted (`MessageAbortedError`, lowercased as
/// runread keeps error names): the run was cancelled, not failed.
pub const ABORTED_ERROR: &str = "messageabortederror";
/// Part types runread serves nothing of (thinking, step bookkeeping, file snapshots).
const SKIPPED_PARTS: &[&str] = &[
    "reasoning",
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "retry",
];
/// Why a run that is not the session's last has no answer, error or end.
pub const NO_END: &str = "the run ended without an answer or an error";
/// Why a run whose parts' roles disagree with their messages' is `unknown`.
pub const ROLE_UNCLEAR: &str = "a part's role is not its message's";
/// What a text part's entry says of it once OpenCode has finished writing it.
const TEXT_ENDED: &str = "end";

// ---- one line, as far as runread reads it ----

#[derive(Deserialize)]
struct RawLine {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: Data,
}

#[derive(Deserialize, Default)]
struct Data {
    #[serde(rename = "sessionID", default)]
    session_id: Option<String>,
    #[serde(default)]
    info: Option<Info>,
    #[serde(default)]
    part: Option<Part>,
    /// When a part was written (milliseconds).
    #[serde(default)]
    time: Option<Value>,
}

#[derive(Deserialize)]
struct Info {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(rename = "parentID", default)]
    parent_id: Option<String>,
    #[serde(default)]
    directory: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    time: Option<Value>,
    #[serde(default)]
    finish: Option<String>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    tokens: Option<Value>,
    #[serde(rename = "modelID", default)]
    model_id: Option<String>,
    #[serde(rename = "providerID", default)]
    provider_id: Option<String>,
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "messageID", default)]
    message_id: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    synthetic: Option<bool>,
    #[serde(default)]
    ignored: Option<bool>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(rename = "callID", default)]
    call_id: Option<String>,
    #[serde(default)]
    state: Option<Value>,
    #[serde(default)]
    time: Option<Value>,
}

/// Milliseconds at `key` of a `time` object.
fn ms(time: Option<&Value>, key: &str) -> Option<i64> {
    time?.get(key)?.as_i64()
}

fn str_at<'v>(v: Option<&'v Value>, key: &str) -> Option<&'v str> {
    v?.get(key)?.as_str()
}

impl Info {
    /// How the message ended as runread keeps it: its error's name in lowercase (when a short
    /// identifier, else `error`: never what the error says), else its `finish`.
    fn ended(&self) -> Option<String> {
        match &self.error {
            Some(e) => {
                let name = str_at(Some(e), "name").map(str::to_ascii_lowercase);
                let name = name
                    .as_deref()
                    .and_then(runread_core::agent::reportable_event_type);
                Some(name.unwrap_or("error").to_owned())
            }
            None => self.finish.clone(),
        }
    }
}

/// What a part is to a reader.
enum PartKind<'p> {
    /// A text part a reader is served: its role (see the module's doc) and text.
    Text(&'static str, String),
    /// A text part OpenCode added itself (`synthetic`, `ignored`): never served.
    Hidden,
    /// A tool call and its result: the tool's name.
    Tool(&'p str),
    /// Reasoning or bookkeeping: skipped.
    Skipped,
}

impl Part {
    fn kind(&self) -> Option<PartKind<'_>> {
        match self.kind.as_deref()? {
            "text" if self.synthetic == Some(true) || self.ignored == Some(true) => {
                Some(PartKind::Hidden)
            }
            "text" => {
                let text = self.text.as_deref().unwrap_or_default();
                Some(if self.time.is_some() {
                    PartKind::Text(role::ASSISTANT, text.to_owned())
                } else {
                    PartKind::Text(role::USER, strip_quotes(text).to_owned())
                })
            }
            "tool" => Some(PartKind::Tool(self.tool.as_deref().unwrap_or_default())),
            k if SKIPPED_PARTS.contains(&k) => Some(PartKind::Skipped),
            _ => None,
        }
    }

    /// The tool part's `state.status`.
    fn status(&self) -> Option<&str> {
        str_at(self.state.as_ref(), "status")
    }
}

/// A prompt's text without the one pair of double quotes `opencode run` wraps it in.
fn strip_quotes(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}

/// What a record is, for telling a rewrite from a record moving on: what a reader is served of it.
fn record_digest(fields: &[&str]) -> String {
    runread_core::sha256_hex(fields.join("\n").as_bytes())
}

/// Tokens of an assistant message (`tokens`: `input`, `output`, `reasoning`, `cache.read`,
/// `cache.write`; `input` does not count cached input).
fn tokens(v: &Value) -> Option<Tokens> {
    let obj = v.as_object()?;
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cache = obj.get("cache");
    Some(Tokens {
        input: n(obj.get("input")),
        output: n(obj.get("output")),
        cache_read: n(cache.and_then(|c| c.get("read"))),
        cache_write: n(cache.and_then(|c| c.get("write"))),
        reasoning: n(obj.get("reasoning")),
    })
}

fn time_of(ms: Option<i64>) -> Option<String> {
    ms.map(runread_core::timefmt::rfc3339)
}

// ---- the scan ----

/// The session from its log's first record, `session.created.1`; `None`: not an OpenCode session.
pub fn parse_first_line(line: &[u8]) -> Option<Header> {
    let raw: RawLine = serde_json::from_slice(line).ok()?;
    if raw.kind != SESSION_CREATED {
        return None;
    }
    let info = raw.data.info?;
    let id = info.id?;
    if !database::is_session_id(&id) || raw.data.session_id.is_some_and(|s| s != id) {
        return None;
    }
    Some(Header {
        session_id: id,
        version: 0,
        cwd: info.directory.unwrap_or_default(),
        timestamp: time_of(ms(info.time.as_ref(), "created")),
        parent_session: info.parent_id.filter(|p| database::is_session_id(p)),
        line_sha256: runread_core::sha256_hex(line),
        line_bytes: line.len() as u64,
        fork: None,
        agent_version: info
            .version
            .as_deref()
            .and_then(runread_core::agent::reportable_event_type)
            .map(str::to_owned),
    })
}

/// Parses one record (after the first) at 1-based `line_no`, position `offset`; `digest` is the
/// line's SHA-256 as the scan has it.
pub fn parse_line(
    header: &mut Header,
    line: &[u8],
    digest: &LineDigest<'_>,
    line_no: u64,
    offset: u64,
) -> LineOutcome {
    if line.iter().all(u8::is_ascii_whitespace) {
        return LineOutcome::Blank;
    }
    let Ok(raw) = serde_json::from_slice::<RawLine>(line) else {
        return LineOutcome::Malformed;
    };
    if raw
        .data
        .session_id
        .as_deref()
        .is_some_and(|s| s != header.session_id)
    {
        return LineOutcome::Malformed;
    }
    let at = |id: String| EntrySummary::at(line_no, offset, line.len() as u64, id);
    match raw.kind.as_str() {
        SESSION_UPDATED => LineOutcome::Skipped,
        MESSAGE_UPDATED => match &raw.data.info {
            Some(info) => message_entry(header, info, at, digest, line_no),
            None => LineOutcome::Malformed,
        },
        PART_UPDATED => match &raw.data.part {
            Some(part) => part_entry(header, part, raw.data.time.as_ref(), at, digest, line_no),
            None => LineOutcome::Malformed,
        },
        SESSION_CREATED => LineOutcome::Malformed,
        other => unrecognised(header, at(format!("L{line_no}")), line_no, other),
    }
}

fn unrecognised(header: &Header, mut e: EntrySummary, line_no: u64, kind: &str) -> LineOutcome {
    e.kind = EntryKind::Unrecognised;
    let seen = Unrecognised::new(line_no, kind, header.agent_version.as_deref());
    LineOutcome::Unrecognised(Box::new(e), seen)
}

/// A `message.updated.1` record: a message (its own line in its event, carrying its usage and
/// how it ended).
fn message_entry(
    header: &Header,
    info: &Info,
    at: impl Fn(String) -> EntrySummary,
    digest: &LineDigest<'_>,
    line_no: u64,
) -> LineOutcome {
    let Some(id) = info
        .id
        .as_deref()
        .filter(|i| runread_core::target::is_id(i))
    else {
        return LineOutcome::Malformed;
    };
    let mut e = at(id.to_owned());
    let role = match info.role.as_deref() {
        Some(r @ (role::USER | role::ASSISTANT)) => r,
        other => return unrecognised(header, e, line_no, other.unwrap_or_default()),
    };
    e.kind = EntryKind::Message;
    e.role = Some(role.to_owned());
    e.group = Some(id.to_owned());
    e.parent_id = info.parent_id.clone();
    e.line_sha256 = Some(digest.hex());
    let time = info.time.as_ref();
    e.timestamp = time_of(ms(time, "completed").or(ms(time, "created")));
    e.stop_reason = info.ended();
    e.api_error = info.error.is_some();
    e.record_sha256 = Some(record_digest(&[
        "message",
        role,
        e.stop_reason.as_deref().unwrap_or_default(),
    ]));
    if role == role::ASSISTANT {
        e.model = info.model_id.clone();
        e.provider = info.provider_id.clone();
        e.usage = info.tokens.as_ref().and_then(tokens);
        e.message_sha256 = e.line_sha256.clone();
        // An answer without text is the message's own (empty) answer.
        e.text_sha256 = Some(runread_core::sha256_hex(b""));
    }
    LineOutcome::Entry(Box::new(e))
}

/// A `message.part.updated.1` record: a text or tool part (a line of its message's event), a
/// hidden text part (in no event), or a part runread serves nothing of (skipped).
fn part_entry(
    header: &Header,
    part: &Part,
    written: Option<&Value>,
    at: impl Fn(String) -> EntrySummary,
    digest: &LineDigest<'_>,
    line_no: u64,
) -> LineOutcome {
    let is_id = |i: &Option<String>| i.as_deref().is_some_and(runread_core::target::is_id);
    if !is_id(&part.id) || !is_id(&part.message_id) {
        return LineOutcome::Malformed;
    }
    let mut e = at(part.id.clone().unwrap_or_default());
    let Some(kind) = part.kind() else {
        return unrecognised(header, e, line_no, part.kind.as_deref().unwrap_or_default());
    };
    e.parent_id = part.message_id.clone();
    e.timestamp = time_of(written.and_then(Value::as_i64));
    match kind {
        PartKind::Skipped => return LineOutcome::Skipped,
        PartKind::Hidden => {
            e.record_sha256 = Some(record_digest(&["hidden"]));
            return LineOutcome::Entry(Box::new(e));
        }
        PartKind::Text(role, text) => {
            e.role = Some(role.to_owned());
            e.body_bytes = text.len() as u64;
            e.stop_reason = ms(part.time.as_ref(), "end").map(|_| TEXT_ENDED.to_owned());
            if role == role::ASSISTANT {
                e.text_bytes = text.len() as u64;
                e.text_sha256 = Some(runread_core::sha256_hex(text.as_bytes()));
            }
            e.record_sha256 = Some(record_digest(&["text", role, &text]));
        }
        PartKind::Tool(name) => {
            e.role = Some(role::ASSISTANT.to_owned());
            e.has_tool_call = true;
            e.call_id = part.call_id.clone();
            e.stop_reason = part.status().map(str::to_owned);
            let status = part.status().unwrap_or_default();
            e.record_sha256 = Some(record_digest(&["tool", name, status]));
        }
    }
    e.kind = EntryKind::Message;
    e.group = part.message_id.clone();
    e.line_sha256 = Some(digest.hex());
    LineOutcome::Entry(Box::new(e))
}

/// Reads the records of the session's log from where `resume` says, as a file's lines; the
/// first, `session.created.1`, is the header.
pub fn scan(file: &EvidenceFile, resume: Resume<'_>, ahead: ReadAhead) -> Result<Scan, ScanError> {
    crate::scan::scan_lines(
        file,
        resume,
        FirstLine {
            max_bytes: EVIDENCE_LINE_MAX_BYTES,
            parse: parse_first_line,
            is_entry: false,
        },
        parse_line,
        ahead,
    )
}

// ---- what a reader is shown ----

/// What a reader may be shown of `line` (read back when served): the header's directory and
/// OpenCode's version; a message's role (and, for a model message that ended on `stop` or
/// `length`, an empty answer: what an answer without text parts is); a text part's text (a
/// prompt's without `opencode run`'s quotes); a tool part's tool name. `None` for any other line.
pub fn message_view(line: &[u8]) -> Option<MessageView> {
    let raw: RawLine = serde_json::from_slice(line).ok()?;
    match raw.kind.as_str() {
        SESSION_CREATED => {
            let info = raw.data.info?;
            Some(MessageView {
                role: role::SESSION.to_owned(),
                cwd: info.directory,
                agent_version: info.version,
                ..MessageView::default()
            })
        }
        MESSAGE_UPDATED => {
            let info = raw.data.info?;
            let role = info
                .role
                .as_deref()
                .filter(|r| [role::USER, role::ASSISTANT].contains(r))?;
            let answered = role == role::ASSISTANT
                && info.error.is_none()
                && matches!(info.finish.as_deref(), Some("stop" | "length"));
            Some(MessageView {
                role: role.to_owned(),
                answer: answered.then(String::new),
                ..MessageView::default()
            })
        }
        PART_UPDATED => part_view(&raw.data.part?),
        _ => None,
    }
}

fn part_view(part: &Part) -> Option<MessageView> {
    match part.kind()? {
        PartKind::Text(role, text) => Some(MessageView {
            role: role.to_owned(),
            answer: (role == role::ASSISTANT).then(|| text.clone()),
            body: text,
            ..MessageView::default()
        }),
        PartKind::Tool(name) => Some(MessageView {
            role: role::ASSISTANT.to_owned(),
            tool_calls: vec![name.to_owned()],
            ..MessageView::default()
        }),
        PartKind::Hidden | PartKind::Skipped => None,
    }
}

// ---- children ----

/// The child session a `task` tool part `line` ran its subagent in, and whether the part
/// completed; `None` for any other line.
fn subagent_call(line: &[u8]) -> Option<(String, bool)> {
    let raw: RawLine = serde_json::from_slice(line).ok()?;
    let part = raw.data.part?;
    if raw.kind != PART_UPDATED || part.tool.as_deref() != Some(SUBAGENT_TOOL) {
        return None;
    }
    let state = part.state.as_ref();
    let child = str_at(state.and_then(|s| s.get("metadata")), "sessionId")
        .or_else(|| task_output_id(str_at(state, "output")?))?;
    let finished = str_at(state, "status") == Some("completed");
    Some((child.to_owned(), finished))
}

/// The child session a `task` part's output names (`<task id="ses_…" …>`), for a part whose
/// metadata does not.
fn task_output_id(output: &str) -> Option<&str> {
    let rest = output.strip_prefix(TASK_OUTPUT_OPEN)?;
    let (id, _) = rest.split_once('"')?;
    Some(id)
}

/// The subagents the run's tool parts `tool_call_lines` started, in order: each `task` part's
/// child session in the database of `session_file`, when it is a child of `session_id` (`None`:
/// no such session).
pub fn children(
    session_file: &Path,
    session_id: &str,
    tool_call_lines: &[Vec<u8>],
) -> Vec<Option<ChildRecord>> {
    let calls: Vec<(String, bool)> = tool_call_lines
        .iter()
        .filter_map(|l| subagent_call(l))
        .collect();
    if calls.is_empty() {
        return Vec::new();
    }
    let db =
        database::split_name(session_file).and_then(|(db, _)| database::Database::shared(&db).ok());
    calls
        .iter()
        .map(|(child, finished)| {
            if !database::is_session_id(child) {
                return None;
            }
            let updated = db.as_ref()?.child_updated_ms(child, session_id)?;
            Some(ChildRecord {
                finished: *finished,
                transcript_modified_ns: updated.checked_mul(1_000_000),
            })
        })
        .collect()
}

// ---- rewrites ----

/// Whether `e` is a record OpenCode has finished writing: a message that ended, a text part with
/// its end time, a tool part completed or failed.
fn settled(e: &EntrySummary) -> bool {
    let stop = e.stop_reason.as_deref();
    if e.group.as_deref() == Some(e.id.as_str()) {
        stop.is_some()
    } else if e.has_tool_call {
        matches!(stop, Some("completed" | "error"))
    } else {
        stop == Some(TEXT_ENDED)
    }
}

/// Whether `new` (records appended since `old` were indexed) change what a settled record of
/// `old` is to a reader (see the module's doc); a record still being written moving on is not.
pub fn rewrites(old: &[EntrySummary], new: &[EntrySummary]) -> bool {
    let mut known: HashMap<&str, &str> = HashMap::new();
    for e in old.iter().filter(|e| settled(e)) {
        if let Some(sha) = e.record_sha256.as_deref() {
            known.insert(e.id.as_str(), sha);
        }
    }
    new.iter().any(|e| {
        e.record_sha256
            .as_deref()
            .is_some_and(|sha| known.get(e.id.as_str()).is_some_and(|k| *k != sha))
    })
}

// ---- runs ----

mod cut;
pub use cut::cut_runs;

#[cfg(test)]
mod tests;
