//! Admission step 7: a grant revoked after admission (here: just before the call's start record
//! is written, while the call is inside the gate) lets nothing leave. The call is refused with
//! `grant_revoked`, and its start record carries a refusal receipt, never `ok`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use runread_core::{ErrorCode, Feature};
use runread_service::{Config, Service};
use runread_store::Store;
use runread_testkit::Env;
use runread_testkit::hooked::Hooked;

/// A home with the sample session ingested and one run granted every feature, and one
/// `read_final_answer` of it; with `hook_revokes`, the grant is revoked just before the call's
/// start record is written (after admission, before the adapter and the re-check).
async fn call_after(hook_revokes: bool) -> (Env, Result<runread_service::Answer, ErrorCode>) {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let keys = env.keys();
    let run = env.store.runs().unwrap().remove(0);
    let now = runread_core::timefmt::now_ms();
    let g = runread_service::owner::grant(
        &*env.store,
        &*keys,
        runread_service::owner::GrantRequest {
            run_id: &run.target.run_id,
            session_id: Some(&run.target.session_id),
            features: Feature::ALL.to_vec(),
            expires_at_ms: now + 600_000,
            label: "recheck",
        },
        now,
    )
    .unwrap();
    let mut store = Hooked::new(env.store.clone());
    if hook_revokes {
        let id = g.grant.id.clone();
        store.before_begin_call = Some(Box::new(move |inner: &dyn Store, _| {
            assert!(
                inner
                    .revoke_grant(&id, runread_core::timefmt::now_ms())
                    .unwrap()
            );
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
    let (env, out) = call_after(true).await;
    assert_eq!(out.err(), Some(ErrorCode::GrantRevoked));
    let audit = env.store.audit(0, 10).unwrap();
    assert_eq!(audit.len(), 1, "the call was started: its record stays");
    let outcomes: Vec<&str> = audit[0].1.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        ["refused:grant_revoked"],
        "receipted as refused, never ok"
    );
}

#[tokio::test]
async fn the_same_call_without_the_revocation_is_served() {
    let (env, out) = call_after(false).await;
    let answer = out.expect("served");
    assert_eq!(answer.labeled.structured["state"], "available");
    let audit = env.store.audit(0, 10).unwrap();
    assert_eq!(audit[0].1[0].outcome, "ok");
}
