//! Gemini CLI chat files (`tmp/<project>/chats/session-<UTC minute>-<id8>.jsonl`), line by line,
//! as the real Gemini CLI 0.61.0 writes them (`../shared/harness/FORMATS.md`; the committed
//! fixtures in `fixtures/gemini/` are the ground truth), read the way Gemini CLI's own loader
//! reads them.
//!
//! The first line is the session's metadata (`sessionId`, `projectHash` — the SHA-256 of the
//! project root —, `startTime`, `kind`); every process that opens the file later writes it again
//! (the same session's: skipped; another session's or project's: malformed). The rest are records:
//! - a **message** (`id`, `type` `user` or `gemini`, `content`): an **upsert** — a later line with
//!   the same `id` replaces the record (Gemini CLI writes a `gemini` message again, with its
//!   `toolCalls`, once its tools have run);
//! - `{"$set":{…}}`: metadata (`lastUpdated`, `sessionId`, `summary`: skipped), and
//!   `$set.messages`, which **replaces the whole message list** with a stripped restatement of it
//!   (a *snapshot*: parts lists, thoughts kept as parts, no tokens or tool calls for most records);
//! - `{"$rewindTo":"<id>"}`: drops that record and every one after it.
//!
//! One truth per record: its last line of its own (what a reader is served, and what its usage and
//! model are read from); a snapshot or a rewind says only which records are still in the list and
//! in which order. A run is a prompt (a `user` message with text; not the `<session_context>` Gemini
//! CLI injects, not a tool result) up to the next prompt, in the final list's order. A prompt that
//! the list no longer holds was rolled back: Gemini CLI writes the prompt, and when the model call
//! fails (an HTTP error, a stream without a finish reason, an empty `MAX_TOKENS` answer) a snapshot
//! without it, and no error record — that run is `unknown` (the file cannot say what happened).
//!
//! **No answer is proven.** Gemini CLI records no stop reason and no end of a turn: a response cut
//! at `MAX_TOKENS` with text, a response whose tool calls are still running (its `toolCalls` are
//! written when they finish), and one whose tool call was interrupted (they never are, not even in
//! later snapshots) are each an ordinary `gemini` message, exactly like a finished answer. So a run
//! whose last record is a model message without tool calls keeps it as its candidate (lines,
//! digest, size) but is `unknown` ([`END_NOT_RECORDED`]); one whose last record is a tool call or
//! its result, or its prompt, is running when it is the session's last run, else `unknown`.
//! Under `runread run` (`runread_supervise::gemini`) the stream proves the candidate.
//!
//! **Upserts and the incremental index.** Ingest reads only the bytes appended since the last pass.
//! Each line is an entry of its own; runs are cut again over the whole generation at every pass,
//! replaying the upserts, so a line that replaces a record supersedes the earlier line at once (the
//! run's event is the record's last line). A replacement that only completes a record — the same
//! type and text, with tool calls, tokens or thoughts added or dropped, as Gemini CLI's re-writes
//! and snapshots do — stays in the generation. One that changes what a record is (its type or its
//! text: [`EntrySummary::record_sha256`], and each snapshot's [`crate::model::Listed`] digests)
//! starts a new generation ([`rewrites`]): what a reader was granted is never changed under it.
//! A record dropped from the list (a rollback, a rewind) changes no line: its run turns `unknown`.
//!
//! The workspace is the project root Gemini CLI keeps in `tmp/<project>/.project_root`, read
//! link-safely beside the `chats/` folder and taken only when its SHA-256 is the file's
//! `projectHash`. A file with no message of its own (the stub a resume in a later minute leaves,
//! with the session's id; a session before its first prompt) is not a session. Subagents write
//! `chats/<session id>/<agent id>.jsonl`: not sessions, but the children of the run whose
//! `invoke_agent` call names them (finished when the file holds its `$set.summary`).

mod profile;
pub(crate) use profile::PROFILE;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::file::{EvidenceFile, Line};
use crate::model::{
    EntryKind, EntrySummary, Header, LineOutcome, Listed, MessageView, Resume, Scan, ScanError,
    Unrecognised,
};
use crate::records::ChildRecord;
use crate::runs::{Branch, FIRST_SEQUENCE, Run, in_order_branch, set_contexts};
use crate::scan::{FirstLine, LineDigest, ReadAhead};

/// History roles of Gemini CLI records (what `read_history` reports as `role`).
pub mod role {
    /// A prompt: it starts a run.
    pub const USER: &str = "user";
    /// A `gemini` message: its text, and the names of the tools it called.
    pub const ASSISTANT: &str = "assistant";
    /// A `user` message holding tool results (`functionResponse`): their tool's name only.
    pub const TOOL_RESULT: &str = "toolResult";
}

/// How Gemini CLI names a session file (`session-<UTC minute>-<id8>.jsonl`).
pub const SESSION_FILE_PREFIX: &str = "session-";
/// The file beside `chats/` that holds the project root.
pub const PROJECT_ROOT_FILE: &str = ".project_root";
/// Largest `.project_root` read.
pub const PROJECT_ROOT_MAX_BYTES: u64 = 4096;
/// Longest first line read to learn a session's id.
pub const FIRST_LINE_MAX_BYTES: usize = 64 * 1024;
/// Most records one snapshot line may list; a line listing more is malformed.
pub const SNAPSHOT_RECORDS_MAX: usize = 100_000;
/// The tool Gemini CLI runs subagents with.
pub const SUBAGENT_TOOL: &str = "invoke_agent";
/// Largest subagent file read to learn whether it finished; a larger one is no record.
pub const SUBAGENT_FILE_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// Why a run whose last record is a model message is `unknown`.
pub const END_NOT_RECORDED: &str = "Gemini CLI does not record how a response ended: an output-limit cut-off or an unfinished tool call looks like an answer";
/// Why a run whose prompt the message list no longer holds is `unknown`.
pub const ROLLED_BACK: &str =
    "the prompt was rolled back (a failed run: Gemini CLI records no error)";
/// Why a run that was followed by another without a response is `unknown`.
pub const NO_RESPONSE: &str = "the run ended without a recorded response";
/// What injected context (never a prompt) starts with.
const INJECTED_PREFIXES: &[&str] = &["<session_context>", "<hook_context>"];

// ---- one line, as far as runread reads it ----

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default)]
    content: Option<GContent>,
    #[serde(rename = "toolCalls", default)]
    tool_calls: Option<Vec<ToolCall>>,
    /// Read whole (a few numbers).
    #[serde(default)]
    tokens: Option<serde_json::Value>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(rename = "$set", default)]
    set: Option<SetRecord>,
    #[serde(rename = "$rewindTo", borrow, default)]
    rewind_to: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(rename = "projectHash", borrow, default)]
    project_hash: Option<Cow<'a, str>>,
    #[serde(rename = "startTime", borrow, default)]
    start_time: Option<Cow<'a, str>>,
    /// `main` or `subagent` (the metadata's `kind`).
    #[serde(rename = "kind", borrow, default)]
    session_kind: Option<Cow<'a, str>>,
    /// A metadata line that carries messages (Gemini CLI's loader adds them).
    #[serde(default)]
    messages: Option<IgnoredAny>,
}

/// A message's content: a string, a list of parts, or anything else (no text).
#[derive(Deserialize)]
#[serde(untagged)]
enum GContent {
    Text(String),
    Parts(Vec<MaybePart>),
    Other(IgnoredAny),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum MaybePart {
    Part(Part),
    Other(IgnoredAny),
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(rename = "functionCall", default)]
    function_call: Option<FunctionRef>,
    #[serde(rename = "functionResponse", default)]
    function_response: Option<FunctionRef>,
}

#[derive(Deserialize)]
struct FunctionRef {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct ToolCall {
    #[serde(default)]
    name: Option<String>,
    #[serde(rename = "agentId", default)]
    agent_id: Option<String>,
}

#[derive(Deserialize)]
struct SetRecord {
    #[serde(default)]
    messages: Option<Vec<SnapshotMessage>>,
    #[serde(rename = "sessionId", default)]
    session_id: Option<String>,
    #[serde(default)]
    summary: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct SnapshotMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    content: Option<GContent>,
}

impl GContent {
    /// The text parts (never thoughts) joined as Gemini CLI joins them: with nothing between.
    fn text(&self) -> String {
        match self {
            GContent::Text(t) => t.clone(),
            GContent::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    MaybePart::Part(p) if p.thought != Some(true) => p.text.as_deref(),
                    _ => None,
                })
                .collect(),
            GContent::Other(_) => String::new(),
        }
    }

    fn parts(&self) -> impl Iterator<Item = &Part> {
        let parts: &[MaybePart] = match self {
            GContent::Parts(p) => p,
            _ => &[],
        };
        parts.iter().filter_map(|p| match p {
            MaybePart::Part(p) => Some(p),
            MaybePart::Other(_) => None,
        })
    }

    /// The names of the tools whose results the content holds.
    fn function_responses(&self) -> Vec<String> {
        self.parts()
            .filter_map(|p| p.function_response.as_ref())
            .map(|f| f.name.clone().unwrap_or_default())
            .collect()
    }

    fn has_content(&self) -> bool {
        match self {
            GContent::Text(t) => !t.is_empty(),
            GContent::Parts(p) => !p.is_empty(),
            GContent::Other(_) => false,
        }
    }
}

/// What a `user` or `gemini` record is to a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prompt,
    ToolResult,
    Assistant,
    /// Context Gemini CLI injects (`<session_context>`), or an empty message: in no run.
    Injected,
}

fn kind_of(kind: &str, content: Option<&GContent>) -> Option<Kind> {
    match kind {
        "gemini" => Some(Kind::Assistant),
        "user" => {
            if content.is_some_and(|c| !c.function_responses().is_empty()) {
                return Some(Kind::ToolResult);
            }
            let text = content.map(GContent::text).unwrap_or_default();
            let trimmed = text.trim();
            if trimmed.is_empty() || INJECTED_PREFIXES.iter().any(|p| trimmed.starts_with(p)) {
                Some(Kind::Injected)
            } else {
                Some(Kind::Prompt)
            }
        }
        _ => None,
    }
}

/// What a record is, for telling a rewrite from a restatement: its type and its text.
fn record_digest(kind: &str, text: &str) -> String {
    runread_core::sha256_hex(format!("{kind}\n{text}").as_bytes())
}

/// Whether `hash` is a project hash as Gemini CLI writes it (64 lowercase hex digits).
fn is_project_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The session from the file's first line, its metadata; `None`: not a Gemini CLI session file
/// (a subagent's file is not one).
pub fn parse_first_line(line: &[u8]) -> Option<Header> {
    let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
    if raw.id.is_some() || raw.set.is_some() || raw.rewind_to.is_some() {
        return None;
    }
    let session_id = raw.session_id?;
    if !runread_core::target::is_id(&session_id)
        || !raw.project_hash.as_deref().is_some_and(is_project_hash)
        || raw.session_kind.as_deref().is_some_and(|k| k != "main")
    {
        return None;
    }
    Some(Header {
        session_id: session_id.into_owned(),
        version: 0,
        cwd: String::new(),
        timestamp: raw.start_time.map(Cow::into_owned),
        parent_session: None,
        line_sha256: runread_core::sha256_hex(line),
        line_bytes: line.len() as u64,
        fork: None,
        agent_version: None,
    })
}

/// Parses one complete line (after the first) at 1-based `line_no`, starting at byte `offset`,
/// of the session whose project hash is `project_hash`; `digest` is the line's SHA-256 as the scan
/// has it.
pub fn parse_line(
    header: &mut Header,
    project_hash: &str,
    line: &[u8],
    digest: &LineDigest<'_>,
    line_no: u64,
    offset: u64,
) -> LineOutcome {
    if line.iter().all(u8::is_ascii_whitespace) {
        return LineOutcome::Blank;
    }
    let Ok(raw) = serde_json::from_slice::<RawLine<'_>>(line) else {
        return LineOutcome::Malformed;
    };
    let at = |id: String| EntrySummary {
        timestamp: raw.timestamp.as_deref().map(str::to_owned),
        ..EntrySummary::at(line_no, offset, line.len() as u64, id)
    };
    // In the order Gemini CLI's loader tells records apart.
    if let Some(to) = raw.rewind_to.as_deref() {
        if !runread_core::target::is_id(to) {
            return LineOutcome::Malformed;
        }
        let mut e = at(format!("L{line_no}"));
        e.kind = EntryKind::Rewind;
        e.parent_id = Some(to.to_owned());
        return LineOutcome::Entry(Box::new(e));
    }
    if let Some(id) = raw.id.as_deref() {
        if !runread_core::target::is_id(id) {
            return LineOutcome::Malformed;
        }
        return message_entry(header, &raw, at(id.to_owned()), digest, line_no);
    }
    if let Some(set) = &raw.set {
        return set_entry(header, set, at(format!("L{line_no}")));
    }
    match (raw.session_id.as_deref(), raw.project_hash.as_deref()) {
        (Some(id), Some(hash)) if raw.messages.is_none() => {
            if id == header.session_id && hash == project_hash {
                LineOutcome::Skipped
            } else {
                LineOutcome::Malformed
            }
        }
        _ => {
            let mut e = at(format!("L{line_no}"));
            e.kind = EntryKind::Unrecognised;
            LineOutcome::Unrecognised(Box::new(e), Unrecognised::new(line_no, "", None))
        }
    }
}

/// A `$set` line: a snapshot of the message list, or metadata (skipped). Another session's id
/// is malformed.
fn set_entry(header: &Header, set: &SetRecord, mut e: EntrySummary) -> LineOutcome {
    if set
        .session_id
        .as_deref()
        .is_some_and(|id| id != header.session_id)
    {
        return LineOutcome::Malformed;
    }
    let Some(messages) = &set.messages else {
        return LineOutcome::Skipped;
    };
    if messages.len() > SNAPSHOT_RECORDS_MAX {
        return LineOutcome::Malformed;
    }
    let mut listed = Vec::with_capacity(messages.len());
    for m in messages {
        let (Some(id), Some(kind)) = (m.id.as_deref(), m.kind.as_deref()) else {
            continue;
        };
        if !runread_core::target::is_id(id) {
            return LineOutcome::Malformed;
        }
        if kind_of(kind, m.content.as_ref()) == Some(Kind::Injected) {
            // Its text (the date, the folder listing) changes between processes; it is in no run.
            continue;
        }
        let text = m.content.as_ref().map(GContent::text).unwrap_or_default();
        listed.push(Listed {
            id: id.to_owned(),
            sha256: record_digest(kind, &text),
        });
    }
    e.kind = EntryKind::Snapshot;
    e.listed = listed;
    LineOutcome::Entry(Box::new(e))
}

/// A message record: a prompt, a tool result or a model message (injected context is skipped; a
/// record of a type runread does not know is unrecognised).
fn message_entry(
    header: &Header,
    raw: &RawLine<'_>,
    mut e: EntrySummary,
    digest: &LineDigest<'_>,
    line_no: u64,
) -> LineOutcome {
    let type_name = raw.kind.as_deref().unwrap_or("");
    let Some(kind) = kind_of(type_name, raw.content.as_ref()) else {
        e.kind = EntryKind::Unrecognised;
        let seen = Unrecognised::new(line_no, type_name, header.agent_version.as_deref());
        return LineOutcome::Unrecognised(Box::new(e), seen);
    };
    if kind == Kind::Injected {
        return LineOutcome::Skipped;
    }
    let text = raw.content.as_ref().map(GContent::text).unwrap_or_default();
    e.kind = EntryKind::Message;
    e.line_sha256 = Some(digest.hex());
    e.record_sha256 = Some(record_digest(type_name, &text));
    match kind {
        Kind::Prompt => {
            e.role = Some(role::USER.to_owned());
            e.body_bytes = text.len() as u64;
            e.message_sha256 = e.line_sha256.clone();
        }
        Kind::ToolResult => e.role = Some(role::TOOL_RESULT.to_owned()),
        _ => fill_model_message(&mut e, raw, &text),
    }
    LineOutcome::Entry(Box::new(e))
}

/// A `gemini` message into `e`: its text, model, usage, and whether it called tools (then it is
/// no candidate answer).
fn fill_model_message(e: &mut EntrySummary, raw: &RawLine<'_>, text: &str) {
    e.role = Some(role::ASSISTANT.to_owned());
    e.model = raw.model.as_deref().map(str::to_owned);
    e.usage = raw
        .tokens
        .as_ref()
        .and_then(|t| crate::model::Tokens::from_json(t, crate::usage::GEMINI_NAMES));
    e.has_tool_call = !tool_names(raw).is_empty();
    e.body_bytes = text.len() as u64;
    if !e.has_tool_call {
        e.text_bytes = text.len() as u64;
        e.text_sha256 = Some(runread_core::sha256_hex(text.as_bytes()));
        e.message_sha256 = e.line_sha256.clone();
    }
}

/// The names of the tools a `gemini` record called: its `toolCalls`, and any `functionCall` part.
fn tool_names(raw: &RawLine<'_>) -> Vec<String> {
    let mut names: Vec<String> = raw
        .tool_calls
        .iter()
        .flatten()
        .map(|c| c.name.clone().unwrap_or_default())
        .collect();
    if let Some(c) = &raw.content {
        names.extend(
            c.parts()
                .filter_map(|p| p.function_call.as_ref())
                .map(|f| f.name.clone().unwrap_or_default()),
        );
    }
    names
}

/// What a reader may be shown of `line` (read back when served): a prompt's text, a model
/// message's text and the names of the tools it called, a tool result's tool name (never its
/// output, never thoughts or tool arguments). `None` for any other line.
pub fn message_view(line: &[u8]) -> Option<MessageView> {
    let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
    raw.id.as_ref()?;
    let content = raw.content.as_ref();
    let body = content.map(GContent::text).unwrap_or_default();
    match kind_of(raw.kind.as_deref()?, content)? {
        Kind::Prompt => Some(MessageView {
            role: role::USER.to_owned(),
            body,
            ..MessageView::default()
        }),
        Kind::ToolResult => Some(MessageView {
            role: role::TOOL_RESULT.to_owned(),
            tool_name: content.and_then(|c| c.function_responses().into_iter().next()),
            ..MessageView::default()
        }),
        Kind::Assistant => {
            let tool_calls = tool_names(&raw);
            Some(MessageView {
                role: role::ASSISTANT.to_owned(),
                body_unavailable: body.is_empty()
                    && tool_calls.is_empty()
                    && content.is_some_and(GContent::has_content),
                answer: tool_calls.is_empty().then(|| body.clone()),
                body,
                tool_calls,
                ..MessageView::default()
            })
        }
        Kind::Injected => None,
    }
}

/// The agent ids of the subagents a `gemini` record's `invoke_agent` calls started, in order.
/// Never served (an id finds the subagent's own file).
pub fn subagent_calls(line: &[u8]) -> Vec<String> {
    let Ok(raw) = serde_json::from_slice::<RawLine<'_>>(line) else {
        return vec![];
    };
    raw.tool_calls
        .into_iter()
        .flatten()
        .filter(|c| c.name.as_deref() == Some(SUBAGENT_TOOL))
        .filter_map(|c| c.agent_id)
        .collect()
}

/// What Gemini CLI keeps of the subagent `agent_id` of the session `session_id` whose file is
/// `session_file`: its own file `chats/<session id>/<agent id>.jsonl`, opened link-safely beside
/// the session file (as Claude Code's subagent records are, `runread_artifacts::Folder`), at most
/// [`SUBAGENT_FILE_MAX_BYTES`]; finished when its first line is that subagent's metadata and a
/// later line sets its `summary` (written when it completes its task). `None`: no such file.
pub fn subagent_record(
    session_file: &Path,
    session_id: &str,
    agent_id: &str,
) -> Option<ChildRecord> {
    if !runread_core::target::is_id(agent_id) {
        return None;
    }
    let folder = runread_artifacts::Folder::open(session_file.parent()?, &[session_id]).ok()?;
    let name = format!("{agent_id}.jsonl");
    let bytes = folder.read(&name, SUBAGENT_FILE_MAX_BYTES).ok()?;
    let mut lines = bytes.split(|b| *b == b'\n');
    let first: RawLine<'_> = serde_json::from_slice(lines.next()?).ok()?;
    if first.session_id.as_deref() != Some(agent_id)
        || first.session_kind.as_deref() != Some("subagent")
    {
        return None;
    }
    let finished = lines.any(|l| {
        serde_json::from_slice::<RawLine<'_>>(l)
            .ok()
            .and_then(|r| r.set)
            .is_some_and(|s| s.summary.is_some())
    });
    Some(ChildRecord {
        finished,
        transcript_modified_ns: folder.modified_ns(&name).ok(),
    })
}

/// The project root Gemini CLI keeps beside `chats/` for the session file at `path`, when its
/// SHA-256 is `project_hash`; `None` otherwise (the session is then in no workspace).
fn project_root(path: &Path, project_hash: &str) -> Option<String> {
    let project = path.parent()?.parent()?;
    let folder = runread_artifacts::Folder::open(project, &[]).ok()?;
    let bytes = folder
        .read(PROJECT_ROOT_FILE, PROJECT_ROOT_MAX_BYTES)
        .ok()?;
    let root = std::str::from_utf8(&bytes).ok()?;
    [root, root.trim_end_matches('\n')]
        .into_iter()
        .find(|r| r.starts_with('/') && runread_core::sha256_hex(r.as_bytes()) == project_hash)
        .map(str::to_owned)
}

/// The project hash the file's first line records; `None`: not a Gemini CLI session file.
fn first_project_hash(file: &EvidenceFile) -> Option<String> {
    let mut lines = file.lines(0, FIRST_LINE_MAX_BYTES);
    let Ok(Some(Line::Complete { bytes, .. })) = lines.next() else {
        return None;
    };
    let raw: RawLine<'_> = serde_json::from_slice(bytes).ok()?;
    raw.project_hash
        .filter(|h| is_project_hash(h))
        .map(Cow::into_owned)
}

/// Reads the complete lines of `file` from where `resume` says (as [`crate::pi::scan`] does). The
/// first line, the session's metadata, is the header; a fresh read learns the workspace from
/// `.project_root` (`project_root`), and a file with no message of its own is not a session.
pub fn scan(file: &EvidenceFile, resume: Resume<'_>, ahead: ReadAhead) -> Result<Scan, ScanError> {
    // Read again on a resumed pass too (one bounded line): a later metadata line is checked
    // against the first line's, whatever the project root was found to be.
    let project_hash = first_project_hash(file).ok_or(ScanError::NotASession)?;
    let fresh = matches!(resume, Resume::Fresh);
    let mut scan = crate::scan::scan_lines(
        file,
        resume,
        FirstLine {
            max_bytes: FIRST_LINE_MAX_BYTES,
            parse: parse_first_line,
            is_entry: false,
        },
        |header: &mut Header, line: &[u8], digest: &LineDigest<'_>, line_no, offset| {
            parse_line(header, &project_hash, line, digest, line_no, offset)
        },
        ahead,
    )?;
    if fresh {
        let conversation = scan
            .entries
            .iter()
            .any(|e| matches!(e.kind, EntryKind::Message | EntryKind::Unrecognised));
        if !conversation {
            return Err(ScanError::NotASession);
        }
        scan.header.cwd = project_root(file.path(), &project_hash).unwrap_or_default();
    }
    Ok(scan)
}

/// Whether `new` (entries appended since `old` were indexed) change what a record of `old` is:
/// a line or a snapshot giving a record `old` knows another type or text. Completing a record
/// (tool calls, tokens, thoughts), restating it, or dropping it is no change.
pub fn rewrites(old: &[EntrySummary], new: &[EntrySummary]) -> bool {
    let mut known: HashMap<&str, &str> = HashMap::new();
    for e in old {
        for (id, sha) in record_digests(e) {
            known.insert(id, sha);
        }
    }
    new.iter()
        .flat_map(record_digests)
        .any(|(id, sha)| known.get(id).is_some_and(|k| *k != sha))
}

/// The records an entry states, each `(id, digest)`: a message its own, a snapshot each it lists.
fn record_digests(e: &EntrySummary) -> Vec<(&str, &str)> {
    match (e.kind, e.record_sha256.as_deref()) {
        (EntryKind::Message, Some(sha)) => vec![(e.id.as_str(), sha)],
        (EntryKind::Snapshot, _) => e
            .listed
            .iter()
            .map(|l| (l.id.as_str(), l.sha256.as_str()))
            .collect(),
        _ => vec![],
    }
}

// ---- runs ----

/// The message list as Gemini CLI's loader leaves it after every line of `entries`: the ids in
/// order, and each record's first and last line of its own.
struct Replay<'e> {
    list: Vec<&'e str>,
    first: HashMap<&'e str, &'e EntrySummary>,
    last: HashMap<&'e str, &'e EntrySummary>,
}

fn replay(entries: &[EntrySummary]) -> Replay<'_> {
    let mut list: Vec<&str> = Vec::new();
    let mut in_list: HashSet<&str> = HashSet::new();
    let mut first = HashMap::new();
    let mut last = HashMap::new();
    for e in entries {
        match e.kind {
            EntryKind::Message => {
                let id = e.id.as_str();
                if in_list.insert(id) {
                    list.push(id);
                }
                first.entry(id).or_insert(e);
                last.insert(id, e);
            }
            EntryKind::Snapshot => {
                list = e.listed.iter().map(|l| l.id.as_str()).collect();
                in_list = list.iter().copied().collect();
            }
            EntryKind::Rewind => {
                let at = list
                    .iter()
                    .position(|id| Some(*id) == e.parent_id.as_deref());
                list.truncate(at.unwrap_or(0));
                in_list = list.iter().copied().collect();
            }
            _ => {}
        }
    }
    Replay { list, first, last }
}

/// Each prompt of `entries` (by its first line, in file order), its run's records as last
/// written (prompt first, then the records up to the next prompt in the final list's order), and
/// whether the list still holds the prompt (else its run is the prompt alone: rolled back).
type Group<'e> = (&'e EntrySummary, Vec<&'e EntrySummary>, bool);

/// The [`Group`]s of `entries`, replayed as Gemini CLI's loader replays them.
fn groups(entries: &[EntrySummary]) -> Vec<Group<'_>> {
    let Replay { list, first, last } = replay(entries);
    // The records still listed, as last written, in order.
    let timeline: Vec<&EntrySummary> = list.iter().filter_map(|id| last.get(id).copied()).collect();
    let mut prompts: Vec<&EntrySummary> = first
        .values()
        .copied()
        .filter(|e| e.role.as_deref() == Some(role::USER))
        .collect();
    prompts.sort_by_key(|e| e.line);
    let at_of: HashMap<&str, usize> = timeline
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    prompts
        .iter()
        .map(|p| {
            let id = p.id.as_str();
            let prompt = last.get(id).copied().unwrap_or(p);
            match at_of.get(id).copied() {
                Some(at) => {
                    let rest = timeline.get(at + 1..).unwrap_or(&[]);
                    let end = rest
                        .iter()
                        .position(|e| e.role.as_deref() == Some(role::USER))
                        .unwrap_or(rest.len());
                    let mut events = vec![prompt];
                    events.extend(rest.iter().take(end).copied());
                    (*p, events, true)
                }
                _ => (*p, vec![prompt], false),
            }
        })
        .collect()
}

/// Cuts `entries` (in file order) into runs, one per prompt, in the order the prompts were first
/// written; each run's events are its records' last lines, in the final list's order.
///
/// `malformed_lines` taint the run open at that point of the file; `torn_tail` taints the last; a
/// line of a type runread does not know makes the run it falls in `unknown`.
pub fn cut_runs(entries: &[EntrySummary], malformed_lines: &[u64], torn_tail: bool) -> Branch {
    let groups = groups(entries);
    let messages: Vec<&EntrySummary> = groups
        .iter()
        .flat_map(|(_, events, _)| events.iter().copied())
        .collect();
    let count = groups.len();
    let mut runs = Vec::with_capacity(count);
    let mut why_unknown = Vec::with_capacity(count);
    let mut before = 0usize;
    for (n, (first_line, events, listed)) in groups.iter().enumerate() {
        let (mut run, why) = run_of(first_line, events, *listed, n + 1 == count);
        why_unknown.push(why);
        run.first_sequence = before as u64 + FIRST_SEQUENCE;
        set_contexts(&mut run, &messages, before, events.len());
        before += events.len();
        runs.push(run);
    }
    in_order_branch(entries, runs, why_unknown, malformed_lines, torn_tail)
}

/// One run: `first` is its prompt's first line, `events` its records (prompt first, each as last
/// written); `listed`: the prompt is still in the message list; `last_run`: no run follows. With
/// it, why the file cannot say how the run stands (`None`: it is running), for [`cut_runs`] to mark
/// once a bad line's reason is given.
fn run_of(
    first: &EntrySummary,
    events: &[&EntrySummary],
    listed: bool,
    last_run: bool,
) -> (Run, Option<&'static str>) {
    let prompt = events.first().copied().unwrap_or(first);
    let mut run = Run {
        start_line: first.line,
        end_line: events.iter().map(|e| e.line).max().unwrap_or(first.line),
        started_at: first.timestamp.clone(),
        message_lines: events.iter().map(|e| e.line).collect(),
        prompt_line: prompt.line_ref(),
        ..Run::running(first.id.clone())
    };
    for e in events {
        if let Some(m) = &e.model
            && !run.run_models.contains(m)
        {
            run.run_models.push(m.clone());
        }
    }
    if !listed {
        return (run, Some(ROLLED_BACK));
    }
    let Some(end) = events.last().copied() else {
        return (run, None);
    };
    let why = match end.role.as_deref() {
        Some(role::ASSISTANT) if !end.has_tool_call => {
            keep_candidate(&mut run, events, end);
            Some(END_NOT_RECORDED)
        }
        // A tool call, its result, or the prompt: the model has more to say, or never did.
        _ if last_run => {
            run.waiting_on_tool = end.has_tool_call;
            None
        }
        _ => Some(NO_RESPONSE),
    };
    (run, why)
}

/// The model message `m` that the run's last record is: kept as the run's candidate answer (its
/// line, size and digest, and the chain of the run's records up to it), never proven.
fn keep_candidate(run: &mut Run, events: &[&EntrySummary], m: &EntrySummary) {
    run.final_lines = m.line_ref().into_iter().collect();
    run.final_bytes = m.text_bytes;
    run.final_text_sha256 = m.text_sha256.clone();
    run.final_entry_id = Some(m.id.clone());
    run.final_message_sha256 = m.message_sha256.clone();
    let upto: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    run.chain_len = upto.len() as u64;
    run.chain_sha256 = Some(runread_core::sha256_hex(upto.join("\n").as_bytes()));
}

#[cfg(test)]
mod tests;
