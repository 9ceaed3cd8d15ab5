//! `get_run`: a low-sensitivity status projection; missing, cross-workspace and ungranted runs
//! are indistinguishable.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_service::{Config, KeyContext, Service, tools};

use runread_testkit::{Env, block_on, pi_versions};

fn get_run(svc: &Arc<Service>, ctx: &KeyContext, target: Value) -> (Value, String) {
    let out = block_on(svc.call(
        Arc::new(ctx.clone()),
        tools::GET_RUN,
        json!({"target": target}),
        None,
    ))
    .unwrap();
    runread_testkit::serve::assert_declared_output(tools::GET_RUN, &out.labeled.structured);
    (out.labeled.structured, out.labeled.text)
}

pi_versions! {
#[test]
fn missing_cross_workspace_and_ungranted_runs_are_indistinguishable(v) {
    let env = Env::new();
    env.place(&v.fixture("multi-run"), Duration::from_secs(60));
    // A second workspace with its own session, ingested into the same store.
    let other_ws = env.dir.path().join("other");
    std::fs::create_dir_all(&other_ws).unwrap();
    let other_ws = std::fs::canonicalize(other_ws).unwrap();
    env.store
        .add_workspace(other_ws.to_str().unwrap(), "other", 1)
        .unwrap();
    let src = runread_testkit::fixture_session(&v.fixture("sample"));
    let bytes =
        runread_testkit::relocated(&std::fs::read(src).unwrap(), other_ws.to_str().unwrap());
    std::fs::write(env.sessions.join("other.jsonl"), bytes).unwrap();
    env.ingest();

    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let runs = env.store.runs().unwrap();
    let mine: Vec<_> = runs
        .iter()
        .filter(|r| r.target.workspace_id == env.ws.id)
        .collect();
    let theirs = runs
        .iter()
        .find(|r| r.target.workspace_id != env.ws.id)
        .unwrap();
    let g = env.grant(&mine[0].target.run_id, vec![Feature::Status], "t");
    let ctx = svc.admit_key(&[g.key.as_bytes()]).unwrap();

    let (found, _) = get_run(&svc, &ctx, serde_json::to_value(&mine[0].target).unwrap());
    assert_eq!(found["found"], true);
    assert_eq!(found["status"], "completed");
    assert_eq!(found["origin"], "passive");
    let keys: Vec<&String> = found.as_object().unwrap().keys().collect();
    for k in &keys {
        assert!(
            [
                "found",
                "status",
                "revision",
                "eventSequence",
                "createdAt",
                "startedAt",
                "finishedAt",
                "origin",
                "trust",
                "instructions",
                "tool"
            ]
            .contains(&k.as_str()),
            "unexpected field {k}"
        );
    }
    let text = found.to_string();
    assert!(
        !text.contains(env.workspace.to_str().unwrap()) && !text.contains("sessions"),
        "no paths: {text}"
    );

    let mut missing = serde_json::to_value(&mine[0].target).unwrap();
    missing["runId"] = json!("ffffffff");
    let cross = serde_json::to_value(&theirs.target).unwrap();
    let ungranted = serde_json::to_value(&mine[1].target).unwrap();
    let answers: Vec<(Value, String)> = [missing, cross, ungranted]
        .into_iter()
        .map(|t| get_run(&svc, &ctx, t))
        .collect();
    for (structured, text) in &answers {
        assert_eq!(structured, &answers[0].0);
        assert_eq!(text, &answers[0].1);
    }
    assert_eq!(
        answers[0].0,
        json!({"trust": "untrusted_data", "instructions": false, "tool": "get_run", "found": false})
    );
}
}
