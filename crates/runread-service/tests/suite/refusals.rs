//! Calls refused before the gate (issue 48, surprise 4): a reader's refused calls never reach
//! the gate, so no start record holds them; the refusal log keeps each with its reader, tool,
//! target and code. Calls with no valid credential are only counted per minute and code, so a
//! flood of them grows nothing but those counts. Recording never changes an answer, even when
//! the store cannot record.

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use runread_core::{ErrorCode, Feature};
use runread_service::{Config, Service, tools};
use runread_store::{Refusal, RefusalFilter};

use runread_testkit::hooked::Hooked;
use runread_testkit::{Env, block_on, pi_versions};

pi_versions! {
#[test]
fn three_refused_reads_are_kept_with_their_reader_tool_target_and_code(v) {
    let env = Env::new();
    env.place(&v.fixture("sample"), Duration::from_secs(60));
    env.ingest();
    let svc = env.service();
    let (codes, readers) = env.three_refused_reads(&svc);
    assert_eq!(
        codes,
        [
            ErrorCode::GrantExpired,
            ErrorCode::NotGranted,
            ErrorCode::GrantRevoked
        ]
    );
    let page = env
        .store
        .refusals_page(&RefusalFilter::default(), 10)
        .unwrap();
    let mut kept: Vec<Refusal> = page.rows;
    kept.reverse();
    let summary: Vec<(&str, &str, &str)> = kept
        .iter()
        .map(|r| (r.reader_id.as_str(), r.tool.as_str(), r.code.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (readers[0].as_str(), "read_final_answer", "grant_expired"),
            (readers[1].as_str(), "read_final_answer", "not_granted"),
            (readers[2].as_str(), "read_final_answer", "grant_revoked"),
        ]
    );
    assert_eq!(
        kept[1].target.as_ref().map(|t| t.run_id.as_str()),
        Some("not-a-granted-run"),
        "the target the call named"
    );
    assert_eq!(
        env.store.audit(0, 100).unwrap().len(),
        0,
        "none reached the gate"
    );
}
}

pi_versions! {
#[test]
fn bad_arguments_and_unknown_tools_are_kept_with_a_plain_name_only(v) {
    let env = Env::new();
    env.place(&v.fixture("sample"), Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let svc = env.service();
    let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "clumsy");
    let ctx = Arc::new(svc.admit_key(&[g.key.as_bytes()]).unwrap());
    let bad = json!({"target": run.target, "extra": 1});
    let code = block_on(svc.call(ctx.clone(), tools::READ_FINAL_ANSWER, bad, None)).unwrap_err();
    assert_eq!(code, ErrorCode::InvalidArguments);
    let code = block_on(svc.call(ctx.clone(), "drop table grants", json!({}), None)).unwrap_err();
    assert_eq!(code, ErrorCode::UnknownTool);
    let page = env
        .store
        .refusals_page(&RefusalFilter::default(), 10)
        .unwrap();
    let kept: Vec<(&str, &str)> = page
        .rows
        .iter()
        .map(|r| (r.tool.as_str(), r.code.as_str()))
        .collect();
    assert_eq!(
        kept,
        [
            ("?", "unknown_tool"),
            ("read_final_answer", "invalid_arguments")
        ]
    );
}
}

#[test]
fn a_burst_of_unknown_keys_grows_only_the_per_minute_counts() {
    let env = Env::new();
    let svc = env.service();
    const BURST: u64 = 200;
    for _ in 0..BURST {
        let key = runread_core::key::generate().unwrap();
        assert!(
            svc.admit_key_at_once(&[key.as_bytes()]).is_none(),
            "a refusal is counted where a write may wait"
        );
        assert_eq!(
            svc.admit_key(&[key.as_bytes()]).err(),
            Some(ErrorCode::InvalidKey)
        );
    }
    assert_eq!(svc.admit_key(&[]).err(), Some(ErrorCode::MissingKey));
    let tallies = env.store.unadmitted_tallies(i64::MIN).unwrap();
    let counted: Vec<(&str, u64)> = tallies.iter().map(|t| (t.code.as_str(), t.calls)).collect();
    assert_eq!(counted, [("invalid_key", BURST), ("missing_key", 1)]);
    for t in &tallies {
        // However many calls, one row per minute they came in.
        assert!(t.last_minute_ms - t.first_minute_ms <= 60_000 * 60);
    }
    let none = env
        .store
        .refusals_page(&RefusalFilter::default(), 10)
        .unwrap();
    assert_eq!((none.rows.len(), none.more), (0, 0), "no row per call");
    assert_eq!(env.store.audit(0, 100).unwrap().len(), 0);
}

pi_versions! {
#[test]
fn a_refusal_the_store_cannot_record_is_still_the_same_refusal(v) {
    let env = Env::new();
    env.place(&v.fixture("sample"), Duration::from_secs(60));
    env.ingest();
    let mut store = Hooked::new(env.store.clone());
    store.refusals_fail = true;
    let svc = Arc::new(Service::new(Arc::new(store), env.keys(), Config::default()).unwrap());
    let (codes, _) = env.three_refused_reads(&svc);
    assert_eq!(
        codes,
        [
            ErrorCode::GrantExpired,
            ErrorCode::NotGranted,
            ErrorCode::GrantRevoked
        ]
    );
    let key = runread_core::key::generate().unwrap();
    assert_eq!(
        svc.admit_key(&[key.as_bytes()]).err(),
        Some(ErrorCode::InvalidKey)
    );
    let kept = env
        .store
        .refusals_page(&RefusalFilter::default(), 10)
        .unwrap();
    assert!(kept.rows.is_empty());
}
}

pi_versions! {
/// A reader past its bound calls as fast as it can: its `busy` refusals are kept once a minute,
/// so they cannot push every other refusal out of the log.
#[test]
fn a_reader_past_its_bound_leaves_one_busy_row_a_minute(v) {
    let env = Env::new();
    env.place(&v.fixture("sample"), Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let svc = env.service_with(Config {
        calls_per_minute: 1,
        ..Config::default()
    });
    let g = env.grant(&run.target.run_id, vec![Feature::Status], "eager");
    let ctx = Arc::new(svc.admit_key(&[g.key.as_bytes()]).unwrap());
    let args = json!({ "target": run.target });
    let first = block_on(svc.call(ctx.clone(), tools::GET_RUN, args.clone(), None));
    assert!(first.is_ok(), "{first:?}");
    const CALLS_PAST_THE_BOUND: usize = 20;
    for _ in 0..CALLS_PAST_THE_BOUND {
        let code = block_on(svc.call(ctx.clone(), tools::GET_RUN, args.clone(), None));
        assert_eq!(code.err(), Some(ErrorCode::Busy));
    }
    let page = env
        .store
        .refusals_page(&RefusalFilter::default(), 100)
        .unwrap();
    assert!(page.rows.iter().all(|r| r.code == "busy"));
    // One a minute: the calls may straddle two minutes, never more in this test.
    assert!(
        (1..=2).contains(&page.rows.len()),
        "{} busy rows for {CALLS_PAST_THE_BOUND} calls",
        page.rows.len()
    );
}
}
