//! Hostile clients against a real server over raw TCP.
//!
//! 1. An adversarial corpus: one table of hostile requests (header smuggling, duplicate and
//!    oversized headers, non-ASCII and encoded-word values, forbidden headers, Host/Origin/fetch
//!    metadata, media types, methods and paths, malformed JSON-RPC, MCP lifecycle and protocol
//!    headers, arguments, targets, cursors, limits and keys). Every row asserts the exact status,
//!    the fixed code, and that the response carries no granted answer text, no filesystem path
//!    and no key; afterwards the server must still read a whole answer.
//! 2. Slowloris: slow bodies are cut off at the body deadline; slow headers are observed and
//!    reported; normal requests are attempted meanwhile.
//! 3. A concurrency soak: 64 clients against the in-flight cap, every response a full success or
//!    an immediate `busy`, with the process's RSS sampled and required to stay flat.
//!
//! The tests run one at a time (a file-wide lock): the soak measures this process's RSS, and the
//! servers run in-process.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::cursor::Purpose;
use runread_core::limits::{
    HTTP_BODY_DEADLINE_SECS, HTTP_BODY_MAX_BYTES, HTTP_HEADER_MAX_BYTES, HTTP_IN_FLIGHT_MAX,
};
use runread_service::{Config, Service};
use runread_store::{Grant, Store};
use runread_testkit::Env;

/// One test at a time: the soak reads this process's RSS and every server runs in-process.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
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
    let grant = |run_id: &str, features: Vec<Feature>| {
        runread_service::owner::grant(
            &*env.store,
            &*env.keys(),
            runread_service::owner::GrantRequest {
                run_id,
                session_id: None,
                features,
                expires_at_ms: now + 3_600_000,
                label: "adversarial",
            },
            now,
        )
        .unwrap()
    };
    let g1 = grant(&run.target.run_id, vec![Feature::FinalAnswer]);
    let g2 = grant(
        &run2.target.run_id,
        vec![Feature::FinalAnswer, Feature::History],
    );
    let g3 = grant(&run.target.run_id, vec![Feature::History]);
    let raw_grant = |expires_in_ms: i64, revoked: bool| {
        let key = runread_core::key::generate().unwrap();
        let id = format!("g-{}", &key[..16]);
        env.store
            .insert_grant(&Grant {
                id: id.clone(),
                key_hash: runread_core::key::hash(&key),
                label: "adversarial".into(),
                target: g1.grant.target.clone(),
                features: vec![Feature::FinalAnswer],
                created_at_ms: now - 1_000_000,
                expires_at_ms: now + expires_in_ms,
                revoked_at_ms: None,
            })
            .unwrap();
        if revoked {
            assert!(env.store.revoke_grant(&id, now).unwrap());
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

    let service = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
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
    cat: &'static str,
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

fn corpus(s: &Srv, cur: &Cursors) -> Vec<Row> {
    let rows: std::cell::RefCell<Vec<Row>> = std::cell::RefCell::new(Vec::new());
    let mut cat: &'static str;
    let push = |cat: &'static str, name: &str, req: Req, status: u16, exp: Exp| {
        rows.borrow_mut().push(Row {
            cat,
            name: name.to_owned(),
            req,
            status,
            exp,
            max_responses: 1,
            known: None,
        });
    };
    // Marks the row just pushed with runread's current, differing behavior.
    let known = |status: u16, exp: Exp, why: &'static str| {
        rows.borrow_mut().last_mut().unwrap().known = Some((status, exp, why));
    };
    let k1 = s.key.as_str();
    let t1 = s.target.clone();
    let fa_ok = s.fa_t(json!({}));
    let fa_body = fa_ok.body.clone();
    let ir = INVALID_REQUEST_STATUS;
    let answer_len = s.answer.len();

    // --- baseline: what a hostile row is measured against -------------------------------------
    cat = "baseline";
    push(cat, "server/discover", s.discover(), 200, Exp::Ok);
    push(
        cat,
        "tools/list",
        s.rpc(Some(k1), "tools/list", json!({})),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "list_granted_targets",
        s.call(k1, "list_granted_targets", json!({})),
        200,
        Exp::Ok,
    );
    push(cat, "read_final_answer", fa_ok.clone(), 200, Exp::Ok);
    push(
        cat,
        "limit 4 (minimum)",
        s.fa_t(json!({"limit": 4})),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "limit 8192 (maximum)",
        s.fa_t(json!({"limit": 8192})),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "string JSON-RPC id",
        s.rpc_body(
            Some(k1),
            &json!({"jsonrpc":"2.0","id":"abc","method":"tools/list","params":{"_meta":meta()}}),
        ),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "negative JSON-RPC id",
        s.rpc_body(
            Some(k1),
            &json!({"jsonrpc":"2.0","id":-7,"method":"tools/list","params":{"_meta":meta()}}),
        ),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "query string on /mcp",
        fa_ok.clone().line("POST /mcp?x=1 HTTP/1.1"),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "HTTP/1.0 with Host",
        fa_ok.clone().line("POST /mcp HTTP/1.0"),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "Mcp-Name as =?base64? encoded word",
        fa_ok.clone().set(
            "Mcp-Name",
            format!("=?base64?{}?=", b64("read_final_answer")),
        ),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "Expect: 100-continue",
        fa_ok.clone().set("Expect", "100-continue"),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "body padded to exactly the limit",
        {
            let mut b = fa_body.clone();
            b.resize(HTTP_BODY_MAX_BYTES, b' ');
            fa_ok.clone().body(b)
        },
        200,
        Exp::Ok,
    );

    // --- header smuggling -----------------------------------------------------------------------
    cat = "smuggling";
    push(
        cat,
        "bare LF injects a second key header",
        fa_ok
            .clone()
            .add(format!("X-A: a\nx-runread-key: {}", s.key2)),
        400,
        Exp::Fixed("duplicate_key"),
    );
    push(
        cat,
        "bare LF injects Authorization",
        fa_ok.clone().add("X-A: a\nAuthorization: Bearer x"),
        400,
        Exp::Fixed("forbidden_header"),
    );
    push(
        cat,
        "bare CR inside a value",
        fa_ok.clone().add("X-A: a\rb"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "CR CR LF line end",
        fa_ok.clone().add("X-A: a\r"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "NUL inside a value",
        fa_ok.clone().add("X-A: a\0b"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "obs-fold continues a custom header",
        fa_ok.clone().add("X-A: a\r\n b"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "obs-fold continues the key header",
        fa_ok.clone().del("x-runread-key").add(format!(
            "x-runread-key: {}\r\n {}",
            &s.key[..32],
            &s.key[32..]
        )),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "obs-fold continues Host",
        fa_ok
            .clone()
            .del("host")
            .add(format!("Host: evil.example\r\n {}", s.host())),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Transfer-Encoding chunked + Content-Length (valid chunked body)",
        fa_ok
            .clone()
            .no_cl()
            .set("Transfer-Encoding", "chunked")
            .add(format!("Content-Length: {}", fa_body.len()))
            .body(chunked(&[&fa_body])),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "Content-Length + Transfer-Encoding chunked (valid chunked body)",
        fa_ok
            .clone()
            .no_cl()
            .add(format!("Content-Length: {}", fa_body.len()))
            .set("Transfer-Encoding", "chunked")
            .body(chunked(&[&fa_body])),
        200,
        Exp::Ok,
    );
    {
        // CL.TE: an empty chunked body with a smuggled read after it, covered by Content-Length.
        let smuggled = fa_ok.clone().del("connection").bytes();
        let mut body = b"0\r\n\r\n".to_vec();
        body.extend_from_slice(&smuggled);
        push(
            cat,
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
        );
        push(
            cat,
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
        );
    }
    push(
        cat,
        "two Transfer-Encoding headers, last not chunked",
        fa_ok
            .clone()
            .no_cl()
            .add("Transfer-Encoding: chunked")
            .add("Transfer-Encoding: identity")
            .body(chunked(&[&fa_body])),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Transfer-Encoding: chunked, identity",
        fa_ok
            .clone()
            .no_cl()
            .set("Transfer-Encoding", "chunked, identity")
            .body(chunked(&[&fa_body])),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Transfer-Encoding: gzip (not chunked)",
        fa_ok.clone().set("Transfer-Encoding", "gzip"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Transfer-Encoding: xchunked",
        fa_ok
            .clone()
            .no_cl()
            .set("Transfer-Encoding", "xchunked")
            .body(chunked(&[&fa_body])),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Transfer-Encoding on HTTP/1.0",
        fa_ok
            .clone()
            .line("POST /mcp HTTP/1.0")
            .no_cl()
            .set("Transfer-Encoding", "chunked")
            .body(chunked(&[&fa_body])),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "chunked body in three chunks",
        fa_ok
            .clone()
            .no_cl()
            .set("Transfer-Encoding", "chunked")
            .body(chunked(&[&fa_body[..10], &fa_body[10..50], &fa_body[50..]])),
        200,
        Exp::Ok,
    );
    push(
        cat,
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
    );
    push(
        cat,
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
    );
    push(
        cat,
        "chunk size not hex",
        fa_ok
            .clone()
            .no_cl()
            .set("Transfer-Encoding", "chunked")
            .body(b"zz\r\n{}\r\n0\r\n\r\n"),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "chunk size overflows u64",
        fa_ok
            .clone()
            .no_cl()
            .set("Transfer-Encoding", "chunked")
            .body(b"fffffffffffffffffff\r\n{}\r\n0\r\n\r\n"),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
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
    );
    push(
        cat,
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
    );
    push(
        cat,
        "two equal Content-Length headers",
        fa_ok
            .clone()
            .add(format!("Content-Length: {}", fa_body.len())),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "two different Content-Length headers",
        fa_ok
            .clone()
            .add(format!("Content-Length: {}", fa_body.len() + 1)),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Content-Length as a list \"N, N\"",
        fa_ok
            .clone()
            .no_cl()
            .add(format!("Content-Length: {0}, {0}", fa_body.len())),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Content-Length negative",
        fa_ok.clone().no_cl().add("Content-Length: -1"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Content-Length with plus sign",
        fa_ok
            .clone()
            .no_cl()
            .add(format!("Content-Length: +{}", fa_body.len())),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Content-Length hex",
        fa_ok.clone().no_cl().add("Content-Length: 0x10"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Content-Length overflows u64",
        fa_ok
            .clone()
            .no_cl()
            .add("Content-Length: 99999999999999999999999"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Content-Length over the body limit",
        fa_ok
            .clone()
            .no_cl()
            .add(format!("Content-Length: {}", HTTP_BODY_MAX_BYTES + 1)),
        413,
        Exp::Fixed("body_too_large"),
    );
    push(
        cat,
        "Content-Length over the limit with Expect: 100-continue",
        fa_ok
            .clone()
            .no_cl()
            .set("Expect", "100-continue")
            .add(format!("Content-Length: {}", HTTP_BODY_MAX_BYTES * 4))
            .body(b""),
        413,
        Exp::Fixed("body_too_large"),
    );
    push(
        cat,
        "Content-Length shorter than the body (rest pipelined)",
        fa_ok
            .clone()
            .no_cl()
            .add(format!("Content-Length: {}", fa_body.len() - 10)),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "Content-Length longer than the body (held to the deadline)",
        fa_ok
            .clone()
            .no_cl()
            .add(format!("Content-Length: {}", fa_body.len() + 10)),
        408,
        Exp::Fixed("body_timeout"),
    );
    push(
        cat,
        "second request pipelined after Connection: close",
        fa_ok.clone().body(b"{}").tail(fa_ok.bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "absolute-form target naming a foreign host",
        fa_ok.clone().line("POST http://evil.example/mcp HTTP/1.1"),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "request line HTTP/2.0",
        fa_ok.clone().line("POST /mcp HTTP/2.0"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "request line HTTP/0.9 style",
        fa_ok.clone().line("POST /mcp"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "lowercase method post",
        fa_ok.clone().line("post /mcp HTTP/1.1"),
        405,
        Exp::Plain("Method Not Allowed"),
    );
    push(
        cat,
        "space before the header colon",
        fa_ok.clone().add("X-A : b"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "header line without a colon",
        fa_ok.clone().add("X-A b"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "header name with a separator",
        fa_ok.clone().add("X(A): b"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "empty header name",
        fa_ok.clone().add(": b"),
        400,
        Exp::Plain(""),
    );

    // --- duplicate and oversized headers -----------------------------------------------------
    cat = "dup/oversize";
    let big = "a".repeat(64 * 1024);
    push(
        cat,
        "64 KiB custom header",
        fa_ok.clone().add(format!("X-Pad: {big}")),
        431,
        Exp::Plain(""),
    );
    push(
        cat,
        "64 KiB key header",
        fa_ok.clone().set("x-runread-key", &big),
        431,
        Exp::Plain(""),
    );
    // Large values under the header limit reach the guards, which refuse them.
    let big = "a".repeat(HTTP_HEADER_MAX_BYTES / 2);
    push(
        cat,
        "8 KiB key header",
        fa_ok.clone().set("x-runread-key", &big),
        403,
        Exp::Fixed("invalid_key"),
    );
    push(
        cat,
        "8 KiB Host",
        fa_ok.clone().set("Host", &big),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "8 KiB Mcp-Method",
        fa_ok.clone().set("Mcp-Method", &big),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "8 KiB Origin",
        fa_ok.clone().set("Origin", format!("http://{big}")),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "600 KiB of headers",
        fa_ok
            .clone()
            .add(format!("X-Pad: {}", "a".repeat(600 * 1024))),
        431,
        Exp::Plain(""),
    );
    push(
        cat,
        "120 headers",
        (0..120).fold(fa_ok.clone(), |r, i| r.add(format!("X-H{i}: v"))),
        431,
        Exp::Plain(""),
    );
    push(
        cat,
        "70 KiB request target (over the header limit before it ends)",
        fa_ok
            .clone()
            .line(format!("POST /mcp?{} HTTP/1.1", "a".repeat(70 * 1024))),
        431,
        Exp::Plain(""),
    );
    push(
        cat,
        "two Host headers",
        fa_ok.clone().add(format!("Host: {}", s.host())),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "two Origin headers",
        fa_ok
            .clone()
            .add("Origin: http://a.example")
            .add("Origin: http://b.example"),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "two keys, same value",
        fa_ok.clone().add(format!("x-runread-key: {k1}")),
        400,
        Exp::Fixed("duplicate_key"),
    );
    push(
        cat,
        "two keys, different grants",
        fa_ok.clone().add(format!("x-runread-key: {}", s.key2)),
        400,
        Exp::Fixed("duplicate_key"),
    );
    push(
        cat,
        "two keys, second malformed",
        fa_ok.clone().add("x-runread-key: nope"),
        400,
        Exp::Fixed("duplicate_key"),
    );
    push(
        cat,
        "two Mcp-Method headers, same value",
        fa_ok.clone().add("Mcp-Method: tools/call"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "two Mcp-Name headers",
        fa_ok.clone().add("Mcp-Name: read_final_answer"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "two MCP-Protocol-Version headers, same value",
        fa_ok
            .clone()
            .add(format!("MCP-Protocol-Version: {PROTOCOL}")),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "two MCP-Protocol-Version headers, different values",
        fa_ok.clone().add("MCP-Protocol-Version: 2025-11-25"),
        400,
        Exp::Rpc(-32020),
    );
    known(200, Exp::Ok, WHY_DUP_SINGLETON);
    push(
        cat,
        "two Content-Type headers, json first",
        fa_ok.clone().add("Content-Type: text/plain"),
        415,
        Exp::Plain(""),
    );
    known(200, Exp::Ok, WHY_DUP_SINGLETON);
    push(
        cat,
        "two Content-Type headers, text/plain first",
        fa_ok
            .clone()
            .del("content-type")
            .add("Content-Type: text/plain")
            .add("Content-Type: application/json"),
        415,
        Exp::Plain(""),
    );
    push(
        cat,
        "two Sec-Fetch-Site headers, second cross-site",
        fa_ok
            .clone()
            .add("Sec-Fetch-Site: same-origin")
            .add("Sec-Fetch-Site: cross-site"),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "two Sec-Fetch-Mode headers, second no-cors",
        fa_ok
            .clone()
            .add("Sec-Fetch-Mode: cors")
            .add("Sec-Fetch-Mode: no-cors"),
        403,
        Exp::Fixed("forbidden_origin"),
    );

    // --- non-ASCII and encoded-word values ------------------------------------------------------
    cat = "non-ascii";
    push(
        cat,
        "key of UTF-8 non-ASCII",
        fa_ok.clone().set("x-runread-key", "ключ-ключ-ключ"),
        403,
        Exp::Fixed("invalid_key"),
    );
    push(
        cat,
        "key with a Latin-1 byte",
        fa_ok.clone().set("x-runread-key", {
            let mut k = s.key.as_bytes().to_vec();
            k[10] = 0xe9;
            k
        }),
        403,
        Exp::Fixed("invalid_key"),
    );
    push(
        cat,
        "key as =?base64? encoded word",
        fa_ok
            .clone()
            .set("x-runread-key", format!("=?base64?{}?=", b64(k1))),
        403,
        Exp::Fixed("invalid_key"),
    );
    push(
        cat,
        "key as =?utf-8?B? encoded word",
        fa_ok
            .clone()
            .set("x-runread-key", format!("=?utf-8?B?{}?=", b64(k1))),
        403,
        Exp::Fixed("invalid_key"),
    );
    push(
        cat,
        "key as =?utf-8?Q? encoded word",
        fa_ok
            .clone()
            .set("x-runread-key", format!("=?utf-8?Q?{k1}?=")),
        403,
        Exp::Fixed("invalid_key"),
    );
    push(
        cat,
        "key with a fullwidth digit",
        fa_ok
            .clone()
            .set("x-runread-key", format!("{}０", &s.key[..63])),
        403,
        Exp::Fixed("invalid_key"),
    );
    push(
        cat,
        "Host non-ASCII",
        fa_ok.clone().set("Host", "lоcalhost"),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "Host as encoded word",
        fa_ok
            .clone()
            .set("Host", format!("=?base64?{}?=", b64("127.0.0.1"))),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "Origin non-ASCII",
        fa_ok.clone().set("Origin", "http://lоcalhost"),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "Mcp-Method non-ASCII",
        fa_ok.clone().set("Mcp-Method", "tools/cаll"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Method as =?base64? of tools/call",
        fa_ok
            .clone()
            .set("Mcp-Method", format!("=?base64?{}?=", b64("tools/call"))),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Name non-ASCII raw",
        fa_ok.clone().set("Mcp-Name", "read_final_ånswer"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Name =?base64? of another tool",
        fa_ok
            .clone()
            .set("Mcp-Name", format!("=?base64?{}?=", b64("get_run"))),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Name =?base64? not base64",
        fa_ok.clone().set("Mcp-Name", "=?base64?!!!?="),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "MCP-Protocol-Version non-ASCII",
        fa_ok.clone().set("MCP-Protocol-Version", "2026-07-28é"),
        400,
        Exp::Plain(""),
    );
    push(
        cat,
        "Content-Type non-ASCII",
        fa_ok.clone().set("Content-Type", "application/jsön"),
        415,
        Exp::Plain(""),
    );
    push(
        cat,
        "Authorization non-ASCII",
        fa_ok.clone().add("Authorization: Bearer ключ"),
        400,
        Exp::Fixed("forbidden_header"),
    );
    push(
        cat,
        "harmless custom header non-ASCII",
        fa_ok.clone().add("X-Note: héllo wörld"),
        200,
        Exp::Ok,
    );

    // --- forbidden headers ----------------------------------------------------------------------
    cat = "forbidden";
    for h in [
        "Authorization: Bearer x",
        "authorization: Basic YTpi",
        "AUTHORIZATION: x",
        "Authorization:",
        "Cookie: a=b",
        "cookie: ",
        "Forwarded: for=1.2.3.4",
        "Via: 1.1 proxy",
        "X-Real-IP: 1.2.3.4",
        "X-Forwarded-For: 127.0.0.1",
        "X-Forwarded-Host: 127.0.0.1",
        "X-Forwarded-Proto: https",
        "X-Forwarded-Port: 443",
        "Proxy-Authorization: Basic YTpi",
        "Proxy-Connection: keep-alive",
    ] {
        push(
            cat,
            h,
            fa_ok.clone().add(h),
            400,
            Exp::Fixed("forbidden_header"),
        );
    }
    push(
        cat,
        "Authorization carrying the key, no key header",
        fa_ok
            .clone()
            .del("x-runread-key")
            .add(format!("Authorization: Bearer {k1}")),
        400,
        Exp::Fixed("forbidden_header"),
    );
    push(
        cat,
        "forbidden header and no key: forbidden first",
        fa_ok.clone().del("x-runread-key").add("Cookie: a=b"),
        400,
        Exp::Fixed("forbidden_header"),
    );
    push(
        cat,
        "forbidden header and foreign Host: Host first",
        fa_ok.clone().set("Host", "evil.example").add("Cookie: a=b"),
        403,
        Exp::Fixed("forbidden_origin"),
    );

    // --- Host, Origin, fetch metadata -----------------------------------------------------------
    cat = "host/origin";
    for (name, host, status, exp) in [
        ("Host localhost", "localhost".to_owned(), 200, Exp::Ok),
        (
            "Host LOCALHOST:port",
            format!("LOCALHOST:{}", s.addr.port()),
            200,
            Exp::Ok,
        ),
        (
            "Host [::1]:port",
            format!("[::1]:{}", s.addr.port()),
            200,
            Exp::Ok,
        ),
        (
            "Host evil.example",
            "evil.example".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host 127.0.0.1.evil.example",
            "127.0.0.1.evil.example".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host 127.1",
            "127.1".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host 0.0.0.0",
            "0.0.0.0".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host 127.0.0.2",
            "127.0.0.2".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host localhost. (trailing dot)",
            "localhost.".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host [::1]x",
            "[::1]x".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host 127.0.0.1:abc",
            "127.0.0.1:abc".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host 127.0.0.1: (empty port)",
            "127.0.0.1:".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host user@127.0.0.1",
            "user@127.0.0.1".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host 127.0.0.1/x",
            "127.0.0.1/x".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host [::ffff:127.0.0.1]",
            "[::ffff:127.0.0.1]".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Host empty",
            "".to_owned(),
            403,
            Exp::Fixed("forbidden_origin"),
        ),
    ] {
        push(cat, name, fa_ok.clone().set("Host", host), status, exp);
    }
    push(
        cat,
        "no Host header",
        fa_ok.clone().del("host"),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "HTTP/1.0 without Host",
        fa_ok.clone().line("POST /mcp HTTP/1.0").del("host"),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    // README: any Origin other than the server's own (`http://` + this request's loopback
    // Host) or an --allow-origin is refused.
    let port = s.addr.port();
    push(
        cat,
        "Origin: the server's own (http:// + Host)",
        fa_ok.clone().set("Origin", format!("http://{}", s.host())),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "Origin: the server's own, Host localhost",
        fa_ok
            .clone()
            .set("Host", format!("localhost:{port}"))
            .set("Origin", format!("http://localhost:{port}")),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "Origin: the server's own, but Sec-Fetch-Site cross-site",
        fa_ok
            .clone()
            .set("Origin", format!("http://{}", s.host()))
            .add("Sec-Fetch-Site: cross-site"),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    for o in [
        "http://evil.example".to_owned(),
        "null".to_owned(),
        "http://localhost".to_owned(),
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        "http://127.0.0.1".to_owned(),
        format!("https://127.0.0.1:{port}"),
        format!("HTTP://127.0.0.1:{port}"),
        format!("http://127.0.0.1:{port}/"),
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://user@127.0.0.1:{port}"),
        format!("http://127.0.0.1:{port}.evil.example"),
        format!("http://127.0.0.1:{port}, http://evil.example"),
        "file://".to_owned(),
        "".to_owned(),
    ] {
        push(
            cat,
            &format!("Origin {o:?}"),
            fa_ok.clone().set("Origin", o),
            403,
            Exp::Fixed("forbidden_origin"),
        );
    }
    for (h, status, exp) in [
        (
            "Sec-Fetch-Site: cross-site",
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Sec-Fetch-Site: same-site",
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Sec-Fetch-Site: CROSS-SITE",
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        ("Sec-Fetch-Site: same-origin", 200, Exp::Ok),
        ("Sec-Fetch-Site: none", 200, Exp::Ok),
        (
            "Sec-Fetch-Mode: navigate",
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Sec-Fetch-Mode: nested-navigate",
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Sec-Fetch-Mode: no-cors",
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        (
            "Sec-Fetch-Mode: websocket",
            403,
            Exp::Fixed("forbidden_origin"),
        ),
        ("Sec-Fetch-Mode: cors", 200, Exp::Ok),
    ] {
        push(cat, h, fa_ok.clone().add(h), status, exp);
    }
    push(
        cat,
        "Sec-Fetch-Mode with an obs-text byte",
        fa_ok.clone().add(b"Sec-Fetch-Mode: cors\xff".as_slice()),
        403,
        Exp::Fixed("forbidden_origin"),
    );

    // --- Content-Type and Accept ----------------------------------------------------------------
    cat = "media types";
    for (ct, status, exp) in [
        ("text/plain", 415, Exp::Plain("Unsupported Media Type")),
        (
            "application/x-www-form-urlencoded",
            415,
            Exp::Plain("Unsupported Media Type"),
        ),
        (
            "multipart/form-data; boundary=x",
            415,
            Exp::Plain("Unsupported Media Type"),
        ),
        (
            "application/jsonx",
            415,
            Exp::Plain("Unsupported Media Type"),
        ),
        (
            "application/json-patch+json",
            415,
            Exp::Plain("Unsupported Media Type"),
        ),
        ("application/json; charset=utf-8", 200, Exp::Ok),
        ("APPLICATION/JSON", 200, Exp::Ok),
    ] {
        push(
            cat,
            &format!("Content-Type {ct}"),
            fa_ok.clone().set("Content-Type", ct),
            status,
            exp,
        );
    }
    push(
        cat,
        "no Content-Type",
        fa_ok.clone().del("content-type"),
        415,
        Exp::Plain("Unsupported Media Type"),
    );
    push(
        cat,
        "text/plain without a key: the key is checked first",
        fa_ok
            .clone()
            .set("Content-Type", "text/plain")
            .del("x-runread-key"),
        403,
        Exp::Fixed("missing_key"),
    );
    for (acc, status, exp) in [
        ("application/json", 406, Exp::Plain("Not Acceptable")),
        ("text/event-stream", 406, Exp::Plain("Not Acceptable")),
        ("*/*", 406, Exp::Plain("Not Acceptable")),
        ("text/html", 406, Exp::Plain("Not Acceptable")),
        (
            "application/json;q=0, text/event-stream",
            406,
            Exp::Plain("Not Acceptable"),
        ),
        ("APPLICATION/JSON, TEXT/EVENT-STREAM", 200, Exp::Ok),
    ] {
        push(
            cat,
            &format!("Accept {acc}"),
            fa_ok.clone().set("Accept", acc),
            status,
            exp,
        );
    }
    push(
        cat,
        "no Accept",
        fa_ok.clone().del("accept"),
        406,
        Exp::Plain("Not Acceptable"),
    );
    push(
        cat,
        "Accept split over two headers",
        fa_ok
            .clone()
            .set("Accept", "application/json")
            .add("Accept: text/event-stream"),
        200,
        Exp::Ok,
    );

    // --- methods and paths ----------------------------------------------------------------------
    cat = "methods/paths";
    // README: rmcp answers every method but POST with 405 (the body guard reads POST bodies only).
    for m in ["GET", "DELETE"] {
        push(
            cat,
            &format!("{m} /mcp, no body"),
            fa_ok.clone().line(format!("{m} /mcp HTTP/1.1")).body(b""),
            405,
            Exp::Plain("Method Not Allowed"),
        );
    }
    for m in ["PATCH", "TRACE"] {
        push(
            cat,
            &format!("{m} /mcp, no body"),
            fa_ok.clone().line(format!("{m} /mcp HTTP/1.1")).body(b""),
            405,
            Exp::Plain("Method Not Allowed"),
        );
    }
    push(
        cat,
        "GET /mcp accepting an event stream",
        fa_ok
            .clone()
            .line("GET /mcp HTTP/1.1")
            .set("Accept", "text/event-stream")
            .body(b""),
        405,
        Exp::Plain("Method Not Allowed"),
    );
    push(
        cat,
        "OPTIONS /mcp",
        fa_ok.clone().line("OPTIONS /mcp HTTP/1.1").body(b""),
        405,
        Exp::Plain("Method Not Allowed"),
    );
    push(
        cat,
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
    );
    push(
        cat,
        "HEAD /mcp (no body in a HEAD response)",
        fa_ok.clone().line("HEAD /mcp HTTP/1.1").body(b""),
        405,
        Exp::Plain(""),
    );
    push(
        cat,
        "PUT /mcp with a valid body",
        fa_ok.clone().line("PUT /mcp HTTP/1.1"),
        405,
        Exp::Plain("Method Not Allowed"),
    );
    push(
        cat,
        "DELETE /mcp with a valid body",
        fa_ok.clone().line("DELETE /mcp HTTP/1.1"),
        405,
        Exp::Plain("Method Not Allowed"),
    );
    push(
        cat,
        "GET /mcp with a valid body",
        fa_ok.clone().line("GET /mcp HTTP/1.1"),
        405,
        Exp::Plain("Method Not Allowed"),
    );
    push(
        cat,
        "CONNECT",
        fa_ok
            .clone()
            .line(format!("CONNECT {} HTTP/1.1", s.host()))
            .body(b""),
        404,
        Exp::Plain(""),
    );
    push(
        cat,
        "CONNECT to a foreign authority",
        fa_ok
            .clone()
            .line("CONNECT evil.example:443 HTTP/1.1")
            .body(b""),
        403,
        Exp::Fixed("forbidden_origin"),
    );
    push(
        cat,
        "POST /",
        fa_ok.clone().line("POST / HTTP/1.1"),
        404,
        Exp::Plain(""),
    );
    push(
        cat,
        "POST /MCP",
        fa_ok.clone().line("POST /MCP HTTP/1.1"),
        404,
        Exp::Plain(""),
    );
    push(
        cat,
        "POST /mcp/",
        fa_ok.clone().line("POST /mcp/ HTTP/1.1"),
        404,
        Exp::Plain(""),
    );
    known(200, Exp::Ok, WHY_NEST);
    push(
        cat,
        "POST /mcp/other",
        fa_ok.clone().line("POST /mcp/other HTTP/1.1"),
        404,
        Exp::Plain(""),
    );
    known(200, Exp::Ok, WHY_NEST);
    push(
        cat,
        "POST /mcp/../mcp",
        fa_ok.clone().line("POST /mcp/../mcp HTTP/1.1"),
        404,
        Exp::Plain(""),
    );
    known(200, Exp::Ok, WHY_NEST);
    push(
        cat,
        "POST //mcp",
        fa_ok.clone().line("POST //mcp HTTP/1.1"),
        404,
        Exp::Plain(""),
    );
    push(
        cat,
        "POST /mcp%2f",
        fa_ok.clone().line("POST /mcp%2f HTTP/1.1"),
        404,
        Exp::Plain(""),
    );
    push(
        cat,
        "POST * (asterisk form)",
        fa_ok.clone().line("POST * HTTP/1.1"),
        404,
        Exp::Plain(""),
    );
    push(
        cat,
        "POST /other without a key",
        fa_ok
            .clone()
            .line("POST /other HTTP/1.1")
            .del("x-runread-key"),
        403,
        Exp::Fixed("missing_key"),
    );

    // --- JSON-RPC bodies ------------------------------------------------------------------------
    cat = "json";
    let body_row = |b: &[u8]| s.base(Some(k1), "tools/call").body(b);
    // The valid read_final_answer body with one (asserted) substitution.
    let rep = |from: &str, to: &str| {
        let t = String::from_utf8_lossy(&fa_body).into_owned();
        assert!(t.contains(from), "{from} not in {t}");
        t.replacen(from, to, 1)
    };
    push(
        cat,
        "depth bomb: 10,000 arrays",
        body_row(format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
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
    );
    push(
        cat,
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
    );
    push(
        cat,
        "depth bomb unterminated",
        body_row("[".repeat(20_000).as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "limit 1e999",
        body_row(rep("\"arguments\":{", "\"arguments\":{\"limit\":1e999,").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "id 1e999",
        body_row(rep("\"id\":1", "\"id\":1e999").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "id 2^64",
        body_row(rep("\"id\":1", "\"id\":18446744073709551616").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "id 1.5",
        body_row(rep("\"id\":1", "\"id\":1.5").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "id null",
        body_row(rep("\"id\":1", "\"id\":null").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "id true",
        body_row(rep("\"id\":1", "\"id\":true").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "id object",
        body_row(rep("\"id\":1", "\"id\":{}").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
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
    );
    push(
        cat,
        "overlong UTF-8 '/' in the method",
        body_row(&{
            let mut b = fa_body.clone();
            let i = find(&b, b"tools/call").unwrap() + 5;
            b.splice(i..i + 1, [0xc0u8, 0xaf]);
            b
        }),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "UTF-8 BOM before the body",
        body_row(&[b"\xef\xbb\xbf".as_slice(), &fa_body].concat()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "UTF-16LE body",
        body_row(
            &String::from_utf8_lossy(&fa_body)
                .encode_utf16()
                .flat_map(|u| u.to_le_bytes())
                .collect::<Vec<u8>>(),
        ),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "lone surrogate escape in a string",
        body_row(rep("\"arguments\":{", "\"arguments\":{\"x\":\"\\ud800\",").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "trailing garbage after the object",
        body_row(&[fa_body.as_slice(), b"x"].concat()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "two objects back to back",
        body_row(&[fa_body.as_slice(), &fa_body].concat()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "batch of one request",
        body_row(&[b"[".as_slice(), &fa_body, b"]"].concat()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "empty batch",
        body_row(b"[]"),
        ir,
        Exp::Fixed("invalid_request"),
    );
    // A notification is accepted and does nothing (the dated era's handshake sends one).
    push(
        cat,
        "notification",
        s.base(Some(k1), "notifications/initialized")
            .body(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"),
        202,
        Exp::Plain(""),
    );
    push(
        cat,
        "response (result)",
        body_row(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "response (error)",
        body_row(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}"),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "request that also carries a result",
        body_row(rep("{", "{\"result\":{},").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "empty body",
        body_row(b""),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "whitespace body",
        body_row(b"  \r\n\t "),
        ir,
        Exp::Fixed("invalid_request"),
    );
    for (n, b) in [
        ("null body", "null"),
        ("number body", "1"),
        ("string body", "\"tools/call\""),
        ("true body", "true"),
    ] {
        push(
            cat,
            n,
            body_row(b.as_bytes()),
            ir,
            Exp::Fixed("invalid_request"),
        );
    }
    push(
        cat,
        "jsonrpc 1.0",
        body_row(rep("\"2.0\"", "\"1.0\"").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "jsonrpc missing",
        body_row(rep("\"jsonrpc\":\"2.0\",", "").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "jsonrpc as number 2.0",
        body_row(rep("\"2.0\"", "2.0").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "method a number",
        body_row(rep("\"tools/call\"", "7").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "method missing",
        body_row(rep("\"method\":\"tools/call\",", "").as_bytes()),
        ir,
        Exp::Fixed("invalid_request"),
    );
    push(
        cat,
        "duplicate method keys (list, then call)",
        s.base(Some(k1), "tools/call")
            .set("Mcp-Name", "read_final_answer")
            .body(rep("\"method\":", "\"method\":\"tools/list\",\"method\":")),
        415,
        Exp::Plain("deserialize"),
    );
    push(
        cat,
        "duplicate params.name keys",
        s.base(Some(k1), "tools/call")
            .set("Mcp-Name", "read_final_answer")
            .body(rep(
                "\"name\":\"read_final_answer\"",
                "\"name\":\"get_run\",\"name\":\"read_final_answer\"",
            )),
        404,
        Exp::Rpc(-32601),
    );
    push(
        cat,
        "duplicate arguments keys",
        s.base(Some(k1), "tools/call")
            .set("Mcp-Name", "read_final_answer")
            .body(rep(
                "\"arguments\":",
                "\"arguments\":{\"path\":\"/etc/passwd\"},\"arguments\":",
            )),
        404,
        Exp::Rpc(-32601),
    );
    push(
        cat,
        "method with escaped slash (same method)",
        s.base(Some(k1), "tools/call")
            .set("Mcp-Name", "read_final_answer")
            .body(rep("tools/call", "tools\\/call")),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "method with a trailing NUL escape",
        s.base(Some(k1), "tools/call\\u0000")
            .body(rep("tools/call", "tools/call\\u0000")),
        400,
        Exp::Rpc(-32020),
    );

    // --- MCP lifecycle and unknown methods ------------------------------------------------------
    cat = "lifecycle";
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}});
    // The dated era is served (statelessly, on the key): its handshake is answered.
    push(
        cat,
        "dated initialize 2025-11-25",
        s.rpc_body(Some(k1), &init).del("MCP-Protocol-Version"),
        200,
        Exp::OkWith("\"protocolVersion\":\"2025-11-25\""),
    );
    push(
        cat,
        "dated initialize with matching version header",
        s.rpc_body(Some(k1), &init)
            .set("MCP-Protocol-Version", "2025-11-25"),
        200,
        Exp::OkWith("\"protocolVersion\":\"2025-11-25\""),
    );
    // `initialize` exists only in the dated era: naming 2026-07-28 there negotiates the newest
    // dated version.
    push(cat, "initialize naming 2026-07-28", s.rpc_body(Some(k1), &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":PROTOCOL,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}})), 200, Exp::OkWith("\"protocolVersion\":\"2025-11-25\""));
    push(
        cat,
        "dated initialize without a key",
        s.rpc_body(None, &init).del("MCP-Protocol-Version"),
        403,
        Exp::Fixed("missing_key"),
    );
    for m in [
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "logging/setLevel",
        "ping",
        "tasks/list",
        "foo/bar",
        "rpc.discover",
        "notifications/initialized",
    ] {
        let params = match m {
            "logging/setLevel" => json!({"level": "debug"}),
            _ => json!({}),
        };
        push(cat, m, s.rpc(Some(k1), m, params), 404, Exp::Rpc(-32601));
    }
    push(
        cat,
        "resources/read",
        s.rpc(
            Some(k1),
            "resources/read",
            json!({"uri": "file:///etc/passwd"}),
        )
        .set("Mcp-Name", "file:///etc/passwd"),
        404,
        Exp::Rpc(-32601),
    );
    push(
        cat,
        "prompts/get",
        s.rpc(Some(k1), "prompts/get", json!({"name": "x"})),
        404,
        Exp::Rpc(-32601),
    );
    push(cat, "completion/complete", s.rpc(Some(k1), "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}})), 404, Exp::Rpc(-32601));
    push(
        cat,
        "empty method",
        s.rpc(Some(k1), "", json!({})).set("Mcp-Method", ""),
        404,
        Exp::Rpc(-32601),
    );

    // --- protocol headers and _meta -------------------------------------------------------------
    cat = "protocol";
    push(
        cat,
        "MCP-Protocol-Version missing",
        fa_ok.clone().del("MCP-Protocol-Version"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "MCP-Protocol-Version 2025-11-25 (meta says 2026-07-28)",
        fa_ok.clone().set("MCP-Protocol-Version", "2025-11-25"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "MCP-Protocol-Version unknown 2099-01-01",
        fa_ok.clone().set("MCP-Protocol-Version", "2099-01-01"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "MCP-Protocol-Version empty",
        fa_ok.clone().set("MCP-Protocol-Version", ""),
        400,
        Exp::Rpc(-32020),
    );
    push(cat, "_meta missing on tools/call", s.rpc_body(Some(k1), &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_final_answer","arguments":{"target":t1}}})), 400, Exp::Rpc(-32602));
    push(
        cat,
        "_meta missing on tools/list",
        s.rpc_body(
            Some(k1),
            &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        ),
        400,
        Exp::Rpc(-32602),
    );
    push(
        cat,
        "_meta missing on server/discover",
        s.rpc_body(
            Some(k1),
            &json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}),
        ),
        400,
        Exp::Rpc(-32602),
    );
    // A dated version runread speaks: served like any call, on the same key.
    push(cat, "_meta protocolVersion 2025-11-25 with matching header", s.rpc(Some(k1), "tools/call", json!({"name":"read_final_answer","arguments":{"target":t1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}})).set("MCP-Protocol-Version", "2025-11-25"), 200, Exp::Ok);
    push(
        cat,
        "_meta a string",
        s.rpc(
            Some(k1),
            "tools/call",
            json!({"name":"read_final_answer","arguments":{"target":t1},"_meta":"2026-07-28"}),
        ),
        415,
        Exp::Plain("deserialize"),
    );
    push(
        cat,
        "Mcp-Method missing",
        fa_ok.clone().del("Mcp-Method"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Method tools/list on a call",
        fa_ok.clone().set("Mcp-Method", "tools/list"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Method TOOLS/CALL",
        fa_ok.clone().set("Mcp-Method", "TOOLS/CALL"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Name missing",
        fa_ok.clone().del("Mcp-Name"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Name names another tool",
        fa_ok.clone().set("Mcp-Name", "read_history"),
        400,
        Exp::Rpc(-32020),
    );
    push(
        cat,
        "Mcp-Name on tools/list",
        s.rpc(Some(k1), "tools/list", json!({}))
            .set("Mcp-Name", "read_final_answer"),
        200,
        Exp::Ok,
    );

    // --- arguments and tool names ---------------------------------------------------------------
    cat = "arguments";
    let ia = Exp::Tool("invalid_arguments");
    push(
        cat,
        "unknown argument path",
        s.fa_t(json!({"path": "/etc/passwd"})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "unknown argument _meta inside arguments",
        s.fa_t(json!({"_meta": {}})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "unknown argument offset",
        s.fa_t(json!({"offset": 100})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "cursor null (schema: string)",
        s.fa_t(json!({"cursor": null})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "limit null (schema: integer)",
        s.fa_t(json!({"limit": null})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "no arguments",
        s.rpc(Some(k1), "tools/call", json!({"name": "read_final_answer"})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "arguments null",
        s.rpc(
            Some(k1),
            "tools/call",
            json!({"name": "read_final_answer", "arguments": null}),
        ),
        200,
        ia.clone(),
    );
    push(
        cat,
        "arguments an array",
        s.rpc(
            Some(k1),
            "tools/call",
            json!({"name": "read_final_answer", "arguments": [t1]}),
        ),
        404,
        Exp::Rpc(-32601),
    );
    push(
        cat,
        "arguments a string",
        s.rpc(
            Some(k1),
            "tools/call",
            json!({"name": "read_final_answer", "arguments": "target"}),
        ),
        404,
        Exp::Rpc(-32601),
    );
    push(cat, "empty arguments", s.fa(json!({})), 200, ia.clone());
    push(
        cat,
        "target null",
        s.fa(json!({"target": null})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "target a string",
        s.fa(json!({"target": "all"})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "target an array",
        s.fa(json!({"target": [t1]})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "target with an extra field",
        s.fa(json!({"target": s.t_with("scope", json!("all"))})),
        200,
        ia.clone(),
    );
    for f in [
        "instance",
        "revision",
        "workspaceId",
        "sessionId",
        "generation",
        "runId",
    ] {
        let mut t = t1.clone();
        t.as_object_mut().unwrap().remove(f);
        push(
            cat,
            &format!("target without {f}"),
            s.fa(json!({"target": t})),
            200,
            ia.clone(),
        );
    }
    push(
        cat,
        "tool name unknown",
        s.call(k1, "read_final_answer2", json!({"target": t1})),
        200,
        Exp::RpcFixed(-32602, "unknown_tool"),
    );
    push(
        cat,
        "tool name uppercase",
        s.call(k1, "READ_FINAL_ANSWER", json!({"target": t1})),
        200,
        Exp::RpcFixed(-32602, "unknown_tool"),
    );
    push(
        cat,
        "tool name empty",
        s.call(k1, "", json!({"target": t1})),
        200,
        Exp::RpcFixed(-32602, "unknown_tool"),
    );
    push(
        cat,
        "tool name with NUL",
        s.call(k1, "read_final_answer\u{0}", json!({"target": t1})),
        200,
        Exp::RpcFixed(-32602, "unknown_tool"),
    );
    push(
        cat,
        "tool name with path traversal",
        s.call(k1, "../read_final_answer", json!({"target": t1})),
        200,
        Exp::RpcFixed(-32602, "unknown_tool"),
    );
    push(
        cat,
        "tool name a number",
        s.rpc(
            Some(k1),
            "tools/call",
            json!({"name": 7, "arguments": {"target": t1}}),
        ),
        404,
        Exp::Rpc(-32601),
    );
    push(
        cat,
        "list_granted_targets with an argument",
        s.call(k1, "list_granted_targets", json!({"all": true})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "read_history without the feature",
        s.call(k1, "read_history", json!({"target": t1})),
        200,
        Exp::Tool("feature_not_granted"),
    );
    push(
        cat,
        "get_run without the feature (same {found:false} as ungranted)",
        s.call(k1, "get_run", json!({"target": t1})),
        200,
        Exp::OkWith("\"found\":false"),
    );
    push(
        cat,
        "read_artifact without the feature",
        s.call(
            k1,
            "read_artifact",
            json!({"target": t1, "artifactId": "a", "version": 1}),
        ),
        200,
        ia.clone(),
    );
    let t2_with = |f: &str, v: Value| {
        let mut t = s.target2.clone();
        t[f] = v;
        t
    };
    push(
        cat,
        "read_history generation 0 (schema minimum 1)",
        s.call(
            &s.key2,
            "read_history",
            json!({"target": t2_with("generation", json!(0))}),
        ),
        200,
        ia.clone(),
    );
    push(
        cat,
        "read_history revision 0 (schema minimum 1)",
        s.call(
            &s.key2,
            "read_history",
            json!({"target": t2_with("revision", json!(0))}),
        ),
        200,
        ia.clone(),
    );

    // --- target fields, each off by one ---------------------------------------------------------
    cat = "target";
    let ng = Exp::Tool("not_granted");
    for f in ["instance", "workspaceId", "sessionId", "runId"] {
        let v = t1[f].as_str().unwrap().to_owned();
        push(
            cat,
            &format!("{f} + one char"),
            s.fa(json!({"target": s.t_with(f, json!(format!("{v}x")))})),
            200,
            ng.clone(),
        );
        push(
            cat,
            &format!("{f} - last char"),
            s.fa(json!({"target": s.t_with(f, json!(v[..v.len() - 1]))})),
            200,
            ng.clone(),
        );
        push(
            cat,
            &format!("{f} uppercased"),
            s.fa(json!({"target": s.t_with(f, json!(v.to_uppercase()))})),
            200,
            if v.to_uppercase() == v {
                Exp::Ok
            } else {
                ng.clone()
            },
        );
    }
    for f in ["revision", "generation"] {
        let v = t1[f].as_u64().unwrap();
        push(
            cat,
            &format!("{f} + 1"),
            s.fa(json!({"target": s.t_with(f, json!(v + 1))})),
            200,
            ng.clone(),
        );
        push(
            cat,
            &format!("{f} - 1"),
            s.fa(json!({"target": s.t_with(f, json!(v - 1))})),
            200,
            if v == 1 { ia.clone() } else { ng.clone() },
        );
        push(
            cat,
            &format!("{f} -1"),
            s.fa(json!({"target": s.t_with(f, json!(-1))})),
            200,
            ia.clone(),
        );
        push(
            cat,
            &format!("{f} as a string"),
            s.fa(json!({"target": s.t_with(f, json!(v.to_string()))})),
            200,
            ia.clone(),
        );
        push(
            cat,
            &format!("{f} as a float"),
            s.fa(json!({"target": s.t_with(f, json!(v as f64 + 0.5))})),
            200,
            ia.clone(),
        );
        push(
            cat,
            &format!("{f} 2^64"),
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
        );
    }
    push(
        cat,
        "runId with a slash",
        s.fa(json!({"target": s.t_with("runId", json!("../../etc/passwd"))})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "runId 128 chars (the bound)",
        s.fa(json!({"target": s.t_with("runId", json!("r".repeat(128)))})),
        200,
        ng.clone(),
    );
    push(
        cat,
        "runId 129 chars",
        s.fa(json!({"target": s.t_with("runId", json!("r".repeat(129)))})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "runId empty",
        s.fa(json!({"target": s.t_with("runId", json!(""))})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "runId non-ASCII",
        s.fa(json!({"target": s.t_with("runId", json!("rün"))})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "sessionId with a space",
        s.fa(json!({"target": s.t_with("sessionId", json!("a b"))})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "instance a SQL wildcard",
        s.fa(json!({"target": s.t_with("instance", json!("%"))})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "target 2 with key 1",
        s.fa(json!({"target": s.target2})),
        200,
        ng.clone(),
    );
    push(
        cat,
        "target 1 with key 2",
        s.call(&s.key2, "read_final_answer", json!({"target": t1})),
        200,
        ng.clone(),
    );
    push(
        cat,
        "target 1 with key 3 (history only)",
        s.call(&s.key3, "read_final_answer", json!({"target": t1})),
        200,
        Exp::Tool("feature_not_granted"),
    );

    // --- cursors --------------------------------------------------------------------------------
    cat = "cursor";
    let ic = Exp::Tool("invalid_cursor");
    let c1 = cur.c1.as_str();
    let ck = s.env.store.cursor_key().clone();
    let tgt = &s.core_target;
    push(
        cat,
        "replayed cursor (1)",
        s.fa_t(json!({"cursor": c1, "limit": 100})),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "replayed cursor (2)",
        s.fa_t(json!({"cursor": c1, "limit": 100})),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "cursor with another limit",
        s.fa_t(json!({"cursor": c1, "limit": 8192})),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "cursor truncated by 1",
        s.fa_t(json!({"cursor": &c1[..c1.len() - 1]})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor truncated by 2",
        s.fa_t(json!({"cursor": &c1[..c1.len() - 2]})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor truncated to half",
        s.fa_t(json!({"cursor": &c1[..c1.len() / 2]})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor empty",
        s.fa_t(json!({"cursor": ""})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor with a char appended",
        s.fa_t(json!({"cursor": format!("{c1}A")})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor with padding appended",
        s.fa_t(json!({"cursor": format!("{c1}==")})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor tampered in the position",
        s.fa_t(json!({"cursor": tamper_at(c1, 8)})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor tampered in the MAC",
        s.fa_t(json!({"cursor": tamper_at(c1, c1.len() / 2 + 5)})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor tampered in the last char",
        s.fa_t(json!({"cursor": tamper_at(c1, c1.len() - 1)})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor in standard base64",
        s.fa_t(json!({"cursor": c1.replace('-', "+").replace('_', "/") + "+/"})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor with whitespace",
        s.fa_t(json!({"cursor": format!(" {c1}")})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor 512 chars (the bound)",
        s.fa_t(json!({"cursor": "A".repeat(512)})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor 513 chars (schema maxLength 512)",
        s.fa_t(json!({"cursor": "A".repeat(513)})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "cursor 513 chars on an ungranted target (arguments before grant)",
        s.fa(json!({"target": s.target2, "cursor": "A".repeat(513)})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "cursor a number",
        s.fa_t(json!({"cursor": 100})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "cursor an object",
        s.fa_t(json!({"cursor": {"offset": 100}})),
        200,
        ia.clone(),
    );
    push(
        cat,
        "cursor of another target (key 2's answer)",
        s.fa_t(json!({"cursor": cur.c2})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor of another target and purpose (key 2's history)",
        s.fa_t(json!({"cursor": cur.h2})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "cursor of another purpose, same target (history)",
        s.fa_t(json!({"cursor": cur.h1})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "target 1's cursor presented by key 2 for target 2",
        s.call(
            &s.key2,
            "read_final_answer",
            json!({"target": s.target2, "cursor": c1}),
        ),
        200,
        ic.clone(),
    );
    push(
        cat,
        "key 2's own cursor (sanity)",
        s.call(
            &s.key2,
            "read_final_answer",
            json!({"target": s.target2, "cursor": cur.c2}),
        ),
        200,
        Exp::Ok,
    );
    push(
        cat,
        "answer cursor given to read_history",
        s.call(&s.key3, "read_history", json!({"target": t1, "cursor": c1})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "forged: history purpose, same target and version",
        s.fa_t(json!({"cursor": ck.encode(Purpose::History, tgt, &cur.version1, 100)})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "forged: artifact purpose",
        s.fa_t(json!({"cursor": ck.encode(Purpose::Artifact, tgt, &cur.version1, 100)})),
        200,
        ic.clone(),
    );
    push(
        cat,
        "forged: another answer version",
        s.fa_t(json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, "g1-0000000000000000", 100)})),
        200,
        ic.clone(),
    );
    let other_rev = {
        let mut t = tgt.clone();
        t.revision += 1;
        ck.encode(Purpose::FinalAnswer, &t, &cur.version1, 100)
    };
    push(
        cat,
        "forged: another revision of the target",
        s.fa_t(json!({"cursor": other_rev})),
        200,
        ic.clone(),
    );
    {
        let mid = (1..answer_len)
            .find(|i| !s.answer.is_char_boundary(*i))
            .expect("a multi-byte character");
        push(
            cat,
            "forged: position inside a UTF-8 character",
            s.fa_t(
                json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, &cur.version1, mid as u64)}),
            ),
            200,
            ic.clone(),
        );
    }
    push(cat, "forged: position one past the end", s.fa_t(json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, &cur.version1, answer_len as u64 + 1)})), 200, ic.clone());
    push(
        cat,
        "forged: position u64::MAX",
        s.fa_t(json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, &cur.version1, u64::MAX)})),
        200,
        ic.clone(),
    );
    push(cat, "forged: position exactly at the end (empty chunk)", s.fa_t(json!({"cursor": ck.encode(Purpose::FinalAnswer, tgt, &cur.version1, answer_len as u64)})), 200, Exp::Ok);

    // --- limits ---------------------------------------------------------------------------------
    cat = "limit";
    for (name, v) in [
        ("limit 0", json!(0)),
        ("limit 3", json!(3)),
        ("limit 8193", json!(8193)),
        ("limit -1", json!(-1)),
        ("limit \"10\"", json!("10")),
        ("limit 4.0", json!(4.0)),
        ("limit 4.5", json!(4.5)),
        ("limit true", json!(true)),
        ("limit [4]", json!([4])),
        ("limit u64::MAX", json!(u64::MAX)),
    ] {
        push(cat, name, s.fa_t(json!({"limit": v})), 200, ia.clone());
    }
    push(
        cat,
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
    );
    push(
        cat,
        "limit -0",
        body_row(rep("\"arguments\":{", "\"arguments\":{\"limit\":-0,").as_bytes())
            .set("Mcp-Name", "read_final_answer"),
        200,
        ia.clone(),
    );
    push(
        cat,
        "limit 4e0",
        body_row(rep("\"arguments\":{", "\"arguments\":{\"limit\":4e0,").as_bytes())
            .set("Mcp-Name", "read_final_answer"),
        200,
        ia.clone(),
    );

    // --- keys -----------------------------------------------------------------------------------
    cat = "key";
    for (name, r, status, exp) in [
        (
            "no key",
            fa_ok.clone().del("x-runread-key"),
            403,
            Exp::Fixed("missing_key"),
        ),
        (
            "empty key",
            fa_ok.clone().set("x-runread-key", ""),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "63 chars",
            fa_ok.clone().set("x-runread-key", &s.key[..63]),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "65 chars",
            fa_ok.clone().set("x-runread-key", format!("{k1}0")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "uppercase",
            fa_ok.clone().set("x-runread-key", s.key.to_uppercase()),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "non-hex letter",
            fa_ok
                .clone()
                .set("x-runread-key", format!("{}g", &s.key[..63])),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "well formed, no grant",
            fa_ok.clone().set("x-runread-key", "0".repeat(64)),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "space inside",
            fa_ok.clone().set(
                "x-runread-key",
                format!("{} {}", &s.key[..32], &s.key[32..]),
            ),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "tab inside",
            fa_ok.clone().set(
                "x-runread-key",
                format!("{}\t{}", &s.key[..32], &s.key[32..]),
            ),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "quoted",
            fa_ok.clone().set("x-runread-key", format!("\"{k1}\"")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "Bearer prefix",
            fa_ok.clone().set("x-runread-key", format!("Bearer {k1}")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "two keys comma-joined in one header",
            fa_ok.clone().set("x-runread-key", format!("{k1}, {k1}")),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "key hash instead of key",
            fa_ok
                .clone()
                .set("x-runread-key", runread_core::key::hash(k1)),
            403,
            Exp::Fixed("invalid_key"),
        ),
        (
            "surrounding whitespace (OWS, stripped by HTTP)",
            fa_ok.clone().set("x-runread-key", format!("   {k1}\t ")),
            200,
            Exp::Ok,
        ),
        (
            "header name uppercase",
            fa_ok
                .clone()
                .del("x-runread-key")
                .add(format!("X-RUNREAD-KEY: {k1}")),
            200,
            Exp::Ok,
        ),
        (
            "header name with underscores",
            fa_ok
                .clone()
                .del("x-runread-key")
                .add(format!("x_runread_key: {k1}")),
            403,
            Exp::Fixed("missing_key"),
        ),
        (
            "header name misspelled",
            fa_ok
                .clone()
                .del("x-runread-key")
                .add(format!("x-runread-keys: {k1}")),
            403,
            Exp::Fixed("missing_key"),
        ),
        (
            "expired grant",
            fa_ok.clone().set("x-runread-key", &s.key_expired),
            200,
            Exp::Tool("grant_expired"),
        ),
        (
            "revoked grant",
            fa_ok.clone().set("x-runread-key", &s.key_revoked),
            200,
            Exp::Tool("grant_revoked"),
        ),
        (
            "expired grant, list_granted_targets",
            s.call(&s.key_expired, "list_granted_targets", json!({})),
            200,
            Exp::Tool("grant_expired"),
        ),
        (
            "revoked grant, list_granted_targets",
            s.call(&s.key_revoked, "list_granted_targets", json!({})),
            200,
            Exp::Tool("grant_revoked"),
        ),
        (
            "expired grant, tools/list (empty)",
            s.rpc(Some(&s.key_expired), "tools/list", json!({})),
            200,
            Exp::Ok,
        ),
        (
            "no key, server/discover",
            s.rpc(None, "server/discover", json!({})),
            403,
            Exp::Fixed("missing_key"),
        ),
        (
            "no key, tools/list",
            s.rpc(None, "tools/list", json!({})),
            403,
            Exp::Fixed("missing_key"),
        ),
    ] {
        push(cat, &format!("key: {name}"), r, status, exp);
    }

    let _ = cat;
    rows.into_inner()
}

enum Outcome {
    Pass,
    Known(&'static str),
    Fail(String),
}

fn run_row(s: &Srv, row: &Row) -> Outcome {
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
        eprintln!("[{}] {} -> {actual}", row.cat, row.name);
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

#[test]
fn adversarial_corpus() {
    let _g = serial();
    let started = Instant::now();
    let s = start();
    let cur = gather_cursors(&s);
    let rows = corpus(&s, &cur);
    assert!(rows.len() >= 150, "only {} rows", rows.len());
    let mut failures = Vec::new();
    let mut deviations: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut per_cat: Vec<(&str, usize)> = Vec::new();
    for row in &rows {
        match per_cat.iter_mut().find(|(c, _)| *c == row.cat) {
            Some((_, n)) => *n += 1,
            None => per_cat.push((row.cat, 1)),
        }
        match run_row(&s, row) {
            Outcome::Pass => {}
            Outcome::Known(why) => match deviations.iter_mut().find(|(w, _)| *w == why) {
                Some((_, names)) => names.push(row.name.clone()),
                None => deviations.push((why, vec![row.name.clone()])),
            },
            Outcome::Fail(e) => failures.push(format!("[{}] {}: {e}", row.cat, row.name)),
        }
    }

    // A replayed cursor returns the same chunk: with the same JSON-RPC id the whole response is
    // the same (the start record is reused within 60 s); with another id, the same content.
    let replay = s.fa_t(json!({"cursor": cur.c1, "limit": 100}));
    let a = ok_result(&s, &replay);
    let b = ok_result(&s, &replay);
    if a != b {
        failures.push(format!("replay with the same id differs:\n{a}\n{b}"));
    }
    let other_id = {
        let mut v: Value = serde_json::from_slice(&replay.body).unwrap();
        v["id"] = json!(4242);
        replay.clone().body(v.to_string())
    };
    let c = ok_result(&s, &other_id);
    if a["structuredContent"] != c["structuredContent"] {
        failures.push("replay with another id gives another chunk".into());
    }
    let expected_chunk = &s.answer[100..200];
    if a["structuredContent"]["text"].as_str() != Some(expected_chunk) {
        failures.push(format!(
            "the cursor chunk is not bytes 100..200 of the answer: {}",
            a["structuredContent"]
        ));
    }

    // Still healthy: discover answers and the whole answer reads back byte-exact.
    let ex = exchange(s.addr, &s.discover().bytes(), ROW_TIMEOUT);
    assert_eq!(ex.responses.first().map(|r| r.status), Some(200));
    assert_eq!(
        read_whole_answer(&s),
        s.answer,
        "the answer reads back whole"
    );

    eprintln!(
        "adversarial corpus: {} rows in {:.1}s; by category: {}",
        rows.len(),
        started.elapsed().as_secs_f64(),
        per_cat
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (why, names) in &deviations {
        eprintln!(
            "KNOWN DEVIATION ({} rows): {why}\n    {}",
            names.len(),
            names.join("\n    ")
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
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
    let _g = serial();
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
    let _g = serial();
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
    let _g = serial();
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

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn sixty_four_clients_get_full_answers_or_immediate_busy_and_memory_stays_flat() {
    let _g = serial();
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
