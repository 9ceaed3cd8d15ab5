//! `runread-bench`: measurements that compare side by side in one run, as ratios. Benchmarks live
//! here, apart from the tests; nothing here asserts a time. `scripts/bench` drives the whole run
//! (peers, load generator, BENCHMARKS.md); the subcommands below are its Rust parts.
//!
//! - `gate`: the gate's cost (below).
//! - `echo-server`: the stock rmcp echo peer ([`echo`]).
//! - `durable-echo-server`: the same echo plus exactly the gate's durable writes per call
//!   ([`durable`]): the limit durability sets.
//! - `artifact-record`: runread's results for an artifact's calls, for the durable echo ([`artifact`]).
//! - `static-server`: the plain-HTTP download peer ([`statics`]).
//! - `artifact`: artifact transfer, runread's client against a plain GET ([`artifact`]).
//! - `ingest`: ingest of one session file into a fresh durable store ([`ingest`]).
//! - `redact`: masking with 1,000 known secrets ([`redact`]).
//! - `ready`: time to the first answered `server/discover`, and idle RSS ([`ready`]).
//! - `json-pass`, `stat-pass`: the bare references for ingest and re-ingest ([`passes`]).
//! - `select-page`: a page of runs straight from the SQLite store ([`page`]).
//! - `wake`: `wait_for_run`'s wake-up latency, by change feed, `NOTIFY` and re-check ([`wake`]).
//! - `snapshot`: a read from a shared run's snapshot beside the same read from its file ([`snapshot`]).
//! - `growth`: the store's bytes per gated call, and what a polling reader and the default
//!   retention make of them ([`growth`]).
//!
//! `runread-bench gate [--calls N] [--rounds R]`: the execution gate's cost per call —
//! `read_final_answer` through the whole service (admission, gate, re-check, label) with the
//! start records and receipts durable in a SQLite file (synchronous=FULL), against the same with
//! the store in memory (a measurement, not a product mode). Rounds interleave A and B; medians.
#![forbid(unsafe_code)]
// A measuring harness: a failed step must abort the measurement loudly, not be worked around.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use runread_store::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use runread_core::Feature;
use runread_service::{Config, KeyContext, Service, tools};

use runread_store::sqlite::SqliteStore;

mod artifact;
mod durable;
mod echo;
mod growth;
mod ingest;
mod page;
mod passes;
mod ready;
mod redact;
mod snapshot;
mod statics;
mod wake;

struct Setup {
    _dir: tempfile::TempDir,
    store: Arc<SqliteStore>,
    svc: Arc<Service>,
    ctx: Arc<KeyContext>,
    target: Value,
}

fn setup(in_memory: bool) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("workspace");
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&ws).expect("mkdir");
    std::fs::create_dir_all(&sessions).expect("mkdir");
    let ws = std::fs::canonicalize(ws).expect("canonical");
    let db = if in_memory {
        Path::new(":memory:").to_path_buf()
    } else {
        dir.path().join("runread.db")
    };
    let store = Arc::new(SqliteStore::open(&db).expect("store"));
    store
        .add_workspace(ws.to_str().expect("utf-8"), "bench", 1)
        .expect("workspace");
    let src = runread_testkit::fixture_session("sample");
    let bytes = runread_testkit::relocated(
        &std::fs::read(src).expect("fixture"),
        ws.to_str().expect("utf-8"),
    );
    let path = sessions.join("s.jsonl");
    std::fs::write(&path, bytes).expect("write");
    runread_testkit::set_age(&path, Duration::from_secs(60));
    runread_ingest::ingest_dir(
        &*store,
        &runread_ingest::AgentDir::new(runread_sessions::Agent::Pi, &sessions),
        runread_core::timefmt::now_ms(),
        |_| {},
    )
    .expect("ingest");
    let run = store
        .runs()
        .expect("runs")
        .into_iter()
        .max_by_key(|r| r.run.final_bytes)
        .expect("a run");
    let now = runread_core::timefmt::now_ms();
    let keys = Arc::new(runread_keys::FileKeys::open(dir.path()).expect("keys"));
    let owner = runread_service::Owner::new(
        store.clone(),
        keys.clone(),
        runread_service::Config::default(),
        Vec::new(),
    );
    let g = owner
        .grant(
            runread_service::owner::GrantRequest {
                run_id: &run.target.run_id,
                session_id: None,
                features: vec![Feature::FinalAnswer],
                expires_at_ms: now + 3_600_000,
                reader: "bench",
                new_reader: runread_service::owner::NewReaderPolicy::Make,
                label: None,
            },
            now,
        )
        .expect("grant");
    let sqlite = store.clone();
    let svc = Arc::new(Service::new(store, keys, measuring()).expect("service"));
    let ctx = Arc::new(
        svc.admit_key(&[g.key.as_deref().expect("a new reader").as_bytes()])
            .expect("key"),
    );
    Setup {
        _dir: dir,
        store: sqlite,
        svc,
        ctx,
        target: serde_json::to_value(&g.grant.target).expect("json"),
    }
}

/// Calls per second for `calls` calls spread over `tasks` concurrent tasks.
fn measure(rt: &tokio::runtime::Runtime, s: &Setup, calls: usize, tasks: usize) -> f64 {
    let start = Instant::now();
    rt.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let svc = s.svc.clone();
                let ctx = s.ctx.clone();
                let args = json!({"target": s.target, "limit": 4096});
                tokio::spawn(async move {
                    for _ in 0..calls / tasks {
                        let out = svc
                            .call(ctx.clone(), tools::READ_FINAL_ANSWER, args.clone(), None)
                            .await
                            .expect("call");
                        assert_eq!(out.labeled.structured["readable"], true);
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.expect("task");
        }
    });
    calls as f64 / start.elapsed().as_secs_f64()
}

/// The service's configuration for a measurement: the bound on calls per reader lifted, or it
/// would be what is measured.
pub(crate) fn measuring() -> Config {
    Config {
        calls_per_minute: u32::MAX,
        ..Config::default()
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn gate(calls: usize, rounds: usize) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let durable = setup(false);
    let memory = setup(true);
    // Warm up both.
    measure(&rt, &durable, 50, 1);
    measure(&rt, &memory, 50, 1);
    println!(
        "gate cost: read_final_answer through the service, {calls} calls per round, {rounds} rounds, medians"
    );
    println!(
        "| concurrency | durable start record (calls/s) | in-memory store (calls/s) | ratio | durable µs/call | in-memory µs/call | durable writes per commit |"
    );
    println!("|---|---|---|---|---|---|---|");
    for tasks in [1, 4] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let (commits_before, writes_before) = durable.store.group_commit_stats();
        for _ in 0..rounds {
            a.push(measure(&rt, &durable, calls, tasks));
            b.push(measure(&rt, &memory, calls, tasks));
        }
        let (commits, writes) = durable.store.group_commit_stats();
        let per_commit = (writes - writes_before) as f64 / (commits - commits_before).max(1) as f64;
        let (a, b) = (median(a), median(b));
        println!(
            "| {tasks} | {a:.0} | {b:.0} | {:.2}× | {:.0} | {:.0} | {per_commit:.2} |",
            a / b,
            1e6 / a,
            1e6 / b
        );
    }
}

/// `hop`: the round trip of one `tokio::task::spawn_blocking` (an empty closure) awaited from a
/// task on the multi-thread runtime `runread serve` uses: what each of a call's hops to the
/// blocking pool costs on this machine, whatever runs in it. Prints µs per hop (median of 5).
fn hop(calls: usize) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut per = Vec::new();
    for _ in 0..6 {
        let start = Instant::now();
        rt.block_on(async {
            tokio::spawn(async move {
                for _ in 0..calls {
                    tokio::task::spawn_blocking(|| std::hint::black_box(1))
                        .await
                        .expect("hop");
                }
            })
            .await
            .expect("task");
        });
        per.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
    }
    per.remove(0); // warm-up
    println!("{}", json!({"us_per_hop": median(per)}));
}

/// Ends the process with the error on stderr and status 1.
fn done(r: Result<(), String>) {
    if let Err(e) = r {
        eprintln!("runread-bench: {e}");
        std::process::exit(1);
    }
}

const USAGE: &str = "usage: runread-bench gate [--calls N] [--rounds R]
       runread-bench echo-server --result FILE [--listen ADDR]
       runread-bench durable-echo-server (--result FILE | --results FILE) --store COPY.db [--as TOOL] [--listen ADDR]
       runread-bench artifact-record --url URL --key-file F --out FILE
       runread-bench static-server --file FILE [--listen ADDR]
       runread-bench artifact --url URL --key-file F --static-url URL --sha256 HEX [--rounds R] [--echo-url URL]
       runread-bench ingest --session FILE [--agent pi|claude|codex] [--repeats N] [--warmup W]
       runread-bench json-pass (--file F | --dir D)... [--sha256] [--repeats N]
       runread-bench stat-pass --dir D... [--repeats N]
       runread-bench select-page --store F [--limit N] [--offset K] [--agent A] [--workspace NAME] [--repeats R] [--summary]
       runread-bench redact [--secrets N] [--mib M] [--repeats R] [--write-dir D [--rg PATH]]
       runread-bench ready --port P [--key K] [--idle-ms MS] -- CMD...
       runread-bench hop [--calls N]
       runread-bench wake [--rounds N] [--pg]
       runread-bench snapshot [--calls N] [--rounds R]
       runread-bench growth [--calls N]";

fn main() {
    let all: Vec<String> = std::env::args().collect();
    let (args, cmd) = match all.iter().position(|a| a == "--") {
        Some(i) => (all[..i].to_vec(), all[i + 1..].to_vec()),
        None => (all.clone(), Vec::new()),
    };
    let flag = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let text = |name: &str| -> Option<String> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let need = |name: &str| -> String {
        text(name).unwrap_or_else(|| {
            eprintln!("missing {name}\n{USAGE}");
            std::process::exit(2);
        })
    };
    let every = |name: &str| -> Vec<String> {
        args.iter()
            .enumerate()
            .filter(|(_, a)| *a == name)
            .filter_map(|(i, _)| args.get(i + 1).cloned())
            .collect()
    };
    let listen = || {
        text("--listen")
            .unwrap_or_else(|| "127.0.0.1:0".into())
            .parse()
            .expect("--listen ADDR")
    };
    match args.get(1).map(String::as_str) {
        Some("gate") => gate(flag("--calls", 2000), flag("--rounds", 5)),
        Some("echo-server") => echo::run(listen(), echo::Results::one(&need("--result")), None),
        Some("durable-echo-server") => {
            let results = match text("--results") {
                Some(f) => echo::Results::by_call(&f),
                None => echo::Results::one(&need("--result")),
            };
            let tool = text("--as").unwrap_or_else(|| "read_final_answer".into());
            let durable = echo::durable(&need("--store"), &tool);
            echo::run(listen(), results, Some(durable))
        }
        Some("artifact-record") => {
            let key = std::fs::read_to_string(need("--key-file")).expect("key file");
            artifact::record(&need("--url"), key.trim(), &need("--out"))
        }
        Some("static-server") => statics::run(listen(), need("--file")),
        Some("artifact") => {
            let key = std::fs::read_to_string(need("--key-file")).expect("key file");
            artifact::run(
                &need("--url"),
                key.trim(),
                &need("--static-url"),
                &need("--sha256"),
                flag("--rounds", 5),
                text("--echo-url").as_deref(),
            )
        }
        Some("ingest") => done(
            agent(&text("--agent").unwrap_or_else(|| "pi".into())).and_then(|agent| {
                ingest::run(
                    &need("--session"),
                    agent,
                    flag("--repeats", 3),
                    flag("--warmup", 1),
                )
            }),
        ),
        Some("json-pass") => done(passes::json_pass(
            &every("--file"),
            &every("--dir"),
            args.iter().any(|a| a == "--sha256"),
            flag("--repeats", 1),
        )),
        Some("stat-pass") => done(passes::stat_pass(&every("--dir"), flag("--repeats", 1))),
        Some("select-page") => {
            let (agent, workspace) = (text("--agent"), text("--workspace"));
            done(page::run(
                &page::Page {
                    store: &need("--store"),
                    limit: flag("--limit", 50),
                    offset: flag("--offset", 0),
                    agent: agent.as_deref(),
                    workspace: workspace.as_deref(),
                },
                flag("--repeats", 1),
                args.iter().any(|a| a == "--summary"),
            ))
        }
        Some("redact") => {
            let (dir, rg) = (text("--write-dir"), text("--rg"));
            done(redact::run(
                flag("--secrets", 1000),
                flag("--mib", 64),
                flag("--repeats", 5),
                dir.as_deref().map(|dir| redact::Rg {
                    dir,
                    rg: rg.as_deref(),
                }),
            ))
        }
        Some("ready") if !cmd.is_empty() => ready::run(
            flag("--port", 0) as u16,
            &text("--key").unwrap_or_default(),
            flag("--idle-ms", 2000) as u64,
            &cmd,
        ),
        Some("hop") => hop(flag("--calls", 20000)),
        Some("snapshot") => done(snapshot::run(flag("--calls", 50), flag("--rounds", 5))),
        Some("growth") => growth::run(&setup(false), flag("--calls", 20_000)),
        Some("wake") => done(wake::run(
            flag("--rounds", 20),
            args.iter().any(|a| a == "--pg"),
        )),
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    }
}

/// `--agent`: pi, claude or codex.
fn agent(name: &str) -> Result<runread_sessions::Agent, String> {
    runread_sessions::Agent::parse(name)
        .ok_or_else(|| format!("unknown agent {name:?} (pi, claude or codex)"))
}
