//! Supervised runs with the real agent: Pi 0.73.1 (installed by the harness on first use) driven
//! through `runread run` against the scripted model server, then read through the service as a
//! reader would. Each test is one behavior of supervised evidence as the README describes it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use runread_testkit::free_port;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use runread_core::{ErrorCode, Feature};
use runread_journal::Journal;
use runread_service::{Config, KeyContext, Service, tools};
use runread_store::sqlite::SqliteStore;
use runread_store::{Foreground, Proof, RunRecord, SupervisedRun};

/// Reads made so far (each under a reader of its own).
static READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Longest any wait here may take before the test fails (a hang guard, not a timing claim).
const HANG_GUARD: Duration = Duration::from_secs(90);
/// Reads of a live run refused `target_changed` before one is answered: far more than the
/// ingests one run's first messages cause (one per message).
const LIVE_READ_ATTEMPTS: u32 = 50;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The harness's pinned Pi: installed once per machine, its npm `pi` link.
fn pi() -> &'static Path {
    static PI: OnceLock<PathBuf> = OnceLock::new();
    PI.get_or_init(|| {
        let out = Command::new("python3")
            .arg(repo().join("fixtures/pi/tools/ensure-pi.py"))
            .stderr(Stdio::inherit())
            .output()
            .expect("python3");
        assert!(out.status.success(), "installing Pi failed");
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < HANG_GUARD, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One scripted model server, one agent configuration, one runread home, one workspace.
struct Live {
    dir: tempfile::TempDir,
    mock: Child,
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.mock.kill();
        let _ = self.mock.wait();
    }
}

impl Live {
    fn start(responses: Value) -> Live {
        let _ = pi();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["ws", "agent", "sessions", "home"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("ws/README.md"), "# demo\nA tiny project.\n").unwrap();
        let port = free_port();
        std::fs::write(
            root.join("agent/models.json"),
            json!({"providers": {"mock": {
                "baseUrl": format!("http://127.0.0.1:{port}/v1"), "api": "openai-completions",
                "apiKey": "mock", "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                "models": [{"id": "mock-1"}]}}})
            .to_string(),
        )
        .unwrap();
        // Retries as Pi does them, with short delays, and no hidden SDK-level retries.
        std::fs::write(
            root.join("agent/settings.json"),
            json!({"retry": {"enabled": true, "maxRetries": 2, "baseDelayMs": 20,
                             "provider": {"maxRetries": 0}}})
            .to_string(),
        )
        .unwrap();
        let scenario = root.join("scenario.json");
        std::fs::write(&scenario, json!({"responses": responses}).to_string()).unwrap();
        let mock = Command::new("python3")
            .arg(repo().join("fixtures/pi/tools/mockllm.py"))
            .arg(&scenario)
            .arg(port.to_string())
            .spawn()
            .unwrap();
        wait_for("the model server", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Live { dir, mock }
    }

    fn path(&self, p: &str) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap().join(p)
    }

    /// `runread run -- pi … -p PROMPT` in the workspace, output captured.
    /// Pi's command line against the scripted model, in this setup's session directory.
    fn pi_command(&self, program: &Path, prompt: &str) -> Command {
        let mut c = Command::new(program);
        c.args(["--provider", "mock", "--model", "mock-1", "--session-dir"])
            .arg(self.path("sessions"))
            .args([
                "--no-extensions",
                "--no-skills",
                "--no-prompt-templates",
                "--no-context-files",
            ])
            .args(["-p", prompt])
            .current_dir(self.path("ws"))
            .env("PI_CODING_AGENT_DIR", self.path("agent"));
        c
    }

    fn run(&self, prompt: &str) -> Child {
        self.run_with(prompt, &[])
    }

    /// [`Live::run`] with `runread run`'s own options (before the `--`).
    fn run_with(&self, prompt: &str, options: &[&str]) -> Child {
        let pi_line = self.pi_command(pi(), prompt);
        Command::new(env!("CARGO_BIN_EXE_runread"))
            .arg("--home")
            .arg(self.path("home"))
            .arg("run")
            .args(options)
            .arg("--")
            .arg(pi_line.get_program())
            .args(pi_line.get_args())
            .current_dir(self.path("ws"))
            .env("PI_CODING_AGENT_DIR", self.path("agent"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn finish(&self, mut child: Child) -> (std::process::ExitStatus, String, String) {
        let mut out = String::new();
        let mut err = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (child.wait().unwrap(), out, err)
    }

    fn store(&self) -> Arc<SqliteStore> {
        Arc::new(SqliteStore::open(&self.path("home/runread.db")).unwrap())
    }

    fn service(&self) -> Arc<Service> {
        let keys = Arc::new(runread_keys::FileKeys::open(&self.path("home")).unwrap());
        let config = Config {
            journal_root: Some(runread_supervise::journal_root(&self.path("home"))),
            ..Config::default()
        };
        Arc::new(Service::new(self.store(), keys, config).unwrap())
    }

    fn journal(&self) -> Journal {
        let store = self.store();
        Journal::at(
            &runread_supervise::journal_root(&self.path("home")),
            store.instance_id(),
        )
    }

    fn only_run(&self) -> RunRecord {
        let runs = self.store().runs().unwrap();
        assert_eq!(runs.len(), 1, "one run expected: {runs:?}");
        runs.into_iter().next().unwrap()
    }

    fn supervised(&self, run: &RunRecord) -> SupervisedRun {
        let t = &run.target;
        self.store()
            .supervised(&t.session_id, t.generation, &t.run_id)
            .unwrap()
            .expect("a supervised record")
    }

    /// Reads `tool` for `run` through the service with a fresh grant of every feature.
    /// [`Live::read`] while the agent still writes the session: the supervisor ingests the file
    /// at each message's end, and a read that overlaps an ingest is read again inside the call;
    /// one that overlapped `TARGET_MOVED_READS_MAX` ingests in a row is refused `target_changed`
    /// (the target changed while being read; nothing is returned), which a client reads again.
    /// Pi may write a message's line just after announcing it, so when the last such ingest
    /// lands is not observable from outside; any other refusal is returned at once.
    fn read_live(&self, run: &RunRecord, tool: &str) -> Result<Value, ErrorCode> {
        let mut attempts = 0;
        loop {
            match self.read(run, tool) {
                Err(ErrorCode::TargetChanged) if attempts < LIVE_READ_ATTEMPTS => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    fn read(&self, run: &RunRecord, tool: &str) -> Result<Value, ErrorCode> {
        let svc = self.service();
        let keys = runread_keys::FileKeys::open(&self.path("home")).unwrap();
        let now = runread_core::timefmt::now_ms();
        let owner = runread_service::Owner::new(
            self.store(),
            std::sync::Arc::new(keys),
            runread_service::Config::default(),
            Vec::new(),
        );
        let g = owner
            .grant(
                runread_service::owner::GrantRequest {
                    run_id: &run.target.run_id,
                    session_id: Some(&run.target.session_id),
                    features: vec![
                        Feature::FinalAnswer,
                        Feature::Aggregate,
                        Feature::History,
                        Feature::Status,
                    ],
                    expires_at_ms: now + 600_000,
                    // A reader of its own each time, so each read has a key to show.
                    reader: &format!(
                        "test {}",
                        READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    ),
                    new_reader: runread_service::owner::NewReaderPolicy::Make,
                    label: None,
                },
                now,
            )
            .unwrap();
        let ctx: KeyContext = svc
            .admit_key(&[g.key.as_deref().unwrap().as_bytes()])
            .unwrap();
        self.call(ctx, run, tool)
    }

    /// Calls `tool` for `run` through the service as the reader `ctx` names.
    fn call(&self, ctx: KeyContext, run: &RunRecord, tool: &str) -> Result<Value, ErrorCode> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(
            self.service()
                .call(Arc::new(ctx), tool, json!({"target": run.target}), None),
        )
        .map(|a| a.labeled.structured)
    }
}

fn tool_then(answer: Value) -> Value {
    json!([
        {"text": "Let me look.", "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
        answer
    ])
}

const ANSWER: &str = "The project is **demo** — naïve, tiny, ✓ complete. 🦀";

fn assert_unreadable(fa: &Value, state: &str) {
    assert_eq!(fa["state"], state, "{fa}");
    assert_eq!(fa["readable"], false, "{fa}");
    assert_eq!(fa["text"], Value::Null, "{fa}");
    assert_eq!(fa["sha256"], Value::Null, "{fa}");
    assert_eq!(fa["foregroundFinalConfirmed"], false, "{fa}");
}

#[test]
fn a_normal_run_reads_with_supervised_evidence_and_the_exact_bytes() {
    let live = Live::start(tool_then(json!({"text": ANSWER, "chunks": 3})));
    let (status, stdout, stderr) = live.finish(live.run("What is this project?"));
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains(ANSWER),
        "the answer is rendered for the user: {stdout}"
    );
    assert!(
        stderr.contains("▸ bash: ls"),
        "tool calls are rendered: {stderr}"
    );
    let run = live.only_run();
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_eq!(fa["state"], "available", "{fa}");
    assert_eq!(fa["evidence"], "supervised");
    assert_eq!(fa["foregroundFinalConfirmed"], true);
    assert_eq!(fa["text"], ANSWER);
    assert_eq!(fa["sha256"], runread_core::sha256_hex(ANSWER.as_bytes()));
    assert_eq!(fa["aggregateCompletionConfirmed"], false, "never claimed");
    let Proof::Journaled { journal_name, .. } = live.supervised(&run).proof else {
        panic!("journaled proof expected");
    };
    assert_eq!(live.journal().names(), vec![journal_name]);
    let ws = live.read(&run, tools::READ_WORK_STATE).unwrap();
    assert_eq!(ws["evidence"], "supervised", "{ws}");
    // The status tools name the same evidence as the answer: a supervisor recorded this run.
    for tool in [tools::GET_RUN, tools::WAIT_FOR_RUN] {
        let status = live.read(&run, tool).unwrap();
        assert_eq!(status["origin"], "supervised", "{tool}: {status}");
    }
    assert_eq!(ws["foreground"]["state"], "completed");
    assert_eq!(ws["foreground"]["exit"], "exit:0");
    assert_eq!(ws["aggregate"]["state"], "completed");
    assert_eq!(ws["coverage"]["background"]["state"], "complete");
    assert_eq!(
        ws["completionConfirmed"], false,
        "subagent coverage is never complete"
    );
}

/// `runread run --share`: the run is granted to the reader as its target is pinned, so another
/// process holding only the reader's key (configured before the run started) reads the answer
/// with supervised evidence once the run settles, with no step by the owner in between.
#[test]
fn a_run_shared_as_it_starts_is_read_by_the_readers_key_with_supervised_evidence() {
    let live = Live::start(tool_then(json!({"text": ANSWER, "chunks": 3})));
    let added = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(live.path("home"))
        .args(["reader", "add", "orchestrator", "--json"])
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let added: Value = serde_json::from_slice(&added.stdout).unwrap();
    let key = added["key"].as_str().unwrap().to_owned();
    let (status, stdout, stderr) = live.finish(live.run_with(
        "What is this project?",
        &[
            "--share",
            "orchestrator:final_answer,status:2h",
            "--label",
            "review of PR 42",
        ],
    ));
    assert!(status.success(), "{stderr}");
    let run = live.only_run();
    // Whoever started the run (an orchestrating agent reads its tool's output) gets the exact
    // target on stdout, one JSON line, with the label and the readers.
    let shared: Vec<Value> = stdout
        .lines()
        .filter(|l| l.starts_with("{\"runread\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(shared.len(), 1, "{stdout}");
    assert_eq!(shared[0]["runread"], "shared");
    assert_eq!(shared[0]["label"], "review of PR 42");
    assert_eq!(shared[0]["readers"], serde_json::json!(["orchestrator"]));
    assert_eq!(
        shared[0]["target"],
        serde_json::to_value(&run.target).unwrap()
    );
    assert!(
        stderr.contains(&format!(
            "run {} shared with \"orchestrator\"",
            run.target.run_id
        )),
        "{stderr}"
    );
    // What it says fits what happened: no hint to grant a run already shared, and the snapshot's
    // size once the run holds its answer, not the empty one of its start.
    assert!(!stderr.contains("grant it:"), "{stderr}");
    assert!(stderr.contains("shared with orchestrator"), "{stderr}");
    assert!(!stderr.contains("0 lines, 0 B"), "{stderr}");
    let kept = format!("run {}: sealed for sharing (", run.target.run_id);
    let lines: u64 = stderr
        .split(&kept)
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no snapshot line: {stderr}"));
    assert!(lines > 0, "{stderr}");
    let ctx: KeyContext = live.service().admit_key(&[key.as_bytes()]).unwrap();
    assert_eq!(ctx.live_grants.len(), 1);
    assert_eq!(ctx.live_grants[0].target, run.target);
    assert_eq!(ctx.live_grants[0].label.as_deref(), Some("review of PR 42"));
    let fa = live.call(ctx, &run, tools::READ_FINAL_ANSWER).unwrap();
    assert_eq!(fa["state"], "available", "{fa}");
    assert_eq!(fa["evidence"], "supervised");
    assert_eq!(fa["text"], ANSWER);
}

#[test]
fn a_tool_heavy_run_is_verified_through_a_long_parent_chain() {
    let answer = "Checked five ways: all consistent. «résumé» 日本語 👍";
    let live = Live::start(json!([
        {"text": "Listing.", "tool_calls": [{"name": "bash", "arguments": {"command": "ls -la"}}]},
        {"text": "", "tool_calls": [
            {"name": "read", "arguments": {"path": "README.md"}},
            {"name": "bash", "arguments": {"command": "wc -c README.md"}}]},
        {"text": "Once more.", "tool_calls": [{"name": "bash", "arguments": {"command": "false"}}]},
        {"text": "And again.", "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]},
        {"text": answer}
    ]));
    let (status, _, stderr) = live.finish(live.run("Check it thoroughly."));
    assert!(status.success(), "{stderr}");
    let run = live.only_run();
    assert!(
        run.run.chain_len >= 10,
        "a long chain: {}",
        run.run.chain_len
    );
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_eq!(
        (fa["state"].as_str(), fa["evidence"].as_str()),
        (Some("available"), Some("supervised"))
    );
    assert_eq!(fa["text"], answer);
    assert_eq!(fa["foregroundFinalConfirmed"], true);
}

#[test]
fn a_provider_error_after_retries_is_missing_with_no_text() {
    // No scripted response: every request gets HTTP 500; Pi retries, then gives up.
    let live = Live::start(json!([]));
    let (status, _, stderr) = live.finish(live.run("Hello?"));
    assert!(
        stderr.contains("provider error, retry"),
        "retries are rendered: {stderr}"
    );
    assert!(stderr.contains("no answer"), "{stderr}");
    let _ = status;
    let run = live.only_run();
    assert!(matches!(
        live.supervised(&run).proof,
        Proof::NoAnswer { .. }
    ));
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_unreadable(&fa, "missing");
    assert_eq!(fa["evidence"], "supervised");
    let ws = live.read(&run, tools::READ_WORK_STATE).unwrap();
    assert_eq!(ws["foreground"]["state"], "failed", "{ws}");
    assert!(live.journal().names().is_empty());
}

#[test]
fn a_length_stop_is_readable_and_flagged_truncated() {
    let cut = "Draft changelog: — added é, fixed 日記, and then the model ran out of to";
    let live = Live::start(tool_then(json!({"text": cut, "finish": "length"})));
    let (status, _, stderr) = live.finish(live.run("Write the changelog."));
    assert!(status.success(), "{stderr}");
    let run = live.only_run();
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_eq!(fa["state"], "available", "{fa}");
    assert_eq!(fa["evidence"], "supervised");
    assert_eq!(fa["truncated"], true);
    assert_eq!(fa["text"], cut);
}

/// A slow answer after one fast tool call: the session file exists while the answer streams.
fn slow_answer() -> Value {
    tool_then(json!({"text": "x".repeat(400), "chunks": 40, "chunk_delay_ms": 150}))
}

fn session_file(live: &Live) -> PathBuf {
    let dir = live.path("sessions");
    let mut found = None;
    wait_for("the session file", || {
        found = std::fs::read_dir(&dir).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        });
        found.is_some()
    });
    found.unwrap()
}

/// Waits until the supervisor has recorded the run: the run is in the store with its supervised
/// record. Its later messages (the tool call, the result) may still be being ingested.
fn wait_recorded(live: &Live) -> RunRecord {
    let mut run = None;
    wait_for("the supervised record", || {
        let store = live.store();
        run = store.runs().unwrap().into_iter().next().filter(|r| {
            store
                .supervised(&r.target.session_id, r.target.generation, &r.target.run_id)
                .unwrap()
                .is_some()
        });
        run.is_some()
    });
    run.unwrap()
}

fn signal(pid: u32, sig: &str) {
    assert!(
        Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

/// The agent's process: runread's child.
#[cfg(target_os = "linux")]
fn agent_pid(runread: u32) -> u32 {
    let children =
        std::fs::read_to_string(format!("/proc/{runread}/task/{runread}/children")).unwrap();
    children
        .split_whitespace()
        .next()
        .expect("the agent runs")
        .parse()
        .unwrap()
}

#[test]
fn an_interrupted_run_is_missing_and_cancelled() {
    let live = Live::start(slow_answer());
    let child = live.run("Write a lot.");
    let run = wait_recorded(&live);
    // While it streams: saving, and the work state is live.
    let fa = live.read_live(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_unreadable(&fa, "saving");
    assert_eq!(fa["snapshotLive"], true);
    assert_eq!(fa["overallState"], "running");
    let ws = live.read_live(&run, tools::READ_WORK_STATE).unwrap();
    assert_eq!(ws["live"], true, "{ws}");
    assert!(
        ["running", "waiting", "finishing"].contains(&ws["foreground"]["state"].as_str().unwrap()),
        "{ws}"
    );
    signal(child.id(), "-INT"); // what Ctrl-C sends
    let (status, _, _) = live.finish(child);
    assert!(!status.success());
    let run = live.only_run();
    assert_eq!(live.supervised(&run).foreground, Foreground::Cancelled);
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_unreadable(&fa, "missing");
    let ws = live.read(&run, tools::READ_WORK_STATE).unwrap();
    assert_eq!(ws["foreground"]["state"], "cancelled", "{ws}");
    assert!(live.journal().names().is_empty());
}

// Finds the agent among runread's children through `/proc`.
#[cfg(target_os = "linux")]
#[test]
fn a_run_killed_mid_stream_is_unknown_and_leaves_no_journal_entry() {
    let live = Live::start(slow_answer());
    let child = live.run("Write a lot.");
    wait_recorded(&live);
    signal(agent_pid(child.id()), "-KILL");
    let (status, _, _) = live.finish(child);
    assert_eq!(status.code(), Some(128 + 9));
    let run = live.only_run();
    let rec = live.supervised(&run);
    assert_eq!(rec.foreground, Foreground::Killed);
    assert_eq!(rec.exit.as_deref(), Some("signal:9"));
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_unreadable(&fa, "unknown");
    assert!(live.journal().names().is_empty());
    let leftovers: Vec<_> = std::fs::read_dir(live.journal().dir())
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "nothing half-written: {leftovers:?}");
}

/// Swaps the session file between the agent's events and the verification at its end.
fn swapped_run_is_refused(swap: impl FnOnce(&Path, &Path)) -> (Live, RunRecord) {
    let live = Live::start(tool_then(json!({"text": ANSWER, "delay_ms": 1500})));
    let child = live.run("What is this project?");
    let file = session_file(&live);
    wait_recorded(&live);
    swap(&file, &live.path("elsewhere.jsonl"));
    let (_, _, stderr) = live.finish(child);
    assert!(stderr.contains("not verified"), "{stderr}");
    let run = live.only_run();
    assert!(
        matches!(live.supervised(&run).proof, Proof::Refused { .. }),
        "{:?}",
        live.supervised(&run).proof
    );
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_unreadable(&fa, "unknown");
    assert!(live.journal().names().is_empty());
    (live, run)
}

#[test]
fn a_session_file_swapped_for_a_symlink_is_refused() {
    swapped_run_is_refused(|file, elsewhere| {
        std::fs::copy(file, elsewhere).unwrap();
        std::fs::remove_file(file).unwrap();
        std::os::unix::fs::symlink(elsewhere, file).unwrap();
    });
}

#[test]
fn a_hard_linked_session_file_is_refused() {
    swapped_run_is_refused(|file, elsewhere| std::fs::hard_link(file, elsewhere).unwrap());
}

#[test]
fn a_process_left_behind_keeps_the_aggregate_running_until_it_ends() {
    let live = Live::start(json!([
        {"text": "Starting a server.", "tool_calls": [{"name": "bash",
            "arguments": {"command": "(sleep 3 </dev/null >/dev/null 2>&1 &) ; echo started"}}]},
        {"text": "Started it in the background."}
    ]));
    let child = live.run("Start the server.");
    let mut run = None;
    wait_for("the agent to exit with a process left", || {
        let store = live.store();
        run = store.runs().unwrap().into_iter().next().filter(|r| {
            store
                .supervised(&r.target.session_id, r.target.generation, &r.target.run_id)
                .unwrap()
                .is_some_and(|s| s.foreground == Foreground::Completed && s.background.active > 0)
        });
        run.is_some()
    });
    let run = run.unwrap();
    let ws = live.read(&run, tools::READ_WORK_STATE).unwrap();
    assert_eq!(ws["foreground"]["state"], "completed", "{ws}");
    assert_eq!(
        ws["aggregate"]["state"], "running",
        "not completed while the child lives: {ws}"
    );
    assert!(ws["aggregate"]["runningChildren"].as_u64().unwrap() >= 1);
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_eq!(
        fa["state"], "available",
        "the foreground's answer is readable: {fa}"
    );
    assert_eq!(fa["foregroundFinalConfirmed"], true);
    assert_eq!(fa["relatedChildrenActive"], true);
    assert_eq!(fa["overallState"], "running");
    let (status, _, stderr) = live.finish(child);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("left 1 process"), "{stderr}");
    let ws = live.read(&run, tools::READ_WORK_STATE).unwrap();
    assert_eq!(ws["aggregate"]["state"], "completed", "{ws}");
    assert_eq!(ws["aggregate"]["runningChildren"], 0);
    let fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
    assert_eq!(fa["relatedChildrenActive"], false);
}

#[test]
fn a_command_that_is_no_agent_or_asks_for_another_mode_is_refused_before_anything_runs() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home.path())
        .args(["run", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not an agent runread knows"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home.path())
        .args(["run", "--"])
        .arg(pi())
        .args(["--mode", "rpc"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("drop `--mode rpc`"), "{err}");
}

#[test]
fn watch_follows_a_live_pi_run_from_running_to_settled() {
    let live = Live::start(slow_answer());
    let rr = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_runread"));
        c.arg("--home").arg(live.path("home")).args(args);
        c
    };
    assert!(
        rr(&["workspace", "add", live.path("ws").to_str().unwrap()])
            .status()
            .unwrap()
            .success()
    );
    let mut watch = rr(&[
        "watch",
        "--pi",
        live.path("sessions").to_str().unwrap(),
        "--rescan-secs",
        "30",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // Pi on its own, not supervised: only the session file tells.
    let mut pi_run = live
        .pi_command(pi(), "Write a lot.")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let status_of = || live.store().runs().unwrap().first().map(|r| r.run.status);
    wait_for("the watcher to show the run running", || {
        status_of() == Some(runread_sessions::RunStatus::Running)
    });
    assert!(pi_run.wait().unwrap().success());
    let written = Instant::now();
    wait_for("the watcher to show the run settled", || {
        status_of() == Some(runread_sessions::RunStatus::Completed)
    });
    eprintln!(
        "settled in the store {:?} after Pi exited",
        written.elapsed()
    );
    let run = live.only_run();
    // Passive evidence publishes once the file has been quiet for the settle window.
    let mut fa = Value::Null;
    wait_for("the passive answer", || {
        fa = live.read(&run, tools::READ_FINAL_ANSWER).unwrap();
        fa["state"] == "available"
    });
    assert_eq!(fa["evidence"], "session_file", "passive: {fa}");
    assert_eq!(fa["text"], "x".repeat(400));
    let _ = watch.kill();
    let _ = watch.wait();
}

/// What no log may show of an agent's line: its content.
const UNKNOWN_LINE_SECRET: &str = "sk-ant-api03-unknown-line-secret";

#[test]
fn the_first_event_of_an_unknown_type_is_logged_once_with_the_version_and_nothing_of_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let unknown = json!({"type": "turn_summary", "text": UNKNOWN_LINE_SECRET}).to_string();
    let lines = [
        json!({"type": "system", "subtype": "init", "session_id": "9d0c3e53-8a41-4c57-9d5e-2f0a7b1c6e11",
               "cwd": ws.to_str().unwrap(), "claude_code_version": "2.1.332"})
        .to_string(),
        unknown.clone(),
        unknown,
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "done"}).to_string(),
    ];
    // A stand-in for Claude Code: its `--version` answer, then a stream with two events of a
    // type runread does not know inside the run.
    let claude = dir.path().join("claude");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.1.332 (Claude Code)'; exit 0; fi\ncat <<'EOF'\n{}\nEOF\n",
            lines.join("\n")
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&claude).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&claude, perms).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(&home)
        .args(["run", "--"])
        .arg(&claude)
        .args(["-p", "hello"])
        .current_dir(&ws)
        .env("HOME", dir.path())
        .env_remove("RUNREAD_LOG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let warned: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("sent an event of a type runread does not know"))
        .collect();
    assert_eq!(warned.len(), 1, "{err}");
    for wanted in ["WARN", "Claude Code 2.1.332", "claude", "turn_summary"] {
        assert!(warned[0].contains(wanted), "{wanted} not in {err}");
    }
    let all = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
    assert!(!all.contains(UNKNOWN_LINE_SECRET), "{all}");
}
