//! A team deployment end to end, with the real binary on a real PostgreSQL server: two gateways
//! (`runread serve --store URL`) sharing one home (its `gate-keys`) and one fresh database, an
//! agent host (a third process with its own home and host name) pushing a real Pi session with
//! `workspace add` + `ingest`, and the owner granting and revoking from the command line.
//!
//! Shown: the answer reads byte-identical through both gateways; a cursor one gateway issued is
//! accepted by the other; a revocation applies on the very next call through either gateway, and
//! a run shared again with the same reader reaches its key through both;
//! backends killed repeatedly under load give only `unavailable` refusals, no panic and no wrong
//! or stale answer, and the gateways recover by themselves; a database that refuses connections
//! gives `unavailable`, never a cached answer. A reader waiting on a gateway that sees only
//! snapshots is told `settled` only once its next read returns the whole answer.
//!
//! Every scenario runs twice: on the shared test server in plain text, and over TLS
//! (`verify-full`) on a cluster of the test's own (`over_tls_*`, see `pgtls`).
//!
//! PostgreSQL missing is a failure with instructions (see `runread_testkit::pg::admin`), never a skip.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use crate::pgtls;
use runread_store::prelude::*;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};

use runread_testkit::pg::{self, terminate_backends};

use runread_mcp::client::{Client, ClientError};

/// `RUNREAD_HOST` of the gateways and of the owner's commands run next to them.
const GATEWAY_HOST: &str = "gateway";
/// `RUNREAD_HOST` of the agent host that ingests.
const AGENT_HOST: &str = "laptop-a";
/// How old the placed session file is: well past the settle window, so its answer is available.
const SETTLED: Duration = Duration::from_secs(60);
/// Hang guard: longest wait for a gateway to print its address.
const START_GUARD: Duration = Duration::from_secs(60);
/// Hang guard on one HTTP call (store calls are bounded by seconds; this only catches a hang).
const CALL_GUARD: Duration = Duration::from_secs(60);
/// Hang guard on the whole load phase.
const LOAD_GUARD: Duration = Duration::from_secs(300);
/// Chunk size for the cursor hand-over: several chunks for the sample's 9,554-byte answer.
const SMALL_CHUNK: u64 = 1_024;
/// Chunk size under load: the largest, so each whole read is two calls.
const LARGE_CHUNK: u64 = 8_192;
/// Most chunks one read may take before the test calls it a loop.
const MAX_CHUNKS: usize = 64;
/// Load tasks per gateway: below the gateway's in-flight cap (4), so `busy` never happens and
/// every refusal seen is about the database.
const LOAD_TASKS_PER_GATEWAY: usize = 2;
/// Rounds of terminating every backend of the test database, and the pause between them.
const KILL_ROUNDS: usize = 30;
const KILL_PAUSE: Duration = Duration::from_millis(100);

/// Runs the real binary with its own home, host name and store; nothing from the caller's
/// environment picks another store or home.
fn runread(home: &Path, host: &str, store: &str, args: &[&str]) -> Output {
    pgtls::runread(home, store)
        .env("RUNREAD_HOST", host)
        .args(args)
        .output()
        .expect("run runread")
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "runread failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// One `runread serve` process on an ephemeral loopback port, its stderr collected.
struct Gateway {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl Gateway {
    fn start(home: &Path, store: &str) -> Gateway {
        Gateway::start_with(home, store, &[])
    }

    /// With more global flags (`--gate-keys FILE`).
    fn start_with(home: &Path, store: &str, flags: &[&str]) -> Gateway {
        let mut cmd = pgtls::runread(home, store);
        cmd.env("RUNREAD_HOST", GATEWAY_HOST).args(flags).args([
            "serve",
            "--listen",
            "127.0.0.1:0",
        ]);
        Gateway::spawn(cmd)
    }

    /// The agent host's own gateway (`serve --watch`): it ingests its Pi sessions directory as
    /// the agent writes, and seals the snapshots of runs shared from it.
    fn watching(home: &Path, store: &str, pi_sessions: &Path, empty: &Path) -> Gateway {
        let mut cmd = pgtls::runread(home, store);
        cmd.env("RUNREAD_HOST", AGENT_HOST)
            .args(["serve", "--listen", "127.0.0.1:0", "--watch", "--pi"])
            .arg(pi_sessions)
            .arg("--claude")
            .arg(empty)
            .arg("--codex")
            .arg(empty);
        Gateway::spawn(cmd)
    }

    /// A gateway on another machine, as far as files go: in a mount namespace of its own where
    /// `hidden` (the agent host's sessions directory) is an empty tmpfs, so it can serve a run
    /// only from its snapshot. Its home is its own; `gate_keys` is the agent host's key file.
    fn elsewhere(home: &Path, store: &str, gate_keys: &Path, hidden: &Path) -> Gateway {
        let mut cmd = std::process::Command::new("unshare");
        cmd.env_remove("RUNREAD_STORE")
            .env_remove("RUNREAD_HOME")
            .env_remove("RUNREAD_GATE_KEYS_FILE")
            .env("RUNREAD_HOST", GATEWAY_HOST)
            .args(["--user", "--map-root-user", "--mount", "--", "sh", "-c"])
            .arg(r#"mount -t tmpfs tmpfs "$0" && exec "$@""#)
            .arg(hidden)
            .arg(env!("CARGO_BIN_EXE_runread"))
            .arg("--home")
            .arg(home)
            .arg("--store")
            .arg(store)
            .arg("--gate-keys")
            .arg(gate_keys)
            .args(["serve", "--listen", "127.0.0.1:0"]);
        Gateway::spawn(cmd)
    }

    fn spawn(mut cmd: std::process::Command) -> Gateway {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn runread serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("at http://") {
                    let url = line[at + 3..].split_whitespace().next().unwrap_or("");
                    let _ = tx.send(url.to_owned());
                }
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let url = match rx.recv_timeout(START_GUARD) {
            Ok(url) => url,
            Err(_) => panic!(
                "the gateway did not start: {}",
                stderr.lock().unwrap().as_str()
            ),
        };
        Gateway { child, url, stderr }
    }

    /// Still running, and never panicked.
    fn assert_healthy(&mut self, store_url: &str) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "gateway {} exited: {}",
            self.url,
            self.stderr()
        );
        let err = self.stderr();
        assert!(
            !err.contains("panicked"),
            "gateway {} panicked: {err}",
            self.url
        );
        assert!(!err.contains(store_url), "the store URL was logged: {err}");
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One database, two gateways, one ingested session and one grant.
struct Deployment {
    gateways: [Gateway; 2],
    key: String,
    grant_id: String,
    target: Value,
    /// The granted run's final answer as the agent wrote it (read without runread's parser).
    expected: String,
    /// Where the owner's and the agent host's commands keep their homes.
    dir: tempfile::TempDir,
    // Dropped last: the gateways above are stopped before their database is dropped.
    db: Db,
}

/// Where a scenario's database lives and how runread's processes reach it: the shared test
/// server (plain TCP, `RUNREAD_TEST_PG`), or a cluster of the test's own over TLS, reached with
/// `verify-full` against its own CA.
enum Server {
    Shared,
    Tls(Box<pgtls::Cluster>),
}

impl Server {
    fn tls() -> Server {
        Server::Tls(Box::new(pgtls::Cluster::start()))
    }

    fn fresh_db(&self) -> Db {
        match self {
            Server::Shared => {
                let db = pg::PgDb::fresh();
                Db {
                    name: db.name.clone(),
                    url: db.url.clone(),
                    _dropped_with: Box::new(db),
                }
            }
            Server::Tls(cluster) => {
                let db = cluster.fresh_db();
                Db {
                    name: db.name.clone(),
                    url: db.url.clone(),
                    _dropped_with: Box::new(db),
                }
            }
        }
    }

    /// An administrator's connection (plain text; the cluster's over its Unix socket).
    fn admin(&self) -> postgres::Client {
        match self {
            Server::Shared => pg::admin(),
            Server::Tls(cluster) => cluster.admin(),
        }
    }
}

/// A scenario as two tests: on the shared server in plain text, and over TLS.
macro_rules! on_both_servers {
    ($plain:ident, $tls:ident, $scenario:ident) => {
        #[test]
        fn $plain() {
            $scenario(&Server::Shared);
        }

        #[test]
        fn $tls() {
            $scenario(&Server::tls());
        }
    };
}

/// A database made for one scenario: its name, the URL runread's processes use, and what drops
/// it.
struct Db {
    name: String,
    url: String,
    _dropped_with: Box<dyn std::any::Any>,
}

impl Deployment {
    fn start(server: &Server) -> Deployment {
        let db = server.fresh_db();
        let url = db.url.clone();
        let dir = tempfile::tempdir().unwrap();
        let gateway_home = dir.path().join("gateway-home");
        let agent_home = dir.path().join("agent-home");
        let sessions = dir.path().join("agent-sessions");
        let workspace = dir.path().join("workspace");
        for d in [&sessions, &workspace] {
            std::fs::create_dir_all(d).unwrap();
        }
        let workspace = std::fs::canonicalize(&workspace).unwrap();

        // The owner's first command makes the home's gate-keys; every gateway shares that file
        // (here: the same home), since read keys and sealed inputs are sealed under it.
        assert_eq!(
            ok(runread(
                &gateway_home,
                GATEWAY_HOST,
                &url,
                &["runs", "--json"]
            ))
            .trim(),
            "[]"
        );
        assert!(gateway_home.join("gate-keys").exists());
        let gateways = [
            Gateway::start(&gateway_home, &url),
            Gateway::start(&gateway_home, &url),
        ];

        // The agent host, a third process with a home and host name of its own, pushes a real
        // Pi session while the gateways run.
        let src = runread_testkit::fixture_session("sample");
        let session = sessions.join(src.file_name().unwrap());
        std::fs::write(
            &session,
            runread_testkit::relocated(&std::fs::read(&src).unwrap(), workspace.to_str().unwrap()),
        )
        .unwrap();
        runread_testkit::set_age(&session, SETTLED);
        let ws = workspace.to_str().unwrap();
        ok(runread(
            &agent_home,
            AGENT_HOST,
            &url,
            &["workspace", "add", ws, "--name", "proj"],
        ));
        let ingested = ok(runread(
            &agent_home,
            AGENT_HOST,
            &url,
            &["ingest", "--pi", sessions.to_str().unwrap()],
        ));
        assert!(ingested.contains("1 new or re-read"), "{ingested}");

        // The longest answer, as the agent wrote it.
        let (run_id, expected) = runread_testkit::agent_runs(&session)
            .into_iter()
            .filter_map(|(id, text, _)| text.map(|t| (id, t)))
            .max_by_key(|(_, t)| t.len())
            .unwrap();

        // The owner, next to the gateways, sees the run ingested on the agent host and grants it.
        let runs: Vec<Value> = serde_json::from_str(&ok(runread(
            &gateway_home,
            GATEWAY_HOST,
            &url,
            &["runs", "--json"],
        )))
        .unwrap();
        let run = runs
            .iter()
            .find(|r| r["target"]["runId"] == run_id.as_str())
            .unwrap_or_else(|| panic!("run {run_id} not listed: {runs:?}"));
        assert_eq!(run["answerState"], "available", "{run}");
        let grant = share_with_the_team_assistant(&gateway_home, &url, &run_id);
        Deployment {
            gateways,
            key: grant["key"].as_str().unwrap().to_owned(),
            grant_id: grant["grantId"].as_str().unwrap().to_owned(),
            target: grant["target"].clone(),
            expected,
            dir,
            db,
        }
    }

    fn expected_sha256(&self) -> String {
        runread_core::sha256_hex(self.expected.as_bytes())
    }

    fn assert_gateways_healthy(&mut self) {
        let url = self.db.url.clone();
        for g in &mut self.gateways {
            g.assert_healthy(&url);
        }
    }
}

/// The owner, next to the gateways, shares the run `run_id` with the reader `team-assistant`:
/// `grant --json`'s output.
fn share_with_the_team_assistant(home: &Path, url: &str, run_id: &str) -> Value {
    let args = [
        "grant",
        "--run",
        run_id,
        "--features",
        "final_answer",
        "--expires",
        "15m",
        "--to",
        "team-assistant",
        "--json",
    ];
    serde_json::from_str(&ok(runread(home, GATEWAY_HOST, url, &args))).unwrap()
}

/// `read_final_answer` arguments.
fn answer_args(target: &Value, cursor: Option<&str>, limit: u64) -> Value {
    let mut args = Map::new();
    args.insert("target".into(), target.clone());
    args.insert("limit".into(), json!(limit));
    if let Some(c) = cursor {
        args.insert("cursor".into(), json!(c));
    }
    Value::Object(args)
}

/// A runtime for the MCP clients. The tests themselves are synchronous: the `postgres` client
/// (PgDb, the admin connection) drives a runtime of its own and must not run inside another.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

fn refusal_code(r: Result<runread_mcp::client::ToolResult, ClientError>) -> String {
    match r {
        Err(ClientError::Refused { code, .. }) => code,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

on_both_servers!(
    two_gateways_share_answers_cursors_and_revocations,
    over_tls_two_gateways_share_answers_cursors_and_revocations,
    two_gateways
);

fn two_gateways(server: &Server) {
    let mut d = Deployment::start(server);
    // A third gateway on the same database whose home made a gate-keys of its own.
    let mut stranger = Gateway::start(&d.dir.path().join("stranger-home"), &d.db.url);
    runtime().block_on(shared_answers_cursors_and_revocations(&d, &stranger.url));
    // The reader's grant is revoked now; the owner shares the run with it again, once, on the
    // shared database: both gateways serve the new grant to the same key, nothing reconfigured.
    let again = share_with_the_team_assistant(
        &d.dir.path().join("gateway-home"),
        &d.db.url,
        d.target["runId"].as_str().unwrap(),
    );
    assert_eq!(again["newReader"], false, "{again}");
    assert!(again.get("key").is_none(), "{again}");
    runtime().block_on(async {
        for g in &d.gateways {
            let c = Client::connect(&g.url, &d.key).await.unwrap();
            let answer = c.read_final_answer(&d.target, None, |_| {}).await.unwrap();
            assert_eq!(answer.text.as_deref(), Some(d.expected.as_str()));
            c.close().await;
        }
    });
    stranger.assert_healthy(&d.db.url);
    d.assert_gateways_healthy();
}

async fn shared_answers_cursors_and_revocations(d: &Deployment, stranger_url: &str) {
    let a = Client::connect(&d.gateways[0].url, &d.key).await.unwrap();
    let b = Client::connect(&d.gateways[1].url, &d.key).await.unwrap();

    // Both gateways list the one granted target.
    for c in [&a, &b] {
        let targets = c.granted_targets().await.unwrap();
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0]["target"], d.target);
    }

    // The answer ingested by the third process reads whole, byte-identical, through both.
    let via_a = a.read_final_answer(&d.target, None, |_| {}).await.unwrap();
    let via_b = b.read_final_answer(&d.target, None, |_| {}).await.unwrap();
    assert_eq!(via_a.text.as_deref(), Some(d.expected.as_str()));
    assert_eq!(via_b.text, via_a.text);
    assert_eq!(via_a.sha256.as_deref(), Some(d.expected_sha256().as_str()));
    assert_eq!(via_b.sha256, via_a.sha256);
    assert_eq!(via_a.first["evidence"], "session_file");

    // Cursors cross gateways: each chunk is asked of the gateway that did not issue the cursor.
    let mut assembled = String::new();
    let mut cursor: Option<String> = None;
    let mut chunks = 0usize;
    loop {
        let c = if chunks.is_multiple_of(2) { &a } else { &b };
        let r = c
            .call(
                "read_final_answer",
                answer_args(&d.target, cursor.as_deref(), SMALL_CHUNK),
            )
            .await
            .unwrap_or_else(|e| panic!("chunk {chunks}: {e}"))
            .structured;
        assert_eq!(r["byteOffset"].as_u64(), Some(assembled.len() as u64));
        assert_eq!(r["sha256"].as_str(), via_a.sha256.as_deref());
        assembled.push_str(r["text"].as_str().unwrap());
        chunks += 1;
        if r["eof"] == json!(true) {
            break;
        }
        assert!(chunks < MAX_CHUNKS, "the answer did not end");
        cursor = Some(r["nextCursor"].as_str().unwrap().to_owned());
    }
    assert_eq!(assembled, d.expected);
    assert!(
        chunks >= 3,
        "hand-overs both ways (A→B and B→A) need 3 chunks, got {chunks}"
    );

    // The same cursor from A gives the same next chunk through either gateway.
    let first = a
        .call(
            "read_final_answer",
            answer_args(&d.target, None, SMALL_CHUNK),
        )
        .await
        .unwrap()
        .structured;
    let next = first["nextCursor"].as_str().unwrap();
    let on_a = a
        .call(
            "read_final_answer",
            answer_args(&d.target, Some(next), SMALL_CHUNK),
        )
        .await
        .unwrap()
        .structured;
    let on_b = b
        .call(
            "read_final_answer",
            answer_args(&d.target, Some(next), SMALL_CHUNK),
        )
        .await
        .unwrap()
        .structured;
    assert_eq!(on_b["byteOffset"], first["bytes"]);
    assert_eq!(on_b["text"], on_a["text"]);
    assert_eq!(
        on_b["nextCursor"].is_string(),
        on_a["nextCursor"].is_string()
    );

    // Every gateway needs the shared gate-keys: the read key is also a known secret, sealed under
    // it, and a gateway that cannot open a known secret serves nothing rather than leak it.
    let c = Client::connect(stranger_url, &d.key).await.unwrap();
    assert_eq!(
        refusal_code(
            c.call(
                "read_final_answer",
                answer_args(&d.target, None, SMALL_CHUNK)
            )
            .await
        ),
        "unavailable"
    );
    c.close().await;

    // Revoked by a third process (the owner's CLI): the very next call through either gateway is
    // refused, with no restart and nothing cached.
    for c in [&a, &b] {
        c.call(
            "read_final_answer",
            answer_args(&d.target, None, SMALL_CHUNK),
        )
        .await
        .unwrap();
    }
    let owner_home = d.dir.path().join("owner-home");
    let out = ok(runread(
        &owner_home,
        "owner-laptop",
        &d.db.url,
        &["grant", "revoke", &d.grant_id],
    ));
    assert!(out.contains("revoked"), "{out}");
    assert_eq!(
        refusal_code(
            b.call(
                "read_final_answer",
                answer_args(&d.target, None, SMALL_CHUNK)
            )
            .await
        ),
        "grant_revoked"
    );
    assert_eq!(
        refusal_code(
            a.call(
                "read_final_answer",
                answer_args(&d.target, Some(next), SMALL_CHUNK)
            )
            .await
        ),
        "grant_revoked",
        "a cursor issued before the revocation does not outlive it"
    );
    for c in [&a, &b] {
        assert_eq!(
            refusal_code(c.call("list_granted_targets", json!({})).await),
            "grant_revoked"
        );
        // The catalog stays whole; every call is refused with the grant's end.
        assert_eq!(
            c.tool_names().await.unwrap().len(),
            runread_service::tools::ALL.len()
        );
    }
    a.close().await;
    b.close().await;
}

/// Raw MCP over HTTP, so that every refusal's code is seen exactly, wherever it is raised: the
/// key layer (HTTP status with a JSON-RPC error, `data.code`) or the gate (a tool result with
/// `isError` and `{"code": …}`).
struct Raw {
    http: reqwest::Client,
    ids: AtomicU64,
}

impl Raw {
    fn new() -> Raw {
        Raw {
            http: reqwest::Client::builder()
                .timeout(CALL_GUARD)
                .build()
                .unwrap(),
            ids: AtomicU64::new(1),
        }
    }

    /// One `tools/call` of `read_final_answer`: its structured content, or the refusal's code
    /// (anything that is not a fixed code is described, so it can never pass for one).
    async fn call(&self, url: &str, key: &str, args: Value) -> Result<Value, String> {
        self.call_tool(url, key, "read_final_answer", args).await
    }

    /// One `tools/call` of `tool`, as [`Raw::call`].
    async fn call_tool(
        &self,
        url: &str,
        key: &str,
        tool: &str,
        args: Value,
    ) -> Result<Value, String> {
        // A fresh JSON-RPC id per call: each is a new start record, not a replay of an old one.
        let id = self.ids.fetch_add(1, Ordering::SeqCst);
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": args,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {}
                }
            }
        });
        let resp = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .header("x-runread-key", key)
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| format!("transport error: {e}"))?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| format!("transport error reading the body: {e}"))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|_| format!("HTTP {status} with a body that is not JSON: {text}"))?;
        if let Some(code) = v["error"]["data"]["code"].as_str() {
            return Err(code.to_owned());
        }
        if status != 200 || !v["error"].is_null() {
            return Err(format!("HTTP {status} without a fixed code: {text}"));
        }
        let result = &v["result"];
        if result["isError"] == json!(true) {
            let inner: Value =
                serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or(""))
                    .unwrap_or(Value::Null);
            return Err(inner["code"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("a refusal without a code: {text}")));
        }
        Ok(result["structuredContent"].clone())
    }

    /// The whole answer, chunk by chunk, each chunk checked to follow the last and the whole
    /// against its announced sha256. `Err`: the first refusal (or contract break, described).
    async fn read_whole(&self, url: &str, key: &str, target: &Value) -> Result<String, String> {
        let mut text = String::new();
        let mut cursor: Option<String> = None;
        let mut sha256: Option<Value> = None;
        for _ in 0..MAX_CHUNKS {
            let r = self
                .call(
                    url,
                    key,
                    answer_args(target, cursor.as_deref(), LARGE_CHUNK),
                )
                .await?;
            if r["readable"] != json!(true) || r["state"] != "available" {
                return Err(format!("not readable: {r}"));
            }
            if *sha256.get_or_insert_with(|| r["sha256"].clone()) != r["sha256"] {
                return Err("the answer's sha256 changed between chunks".into());
            }
            if r["byteOffset"].as_u64() != Some(text.len() as u64) {
                return Err(format!("chunk at the wrong offset: {}", r["byteOffset"]));
            }
            text.push_str(r["text"].as_str().unwrap_or(""));
            if r["eof"] == json!(true) {
                if r["sha256"].as_str() != Some(runread_core::sha256_hex(text.as_bytes()).as_str())
                {
                    return Err("sha256 of the whole answer does not match".into());
                }
                return Ok(text);
            }
            cursor = r["nextCursor"].as_str().map(str::to_owned);
        }
        Err("the answer did not end".into())
    }
}

#[derive(Default)]
struct Tally {
    answers: u64,
    unavailable: u64,
    /// Every failure that was not `unavailable`, described.
    other: Vec<String>,
    /// Answers that differed from what the agent wrote.
    wrong: u64,
}

on_both_servers!(
    killing_the_database_mid_load_gives_only_unavailable_and_no_wrong_answer,
    over_tls_killing_the_database_mid_load_gives_only_unavailable_and_no_wrong_answer,
    killing_mid_load
);

fn killing_mid_load(server: &Server) {
    let mut d = Deployment::start(server);
    // Made here: the admin client drives a runtime of its own and must not start inside one.
    let admin = server.admin();
    runtime().block_on(load_while_killing_backends(&d, admin));
    d.assert_gateways_healthy();
}

async fn load_while_killing_backends(d: &Deployment, mut admin: postgres::Client) {
    let raw = Arc::new(Raw::new());
    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = Arc::new(AtomicBool::new(false));

    // Both gateways serve before anything is killed.
    both_answer(&raw, d).await;

    let mut tasks = Vec::new();
    for g in &d.gateways {
        for _ in 0..LOAD_TASKS_PER_GATEWAY {
            let (raw, tally, stop) = (raw.clone(), tally.clone(), stop.clone());
            let (url, key, target, expected) = (
                g.url.clone(),
                d.key.clone(),
                d.target.clone(),
                d.expected.clone(),
            );
            tasks.push(tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let outcome = raw.read_whole(&url, &key, &target).await;
                    let mut t = tally.lock().unwrap();
                    match outcome {
                        Ok(text) if text == expected => t.answers += 1,
                        Ok(_) => t.wrong += 1,
                        Err(code) if code == "unavailable" => t.unavailable += 1,
                        Err(other) => t.other.push(format!("{url}: {other}")),
                    }
                }
            }));
        }
    }

    // Kill every backend of the database, again and again, while the load runs.
    let db_name = d.db.name.clone();
    // On a thread of its own: the admin client must not run on the runtime's threads.
    let killer = std::thread::spawn(move || {
        let mut killed = 0i64;
        for _ in 0..KILL_ROUNDS {
            killed += terminate_backends(&mut admin, &db_name);
            std::thread::sleep(KILL_PAUSE);
        }
        killed
    });
    let killed = tokio::task::spawn_blocking(move || killer.join().unwrap())
        .await
        .unwrap();
    stop.store(true, Ordering::SeqCst);
    tokio::time::timeout(LOAD_GUARD, async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("the load tasks hung");

    // Every task has ended: the tally is final.
    let t = std::mem::take(&mut *tally.lock().unwrap());
    eprintln!(
        "{killed} backends terminated; {} whole answers, {} refused unavailable",
        t.answers, t.unavailable
    );
    assert!(killed > 0, "no backend of the gateways was terminated");
    assert!(
        t.other.is_empty(),
        "failures other than `unavailable`: {:#?}",
        t.other
    );
    assert_eq!(t.wrong, 0, "answers that differ from what the agent wrote");
    assert!(t.answers > 0, "no answer was served around the kills");

    // Nothing needs restarting: the next call through each gateway answers.
    both_answer(&raw, d).await;
}

/// Every gateway serves the whole answer, byte-identical.
async fn both_answer(raw: &Raw, d: &Deployment) {
    for g in &d.gateways {
        assert_eq!(
            raw.read_whole(&g.url, &d.key, &d.target).await.unwrap(),
            d.expected
        );
    }
}

on_both_servers!(
    an_unreachable_database_is_refused_unavailable_never_served_from_a_cache,
    over_tls_an_unreachable_database_is_refused_unavailable_never_served_from_a_cache,
    unreachable_database
);

fn unreachable_database(server: &Server) {
    let mut d = Deployment::start(server);
    let rt = runtime();
    let raw = Raw::new();
    rt.block_on(both_answer(&raw, &d));

    // The database stops accepting connections (for every role, superusers too) and every open
    // one is cut: the shared server itself keeps running for the other tests.
    let mut admin = server.admin();
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {} ALLOW_CONNECTIONS false",
            d.db.name
        ))
        .unwrap();
    terminate_backends(&mut admin, &d.db.name);
    rt.block_on(async {
        for g in &d.gateways {
            // The very request just answered is now refused: no cached grant, no cached answer.
            for _ in 0..2 {
                assert_eq!(
                    raw.call(&g.url, &d.key, answer_args(&d.target, None, LARGE_CHUNK))
                        .await
                        .unwrap_err(),
                    "unavailable"
                );
            }
        }
    });
    // The owner cannot revoke meanwhile either: the CLI fails instead of pretending.
    let out = runread(
        &d.dir.path().join("owner-home"),
        "owner-laptop",
        &d.db.url,
        &["grant", "revoke", &d.grant_id],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains(&d.db.url) && !err.contains("panicked"),
        "{err}"
    );

    // A gateway that cannot reach its database at start does not start.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("postgres://postgres@{}/runread", dead.local_addr().unwrap());
    drop(dead);
    let out = runread(
        &d.dir.path().join("lonely-gateway"),
        GATEWAY_HOST,
        &dead_url,
        &["serve", "--listen", "127.0.0.1:0"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot open the PostgreSQL store"), "{err}");
    assert!(
        !err.contains(&dead_url) && !err.contains("panicked"),
        "{err}"
    );

    // The database returns: the next call answers, with nothing restarted.
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {} ALLOW_CONNECTIONS true",
            d.db.name
        ))
        .unwrap();
    rt.block_on(both_answer(&raw, &d));
    d.assert_gateways_healthy();
}

/// Where a fixture session is placed for a second agent host.
fn place(dir: &Path, fixture: &str, workspace: &Path) -> PathBuf {
    let src = runread_testkit::fixture_session(fixture);
    let dst = dir.join(src.file_name().unwrap());
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        &dst,
        runread_testkit::relocated(&std::fs::read(&src).unwrap(), workspace.to_str().unwrap()),
    )
    .unwrap();
    runread_testkit::set_age(&dst, SETTLED);
    dst
}

on_both_servers!(
    a_session_another_host_ingested_is_skipped_and_the_hosts_own_sessions_still_go_in,
    over_tls_a_session_another_host_ingested_is_skipped_and_the_hosts_own_sessions_still_go_in,
    another_hosts_session
);

fn another_hosts_session(server: &Server) {
    let db = server.fresh_db();
    let dir = tempfile::tempdir().unwrap();
    let ws_a = dir.path().join("ws-a");
    let ws_b = dir.path().join("ws-b");
    for w in [&ws_a, &ws_b] {
        std::fs::create_dir_all(w).unwrap();
    }
    let (ws_a, ws_b) = (
        std::fs::canonicalize(ws_a).unwrap(),
        std::fs::canonicalize(ws_b).unwrap(),
    );
    let (home_a, home_b) = (dir.path().join("home-a"), dir.path().join("home-b"));
    let (sessions_a, sessions_b) = (dir.path().join("sessions-a"), dir.path().join("sessions-b"));

    // Host A ingests the sample session.
    let on_a = place(&sessions_a, "sample", &ws_a);
    ok(runread(
        &home_a,
        "host-a",
        &db.url,
        &["workspace", "add", ws_a.to_str().unwrap()],
    ));
    ok(runread(
        &home_a,
        "host-a",
        &db.url,
        &["ingest", "--pi", sessions_a.to_str().unwrap()],
    ));
    // Host B holds a copy of that session (same session id; A's file is not on B's disk, as on
    // another machine) next to a session of its own.
    place(&sessions_b, "sample", &ws_b);
    place(&sessions_b, "multi-run", &ws_b);
    std::fs::remove_file(&on_a).unwrap();
    ok(runread(
        &home_b,
        "host-b",
        &db.url,
        &["workspace", "add", ws_b.to_str().unwrap()],
    ));
    let out = ok(runread(
        &home_b,
        "host-b",
        &db.url,
        &["ingest", "--pi", sessions_b.to_str().unwrap()],
    ));
    assert!(out.contains("session id already ingested"), "{out}");
    assert!(out.contains("2 files: 1 new or re-read"), "{out}");
    assert!(
        out.contains("; 3 runs"),
        "only B's own session's runs: {out}"
    );

    // The store holds A's session as A ingested it (not taken over), and B's own session.
    let store = runread_store::postgres::PostgresStore::connect_as(&db.url, "a-gateway").unwrap();
    let header_id = |p: &Path| -> String {
        let text = std::fs::read_to_string(p).unwrap();
        let v: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        v["id"].as_str().unwrap().to_owned()
    };
    let sample = store
        .session(&header_id(&runread_testkit::fixture_session("sample")))
        .unwrap()
        .unwrap();
    assert_eq!(sample.path, on_a.to_str().unwrap());
    assert_eq!(sample.generation, 1);
    let own = header_id(&runread_testkit::fixture_session("multi-run"));
    assert!(store.session(&own).unwrap().is_some());
    assert_eq!(
        store
            .runs()
            .unwrap()
            .iter()
            .filter(|r| r.target.session_id == own)
            .count(),
        3
    );
}

#[test]
fn a_gateway_with_the_shared_key_file_serves_grants_made_elsewhere_and_one_without_says_which_key_it_lacks()
 {
    let mut d = Deployment::start(&Server::Shared);
    let owner_home = d.dir.path().join("gateway-home");
    let secret = d.dir.path().join("mounted").join("runread-gate-keys");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();

    // The owner exports the home's keys: ids listed, never the bytes.
    let exported = ok(runread(
        &owner_home,
        GATEWAY_HOST,
        &d.db.url,
        &["keys", "export", secret.to_str().unwrap()],
    ));
    let home_file = std::fs::read_to_string(owner_home.join("gate-keys")).unwrap();
    let (owner_id, owner_hex) = home_file.trim().split_once(' ').unwrap();
    assert!(exported.contains(owner_id), "{exported}");
    assert!(!exported.contains(owner_hex), "a key's bytes were printed");
    assert_eq!(
        std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The environment names the same file as the flag.
    let listed = pgtls::runread(&d.dir.path().join("env-home"), &d.db.url)
        .env("RUNREAD_GATE_KEYS_FILE", &secret)
        .args(["keys", "list"])
        .output()
        .unwrap();
    assert!(
        ok(listed).contains(&format!("{owner_id}  (current)")),
        "the file's ids"
    );

    // A gateway on an empty home with the mounted file serves the grant made in the owner's home.
    let mut mounted = Gateway::start_with(
        &d.dir.path().join("mounted-home"),
        &d.db.url,
        &["--gate-keys", secret.to_str().unwrap()],
    );
    let raw = Raw::new();
    let rt = runtime();
    assert_eq!(
        rt.block_on(raw.read_whole(&mounted.url, &d.key, &d.target))
            .unwrap(),
        d.expected
    );
    assert!(
        !d.dir.path().join("mounted-home").join("gate-keys").exists(),
        "a named key file is used instead of the home's, which is not made"
    );

    // A gateway whose keys lack the owner's key refuses `unavailable` to the reader, and names
    // the key it lacks in its own log only.
    let stranger_home = d.dir.path().join("stranger-home");
    let mut stranger = Gateway::start(&stranger_home, &d.db.url);
    let refusal = rt
        .block_on(raw.call(
            &stranger.url,
            &d.key,
            answer_args(&d.target, None, LARGE_CHUNK),
        ))
        .unwrap_err();
    assert_eq!(refusal, "unavailable");
    // The log reaches the test through a pipe and a reader thread: it may trail the response.
    let waited = std::time::Instant::now();
    while !stranger.stderr().contains(owner_id) && waited.elapsed() < CALL_GUARD {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        stranger.stderr().contains(owner_id),
        "the log names the missing key {owner_id}: {}",
        stranger.stderr()
    );
    stranger.assert_healthy(&d.db.url);
    drop(stranger);

    // A key file others may read is refused at start, as the home's is.
    let loose = d.dir.path().join("mounted").join("loose");
    std::fs::copy(&secret, &loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = runread(
        &d.dir.path().join("loose-home"),
        GATEWAY_HOST,
        &d.db.url,
        &["--gate-keys", loose.to_str().unwrap(), "keys", "list"],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("readable by others"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Importing the file into the stranger's home: its own key stays, the owner's is added, and
    // the gateway restarted there serves the grant.
    let imported = ok(runread(
        &stranger_home,
        GATEWAY_HOST,
        &d.db.url,
        &["keys", "import", secret.to_str().unwrap()],
    ));
    assert!(
        imported.contains(&format!("added    {owner_id}")),
        "{imported}"
    );
    assert!(!imported.contains(owner_hex), "a key's bytes were printed");
    let mut restarted = Gateway::start(&stranger_home, &d.db.url);
    assert_eq!(
        rt.block_on(raw.read_whole(&restarted.url, &d.key, &d.target))
            .unwrap(),
        d.expected
    );
    restarted.assert_healthy(&d.db.url);
    mounted.assert_healthy(&d.db.url);
    d.assert_gateways_healthy();
}

on_both_servers!(
    a_run_shared_on_its_agent_host_is_read_through_a_gateway_that_cannot_see_its_file,
    over_tls_a_run_shared_on_its_agent_host_is_read_through_a_gateway_that_cannot_see_its_file,
    shared_across_hosts
);

/// Host A ingests a real Pi session and shares a run (sealing its snapshot); gateway B — its own
/// home with A's gate keys mounted, on a disk where A's session folder is not — serves the run
/// from the snapshot, byte for byte; A's revocation refuses on B from the next call, and the
/// snapshot is gone.
fn shared_across_hosts(server: &Server) {
    let db = server.fresh_db();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws-a");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = std::fs::canonicalize(ws).unwrap();
    let (home_a, home_b) = (dir.path().join("home-a"), dir.path().join("home-b"));
    let sessions_a = dir.path().join("sessions-a");
    let session = place(&sessions_a, "sample", &ws);
    ok(runread(
        &home_a,
        AGENT_HOST,
        &db.url,
        &["workspace", "add", ws.to_str().unwrap()],
    ));
    ok(runread(
        &home_a,
        AGENT_HOST,
        &db.url,
        &["ingest", "--pi", sessions_a.to_str().unwrap()],
    ));
    let (run_id, expected) = runread_testkit::agent_runs(&session)
        .into_iter()
        .filter_map(|(id, text, _)| text.map(|t| (id, t)))
        .max_by_key(|(_, t)| t.len())
        .unwrap();
    // The whole database before the run is shared: its index (no text of the run).
    let before = dump(&db.url);
    // The owner shares it on the agent host (its own home, whose keys seal the snapshot).
    let grant = share_with_the_team_assistant(&home_a, &db.url, &run_id);
    assert_eq!(grant["snapshot"]["sealed"], true, "{grant}");
    let listed: Value = serde_json::from_str(&ok(runread(
        &home_a,
        AGENT_HOST,
        &db.url,
        &["snapshots", "--json"],
    )))
    .unwrap();
    let (log, listed) = (&listed["log"], &listed["snapshots"]);
    assert_eq!(log[0]["event"], "sealed", "{log}");
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["runId"], run_id.as_str());
    assert_eq!(listed[0]["grants"][0]["to"], "team-assistant");
    assert_no_plaintext_added(&before, &dump(&db.url), &expected);
    assert_eq!(listed[0]["standing"], "ok");

    // B cannot see A's session folder (here: it is moved away, as on another machine).
    std::fs::rename(&sessions_a, dir.path().join("not-on-b")).unwrap();
    let keys_a = home_a.join("gate-keys");
    let gateway = Gateway::start_with(&home_b, &db.url, &["--gate-keys", keys_a.to_str().unwrap()]);
    let (key, target) = (grant["key"].as_str().unwrap(), &grant["target"]);
    let raw = Raw::new();
    let rt = runtime();
    assert_eq!(
        rt.block_on(raw.read_whole(&gateway.url, key, target))
            .unwrap(),
        expected
    );
    let first = rt
        .block_on(raw.call(&gateway.url, key, answer_args(target, None, LARGE_CHUNK)))
        .unwrap();
    assert_eq!(first["evidence"], "snapshot", "{first}");

    // Revoked on A: refused on B from the next call, and the snapshot destroyed with it.
    let grant_id = grant["grantId"].as_str().unwrap();
    ok(runread(
        &home_a,
        AGENT_HOST,
        &db.url,
        &["grant", "revoke", grant_id],
    ));
    assert_eq!(
        rt.block_on(raw.call(&gateway.url, key, answer_args(target, None, LARGE_CHUNK)))
            .unwrap_err(),
        "grant_revoked"
    );
    let store = runread_store::postgres::PostgresStore::connect_as(&db.url, "a-gateway").unwrap();
    assert!(store.snapshots().unwrap().is_empty());
    assert_eq!(store.snapshot_log(1).unwrap()[0].event, "destroyed");
}

/// A dump of the whole database's rows (`pg_dump --data-only`).
fn dump(url: &str) -> Vec<u8> {
    let dump = std::process::Command::new("pg_dump")
        .args(["--data-only", "--dbname", url])
        .output()
        .expect("pg_dump (PostgreSQL's client tools)");
    assert!(
        dump.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&dump.stderr)
    );
    dump.stdout
}

/// Sharing added no 8-byte piece of `text` to the database, as text or as a `bytea`'s hex: every
/// piece in the dump `after` was already in the dump `before` (the index alone, which holds no text
/// of the run; a piece there is a word the store's own vocabulary shares with the run, like
/// "complete").
fn assert_no_plaintext_added(before: &[u8], after: &[u8], text: &str) {
    assert!(
        String::from_utf8_lossy(after).contains("COPY public.snapshots"),
        "the dump holds the snapshots table"
    );
    let windows = |d: &[u8], n: usize| -> std::collections::HashSet<Vec<u8>> {
        d.windows(n).map(<[u8]>::to_vec).collect()
    };
    let (raw_before, hex_before) = (windows(before, 8), windows(before, 16));
    let (raw_after, hex_after) = (windows(after, 8), windows(after, 16));
    for piece in text.as_bytes().windows(8) {
        let as_hex: Vec<u8> = piece
            .iter()
            .flat_map(|b| format!("{b:02x}").into_bytes())
            .collect();
        assert!(
            raw_before.contains(piece) || !raw_after.contains(piece),
            "sharing put plaintext of the run in the database: {:?}",
            String::from_utf8_lossy(piece)
        );
        assert!(
            hex_before.contains(&as_hex) || !hex_after.contains(&as_hex),
            "sharing put plaintext of the run in a bytea: {:?}",
            String::from_utf8_lossy(piece)
        );
    }
}

/// Sessions whose last line is their last run's answer: one round each.
const SETTLE_ROUNDS: [&str; 3] = ["sample", "multi-run", "secrets-leaks"];
/// Longest one round may take, from the run's end to the read after `settled` (a hang guard).
const SETTLE_GUARD: Duration = Duration::from_secs(90);

/// Issue 50: two gateways on one PostgreSQL store. The agent host's gateway (`serve --watch`)
/// sees the session file; the other sees only the snapshots it seals. The agent writes a run's
/// end while a reader waits on the other gateway: `wait_for_run` may say `settled` only once a
/// `read_final_answer` right after returns the whole answer. Before the fix, the other gateway was
/// woken by the ingest's commit, judged the answer `unknown` on the snapshot not yet sealed again,
/// and called that settled.
#[test]
fn a_waiter_on_another_gateway_is_told_settled_only_when_its_next_read_returns_the_answer() {
    let db = Server::Shared.fresh_db();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let (sessions, empty) = (dir.path().join("pi-sessions"), dir.path().join("empty"));
    for d in [&ws, &sessions, &empty] {
        std::fs::create_dir_all(d).unwrap();
    }
    let ws = std::fs::canonicalize(ws).unwrap();
    let (home_a, home_b) = (dir.path().join("home-a"), dir.path().join("home-b"));
    ok(runread(
        &home_a,
        AGENT_HOST,
        &db.url,
        &["workspace", "add", ws.to_str().unwrap()],
    ));
    let mut watching = Gateway::watching(&home_a, &db.url, &sessions, &empty);
    let mut elsewhere = Gateway::elsewhere(&home_b, &db.url, &home_a.join("gate-keys"), &sessions);
    let (raw, rt) = (Raw::new(), runtime());
    let mut unsettled_answers = 0;
    // The reader's key, printed when its first run is shared.
    let mut key = None::<String>;
    for fixture in SETTLE_ROUNDS {
        // The agent has written all but its last run's answer.
        let src = runread_testkit::fixture_session(fixture);
        let whole = runread_testkit::relocated(&std::fs::read(&src).unwrap(), ws.to_str().unwrap());
        let (head, tail) = runread_testkit::without_last_line(&whole);
        let session = sessions.join(src.file_name().unwrap());
        std::fs::write(&session, head).unwrap();
        let (run_id, expected) = runread_testkit::agent_runs(&src)
            .into_iter()
            .rev()
            .find_map(|(id, text, _)| text.map(|t| (id, t)))
            .unwrap();
        let grant = share_running(&home_a, &db.url, &run_id);
        let key = &*key.get_or_insert_with(|| grant["key"].as_str().unwrap().to_owned());
        let target = &grant["target"];
        let wait = |after: Option<u64>, timeout: u64| {
            let mut args = json!({"target": target, "timeoutSeconds": timeout});
            if let Some(seen) = after {
                args["afterSequence"] = json!(seen);
            }
            rt.block_on(raw.call_tool(&elsewhere.url, key, "wait_for_run", args))
                .unwrap()
        };
        let first = wait(None, 1);
        assert_eq!(first["found"], true, "{fixture}: {first}");
        assert_eq!(first["settled"], false, "{fixture}: still running: {first}");
        // The agent writes the run's end; the agent host's gateway ingests it and seals the
        // run's snapshot again.
        runread_testkit::Env::append(&session, tail);
        let started = std::time::Instant::now();
        let mut seen = first["eventSequence"].as_u64();
        let answered = loop {
            assert!(started.elapsed() < SETTLE_GUARD, "{fixture}: never settled");
            let r = wait(seen, 30);
            if r["settled"] == true {
                // The read right after: what it always will return.
                break rt
                    .block_on(raw.read_whole(&elsewhere.url, key, target))
                    .map_err(|e| format!("{e}\nafter the wait said: {r}"));
            }
            unsettled_answers += usize::from(r["changed"] == true);
            seen = r["eventSequence"].as_u64();
        };
        assert_eq!(answered.as_deref(), Ok(expected.as_str()), "{fixture}");
        let read = rt
            .block_on(raw.call(&elsewhere.url, key, answer_args(target, None, LARGE_CHUNK)))
            .unwrap();
        assert_eq!(read["evidence"], "snapshot", "{fixture}: {read}");
    }
    eprintln!("waits answered before settled: {unsettled_answers}");
    watching.assert_healthy(&db.url);
    elsewhere.assert_healthy(&db.url);
}

/// The agent host's owner shares a running run with `team-assistant` for `status` and
/// `final_answer` once its gateway has ingested it: `grant --json`'s output.
fn share_running(home: &Path, url: &str, run_id: &str) -> Value {
    let args = [
        "grant",
        "--run",
        run_id,
        "--features",
        "status,final_answer",
        "--expires",
        "15m",
        "--to",
        "team-assistant",
        "--json",
    ];
    let started = std::time::Instant::now();
    loop {
        let out = runread(home, AGENT_HOST, url, &args);
        if out.status.success() {
            return serde_json::from_slice(&out.stdout).unwrap();
        }
        // Not ingested yet: the watcher's pass is on its way.
        assert!(
            started.elapsed() < START_GUARD,
            "the run was never ingested: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
