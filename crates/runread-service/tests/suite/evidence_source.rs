//! Texts are read back from the session file when served, and checked against what ingest saw
//! (issue 13, item 9): the store indexes lines, it keeps no copy of the conversation, and a file
//! rewritten in place — even to the same size with its mtime restored — serves nothing it did
//! not hold at ingest.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::{ErrorCode, Feature};
use runread_service::{Config, KeyContext, Service, tools};
use runread_store::RunRecord;
use runread_testkit::{Env, block_on, pi_versions};

fn service(env: &Env) -> Arc<Service> {
    Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap())
}

fn grant(env: &Env, svc: &Arc<Service>, run: &RunRecord, features: Vec<Feature>) -> KeyContext {
    let g = env.grant_in(
        &run.target.run_id,
        Some(&run.target.session_id),
        features,
        "t",
    );
    svc.admit_key(&[g.key.as_bytes()]).unwrap()
}

fn call(svc: &Arc<Service>, ctx: &KeyContext, tool: &str, args: Value) -> Result<Value, ErrorCode> {
    block_on(svc.call(Arc::new(ctx.clone()), tool, args, None)).map(|a| a.labeled.structured)
}

/// The longest answered run of fixture `name`, placed and ingested.
fn placed(name: &str) -> (Env, std::path::PathBuf, RunRecord) {
    let env = Env::new();
    let path = env.place(name, Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    (env, path, run)
}

/// Rewrites `from` to `to` (same length) inside the file, in place: same inode, same size, and
/// the modification time put back as it was. Only the status-change time and the bytes differ.
fn rewrite_in_place(path: &std::path::Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let before = std::fs::metadata(path).unwrap();
    let mtime = before.modified().unwrap();
    let bytes = std::fs::read(path).unwrap();
    let at = bytes
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .expect("text in the file");
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(to.as_bytes(), at as u64).unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    let after = std::fs::metadata(path).unwrap();
    assert_eq!(after.len(), before.len());
    assert_eq!(after.modified().unwrap(), mtime);
    use std::os::unix::fs::MetadataExt;
    assert_eq!(after.ino(), before.ino());
}

pi_versions! {
#[test]
fn an_answer_rewritten_in_place_with_its_mtime_restored_is_unknown_not_the_old_text(v) {
    let (env, path, run) = placed(&v.fixture("sample"));
    let svc = service(&env);
    let ctx = grant(&env, &svc, &run, vec![Feature::FinalAnswer]);
    let read = || {
        call(
            &svc,
            &ctx,
            tools::READ_FINAL_ANSWER,
            json!({"target": run.target}),
        )
    };
    assert_eq!(read().unwrap()["state"], "available");
    let answer = runread_testkit::answer(&run).unwrap();
    let word = &answer[..12];
    rewrite_in_place(&path, word, &"X".repeat(word.len()));
    let v = read().unwrap();
    assert_eq!(v["state"], "unknown", "{v}");
    assert_eq!(v["text"], Value::Null);
    assert_eq!(v["readable"], false);
}
}

pi_versions! {
#[test]
fn history_of_a_file_rewritten_in_place_has_no_text_and_says_so(v) {
    let (env, path, run) = placed(&v.fixture("secrets-history"));
    let svc = service(&env);
    let ctx = grant(&env, &svc, &run, vec![Feature::History]);
    let read = || {
        call(
            &svc,
            &ctx,
            tools::READ_HISTORY,
            json!({"target": run.target}),
        )
    };
    let v = read().unwrap();
    assert_eq!(v["readable"], true, "{v}");
    assert!(
        !v["gapReasons"]
            .as_array()
            .unwrap()
            .contains(&json!("source_changed"))
    );
    rewrite_in_place(
        &path,
        "Let me look at the settings",
        "Let me look at the SETTINGS",
    );
    let v = read().unwrap();
    assert_eq!(v["readable"], false, "{v}");
    assert!(
        v["gapReasons"]
            .as_array()
            .unwrap()
            .contains(&json!("source_changed")),
        "{v}"
    );
    for e in v["events"].as_array().unwrap() {
        assert_eq!(e["text"], Value::Null, "{e}");
        assert_eq!(e["toolCalls"], json!([]), "{e}");
        assert_eq!(e["toolName"], Value::Null, "{e}");
    }
}
}

pi_versions! {
#[test]
fn the_store_keeps_no_copy_of_the_conversation(v) {
    let (env, _path, run) = placed(&v.fixture("secrets-history"));
    let answer = runread_testkit::answer(&run).unwrap();
    // Force everything into the main database file and read every file of the store.
    drop(env.store.runs().unwrap());
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(env.dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("runread.db"))
        {
            stored.extend(std::fs::read(&p).unwrap());
        }
    }
    assert!(!stored.is_empty());
    let contains = |needle: &[u8]| stored.windows(needle.len()).any(|w| w == needle);
    // The secret the conversation holds (in a tool result and in the answer), a sentence of the
    // answer, and a line of a tool result: none of them is in the store.
    assert!(!contains(b"sk-runread-TEST-0123456789abcdef"));
    assert!(!contains(&answer.as_bytes()[200..260]));
    assert!(!contains(b"APP_REGION=eu-west-1"));
    // What it keeps instead: where the final line is, and its digest.
    assert!(!run.run.final_lines.is_empty());
}
}

/// The receipt of each call records what its result carried, in the words the result says it
/// with: the evidence it was read from (a status's origin) and its settled state; nothing for a
/// listing, and `not_found` for a run the reader may not see.
#[test]
fn a_receipt_records_the_evidence_and_settled_state_its_result_carried() {
    let (env, _path, run) = placed("sample");
    let svc = service(&env);
    let ctx = Arc::new(grant(
        &env,
        &svc,
        &run,
        vec![
            Feature::Status,
            Feature::FinalAnswer,
            Feature::History,
            Feature::Aggregate,
        ],
    ));
    let target = json!({"target": run.target});
    let receipted = |tool: &str, args: Value| {
        let answer = block_on(svc.call(ctx.clone(), tool, args, None)).unwrap();
        let receipts = env.store.receipts(&answer.start_id).unwrap();
        assert_eq!(receipts.len(), 1, "{tool}");
        let r = &receipts[0];
        let facts = (r.evidence.clone(), r.state.clone());
        (answer.labeled.structured, facts)
    };
    let text = |v: &Value| v.as_str().map(str::to_owned);

    let (out, facts) = receipted(tools::READ_FINAL_ANSWER, target.clone());
    assert_eq!(
        facts,
        (text(&out["evidence"]), text(&out["state"])),
        "{out}"
    );
    assert_eq!(facts.0.as_deref(), Some("session_file"));

    let (out, facts) = receipted(tools::GET_RUN, target.clone());
    assert_eq!(facts, (text(&out["origin"]), text(&out["status"])), "{out}");

    let mut waited = target.clone();
    waited["timeoutSeconds"] = json!(1);
    let (out, facts) = receipted(tools::WAIT_FOR_RUN, waited);
    let settled = match out["settled"].as_bool().unwrap() {
        true => "settled",
        false => "not_settled",
    };
    assert_eq!(facts, (text(&out["origin"]), Some(settled.into())), "{out}");

    let (out, facts) = receipted(tools::READ_HISTORY, target.clone());
    assert_eq!(facts, (text(&out["evidence"]), None), "{out}");

    let (out, facts) = receipted(tools::READ_WORK_STATE, target.clone());
    let confirmed = match out["completionConfirmed"].as_bool().unwrap() {
        true => "completion_confirmed",
        false => "completion_not_confirmed",
    };
    assert_eq!(
        facts,
        (text(&out["evidence"]), Some(confirmed.into())),
        "{out}"
    );

    let (_, facts) = receipted(tools::LIST_GRANTED_TARGETS, json!({}));
    assert_eq!(facts, (None, None));

    let mut elsewhere = run.target.clone();
    elsewhere.run_id = "not-a-run".into();
    let (out, facts) = receipted(tools::GET_RUN, json!({"target": elsewhere}));
    assert_eq!(out["found"], false);
    assert_eq!(facts, (None, Some("not_found".into())));
}
