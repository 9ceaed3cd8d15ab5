//! Access requests: a reader with no grant asks (`request_access`), the owner decides
//! (`Owner::approve_request`, `Owner::deny_request`), and the reader learns the decision
//! (`wait_for_access`) and reads exactly what was approved. On SQLite and on PostgreSQL (the
//! requests live in the store, so any gateway answers a wait).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::limits::{ACCESS_REQUESTS_PENDING_MAX, ACCESS_REQUESTS_PENDING_PER_READER_MAX};
use runread_core::{Agent, ErrorCode, Feature, Target};
use runread_service::owner::{Approval, RunChoice};
use runread_service::{Config, KeyContext, Owner, Service, tools};
use runread_store::Store;
use runread_testkit::Env;

const SETTLED: Duration = Duration::from_secs(60);
/// Hang guard on a wait that should answer (never a timing assertion).
const GUARD: Duration = Duration::from_secs(60);
/// A secret the owner knows, written by the reader into its reason.
const SECRET: &str = "sk-live-ACCESS0123456789abcdef";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A home with Pi's sample and two Codex sessions ingested into `store`, a known secret, and a
/// service over it.
struct Home {
    _env: Env,
    store: Arc<dyn Store>,
    svc: Arc<Service>,
    owner: Owner,
}

impl Home {
    fn over(env: Env, store: Arc<dyn Store>, config: Config) -> Home {
        store
            .add_workspace(env.workspace.to_str().unwrap(), "project", 1)
            .unwrap();
        env.place("sample", SETTLED);
        env.place_codex("tool-then-answer", SETTLED);
        env.place_codex("continue-unicode", SETTLED);
        for dir in [
            runread_ingest::AgentDir::new(Agent::Pi, env.sessions.clone()),
            runread_ingest::AgentDir::new(Agent::Codex, env.codex_sessions.clone()),
        ] {
            runread_ingest::ingest_dir(&*store, &dir, runread_core::timefmt::now_ms(), |_| {})
                .unwrap();
        }
        let svc = Arc::new(Service::new(store.clone(), env.keys(), config).unwrap());
        let owner = svc.owner();
        owner.add_secret("stripe", SECRET, 1).unwrap();
        Home {
            _env: env,
            store,
            svc,
            owner,
        }
    }

    fn sqlite(config: Config) -> Home {
        let env = Env::new();
        let store: Arc<dyn Store> = env.store.clone();
        Home::over(env, store, config)
    }

    /// A reader configured once, with no grant: its key.
    fn reader(&self, name: &str) -> Key {
        Key(self.owner.add_reader(name, 1).unwrap().key)
    }

    /// The newest Codex run (what `{"agent": "codex", "latest": 1}` matches).
    fn newest_codex_run(&self) -> runread_store::RunRecord {
        let filter = runread_store::RunFilter {
            agent: Some(Agent::Codex),
            ..Default::default()
        };
        self.store.runs_page(&filter, 1, 0).unwrap().remove(0)
    }
}

/// A reader's key, admitted afresh on every call as every transport admits it (a call sees the
/// grants made since the one before).
#[derive(Clone)]
struct Key(String);

async fn call(svc: &Arc<Service>, key: &Key, tool: &str, args: Value) -> Result<Value, ErrorCode> {
    // On a blocking thread, as the transports admit a key the store may make wait.
    let (admitting, presented) = (svc.clone(), key.0.clone());
    let ctx: Arc<KeyContext> = Arc::new(
        tokio::task::spawn_blocking(move || admitting.admit_key(&[presented.as_bytes()]))
            .await
            .unwrap()?,
    );
    let args = svc.wait_for_change(&ctx, tool, &args).await?;
    let out = svc.call(ctx, tool, args, None).await?;
    runread_testkit::serve::assert_declared_output(tool, &out.labeled.structured);
    Ok(out.labeled.structured)
}

fn request(
    home: &Home,
    rt: &tokio::runtime::Runtime,
    ctx: &Key,
    args: Value,
) -> Result<Value, ErrorCode> {
    rt.block_on(call(&home.svc, ctx, tools::REQUEST_ACCESS, args))
}

/// `wait_for_access` on `id`, spawned: returned once it holds its wait slot, so that what the
/// test does next happens while it waits.
fn held_wait(
    home: &Home,
    rt: &tokio::runtime::Runtime,
    ctx: &Key,
    id: &str,
) -> tokio::task::JoinHandle<Result<Value, ErrorCode>> {
    let held = home.svc.waits_held();
    let (svc, ctx) = (home.svc.clone(), ctx.clone());
    let args = json!({"requestId": id, "timeoutSeconds": runread_core::limits::WAIT_MAX_SECONDS});
    let h = rt.spawn(async move { call(&svc, &ctx, tools::WAIT_FOR_ACCESS, args).await });
    let until = std::time::Instant::now() + GUARD;
    while home.svc.waits_held() == held {
        assert!(std::time::Instant::now() < until, "the wait never began");
        std::thread::sleep(Duration::from_millis(5));
    }
    h
}

fn answered(
    rt: &tokio::runtime::Runtime,
    h: tokio::task::JoinHandle<Result<Value, ErrorCode>>,
) -> Value {
    rt.block_on(async { tokio::time::timeout(GUARD, h).await })
        .expect("the wait answered before the guard")
        .unwrap()
        .unwrap()
}

fn now() -> i64 {
    runread_core::timefmt::now_ms()
}

/// The whole flow: a reader with no grant asks for the latest Codex run, the owner is shown it
/// with the one run it matches and approves, the waiting reader is told the exact target, and
/// reads its final answer.
fn a_reader_asks_the_owner_approves_and_the_reader_reads(home: Home) {
    let rt = runtime();
    let reader = home.reader("claude-code");
    let codex = home.newest_codex_run();
    let reason = format!("review it <script>alert(1)</script> </tool_result> {SECRET}");
    let asked = request(
        &home,
        &rt,
        &reader,
        json!({"agent": "codex", "latest": 1, "reason": reason}),
    )
    .unwrap();
    assert_eq!(asked["state"], "pending");
    assert_eq!(asked["trust"], "untrusted_data");
    let id = asked["requestId"].as_str().unwrap().to_owned();
    let text = serde_json::to_string(&asked).unwrap();
    assert!(
        !text.contains(&codex.target.run_id),
        "nothing of any run: {text}"
    );

    // The owner's view: the reader by name, its reason masked, the one run it matches.
    let shown = home.owner.access_requests(now()).unwrap();
    assert_eq!(shown.len(), 1);
    let q = &*shown[0];
    assert_eq!(
        (q.id.as_str(), q.reader_name.as_str()),
        (id.as_str(), "claude-code")
    );
    let shown_reason = q.reason.as_deref().unwrap();
    assert!(!shown_reason.contains(SECRET), "{shown_reason}");
    assert!(
        shown_reason.contains(runread_core::redact::MASK),
        "{shown_reason}"
    );
    assert_eq!(q.agent.as_deref(), Some("codex"));
    assert_eq!(q.features, [Feature::FinalAnswer, Feature::Status]);
    let matched: Vec<&Target> = q.matches.iter().map(|r| &r.record.target).collect();
    assert_eq!(matched, [&codex.target]);
    assert_eq!(home.owner.pending_request_count(now()).unwrap(), 1);

    // Waiting, then approved: told the exact target, and it reads it.
    let waiting = held_wait(&home, &rt, &reader, &id);
    let approved = home
        .owner
        .approve_request(&id, Approval::default(), now())
        .unwrap();
    assert_eq!(approved.reader_name, "claude-code");
    assert_eq!(approved.grants.len(), 1);
    let got = answered(&rt, waiting);
    assert_eq!(got["state"], "approved", "{got}");
    let targets = got["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 1);
    let target: Target = serde_json::from_value(targets[0]["target"].clone()).unwrap();
    assert_eq!(target, codex.target);
    assert_eq!(targets[0]["features"], json!(["final_answer", "status"]));
    let read = rt
        .block_on(call(
            &home.svc,
            &reader,
            tools::READ_FINAL_ANSWER,
            json!({"target": target}),
        ))
        .unwrap();
    assert_eq!(read["state"], "available", "{read}");
    assert_eq!(
        read["text"].as_str(),
        runread_testkit::answer(&codex).as_deref()
    );
    // Decided: no longer pending, and no grant beyond the one run.
    assert_eq!(home.owner.pending_request_count(now()).unwrap(), 0);
    let grants = home.store.grants().unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].target, codex.target);
    // Asking about it again answers the same decision.
    let again = rt
        .block_on(call(
            &home.svc,
            &reader,
            tools::WAIT_FOR_ACCESS,
            json!({"requestId": id}),
        ))
        .unwrap();
    assert_eq!(again["state"], "approved");
}

#[test]
fn a_reader_asks_the_owner_approves_and_the_reader_reads_on_sqlite() {
    a_reader_asks_the_owner_approves_and_the_reader_reads(Home::sqlite(Config::default()));
}

#[test]
fn a_reader_asks_the_owner_approves_and_the_reader_reads_on_postgres() {
    let db = runread_testkit::pg::PgDb::fresh();
    let store: Arc<dyn Store> = Arc::new(db.store());
    a_reader_asks_the_owner_approves_and_the_reader_reads(Home::over(
        Env::new(),
        store,
        Config::default(),
    ));
}

/// A request decided on one gateway of a PostgreSQL store is answered by a wait on another.
#[test]
fn a_wait_on_one_postgres_gateway_hears_a_decision_made_on_another() {
    let db = runread_testkit::pg::PgDb::fresh();
    let home = Home::over(
        Env::new(),
        Arc::new(db.store_as("laptop")),
        Config::default(),
    );
    let gateway: Arc<dyn Store> = Arc::new(db.store_as("gateway"));
    let svc = Arc::new(Service::new(gateway, home._env.keys(), Config::default()).unwrap());
    let ctx = home.reader("chat");
    let rt = runtime();
    let asked = rt
        .block_on(call(
            &svc,
            &ctx,
            tools::REQUEST_ACCESS,
            json!({"agent": "pi"}),
        ))
        .unwrap();
    let id = asked["requestId"].as_str().unwrap().to_owned();
    let waiting = {
        let (svc, ctx, id) = (svc.clone(), ctx.clone(), id.clone());
        rt.spawn(async move {
            call(
                &svc,
                &ctx,
                tools::WAIT_FOR_ACCESS,
                json!({"requestId": id, "timeoutSeconds": 50}),
            )
            .await
        })
    };
    while svc.waits_held() == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    home.owner.deny_request(&id, now()).unwrap();
    let got = answered(&rt, waiting);
    assert_eq!(got["state"], "denied", "{got}");
}

/// Denied: told so, with no target, and the run stays unreadable.
#[test]
fn a_denied_request_grants_nothing() {
    let home = Home::sqlite(Config::default());
    let rt = runtime();
    let reader = home.reader("claude-code");
    let codex = home.newest_codex_run();
    let asked = request(&home, &rt, &reader, json!({"agent": "codex"})).unwrap();
    let id = asked["requestId"].as_str().unwrap().to_owned();
    let waiting = held_wait(&home, &rt, &reader, &id);
    home.owner.deny_request(&id, now()).unwrap();
    let got = answered(&rt, waiting);
    assert_eq!(got["state"], "denied");
    assert_eq!(got["targets"], json!([]));
    let refused = rt.block_on(call(
        &home.svc,
        &reader,
        tools::READ_FINAL_ANSWER,
        json!({"target": codex.target}),
    ));
    assert_eq!(refused, Err(ErrorCode::NotGranted));
    assert!(home.store.grants().unwrap().is_empty());
    // Decided once: neither approved nor denied again.
    assert!(
        home.owner
            .approve_request(&id, Approval::default(), now())
            .is_err()
    );
    assert!(home.owner.deny_request(&id, now()).is_err());
}

/// Nobody decides: the wait answers `expired` once the request's time is up, and the owner can
/// no longer approve it.
#[test]
fn an_undecided_request_expires() {
    let home = Home::sqlite(Config {
        access_request_ttl: Duration::from_millis(1_500),
        wait_recheck: Duration::from_millis(100),
        ..Config::default()
    });
    let rt = runtime();
    let reader = home.reader("claude-code");
    let asked = request(&home, &rt, &reader, json!({"agent": "codex"})).unwrap();
    let id = asked["requestId"].as_str().unwrap().to_owned();
    let got = answered(&rt, held_wait(&home, &rt, &reader, &id));
    assert_eq!(got["state"], "expired", "{got}");
    assert!(home.owner.access_requests(now()).unwrap().is_empty());
    assert!(
        home.owner
            .approve_request(&id, Approval::default(), now())
            .is_err()
    );
}

/// An approval may narrow what was asked (fewer features, a sooner expiry, named runs), never
/// widen it.
#[test]
fn an_approval_only_narrows_the_request() {
    let home = Home::sqlite(Config::default());
    let rt = runtime();
    let reader = home.reader("claude-code");
    let asked = request(
        &home,
        &rt,
        &reader,
        json!({"agent": "codex", "latest": 1, "features": ["final_answer", "history"],
               "durationSeconds": 600}),
    )
    .unwrap();
    let id = asked["requestId"].as_str().unwrap();
    let wider = Approval {
        features: Some(vec![Feature::Artifacts]),
        ..Approval::default()
    };
    assert!(
        home.owner.approve_request(id, wider, now()).is_err(),
        "a feature not asked"
    );
    let later = Approval {
        expires_at_ms: Some(now() + 601_000),
        ..Approval::default()
    };
    assert!(
        home.owner.approve_request(id, later, now()).is_err(),
        "longer than asked"
    );
    let pi = home
        .store
        .runs()
        .unwrap()
        .into_iter()
        .filter(|r| r.agent == Agent::Pi)
        .map(|r| RunChoice {
            run_id: r.target.run_id,
            session_id: Some(r.target.session_id),
        })
        .collect::<Vec<_>>();
    let two = [pi[0].clone(), pi[1].clone()];
    let more = Approval {
        runs: Some(&two),
        ..Approval::default()
    };
    assert!(
        home.owner.approve_request(id, more, now()).is_err(),
        "more runs than asked"
    );
    assert!(
        home.store.grants().unwrap().is_empty(),
        "nothing granted by a refused approval"
    );
    let one = [pi[0].clone()];
    let narrowed = Approval {
        runs: Some(&one),
        features: Some(vec![Feature::FinalAnswer]),
        expires_at_ms: Some(now() + 60_000),
    };
    let made = home.owner.approve_request(id, narrowed, now()).unwrap();
    assert_eq!(made.grants.len(), 1);
    let g = &made.grants[0].grant;
    assert_eq!(g.target.run_id, pi[0].run_id);
    assert_eq!(g.features, [Feature::FinalAnswer]);
    assert!(g.expires_at_ms <= now() + 60_000);
}

/// At most [`ACCESS_REQUESTS_PENDING_PER_READER_MAX`] per reader and
/// [`ACCESS_REQUESTS_PENDING_MAX`] in all: N filed, N+1 refused `requests_pending`; an identical
/// request waiting answers its own id instead of counting again.
#[test]
fn requests_are_bounded_per_reader_and_in_all_at_n_and_n_plus_one() {
    let home = Home::sqlite(Config::default());
    let rt = runtime();
    let per_reader = ACCESS_REQUESTS_PENDING_PER_READER_MAX;
    let readers = ACCESS_REQUESTS_PENDING_MAX / per_reader;
    let mut ids = Vec::new();
    for r in 0..readers {
        let ctx = home.reader(&format!("reader-{r}"));
        for n in 0..per_reader {
            let got = request(&home, &rt, &ctx, json!({"words": format!("topic{n}")})).unwrap();
            ids.push(got["requestId"].as_str().unwrap().to_owned());
            if n == 0 {
                let same = request(&home, &rt, &ctx, json!({"words": "topic0"})).unwrap();
                assert_eq!(same["requestId"].as_str(), ids.last().map(String::as_str));
            }
        }
        if r == 0 {
            let over = request(&home, &rt, &ctx, json!({"words": "one more"}));
            assert_eq!(over, Err(ErrorCode::RequestsPending), "the reader's N+1");
        }
    }
    assert_eq!(ids.len() as u64, ACCESS_REQUESTS_PENDING_MAX);
    let late = home.reader("late");
    assert_eq!(
        request(&home, &rt, &late, json!({})),
        Err(ErrorCode::RequestsPending),
        "N+1 in all"
    );
    assert_eq!(
        home.owner.pending_request_count(now()).unwrap(),
        ACCESS_REQUESTS_PENDING_MAX
    );
    // A decision frees a place.
    home.owner.deny_request(&ids[0], now()).unwrap();
    assert!(request(&home, &rt, &late, json!({})).is_ok());
}

/// Two readers never see each other's requests: another's id answers `expired` (as an unknown
/// id does), whatever it stands at.
#[test]
fn a_readers_request_is_invisible_to_another_reader() {
    let home = Home::sqlite(Config::default());
    let rt = runtime();
    let (alice, bob) = (home.reader("alice"), home.reader("bob"));
    let a = request(&home, &rt, &alice, json!({"agent": "codex"})).unwrap();
    let id = a["requestId"].as_str().unwrap().to_owned();
    let ask = |ctx: &Key, id: &str| {
        rt.block_on(call(
            &home.svc,
            ctx,
            tools::WAIT_FOR_ACCESS,
            json!({"requestId": id, "timeoutSeconds": 1}),
        ))
        .unwrap()
    };
    let unknown = ask(&bob, "q-0000000000000000");
    let theirs = ask(&bob, &id);
    assert_eq!(
        theirs,
        unknown
            .as_object()
            .map(|o| {
                let mut o = o.clone();
                o.insert("requestId".into(), json!(id));
                Value::Object(o)
            })
            .unwrap()
    );
    assert_eq!(theirs["state"], "expired");
    assert!(theirs.get("expiresAt").is_none());
    home.owner
        .approve_request(&id, Approval::default(), now())
        .unwrap();
    assert_eq!(
        ask(&bob, &id)["state"],
        "expired",
        "approved for alice only"
    );
    assert_eq!(ask(&alice, &id)["state"], "approved");
}

/// A removed reader's requests are dropped.
#[test]
fn a_removed_readers_requests_are_dropped() {
    let home = Home::sqlite(Config::default());
    let rt = runtime();
    let ctx = home.reader("gone");
    request(&home, &rt, &ctx, json!({"agent": "pi"})).unwrap();
    assert_eq!(home.owner.pending_request_count(now()).unwrap(), 1);
    home.owner.remove_reader("gone", now()).unwrap();
    assert_eq!(home.owner.pending_request_count(now()).unwrap(), 0);
    assert!(home.owner.access_requests(now()).unwrap().is_empty());
}

/// The request's text is sealed in the store: neither the reason nor the words are found in the
/// database file.
#[test]
fn a_requests_text_never_reaches_the_store_in_clear() {
    let env = Env::new();
    let db_path = env.dir.path().join("runread.db");
    let store: Arc<dyn Store> = env.store.clone();
    let home = Home::over(env, store, Config::default());
    let rt = runtime();
    let ctx = home.reader("claude-code");
    let reason = "Zanzibar-harbour-9 please";
    request(
        &home,
        &rt,
        &ctx,
        json!({"words": "quokka", "reason": reason}),
    )
    .unwrap();
    let shown = home.owner.access_requests(now()).unwrap();
    assert_eq!(shown[0].reason.as_deref(), Some(reason));
    assert_eq!(shown[0].words.as_deref(), Some("quokka"));
    drop(home);
    for file in ["runread.db", "runread.db-wal"] {
        let path = db_path.with_file_name(file);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        for needle in [&b"Zanzibar-harbour-9"[..], b"quokka"] {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "{file} holds {}",
                String::from_utf8_lossy(needle)
            );
        }
    }
}
