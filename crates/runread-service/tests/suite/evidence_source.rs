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
