//! `runread-bench ready --port P [--key K] -- CMD…`: starts CMD, sends `server/discover` to
//! 127.0.0.1:P/mcp until one is answered (200 with a result), and reports the time from spawn to
//! that answer; then, after an idle pause, the process's resident set (VmRSS: anonymous + file-backed) and peak (VmHWM),
//! and the CPU it used while idle: from [`SETTLE`] after the answer to the end of the pause (clock ticks, user + system).
//! Prints JSON. The child is killed at the end.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"runread-bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;

fn discover(port: u16, key: &str) -> Option<String> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let _ = c.set_nodelay(true);
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: server/discover\r\nx-runread-key: {key}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{DISCOVER}",
        DISCOVER.len()
    );
    c.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    if out.starts_with("HTTP/1.1 200") && out.contains("\"result\"") {
        Some(out)
    } else {
        None
    }
}

/// Left to the server after its answer before its idle CPU is counted: a start's own work (a
/// watcher's first pass) is not idling.
const SETTLE: Duration = Duration::from_secs(1);

/// User + system CPU of `pid` so far, in clock ticks (`/proc/PID/stat` fields 14 and 15).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: count from the parenthesis that closes it.
    let (_, rest) = s.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let (utime, stime) = (fields.next()?, fields.next()?);
    Some(utime.parse::<u64>().ok()? + stime.parse::<u64>().ok()?)
}

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

pub fn run(port: u16, key: &str, idle_ms: u64, cmd: &[String]) {
    let t = Instant::now();
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = t + Duration::from_secs(30);
    let mut ready_ms = None;
    while Instant::now() < deadline {
        if discover(port, key).is_some() {
            ready_ms = Some(t.elapsed().as_secs_f64() * 1e3);
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("server exited before answering: {status}");
        }
        std::thread::sleep(Duration::from_micros(250));
    }
    let ready_ms = ready_ms.expect("server answered server/discover within 30 s");
    let pid = child.id();
    let idle = Duration::from_millis(idle_ms);
    let settle = SETTLE.min(idle);
    std::thread::sleep(settle);
    let idle_from = cpu_ticks(pid);
    std::thread::sleep(idle - settle);
    let idle_cpu_ticks = idle_from
        .zip(cpu_ticks(pid))
        .map(|(a, b)| b.saturating_sub(a));
    // The whole process tree's RSS would count interpreters' helpers; the servers here are one process.
    let rss = status_kib(pid, "VmRSS:");
    let hwm = status_kib(pid, "VmHWM:");
    let anon = status_kib(pid, "RssAnon:");
    let file = status_kib(pid, "RssFile:");
    let _ = child.kill();
    let _ = child.wait();
    println!(
        "{}",
        json!({"ready_ms": ready_ms, "rss_kib": rss, "hwm_kib": hwm, "anon_kib": anon, "file_kib": file,
               "idle_cpu_ticks": idle_cpu_ticks, "idle_counted_ms": (idle - settle).as_millis() as u64})
    );
}
