//! OpenCode's `--format json` event stream, as far as supervision needs it
//! (`../shared/harness/FORMATS.md`, OpenCode 1.18.33; the recordings in
//! `fixtures/opencode/1.18.33/*/events-N.jsonl` are the ground truth).
//!
//! One line per part of a model message, once complete:
//! `{"type":"step_start"|"text"|"tool_use"|"step_finish","timestamp","sessionID","part":{…}}`,
//! each part naming its `id` and its message (`messageID`); a `text` event carries the part's
//! whole text (no deltas), a `step_finish` how the model call ended (`part.reason`: `stop`,
//! `length`, `tool-calls`, `unknown`). A failure is
//! `{"type":"error","sessionID","error":{"name","data":{"message",…}}}`. An interrupt kills the
//! process: nothing on the stream marks it.
//!
//! Unknown fields are skipped; an event of a type runread does not know
//! ([`OpenCodeKind::Unknown`]) leaves the run it falls in without an answer; a line that is not a
//! JSON object with a `type`, or a known event without what defines it, is a fault.

use runread_sessions::opencode::is_session_id;
use serde_json::Value;

pub use crate::stream::Fault;
use crate::stream::{one_line, str_of};

/// Longest tool name or message kept for the terminal (in characters).
pub const DETAIL_MAX_CHARS: usize = 120;

/// Every other event type OpenCode 1.18.33 writes on its stream: read, and nothing to the
/// supervision (`reasoning`: a thinking part, streamed with `--thinking`).
pub const KNOWN_OTHER: &[&str] = &["reasoning"];

/// One event: the session it names and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCodeEvent {
    /// The event's `sessionID` (`None` only for an event of an unknown type without one).
    pub session_id: Option<String>,
    pub kind: OpenCodeKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenCodeKind {
    /// A model call began (a new assistant message).
    StepStart { message_id: String },
    /// A text part of a model message, whole.
    Text {
        message_id: String,
        part_id: String,
        text: String,
    },
    /// A tool call, complete: its name, and whether it failed.
    Tool {
        message_id: String,
        name: String,
        failed: bool,
    },
    /// A model call ended, and why (`stop`, `length`, `tool-calls`, `unknown`).
    StepFinish { message_id: String, reason: String },
    /// The run failed: the error's message.
    Error { message: String },
    /// A known event of no weight here.
    Other,
    /// An event of a type runread does not know.
    Unknown,
}

fn owned(v: &Value, key: &str) -> Result<String, Fault> {
    Ok(str_of(v, key).ok_or(Fault)?.to_owned())
}

/// Parses one line of the stream.
pub fn parse(line: &[u8]) -> Result<OpenCodeEvent, Fault> {
    let v: Value = serde_json::from_slice(line).map_err(|_| Fault)?;
    if !v.is_object() {
        return Err(Fault);
    }
    let kind = str_of(&v, "type").ok_or(Fault)?;
    let known = matches!(
        kind,
        "step_start" | "text" | "tool_use" | "step_finish" | "error"
    ) || KNOWN_OTHER.contains(&kind);
    if !known {
        return Ok(OpenCodeEvent {
            session_id: str_of(&v, "sessionID")
                .filter(|s| is_session_id(s))
                .map(str::to_owned),
            kind: OpenCodeKind::Unknown,
        });
    }
    let session_id = str_of(&v, "sessionID")
        .filter(|s| is_session_id(s))
        .ok_or(Fault)?;
    Ok(OpenCodeEvent {
        session_id: Some(session_id.to_owned()),
        kind: known_kind(kind, &v)?,
    })
}

/// A known event of type `kind`.
fn known_kind(kind: &str, v: &Value) -> Result<OpenCodeKind, Fault> {
    if kind == "error" {
        let e = v.get("error").filter(|e| e.is_object()).ok_or(Fault)?;
        let message = e
            .get("data")
            .and_then(|d| str_of(d, "message"))
            .or_else(|| str_of(e, "name"))
            .unwrap_or("");
        return Ok(OpenCodeKind::Error {
            message: one_line(message, DETAIL_MAX_CHARS),
        });
    }
    let part = v.get("part").filter(|p| p.is_object()).ok_or(Fault)?;
    let message_id = owned(part, "messageID")?;
    Ok(match kind {
        "step_start" => OpenCodeKind::StepStart { message_id },
        "text" => OpenCodeKind::Text {
            message_id,
            part_id: owned(part, "id")?,
            text: owned(part, "text")?,
        },
        "tool_use" => OpenCodeKind::Tool {
            message_id,
            name: one_line(str_of(part, "tool").unwrap_or(""), DETAIL_MAX_CHARS),
            failed: part.get("state").and_then(|s| str_of(s, "status")) != Some("completed"),
        },
        "step_finish" => OpenCodeKind::StepFinish {
            message_id,
            reason: owned(part, "reason")?,
        },
        _ => OpenCodeKind::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "ses_db3da50c7ffeuRkymmfPn0Jvzc";

    fn kind(line: &str) -> Result<OpenCodeKind, Fault> {
        parse(line.replace("SES", S).as_bytes()).map(|e| e.kind)
    }

    #[test]
    fn events_are_read_and_an_unknown_type_told() {
        assert_eq!(
            kind(
                r#"{"type":"step_start","sessionID":"SES","part":{"id":"p","messageID":"m","type":"step-start"}}"#
            ),
            Ok(OpenCodeKind::StepStart {
                message_id: "m".into()
            })
        );
        assert_eq!(
            kind(
                r#"{"type":"text","sessionID":"SES","part":{"id":"p","messageID":"m","text":"hi"}}"#
            ),
            Ok(OpenCodeKind::Text {
                message_id: "m".into(),
                part_id: "p".into(),
                text: "hi".into()
            })
        );
        assert_eq!(
            kind(r#"{"type":"text","sessionID":"SES","part":{"id":"p","messageID":"m"}}"#),
            Err(Fault)
        );
        assert_eq!(
            kind(
                r#"{"type":"tool_use","sessionID":"SES","part":{"id":"p","messageID":"m","tool":"bash","state":{"status":"error"}}}"#
            ),
            Ok(OpenCodeKind::Tool {
                message_id: "m".into(),
                name: "bash".into(),
                failed: true
            })
        );
        assert_eq!(
            kind(
                r#"{"type":"step_finish","sessionID":"SES","part":{"id":"p","messageID":"m","reason":"stop"}}"#
            ),
            Ok(OpenCodeKind::StepFinish {
                message_id: "m".into(),
                reason: "stop".into()
            })
        );
        assert_eq!(
            kind(r#"{"type":"step_finish","sessionID":"SES","part":{"id":"p","messageID":"m"}}"#),
            Err(Fault)
        );
        assert_eq!(
            kind(
                r#"{"type":"error","sessionID":"SES","error":{"name":"APIError","data":{"message":"boom"}}}"#
            ),
            Ok(OpenCodeKind::Error {
                message: "boom".into()
            })
        );
        assert_eq!(
            kind(r#"{"type":"reasoning","sessionID":"SES","part":{"id":"p","messageID":"m"}}"#),
            Ok(OpenCodeKind::Other)
        );
        assert_eq!(
            kind(r#"{"type":"something_new"}"#),
            Ok(OpenCodeKind::Unknown)
        );
        // A known event must name its session, as OpenCode names one.
        assert_eq!(
            kind(r#"{"type":"step_start","sessionID":"../x","part":{"messageID":"m"}}"#),
            Err(Fault)
        );
        assert_eq!(
            kind(r#"{"type":"step_start","part":{"messageID":"m"}}"#),
            Err(Fault)
        );
        assert_eq!(kind("[1]"), Err(Fault));
        assert_eq!(kind("{nope"), Err(Fault));
        assert!(is_session_id(S) && !is_session_id("ses_") && !is_session_id("msg_a"));
    }
}
