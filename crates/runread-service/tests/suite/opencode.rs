//! OpenCode's database under a grant: rows of a settled run changed after the grant make it stale
//! and refused (`target_stale`, as a rewritten session file does for the other agents), nothing
//! of the new text served; a run OpenCode is still writing keeps its grant as its rows move on and
//! ends readable; a locked or corrupt database refuses with a fixed state, leaking nothing of the
//! path, the error or the rows; and a shared run reads the same from its snapshot once its
//! session's rows are deleted.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::{ErrorCode, Feature};
use runread_service::evidence::snapshot::Sealing;
use runread_service::{KeyContext, Service, tools};
use runread_store::prelude::*;
use runread_testkit::{Env, block_on};

const SETTLED: Duration = Duration::from_secs(60);

/// The answer of `tool-then-answer` as OpenCode stored it.
const ANSWER: &str = "This is **demo**, a tiny Rust project with one binary (`src/main.rs`) that prints `hi`.\n\nFiles: README.md, src/main.rs.";

fn call(svc: &Arc<Service>, ctx: &KeyContext, tool: &str, args: Value) -> Result<Value, ErrorCode> {
    let out = block_on(svc.call(Arc::new(ctx.clone()), tool, args, None))?;
    runread_testkit::serve::assert_declared_output(tool, &out.labeled.structured);
    Ok(out.labeled.structured)
}

/// Every read tool's whole result on `target`, as a reader would receive it: the labeled
/// structured content and text block, or the refusal.
fn every_read(
    svc: &Arc<Service>,
    ctx: &KeyContext,
    target: &runread_core::Target,
) -> Vec<(&'static str, Result<String, ErrorCode>)> {
    [
        tools::GET_RUN,
        tools::READ_FINAL_ANSWER,
        tools::READ_HISTORY,
        tools::READ_WORK_STATE,
        tools::READ_TARGET_METADATA,
    ]
    .into_iter()
    .map(|tool| {
        let out = block_on(svc.call(Arc::new(ctx.clone()), tool, json!({"target": target}), None))
            .map(|o| format!("{}\n{}", o.labeled.structured, o.labeled.text));
        (tool, out)
    })
    .collect()
}

/// A connection to the env's OpenCode database, for editing its rows as OpenCode would.
fn database(env: &Env) -> rusqlite::Connection {
    rusqlite::Connection::open(env.opencode_data.join("opencode.db")).unwrap()
}

/// One `tool-then-answer` session placed and ingested; its one run.
fn placed(env: &Env, age: Duration) -> runread_store::RunRecord {
    env.place_opencode("tool-then-answer", age);
    env.ingest();
    let mut runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    runs.remove(0)
}

fn session_of(run: &runread_store::RunRecord) -> String {
    run.session_path.rsplit_once('#').unwrap().1.to_owned()
}

/// The session's event rows from `seq` on, as stored: `(id, seq, type, data)`.
fn rows_from(
    c: &rusqlite::Connection,
    session: &str,
    seq: i64,
) -> Vec<(String, i64, String, String)> {
    let mut q = c
        .prepare(
            "SELECT id, seq, type, data FROM event WHERE aggregate_id = ?1 AND seq >= ?2 ORDER BY seq",
        )
        .unwrap();
    q.query_map(rusqlite::params![session, seq], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn insert(c: &rusqlite::Connection, session: &str, row: &(String, i64, String, String)) {
    c.execute(
        "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![row.0, session, row.1, row.2, row.3],
    )
    .unwrap();
    c.execute(
        "UPDATE event_sequence SET seq = ?2 WHERE aggregate_id = ?1",
        rusqlite::params![session, row.1],
    )
    .unwrap();
}

/// (a) OpenCode's rows of a finished run changed after the grant — an event appended that
/// rewrites the answer's finished text part — and ingested again: the run is a new generation;
/// the grant on the old one is refused `target_stale` by every tool, and nothing of the new text
/// is served.
#[test]
fn a_settled_runs_rows_changed_after_the_grant_make_it_stale_and_refused() {
    const NEW: &str = "A different answer, written over the first.";
    let env = Env::new();
    let run = placed(&env, SETTLED);
    let session = session_of(&run);
    let g = env.grant(&run.target.run_id, Feature::ALL.to_vec(), "t");
    let svc = env.service();
    let ctx = svc.admit_key(&[g.key.as_bytes()]).unwrap();
    let before = call(
        &svc,
        &ctx,
        tools::READ_FINAL_ANSWER,
        json!({"target": g.grant.target}),
    )
    .unwrap();
    assert_eq!(before["text"], ANSWER);

    // The answer's text part, its last record, written again with another text.
    let c = database(&env);
    let rows = rows_from(&c, &session, 0);
    let last_text = rows
        .iter()
        .rev()
        .find(|r| r.3.contains(r#""type":"text""#) && r.3.contains("tiny Rust project"))
        .unwrap();
    let mut data: Value = serde_json::from_str(&last_text.3).unwrap();
    data["part"]["text"] = json!(NEW);
    let next = rows.last().unwrap().1 + 1;
    insert(
        &c,
        &session,
        &(
            format!("evt_zzrewrite{next}"),
            next,
            last_text.2.clone(),
            data.to_string(),
        ),
    );
    drop(c);
    env.set_opencode_age(SETTLED);
    let report = env.ingest();
    assert_eq!(report.new_generations, 1, "{report:?}");
    let now = env.store.runs().unwrap();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].target.generation, run.target.generation + 1);

    for (tool, got) in every_read(&svc, &ctx, &g.grant.target) {
        if tool == tools::GET_RUN {
            // get_run is never refused: a stale target is not found, as a missing one.
            let got = got.unwrap();
            assert!(got.starts_with(r#"{"trust":"untrusted_data","instructions":false,"tool":"get_run","found":false}"#), "{got}");
        } else {
            assert_eq!(got, Err(ErrorCode::TargetStale), "{tool}");
        }
    }
    // A grant on the new generation does read the new record: the edit was there to be served.
    let fresh = env.grant(&now[0].target.run_id, Feature::ALL.to_vec(), "t2");
    let fresh_ctx = svc.admit_key(&[fresh.key.as_bytes()]).unwrap();
    let reads = every_read(&svc, &fresh_ctx, &fresh.grant.target);
    assert!(
        reads
            .iter()
            .any(|(_, r)| r.as_ref().is_ok_and(|t| t.contains(NEW))),
        "{reads:?}"
    );
}

/// (b) A run OpenCode is still writing — its rows cut where the model's messages were unfinished
/// — is granted; OpenCode then writes its next records in order (the tool parts completed, the
/// answer streamed, the messages finished), each pass ingested: the grant stays live through
/// every step (never stale, never a new generation), and the run ends completed with its answer.
#[test]
fn a_running_runs_rows_moving_on_keep_its_grant_and_end_readable() {
    let env = Env::new();
    let full = placed(&env, SETTLED);
    let session = session_of(&full);
    // A fresh env whose copy is cut after seq 14 (a tool part still running).
    let env = Env::new();
    env.place_opencode("tool-then-answer", Duration::ZERO);
    let c = database(&env);
    let rest = rows_from(&c, &session, 15);
    assert!(rest.len() > 20, "{}", rest.len());
    c.execute(
        "DELETE FROM event WHERE aggregate_id = ?1 AND seq >= 15",
        [&session],
    )
    .unwrap();
    drop(c);
    env.set_opencode_age(Duration::ZERO);
    env.ingest();
    let run = env.store.runs().unwrap().remove(0);
    assert_eq!(run.run.status.as_str(), "running", "{:?}", run.run);
    let g = env.grant(&run.target.run_id, Feature::ALL.to_vec(), "t");
    let svc = env.service_settling_at_once();
    let ctx = svc.admit_key(&[g.key.as_bytes()]).unwrap();
    let first = call(
        &svc,
        &ctx,
        tools::READ_FINAL_ANSWER,
        json!({"target": g.grant.target}),
    )
    .unwrap();
    assert_ne!(first["state"], "available", "{first}");

    let c = database(&env);
    for step in rest.chunks(5) {
        for row in step {
            insert(&c, &session, row);
        }
        env.set_opencode_age(Duration::ZERO);
        let report = env.ingest();
        assert_eq!(report.new_generations, 0, "{report:?}");
        assert_eq!(report.unreadable, 0, "{report:?}");
        for (tool, got) in every_read(&svc, &ctx, &g.grant.target) {
            assert!(got.is_ok(), "{tool} after seq {}: {got:?}", step[0].1);
        }
    }
    drop(c);
    env.set_opencode_age(SETTLED);
    env.ingest();
    let now = env.store.runs().unwrap().remove(0);
    assert_eq!(now.target, run.target, "the same target throughout");
    assert_eq!(now.run.status.as_str(), "completed");
    let got = call(
        &svc,
        &ctx,
        tools::READ_FINAL_ANSWER,
        json!({"target": g.grant.target}),
    )
    .unwrap();
    assert_eq!(got["state"], "available", "{got}");
    assert_eq!(got["text"], ANSWER);
}

/// Nothing a refusal or an unreadable state carries names the database, the workspace, the OS's
/// or SQLite's error, or any text of the rows.
fn leaks_nothing(env: &Env, what: &str, got: &str) {
    let db = env.opencode_data.join("opencode.db");
    for needle in [
        db.to_str().unwrap(),
        env.opencode_data.to_str().unwrap(),
        "opencode.db",
        "sqlite",
        "SQLite",
        "locked",
        "busy",
        "disk image is malformed",
        "not a database",
        "file is encrypted",
        "os error",
        "Errno",
        "tiny Rust project",
        "List the files",
    ] {
        assert!(!got.contains(needle), "{what}: {needle} in {got}");
    }
}

/// Every read's result on `target`: a refusal, or a state that serves no text of the run; and
/// whatever it is, none of it leaks anything ([`leaks_nothing`]). The results, for comparing.
fn refused_or_unreadable(
    env: &Env,
    svc: &Arc<Service>,
    ctx: &KeyContext,
    target: &runread_core::Target,
    what: &str,
) -> Vec<String> {
    every_read(svc, ctx, target)
        .into_iter()
        .map(|(tool, got)| {
            let text = match &got {
                Ok(t) => t.clone(),
                Err(e) => format!("{e:?}"),
            };
            leaks_nothing(env, &format!("{what}: {tool}"), &text);
            if tool == tools::READ_FINAL_ANSWER
                && let Ok(t) = &got
            {
                let v: Value = serde_json::from_str(t.lines().next().unwrap()).unwrap();
                assert_ne!(v["state"], "available", "{what}: {t}");
                assert_eq!(v["text"], Value::Null, "{what}: {t}");
            }
            if tool == tools::READ_HISTORY
                && let Ok(t) = &got
            {
                let v: Value = serde_json::from_str(t.lines().next().unwrap()).unwrap();
                let events = v["events"].as_array().unwrap();
                assert!(!events.is_empty(), "{what}: {t}");
                assert!(events.iter().all(|e| e["text"].is_null()), "{what}: {t}");
            }
            format!("{tool}: {}", text.lines().next().unwrap_or_default())
        })
        .collect()
}

/// Closes runread's connections kept open between reads (at most a few, the oldest closed
/// first) by reading more OpenCode databases than it keeps.
fn close_kept_connections() {
    for _ in 0..8 {
        Env::new().place_opencode("fork", SETTLED);
    }
}

/// OpenCode's database locked as a connection in exclusive mode that wrote keeps it, until the
/// connection returned is dropped. (It can take the lock only while no other connection has the
/// database open: runread's kept one is closed first.)
fn lock(env: &Env) -> rusqlite::Connection {
    close_kept_connections();
    let lock = database(env);
    lock.execute_batch("PRAGMA locking_mode=EXCLUSIVE; UPDATE session SET title = title;")
        .unwrap();
    lock
}

/// Garbage where OpenCode's database was (its WAL and index gone with it).
fn corrupt(env: &Env) {
    let db = env.opencode_data.join("opencode.db");
    for companion in ["opencode.db-wal", "opencode.db-shm"] {
        let _ = std::fs::remove_file(env.opencode_data.join(companion));
    }
    std::fs::remove_file(&db).unwrap();
    std::fs::write(&db, b"\x00garbage, not SQLite at all \xff\xfe".repeat(512)).unwrap();
}

/// (c) At read time OpenCode holds its database locked (an exclusive connection that wrote), or
/// the database is garbage, and the run has no snapshot (its grant written straight to the
/// store): every tool answers with a fixed refusal or unreadable state — the same whatever the
/// cause — never the path, the OS's or SQLite's error, or any row's text; once the lock is
/// released, the grant reads the answer again.
#[test]
fn a_locked_or_corrupt_database_refuses_with_a_fixed_state_and_leaks_nothing() {
    let env = Env::new();
    let run = placed(&env, SETTLED);
    let svc = env.service();
    let (g, key) = env.raw_grant(&run.target, Feature::ALL.to_vec(), 600_000);
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    let read = || {
        call(
            &svc,
            &ctx,
            tools::READ_FINAL_ANSWER,
            json!({"target": g.target}),
        )
        .unwrap()
    };
    assert_eq!(read()["text"], ANSWER);

    let held = lock(&env);
    let locked = refused_or_unreadable(&env, &svc, &ctx, &g.target, "locked");
    drop(held);
    let got = read();
    assert_eq!(got["text"], ANSWER, "readable once released");
    assert_eq!(got["evidence"], "session_file");

    corrupt(&env);
    let corrupt = refused_or_unreadable(&env, &svc, &ctx, &g.target, "corrupt");
    assert_eq!(locked, corrupt, "one fixed answer, whatever the cause");
}

/// The same with the run shared (its snapshot sealed at the grant): the session is not there to
/// read, so the reader gets the exact answer from the snapshot and is told so — and nothing of
/// the path or the error.
#[test]
fn a_locked_or_corrupt_database_serves_a_shared_run_from_its_snapshot() {
    let env = Env::new();
    let run = placed(&env, SETTLED);
    let svc = env.service();
    let g = env.grant(&run.target.run_id, Feature::ALL.to_vec(), "t");
    let ctx = svc.admit_key(&[g.key.as_bytes()]).unwrap();
    let read = |what: &str, evidence: &str| {
        let got = call(
            &svc,
            &ctx,
            tools::READ_FINAL_ANSWER,
            json!({"target": g.grant.target}),
        )
        .unwrap();
        assert_eq!(got["evidence"], evidence, "{what}: {got}");
        assert_eq!(got["text"], ANSWER, "{what}: {got}");
        let mut rest = got.clone();
        rest["text"] = Value::Null;
        leaks_nothing(&env, what, &rest.to_string());
    };
    read("before", "session_file");
    let held = lock(&env);
    read("locked", "snapshot");
    drop(held);
    read("released", "session_file");
    corrupt(&env);
    read("corrupt", "snapshot");
}

/// (d) A shared OpenCode run is sealed into a snapshot at the grant; OpenCode then deletes the
/// session (its rows in `session`, `message`, `part`, `event`, `event_sequence`) and a pass runs:
/// the reader reads the exact answer and history from the snapshot, and is told so.
#[test]
fn a_shared_run_reads_the_same_from_its_snapshot_after_its_session_is_deleted() {
    let env = Env::new();
    let run = placed(&env, SETTLED);
    let session = session_of(&run);
    let now = runread_core::timefmt::now_ms();
    let g = env
        .owner()
        .grant_run(
            run.clone(),
            vec![Feature::FinalAnswer, Feature::History, Feature::Metadata],
            now + 600_000,
            ("assistant", runread_service::owner::NewReaderPolicy::Make),
            None,
            now,
        )
        .unwrap();
    assert!(
        matches!(g.snapshot, Sealing::Kept { lines, .. } if lines > 0),
        "{:?}",
        g.snapshot
    );
    let svc = env.service();
    let key = g.key.clone().unwrap();
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    let answer = || {
        call(
            &svc,
            &ctx,
            tools::READ_FINAL_ANSWER,
            json!({"target": run.target}),
        )
        .unwrap()
    };
    let history = || {
        call(
            &svc,
            &ctx,
            tools::READ_HISTORY,
            json!({"target": run.target, "limit": 50}),
        )
        .unwrap()
    };
    let before = answer();
    assert_eq!(before["text"], ANSWER);
    assert_eq!(before["evidence"], "session_file");
    let history_before = history();

    let c = database(&env);
    for (table, column) in [
        ("part", "session_id"),
        ("message", "session_id"),
        ("event", "aggregate_id"),
        ("event_sequence", "aggregate_id"),
        ("session", "id"),
    ] {
        let n = c
            .execute(
                &format!("DELETE FROM {table} WHERE {column} = ?1"),
                [&session],
            )
            .unwrap();
        assert!(n > 0, "{table}");
    }
    drop(c);
    env.ingest();
    assert!(
        env.store
            .run(
                &run.target.session_id,
                run.target.generation,
                &run.target.run_id
            )
            .unwrap()
            .is_some(),
        "the run is still indexed"
    );

    let after = answer();
    assert_eq!(after["state"], "available", "{after}");
    assert_eq!(after["evidence"], "snapshot", "{after}");
    assert_eq!(after["text"], ANSWER);
    assert_eq!(after["sha256"], before["sha256"]);
    let history_after = history();
    assert_eq!(history_after["evidence"], "snapshot");
    assert_eq!(history_after["events"], history_before["events"]);
}
