//! Pi's JSON event stream (`pi --mode json`), as far as supervision needs it.
//!
//! One line, one event. Only the shapes runread relies on are read. The event types Pi documents
//! that carry nothing supervision uses ([`IGNORED_TYPES`]) are ignored; a type outside them (a
//! later Pi's) is [`Event::Unknown`], which leaves the run it falls in without an answer; a line
//! that is not a JSON object is a fault that taints the run it falls in.

pub use crate::stream::Fault;
use crate::stream::{one_line, str_of};
use serde_json::Value;

use runread_sessions::pi::{join_text_blocks, message_sha256};

/// The event types of Pi's JSON stream (docs/json.md, 0.73 to 1.6) that carry nothing
/// supervision reads: turns, message starts (any role: 1.x starts `system` messages too), tool
/// progress, session-state changes (1.x: `entry_appended`, `session_info_changed`,
/// `thinking_level_changed`), summarization retries, and RPC mode's own records (`response`,
/// `extension_error`, `bash_execution_update`).
pub const IGNORED_TYPES: &[&str] = &[
    "turn_start",
    "turn_end",
    "message_start",
    "tool_execution_update",
    "entry_appended",
    "session_info_changed",
    "thinking_level_changed",
    "summarization_retry_scheduled",
    "summarization_retry_attempt_start",
    "summarization_retry_finished",
    "response",
    "extension_error",
    "bash_execution_update",
];

/// The first line of the stream: the session Pi works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHeader {
    pub session_id: String,
    pub cwd: String,
    pub version: u64,
}

/// An assistant message that can be a run's final answer: stopped (`stop`, or `length`:
/// truncated), no tool call; its text blocks only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub message_sha256: String,
    pub text: String,
    pub text_sha256: String,
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Header(StreamHeader),
    AgentStart,
    /// The agent loop ended; `last_stop` is the stop reason of its last assistant message.
    /// `will_retry` (1.x): Pi goes on with the same prompt (a retry, an overflow recovery).
    AgentEnd {
        last_stop: Option<String>,
        will_retry: bool,
    },
    /// A later Pi's "nothing more will happen for this prompt".
    AgentSettled,
    UserMessage {
        message_sha256: String,
    },
    AssistantMessage {
        stop: Option<String>,
        candidate: Option<Candidate>,
    },
    OtherMessageEnd,
    TextDelta(String),
    ToolStart {
        id: String,
        name: String,
        detail: String,
    },
    ToolEnd {
        id: String,
        name: String,
        is_error: bool,
    },
    RetryStart {
        attempt: u64,
        max: u64,
        error: String,
    },
    RetryEnd {
        success: bool,
    },
    CompactionStart,
    CompactionEnd {
        will_retry: bool,
    },
    Queue {
        pending: usize,
    },
    /// A known shape carrying nothing supervision uses ([`IGNORED_TYPES`], a `message_update`
    /// other than a text delta).
    Ignored,
    /// An event of a type runread does not know: the run it falls in gives no answer.
    Unknown,
}

fn candidate_of(message: &Value) -> Option<Candidate> {
    let stop = str_of(message, "stopReason")?;
    let blocks = message.get("content")?.as_array()?;
    let has_tool_call = blocks.iter().any(|b| str_of(b, "type") == Some("toolCall"));
    if has_tool_call || !matches!(stop, "stop" | "length") {
        return None;
    }
    let text = join_text_blocks(blocks);
    Some(Candidate {
        message_sha256: message_sha256(message),
        text_sha256: runread_core::sha256_hex(text.as_bytes()),
        text,
        truncated: stop == "length",
    })
}

/// A short, single-line description of a tool call's arguments for the terminal.
fn tool_detail(args: Option<&Value>) -> String {
    const MAX_CHARS: usize = 120;
    let raw = match args {
        Some(Value::Object(m)) => m
            .get("command")
            .or_else(|| m.get("path"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| Value::Object(m.clone()).to_string()),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    one_line(&raw, MAX_CHARS)
}

/// Parses one line of the stream.
pub fn parse(line: &[u8]) -> Result<Event, Fault> {
    let v: Value = serde_json::from_slice(line).map_err(|_| Fault)?;
    let kind = str_of(&v, "type").ok_or(Fault)?;
    Ok(match kind {
        "session" => header_of(&v)?,
        "agent_start" => Event::AgentStart,
        "agent_end" => agent_end_of(&v)?,
        "agent_settled" => Event::AgentSettled,
        "message_end" => message_end_of(&v)?,
        "message_update" => message_update_of(&v),
        "tool_execution_start" => Event::ToolStart {
            id: tool_call_id(&v)?,
            name: tool_name(&v),
            detail: tool_detail(v.get("args")),
        },
        "tool_execution_end" => Event::ToolEnd {
            id: tool_call_id(&v)?,
            name: tool_name(&v),
            is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
        },
        "auto_retry_start" => Event::RetryStart {
            attempt: v.get("attempt").and_then(Value::as_u64).unwrap_or(0),
            max: v.get("maxAttempts").and_then(Value::as_u64).unwrap_or(0),
            error: str_of(&v, "errorMessage").unwrap_or("").to_owned(),
        },
        "auto_retry_end" => Event::RetryEnd {
            success: v.get("success").and_then(Value::as_bool).unwrap_or(false),
        },
        "compaction_start" => Event::CompactionStart,
        "compaction_end" => Event::CompactionEnd {
            will_retry: v.get("willRetry").and_then(Value::as_bool).unwrap_or(false),
        },
        "queue_update" => {
            let count = |k: &str| v.get(k).and_then(Value::as_array).map_or(0, Vec::len);
            Event::Queue {
                pending: count("steering") + count("followUp"),
            }
        }
        other if IGNORED_TYPES.contains(&other) => Event::Ignored,
        _ => Event::Unknown,
    })
}

/// `session`: the header, which must name the session and its cwd (a Pi without `version` is
/// version 1).
fn header_of(v: &Value) -> Result<Event, Fault> {
    Ok(Event::Header(StreamHeader {
        session_id: str_of(v, "id").ok_or(Fault)?.to_owned(),
        cwd: str_of(v, "cwd").ok_or(Fault)?.to_owned(),
        version: v.get("version").and_then(Value::as_u64).unwrap_or(1),
    }))
}

/// `agent_end`: the stop reason of the loop's last assistant message; its messages must be a
/// list.
fn agent_end_of(v: &Value) -> Result<Event, Fault> {
    let messages = v.get("messages").and_then(Value::as_array).ok_or(Fault)?;
    let last_stop = messages
        .iter()
        .rev()
        .find(|m| str_of(m, "role") == Some("assistant"))
        .and_then(|m| str_of(m, "stopReason"))
        .map(str::to_owned);
    Ok(Event::AgentEnd {
        last_stop,
        will_retry: v.get("willRetry").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// `message_end`: a prompt, an assistant message (a candidate answer, if it can be one), or
/// another role's; a message without a role is a fault.
fn message_end_of(v: &Value) -> Result<Event, Fault> {
    let message = v.get("message").ok_or(Fault)?;
    Ok(match str_of(message, "role") {
        Some("user") => Event::UserMessage {
            message_sha256: message_sha256(message),
        },
        Some("assistant") => Event::AssistantMessage {
            stop: str_of(message, "stopReason").map(str::to_owned),
            candidate: candidate_of(message),
        },
        Some(_) => Event::OtherMessageEnd,
        None => return Err(Fault),
    })
}

/// `message_update`: only a text delta is shown (on the terminal); any other update is ignored.
fn message_update_of(v: &Value) -> Event {
    let e = v.get("assistantMessageEvent");
    match e.and_then(|e| str_of(e, "type")) {
        Some("text_delta") => {
            Event::TextDelta(e.and_then(|e| str_of(e, "delta")).unwrap_or("").to_owned())
        }
        _ => Event::Ignored,
    }
}

/// The id a tool event must carry: what pairs its start with its end.
fn tool_call_id(v: &Value) -> Result<String, Fault> {
    Ok(str_of(v, "toolCallId").ok_or(Fault)?.to_owned())
}

/// The tool a tool event names, `tool` when it names none (only shown on the terminal).
fn tool_name(v: &Value) -> String {
    str_of(v, "toolName").unwrap_or("tool").to_owned()
}
