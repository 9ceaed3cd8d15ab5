//! Claude Code session files (`projects/<escaped cwd>/<session id>.jsonl`), line by line, as the
//! real Claude Code 2.1.328 writes them (`../shared/harness/FORMATS.md`; the committed fixtures in
//! `fixtures/claude/` are the ground truth).
//!
//! A conversation line carries `uuid`, `parentUuid`, `sessionId`, `cwd` and `timestamp`; its
//! `type` is `user` (a prompt, a tool result, a meta message Claude Code injects, or an
//! interruption marker), `assistant` (**one line per content block** of a model response, the
//! lines of one response sharing `message.id`) or `attachment` (context Claude Code injects; in
//! the chain, never a message). Lines without `uuid` are Claude Code's own bookkeeping (queue
//! operations, API request records, cost state, …): skipped and counted. A conversation line of
//! a type runread does not know (not `user`, `assistant`, `attachment`, `system`) makes the run it
//! falls in `unknown`; unknown fields and attachment kinds are tolerated. What runread relies on
//! is checked strictly: a
//! conversation line must be a JSON object with a valid `uuid`, the session's `sessionId` and the
//! session's `cwd`, else it is malformed (and the run it touches `unknown`).
//!
//! Runs are cut on the active chain: from the newest conversation line back by `parentUuid`, plus
//! the tool-result lines hanging off that chain (Claude Code gives a result the line of its
//! `tool_use` as parent, which leaves a second result of one response off the walked path). A run
//! starts at a prompt and ends before the next one; its final answer is the text of its last
//! model response when that response ended the run. Claude Code's automatic continuations (an
//! output-token limit, a stream cut mid-way: a meta "resume" prompt and a new request) stay in the
//! same run, and its final answer is the last response — what Claude Code itself reports as the
//! run's result; the earlier parts are in the history.

mod profile;
pub(crate) use profile::PROFILE;
pub mod settings;

use std::borrow::Cow;
use std::collections::HashSet;

use serde::Deserialize;

use crate::content::{Content, blocks_of, kind_of, text_len, text_of};
use crate::file::EvidenceFile;
use crate::model::{
    EntryKind, EntrySummary, Header, LineOutcome, MessageView, Resume, Scan, ScanError,
    Unrecognised, answer_digest,
};
use crate::runs::{Branch, FIRST_SEQUENCE, Run, RunStatus, Walk, taint_branch, walk_from_leaf};
use crate::scan::{FirstLine, LineDigest, ReadAhead};

/// What an interruption marker's text starts with (`[Request interrupted by user]`, `… for tool
/// use]`).
pub const INTERRUPT_MARKER_PREFIX: &str = "[Request interrupted by user";
/// The `model` of a message Claude Code wrote itself (an API error, "No response requested.").
pub const SYNTHETIC_MODEL: &str = "<synthetic>";
/// Longest first line read to learn a session's id.
pub const FIRST_LINE_MAX_BYTES: usize = 64 * 1024;

/// History roles of Claude Code messages (what `read_history` reports as `role`).
pub mod role {
    /// A prompt: it starts a run.
    pub const USER: &str = "user";
    pub const ASSISTANT: &str = "assistant";
    pub const TOOL_RESULT: &str = "toolResult";
    /// A message Claude Code injected (`isMeta`: "Output token limit hit. Resume directly…").
    pub const META: &str = "meta";
    /// `[Request interrupted by user]`.
    pub const INTERRUPT: &str = "interrupt";
}

// ---- one line, as far as runread reads it ----

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow, default)]
    parent_uuid: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isMeta", default)]
    is_meta: Option<bool>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    is_api_error: Option<bool>,
    #[serde(rename = "gitBranch", borrow, default)]
    git_branch: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<RawMessage<'a>>,
    #[serde(borrow, default)]
    attachment: Option<RawAttachment<'a>>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    /// Read whole (a few numbers): whatever it holds, the line stays readable.
    #[serde(default)]
    usage: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawAttachment<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    identity: Option<RawIdentity<'a>>,
}

#[derive(Deserialize)]
struct RawIdentity<'a> {
    #[serde(rename = "modelId", borrow, default)]
    model_id: Option<Cow<'a, str>>,
}

/// A `user` line's history role.
fn user_role(line: &RawLine<'_>, content: Option<&Content<'_>>) -> &'static str {
    if line.is_meta == Some(true) {
        return role::META;
    }
    let blocks = blocks_of(content);
    if blocks.iter().any(|b| kind_of(b) == Some("tool_result")) {
        return role::TOOL_RESULT;
    }
    if text_of(content).starts_with(INTERRUPT_MARKER_PREFIX) {
        return role::INTERRUPT;
    }
    role::USER
}

/// A `tool_result` line's served text: its results' content texts, joined by `\n`.
fn tool_result_text(content: Option<&Content<'_>>) -> String {
    let parts: Vec<String> = blocks_of(content)
        .iter()
        .filter(|b| kind_of(b) == Some("tool_result"))
        .map(|b| text_of(b.content.as_ref()))
        .filter(|t| !t.is_empty())
        .collect();
    parts.join("\n")
}

/// The session's id from the file's first line (every line of a Claude Code session file carries
/// it); `None`: not a Claude Code session file.
pub fn parse_first_line(line: &[u8]) -> Option<Header> {
    let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
    let session_id = raw.session_id?;
    if !runread_core::target::is_id(&session_id) {
        return None;
    }
    Some(Header {
        session_id: session_id.into_owned(),
        version: 0,
        cwd: raw.cwd.map(Cow::into_owned).unwrap_or_default(),
        timestamp: raw.timestamp.map(Cow::into_owned),
        parent_session: None,
        line_sha256: runread_core::sha256_hex(line),
        line_bytes: line.len() as u64,
        fork: None,
        agent_version: None,
    })
}

/// Parses one complete line at 1-based `line_no`, starting at byte `offset`. `header` is the
/// session's; a conversation line of another session or cwd is malformed. Learns the session's
/// cwd from the first conversation line when the header does not have it yet. `digest` is the
/// line's SHA-256 as the scan has it (taken ahead, or when asked: [`LineDigest::of`]).
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
    let Ok(raw) = serde_json::from_slice::<RawLine<'_>>(line) else {
        return LineOutcome::Malformed;
    };
    let Some(uuid) = raw.uuid.as_deref() else {
        // Claude Code's own bookkeeping: not part of the conversation.
        return LineOutcome::Skipped;
    };
    if raw.is_sidechain == Some(true) {
        // A subagent's line: subagents have transcripts of their own.
        return LineOutcome::Skipped;
    }
    if !runread_core::target::is_id(uuid)
        || raw.session_id.as_deref() != Some(header.session_id.as_str())
        || raw
            .parent_uuid
            .as_deref()
            .is_some_and(|p| !runread_core::target::is_id(p))
    {
        return LineOutcome::Malformed;
    }
    match raw.cwd.as_deref() {
        Some(cwd) if header.cwd.is_empty() => header.cwd = cwd.to_owned(),
        Some(cwd) if cwd == header.cwd => {}
        // Another directory: never taken for this session's workspace.
        _ => return LineOutcome::Malformed,
    }
    let mut e = EntrySummary {
        parent_id: raw.parent_uuid.as_deref().map(str::to_owned),
        timestamp: raw.timestamp.as_deref().map(str::to_owned),
        ..EntrySummary::at(line_no, offset, line.len() as u64, uuid.to_owned())
    };
    match raw.kind.as_deref() {
        Some("user") => {
            let Some(m) = &raw.message else {
                return LineOutcome::Malformed;
            };
            fill_user(&mut e, &raw, m, digest);
        }
        Some("assistant") => {
            let Some(m) = &raw.message else {
                return LineOutcome::Malformed;
            };
            fill_assistant(&mut e, &raw, m, digest);
        }
        Some("attachment") => fill_attachment(&mut e, &raw),
        // Claude Code's own notes in the chain (`subtype` `api_error`: a failed request it
        // retries, seen in `fixtures/claude/retry-timeout`): never a message; the retried
        // response, or the synthetic error that ends the run, follows as an `assistant` line.
        Some("system") => {}
        // A conversation line of a type runread does not know: it could be the run's answer.
        other => {
            e.kind = EntryKind::Unrecognised;
            let seen = Unrecognised::new(line_no, other.unwrap_or(""), raw.version.as_deref());
            return LineOutcome::Unrecognised(Box::new(e), seen);
        }
    }
    LineOutcome::Entry(Box::new(e))
}

/// The model Claude Code was configured with, as an `attachment` line's `model` attachment names
/// it, into `e`.
fn fill_attachment(e: &mut EntrySummary, raw: &RawLine<'_>) {
    if let Some(a) = &raw.attachment
        && a.kind.as_deref() == Some("model")
        && let Some(model) = a.identity.as_ref().and_then(|i| i.model_id.as_deref())
    {
        e.kind = EntryKind::ModelChange;
        e.model = Some(model.to_owned());
    }
}

/// A `user` line's role (a prompt, a tool result, an interrupt, …) and sizes into `e`.
fn fill_user(e: &mut EntrySummary, raw: &RawLine<'_>, m: &RawMessage<'_>, digest: &LineDigest<'_>) {
    let content = m.content.as_ref();
    let role = user_role(raw, content);
    e.kind = EntryKind::Message;
    e.role = Some(role.to_owned());
    e.line_sha256 = Some(digest.hex());
    e.body_bytes = if role == role::TOOL_RESULT {
        tool_result_text(content).len()
    } else {
        text_len(content)
    } as u64;
    if role == role::USER {
        e.message_sha256 = e.line_sha256.clone();
    }
}

/// An `assistant` line into `e`: its response group, model, stop reason, and its text's size and
/// digest when it is a candidate answer (no tool call, not Claude Code's own).
fn fill_assistant(
    e: &mut EntrySummary,
    raw: &RawLine<'_>,
    m: &RawMessage<'_>,
    digest: &LineDigest<'_>,
) {
    let content = m.content.as_ref();
    let blocks = blocks_of(content);
    e.kind = EntryKind::Message;
    e.role = Some(role::ASSISTANT.to_owned());
    e.line_sha256 = Some(digest.hex());
    e.group = m.id.as_deref().map(str::to_owned);
    e.model = m.model.as_deref().map(str::to_owned);
    e.stop_reason = m.stop_reason.as_deref().map(str::to_owned);
    e.synthetic = m.model.as_deref() == Some(SYNTHETIC_MODEL);
    e.usage = m
        .usage
        .as_ref()
        .and_then(|u| crate::model::Tokens::from_json(u, crate::usage::CLAUDE_NAMES));
    e.api_error = raw.is_api_error == Some(true);
    e.has_tool_call = blocks.iter().any(|b| kind_of(b) == Some("tool_use"));
    e.body_bytes = text_len(content) as u64;
    if !e.has_tool_call && !e.synthetic {
        let text = text_of(content);
        e.text_bytes = text.len() as u64;
        e.text_sha256 = Some(runread_core::sha256_hex(text.as_bytes()));
        e.message_sha256 = e.line_sha256.clone();
    }
}

/// What a reader may be shown of the conversation line `line` (read back when served): `None`
/// when it is not a message line.
pub fn message_view(line: &[u8]) -> Option<MessageView> {
    let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
    raw.uuid.as_ref()?;
    let m = raw.message.as_ref()?;
    let content = m.content.as_ref();
    match raw.kind.as_deref()? {
        "user" => {
            let role = user_role(&raw, content);
            let body = if role == role::TOOL_RESULT {
                tool_result_text(content)
            } else {
                text_of(content)
            };
            let has_content = match content {
                Some(Content::Blocks(b)) => !b.is_empty(),
                Some(Content::Text(t)) => !t.is_empty(),
                _ => false,
            };
            Some(MessageView {
                role: role.to_owned(),
                body_unavailable: body.is_empty() && has_content,
                body,
                tool_name: None,
                tool_calls: vec![],
                answer: None,
                cwd: raw.cwd.as_deref().map(str::to_owned),
                git_branch: raw.git_branch.as_deref().map(str::to_owned),
                agent_version: raw.version.as_deref().map(str::to_owned),
                provider: None,
            })
        }
        "assistant" => {
            let blocks = blocks_of(content);
            let tool_calls: Vec<String> = blocks
                .iter()
                .filter(|b| kind_of(b) == Some("tool_use"))
                .filter_map(|b| b.name.as_deref().map(str::to_owned))
                .collect();
            let synthetic = m.model.as_deref() == Some(SYNTHETIC_MODEL);
            let body = text_of(content);
            Some(MessageView {
                role: role::ASSISTANT.to_owned(),
                body_unavailable: false,
                answer: (tool_calls.is_empty() && !synthetic).then(|| body.clone()),
                body,
                tool_name: None,
                tool_calls,
                cwd: raw.cwd.as_deref().map(str::to_owned),
                git_branch: raw.git_branch.as_deref().map(str::to_owned),
                agent_version: raw.version.as_deref().map(str::to_owned),
                provider: None,
            })
        }
        _ => None,
    }
}

/// The tool calls of an assistant line: `(tool_use id, tool name)`, in order. Never served (ids
/// match a call with its subagent's record).
pub fn tool_uses(line: &[u8]) -> Vec<(String, String)> {
    #[derive(Deserialize)]
    struct Use<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        id: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        name: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Msg<'a> {
        #[serde(borrow, default)]
        content: Option<Vec<Use<'a>>>,
    }
    #[derive(Deserialize)]
    struct L<'a> {
        #[serde(borrow, default)]
        message: Option<Msg<'a>>,
    }
    let Ok(l) = serde_json::from_slice::<L<'_>>(line) else {
        return vec![];
    };
    l.message
        .and_then(|m| m.content)
        .unwrap_or_default()
        .into_iter()
        .filter(|u| u.kind.as_deref() == Some("tool_use"))
        .filter_map(|u| Some((u.id?.into_owned(), u.name?.into_owned())))
        .collect()
}

/// The tool Claude Code runs subagents with.
pub const SUBAGENT_TOOLS: &[&str] = &["Agent", "Task"];

/// What a subagent's `agent-<id>.meta.json` says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentMeta {
    /// The parent's `tool_use` id that started it.
    pub tool_use_id: String,
    /// Claude Code wrote that it finished.
    pub finished: bool,
}

/// Parses a subagent's `.meta.json`; `None` when it is not one.
pub fn parse_subagent_meta(bytes: &[u8]) -> Option<SubagentMeta> {
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "toolUseId")]
        tool_use_id: String,
        #[serde(default)]
        finished: Option<bool>,
    }
    let m: Meta = serde_json::from_slice(bytes).ok()?;
    Some(SubagentMeta {
        tool_use_id: m.tool_use_id,
        finished: m.finished == Some(true),
    })
}

/// Most entries of a session's `subagents/` folder looked at (each subagent has two there: its
/// record and its transcript).
pub const SUBAGENT_FOLDER_ENTRIES_MAX: usize = 1024;
/// Most subagent records read for one session.
pub const SUBAGENTS_MAX: usize = 256;
/// Largest subagent record (`agent-<id>.meta.json`) read; a larger one is passed over.
pub const SUBAGENT_META_MAX_BYTES: u64 = 64 * 1024;

/// What Claude Code keeps of one subagent beside the session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentRecord {
    pub meta: SubagentMeta,
    /// When the subagent's transcript (`agent-<id>.jsonl`, beside its record) was last written,
    /// in nanoseconds since the epoch; `None` when there is no such regular file with one name.
    pub transcript_modified_ns: Option<i64>,
}

/// The subagent records of the session `session_id` whose file is `session_file`: Claude Code
/// keeps them in `<session id>/subagents/agent-<id>.meta.json` beside that file.
///
/// The same link-safe rules as for a session file, through `runread_artifacts::Folder`: the
/// session's folder and its `subagents/` folder are opened beneath the session file's folder
/// without following a link (a link in their place is no folder: no records); each record is
/// opened without following a link, a regular file with one name, read whole when it has at most
/// [`SUBAGENT_META_MAX_BYTES`], and checked unchanged after the read; each transcript is looked at
/// the same way. A record that cannot be read so, or does not parse, is passed over: its subagent
/// has no record.
pub fn subagent_records(session_file: &std::path::Path, session_id: &str) -> Vec<SubagentRecord> {
    let Some(session_folder) = session_file.parent() else {
        return Vec::new();
    };
    let Ok(folder) = runread_artifacts::Folder::open(session_folder, &[session_id, "subagents"])
    else {
        return Vec::new();
    };
    let names = folder
        .names(SUBAGENT_FOLDER_ENTRIES_MAX)
        .unwrap_or_default();
    names
        .iter()
        .filter_map(|name| {
            let id = name.strip_prefix("agent-")?.strip_suffix(".meta.json")?;
            let bytes = folder.read(name, SUBAGENT_META_MAX_BYTES).ok()?;
            Some(SubagentRecord {
                meta: parse_subagent_meta(&bytes)?,
                transcript_modified_ns: folder.modified_ns(&format!("agent-{id}.jsonl")).ok(),
            })
        })
        .take(SUBAGENTS_MAX)
        .collect()
}

/// Reads the complete lines of `file` from where `resume` says, parsed one at a time (as
/// [`crate::pi::scan`] does). The first line gives the session id (and the header digest that
/// later passes check) and is a conversation line too; the first conversation line gives the cwd.
pub fn scan(file: &EvidenceFile, resume: Resume<'_>, ahead: ReadAhead) -> Result<Scan, ScanError> {
    crate::scan::scan_lines(
        file,
        resume,
        FirstLine {
            max_bytes: FIRST_LINE_MAX_BYTES,
            parse: parse_first_line,
            is_entry: true,
        },
        parse_line,
        ahead,
    )
}

// ---- runs ----

/// Cuts `entries` (in file order) into the runs of the active chain.
///
/// `malformed_lines` taint the run open at that point of the file, and stand for a parent the walk
/// cannot find; `torn_tail` taints the last; a conversation line of a type runread does not know
/// on the chain makes the run it falls in `unknown`.
pub fn cut_runs(entries: &[EntrySummary], malformed_lines: &[u64], torn_tail: bool) -> Branch {
    let Some(leaf) = entries.last() else {
        return Branch {
            leaf_id: None,
            runs: vec![],
            complete: true,
            session_name: None,
            saved_model: None,
        };
    };
    // Walk leaf → root, over a line runread could not read (the walk marks it incomplete).
    let Walk { path, complete } = walk_from_leaf(entries, malformed_lines);
    let on_path: HashSet<&str> = path.iter().map(|e| e.id.as_str()).collect();
    // The chain, and the tool results hanging off it, in file order; and the lines of a type
    // runread does not know hanging off it as a result does (one could be the answer).
    let chain: Vec<&EntrySummary> = entries
        .iter()
        .filter(|e| {
            on_path.contains(e.id.as_str())
                || ((e.role.as_deref() == Some(role::TOOL_RESULT)
                    || e.kind == EntryKind::Unrecognised)
                    && e.parent_id.as_deref().is_some_and(|p| on_path.contains(p)))
        })
        .collect();
    let saved_model = chain
        .iter()
        .rev()
        .find(|e| e.kind == EntryKind::ModelChange)
        .and_then(|e| e.model.clone());
    let messages: Vec<&EntrySummary> = chain
        .iter()
        .copied()
        .filter(|e| e.kind == EntryKind::Message)
        .collect();
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, e)| e.role.as_deref() == Some(role::USER))
        .map(|(i, _)| i)
        .collect();
    let mut runs = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(messages.len());
        let Some(slice) = messages.get(start..end) else {
            continue;
        };
        let mut run = run_of(slice, &chain);
        run.first_sequence = events_in(messages.get(..start).unwrap_or(&[])) + FIRST_SEQUENCE;
        crate::runs::set_contexts(&mut run, &messages, start, end - start);
        runs.push(run);
    }
    taint_branch(&mut runs, chain.iter().copied(), malformed_lines, torn_tail);
    Branch {
        leaf_id: Some(leaf.id.clone()),
        runs,
        complete,
        session_name: None,
        saved_model,
    }
}

/// Events `messages` make: consecutive lines of one group are one event.
pub fn events_in(messages: &[&EntrySummary]) -> u64 {
    let mut n = 0u64;
    let mut prev: Option<&str> = None;
    for e in messages {
        let g = e.group.as_deref();
        if g.is_none() || g != prev {
            n += 1;
        }
        prev = g;
    }
    n
}

/// One run: `slice` is its messages (prompt first) on the chain.
fn run_of(slice: &[&EntrySummary], chain: &[&EntrySummary]) -> Run {
    let mut run = open_run(slice);
    for e in slice
        .iter()
        .filter(|e| e.role.as_deref() == Some(role::ASSISTANT))
    {
        if let Some(m) = &e.model
            && !e.synthetic
            && !run.run_models.contains(m)
        {
            run.run_models.push(m.clone());
        }
    }
    // What the run's end is: its last message, not counting Claude Code's own "No response
    // requested." (written when the next prompt follows an interruption).
    let Some(last) = slice
        .iter()
        .rev()
        .find(|e| !e.synthetic || e.api_error)
        .copied()
    else {
        return run;
    };
    match last.role.as_deref() {
        Some(role::ASSISTANT) if last.api_error => {
            run.status = RunStatus::Failed;
            run.ended_at = last.timestamp.clone();
        }
        Some(role::INTERRUPT) => {
            run.status = RunStatus::Cancelled;
            run.ended_at = last.timestamp.clone();
        }
        Some(role::ASSISTANT) if !last.synthetic => end_in_response(&mut run, slice, chain, last),
        // A prompt, a tool result or a continuation that the model has not answered yet.
        _ => {}
    }
    run
}

/// The run of `slice` as far as its first message tells: still running, no answer yet.
fn open_run(slice: &[&EntrySummary]) -> Run {
    let first = slice.first().copied();
    Run {
        start_line: first.map_or(0, |e| e.line),
        end_line: slice.iter().map(|e| e.line).max().unwrap_or(0),
        started_at: first.and_then(|e| e.timestamp.clone()),
        message_lines: slice.iter().map(|e| e.line).collect(),
        prompt_line: first.and_then(|e| e.line_ref()),
        ..Run::running(first.map(|e| e.id.clone()).unwrap_or_default())
    }
}

/// A run whose last message is the model's response (`last` its last line): waiting on a tool,
/// still answering, or completed with the response's text lines as its final answer.
fn end_in_response(
    run: &mut Run,
    slice: &[&EntrySummary],
    chain: &[&EntrySummary],
    last: &EntrySummary,
) {
    // The last response: every line of the run with its group.
    let response: Vec<&EntrySummary> = slice
        .iter()
        .copied()
        .filter(|e| e.group.is_some() && e.group == last.group)
        .collect();
    let tool_call = response.iter().any(|e| e.has_tool_call);
    run.waiting_on_tool = tool_call;
    let stop = last.stop_reason.as_deref();
    if tool_call || !matches!(stop, Some("end_turn" | "stop_sequence" | "max_tokens")) {
        return;
    }
    run.status = RunStatus::Completed;
    run.ended_at = last.timestamp.clone();
    run.final_truncated = stop == Some("max_tokens");
    let texts: Vec<&EntrySummary> = response
        .iter()
        .copied()
        .filter(|e| e.text_bytes > 0)
        .collect();
    // A response without text still has an (empty) answer: its last line's.
    let answer_lines = if texts.is_empty() { vec![last] } else { texts };
    run.final_lines = answer_lines.iter().filter_map(|e| e.line_ref()).collect();
    run.final_bytes = answer_lines.iter().map(|e| e.text_bytes).sum::<u64>()
        + answer_lines.len().saturating_sub(1) as u64;
    let digests: Option<Vec<&str>> = answer_lines
        .iter()
        .map(|e| e.text_sha256.as_deref())
        .collect();
    run.final_text_sha256 = digests.map(answer_digest);
    let final_entry = answer_lines.last().copied().unwrap_or(last);
    run.final_entry_id = Some(final_entry.id.clone());
    run.final_message_sha256 = final_entry.message_sha256.clone();
    // The chain from the prompt to the final line, as the file links it.
    let upto: Vec<&str> = chain
        .iter()
        .filter(|e| e.line >= run.start_line && e.line <= final_entry.line)
        .map(|e| e.id.as_str())
        .collect();
    run.chain_len = upto.len() as u64;
    run.chain_sha256 = Some(runread_core::sha256_hex(upto.join("\n").as_bytes()));
}

#[cfg(test)]
mod subagent_tests {
    use super::*;

    /// A session file and its `subagents/` folder holding `records`, each `(id, record bytes)`.
    fn session_with(records: &[(String, Vec<u8>)]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s1.jsonl");
        std::fs::write(&session, b"{}\n").unwrap();
        let folder = dir.path().join("s1/subagents");
        std::fs::create_dir_all(&folder).unwrap();
        for (id, bytes) in records {
            std::fs::write(folder.join(format!("agent-{id}.meta.json")), bytes).unwrap();
            std::fs::write(folder.join(format!("agent-{id}.jsonl")), b"{}\n").unwrap();
        }
        (dir, session)
    }

    /// A finished record for `tool_use_id`, padded with spaces to exactly `len` bytes.
    fn record(tool_use_id: &str, len: usize) -> Vec<u8> {
        let body = format!(r#"{{"toolUseId":"{tool_use_id}","finished":true}}"#);
        let mut bytes = body.into_bytes();
        bytes.resize(len, b' ');
        bytes
    }

    #[test]
    fn a_record_at_the_size_bound_is_read_and_one_byte_more_is_passed_over() {
        let bound = usize::try_from(SUBAGENT_META_MAX_BYTES).unwrap();
        let (_dir, session) = session_with(&[
            ("a".into(), record("t-at", bound)),
            ("b".into(), record("t-over", bound + 1)),
        ]);
        let records = subagent_records(&session, "s1");
        let ids: Vec<&str> = records
            .iter()
            .map(|r| r.meta.tool_use_id.as_str())
            .collect();
        assert_eq!(ids, ["t-at"]);
        assert!(records[0].meta.finished);
        assert!(records[0].transcript_modified_ns.is_some());
    }

    #[test]
    fn at_most_the_bound_of_records_is_read() {
        for (n, read) in [
            (SUBAGENTS_MAX, SUBAGENTS_MAX),
            (SUBAGENTS_MAX + 1, SUBAGENTS_MAX),
        ] {
            let records: Vec<(String, Vec<u8>)> = (0..n)
                .map(|i| (format!("{i:04}"), record(&format!("t{i}"), 64)))
                .collect();
            let (_dir, session) = session_with(&records);
            assert_eq!(subagent_records(&session, "s1").len(), read, "{n}");
        }
    }

    #[test]
    fn a_session_id_that_is_not_one_name_finds_no_folder() {
        let (dir, session) = session_with(&[("a".into(), record("t", 64))]);
        std::fs::create_dir_all(dir.path().join("s1/x/subagents")).unwrap();
        for id in ["..", ".", "s1/x", ""] {
            assert!(subagent_records(&session, id).is_empty(), "{id:?}");
        }
        assert_eq!(subagent_records(&session, "s1").len(), 1);
    }
}
