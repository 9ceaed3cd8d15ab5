//! `watch` follows a session as the agent writes it: a run appears while running, then settles;
//! a rewrite starts a new generation — with no manual ingest in between.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use runread_sessions::RunStatus;
use runread_store::Store;
use runread_testkit::{Env, fixture_session, relocated};

/// Upper bound for the store to reflect a write (polling; not a timing assertion on runread).
const WAIT: Duration = Duration::from_secs(20);

fn wait_for(env: &Env, what: &str, pred: impl Fn(&[runread_store::RunRecord]) -> bool) {
    let start = Instant::now();
    while start.elapsed() < WAIT {
        if pred(&env.store.runs().unwrap()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the watcher did not show {what}");
}

/// A watcher on `env`'s store following `agent`'s folder `dir`, on a thread of its own, calling
/// `on_pass` after each pass; it stops when [`Watching::stop`] is called.
struct Watching {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<(), runread_ingest::IngestError>>,
}

impl Watching {
    fn start(
        env: &Env,
        agent: runread_sessions::Agent,
        dir: &std::path::Path,
        rescan: Duration,
        on_pass: impl FnMut(&runread_ingest::Report) + Send + 'static,
    ) -> Watching {
        let stop = Arc::new(AtomicBool::new(false));
        let store: Arc<dyn Store> = env.store.clone();
        let (dir, s) = (dir.to_path_buf(), stop.clone());
        let thread = std::thread::spawn(move || {
            let dirs = [runread_ingest::AgentDir::new(agent, &dir)];
            runread_ingest::watch::watch(store, &dirs, rescan, s, on_pass)
        });
        Watching { stop, thread }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap().unwrap();
    }
}

#[test]
fn a_passive_run_moves_from_running_to_settled_while_the_agent_writes() {
    let env = Env::new();
    let bytes = relocated(
        &std::fs::read(fixture_session("sample")).unwrap(),
        env.workspace.to_str().unwrap(),
    );
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    // Everything up to the first run's final answer, then the rest.
    let final_idx = lines
        .iter()
        .position(|l| l.contains("\"stopReason\":\"stop\""))
        .unwrap();
    let path = env.sessions.join("live.jsonl");
    std::fs::write(&path, lines[..final_idx].concat()).unwrap();

    let watcher = Watching::start(
        &env,
        runread_sessions::Agent::Pi,
        &env.sessions,
        Duration::from_secs(60),
        |_| {},
    );

    wait_for(&env, "the running run", |runs| {
        runs.len() == 1 && runs[0].run.status == RunStatus::Running
    });
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(lines[final_idx].as_bytes()).unwrap();
    drop(f);
    wait_for(&env, "the settled run", |runs| {
        runs.len() == 1 && runs[0].run.status == RunStatus::Completed
    });
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(lines[final_idx + 1..].concat().as_bytes())
        .unwrap();
    drop(f);
    wait_for(&env, "the second run", |runs| {
        runs.len() == 2 && runs.iter().all(|r| r.run.status == RunStatus::Completed)
    });

    // Rewritten (replaced by rename): a new generation, picked up by the watcher.
    let tmp = env.sessions.join("live.tmp");
    std::fs::write(&tmp, text.as_bytes()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    wait_for(&env, "generation 2", |runs| {
        runs.len() == 2 && runs.iter().all(|r| r.target.generation == 2)
    });

    watcher.stop();
}

/// OpenCode writes its database, not a session file: the watcher, woken by the writes to the
/// database's WAL at the top of its data folder (not watched below it), shows a run open while its
/// answer's records are not written yet, then completed once they are — no manual ingest.
#[test]
fn an_opencode_run_moves_from_running_to_settled_as_its_database_is_written() {
    let env = Env::new();
    env.place_opencode("tool-then-answer", Duration::from_secs(60));
    let db = env.opencode_data.join("opencode.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    // The answer's step-finish and the message's finish, held back as not written yet.
    const HELD: i64 = 4;
    let last: i64 = c
        .query_row("SELECT max(seq) FROM event", [], |r| r.get(0))
        .unwrap();
    c.execute_batch(&format!(
        "CREATE TEMP TABLE held AS SELECT * FROM event WHERE seq > {last} - {HELD};
         DELETE FROM event WHERE seq > {last} - {HELD};"
    ))
    .unwrap();

    let watcher = Watching::start(
        &env,
        runread_sessions::Agent::OpenCode,
        &env.opencode_data,
        Duration::from_secs(600),
        |_| {},
    );
    wait_for(&env, "the open run", |runs| {
        runs.len() == 1 && runs[0].run.status == RunStatus::Running
    });
    c.execute_batch("INSERT INTO event SELECT * FROM held;")
        .unwrap();
    wait_for(&env, "the settled run", |runs| {
        runs.len() == 1 && runs[0].run.status == RunStatus::Completed
    });
    let runs = env.store.runs().unwrap();
    assert_eq!(
        runs[0].target.generation, 1,
        "a run moving is not a rewrite"
    );
    watcher.stop();
}

/// How long an idle watcher is watched for passes it should not make: many times the debounce
/// and the watcher's own wake-up, far less than its rescan period.
const IDLE_WINDOW: Duration = Duration::from_secs(2);

/// A watcher that nothing wakes makes no pass after its first until its rescan: its own pass
/// opens the directory and the session (notifications of reads), which are not changes. Before
/// this was so, an idle `serve --watch` over 2,000 sessions passed over all of them several times
/// a second.
#[test]
fn an_idle_watcher_is_not_woken_by_its_own_reads() {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    let passes = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = passes.clone();
    let watcher = Watching::start(
        &env,
        runread_sessions::Agent::Pi,
        &env.sessions,
        Duration::from_secs(600),
        move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        },
    );
    wait_for(&env, "the first pass's runs", |runs| !runs.is_empty());
    std::thread::sleep(IDLE_WINDOW);
    let idle = passes.load(Ordering::SeqCst);
    // A change still wakes it: the same directory gets a second session.
    let copy = env.sessions.join("copy.jsonl");
    std::fs::copy(
        env.sessions
            .read_dir()
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
        &copy,
    )
    .unwrap();
    let start = Instant::now();
    while passes.load(Ordering::SeqCst) == idle && start.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(50));
    }
    let woken = passes.load(Ordering::SeqCst);
    watcher.stop();
    assert_eq!(idle, 1, "passes while nothing changed: the first one only");
    assert!(woken > idle, "a new session wakes the watcher");
}
