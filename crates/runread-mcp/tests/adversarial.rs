//! Hostile clients against a real server over raw TCP.
//!
//! 1. An adversarial corpus: hostile requests (header smuggling, duplicate and oversized headers,
//!    non-ASCII and encoded-word values, forbidden headers, Host/Origin/fetch metadata, media
//!    types, methods and paths, malformed JSON-RPC, MCP lifecycle and protocol headers, arguments,
//!    targets, cursors, limits and keys), each row its own test named for what it sends
//!    (`category::row`), all on one shared server. Every row asserts the exact status, the fixed
//!    code, and that the response carries no granted answer text, no filesystem path and no key;
//!    after each row the server must still answer, and it still reads a whole answer.
//! 2. Slowloris: slow bodies are cut off at the body deadline; slow headers are observed and
//!    reported; normal requests are attempted meanwhile.
//! 3. A concurrency soak: 64 clients against the in-flight cap, every response a full success or
//!    an immediate `busy`, with the process's RSS sampled and required to stay flat.
//!
//! The slowloris and soak tests run alone (a file-wide lock): the soak measures this process's
//! RSS, and the servers run in-process. Corpus rows run side by side.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::cursor::{CursorKey, Purpose};
use runread_core::limits::{
    HTTP_BODY_DEADLINE_SECS, HTTP_BODY_MAX_BYTES, HTTP_HEADER_MAX_BYTES, HTTP_IN_FLIGHT_MAX,
};

use runread_testkit::Env;

/// The slowloris and soak tests run alone (the soak reads this process's RSS and every server
/// runs in-process); corpus rows share the lock, and run side by side.
static ALONE: RwLock<()> = RwLock::new(());

fn alone() -> RwLockWriteGuard<'static, ()> {
    ALONE.write().unwrap_or_else(|e| e.into_inner())
}

fn shared() -> RwLockReadGuard<'static, ()> {
    ALONE.read().unwrap_or_else(|e| e.into_inner())
}

const PROTOCOL: &str = "2026-07-28";
/// Read timeout of one corpus request (the slowest rows wait for the 5 s body deadline).
const ROW_TIMEOUT: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------------
// The server under test
// ---------------------------------------------------------------------------------------------

struct Srv {
    addr: SocketAddr,
    /// Grant 1: the longest run, feature `final_answer`.
    key: String,
    target: Value,
    core_target: runread_core::Target,
    answer: String,
    /// Grant 2: another run, features `final_answer` and `history`.
    key2: String,
    target2: Value,
    answer2: String,
    /// Grant 3: the same target as grant 1, feature `history` only.
    key3: String,
    /// A key whose only grant (on target 1) has expired.
    key_expired: String,
    /// A key whose only grant (on target 1) was revoked.
    key_revoked: String,
    /// Paths that must never appear in a response.
    paths: Vec<String>,
    env: Env,
    _rt: tokio::runtime::Runtime,
}

fn start() -> Srv {
    let env = Env::new();
    let session_path = env.place("sample", Duration::from_secs(60));
    env.ingest();
    let runs = env.store.runs().unwrap();
    let run = runs
        .iter()
        .max_by_key(|r| r.run.final_bytes)
        .unwrap()
        .clone();
    let run2 = runs
        .iter()
        .filter(|r| r.target.run_id != run.target.run_id && !r.run.final_lines.is_empty())
        .max_by_key(|r| r.run.final_bytes)
        .expect("the sample has a second answered run")
        .clone();
    let now = runread_core::timefmt::now_ms();
    // Each to a reader of its own, so each with its own key.
    let grant = |run_id: &str, features: Vec<Feature>| env.grant(run_id, features, "adversarial");
    let g1 = grant(&run.target.run_id, vec![Feature::FinalAnswer]);
    let g2 = grant(
        &run2.target.run_id,
        vec![Feature::FinalAnswer, Feature::History],
    );
    let g3 = grant(&run.target.run_id, vec![Feature::History]);
    let raw_grant = |expires_in_ms: i64, revoked: bool| {
        let (grant, key) =
            env.raw_grant(&g1.grant.target, vec![Feature::FinalAnswer], expires_in_ms);
        if revoked {
            assert!(env.store.revoke_grant(&grant.id, now).unwrap());
        }
        key
    };
    let key_expired = raw_grant(-1, false);
    let key_revoked = raw_grant(3_600_000, true);

    let mut paths = vec![
        env.dir.path().to_str().unwrap().to_owned(),
        env.workspace.to_str().unwrap().to_owned(),
        env.sessions.to_str().unwrap().to_owned(),
        session_path.to_str().unwrap().to_owned(),
        runread_testkit::fixtures_dir().to_str().unwrap().to_owned(),
    ];
    if let Ok(c) = std::fs::canonicalize(env.dir.path()) {
        paths.push(c.to_str().unwrap().to_owned());
    }

    // The soak hammers one key: the bound on calls per reader is lifted (it is not what the
    // corpus tests; `call_rate` in runread-service does).
    let service = env.service_unthrottled();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(runread_mcp::server::serve(
        service,
        "127.0.0.1:0".parse().unwrap(),
        move |a| tx.send(a).unwrap(),
        std::future::pending(),
    ));
    let addr = rx.recv().unwrap();
    Srv {
        addr,
        key: g1.key,
        target: serde_json::to_value(&g1.grant.target).unwrap(),
        core_target: g1.grant.target.clone(),
        answer: runread_testkit::answer(&run).unwrap(),
        key2: g2.key,
        target2: serde_json::to_value(&g2.grant.target).unwrap(),
        answer2: runread_testkit::answer(&run2).unwrap(),
        key3: g3.key,
        key_expired,
        key_revoked,
        paths,
        env,
        _rt: rt,
    }
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1 requests
// ---------------------------------------------------------------------------------------------

/// A raw request: request line, header lines (without CRLF), body, and optional raw tail.
#[derive(Clone)]
struct Req {
    start: Vec<u8>,
    headers: Vec<Vec<u8>>,
    body: Vec<u8>,
    /// Append `Content-Length: <body length>` after the other headers.
    cl: bool,
    /// Bytes sent after the body (pipelining / smuggling attempts).
    tail: Vec<u8>,
}

fn header_name(line: &[u8]) -> String {
    let end = line.iter().position(|b| *b == b':').unwrap_or(line.len());
    String::from_utf8_lossy(&line[..end]).to_ascii_lowercase()
}

impl Req {
    fn bytes(&self) -> Vec<u8> {
        let mut out = self.start.clone();
        out.extend_from_slice(b"\r\n");
        for h in &self.headers {
            out.extend_from_slice(h);
            out.extend_from_slice(b"\r\n");
        }
        if self.cl {
            out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out.extend_from_slice(&self.tail);
        out
    }

    /// The request line, e.g. `GET /mcp HTTP/1.1`.
    fn line(mut self, l: impl AsRef<[u8]>) -> Req {
        self.start = l.as_ref().to_vec();
        self
    }

    /// Replaces every header `name` by one `name: value` (in place of the first), or appends it.
    fn set(mut self, name: &str, value: impl AsRef<[u8]>) -> Req {
        let mut line = format!("{name}: ").into_bytes();
        line.extend_from_slice(value.as_ref());
        let lname = name.to_ascii_lowercase();
        match self.headers.iter().position(|h| header_name(h) == lname) {
            Some(i) => {
                self.headers[i] = line;
                let mut j = 0;
                self.headers.retain(|h| {
                    j += 1;
                    j - 1 == i || header_name(h) != lname
                });
            }
            None => self.headers.push(line),
        }
        self
    }

    /// Removes every header `name`.
    fn del(mut self, name: &str) -> Req {
        let lname = name.to_ascii_lowercase();
        self.headers.retain(|h| header_name(h) != lname);
        self
    }

    /// Appends one raw header line (anything at all).
    fn add(mut self, raw: impl AsRef<[u8]>) -> Req {
        self.headers.push(raw.as_ref().to_vec());
        self
    }

    fn body(mut self, b: impl AsRef<[u8]>) -> Req {
        self.body = b.as_ref().to_vec();
        self
    }

    fn no_cl(mut self) -> Req {
        self.cl = false;
        self
    }

    fn tail(mut self, t: impl AsRef<[u8]>) -> Req {
        self.tail = t.as_ref().to_vec();
        self
    }
}

/// The 2026-07-28 per-request metadata.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": "adversarial", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// An `Mcp-Name` value: the name itself, or its `=?base64?…?=` form when it is not plain ASCII.
fn mcp_name_value(name: &str) -> String {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic()) && !name.starts_with("=?") {
        name.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(name)
        )
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

impl Srv {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    /// Standard headers for one POST; `key` `None` sends no key header.
    fn base(&self, key: Option<&str>, mcp_method: &str) -> Req {
        let mut headers = vec![
            format!("Host: {}", self.host()).into_bytes(),
            b"Content-Type: application/json".to_vec(),
            b"Accept: application/json, text/event-stream".to_vec(),
            format!("MCP-Protocol-Version: {PROTOCOL}").into_bytes(),
            format!("Mcp-Method: {mcp_method}").into_bytes(),
        ];
        if let Some(k) = key {
            headers.push(format!("x-runread-key: {k}").into_bytes());
        }
        headers.push(b"Connection: close".to_vec());
        Req {
            start: b"POST /mcp HTTP/1.1".to_vec(),
            headers,
            body: Vec::new(),
            cl: true,
            tail: Vec::new(),
        }
    }

    /// A whole JSON-RPC body as given (no `_meta` added); `Mcp-Name` from `params.name`.
    fn rpc_body(&self, key: Option<&str>, body: &Value) -> Req {
        let method = body["method"].as_str().unwrap_or("");
        let mut r = self.base(key, method).body(body.to_string());
        if let Some(name) = body["params"]["name"].as_str() {
            r = r.set("Mcp-Name", mcp_name_value(name));
        }
        r
    }

    /// A JSON-RPC request with `_meta` added to `params` (unless `params` already has one).
    fn rpc(&self, key: Option<&str>, method: &str, params: Value) -> Req {
        let mut params = params;
        if params.get("_meta").is_none() {
            params["_meta"] = meta();
        }
        self.rpc_body(
            key,
            &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        )
    }

    fn call(&self, key: &str, tool: &str, args: Value) -> Req {
        self.rpc(
            Some(key),
            "tools/call",
            json!({"name": tool, "arguments": args}),
        )
    }

    /// `read_final_answer` with key 1.
    fn fa(&self, args: Value) -> Req {
        self.call(&self.key, "read_final_answer", args)
    }

    /// `read_final_answer` with key 1 on target 1 plus `extra` arguments.
    fn fa_t(&self, extra: Value) -> Req {
        let mut args = json!({"target": self.target});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                args[k] = v;
            }
        }
        self.fa(args)
    }

    /// Target 1 with one field replaced.
    fn t_with(&self, field: &str, v: Value) -> Value {
        let mut t = self.target.clone();
        t[field] = v;
        t
    }

    fn discover(&self) -> Req {
        self.rpc(Some(&self.key), "server/discover", json!({}))
    }

    fn secrets(&self) -> Vec<&str> {
        vec![
            &self.key,
            &self.key2,
            &self.key3,
            &self.key_expired,
            &self.key_revoked,
        ]
    }

    /// Distinctive pieces of both granted answers.
    fn answer_probes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in [&self.answer, &self.answer2] {
            out.push(slice_chars(a, 0, 40));
            out.push(slice_chars(a, a.len() / 2, 40));
            out.push(slice_chars(a, a.len().saturating_sub(48), 40));
        }
        out
    }
}

/// About `len` bytes of `s` from about `from`, on char boundaries.
fn slice_chars(s: &str, from: usize, len: usize) -> String {
    let mut a = from.min(s.len());
    while !s.is_char_boundary(a) {
        a += 1;
    }
    let mut b = (a + len).min(s.len());
    while !s.is_char_boundary(b) {
        b -= 1;
    }
    s[a..b].to_owned()
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1 responses
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Resp {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<String> {
        header_of(&self.head, name)
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn header_of(head: &str, name: &str) -> Option<String> {
    head.split("\r\n").skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Decodes a chunked body; `(body, bytes used)` when complete.
fn dechunk(buf: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let eol = find(&buf[i..], b"\r\n")? + i;
        let size_str = String::from_utf8_lossy(&buf[i..eol]);
        let size_str = size_str.split(';').next().unwrap_or("").trim().to_owned();
        let size = usize::from_str_radix(&size_str, 16).ok()?;
        i = eol + 2;
        if size == 0 {
            // Trailers, then an empty line.
            loop {
                let eol = find(&buf[i..], b"\r\n")? + i;
                let empty = eol == i;
                i = eol + 2;
                if empty {
                    return Some((out, i));
                }
            }
        }
        if buf.len() < i + size + 2 {
            return None;
        }
        out.extend_from_slice(&buf[i..i + size]);
        i += size + 2;
    }
}

/// Parses one response from `buf`; `(response, bytes used)`. With `eof`, a response whose body
/// is cut short is returned as it is. Informational (1xx) responses are skipped.
fn parse_one(buf: &[u8], eof: bool) -> Option<(Resp, usize)> {
    let mut offset = 0;
    loop {
        let rest = &buf[offset..];
        let end = find(rest, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&rest[..end]).into_owned();
        let status: u16 = head.get(9..12)?.parse().ok()?;
        let start = end + 4;
        if (100..200).contains(&status) {
            offset += start;
            continue;
        }
        let chunked = header_of(&head, "transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        let cl = header_of(&head, "content-length").and_then(|v| v.parse::<usize>().ok());
        let (body, used) = if chunked {
            match dechunk(&rest[start..]) {
                Some((b, used)) => (b, start + used),
                None if eof => (rest[start..].to_vec(), rest.len()),
                None => return None,
            }
        } else if let Some(n) = cl {
            if rest.len() >= start + n {
                (rest[start..start + n].to_vec(), start + n)
            } else if eof {
                (rest[start..].to_vec(), rest.len())
            } else {
                return None;
            }
        } else if eof {
            (rest[start..].to_vec(), rest.len())
        } else {
            return None;
        };
        return Some((Resp { status, head, body }, offset + used));
    }
}

/// What came back on one connection: every byte, and the responses in it.
struct Exchange {
    raw: Vec<u8>,
    responses: Vec<Resp>,
    /// The read ended with an error (reset) rather than EOF.
    error: Option<String>,
}

/// Sends `bytes` on a fresh connection and reads until the server closes it (or `timeout`).
fn exchange(addr: SocketAddr, bytes: &[u8], timeout: Duration) -> Exchange {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(timeout)).unwrap();
    let mut error = None;
    if let Err(e) = c.write_all(bytes) {
        error = Some(format!("write: {e}"));
    }
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => {
                error = Some(format!("read: {e}"));
                break;
            }
        }
    }
    let mut responses = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        match parse_one(&raw[i..], true) {
            Some((r, used)) if used > 0 => {
                responses.push(r);
                i += used;
            }
            _ => break,
        }
    }
    Exchange {
        raw,
        responses,
        error,
    }
}

/// A keep-alive connection sending one request at a time.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        s.set_nodelay(true)?;
        Ok(Conn { s, buf: Vec::new() })
    }

    fn request(&mut self, bytes: &[u8]) -> std::io::Result<Resp> {
        self.s.write_all(bytes)?;
        let mut tmp = [0u8; 16 * 1024];
        loop {
            if let Some((r, used)) = parse_one(&self.buf, false) {
                self.buf.drain(..used);
                return Ok(r);
            }
            let n = self.s.read(&mut tmp)?;
            if n == 0 {
                if let Some((r, used)) = parse_one(&self.buf, true) {
                    self.buf.drain(..used);
                    return Ok(r);
                }
                return Err(std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "closed before a response",
                ));
            }
            self.buf.extend_from_slice(&tmp[..n]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Outcomes
// ---------------------------------------------------------------------------------------------

/// What a response says, in runread's and rmcp's terms.
#[derive(Debug, Clone, PartialEq)]
enum Got {
    /// A transport refusal: JSON-RPC error with `data.code`.
    Fixed(String, i64),
    /// A tool-level refusal: `isError: true` with `{"code": …}`.
    Tool(String),
    /// A JSON-RPC error without runread's `data.code` (rmcp's own).
    Rpc(i64),
    /// A JSON-RPC success.
    Ok(Value),
    /// Not JSON-RPC (plain text, empty).
    Plain(String),
}

fn classify(r: &Resp) -> Got {
    let text = r.text();
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return Got::Plain(text);
    };
    if let Some(e) = v.get("error") {
        if let Some(c) = e["data"]["code"].as_str() {
            return Got::Fixed(c.to_owned(), e["code"].as_i64().unwrap_or(0));
        }
        return Got::Rpc(e["code"].as_i64().unwrap_or(0));
    }
    if let Some(res) = v.get("result") {
        if res["isError"] == json!(true) {
            let inner = res["content"][0]["text"]
                .as_str()
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .unwrap_or(Value::Null);
            return Got::Tool(inner["code"].as_str().unwrap_or("?").to_owned());
        }
        return Got::Ok(res.clone());
    }
    Got::Plain(text)
}

/// The expected outcome of a row.
#[derive(Debug, Clone)]
enum Exp {
    Fixed(&'static str),
    Tool(&'static str),
    Rpc(i64),
    /// Plain text containing this substring ("" matches any non-JSON-RPC body, also empty).
    Plain(&'static str),
    /// A JSON-RPC error with this code and runread's `data.code`.
    RpcFixed(i64, &'static str),
    /// A JSON-RPC success (not `isError`).
    Ok,
    /// A JSON-RPC success whose result contains this text.
    OkWith(&'static str),
}

impl Exp {
    fn matches(&self, got: &Got) -> bool {
        match (self, got) {
            (Exp::Fixed(a), Got::Fixed(b, _)) | (Exp::Tool(a), Got::Tool(b)) => a == b,
            (Exp::RpcFixed(n, a), Got::Fixed(b, m)) => a == b && n == m,
            (Exp::Rpc(a), Got::Rpc(b)) => a == b,
            (Exp::Plain(s), Got::Plain(b)) => b.contains(s),
            (Exp::Ok, Got::Ok(_)) => true,
            (Exp::OkWith(t), Got::Ok(v)) => v.to_string().contains(t),
            _ => false,
        }
    }
    fn reads_answer(&self) -> bool {
        matches!(self, Exp::Ok | Exp::OkWith(_))
    }
}

fn got_str(g: &Got) -> String {
    match g {
        Got::Fixed(c, n) => format!("Fixed({c}, {n})"),
        Got::Tool(c) => format!("Tool({c})"),
        Got::Rpc(c) => format!("Rpc({c})"),
        Got::Ok(_) => "Ok".into(),
        Got::Plain(t) => format!("Plain({:?})", t.chars().take(160).collect::<String>()),
    }
}

/// Everything a response must never carry; `answer_ok` for rows that read the granted answer.
fn leaks(s: &Srv, raw: &[u8], answer_ok: bool) -> Vec<String> {
    let text = String::from_utf8_lossy(raw);
    let mut out = Vec::new();
    for k in s.secrets() {
        if text.contains(k) {
            out.push("a read key".to_owned());
        }
    }
    for p in &s.paths {
        if text.contains(p.as_str()) {
            out.push(format!("path {p}"));
        }
    }
    for probe in ["runread.db", "gate-keys", ".jsonl"] {
        if text.contains(probe) {
            out.push(format!("file name {probe}"));
        }
    }
    if !answer_ok {
        for p in s.answer_probes() {
            if text.contains(&p) {
                out.push(format!("answer text {p:?}"));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------------

struct Row {
    /// What the row sends, in words (its test's name says it too).
    name: String,
    req: Req,
    status: u16,
    exp: Exp,
    /// Responses allowed on the connection (smuggling rows: exactly one).
    max_responses: usize,
    /// What runread does today where that differs from what HTTP or MCP semantics would have it
    /// but README does not promise otherwise: `(status, outcome, why)`. A row that matches it
    /// passes but is listed as a known deviation in the output. (Where runread contradicts README,
    /// there is no `known`: the row fails.)
    known: Option<(u16, Exp, &'static str)>,
}

/// A row: what it sends, the request, and the status and outcome it must get.
fn row(name: impl Into<String>, req: Req, status: u16, exp: Exp) -> Row {
    Row {
        name: name.into(),
        req,
        status,
        exp,
        max_responses: 1,
        known: None,
    }
}

impl Row {
    /// Marks the row with runread's current, differing behavior.
    fn known(mut self, status: u16, exp: Exp, why: &'static str) -> Row {
        self.known = Some((status, exp, why));
        self
    }
}

/// Status of `invalid_request` (a body that is not one JSON-RPC request), as README's guard table
/// says.
const INVALID_REQUEST_STATUS: u16 = 400;

/// Cursors gathered before the corpus runs.
struct Cursors {
    /// Target 1, final answer, limit 100: offset 100.
    c1: String,
    /// Target 1's answer version.
    version1: String,
    /// Target 2 (key 2), final answer, limit 100.
    c2: String,
    /// Target 2 (key 2), history, limit 1.
    h2: String,
    /// Target 1 (key 3), history, limit 1.
    h1: String,
}

fn ok_result(s: &Srv, req: &Req) -> Value {
    let ex = exchange(s.addr, &req.bytes(), ROW_TIMEOUT);
    let r = ex.responses.first().expect("a response");
    match classify(r) {
        Got::Ok(v) => v,
        other => panic!("expected a success, got {} {}", r.status, got_str(&other)),
    }
}

fn gather_cursors(s: &Srv) -> Cursors {
    let first = ok_result(s, &s.fa_t(json!({"limit": 100})));
    let c1 = first["structuredContent"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let version1 = first["structuredContent"]["version"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = ok_result(
        s,
        &s.call(
            &s.key2,
            "read_final_answer",
            json!({"target": s.target2, "limit": 100}),
        ),
    );
    let c2 = second["structuredContent"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let hist = |key: &str, target: &Value| {
        let r = ok_result(
            s,
            &s.call(key, "read_history", json!({"target": target, "limit": 1})),
        );
        r["structuredContent"]["nextCursor"]
            .as_str()
            .expect("a history cursor")
            .to_owned()
    };
    let h2 = hist(&s.key2, &s.target2);
    let h1 = hist(&s.key3, &s.target);
    Cursors {
        c1,
        version1,
        c2,
        h2,
        h1,
    }
}

/// A cursor string with one character replaced.
fn tamper_at(c: &str, i: usize) -> String {
    let mut b = c.as_bytes().to_vec();
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

fn chunked(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

const WHY_DUP_SINGLETON: &str =
    "a duplicated singleton header with conflicting values is not refused: the first value wins";
const WHY_NEST: &str =
    "every path under /mcp/ is served as the endpoint (axum nest_service), not only /mcp";

// ---------------------------------------------------------------------------------------------
// One test per row, on one shared server
// ---------------------------------------------------------------------------------------------

/// The corpus's server and the cursors gathered on it, started by the first row that runs. Its
/// runtime is its own (multi-threaded), so it serves every row's test thread.
static CORPUS: OnceLock<(Srv, Cursors)> = OnceLock::new();

fn corpus_server() -> &'static (Srv, Cursors) {
    CORPUS.get_or_init(|| {
        let s = start();
        let cur = gather_cursors(&s);
        (s, cur)
    })
}

/// Corpus rows in flight at once: half the server's in-flight cap, so that a row (or the check
/// after it) never meets `busy` however many test threads run.
const ROWS_AT_ONCE: usize = HTTP_IN_FLIGHT_MAX / 2;
static ROWS_IN_FLIGHT: Mutex<usize> = Mutex::new(0);
static ROW_DONE: Condvar = Condvar::new();

/// One of the [`ROWS_AT_ONCE`] places, held while a row talks to the shared server.
struct RowSlot;

impl RowSlot {
    fn take() -> RowSlot {
        let mut n = ROWS_IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= ROWS_AT_ONCE {
            n = ROW_DONE.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        RowSlot
    }
}

impl Drop for RowSlot {
    fn drop(&mut self) {
        *ROWS_IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        ROW_DONE.notify_one();
    }
}

/// A `tools/call` request with this raw body.
type BodyRow = Box<dyn Fn(&[u8]) -> Req>;
/// A body with one substitution.
type Substitute = Box<dyn Fn(&str, &str) -> String>;
/// A target with one field replaced.
type TargetWith = Box<dyn Fn(&str, Value) -> Value>;

/// The names every corpus row may use, made afresh for each row's test.
struct Given {
    s: &'static Srv,
    cur: &'static Cursors,
    /// Key 1 and target 1.
    k1: &'static str,
    t1: Value,
    /// A valid `read_final_answer` with key 1 on target 1, and its body: most rows alter it.
    fa_ok: Req,
    fa_body: Vec<u8>,
    /// Status of `invalid_request`.
    ir: u16,
    answer_len: usize,
    port: u16,
    /// A 64 KiB header value (over the header limit).
    big_64k: String,
    /// A header value of half the header limit (under it: the guards see it).
    big: String,
    /// A `tools/call` with key 1 and this raw body.
    body_row: BodyRow,
    /// The valid read_final_answer body with one (asserted) substitution.
    rep: Substitute,
    /// A dated-era `initialize`.
    init: Value,
    /// Target 2 with one field replaced.
    t2_with: TargetWith,
    ia: Exp,
    ng: Exp,
    ic: Exp,
    /// Target 1's cursor at offset 100, the store's cursor key, and target 1.
    c1: &'static str,
    ck: CursorKey,
    tgt: &'static runread_core::Target,
    /// A cursor signed for another revision of target 1.
    other_rev: String,
}

fn given() -> Given {
    let (s, cur) = corpus_server();
    let k1 = s.key.as_str();
    let fa_ok = s.fa_t(json!({}));
    let fa_body = fa_ok.body.clone();
    let body_for_rep = fa_body.clone();
    let ck = s.env.store.cursor_key().clone();
    let tgt = &s.core_target;
    let other_rev = {
        let mut t = tgt.clone();
        t.revision += 1;
        ck.encode(Purpose::FinalAnswer, &t, &cur.version1, 100)
    };
    Given {
        s,
        cur,
        k1,
        t1: s.target.clone(),
        fa_ok,
        fa_body,
        ir: INVALID_REQUEST_STATUS,
        answer_len: s.answer.len(),
        port: s.addr.port(),
        big_64k: "a".repeat(64 * 1024),
        big: "a".repeat(HTTP_HEADER_MAX_BYTES / 2),
        body_row: Box::new(move |b: &[u8]| s.base(Some(k1), "tools/call").body(b)),
        rep: Box::new(move |from: &str, to: &str| {
            let t = String::from_utf8_lossy(&body_for_rep).into_owned();
            assert!(t.contains(from), "{from} not in {t}");
            t.replacen(from, to, 1)
        }),
        init: json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}),
        t2_with: Box::new(move |f: &str, v: Value| {
            let mut t = s.target2.clone();
            t[f] = v;
            t
        }),
        ia: Exp::Tool("invalid_arguments"),
        ng: Exp::Tool("not_granted"),
        ic: Exp::Tool("invalid_cursor"),
        c1: cur.c1.as_str(),
        ck,
        tgt,
        other_rev,
    }
}

/// Runs one row on the shared server and fails naming it; afterwards the server must still
/// answer.
fn check_row(cat: &str, row: Row) {
    let _slot = RowSlot::take();
    let (s, _) = corpus_server();
    match run_row(s, cat, &row) {
        Outcome::Pass => {}
        Outcome::Known(why) => eprintln!("KNOWN DEVIATION [{cat}] {}: {why}", row.name),
        Outcome::Fail(e) => panic!("[{cat}] {}: {e}", row.name),
    }
    let ex = exchange(s.addr, &s.discover().bytes(), ROW_TIMEOUT);
    assert_eq!(
        ex.responses.first().map(|r| r.status),
        Some(200),
        "[{cat}] {}: the server no longer answers server/discover after this row",
        row.name
    );
}

macro_rules! one {
    ($x:ident) => {
        1
    };
}

/// One `#[test]` per corpus row, in one module per category:
/// `category { test_name => row(description, request, status, outcome), … }`. Each test binds
/// `$given` to [`given`]'s names, builds its row from them and runs it with [`check_row`].
macro_rules! adversarial {
    (let $given:pat = given(); $($cat:ident { $($name:ident => $row:expr,)* })*) => {
        $(mod $cat {
            use super::*;
            $(
                #[test]
                #[allow(unused_variables)]
                fn $name() {
                    let _shared = shared();
                    let $given = given();
                    check_row(stringify!($cat), $row);
                }
            )*
        })*
        /// How many rows the corpus has.
        const ROWS: usize = 0 $($(+ one!($name))*)*;
    };
}

const _: () = assert!(ROWS >= 150, "the corpus has at least 150 rows");

adversarial! {
    let Given {
        s,
        cur,
        k1,
        t1,
        fa_ok,
        fa_body,
        ir,
        answer_len,
        port,
        big_64k,
        big,
        body_row,
        rep,
        init,
        t2_with,
        ia,
        ng,
        ic,
        c1,
        ck,
        tgt,
        other_rev,
    } = given();
    baseline {
        server_discover => row("server/discover", s.discover(), 200, Exp::Ok),
        tools_list => row(
            "tools/list",
            s.rpc(Some(k1), "tools/list", json!({})),
            200,
            Exp::Ok,
        ),
        list_granted_targets => row(
            "list_granted_targets",
            s.call(k1, "list_granted_targets", json!({})),
            200,
            Exp::Ok,
        ),
        read_final_answer => row("read_final_answer", fa_ok.clone(), 200, Exp::Ok),
        limit_4_minimum => row(
            "limit 4 (minimum)",
            s.fa_t(json!({"limit": 4})),
            200,
            Exp::Ok,
        ),
        limit_8192_maximum => row(
            "limit 8192 (maximum)",
            s.fa_t(json!({"limit": 8192})),
            200,
            Exp::Ok,
        ),
        string_json_rpc_id => row(
            "string JSON-RPC id",
            s.rpc_body(
                Some(k1),
                &json!({"jsonrpc":"2.0","id":"abc","method":"tools/list","params":{"_meta":meta()}}),
            ),
            200,
            Exp::Ok,
        ),
        negative_json_rpc_id => row(
            "negative JSON-RPC id",
            s.rpc_body(
                Some(k1),
                &json!({"jsonrpc":"2.0","id":-7,"method":"tools/list","params":{"_meta":meta()}}),
            ),
            200,
            Exp::Ok,
        ),
        query_string_on_mcp => row(
            "query string on /mcp",
            fa_ok.clone().line("POST /mcp?x=1 HTTP/1.1"),
            200,
            Exp::Ok,
        ),
        http_1_0_with_host => row(
            "HTTP/1.0 with Host",
            fa_ok.clone().line("POST /mcp HTTP/1.0"),
            200,
            Exp::Ok,
        ),
        mcp_name_as_base64_encoded_word => row(
            "Mcp-Name as =?base64? encoded word",
            fa_ok.clone().set(
                "Mcp-Name",
                format!("=?base64?{}?=", b64("read_final_answer")),
            ),
            200,
            Exp::Ok,
        ),
        expect_100_continue => row(
            "Expect: 100-continue",
            fa_ok.clone().set("Expect", "100-continue"),
            200,
            Exp::Ok,
        ),
        body_padded_to_exactly_the_limit => row(
            "body padded to exactly the limit",
            {
                let mut b = fa_body.clone();
                b.resize(HTTP_BODY_MAX_BYTES, b' ');
                fa_ok.clone().body(b)
            },
            200,
            Exp::Ok,
        ),
    }
    smuggling {
        bare_lf_injects_a_second_key_header => row(
            "bare LF injects a second key header",
            fa_ok
                .clone()
                .add(format!("X-A: a\nx-runread-key: {}", s.key2)),
            400,
            Exp::Fixed("duplicate_key"),
        ),
        bare_lf_injects_authorization => row(
            "bare LF injects Authorization",
            fa_ok.clone().add("X-A: a\nAuthorization: Bearer x"),
            400,
            Exp::Fixed("authorization_header"),
        ),
        bare_cr_inside_a_value => row(
            "bare CR inside a value",
            fa_ok.clone().add("X-A: a\rb"),
            400,
            Exp::Plain(""),
        ),
        cr_cr_lf_line_end => row(
            "CR CR LF line end",
            fa_ok.clone().add("X-A: a\r"),
            400,
            Exp::Plain(""),
        ),
        nul_inside_a_value => row(
            "NUL inside a value",
            fa_ok.clone().add("X-A: a\0b"),
            400,
            Exp::Plain(""),
        ),
        obs_fold_continues_a_custom_header => row(
            "obs-fold continues a custom header",
            fa_ok.clone().add("X-A: a\r\n b"),
            400,
            Exp::Plain(""),
        ),
        obs_fold_continues_the_key_header => row(
            "obs-fold continues the key header",
            fa_ok.clone().del("x-runread-key").add(format!(
                "x-runread-key: {}\r\n {}",
                &s.key[..32],
                &s.key[32..]
            )),
            400,
            Exp::Plain(""),
        ),
        obs_fold_continues_host => row(
            "obs-fold continues Host",
            fa_ok
                .clone()
                .del("host")
                .add(format!("Host: evil.example\r\n {}", s.host())),
            400,
            Exp::Plain(""),
        ),
        transfer_encoding_chunked_plus_content_length_valid_chunked_body => row(
            "Transfer-Encoding chunked + Content-Length (valid chunked body)",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .add(format!("Content-Length: {}", fa_body.len()))
                .body(chunked(&[&fa_body])),
            200,
            Exp::Ok,
        ),
        content_length_plus_transfer_encoding_chunked_valid_chunked_body => row(
            "Content-Length + Transfer-Encoding chunked (valid chunked body)",
            fa_ok
                .clone()
                .no_cl()
                .add(format!("Content-Length: {}", fa_body.len()))
                .set("Transfer-Encoding", "chunked")
                .body(chunked(&[&fa_body])),
            200,
            Exp::Ok,
        ),
        // CL.TE: an empty chunked body with a smuggled read after it, covered by Content-Length.
        te_plus_cl_smuggled_request_after_an_empty_chunked_body => {
            let smuggled = fa_ok.clone().del("connection").bytes();
            let mut body = b"0\r\n\r\n".to_vec();
            body.extend_from_slice(&smuggled);
            row(
                "TE+CL: smuggled request after an empty chunked body",
                fa_ok
                    .clone()
                    .del("connection")
                    .no_cl()
                    .add(format!("Content-Length: {}", body.len()))
                    .set("Transfer-Encoding", "chunked")
                    .body(body),
                ir,
                Exp::Fixed("invalid_request"),
            )
        },
        te_plus_cl_smuggled_request_pipelined_after_the_chunked_body => {
            let smuggled = fa_ok.clone().del("connection").bytes();
            let mut body = b"0\r\n\r\n".to_vec();
            body.extend_from_slice(&smuggled);
            row(
                "TE+CL: smuggled request pipelined after the chunked body",
                fa_ok
                    .clone()
                    .del("connection")
                    .no_cl()
                    .add("Content-Length: 5")
                    .set("Transfer-Encoding", "chunked")
                    .body(b"0\r\n\r\n")
                    .tail(&smuggled),
                ir,
                Exp::Fixed("invalid_request"),
            )
        },
        two_transfer_encoding_headers_last_not_chunked => row(
            "two Transfer-Encoding headers, last not chunked",
            fa_ok
                .clone()
                .no_cl()
                .add("Transfer-Encoding: chunked")
                .add("Transfer-Encoding: identity")
                .body(chunked(&[&fa_body])),
            400,
            Exp::Plain(""),
        ),
        transfer_encoding_chunked_identity => row(
            "Transfer-Encoding: chunked, identity",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked, identity")
                .body(chunked(&[&fa_body])),
            400,
            Exp::Plain(""),
        ),
        transfer_encoding_gzip_not_chunked => row(
            "Transfer-Encoding: gzip (not chunked)",
            fa_ok.clone().set("Transfer-Encoding", "gzip"),
            400,
            Exp::Plain(""),
        ),
        transfer_encoding_xchunked => row(
            "Transfer-Encoding: xchunked",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "xchunked")
                .body(chunked(&[&fa_body])),
            400,
            Exp::Plain(""),
        ),
        transfer_encoding_on_http_1_0 => row(
            "Transfer-Encoding on HTTP/1.0",
            fa_ok
                .clone()
                .line("POST /mcp HTTP/1.0")
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .body(chunked(&[&fa_body])),
            400,
            Exp::Plain(""),
        ),
        chunked_body_in_three_chunks => row(
            "chunked body in three chunks",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .body(chunked(&[&fa_body[..10], &fa_body[10..50], &fa_body[50..]])),
            200,
            Exp::Ok,
        ),
        chunk_extensions => row(
            "chunk extensions",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .body({
                    let mut b = format!("{:x};ext=\"v\"\r\n", fa_body.len()).into_bytes();
                    b.extend_from_slice(&fa_body);
                    b.extend_from_slice(b"\r\n0\r\n\r\n");
                    b
                }),
            200,
            Exp::Ok,
        ),
        forbidden_header_and_second_key_in_chunked_trailers_ignored => row(
            "forbidden header and second key in chunked trailers (ignored)",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .body({
                    let mut b = format!("{:x}\r\n", fa_body.len()).into_bytes();
                    b.extend_from_slice(&fa_body);
                    b.extend_from_slice(
                        format!(
                            "\r\n0\r\nAuthorization: Bearer x\r\nx-runread-key: {}\r\n\r\n",
                            s.key2
                        )
                        .as_bytes(),
                    );
                    b
                }),
            200,
            Exp::Ok,
        ),
        chunk_size_not_hex => row(
            "chunk size not hex",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .body(b"zz\r\n{}\r\n0\r\n\r\n"),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        chunk_size_overflows_u64 => row(
            "chunk size overflows u64",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .body(b"fffffffffffffffffff\r\n{}\r\n0\r\n\r\n"),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        chunked_body_over_the_limit_no_content_length => row(
            "chunked body over the limit, no Content-Length",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .body({
                    let mut b = fa_body.clone();
                    b.resize(HTTP_BODY_MAX_BYTES + 1, b' ');
                    chunked(&[&b[..HTTP_BODY_MAX_BYTES / 2], &b[HTTP_BODY_MAX_BYTES / 2..]])
                }),
            413,
            Exp::Fixed("body_too_large"),
        ),
        chunked_body_never_terminated_held_to_the_deadline => row(
            "chunked body never terminated (held to the deadline)",
            fa_ok
                .clone()
                .no_cl()
                .set("Transfer-Encoding", "chunked")
                .body({
                    let mut b = format!("{:x}\r\n", fa_body.len()).into_bytes();
                    b.extend_from_slice(&fa_body);
                    b.extend_from_slice(b"\r\n");
                    b
                }),
            408,
            Exp::Fixed("body_timeout"),
        ),
        two_equal_content_length_headers => row(
            "two equal Content-Length headers",
            fa_ok
                .clone()
                .add(format!("Content-Length: {}", fa_body.len())),
            200,
            Exp::Ok,
        ),
        two_different_content_length_headers => row(
            "two different Content-Length headers",
            fa_ok
                .clone()
                .add(format!("Content-Length: {}", fa_body.len() + 1)),
            400,
            Exp::Plain(""),
        ),
        content_length_as_a_list_n_n => row(
            "Content-Length as a list \"N, N\"",
            fa_ok
                .clone()
                .no_cl()
                .add(format!("Content-Length: {0}, {0}", fa_body.len())),
            400,
            Exp::Plain(""),
        ),
        content_length_negative => row(
            "Content-Length negative",
            fa_ok.clone().no_cl().add("Content-Length: -1"),
            400,
            Exp::Plain(""),
        ),
        content_length_with_plus_sign => row(
            "Content-Length with plus sign",
            fa_ok
                .clone()
                .no_cl()
                .add(format!("Content-Length: +{}", fa_body.len())),
            400,
            Exp::Plain(""),
        ),
        content_length_hex => row(
            "Content-Length hex",
            fa_ok.clone().no_cl().add("Content-Length: 0x10"),
            400,
            Exp::Plain(""),
        ),
        content_length_overflows_u64 => row(
            "Content-Length overflows u64",
            fa_ok
                .clone()
                .no_cl()
                .add("Content-Length: 99999999999999999999999"),
            400,
            Exp::Plain(""),
        ),
        content_length_over_the_body_limit => row(
            "Content-Length over the body limit",
            fa_ok
                .clone()
                .no_cl()
                .add(format!("Content-Length: {}", HTTP_BODY_MAX_BYTES + 1)),
            413,
            Exp::Fixed("body_too_large"),
        ),
        content_length_over_the_limit_with_expect_100_continue => row(
            "Content-Length over the limit with Expect: 100-continue",
            fa_ok
                .clone()
                .no_cl()
                .set("Expect", "100-continue")
                .add(format!("Content-Length: {}", HTTP_BODY_MAX_BYTES * 4))
                .body(b""),
            413,
            Exp::Fixed("body_too_large"),
        ),
        content_length_shorter_than_the_body_rest_pipelined => row(
            "Content-Length shorter than the body (rest pipelined)",
            fa_ok
                .clone()
                .no_cl()
                .add(format!("Content-Length: {}", fa_body.len() - 10)),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        content_length_longer_than_the_body_held_to_the_deadline => row(
            "Content-Length longer than the body (held to the deadline)",
            fa_ok
                .clone()
                .no_cl()
                .add(format!("Content-Length: {}", fa_body.len() + 10)),
            408,
            Exp::Fixed("body_timeout"),
        ),
        second_request_pipelined_after_connection_close => row(
            "second request pipelined after Connection: close",
            fa_ok.clone().body(b"{}").tail(fa_ok.bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        absolute_form_target_naming_a_foreign_host => row(
            "absolute-form target naming a foreign host",
            fa_ok.clone().line("POST http://evil.example/mcp HTTP/1.1"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        request_line_http_2_0 => row(
            "request line HTTP/2.0",
            fa_ok.clone().line("POST /mcp HTTP/2.0"),
            400,
            Exp::Plain(""),
        ),
        request_line_http_0_9_style => row(
            "request line HTTP/0.9 style",
            fa_ok.clone().line("POST /mcp"),
            400,
            Exp::Plain(""),
        ),
        lowercase_method_post => row(
            "lowercase method post",
            fa_ok.clone().line("post /mcp HTTP/1.1"),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        space_before_the_header_colon => row(
            "space before the header colon",
            fa_ok.clone().add("X-A : b"),
            400,
            Exp::Plain(""),
        ),
        header_line_without_a_colon => row(
            "header line without a colon",
            fa_ok.clone().add("X-A b"),
            400,
            Exp::Plain(""),
        ),
        header_name_with_a_separator => row(
            "header name with a separator",
            fa_ok.clone().add("X(A): b"),
            400,
            Exp::Plain(""),
        ),
        empty_header_name => row(
            "empty header name",
            fa_ok.clone().add(": b"),
            400,
            Exp::Plain(""),
        ),
    }
    dup_oversize {
        n64_kib_custom_header => row(
            "64 KiB custom header",
            fa_ok.clone().add(format!("X-Pad: {big_64k}")),
            431,
            Exp::Plain(""),
        ),
        n64_kib_key_header => row(
            "64 KiB key header",
            fa_ok.clone().set("x-runread-key", &big_64k),
            431,
            Exp::Plain(""),
        ),
        // Large values under the header limit reach the guards, which refuse them.
        n8_kib_key_header => row(
            "8 KiB key header",
            fa_ok.clone().set("x-runread-key", &big),
            403,
            Exp::Fixed("invalid_key"),
        ),
        n8_kib_host => row(
            "8 KiB Host",
            fa_ok.clone().set("Host", &big),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        n8_kib_mcp_method => row(
            "8 KiB Mcp-Method",
            fa_ok.clone().set("Mcp-Method", &big),
            400,
            Exp::Rpc(-32020),
        ),
        n8_kib_origin => row(
            "8 KiB Origin",
            fa_ok.clone().set("Origin", format!("http://{big}")),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        n600_kib_of_headers => row(
            "600 KiB of headers",
            fa_ok
                .clone()
                .add(format!("X-Pad: {}", "a".repeat(600 * 1024))),
            431,
            Exp::Plain(""),
        ),
        n120_headers => row(
            "120 headers",
            (0..120).fold(fa_ok.clone(), |r, i| r.add(format!("X-H{i}: v"))),
            431,
            Exp::Plain(""),
        ),
        n70_kib_request_target_over_the_header_limit_before_it_ends => row(
            "70 KiB request target (over the header limit before it ends)",
            fa_ok
                .clone()
                .line(format!("POST /mcp?{} HTTP/1.1", "a".repeat(70 * 1024))),
            431,
            Exp::Plain(""),
        ),
        two_host_headers => row(
            "two Host headers",
            fa_ok.clone().add(format!("Host: {}", s.host())),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        two_origin_headers => row(
            "two Origin headers",
            fa_ok
                .clone()
                .add("Origin: http://a.example")
                .add("Origin: http://b.example"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        two_keys_same_value => row(
            "two keys, same value",
            fa_ok.clone().add(format!("x-runread-key: {k1}")),
            400,
            Exp::Fixed("duplicate_key"),
        ),
        two_keys_different_grants => row(
            "two keys, different grants",
            fa_ok.clone().add(format!("x-runread-key: {}", s.key2)),
            400,
            Exp::Fixed("duplicate_key"),
        ),
        two_keys_second_malformed => row(
            "two keys, second malformed",
            fa_ok.clone().add("x-runread-key: nope"),
            400,
            Exp::Fixed("duplicate_key"),
        ),
        two_mcp_method_headers_same_value => row(
            "two Mcp-Method headers, same value",
            fa_ok.clone().add("Mcp-Method: tools/call"),
            400,
            Exp::Rpc(-32020),
        ),
        two_mcp_name_headers => row(
            "two Mcp-Name headers",
            fa_ok.clone().add("Mcp-Name: read_final_answer"),
            400,
            Exp::Rpc(-32020),
        ),
        two_mcp_protocol_version_headers_same_value => row(
            "two MCP-Protocol-Version headers, same value",
            fa_ok
                .clone()
                .add(format!("MCP-Protocol-Version: {PROTOCOL}")),
            200,
            Exp::Ok,
        ),
        two_mcp_protocol_version_headers_different_values => row(
            "two MCP-Protocol-Version headers, different values",
            fa_ok.clone().add("MCP-Protocol-Version: 2025-11-25"),
            400,
            Exp::Rpc(-32020),
        )
        .known(200, Exp::Ok, WHY_DUP_SINGLETON),
        two_content_type_headers_json_first => row(
            "two Content-Type headers, json first",
            fa_ok.clone().add("Content-Type: text/plain"),
            415,
            Exp::Plain(""),
        )
        .known(200, Exp::Ok, WHY_DUP_SINGLETON),
        two_content_type_headers_text_plain_first => row(
            "two Content-Type headers, text/plain first",
            fa_ok
                .clone()
                .del("content-type")
                .add("Content-Type: text/plain")
                .add("Content-Type: application/json"),
            415,
            Exp::Plain(""),
        ),
        two_sec_fetch_site_headers_second_cross_site => row(
            "two Sec-Fetch-Site headers, second cross-site",
            fa_ok
                .clone()
                .add("Sec-Fetch-Site: same-origin")
                .add("Sec-Fetch-Site: cross-site"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        two_sec_fetch_mode_headers_second_no_cors => row(
            "two Sec-Fetch-Mode headers, second no-cors",
            fa_ok
                .clone()
                .add("Sec-Fetch-Mode: cors")
                .add("Sec-Fetch-Mode: no-cors"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
    }
    non_ascii {
        key_of_utf_8_non_ascii => row(
            "key of UTF-8 non-ASCII",
            fa_ok.clone().set("x-runread-key", "ключ-ключ-ключ"),
            403,
            Exp::Fixed("invalid_key"),
        ),
        key_with_a_latin_1_byte => row(
            "key with a Latin-1 byte",
            fa_ok.clone().set("x-runread-key", {
                let mut k = s.key.as_bytes().to_vec();
                k[10] = 0xe9;
                k
            }),
            403,
            Exp::Fixed("invalid_key"),
        ),
        key_as_base64_encoded_word => row(
            "key as =?base64? encoded word",
            fa_ok
                .clone()
                .set("x-runread-key", format!("=?base64?{}?=", b64(k1))),
            403,
            Exp::Fixed("invalid_key"),
        ),
        key_as_utf_8_b_encoded_word => row(
            "key as =?utf-8?B? encoded word",
            fa_ok
                .clone()
                .set("x-runread-key", format!("=?utf-8?B?{}?=", b64(k1))),
            403,
            Exp::Fixed("invalid_key"),
        ),
        key_as_utf_8_q_encoded_word => row(
            "key as =?utf-8?Q? encoded word",
            fa_ok
                .clone()
                .set("x-runread-key", format!("=?utf-8?Q?{k1}?=")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        key_with_a_fullwidth_digit => row(
            "key with a fullwidth digit",
            fa_ok
                .clone()
                .set("x-runread-key", format!("{}０", &s.key[..63])),
            403,
            Exp::Fixed("invalid_key"),
        ),
        host_non_ascii => row(
            "Host non-ASCII",
            fa_ok.clone().set("Host", "lоcalhost"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_as_encoded_word => row(
            "Host as encoded word",
            fa_ok
                .clone()
                .set("Host", format!("=?base64?{}?=", b64("127.0.0.1"))),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        origin_non_ascii => row(
            "Origin non-ASCII",
            fa_ok.clone().set("Origin", "http://lоcalhost"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        mcp_method_non_ascii => row(
            "Mcp-Method non-ASCII",
            fa_ok.clone().set("Mcp-Method", "tools/cаll"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_method_as_base64_of_tools_call => row(
            "Mcp-Method as =?base64? of tools/call",
            fa_ok
                .clone()
                .set("Mcp-Method", format!("=?base64?{}?=", b64("tools/call"))),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_name_non_ascii_raw => row(
            "Mcp-Name non-ASCII raw",
            fa_ok.clone().set("Mcp-Name", "read_final_ånswer"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_name_base64_of_another_tool => row(
            "Mcp-Name =?base64? of another tool",
            fa_ok
                .clone()
                .set("Mcp-Name", format!("=?base64?{}?=", b64("get_run"))),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_name_base64_not_base64 => row(
            "Mcp-Name =?base64? not base64",
            fa_ok.clone().set("Mcp-Name", "=?base64?!!!?="),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_protocol_version_non_ascii => row(
            "MCP-Protocol-Version non-ASCII",
            fa_ok.clone().set("MCP-Protocol-Version", "2026-07-28é"),
            400,
            Exp::Plain(""),
        ),
        content_type_non_ascii => row(
            "Content-Type non-ASCII",
            fa_ok.clone().set("Content-Type", "application/jsön"),
            415,
            Exp::Plain(""),
        ),
        authorization_non_ascii => row(
            "Authorization non-ASCII",
            fa_ok.clone().add("Authorization: Bearer ключ"),
            400,
            Exp::Fixed("authorization_header"),
        ),
        harmless_custom_header_non_ascii => row(
            "harmless custom header non-ASCII",
            fa_ok.clone().add("X-Note: héllo wörld"),
            200,
            Exp::Ok,
        ),
    }
    forbidden {
        authorization_bearer_x => {
            let h = "Authorization: Bearer x";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("authorization_header"))
        },
        authorization_basic_ytpi => {
            let h = "authorization: Basic YTpi";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("authorization_header"))
        },
        authorization_x => {
            let h = "AUTHORIZATION: x";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("authorization_header"))
        },
        authorization => {
            let h = "Authorization:";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("authorization_header"))
        },
        cookie_a_b => {
            let h = "Cookie: a=b";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        cookie => {
            let h = "cookie: ";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        forwarded_for_1_2_3_4 => {
            let h = "Forwarded: for=1.2.3.4";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        via_1_1_proxy => {
            let h = "Via: 1.1 proxy";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        x_real_ip_1_2_3_4 => {
            let h = "X-Real-IP: 1.2.3.4";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        x_forwarded_for_127_0_0_1 => {
            let h = "X-Forwarded-For: 127.0.0.1";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        x_forwarded_host_127_0_0_1 => {
            let h = "X-Forwarded-Host: 127.0.0.1";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        x_forwarded_proto_https => {
            let h = "X-Forwarded-Proto: https";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        x_forwarded_port_443 => {
            let h = "X-Forwarded-Port: 443";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        proxy_authorization_basic_ytpi => {
            let h = "Proxy-Authorization: Basic YTpi";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        proxy_connection_keep_alive => {
            let h = "Proxy-Connection: keep-alive";
            row(h, fa_ok.clone().add(h), 400, Exp::Fixed("forbidden_header"))
        },
        authorization_carrying_the_key_no_key_header => row(
            "Authorization carrying the key, no key header",
            fa_ok
                .clone()
                .del("x-runread-key")
                .add(format!("Authorization: Bearer {k1}")),
            400,
            Exp::Fixed("authorization_header"),
        ),
        header_and_no_key_forbidden_first => row(
            "forbidden header and no key: forbidden first",
            fa_ok.clone().del("x-runread-key").add("Cookie: a=b"),
            400,
            Exp::Fixed("forbidden_header"),
        ),
        header_and_foreign_host_host_first => row(
            "forbidden header and foreign Host: Host first",
            fa_ok.clone().set("Host", "evil.example").add("Cookie: a=b"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
    }
    host_origin {
        host_localhost => row(
            "Host localhost",
            fa_ok.clone().set("Host", "localhost"),
            200,
            Exp::Ok,
        ),
        host_localhost_port => row(
            "Host LOCALHOST:port",
            fa_ok
                .clone()
                .set("Host", format!("LOCALHOST:{}", s.addr.port())),
            200,
            Exp::Ok,
        ),
        host_1_port => row(
            "Host [::1]:port",
            fa_ok
                .clone()
                .set("Host", format!("[::1]:{}", s.addr.port())),
            200,
            Exp::Ok,
        ),
        host_evil_example => row(
            "Host evil.example",
            fa_ok.clone().set("Host", "evil.example"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_127_0_0_1_evil_example => row(
            "Host 127.0.0.1.evil.example",
            fa_ok
                .clone()
                .set("Host", "127.0.0.1.evil.example"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_127_1 => row(
            "Host 127.1",
            fa_ok.clone().set("Host", "127.1"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_0_0_0_0 => row(
            "Host 0.0.0.0",
            fa_ok.clone().set("Host", "0.0.0.0"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_127_0_0_2 => row(
            "Host 127.0.0.2",
            fa_ok.clone().set("Host", "127.0.0.2"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_localhost_trailing_dot => row(
            "Host localhost. (trailing dot)",
            fa_ok.clone().set("Host", "localhost."),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_1_x => row(
            "Host [::1]x",
            fa_ok.clone().set("Host", "[::1]x"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_127_0_0_1_abc => row(
            "Host 127.0.0.1:abc",
            fa_ok.clone().set("Host", "127.0.0.1:abc"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_127_0_0_1_empty_port => row(
            "Host 127.0.0.1: (empty port)",
            fa_ok.clone().set("Host", "127.0.0.1:"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_user_127_0_0_1 => row(
            "Host user@127.0.0.1",
            fa_ok.clone().set("Host", "user@127.0.0.1"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_127_0_0_1_x => row(
            "Host 127.0.0.1/x",
            fa_ok.clone().set("Host", "127.0.0.1/x"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_ffff_127_0_0_1 => row(
            "Host [::ffff:127.0.0.1]",
            fa_ok.clone().set("Host", "[::ffff:127.0.0.1]"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        host_empty => row(
            "Host empty",
            fa_ok.clone().set("Host", ""),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        no_host_header => row(
            "no Host header",
            fa_ok.clone().del("host"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        http_1_0_without_host => row(
            "HTTP/1.0 without Host",
            fa_ok.clone().line("POST /mcp HTTP/1.0").del("host"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        // README: any Origin other than the server's own (`http://` + this request's loopback
        // Host) or an --allow-origin is refused.
        origin_the_server_s_own_http_plus_host => row(
            "Origin: the server's own (http:// + Host)",
            fa_ok.clone().set("Origin", format!("http://{}", s.host())),
            200,
            Exp::Ok,
        ),
        origin_the_server_s_own_host_localhost => row(
            "Origin: the server's own, Host localhost",
            fa_ok
                .clone()
                .set("Host", format!("localhost:{port}"))
                .set("Origin", format!("http://localhost:{port}")),
            200,
            Exp::Ok,
        ),
        origin_the_server_s_own_but_sec_fetch_site_cross_site => row(
            "Origin: the server's own, but Sec-Fetch-Site cross-site",
            fa_ok
                .clone()
                .set("Origin", format!("http://{}", s.host()))
                .add("Sec-Fetch-Site: cross-site"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        origin_http_evil_example => {
            let o = "http://evil.example".to_owned();
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_null => {
            let o = "null".to_owned();
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_http_localhost => {
            let o = "http://localhost".to_owned();
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_http_localhost_port => {
            let o = format!("http://localhost:{port}");
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_another_port => {
            let o = format!("http://127.0.0.1:{}", port.wrapping_add(1));
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_http_127_0_0_1 => {
            let o = "http://127.0.0.1".to_owned();
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_https_own_host => {
            let o = format!("https://127.0.0.1:{port}");
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_uppercase_scheme => {
            let o = format!("HTTP://127.0.0.1:{port}");
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_own_with_trailing_slash => {
            let o = format!("http://127.0.0.1:{port}/");
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_own_with_path => {
            let o = format!("http://127.0.0.1:{port}/mcp");
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_own_with_userinfo => {
            let o = format!("http://user@127.0.0.1:{port}");
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_own_port_then_another_domain => {
            let o = format!("http://127.0.0.1:{port}.evil.example");
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_own_then_a_second_origin => {
            let o = format!("http://127.0.0.1:{port}, http://evil.example");
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_file => {
            let o = "file://".to_owned();
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        origin_empty => {
            let o = "".to_owned();
            row(
                format!("Origin {o:?}"),
                fa_ok.clone().set("Origin", o),
                403,
                Exp::Fixed("forbidden_origin"),
            )
        },
        sec_fetch_site_cross_site => {
            let h = "Sec-Fetch-Site: cross-site";
            row(h, fa_ok.clone().add(h), 403, Exp::Fixed("forbidden_origin"))
        },
        sec_fetch_site_same_site => {
            let h = "Sec-Fetch-Site: same-site";
            row(h, fa_ok.clone().add(h), 403, Exp::Fixed("forbidden_origin"))
        },
        sec_fetch_site_cross_site_uppercase => {
            let h = "Sec-Fetch-Site: CROSS-SITE";
            row(h, fa_ok.clone().add(h), 403, Exp::Fixed("forbidden_origin"))
        },
        sec_fetch_site_same_origin => {
            let h = "Sec-Fetch-Site: same-origin";
            row(h, fa_ok.clone().add(h), 200, Exp::Ok)
        },
        sec_fetch_site_none => {
            let h = "Sec-Fetch-Site: none";
            row(h, fa_ok.clone().add(h), 200, Exp::Ok)
        },
        sec_fetch_mode_navigate => {
            let h = "Sec-Fetch-Mode: navigate";
            row(h, fa_ok.clone().add(h), 403, Exp::Fixed("forbidden_origin"))
        },
        sec_fetch_mode_nested_navigate => {
            let h = "Sec-Fetch-Mode: nested-navigate";
            row(h, fa_ok.clone().add(h), 403, Exp::Fixed("forbidden_origin"))
        },
        sec_fetch_mode_no_cors => {
            let h = "Sec-Fetch-Mode: no-cors";
            row(h, fa_ok.clone().add(h), 403, Exp::Fixed("forbidden_origin"))
        },
        sec_fetch_mode_websocket => {
            let h = "Sec-Fetch-Mode: websocket";
            row(h, fa_ok.clone().add(h), 403, Exp::Fixed("forbidden_origin"))
        },
        sec_fetch_mode_cors => {
            let h = "Sec-Fetch-Mode: cors";
            row(h, fa_ok.clone().add(h), 200, Exp::Ok)
        },
        sec_fetch_mode_with_an_obs_text_byte => row(
            "Sec-Fetch-Mode with an obs-text byte",
            fa_ok.clone().add(b"Sec-Fetch-Mode: cors\xff".as_slice()),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
    }
    media_types {
        content_type_text_plain => {
            let ct = "text/plain";
            row(
                format!("Content-Type {ct}"),
                fa_ok.clone().set("Content-Type", ct),
                415,
                Exp::Plain("Unsupported Media Type"),
            )
        },
        content_type_application_x_www_form_urlencoded => {
            let ct = "application/x-www-form-urlencoded";
            row(
                format!("Content-Type {ct}"),
                fa_ok.clone().set("Content-Type", ct),
                415,
                Exp::Plain("Unsupported Media Type"),
            )
        },
        content_type_multipart_form_data_boundary_x => {
            let ct = "multipart/form-data; boundary=x";
            row(
                format!("Content-Type {ct}"),
                fa_ok.clone().set("Content-Type", ct),
                415,
                Exp::Plain("Unsupported Media Type"),
            )
        },
        content_type_application_jsonx => {
            let ct = "application/jsonx";
            row(
                format!("Content-Type {ct}"),
                fa_ok.clone().set("Content-Type", ct),
                415,
                Exp::Plain("Unsupported Media Type"),
            )
        },
        content_type_application_json_patch_plus_json => {
            let ct = "application/json-patch+json";
            row(
                format!("Content-Type {ct}"),
                fa_ok.clone().set("Content-Type", ct),
                415,
                Exp::Plain("Unsupported Media Type"),
            )
        },
        content_type_application_json_charset_utf_8 => {
            let ct = "application/json; charset=utf-8";
            row(
                format!("Content-Type {ct}"),
                fa_ok.clone().set("Content-Type", ct),
                200,
                Exp::Ok,
            )
        },
        content_type_application_json => {
            let ct = "APPLICATION/JSON";
            row(
                format!("Content-Type {ct}"),
                fa_ok.clone().set("Content-Type", ct),
                200,
                Exp::Ok,
            )
        },
        no_content_type => row(
            "no Content-Type",
            fa_ok.clone().del("content-type"),
            415,
            Exp::Plain("Unsupported Media Type"),
        ),
        text_plain_without_a_key_the_key_is_checked_first => row(
            "text/plain without a key: the key is checked first",
            fa_ok
                .clone()
                .set("Content-Type", "text/plain")
                .del("x-runread-key"),
            403,
            Exp::Fixed("missing_key"),
        ),
        accept_application_json => {
            let acc = "application/json";
            row(
                format!("Accept {acc}"),
                fa_ok.clone().set("Accept", acc),
                406,
                Exp::Plain("Not Acceptable"),
            )
        },
        accept_text_event_stream => {
            let acc = "text/event-stream";
            row(
                format!("Accept {acc}"),
                fa_ok.clone().set("Accept", acc),
                406,
                Exp::Plain("Not Acceptable"),
            )
        },
        accept => {
            let acc = "*/*";
            row(
                format!("Accept {acc}"),
                fa_ok.clone().set("Accept", acc),
                406,
                Exp::Plain("Not Acceptable"),
            )
        },
        accept_text_html => {
            let acc = "text/html";
            row(
                format!("Accept {acc}"),
                fa_ok.clone().set("Accept", acc),
                406,
                Exp::Plain("Not Acceptable"),
            )
        },
        accept_application_json_q_0_text_event_stream => {
            let acc = "application/json;q=0, text/event-stream";
            row(
                format!("Accept {acc}"),
                fa_ok.clone().set("Accept", acc),
                406,
                Exp::Plain("Not Acceptable"),
            )
        },
        accept_application_json_text_event_stream => {
            let acc = "APPLICATION/JSON, TEXT/EVENT-STREAM";
            row(
                format!("Accept {acc}"),
                fa_ok.clone().set("Accept", acc),
                200,
                Exp::Ok,
            )
        },
        no_accept => row(
            "no Accept",
            fa_ok.clone().del("accept"),
            406,
            Exp::Plain("Not Acceptable"),
        ),
        accept_split_over_two_headers => row(
            "Accept split over two headers",
            fa_ok
                .clone()
                .set("Accept", "application/json")
                .add("Accept: text/event-stream"),
            200,
            Exp::Ok,
        ),
    }
    methods_paths {
        // README: rmcp answers every method but POST with 405 (the body guard reads POST bodies
        // only).
        get_mcp_no_body => row(
            "GET /mcp, no body",
            fa_ok.clone().line("GET /mcp HTTP/1.1").body(b""),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        delete_mcp_no_body => row(
            "DELETE /mcp, no body",
            fa_ok
                .clone()
                .line("DELETE /mcp HTTP/1.1")
                .body(b""),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        patch_mcp_no_body => row(
            "PATCH /mcp, no body",
            fa_ok.clone().line("PATCH /mcp HTTP/1.1").body(b""),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        trace_mcp_no_body => row(
            "TRACE /mcp, no body",
            fa_ok.clone().line("TRACE /mcp HTTP/1.1").body(b""),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        get_mcp_accepting_an_event_stream => row(
            "GET /mcp accepting an event stream",
            fa_ok
                .clone()
                .line("GET /mcp HTTP/1.1")
                .set("Accept", "text/event-stream")
                .body(b""),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        options_mcp => row(
            "OPTIONS /mcp",
            fa_ok.clone().line("OPTIONS /mcp HTTP/1.1").body(b""),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        options_cors_preflight => row(
            "OPTIONS CORS preflight",
            fa_ok
                .clone()
                .line("OPTIONS /mcp HTTP/1.1")
                .body(b"")
                .set("Origin", "http://evil.example")
                .add("Access-Control-Request-Method: POST")
                .add("Access-Control-Request-Headers: x-runread-key"),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        head_mcp_no_body_in_a_head_response => row(
            "HEAD /mcp (no body in a HEAD response)",
            fa_ok.clone().line("HEAD /mcp HTTP/1.1").body(b""),
            405,
            Exp::Plain(""),
        ),
        put_mcp_with_a_valid_body => row(
            "PUT /mcp with a valid body",
            fa_ok.clone().line("PUT /mcp HTTP/1.1"),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        delete_mcp_with_a_valid_body => row(
            "DELETE /mcp with a valid body",
            fa_ok.clone().line("DELETE /mcp HTTP/1.1"),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        get_mcp_with_a_valid_body => row(
            "GET /mcp with a valid body",
            fa_ok.clone().line("GET /mcp HTTP/1.1"),
            405,
            Exp::Plain("Method Not Allowed"),
        ),
        connect => row(
            "CONNECT",
            fa_ok
                .clone()
                .line(format!("CONNECT {} HTTP/1.1", s.host()))
                .body(b""),
            404,
            Exp::Plain(""),
        ),
        connect_to_a_foreign_authority => row(
            "CONNECT to a foreign authority",
            fa_ok
                .clone()
                .line("CONNECT evil.example:443 HTTP/1.1")
                .body(b""),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        post => row(
            "POST /",
            fa_ok.clone().line("POST / HTTP/1.1"),
            404,
            Exp::Plain(""),
        ),
        post_mcp_uppercase => row(
            "POST /MCP",
            fa_ok.clone().line("POST /MCP HTTP/1.1"),
            404,
            Exp::Plain(""),
        ),
        post_mcp_trailing_slash => row(
            "POST /mcp/",
            fa_ok.clone().line("POST /mcp/ HTTP/1.1"),
            404,
            Exp::Plain(""),
        )
        .known(200, Exp::Ok, WHY_NEST),
        post_mcp_other => row(
            "POST /mcp/other",
            fa_ok.clone().line("POST /mcp/other HTTP/1.1"),
            404,
            Exp::Plain(""),
        )
        .known(200, Exp::Ok, WHY_NEST),
        post_mcp_mcp => row(
            "POST /mcp/../mcp",
            fa_ok.clone().line("POST /mcp/../mcp HTTP/1.1"),
            404,
            Exp::Plain(""),
        )
        .known(200, Exp::Ok, WHY_NEST),
        post_double_slash_mcp => row(
            "POST //mcp",
            fa_ok.clone().line("POST //mcp HTTP/1.1"),
            404,
            Exp::Plain(""),
        ),
        post_mcp_2f => row(
            "POST /mcp%2f",
            fa_ok.clone().line("POST /mcp%2f HTTP/1.1"),
            404,
            Exp::Plain(""),
        ),
        post_asterisk_form => row(
            "POST * (asterisk form)",
            fa_ok.clone().line("POST * HTTP/1.1"),
            404,
            Exp::Plain(""),
        ),
        post_other_without_a_key => row(
            "POST /other without a key",
            fa_ok
                .clone()
                .line("POST /other HTTP/1.1")
                .del("x-runread-key"),
            403,
            Exp::Fixed("missing_key"),
        ),
    }
    json {
        // The valid read_final_answer body with one (asserted) substitution.
        depth_bomb_10_000_arrays => row(
            "depth bomb: 10,000 arrays",
            body_row(format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        depth_bomb_5_000_objects_in_params => row(
            "depth bomb: 5,000 objects in params",
            body_row(
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}1{}}}",
                    "{\"a\":".repeat(5_000),
                    "}".repeat(5_000)
                )
                .as_bytes(),
            ),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        depth_100_inside_the_target => row(
            "depth 100 inside the target",
            {
                let mut v = json!(1);
                for _ in 0..100 {
                    v = json!({ "a": v });
                }
                s.fa(json!({"target": v}))
            },
            200,
            Exp::Tool("invalid_arguments"),
        ),
        depth_bomb_unterminated => row(
            "depth bomb unterminated",
            body_row("[".repeat(20_000).as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        limit_1e999 => row(
            "limit 1e999",
            body_row(rep("\"arguments\":{", "\"arguments\":{\"limit\":1e999,").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        id_1e999 => row(
            "id 1e999",
            body_row(rep("\"id\":1", "\"id\":1e999").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        id_2_64 => row(
            "id 2^64",
            body_row(rep("\"id\":1", "\"id\":18446744073709551616").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        id_1_5 => row(
            "id 1.5",
            body_row(rep("\"id\":1", "\"id\":1.5").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        id_null => row(
            "id null",
            body_row(rep("\"id\":1", "\"id\":null").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        id_true => row(
            "id true",
            body_row(rep("\"id\":1", "\"id\":true").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        id_object => row(
            "id object",
            body_row(rep("\"id\":1", "\"id\":{}").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        invalid_utf_8_inside_a_string => row(
            "invalid UTF-8 inside a string",
            body_row(&{
                let mut b = rep("\"arguments\":{", "\"arguments\":{\"x\":\"@@\",").into_bytes();
                let i = find(&b, b"@@").unwrap();
                b[i] = 0xff;
                b[i + 1] = 0xfe;
                b
            }),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        overlong_utf_8_in_the_method => row(
            "overlong UTF-8 '/' in the method",
            body_row(&{
                let mut b = fa_body.clone();
                let i = find(&b, b"tools/call").unwrap() + 5;
                b.splice(i..i + 1, [0xc0u8, 0xaf]);
                b
            }),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        utf_8_bom_before_the_body => row(
            "UTF-8 BOM before the body",
            body_row(&[b"\xef\xbb\xbf".as_slice(), &fa_body].concat()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        utf_16le_body => row(
            "UTF-16LE body",
            body_row(
                &String::from_utf8_lossy(&fa_body)
                    .encode_utf16()
                    .flat_map(|u| u.to_le_bytes())
                    .collect::<Vec<u8>>(),
            ),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        lone_surrogate_escape_in_a_string => row(
            "lone surrogate escape in a string",
            body_row(rep("\"arguments\":{", "\"arguments\":{\"x\":\"\\ud800\",").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        trailing_garbage_after_the_object => row(
            "trailing garbage after the object",
            body_row(&[fa_body.as_slice(), b"x"].concat()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        two_objects_back_to_back => row(
            "two objects back to back",
            body_row(&[fa_body.as_slice(), &fa_body].concat()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        batch_of_one_request => row(
            "batch of one request",
            body_row(&[b"[".as_slice(), &fa_body, b"]"].concat()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        empty_batch => row(
            "empty batch",
            body_row(b"[]"),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        // A notification is accepted and does nothing (the dated era's handshake sends one).
        notification => row(
            "notification",
            s.base(Some(k1), "notifications/initialized")
                .body(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"),
            202,
            Exp::Plain(""),
        ),
        response_result => row(
            "response (result)",
            body_row(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        response_error => row(
            "response (error)",
            body_row(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}"),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        request_that_also_carries_a_result => row(
            "request that also carries a result",
            body_row(rep("{", "{\"result\":{},").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        empty_body => row(
            "empty body",
            body_row(b""),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        whitespace_body => row(
            "whitespace body",
            body_row(b"  \r\n\t "),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        null_body => row(
            "null body",
            body_row("null".as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        number_body => row(
            "number body",
            body_row("1".as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        string_body => row(
            "string body",
            body_row("\"tools/call\"".as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        true_body => row(
            "true body",
            body_row("true".as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        jsonrpc_1_0 => row(
            "jsonrpc 1.0",
            body_row(rep("\"2.0\"", "\"1.0\"").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        jsonrpc_missing => row(
            "jsonrpc missing",
            body_row(rep("\"jsonrpc\":\"2.0\",", "").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        jsonrpc_as_number_2_0 => row(
            "jsonrpc as number 2.0",
            body_row(rep("\"2.0\"", "2.0").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        method_a_number => row(
            "method a number",
            body_row(rep("\"tools/call\"", "7").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        method_missing => row(
            "method missing",
            body_row(rep("\"method\":\"tools/call\",", "").as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        ),
        duplicate_method_keys_list_then_call => row(
            "duplicate method keys (list, then call)",
            s.base(Some(k1), "tools/call")
                .set("Mcp-Name", "read_final_answer")
                .body(rep("\"method\":", "\"method\":\"tools/list\",\"method\":")),
            415,
            Exp::Plain("deserialize"),
        ),
        duplicate_params_name_keys => row(
            "duplicate params.name keys",
            s.base(Some(k1), "tools/call")
                .set("Mcp-Name", "read_final_answer")
                .body(rep(
                    "\"name\":\"read_final_answer\"",
                    "\"name\":\"get_run\",\"name\":\"read_final_answer\"",
                )),
            404,
            Exp::Rpc(-32601),
        ),
        duplicate_arguments_keys => row(
            "duplicate arguments keys",
            s.base(Some(k1), "tools/call")
                .set("Mcp-Name", "read_final_answer")
                .body(rep(
                    "\"arguments\":",
                    "\"arguments\":{\"path\":\"/etc/passwd\"},\"arguments\":",
                )),
            404,
            Exp::Rpc(-32601),
        ),
        method_with_escaped_slash_same_method => row(
            "method with escaped slash (same method)",
            s.base(Some(k1), "tools/call")
                .set("Mcp-Name", "read_final_answer")
                .body(rep("tools/call", "tools\\/call")),
            200,
            Exp::Ok,
        ),
        method_with_a_trailing_nul_escape => row(
            "method with a trailing NUL escape",
            s.base(Some(k1), "tools/call\\u0000")
                .body(rep("tools/call", "tools/call\\u0000")),
            400,
            Exp::Rpc(-32020),
        ),
    }
    lifecycle {
        // The dated era is served (statelessly, on the key): its handshake is answered.
        dated_initialize_2025_11_25 => row(
            "dated initialize 2025-11-25",
            s.rpc_body(Some(k1), &init).del("MCP-Protocol-Version"),
            200,
            Exp::OkWith("\"protocolVersion\":\"2025-11-25\""),
        ),
        dated_initialize_with_matching_version_header => row(
            "dated initialize with matching version header",
            s.rpc_body(Some(k1), &init)
                .set("MCP-Protocol-Version", "2025-11-25"),
            200,
            Exp::OkWith("\"protocolVersion\":\"2025-11-25\""),
        ),
        // `initialize` exists only in the dated era: naming 2026-07-28 there negotiates the newest
        // dated version.
        initialize_naming_2026_07_28 => row("initialize naming 2026-07-28", s.rpc_body(Some(k1), &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":PROTOCOL,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}})), 200, Exp::OkWith("\"protocolVersion\":\"2025-11-25\"")),
        dated_initialize_without_a_key => row(
            "dated initialize without a key",
            s.rpc_body(None, &init).del("MCP-Protocol-Version"),
            403,
            Exp::Fixed("missing_key"),
        ),
        resources_list => {
            let m = "resources/list";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        resources_templates_list => {
            let m = "resources/templates/list";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        prompts_list => {
            let m = "prompts/list";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        logging_setlevel => {
            let m = "logging/setLevel";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        ping => {
            let m = "ping";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        tasks_list => {
            let m = "tasks/list";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        foo_bar => {
            let m = "foo/bar";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        rpc_discover => {
            let m = "rpc.discover";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        notifications_initialized => {
            let m = "notifications/initialized";
            let params = match m {
                "logging/setLevel" => json!({"level": "debug"}),
                _ => json!({}),
            };
            row(m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601))
        },
        resources_read => row(
            "resources/read",
            s.rpc(
                Some(k1),
                "resources/read",
                json!({"uri": "file:///etc/passwd"}),
            )
            .set("Mcp-Name", "file:///etc/passwd"),
            404,
            Exp::Rpc(-32601),
        ),
        prompts_get => row(
            "prompts/get",
            s.rpc(Some(k1), "prompts/get", json!({"name": "x"})),
            404,
            Exp::Rpc(-32601),
        ),
        completion_complete => row("completion/complete", s.rpc(Some(k1), "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}})), 404, Exp::Rpc(-32601)),
        empty_method => row(
            "empty method",
            s.rpc(Some(k1), "", json!({})).set("Mcp-Method", ""),
            404,
            Exp::Rpc(-32601),
        ),
    }
    protocol {
        mcp_protocol_version_missing => row(
            "MCP-Protocol-Version missing",
            fa_ok.clone().del("MCP-Protocol-Version"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_protocol_version_2025_11_25_meta_says_2026_07_28 => row(
            "MCP-Protocol-Version 2025-11-25 (meta says 2026-07-28)",
            fa_ok.clone().set("MCP-Protocol-Version", "2025-11-25"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_protocol_version_unknown_2099_01_01 => row(
            "MCP-Protocol-Version unknown 2099-01-01",
            fa_ok.clone().set("MCP-Protocol-Version", "2099-01-01"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_protocol_version_empty => row(
            "MCP-Protocol-Version empty",
            fa_ok.clone().set("MCP-Protocol-Version", ""),
            400,
            Exp::Rpc(-32020),
        ),
        meta_missing_on_tools_call => row("_meta missing on tools/call", s.rpc_body(Some(k1), &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_final_answer","arguments":{"target":t1}}})), 400, Exp::Rpc(-32602)),
        meta_missing_on_tools_list => row(
            "_meta missing on tools/list",
            s.rpc_body(
                Some(k1),
                &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            ),
            400,
            Exp::Rpc(-32602),
        ),
        meta_missing_on_server_discover => row(
            "_meta missing on server/discover",
            s.rpc_body(
                Some(k1),
                &json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}),
            ),
            400,
            Exp::Rpc(-32602),
        ),
        // A dated version runread speaks: served like any call, on the same key.
        meta_protocolversion_2025_11_25_with_matching_header => row("_meta protocolVersion 2025-11-25 with matching header", s.rpc(Some(k1), "tools/call", json!({"name":"read_final_answer","arguments":{"target":t1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}})).set("MCP-Protocol-Version", "2025-11-25"), 200, Exp::Ok),
        meta_a_string => row(
            "_meta a string",
            s.rpc(
                Some(k1),
                "tools/call",
                json!({"name":"read_final_answer","arguments":{"target":t1},"_meta":"2026-07-28"}),
            ),
            415,
            Exp::Plain("deserialize"),
        ),
        mcp_method_missing => row(
            "Mcp-Method missing",
            fa_ok.clone().del("Mcp-Method"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_method_tools_list_on_a_call => row(
            "Mcp-Method tools/list on a call",
            fa_ok.clone().set("Mcp-Method", "tools/list"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_method_tools_call => row(
            "Mcp-Method TOOLS/CALL",
            fa_ok.clone().set("Mcp-Method", "TOOLS/CALL"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_name_missing => row(
            "Mcp-Name missing",
            fa_ok.clone().del("Mcp-Name"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_name_names_another_tool => row(
            "Mcp-Name names another tool",
            fa_ok.clone().set("Mcp-Name", "read_history"),
            400,
            Exp::Rpc(-32020),
        ),
        mcp_name_on_tools_list => row(
            "Mcp-Name on tools/list",
            s.rpc(Some(k1), "tools/list", json!({}))
                .set("Mcp-Name", "read_final_answer"),
            200,
            Exp::Ok,
        ),
    }
    arguments {
        unknown_argument_path => row(
            "unknown argument path",
            s.fa_t(json!({"path": "/etc/passwd"})),
            200,
            ia.clone(),
        ),
        unknown_argument_meta_inside_arguments => row(
            "unknown argument _meta inside arguments",
            s.fa_t(json!({"_meta": {}})),
            200,
            ia.clone(),
        ),
        unknown_argument_offset => row(
            "unknown argument offset",
            s.fa_t(json!({"offset": 100})),
            200,
            ia.clone(),
        ),
        cursor_null_schema_string => row(
            "cursor null (schema: string)",
            s.fa_t(json!({"cursor": null})),
            200,
            ia.clone(),
        ),
        limit_null_schema_integer => row(
            "limit null (schema: integer)",
            s.fa_t(json!({"limit": null})),
            200,
            ia.clone(),
        ),
        no_arguments => row(
            "no arguments",
            s.rpc(Some(k1), "tools/call", json!({"name": "read_final_answer"})),
            200,
            ia.clone(),
        ),
        null => row(
            "arguments null",
            s.rpc(
                Some(k1),
                "tools/call",
                json!({"name": "read_final_answer", "arguments": null}),
            ),
            200,
            ia.clone(),
        ),
        an_array => row(
            "arguments an array",
            s.rpc(
                Some(k1),
                "tools/call",
                json!({"name": "read_final_answer", "arguments": [t1]}),
            ),
            404,
            Exp::Rpc(-32601),
        ),
        a_string => row(
            "arguments a string",
            s.rpc(
                Some(k1),
                "tools/call",
                json!({"name": "read_final_answer", "arguments": "target"}),
            ),
            404,
            Exp::Rpc(-32601),
        ),
        empty_arguments => row("empty arguments", s.fa(json!({})), 200, ia.clone()),
        target_null => row(
            "target null",
            s.fa(json!({"target": null})),
            200,
            ia.clone(),
        ),
        target_a_string => row(
            "target a string",
            s.fa(json!({"target": "all"})),
            200,
            ia.clone(),
        ),
        target_an_array => row(
            "target an array",
            s.fa(json!({"target": [t1]})),
            200,
            ia.clone(),
        ),
        target_with_an_extra_field => row(
            "target with an extra field",
            s.fa(json!({"target": s.t_with("scope", json!("all"))})),
            200,
            ia.clone(),
        ),
        target_without_instance => {
            let f = "instance";
            let mut t = t1.clone();
            t.as_object_mut().unwrap().remove(f);
            row(
                format!("target without {f}"),
                s.fa(json!({"target": t})),
                200,
                ia.clone(),
            )
        },
        target_without_revision => {
            let f = "revision";
            let mut t = t1.clone();
            t.as_object_mut().unwrap().remove(f);
            row(
                format!("target without {f}"),
                s.fa(json!({"target": t})),
                200,
                ia.clone(),
            )
        },
        target_without_workspaceid => {
            let f = "workspaceId";
            let mut t = t1.clone();
            t.as_object_mut().unwrap().remove(f);
            row(
                format!("target without {f}"),
                s.fa(json!({"target": t})),
                200,
                ia.clone(),
            )
        },
        target_without_sessionid => {
            let f = "sessionId";
            let mut t = t1.clone();
            t.as_object_mut().unwrap().remove(f);
            row(
                format!("target without {f}"),
                s.fa(json!({"target": t})),
                200,
                ia.clone(),
            )
        },
        target_without_generation => {
            let f = "generation";
            let mut t = t1.clone();
            t.as_object_mut().unwrap().remove(f);
            row(
                format!("target without {f}"),
                s.fa(json!({"target": t})),
                200,
                ia.clone(),
            )
        },
        target_without_runid => {
            let f = "runId";
            let mut t = t1.clone();
            t.as_object_mut().unwrap().remove(f);
            row(
                format!("target without {f}"),
                s.fa(json!({"target": t})),
                200,
                ia.clone(),
            )
        },
        tool_name_unknown => row(
            "tool name unknown",
            s.call(k1, "read_final_answer2", json!({"target": t1})),
            200,
            Exp::RpcFixed(-32602, "unknown_tool"),
        ),
        tool_name_uppercase => row(
            "tool name uppercase",
            s.call(k1, "READ_FINAL_ANSWER", json!({"target": t1})),
            200,
            Exp::RpcFixed(-32602, "unknown_tool"),
        ),
        tool_name_empty => row(
            "tool name empty",
            s.call(k1, "", json!({"target": t1})),
            200,
            Exp::RpcFixed(-32602, "unknown_tool"),
        ),
        tool_name_with_nul => row(
            "tool name with NUL",
            s.call(k1, "read_final_answer\u{0}", json!({"target": t1})),
            200,
            Exp::RpcFixed(-32602, "unknown_tool"),
        ),
        tool_name_with_path_traversal => row(
            "tool name with path traversal",
            s.call(k1, "../read_final_answer", json!({"target": t1})),
            200,
            Exp::RpcFixed(-32602, "unknown_tool"),
        ),
        tool_name_a_number => row(
            "tool name a number",
            s.rpc(
                Some(k1),
                "tools/call",
                json!({"name": 7, "arguments": {"target": t1}}),
            ),
            404,
            Exp::Rpc(-32601),
        ),
        list_granted_targets_with_an_argument => row(
            "list_granted_targets with an argument",
            s.call(k1, "list_granted_targets", json!({"all": true})),
            200,
            ia.clone(),
        ),
        read_history_without_the_feature => row(
            "read_history without the feature",
            s.call(k1, "read_history", json!({"target": t1})),
            200,
            Exp::Tool("feature_not_granted"),
        ),
        get_run_without_the_feature_same_found_false_as_ungranted => row(
            "get_run without the feature (same {found:false} as ungranted)",
            s.call(k1, "get_run", json!({"target": t1})),
            200,
            Exp::OkWith("\"found\":false"),
        ),
        read_artifact_without_the_feature => row(
            "read_artifact without the feature",
            s.call(
                k1,
                "read_artifact",
                json!({"target": t1, "artifactId": "a", "version": 1}),
            ),
            200,
            ia.clone(),
        ),
        read_history_generation_0_schema_minimum_1 => row(
            "read_history generation 0 (schema minimum 1)",
            s.call(
                &s.key2,
                "read_history",
                json!({"target": t2_with("generation", json!(0))}),
            ),
            200,
            ia.clone(),
        ),
        read_history_revision_0_schema_minimum_1 => row(
            "read_history revision 0 (schema minimum 1)",
            s.call(
                &s.key2,
                "read_history",
                json!({"target": t2_with("revision", json!(0))}),
            ),
            200,
            ia.clone(),
        ),
    }
    target {
        instance_plus_one_char => {
            let f = "instance";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} + one char"),
                s.fa(json!({"target": s.t_with(f, json!(format!("{v}x")))})),
                200,
                ng.clone(),
            )
        },
        instance_minus_last_char => {
            let f = "instance";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} - last char"),
                s.fa(json!({"target": s.t_with(f, json!(v[..v.len() - 1]))})),
                200,
                ng.clone(),
            )
        },
        instance_uppercased => {
            let f = "instance";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} uppercased"),
                s.fa(json!({"target": s.t_with(f, json!(v.to_uppercase()))})),
                200,
                if v.to_uppercase() == v {
                    Exp::Ok
                } else {
                    ng.clone()
                },
            )
        },
        workspaceid_plus_one_char => {
            let f = "workspaceId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} + one char"),
                s.fa(json!({"target": s.t_with(f, json!(format!("{v}x")))})),
                200,
                ng.clone(),
            )
        },
        workspaceid_minus_last_char => {
            let f = "workspaceId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} - last char"),
                s.fa(json!({"target": s.t_with(f, json!(v[..v.len() - 1]))})),
                200,
                ng.clone(),
            )
        },
        workspaceid_uppercased => {
            let f = "workspaceId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} uppercased"),
                s.fa(json!({"target": s.t_with(f, json!(v.to_uppercase()))})),
                200,
                if v.to_uppercase() == v {
                    Exp::Ok
                } else {
                    ng.clone()
                },
            )
        },
        sessionid_plus_one_char => {
            let f = "sessionId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} + one char"),
                s.fa(json!({"target": s.t_with(f, json!(format!("{v}x")))})),
                200,
                ng.clone(),
            )
        },
        sessionid_minus_last_char => {
            let f = "sessionId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} - last char"),
                s.fa(json!({"target": s.t_with(f, json!(v[..v.len() - 1]))})),
                200,
                ng.clone(),
            )
        },
        sessionid_uppercased => {
            let f = "sessionId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} uppercased"),
                s.fa(json!({"target": s.t_with(f, json!(v.to_uppercase()))})),
                200,
                if v.to_uppercase() == v {
                    Exp::Ok
                } else {
                    ng.clone()
                },
            )
        },
        runid_plus_one_char => {
            let f = "runId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} + one char"),
                s.fa(json!({"target": s.t_with(f, json!(format!("{v}x")))})),
                200,
                ng.clone(),
            )
        },
        runid_minus_last_char => {
            let f = "runId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} - last char"),
                s.fa(json!({"target": s.t_with(f, json!(v[..v.len() - 1]))})),
                200,
                ng.clone(),
            )
        },
        runid_uppercased => {
            let f = "runId";
            let v = t1[f].as_str().unwrap().to_owned();
            row(
                format!("{f} uppercased"),
                s.fa(json!({"target": s.t_with(f, json!(v.to_uppercase()))})),
                200,
                if v.to_uppercase() == v {
                    Exp::Ok
                } else {
                    ng.clone()
                },
            )
        },
        revision_plus_1 => {
            let f = "revision";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} + 1"),
                s.fa(json!({"target": s.t_with(f, json!(v + 1))})),
                200,
                ng.clone(),
            )
        },
        revision_minus_1 => {
            let f = "revision";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} - 1"),
                s.fa(json!({"target": s.t_with(f, json!(v - 1))})),
                200,
                if v == 1 { ia.clone() } else { ng.clone() },
            )
        },
        revision_negative_1 => {
            let f = "revision";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} -1"),
                s.fa(json!({"target": s.t_with(f, json!(-1))})),
                200,
                ia.clone(),
            )
        },
        revision_as_a_string => {
            let f = "revision";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} as a string"),
                s.fa(json!({"target": s.t_with(f, json!(v.to_string()))})),
                200,
                ia.clone(),
            )
        },
        revision_as_a_float => {
            let f = "revision";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} as a float"),
                s.fa(json!({"target": s.t_with(f, json!(v as f64 + 0.5))})),
                200,
                ia.clone(),
            )
        },
        revision_2_64 => {
            let f = "revision";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} 2^64"),
                body_row(
                    rep(
                        &format!("\"{f}\":{v}"),
                        &format!("\"{f}\":18446744073709551616"),
                    )
                    .as_bytes(),
                )
                .set("Mcp-Name", "read_final_answer"),
                200,
                ia.clone(),
            )
        },
        generation_plus_1 => {
            let f = "generation";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} + 1"),
                s.fa(json!({"target": s.t_with(f, json!(v + 1))})),
                200,
                ng.clone(),
            )
        },
        generation_minus_1 => {
            let f = "generation";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} - 1"),
                s.fa(json!({"target": s.t_with(f, json!(v - 1))})),
                200,
                if v == 1 { ia.clone() } else { ng.clone() },
            )
        },
        generation_negative_1 => {
            let f = "generation";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} -1"),
                s.fa(json!({"target": s.t_with(f, json!(-1))})),
                200,
                ia.clone(),
            )
        },
        generation_as_a_string => {
            let f = "generation";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} as a string"),
                s.fa(json!({"target": s.t_with(f, json!(v.to_string()))})),
                200,
                ia.clone(),
            )
        },
        generation_as_a_float => {
            let f = "generation";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} as a float"),
                s.fa(json!({"target": s.t_with(f, json!(v as f64 + 0.5))})),
                200,
                ia.clone(),
            )
        },
        generation_2_64 => {
            let f = "generation";
            let v = t1[f].as_u64().unwrap();
            row(
                format!("{f} 2^64"),
                body_row(
                    rep(
                        &format!("\"{f}\":{v}"),
                        &format!("\"{f}\":18446744073709551616"),
                    )
                    .as_bytes(),
                )
                .set("Mcp-Name", "read_final_answer"),
                200,
                ia.clone(),
            )
        },
        runid_with_a_slash => row(
            "runId with a slash",
            s.fa(json!({"target": s.t_with("runId", json!("../../etc/passwd"))})),
            200,
            ia.clone(),
        ),
        runid_128_chars_the_bound => row(
            "runId 128 chars (the bound)",
            s.fa(json!({"target": s.t_with("runId", json!("r".repeat(128)))})),
            200,
            ng.clone(),
        ),
        runid_129_chars => row(
            "runId 129 chars",
            s.fa(json!({"target": s.t_with("runId", json!("r".repeat(129)))})),
            200,
            ia.clone(),
        ),
        runid_empty => row(
            "runId empty",
            s.fa(json!({"target": s.t_with("runId", json!(""))})),
            200,
            ia.clone(),
        ),
        runid_non_ascii => row(
            "runId non-ASCII",
            s.fa(json!({"target": s.t_with("runId", json!("rün"))})),
            200,
            ia.clone(),
        ),
        sessionid_with_a_space => row(
            "sessionId with a space",
            s.fa(json!({"target": s.t_with("sessionId", json!("a b"))})),
            200,
            ia.clone(),
        ),
        instance_a_sql_wildcard => row(
            "instance a SQL wildcard",
            s.fa(json!({"target": s.t_with("instance", json!("%"))})),
            200,
            ia.clone(),
        ),
        target_2_with_key_1 => row(
            "target 2 with key 1",
            s.fa(json!({"target": s.target2})),
            200,
            ng.clone(),
        ),
        target_1_with_key_2 => row(
            "target 1 with key 2",
            s.call(&s.key2, "read_final_answer", json!({"target": t1})),
            200,
            ng.clone(),
        ),
        target_1_with_key_3_history_only => row(
            "target 1 with key 3 (history only)",
            s.call(&s.key3, "read_final_answer", json!({"target": t1})),
            200,
            Exp::Tool("feature_not_granted"),
        ),
    }
    cursor {
        replayed_cursor_1 => row(
            "replayed cursor (1)",
            s.fa_t(json!({"cursor": c1, "limit": 100})),
            200,
            Exp::Ok,
        ),
        replayed_cursor_2 => row(
            "replayed cursor (2)",
            s.fa_t(json!({"cursor": c1, "limit": 100})),
            200,
            Exp::Ok,
        ),
        with_another_limit => row(
            "cursor with another limit",
            s.fa_t(json!({"cursor": c1, "limit": 8192})),
            200,
            Exp::Ok,
        ),
        truncated_by_1 => row(
            "cursor truncated by 1",
            s.fa_t(json!({"cursor": &c1[..c1.len() - 1]})),
            200,
            ic.clone(),
        ),
        truncated_by_2 => row(
            "cursor truncated by 2",
            s.fa_t(json!({"cursor": &c1[..c1.len() - 2]})),
            200,
            ic.clone(),
        ),
        truncated_to_half => row(
            "cursor truncated to half",
            s.fa_t(json!({"cursor": &c1[..c1.len() / 2]})),
            200,
            ic.clone(),
        ),
        empty => row(
            "cursor empty",
            s.fa_t(json!({"cursor": ""})),
            200,
            ic.clone(),
        ),
        with_a_char_appended => row(
            "cursor with a char appended",
            s.fa_t(json!({"cursor": format!("{c1}A")})),
            200,
            ic.clone(),
        ),
        with_padding_appended => row(
            "cursor with padding appended",
            s.fa_t(json!({"cursor": format!("{c1}==")})),
            200,
            ic.clone(),
        ),
        tampered_in_the_position => row(
            "cursor tampered in the position",
            s.fa_t(json!({"cursor": tamper_at(c1, 8)})),
            200,
            ic.clone(),
        ),
        tampered_in_the_mac => row(
            "cursor tampered in the MAC",
            s.fa_t(json!({"cursor": tamper_at(c1, c1.len() / 2 + 5)})),
            200,
            ic.clone(),
        ),
        tampered_in_the_last_char => row(
            "cursor tampered in the last char",
            s.fa_t(json!({"cursor": tamper_at(c1, c1.len() - 1)})),
            200,
            ic.clone(),
        ),
        in_standard_base64 => row(
            "cursor in standard base64",
            s.fa_t(json!({"cursor": c1.replace('-', "+").replace('_', "/") + "+/"})),
            200,
            ic.clone(),
        ),
        with_whitespace => row(
            "cursor with whitespace",
            s.fa_t(json!({"cursor": format!(" {c1}")})),
            200,
            ic.clone(),
        ),
        cursor_512_chars_the_bound => row(
            "cursor 512 chars (the bound)",
            s.fa_t(json!({"cursor": "A".repeat(512)})),
            200,
            ic.clone(),
        ),
        cursor_513_chars_schema_maxlength_512 => row(
            "cursor 513 chars (schema maxLength 512)",
            s.fa_t(json!({"cursor": "A".repeat(513)})),
            200,
            ia.clone(),
        ),
        cursor_513_chars_on_an_ungranted_target_arguments_before_grant => row(
            "cursor 513 chars on an ungranted target (arguments before grant)",
            s.fa(json!({"target": s.target2, "cursor": "A".repeat(513)})),
            200,
            ia.clone(),
        ),
        a_number => row(
            "cursor a number",
            s.fa_t(json!({"cursor": 100})),
            200,
            ia.clone(),
        ),
        an_object => row(
            "cursor an object",
            s.fa_t(json!({"cursor": {"offset": 100}})),
            200,
            ia.clone(),
        ),
        of_another_target_key_2_s_answer => row(
            "cursor of another target (key 2's answer)",
            s.fa_t(json!({"cursor": cur.c2})),
            200,
            ic.clone(),
        ),
        of_another_target_and_purpose_key_2_s_history => row(
            "cursor of another target and purpose (key 2's history)",
            s.fa_t(json!({"cursor": cur.h2})),
            200,
            ic.clone(),
        ),
        of_another_purpose_same_target_history => row(
            "cursor of another purpose, same target (history)",
            s.fa_t(json!({"cursor": cur.h1})),
            200,
            ic.clone(),
        ),
        target_1_s_cursor_presented_by_key_2_for_target_2 => row(
            "target 1's cursor presented by key 2 for target 2",
            s.call(
                &s.key2,
                "read_final_answer",
                json!({"target": s.target2, "cursor": c1}),
            ),
            200,
            ic.clone(),
        ),
        key_2_s_own_cursor_sanity => row(
            "key 2's own cursor (sanity)",
            s.call(
                &s.key2,
                "read_final_answer",
                json!({"target": s.target2, "cursor": cur.c2}),
            ),
            200,
            Exp::Ok,
        ),
        answer_cursor_given_to_read_history => row(
            "answer cursor given to read_history",
            s.call(&s.key3, "read_history", json!({"target": t1, "cursor": c1})),
            200,
            ic.clone(),
        ),
        forged_history_purpose_same_target_and_version => row(
            "forged: history purpose, same target and version",
            s.fa_t(json!({"cursor": ck.encode(Purpose::History, tgt, &cur.version1, 100)})),
            200,
            ic.clone(),
        ),
        forged_artifact_purpose => row(
            "forged: artifact purpose",
            s.fa_t(json!({"cursor": ck.encode(Purpose::Artifact, tgt, &cur.version1, 100)})),
            200,
            ic.clone(),
        ),
        forged_another_answer_version => row(
            "forged: another answer version",
            s.fa_t(
                json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, "g1-0000000000000000", 100)}),
            ),
            200,
            ic.clone(),
        ),
        forged_another_revision_of_the_target => row(
            "forged: another revision of the target",
            s.fa_t(json!({"cursor": other_rev})),
            200,
            ic.clone(),
        ),
        forged_position_inside_a_utf_8_character => {
            let mid = (1..answer_len)
                .find(|i| !s.answer.is_char_boundary(*i))
                .expect("a multi-byte character");
            row("forged: position inside a UTF-8 character", s.fa_t(
                json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, &cur.version1, mid as u64)}),
            ), 200, ic.clone())
        },
        forged_position_one_past_the_end => row("forged: position one past the end", s.fa_t(json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, &cur.version1, answer_len as u64 + 1)})), 200, ic.clone()),
        forged_position_u64_max => row(
            "forged: position u64::MAX",
            s.fa_t(
                json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, &cur.version1, u64::MAX)}),
            ),
            200,
            ic.clone(),
        ),
        forged_position_exactly_at_the_end_empty_chunk => row("forged: position exactly at the end (empty chunk)", s.fa_t(json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, &cur.version1, answer_len as u64)})), 200, Exp::Ok),
    }
    limit {
        limit_0 => row(
            "limit 0",
            s.fa_t(json!({"limit": json!(0)})),
            200,
            ia.clone(),
        ),
        limit_3 => row(
            "limit 3",
            s.fa_t(json!({"limit": json!(3)})),
            200,
            ia.clone(),
        ),
        limit_8193 => row(
            "limit 8193",
            s.fa_t(json!({"limit": json!(8193)})),
            200,
            ia.clone(),
        ),
        negative_1 => row(
            "limit -1",
            s.fa_t(json!({"limit": json!(-1)})),
            200,
            ia.clone(),
        ),
        limit_10 => row(
            "limit \"10\"",
            s.fa_t(json!({"limit": json!("10")})),
            200,
            ia.clone(),
        ),
        limit_4_0 => row(
            "limit 4.0",
            s.fa_t(json!({"limit": json!(4.0)})),
            200,
            ia.clone(),
        ),
        limit_4_5 => row(
            "limit 4.5",
            s.fa_t(json!({"limit": json!(4.5)})),
            200,
            ia.clone(),
        ),
        limit_true => row(
            "limit true",
            s.fa_t(json!({"limit": json!(true)})),
            200,
            ia.clone(),
        ),
        limit_4 => row(
            "limit [4]",
            s.fa_t(json!({"limit": json!([4])})),
            200,
            ia.clone(),
        ),
        u64_max => row(
            "limit u64::MAX",
            s.fa_t(json!({"limit": json!(u64::MAX)})),
            200,
            ia.clone(),
        ),
        limit_2_64 => row(
            "limit 2^64",
            body_row(
                rep(
                    "\"arguments\":{",
                    "\"arguments\":{\"limit\":18446744073709551616,",
                )
                .as_bytes(),
            )
            .set("Mcp-Name", "read_final_answer"),
            200,
            ia.clone(),
        ),
        negative_0 => row(
            "limit -0",
            body_row(rep("\"arguments\":{", "\"arguments\":{\"limit\":-0,").as_bytes())
                .set("Mcp-Name", "read_final_answer"),
            200,
            ia.clone(),
        ),
        limit_4e0 => row(
            "limit 4e0",
            body_row(rep("\"arguments\":{", "\"arguments\":{\"limit\":4e0,").as_bytes())
                .set("Mcp-Name", "read_final_answer"),
            200,
            ia.clone(),
        ),
    }
    key {
        no_key => row(
            "key: no key",
            fa_ok.clone().del("x-runread-key"),
            403,
            Exp::Fixed("missing_key"),
        ),
        empty_key => row(
            "key: empty key",
            fa_ok.clone().set("x-runread-key", ""),
            403,
            Exp::Fixed("invalid_key"),
        ),
        key_63_chars => row(
            "key: 63 chars",
            fa_ok.clone().set("x-runread-key", &s.key[..63]),
            403,
            Exp::Fixed("invalid_key"),
        ),
        key_65_chars => row(
            "key: 65 chars",
            fa_ok.clone().set("x-runread-key", format!("{k1}0")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        uppercase => row(
            "key: uppercase",
            fa_ok.clone().set("x-runread-key", s.key.to_uppercase()),
            403,
            Exp::Fixed("invalid_key"),
        ),
        non_hex_letter => row(
            "key: non-hex letter",
            fa_ok
                .clone()
                .set("x-runread-key", format!("{}g", &s.key[..63])),
            403,
            Exp::Fixed("invalid_key"),
        ),
        well_formed_no_grant => row(
            "key: well formed, no grant",
            fa_ok.clone().set("x-runread-key", "0".repeat(64)),
            403,
            Exp::Fixed("invalid_key"),
        ),
        space_inside => row(
            "key: space inside",
            fa_ok.clone().set(
                "x-runread-key",
                format!("{} {}", &s.key[..32], &s.key[32..]),
            ),
            403,
            Exp::Fixed("invalid_key"),
        ),
        tab_inside => row(
            "key: tab inside",
            fa_ok.clone().set(
                "x-runread-key",
                format!("{}\t{}", &s.key[..32], &s.key[32..]),
            ),
            403,
            Exp::Fixed("invalid_key"),
        ),
        quoted => row(
            "key: quoted",
            fa_ok.clone().set("x-runread-key", format!("\"{k1}\"")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        bearer_prefix => row(
            "key: Bearer prefix",
            fa_ok.clone().set("x-runread-key", format!("Bearer {k1}")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        two_keys_comma_joined_in_one_header => row(
            "key: two keys comma-joined in one header",
            fa_ok.clone().set("x-runread-key", format!("{k1}, {k1}")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        key_hash_instead_of_key => row(
            "key: key hash instead of key",
            fa_ok
                .clone()
                .set("x-runread-key", runread_core::key::hash(k1)),
            403,
            Exp::Fixed("invalid_key"),
        ),
        surrounding_whitespace_ows_stripped_by_http => row(
            "key: surrounding whitespace (OWS, stripped by HTTP)",
            fa_ok.clone().set("x-runread-key", format!("   {k1}\t ")),
            200,
            Exp::Ok,
        ),
        header_name_uppercase => row(
            "key: header name uppercase",
            fa_ok
                .clone()
                .del("x-runread-key")
                .add(format!("X-RUNREAD-KEY: {k1}")),
            200,
            Exp::Ok,
        ),
        header_name_with_underscores => row(
            "key: header name with underscores",
            fa_ok
                .clone()
                .del("x-runread-key")
                .add(format!("x_runread_key: {k1}")),
            403,
            Exp::Fixed("missing_key"),
        ),
        header_name_misspelled => row(
            "key: header name misspelled",
            fa_ok
                .clone()
                .del("x-runread-key")
                .add(format!("x-runread-keys: {k1}")),
            403,
            Exp::Fixed("missing_key"),
        ),
        expired_grant => row(
            "key: expired grant",
            fa_ok.clone().set("x-runread-key", &s.key_expired),
            200,
            Exp::Tool("grant_expired"),
        ),
        revoked_grant => row(
            "key: revoked grant",
            fa_ok.clone().set("x-runread-key", &s.key_revoked),
            200,
            Exp::Tool("grant_revoked"),
        ),
        expired_grant_list_granted_targets => row(
            "key: expired grant, list_granted_targets",
            s.call(&s.key_expired, "list_granted_targets", json!({})),
            200,
            Exp::Tool("grant_expired"),
        ),
        revoked_grant_list_granted_targets => row(
            "key: revoked grant, list_granted_targets",
            s.call(&s.key_revoked, "list_granted_targets", json!({})),
            200,
            Exp::Tool("grant_revoked"),
        ),
        expired_grant_tools_list => row(
            "key: expired grant, tools/list (every read tool)",
            s.rpc(Some(&s.key_expired), "tools/list", json!({})),
            200,
            Exp::OkWith("\"read_artifact\""),
        ),
        no_key_server_discover => row(
            "key: no key, server/discover",
            s.rpc(None, "server/discover", json!({})),
            403,
            Exp::Fixed("missing_key"),
        ),
        no_key_tools_list => row(
            "key: no key, tools/list",
            s.rpc(None, "tools/list", json!({})),
            403,
            Exp::Fixed("missing_key"),
        ),
    }
}

/// A replayed cursor returns the same chunk: with the same JSON-RPC id the whole response is the
/// same (the start record is reused within 60 s); with another id, the same content.
#[test]
fn a_replayed_cursor_returns_the_same_chunk() {
    let _shared = shared();
    let _slot = RowSlot::take();
    let (s, cur) = corpus_server();
    let replay = s.fa_t(json!({"cursor": cur.c1, "limit": 100}));
    let a = ok_result(s, &replay);
    let b = ok_result(s, &replay);
    assert_eq!(a, b, "replay with the same id differs");
    let other_id = {
        let mut v: Value = serde_json::from_slice(&replay.body).unwrap();
        v["id"] = json!(4242);
        replay.clone().body(v.to_string())
    };
    let c = ok_result(s, &other_id);
    assert_eq!(
        a["structuredContent"], c["structuredContent"],
        "replay with another id gives another chunk"
    );
    assert_eq!(
        a["structuredContent"]["text"].as_str(),
        Some(&s.answer[100..200]),
        "the cursor chunk is not bytes 100..200 of the answer: {}",
        a["structuredContent"]
    );
}

/// The shared server, hostile rows beside it, still reads the whole answer back byte-exact.
#[test]
fn the_whole_answer_still_reads_back() {
    let _shared = shared();
    let _slot = RowSlot::take();
    let (s, _) = corpus_server();
    assert_eq!(
        read_whole_answer(s),
        s.answer,
        "the answer reads back whole"
    );
}
enum Outcome {
    Pass,
    Known(&'static str),
    Fail(String),
}

fn run_row(s: &Srv, cat: &str, row: &Row) -> Outcome {
    let mut deviation = None;
    let ex = exchange(s.addr, &row.req.bytes(), ROW_TIMEOUT);
    let mut problems = Vec::new();
    let leaked = leaks(s, &ex.raw, row.exp.reads_answer());
    if !leaked.is_empty() {
        problems.push(format!("LEAK: {}", leaked.join(", ")));
    }
    if ex.responses.len() > row.max_responses {
        problems.push(format!(
            "{} responses on one connection (smuggled request answered?)",
            ex.responses.len()
        ));
    }
    let actual = match ex.responses.first() {
        None => {
            problems.push(format!(
                "no response (error: {:?}, {} raw bytes)",
                ex.error,
                ex.raw.len()
            ));
            "none".to_owned()
        }
        Some(r) => {
            let got = classify(r);
            let desc = format!("{} {}", r.status, got_str(&got));
            if r.status != row.status || !row.exp.matches(&got) {
                match &row.known {
                    Some((st, exp, why)) if *st == r.status && exp.matches(&got) => {
                        deviation = Some(*why);
                    }
                    _ => {
                        problems.push(format!("expected {} {:?}, got {desc}", row.status, row.exp))
                    }
                }
            }
            if r.status == 503 || r.status == 500 {
                problems.push(format!("server trouble: {desc}"));
            }
            desc
        }
    };
    // ADV_DUMP=1 lists every row's outcome; ADV_RAW=<part of a row name> shows its raw exchange.
    if std::env::var_os("ADV_DUMP").is_some() {
        eprintln!("[{cat}] {} -> {actual}", row.name);
    }
    if let Ok(part) = std::env::var("ADV_RAW")
        && row.name.contains(&part)
    {
        let req = row.req.bytes();
        eprintln!(
            "=== {}\n--- request ({} bytes)\n{}\n--- response\n{}",
            row.name,
            req.len(),
            String::from_utf8_lossy(&req[..req.len().min(2_000)]),
            String::from_utf8_lossy(&ex.raw[..ex.raw.len().min(2_000)])
        );
    }
    match (problems.is_empty(), deviation) {
        (false, _) => Outcome::Fail(problems.join("; ")),
        (true, Some(why)) => Outcome::Known(why),
        (true, None) => Outcome::Pass,
    }
}

/// Reads the whole granted answer over raw TCP, following cursors; checks the sha256.
fn read_whole_answer(s: &Srv) -> String {
    let mut text = String::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let mut args = json!({"target": s.target, "limit": 1000});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let r = ok_result(s, &s.fa(args));
        let sc = &r["structuredContent"];
        assert_eq!(sc["trust"], "untrusted_data");
        text.push_str(sc["text"].as_str().unwrap());
        assert_eq!(
            sc["sha256"].as_str().unwrap(),
            runread_core::sha256_hex(s.answer.as_bytes())
        );
        if sc["eof"] == json!(true) {
            return text;
        }
        cursor = Some(sc["nextCursor"].as_str().unwrap().to_owned());
    }
    panic!("no eof after 100 chunks");
}

// ---------------------------------------------------------------------------------------------
// Slowloris
// ---------------------------------------------------------------------------------------------

/// Slow-body clients started at once.
const SLOW_BODY_CLIENTS: usize = 24;
/// Gap between two dribbled bytes.
const DRIBBLE_EVERY: Duration = Duration::from_millis(400);
/// How far past the body deadline a slow body may still be answered.
const DEADLINE_SLACK: Duration = Duration::from_secs(4);
/// Slow-header clients.
const SLOW_HEADER_CLIENTS: usize = 32;
/// How long headers are dribbled: longer than hyper's nominal 30 s header-read timeout.
const SLOW_HEADER_SECS: u64 = 36;

/// The outcome of one dribbling connection.
#[derive(Debug)]
struct Dribbled {
    /// The response, if the server sent one.
    resp: Option<Resp>,
    /// From the end of the headers to the response or close.
    elapsed: Duration,
    /// The server closed (or reset) the connection.
    closed: bool,
}

/// Sends `head`, then dribbles `body_len` bytes one at a time until the server answers or
/// closes, or `max` passes.
fn dribble_body(addr: SocketAddr, head: &[u8], body_len: usize, max: Duration) -> Dribbled {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_nodelay(true).unwrap();
    c.write_all(head).unwrap();
    let t0 = Instant::now();
    let mut raw = Vec::new();
    let mut closed = false;
    let mut sent = 0;
    c.set_read_timeout(Some(DRIBBLE_EVERY)).unwrap();
    let mut buf = [0u8; 4096];
    while t0.elapsed() < max {
        match c.read(&mut buf) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if parse_one(&raw, false).is_some() {
                    break;
                }
                continue;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => {
                closed = true;
                break;
            }
        }
        if sent < body_len && c.write_all(b" ").is_err() {
            closed = true;
            break;
        }
        sent += 1;
    }
    let elapsed = t0.elapsed();
    // Whatever arrived before a close.
    c.set_read_timeout(Some(Duration::from_millis(200))).ok();
    while let Ok(n) = c.read(&mut buf) {
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    Dribbled {
        resp: parse_one(&raw, true).map(|(r, _)| r),
        elapsed,
        closed,
    }
}

fn slow_body_head(s: &Srv, body_len: usize) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: {PROTOCOL}\r\nMcp-Method: tools/call\r\nMcp-Name: read_final_answer\r\nx-runread-key: {}\r\n\
         Content-Length: {body_len}\r\n\r\n{{",
        s.host(),
        s.key
    )
    .into_bytes()
}

/// One normal `read_final_answer` on a fresh connection: (status, fixed code or "ok").
fn normal_request(s: &Srv) -> (u16, String) {
    let ex = exchange(s.addr, &s.fa_t(json!({})).bytes(), Duration::from_secs(20));
    match ex.responses.first() {
        None => (0, format!("no response ({:?})", ex.error)),
        Some(r) => {
            let g = classify(r);
            let ok = matches!(&g, Got::Ok(v) if v["structuredContent"]["text"].as_str() == Some(slice_prefix(&s.answer, 4096)));
            (r.status, if ok { "ok".into() } else { got_str(&g) })
        }
    }
}

fn slice_prefix(s: &str, n: usize) -> &str {
    let mut n = n.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
}

#[test]
fn slow_bodies_are_cut_off_at_the_deadline() {
    let _g = alone();
    let s = Arc::new(start());
    let body_len = 1_000;
    let max =
        Duration::from_secs(HTTP_BODY_DEADLINE_SECS) + DEADLINE_SLACK + Duration::from_secs(4);
    let handles: Vec<_> = (0..SLOW_BODY_CLIENTS)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                dribble_body(s.addr, &slow_body_head(&s, body_len), body_len, max)
            })
        })
        .collect();
    let results: Vec<Dribbled> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let deadline = Duration::from_secs(HTTP_BODY_DEADLINE_SECS);
    let (mut timed_out, mut busy) = (0, 0);
    let mut problems = Vec::new();
    for (i, d) in results.iter().enumerate() {
        let Some(r) = &d.resp else {
            problems.push(format!(
                "#{i}: no response (closed {}, after {:?})",
                d.closed, d.elapsed
            ));
            continue;
        };
        if let Some(p) = leaks(&s, format!("{}{}", r.head, r.text()).as_bytes(), false).first() {
            problems.push(format!("#{i}: leak {p}"));
        }
        match (r.status, classify(r)) {
            (408, Got::Fixed(c, _)) if c == "body_timeout" => {
                timed_out += 1;
                if d.elapsed + Duration::from_millis(500) < deadline
                    || d.elapsed > deadline + DEADLINE_SLACK
                {
                    problems.push(format!("#{i}: body_timeout after {:?}", d.elapsed));
                }
            }
            (503, Got::Fixed(c, _)) if c == "busy" => {
                busy += 1;
                if r.header("retry-after").is_none() {
                    problems.push(format!("#{i}: busy without Retry-After"));
                }
            }
            (st, g) => problems.push(format!("#{i}: {st} {} after {:?}", got_str(&g), d.elapsed)),
        }
    }
    eprintln!(
        "slow bodies: {SLOW_BODY_CLIENTS} clients -> {timed_out} cut off with 408 body_timeout, {busy} refused 503 busy; elapsed {:?}",
        results
            .iter()
            .map(|d| d.elapsed.as_millis())
            .collect::<Vec<_>>()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // All from one key: at most that key's share of the body readers is read; the rest are busy.
    let readers =
        runread_mcp::guards::BODY_READERS_MAX.min(runread_mcp::guards::BODY_READERS_PER_KEY_MAX);
    assert!(
        timed_out == SLOW_BODY_CLIENTS.min(readers),
        "{timed_out} timed out"
    );
    let (st, code) = normal_request(&s);
    assert_eq!(
        (st, code.as_str()),
        (200, "ok"),
        "healthy after the slow bodies"
    );
}

/// What normal requests saw while `dribblers` slow bodies ran (each reconnecting as soon as it was
/// cut off) for `secs`: `(ok, busy, other, slow bodies cut off)`.
fn normal_during_slow_bodies(
    s: &Arc<Srv>,
    dribblers: usize,
    secs: u64,
) -> (u32, u32, Vec<(u16, String)>, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let cut = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..dribblers)
        .map(|_| {
            let (s, stop, cut) = (s.clone(), stop.clone(), cut.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let d = dribble_body(
                        s.addr,
                        &slow_body_head(&s, 1_000),
                        1_000,
                        Duration::from_secs(12),
                    );
                    if d.resp.as_ref().is_some_and(|r| r.status == 408) {
                        cut.fetch_add(1, Ordering::Relaxed);
                    }
                    if d.resp.as_ref().is_some_and(|r| r.status == 503) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    let (mut ok, mut busy, mut other) = (0u32, 0u32, Vec::new());
    while t0.elapsed() < Duration::from_secs(secs) {
        match normal_request(s) {
            (200, c) if c == "ok" => ok += 1,
            (503, c) if c.starts_with("Fixed(busy,") => busy += 1,
            x => other.push(x),
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    (ok, busy, other, cut.load(Ordering::Relaxed))
}

#[test]
fn normal_requests_succeed_while_slow_bodies_dribble() {
    let _g = alone();
    let s = Arc::new(start());
    // Fewer slow bodies than the in-flight cap: a permit stays free for normal requests.
    let below = HTTP_IN_FLIGHT_MAX - 1;
    let (ok_below, busy_below, other_below, cut_below) = normal_during_slow_bodies(&s, below, 7);
    // Twice the cap: every permit is held by a slow body until the 5 s deadline cuts it off.
    let above = HTTP_IN_FLIGHT_MAX * 2;
    let (ok, busy, other, cut) = normal_during_slow_bodies(&s, above, 12);
    eprintln!(
        "normal requests while {below} slow bodies dribble: {ok_below} ok, {busy_below} busy, other {other_below:?} \
         (slow bodies cut off: {cut_below}); while {above} dribble: {ok} ok, {busy} busy, other {other:?} \
         (slow bodies cut off: {cut})"
    );
    assert!(
        other_below.is_empty() && other.is_empty(),
        "{other_below:?} {other:?}"
    );
    assert!(
        ok_below > 0 && busy_below == 0,
        "{below} slow bodies: {ok_below} ok, {busy_below} busy"
    );
    assert!(
        ok * 2 >= ok + busy,
        "normal requests starved by {above} slow bodies: {ok} ok, {busy} busy \
         (a slow body holds an in-flight permit for the whole body deadline)"
    );
}

#[test]
fn slow_headers_are_cut_off_and_normal_requests_still_succeed() {
    let _g = alone();
    let s = Arc::new(start());
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..SLOW_HEADER_CLIENTS)
        .map(|i| {
            let (s, stop) = (s.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(s.addr).unwrap();
                c.set_nodelay(true).unwrap();
                c.set_read_timeout(Some(Duration::from_millis(1000)))
                    .unwrap();
                let head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nX-Slow-{i}: ", s.host());
                c.write_all(head.as_bytes()).unwrap();
                let t0 = Instant::now();
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return (false, raw, t0.elapsed());
                    }
                    match c.read(&mut buf) {
                        Ok(0) => return (true, raw, t0.elapsed()),
                        Ok(n) => raw.extend_from_slice(&buf[..n]),
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                        Err(_) => return (true, raw, t0.elapsed()),
                    }
                    if c.write_all(b"a").is_err() {
                        return (true, raw, t0.elapsed());
                    }
                }
            })
        })
        .collect();
    let t0 = Instant::now();
    let (mut ok, mut bad) = (0u32, Vec::new());
    while t0.elapsed() < Duration::from_secs(SLOW_HEADER_SECS) {
        match normal_request(&s) {
            (200, c) if c == "ok" => ok += 1,
            x => bad.push(x),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::Relaxed);
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let closed: Vec<_> = results.iter().filter(|r| r.0).collect();
    eprintln!(
        "slow headers: {} clients dribbling a header 1 byte/s for {SLOW_HEADER_SECS}s: {} cut off by the server {:?}, {} still open; normal requests meanwhile: {ok} ok, {} not ({bad:?})",
        SLOW_HEADER_CLIENTS,
        closed.len(),
        closed
            .iter()
            .map(|r| format!(
                "{:?} {:?}",
                r.2,
                String::from_utf8_lossy(&r.1).lines().next().unwrap_or("")
            ))
            .collect::<Vec<_>>(),
        results.len() - closed.len(),
        bad.len()
    );
    for r in &results {
        assert!(leaks(&s, &r.1, false).is_empty());
    }
    assert!(
        bad.is_empty(),
        "normal requests failed while headers dribbled: {bad:?}"
    );
    assert!(ok > 0);
    // Every slow header sender is cut off by the server's header-read timeout, never held open.
    assert_eq!(
        closed.len(),
        SLOW_HEADER_CLIENTS,
        "slow header senders are cut off"
    );
    for r in &closed {
        assert!(
            r.2 < runread_mcp::server::HEADER_READ_TIMEOUT + Duration::from_secs(3),
            "cut off near the timeout: {:?}",
            r.2
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Concurrency soak
// ---------------------------------------------------------------------------------------------

/// Clients looping `read_final_answer` at once.
const SOAK_CLIENTS: usize = 64;
/// Length of the soak (override with `RUNREAD_SOAK_SECS`).
const SOAK_SECS: u64 = 60;
/// When the first RSS sample is taken (or half the soak, if shorter).
const RSS_FIRST_SAMPLE_SECS: u64 = 10;
/// Most the process's RSS may grow between the first sample and the end.
const RSS_GROWTH_TOLERANCE_KIB: u64 = 24 * 1024;

#[cfg(target_os = "linux")]
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

// Reads its memory from `/proc/self/status`: Linux only.
#[cfg(target_os = "linux")]
#[test]
fn sixty_four_clients_get_full_answers_or_immediate_busy_and_memory_stays_flat() {
    let _g = alone();
    let soak = std::env::var("RUNREAD_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(SOAK_SECS);
    let first_sample = RSS_FIRST_SAMPLE_SECS.min(soak / 2).max(1);
    let s = Arc::new(start());
    let expected_text = slice_prefix(&s.answer, 4096).to_owned();
    let expected_sha = runread_core::sha256_hex(s.answer.as_bytes());
    let ok = Arc::new(AtomicU64::new(0));
    let busy = Arc::new(AtomicU64::new(0));
    let reconnects = Arc::new(AtomicU64::new(0));
    let bad = Arc::new(Mutex::new(Vec::<String>::new()));
    let deadline = Instant::now() + Duration::from_secs(soak);
    let rss_start = status_kib("VmRSS:");
    let handles: Vec<_> = (0..SOAK_CLIENTS)
        .map(|client| {
            let (s, ok, busy, bad, reconnects) = (
                s.clone(),
                ok.clone(),
                busy.clone(),
                bad.clone(),
                reconnects.clone(),
            );
            let (expected_text, expected_sha) = (expected_text.clone(), expected_sha.clone());
            std::thread::spawn(move || {
                let mut conn: Option<Conn> = None;
                let mut n: u64 = 0;
                while Instant::now() < deadline {
                    n += 1;
                    // A fresh JSON-RPC id each time: every call goes through the gate whole.
                    let mut body: Value = serde_json::from_slice(&s.fa_t(json!({})).body).unwrap();
                    body["id"] = json!(client as u64 * 1_000_000_000 + n);
                    let req = s.fa_t(json!({})).del("connection").body(body.to_string());
                    let c = match conn.as_mut() {
                        Some(c) => c,
                        None => conn.insert(Conn::open(s.addr).unwrap()),
                    };
                    let r = match c.request(&req.bytes()) {
                        Ok(r) => r,
                        Err(e) => {
                            reconnects.fetch_add(1, Ordering::Relaxed);
                            conn = None;
                            if e.kind() != ErrorKind::UnexpectedEof
                                && e.kind() != ErrorKind::ConnectionReset
                            {
                                bad.lock().unwrap().push(format!("client {client}: {e}"));
                            }
                            continue;
                        }
                    };
                    if r.header("connection")
                        .is_some_and(|v| v.eq_ignore_ascii_case("close"))
                    {
                        conn = None;
                    }
                    match (r.status, classify(&r)) {
                        (200, Got::Ok(v))
                            if v["structuredContent"]["text"].as_str()
                                == Some(expected_text.as_str())
                                && v["structuredContent"]["sha256"].as_str()
                                    == Some(expected_sha.as_str())
                                && v["_meta"]["io.runread/startId"].is_string() =>
                        {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        (503, Got::Fixed(c, _))
                            if c == "busy" && r.header("retry-after").as_deref() == Some("1") =>
                        {
                            busy.fetch_add(1, Ordering::Relaxed);
                        }
                        (st, g) => bad
                            .lock()
                            .unwrap()
                            .push(format!("client {client}: {st} {}", got_str(&g))),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(first_sample));
    let rss_first = status_kib("VmRSS:");
    let anon_first = status_kib("RssAnon:");
    let (ok_first, busy_first) = (ok.load(Ordering::Relaxed), busy.load(Ordering::Relaxed));
    for h in handles {
        h.join().unwrap();
    }
    let rss_end = status_kib("VmRSS:");
    let anon_end = status_kib("RssAnon:");
    let (ok_n, busy_n) = (ok.load(Ordering::Relaxed), busy.load(Ordering::Relaxed));
    let bad = bad.lock().unwrap();
    eprintln!(
        "soak: {SOAK_CLIENTS} clients for {soak}s against an in-flight cap of {HTTP_IN_FLIGHT_MAX}: {ok_n} full answers, \
         {busy_n} busy, {} other, {} reconnects; at {first_sample}s {ok_first} ok / {busy_first} busy; \
         VmRSS start {rss_start} KiB, at {first_sample}s {rss_first} KiB, end {rss_end} KiB \
         (RssAnon {anon_first} -> {anon_end} KiB)",
        bad.len(),
        reconnects.load(Ordering::Relaxed)
    );
    assert!(
        bad.is_empty(),
        "{} bad responses, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
    assert!(ok_n > 0 && busy_n > 0, "{ok_n} ok, {busy_n} busy");
    assert!(
        rss_end <= rss_first + RSS_GROWTH_TOLERANCE_KIB,
        "RSS grew from {rss_first} KiB to {rss_end} KiB"
    );
    // Still healthy.
    let (st, code) = normal_request(&s);
    assert_eq!((st, code.as_str()), (200, "ok"));
    let _ = Shutdown::Both;
}
