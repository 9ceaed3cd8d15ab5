//! What only the PostgreSQL store has to show: several processes (and hosts) on one database,
//! the schema's own guards, and failing closed — then recovering — when the database goes away.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runread_core::cursor::Purpose;
use runread_core::{Feature, Target};
use runread_store::postgres::PostgresStore;
use runread_store::{Grant, IngestCommit, StartMeta, StartOutcome, StartRecord, Store, StoreError};
use runread_testkit::pg::{self, PgDb};
use runread_testkit::records;

fn target() -> Target {
    Target {
        instance: "i".into(),
        revision: 1,
        workspace_id: "w".into(),
        session_id: "s".into(),
        generation: 1,
        run_id: "r".into(),
    }
}

/// The grant `id`, held by a reader of its own (`r-ID`, named `ID`) whose key hashes to
/// `key_hash`; [`give`] stores both.
fn grant(id: &str, _key_hash: &str) -> Grant {
    Grant {
        id: id.into(),
        reader_id: format!("r-{id}"),
        reader_name: id.into(),
        target: target(),
        features: vec![Feature::FinalAnswer],
        created_at_ms: 1,
        expires_at_ms: i64::MAX,
        revoked_at_ms: None,
        label: None,
    }
}

/// Stores [`grant`]`(id, key_hash)` and its reader.
fn give(store: &dyn Store, id: &str, key_hash: &str) {
    store
        .insert_reader(&runread_store::Reader {
            id: format!("r-{id}"),
            name: id.into(),
            key_hash: key_hash.into(),
            created_at_ms: 1,
            removed_at_ms: None,
        })
        .unwrap();
    store.insert_grant(&grant(id, key_hash)).unwrap();
}

fn start(id: &str, key: &str, at: i64) -> StartRecord {
    StartRecord {
        meta: StartMeta {
            start_id: id.into(),
            idempotency_key: key.into(),
            grant_id: "g".into(),
            key_hash_prefix: "abcd".into(),
            tool: "read_final_answer".into(),
            binding_digest: "b".into(),
            target: Some(target()),
            input_digest: "in".into(),
            sealed_key_id: "k1".into(),
            created_at_ms: at,
            reader_id: None,
        },
        sealed_nonce: vec![1],
        sealed_ciphertext: vec![2],
    }
}

fn ingest(
    s: &dyn Store,
    session_id: &str,
    path: &str,
    ws: &str,
    run_id: &str,
) -> runread_store::Result<()> {
    s.commit_ingest(&IngestCommit {
        session: records::session_at(session_id, path, ws, 1),
        new_generation: true,
        new_entries: vec![],
        runs: vec![records::run(run_id)],
    })
}

#[test]
fn two_stores_on_one_database_share_grants_revocations_and_the_cursor_key() {
    let db = PgDb::fresh();
    let a = db.store_as("gateway-1");
    let b = db.store_as("gateway-2");
    assert_eq!(
        a.instance_id(),
        b.instance_id(),
        "one database, one instance"
    );

    give(&a, "g1", "hash1");
    assert_eq!(
        b.grant_of_key("g1", "hash1").unwrap(),
        Some(grant("g1", "hash1"))
    );
    assert!(b.revoke_grant("g1", 7).unwrap());
    assert_eq!(
        a.grant_of_key("g1", "hash1")
            .unwrap()
            .unwrap()
            .revoked_at_ms,
        Some(7),
        "a revocation through one is seen by the other at once"
    );
    assert!(!a.revoke_grant("g1", 8).unwrap());

    let cursor = a
        .cursor_key()
        .encode(Purpose::FinalAnswer, &target(), "v", 4096);
    assert_eq!(
        b.cursor_key()
            .decode(&cursor, Purpose::FinalAnswer, &target(), "v"),
        Some(4096),
        "a cursor issued by one is accepted by the other"
    );

    a.begin_call(&start("st1", "k", 10), 0).unwrap();
    a.append_receipt(&runread_store::Receipt {
        receipt_id: "rc1".into(),
        start_id: "st1".into(),
        outcome: "ok".into(),
        result_digest: None,
        output_bytes: None,
        created_at_ms: 11,
        evidence: None,
        state: None,
    })
    .unwrap();
    let audit = b.audit(0, 10).unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].1.len(), 1);
}

#[test]
fn sessions_and_workspaces_are_namespaced_by_host() {
    let db = PgDb::fresh();
    let a = db.store_as("laptop-a");
    let b = db.store_as("laptop-b");
    let gw = db.store_as("gateway");
    // The same path on two machines: two workspaces.
    let wa = a.add_workspace("/home/dev/proj", "proj", 1).unwrap();
    let wb = b.add_workspace("/home/dev/proj", "proj", 1).unwrap();
    assert_ne!(wa.id, wb.id);
    assert_eq!(wb.revision, 1, "not a re-add of the other host's workspace");
    assert_eq!(a.workspaces().unwrap(), vec![wa.clone()]);
    assert_eq!(b.workspaces().unwrap(), vec![wb.clone()]);
    assert!(
        gw.workspaces().unwrap().is_empty(),
        "the gateway registered none"
    );
    assert_eq!(
        gw.workspace(&wa.id).unwrap(),
        Some(wa.clone()),
        "by id: any host"
    );

    // The same session file path on two machines: two sessions.
    let path = "/home/dev/.pi/agent/sessions/x.jsonl";
    ingest(&a, "sa", path, &wa.id, "ra").unwrap();
    ingest(&b, "sb", path, &wb.id, "rb").unwrap();
    assert_eq!(a.session_by_path(path).unwrap().unwrap().session_id, "sa");
    assert_eq!(b.session_by_path(path).unwrap().unwrap().session_id, "sb");
    assert!(gw.session_by_path(path).unwrap().is_none());
    let under = |s: &PostgresStore| -> Vec<String> {
        s.sessions_with_path_prefix("/home/dev/", 10)
            .unwrap()
            .into_iter()
            .map(|r| r.session_id)
            .collect()
    };
    assert_eq!(
        under(&a),
        vec!["sa".to_owned()],
        "a directory's records: this host's"
    );
    assert_eq!(under(&b), vec!["sb".to_owned()]);
    assert!(under(&gw).is_empty());
    assert_eq!(gw.session("sa").unwrap().unwrap().workspace_id, wa.id);

    // A gateway serves runs from every host.
    let mut runs: Vec<_> = gw
        .runs()
        .unwrap()
        .into_iter()
        .map(|r| r.run.run_id)
        .collect();
    runs.sort();
    assert_eq!(runs, vec!["ra".to_owned(), "rb".to_owned()]);
    assert!(gw.run("sa", 1, "ra").unwrap().is_some());

    // A session id another host ingested is not taken over (its file is not here).
    match ingest(&b, "sa", "/elsewhere/sa.jsonl", &wb.id, "rx") {
        Err(StoreError::Conflict(_)) => {}
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(gw.session("sa").unwrap().unwrap().path, path);
    assert!(gw.runs_by_id("rx").unwrap().is_empty());
}

#[test]
fn start_records_and_receipts_are_append_only_even_for_the_owner() {
    let db = PgDb::fresh();
    let s = db.store();
    s.begin_call(&start("st1", "k", 10), 0).unwrap();
    s.append_receipt(&runread_store::Receipt {
        receipt_id: "rc1".into(),
        start_id: "st1".into(),
        outcome: "ok".into(),
        result_digest: None,
        output_bytes: None,
        created_at_ms: 11,
        evidence: None,
        state: None,
    })
    .unwrap();
    s.log_snapshot(&runread_store::SnapshotEvent {
        id: "sl-1".into(),
        at_ms: 12,
        event: "destroyed".into(),
        session_id: "s".into(),
        generation: 1,
        run_id: "r".into(),
        lines: 1,
        bytes: 1,
    })
    .unwrap();
    let mut c = db.client();
    for sql in [
        "UPDATE snapshot_log SET event = 'x'",
        "DELETE FROM snapshot_log",
        "TRUNCATE snapshot_log",
        "UPDATE start_records SET tool = 'x'",
        "DELETE FROM start_records",
        "TRUNCATE start_records CASCADE",
        "UPDATE receipts SET outcome = 'x'",
        "DELETE FROM receipts",
        "TRUNCATE receipts",
    ] {
        let e = c.batch_execute(sql).expect_err(sql);
        let msg = e
            .as_db_error()
            .map(|d| d.message().to_owned())
            .unwrap_or_default();
        assert!(msg.contains("append-only"), "{sql}: {msg}");
    }
    assert_eq!(s.receipts("st1").unwrap().len(), 1);
}

#[test]
fn concurrent_first_starts_migrate_once_and_agree_on_the_instance() {
    let db = PgDb::fresh();
    let url = db.url.clone();
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                let s = PostgresStore::connect_as(&url, &format!("h{i}")).unwrap();
                (
                    s.instance_id().to_owned(),
                    s.cursor_key().encode(Purpose::History, &target(), "v", 1),
                )
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let check = db.store();
    for (id, cursor) in &results {
        assert_eq!(id, check.instance_id());
        assert_eq!(
            check
                .cursor_key()
                .decode(cursor, Purpose::History, &target(), "v"),
            Some(1)
        );
    }
    let mut c = db.client();
    let versions: Vec<i32> = c
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, (1..=versions.len() as i32).collect::<Vec<_>>());
    assert!(versions.len() >= 5);
}

#[test]
fn concurrent_calls_with_one_idempotency_key_make_one_start_record() {
    let db = PgDb::fresh();
    let stores = [Arc::new(db.store_as("g1")), Arc::new(db.store_as("g2"))];
    for round in 0..5 {
        let key = format!("idem-{round}");
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let s = stores[i % 2].clone();
                let key = key.clone();
                std::thread::spawn(move || {
                    s.begin_call(&start(&format!("st-{round}-{i}"), &key, 100), 0)
                })
            })
            .collect();
        let outcomes: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap().unwrap())
            .collect();
        let created = outcomes
            .iter()
            .filter(|o| **o == StartOutcome::Created)
            .count();
        assert_eq!(created, 1, "round {round}: {outcomes:?}");
        let existing: std::collections::BTreeSet<_> = outcomes
            .iter()
            .filter_map(|o| match o {
                StartOutcome::Existing(r) => Some(r.meta.start_id.clone()),
                StartOutcome::Created => None,
            })
            .collect();
        assert!(
            existing.len() <= 1,
            "every replay names the one record: {existing:?}"
        );
    }
    assert_eq!(stores[0].audit(0, 100).unwrap().len(), 5);
}

#[test]
fn works_from_spawn_blocking_and_drops_inside_an_async_task() {
    let db = PgDb::fresh();
    let url = db.url.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store: Arc<dyn Store> = Arc::new(
            tokio::task::spawn_blocking(move || PostgresStore::connect_as(&url, "h"))
                .await
                .unwrap()
                .unwrap(),
        );
        let s = store.clone();
        let ws = tokio::task::spawn_blocking(move || s.add_workspace("/w", "w", 1))
            .await
            .unwrap()
            .unwrap();
        let tasks: Vec<_> = (0..32)
            .map(|_| {
                let s = store.clone();
                let id = ws.id.clone();
                tokio::task::spawn_blocking(move || s.workspace(&id))
            })
            .collect();
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap(), Some(ws.clone()));
        }
        // The last handle goes away on a runtime worker: closing the pool must not block or
        // start a runtime here (the sync client would panic).
        drop(store);
    });
    drop(rt);
}

#[test]
fn a_schema_from_a_newer_runread_is_refused() {
    let db = PgDb::fresh();
    drop(db.store());
    db.client()
        .batch_execute("INSERT INTO schema_migrations(version) VALUES (999)")
        .unwrap();
    match PostgresStore::connect_as(&db.url, "h") {
        Err(StoreError::Corrupt(m)) => assert!(m.contains("newer"), "{m}"),
        Err(e) => panic!("expected Corrupt, got {e:?}"),
        Ok(_) => panic!("a newer schema was accepted"),
    }
}

#[test]
fn connection_errors_are_unavailable_and_never_quote_the_url() {
    let started = Instant::now();
    // Port 1 on loopback: nothing listens.
    let err = PostgresStore::connect_as("postgres://runread:s3cr3t-pw@127.0.0.1:1/x", "h")
        .err()
        .expect("nothing listens on port 1");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(!format!("{err:?} {err}").contains("s3cr3t-pw"));
    let err = PostgresStore::connect_as("postgres://runread:s3cr3t-pw@127.0.0.1:99999/x", "h")
        .err()
        .expect("an invalid port");
    assert!(!format!("{err:?} {err}").contains("s3cr3t-pw"), "{err:?}");
    // A TLS parameter runread does not know is refused, without quoting the URL either (TLS
    // itself: crates/runread/tests/suite/postgres_tls.rs).
    let err = PostgresStore::connect_as(
        "postgres://runread:s3cr3t-pw@127.0.0.1/x?sslmode=allow",
        "h",
    )
    .err()
    .expect("sslmode=allow is not supported");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(!format!("{err:?} {err}").contains("s3cr3t-pw"), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn killed_connections_mid_load_fail_closed_and_the_pool_recovers() {
    let db = PgDb::fresh();
    let store = Arc::new(db.store());
    let ws = store.add_workspace("/w", "w", 1).unwrap();
    give(&*store, "live", "hash-live");
    give(&*store, "gone", "hash-gone");
    assert!(store.revoke_grant("gone", 5).unwrap());

    // Idle pooled connections killed: the next call reconnects without failing.
    assert!(pg::terminate_backends(&mut pg::admin(), &db.name) > 0);
    assert!(store.grant_of_key("live", "hash-live").unwrap().is_some());

    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let unavailable = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (s, stop, ok, unavailable) =
                (store.clone(), stop.clone(), ok.clone(), unavailable.clone());
            let ws = ws.id.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let results: Vec<runread_store::Result<()>> = vec![
                        s.grant_of_key("gone", "hash-gone").map(|g| {
                            // Never a stale read: the revocation holds on every answer.
                            assert!(g.iter().all(|g| g.revoked_at_ms == Some(5)), "{g:?}");
                        }),
                        s.begin_call(&start(&format!("st-{w}-{n}"), &format!("k-{w}-{n}"), 1), 0)
                            .map(|_| ()),
                        ingest(&*s, &format!("s-{w}"), &format!("/p/{w}"), &ws, "r"),
                        s.runs().map(|_| ()),
                    ];
                    for r in results {
                        match r {
                            Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                            Err(StoreError::Unavailable(_)) => {
                                unavailable.fetch_add(1, Ordering::Relaxed)
                            }
                            Err(e) => panic!("a killed connection must read as Unavailable: {e:?}"),
                        };
                    }
                }
            })
        })
        .collect();
    let mut killed = 0;
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        killed += pg::terminate_backends(&mut pg::admin(), &db.name);
        std::thread::sleep(Duration::from_millis(15));
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("no store call panics");
    }
    eprintln!(
        "killed {killed} backends; {} calls ok, {} unavailable",
        ok.load(Ordering::Relaxed),
        unavailable.load(Ordering::Relaxed)
    );
    assert!(killed > 0);
    assert!(ok.load(Ordering::Relaxed) > 0);
    // Recovered: every call works again.
    for _ in 0..20 {
        store.runs().unwrap();
        assert_eq!(
            store
                .grant_of_key("gone", "hash-gone")
                .unwrap()
                .unwrap()
                .revoked_at_ms,
            Some(5)
        );
    }
}

/// A TCP proxy in front of the database that can be cut (existing connections shut, new ones
/// refused) and restored: the database "goes away" and "comes back" without touching the server.
struct Proxy {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let done = Arc::new(AtomicBool::new(false));
        let live = Arc::new(Mutex::new(Vec::new()));
        let (up2, done2, live2) = (up.clone(), done.clone(), live.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if done2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if !up2.load(Ordering::SeqCst) {
                    drop(client); // refused while the database is "down"
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut l = live2.lock().unwrap();
                l.push(client.try_clone().unwrap());
                l.push(server.try_clone().unwrap());
                drop(l);
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy {
            addr,
            up,
            done,
            live,
        }
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.done.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wake the accept loop so it ends
    }
}

#[test]
fn an_unreachable_database_is_unavailable_fast_and_the_store_recovers() {
    let db = PgDb::fresh();
    let proxy = Proxy::start(pg::server_addr());
    let url = pg::kv_url(&db.name, None, Some(proxy.addr.port()));
    let store = PostgresStore::connect_as(&url, "h").unwrap();
    give(&store, "g1", "hash1");
    // Fill the pool with a few connections.
    let s = Arc::new(store);
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || s.grants().unwrap())
        })
        .collect();
    hs.into_iter().for_each(|h| {
        h.join().unwrap();
    });

    proxy.cut();
    for _ in 0..3 {
        let started = Instant::now();
        match s.grant_of_key("g1", "hash1") {
            Err(StoreError::Unavailable(_)) => {}
            other => panic!("the database is gone: expected Unavailable, got {other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(
            s.revoke_grant("g1", 9),
            Err(StoreError::Unavailable(_))
        ));
    }

    proxy.restore();
    let g = s.grant_of_key("g1", "hash1").unwrap().unwrap();
    assert_eq!(
        g.revoked_at_ms, None,
        "the failed revocation did not happen"
    );
    assert!(s.revoke_grant("g1", 10).unwrap());
    drop(proxy);
}

#[test]
fn a_call_never_waits_unboundedly_on_a_lock_and_the_connection_stays_usable() {
    let db = PgDb::fresh();
    let s = db.store();
    give(&s, "g1", "hash1");
    let mut other = db.client();
    let mut hold = other.transaction().unwrap();
    hold.execute("SELECT id FROM grants WHERE id = 'g1' FOR UPDATE", &[])
        .unwrap();
    let started = Instant::now();
    match s.revoke_grant("g1", 5) {
        Err(StoreError::Unavailable(detail)) => {
            assert!(detail.contains("55P03"), "lock timeout expected: {detail}")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(runread_store::postgres::LOCK_TIMEOUT_MS - 500)
            && waited < Duration::from_millis(runread_store::postgres::LOCK_TIMEOUT_MS + 3_000),
        "{waited:?}"
    );
    hold.rollback().unwrap();
    assert!(s.revoke_grant("g1", 6).unwrap(), "the store works on");
}

#[test]
fn concurrent_writers_on_two_stores_serialize() {
    let db = PgDb::fresh();
    let stores = [Arc::new(db.store_as("h")), Arc::new(db.store_as("h"))];
    // Removing and registering again one workspace from two processes at once: every bump
    // counted once. Each removal that took disables it once and each registration that found it
    // removed enables it once, so ending enabled, it moved twice per removal that took.
    let first = stores[0].add_workspace("/w", "w", 0).unwrap();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let s = stores[i % 2].clone();
            let id = first.id.clone();
            std::thread::spawn(move || {
                let removed = s.remove_workspace(&id, i as i64).unwrap().is_some();
                s.add_workspace("/w", "w", i as i64).unwrap();
                u64::from(removed)
            })
        })
        .collect();
    let removals: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let last = stores[0].add_workspace("/w", "w", 9).unwrap();
    assert!(removals >= 1);
    assert_eq!(last.revision, 1 + 2 * removals);
    // Ingest commits of one session from two processes (say `watch` and `ingest`): each one
    // lands whole.
    let ws = stores[0].workspaces().unwrap()[0].id.clone();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let s = stores[i % 2].clone();
            let ws = ws.clone();
            std::thread::spawn(move || {
                s.commit_ingest(&IngestCommit {
                    session: records::session_at("s1", "/p/s1", &ws, 1),
                    new_generation: i % 3 == 0,
                    new_entries: vec![],
                    runs: vec![
                        records::run(&format!("r{i}")),
                        records::run(&format!("q{i}")),
                    ],
                })
                .unwrap()
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let runs = stores[1].runs().unwrap();
    assert_eq!(runs.len(), 2, "one commit's complete set of runs: {runs:?}");
    assert_eq!(runs[0].run.run_id[1..], runs[1].run.run_id[1..]);
}
