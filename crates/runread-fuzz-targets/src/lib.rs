//! The fuzz targets of runread: one `pub fn NAME(data: &[u8])` per target, holding the whole
//! target — how the input is read and the properties checked. A panic is a finding.
//!
//! `fuzz/fuzz_targets/NAME.rs` only calls `NAME(data)` under cargo-fuzz (`scripts/fuzz`), and
//! this crate's `tests/corpora.rs` replays every committed input under `fuzz/corpus/NAME/` on
//! stable in the normal test suite, so a fixed finding stays fixed.
//!
//! | target | what | property |
//! | --- | --- | --- |
//! | [`pi_line`] | one line through Pi's line parser (v1, v2, v3), `message_view`, `parse_header` | no panic; an entry describes exactly its line; what is served from a message line agrees with what was indexed from it, and with `serde_json::Value` |
//! | [`pi_scan`] | a whole file through `pi::scan`, in one pass and in two (the file grown in between) | no panic; entries lie within the consumed lines and hash to their line; resuming gives what one pass gives |
//! | [`claude_scan`], [`codex_scan`], [`gemini_scan`] | the same for Claude Code's, Codex's and Gemini CLI's readers, then the runs cut and every entry's line read back as served | as `pi_scan`; a run names only entries' lines |
//! | [`opencode_view`] | OpenCode's event log (its database's records as lines) the same way, and every line through `message_view` | as `claude_scan`; a view agrees with a plain `serde_json::Value` read: roles, texts (a prompt unquoted), answers, tool names only |
//! | [`cursor`] | the HMAC cursor codec | round trip; refused for any other purpose, target, version or key; a string decodes only if it is exactly what the key encodes |
//! | [`body_guard`] | the JSON-RPC body guard (`is_single_message`, `is_single_request`) | no panic; agrees with a plain `serde_json::Value` check |
//! | [`redactor`] | the known-secret redactor | no secret out, for any split, page size, cut or body; paging gives exactly `mask` |
//! | [`console_form`] | the console's url-encoded form parser (`runread_console::form::Fields`) | no panic; over `FORM_MAX_BYTES` refused, within it parsed (tested at N and N+1); each field exactly what `form_urlencoded` reads, a name sent twice not given; a browser's encoding round-trips |
//! | [`console_query`] | the console's query parser (`runread_console::form::parse_query`) with its pages' field shapes | no panic; accepted exactly when every field fits (a field given twice, a required one missing or a bad number refused); a link's query round-trips |
//! | [`oauth_query`] | the connector's authorization page: its query parser (`runread_mcp::connector::parse_query`) and the request's checks (`runread_service::oauth::check_authorize`) | no panic; over the bound or a name given twice refused, else exactly what `form_urlencoded` reads; an accepted request names a registered redirect URI, the code flow, S256 with a well-formed challenge, exactly this resource, a bounded printable `state` and feature names; a client's well-formed request built from the input is accepted |
//! | [`oauth_form`] | the token and revocation endpoints' form (`parse_form`, `oauth::single`), and what they read of it (`scope_features`, `is_redirect_uri`) | no panic; the pairs are exactly what `form_urlencoded` reads; a parameter is given exactly when sent once, refused `invalid_request` when sent twice; an accepted scope is feature names; an accepted redirect URI is `https`, or `http` to loopback, with no fragment or userinfo, within its bound |
//! | [`oauth_registration`] | dynamic client registration (`parse_registration`, `oauth::check_registration`) | no panic; a body is read exactly when it is a JSON object whose fields have their types; an accepted registration has 1..=4 redirect URIs runread accepts, no secret, the code flow, and a name shown as written |
#![forbid(unsafe_code)]
// A panic is a finding (see above): the targets assert with expect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;

use runread_core::cursor::{CursorKey, Purpose};
use runread_core::limits::CURSOR_MAX_BYTES;
use runread_core::redact::{MASK, Redactor, SECRET_MIN_BYTES};
use runread_core::{Target, sha256_hex};
use runread_sessions::pi::{self, EntryKind, Header, LineOutcome, PiParser, Resume, Scan};
use runread_sessions::{Agent, EvidenceFile};
use serde_json::Value;

/// Reads fields off the front of a fuzz input. Past its end every read yields zeros, so every
/// input is some case.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        let mut out = [0u8; 8];
        for b in &mut out {
            *b = self.byte();
        }
        u64::from_be_bytes(out)
    }

    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }

    /// A string of at most `max` bytes of input (invalid UTF-8 replaced).
    fn text(&mut self, max: usize) -> String {
        let n = usize::from(self.byte()) % (max + 1);
        String::from_utf8_lossy(self.bytes(n)).into_owned()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

// ---- Pi session lines ----

fn header(version: u8) -> Header {
    Header {
        session_id: "fuzz".into(),
        version,
        cwd: "/fuzz".into(),
        timestamp: None,
        parent_session: None,
        line_sha256: String::new(),
        line_bytes: 0,
        fork: None,
        agent_version: None,
    }
}

/// One line of a Pi session file, as the parser of each header version sees it (line 2, after
/// the entry `prev`), as a reader is served it (`message_view`) and as a header (`parse_header`).
///
/// An entry describes exactly its line (offset, length, hash); a v1 entry is `v1-L2`, child of
/// `prev`, a v2/v3 entry has a well-formed id. For a message entry, what a reader is served from
/// the line agrees with what was indexed from it: role, body length, final-answer text and hash.
/// The parser's own streaming deserializer agrees with `serde_json::Value` (it accepts the line,
/// and reads the same role and text blocks), and the whole-message hash is of serde_json's
/// compact form with sorted keys. Under v1 (no ids to check), every line a reader could
/// be served from is indexed.
pub fn pi_line(data: &[u8]) {
    if let Some(h) = pi::parse_header(data) {
        assert_eq!(h.line_bytes, data.len() as u64);
        assert_eq!(h.line_sha256, sha256_hex(data));
        assert!((1..=3).contains(&h.version));
    }
    let view = pi::message_view(data);
    let value: Option<Value> = serde_json::from_slice(data).ok();
    let offset = 4096;
    for version in 1..=3 {
        let mut parser = PiParser::resume(&header(version), Some("prev".into()));
        match parser.parse_line(data, 2, offset) {
            LineOutcome::Entry(e) => {
                assert_eq!((e.line, e.offset, e.bytes), (2, offset, data.len() as u64));
                if version == 1 {
                    assert_eq!(e.id, "v1-L2");
                    assert_eq!(e.parent_id.as_deref(), Some("prev"));
                } else {
                    assert!(runread_core::target::is_id(&e.id), "{:?}", e.id);
                }
                let value = value.as_ref().expect("an entry line is JSON to serde_json");
                assert!(value.get("type").and_then(Value::as_str).is_some());
                if e.kind != EntryKind::Message {
                    assert_eq!(e.line_sha256, None);
                    assert_eq!(e.body_bytes, 0);
                    continue;
                }
                assert_eq!(e.line_sha256.as_deref(), Some(sha256_hex(data).as_str()));
                let view = view.as_ref().expect("a message entry has a message view");
                assert_eq!(e.role.as_deref(), Some(view.role.as_str()));
                assert_eq!(e.body_bytes, view.body.len() as u64, "served body length");
                let message = value.get("message").expect("message");
                assert_eq!(
                    message.get("role").and_then(Value::as_str),
                    Some(view.role.as_str())
                );
                if let Some(text_sha) = &e.text_sha256 {
                    let answer = view.answer.as_ref().expect("an answer to serve");
                    assert_eq!(&sha256_hex(answer.as_bytes()), text_sha);
                    assert_eq!(e.text_bytes, answer.len() as u64);
                    // The same text as the `Value` reading (the event stream's side).
                    let blocks = message
                        .get("content")
                        .and_then(Value::as_array)
                        .map_or(&[][..], Vec::as_slice);
                    assert_eq!(&pi::join_text_blocks(blocks), answer);
                }
                if pi::hashed_role(&view.role, e.has_tool_call) {
                    // The canonical form: serde_json's compact form with keys sorted at every
                    // depth, whatever order the line wrote them in.
                    let canonical = serde_json::to_vec(&sorted(message)).expect("serializes");
                    assert_eq!(e.message_sha256, Some(sha256_hex(&canonical)));
                    assert_eq!(pi::message_sha256(message), sha256_hex(&canonical));
                }
            }
            LineOutcome::Blank => assert!(data.iter().all(u8::is_ascii_whitespace)),
            LineOutcome::Skipped => panic!("the Pi reader skips no line as bookkeeping"),
            LineOutcome::Unrecognised(e, seen) => {
                assert_eq!(e.kind, EntryKind::Unrecognised);
                assert_eq!((e.line, seen.line), (2, 2));
                assert_eq!(e.line_sha256, None, "nothing of the line is served");
                assert_eq!(seen.agent_version, None, "Pi records no version");
                if let Some(t) = &seen.line_type {
                    assert_eq!(
                        runread_core::agent::reportable_event_type(t),
                        Some(t.as_str())
                    );
                }
            }
            LineOutcome::Malformed | LineOutcome::Header(_) => {
                assert!(
                    version != 1 || view.is_none(),
                    "a line a reader can be served from is not indexed"
                );
            }
        }
    }
}

/// `value` with the keys of every object in sorted order.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut fields: Vec<(&String, &Value)> = map.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        scalar => scalar.clone(),
    }
}

/// A whole session file through `pi::scan`: once as it is, and once in two passes, first its
/// first `k` bytes (`k` picked from the input), then resumed after the file grew to all of it.
///
/// Every entry lies within the consumed, complete lines and its bytes hash to its `line_sha256`;
/// the read ends torn exactly when bytes follow the last newline; and the two passes find
/// exactly what the one pass finds (ingest reads files incrementally).
pub fn pi_scan(data: &[u8]) {
    scan_in_two_passes(Agent::Pi, data);
}

/// A whole Claude Code session file through the Claude Code reader, as [`pi_scan`] does; then
/// its runs cut and every entry's line read back as served (no panic, a run's lines are entries).
pub fn claude_scan(data: &[u8]) {
    scan_in_two_passes(Agent::Claude, data);
}

/// A whole Codex rollout file through the Codex reader, as [`claude_scan`] does.
pub fn codex_scan(data: &[u8]) {
    scan_in_two_passes(Agent::Codex, data);
}

/// A whole Gemini CLI chat file through the Gemini CLI reader (upserts, snapshots, rewinds), as
/// [`claude_scan`] does.
pub fn gemini_scan(data: &[u8]) {
    scan_in_two_passes(Agent::Gemini, data);
}

/// A whole GitHub Copilot CLI `events.jsonl` through the Copilot CLI reader (runs appended,
/// subagents inline), as [`claude_scan`] does.
pub fn copilot_scan(data: &[u8]) {
    scan_in_two_passes(Agent::Copilot, data);
}

/// OpenCode's event log as runread reads a session from its database (one
/// `{"type":…,"data":…}` record per line) through the OpenCode reader, as [`claude_scan`] does;
/// and every line of the input, as arbitrary bytes, through `message_view`: what a reader would
/// be shown agrees with a plain `serde_json::Value` read of the line (`check_opencode_view`).
/// The committed corpus is real event logs of the fixtures, for the fuzzer to mutate.
pub fn opencode_view(data: &[u8]) {
    scan_in_two_passes(Agent::OpenCode, data);
    for line in data.split(|b| *b == b'\n') {
        check_opencode_view(line);
    }
}

/// What `message_view` shows of an OpenCode line, if anything, is what the line says read as a
/// `Value`: the header's role only for `session.created.1`; a message's role, no text, and an
/// (empty) answer exactly for a model message that ended `stop` or `length` without an error; a
/// text part's text (a prompt's — a part with no `time` — without one pair of quotes), its answer
/// only a model's; a tool part's tool name and nothing else (never its input or output); a
/// synthetic or ignored text part, reasoning and any other line: nothing.
fn check_opencode_view(line: &[u8]) {
    let Some(view) = runread_sessions::message_view(Agent::OpenCode, line) else {
        return;
    };
    // The reader skips the fields it does not read unchecked: bytes there that are not UTF-8
    // (read here replaced) or not a valid escape (then nothing to compare) are no finding.
    let Ok(v) = serde_json::from_slice::<Value>(line)
        .or_else(|_| serde_json::from_str::<Value>(&String::from_utf8_lossy(line)))
    else {
        return;
    };
    let text_of = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    match v["type"].as_str().expect("a view's line has a type") {
        "session.created.1" => {
            assert_eq!(view.role, "session");
            assert!(view.body.is_empty() && view.tool_calls.is_empty());
            assert_eq!(view.answer, None);
        }
        "message.updated.1" => {
            let info = &v["data"]["info"];
            assert_eq!(Some(view.role.as_str()), info["role"].as_str());
            assert!(view.body.is_empty() && view.tool_calls.is_empty());
            let answered = view.role == "assistant"
                && info["error"].is_null()
                && matches!(info["finish"].as_str(), Some("stop" | "length"));
            assert_eq!(view.answer, answered.then(String::new));
        }
        "message.part.updated.1" => {
            let part = &v["data"]["part"];
            match part["type"].as_str() {
                Some("text") => {
                    assert!(part["synthetic"] != true && part["ignored"] != true);
                    let text = text_of(&part["text"]);
                    if part["time"].is_null() {
                        assert_eq!(view.role, "user");
                        let unquoted = text
                            .strip_prefix('"')
                            .and_then(|t| t.strip_suffix('"'))
                            .unwrap_or(&text);
                        assert_eq!(view.body, unquoted);
                        assert_eq!(view.answer, None);
                    } else {
                        assert_eq!(view.role, "assistant");
                        assert_eq!(view.body, text);
                        assert_eq!(view.answer.as_deref(), Some(text.as_str()));
                    }
                    assert!(view.tool_calls.is_empty());
                }
                Some("tool") => {
                    assert_eq!(view.role, "assistant");
                    assert_eq!(view.tool_calls, [text_of(&part["tool"])]);
                    assert!(view.body.is_empty());
                    assert_eq!(view.answer, None);
                }
                other => panic!("a view of a {other:?} part"),
            }
        }
        other => panic!("a view of a {other} line"),
    }
}

fn scan_in_two_passes(agent: Agent, data: &[u8]) {
    let k = usize::try_from(
        data.iter()
            .fold(0u64, |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
            % (data.len() as u64 + 1),
    )
    .unwrap_or(0);
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(&data[..k]).expect("write");
    file.flush().expect("flush");
    let open = |path: &std::path::Path| EvidenceFile::open(path, None).expect("open");
    let first = runread_sessions::scan(agent, &open(file.path()), Resume::Fresh);
    file.write_all(&data[k..]).expect("write");
    file.flush().expect("flush");
    let whole = runread_sessions::scan(agent, &open(file.path()), Resume::Fresh);
    if let Ok(whole) = &whole {
        check_scan(agent, whole, data);
        check_runs(agent, whole, data);
    }
    let Ok(first) = first else { return };
    check_scan(agent, &first, &data[..k]);
    let whole = whole.expect("the header read in the first pass reads again");
    if first.over_bounds || whole.over_bounds {
        return;
    }
    let rest = runread_sessions::scan(
        agent,
        &open(file.path()),
        Resume::After {
            header: &first.header,
            offset: first.consumed,
            lines: first.lines,
            last_id: first.entries.last().map(|e| e.id.as_str()),
        },
    )
    .expect("resumed scan");
    assert_eq!(rest.header, whole.header);
    let entries: Vec<_> = first.entries.iter().chain(&rest.entries).cloned().collect();
    assert_eq!(entries, whole.entries);
    let malformed: Vec<u64> = first
        .malformed
        .iter()
        .chain(&rest.malformed)
        .copied()
        .collect();
    assert_eq!(malformed, whole.malformed);
    assert_eq!(
        (rest.consumed, rest.lines, rest.torn),
        (whole.consumed, whole.lines, whole.torn)
    );
    assert_eq!(first.bytes_read + rest.bytes_read, whole.bytes_read);
}

/// The runs cut from a scan name only its entries' lines, and every entry's line reads back as a
/// view or as nothing, never a panic.
fn check_runs(agent: Agent, scan: &Scan, data: &[u8]) {
    let branch = runread_sessions::cut_runs(agent, &scan.entries, &scan.malformed, scan.torn);
    let lines: std::collections::HashSet<u64> = scan.entries.iter().map(|e| e.line).collect();
    for run in &branch.runs {
        for line in run
            .message_lines
            .iter()
            .chain(run.final_lines.iter().map(|l| &l.line))
        {
            assert!(lines.contains(line), "a run names a line that is no entry");
        }
    }
    for e in &scan.entries {
        let (start, end) = (e.offset as usize, (e.offset + e.bytes) as usize);
        let _ = runread_sessions::message_view(agent, &data[start..end]);
    }
}

fn check_scan(agent: Agent, scan: &Scan, data: &[u8]) {
    let len = data.len() as u64;
    assert!(scan.consumed <= len);
    assert_eq!(scan.bytes_read, scan.consumed);
    if !scan.over_bounds {
        assert_eq!(scan.torn, scan.consumed < len);
    }
    // Pi's header, Codex's `session_meta` and OpenCode's `session.created.1` are not entries; Claude Code's first line and Copilot
    // CLI's `session.start` are.
    let mut last_line = if matches!(agent, Agent::Claude | Agent::Copilot) {
        0
    } else {
        1
    };
    for e in &scan.entries {
        assert!(e.line > last_line && e.line <= scan.lines);
        last_line = e.line;
        let end = e.offset.checked_add(e.bytes).expect("offset + bytes");
        assert!(end < scan.consumed, "an entry past the consumed lines");
        let (start, end) = (e.offset as usize, end as usize);
        assert!(start == 0 || data[start - 1] == b'\n');
        assert_eq!(data[end], b'\n');
        if let Some(sha) = &e.line_sha256 {
            assert_eq!(&sha256_hex(&data[start..end]), sha);
        }
    }
}

// ---- cursors ----

const PURPOSES: [Purpose; 3] = [Purpose::FinalAnswer, Purpose::History, Purpose::Artifact];

/// The cursor codec, for a key, target, purpose, version and position read from the input.
///
/// The cursor round-trips, fits [`CURSOR_MAX_BYTES`], and is refused for every other purpose, for
/// the target with any one field changed, another version and another key. A string — the rest of
/// the input, or the cursor edited by it — decodes only if it is exactly what the key encodes for
/// the position it decodes to.
pub fn cursor(data: &[u8]) {
    let mut u = Input(data);
    let mut key = [0u8; 32];
    for b in &mut key {
        *b = u.byte();
    }
    let purpose = PURPOSES[usize::from(u.byte()) % PURPOSES.len()];
    let target = Target {
        instance: u.text(40),
        revision: u.u64(),
        workspace_id: u.text(40),
        session_id: u.text(40),
        generation: u.u64(),
        run_id: u.text(40),
    };
    let version = u.text(40);
    let position = u.u64();
    let codec = CursorKey::from_bytes(key);

    let c = codec.encode(purpose, &target, &version, position);
    assert!(c.len() <= CURSOR_MAX_BYTES);
    assert!(
        c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert_eq!(codec.decode(&c, purpose, &target, &version), Some(position));
    for other in PURPOSES.into_iter().filter(|&p| p != purpose) {
        assert_eq!(codec.decode(&c, other, &target, &version), None);
    }
    let mut others = Vec::new();
    for field in 0..6 {
        let mut t = target.clone();
        match field {
            0 => t.instance.push('x'),
            1 => t.revision = t.revision.wrapping_add(1),
            2 => t.workspace_id.push('x'),
            3 => t.session_id.push('x'),
            4 => t.generation = t.generation.wrapping_add(1),
            _ => t.run_id.push('x'),
        }
        others.push(t);
    }
    for t in &others {
        assert_eq!(codec.decode(&c, purpose, t, &version), None);
    }
    assert_eq!(
        codec.decode(&c, purpose, &target, &format!("{version}x")),
        None
    );
    let mut other_key = key;
    other_key[0] ^= 1;
    assert_eq!(
        CursorKey::from_bytes(other_key).decode(&c, purpose, &target, &version),
        None
    );

    // Strings it did not encode.
    let rest = u.0;
    let decodes_only_its_own = |s: &str| {
        if let Some(p) = codec.decode(s, purpose, &target, &version) {
            assert_eq!(
                s,
                codec.encode(purpose, &target, &version, p),
                "accepted {s:?}"
            );
        }
    };
    decodes_only_its_own(&String::from_utf8_lossy(rest));
    // The cursor edited by the rest of the input: pairs (where, what), the last byte odd-length
    // as a truncation.
    let mut edited = c.clone().into_bytes();
    for pair in rest.chunks(2) {
        match *pair {
            [at, b] => {
                let at = usize::from(at) % (edited.len() + 1);
                match b % 3 {
                    0 if at < edited.len() => edited[at] = b,
                    1 => edited.insert(at, b),
                    _ if at < edited.len() => {
                        edited.remove(at);
                    }
                    _ => edited.push(b),
                }
            }
            [n] => edited.truncate(usize::from(n)),
            _ => {}
        }
        decodes_only_its_own(&String::from_utf8_lossy(&edited));
    }
}

// ---- the JSON-RPC body guard ----

/// The body guard on any body: `is_single_message` (what the HTTP layer lets through) and
/// `is_single_request` never panic and agree with a plain check over `serde_json::Value` — an
/// object with `jsonrpc` "2.0", a string `method`, no `result` and no `error`, and an `id` that is
/// a string or an integer (or, for a message, absent: a notification) — and ignore JSON
/// whitespace around the body.
pub fn body_guard(data: &[u8]) {
    use runread_mcp::guards::{is_single_message, is_single_request};
    let (message, request) = reference_single_message(data);
    let shown = || String::from_utf8_lossy(data).into_owned();
    assert_eq!(is_single_message(data), message, "{}", shown());
    assert_eq!(is_single_request(data), request, "{}", shown());
    if message {
        assert!(std::str::from_utf8(data).is_ok());
    }
    let mut padded = b" \t\r\n".to_vec();
    padded.extend_from_slice(data);
    padded.extend_from_slice(b"\n ");
    assert_eq!(is_single_message(&padded), message);
    assert_eq!(is_single_request(&padded), request);
}

/// (one message a client may send, one request).
fn reference_single_message(body: &[u8]) -> (bool, bool) {
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(body) else {
        return (false, false);
    };
    let shape = m.get("jsonrpc") == Some(&Value::String("2.0".into()))
        && matches!(m.get("method"), Some(Value::String(_)))
        && !m.contains_key("result")
        && !m.contains_key("error");
    let id = match m.get("id") {
        None => None,
        Some(Value::String(_)) => Some(true),
        Some(Value::Number(n)) => Some(n.as_i64().is_some() || n.as_u64().is_some()),
        Some(_) => Some(false),
    };
    (shape && id != Some(false), shape && id == Some(true))
}

// ---- the redactor ----

/// Secrets' alphabet when no secret may hold a character of [`MASK`]: a few characters (so that
/// secrets overlap and share prefixes), two of them multibyte (so that cuts meet characters).
const SECRET_ALPHABET: [char; 4] = ['x', 'y', 'é', '🦀'];
/// Secrets' alphabet made of [`MASK`]'s characters: a mask next to text can then form a secret
/// (the documented limit of the guarantee), so only the properties that do not need the
/// alphabets to be apart are checked.
const MASK_ALPHABET: [char; 4] = ['a', 'e', ']', 'x'];
/// Text that is not a secret or a piece of one.
const FILLER: [char; 8] = ['x', 'y', 'é', '🦀', ' ', 'a', '[', ']'];
/// Longest text built (keeps an input's cost bounded: the checks are quadratic here and there).
const TEXT_MAX_BYTES: usize = 1024;

/// The redactor, for 1–8 secrets, a text, its split into pieces (events) and a page size, all
/// read from the input.
///
/// - `mask` gives the brute-force reference: every byte of every occurrence masked, one
///   [`MASK`] per masked range — so no secret is left;
/// - `mask_segments` over the pieces gives each piece its part of that reference;
/// - paging (`complete = false`, release, resume at `given − withheld_bytes`; more text when
///   nothing was released; `complete = true` on the last page) releases exactly `mask(text)`,
///   and per piece exactly what one complete call gives; no release ends with a start of a
///   secret that the unreleased text completes;
/// - `cut_for_release` is a prefix of the masked text within the bound, ending neither in a
///   proper prefix of a secret nor of [`MASK`];
/// - `mask_unknown_before` / `mask_unknown_after` leave no proper suffix / prefix of a secret at
///   the start / end.
pub fn redactor(data: &[u8]) {
    let mut u = Input(data);
    let head = u.byte();
    let mask_letters = head & 0x80 != 0;
    let alphabet = if mask_letters {
        &MASK_ALPHABET
    } else {
        &SECRET_ALPHABET
    };
    let page = 1 + usize::from(u.byte() & 0x7f);
    let max = usize::from(u.byte()) | usize::from(u.byte()) << 8;

    let mut secrets: Vec<String> = Vec::new();
    for _ in 0..1 + (head & 7) {
        let spec = u.byte();
        let len = SECRET_MIN_BYTES + usize::from(u.byte()) % (64 - SECRET_MIN_BYTES + 1);
        // Some secrets start with a prefix or a suffix of an earlier one: they overlap it.
        let mut secret = match (spec & 3, secrets.is_empty()) {
            (1 | 2, false) => {
                let base = &secrets[usize::from(spec >> 2) % secrets.len()];
                let at = boundary(base, u.byte());
                if spec & 3 == 1 {
                    base[..at].to_owned()
                } else {
                    base[at..].to_owned()
                }
            }
            _ => String::new(),
        };
        'fill: while secret.len() < len {
            let b = u.byte();
            for i in 0..4 {
                secret.push(alphabet[usize::from(b >> (2 * i)) & 3]);
                if secret.len() >= len {
                    break 'fill;
                }
            }
        }
        secrets.push(secret);
    }
    let r = Redactor::new(&secrets).expect("secrets within the bounds");

    // The text, piece by piece; splits between events where the input says.
    let mut text = String::new();
    let mut splits = Vec::new();
    while !u.is_empty() && text.len() < TEXT_MAX_BYTES {
        let op = u.byte();
        let arg = u.byte();
        let secret = &secrets[usize::from(arg) % secrets.len()];
        match op % 6 {
            0 | 1 => {
                for i in 0..=(op >> 5) {
                    text.push(FILLER[usize::from(arg.rotate_right(u32::from(i) * 3)) % 8]);
                }
            }
            2 => text.push_str(secret),
            3 => text.push_str(&secret[..proper_boundary(secret, op >> 3)]),
            4 => text.push_str(&secret[proper_boundary(secret, op >> 3)..]),
            _ => splits.push(text.len()),
        }
    }
    splits.push(text.len());
    splits.sort_unstable();
    splits.dedup();
    let mut events = Vec::new();
    let mut start = 0;
    for &end in &splits {
        events.push(&text[start..end]);
        start = end;
    }

    // mask: the reference, no secret.
    let masked = r.mask(&text);
    assert_eq!(masked, reference(&secrets, &[&text])[0]);
    if !mask_letters {
        for s in &secrets {
            assert!(!masked.contains(s.as_str()));
        }
        assert!(!r.contains_secret(masked.as_bytes()));
        assert_eq!(r.contains_secret(text.as_bytes()), masked != text);
    }

    // Segments, complete.
    let whole = r.mask_segments(&events, true);
    assert_eq!((whole.withheld_bytes, whole.pending), (0, false));
    assert_eq!(whole.segments, reference(&secrets, &events));
    if !mask_letters {
        let joined = whole.segments.concat();
        for s in &secrets {
            assert!(!joined.contains(s.as_str()));
        }
    }

    // Paging one text.
    let released = page_through(&r, &text, &[text.len()], page, |released, unreleased| {
        if !mask_letters {
            for s in &secrets {
                for (i, _) in s.char_indices().skip(1) {
                    assert!(
                        !(released.ends_with(&s[..i]) && unreleased.starts_with(&s[i..])),
                        "released the start of a secret that the next text completes"
                    );
                }
            }
        }
    });
    assert_eq!(released.concat(), masked);
    // Paging the events.
    assert_eq!(
        page_through(&r, &text, &splits, page, |_, _| {}),
        whole.segments
    );

    // A cut for release.
    let max = max % (masked.len() + 8);
    let cut = r.cut_for_release(&masked, max);
    assert!(masked.starts_with(cut));
    if masked.len() <= max {
        assert_eq!(cut, masked);
    } else {
        assert!(cut.len() <= max);
        for s in &secrets {
            for (i, _) in s.char_indices().skip(1) {
                assert!(!cut.ends_with(&s[..i]), "{cut:?} ends with {:?}", &s[..i]);
            }
        }
        for n in 1..MASK.len() {
            assert!(!cut.ends_with(&MASK[..n]), "{cut:?} ends inside a mask");
        }
    }

    // Unknown text before / after.
    if !mask_letters {
        for t in [text.as_str(), masked.as_str()] {
            let before = r.mask_unknown_before(t);
            let after = r.mask_unknown_after(t);
            for s in &secrets {
                for (i, _) in s.char_indices().skip(1) {
                    assert!(
                        !before.starts_with(&s[i..]),
                        "{before:?} starts with {:?}",
                        &s[i..]
                    );
                    assert!(
                        !after.ends_with(&s[..i]),
                        "{after:?} ends with {:?}",
                        &s[..i]
                    );
                }
            }
        }
    }
}

/// A character boundary of `s` picked by `pick` (0 and `len` included).
fn boundary(s: &str, pick: u8) -> usize {
    let all: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    all[usize::from(pick) % all.len()]
}

/// A character boundary strictly inside `s` (secrets have at least two characters).
fn proper_boundary(s: &str, pick: u8) -> usize {
    let inner: Vec<usize> = s.char_indices().map(|(i, _)| i).skip(1).collect();
    inner[usize::from(pick) % inner.len()]
}

/// Pages through `text`, split into events ending at `ends`, as a pager does: each call gets the
/// unreleased text up to the page end (cut at the events), `complete` on the last page; it
/// releases the outputs and resumes at `given − withheld_bytes`; a call that releases nothing
/// gets a longer page. `check(released, unreleased)` runs after each call. Returns each event's
/// released text.
fn page_through(
    r: &Redactor,
    text: &str,
    ends: &[usize],
    page: usize,
    mut check: impl FnMut(&str, &str),
) -> Vec<String> {
    let starts: Vec<usize> = std::iter::once(0).chain(ends.iter().copied()).collect();
    let mut out = vec![String::new(); ends.len()];
    let mut all = String::new();
    let mut cursor = 0;
    let page_end = |from: usize| {
        let mut end = from.saturating_add(page).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        end
    };
    let mut end = page_end(cursor);
    loop {
        let last = end == text.len();
        let mut which = Vec::new();
        let mut given = Vec::new();
        for (e, &event_end) in ends.iter().enumerate() {
            let (a, b) = (starts[e].max(cursor), event_end.min(end));
            if a < b {
                which.push(e);
                given.push(&text[a..b]);
            }
        }
        let m = r.mask_segments(&given, last);
        let given_len = end - cursor;
        assert_eq!(m.segments.len(), given.len());
        assert!(m.withheld_bytes <= given_len);
        assert_eq!(m.pending, m.withheld_bytes > 0);
        if last {
            assert_eq!(m.withheld_bytes, 0);
        } else if m.withheld_bytes == given_len {
            assert!(m.segments.iter().all(String::is_empty));
            end = page_end(end);
            continue;
        }
        for (&e, s) in which.iter().zip(&m.segments) {
            out[e].push_str(s);
            all.push_str(s);
        }
        cursor = end - m.withheld_bytes;
        assert!(text.is_char_boundary(cursor));
        check(&all, &text[cursor..]);
        if last {
            return out;
        }
        end = page_end(cursor);
    }
}

/// Brute force: each segment with every byte of every occurrence of a secret (in the whole
/// text) masked, one [`MASK`] per run of masked bytes within the segment.
fn reference(secrets: &[String], segments: &[&str]) -> Vec<String> {
    let text = segments.concat();
    let bytes = text.as_bytes();
    let mut covered = vec![false; bytes.len()];
    for s in secrets {
        let s = s.as_bytes();
        for i in 0..(bytes.len() + 1).saturating_sub(s.len()) {
            if bytes[i] == s[0] && &bytes[i..i + s.len()] == s {
                covered[i..i + s.len()].fill(true);
            }
        }
    }
    let mut offset = 0;
    let mut out = Vec::new();
    for segment in segments {
        let mut o = String::new();
        let mut in_mask = false;
        for (i, ch) in segment.char_indices() {
            if covered[offset + i] {
                if !in_mask {
                    o.push_str(MASK);
                }
                in_mask = true;
            } else {
                in_mask = false;
                o.push(ch);
            }
        }
        offset += segment.len();
        out.push(o);
    }
    out
}

// ---- the console's form and query parsers ----

/// The names the console's forms read (`routes.rs`), checked in every form whether sent or not.
const CONSOLE_FORM_NAMES: [&str; 12] = [
    "csrf", "run", "session", "expires", "label", "features", "grant", "back", "name", "value",
    "path", "kind",
];
/// Distinct sent names checked per form beyond those (each check reads the whole form).
const SENT_NAMES_CHECKED: usize = 32;

/// The console's url-encoded form parser ([`runread_console::form::Fields`]), on the input as a
/// body as sent, then on a form built from the input as a browser encodes it (sometimes padded
/// to exactly [`runread_console::FORM_MAX_BYTES`] and one byte more): no panic; a body over the
/// limit refused, every body within it parsed; every field (a name given twice is not given)
/// exactly what `form_urlencoded` reads; what a browser encodes comes back as it was.
pub fn console_form(data: &[u8]) {
    use runread_console::form::Fields;
    use runread_console::{FORM_MAX_BYTES, Refusal};

    let parsed = Fields::parse(data);
    if data.len() > FORM_MAX_BYTES {
        assert!(
            parsed == Err(Refusal::InvalidRequest),
            "a body of {} bytes parsed",
            data.len()
        );
    } else {
        let sent: Vec<(String, String)> = form_urlencoded::parse(data).into_owned().collect();
        check_fields(&parsed.expect("a body within the limit parses"), &sent);
    }

    let mut input = Input(data);
    let mut pairs = Vec::new();
    for _ in 0..input.byte() % 16 {
        let pick = input.byte();
        let name = match CONSOLE_FORM_NAMES.get(usize::from(pick % 16)) {
            Some(name) => (*name).to_owned(),
            None => input.text(8),
        };
        pairs.push((name, input.text(32)));
    }
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&pairs)
        .finish();
    let fields = Fields::parse(body.as_bytes()).expect("what a browser encodes parses");
    check_fields(&fields, &pairs);

    // The limit at N and N+1: a `pad` field fills the body to exactly the limit.
    let prefix = if body.is_empty() { "pad=" } else { "&pad=" };
    if input.byte() % 16 == 1 && body.len() + prefix.len() <= FORM_MAX_BYTES {
        let filler = "a".repeat(FORM_MAX_BYTES - body.len() - prefix.len());
        let at_limit = format!("{body}{prefix}{filler}");
        assert_eq!(at_limit.len(), FORM_MAX_BYTES);
        pairs.push(("pad".to_owned(), filler));
        check_fields(
            &Fields::parse(at_limit.as_bytes()).expect("a form of exactly the limit parses"),
            &pairs,
        );
        let over = format!("{at_limit}a");
        assert!(
            Fields::parse(over.as_bytes()) == Err(Refusal::InvalidRequest),
            "a form one byte over the limit parsed"
        );
    }
}

/// `fields` reads exactly `sent`: per name its values in order, one value only when sent once.
fn check_fields(fields: &runread_console::form::Fields, sent: &[(String, String)]) {
    let mut names: Vec<&str> = CONSOLE_FORM_NAMES.to_vec();
    for (name, _) in sent {
        if names.len() >= CONSOLE_FORM_NAMES.len() + SENT_NAMES_CHECKED {
            break;
        }
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    for name in names {
        let values: Vec<&str> = sent
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(fields.all(name).collect::<Vec<_>>(), values, "{name:?}");
        let once = match values.as_slice() {
            [v] => Some(*v),
            _ => None,
        };
        assert_eq!(fields.one(name), once, "{name:?}");
        assert_eq!(fields.required(name).ok(), once, "{name:?}");
        assert_eq!(fields.optional(name), once.filter(|v| !v.is_empty()));
    }
}

/// The run list's query (`RunsQuery` in the console's routes), field for field.
#[derive(serde::Deserialize, Debug, PartialEq)]
struct RunsShape {
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    offset: Option<u64>,
}

/// The run page's query (`RunQuery`): required text and number fields beside an optional one.
#[derive(serde::Deserialize, Debug, PartialEq)]
struct RunShape {
    session: String,
    generation: u64,
    run: String,
    #[serde(default)]
    history: Option<String>,
}

/// A field of a query as the console decides it: absent, its one value, or (`Err`) given twice.
fn query_field<'a>(sent: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, ()> {
    let mut values = sent
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str());
    let first = values.next();
    match values.next() {
        None => Ok(first),
        Some(_) => Err(()),
    }
}

fn optional_text(input: &mut Input) -> Option<String> {
    (input.byte() % 2 == 1).then(|| input.text(16))
}

fn query_number(value: Option<&str>) -> Result<Option<u64>, ()> {
    value.map(|v| v.parse().map_err(|_| ())).transpose()
}

impl RunsShape {
    fn expected(sent: &[(String, String)]) -> Result<Self, ()> {
        Ok(RunsShape {
            agent: query_field(sent, "agent")?.map(str::to_owned),
            workspace: query_field(sent, "workspace")?.map(str::to_owned),
            status: query_field(sent, "status")?.map(str::to_owned),
            offset: query_number(query_field(sent, "offset")?)?,
        })
    }
}

impl RunShape {
    fn expected(sent: &[(String, String)]) -> Result<Self, ()> {
        Ok(RunShape {
            session: query_field(sent, "session")?.ok_or(())?.to_owned(),
            generation: query_number(query_field(sent, "generation")?)?.ok_or(())?,
            run: query_field(sent, "run")?.ok_or(())?.to_owned(),
            history: query_field(sent, "history")?.map(str::to_owned),
        })
    }
}

/// The console's query parser ([`runread_console::form::parse_query`]) with the field shapes of
/// its pages' queries, on the input as a query string, then on a query built from the input as
/// the console's links encode it: no panic; accepted exactly when every field fits (a field
/// given twice refused, a required one missing refused, a number that is not one refused,
/// unknown fields ignored), with the values `form_urlencoded` reads; a built query comes back as
/// it was.
pub fn console_query(data: &[u8]) {
    use runread_console::form::parse_query;

    let query = String::from_utf8_lossy(data);
    let sent: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let shown = || format!("{query:?}");
    assert_eq!(
        parse_query::<RunsShape>(&query).ok(),
        RunsShape::expected(&sent).ok(),
        "{}",
        shown()
    );
    assert_eq!(
        parse_query::<RunShape>(&query).ok(),
        RunShape::expected(&sent).ok(),
        "{}",
        shown()
    );

    let mut input = Input(data);
    let runs = RunsShape {
        agent: optional_text(&mut input),
        workspace: optional_text(&mut input),
        status: optional_text(&mut input),
        offset: (input.byte() % 2 == 1).then(|| input.u64()),
    };
    let mut link = form_urlencoded::Serializer::new(String::new());
    for (name, value) in [
        ("agent", runs.agent.clone()),
        ("workspace", runs.workspace.clone()),
        ("status", runs.status.clone()),
        ("offset", runs.offset.map(|o| o.to_string())),
    ] {
        if let Some(value) = value {
            link.append_pair(name, &value);
        }
    }
    let link = link.finish();
    assert_eq!(parse_query::<RunsShape>(&link), Ok(runs), "{link:?}");
}

// ---- The connector's OAuth endpoints ----

/// The connector this suite's requests are for.
fn fuzz_connector() -> runread_service::oauth::Connector {
    runread_service::oauth::Connector {
        issuer: "https://runread.test".into(),
        resource: "https://runread.test/mcp".into(),
    }
}

/// Authorization parameters as the page reads them from its pairs.
fn authorize_params(pairs: &[(String, String)]) -> runread_service::oauth::AuthorizeParams {
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    runread_service::oauth::AuthorizeParams {
        response_type: get("response_type"),
        client_id: get("client_id"),
        redirect_uri: get("redirect_uri"),
        state: get("state"),
        code_challenge: get("code_challenge"),
        code_challenge_method: get("code_challenge_method"),
        resource: get("resource"),
        scope: get("scope"),
    }
}

/// What an accepted authorization request must be.
fn check_accepted(
    client: &runread_service::oauth::ClientInfo,
    p: &runread_service::oauth::AuthorizeParams,
    a: &runread_service::oauth::Authorization,
) {
    use runread_core::limits::OAUTH_STATE_MAX_BYTES;
    assert!(client.redirect_uris.contains(&a.redirect_uri));
    assert_eq!(p.redirect_uri.as_deref(), Some(a.redirect_uri.as_str()));
    assert_eq!(p.response_type.as_deref(), Some("code"));
    assert_eq!(p.code_challenge_method.as_deref(), Some("S256"));
    assert!(runread_core::oauth::is_s256_challenge(&a.code_challenge));
    assert_eq!(
        p.resource.as_deref(),
        Some(fuzz_connector().resource.as_str())
    );
    if let Some(state) = &p.state {
        assert!(state.len() <= OAUTH_STATE_MAX_BYTES);
        assert!(state.bytes().all(|b| b.is_ascii_graphic() || b == b' '));
    }
    assert!(!a.features.is_empty());
    assert!(
        a.features.windows(2).all(|w| w[0] < w[1]),
        "sorted, once each"
    );
}

/// The authorization page's query: parsed as `form_urlencoded` reads it unless it is over the
/// bound or names a parameter twice; the request it makes checked (every accepted one is what
/// the rules say), for a client whose first redirect URI comes from the input; then a request a
/// client would well-form from the input's state and scope, which is accepted.
pub fn oauth_query(data: &[u8]) {
    use runread_mcp::connector::{AUTHORIZE_QUERY_MAX_BYTES, parse_query};
    use runread_service::oauth::{ClientInfo, check_authorize};

    let query = String::from_utf8_lossy(data);
    let sent: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let mut names: Vec<&str> = sent.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    let once_each = names.windows(2).all(|w| w[0] != w[1]);
    let parsed = parse_query(&query);
    if query.len() > AUTHORIZE_QUERY_MAX_BYTES || !once_each {
        assert!(parsed.is_none(), "{query:?}");
    } else {
        assert_eq!(parsed.as_ref(), Some(&sent), "{query:?}");
    }
    let params = authorize_params(&sent);
    let client = ClientInfo {
        client_id: "dcr_fuzz".into(),
        name: "fuzz".into(),
        redirect_uris: vec![
            params
                .redirect_uri
                .clone()
                .filter(|_| data.first().is_some_and(|b| b % 2 == 1))
                .unwrap_or_else(|| "https://client.example/cb".into()),
            "http://127.0.0.1:9/cb".into(),
        ],
    };
    if let Ok(a) = check_authorize(&fuzz_connector(), &client, &params) {
        check_accepted(&client, &params, &a);
    }

    // A client's own request: always accepted when its state is printable and bounded.
    let mut input = Input(data);
    let state = input.text(64);
    let scope: Vec<&str> = runread_core::Feature::ALL
        .iter()
        .filter(|_| input.byte() % 2 == 1)
        .map(|f| f.as_str())
        .collect();
    let challenge = runread_core::sha256_hex(state.as_bytes());
    let challenge = &challenge[..43];
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("response_type", "code")
        .append_pair("client_id", "dcr_fuzz")
        .append_pair("redirect_uri", "http://127.0.0.1:9/cb")
        .append_pair("state", &state)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", &fuzz_connector().resource)
        .append_pair("scope", &scope.join(" "));
    let own = parse_query(&q.finish()).expect("a client's query parses");
    let params = authorize_params(&own);
    let printable = state.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
    match check_authorize(&fuzz_connector(), &client, &params) {
        Ok(a) => check_accepted(&client, &params, &a),
        Err(e) => assert!(!printable, "{e:?} for {state:?}"),
    }
}

/// The parameters the token and revocation endpoints read.
const OAUTH_FORM_NAMES: [&str; 9] = [
    "grant_type",
    "code",
    "client_id",
    "redirect_uri",
    "code_verifier",
    "resource",
    "refresh_token",
    "token",
    "scope",
];

/// A token or revocation request's form: exactly what `form_urlencoded` reads; each parameter
/// given when sent once, nothing when not sent, `invalid_request` when sent twice; what is read
/// of a scope or a redirect URI is accepted only as the rules say.
pub fn oauth_form(data: &[u8]) {
    use runread_service::oauth::{OAuthError, is_redirect_uri, scope_features, single};

    let form = runread_mcp::connector::parse_form(data);
    let sent: Vec<(String, String)> = form_urlencoded::parse(data).into_owned().collect();
    assert_eq!(form, sent);
    for name in OAUTH_FORM_NAMES {
        let values: Vec<&str> = form
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect();
        match single(&form, name) {
            Ok(None) => assert!(values.is_empty()),
            Ok(Some(v)) => assert_eq!(values, [v]),
            Err(e) => {
                assert!(values.len() > 1);
                assert_eq!(e, OAuthError::InvalidRequest);
            }
        }
    }
    for (name, value) in &form {
        if name == "scope"
            && let Ok(features) = scope_features(Some(value))
        {
            let words: Vec<&str> = value.split(' ').filter(|w| !w.is_empty()).collect();
            if words.is_empty() {
                assert_eq!(features, runread_core::Feature::ALL.to_vec());
                continue;
            }
            for f in &features {
                assert!(words.contains(&f.as_str()), "{value:?}");
            }
            for w in words {
                assert!(runread_core::Feature::parse(w).is_some(), "{value:?}");
            }
        }
        if is_redirect_uri(value) {
            check_redirect_uri(value);
        }
    }
}

/// What an accepted redirect URI must be.
fn check_redirect_uri(uri: &str) {
    use runread_core::limits::OAUTH_URI_MAX_BYTES;
    assert!(
        !uri.is_empty() && uri.len() <= OAUTH_URI_MAX_BYTES,
        "{uri:?}"
    );
    assert!(uri.bytes().all(|b| b.is_ascii_graphic()), "{uri:?}");
    assert!(!uri.contains('#'), "{uri:?}");
    let (scheme, rest) = uri.split_once("://").expect("a scheme");
    let authority = rest.split(['/', '?']).next().expect("an authority");
    assert!(!authority.is_empty() && !authority.contains('@'), "{uri:?}");
    match scheme {
        "https" => {}
        "http" => {
            let host = authority
                .rsplit_once(':')
                .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
                .map_or(authority, |(h, _)| h)
                .to_ascii_lowercase();
            assert!(
                matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]"),
                "{uri:?}"
            );
        }
        other => panic!("scheme {other:?} accepted in {uri:?}"),
    }
}

/// A registration body: read exactly when it is a JSON object whose fields runread reads have
/// their types; an accepted registration is a public client of the code flow with 1..=4
/// redirect URIs runread accepts and a name shown as written.
pub fn oauth_registration(data: &[u8]) {
    use runread_core::limits::OAUTH_REDIRECT_URIS_MAX;
    use runread_service::oauth::{check_registration, is_client_name, is_redirect_uri};

    let parsed = runread_mcp::connector::parse_registration(data);
    let value: Option<Value> = serde_json::from_slice(data).ok();
    let typed = value.as_ref().and_then(Value::as_object).is_some_and(|m| {
        let strings = |n: &str| match m.get(n) {
            None | Some(Value::Null) => true,
            Some(Value::Array(a)) => a.iter().all(Value::is_string),
            Some(_) => false,
        };
        let string = |n: &str| matches!(m.get(n), None | Some(Value::Null | Value::String(_)));
        strings("redirect_uris")
            && strings("grant_types")
            && strings("response_types")
            && string("client_name")
            && string("token_endpoint_auth_method")
    });
    assert_eq!(parsed.is_some(), typed);
    let Some(r) = parsed else {
        return;
    };
    if let Ok(name) = check_registration(&r) {
        assert!(!r.redirect_uris.is_empty() && r.redirect_uris.len() <= OAUTH_REDIRECT_URIS_MAX);
        for uri in &r.redirect_uris {
            assert!(is_redirect_uri(uri));
            check_redirect_uri(uri);
        }
        assert!(is_client_name(&name));
        assert!(runread_core::names::is_shown_as_written(&name));
        assert!(
            r.token_endpoint_auth_method
                .as_deref()
                .is_none_or(|m| m == "none")
        );
        assert_eq!(
            name,
            r.client_name.as_deref().unwrap_or("unnamed client"),
            "the name is the client's own"
        );
    }
}
