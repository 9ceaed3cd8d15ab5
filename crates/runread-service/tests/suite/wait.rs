//! `wait_for_run`: a reader learns when a run moves or settles without polling. The wait wakes on
//! the store's change feed (in process; between processes on PostgreSQL through `NOTIFY`), falls
//! back on its bounded re-check when a change is missed, holds its slots within the named bounds,
//! and leaves one start record and one receipt per call.

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::limits::{WAIT_MAX_SECONDS, WAITS_PER_READER_MAX};
use runread_core::{ErrorCode, Feature};
use runread_service::{Config, KeyContext, Service, tools};
use runread_store::Store;
use runread_testkit::{Env, PiVersion, pi_versions};

/// Hang guard on a wait that should answer (never a timing assertion: a test that ends only
/// at this guard has failed).
const GUARD: Duration = Duration::from_secs(60);
/// How long a wait of [`WAIT_MAX_SECONDS`] that something should end early may take: half its
/// timeout. Ending later means its timeout ended it, not what the test did (normally it ends
/// within milliseconds; this tells the mechanisms apart, it measures nothing).
const EARLY: Duration = Duration::from_secs(WAIT_MAX_SECONDS / 2);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn place_unfinished(env: &Env) -> (std::path::PathBuf, Vec<u8>) {
    place_unfinished_of(env, runread_testkit::PI_0_73_1)
}

/// Pi `v`'s `sample` with its last run running (its answer not yet written).
fn place_unfinished_of(env: &Env, v: PiVersion) -> (std::path::PathBuf, Vec<u8>) {
    env.place_unfinished(&v.fixture("sample"))
}

/// The run still running after the unfinished session was ingested.
fn running_run(env: &Env) -> runread_store::RunRecord {
    env.ingest();
    env.running_run()
}

/// A reader granted `status` on a running run, and the service it calls with `config`.
struct Waiting {
    env: Env,
    run: runread_store::RunRecord,
    /// The session file, and the line that ends its run.
    path: std::path::PathBuf,
    tail: Vec<u8>,
    svc: Arc<Service>,
    ctx: Arc<KeyContext>,
    grant: runread_testkit::serve::TestGrant,
}

fn waiting(config: Config) -> Waiting {
    waiting_on(runread_testkit::PI_0_73_1, config)
}

/// [`waiting`] on Pi `v`'s `sample`.
fn waiting_on(v: PiVersion, config: Config) -> Waiting {
    let env = Env::new();
    let (path, tail) = place_unfinished_of(&env, v);
    let run = running_run(&env);
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), config).unwrap());
    let grant = env.grant(&run.target.run_id, vec![Feature::Status], "waiter");
    let ctx = Arc::new(svc.admit_key(&[grant.key.as_bytes()]).unwrap());
    Waiting {
        env,
        run,
        path,
        tail,
        svc,
        ctx,
        grant,
    }
}

fn append(path: &std::path::Path, tail: &[u8]) {
    Env::append(path, tail);
}

/// What a reader sees first: a wait of one second on a run that does not move.
fn first_look(
    rt: &tokio::runtime::Runtime,
    svc: &Arc<Service>,
    ctx: &Arc<KeyContext>,
    target: &Value,
) -> Value {
    rt.block_on(wait(
        svc,
        ctx,
        json!({"target": target, "timeoutSeconds": 1}),
    ))
    .unwrap()
}

async fn wait(svc: &Arc<Service>, ctx: &Arc<KeyContext>, args: Value) -> Result<Value, ErrorCode> {
    let args = svc.wait_for_change(ctx, tools::WAIT_FOR_RUN, &args).await?;
    let out = svc
        .call(ctx.clone(), tools::WAIT_FOR_RUN, args, None)
        .await?;
    runread_testkit::serve::assert_declared_output(tools::WAIT_FOR_RUN, &out.labeled.structured);
    Ok(out.labeled.structured)
}

/// `wait` with `args`, spawned on `rt`, returned once it holds its wait slot (so whatever the test
/// does next happens while it waits).
fn held_wait(
    rt: &tokio::runtime::Runtime,
    svc: &Arc<Service>,
    ctx: &Arc<KeyContext>,
    args: Value,
) -> tokio::task::JoinHandle<Result<Value, ErrorCode>> {
    let waiting = rt.spawn({
        let (svc, ctx) = (svc.clone(), ctx.clone());
        async move { wait(&svc, &ctx, args).await }
    });
    rt.block_on(async {
        while svc.waits_held() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    waiting
}

fn quick_settle() -> Config {
    Config {
        settle_quiet: Duration::ZERO,
        ..Config::default()
    }
}

pi_versions! {
#[test]
fn a_wait_answers_when_ingest_commits_the_end_of_the_run(v) {
    // Re-checks never come: only the change feed can wake this wait before its timeout.
    let Waiting {
        env,
        run,
        path,
        tail,
        svc,
        ctx,
        ..
    } = waiting_on(v, Config {
        wait_recheck: Duration::from_secs(3600),
        ..quick_settle()
    });
    let target = serde_json::to_value(&run.target).unwrap();
    let rt = runtime();
    let seen = first_look(&rt, &svc, &ctx, &target);
    assert_eq!(seen["status"], "running");
    assert_eq!(
        (seen["changed"].clone(), seen["settled"].clone()),
        (json!(false), json!(false))
    );
    let before = seen["eventSequence"].as_u64().unwrap();

    let args =
        json!({"target": target, "afterSequence": before, "timeoutSeconds": WAIT_MAX_SECONDS});
    // The wait holds its slot before anything moves on.
    let waiting = held_wait(&rt, &svc, &ctx, args);
    append(&path, &tail);
    env.ingest();
    let answer = rt
        .block_on(async { tokio::time::timeout(EARLY, waiting).await })
        .expect("the commit wakes the wait, before its timeout")
        .unwrap()
        .unwrap();
    assert_eq!(answer["found"], true);
    assert_eq!(answer["changed"], true);
    assert_eq!(answer["settled"], true, "{answer}");
    assert_eq!(answer["status"], "completed");
    assert!(answer["eventSequence"].as_u64().unwrap() > before);
    assert_eq!(svc.waits_held(), 0, "the slot is given back");

    // One start record and one receipt per call, however many times it woke.
    let audit = env.store.audit(0, 100).unwrap();
    let waits: Vec<_> = audit
        .iter()
        .filter(|(m, _)| m.tool == tools::WAIT_FOR_RUN)
        .collect();
    assert_eq!(waits.len(), 2, "two calls, two start records");
    for (_, receipts) in waits {
        assert_eq!(receipts.len(), 1);
        assert_eq!(receipts[0].outcome, "ok");
    }
}
}

#[test]
fn a_wait_with_no_change_returns_unchanged_at_its_timeout() {
    // `env` is held: its directory holds the store and the session.
    let Waiting {
        env: _env,
        run,
        svc,
        ctx,
        ..
    } = waiting(quick_settle());
    let target = serde_json::to_value(&run.target).unwrap();
    let rt = runtime();
    let seen = first_look(&rt, &svc, &ctx, &target);
    let args =
        json!({"target": target, "afterSequence": seen["eventSequence"], "timeoutSeconds": 1});
    let answer = rt.block_on(wait(&svc, &ctx, args)).unwrap();
    assert_eq!(answer["changed"], false);
    assert_eq!(answer["settled"], false);
    assert_eq!(answer["eventSequence"], seen["eventSequence"]);
}

#[test]
fn a_settled_run_and_a_run_not_granted_answer_at_once() {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let runs = env.store.runs().unwrap();
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let g = env.grant(&runs[0].target.run_id, vec![Feature::Status], "waiter");
    let ctx = Arc::new(svc.admit_key(&[g.key.as_bytes()]).unwrap());
    let rt = runtime();
    // A timeout far beyond the guard: only an answer at once ends these.
    let settled = rt
        .block_on(async {
            let args = json!({"target": runs[0].target, "timeoutSeconds": WAIT_MAX_SECONDS});
            tokio::time::timeout(GUARD, wait(&svc, &ctx, args)).await
        })
        .unwrap()
        .unwrap();
    assert_eq!(
        (settled["found"].clone(), settled["settled"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(
        settled["changed"], false,
        "no afterSequence: nothing to differ from"
    );
    let other = rt
        .block_on(async {
            let args = json!({"target": runs[1].target, "timeoutSeconds": WAIT_MAX_SECONDS});
            tokio::time::timeout(GUARD, wait(&svc, &ctx, args)).await
        })
        .unwrap()
        .unwrap();
    let keys: Vec<&String> = other.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "trust",
            "instructions",
            "tool",
            "found",
            "changed",
            "settled"
        ],
        "nothing of a run not granted: {other}"
    );
    assert_eq!(other["found"], false);
}

#[test]
fn a_revoked_grant_ends_the_wait_and_its_call_is_refused() {
    let Waiting {
        env,
        run,
        svc,
        ctx,
        grant: g,
        ..
    } = waiting(Config::default());
    let rt = runtime();
    let args = json!({"target": run.target, "timeoutSeconds": WAIT_MAX_SECONDS});
    // The wait holds its slot before anything moves on.
    let waiting = held_wait(&rt, &svc, &ctx, args);
    assert!(
        env.store
            .revoke_grant(&g.grant.id, runread_core::timefmt::now_ms())
            .unwrap()
    );
    let refused = rt
        .block_on(async { tokio::time::timeout(EARLY, waiting).await })
        .expect("the revocation ends the wait, before its timeout")
        .unwrap();
    assert_eq!(refused.err(), Some(ErrorCode::GrantRevoked));
}

#[test]
fn a_reader_holds_its_waits_up_to_the_bound_and_one_more_is_busy() {
    let Waiting {
        env,
        run,
        svc,
        ctx,
        grant: g,
        ..
    } = waiting(Config::default());
    let other = env.grant(&run.target.run_id, vec![Feature::Status], "other");
    let other = Arc::new(svc.admit_key(&[other.key.as_bytes()]).unwrap());
    let rt = runtime();
    let args = json!({"target": run.target, "timeoutSeconds": 5});
    let held: Vec<_> = (0..WAITS_PER_READER_MAX)
        .map(|_| {
            let (svc, ctx, args) = (svc.clone(), ctx.clone(), args.clone());
            rt.spawn(async move { svc.wait_for_change(&ctx, tools::WAIT_FOR_RUN, &args).await })
        })
        .collect();
    rt.block_on(async {
        while svc.waits_held() < WAITS_PER_READER_MAX {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    // One more of the same reader: refused at once, before any wait.
    let refused = rt.block_on(svc.wait_for_change(&ctx, tools::WAIT_FOR_RUN, &args));
    assert_eq!(refused.err(), Some(ErrorCode::Busy));
    let refusal = ErrorCode::Busy.to_json().to_string();
    assert!(!refusal.contains(&run.target.run_id) && !refusal.contains(&g.key));
    // Another reader still waits (and answers at its timeout).
    let short = json!({"target": run.target, "timeoutSeconds": 1});
    assert!(
        rt.block_on(svc.wait_for_change(&other, tools::WAIT_FOR_RUN, &short))
            .is_ok()
    );
    for h in held {
        assert!(rt.block_on(h).unwrap().is_ok());
    }
    assert_eq!(svc.waits_held(), 0);
    // The reader's slots are back.
    assert!(
        rt.block_on(svc.wait_for_change(&ctx, tools::WAIT_FOR_RUN, &short))
            .is_ok()
    );
}

/// Two gateways on one PostgreSQL, each a store of its own (as two processes are): a commit
/// through one wakes a wait on the other through `NOTIFY`; with the listener off, the wait
/// still answers, by its re-check.
#[test]
fn a_commit_on_one_postgres_store_wakes_a_wait_on_another() {
    for listening in [true, false] {
        let db = runread_testkit::pg::PgDb::fresh();
        let env = Env::new();
        let (path, tail) = place_unfinished(&env);
        let agent_host: Arc<dyn Store> = Arc::new(db.store_as("laptop"));
        let gateway = db.store_as("gateway");
        if !listening {
            gateway.ignore_other_processes();
        }
        let gateway: Arc<dyn Store> = Arc::new(gateway);
        agent_host
            .add_workspace(env.workspace.to_str().unwrap(), "pg", 1)
            .unwrap();
        let ingest = || {
            runread_ingest::ingest_dir(
                &*agent_host,
                &runread_ingest::AgentDir {
                    agent: runread_sessions::Agent::Pi,
                    dir: env.sessions.clone(),
                },
                runread_core::timefmt::now_ms(),
                |_| {},
            )
            .unwrap();
        };
        ingest();
        let run = gateway
            .runs()
            .unwrap()
            .into_iter()
            .find(|r| r.run.status == runread_sessions::RunStatus::Running)
            .unwrap();
        // Listening: re-checks never come, so only the notification can wake the wait.
        let recheck = if listening {
            Duration::from_secs(3600)
        } else {
            Duration::from_millis(runread_core::limits::WAIT_RECHECK_MS)
        };
        let keys = env.keys();
        let svc = Arc::new(
            Service::new(
                gateway.clone(),
                keys.clone(),
                Config {
                    wait_recheck: recheck,
                    ..quick_settle()
                },
            )
            .unwrap(),
        );
        let now = runread_core::timefmt::now_ms();
        let made = svc
            .owner()
            .grant(
                runread_service::owner::GrantRequest {
                    run_id: &run.target.run_id,
                    session_id: Some(&run.target.session_id),
                    features: vec![Feature::Status],
                    expires_at_ms: now + 3_600_000,
                    reader: "waiter",
                    new_reader: runread_service::owner::NewReaderPolicy::Make,
                    label: None,
                },
                now,
            )
            .unwrap();
        let key = made.key.unwrap();
        let ctx = Arc::new(svc.admit_key(&[key.as_bytes()]).unwrap());
        let rt = runtime();
        let args = json!({"target": run.target, "afterSequence": run.run.first_sequence
            + run.run.message_lines.len() as u64 - 1, "timeoutSeconds": WAIT_MAX_SECONDS});
        let waiting = rt.spawn({
            let (svc, ctx) = (svc.clone(), ctx.clone());
            async move { wait(&svc, &ctx, args).await }
        });
        rt.block_on(async {
            while svc.waits_held() == 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            // The listener is up before the other store commits (it starts with the first wait).
            tokio::time::sleep(Duration::from_millis(500)).await;
        });
        append(&path, &tail);
        ingest();
        let answer = rt
            .block_on(async { tokio::time::timeout(EARLY, waiting).await })
            .expect("the other store's commit wakes the wait, before its timeout")
            .unwrap()
            .unwrap();
        assert_eq!(answer["changed"], true, "listening={listening}: {answer}");
        assert_eq!(answer["settled"], true, "listening={listening}: {answer}");
        drop(rt);
    }
}

/// The owner sees which readers wait on a run while they wait (from the store, so from any
/// process: `runread runs`, the console), and no longer once the wait ended.
#[test]
fn the_owner_is_shown_the_readers_waiting_on_a_run() {
    let Waiting {
        env, run, svc, ctx, ..
    } = waiting(Config::default());
    let now = runread_core::timefmt::now_ms;
    assert!(
        svc.owner()
            .shown_run(run.clone(), now())
            .unwrap()
            .waiting
            .is_empty()
    );
    let rt = runtime();
    let args = json!({"target": run.target, "timeoutSeconds": 2});
    let waiting: Vec<_> = (0..2)
        .map(|_| {
            let (svc, ctx, args) = (svc.clone(), ctx.clone(), args.clone());
            rt.spawn(async move { svc.wait_for_change(&ctx, tools::WAIT_FOR_RUN, &args).await })
        })
        .collect();
    rt.block_on(async {
        while svc.waits_held() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    // Another service on the same store file (as `runread runs` is another process) sees them.
    let other_process = Service::new(
        Arc::new(
            runread_store::sqlite::SqliteStore::open(&env.dir.path().join("runread.db")).unwrap(),
        ),
        env.keys(),
        Config::default(),
    )
    .unwrap();
    let shown = other_process.owner().shown_run(run.clone(), now()).unwrap();
    assert_eq!(shown.waiting, ["waiter", "waiter"]);
    assert_eq!(shown.waiting_summary(), "waiter (×2)");
    for w in waiting {
        assert!(rt.block_on(w).unwrap().is_ok());
    }
    rt.block_on(async {
        tokio::time::timeout(GUARD, async {
            while !svc
                .owner()
                .shown_run(run.clone(), now())
                .unwrap()
                .waiting
                .is_empty()
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("an ended wait is no longer shown");
    });
}

/// A second gateway on the same store that does not see the session file (another host): it
/// reads the run from its snapshot, which the gateway that saw the run end seals again only
/// after committing the index. In that gap the run has ended but its answer reads `unknown`:
/// the wait must not call that settled, or the read right after would not return what it
/// always will.
#[test]
fn where_the_file_is_not_a_run_is_settled_only_once_its_snapshot_holds_the_end() {
    let env = Env::new();
    let (path, tail) = place_unfinished(&env);
    let run = running_run(&env);
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), quick_settle()).unwrap());
    let grant = env.grant(
        &run.target.run_id,
        vec![Feature::Status, Feature::FinalAnswer],
        "waiter",
    );
    let ctx = Arc::new(svc.admit_key(&[grant.key.as_bytes()]).unwrap());
    let target = serde_json::to_value(&run.target).unwrap();
    let rt = runtime();
    let look = |rt: &tokio::runtime::Runtime| first_look(rt, &svc, &ctx, &target);
    let answer = |rt: &tokio::runtime::Runtime| {
        rt.block_on(svc.call(
            ctx.clone(),
            tools::READ_FINAL_ANSWER,
            json!({"target": target}),
            None,
        ))
        .unwrap()
        .labeled
        .structured
    };
    // The gateway that sees the file ingests the run's end, and has not yet sealed it again.
    append(&path, &tail);
    env.ingest();
    let elsewhere = path.with_extension("on-another-host");
    std::fs::rename(&path, &elsewhere).unwrap();
    let seen = look(&rt);
    assert_eq!(seen["status"], "completed", "{seen}");
    assert_eq!(seen["settled"], false, "the snapshot lacks the end: {seen}");
    assert_eq!(answer(&rt)["state"], "unknown");
    // It seals again (the file is there for it), and this gateway's next look is settled: the
    // read right after it returns the answer.
    std::fs::rename(&elsewhere, &path).unwrap();
    env.owner()
        .maintain_snapshots(runread_core::timefmt::now_ms())
        .unwrap();
    std::fs::rename(&path, &elsewhere).unwrap();
    let seen = look(&rt);
    assert_eq!(seen["settled"], true, "{seen}");
    let read = answer(&rt);
    assert_eq!(read["state"], "available", "{read}");
    assert_eq!(read["evidence"], "snapshot", "{read}");
}

/// An orchestrator waits for its delegate's run by the label it chose, before the run is shared
/// (its reader holds no grant yet): the wait answers once a run so labelled is shared with it and
/// settled, and `list_granted_targets` names that run by the label. A run shared with another
/// reader under the same label, or with this reader under another label, answers nothing.
#[test]
fn a_wait_by_label_answers_once_a_run_so_labelled_is_shared_and_settled() {
    let env = Env::new();
    env.place("multi-run", Duration::from_secs(60));
    env.ingest();
    let runs = env.store.runs().unwrap();
    assert!(runs.len() >= 3, "{}", runs.len());
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let orchestrator = env.add_reader("orchestrator");
    env.add_reader("bystander");
    let ctx = Arc::new(svc.admit_key(&[orchestrator.key.as_bytes()]).unwrap());
    assert!(ctx.live_grants.is_empty(), "nothing shared yet");
    let rt = runtime();
    let args = json!({"label": "review of PR 42", "timeoutSeconds": WAIT_MAX_SECONDS});
    // The wait holds its slot before anything moves on.
    let waiting = held_wait(&rt, &svc, &ctx, args);
    let share = |run: &runread_store::RunRecord, reader: &str, label: &str| {
        let now = runread_core::timefmt::now_ms();
        env.owner()
            .grant_run(
                run.clone(),
                vec![Feature::Status, Feature::FinalAnswer],
                now + 600_000,
                (reader, runread_service::owner::NewReaderPolicy::Make),
                Some(label),
                now,
            )
            .unwrap()
    };
    // Neither of these is the orchestrator's run by that label.
    share(&runs[0], "bystander", "review of PR 42");
    share(&runs[1], "orchestrator", "another task");
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(!waiting.is_finished(), "woken by a run that is not it");
    share(&runs[2], "orchestrator", "review of PR 42");
    let answer = rt
        .block_on(async { tokio::time::timeout(EARLY, waiting).await })
        .expect("the labelled share answers the wait, before its timeout")
        .unwrap()
        .unwrap();
    assert_eq!(answer["found"], true, "{answer}");
    assert_eq!(answer["settled"], true, "{answer}");
    assert_eq!(answer["revision"]["generation"], runs[2].target.generation);

    // The listing names the run by its label, with the start of its prompt.
    let ctx = Arc::new(svc.admit_key(&[orchestrator.key.as_bytes()]).unwrap());
    let listed = rt
        .block_on(svc.call(ctx.clone(), tools::LIST_GRANTED_TARGETS, json!({}), None))
        .unwrap()
        .labeled
        .structured;
    runread_testkit::serve::assert_declared_output(tools::LIST_GRANTED_TARGETS, &listed);
    let by_label: Vec<&Value> = listed["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["label"] == "review of PR 42")
        .collect();
    assert_eq!(by_label.len(), 1, "{listed}");
    assert_eq!(
        by_label[0]["target"],
        serde_json::to_value(&runs[2].target).unwrap()
    );
    assert!(
        by_label[0]["run"]["prompt"]
            .as_str()
            .is_some_and(|p| !p.is_empty()),
        "{listed}"
    );
}

#[test]
fn a_wait_by_a_label_never_shared_answers_not_found_at_its_timeout_and_a_bad_label_is_refused() {
    let env = Env::new();
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let reader = env.add_reader("orchestrator");
    let ctx = Arc::new(svc.admit_key(&[reader.key.as_bytes()]).unwrap());
    let rt = runtime();
    let out = rt
        .block_on(wait(
            &svc,
            &ctx,
            json!({"label": "nothing by this name", "timeoutSeconds": 1}),
        ))
        .unwrap();
    assert_eq!(out["found"], false, "{out}");
    let max = runread_core::limits::GRANT_LABEL_MAX_BYTES;
    for args in [
        json!({"label": "x".repeat(max + 1)}),
        json!({"label": ""}),
        json!({"label": "two\nlines"}),
        json!({"label": "x", "target": {"instance": "i", "revision": 1, "workspaceId": "w",
               "sessionId": "s", "generation": 1, "runId": "r"}}),
        json!({"timeoutSeconds": 1}),
    ] {
        let refused = rt.block_on(wait(&svc, &ctx, args.clone()));
        assert_eq!(refused.unwrap_err(), ErrorCode::InvalidArguments, "{args}");
    }
    let at_bound = rt
        .block_on(wait(
            &svc,
            &ctx,
            json!({"label": "x".repeat(max), "timeoutSeconds": 1}),
        ))
        .unwrap();
    assert_eq!(at_bound["found"], false);
}

/// Shares `run` with `reader` (made if new) at `now_ms`, with `status` and `final_answer`.
fn share_at(env: &Env, run: &runread_store::RunRecord, reader: &str, now_ms: i64) {
    env.owner()
        .grant_run(
            run.clone(),
            vec![Feature::Status, Feature::FinalAnswer],
            now_ms + 600_000,
            (reader, runread_service::owner::NewReaderPolicy::Make),
            None,
            now_ms,
        )
        .unwrap();
}

/// An orchestrator that knows neither the run nor a label waits for "the next run shared with
/// me": a run shared with it before the call, and a run shared with another reader while it
/// waits, answer nothing; the first run shared with it after the call began answers, with the
/// instant the wait used and when that run was shared. Called again from that instant, the wait
/// finds the share after it.
#[test]
fn a_wait_for_the_next_share_answers_the_first_run_shared_with_this_reader_after_it_began() {
    let env = Env::new();
    env.place("multi-run", Duration::from_secs(60));
    env.ingest();
    let runs = env.store.runs().unwrap();
    assert!(runs.len() >= 3, "{}", runs.len());
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let orchestrator = env.add_reader("orchestrator");
    env.add_reader("bystander");
    let now = runread_core::timefmt::now_ms;
    // Shared before the wait began: not the next share.
    share_at(&env, &runs[0], "orchestrator", now() - 1);
    let ctx = Arc::new(svc.admit_key(&[orchestrator.key.as_bytes()]).unwrap());
    let rt = runtime();
    let began = now();
    let waiting = held_wait(
        &rt,
        &svc,
        &ctx,
        json!({"next": true, "timeoutSeconds": WAIT_MAX_SECONDS}),
    );
    share_at(&env, &runs[1], "bystander", now());
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(
        !waiting.is_finished(),
        "woken by a share with another reader, or by one made before it began"
    );
    let shared_at = now();
    share_at(&env, &runs[2], "orchestrator", shared_at);
    let answer = rt
        .block_on(async { tokio::time::timeout(EARLY, waiting).await })
        .expect("the next share answers the wait, before its timeout")
        .unwrap()
        .unwrap();
    assert_eq!(answer["found"], true, "{answer}");
    assert_eq!(answer["settled"], true, "{answer}");
    assert_eq!(answer["revision"]["generation"], runs[2].target.generation);
    let after = answer["sharedAfter"].as_str().expect("the instant it used");
    let after_ms = runread_core::timefmt::parse_exact(after).unwrap();
    assert!((began..shared_at).contains(&after_ms), "{answer}");
    assert_eq!(
        answer["sharedAt"],
        runread_core::timefmt::rfc3339(shared_at),
        "{answer}"
    );

    // From that share on: nothing yet, then the share after it.
    let from = json!({"next": true, "sharedAfter": answer["sharedAt"], "timeoutSeconds": 1});
    let none_yet = rt.block_on(wait(&svc, &ctx, from.clone())).unwrap();
    assert_eq!(none_yet["found"], false, "{none_yet}");
    assert_eq!(none_yet["sharedAfter"], answer["sharedAt"], "{none_yet}");
    assert!(none_yet.get("sharedAt").is_none(), "{none_yet}");
    share_at(&env, &runs[0], "orchestrator", shared_at + 1);
    let then = rt.block_on(wait(&svc, &ctx, from)).unwrap();
    assert_eq!(then["found"], true, "{then}");
    assert_eq!(then["revision"]["generation"], runs[0].target.generation);
    assert_eq!(
        then["sharedAt"],
        runread_core::timefmt::rfc3339(shared_at + 1)
    );
}

/// A wait for the next share that times out says the instant it used; called again with it, it
/// finds the run shared in between. Arguments that are not one of target, label or next:true,
/// or a sharedAfter that is not runread's spelling of an instant within its span of now, are
/// refused `invalid_arguments`, and the refusal carries none of them.
#[test]
fn a_timed_out_wait_for_the_next_share_misses_nothing_and_bad_arguments_are_refused() {
    let env = Env::new();
    env.place("multi-run", Duration::from_secs(60));
    env.ingest();
    let runs = env.store.runs().unwrap();
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let reader = env.add_reader("orchestrator");
    let ctx = Arc::new(svc.admit_key(&[reader.key.as_bytes()]).unwrap());
    let rt = runtime();
    let now = runread_core::timefmt::now_ms;
    let began = now();
    let timed_out = rt
        .block_on(wait(&svc, &ctx, json!({"next": true, "timeoutSeconds": 1})))
        .unwrap();
    assert_eq!(timed_out["found"], false, "{timed_out}");
    assert!(timed_out.get("sharedAt").is_none(), "{timed_out}");
    let after = timed_out["sharedAfter"].clone();
    let after_ms = runread_core::timefmt::parse_exact(after.as_str().unwrap()).unwrap();
    assert!(after_ms >= began && after_ms < now(), "{timed_out}");
    // Shared between the two calls.
    share_at(&env, &runs[1], "orchestrator", now());
    let again = rt
        .block_on(wait(
            &svc,
            &ctx,
            json!({"next": true, "sharedAfter": after, "timeoutSeconds": 1}),
        ))
        .unwrap();
    assert_eq!(again["found"], true, "{again}");
    assert_eq!(again["sharedAfter"], after, "{again}");
    assert_eq!(again["revision"]["generation"], runs[1].target.generation);

    let span = runread_core::limits::WAIT_SHARED_AFTER_SPAN_MS;
    let at = |ms: i64| runread_core::timefmt::rfc3339(ms);
    let target = serde_json::to_value(&runs[1].target).unwrap();
    let refusals = [
        json!({"next": false}),
        json!({"next": "true"}),
        json!({"next": true, "target": target}),
        json!({"next": true, "label": "review"}),
        json!({"label": "review", "target": target}),
        json!({"sharedAfter": at(now())}),
        json!({"label": "review", "sharedAfter": at(now())}),
        json!({"target": target, "sharedAfter": at(now())}),
        json!({"next": true, "sharedAfter": "yesterday"}),
        json!({"next": true, "sharedAfter": "2026-12-06T10:00:00Z"}),
        json!({"next": true, "sharedAfter": 1_796_000_763_380_i64}),
        // A minute beyond the span either way (its exact edge is the unit test's).
        json!({"next": true, "sharedAfter": at(now() - span - 60_000)}),
        json!({"next": true, "sharedAfter": at(now() + span + 60_000)}),
    ];
    for args in refusals {
        let refused = rt.block_on(wait(&svc, &ctx, args.clone()));
        assert_eq!(refused, Err(ErrorCode::InvalidArguments), "{args}");
        let text = ErrorCode::InvalidArguments.to_json().to_string();
        for leak in [&runs[1].target.run_id, &runs[1].target.session_id] {
            assert!(!text.contains(leak.as_str()), "{text}");
        }
        assert!(
            !text.contains("sharedAfter") && !text.contains(&at(now())[..4]),
            "{text}"
        );
    }
    // A minute within the span either way is waited on.
    for within in [now() - span + 60_000, now() + span - 60_000] {
        let out = rt
            .block_on(wait(
                &svc,
                &ctx,
                json!({"next": true, "sharedAfter": at(within), "timeoutSeconds": 1}),
            ))
            .unwrap();
        assert_eq!(out["sharedAfter"], at(within), "{out}");
    }
}

/// A share whose run is no longer current (its workspace removed) answers `found:false` at once,
/// with when it was shared, so that the next call, from that instant, moves past it instead of
/// finding it again.
#[test]
fn a_next_share_whose_run_is_no_longer_current_says_when_it_was_shared() {
    let env = Env::new();
    env.place("multi-run", Duration::from_secs(60));
    env.ingest();
    let runs = env.store.runs().unwrap();
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let reader = env.add_reader("orchestrator");
    let shared_at = runread_core::timefmt::now_ms();
    share_at(&env, &runs[0], "orchestrator", shared_at);
    env.store
        .remove_workspace(&env.ws.id, shared_at + 1)
        .unwrap()
        .unwrap();
    let ctx = Arc::new(svc.admit_key(&[reader.key.as_bytes()]).unwrap());
    let rt = runtime();
    let at = runread_core::timefmt::rfc3339;
    let from = |after: i64| json!({"next": true, "sharedAfter": at(after), "timeoutSeconds": 1});
    let stale = rt.block_on(wait(&svc, &ctx, from(shared_at - 1))).unwrap();
    assert_eq!(stale["found"], false, "{stale}");
    assert_eq!(stale["sharedAt"], at(shared_at), "{stale}");
    let past = rt.block_on(wait(&svc, &ctx, from(shared_at))).unwrap();
    assert_eq!(past["found"], false, "{past}");
    assert!(past.get("sharedAt").is_none(), "{past}");
}
