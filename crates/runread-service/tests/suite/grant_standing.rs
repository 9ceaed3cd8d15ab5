//! Where a grant stands (`admission::grant_standing`, what every listing shows) agrees with what
//! its reader's read gets: live exactly when the read is answered, stale — with why — exactly
//! when it is refused `target_stale`; a registration that changes nothing keeps both live.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use runread_core::{ErrorCode, Feature};
use runread_service::admission::{GrantStanding, Staleness, grant_standing};
use runread_service::{Config, Service, tools};
use runread_store::GrantState;
use runread_testkit::{Env, TestGrant, block_on};

/// What the grant's reader gets reading its run's final answer now, and where the grant stands.
fn read_and_standing(env: &Env, g: &TestGrant) -> (Result<(), ErrorCode>, GrantStanding) {
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let ctx = svc.admit_key(&[g.key.as_bytes()]).unwrap();
    let read = block_on(svc.call(
        Arc::new(ctx),
        tools::READ_FINAL_ANSWER,
        json!({"target": g.grant.target}),
        None,
    ))
    .map(|_| ());
    let now = runread_core::timefmt::now_ms();
    let standing = grant_standing(&*env.store, &g.grant, now).unwrap();
    (read, standing)
}

fn live() -> GrantStanding {
    GrantStanding {
        state: GrantState::Live,
        stale: None,
    }
}

fn stale(why: Staleness) -> GrantStanding {
    GrantStanding {
        state: GrantState::Stale,
        stale: Some(why),
    }
}

fn granted() -> (Env, TestGrant) {
    let env = Env::new();
    env.place("multi-run", Duration::from_secs(60));
    env.ingest();
    let run = env.store.runs().unwrap().remove(0);
    let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "t");
    (env, g)
}

#[test]
fn re_registering_a_root_unchanged_keeps_its_grants_readable() {
    let (env, g) = granted();
    assert_eq!(read_and_standing(&env, &g), (Ok(()), live()));
    let ws = env.store.workspace(&env.ws.id).unwrap().unwrap();
    let again = env.store.add_workspace(&ws.path, &ws.name, 2).unwrap();
    assert_eq!(again.revision, ws.revision);
    assert_eq!(read_and_standing(&env, &g), (Ok(()), live()));
}

#[test]
fn a_removed_workspace_makes_its_grants_stale_and_refused() {
    let (env, g) = granted();
    env.store.remove_workspace(&env.ws.id, 2).unwrap().unwrap();
    assert_eq!(
        read_and_standing(&env, &g),
        (
            Err(ErrorCode::TargetStale),
            stale(Staleness::WorkspaceRemoved)
        )
    );
    // Registered again: a new revision, so the grant made under the old one stays refused.
    let ws = env.store.workspace(&env.ws.id).unwrap().unwrap();
    env.store.add_workspace(&ws.path, &ws.name, 3).unwrap();
    assert_eq!(
        read_and_standing(&env, &g),
        (
            Err(ErrorCode::TargetStale),
            stale(Staleness::WorkspaceChanged)
        )
    );
}

#[test]
fn a_rewritten_session_file_makes_its_grants_stale_and_refused() {
    let (env, g) = granted();
    let path = std::path::PathBuf::from(&g.run.session_path);
    let copy = path.with_extension("copy");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::rename(&copy, &path).unwrap();
    runread_testkit::set_age(&path, Duration::from_secs(60));
    env.ingest();
    assert_eq!(
        read_and_standing(&env, &g),
        (
            Err(ErrorCode::TargetStale),
            stale(Staleness::SessionChanged)
        )
    );
}

#[test]
fn ended_grants_stand_as_ended_whatever_their_run() {
    let (env, g) = granted();
    env.store.revoke_grant(&g.grant.id, 2).unwrap();
    env.store.remove_workspace(&env.ws.id, 3).unwrap().unwrap();
    let now = runread_core::timefmt::now_ms();
    let stored = env.store.grants().unwrap().remove(0);
    let standing = grant_standing(&*env.store, &stored, now).unwrap();
    assert_eq!(
        standing,
        GrantStanding {
            state: GrantState::Revoked,
            stale: None
        }
    );
}
