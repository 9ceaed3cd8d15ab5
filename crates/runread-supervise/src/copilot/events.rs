//! Copilot CLI's `--output-format json` event stream, as far as supervision needs it
//! (`../shared/harness/FORMATS.md`, Copilot CLI 1.0.102; the recordings in
//! `fixtures/copilot/1.0.102/*/events-N.jsonl` are the ground truth).
//!
//! One line, one event: the session file's own events (same `id`s), the ephemeral ones besides,
//! and a last `result` naming the session (`sessionId`) and the exit code. A subagent's events
//! carry an `agentId`: they are not the main agent's answer. `user.message` is the prompt,
//! `assistant.message` a response of the model (with `toolRequests` when it calls tools),
//! `tool.execution_start`/`_complete` a tool call, `session.error` a failure, `abort` an
//! interrupt.
//!
//! Unknown fields are skipped; an event of a type runread does not know
//! ([`CopilotEvent::Unknown`]) leaves the run it falls in without an answer; a line that is not a
//! JSON object with a `type`, or a known event without what defines it, is a fault.

use serde_json::Value;

pub use crate::stream::Fault;
use crate::stream::{one_line, str_of};

/// Longest tool name or message kept for the terminal (in characters).
pub const DETAIL_MAX_CHARS: usize = 120;

/// Every other event type Copilot CLI 1.0.102 writes on its stream: read, and nothing to the
/// supervision.
pub const KNOWN_OTHER: &[&str] = &[
    "session.start",
    "session.resume",
    "session.skills_loaded",
    "session.mcp_servers_loaded",
    "session.tools_updated",
    "session.background_tasks_changed",
    "session.info",
    "session.warning",
    "session.model_change",
    "session.usage_record",
    "session.shutdown",
    "system.message",
    "assistant.turn_retry",
    "assistant.message_start",
    "assistant.reasoning",
    "assistant.reasoning_delta",
    "assistant.tool_call_delta",
    "assistant.idle",
    "assistant.usage",
    "model.call_start",
    "model.call_final_result",
    "model.call_failure",
    "agent.interrupted",
    "tool.shell_output",
    "tool.execution_partial_result",
    "subagent.started",
    "subagent.configured",
    "subagent.completed",
    "subagent.failed",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopilotEvent {
    /// The prompt (its event id: the file's).
    User {
        id: String,
    },
    /// A piece of the model's text, for the terminal.
    Delta {
        text: String,
    },
    /// A response of the main agent: its event id, its text, whether it calls tools.
    Message {
        id: String,
        text: String,
        tools: bool,
    },
    ToolStart {
        id: String,
        name: String,
    },
    ToolEnd {
        id: String,
        failed: bool,
    },
    /// `session.error`.
    Error {
        message: String,
    },
    /// `abort`: the run was interrupted.
    Abort,
    /// The invocation's end: its session and exit code.
    Result {
        session_id: String,
        exit_code: i64,
    },
    /// A turn of the main agent began (`assistant.turn_start`).
    TurnStart,
    /// A turn of the main agent ended (`assistant.turn_end`).
    TurnEnd,
    /// A model call of the main agent ended (`model.call_finished`), with `outcome` `success`
    /// or not.
    CallFinished {
        success: bool,
    },
    /// A subagent's event, or a known event of no weight here.
    Other,
    /// An event of a type runread does not know.
    Unknown,
}

fn data(v: &Value) -> Option<&Value> {
    v.get("data").filter(|d| d.is_object())
}

fn id_of(v: &Value) -> Result<String, Fault> {
    Ok(str_of(v, "id").ok_or(Fault)?.to_owned())
}

/// Parses one line of the stream.
pub fn parse(line: &[u8]) -> Result<CopilotEvent, Fault> {
    let v: Value = serde_json::from_slice(line).map_err(|_| Fault)?;
    if !v.is_object() {
        return Err(Fault);
    }
    let kind = str_of(&v, "type").ok_or(Fault)?;
    // A subagent's event: its own `agentId`, or its content under the tool call that runs it.
    let sub = v.get("agentId").is_some_and(|a| !a.is_null())
        || v.get("data")
            .and_then(|d| d.get("parentToolCallId"))
            .is_some_and(|p| !p.is_null());
    if kind == "result" {
        let id = str_of(&v, "sessionId").ok_or(Fault)?;
        if !runread_core::target::is_id(id) {
            return Err(Fault);
        }
        return Ok(CopilotEvent::Result {
            session_id: id.to_owned(),
            exit_code: v.get("exitCode").and_then(Value::as_i64).ok_or(Fault)?,
        });
    }
    let known = matches!(
        kind,
        "user.message"
            | "assistant.message_delta"
            | "assistant.message"
            | "tool.execution_start"
            | "tool.execution_complete"
            | "session.error"
            | "abort"
            | "assistant.turn_start"
            | "assistant.turn_end"
            | "model.call_finished"
    ) || KNOWN_OTHER.contains(&kind);
    if !known {
        return Ok(CopilotEvent::Unknown);
    }
    if sub {
        return Ok(CopilotEvent::Other);
    }
    main_agent(kind, &v)
}

/// A known event of the main agent, of type `kind`.
fn main_agent(kind: &str, v: &Value) -> Result<CopilotEvent, Fault> {
    let d = data(v);
    Ok(match kind {
        "user.message" => CopilotEvent::User { id: id_of(v)? },
        "assistant.message_delta" => CopilotEvent::Delta {
            text: d
                .and_then(|d| str_of(d, "deltaContent"))
                .unwrap_or("")
                .to_owned(),
        },
        "assistant.message" => {
            let d = d.ok_or(Fault)?;
            CopilotEvent::Message {
                id: id_of(v)?,
                text: str_of(d, "content").ok_or(Fault)?.to_owned(),
                tools: d
                    .get("toolRequests")
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty()),
            }
        }
        "tool.execution_start" => {
            let d = d.ok_or(Fault)?;
            CopilotEvent::ToolStart {
                id: str_of(d, "toolCallId").ok_or(Fault)?.to_owned(),
                name: one_line(str_of(d, "toolName").unwrap_or(""), DETAIL_MAX_CHARS),
            }
        }
        "tool.execution_complete" => {
            let d = d.ok_or(Fault)?;
            CopilotEvent::ToolEnd {
                id: str_of(d, "toolCallId").ok_or(Fault)?.to_owned(),
                failed: d.get("success").and_then(Value::as_bool) != Some(true),
            }
        }
        "session.error" => CopilotEvent::Error {
            message: one_line(
                d.and_then(|d| str_of(d, "message")).unwrap_or(""),
                DETAIL_MAX_CHARS,
            ),
        },
        "abort" => CopilotEvent::Abort,
        "assistant.turn_start" => CopilotEvent::TurnStart,
        "assistant.turn_end" => CopilotEvent::TurnEnd,
        "model.call_finished" => CopilotEvent::CallFinished {
            success: d.and_then(|d| str_of(d, "outcome")) == Some("success"),
        },
        _ => CopilotEvent::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_and_an_unknown_type_told() {
        assert_eq!(
            parse(br#"{"type":"user.message","data":{"content":"hi"},"id":"u1"}"#),
            Ok(CopilotEvent::User { id: "u1".into() })
        );
        assert_eq!(parse(br#"{"type":"user.message","data":{}}"#), Err(Fault));
        assert_eq!(
            parse(br#"{"type":"assistant.message","data":{"content":"ok","toolRequests":[]},"id":"m"}"#),
            Ok(CopilotEvent::Message {
                id: "m".into(),
                text: "ok".into(),
                tools: false
            })
        );
        assert_eq!(
            parse(br#"{"type":"assistant.message","data":{"content":"","toolRequests":[{}]},"id":"m"}"#),
            Ok(CopilotEvent::Message {
                id: "m".into(),
                text: String::new(),
                tools: true
            })
        );
        assert_eq!(
            parse(br#"{"type":"assistant.message","data":{"toolRequests":[]},"id":"m"}"#),
            Err(Fault)
        );
        // A subagent's message is not the main agent's.
        assert_eq!(
            parse(br#"{"type":"assistant.message","agentId":"a","data":{"content":"x"},"id":"m"}"#),
            Ok(CopilotEvent::Other)
        );
        assert_eq!(
            parse(
                br#"{"type":"tool.execution_complete","data":{"toolCallId":"c","success":false}}"#
            ),
            Ok(CopilotEvent::ToolEnd {
                id: "c".into(),
                failed: true
            })
        );
        assert_eq!(
            parse(br#"{"type":"result","sessionId":"6ad0b58e-6588-458d-8602-ed2726717502","exitCode":1}"#),
            Ok(CopilotEvent::Result {
                session_id: "6ad0b58e-6588-458d-8602-ed2726717502".into(),
                exit_code: 1
            })
        );
        assert_eq!(
            parse(br#"{"type":"result","sessionId":"../x","exitCode":0}"#),
            Err(Fault)
        );
        assert_eq!(
            parse(br#"{"type":"abort","data":{}}"#),
            Ok(CopilotEvent::Abort)
        );
        assert_eq!(
            parse(br#"{"type":"assistant.turn_end","data":{}}"#),
            Ok(CopilotEvent::TurnEnd)
        );
        assert_eq!(
            parse(br#"{"type":"model.call_finished","data":{"outcome":"cancelled"}}"#),
            Ok(CopilotEvent::CallFinished { success: false })
        );
        assert_eq!(
            parse(br#"{"type":"assistant.turn_end","agentId":"a","data":{}}"#),
            Ok(CopilotEvent::Other)
        );
        assert_eq!(
            parse(br#"{"type":"something.new","data":{}}"#),
            Ok(CopilotEvent::Unknown)
        );
        assert_eq!(
            parse(br#"{"type":"something.new","agentId":"a"}"#),
            Ok(CopilotEvent::Unknown)
        );
        assert_eq!(parse(b"[1]"), Err(Fault));
        assert_eq!(parse(b"{nope"), Err(Fault));
    }
}
