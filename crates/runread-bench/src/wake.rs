//! `runread-bench wake [--rounds N] [--pg]`: wake-up latency of `wait_for_run`, from the
//! commit that settles a run to the waiting reader's answer, side by side for the ways a wait
//! learns of it:
//!
//! - SQLite, the commit in the waiting process: the change feed;
//! - SQLite, the commit by another process on the same file (a second store on it): the waiting
//!   store's `data_version` watcher;
//! - PostgreSQL, the commit by another process (a second store): `NOTIFY`;
//! - PostgreSQL, the same with the waiting gateway's listener off: the re-check.
//!
//! Each round: a session whose last run is running, a reader waiting on it through the whole
//! service (`wait_for_change`, then the gated call), the run's last line appended and ingested by
//! the committing store. The commit's instant is when that store's own feed announced it (right
//! after its transaction); the answer's is when the waiting call returned. Medians and p99 in ms.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use runread_core::Feature;
use runread_service::{Config, Service, tools};
use runread_store::Store;
use runread_store::changes::Change;
#[cfg(feature = "postgres")]
use runread_testkit::pg::PgDb;

/// A build without the `postgres` feature has no database for a round: no value of this type.
#[cfg(not(feature = "postgres"))]
enum PgDb {}

/// What `--pg` gets from a build without the `postgres` feature.
const NO_POSTGRES: &str = "this runread-bench was built without PostgreSQL support (cargo feature \
     `postgres`): no PostgreSQL rows";

/// Where a round's commit comes from and how the waiting store hears of it.
#[derive(Clone, Copy)]
enum Way {
    SqliteSameProcess,
    SqliteOtherProcess,
    PostgresNotify,
    PostgresRecheck,
}

impl Way {
    fn label(self) -> &'static str {
        match self {
            Way::SqliteSameProcess => "SQLite, commit in the waiting process (change feed)",
            Way::SqliteOtherProcess => "SQLite, commit by another process (data_version)",
            Way::PostgresNotify => "PostgreSQL, commit by another process (NOTIFY)",
            Way::PostgresRecheck => "PostgreSQL, listener off (re-check)",
        }
    }
}

/// The committing store and the waiting one.
type Pair = (Arc<dyn Store>, Arc<dyn Store>);

/// The committing store and the waiting one (the same for SQLite in one process); PostgreSQL's
/// on a database of the round's own (`RUNREAD_TEST_PG`'s server, as the tests).
fn stores(way: Way, dir: &Path, pg: Option<&PgDb>) -> Result<Pair, String> {
    use runread_store::sqlite::SqliteStore;
    let sqlite = |p: &Path| -> Result<Arc<dyn Store>, String> {
        Ok(Arc::new(SqliteStore::open(p).map_err(|e| e.to_string())?))
    };
    let db = dir.join("runread.db");
    Ok(match (way, pg) {
        (Way::SqliteSameProcess, _) => {
            let s = sqlite(&db)?;
            (s.clone(), s)
        }
        (Way::SqliteOtherProcess, _) => (sqlite(&db)?, sqlite(&db)?),
        #[cfg(feature = "postgres")]
        (Way::PostgresNotify | Way::PostgresRecheck, Some(db)) => {
            use runread_store::postgres::PostgresStore;
            let agent =
                PostgresStore::connect_as(&db.url, "bench-agent").map_err(|e| e.to_string())?;
            let gateway =
                PostgresStore::connect_as(&db.url, "bench-gateway").map_err(|e| e.to_string())?;
            if matches!(way, Way::PostgresRecheck) {
                gateway.ignore_other_processes();
            }
            (Arc::new(agent), Arc::new(gateway))
        }
        #[cfg(not(feature = "postgres"))]
        (_, Some(db)) => match *db {},
        (_, None) => return Err("--pg is needed for the PostgreSQL rows".into()),
    })
}

/// A database of the round's own.
#[cfg(feature = "postgres")]
fn fresh_db() -> Result<PgDb, String> {
    Ok(PgDb::fresh())
}

#[cfg(not(feature = "postgres"))]
fn fresh_db() -> Result<PgDb, String> {
    Err(NO_POSTGRES.into())
}

/// A running run, a service waiting on it, and how to end the run.
struct Scene {
    _dir: tempfile::TempDir,
    _db: Option<PgDb>,
    agent: Arc<dyn Store>,
    gateway: Arc<dyn Store>,
    keys: Arc<runread_keys::FileKeys>,
    svc: Arc<Service>,
    run: runread_store::RunRecord,
    sessions: PathBuf,
    path: PathBuf,
    tail: Vec<u8>,
}

impl Scene {
    fn new(way: Way) -> Result<Scene, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let db = if matches!(way, Way::PostgresNotify | Way::PostgresRecheck) {
            Some(fresh_db()?)
        } else {
            None
        };
        let ws = dir.path().join("workspace");
        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&ws).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&sessions).map_err(|e| e.to_string())?;
        let ws = std::fs::canonicalize(ws).map_err(|e| e.to_string())?;
        let (agent, gateway) = stores(way, dir.path(), db.as_ref())?;
        agent
            .add_workspace(ws.to_str().unwrap_or_default(), "bench", 1)
            .map_err(|e| e.to_string())?;
        let bytes = runread_testkit::relocated(
            &std::fs::read(runread_testkit::fixture_session("sample"))
                .map_err(|e| e.to_string())?,
            ws.to_str().unwrap_or_default(),
        );
        let (head, tail) = runread_testkit::without_last_line(&bytes);
        let path = sessions.join("live.jsonl");
        std::fs::write(&path, head).map_err(|e| e.to_string())?;
        ingest(&*agent, &sessions)?;
        let run = gateway
            .runs()
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|r| r.run.status.as_str() == "running")
            .ok_or("no running run")?;
        let keys = Arc::new(runread_keys::FileKeys::open(dir.path()).map_err(|e| e.to_string())?);
        let config = Config {
            settle_quiet: Duration::ZERO,
            ..crate::measuring()
        };
        let svc = Arc::new(
            Service::new(gateway.clone(), keys.clone(), config).map_err(|e| e.to_string())?,
        );
        Ok(Scene {
            tail: tail.to_vec(),
            _dir: dir,
            _db: db,
            agent,
            gateway,
            keys,
            svc,
            run,
            sessions,
            path,
        })
    }

    /// A new reader granted `status` on the run, admitted.
    fn reader(&self, name: &str) -> Result<Arc<runread_service::KeyContext>, String> {
        let now = runread_core::timefmt::now_ms();
        let owner = runread_service::Owner::new(
            self.gateway.clone(),
            self.keys.clone(),
            runread_service::Config::default(),
            Vec::new(),
        );
        let g = owner
            .grant(
                runread_service::owner::GrantRequest {
                    run_id: &self.run.target.run_id,
                    session_id: Some(&self.run.target.session_id),
                    features: vec![Feature::Status],
                    expires_at_ms: now + 3_600_000,
                    reader: name,
                    new_reader: runread_service::owner::NewReaderPolicy::Make,
                    label: None,
                },
                now,
            )
            .map_err(|e| format!("{e:?}"))?;
        let key = g.key.ok_or("a new reader")?;
        Ok(Arc::new(
            self.svc
                .admit_key(&[key.as_bytes()])
                .map_err(|e| e.as_str())?,
        ))
    }

    /// A wait on the run past its current sequence, through the whole service: when it was
    /// answered, and the answer.
    fn wait(
        &self,
        rt: &tokio::runtime::Runtime,
        ctx: Arc<runread_service::KeyContext>,
    ) -> tokio::task::JoinHandle<Result<(Instant, serde_json::Value), &'static str>> {
        let run = &self.run.run;
        let seq = run.first_sequence + (run.message_lines.len() as u64).saturating_sub(1);
        let args = json!({"target": self.run.target, "afterSequence": seq, "timeoutSeconds": 50});
        let svc = self.svc.clone();
        rt.spawn(async move {
            let args = svc
                .wait_for_change(&ctx, tools::WAIT_FOR_RUN, &args)
                .await
                .map_err(|e| e.as_str())?;
            let out = svc
                .call(ctx, tools::WAIT_FOR_RUN, args, None)
                .await
                .map_err(|e| e.as_str())?;
            // Answered: after the gated call that reads the settled run, not at the wake-up alone.
            Ok((Instant::now(), out.labeled.structured))
        })
    }

    /// Appends the run's last line and ingests it through the committing store.
    fn end_run(&self) -> Result<(), String> {
        append(&self.path, &self.tail)?;
        ingest(&*self.agent, &self.sessions)
    }
}

fn ingest(store: &dyn Store, sessions: &Path) -> Result<(), String> {
    runread_ingest::ingest_dir(
        store,
        &runread_ingest::AgentDir::new(runread_sessions::Agent::Pi, sessions),
        runread_core::timefmt::now_ms(),
        |_| {},
    )
    .map(drop)
    .map_err(|e| e.to_string())
}

/// One round: milliseconds from the commit to the answer.
fn round(rt: &tokio::runtime::Runtime, way: Way) -> Result<f64, String> {
    let scene = Scene::new(way)?;
    let ctx = scene.reader("bench")?;
    let mut committed = scene.agent.changes().subscribe();
    let waiting = scene.wait(rt, ctx);
    rt.block_on(async {
        while scene.svc.waits_held() == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // PostgreSQL's listener starts with the first wait: let it listen.
        tokio::time::sleep(Duration::from_millis(300)).await;
    });
    scene.end_run()?;
    let session = scene.run.target.session_id.clone();
    let commit = rt.block_on(async {
        loop {
            match committed.recv().await {
                Ok(Change::Session(s)) if s == session => return Instant::now(),
                Ok(_) => continue,
                Err(_) => return Instant::now(),
            }
        }
    });
    let (answered, out) = rt
        .block_on(waiting)
        .map_err(|e| e.to_string())?
        .map_err(str::to_owned)?;
    if out["settled"] != true {
        return Err(format!("the wait answered unsettled: {out}"));
    }
    Ok(answered.saturating_duration_since(commit).as_secs_f64() * 1e3)
}

/// This process's resident set, KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The resident set `n` waits add, held at once by readers at their bound, on SQLite in this
/// process: KiB before, KiB with all held. Then the run ends and every wait answers.
fn held_memory(rt: &tokio::runtime::Runtime, n: usize) -> Result<(u64, u64), String> {
    let scene = Scene::new(Way::SqliteSameProcess)?;
    let per_reader = runread_core::limits::WAITS_PER_READER_MAX;
    let readers = (0..n.div_ceil(per_reader))
        .map(|i| scene.reader(&format!("bench-{i}")))
        .collect::<Result<Vec<_>, _>>()?;
    // One wait first, so that what every wait shares (the runtime's threads, the store's
    // statements) is there before the measurement.
    let warm = scene.wait(rt, readers[0].clone());
    rt.block_on(async {
        while scene.svc.waits_held() < 1 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    let before = rss_kib();
    let waits: Vec<_> = (1..n)
        .map(|i| scene.wait(rt, readers[i / per_reader].clone()))
        .collect();
    rt.block_on(async {
        while scene.svc.waits_held() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let held = rss_kib();
    scene.end_run()?;
    for w in std::iter::once(warm).chain(waits) {
        let (_, out) = rt
            .block_on(w)
            .map_err(|e| e.to_string())?
            .map_err(str::to_owned)?;
        if out["settled"] != true {
            return Err(format!("a wait answered unsettled: {out}"));
        }
    }
    Ok((before, held))
}

fn append(path: &Path, tail: &[u8]) -> Result<(), String> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(tail))
        .map_err(|e| e.to_string())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

/// How many waits the memory measurement holds at once.
const HELD_WAITS: usize = 200;

pub(crate) fn run(rounds: usize, pg: bool) -> Result<(), String> {
    if pg && cfg!(not(feature = "postgres")) {
        return Err(NO_POSTGRES.into());
    }
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let (before, held) = held_memory(&rt, HELD_WAITS)?;
    let ways = [
        Way::SqliteSameProcess,
        Way::SqliteOtherProcess,
        Way::PostgresNotify,
        Way::PostgresRecheck,
    ];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    // Rounds interleave the ways, so that a noisy moment falls on all of them.
    for _ in 0..rounds {
        for (i, way) in ways.iter().enumerate() {
            if !pg && matches!(way, Way::PostgresNotify | Way::PostgresRecheck) {
                continue;
            }
            samples[i].push(round(&rt, *way)?);
        }
    }
    println!(
        "wake-up latency: commit of the run's end → the waiting reader's answer, {rounds} rounds"
    );
    println!("| how the wait learns of it | median (ms) | p99 (ms) | ÷ the change feed's median |");
    println!("|---|---|---|---|");
    let base = {
        let mut s = samples[0].clone();
        s.sort_by(f64::total_cmp);
        percentile(&s, 0.5)
    };
    let mut rows = Vec::new();
    for (way, mut s) in ways.iter().zip(samples) {
        if s.is_empty() {
            continue;
        }
        s.sort_by(f64::total_cmp);
        let (median, p99) = (percentile(&s, 0.5), percentile(&s, 0.99));
        println!(
            "| {} | {median:.1} | {p99:.1} | {:.1}× |",
            way.label(),
            median / base
        );
        rows.push(json!({"way": way.label(), "median_ms": median, "p99_ms": p99}));
    }
    println!(
        "\n{HELD_WAITS} waits held at once (SQLite, in process, no HTTP): resident set {:.1} → {:.1} MiB, {:.1} KiB per wait",
        before as f64 / 1024.0,
        held as f64 / 1024.0,
        held.saturating_sub(before) as f64 / HELD_WAITS as f64
    );
    println!("{}", json!({"ways": rows}));
    Ok(())
}
