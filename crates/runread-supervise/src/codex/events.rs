//! Codex CLI's JSONL event stream (`codex exec --json …`), as far as supervision needs it
//! (`../shared/harness/FORMATS.md`, section "Codex 0.171.0"; the recordings in `fixtures/codex/`
//! are the ground truth).
//!
//! One line, one event. `thread.started` names the thread (the session: the rollout file's
//! `session_meta` id); `turn.started` opens the one turn `codex exec` runs; `item.started`,
//! `item.updated` and `item.completed` carry the turn's items (the model's messages, its
//! reasoning, commands, file changes, MCP tool calls, web searches, its to-do list, non-fatal
//! errors); `turn.completed` or `turn.failed` ends the turn, and a top-level `error` reports a
//! failure (before `turn.failed`). An interrupt just stops the stream. Unlike the rollout file,
//! the stream names no turn id and no cwd, and its `item_N` ids are the process's own.
//!
//! Unknown item types and unknown fields are skipped (an item is content: only an
//! `agent_message` can be the answer, and the rollout file proves it); an event of a type runread
//! does not know ([`CodexEvent::Unknown`], a later Codex's) leaves the run it falls in without an
//! answer; a line that is not a JSON object with a `type`, or a known event without what defines
//! it, is a fault that taints the run it falls in. Nothing here panics on input: every field is optional until needed.

use serde_json::Value;

pub use crate::stream::Fault;
use crate::stream::{one_line, str_of};

/// Longest command or other one-line detail kept for the terminal (in characters); the stream's
/// own line bound (`EVENT_LINE_MAX_BYTES`) bounds everything else.
pub const DETAIL_MAX_CHARS: usize = 120;
/// Most file changes of one `file_change` item kept for the terminal.
pub const CHANGES_MAX: usize = 16;

/// What one item is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKind {
    /// A message of the model to the user; the last one completed in a turn is its answer.
    AgentMessage {
        text: String,
    },
    Reasoning,
    /// A shell command: `status` is `in_progress`, `completed`, `failed` or `declined`.
    CommandExecution {
        command: String,
        status: String,
        exit_code: Option<i64>,
    },
    /// Files the model changed (`(path, kind)`, at most [`CHANGES_MAX`]).
    FileChange {
        changes: Vec<(String, String)>,
        status: String,
    },
    McpToolCall {
        server: String,
        tool: String,
        status: String,
    },
    WebSearch {
        query: String,
    },
    TodoList,
    /// A non-fatal error Codex reports as an item (an unknown model's metadata, …).
    Error {
        message: String,
    },
    /// An item type runread does not read.
    Other,
}

impl ItemKind {
    /// Work the turn waits on while it is in progress (a tool, in the store's terms).
    pub fn is_tool(&self) -> bool {
        matches!(
            self,
            ItemKind::CommandExecution { .. }
                | ItemKind::FileChange { .. }
                | ItemKind::McpToolCall { .. }
                | ItemKind::WebSearch { .. }
        )
    }

    /// A tool item that ended badly (for the terminal).
    pub fn failed(&self) -> bool {
        match self {
            ItemKind::CommandExecution {
                status, exit_code, ..
            } => status == "failed" || status == "declined" || exit_code.is_some_and(|c| c != 0),
            ItemKind::FileChange { status, .. } | ItemKind::McpToolCall { status, .. } => {
                status == "failed"
            }
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The process's own id (`item_N`): pairs an `item.started` with its `item.completed`.
    pub id: String,
    pub kind: ItemKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodexEvent {
    /// The thread (session) this invocation works in: new, resumed (the same id again) or
    /// forked (a new id).
    ThreadStarted {
        thread_id: String,
    },
    TurnStarted,
    ItemStarted(Item),
    ItemUpdated(Item),
    ItemCompleted(Item),
    /// The turn ended normally (with or without an answer).
    TurnCompleted,
    /// The turn failed; Codex's message (the provider's, or its own).
    TurnFailed {
        message: String,
    },
    /// A failure Codex reports on the stream (before `turn.failed`, or outside a turn).
    Error {
        message: String,
    },
    /// An event of a type runread does not know (every type `codex exec --json` documents is
    /// read above): the run it falls in gives no answer.
    Unknown,
}

fn detail(v: &Value, key: &str) -> String {
    one_line(str_of(v, key).unwrap_or(""), DETAIL_MAX_CHARS)
}

fn status(v: &Value) -> String {
    one_line(str_of(v, "status").unwrap_or(""), DETAIL_MAX_CHARS)
}

fn item(v: &Value) -> Result<Item, Fault> {
    let item = v.get("item").filter(|i| i.is_object()).ok_or(Fault)?;
    let kind = match str_of(item, "type") {
        // The answer is kept whole: it is compared with the rollout file byte for byte.
        Some("agent_message") => ItemKind::AgentMessage {
            text: str_of(item, "text").ok_or(Fault)?.to_owned(),
        },
        Some("reasoning") => ItemKind::Reasoning,
        Some("command_execution") => ItemKind::CommandExecution {
            command: detail(item, "command"),
            status: status(item),
            exit_code: item.get("exit_code").and_then(Value::as_i64),
        },
        Some("file_change") => ItemKind::FileChange {
            changes: item
                .get("changes")
                .and_then(Value::as_array)
                .map(|changes| {
                    changes
                        .iter()
                        .take(CHANGES_MAX)
                        .map(|c| (detail(c, "path"), detail(c, "kind")))
                        .collect()
                })
                .unwrap_or_default(),
            status: status(item),
        },
        Some("mcp_tool_call") => ItemKind::McpToolCall {
            server: detail(item, "server"),
            tool: detail(item, "tool"),
            status: status(item),
        },
        Some("web_search") => ItemKind::WebSearch {
            query: detail(item, "query"),
        },
        Some("todo_list") => ItemKind::TodoList,
        Some("error") => ItemKind::Error {
            message: detail(item, "message"),
        },
        _ => ItemKind::Other,
    };
    Ok(Item {
        id: str_of(item, "id").unwrap_or("").to_owned(),
        kind,
    })
}

/// The message of a failure: `message`, or `error.message`.
fn message_of(v: &Value) -> String {
    let m = str_of(v, "message")
        .or_else(|| v.get("error").and_then(|e| str_of(e, "message")))
        .unwrap_or("");
    one_line(m, DETAIL_MAX_CHARS)
}

/// Parses one line of the stream.
pub fn parse(line: &[u8]) -> Result<CodexEvent, Fault> {
    let v: Value = serde_json::from_slice(line).map_err(|_| Fault)?;
    let kind = str_of(&v, "type").ok_or(Fault)?;
    Ok(match kind {
        "thread.started" => {
            let id = str_of(&v, "thread_id").ok_or(Fault)?;
            // The id names the rollout file: only a plain id is ever looked for.
            if !runread_core::target::is_id(id) {
                return Err(Fault);
            }
            CodexEvent::ThreadStarted {
                thread_id: id.to_owned(),
            }
        }
        "turn.started" => CodexEvent::TurnStarted,
        "item.started" => CodexEvent::ItemStarted(item(&v)?),
        "item.updated" => CodexEvent::ItemUpdated(item(&v)?),
        "item.completed" => CodexEvent::ItemCompleted(item(&v)?),
        "turn.completed" => CodexEvent::TurnCompleted,
        "turn.failed" => CodexEvent::TurnFailed {
            message: v.get("error").map(message_of).unwrap_or_default(),
        },
        "error" => CodexEvent::Error {
            message: message_of(&v),
        },
        _ => CodexEvent::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_an_unknown_item_kept_apart_and_an_unknown_type_told() {
        assert_eq!(
            parse(
                br#"{"type":"thread.started","thread_id":"01a231e0-7813-7fd3-9f9d-8764034a71d5"}"#
            ),
            Ok(CodexEvent::ThreadStarted {
                thread_id: "01a231e0-7813-7fd3-9f9d-8764034a71d5".into()
            })
        );
        assert_eq!(
            parse(br#"{"type":"thread.started","thread_id":"../x"}"#),
            Err(Fault)
        );
        assert_eq!(parse(br#"{"type":"thread.started"}"#), Err(Fault));
        assert_eq!(
            parse(br#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"hi"}}"#),
            Ok(CodexEvent::ItemCompleted(Item {
                id: "item_1".into(),
                kind: ItemKind::AgentMessage { text: "hi".into() }
            }))
        );
        // An agent message without its text cannot be an answer: a fault, not an empty answer.
        assert_eq!(
            parse(br#"{"type":"item.completed","item":{"id":"i","type":"agent_message"}}"#),
            Err(Fault)
        );
        assert_eq!(parse(br#"{"type":"item.completed"}"#), Err(Fault));
        assert_eq!(
            parse(br#"{"type":"item.completed","item":{"id":"i","type":"brand_new"}}"#),
            Ok(CodexEvent::ItemCompleted(Item {
                id: "i".into(),
                kind: ItemKind::Other
            }))
        );
        assert_eq!(
            parse(br#"{"type":"turn.failed","error":{"message":"boom"}}"#),
            Ok(CodexEvent::TurnFailed {
                message: "boom".into()
            })
        );
        assert_eq!(
            parse(br#"{"type":"turn.failed"}"#),
            Ok(CodexEvent::TurnFailed {
                message: String::new()
            })
        );
        assert_eq!(
            parse(br#"{"type":"something.new","x":1}"#),
            Ok(CodexEvent::Unknown)
        );
        assert_eq!(parse(b"[1,2]"), Err(Fault));
        assert_eq!(parse(b"{not json"), Err(Fault));
        assert_eq!(parse(br#"{"type":7}"#), Err(Fault));
    }

    #[test]
    fn tools_and_their_failures_are_told_apart() {
        let Ok(CodexEvent::ItemCompleted(i)) = parse(
            br#"{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'false'","aggregated_output":"","exit_code":1,"status":"failed"}}"#,
        ) else {
            panic!("a command");
        };
        assert!(i.kind.is_tool());
        assert!(i.kind.failed());
        let Ok(CodexEvent::ItemStarted(i)) = parse(
            br#"{"type":"item.started","item":{"id":"item_3","type":"mcp_tool_call","server":"runread","tool":"read_final_answer","status":"in_progress"}}"#,
        ) else {
            panic!("an MCP call");
        };
        assert!(i.kind.is_tool());
        assert!(!i.kind.failed());
        assert!(!ItemKind::Reasoning.is_tool());
    }

    #[test]
    fn details_are_bounded_at_the_named_limits() {
        let at = "x".repeat(DETAIL_MAX_CHARS);
        assert_eq!(one_line(&at, DETAIL_MAX_CHARS), at);
        let over = "x".repeat(DETAIL_MAX_CHARS + 1);
        assert_eq!(
            one_line(&over, DETAIL_MAX_CHARS),
            format!("{at}…"),
            "one character more is cut"
        );
        let changes = |n: usize| {
            let list: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"path":"/w/f{i}","kind":"add"}}"#))
                .collect();
            let line = format!(
                r#"{{"type":"item.completed","item":{{"id":"i","type":"file_change","changes":[{}],"status":"completed"}}}}"#,
                list.join(",")
            );
            match parse(line.as_bytes()) {
                Ok(CodexEvent::ItemCompleted(Item {
                    kind: ItemKind::FileChange { changes, .. },
                    ..
                })) => changes.len(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(changes(CHANGES_MAX), CHANGES_MAX);
        assert_eq!(changes(CHANGES_MAX + 1), CHANGES_MAX);
    }
}
