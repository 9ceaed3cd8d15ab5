//! The gate under crashes: a real `runread serve` process, killed with SIGKILL at varied moments
//! while clients read; afterwards every answer a client received must have its start record and
//! its `ok` receipt in the store, and every start left without a receipt must be classified by
//! `runread recover inspect` as an interrupted, retry-safe read.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;

use runread_store::sqlite::SqliteStore;
use runread_testkit::Env;
use runread_testkit::free_port;

/// How many times the server is killed.
const KILL_CYCLES: u64 = 6;
/// Concurrent clients per cycle.
const CLIENTS: usize = 4;

fn spawn_server(home: &Path, port: u16) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return child;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let mut child = child;
    let _ = child.kill();
    let _ = child.wait();
    panic!("server did not start");
}

fn body(target: &Value, id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "read_final_answer", "arguments": {"target": target},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "crash", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

async fn hammer(
    url: String,
    key: String,
    target: Value,
    seen: Arc<Mutex<Vec<String>>>,
    client_no: u64,
) {
    let http = reqwest::Client::new();
    for i in 0.. {
        let r = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "read_final_answer")
            .header("x-runread-key", &key)
            .body(body(&target, client_no * 1_000_000 + i))
            .send()
            .await;
        let Ok(r) = r else { return };
        let Ok(text) = r.text().await else { return };
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if v["result"]["structuredContent"]["readable"] == true {
            let id = v["result"]["_meta"]["io.runread/startId"]
                .as_str()
                .expect("every answer names its start record");
            seen.lock().unwrap().push(id.to_owned());
        }
    }
}

/// `CLIENTS` clients reading from the server on `port` until it goes away, numbered from `first`.
fn start_clients(
    rt: &tokio::runtime::Runtime,
    port: u16,
    key: &str,
    target: &Value,
    seen: &Arc<Mutex<Vec<String>>>,
    first: u64,
) -> Vec<tokio::task::JoinHandle<()>> {
    let url = format!("http://127.0.0.1:{port}/mcp");
    (0..CLIENTS as u64)
        .map(|c| {
            rt.spawn(hammer(
                url.clone(),
                key.to_owned(),
                target.clone(),
                seen.clone(),
                first + c,
            ))
        })
        .collect()
}

/// A home with the sample ingested and its longest answer granted to `to`.
fn sample_granted(to: &str) -> (Env, runread_testkit::TestGrant) {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], to);
    (env, g)
}

#[test]
fn every_answer_received_before_a_crash_has_its_start_record_and_receipt() {
    let (env, g) = sample_granted("crash");
    let home = env.dir.path().to_path_buf();
    let target = serde_json::to_value(&g.grant.target).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A small deterministic spread of kill moments (ms after the clients start).
    let mut x: u64 = 0x9e37_79b9;
    for cycle in 0..KILL_CYCLES {
        let port = free_port();
        let mut server = spawn_server(&home, port);
        let tasks = start_clients(&rt, port, &g.key, &target, &seen, cycle * 10);
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(50 + (x >> 33) % 400));
        server.kill().unwrap();
        server.wait().unwrap();
        for t in tasks {
            let _ = rt.block_on(t);
        }
    }
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "clients received answers");
    let store = SqliteStore::open(&home.join("runread.db")).unwrap();
    for id in &seen {
        assert!(
            store.start_meta(id).unwrap().is_some(),
            "answer {id} has no start record"
        );
        let receipts = store.receipts(id).unwrap();
        assert!(
            receipts.iter().any(|r| r.outcome == "ok"),
            "answer {id} has no ok receipt"
        );
    }
    // Starts the kills interrupted: classified from the record and binding alone.
    let interrupted: Vec<_> = store
        .audit(0, 100_000)
        .unwrap()
        .into_iter()
        .filter(|(_, r)| r.is_empty())
        .collect();
    for (meta, _) in interrupted.iter().take(3) {
        let out = Command::new(env!("CARGO_BIN_EXE_runread"))
            .arg("--home")
            .arg(&home)
            .args(["recover", "inspect", &meta.start_id, "--json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["state"], "interrupted");
        assert_eq!(v["verdict"], "retry_safe");
    }
    eprintln!(
        "{} answers received over {KILL_CYCLES} kills; {} starts left without a receipt",
        seen.len(),
        interrupted.len()
    );
}

/// SIGTERM, what service managers send to stop a service, ends `runread serve` as Ctrl-C does:
/// exit status 0, every answer a client received committed with its receipt, and the store
/// closed, its write-ahead log copied back and removed, so the next start has none to read back.
#[test]
fn sigterm_stops_the_server_gracefully_and_closes_its_store() {
    let (env, g) = sample_granted("stop");
    // The server's connections are to be the store's last ones.
    let Env { dir, store, .. } = env;
    drop(store);
    let home = dir.path().to_path_buf();
    let wal = home.join("runread.db-wal");
    let target = serde_json::to_value(&g.grant.target).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let port = free_port();
    let mut server = spawn_server(&home, port);
    let tasks = start_clients(&rt, port, &g.key, &target, &seen, 0);
    while seen.lock().unwrap().len() < 20 {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(wal.exists(), "a serving store writes ahead to its log");
    let status = signal_and_wait(&mut server, "-TERM");
    for t in tasks {
        let _ = rt.block_on(t);
    }
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(
        !wal.exists(),
        "the store was not closed: its log is still there"
    );
    let store = SqliteStore::open(&home.join("runread.db")).unwrap();
    let seen = seen.lock().unwrap().clone();
    for id in &seen {
        let receipts = store.receipts(id).unwrap();
        assert!(
            receipts.iter().any(|r| r.outcome == "ok"),
            "answer {id} has no ok receipt"
        );
    }
}

/// Sends `signal` (`-TERM`, `-INT`) to `child` and waits for it to end.
fn signal_and_wait(child: &mut Child, signal: &str) -> std::process::ExitStatus {
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    child.wait().unwrap()
}

#[test]
fn watch_stops_on_sigterm_or_ctrl_c_and_closes_its_store() {
    use std::io::{BufRead, BufReader};
    for signal in ["-TERM", "-INT"] {
        let env = Env::new();
        env.place("sample", Duration::from_secs(60));
        let Env {
            dir,
            store,
            sessions,
            ..
        } = env;
        drop(store);
        let home = dir.path();
        let wal = home.join("runread.db-wal");
        let mut watch = Command::new(env!("CARGO_BIN_EXE_runread"))
            .arg("--home")
            .arg(home)
            .args(["watch", "--pi"])
            .arg(&sessions)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The first pass ingests the sample and says so; then the watcher waits.
        let mut line = String::new();
        BufReader::new(watch.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("new or re-read"), "{line}");
        assert!(wal.exists(), "a watching store writes ahead to its log");
        let status = signal_and_wait(&mut watch, signal);
        assert_eq!(status.code(), Some(0), "{signal}: {status:?}");
        assert!(!wal.exists(), "{signal}: the store was not closed");
        let store = SqliteStore::open(&home.join("runread.db")).unwrap();
        assert!(!store.runs().unwrap().is_empty(), "the pass was kept");
    }
}

#[test]
fn stdio_serve_stops_on_sigterm_and_closes_its_store() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::fs::PermissionsExt;
    let (env, g) = sample_granted("stdio-stop");
    let Env { dir, store, .. } = env;
    drop(store);
    let home = dir.path();
    let wal = home.join("runread.db-wal");
    let key_file = home.join("key");
    std::fs::write(&key_file, &g.key).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(["serve", "--stdio", "--key-file"])
        .arg(&key_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let target = serde_json::to_value(&g.grant.target).unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "read_final_answer", "arguments": {"target": target}, "_meta": meta}});
    // stdin stays open: the session has not ended when the signal comes.
    let mut stdin = server.stdin.take().unwrap();
    writeln!(stdin, "{call}").unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["result"]["structuredContent"]["readable"], true);
    assert!(wal.exists(), "a serving store writes ahead to its log");
    let status = signal_and_wait(&mut server, "-TERM");
    drop(stdin);
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(
        !wal.exists(),
        "the store was not closed: its log is still there"
    );
}

#[test]
fn recover_inspect_needs_neither_the_sealed_input_nor_a_key() {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let home = env.dir.path();
    let registry = runread_gate::Registry::build(
        runread_service::definitions(),
        &runread_service::pinned_bindings(),
    )
    .unwrap();
    let binding = registry.get("read_final_answer").unwrap();
    // A start record committed by a process that then died before answering.
    let meta = runread_store::StartMeta {
        start_id: "st-crashed".into(),
        idempotency_key: "once-1".into(),
        grant_id: "g-1".into(),
        key_hash_prefix: "abc".into(),
        tool: "read_final_answer".into(),
        binding_digest: binding.definition_digest.clone(),
        target: None,
        input_digest: "d".into(),
        sealed_key_id: "k-that-does-not-exist".into(),
        created_at_ms: 1,
        reader_id: None,
    };
    let rec = runread_store::StartRecord {
        meta,
        sealed_nonce: vec![0; 12],
        sealed_ciphertext: b"garbage, not a ciphertext".to_vec(),
    };
    env.store.begin_call(&rec, 0).unwrap();
    // No key file at all: inspection must not need one.
    let _ = std::fs::remove_file(home.join("gate-keys"));
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(["recover", "inspect", "st-crashed", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["state"], "interrupted");
    assert_eq!(v["verdict"], "retry_safe");
    assert_eq!(v["effect"], "read_only_no_side_effects");
    assert_eq!(v["bindingCurrent"], true);
    assert!(
        !home.join("gate-keys").exists(),
        "inspection did not create or resolve a key"
    );
}

#[test]
fn audit_shows_who_read_what_and_never_the_input() {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.store.runs().unwrap().into_iter().next().unwrap();
    let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "audit");
    let port = free_port();
    let mut server = spawn_server(env.dir.path(), port);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let target = serde_json::to_value(&g.grant.target).unwrap();
    let cursor_marker = rt.block_on(async {
        let c =
            runread_mcp::client::Client::connect(&format!("http://127.0.0.1:{port}/mcp"), &g.key)
                .await
                .unwrap();
        let a = c
            .call("read_final_answer", json!({"target": target, "limit": 100}))
            .await
            .unwrap();
        let _ = c
            .call(
                "read_final_answer",
                json!({"target": target, "cursor": "bogus"}),
            )
            .await;
        a.structured["nextCursor"].as_str().unwrap().to_owned()
    });
    server.kill().unwrap();
    server.wait().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(env.dir.path())
        .args(["audit", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let page: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (&page["more"], &page["nextBefore"]),
        (&json!(0), &Value::Null)
    );
    let rows = page["rows"].as_array().unwrap();
    let outcomes: Vec<&str> = rows
        .iter()
        .flat_map(|r| r["receipts"].as_array().unwrap())
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert!(outcomes.contains(&"ok"));
    assert!(outcomes.contains(&"refused:invalid_cursor"));
    assert!(
        rows.iter()
            .all(|r| r["grantId"] == g.grant.id || r["tool"] != "read_final_answer")
    );
    assert!(
        !text.contains("bogus") && !text.contains(&cursor_marker[..20]),
        "audit never shows the input"
    );
    assert!(!text.contains(&g.key));
    let human = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(env.dir.path())
        .args(["audit", "--since", "1h"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("read_final_answer"));
}

/// Grants killed (SIGKILL) at moments spread over a whole grant's time, sealing included: every
/// snapshot the store is left with opens and holds its run as indexed (written whole or not at
/// all), none is left without a grant on its run, and a grant left without one says so (its run
/// has no snapshot to serve: readable only while its file is).
#[test]
fn a_grant_killed_while_sealing_leaves_its_snapshot_whole_or_none() {
    const KILLS: u32 = 24;
    let env = Env::new();
    env.place("multi-run", Duration::from_secs(60));
    env.ingest();
    let runs = env.store.runs().unwrap();
    assert!(runs.len() >= 2);
    let grant = |i: u32, run: &runread_store::RunRecord| {
        Command::new(env!("CARGO_BIN_EXE_runread"))
            .arg("--home")
            .arg(env.dir.path())
            .args([
                "grant",
                "--run",
                &run.target.run_id,
                "--session",
                &run.target.session_id,
                "--features",
                "final_answer,history,metadata",
                "--expires",
                "15m",
                "--to",
                &format!("reader-{i}"),
                "--json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // One whole grant: how long one takes here (to spread the kills over it; not an assertion).
    let started = std::time::Instant::now();
    let whole = grant(KILLS, &runs[0]).wait_with_output().unwrap();
    let window = started.elapsed();
    let whole: Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert_eq!(whole["snapshot"]["sealed"], true, "{whole}");
    for i in 0..KILLS {
        let mut child = grant(i, &runs[i as usize % runs.len()]);
        std::thread::sleep(window * i / KILLS);
        let _ = child.kill();
        let _ = child.wait();
    }
    let grants = env.store.grants().unwrap();
    let kept = env.store.snapshots().unwrap();
    assert!(!kept.is_empty());
    for s in &kept {
        assert_eq!(
            env.owner().snapshot_standing(s).unwrap(),
            runread_service::evidence::snapshot::Standing::Ok,
            "snapshot of run {} is not whole",
            s.run_id
        );
        assert!(
            grants
                .iter()
                .any(|g| g.target.run_id == s.run_id && g.target.session_id == s.session_id),
            "a snapshot without a grant on its run"
        );
    }
    // The whole grant's reader reads its run from the snapshot once the file is gone.
    let svc = env.service();
    let ctx = svc
        .admit_key(&[whole["key"].as_str().unwrap().as_bytes()])
        .unwrap();
    std::fs::remove_file(&runs[0].session_path).unwrap();
    let out = runread_testkit::block_on(svc.call(
        Arc::new(ctx),
        "read_final_answer",
        json!({"target": runs[0].target}),
        None,
    ))
    .unwrap();
    assert_eq!(out.labeled.structured["evidence"], "snapshot");
    assert_eq!(out.labeled.structured["state"], "available");
}
