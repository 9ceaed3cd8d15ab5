//! `read_final_answer` through the service: the publication rule, the size limit at its edge,
//! and every result valid against the tool's declared output schema.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::limits::FINAL_ANSWER_MAX_BYTES;
use runread_core::{ErrorCode, Feature};
use runread_service::{Config, KeyContext, Service, tools};
use runread_store::Store;
use runread_testkit::{Env, block_on, pi_versions, set_age};

const SETTLED: Duration = Duration::from_secs(60);

fn service(env: &Env) -> Arc<Service> {
    Arc::new(
        Service::new(
            env.store.clone() as Arc<dyn Store>,
            env.keys(),
            Config::default(),
        )
        .unwrap(),
    )
}

/// Grants each run of the store (in file order) to its own fresh key; returns the admitted
/// contexts beside the runs.
fn grant_all(env: &Env, svc: &Arc<Service>) -> (Vec<KeyContext>, Vec<runread_store::RunRecord>) {
    let mut runs = env.store.runs().unwrap();
    runs.sort_by_key(|r| r.run.start_line);
    let ctxs = runs
        .iter()
        .map(|r| {
            let g = env.grant_in(
                &r.target.run_id,
                Some(&r.target.session_id),
                vec![Feature::FinalAnswer],
                "t",
            );
            svc.admit_key(&[g.key.as_bytes()]).unwrap()
        })
        .collect();
    (ctxs, runs)
}

fn call(svc: &Arc<Service>, ctx: &KeyContext, tool: &str, args: Value) -> Result<Value, ErrorCode> {
    let out = block_on(svc.call(Arc::new(ctx.clone()), tool, args, None))?;
    runread_testkit::serve::assert_declared_output(tool, &out.labeled.structured);
    Ok(out.labeled.structured)
}

fn read(
    svc: &Arc<Service>,
    ctx: &KeyContext,
    target: &runread_core::Target,
) -> Result<Value, ErrorCode> {
    call(
        svc,
        ctx,
        tools::READ_FINAL_ANSWER,
        json!({"target": target}),
    )
}

/// A minimal v3 session whose one run ends with an assistant answer of `text`.
fn synthetic_session(env: &Env, text: &str) {
    let header = json!({"type":"session","version":3,"id":"synthetic-1","timestamp":"2026-11-30T00:00:00.000Z","cwd": env.workspace});
    let user = json!({"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-30T00:00:01.000Z",
        "message":{"role":"user","content":"q","timestamp":1}});
    let answer = json!({"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-30T00:00:02.000Z",
        "message":{"role":"assistant","content":[{"type":"text","text":text}],"provider":"p","model":"m","stopReason":"stop","timestamp":2}});
    let path = env.sessions.join("synthetic.jsonl");
    std::fs::write(&path, format!("{header}\n{user}\n{answer}\n")).unwrap();
    set_age(&path, SETTLED);
}

#[test]
fn final_answer_at_the_size_limit_is_readable_and_one_byte_more_is_too_large() {
    for (size, state) in [
        (FINAL_ANSWER_MAX_BYTES, "available"),
        (FINAL_ANSWER_MAX_BYTES + 1, "too_large"),
    ] {
        let env = Env::new();
        // Multibyte content so that the limit is in bytes, not characters.
        let mut text = "é".repeat(size / 2);
        if size % 2 == 1 {
            text.push('x');
        }
        assert_eq!(text.len(), size);
        synthetic_session(&env, &text);
        env.ingest();
        let svc = service(&env);
        let (ctx, runs) = grant_all(&env, &svc);
        let out = read(&svc, &ctx[0], &runs[0].target).unwrap();
        assert_eq!(out["state"], state, "size {size}");
        if state == "too_large" {
            assert_eq!(out["text"], Value::Null);
            assert_eq!(out["readable"], false);
            assert_eq!(out["totalBytes"], size);
        } else {
            assert_eq!(out["totalBytes"], size);
        }
    }
}

pi_versions! {
#[test]
fn a_file_that_is_not_yet_quiet_is_saving_and_has_no_text(v) {
    let env = Env::new();
    let path = env.place(&v.fixture("sample"), SETTLED);
    env.ingest();
    set_age(&path, Duration::ZERO);
    env.ingest(); // mtime changed, content did not: same generation, fresh identity
    let svc = service(&env);
    let (ctx, runs) = grant_all(&env, &svc);
    let out = read(&svc, &ctx[0], &runs[0].target).unwrap();
    assert_eq!(out["state"], "saving");
    assert_eq!(out["text"], Value::Null);
    assert_eq!(out["readable"], false);
}
}

pi_versions! {
#[test]
fn a_file_changed_since_ingest_is_unknown_until_reingested(v) {
    let env = Env::new();
    let path = env.place(&v.fixture("sample"), SETTLED);
    env.ingest();
    let svc = service(&env);
    let (ctx, runs) = grant_all(&env, &svc);
    assert_eq!(
        read(&svc, &ctx[0], &runs[0].target).unwrap()["state"],
        "available"
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"type\":\"label\",\"id\":\"zz\",\"parentId\":null}\n",
    )
    .unwrap();
    drop(f);
    set_age(&path, SETTLED);
    let out = read(&svc, &ctx[0], &runs[0].target).unwrap();
    assert_eq!(out["state"], "unknown");
    assert_eq!(out["text"], Value::Null);
}
}

pi_versions! {
#[test]
fn failed_and_cancelled_runs_are_missing_and_a_length_stop_is_flagged_truncated(v) {
    for (fixture, index, state, truncated) in [
        ("error", 1, "missing", false),
        ("aborted", 1, "missing", false),
        ("length", 0, "available", true),
    ] {
        let env = Env::new();
        env.place(&v.fixture(fixture), SETTLED);
        env.ingest();
        let svc = service(&env);
        let (ctx, runs) = grant_all(&env, &svc);
        let out = read(&svc, &ctx[index], &runs[index].target).unwrap();
        assert_eq!(out["state"], state, "{fixture}");
        assert_eq!(out["truncated"], truncated, "{fixture}");
        assert_eq!(out["foregroundFinalConfirmed"], false);
    }
}
}

#[test]
fn torn_run_is_unknown_with_no_text() {
    let env = Env::new();
    env.place("torn", SETTLED);
    env.ingest();
    let svc = service(&env);
    let (ctx, runs) = grant_all(&env, &svc);
    let out = read(&svc, &ctx[runs.len() - 1], &runs.last().unwrap().target).unwrap();
    assert_eq!(out["state"], "unknown");
    assert_eq!(out["readable"], false);
}

pi_versions! {
#[test]
fn list_granted_targets_shows_only_live_grants_and_validates(v) {
    let env = Env::new();
    env.place(&v.fixture("multi-run"), SETTLED);
    env.ingest();
    let svc = service(&env);
    let (ctx, runs) = grant_all(&env, &svc);
    let out = call(&svc, &ctx[1], tools::LIST_GRANTED_TARGETS, json!({})).unwrap();
    let listed = out["targets"].as_array().unwrap();
    assert_eq!(
        listed.len(),
        1,
        "a key lists its own grant, never another key's"
    );
    assert_eq!(
        listed[0]["target"],
        serde_json::to_value(&runs[1].target).unwrap()
    );
    assert_eq!(
        call(&svc, &ctx[1], tools::LIST_GRANTED_TARGETS, json!({"x": 1})).unwrap_err(),
        ErrorCode::InvalidArguments
    );
}
}

#[test]
fn a_secret_added_after_a_read_is_masked_in_the_next_read_of_the_same_answer() {
    const LATER_SECRET: &str = "sk-added-after-the-first-read-0123456789";
    let env = Env::new();
    synthetic_session(&env, &format!("the token is {LATER_SECRET}, keep it"));
    env.ingest();
    let svc = service(&env);
    let (ctx, runs) = grant_all(&env, &svc);
    let before = read(&svc, &ctx[0], &runs[0].target).unwrap();
    assert!(before["text"].as_str().unwrap().contains(LATER_SECRET));
    // Same run, same answer: only the set of known secrets changed.
    env.owner()
        .add_secret("later", LATER_SECRET, runread_core::timefmt::now_ms())
        .unwrap();
    let after = read(&svc, &ctx[0], &runs[0].target).unwrap();
    let text = after["text"].as_str().unwrap();
    assert!(!text.contains(LATER_SECRET), "{text}");
    assert!(text.contains("[redacted]"));
    assert_ne!(after["sha256"], before["sha256"]);
    assert_ne!(after["version"], before["version"]);
}
