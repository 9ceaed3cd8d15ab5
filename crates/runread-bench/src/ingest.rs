//! `runread-bench ingest --session F [--agent pi|claude|codex]`: reading and indexing one session
//! file into a fresh durable SQLite store (`runread_ingest::ingest_dir`, what `runread ingest`
//! runs), timed in process after a warm-up. The file is copied first into a temporary agent
//! directory laid out as that agent lays out its own (Pi: `sessions/<name>`; Claude Code:
//! `projects/<escaped cwd>/<name>`; Codex: `sessions/YYYY/MM/DD/<name>`), with its `"cwd":"…"`
//! fields moved into a temporary registered workspace and nothing else changed. Prints JSON: the
//! file's size and lines, and per repeat its wall time and the CPU time of the whole process
//! during it (every thread's: the readers' and the digest thread's too).

use runread_store::prelude::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use runread_ingest::AgentDir;
use runread_sessions::Agent;

use runread_store::sqlite::SqliteStore;
use serde_json::{Value, json};

/// The cwd a session file was written in: Pi's header `cwd`, the first Claude Code line with a
/// `cwd`, Codex's `session_meta` `payload.cwd`.
fn original_cwd(bytes: &[u8]) -> Result<String, String> {
    for line in bytes.split(|b| *b == b'\n').take(64) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let Some(c) = v.get("cwd").and_then(Value::as_str) {
            return Ok(c.to_owned());
        }
        if let Some(c) = v.pointer("/payload/cwd").and_then(Value::as_str) {
            return Ok(c.to_owned());
        }
    }
    Err("no cwd in the session's first lines".into())
}

/// `bytes` with every `"cwd":"<from>"` replaced by `"cwd":"<to>"` (compact JSON, as all three
/// agents write it).
pub fn relocate(bytes: &[u8], from: &str, to: &str) -> Result<Vec<u8>, String> {
    let pat = format!("\"cwd\":{}", Value::String(from.to_owned()));
    let rep = format!("\"cwd\":{}", Value::String(to.to_owned()));
    let (pat, rep) = (pat.as_bytes(), rep.as_bytes());
    let mut out = Vec::with_capacity(bytes.len() + 4096);
    let mut i = 0;
    let mut n = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(pat) {
            out.extend_from_slice(rep);
            i += pat.len();
            n += 1;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    if n == 0 {
        return Err(format!("no compact \"cwd\":{from:?} in the file"));
    }
    Ok(out)
}

/// Where `agent` keeps a session file named `name` of a session run in `cwd`, under `root`.
fn placed(agent: Agent, root: &Path, cwd: &str, name: &std::ffi::OsStr) -> PathBuf {
    match agent {
        Agent::Pi => root.join(name),
        Agent::Claude => root
            .join(runread_testkit::claude_project_dir(cwd))
            .join(name),
        Agent::Codex => root.join("2026").join("11").join("30").join(name),
        Agent::Gemini => root.join("project").join("chats").join(name),
        Agent::Copilot => root.join("session").join(name),
        // Sessions in a database: the benchmark places session files only.
        Agent::OpenCode => root.join(name),
    }
}

pub fn run(session: &str, agent: Agent, repeats: usize, warmup: usize) -> Result<(), String> {
    let e = |what: &str| {
        let what = what.to_owned();
        move |err: std::io::Error| format!("{what}: {err}")
    };
    let raw = std::fs::read(session).map_err(e(session))?;
    let dir = tempfile::tempdir().map_err(e("tempdir"))?;
    let ws = dir.path().join("workspace");
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&ws).map_err(e("mkdir"))?;
    let ws = std::fs::canonicalize(ws).map_err(e("canonicalize"))?;
    let ws_str = ws.to_str().ok_or("temporary dir is not UTF-8")?.to_owned();
    let bytes = relocate(&raw, &original_cwd(&raw)?, &ws_str)?;
    let name = Path::new(session)
        .file_name()
        .ok_or("the session path has no file name")?;
    let path = placed(agent, &sessions, &ws_str, name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(e("mkdir"))?;
    }
    std::fs::write(&path, &bytes).map_err(e("write"))?;
    let f = std::fs::File::options()
        .write(true)
        .open(&path)
        .map_err(e("open"))?;
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
        .map_err(e("set mtime"))?;
    let lines = bytes.iter().filter(|b| **b == b'\n').count();
    let agent_dir = AgentDir {
        agent,
        dir: sessions.clone(),
    };
    let mut samples = Vec::new();
    let mut cpu = Vec::new();
    let mut runs = 0;
    for i in 0..warmup + repeats {
        let db_dir = tempfile::tempdir_in(dir.path()).map_err(e("tempdir"))?;
        let store = SqliteStore::open(&db_dir.path().join("runread.db"))
            .map_err(|err| format!("store: {err:?}"))?;
        store
            .add_workspace(&ws_str, "bench", runread_core::timefmt::now_ms())
            .map_err(|err| format!("workspace: {err:?}"))?;
        let (t, c) = (Instant::now(), process_cpu());
        let (report, _) =
            runread_ingest::ingest_dir(&store, &agent_dir, runread_core::timefmt::now_ms(), |_| {})
                .map_err(|err| format!("ingest: {err:?}"))?;
        let dt = t.elapsed().as_secs_f64();
        let dc = (process_cpu() - c).as_secs_f64();
        if report.new_generations != 1 || report.malformed_lines != 0 {
            return Err(format!(
                "expected one new session without malformed lines, got {report:?}"
            ));
        }
        runs = report.runs;
        if i >= warmup {
            samples.push(dt);
            cpu.push(dc);
        }
    }
    println!(
        "{}",
        json!({"bytes": bytes.len(), "entries": lines, "lines": lines, "runs": runs, "seconds": samples,
               "cpu_seconds": cpu})
    );
    Ok(())
}

/// CPU time this process has used so far, in all its threads (ended ones included).
fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}
