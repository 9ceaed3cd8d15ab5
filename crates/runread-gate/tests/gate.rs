//! The gate's guarantees, each a named test: order (start record before adapter), failures before
//! the adapter, the deadline, and keys zeroized on every path.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};

use runread_core::{ErrorCode, Feature};
use runread_gate::{
    Call, Definition, ExecToken, FeatureReader, Gate, ReceiptFacts, Registry, Served,
};
use runread_keys::{KeyError, KeyProvider, OwnedKey};

use runread_store::sqlite::SqliteStore;

/// A key provider that counts live keys and can hand out a wrong key on `get`.
struct TestKeys {
    live: Arc<AtomicUsize>,
    wrong_on_get: bool,
}

impl KeyProvider for TestKeys {
    fn current(&self) -> Result<(String, OwnedKey), KeyError> {
        Ok(("k1".into(), OwnedKey::new([7; 32], Some(self.live.clone()))))
    }
    fn get(&self, _id: &str) -> Result<OwnedKey, KeyError> {
        let b = if self.wrong_on_get { 8 } else { 7 };
        Ok(OwnedKey::new([b; 32], Some(self.live.clone())))
    }
}

#[derive(Clone, Copy)]
enum Behavior {
    /// Checks that a start record exists (and has no receipt yet) when it runs.
    Probe,
    /// Blocks until released.
    Stall,
}

/// The probe tool's reader, as admission would make it for one call (`tool`: the tool it was
/// admitted for).
struct TestReader {
    tool: &'static str,
    behavior: Behavior,
    calls: Arc<AtomicUsize>,
    store: Arc<SqliteStore>,
    saw_start_record: Arc<AtomicUsize>,
    release: Arc<Mutex<Option<std::sync::mpsc::Receiver<()>>>>,
}

/// What the probe's result carries, in its words: the receipt of its `ok` records them as given.
const FACTS: ReceiptFacts = ReceiptFacts {
    evidence: Some("session_file"),
    state: Some("settled"),
};

fn definition() -> Definition {
    Definition {
        name: "probe",
        version: 1,
        description: "test adapter",
        feature: Some(Feature::Status),
        input_schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": false}),
        output_schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
        timeout: Duration::from_millis(300),
    }
}

impl FeatureReader for TestReader {
    fn tool(&self) -> &'static str {
        self.tool
    }

    fn execute(&self, _t: &ExecToken, input: &Value) -> Result<Served, ErrorCode> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match self.behavior {
            Behavior::Probe => {
                let rows = self.store.audit(0, 100).unwrap();
                if rows
                    .iter()
                    .any(|(m, receipts)| m.tool == "probe" && receipts.is_empty())
                {
                    self.saw_start_record.fetch_add(1, Ordering::SeqCst);
                }
                assert_eq!(
                    input,
                    &json!({"x": 1}),
                    "the adapter sees the unsealed input"
                );
            }
            Behavior::Stall => {
                let rx = self.release.lock().unwrap().take();
                if let Some(rx) = rx {
                    let _ = rx.recv_timeout(Duration::from_secs(30));
                }
            }
        }
        let mut m = Map::new();
        m.insert("ok".into(), json!(true));
        Ok(Served {
            output: m,
            facts: FACTS,
        })
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    store: Arc<SqliteStore>,
    gate: Gate,
    reader: Arc<TestReader>,
    live: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
    saw: Arc<AtomicUsize>,
    release: Option<std::sync::mpsc::Sender<()>>,
}

fn fixture(behavior: Behavior, wrong_on_get: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runread.db");
    let store = Arc::new(SqliteStore::open(&db).unwrap());
    let live = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let saw = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = Arc::new(TestReader {
        tool: "probe",
        behavior,
        calls: calls.clone(),
        store: store.clone(),
        saw_start_record: saw.clone(),
        release: Arc::new(Mutex::new(Some(rx))),
    });
    let digest = definition().digest();
    let pinned: &'static str = Box::leak(digest.into_boxed_str());
    let registry = Registry::build(vec![definition()], &[("probe", pinned)]).unwrap();
    let keys = Arc::new(TestKeys {
        live: live.clone(),
        wrong_on_get,
    });
    let gate = Gate::new(store.clone(), registry, keys);
    Fixture {
        _dir: dir,
        db,
        store,
        gate,
        reader,
        live,
        calls,
        saw,
        release: Some(tx),
    }
}

fn call(request_id: Option<&str>) -> Call {
    Call {
        tool: "probe".into(),
        request_id: request_id.map(str::to_owned),
        grant_id: "g1".into(),
        reader_id: "r1".into(),
        key_hash: "0123456789abcdef0123".into(),
        target: None,
        input: json!({"x": 1}),
        now_ms: runread_core::timefmt::now_ms(),
        replay_since_ms: None,
    }
}

impl Fixture {
    /// The probe's reader for one call.
    fn reader(&self) -> Arc<dyn FeatureReader> {
        self.reader.clone()
    }
}

#[tokio::test]
async fn adapter_runs_only_after_a_committed_start_record() {
    let f = fixture(Behavior::Probe, false);
    let out = f.gate.execute(call(None), f.reader()).await.unwrap();
    assert_eq!(f.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        f.saw.load(Ordering::SeqCst),
        1,
        "the start record was in the store when the adapter ran"
    );
    let receipts = f.store.receipts(&out.start_id).unwrap();
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0].outcome, "ok");
    assert_eq!(
        receipts[0].result_digest.as_deref(),
        Some(out.result_digest.as_str())
    );
    // What the result carried, as the reader gave it.
    assert_eq!(
        (
            receipts[0].evidence.as_deref(),
            receipts[0].state.as_deref()
        ),
        (FACTS.evidence, FACTS.state)
    );
    assert_eq!(
        f.live.load(Ordering::SeqCst),
        0,
        "every key handed out was zeroized"
    );
    // The start record holds the input sealed, never in the clear.
    let rec = f.store.start_record(&out.start_id).unwrap().unwrap();
    assert!(!rec.sealed_ciphertext.windows(5).any(|w| w == b"\"x\":1"));
}

#[tokio::test]
async fn a_replayed_request_id_reuses_its_start_record() {
    let f = fixture(Behavior::Probe, false);
    let a = f.gate.execute(call(Some("n:1")), f.reader()).await.unwrap();
    let b = f.gate.execute(call(Some("n:1")), f.reader()).await.unwrap();
    assert_eq!(a.start_id, b.start_id);
    // The replay's outcome is the one the record has: no second receipt saying it again.
    assert_eq!(f.store.receipts(&a.start_id).unwrap().len(), 1);
    let c = f.gate.execute(call(Some("n:2")), f.reader()).await.unwrap();
    assert_ne!(a.start_id, c.start_id);
}

/// The replay window at its edge: a repeat exactly `REPLAY_WINDOW_MS` after the first call still
/// finds its start record; one millisecond later it is a new call with a record of its own.
#[tokio::test]
async fn a_repeat_after_the_replay_window_gets_its_own_start_record() {
    let f = fixture(Behavior::Probe, false);
    let first = call(Some("n:7"));
    let t0 = first.now_ms;
    let a = f.gate.execute(first, f.reader()).await.unwrap();
    let mut at_edge = call(Some("n:7"));
    at_edge.now_ms = t0 + runread_core::limits::REPLAY_WINDOW_MS;
    let b = f.gate.execute(at_edge, f.reader()).await.unwrap();
    assert_eq!(a.start_id, b.start_id);
    let mut past = call(Some("n:7"));
    past.now_ms = t0 + runread_core::limits::REPLAY_WINDOW_MS + 1;
    let c = f.gate.execute(past, f.reader()).await.unwrap();
    assert_ne!(a.start_id, c.start_id);
}

#[tokio::test]
async fn missing_start_record_fails_before_the_adapter_and_zeroizes_the_key() {
    let f = fixture(Behavior::Probe, false);
    // The store silently drops start records: the gate must notice before any adapter work.
    let conn = rusqlite::Connection::open(&f.db).unwrap();
    conn.execute_batch("CREATE TRIGGER drop_starts BEFORE INSERT ON start_records BEGIN SELECT RAISE(IGNORE); END;").unwrap();
    drop(conn);
    let err = f.gate.execute(call(None), f.reader()).await.unwrap_err();
    assert_eq!(err, ErrorCode::Unavailable);
    assert_eq!(f.calls.load(Ordering::SeqCst), 0, "the adapter never ran");
    assert_eq!(f.live.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_unwritable_start_record_fails_before_the_adapter() {
    let f = fixture(Behavior::Probe, false);
    let conn = rusqlite::Connection::open(&f.db).unwrap();
    conn.execute_batch("CREATE TRIGGER fail_starts BEFORE INSERT ON start_records BEGIN SELECT RAISE(ABORT, 'disk full'); END;").unwrap();
    drop(conn);
    assert_eq!(
        f.gate.execute(call(None), f.reader()).await.unwrap_err(),
        ErrorCode::Unavailable
    );
    assert_eq!(f.calls.load(Ordering::SeqCst), 0);
    assert_eq!(f.live.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn wrong_key_fails_before_the_adapter_and_zeroizes_the_key() {
    let f = fixture(Behavior::Probe, true);
    assert_eq!(
        f.gate.execute(call(None), f.reader()).await.unwrap_err(),
        ErrorCode::Unavailable
    );
    assert_eq!(f.calls.load(Ordering::SeqCst), 0, "the adapter never ran");
    assert_eq!(f.live.load(Ordering::SeqCst), 0);
    // The start record exists, with a refusal receipt.
    let rows = f.store.audit(0, 10).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].1[0].outcome, "refused:unavailable");
}

#[tokio::test]
async fn stalled_adapter_is_bounded_by_the_deadline_with_the_key_zeroized() {
    let mut f = fixture(Behavior::Stall, false);
    let err = f.gate.execute(call(None), f.reader()).await.unwrap_err();
    assert_eq!(err, ErrorCode::Timeout);
    assert_eq!(f.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        f.live.load(Ordering::SeqCst),
        0,
        "no key is alive while the adapter stalls"
    );
    let rows = f.store.audit(0, 10).unwrap();
    assert_eq!(rows[0].1.len(), 1);
    assert_eq!(rows[0].1[0].outcome, "timeout");
    assert_eq!(
        (&rows[0].1[0].evidence, &rows[0].1[0].state),
        (&None, &None),
        "no result, nothing it carried"
    );
    // Let the stalled read finish; its late result goes nowhere.
    drop(f.release.take());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        f.store.audit(0, 10).unwrap()[0].1.len(),
        1,
        "a late result writes nothing"
    );
}

#[tokio::test]
async fn input_that_breaks_the_schema_is_refused_after_unsealing() {
    let f = fixture(Behavior::Probe, false);
    let mut c = call(None);
    c.input = json!({"x": "not an integer"});
    assert_eq!(
        f.gate.execute(c, f.reader()).await.unwrap_err(),
        ErrorCode::InvalidArguments
    );
    assert_eq!(f.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_reader_admitted_for_another_tool_never_runs() {
    let f = fixture(Behavior::Probe, false);
    let other = Arc::new(TestReader {
        tool: "other",
        behavior: Behavior::Probe,
        calls: f.calls.clone(),
        store: f.store.clone(),
        saw_start_record: f.saw.clone(),
        release: Arc::new(Mutex::new(None)),
    });
    assert_eq!(
        f.gate.execute(call(None), other).await.unwrap_err(),
        ErrorCode::Unavailable
    );
    assert_eq!(f.calls.load(Ordering::SeqCst), 0, "the reader never ran");
    let rows = f.store.audit(0, 10).unwrap();
    assert_eq!(rows[0].1[0].outcome, "refused:unavailable");
    assert_eq!(
        (&rows[0].1[0].evidence, &rows[0].1[0].state),
        (&None, &None)
    );
    assert_eq!(f.live.load(Ordering::SeqCst), 0);
}

#[test]
fn start_records_and_receipts_are_append_only() {
    let f = fixture(Behavior::Probe, false);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let out = rt.block_on(f.gate.execute(call(None), f.reader())).unwrap();
    let conn = rusqlite::Connection::open(&f.db).unwrap();
    assert!(
        conn.execute("UPDATE start_records SET tool = 'x'", [])
            .is_err()
    );
    assert!(conn.execute("DELETE FROM start_records", []).is_err());
    assert!(
        conn.execute("UPDATE receipts SET outcome = 'x'", [])
            .is_err()
    );
    assert!(conn.execute("DELETE FROM receipts", []).is_err());
    assert!(f.store.start_meta(&out.start_id).unwrap().is_some());
}
