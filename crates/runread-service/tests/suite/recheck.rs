//! Admission step 7: a grant revoked, or its reader's key rotated or the reader removed, after
//! admission (here: just before the call's start record is written, while the call is inside the
//! gate) lets nothing leave. The call is refused with its fixed code, and its start record carries
//! a refusal receipt, never `ok`. A run that moves under the call (an ingest lands meanwhile) is
//! read again, up to [`TARGET_MOVED_READS_MAX`] reads, before it is refused `target_changed`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::json;

use runread_core::limits::TARGET_MOVED_READS_MAX;
use runread_core::{ErrorCode, Feature};
use runread_service::{Config, Service};
use runread_store::Store;
use runread_testkit::Env;
use runread_testkit::hooked::Hooked;

/// What the owner does while the call is inside the gate.
#[derive(Clone, Copy, PartialEq)]
enum Meanwhile {
    Nothing,
    Revoke,
    RotateKey,
    RemoveReader,
}

/// A home with the sample session ingested and one run granted every feature, and one
/// `read_final_answer` of it; `meanwhile` happens just before the call's start record is written
/// (after admission, before the adapter and the re-check).
async fn call_after(meanwhile: Meanwhile) -> (Env, Result<runread_service::Answer, ErrorCode>) {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let keys = env.keys();
    let run = env.store.runs().unwrap().remove(0);
    let g = env.grant(&run.target.run_id, Feature::ALL.to_vec(), "recheck");
    let mut store = Hooked::new(env.store.clone());
    let (id, reader_id) = (g.grant.id.clone(), g.reader.id.clone());
    if meanwhile != Meanwhile::Nothing {
        store.before_begin_call = Some(Box::new(move |inner: &dyn Store, _| {
            let now = runread_core::timefmt::now_ms();
            assert!(match meanwhile {
                Meanwhile::Revoke => inner.revoke_grant(&id, now).unwrap(),
                Meanwhile::RotateKey => inner.rotate_reader_key(&reader_id, "another").unwrap(),
                Meanwhile::RemoveReader => inner.remove_reader(&reader_id, now).unwrap(),
                Meanwhile::Nothing => true,
            });
        }));
    }
    let service = Arc::new(Service::new(Arc::new(store), keys, Config::default()).unwrap());
    let ctx = Arc::new(service.admit_key(&[g.key.as_bytes()]).unwrap());
    let out = service
        .call(
            ctx,
            "read_final_answer",
            json!({"target": run.target}),
            None,
        )
        .await;
    (env, out)
}

#[tokio::test]
async fn a_grant_revoked_inside_the_gate_lets_nothing_leave() {
    let (env, out) = call_after(Meanwhile::Revoke).await;
    assert_eq!(out.err(), Some(ErrorCode::GrantRevoked));
    assert_refused_and_receipted(&env, "refused:grant_revoked");
}

#[tokio::test]
async fn a_key_rotated_or_a_reader_removed_inside_the_gate_lets_nothing_leave() {
    for meanwhile in [Meanwhile::RotateKey, Meanwhile::RemoveReader] {
        let (env, out) = call_after(meanwhile).await;
        assert_eq!(out.err(), Some(ErrorCode::InvalidKey));
        assert_refused_and_receipted(&env, "refused:invalid_key");
    }
}

/// The one call was started (its record stays) and receipted as `outcome`, never `ok`.
fn assert_refused_and_receipted(env: &Env, outcome: &str) {
    let audit = env.store.audit(0, 10).unwrap();
    assert_eq!(audit.len(), 1, "the call was started: its record stays");
    let outcomes: Vec<&str> = audit[0].1.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, [outcome], "receipted as refused, never ok");
}

#[tokio::test]
async fn the_same_call_without_the_revocation_is_served() {
    let (env, out) = call_after(Meanwhile::Nothing).await;
    let answer = out.expect("served");
    assert_eq!(answer.labeled.structured["state"], "available");
    let audit = env.store.audit(0, 10).unwrap();
    assert_eq!(audit[0].1[0].outcome, "ok");
}

/// A home with the sample session ingested and one run granted every feature, and one
/// `read_final_answer` of it (with a request id, as MCP gives every call) whose target moves
/// under its first `moves` reads: just before each read's start record is written, the session
/// file is touched (a new mtime, as an agent still writing it gives it) and ingested again, so
/// the run's file identity at the re-check is not the one admitted.
async fn call_while_the_run_moves(moves: u32) -> (Env, Result<runread_service::Answer, ErrorCode>) {
    let env = Env::new();
    let path = env.place("sample", Duration::from_secs(60));
    env.ingest();
    let keys = env.keys();
    let run = env.store.runs().unwrap().remove(0);
    let g = env.grant(&run.target.run_id, Feature::ALL.to_vec(), "moving");
    let mut store = Hooked::new(env.store.clone());
    let (sessions, touched) = (env.sessions.clone(), AtomicU32::new(0));
    store.before_begin_call = Some(Box::new(move |inner: &dyn Store, _| {
        let n = touched.fetch_add(1, Ordering::SeqCst);
        if n < moves {
            runread_testkit::set_age(&path, Duration::from_secs(61 + u64::from(n)));
            let dir = runread_ingest::AgentDir::new(runread_sessions::Agent::Pi, sessions.clone());
            let now = runread_core::timefmt::now_ms();
            runread_ingest::ingest_dir(inner, &dir, now, |_| {}).unwrap();
        }
    }));
    let service = Arc::new(Service::new(Arc::new(store), keys, Config::default()).unwrap());
    let ctx = Arc::new(service.admit_key(&[g.key.as_bytes()]).unwrap());
    let args = json!({"target": run.target});
    let out = service
        .call(ctx, "read_final_answer", args, Some("n:7".into()))
        .await;
    (env, out)
}

/// The outcomes receipted under the one start record the call left.
fn receipted(env: &Env) -> Vec<String> {
    let audit = env.store.audit(0, 10).unwrap();
    assert_eq!(
        audit.len(),
        1,
        "every read of the call replays one start record"
    );
    audit[0].1.iter().map(|r| r.outcome.clone()).collect()
}

#[tokio::test]
async fn a_run_that_moves_under_fewer_reads_than_the_bound_is_read_again_and_served() {
    let (env, out) = call_while_the_run_moves(TARGET_MOVED_READS_MAX - 1).await;
    let answer = out.expect("served after the run held still");
    assert_eq!(answer.labeled.structured["state"], "available");
    assert_eq!(receipted(&env), ["refused:target_changed", "ok"]);
}

#[tokio::test]
async fn a_run_that_moves_under_every_read_of_the_bound_is_refused_target_changed() {
    let (env, out) = call_while_the_run_moves(TARGET_MOVED_READS_MAX).await;
    assert_eq!(out.err(), Some(ErrorCode::TargetChanged));
    assert_eq!(receipted(&env), ["refused:target_changed"]);
}
