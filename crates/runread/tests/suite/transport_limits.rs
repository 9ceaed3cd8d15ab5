//! The door's bounds against a real `runread serve` process on loopback (issue 13, items 4–7):
//!
//! - the header deadline runs from accept to the end of the request headers, and again from the
//!   end of each response on a kept-alive connection: silent, one-byte and idle connections are
//!   closed at it;
//! - at most `HTTP_CONNECTIONS_MAX` connections: at the cap runread stops accepting, the next
//!   connection waits in the kernel's accept queue and is served as soon as a slot frees;
//! - descriptor exhaustion: accept errors back off instead of spinning, and a keyed call is
//!   served once the silent connections reach the deadline;
//! - the key is checked before any body byte is read: bodies without a valid key take no
//!   body-reader slot; body readers are bounded per key and in total;
//! - request headers are bounded (`HTTP_HEADER_MAX_BYTES`: at the limit served, one byte over
//!   refused with 431), so a flood of unfinished headers has a memory ceiling, and memory returns
//!   after the flood;
//! - HTTP/1.1 only (an HTTP/2 preface is not served), and an absolute-form target's authority is
//!   checked like `Host`.
//!
//! One test at a time (a file-wide lock): several tests hold hundreds of sockets and the memory
//! and CPU measurements read the server's `/proc` entries.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::limits::{
    HTTP_BODY_DEADLINE_SECS, HTTP_CONNECTIONS_MAX, HTTP_HEADER_DEADLINE_SECS, HTTP_HEADER_MAX_BYTES,
};
use runread_mcp::guards::{BODY_READERS_MAX, BODY_READERS_PER_KEY_MAX};
use runread_testkit::Env;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The header deadline.
const DEADLINE: Duration = Duration::from_secs(HTTP_HEADER_DEADLINE_SECS);
/// How far past a deadline a close may come (scheduling, the client's read granularity).
const DEADLINE_SLACK: Duration = Duration::from_secs(2);
/// How long the server may take to start.
const START_MAX: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// A real `runread serve`
// ---------------------------------------------------------------------------------------------

struct Server {
    child: Child,
    addr: SocketAddr,
    pid: u32,
    /// One key per grant, all on the same run, feature `final_answer`.
    keys: Vec<String>,
    target: Value,
    /// The answer's first chunk, as the server served it at start.
    first_chunk: String,
    session_path: PathBuf,
    env: Env,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `runread serve` on an ephemeral loopback port with `keys` read keys granted on the
/// sample's longest run; with `nofile`, under that open-file limit (soft and hard).
fn start(keys: usize, nofile: Option<u64>) -> Server {
    let env = Env::new();
    let session_path = env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let now = runread_core::timefmt::now_ms();
    let mut granted = Vec::new();
    let mut target = Value::Null;
    for i in 0..keys {
        let g = env
            .owner()
            .grant(
                runread_service::owner::GrantRequest {
                    run_id: &run.target.run_id,
                    session_id: None,
                    features: vec![Feature::FinalAnswer],
                    expires_at_ms: now + 3_600_000,
                    reader: &format!("transport-{i}"),
                    new_reader: runread_service::owner::NewReaderPolicy::Make,
                    label: None,
                },
                now,
            )
            .unwrap();
        target = serde_json::to_value(&g.grant.target).unwrap();
        granted.push(g.key.unwrap());
    }
    let bin = env!("CARGO_BIN_EXE_runread");
    let mut cmd = match nofile {
        // `exec` keeps the pid: the limit applies to runread itself.
        Some(n) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                .arg(bin);
            c
        }
        None => Command::new(bin),
    };
    let mut child = cmd
        .arg("--home")
        .arg(env.dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("RUNREAD_STORE")
        .env_remove("RUNREAD_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn runread serve");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let pipe = child.stderr.take().unwrap();
    // Keeps draining stderr for the server's whole life (it logs accept errors).
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find("at http://") {
                let url = line[at + "at http://".len()..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("");
                let _ = tx.send(url.trim_end_matches("/mcp").to_owned());
            } else if std::env::var_os("TRANSPORT_SERVER_LOG").is_some() {
                eprintln!("server: {line}");
            }
        }
    });
    let addr: SocketAddr = match rx.recv_timeout(START_MAX) {
        Ok(a) => a.parse().expect("a socket address"),
        Err(_) => {
            let _ = child.kill();
            panic!("runread serve did not start");
        }
    };
    let mut s = Server {
        child,
        addr,
        pid,
        keys: granted,
        target,
        first_chunk: String::new(),
        session_path,
        env,
    };
    // What every later call must get back: the answer's first chunk.
    let r = s
        .call_once(&s.keys[0], Duration::from_secs(10))
        .expect("the server answers");
    s.first_chunk = serde_json::from_slice::<Value>(&r.body)
        .ok()
        .and_then(|v| {
            v["result"]["structuredContent"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .filter(|t| t.len() >= 40)
        .unwrap_or_else(|| panic!("a first chunk of the answer: {r:?}"));
    s
}

impl Server {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    fn body(&self) -> String {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "read_final_answer", "arguments": {"target": self.target},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientInfo": {"name": "transport", "version": "1"},
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string()
    }

    /// The head of a `read_final_answer` call: request line and headers, with `keys` as
    /// `x-runread-key` headers, `extra` (complete header lines) and `Content-Length: len`, up to
    /// and including the blank line.
    fn head(&self, target: &str, keys: &[&str], extra: &str, len: usize) -> String {
        let mut h = format!(
            "POST {target} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: read_final_answer\r\n",
            self.host()
        );
        for k in keys {
            h.push_str(&format!("x-runread-key: {k}\r\n"));
        }
        h.push_str(extra);
        h.push_str(&format!("Content-Length: {len}\r\n\r\n"));
        h
    }

    /// A whole keyed `read_final_answer` request.
    fn call(&self, key: &str, extra: &str) -> Vec<u8> {
        let body = self.body();
        let mut r = self.head("/mcp", &[key], extra, body.len()).into_bytes();
        r.extend_from_slice(body.as_bytes());
        r
    }

    /// One keyed call on a fresh connection (closed after it).
    fn call_once(&self, key: &str, timeout: Duration) -> Result<Resp, String> {
        let mut c = TcpStream::connect(self.addr).map_err(|e| e.to_string())?;
        c.write_all(&self.call(key, "Connection: close\r\n"))
            .map_err(|e| e.to_string())?;
        read_response(&mut c, timeout)
    }

    /// Whether `r` is the granted answer's first chunk.
    fn is_answer(&self, r: &Resp) -> bool {
        let Ok(v) = serde_json::from_slice::<Value>(&r.body) else {
            return false;
        };
        let sc = &v["result"]["structuredContent"];
        r.status == 200
            && sc["readable"] == json!(true)
            && sc["trust"] == "untrusted_data"
            && sc["text"].as_str() == Some(self.first_chunk.as_str())
    }

    /// What a refusal must not carry: any key, the answer, a path.
    fn assert_no_leak(&self, raw: &[u8]) {
        let text = String::from_utf8_lossy(raw);
        for k in &self.keys {
            assert!(!text.contains(k.as_str()), "leaked a key: {text}");
        }
        let probe = self
            .first_chunk
            .char_indices()
            .nth(40)
            .map_or(self.first_chunk.as_str(), |(i, _)| &self.first_chunk[..i]);
        assert!(!text.contains(probe), "leaked the answer");
        for p in [
            self.session_path.to_str().unwrap(),
            self.env.dir.path().to_str().unwrap(),
        ] {
            assert!(!text.contains(p), "leaked a path: {text}");
        }
        for os in ["Too many open files", "os error", "Broken pipe"] {
            assert!(!text.contains(os), "leaked an OS error: {text}");
        }
    }

    /// `/proc/PID/status` field in KiB.
    fn status_kib(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// Sockets the server holds open (listener and connections).
    fn sockets(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| {
                        std::fs::read_link(e.path())
                            .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    /// Waits until `ok(sockets)` holds, up to `max`; returns the last count.
    fn wait_sockets(&self, max: Duration, ok: impl Fn(usize) -> bool) -> usize {
        let t0 = Instant::now();
        loop {
            let n = self.sockets();
            if ok(n) || t0.elapsed() > max {
                return n;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// CPU time the server used so far (user + system), from `/proc/PID/stat`.
    fn cpu_time(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        // After the command name in parentheses: state is field 3; utime and stime 14 and 15.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let total = ticks(11) + ticks(12);
        Duration::from_secs_f64(total as f64 / clock_ticks() as f64)
    }
}

fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

// ---------------------------------------------------------------------------------------------
// A small HTTP/1.1 response reader
// ---------------------------------------------------------------------------------------------

struct Resp {
    status: u16,
    head: String,
    body: Vec<u8>,
    /// Everything received, as sent.
    raw: Vec<u8>,
}

impl std::fmt::Debug for Resp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let body = String::from_utf8_lossy(&self.body);
        let cut = body.char_indices().nth(300).map_or(body.len(), |(i, _)| i);
        write!(f, "{} {:?} {:?}", self.status, self.head, &body[..cut])
    }
}

impl Resp {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    /// The fixed code of a JSON-RPC refusal.
    fn code(&self) -> String {
        serde_json::from_slice::<Value>(&self.body)
            .ok()
            .and_then(|v| v["error"]["data"]["code"].as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One complete response from `buf`, if there is one.
fn parse(buf: &[u8], eof: bool) -> Option<Resp> {
    let end = find(buf, b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let status = head.get(9..12)?.parse().ok()?;
    let rest = &buf[end + 4..];
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let line_end = i + find(&rest[i..], b"\r\n")?;
            let size = usize::from_str_radix(
                std::str::from_utf8(&rest[i..line_end])
                    .ok()?
                    .split(';')
                    .next()?
                    .trim(),
                16,
            )
            .ok()?;
            i = line_end + 2;
            if size == 0 {
                break;
            }
            out.extend_from_slice(rest.get(i..i + size)?);
            i += size + 2;
        }
        out
    } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        rest.get(..n)?.to_vec()
    } else if eof {
        rest.to_vec()
    } else {
        return None;
    };
    Some(Resp {
        status,
        head,
        body,
        raw: buf.to_vec(),
    })
}

/// Reads one response, waiting at most `timeout` in all.
fn read_response(c: &mut TcpStream, timeout: Duration) -> Result<Resp, String> {
    let t0 = Instant::now();
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = timeout.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return Err(format!(
                "no response within {timeout:?} ({} bytes)",
                raw.len()
            ));
        }
        c.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .map_err(|e| e.to_string())?;
        match c.read(&mut buf) {
            Ok(0) => {
                return parse(&raw, true).ok_or_else(|| {
                    format!(
                        "closed after {} bytes: {:?}",
                        raw.len(),
                        String::from_utf8_lossy(&raw)
                    )
                });
            }
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if let Some(r) = parse(&raw, false) {
                    return Ok(r);
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            // A reset after the response (the server closed with request bytes unread).
            Err(e) => {
                return parse(&raw, true)
                    .ok_or_else(|| format!("read: {e} after {} bytes", raw.len()));
            }
        }
    }
}

/// Waits until the server closes `c` (EOF or reset), at most `max`; returns when, and the bytes
/// received before.
fn wait_closed(c: &mut TcpStream, max: Duration, t0: Instant) -> (Option<Duration>, Vec<u8>) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = max.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return (None, got);
        }
        let _ = c.set_read_timeout(Some(left.min(Duration::from_millis(200))));
        match c.read(&mut buf) {
            Ok(0) => return (Some(t0.elapsed()), got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return (Some(t0.elapsed()), got),
        }
    }
}

fn connect_all(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Item 4: the header deadline, the connection cap, accept errors
// ---------------------------------------------------------------------------------------------

#[test]
fn silent_slow_and_idle_connections_are_closed_at_the_header_deadline() {
    let _g = serial();
    let s = start(1, None);
    let key = s.keys[0].clone();
    let wait_max = DEADLINE + DEADLINE_SLACK + Duration::from_secs(3);
    std::thread::scope(|scope| {
        // Sends nothing at all.
        let silent = scope.spawn(|| {
            let t0 = Instant::now();
            let mut c = TcpStream::connect(s.addr).unwrap();
            wait_closed(&mut c, wait_max, t0)
        });
        // Sends its first byte only after 3 s: the deadline runs from accept, not from it.
        let late_byte = scope.spawn(|| {
            let t0 = Instant::now();
            let mut c = TcpStream::connect(s.addr).unwrap();
            std::thread::sleep(Duration::from_secs(3));
            let _ = c.write_all(b"P");
            wait_closed(&mut c, wait_max, t0)
        });
        // One whole request on a kept-alive connection, then nothing: the deadline runs again
        // from the end of the response.
        let idle = scope.spawn(|| {
            let mut c = TcpStream::connect(s.addr).unwrap();
            c.write_all(&s.call(&key, "")).unwrap();
            let r = read_response(&mut c, Duration::from_secs(10));
            let t0 = Instant::now();
            let closed = wait_closed(&mut c, wait_max, t0);
            (r, closed)
        });
        // Headers in two parts 1.5 s apart, well inside the deadline: served.
        let in_time = scope.spawn(|| {
            let mut c = TcpStream::connect(s.addr).unwrap();
            let req = s.call(&key, "Connection: close\r\n");
            c.write_all(&req[..40]).unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            c.write_all(&req[40..]).unwrap();
            read_response(&mut c, Duration::from_secs(10))
        });
        let (silent_at, silent_got) = silent.join().unwrap();
        let (late_at, late_got) = late_byte.join().unwrap();
        let (idle_resp, (idle_at, idle_got)) = idle.join().unwrap();
        let in_time = in_time.join().unwrap();
        eprintln!(
            "header deadline {DEADLINE:?}: silent connection closed after {silent_at:?}, first byte at 3 s closed \
             after {late_at:?} (from connect), idle kept-alive connection closed {idle_at:?} after its response"
        );
        let idle_resp = idle_resp.expect("the kept-alive call is answered");
        assert!(s.is_answer(&idle_resp), "{idle_resp:?}");
        let in_time = in_time.expect("headers inside the deadline are served");
        assert!(s.is_answer(&in_time), "{in_time:?}");
        for (what, at, got) in [
            ("silent", silent_at, silent_got),
            ("first byte after 3 s", late_at, late_got),
            ("idle after a response", idle_at, idle_got),
        ] {
            let at = at.unwrap_or_else(|| panic!("{what}: still open after {wait_max:?}"));
            assert!(
                at + Duration::from_millis(500) >= DEADLINE && at <= DEADLINE + DEADLINE_SLACK,
                "{what}: closed after {at:?}, deadline {DEADLINE:?}"
            );
            assert!(got.is_empty(), "{what}: a close carries no bytes: {got:?}");
        }
    });
}

#[test]
fn connections_at_the_cap_are_served_and_one_more_waits_for_a_free_slot() {
    let _g = serial();
    let s = start(1, None);
    let key = s.keys[0].clone();
    let base = s.wait_sockets(Duration::from_millis(200), |_| false);
    // N - 1 held connections and one call: the N-th connection is served.
    let held = connect_all(s.addr, HTTP_CONNECTIONS_MAX - 1);
    let accepted = s.wait_sockets(Duration::from_secs(3), |n| {
        n >= base + HTTP_CONNECTIONS_MAX - 1
    });
    assert_eq!(accepted, base + HTTP_CONNECTIONS_MAX - 1);
    let r = s
        .call_once(&key, Duration::from_secs(3))
        .expect("the N-th connection is served");
    assert!(s.is_answer(&r), "{r:?}");
    drop(held);
    s.wait_sockets(Duration::from_secs(3), |n| n <= base);

    // N held connections: the (N+1)-th is not accepted, its call waits...
    let mut held = connect_all(s.addr, HTTP_CONNECTIONS_MAX);
    let accepted = s.wait_sockets(Duration::from_secs(3), |n| n >= base + HTTP_CONNECTIONS_MAX);
    let held_since = Instant::now();
    assert_eq!(
        accepted,
        base + HTTP_CONNECTIONS_MAX,
        "N connections accepted"
    );
    let mut extra = TcpStream::connect(s.addr).unwrap();
    extra
        .write_all(&s.call(&key, "Connection: close\r\n"))
        .unwrap();
    let early = read_response(&mut extra, Duration::from_millis(1500));
    let sockets_meanwhile = s.sockets();
    assert!(
        held_since.elapsed() < DEADLINE,
        "the check ran inside the deadline"
    );
    assert!(
        early.is_err(),
        "the (N+1)-th connection is not served while N are held: {early:?}"
    );
    assert_eq!(
        sockets_meanwhile,
        base + HTTP_CONNECTIONS_MAX,
        "runread holds no (N+1)-th connection"
    );
    // ...and is served as soon as one held connection closes.
    let freed = Instant::now();
    held.pop();
    let r = read_response(&mut extra, Duration::from_secs(3)).expect("served once a slot frees");
    eprintln!(
        "connection cap {HTTP_CONNECTIONS_MAX}: the next connection waited, and was served {:?} after one closed",
        freed.elapsed()
    );
    assert!(s.is_answer(&r), "{r:?}");
}

/// The open-file limit the server runs under in the exhaustion test (a lowered copy of the
/// common 1,024, so the test itself stays under its own limit).
const EXHAUSTION_NOFILE: u64 = 128;
/// Silent connections opened against it: more than it has descriptors for.
const EXHAUSTION_CONNECTIONS: usize = 160;
/// Most of one core the server may use while it cannot accept.
const EXHAUSTED_CPU_MAX: f64 = 0.5;

#[test]
fn descriptor_exhaustion_backs_off_instead_of_spinning_and_recovers_at_the_deadline() {
    let _g = serial();
    let s = start(1, Some(EXHAUSTION_NOFILE));
    let key = s.keys[0].clone();
    let base = s.wait_sockets(Duration::from_millis(200), |_| false);
    let opened = Instant::now();
    let silent = connect_all(s.addr, EXHAUSTION_CONNECTIONS);
    // The server accepts until its descriptors run out, then gets EMFILE on every accept.
    std::thread::sleep(Duration::from_millis(800));
    let held = s.sockets() - base;
    let cpu0 = s.cpu_time();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let cpu = (s.cpu_time() - cpu0).as_secs_f64() / t0.elapsed().as_secs_f64();
    let exhausted_for = opened.elapsed();
    // A keyed call now waits behind the silent connections, and is served once the first ones
    // reach the header deadline and free their descriptors.
    let sent = Instant::now();
    let r = s.call_once(
        &key,
        DEADLINE + runread_mcp::accept::ACCEPT_ERROR_BACKOFF * 3 + Duration::from_secs(6),
    );
    eprintln!(
        "descriptor exhaustion (nofile {EXHAUSTION_NOFILE}, {EXHAUSTION_CONNECTIONS} silent connections): runread held {held}, \
         CPU {:.1}% of one core over 2 s (after {exhausted_for:?}); a keyed call was answered {:?} after it was sent: {}",
        cpu * 100.0,
        sent.elapsed(),
        r.as_ref()
            .map(|r| r.status.to_string())
            .unwrap_or_else(|e| e.clone())
    );
    assert!(
        held < EXHAUSTION_CONNECTIONS,
        "the server ran out of descriptors ({held} held)"
    );
    assert!(
        cpu < EXHAUSTED_CPU_MAX,
        "the accept loop spins: {:.1}% of one core",
        cpu * 100.0
    );
    let r = r.expect("a keyed call is served after the deadline frees descriptors");
    assert!(s.is_answer(&r), "{r:?}");
    drop(silent);
}

// ---------------------------------------------------------------------------------------------
// Item 5: the key before the body; body readers per key and in total
// ---------------------------------------------------------------------------------------------

/// Sends `head` and the first byte of a body it never finishes; returns the open connection.
fn slow_body(addr: SocketAddr, head: &str) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    // One write: the server reads the first body byte with the headers.
    c.write_all(format!("{head}{{").as_bytes()).unwrap();
    c
}

#[test]
fn bodies_without_a_valid_key_are_refused_before_any_body_byte_and_take_no_slot() {
    let _g = serial();
    let s = start(2, None);
    let unknown = runread_core::key::generate().unwrap();
    let (k0, k1) = (s.keys[0].as_str(), s.keys[1].as_str());
    // More unkeyed slow bodies than there are body-reader slots in all, and the other refusals.
    let mut cases: Vec<(Vec<&str>, u16, &str)> = (0..BODY_READERS_MAX + 16)
        .map(|_| (vec![], 403, "missing_key"))
        .collect();
    cases.push((vec![unknown.as_str()], 403, "invalid_key"));
    cases.push((vec!["not-a-key"], 403, "invalid_key"));
    cases.push((vec![k0, k1], 400, "duplicate_key"));
    let started = Instant::now();
    let mut conns: Vec<_> = cases
        .iter()
        .map(|(keys, _, _)| slow_body(s.addr, &s.head("/mcp", keys, "", 1_000)))
        .collect();
    // Meanwhile a keyed call is served.
    let r = s
        .call_once(k0, Duration::from_secs(4))
        .expect("a keyed call is answered");
    assert!(
        s.is_answer(&r),
        "a keyed call is served while unkeyed bodies trickle: {r:?}"
    );
    let mut slowest = Duration::ZERO;
    for (c, (keys, status, code)) in conns.iter_mut().zip(&cases) {
        // At once: long before the body deadline (the body is never completed).
        let r = read_response(c, Duration::from_secs(3))
            .unwrap_or_else(|e| panic!("{keys:?}: no refusal before the body: {e}"));
        slowest = slowest.max(started.elapsed());
        assert_eq!((r.status, r.code().as_str()), (*status, *code), "{keys:?}");
        assert_eq!(r.header("connection").as_deref(), Some("close"), "{keys:?}");
        s.assert_no_leak(&r.raw);
    }
    eprintln!(
        "{} bodies without a valid key refused before their body within {slowest:?}; a keyed call served meanwhile",
        cases.len()
    );
}

#[test]
fn body_readers_are_bounded_per_key_and_in_total_at_n_and_n_plus_one() {
    let _g = serial();
    let holders = BODY_READERS_MAX / BODY_READERS_PER_KEY_MAX;
    assert_eq!(holders * BODY_READERS_PER_KEY_MAX, BODY_READERS_MAX);
    let s = start(holders + 1, None);
    let other = s.keys[holders].clone();
    let slow = |key: &str| slow_body(s.addr, &s.head("/mcp", &[key], "", 1_000));
    let expect_busy = |c: &mut TcpStream, what: &str| {
        let r = read_response(c, Duration::from_secs(3))
            .unwrap_or_else(|e| panic!("{what}: no immediate refusal: {e}"));
        assert_eq!((r.status, r.code().as_str()), (503, "busy"), "{what}");
        assert_eq!(r.header("retry-after").as_deref(), Some("1"), "{what}");
        s.assert_no_leak(&r.raw);
    };
    // N slow bodies of one key are read...
    let mut held: Vec<TcpStream> = (0..BODY_READERS_PER_KEY_MAX)
        .map(|_| slow(&s.keys[0]))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // ...the (N+1)-th of that key is refused at once...
    let mut over = slow(&s.keys[0]);
    expect_busy(&mut over, "one body over the per-key bound");
    // ...while another key is served.
    let r = s.call_once(&other, Duration::from_secs(3)).unwrap();
    assert!(
        s.is_answer(&r),
        "another key is served while one key holds its {BODY_READERS_PER_KEY_MAX} readers: {r:?}"
    );
    // Every slot in use, by keys each at their own bound: any further body is refused.
    for k in &s.keys[1..holders] {
        held.extend((0..BODY_READERS_PER_KEY_MAX).map(|_| slow(k)));
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut beyond = slow(&other);
    expect_busy(&mut beyond, "one body over the total bound");
    // The held bodies were being read: they end at the body deadline, not in a refusal.
    for (i, c) in held.iter_mut().enumerate() {
        let r = read_response(
            c,
            Duration::from_secs(HTTP_BODY_DEADLINE_SECS) + Duration::from_secs(4),
        )
        .unwrap_or_else(|e| panic!("held body #{i}: {e}"));
        assert_eq!(
            (r.status, r.code().as_str()),
            (408, "body_timeout"),
            "held body #{i}"
        );
    }
    let r = s.call_once(&other, Duration::from_secs(3)).unwrap();
    assert!(
        s.is_answer(&r),
        "served again once the readers freed: {r:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Item 6: header bytes, and memory under a flood
// ---------------------------------------------------------------------------------------------

/// A keyed call whose request line and headers (through the blank line) are `size` bytes.
fn call_of_head_size(s: &Server, size: usize) -> Vec<u8> {
    let body = s.body();
    let bare = s.head("/mcp", &[&s.keys[0]], "Connection: close\r\n", body.len());
    let pad_line = "X-Pad: \r\n".len();
    assert!(size >= bare.len() + pad_line);
    let pad = "a".repeat(size - bare.len() - pad_line);
    let head = s.head(
        "/mcp",
        &[&s.keys[0]],
        &format!("Connection: close\r\nX-Pad: {pad}\r\n"),
        body.len(),
    );
    assert_eq!(head.len(), size);
    let mut r = head.into_bytes();
    r.extend_from_slice(body.as_bytes());
    r
}

#[test]
fn header_bytes_at_the_limit_are_served_and_one_over_is_refused() {
    let _g = serial();
    let s = start(1, None);
    let at = call_of_head_size(&s, HTTP_HEADER_MAX_BYTES);
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.write_all(&at).unwrap();
    let r = read_response(&mut c, Duration::from_secs(5)).unwrap();
    assert!(
        s.is_answer(&r),
        "headers of exactly {HTTP_HEADER_MAX_BYTES} bytes: {r:?}"
    );
    let over = call_of_head_size(&s, HTTP_HEADER_MAX_BYTES + 1);
    let mut c = TcpStream::connect(s.addr).unwrap();
    let _ = c.write_all(&over);
    let r = read_response(&mut c, Duration::from_secs(5)).unwrap();
    assert_eq!(
        r.status,
        431,
        "headers of {} bytes: {r:?}",
        HTTP_HEADER_MAX_BYTES + 1
    );
    s.assert_no_leak(&r.raw);
    let (closed, _) = wait_closed(&mut c, Duration::from_secs(3), Instant::now());
    assert!(closed.is_some(), "the connection is closed after a 431");
}

/// Connections in each flood: more than the cap (the rest wait in the accept queue).
const FLOOD_CONNECTIONS: usize = HTTP_CONNECTIONS_MAX + 64;
/// What an oversized flood connection tries to send as one unfinished header.
const FLOOD_OVERSIZED_BYTES: usize = 256 * 1024;
/// Memory one held connection may cost beyond idle: its read buffer, which may grow to twice the
/// header limit when the allocator doubles it, plus the connection's own state (hyper's write
/// buffer, the task, parsed-header storage).
const PER_CONNECTION_BUDGET_BYTES: usize = 2 * HTTP_HEADER_MAX_BYTES + 16 * 1024;
/// Slack on top of the ceiling for the allocator (per-thread arenas, fragmentation).
const FLOOD_SLACK_KIB: u64 = 8 * 1024;
/// How close to idle RSS must come back after the floods.
const AFTER_SLACK_KIB: u64 = 8 * 1024;
/// Calls served after the floods close, before RSS is read again (idle had as many before).
const AFTER_CALLS: usize = 5;

#[test]
fn a_flood_of_unfinished_headers_stays_under_its_memory_ceiling_and_memory_returns() {
    let _g = serial();
    let s = start(1, None);
    let key = s.keys[0].clone();
    for _ in 0..AFTER_CALLS {
        let r = s.call_once(&key, Duration::from_secs(5)).unwrap();
        assert!(s.is_answer(&r));
    }
    std::thread::sleep(Duration::from_millis(500));
    let base = s.sockets();
    let idle = s.status_kib("VmRSS:");
    let ceiling = idle + (HTTP_CONNECTIONS_MAX * PER_CONNECTION_BUDGET_BYTES / 1024) as u64;
    let sample_max = |secs: f64| {
        let t0 = Instant::now();
        let mut peak = 0;
        while t0.elapsed().as_secs_f64() < secs {
            peak = peak.max(s.status_kib("VmRSS:"));
            std::thread::sleep(Duration::from_millis(100));
        }
        peak
    };
    let unfinished = |n: usize| {
        let mut h = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nX-Pad: ", s.host()).into_bytes();
        h.resize(n, b'a');
        h
    };

    // A: every connection holds the most unfinished header the limit lets it hold.
    let held_head = unfinished(HTTP_HEADER_MAX_BYTES - 1);
    let flood_a: Vec<TcpStream> = (0..FLOOD_CONNECTIONS)
        .map(|_| {
            let mut c = TcpStream::connect(s.addr).unwrap();
            c.write_all(&held_head).unwrap();
            c
        })
        .collect();
    let accepted_a =
        s.wait_sockets(Duration::from_secs(2), |n| n >= base + HTTP_CONNECTIONS_MAX) - base;
    let during_a = sample_max(1.5);
    drop(flood_a);
    s.wait_sockets(Duration::from_secs(DEADLINE.as_secs() + 3), |n| n <= base);

    // B: every connection tries to send a 256 KiB header.
    let oversized = unfinished(FLOOD_OVERSIZED_BYTES);
    let mut flood_b: Vec<(TcpStream, usize, bool)> = (0..FLOOD_CONNECTIONS)
        .map(|_| {
            let c = TcpStream::connect(s.addr).unwrap();
            c.set_nonblocking(true).unwrap();
            (c, 0, false)
        })
        .collect();
    let t0 = Instant::now();
    let mut during_b = 0;
    while t0.elapsed() < Duration::from_secs(3) {
        for (c, sent, done) in flood_b.iter_mut() {
            if *done || *sent == oversized.len() {
                continue;
            }
            match c.write(&oversized[*sent..]) {
                Ok(n) => *sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => *done = true,
            }
        }
        during_b = during_b.max(s.status_kib("VmRSS:"));
        std::thread::sleep(Duration::from_millis(20));
    }
    // What came back: a 431 to each connection the server read to its limit.
    let mut refused_b = 0;
    for (c, _, _) in flood_b.iter_mut() {
        let _ = c.set_nonblocking(false);
        if read_response(c, Duration::from_millis(10)).is_ok_and(|r| r.status == 431) {
            refused_b += 1;
        }
    }
    let sent_b: usize = flood_b.iter().map(|(_, n, _)| n).sum();
    drop(flood_b);
    s.wait_sockets(Duration::from_secs(DEADLINE.as_secs() + 3), |n| n <= base);
    std::thread::sleep(Duration::from_secs(1));
    // The allocator gives freed pages back as its threads next allocate: a few calls first, as a
    // serving process gets, then idle again.
    let mut r = s.call_once(&key, Duration::from_secs(5)).unwrap();
    for _ in 0..AFTER_CALLS {
        r = s.call_once(&key, Duration::from_secs(5)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = s.status_kib("VmRSS:");
    eprintln!(
        "memory: VmRSS idle {idle} KiB; {FLOOD_CONNECTIONS} connections each holding {} header bytes ({accepted_a} accepted): \
         peak {during_a} KiB (+{} KiB); each sending {FLOOD_OVERSIZED_BYTES} header bytes ({} KiB written in all, \
         {refused_b} answered 431): peak {during_b} KiB (+{} KiB); ceiling {ceiling} KiB + {FLOOD_SLACK_KIB} KiB slack; \
         after both floods closed {after} KiB (+{} KiB)",
        HTTP_HEADER_MAX_BYTES - 1,
        during_a.saturating_sub(idle),
        sent_b / 1024,
        during_b.saturating_sub(idle),
        after as i64 - idle as i64,
    );
    assert!(
        during_a <= ceiling + FLOOD_SLACK_KIB,
        "held headers: {during_a} KiB over the ceiling {ceiling} KiB + {FLOOD_SLACK_KIB} KiB"
    );
    assert!(
        during_b <= ceiling + FLOOD_SLACK_KIB,
        "oversized headers: {during_b} KiB over the ceiling {ceiling} KiB + {FLOOD_SLACK_KIB} KiB"
    );
    assert!(
        after <= idle + AFTER_SLACK_KIB,
        "memory did not return after the floods: idle {idle} KiB, after {after} KiB"
    );
    assert_eq!(
        accepted_a, HTTP_CONNECTIONS_MAX,
        "the cap's worth of connections held"
    );
    assert!(s.is_answer(&r), "still serving: {r:?}");
}

// ---------------------------------------------------------------------------------------------
// Item 7: HTTP/1.1 only; absolute-form targets
// ---------------------------------------------------------------------------------------------

/// An HTTP/2 frame: 24-bit length, type, flags, stream id.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// HPACK "literal header field without indexing, new name", no Huffman (short strings only).
fn hpack_literal(name: &str, value: &str) -> Vec<u8> {
    assert!(name.len() < 127 && value.len() < 127);
    let mut out = vec![0x00, name.len() as u8];
    out.extend_from_slice(name.as_bytes());
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
    out
}

#[test]
fn http2_prior_knowledge_is_not_served() {
    let _g = serial();
    let s = start(1, None);
    let body = s.body();
    let mut block = Vec::new();
    for (n, v) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/mcp"),
        (":authority", "evil.example"),
        ("host", s.host().as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "read_final_answer"),
        ("x-runread-key", s.keys[0].as_str()),
    ] {
        block.extend(hpack_literal(n, v));
    }
    let mut req = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    req.extend(h2_frame(0x4, 0, 0, &[])); // SETTINGS
    req.extend(h2_frame(0x1, 0x4, 1, &block)); // HEADERS, END_HEADERS
    req.extend(h2_frame(0x0, 0x1, 1, body.as_bytes())); // DATA, END_STREAM
    let mut c = TcpStream::connect(s.addr).unwrap();
    let _ = c.write_all(&req);
    let (closed, got) = wait_closed(&mut c, Duration::from_secs(5), Instant::now());
    let answered_h2 = got.len() >= 9 && got[3] == 0x4;
    eprintln!(
        "HTTP/2 prior knowledge: {} bytes back ({}), closed {closed:?}",
        got.len(),
        if answered_h2 {
            "HTTP/2 frames".to_owned()
        } else {
            format!("{:?}", String::from_utf8_lossy(&got[..got.len().min(40)]))
        }
    );
    assert!(!answered_h2, "HTTP/2 is served");
    assert!(
        got.is_empty() || got.starts_with(b"HTTP/1.1 4") || got.starts_with(b"HTTP/1.1 5"),
        "an HTTP/2 preface gets no answer but an HTTP/1.1 refusal: {:?}",
        String::from_utf8_lossy(&got)
    );
    assert!(closed.is_some(), "the connection is closed");
    s.assert_no_leak(&got);
    // Still served over HTTP/1.1.
    let r = s.call_once(&s.keys[0], Duration::from_secs(5)).unwrap();
    assert!(s.is_answer(&r));
}

#[test]
fn an_absolute_form_target_is_checked_like_host() {
    let _g = serial();
    let s = start(1, None);
    let key = s.keys[0].as_str();
    let body = s.body();
    let send = |target: &str| {
        let mut c = TcpStream::connect(s.addr).unwrap();
        let mut req = s
            .head(target, &[key], "Connection: close\r\n", body.len())
            .into_bytes();
        req.extend_from_slice(body.as_bytes());
        c.write_all(&req).unwrap();
        read_response(&mut c, Duration::from_secs(5)).unwrap()
    };
    for foreign in [
        "http://evil.example/mcp".to_owned(),
        "http://evil.example:80/mcp".to_owned(),
        format!("http://127.0.0.1.evil.example:{}/mcp", s.addr.port()),
        format!("http://user@127.0.0.1:{}/mcp", s.addr.port()),
    ] {
        let r = send(&foreign);
        assert_eq!(
            (r.status, r.code().as_str()),
            (403, "forbidden_origin"),
            "{foreign}: {r:?}"
        );
        s.assert_no_leak(&r.raw);
    }
    for own in [
        format!("http://127.0.0.1:{}/mcp", s.addr.port()),
        format!("http://localhost:{}/mcp", s.addr.port()),
    ] {
        let r = send(&own);
        assert!(s.is_answer(&r), "{own}: {r:?}");
    }
}
