//! Claude Code's stream-json output (`claude -p … --output-format stream-json --verbose`), as far
//! as supervision needs it (`../shared/harness/FORMATS.md`; the recordings in `fixtures/claude/`
//! are the ground truth).
//!
//! One line, one event. `system`/`init` names the session and its cwd; `assistant` and `user`
//! events are the messages Claude Code also writes to the session file, with the same `uuid`s
//! (one content block per `assistant` event, as in the file); `result` ends the run (`is_error`,
//! `subtype`, `terminal_reason`, the answer in `result`). A subagent's messages carry the
//! `parent_tool_use_id` of the tool call that started it: they belong to the subagent's own
//! transcript, not to the run. Unknown fields and `system` subtypes are ignored; an event of a
//! type runread does not know ([`ClaudeEvent::Unknown`], a later Claude Code's) leaves the run it
//! falls in without an answer, as Pi's and Codex's do; a line that is not a JSON object with a
//! `type` is a fault that taints the run it falls in.

use serde_json::Value;

pub use crate::stream::Fault;
use crate::stream::{one_line, str_of};

/// `system`/`init`: the session Claude Code works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Init {
    pub session_id: String,
    pub cwd: String,
    pub version: Option<String>,
}

/// One content block of an `assistant` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        detail: String,
    },
    /// Thinking, or a block type runread does not read.
    Other,
}

/// What a `user` event is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserKind {
    /// Tool results: `(tool_use_id, is_error)` each.
    ToolResults(Vec<(String, bool)>),
    /// `[Request interrupted by user…]`.
    Interrupt,
    /// Anything else (Claude Code's own continuation prompts, a subagent's prompt).
    Other,
}

/// `result`: how Claude Code ended the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub subtype: String,
    pub is_error: bool,
    /// The final answer (or the error's text); absent when interrupted during a tool.
    pub result: Option<String>,
    pub stop_reason: Option<String>,
    pub terminal_reason: Option<String>,
}

impl Outcome {
    /// Claude Code reported an answer: success, no error.
    pub fn answered(&self) -> bool {
        self.subtype == "success" && !self.is_error
    }

    /// The run was stopped by the user (SIGINT during a tool).
    pub fn aborted(&self) -> bool {
        self.subtype == "error_during_execution"
            || self
                .terminal_reason
                .as_deref()
                .is_some_and(|r| r.starts_with("aborted"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaudeEvent {
    Init(Init),
    Assistant {
        uuid: String,
        /// `message.id`: the blocks of one response share it.
        message_id: Option<String>,
        /// Claude Code wrote it itself (`model: "<synthetic>"`): an API error, never an answer.
        synthetic: bool,
        /// The stream marks a failed model call (`error`: `server_error`, `max_output_tokens`, …).
        error: bool,
        blocks: Vec<Block>,
        /// Inside a subagent (`parent_tool_use_id` set): not a message of the run.
        sidechain: bool,
    },
    User {
        uuid: String,
        kind: UserKind,
        sidechain: bool,
    },
    /// `system`/`api_retry`: a failed request is being retried.
    Retry {
        attempt: u64,
        max: u64,
        error: String,
    },
    /// `system`/`status`: `compacting`, or back to normal.
    Status {
        compacting: bool,
    },
    /// `system`/`task_started` (a subagent started).
    TaskStarted {
        description: String,
    },
    Result(Outcome),
    /// A known shape carrying nothing supervision uses.
    Ignored,
    /// An event of a type runread does not know: what it did to the run cannot be told.
    Unknown,
}

/// The event types Claude Code's stream-json output declares besides the four runread reads
/// (`system`, `assistant`, `user`, `result`), as its 2.1.332 binary names them: partial messages
/// (`--include-partial-messages`), rate limits, progress and summaries, control and keep-alive
/// messages. None carries a message of the run or its end.
const IGNORED_TYPES: [&str; 10] = [
    "stream_event",
    "rate_limit_event",
    "tool_progress",
    "tool_use_summary",
    "prompt_suggestion",
    "auth_status",
    "keep_alive",
    "control_request",
    "control_response",
    "control_cancel_request",
];

/// A short, single-line description of a tool call's input for the terminal.
pub fn tool_detail(input: Option<&Value>) -> String {
    const MAX_CHARS: usize = 120;
    let raw = match input {
        Some(Value::Object(m)) => [
            "command",
            "file_path",
            "path",
            "pattern",
            "description",
            "url",
        ]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| Value::Object(m.clone()).to_string()),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    one_line(&raw, MAX_CHARS)
}

fn uuid_of(v: &Value) -> Result<String, Fault> {
    let u = str_of(v, "uuid").ok_or(Fault)?;
    if !runread_core::target::is_id(u) {
        return Err(Fault);
    }
    Ok(u.to_owned())
}

fn sidechain(v: &Value) -> bool {
    !matches!(v.get("parent_tool_use_id"), None | Some(Value::Null))
}

/// The text blocks of a message content (a string is its own text), joined by `\n` — as the
/// session reader joins a line's text blocks.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_of(b, "type") == Some("text"))
            .filter_map(|b| str_of(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Parses one line of the stream.
pub fn parse(line: &[u8]) -> Result<ClaudeEvent, Fault> {
    let v: Value = serde_json::from_slice(line).map_err(|_| Fault)?;
    let kind = str_of(&v, "type").ok_or(Fault)?;
    Ok(match kind {
        "system" => parse_system(&v)?,
        "assistant" => parse_assistant(&v)?,
        "user" => parse_user(&v)?,
        "result" => ClaudeEvent::Result(Outcome {
            subtype: str_of(&v, "subtype").unwrap_or("").to_owned(),
            is_error: v.get("is_error").and_then(Value::as_bool).ok_or(Fault)?,
            result: str_of(&v, "result").map(str::to_owned),
            stop_reason: str_of(&v, "stop_reason").map(str::to_owned),
            terminal_reason: str_of(&v, "terminal_reason").map(str::to_owned),
        }),
        k if IGNORED_TYPES.contains(&k) => ClaudeEvent::Ignored,
        _ => ClaudeEvent::Unknown,
    })
}

/// A `system` line: the session's start, a retry, a status change or a subagent's start.
fn parse_system(v: &Value) -> Result<ClaudeEvent, Fault> {
    Ok(match str_of(v, "subtype") {
        Some("init") => ClaudeEvent::Init(Init {
            session_id: str_of(v, "session_id").ok_or(Fault)?.to_owned(),
            cwd: str_of(v, "cwd").ok_or(Fault)?.to_owned(),
            version: str_of(v, "claude_code_version").map(str::to_owned),
        }),
        Some("api_retry") => ClaudeEvent::Retry {
            attempt: v.get("attempt").and_then(Value::as_u64).unwrap_or(0),
            max: v.get("max_retries").and_then(Value::as_u64).unwrap_or(0),
            error: match (
                v.get("error_status").and_then(Value::as_u64),
                str_of(v, "error"),
            ) {
                (Some(s), Some(e)) => format!("{s} {e}"),
                (Some(s), None) => s.to_string(),
                (None, e) => e.unwrap_or("").to_owned(),
            },
        },
        Some("status") => ClaudeEvent::Status {
            compacting: str_of(v, "status") == Some("compacting"),
        },
        Some("task_started") => ClaudeEvent::TaskStarted {
            description: tool_detail(v.get("description")),
        },
        _ => ClaudeEvent::Ignored,
    })
}

/// An `assistant` line: its text and tool-use blocks, and whether it is the run's own.
fn parse_assistant(v: &Value) -> Result<ClaudeEvent, Fault> {
    let message = v.get("message").ok_or(Fault)?;
    let blocks = match message.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match str_of(b, "type") {
                Some("text") => Block::Text(str_of(b, "text").unwrap_or("").to_owned()),
                Some("tool_use") => Block::ToolUse {
                    id: str_of(b, "id").unwrap_or("").to_owned(),
                    name: str_of(b, "name").unwrap_or("tool").to_owned(),
                    detail: tool_detail(b.get("input")),
                },
                _ => Block::Other,
            })
            .collect(),
        Some(Value::String(s)) => vec![Block::Text(s.clone())],
        _ => Vec::new(),
    };
    Ok(ClaudeEvent::Assistant {
        uuid: uuid_of(v)?,
        message_id: str_of(message, "id").map(str::to_owned),
        synthetic: str_of(message, "model") == Some(runread_sessions::claude::SYNTHETIC_MODEL),
        error: !matches!(v.get("error"), None | Some(Value::Null)),
        blocks,
        sidechain: sidechain(v),
    })
}

/// A `user` line: tool results, an interruption, or another prompt.
fn parse_user(v: &Value) -> Result<ClaudeEvent, Fault> {
    let message = v.get("message").ok_or(Fault)?;
    let content = message.get("content");
    let results: Vec<(String, bool)> = match content {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_of(b, "type") == Some("tool_result"))
            .map(|b| {
                (
                    str_of(b, "tool_use_id").unwrap_or("").to_owned(),
                    b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    let kind = if !results.is_empty() {
        UserKind::ToolResults(results)
    } else if content_text(content).starts_with(runread_sessions::claude::INTERRUPT_MARKER_PREFIX) {
        UserKind::Interrupt
    } else {
        UserKind::Other
    };
    Ok(ClaudeEvent::User {
        uuid: uuid_of(v)?,
        kind,
        sidechain: sidechain(v),
    })
}
