//! Codex CLI rollout files (`sessions/YYYY/MM/DD/rollout-…-<thread id>.jsonl`), line by line, as
//! the real Codex 0.171.0 writes them (`../shared/harness/FORMATS.md`; the committed fixtures in
//! `fixtures/codex/` are the ground truth).
//!
//! Every line is `{"timestamp","ordinal","type","payload"}`. The first is `session_meta`: the
//! thread id (the session), its cwd, the CLI version, the model provider and, for a fork, where
//! the inherited history ends in the parent's file. A run is one **turn**, grouped by `turn_id`
//! (never by position: lines of a turn can follow its `turn_aborted`): `task_started` opens it,
//! `turn_context` names its model and cwd, the `user` message whose content kinds say
//! `user.text` is its prompt, `task_complete` (an answer, or `null` with an error) or
//! `turn_aborted` ends it. A completed turn's final answer is `last_agent_message`, and it must
//! be the text of the turn's last assistant message — the line it is served from — or the run is
//! `unknown`.
//!
//! History shows prompts, assistant messages, interruption notes and the names of the tools the
//! model called (`function_call`, `custom_tool_call`, and the commands code mode's `exec` ran,
//! which Codex reports as `CommandExecution` items of their own); never reasoning, tool
//! arguments or tool outputs, which are skipped at ingest. What is not a conversation line
//! (token counts, world state, settings, instructions, the environment context) is skipped and
//! counted; a line of a type runread does not know is not: it makes the run it falls in `unknown`.
//! What runread relies on is checked strictly: a line must be a JSON object with a
//! `type` and an object `payload`; a turn's lines must name a valid turn id; a `turn_context`
//! must name the session's cwd; anything else is malformed and taints the run it touches.

mod profile;
pub(crate) use profile::PROFILE;
pub use profile::ROLLOUT_PREFIX;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde::de::IgnoredAny;

use runread_core::limits::EVIDENCE_LINE_MAX_BYTES;

use crate::content::{Content, text_len_of_kinds, text_of_kinds};
use crate::file::{EvidenceFile, Line};
use crate::model::{
    EntryKind, EntrySummary, ForkBase, Header, LineOutcome, MessageView, Resume, Scan, ScanError,
};
use crate::runs::{Branch, FIRST_SEQUENCE, Run, RunStatus, UNRECOGNISED_LINE, taint};
use crate::scan::{FirstLine, LineDigest, ReadAhead};

/// History roles of Codex events (what `read_history` reports as `role`).
pub mod role {
    /// A prompt: it starts a run.
    pub const USER: &str = "user";
    /// An assistant message, or a tool call (its name in `toolCalls`).
    pub const ASSISTANT: &str = "assistant";
    /// Codex's `<turn_aborted>` note.
    pub const INTERRUPT: &str = "interrupt";
}

/// The name a command code mode's `exec` ran is shown under: Codex's shell tool, which the
/// script calls as `tools.exec_command` (the item itself names no tool).
pub const NESTED_COMMAND_TOOL: &str = "exec_command";

/// Content kinds (`internal_chat_message_metadata_passthrough.content_item_kinds`) of a user
/// message that is a prompt, and of one that is an interruption note.
const PROMPT_KIND: &str = "user.text";
const TURN_ABORTED_KIND: &str = "generic.turn_aborted";
/// What the interruption note starts with (older rollouts name no content kinds).
const TURN_ABORTED_PREFIX: &str = "<turn_aborted>";
/// Block types of a message's text.
const TEXT_KINDS: &[&str] = &["input_text", "output_text"];

// ---- one line, as far as runread reads it ----

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    payload: Payload<'a>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    turn_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(borrow, default)]
    internal_chat_message_metadata_passthrough: Option<Passthrough<'a>>,
    #[serde(borrow, default)]
    last_agent_message: Option<Cow<'a, str>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(borrow, default)]
    item: Option<Item<'a>>,
    // `session_meta` and `turn_context`
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cli_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model_provider: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    forked_from_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    history_base: Option<HistoryBase<'a>>,
    /// `token_count`'s (read whole: a few numbers).
    #[serde(default)]
    info: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Passthrough<'a> {
    #[serde(borrow, default)]
    turn_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content_item_kinds: Option<Vec<Cow<'a, str>>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct HistoryBase<'a> {
    #[serde(borrow)]
    thread_id: Cow<'a, str>,
    end_ordinal_exclusive: u64,
    end_byte_offset: u64,
}

impl Payload<'_> {
    /// The turn the line belongs to: `turn_id` on events, the passthrough's on response items.
    fn turn(&self) -> Option<&str> {
        self.turn_id.as_deref().or_else(|| {
            self.internal_chat_message_metadata_passthrough
                .as_ref()?
                .turn_id
                .as_deref()
        })
    }

    fn content_kinds(&self) -> Option<&[Cow<'_, str>]> {
        self.internal_chat_message_metadata_passthrough
            .as_ref()?
            .content_item_kinds
            .as_deref()
    }
}

/// What a `response_item` `message` is to a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageRole {
    Prompt,
    Interrupt,
    Assistant,
    /// Instructions and context Codex injects (developer messages, the environment context):
    /// not part of the conversation a reader is shown.
    Injected,
}

fn message_role(p: &Payload<'_>) -> MessageRole {
    match p.role.as_deref() {
        Some("assistant") => MessageRole::Assistant,
        Some("user") => match p.content_kinds() {
            Some(kinds) if kinds.iter().any(|k| k == PROMPT_KIND) => MessageRole::Prompt,
            Some(kinds) if kinds.iter().any(|k| k == TURN_ABORTED_KIND) => MessageRole::Interrupt,
            Some(_) => MessageRole::Injected,
            None => {
                let text = text_of_kinds(p.content.as_ref(), TEXT_KINDS);
                if text.starts_with(TURN_ABORTED_PREFIX) {
                    MessageRole::Interrupt
                } else if text.starts_with('<') {
                    // `<environment_context>`, `<user_instructions>`: Codex's own.
                    MessageRole::Injected
                } else {
                    MessageRole::Prompt
                }
            }
        },
        _ => MessageRole::Injected,
    }
}

/// The session from the file's first line, `session_meta`; `None`: not a Codex rollout file.
pub fn parse_first_line(line: &[u8]) -> Option<Header> {
    let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
    if raw.kind != "session_meta" {
        return None;
    }
    let p = raw.payload;
    let session_id = p.id?;
    if !runread_core::target::is_id(&session_id) {
        return None;
    }
    let fork = match p.history_base {
        Some(base) if runread_core::target::is_id(&base.thread_id) => Some(ForkBase {
            parent_session_id: base.thread_id.into_owned(),
            end_ordinal_exclusive: base.end_ordinal_exclusive,
            end_byte_offset: base.end_byte_offset,
        }),
        // A fork that does not say where its history ends: its parent cannot be checked.
        Some(_) => return None,
        None => None,
    };
    Some(Header {
        session_id: session_id.into_owned(),
        version: 0,
        cwd: p.cwd.map(Cow::into_owned).unwrap_or_default(),
        timestamp: p.timestamp.or(raw.timestamp).map(Cow::into_owned),
        parent_session: p
            .forked_from_id
            .filter(|id| runread_core::target::is_id(id))
            .map(Cow::into_owned),
        line_sha256: runread_core::sha256_hex(line),
        line_bytes: line.len() as u64,
        fork,
        agent_version: p
            .cli_version
            .as_deref()
            .and_then(runread_core::agent::reportable_event_type)
            .map(str::to_owned),
    })
}

fn entry(line: &[u8], line_no: u64, offset: u64, timestamp: Option<&str>) -> EntrySummary {
    EntrySummary {
        timestamp: timestamp.map(str::to_owned),
        ..EntrySummary::at(line_no, offset, line.len() as u64, line_no.to_string())
    }
}

/// Parses one complete line (after the first) at 1-based `line_no`, starting at byte `offset`;
/// `digest` is the line's SHA-256 as the scan has it (taken ahead, or when asked:
/// [`LineDigest::of`]).
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
    let p = &raw.payload;
    if raw.kind == "session_meta" {
        return session_meta_again(header, p);
    }
    if raw.kind == "event_msg" && p.kind.as_deref() == Some("token_count") {
        return usage_entry(&raw, line, line_no, offset);
    }
    if !known_line(&raw) {
        return unrecognised(&raw, header, line, line_no, offset);
    }
    let Some(what) = entry_kind(&raw) else {
        return LineOutcome::Skipped;
    };
    let Some(turn) = p.turn().filter(|t| runread_core::target::is_id(t)) else {
        return LineOutcome::Malformed;
    };
    let mut e = entry(line, line_no, offset, raw.timestamp.as_deref());
    e.kind = what;
    e.turn = Some(turn.to_owned());
    if !fill_turn_entry(&mut e, header, p, digest) {
        return LineOutcome::Malformed;
    }
    LineOutcome::Entry(Box::new(e))
}

/// A `session_meta` line after the first: Codex writes it once, so the same session's again is
/// skipped, and another thread's in this file is not this session's.
fn session_meta_again(header: &Header, p: &Payload<'_>) -> LineOutcome {
    if p.id.as_deref() == Some(header.session_id.as_str()) {
        LineOutcome::Skipped
    } else {
        LineOutcome::Malformed
    }
}

/// A `token_count` event: an entry holding the session's running totals so far, or skipped
/// while there are none yet (`info` is null).
fn usage_entry(raw: &RawLine<'_>, line: &[u8], line_no: u64, offset: u64) -> LineOutcome {
    let Some(total) = raw
        .payload
        .info
        .as_ref()
        .and_then(|i| i.get("total_token_usage"))
        .and_then(|u| crate::model::Tokens::from_json(u, crate::usage::CODEX_NAMES))
    else {
        return LineOutcome::Skipped;
    };
    let mut e = entry(line, line_no, offset, raw.timestamp.as_deref());
    e.usage = Some(total);
    LineOutcome::Entry(Box::new(e))
}

/// Fills in what `e`, a line of a turn whose kind is set already, says of that turn; `false`:
/// the line is malformed.
fn fill_turn_entry(
    e: &mut EntrySummary,
    header: &Header,
    p: &Payload<'_>,
    digest: &LineDigest<'_>,
) -> bool {
    match e.kind {
        EntryKind::ModelChange => {
            // Another directory: never taken for this session's workspace.
            if p.cwd.as_deref() != Some(header.cwd.as_str()) {
                return false;
            }
            e.model = p.model.as_deref().map(str::to_owned);
        }
        EntryKind::TurnEnd => {
            if let Some(answer) = p.last_agent_message.as_deref() {
                e.text_bytes = answer.len() as u64;
                e.text_sha256 = Some(runread_core::sha256_hex(answer.as_bytes()));
            }
            e.api_error = p.error.is_some();
        }
        EntryKind::ToolExecution => {
            e.call_id = p
                .item
                .as_ref()
                .and_then(|i| i.id.as_deref())
                .map(str::to_owned);
            e.role = Some(role::ASSISTANT.to_owned());
            e.has_tool_call = true;
            e.line_sha256 = Some(digest.hex());
        }
        EntryKind::Message => {
            e.line_sha256 = Some(digest.hex());
            if matches!(
                p.kind.as_deref(),
                Some("function_call" | "custom_tool_call")
            ) {
                e.role = Some(role::ASSISTANT.to_owned());
                e.has_tool_call = true;
                e.call_id = p.call_id.as_deref().map(str::to_owned);
            } else {
                fill_message(e, p);
            }
        }
        _ => {}
    }
    true
}

/// Whether runread knows a line's type (and its payload's): every type Codex 0.171.0's rollouts
/// hold (the committed fixtures, `../shared/harness/FORMATS.md`). A line of another type could hold
/// what a turn is, so it is never passed over as bookkeeping ([`unrecognised`]).
fn known_line(raw: &RawLine<'_>) -> bool {
    match (raw.kind.as_ref(), raw.payload.kind.as_deref()) {
        ("session_meta" | "turn_context", _) => true,
        // Usage and world-state bookkeeping, no turn's.
        ("token_usage_record" | "world_state", _) => true,
        (
            "event_msg",
            Some(
                "task_started"
                | "task_complete"
                | "turn_aborted"
                | "item_completed"
                | "token_count"
                | "thread_settings_applied",
            ),
        ) => true,
        (
            "response_item",
            Some(
                "message"
                | "reasoning"
                | "function_call"
                | "function_call_output"
                | "custom_tool_call"
                | "custom_tool_call_output"
                | "additional_tools",
            ),
        ) => true,
        _ => false,
    }
}

/// A line of a type runread does not know: an entry of the turn it names (if it names one), which
/// makes that turn's run `unknown` ([`cut_runs`]); the log may name its type as
/// `type/payload type` and the CLI version the session's first line records.
fn unrecognised(
    raw: &RawLine<'_>,
    header: &Header,
    line: &[u8],
    line_no: u64,
    offset: u64,
) -> LineOutcome {
    let mut e = entry(line, line_no, offset, raw.timestamp.as_deref());
    e.kind = EntryKind::Unrecognised;
    e.turn = raw
        .payload
        .turn()
        .filter(|t| runread_core::target::is_id(t))
        .map(str::to_owned);
    let line_type = match raw.payload.kind.as_deref() {
        Some(inner) => format!("{}/{inner}", raw.kind),
        None => raw.kind.clone().into_owned(),
    };
    let seen =
        crate::model::Unrecognised::new(line_no, &line_type, header.agent_version.as_deref());
    LineOutcome::Unrecognised(Box::new(e), seen)
}

/// What kind of entry a line other than `session_meta` is; `None` for Codex's own bookkeeping.
fn entry_kind(raw: &RawLine<'_>) -> Option<EntryKind> {
    let p = &raw.payload;
    match (raw.kind.as_ref(), p.kind.as_deref()) {
        ("turn_context", _) => Some(EntryKind::ModelChange),
        ("event_msg", Some("task_started")) => Some(EntryKind::TurnStart),
        ("event_msg", Some("task_complete")) => Some(EntryKind::TurnEnd),
        ("event_msg", Some("turn_aborted")) => Some(EntryKind::TurnAborted),
        ("event_msg", Some("item_completed")) => p
            .item
            .as_ref()
            .filter(|i| i.kind.as_deref() == Some("CommandExecution"))
            .map(|_| EntryKind::ToolExecution),
        ("response_item", Some("message")) => {
            (message_role(p) != MessageRole::Injected).then_some(EntryKind::Message)
        }
        ("response_item", Some("function_call" | "custom_tool_call")) => Some(EntryKind::Message),
        _ => None,
    }
}

/// A `message` line's role and sizes: a prompt, an interrupt, or the model's text (with its
/// status as the stop reason); `e.line_sha256` is set already.
fn fill_message(e: &mut EntrySummary, p: &Payload<'_>) {
    let content = p.content.as_ref();
    e.body_bytes = text_len_of_kinds(content, TEXT_KINDS) as u64;
    match message_role(p) {
        MessageRole::Prompt => {
            e.role = Some(role::USER.to_owned());
            e.message_sha256 = e.line_sha256.clone();
        }
        MessageRole::Interrupt => e.role = Some(role::INTERRUPT.to_owned()),
        _ => {
            e.role = Some(role::ASSISTANT.to_owned());
            e.stop_reason = p.status.as_deref().map(str::to_owned);
            let text = text_of_kinds(content, TEXT_KINDS);
            e.text_bytes = text.len() as u64;
            e.text_sha256 = Some(runread_core::sha256_hex(text.as_bytes()));
            e.message_sha256 = e.line_sha256.clone();
        }
    }
}

/// What a reader may be shown of `line` (read back when served): a message, a tool call (its
/// name), a command code mode ran (under [`NESTED_COMMAND_TOOL`]), or the session's
/// `session_meta` (what it records about the session: cwd, CLI version, provider). `None` for
/// any other line.
pub fn message_view(line: &[u8]) -> Option<MessageView> {
    let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
    let p = &raw.payload;
    match (raw.kind.as_ref(), p.kind.as_deref()) {
        ("session_meta", _) => Some(MessageView {
            role: "session".to_owned(),
            cwd: p.cwd.as_deref().map(str::to_owned),
            agent_version: p.cli_version.as_deref().map(str::to_owned),
            provider: p.model_provider.as_deref().map(str::to_owned),
            ..MessageView::default()
        }),
        ("response_item", Some("message")) => {
            let content = p.content.as_ref();
            let body = text_of_kinds(content, TEXT_KINDS);
            let has_content = match content {
                Some(Content::Blocks(b)) => !b.is_empty(),
                Some(Content::Text(t)) => !t.is_empty(),
                _ => false,
            };
            let role = match message_role(p) {
                MessageRole::Prompt => role::USER,
                MessageRole::Interrupt => role::INTERRUPT,
                MessageRole::Assistant => role::ASSISTANT,
                MessageRole::Injected => return None,
            };
            Some(MessageView {
                role: role.to_owned(),
                body_unavailable: body.is_empty() && has_content,
                answer: (role == role::ASSISTANT).then(|| body.clone()),
                body,
                ..MessageView::default()
            })
        }
        ("response_item", Some("function_call" | "custom_tool_call")) => Some(MessageView {
            role: role::ASSISTANT.to_owned(),
            tool_calls: p.name.as_deref().map(str::to_owned).into_iter().collect(),
            ..MessageView::default()
        }),
        ("event_msg", Some("item_completed"))
            if p.item.as_ref().and_then(|i| i.kind.as_deref()) == Some("CommandExecution") =>
        {
            Some(MessageView {
                role: role::ASSISTANT.to_owned(),
                tool_calls: vec![NESTED_COMMAND_TOOL.to_owned()],
                ..MessageView::default()
            })
        }
        _ => None,
    }
}

/// Reads the complete lines of `file` from where `resume` says (as [`crate::pi::scan`] does).
/// The first line, `session_meta`, is the header.
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

/// Whether `parent` (the file of the session a fork names) still holds the history the fork
/// inherits: its first line is that session's `session_meta`, and the line ending at
/// `base.end_byte_offset` is its line `base.end_ordinal_exclusive - 1`.
pub fn holds_fork_base(parent: &EvidenceFile, base: &ForkBase) -> bool {
    #[derive(Deserialize)]
    struct Ordinal {
        ordinal: Option<u64>,
    }
    let mut first = parent.lines(0, EVIDENCE_LINE_MAX_BYTES);
    let Ok(Some(Line::Complete { bytes, .. })) = first.next() else {
        return false;
    };
    if parse_first_line(bytes).is_none_or(|h| h.session_id != base.parent_session_id) {
        return false;
    }
    let (Some(last), Some(end)) = (
        base.end_ordinal_exclusive.checked_sub(1),
        base.end_byte_offset.checked_sub(1),
    ) else {
        return false;
    };
    // The line before the base: found by reading forward from the start would read the whole
    // parent; its start is found by reading back from the base, at most one line's bound.
    let from = end.saturating_sub(EVIDENCE_LINE_MAX_BYTES as u64);
    let Ok(len) = usize::try_from(end - from + 1) else {
        return false;
    };
    let Ok(window) = parent.read_at(from, len) else {
        return false;
    };
    let Some((&b'\n', body)) = window.split_last() else {
        return false;
    };
    let line = match body.iter().rposition(|b| *b == b'\n') {
        Some(nl) => body.get(nl + 1..).unwrap_or(&[]),
        // No newline in the window: the line starts the file, or is longer than the bound.
        None if from == 0 => body,
        None => return false,
    };
    serde_json::from_slice::<Ordinal>(line).is_ok_and(|o| o.ordinal == Some(last))
}

// ---- runs ----

/// One turn's lines, in file order.
#[derive(Default)]
struct Turn<'e> {
    start: Option<&'e EntrySummary>,
    context: Option<&'e EntrySummary>,
    end: Option<&'e EntrySummary>,
    /// Prompts, assistant messages, tool calls, interruption notes, and commands that are events.
    events: Vec<&'e EntrySummary>,
    first_line: u64,
    last_line: u64,
}

/// Cuts `entries` (in file order) into runs, one per turn, in the order turns first appear.
///
/// `malformed_lines` taint the run open at that point of the file; `torn_tail` taints the last.
pub fn cut_runs(entries: &[EntrySummary], malformed_lines: &[u64], torn_tail: bool) -> Branch {
    let (order, mut turns) = group_turns(entries);
    drop_reported_calls(&mut turns);
    let saved_model = order
        .iter()
        .rev()
        .filter_map(|id| turns.get(id)?.context?.model.clone())
        .next();
    let mut runs = runs_in_order(&order, &turns);
    taint_unrecognised(&mut runs, entries, &turns);
    taint(&mut runs, malformed_lines, torn_tail);
    Branch {
        leaf_id: entries.last().map(|e| e.id.clone()),
        runs,
        complete: true,
        session_name: None,
        saved_model,
    }
}

/// Each line of a type runread does not know makes the run it falls in `unknown`: that of the turn
/// it names, wherever it falls (as every line of a turn); for one that names none, every turn open
/// at that point of the file (started before it, not ended before it). A line outside every turn
/// changes nothing.
fn taint_unrecognised(runs: &mut [Run], entries: &[EntrySummary], turns: &HashMap<&str, Turn<'_>>) {
    for e in entries.iter().filter(|e| e.kind == EntryKind::Unrecognised) {
        for run in runs.iter_mut() {
            let inside = match e.turn.as_deref() {
                Some(turn) => run.run_id == turn,
                None => turns.get(run.run_id.as_str()).is_some_and(|t| {
                    t.first_line < e.line && t.end.is_none_or(|end| e.line <= end.line)
                }),
            };
            if inside {
                run.mark_unknown(UNRECOGNISED_LINE);
            }
        }
    }
}

/// The turns of `entries` by turn id, and their ids in the order they first appear; a line
/// belongs to the turn it names, wherever it falls in the file. Lines of a type runread does not
/// know make no turn ([`taint_unrecognised`] finds theirs).
fn group_turns(entries: &[EntrySummary]) -> (Vec<&str>, HashMap<&str, Turn<'_>>) {
    let mut order: Vec<&str> = Vec::new();
    let mut turns: HashMap<&str, Turn<'_>> = HashMap::new();
    for e in entries {
        let Some(id) = e.turn.as_deref() else {
            continue;
        };
        if e.kind == EntryKind::Unrecognised {
            continue;
        }
        let t = turns.entry(id).or_insert_with(|| {
            order.push(id);
            Turn {
                first_line: e.line,
                ..Turn::default()
            }
        });
        t.last_line = e.line;
        match e.kind {
            EntryKind::TurnStart => {
                t.start.get_or_insert(e);
            }
            EntryKind::ModelChange => t.context = Some(e),
            EntryKind::TurnEnd | EntryKind::TurnAborted => {
                t.end.get_or_insert(e);
            }
            EntryKind::Message | EntryKind::ToolExecution => t.events.push(e),
            _ => {}
        }
    }
    (order, turns)
}

/// Drops from each turn's events the commands Codex reports of a call the model made: such a
/// command is that call, not an event of its own.
fn drop_reported_calls(turns: &mut HashMap<&str, Turn<'_>>) {
    for t in turns.values_mut() {
        let calls: HashSet<&str> = t
            .events
            .iter()
            .filter(|e| e.kind == EntryKind::Message)
            .filter_map(|e| e.call_id.as_deref())
            .collect();
        t.events.retain(|e| {
            e.kind != EntryKind::ToolExecution
                || e.call_id.as_deref().is_none_or(|c| !calls.contains(c))
        });
    }
}

/// The runs of the turns `order` names, numbered and given their context by the events of all
/// turns in run order (not file order).
fn runs_in_order(order: &[&str], turns: &HashMap<&str, Turn<'_>>) -> Vec<Run> {
    let messages: Vec<&EntrySummary> = order
        .iter()
        .filter_map(|id| turns.get(id))
        .flat_map(|t| t.events.iter().copied())
        .collect();
    let mut runs = Vec::new();
    let mut before = 0usize;
    for id in order {
        let Some(t) = turns.get(id) else { continue };
        let count = t.events.len();
        let mut run = run_of(id, t);
        run.first_sequence = before as u64 + FIRST_SEQUENCE;
        crate::runs::set_contexts(&mut run, &messages, before, count);
        before += count;
        runs.push(run);
    }
    runs
}

fn run_of(turn_id: &str, t: &Turn<'_>) -> Run {
    let prompt = t
        .events
        .iter()
        .find(|e| e.role.as_deref() == Some(role::USER))
        .copied();
    let mut run = Run {
        start_line: t.first_line,
        end_line: t.last_line,
        started_at: t.start.or(prompt).and_then(|e| e.timestamp.clone()),
        ended_at: t.end.and_then(|e| e.timestamp.clone()),
        run_models: t
            .context
            .and_then(|c| c.model.clone())
            .into_iter()
            .collect(),
        message_lines: t.events.iter().map(|e| e.line).collect(),
        prompt_line: prompt.and_then(|e| e.line_ref()),
        ..Run::running(turn_id.to_owned())
    };
    let Some(end) = t.end else {
        run.waiting_on_tool = t.events.last().is_some_and(|e| e.has_tool_call);
        return run;
    };
    if end.kind == EntryKind::TurnAborted {
        run.status = RunStatus::Cancelled;
        return run;
    }
    // The turn's last assistant message: the line its answer is served from.
    let last_message = t
        .events
        .iter()
        .rev()
        .find(|e| {
            e.kind == EntryKind::Message
                && e.role.as_deref() == Some(role::ASSISTANT)
                && !e.has_tool_call
        })
        .copied();
    match (&end.text_sha256, last_message) {
        (None, _) if end.api_error => run.status = RunStatus::Failed,
        (None, _) => run.mark_unknown("the turn ended without an answer or an error"),
        (Some(reported), Some(m)) if m.text_sha256.as_ref() == Some(reported) => {
            complete_with(&mut run, t, m)
        }
        (Some(_), _) => {
            run.mark_unknown("the reported answer is not the turn's last assistant message")
        }
    }
    run
}

/// The turn completed with `m`, the assistant message whose text its end reported: the run's
/// answer is `m`, and its chain the turn's lines from its start to `m`.
fn complete_with(run: &mut Run, t: &Turn<'_>, m: &EntrySummary) {
    run.status = RunStatus::Completed;
    run.final_lines = m.line_ref().into_iter().collect();
    run.final_bytes = m.text_bytes;
    run.final_text_sha256 = m.text_sha256.clone();
    run.final_entry_id = Some(m.id.clone());
    run.final_message_sha256 = m.message_sha256.clone();
    // The turn's lines from its start to the final message, by their ordinals' lines.
    let upto: Vec<String> = t
        .start
        .into_iter()
        .chain(t.events.iter().copied())
        .filter(|e| e.line <= m.line)
        .map(|e| e.id.clone())
        .collect();
    run.chain_len = upto.len() as u64;
    run.chain_sha256 = Some(runread_core::sha256_hex(upto.join("\n").as_bytes()));
}
