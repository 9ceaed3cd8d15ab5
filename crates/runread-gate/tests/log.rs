//! The gate's log over time (`runread_gate::log`): a maintenance pass seals what is old enough
//! and prunes what the retention says is over, from the old end only; `verify` shows the log
//! that remains is whole, and finds each way of cutting or changing it; a store of a million calls
//! stays within its retention bound.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::path::Path;

use runread_core::limits::{
    AUDIT_RETENTION_CALLS_DEFAULT, AUDIT_RETENTION_CALLS_MIN, AUDIT_RETENTION_DAYS_DEFAULT,
    AUDIT_RETENTION_DAYS_MAX, AUDIT_RETENTION_DAYS_MIN, AUDIT_SEAL_AFTER_MS,
    AUDIT_SEAL_RECORDS_MAX,
};
use runread_gate::log::{self, Problem, Retention};
use runread_store::sqlite::SqliteStore;
use runread_store::{StartMeta, StartRecord, Store};

const DAY_MS: i64 = 86_400_000;
/// "Now" for every test: what the records' times are counted back from.
const NOW: i64 = 2_000 * DAY_MS;

fn start(id: &str, at: i64) -> StartRecord {
    StartRecord {
        meta: StartMeta {
            start_id: id.into(),
            idempotency_key: format!("once-{id}"),
            grant_id: "g-1".into(),
            key_hash_prefix: "0123456789ab".into(),
            reader_id: Some("r-1".into()),
            tool: "get_run".into(),
            binding_digest: "b".into(),
            target: None,
            input_digest: "i".into(),
            sealed_key_id: "k".into(),
            created_at_ms: at,
        },
        sealed_nonce: vec![0; 12],
        sealed_ciphertext: vec![1; 40],
    }
}

fn open() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("runread.db")).unwrap();
    (dir, s)
}

/// `n` calls in the store of `dir`, one every `step_ms` up to `last` ([`bulk`]).
fn calls(dir: &tempfile::TempDir, n: u64, last: i64, step_ms: i64) {
    bulk(&dir.path().join("runread.db"), n, last, step_ms);
}

/// Runs passes until one does nothing more (each pass makes a bounded number of checkpoints).
fn maintain_fully(s: &dyn Store, r: Retention, now: i64) -> log::Maintained {
    let mut all = log::Maintained::default();
    loop {
        let m = log::maintain(s, r, now).unwrap();
        assert_eq!((m.mismatch, m.broken_chain), (None, None));
        if m.seals == 0 && m.prunes == 0 {
            return all;
        }
        all.seals += m.seals;
        all.sealed += m.sealed;
        all.prunes += m.prunes;
        all.pruned += m.pruned;
    }
}

#[test]
fn the_retention_is_bounded_at_n_and_n_plus_one_and_kept_in_the_store() {
    let (_dir, s) = open();
    assert_eq!(Retention::of(&s).unwrap(), Retention::default());
    assert_eq!(
        Retention::default(),
        Retention::new(AUDIT_RETENTION_DAYS_DEFAULT, AUDIT_RETENTION_CALLS_DEFAULT).unwrap()
    );
    assert!(Retention::new(AUDIT_RETENTION_DAYS_MIN, AUDIT_RETENTION_CALLS_MIN).is_ok());
    assert!(Retention::new(AUDIT_RETENTION_DAYS_MIN - 1, AUDIT_RETENTION_CALLS_MIN).is_err());
    assert!(Retention::new(AUDIT_RETENTION_DAYS_MAX, AUDIT_RETENTION_CALLS_MIN).is_ok());
    assert!(Retention::new(AUDIT_RETENTION_DAYS_MAX + 1, AUDIT_RETENTION_CALLS_MIN).is_err());
    assert!(Retention::new(30, AUDIT_RETENTION_CALLS_MIN - 1).is_err());
    let r = Retention::new(30, 200_000).unwrap();
    r.save(&s).unwrap();
    assert_eq!(Retention::of(&s).unwrap(), r);
    s.put_setting("audit.retention_days", "0").unwrap();
    assert!(
        Retention::of(&s).is_err(),
        "out of bounds in the store: corrupt"
    );
}

#[test]
fn a_pass_seals_what_is_old_enough_and_prunes_what_is_past_the_period_from_the_old_end() {
    let (dir, s) = open();
    // 104 days of calls, one every 5 minutes (three seals' worth), and one a minute ago (too
    // new to seal).
    let n = 3 * AUDIT_SEAL_RECORDS_MAX;
    calls(&dir, n, NOW - 2 * AUDIT_SEAL_AFTER_MS, 300_000);
    s.begin_call(&start("st-new", NOW - 60_000), 0).unwrap();
    let r = Retention::new(30, AUDIT_RETENTION_CALLS_DEFAULT).unwrap();
    let m = maintain_fully(&s, r, NOW);
    assert_eq!((m.seals, m.sealed), (3, n));
    // The two seals wholly past the period are pruned; the one that straddles it is kept.
    assert_eq!((m.prunes, m.pruned), (2, 2 * AUDIT_SEAL_RECORDS_MAX));
    let left = s.audit_range(i64::MIN, i64::MAX, 20_000).unwrap();
    assert_eq!(left.len() as u64, n + 1 - m.pruned);
    let oldest_kept = NOW - 30 * DAY_MS;
    let first = left.first().unwrap().0.created_at_ms;
    assert!(
        first <= oldest_kept,
        "from the old end only, in whole seals"
    );
    assert!(first > oldest_kept - 35 * DAY_MS);
    assert!(
        left.windows(2)
            .all(|w| w[0].0.created_at_ms <= w[1].0.created_at_ms)
    );
    assert_eq!(left.last().unwrap().0.start_id, "st-new");
    let v = log::verify(&s).unwrap();
    assert_eq!(v.problem, None, "{v:?}");
    assert_eq!(v.records_pruned, m.pruned);
    assert_eq!(v.unsealed, 1, "the newest call is not sealed yet");
    assert_eq!(v.records_checked + v.unsealed, left.len() as u64);
    // A later pass with nothing new does nothing.
    assert_eq!(
        log::maintain(&s, r, NOW).unwrap(),
        log::Maintained::default()
    );
}

/// Each way of cutting or changing the log, done as someone with the database file would (the
/// store's triggers dropped first), is found by `verify` and named.
#[test]
fn verify_finds_every_cut_and_change() {
    type Tamper = fn(&rusqlite::Connection);
    type Found = fn(&Problem) -> bool;
    let cases: Vec<(&str, Tamper, Found)> = vec![
        (
            "a call cut out of a sealed range",
            |c| {
                c.execute_batch(
                    "DROP TRIGGER receipts_append_only_delete; \
                     DROP TRIGGER start_records_append_only_delete; \
                     DELETE FROM receipts WHERE start_id = 'st-0000200'; \
                     DELETE FROM start_records WHERE start_id = 'st-0000200';",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Seal { .. }),
        ),
        (
            "a receipt changed",
            |c| {
                c.execute_batch(
                    "DROP TRIGGER receipts_append_only_update; \
                     UPDATE receipts SET outcome = 'refused:not_granted' WHERE start_id = 'st-0000300';",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Seal { .. }),
        ),
        (
            "a call added into a sealed range",
            |c| {
                c.execute_batch(
                    "INSERT INTO start_records SELECT 'st-forged', idempotency_key, grant_id, \
                     key_hash_prefix, tool, binding_digest, target_json, input_digest, sealed_key_id, \
                     sealed_nonce, sealed_ciphertext, created_at, reader_id \
                     FROM start_records WHERE start_id = 'st-0000400';",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Seal { .. }),
        ),
        (
            "a receipt's evidence changed",
            |c| {
                c.execute_batch(
                    "DROP TRIGGER receipts_append_only_update; \
                     UPDATE receipts SET evidence = 'snapshot' WHERE start_id = 'st-0000301';",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Seal { .. }),
        ),
        (
            "a receipt's state erased",
            |c| {
                c.execute_batch(
                    "DROP TRIGGER receipts_append_only_update; \
                     UPDATE receipts SET state = NULL WHERE start_id = 'st-0000301';",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Seal { .. }),
        ),
        (
            "evidence given to a receipt written without it",
            |c| {
                c.execute_batch(
                    "DROP TRIGGER receipts_append_only_update; \
                     UPDATE receipts SET evidence = 'supervised' WHERE start_id = 'st-0000300';",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Seal { .. }),
        ),
        (
            "a seal removed",
            |c| {
                c.execute_batch(
                    "DROP TRIGGER audit_checkpoints_append_only_delete; \
                     DELETE FROM audit_checkpoints WHERE seq = 2;",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Chain { seq: 3 }),
        ),
        (
            "a seal's count changed",
            |c| {
                c.execute_batch(
                    "DROP TRIGGER audit_checkpoints_append_only_update; \
                     UPDATE audit_checkpoints SET records = records - 1 WHERE seq = 1;",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Chain { seq: 1 }),
        ),
        (
            "a prune forged to cover a cut",
            |c| {
                c.execute_batch(
                    "INSERT INTO audit_checkpoints SELECT max(seq) + 1, 'prune', -9223372036854775808, \
                     (SELECT upto_ms FROM audit_checkpoints WHERE seq = 1), 1, 1, 'x', 'y', 0 \
                     FROM audit_checkpoints; \
                     DELETE FROM receipts WHERE start_id = 'st-0000000'; \
                     DELETE FROM start_records WHERE start_id = 'st-0000000';",
                )
                .unwrap()
            },
            |p| matches!(p, Problem::Chain { .. }),
        ),
    ];
    for (what, tamper, found) in cases {
        let (dir, s) = open();
        calls(&dir, 500, NOW - 2 * AUDIT_SEAL_AFTER_MS, 60_000);
        let r = Retention::default();
        // Seals of 100 calls each, by sealing as time goes on.
        for step in 1..=5 {
            let then = NOW - 2 * AUDIT_SEAL_AFTER_MS - 500 * 60_000
                + step * 100 * 60_000
                + AUDIT_SEAL_AFTER_MS;
            log::maintain(&s, r, then).unwrap();
        }
        let before = log::verify(&s).unwrap();
        assert_eq!(before.problem, None, "{what}: {before:?}");
        assert!(before.checkpoints >= 3, "{what}: {before:?}");
        tamper(&rusqlite::Connection::open(dir.path().join("runread.db")).unwrap());
        let after = log::verify(&s).unwrap();
        let problem = after.problem.expect(what);
        assert!(found(&problem), "{what}: {problem:?}");
        assert!(!problem.to_string().is_empty());
        // A pass never prunes a range that no longer matches its seal.
        let m = log::maintain(
            &s,
            Retention::new(1, AUDIT_RETENTION_CALLS_MIN).unwrap(),
            NOW * 2,
        )
        .unwrap();
        match &problem {
            Problem::Seal { seq } => assert_eq!(m.mismatch, Some(*seq), "{what}"),
            Problem::Chain { seq } => {
                assert_eq!(m.broken_chain, Some(*seq), "{what}");
                assert_eq!(m.prunes, 0, "{what}: nothing pruned onto a broken chain");
            }
            Problem::PrunedRemain { .. } => {}
        }
        assert_eq!(
            log::verify(&s).unwrap().problem,
            Some(problem),
            "{what}: the evidence is kept"
        );
    }
}

/// Bulk-writes `n` calls into the store's file as the gate writes them (one start record and one
/// receipt each), one every `step_ms` up to `last`, in one transaction: a home after a very long
/// time, made in seconds. Every other receipt is of the form written before runread recorded what
/// a result carried (no evidence, no state), so each seal covers both forms.
fn bulk(path: &Path, n: u64, last: i64, step_ms: i64) {
    let mut c = rusqlite::Connection::open(path).unwrap();
    let tx = c.transaction().unwrap();
    {
        let mut st = tx
            .prepare(
                "INSERT INTO start_records (start_id, idempotency_key, grant_id, key_hash_prefix, \
                 tool, binding_digest, target_json, input_digest, sealed_key_id, sealed_nonce, \
                 sealed_ciphertext, created_at, reader_id) \
                 VALUES (?1, ?1, 'g-1', '0123456789ab', 'get_run', 'b', 'null', 'i', 'k', \
                 zeroblob(12), zeroblob(60), ?2, 'r-1')",
            )
            .unwrap();
        let mut rc = tx
            .prepare(
                "INSERT INTO receipts (receipt_id, start_id, outcome, result_digest, output_bytes, \
                 created_at, evidence, state) VALUES ('rc-' || ?1, ?1, 'ok', 'd', 700, ?2 + 1, \
                 CASE WHEN ?3 THEN 'session_file' END, CASE WHEN ?3 THEN 'settled' END)",
            )
            .unwrap();
        for i in 0..n {
            let at = last - (n - 1 - i) as i64 * step_ms;
            let id = format!("st-{i:07}");
            st.execute(rusqlite::params![id, at]).unwrap();
            rc.execute(rusqlite::params![id, at, i % 2 == 1]).unwrap();
        }
    }
    tx.commit().unwrap();
}

/// Issue 46: a store of a million calls (one a reader's polling every 8 s makes in three months
/// and more) stays within its retention bound: after the passes, nothing older than the period
/// is left, the log holds at most its bound on calls (to within one seal), and it verifies.
#[test]
fn a_million_call_store_stays_within_its_retention_bound() {
    let (dir, s) = open();
    let n = 1_000_000u64;
    let step = 8_000;
    bulk(
        &dir.path().join("runread.db"),
        n,
        NOW - AUDIT_SEAL_AFTER_MS - 1,
        step,
    );
    let r = Retention::new(60, 400_000).unwrap();
    maintain_fully(&s, r, NOW);
    let left = s.audit_count_after(i64::MIN).unwrap();
    assert!(
        left <= r.calls && left > r.calls - AUDIT_SEAL_RECORDS_MAX,
        "{left} calls left"
    );
    let oldest = s.audit_range(i64::MIN, i64::MAX, 1).unwrap();
    assert!(oldest[0].0.created_at_ms >= NOW - 60 * DAY_MS);
    let v = log::verify(&s).unwrap();
    assert_eq!(v.problem, None, "{v:?}");
    assert_eq!(v.records_pruned, n - left);
    assert_eq!(v.records_checked, left);
}
