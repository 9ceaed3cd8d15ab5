//! `runread-bench`: measurements that compare side by side in one run, as ratios. Benchmarks live
//! here, apart from the tests; nothing here asserts a time.
//!
//! `runread-bench gate [--calls N] [--rounds R]`: the execution gate's cost per call —
//! `read_final_answer` through the whole service (admission, gate, re-check, label) with the
//! start records and receipts durable in a SQLite file (synchronous=FULL), against the same with
//! the store in memory (a measurement, not a product mode). Rounds interleave A and B; medians.
#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use runread_core::Feature;
use runread_service::{Config, KeyContext, Service, tools};
use runread_store::Store;
use runread_store::sqlite::SqliteStore;

struct Setup {
    _dir: tempfile::TempDir,
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
    runread_ingest::ingest_dir(&*store, &sessions, runread_core::timefmt::now_ms(), |_| {})
        .expect("ingest");
    let run = store
        .runs()
        .expect("runs")
        .into_iter()
        .max_by_key(|r| r.run.final_bytes)
        .expect("a run");
    let now = runread_core::timefmt::now_ms();
    let keys = Arc::new(runread_gate::keys::FileKeys::open(dir.path()).expect("keys"));
    let g = runread_service::owner::grant(
        &*store,
        &*keys,
        &run.target.run_id,
        None,
        vec![Feature::FinalAnswer],
        now + 3_600_000,
        "bench",
        now,
    )
    .expect("grant");
    let svc = Arc::new(Service::new(store, keys, Config::default()).expect("service"));
    let ctx = Arc::new(svc.admit_key(&[g.key.as_bytes()]).expect("key"));
    Setup {
        _dir: dir,
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
        "| concurrency | durable start record (calls/s) | in-memory store (calls/s) | ratio | durable µs/call | in-memory µs/call |"
    );
    println!("|---|---|---|---|---|---|");
    for tasks in [1, 4] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            a.push(measure(&rt, &durable, calls, tasks));
            b.push(measure(&rt, &memory, calls, tasks));
        }
        let (a, b) = (median(a), median(b));
        println!(
            "| {tasks} | {a:.0} | {b:.0} | {:.2}× | {:.0} | {:.0} |",
            a / b,
            1e6 / a,
            1e6 / b
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    match args.get(1).map(String::as_str) {
        Some("gate") => gate(flag("--calls", 2000), flag("--rounds", 5)),
        _ => {
            eprintln!("usage: runread-bench gate [--calls N] [--rounds R]");
            std::process::exit(2);
        }
    }
}
