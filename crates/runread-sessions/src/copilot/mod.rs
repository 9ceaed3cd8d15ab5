//! GitHub Copilot CLI session files (`session-state/<session id>/events.jsonl`), line by line, as
//! the real Copilot CLI 1.0.102 writes them (`../shared/harness/FORMATS.md`; the committed
//! fixtures in `fixtures/copilot/` are the ground truth).
//!
//! One file per session: every run of the session is **appended** to it (a later process first
//! writes `session.resume`). Every line is `{"type","data","id","timestamp","parentId"}`, each
//! event chained to the one before by `parentId`. The first is `session.start` (`sessionId`, the
//! cwd, `copilotVersion`, the configured `selectedModel`). A run is a prompt — a `user.message`
//! that is not a subagent's — and every line up to the next prompt. Its final answer is the
//! `content` of its last `assistant.message` without `parentToolCallId` and without tool
//! requests, once the `assistant.turn_end` after it is written: the run is `completed`. A
//! `session.error` in the run makes it `failed` (nothing of its message is kept); an `abort`,
//! `cancelled`. A run with no such answer is `running` while it is the session's last, else
//! `unknown`.
//!
//! **Length cut-offs.** Copilot persists no cut reply: when a model call ends on `length` it asks
//! for the rest itself (up to twice) and records only the continuation; the third cut reply is
//! kept as the answer, like a finished one. What shows it is the run's `session.usage_record`s,
//! one per model call, each with its `finishReason`: a main-agent call of the run that ended on
//! `length` means the answer in the file is not the whole answer (the auto-continue signature), and
//! the answer's own call ending on `length` means it was cut. Either way the run is `unknown`
//! ([`CONTINUED_AFTER_LENGTH`], [`CUT_AT_LENGTH`]), its candidate kept, never served as complete.
//! A file without usage records (none written, or an older Copilot) could not tell: its answers
//! are proven only by their `turn_end`.
//!
//! **Subagents** (the `task` tool) run inline in the same file: their prompt (`user.message` with
//! `source`), their messages and tool events (`parentToolCallId`, or an `agentId` on the line) are
//! not the run's events — skipped, never served — and each `task` call is a child of the run,
//! finished once the file holds its `subagent.completed` (or `subagent.failed`).
//!
//! History shows prompts, the main agent's messages and the names of the tools it called; never
//! reasoning, tool arguments, tool outputs or error messages. What is not a conversation line
//! (turn bookkeeping, the system prompt, tool executions, shutdown totals) is skipped and
//! counted; usage records are kept as numbers only; a line of a type runread does not know makes
//! the run it falls in `unknown`. A line that is not a JSON object with a string `type` and `id`
//! and an object `data`, or a second `session.start`, is malformed and taints its run.

mod profile;
pub(crate) use profile::PROFILE;

use std::borrow::Cow;
use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;

use runread_core::limits::{EVIDENCE_FILE_MAX_LINES, EVIDENCE_LINE_MAX_BYTES};

use crate::file::{EvidenceFile, Line};
use crate::model::{
    EntryKind, EntrySummary, Header, LineOutcome, MessageView, Resume, Scan, ScanError,
};
use crate::records::ChildRecord;
use crate::runs::{Branch, FIRST_SEQUENCE, Run, RunStatus, in_order_branch};
use crate::scan::{FirstLine, LineDigest, ReadAhead};

/// History roles of Copilot CLI events (what `read_history` reports as `role`).
pub mod role {
    /// A prompt: it starts a run.
    pub const USER: &str = "user";
    /// The main agent's message: its text, and the names of the tools it called.
    pub const ASSISTANT: &str = "assistant";
}

/// The name of a session's file inside its folder.
pub const EVENTS_FILE: &str = "events.jsonl";
/// The tool Copilot CLI runs subagents with.
pub const SUBAGENT_TOOL: &str = "task";
/// Why a run is `unknown` when one of its main-agent model calls ended on the length limit before
/// the answer: Copilot asked for the rest itself and the cut part is not in the file.
pub const CONTINUED_AFTER_LENGTH: &str =
    "a reply was cut at the length limit and continued by Copilot; the cut part is not recorded";
/// Why a run is `unknown` when the model call of its answer ended on the length limit.
pub const CUT_AT_LENGTH: &str = "the answer was cut at the model's length limit";
/// Why a run that is not the session's last is `unknown` without an answer, an error or an abort.
pub const NO_END: &str = "the run ended without an answer, an error or an interruption";

// ---- one line, as far as runread reads it ----

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    /// A subagent's line names its agent.
    #[serde(rename = "agentId", default)]
    agent_id: Option<IgnoredAny>,
    #[serde(borrow)]
    data: Data<'a>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(default)]
    version: Option<u8>,
    #[serde(rename = "copilotVersion", borrow, default)]
    copilot_version: Option<Cow<'a, str>>,
    #[serde(rename = "startTime", borrow, default)]
    start_time: Option<Cow<'a, str>>,
    #[serde(rename = "selectedModel", borrow, default)]
    selected_model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    context: Option<SessionContext<'a>>,
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    /// A subagent's prompt says who sent it (`agent-<session id>`).
    #[serde(default)]
    source: Option<IgnoredAny>,
    #[serde(rename = "parentToolCallId", default)]
    parent_tool_call_id: Option<IgnoredAny>,
    #[serde(rename = "toolRequests", borrow, default)]
    tool_requests: Option<Vec<ToolRequest<'a>>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(rename = "apiCallId", borrow, default)]
    api_call_id: Option<Cow<'a, str>>,
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    /// `session.usage_record`'s (read whole: a few numbers and names).
    #[serde(default)]
    usage: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct SessionContext<'a> {
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ToolRequest<'a> {
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

impl RawLine<'_> {
    /// The line is a subagent's (its prompt, its messages, its turns and tools).
    fn subagents(&self) -> bool {
        self.agent_id.is_some()
            || self.data.parent_tool_call_id.is_some()
            || (self.kind == "user.message" && self.data.source.is_some())
    }
}

/// Every line type Copilot CLI 1.0.102 writes (the committed fixtures, FORMATS.md).
const KNOWN_TYPES: &[&str] = &[
    "session.start",
    "session.resume",
    "session.shutdown",
    "session.model_change",
    "session.usage_record",
    "session.error",
    "user.message",
    "system.message",
    "assistant.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "tool.execution_start",
    "tool.execution_complete",
    "subagent.started",
    "subagent.configured",
    "subagent.completed",
    "subagent.failed",
    "abort",
];

/// The session from the file's first line, `session.start`; `None`: not a Copilot CLI session file.
pub fn parse_first_line(line: &[u8]) -> Option<Header> {
    let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
    if raw.kind != "session.start" {
        return None;
    }
    let d = raw.data;
    let session_id = d.session_id?;
    if !runread_core::target::is_id(&session_id) {
        return None;
    }
    Some(Header {
        session_id: session_id.into_owned(),
        version: d.version.unwrap_or(0),
        cwd: d
            .context
            .and_then(|c| c.cwd)
            .map(Cow::into_owned)
            .unwrap_or_default(),
        timestamp: d.start_time.or(raw.timestamp).map(Cow::into_owned),
        parent_session: None,
        line_sha256: runread_core::sha256_hex(line),
        line_bytes: line.len() as u64,
        fork: None,
        agent_version: d
            .copilot_version
            .as_deref()
            .and_then(runread_core::agent::reportable_event_type)
            .map(str::to_owned),
    })
}

/// Parses one complete line at 1-based `line_no` (the first included: `session.start` is an entry
/// too, for the configured model), starting at byte `offset`.
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
    if !runread_core::target::is_id(&raw.id) {
        return LineOutcome::Malformed;
    }
    let mut e = EntrySummary {
        timestamp: raw.timestamp.as_deref().map(str::to_owned),
        ..EntrySummary::at(
            line_no,
            offset,
            line.len() as u64,
            raw.id.clone().into_owned(),
        )
    };
    if !KNOWN_TYPES.contains(&raw.kind.as_ref()) {
        e.kind = EntryKind::Unrecognised;
        let seen =
            crate::model::Unrecognised::new(line_no, &raw.kind, header.agent_version.as_deref());
        return LineOutcome::Unrecognised(Box::new(e), seen);
    }
    match fill(&mut e, &raw, header, digest, line_no) {
        Some(outcome) => outcome,
        None => LineOutcome::Entry(Box::new(e)),
    }
}

/// Fills in what `e` says, from its line `raw` (a known type) at `line_no`; `Some`: the line is
/// not an entry (its outcome).
fn fill(
    e: &mut EntrySummary,
    raw: &RawLine<'_>,
    header: &Header,
    digest: &LineDigest<'_>,
    line_no: u64,
) -> Option<LineOutcome> {
    let d = &raw.data;
    match raw.kind.as_ref() {
        "session.start" => {
            // Only the first line; another session's start in this file is not this session's.
            if line_no != 1 || d.session_id.as_deref() != Some(header.session_id.as_str()) {
                return Some(LineOutcome::Malformed);
            }
            e.kind = EntryKind::ModelChange;
            e.model = d.selected_model.as_deref().map(str::to_owned);
        }
        "session.resume" => {
            e.kind = EntryKind::ModelChange;
            e.model = d.selected_model.as_deref().map(str::to_owned);
        }
        "session.usage_record" => return fill_usage(e, raw),
        _ if raw.subagents() => return Some(LineOutcome::Skipped),
        "user.message" => {
            let Some(text) = d.content.as_deref() else {
                return Some(LineOutcome::Malformed);
            };
            e.kind = EntryKind::Message;
            e.role = Some(role::USER.to_owned());
            e.line_sha256 = Some(digest.hex());
            e.message_sha256 = e.line_sha256.clone();
            e.body_bytes = text.len() as u64;
        }
        "assistant.message" => fill_assistant(e, d, digest),
        "assistant.turn_end" => e.kind = EntryKind::TurnEnd,
        "session.error" => {
            e.kind = EntryKind::TurnEnd;
            e.api_error = true;
        }
        "abort" => e.kind = EntryKind::TurnAborted,
        _ => return Some(LineOutcome::Skipped),
    }
    None
}

/// A main-agent `assistant.message`: its text's size and digest, whether it calls tools, its
/// model and the model call it came from (`apiCallId`).
fn fill_assistant(e: &mut EntrySummary, d: &Data<'_>, digest: &LineDigest<'_>) {
    let text = d.content.as_deref().unwrap_or_default();
    e.kind = EntryKind::Message;
    e.role = Some(role::ASSISTANT.to_owned());
    e.line_sha256 = Some(digest.hex());
    e.message_sha256 = e.line_sha256.clone();
    e.has_tool_call = d.tool_requests.as_ref().is_some_and(|t| !t.is_empty());
    e.model = d.model.as_deref().map(str::to_owned);
    e.call_id = d.api_call_id.as_deref().map(str::to_owned);
    e.body_bytes = text.len() as u64;
    e.text_bytes = text.len() as u64;
    e.text_sha256 = Some(runread_core::sha256_hex(text.as_bytes()));
}

/// A `session.usage_record` (the main agent's or a subagent's: both are the run's usage): its
/// tokens, model, model call and — the main agent's only — how the call ended; skipped without
/// usage.
fn fill_usage(e: &mut EntrySummary, raw: &RawLine<'_>) -> Option<LineOutcome> {
    let Some(u) = raw.data.usage.as_ref() else {
        return Some(LineOutcome::Skipped);
    };
    let Some(tokens) = crate::model::Tokens::from_json(u, crate::usage::COPILOT_NAMES) else {
        return Some(LineOutcome::Skipped);
    };
    let field = |k: &str| u.get(k).and_then(|m| m.as_str()).map(str::to_owned);
    e.usage = Some(tokens);
    e.model = field("model");
    e.call_id = field("apiCallId");
    // A subagent's call is counted in the run's usage, but its end is not the run's.
    if !raw.subagents() && field("initiator").as_deref() != Some("sub-agent") {
        e.stop_reason = field("finishReason");
    }
    None
}

/// What a reader may be shown of `line` (read back when served): a prompt, a main-agent message
/// (its text, the names of the tools it called), or the session's `session.start` (cwd, CLI
/// version). `None` for any other line, and for a subagent's.
pub fn message_view(line: &[u8]) -> Option<MessageView> {
    let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
    let d = &raw.data;
    match raw.kind.as_ref() {
        "session.start" => Some(MessageView {
            role: "session".to_owned(),
            cwd: d
                .context
                .as_ref()
                .and_then(|c| c.cwd.as_deref())
                .map(str::to_owned),
            agent_version: d.copilot_version.as_deref().map(str::to_owned),
            ..MessageView::default()
        }),
        _ if raw.subagents() => None,
        "user.message" => Some(MessageView {
            role: role::USER.to_owned(),
            body: d.content.as_deref()?.to_owned(),
            ..MessageView::default()
        }),
        "assistant.message" => {
            let body = d.content.as_deref().unwrap_or_default().to_owned();
            let tool_calls: Vec<String> = d
                .tool_requests
                .iter()
                .flatten()
                .map(|t| t.name.as_deref().unwrap_or_default().to_owned())
                .collect();
            Some(MessageView {
                role: role::ASSISTANT.to_owned(),
                answer: tool_calls.is_empty().then(|| body.clone()),
                body,
                tool_calls,
                ..MessageView::default()
            })
        }
        _ => None,
    }
}

/// Reads the complete lines of `file` from where `resume` says (as [`crate::pi::scan`] does).
/// The first line, `session.start`, is the header and an entry.
pub fn scan(file: &EvidenceFile, resume: Resume<'_>, ahead: ReadAhead) -> Result<Scan, ScanError> {
    crate::scan::scan_lines(
        file,
        resume,
        FirstLine {
            max_bytes: EVIDENCE_LINE_MAX_BYTES,
            parse: parse_first_line,
            is_entry: true,
        },
        parse_line,
        ahead,
    )
}

/// The `task` calls (their `toolCallId`s) the main agent's message `line` makes; none for any
/// other line.
pub fn subagent_calls(line: &[u8]) -> Vec<String> {
    let Ok(raw) = serde_json::from_slice::<RawLine<'_>>(line) else {
        return Vec::new();
    };
    if raw.kind != "assistant.message" || raw.subagents() {
        return Vec::new();
    }
    raw.data
        .tool_requests
        .iter()
        .flatten()
        .filter(|t| t.name.as_deref() == Some(SUBAGENT_TOOL))
        .filter_map(|t| t.tool_call_id.as_deref())
        .filter(|id| runread_core::target::is_id(id))
        .map(str::to_owned)
        .collect()
}

/// The record each of `calls` (`task` calls' ids) left in the session file at `session_file`
/// (read link-safely, within the evidence bounds): started (`subagent.started`), finished
/// (`subagent.completed` or `subagent.failed`). `None` for a call with no `subagent.started`, and
/// for every call when the file cannot be read.
pub fn subagent_records(session_file: &Path, calls: &[String]) -> Vec<Option<ChildRecord>> {
    let mut found: Vec<Option<ChildRecord>> = vec![None; calls.len()];
    let Ok(file) = EvidenceFile::open(session_file, None) else {
        return found;
    };
    let mut lines = file.lines(0, EVIDENCE_LINE_MAX_BYTES);
    let mut read = 0u64;
    while read < EVIDENCE_FILE_MAX_LINES {
        let bytes = match lines.next() {
            Ok(Some(Line::Complete { bytes, .. })) => bytes,
            Ok(Some(Line::Oversize { .. })) => {
                read += 1;
                continue;
            }
            Ok(None) | Err(_) => break,
        };
        read += 1;
        let Ok(raw) = serde_json::from_slice::<RawLine<'_>>(bytes) else {
            continue;
        };
        let finished = match raw.kind.as_ref() {
            "subagent.started" => false,
            "subagent.completed" | "subagent.failed" => true,
            _ => continue,
        };
        let Some(call) = raw.data.tool_call_id.as_deref() else {
            continue;
        };
        for (c, slot) in calls.iter().zip(found.iter_mut()) {
            if c == call {
                let was = slot.is_some_and(|r| r.finished);
                *slot = Some(ChildRecord {
                    finished: was || finished,
                    transcript_modified_ns: None,
                });
            }
        }
    }
    found
}

// ---- runs ----

/// Cuts `entries` (in file order) into runs, one per prompt, in file order.
///
/// `malformed_lines` taint the run open at that point of the file; `torn_tail` taints the last; a
/// line of a type runread does not know makes the run it falls in `unknown`.
pub fn cut_runs(entries: &[EntrySummary], malformed_lines: &[u64], torn_tail: bool) -> Branch {
    let starts: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EntryKind::Message && e.role.as_deref() == Some(role::USER))
        .map(|(i, _)| i)
        .collect();
    let messages: Vec<&EntrySummary> = entries
        .iter()
        .skip(starts.first().copied().unwrap_or(entries.len()))
        .filter(|e| e.kind == EntryKind::Message)
        .collect();
    let count = starts.len();
    let mut runs = Vec::with_capacity(count);
    let mut why_unknown = Vec::with_capacity(count);
    let mut before = 0usize;
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(entries.len());
        let span = entries.get(start..end).unwrap_or(&[]);
        let (mut run, why) = run_of(span, n + 1 == count);
        let events = run.message_lines.len();
        why_unknown.push(why);
        run.first_sequence = before as u64 + FIRST_SEQUENCE;
        crate::runs::set_contexts(&mut run, &messages, before, events);
        before += events;
        runs.push(run);
    }
    let mut branch = in_order_branch(entries, runs, why_unknown, malformed_lines, torn_tail);
    branch.saved_model = entries
        .iter()
        .rev()
        .filter(|e| e.kind == EntryKind::ModelChange)
        .find_map(|e| e.model.clone());
    branch
}

/// One run: `span` is its entries from its prompt to the next prompt (file order); `last_run`: no
/// run follows. With it, why the file cannot say how the run stands, for [`cut_runs`] to mark once
/// a bad line's reason is given.
fn run_of(span: &[EntrySummary], last_run: bool) -> (Run, Option<&'static str>) {
    let Some(prompt) = span.first() else {
        return (Run::running(String::new()), Some(NO_END));
    };
    let events: Vec<&EntrySummary> = span
        .iter()
        .filter(|e| e.kind == EntryKind::Message)
        .collect();
    let mut run = Run {
        start_line: prompt.line,
        end_line: span.last().map_or(prompt.line, |e| e.line),
        started_at: prompt.timestamp.clone(),
        message_lines: events.iter().map(|e| e.line).collect(),
        prompt_line: prompt.line_ref(),
        ..Run::running(prompt.id.clone())
    };
    for e in &events {
        if let Some(m) = &e.model
            && !run.run_models.contains(m)
        {
            run.run_models.push(m.clone());
        }
    }
    // An interrupt, else an error, ends the run whatever else it holds.
    let aborted = span.iter().find(|e| e.kind == EntryKind::TurnAborted);
    let failed = span
        .iter()
        .find(|e| e.kind == EntryKind::TurnEnd && e.api_error);
    if let Some((end, status)) = aborted
        .map(|e| (e, RunStatus::Cancelled))
        .or(failed.map(|e| (e, RunStatus::Failed)))
    {
        run.status = status;
        run.ended_at = end.timestamp.clone();
        return (run, None);
    }
    let last = events.last().copied();
    let answer = last.filter(|m| m.role.as_deref() == Some(role::ASSISTANT) && !m.has_tool_call);
    let Some(m) = answer else {
        if last_run {
            run.waiting_on_tool = last.is_some_and(|e| e.has_tool_call);
            return (run, None);
        }
        return (run, Some(NO_END));
    };
    keep_candidate(&mut run, &events, m);
    answered(run, span, m, last_run)
}

/// The run whose last event is `m`, a main-agent message without tool requests (its candidate
/// kept): `completed` once its `assistant.turn_end` is written and no call of the run ended on
/// `length`; otherwise why the file cannot say, or running (`None`) while it is the last run.
fn answered(
    mut run: Run,
    span: &[EntrySummary],
    m: &EntrySummary,
    last_run: bool,
) -> (Run, Option<&'static str>) {
    let turn_end = span
        .iter()
        .find(|e| e.kind == EntryKind::TurnEnd && !e.api_error && e.line > m.line);
    let Some(turn_end) = turn_end else {
        return (run, (!last_run).then_some(NO_END));
    };
    run.ended_at = turn_end.timestamp.clone();
    // The model calls of the run (main agent's) that ended on the length limit.
    let cut: Vec<&EntrySummary> = span
        .iter()
        .filter(|e| e.usage.is_some() && e.stop_reason.as_deref() == Some("length"))
        .collect();
    if cut
        .iter()
        .any(|c| c.call_id.is_some() && c.call_id == m.call_id)
    {
        run.final_truncated = true;
        return (run, Some(CUT_AT_LENGTH));
    }
    if !cut.is_empty() {
        return (run, Some(CONTINUED_AFTER_LENGTH));
    }
    run.status = RunStatus::Completed;
    (run, None)
}

/// The main agent's message `m`, the run's last event: the run's answer (proven once
/// [`answered`] says so), its line, size and digest, and the chain of the run's events up to it.
fn keep_candidate(run: &mut Run, events: &[&EntrySummary], m: &EntrySummary) {
    run.final_lines = m.line_ref().into_iter().collect();
    run.final_bytes = m.text_bytes;
    run.final_text_sha256 = m.text_sha256.clone();
    run.final_entry_id = Some(m.id.clone());
    run.final_message_sha256 = m.message_sha256.clone();
    let upto: Vec<&str> = events
        .iter()
        .filter(|e| e.line <= m.line)
        .map(|e| e.id.as_str())
        .collect();
    run.chain_len = upto.len() as u64;
    run.chain_sha256 = Some(runread_core::sha256_hex(upto.join("\n").as_bytes()));
}

#[cfg(test)]
mod tests;
