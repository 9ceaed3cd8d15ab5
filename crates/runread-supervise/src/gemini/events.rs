//! Gemini CLI's `--output-format stream-json` event stream, as far as supervision needs it
//! (`../shared/harness/FORMATS.md`, section "Gemini CLI 0.61.0"; the recordings in
//! `fixtures/gemini/0.61.0/*/events-N.jsonl` are the ground truth).
//!
//! One line, one event. `init` names the session (the chat file's `sessionId`) and the model; a
//! `message` of role `user` is the prompt, of role `assistant` a piece of the model's text
//! (`delta`); `tool_use` and `tool_result` open and close a tool call (by `tool_id`); `error`
//! reports a failure (a stream without a finish reason, an empty `MAX_TOKENS` response), and
//! `result` ends the run with its `status` (`success`, `error` with `error.message`). An
//! interrupt just stops the stream. A response cut at `MAX_TOKENS` with text is a `success`: the
//! stream does not mark it.
//!
//! Unknown fields are skipped; an event of a type runread does not know
//! ([`GeminiEvent::Unknown`], a later Gemini CLI's) leaves the run it falls in without an answer;
//! a line that is not a JSON object with a `type`, or a known event without what defines it, is a
//! fault that taints the run it falls in. Nothing here panics on input: every field is optional
//! until needed.

use serde_json::Value;

pub use crate::stream::Fault;
use crate::stream::{one_line, str_of};

/// Longest tool name, parameter or message kept for the terminal (in characters); the stream's
/// own line bound (`EVENT_LINE_MAX_BYTES`) bounds everything else.
pub const DETAIL_MAX_CHARS: usize = 120;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GeminiEvent {
    /// The session this invocation works in: new, or resumed (its id again).
    Init { session_id: String },
    /// The prompt.
    User,
    /// A piece of the model's text (kept whole: the answer is compared with the chat file).
    Assistant { text: String },
    /// A tool call started.
    ToolUse { id: String, name: String },
    /// A tool call ended (`status` `success` or `error`).
    ToolResult { id: String, failed: bool },
    /// A failure Gemini CLI reports on the stream (before its `result`).
    Error { message: String },
    /// The run's end: `success`, or a failure with its message.
    Result { success: bool, message: String },
    /// An event of a type runread does not know (every type 0.61.0 writes is read above): the run
    /// it falls in gives no answer.
    Unknown,
}

fn detail(v: &Value, key: &str) -> String {
    one_line(str_of(v, key).unwrap_or(""), DETAIL_MAX_CHARS)
}

/// Parses one line of the stream.
pub fn parse(line: &[u8]) -> Result<GeminiEvent, Fault> {
    let v: Value = serde_json::from_slice(line).map_err(|_| Fault)?;
    let kind = str_of(&v, "type").ok_or(Fault)?;
    Ok(match kind {
        "init" => {
            let id = str_of(&v, "session_id").ok_or(Fault)?;
            // The id names the chat file: only a plain id is ever looked for.
            if !runread_core::target::is_id(id) {
                return Err(Fault);
            }
            GeminiEvent::Init {
                session_id: id.to_owned(),
            }
        }
        "message" => match str_of(&v, "role") {
            Some("user") => GeminiEvent::User,
            Some("assistant") => GeminiEvent::Assistant {
                text: str_of(&v, "content").ok_or(Fault)?.to_owned(),
            },
            _ => return Err(Fault),
        },
        "tool_use" => GeminiEvent::ToolUse {
            id: str_of(&v, "tool_id").ok_or(Fault)?.to_owned(),
            name: detail(&v, "tool_name"),
        },
        "tool_result" => GeminiEvent::ToolResult {
            id: str_of(&v, "tool_id").ok_or(Fault)?.to_owned(),
            failed: str_of(&v, "status") != Some("success"),
        },
        "error" => GeminiEvent::Error {
            message: detail(&v, "message"),
        },
        "result" => {
            let status = str_of(&v, "status").ok_or(Fault)?;
            GeminiEvent::Result {
                success: status == "success",
                message: v
                    .get("error")
                    .map(|e| detail(e, "message"))
                    .unwrap_or_default(),
            }
        }
        _ => GeminiEvent::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_and_an_unknown_type_told() {
        assert_eq!(
            parse(br#"{"type":"init","session_id":"a658862e-049d-4dae-8190-0b83e5d6c747","model":"m"}"#),
            Ok(GeminiEvent::Init {
                session_id: "a658862e-049d-4dae-8190-0b83e5d6c747".into()
            })
        );
        assert_eq!(parse(br#"{"type":"init","session_id":"../x"}"#), Err(Fault));
        assert_eq!(parse(br#"{"type":"init"}"#), Err(Fault));
        assert_eq!(
            parse(br#"{"type":"message","role":"user","content":"hi"}"#),
            Ok(GeminiEvent::User)
        );
        assert_eq!(
            parse(br#"{"type":"message","role":"assistant","content":"h","delta":true}"#),
            Ok(GeminiEvent::Assistant { text: "h".into() })
        );
        // An assistant message without its text cannot be part of an answer: a fault.
        assert_eq!(
            parse(br#"{"type":"message","role":"assistant"}"#),
            Err(Fault)
        );
        assert_eq!(parse(br#"{"type":"message","role":"system"}"#), Err(Fault));
        assert_eq!(
            parse(br#"{"type":"tool_use","tool_name":"read_file","tool_id":"t1","parameters":{}}"#),
            Ok(GeminiEvent::ToolUse {
                id: "t1".into(),
                name: "read_file".into()
            })
        );
        assert_eq!(
            parse(br#"{"type":"tool_result","tool_id":"t1","status":"error"}"#),
            Ok(GeminiEvent::ToolResult {
                id: "t1".into(),
                failed: true
            })
        );
        assert_eq!(parse(br#"{"type":"tool_result"}"#), Err(Fault));
        assert_eq!(
            parse(br#"{"type":"result","status":"success","stats":{}}"#),
            Ok(GeminiEvent::Result {
                success: true,
                message: String::new()
            })
        );
        assert_eq!(
            parse(br#"{"type":"result","status":"error","error":{"type":"unknown","message":"boom"}}"#),
            Ok(GeminiEvent::Result {
                success: false,
                message: "boom".into()
            })
        );
        assert_eq!(parse(br#"{"type":"result"}"#), Err(Fault));
        assert_eq!(
            parse(br#"{"type":"something_new","x":1}"#),
            Ok(GeminiEvent::Unknown)
        );
        assert_eq!(parse(b"[1,2]"), Err(Fault));
        assert_eq!(parse(b"{not json"), Err(Fault));
        assert_eq!(parse(br#"{"type":7}"#), Err(Fault));
    }
}
