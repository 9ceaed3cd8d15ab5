//! Pi session files (`@mariozechner/pi-coding-agent`), versions 1 to 3, line by line.
//!
//! A file is JSONL: a `session` header, then entries. v2 and v3 entries link by `id`/`parentId`;
//! v1 entries have neither and form a line, so they get ids in file order (`v1-L<line>`), each
//! the child of the one before — the same shape Pi's own v1→v2 migration gives them.

mod profile;
pub(crate) use profile::PROFILE;

mod line;
mod runs;

pub use runs::cut_runs;

use std::io;

use serde_json::Value;

use line::{Block, Content, Entry, Json, Skipped, block_kind, str_of};

use crate::file::EvidenceFile;

pub use crate::model::{
    EntryKind, EntrySummary, Header, LineOutcome, LineRef, MessageView, Resume, Scan, ScanError,
};
use crate::scan::{FirstLine, LineDigest, ReadAhead, scan_lines};

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
        fork: None,
        agent_version: None,
    })
}

/// Longest header line read.
pub const HEADER_MAX_BYTES: usize = 64 * 1024;

/// Reads the complete lines of `file` from where `resume` says, a batch at a time (memory: at
/// most three batches of [`SCAN_BATCH_BYTES`](crate::scan::SCAN_BATCH_BYTES) plus one line of at
/// most [`EVIDENCE_LINE_MAX_BYTES`](runread_core::limits::EVIDENCE_LINE_MAX_BYTES) each, two spare
/// buffers, and the index entries), parsed one line at a time in file order, up to the size the file had when
/// opened and at most [`EVIDENCE_FILE_MAX_LINES`](runread_core::limits::EVIDENCE_FILE_MAX_LINES)
/// lines in all.
pub fn scan(file: &EvidenceFile, resume: Resume<'_>, ahead: ReadAhead) -> Result<Scan, ScanError> {
    let mut last_id = match resume {
        Resume::Fresh => None,
        Resume::After { last_id, .. } => last_id.map(str::to_owned),
    };
    // Pi's entry lines carry v1's implicit linkage from one to the next: one parser for the
    // pass, made once the header (its version) is known.
    let mut parser: Option<PiParser> = None;
    scan_lines(
        file,
        resume,
        FirstLine {
            max_bytes: HEADER_MAX_BYTES,
            parse: parse_header,
            is_entry: false,
        },
        |header, bytes, digest, line_no, offset| {
            parser
                .get_or_insert_with(|| PiParser::resume(header, last_id.take()))
                .parse_line_digested(bytes, digest, line_no, offset)
        },
        ahead,
    )
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

    /// Parses one complete line (without its newline) at 1-based `line_no`, starting at byte
    /// `offset` of the file.
    pub fn parse_line(&mut self, line: &[u8], line_no: u64, offset: u64) -> LineOutcome {
        self.parse_line_digested(line, &LineDigest::of(line), line_no, offset)
    }

    /// [`PiParser::parse_line`] with the line's digest as the scan has it (taken ahead, or when
    /// asked).
    fn parse_line_digested(
        &mut self,
        line: &[u8],
        digest: &LineDigest<'_>,
        line_no: u64,
        offset: u64,
    ) -> LineOutcome {
        if line.iter().all(u8::is_ascii_whitespace) {
            return LineOutcome::Blank;
        }
        let Ok(Json::Object(obj)) = serde_json::from_slice::<Json<Entry, Skipped>>(line) else {
            return LineOutcome::Malformed;
        };
        let Some(kind) = str_of(&obj.kind) else {
            return LineOutcome::Malformed;
        };
        if kind == "session" {
            // A second header inside a file is not something Pi writes.
            return LineOutcome::Malformed;
        }
        let Some((id, parent_id)) = self.entry_ids(&obj, line_no) else {
            return LineOutcome::Malformed;
        };
        let mut e = EntrySummary {
            parent_id,
            kind: entry_kind(kind).unwrap_or(EntryKind::Unrecognised),
            timestamp: str_of(&obj.timestamp).map(str::to_owned),
            ..EntrySummary::at(line_no, offset, line.len() as u64, id)
        };
        if e.kind == EntryKind::Unrecognised {
            self.last_id = Some(e.id.clone());
            // Pi records no version of its own in a session file.
            let seen = crate::model::Unrecognised::new(line_no, kind, None);
            return LineOutcome::Unrecognised(Box::new(e), seen);
        }
        if e.kind == EntryKind::Message && fill_message(&mut e, &obj, line, digest).is_none() {
            return LineOutcome::Malformed;
        }
        match e.kind {
            EntryKind::SessionInfo => {
                e.session_name = str_of(&obj.name).map(str::to_owned);
            }
            EntryKind::ModelChange => {
                e.provider = str_of(&obj.provider).map(str::to_owned);
                e.model = str_of(&obj.model_id).map(str::to_owned);
            }
            _ => {}
        }
        self.last_id = Some(e.id.clone());
        LineOutcome::Entry(Box::new(e))
    }

    /// The entry's id and its parent's: v1 entries have none of their own (the id is made of the
    /// line number, the parent is the entry before); `None` when a later version's are not ids.
    fn entry_ids(&self, obj: &Entry<'_>, line_no: u64) -> Option<(String, Option<String>)> {
        if self.version == 1 {
            return Some((format!("v1-L{line_no}"), self.last_id.clone()));
        }
        let id = str_of(&obj.id)?;
        let parent = match &obj.parent_id {
            None | Some(Json::Null) => None,
            Some(Json::Str(p)) => Some(p.as_ref().to_owned()),
            Some(_) => return None,
        };
        if !runread_core::target::is_id(id) {
            return None;
        }
        Some((id.to_owned(), parent))
    }
}

/// A message entry's role, model, sizes and digests into `e`; `None` when the line's `message`
/// is not one (then the line is malformed).
fn fill_message(
    e: &mut EntrySummary,
    obj: &Entry<'_>,
    line: &[u8],
    digest: &LineDigest<'_>,
) -> Option<()> {
    let Some(Json::Object(m)) = &obj.message else {
        return None;
    };
    let role = str_of(&m.role)?;
    e.line_sha256 = Some(digest.hex());
    e.role = Some(role.to_owned());
    e.stop_reason = str_of(&m.stop_reason).map(str::to_owned);
    e.provider = str_of(&m.provider).map(str::to_owned);
    e.model = str_of(&m.model).map(str::to_owned);
    e.usage = m
        .usage
        .as_ref()
        .and_then(Json::as_object)
        .map(line::Usage::tokens);
    let content = m.content.as_ref();
    let blocks = content.and_then(Json::as_array).unwrap_or(&[]);
    e.upstream_truncated = m
        .truncated
        .as_ref()
        .and_then(Json::as_bool)
        .unwrap_or(false)
        || m.details_truncated().unwrap_or(false);
    let has_tool_call = blocks.iter().any(|b| block_kind(b) == Some("toolCall"));
    e.body_bytes = match role {
        "bashExecution" => str_of(&m.output).map_or(0, str::len),
        _ => content.map_or(0, user_text_len),
    } as u64;
    if role == "assistant" {
        e.has_tool_call = has_tool_call;
        if !e.has_tool_call {
            let text = join_blocks(blocks);
            e.text_bytes = text.len() as u64;
            e.text_sha256 = Some(runread_core::sha256_hex(text.as_bytes()));
        }
    }
    if hashed_role(role, has_tool_call) {
        // Read again as a `Value` (the same acceptance, so it parses): the canonical form the
        // event stream's copy of this message is hashed in.
        let sha = serde_json::from_slice::<Value>(line)
            .ok()
            .and_then(|v| v.get("message").map(message_sha256))?;
        e.message_sha256 = Some(sha);
    }
    Some(())
}

/// What a reader may be shown of the message entry `line` (read back from the file when served):
/// `None` when the line is not a message entry.
pub fn message_view(line: &[u8]) -> Option<MessageView> {
    let Ok(Json::Object(obj)) = serde_json::from_slice::<Json<Entry, Skipped>>(line) else {
        return None;
    };
    if str_of(&obj.kind) != Some("message") {
        return None;
    }
    let Some(Json::Object(m)) = &obj.message else {
        return None;
    };
    let role = str_of(&m.role)?;
    let content = m.content.as_ref();
    let blocks = content.and_then(Json::as_array).unwrap_or(&[]);
    let body = match role {
        "bashExecution" => str_of(&m.output).map(str::to_owned).unwrap_or_default(),
        _ => content.map(user_text).unwrap_or_default(),
    };
    let has_content = content.is_some_and(|c| c.as_array().is_none_or(|a| !a.is_empty()));
    let tool_calls: Vec<String> = blocks
        .iter()
        .filter(|b| block_kind(b) == Some("toolCall"))
        .filter_map(|b| b.as_object().and_then(|f| str_of(&f.name)))
        .map(str::to_owned)
        .collect();
    let has_tool_call = blocks.iter().any(|b| block_kind(b) == Some("toolCall"));
    Some(MessageView {
        role: role.to_owned(),
        body_unavailable: body.is_empty() && has_content && role != "assistant",
        body,
        tool_name: str_of(&m.tool_name).map(str::to_owned),
        tool_calls,
        answer: (role == "assistant" && !has_tool_call).then(|| join_blocks(blocks)),
        cwd: None,
        git_branch: None,
        agent_version: None,
        provider: None,
    })
}

/// Whether a message of `role` gets its whole-message hash. Only two messages are ever compared
/// by it — a run's first user message and its final assistant message (which has no tool call:
/// one with a tool call never ends a run) — so tool results, the bulk of a session, skip the
/// serialization and hashing.
pub fn hashed_role(role: &str, has_tool_call: bool) -> bool {
    role == "user" || (role == "assistant" && !has_tool_call)
}

/// The kind of a Pi entry of type `t`; `None` for a type runread does not know. Every type Pi's
/// session format documents (1.6.0's `docs/session-format.md`) is known, as the ones it writes.
fn entry_kind(t: &str) -> Option<EntryKind> {
    Some(match t {
        "message" => EntryKind::Message,
        "session_info" => EntryKind::SessionInfo,
        "model_change" => EntryKind::ModelChange,
        "thinking_level_change" => EntryKind::ThinkingLevelChange,
        "compaction" => EntryKind::Compaction,
        "branch_summary" => EntryKind::BranchSummary,
        "custom" => EntryKind::Custom,
        "custom_message" => EntryKind::CustomMessage,
        "label" => EntryKind::Label,
        // Pi 1.6.0: usage outside assistant messages (cache warming), "not in the LLM context";
        // and an edit of the model context to come (seen after failed responses), which leaves
        // the entries it targets as they were. Neither is a message, or says how a run ended.
        "usage" | "context_edit" => EntryKind::Other,
        _ => return None,
    })
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

/// [`join_text_blocks`] over blocks read from a line.
fn join_blocks(blocks: &[Block]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| block_kind(b) == Some("text"))
        .filter_map(|b| b.as_object().and_then(|f| str_of(&f.text)))
        .collect();
    texts.join("\n")
}

/// `user_text(content).len()`, without building the text.
fn user_text_len(content: &Content) -> usize {
    match content {
        Json::Str(s) => s.len(),
        Json::Array(blocks) => {
            let (count, bytes) = blocks
                .iter()
                .filter(|b| block_kind(b) == Some("text"))
                .filter_map(|b| b.as_object().and_then(|f| str_of(&f.text)))
                .fold((0usize, 0usize), |(c, n), t| (c + 1, n + t.len()));
            bytes + count.saturating_sub(1)
        }
        _ => 0,
    }
}

fn user_text(content: &Content) -> String {
    match content {
        Json::Str(s) => s.as_ref().to_owned(),
        Json::Array(blocks) => join_blocks(blocks),
        _ => String::new(),
    }
}

/// The whole-message hash: SHA-256 of the message's canonical JSON (object keys sorted, compact;
/// [`runread_core::canonical`]). The same message seen in Pi's event stream and in its session
/// file hashes the same, whatever order either wrote its keys in.
pub fn message_sha256(message: &Value) -> String {
    use sha2::Digest;
    // Streamed into the hasher: the canonical bytes, without building them.
    let mut out = io::BufWriter::with_capacity(HASH_BUFFER_BYTES, Hasher(sha2::Sha256::new()));
    let streamed = runread_core::canonical::write(message, &mut out)
        .ok()
        .and_then(|()| out.into_inner().ok());
    match streamed {
        Some(Hasher(h)) => hex::encode(h.finalize()),
        // Not reached (a `Value` always serializes and the hasher never fails); never guess.
        None => runread_core::sha256_hex(&runread_core::canonical::to_vec(message)),
    }
}

/// Bytes of serialized JSON handed to SHA-256 at a time.
const HASH_BUFFER_BYTES: usize = 8 * 1024;

struct Hasher(sha2::Sha256);

impl io::Write for Hasher {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sha2::Digest::update(&mut self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runread_core::limits::{EVIDENCE_FILE_MAX_LINES, EVIDENCE_LINE_MAX_BYTES};

    fn header(version: u8) -> Header {
        Header {
            session_id: "s".into(),
            version,
            cwd: "/w".into(),
            timestamp: None,
            parent_session: None,
            line_sha256: String::new(),
            line_bytes: 0,
            fork: None,
            agent_version: None,
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
            0,
        ) else {
            panic!()
        };
        let b_line = br#"{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"yo"}],"stopReason":"stop"}}"#;
        let LineOutcome::Entry(b) = p.parse_line(b_line, 3, 60) else {
            panic!()
        };
        assert_eq!(a.id, "v1-L2");
        assert_eq!(a.parent_id, None);
        assert_eq!(b.parent_id.as_deref(), Some("v1-L2"));
        assert_eq!(message_view(b_line).unwrap().answer.as_deref(), Some("yo"));
    }

    #[test]
    fn pi_1x_reasoning_tokens_are_read_within_output() {
        // Pi 1.x's `usage.reasoning` (its docs/message-types.md: already counted in `output`).
        let mut p = PiParser::resume(&header(3), None);
        let line = br#"{"type":"message","id":"a1","parentId":null,"message":{"role":"assistant","content":[{"type":"text","text":"x"}],"stopReason":"stop","usage":{"input":10,"output":7,"cacheRead":2,"cacheWrite":1,"reasoning":5,"totalTokens":20}}}"#;
        let LineOutcome::Entry(e) = p.parse_line(line, 2, 0) else {
            panic!()
        };
        assert_eq!(
            e.usage,
            Some(crate::model::Tokens {
                input: 10,
                output: 7,
                cache_read: 2,
                cache_write: 1,
                reasoning: 5,
            })
        );
        assert_same_as_reference(3, &[line.to_vec()]);
    }

    #[test]
    fn assistant_text_excludes_thinking_and_tool_calls() {
        let mut p = PiParser::resume(&header(3), None);
        let line = br#"{"type":"message","id":"a1","parentId":null,"message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan"},{"type":"text","text":"one"},{"type":"text","text":"two"}],"stopReason":"stop"}}"#;
        let LineOutcome::Entry(e) = p.parse_line(line, 2, 0) else {
            panic!()
        };
        assert_eq!(e.text_sha256, Some(runread_core::sha256_hex(b"one\ntwo")));
        let view = message_view(line).unwrap();
        assert_eq!(view.answer.as_deref(), Some("one\ntwo"));
        assert_eq!(view.body, "one\ntwo");
        let line = br#"{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","id":"c","name":"bash","arguments":{}}],"stopReason":"toolUse"}}"#;
        let LineOutcome::Entry(e) = p.parse_line(line, 3, 0) else {
            panic!()
        };
        assert!(e.has_tool_call);
        assert_eq!(e.text_sha256, None);
        let view = message_view(line).unwrap();
        assert_eq!(view.answer, None);
        assert_eq!(view.tool_calls, vec!["bash".to_string()]);
    }

    #[test]
    fn the_index_keeps_where_a_line_is_and_its_hashes_never_its_text() {
        let mut p = PiParser::resume(&header(3), None);
        let text = "x".repeat(70_000);
        let msg = serde_json::json!({"type":"message","id":"a1","parentId":null,
            "message":{"role":"assistant","content":[{"type":"text","text":text}],"stopReason":"stop"}});
        let line = msg.to_string();
        let LineOutcome::Entry(e) = p.parse_line(line.as_bytes(), 2, 1234) else {
            panic!()
        };
        assert_eq!((e.offset, e.bytes), (1234, line.len() as u64));
        assert_eq!(
            e.line_sha256.as_deref(),
            Some(runread_core::sha256_hex(line.as_bytes()).as_str())
        );
        assert_eq!(e.text_bytes, 70_000);
        assert_eq!(
            e.text_sha256.as_deref(),
            Some(runread_core::sha256_hex(text.as_bytes()).as_str())
        );
        let stored = serde_json::to_string(&*e).unwrap();
        assert!(!stored.contains("xxxxxxxx"), "no text in the index");
        let view = message_view(line.as_bytes()).unwrap();
        assert_eq!(view.answer.as_deref(), Some(text.as_str()));
    }

    fn scan_of(bytes: &[u8]) -> Scan {
        scan_of_with(bytes, ReadAhead::Allowed)
    }

    fn scan_of_with(bytes: &[u8], ahead: ReadAhead) -> Scan {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, bytes).unwrap();
        scan(&EvidenceFile::open(&p, None).unwrap(), Resume::Fresh, ahead).unwrap()
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#;

    /// A `custom` entry line of exactly `len` bytes.
    fn custom_line(id: &str, len: usize) -> String {
        let empty = format!(r#"{{"type":"custom","id":"{id}","parentId":null,"x":""}}"#);
        format!(
            r#"{{"type":"custom","id":"{id}","parentId":null,"x":"{}"}}"#,
            "y".repeat(len - empty.len())
        )
    }

    #[test]
    fn a_line_at_the_evidence_bound_is_read_and_one_byte_more_is_malformed() {
        for (len, read) in [
            (EVIDENCE_LINE_MAX_BYTES, true),
            (EVIDENCE_LINE_MAX_BYTES + 1, false),
        ] {
            let file = format!(
                "{HEADER}\n{}\n{}\n",
                custom_line("big", len),
                custom_line("after", 60)
            );
            let s = scan_of(file.as_bytes());
            let ids: Vec<&str> = s.entries.iter().map(|e| e.id.as_str()).collect();
            if read {
                assert_eq!(ids, ["big", "after"]);
                assert!(s.malformed.is_empty());
            } else {
                assert_eq!(ids, ["after"]);
                assert_eq!(s.malformed, vec![2]);
            }
            assert_eq!(s.consumed, file.len() as u64);
        }
    }

    #[test]
    fn a_file_hashed_ahead_indexes_as_its_lines_parsed_one_by_one() {
        use crate::scan::{SCAN_BATCH_BYTES, SCAN_DIGEST_AHEAD_MIN_BYTES};
        // Below, at and well past the size from which a scan reads and hashes lines on a second
        // thread (a batch ahead of the parse): messages (digested), a malformed line, a torn end.
        for size in [
            SCAN_DIGEST_AHEAD_MIN_BYTES - 1,
            SCAN_DIGEST_AHEAD_MIN_BYTES,
            3 * SCAN_DIGEST_AHEAD_MIN_BYTES + SCAN_BATCH_BYTES as u64 / 3,
        ] {
            let size = usize::try_from(size).unwrap();
            let mut file = format!("{HEADER}\n");
            let mut lines = Vec::new();
            let mut parent = "null".to_owned();
            while file.len() + 400 < size {
                let n = lines.len();
                let text = "t".repeat(n * 37 % 251);
                let line = if n % 2 == 0 {
                    format!(
                        r#"{{"type":"message","id":"m{n}","parentId":{parent},"message":{{"role":"user","content":"ask {n} {text}"}}}}"#
                    )
                } else {
                    format!(
                        r#"{{"type":"message","id":"m{n}","parentId":{parent},"message":{{"role":"assistant","content":[{{"type":"text","text":"answer {n} {text}"}}]}}}}"#
                    )
                };
                parent = format!("\"m{n}\"");
                file.push_str(&line);
                file.push('\n');
                lines.push(line);
            }
            lines.push("{not json".to_owned());
            file.push_str("{not json\n");
            let complete = file.len();
            file.push_str(&"x".repeat(size - complete));
            assert_eq!(file.len(), size);

            let s = scan_of(file.as_bytes());
            // Read ahead or not (as ingest's busy readers ask), the same scan.
            let alone = scan_of_with(file.as_bytes(), ReadAhead::Off);
            assert_eq!(
                (&alone.entries, &alone.malformed, alone.consumed, alone.torn),
                (&s.entries, &s.malformed, s.consumed, s.torn)
            );
            let mut p = PiParser::resume(&header(3), None);
            let mut offset = HEADER.len() as u64 + 1;
            let (mut entries, mut malformed) = (Vec::new(), Vec::new());
            for (i, line) in lines.iter().enumerate() {
                let line_no = i as u64 + 2;
                match p.parse_line(line.as_bytes(), line_no, offset) {
                    LineOutcome::Entry(e) => entries.push(*e),
                    LineOutcome::Malformed => malformed.push(line_no),
                    other => panic!("line {line_no}: {other:?}"),
                }
                offset += line.len() as u64 + 1;
            }
            assert!(entries.len() > 100, "{size} bytes");
            assert!(entries.iter().all(|e| e.line_sha256.is_some()));
            assert_eq!(s.entries, entries, "{size} bytes");
            assert_eq!(s.malformed, malformed, "{size} bytes");
            assert_eq!(s.malformed, vec![lines.len() as u64 + 1]);
            assert_eq!(
                (s.consumed, s.torn),
                (complete as u64, true),
                "{size} bytes"
            );
            assert_eq!(s.lines, lines.len() as u64 + 1);
        }
    }

    #[test]
    fn a_large_file_cut_short_under_the_read_ahead_is_refused_not_read_short() {
        use crate::scan::SCAN_DIGEST_AHEAD_MIN_BYTES;
        // Read and hashed on the second thread: its failure reaches the scan, nothing after it.
        let line = custom_line("e", 1000);
        let mut file = format!("{HEADER}\n");
        let mut n = 0;
        while (file.len() as u64) < 2 * SCAN_DIGEST_AHEAD_MIN_BYTES {
            n += 1;
            file.push_str(&line.replace("\"e\"", &format!("\"e{n}\"")));
            file.push('\n');
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, &file).unwrap();
        let opened = EvidenceFile::open(&p, None).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(SCAN_DIGEST_AHEAD_MIN_BYTES)
            .unwrap();
        assert_eq!(
            scan(&opened, Resume::Fresh, ReadAhead::Allowed).map(|s| s.entries.len()),
            Err(ScanError::Read(crate::file::ReadError::ChangedDuringRead))
        );
    }

    #[test]
    fn reading_stops_at_the_line_count_bound_and_says_so_only_when_more_follows() {
        let line = custom_line("e", 60);
        for (lines, over) in [
            (EVIDENCE_FILE_MAX_LINES, false),
            (EVIDENCE_FILE_MAX_LINES + 1, true),
        ] {
            let mut file = format!("{HEADER}\n");
            for n in 2..=lines {
                file.push_str(&line.replace("\"e\"", &format!("\"e{n}\"")));
                file.push('\n');
            }
            let s = scan_of(file.as_bytes());
            assert_eq!(s.over_bounds, over, "{lines} lines");
            assert_eq!(s.lines, EVIDENCE_FILE_MAX_LINES.min(lines));
            assert_eq!(s.entries.len() as u64, s.lines - 1);
        }
    }

    #[test]
    fn malformed_lines_are_reported_not_fatal() {
        let mut p = PiParser::resume(&header(3), None);
        assert_eq!(p.parse_line(b"{not json", 2, 0), LineOutcome::Malformed);
        assert_eq!(p.parse_line(b"[1,2]", 3, 0), LineOutcome::Malformed);
        assert_eq!(
            p.parse_line(br#"{"type":"message","message":{"role":"user"}}"#, 4, 0),
            LineOutcome::Malformed
        );
        assert_eq!(p.parse_line(b"   ", 5, 0), LineOutcome::Blank);
    }

    /// The `Value`-tree reader this crate used before `line`: the reference the borrowed reader
    /// must agree with, except that it hashes every message.
    struct Reference {
        version: u8,
        last_id: Option<String>,
    }

    fn ref_user_text(content: &Value) -> String {
        match content {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => join_text_blocks(blocks),
            _ => String::new(),
        }
    }

    impl Reference {
        /// The entry, and the view a reader would be served of it.
        fn parse_line(&mut self, line: &[u8], line_no: u64) -> (LineOutcome, Option<MessageView>) {
            if line.iter().all(u8::is_ascii_whitespace) {
                return (LineOutcome::Blank, None);
            }
            let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(line) else {
                return (LineOutcome::Malformed, None);
            };
            let Some(kind) = obj.get("type").and_then(Value::as_str) else {
                return (LineOutcome::Malformed, None);
            };
            if kind == "session" {
                // A second header inside a file is not something Pi writes.
                return (LineOutcome::Malformed, None);
            }
            // The view depends on the line alone, not on the entry's acceptance.
            let view = (kind == "message")
                .then(|| obj.get("message"))
                .flatten()
                .and_then(|msg| {
                    let m = msg.as_object()?;
                    let role = m.get("role").and_then(Value::as_str)?;
                    let content = m.get("content");
                    let body = match role {
                        "bashExecution" => m
                            .get("output")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .unwrap_or_default(),
                        _ => content.map(ref_user_text).unwrap_or_default(),
                    };
                    let has_content =
                        content.is_some_and(|c| c.as_array().is_none_or(|a| !a.is_empty()));
                    let blocks = content
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or(&[]);
                    let has_tool_call = blocks.iter().any(|b| block_type(b) == Some("toolCall"));
                    Some(MessageView {
                        role: role.to_owned(),
                        body_unavailable: body.is_empty() && has_content && role != "assistant",
                        body,
                        tool_name: m.get("toolName").and_then(Value::as_str).map(str::to_owned),
                        tool_calls: blocks
                            .iter()
                            .filter(|b| block_type(b) == Some("toolCall"))
                            .filter_map(|b| {
                                b.get("name").and_then(Value::as_str).map(str::to_owned)
                            })
                            .collect(),
                        answer: (role == "assistant" && !has_tool_call)
                            .then(|| join_text_blocks(blocks)),
                        cwd: None,
                        git_branch: None,
                        agent_version: None,
                        provider: None,
                    })
                });
            let (id, parent_id) = if self.version == 1 {
                (format!("v1-L{line_no}"), self.last_id.clone())
            } else {
                let Some(id) = obj.get("id").and_then(Value::as_str) else {
                    return (LineOutcome::Malformed, view);
                };
                let parent = match obj.get("parentId") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(p)) => Some(p.clone()),
                    Some(_) => return (LineOutcome::Malformed, view),
                };
                if !runread_core::target::is_id(id) {
                    return (LineOutcome::Malformed, view);
                }
                (id.to_owned(), parent)
            };
            let mut e = EntrySummary {
                parent_id,
                kind: entry_kind(kind).unwrap_or(EntryKind::Unrecognised),
                body_bytes: view.as_ref().map_or(0, |v| v.body.len() as u64),
                timestamp: obj
                    .get("timestamp")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                ..EntrySummary::at(line_no, 0, line.len() as u64, id)
            };
            if e.kind == EntryKind::Unrecognised {
                self.last_id = Some(e.id.clone());
                let seen = crate::model::Unrecognised::new(line_no, kind, None);
                return (LineOutcome::Unrecognised(Box::new(e), seen), view);
            }
            match e.kind {
                EntryKind::Message => {
                    let Some(msg @ Value::Object(m)) = obj.get("message") else {
                        return (LineOutcome::Malformed, view);
                    };
                    let Some(role) = m.get("role").and_then(Value::as_str) else {
                        return (LineOutcome::Malformed, view);
                    };
                    e.line_sha256 = Some(runread_core::sha256_hex(line));
                    e.role = Some(role.to_owned());
                    e.message_sha256 = Some(message_sha256(msg));
                    e.stop_reason = m
                        .get("stopReason")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    e.provider = m.get("provider").and_then(Value::as_str).map(str::to_owned);
                    e.model = m.get("model").and_then(Value::as_str).map(str::to_owned);
                    e.usage = m
                        .get("usage")
                        .and_then(|u| crate::Tokens::from_json(u, crate::usage::PI_NAMES));
                    let content = m.get("content");
                    e.upstream_truncated =
                        m.get("truncated").and_then(Value::as_bool).unwrap_or(false)
                            || msg
                                .pointer("/details/truncation/truncated")
                                .and_then(Value::as_bool)
                                .unwrap_or(false);
                    if role == "assistant" {
                        let blocks = content
                            .and_then(Value::as_array)
                            .map(Vec::as_slice)
                            .unwrap_or(&[]);
                        e.has_tool_call = blocks.iter().any(|b| block_type(b) == Some("toolCall"));
                        if !e.has_tool_call {
                            let text = join_text_blocks(blocks);
                            e.text_bytes = text.len() as u64;
                            e.text_sha256 = Some(runread_core::sha256_hex(text.as_bytes()));
                        }
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
            (LineOutcome::Entry(Box::new(e)), view)
        }
    }

    /// Parses `lines` with both readers (as one file of `version`) and asserts they agree, on
    /// the index entry and on the view a reader is served.
    fn assert_same_as_reference(version: u8, lines: &[Vec<u8>]) {
        let mut new = PiParser::resume(&header(version), None);
        let mut old = Reference {
            version,
            last_id: None,
        };
        for (i, line) in lines.iter().enumerate() {
            let n = i as u64 + 2;
            let (mut want, want_view) = old.parse_line(line, n);
            if let LineOutcome::Entry(e) = &mut want {
                let hashed = e
                    .role
                    .as_deref()
                    .is_some_and(|r| hashed_role(r, e.has_tool_call));
                if !hashed {
                    e.message_sha256 = None;
                }
            }
            let got = new.parse_line(line, n, 0);
            assert_eq!(got, want, "line {n}: {}", String::from_utf8_lossy(line));
            assert_eq!(
                message_view(line),
                want_view,
                "view of line {n}: {}",
                String::from_utf8_lossy(line)
            );
        }
    }

    fn fixture_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                fixture_files(&p, out);
            } else if p.extension().is_some_and(|e| e == "jsonl") {
                out.push(p);
            }
        }
    }

    #[test]
    fn borrowed_reader_agrees_with_the_value_reader_on_every_fixture() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pi");
        let mut files = vec![];
        fixture_files(&root, &mut files);
        assert!(files.len() >= 10, "fixtures found: {files:?}");
        let mut hashed = 0;
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            let mut lines = bytes.split(|b| *b == b'\n');
            let Some(h) = lines.next().and_then(parse_header) else {
                continue; // not a session file (a recorded event stream)
            };
            let lines: Vec<Vec<u8>> = lines.map(<[u8]>::to_vec).collect();
            assert_same_as_reference(h.version, &lines);
            let mut p = PiParser::resume(&h, None);
            for (i, l) in lines.iter().enumerate() {
                if let LineOutcome::Entry(e) = p.parse_line(l, i as u64 + 2, 0)
                    && let Some(sha) = &e.message_sha256
                {
                    // The streamed hash is the hash of the canonical form.
                    let v: Value = serde_json::from_slice(l).unwrap();
                    let whole =
                        runread_core::sha256_hex(&runread_core::canonical::to_vec(&v["message"]));
                    assert_eq!(sha, &whole);
                    hashed += 1;
                }
            }
        }
        assert!(hashed > 20, "hashed messages: {hashed}");
    }

    #[test]
    fn borrowed_reader_agrees_with_the_value_reader_on_odd_lines() {
        let deep = |n: usize| {
            format!(
                r#"{{"type":"custom","id":"d","x":{}1{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        let lines: Vec<String> = vec![
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"},"message":{"role":"assistant","content":[]}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"user","content":"x"},"message":5}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"user","content":"x","role":"toolResult"}}"#.into(),
            r#"{"type":"custom","id":"a","x":1e400}"#.into(),
            r#"{"type":"custom","id":"a","x":-0,"y":1.5e-300,"z":18446744073709551616}"#.into(),
            r#"{"type":"custom","id":"a","x":"\ud800"}"#.into(),
            r#"{"type":"custom","id":"a","x":"\ud83d\ude00 \u00e9"}"#.into(),
            "{\"type\":\"custom\",\"id\":\"a\",\"x\":\"a\tb\"}".into(),
            r#"{"type":"custom","id":"a","x":"\q"}"#.into(),
            deep(126),
            deep(127),
            deep(200),
            r#"{"type":5,"id":"a"}"#.into(),
            r#"{"id":"a"}"#.into(),
            r#"{"type":"label","id":7}"#.into(),
            r#"{"type":"label","id":"a b"}"#.into(),
            r#"{"type":"label","id":"a","parentId":3}"#.into(),
            r#"{"type":"label","id":"a","parentId":"p","timestamp":5}"#.into(),
            r#"{"ty\u0070e":"message","\u0069d":"e","message":{"r\u006fle":"user","content":"h\u00e9"}}"#.into(),
            r#"{"type":"custom","id":"a"} x"#.into(),
            r#"{"type":"custom","id":"a"}   "#.into(),
            r#"[{"type":"custom","id":"a"}]"#.into(),
            r#""message""#.into(),
            r#"{"type":"message","id":"a","message":{"role":"user","content":null}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"user","content":{"text":"x"}}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"user","content":[]}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"user","content":[1,"s",null,{"type":"image"},{"type":"text","text":"t"},{"type":"text","text":5}]}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"toolResult","toolName":"bash","content":[{"type":"image","data":"AAAA"}],"details":{"truncation":{"truncated":true}}}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"toolResult","content":[],"details":[{"truncation":{"truncated":true}}],"truncated":"yes"}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"toolResult","content":[],"details":{"truncation":{"truncated":1}},"truncated":true}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"bashExecution","output":"out\n","content":"ignored"}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"bashExecution","output":5}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"bash"},{"type":"toolCall","name":7},{"type":"toolCall"},{"type":"text","text":"a"}],"stopReason":"toolUse","provider":"p","model":"m"}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"assistant","content":"plain","stopReason":"stop"}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x\ny"},{"type":"text","text":"\u65e5\u672c"}],"stopReason":"stop","usage":{"input":1.0,"cost":{"total":0.25}}}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":"custom","content":"c"}}"#.into(),
            r#"{"type":"message","id":"a","message":{"role":5}}"#.into(),
            r#"{"type":"message","id":"a","message":"m"}"#.into(),
            r#"{"type":"message","id":"a"}"#.into(),
            r#"{"type":"session_info","id":"a","name":"n","name":"m"}"#.into(),
            r#"{"type":"session_info","id":"a","name":["n"]}"#.into(),
            r#"{"type":"model_change","id":"a","provider":"p","modelId":"m"}"#.into(),
            r#"{"type":"model_change","id":"a","provider":null,"modelId":{"x":1}}"#.into(),
            r#"{"type":"session","id":"a","cwd":"/"}"#.into(),
        ];
        let mut bytes: Vec<Vec<u8>> = lines.into_iter().map(String::into_bytes).collect();
        bytes.push(b"{\"type\":\"custom\",\"id\":\"a\",\"x\":\"\xff\"}".to_vec());
        bytes.push(b"{\"type\":\"custom\",\"id\":\"a\xff\"}".to_vec());
        bytes.push(b"{\"type\":\"custom\",\"id\":\"a\",\"\xc3\":1}".to_vec());
        bytes.push(vec![]);
        bytes.push(b" \t ".to_vec());
        for version in [1, 3] {
            assert_same_as_reference(version, &bytes);
        }
    }

    const KEYS: &[&str] = &[
        "type",
        "id",
        "parentId",
        "timestamp",
        "message",
        "role",
        "content",
        "text",
        "name",
        "stopReason",
        "toolName",
        "output",
        "provider",
        "model",
        "modelId",
        "details",
        "truncation",
        "truncated",
        "other",
    ];
    const WORDS: &[&str] = &[
        "message",
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "toolCall",
        "text",
        "session_info",
        "model_change",
        "stop",
        "length",
        "e1",
        "e2",
        "a b",
        "",
    ];

    /// JSON text (as written, so keys may repeat) built from the words and keys entries use.
    fn json_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just("null".to_owned()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            Just("1e400".to_owned()),
            Just("2.5".to_owned()),
            prop::sample::select(WORDS).prop_map(|w| format!("\"{w}\"")),
            Just(r#""\ud800""#.to_owned()),
            Just(r#""a\nb\u00e9""#.to_owned()),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((prop::sample::select(KEYS), inner), 0..7).prop_map(|kv| {
                    let kv: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", kv.join(","))
                }),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn borrowed_reader_agrees_with_the_value_reader_on_generated_lines(
            kind in proptest::sample::select(WORDS),
            rest in proptest::collection::vec((proptest::sample::select(KEYS), json_text()), 0..6),
        ) {
            let rest: Vec<String> = rest.iter().map(|(k, v)| format!(",\"{k}\":{v}")).collect();
            let line = format!(r#"{{"type":"{kind}","id":"e1"{}}}"#, rest.concat());
            for version in [1, 3] {
                assert_same_as_reference(version, &[line.clone().into_bytes()]);
            }
        }
    }

    #[test]
    fn message_hash_ignores_key_order() {
        let a: Value = serde_json::from_str(r#"{"role":"assistant","content":[],"x":1}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"x":1,"content":[],"role":"assistant"}"#).unwrap();
        assert_eq!(message_sha256(&a), message_sha256(&b));
    }
}
