//! Pi session files (`@mariozechner/pi-coding-agent`), versions 1 to 3, line by line.
//!
//! A file is JSONL: a `session` header, then entries. v2 and v3 entries link by `id`/`parentId`;
//! v1 entries have neither and form a line, so they get ids in file order (`v1-L<line>`), each
//! the child of the one before — the same shape Pi's own v1→v2 migration gives them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use runread_core::limits::{
    FINAL_ANSWER_MAX_BYTES, HISTORY_BODY_MARGIN_BYTES, HISTORY_EVENT_MAX_BYTES,
};

/// Longest user-prompt preview kept for the owner's run listing, in characters.
pub const PROMPT_PREVIEW_MAX_CHARS: usize = 80;

/// The session header: the file's first line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub session_id: String,
    pub version: u8,
    pub cwd: String,
    pub timestamp: Option<String>,
    pub parent_session: Option<String>,
    /// SHA-256 of the header line's exact bytes: any change to the header is an identity change.
    pub line_sha256: String,
    /// Length of the header line in bytes (without its newline).
    #[serde(default)]
    pub line_bytes: u64,
}

/// Kinds of entry, as Pi names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Message,
    SessionInfo,
    ModelChange,
    ThinkingLevelChange,
    Compaction,
    BranchSummary,
    Custom,
    CustomMessage,
    Label,
    Other,
}

/// What runread keeps of one entry: its place in the tree and the facts runs are cut from.
/// The final-answer candidate's text is kept only for assistant messages that could end a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntrySummary {
    /// 1-based line number in the file (the header is line 1).
    pub line: u64,
    pub id: String,
    pub parent_id: Option<String>,
    pub kind: EntryKind,
    /// `message.role` for message entries.
    pub role: Option<String>,
    pub stop_reason: Option<String>,
    pub has_tool_call: bool,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// SHA-256 of the canonical JSON (sorted keys, compact) of the whole `message` object.
    pub message_sha256: Option<String>,
    /// Text blocks of an assistant message without tool calls, joined by `\n`; `None` when the
    /// text is longer than [`FINAL_ANSWER_MAX_BYTES`] (see `text_bytes`).
    pub text: Option<String>,
    /// UTF-8 length of the joined text blocks.
    pub text_bytes: u64,
    /// First characters of a user prompt, for the owner's listing.
    pub preview: Option<String>,
    /// Text body of a message for history: text blocks only (never thinking, never tool-call
    /// arguments), kept up to `HISTORY_EVENT_MAX_BYTES + HISTORY_BODY_MARGIN_BYTES`.
    #[serde(default)]
    pub body: Option<String>,
    /// Full UTF-8 length of the body before it was kept.
    #[serde(default)]
    pub body_bytes: u64,
    /// The message had content but no text (an image, say).
    #[serde(default)]
    pub body_unavailable: bool,
    /// `toolName` of a tool result.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Names of the tools an assistant message called (names only, never arguments).
    #[serde(default)]
    pub tool_calls: Vec<String>,
    /// The agent itself truncated this output (Pi `details.truncation.truncated`, `truncated`).
    #[serde(default)]
    pub upstream_truncated: bool,
    /// `name` of a `session_info` entry.
    pub session_name: Option<String>,
    pub timestamp: Option<String>,
}

/// What one line of a session file turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineOutcome {
    Header(Header),
    Entry(Box<EntrySummary>),
    /// Not JSON, not an object, or missing what its version requires.
    Malformed,
    /// An empty line: skipped, as Pi skips it.
    Blank,
}

/// Parses a header line. `None` if the line is not a Pi session header.
pub fn parse_header(line: &[u8]) -> Option<Header> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v.get("type")?.as_str()? != "session" {
        return None;
    }
    let version = match v.get("version") {
        None | Some(Value::Null) => 1,
        Some(n) => u8::try_from(n.as_u64()?)
            .ok()
            .filter(|n| (1..=3).contains(n))?,
    };
    Some(Header {
        session_id: v.get("id")?.as_str()?.to_owned(),
        version,
        cwd: v.get("cwd")?.as_str()?.to_owned(),
        timestamp: v
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_owned),
        parent_session: v
            .get("parentSession")
            .and_then(Value::as_str)
            .map(str::to_owned),
        line_sha256: runread_core::sha256_hex(line),
        line_bytes: line.len() as u64,
    })
}

/// Parses entry lines of one file, carrying what v1's implicit linkage needs between lines.
#[derive(Debug, Clone)]
pub struct PiParser {
    version: u8,
    last_id: Option<String>,
}

impl PiParser {
    /// A parser for the entries of a file with `header`, resuming after the entry `last_id`
    /// (the last entry already parsed, if any).
    pub fn resume(header: &Header, last_id: Option<String>) -> Self {
        PiParser {
            version: header.version,
            last_id,
        }
    }

    /// Parses one complete line (without its newline) at 1-based `line_no`.
    pub fn parse_line(&mut self, line: &[u8], line_no: u64) -> LineOutcome {
        if line.iter().all(u8::is_ascii_whitespace) {
            return LineOutcome::Blank;
        }
        let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(line) else {
            return LineOutcome::Malformed;
        };
        let Some(kind) = obj.get("type").and_then(Value::as_str) else {
            return LineOutcome::Malformed;
        };
        if kind == "session" {
            // A second header inside a file is not something Pi writes.
            return LineOutcome::Malformed;
        }
        let (id, parent_id) = if self.version == 1 {
            (format!("v1-L{line_no}"), self.last_id.clone())
        } else {
            let Some(id) = obj.get("id").and_then(Value::as_str) else {
                return LineOutcome::Malformed;
            };
            let parent = match obj.get("parentId") {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) => Some(p.clone()),
                Some(_) => return LineOutcome::Malformed,
            };
            if !runread_core::target::is_id(id) {
                return LineOutcome::Malformed;
            }
            (id.to_owned(), parent)
        };
        let mut e = EntrySummary {
            line: line_no,
            id,
            parent_id,
            kind: entry_kind(kind),
            role: None,
            stop_reason: None,
            has_tool_call: false,
            provider: None,
            model: None,
            message_sha256: None,
            text: None,
            text_bytes: 0,
            preview: None,
            body: None,
            body_bytes: 0,
            body_unavailable: false,
            tool_name: None,
            tool_calls: vec![],
            upstream_truncated: false,
            session_name: None,
            timestamp: obj
                .get("timestamp")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        match e.kind {
            EntryKind::Message => {
                let Some(msg @ Value::Object(m)) = obj.get("message") else {
                    return LineOutcome::Malformed;
                };
                let Some(role) = m.get("role").and_then(Value::as_str) else {
                    return LineOutcome::Malformed;
                };
                e.role = Some(role.to_owned());
                e.message_sha256 = Some(message_sha256(msg));
                e.stop_reason = m
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                e.provider = m.get("provider").and_then(Value::as_str).map(str::to_owned);
                e.model = m.get("model").and_then(Value::as_str).map(str::to_owned);
                let content = m.get("content");
                let body = match role {
                    "bashExecution" => m
                        .get("output")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_default(),
                    _ => content.map(user_text).unwrap_or_default(),
                };
                let has_content =
                    content.is_some_and(|c| c.as_array().is_none_or(|a| !a.is_empty()));
                e.body_unavailable = body.is_empty() && has_content && role != "assistant";
                e.body_bytes = body.len() as u64;
                e.body = Some(keep_prefix(
                    body,
                    HISTORY_EVENT_MAX_BYTES + HISTORY_BODY_MARGIN_BYTES,
                ));
                e.tool_name = m.get("toolName").and_then(Value::as_str).map(str::to_owned);
                e.upstream_truncated = m.get("truncated").and_then(Value::as_bool).unwrap_or(false)
                    || msg
                        .pointer("/details/truncation/truncated")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                if let Some(blocks) = content.and_then(Value::as_array) {
                    e.tool_calls = blocks
                        .iter()
                        .filter(|b| block_type(b) == Some("toolCall"))
                        .filter_map(|b| b.get("name").and_then(Value::as_str).map(str::to_owned))
                        .collect();
                }
                match role {
                    "assistant" => {
                        let blocks = content
                            .and_then(Value::as_array)
                            .map(Vec::as_slice)
                            .unwrap_or(&[]);
                        e.has_tool_call = blocks.iter().any(|b| block_type(b) == Some("toolCall"));
                        if !e.has_tool_call {
                            let text = join_text_blocks(blocks);
                            e.text_bytes = text.len() as u64;
                            if text.len() <= FINAL_ANSWER_MAX_BYTES {
                                e.text = Some(text);
                            }
                        }
                    }
                    "user" => e.preview = content.map(user_text).map(|t| preview(&t)),
                    _ => {}
                }
            }
            EntryKind::SessionInfo => {
                e.session_name = obj.get("name").and_then(Value::as_str).map(str::to_owned);
            }
            EntryKind::ModelChange => {
                e.provider = obj
                    .get("provider")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                e.model = obj
                    .get("modelId")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            _ => {}
        }
        self.last_id = Some(e.id.clone());
        LineOutcome::Entry(Box::new(e))
    }
}

fn entry_kind(t: &str) -> EntryKind {
    match t {
        "message" => EntryKind::Message,
        "session_info" => EntryKind::SessionInfo,
        "model_change" => EntryKind::ModelChange,
        "thinking_level_change" => EntryKind::ThinkingLevelChange,
        "compaction" => EntryKind::Compaction,
        "branch_summary" => EntryKind::BranchSummary,
        "custom" => EntryKind::Custom,
        "custom_message" => EntryKind::CustomMessage,
        "label" => EntryKind::Label,
        _ => EntryKind::Other,
    }
}

fn block_type(b: &Value) -> Option<&str> {
    b.get("type").and_then(Value::as_str)
}

/// The text an agent's assistant message shows: its `text` blocks in order, joined by a newline
/// (as Pi's print mode writes them), never thinking or tool calls.
pub fn join_text_blocks(blocks: &[Value]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| block_type(b) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    texts.join("\n")
}

/// At most `max` bytes of `s`, cut on a char boundary.
fn keep_prefix(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

fn user_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => join_text_blocks(blocks),
        _ => String::new(),
    }
}

fn preview(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = one_line.chars().take(PROMPT_PREVIEW_MAX_CHARS).collect();
    if one_line.chars().count() > PROMPT_PREVIEW_MAX_CHARS {
        out.push('…');
    }
    out
}

/// The whole-message hash: SHA-256 of the message's canonical JSON (object keys sorted, compact).
/// The same message seen in Pi's event stream and in its session file hashes the same.
pub fn message_sha256(message: &Value) -> String {
    // serde_json's map without `preserve_order` is a BTreeMap: `to_string` sorts keys.
    runread_core::sha256_hex(message.to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(version: u8) -> Header {
        Header {
            session_id: "s".into(),
            version,
            cwd: "/w".into(),
            timestamp: None,
            parent_session: None,
            line_sha256: String::new(),
            line_bytes: 0,
        }
    }

    #[test]
    fn header_versions_default_to_one_and_refuse_unknown() {
        assert_eq!(
            parse_header(br#"{"type":"session","id":"a","cwd":"/x"}"#)
                .unwrap()
                .version,
            1
        );
        assert_eq!(
            parse_header(br#"{"type":"session","version":3,"id":"a","cwd":"/x"}"#)
                .unwrap()
                .version,
            3
        );
        assert!(parse_header(br#"{"type":"session","version":4,"id":"a","cwd":"/x"}"#).is_none());
        assert!(parse_header(br#"{"type":"message","id":"a"}"#).is_none());
        assert!(parse_header(b"not json").is_none());
    }

    #[test]
    fn v1_entries_get_ids_in_file_order() {
        let mut p = PiParser::resume(&header(1), None);
        let LineOutcome::Entry(a) = p.parse_line(
            br#"{"type":"message","message":{"role":"user","content":"hi"}}"#,
            2,
        ) else {
            panic!()
        };
        let LineOutcome::Entry(b) = p.parse_line(br#"{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"yo"}],"stopReason":"stop"}}"#, 3) else { panic!() };
        assert_eq!(a.id, "v1-L2");
        assert_eq!(a.parent_id, None);
        assert_eq!(b.parent_id.as_deref(), Some("v1-L2"));
        assert_eq!(b.text.as_deref(), Some("yo"));
    }

    #[test]
    fn assistant_text_excludes_thinking_and_tool_calls() {
        let mut p = PiParser::resume(&header(3), None);
        let line = br#"{"type":"message","id":"a1","parentId":null,"message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan"},{"type":"text","text":"one"},{"type":"text","text":"two"}],"stopReason":"stop"}}"#;
        let LineOutcome::Entry(e) = p.parse_line(line, 2) else {
            panic!()
        };
        assert_eq!(e.text.as_deref(), Some("one\ntwo"));
        let line = br#"{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","id":"c","name":"bash","arguments":{}}],"stopReason":"toolUse"}}"#;
        let LineOutcome::Entry(e) = p.parse_line(line, 3) else {
            panic!()
        };
        assert!(e.has_tool_call);
        assert_eq!(e.text, None);
    }

    #[test]
    fn final_text_is_kept_up_to_the_limit_and_not_beyond() {
        let mut p = PiParser::resume(&header(3), None);
        for (n, keep) in [
            (FINAL_ANSWER_MAX_BYTES, true),
            (FINAL_ANSWER_MAX_BYTES + 1, false),
        ] {
            let msg = serde_json::json!({"type":"message","id":"a1","parentId":null,
                "message":{"role":"assistant","content":[{"type":"text","text":"x".repeat(n)}],"stopReason":"stop"}});
            let LineOutcome::Entry(e) = p.parse_line(msg.to_string().as_bytes(), 2) else {
                panic!()
            };
            assert_eq!(e.text.is_some(), keep);
            assert_eq!(e.text_bytes, n as u64);
        }
    }

    #[test]
    fn malformed_lines_are_reported_not_fatal() {
        let mut p = PiParser::resume(&header(3), None);
        assert_eq!(p.parse_line(b"{not json", 2), LineOutcome::Malformed);
        assert_eq!(p.parse_line(b"[1,2]", 3), LineOutcome::Malformed);
        assert_eq!(
            p.parse_line(br#"{"type":"message","message":{"role":"user"}}"#, 4),
            LineOutcome::Malformed
        );
        assert_eq!(p.parse_line(b"   ", 5), LineOutcome::Blank);
    }

    #[test]
    fn message_hash_ignores_key_order() {
        let a: Value = serde_json::from_str(r#"{"role":"assistant","content":[],"x":1}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"x":1,"content":[],"role":"assistant"}"#).unwrap();
        assert_eq!(message_sha256(&a), message_sha256(&b));
    }
}
