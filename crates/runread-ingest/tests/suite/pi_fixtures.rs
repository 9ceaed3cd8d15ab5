//! Ingest of real Pi session files (fixtures/pi, written by Pi 0.73.1 through the harness).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use runread_sessions::RunStatus;
use runread_store::RunRecord;
use runread_testkit::{Env, agent_runs};

const SETTLED: Duration = Duration::from_secs(60);

fn ingest_fixture(name: &str) -> (Env, Vec<RunRecord>, runread_ingest::Report) {
    let env = Env::new();
    env.place(name, SETTLED);
    let report = env.ingest();
    let mut runs = env.store.runs().expect("runs");
    runs.sort_by_key(|r| r.run.start_line);
    (env, runs, report)
}

/// Each run's final text equals what the agent wrote, checked with plain JSON.
fn assert_finals_match_agent(name: &str, runs: &[RunRecord]) {
    let agent = agent_runs(&runread_testkit::fixture_session(name));
    assert_eq!(runs.len(), agent.len(), "{name}: run count");
    for (run, (id, text, _stop)) in runs.iter().zip(&agent) {
        if !id.is_empty() {
            assert_eq!(
                &run.target.run_id, id,
                "{name}: run id is the user entry id"
            );
        }
        assert_eq!(
            runread_testkit::answer(run).as_ref(),
            text.as_ref(),
            "{name}: final text of {id}"
        );
        if let Some(t) = text {
            assert_eq!(run.run.final_bytes, t.len() as u64);
            assert!(run.run.final_message_sha256.is_some());
        }
    }
}

#[test]
fn sample_session_has_two_completed_runs_with_the_agents_answers() {
    let (_env, runs, report) = ingest_fixture("sample");
    assert_eq!(report.runs, 2);
    assert_eq!(report.malformed_lines, 0);
    assert!(runs.iter().all(|r| r.run.status == RunStatus::Completed));
    assert_eq!(runs[0].run.final_bytes, 9554);
    assert_eq!(
        runread_core::sha256_hex(runread_testkit::answer(&runs[0]).unwrap().as_bytes()),
        "524d513f546336f1be6d43a03c64b84033497811ecea7833be4af6d115ec2b23"
    );
    assert_finals_match_agent("sample", &runs);
}

#[test]
fn multi_run_session_cuts_three_runs_with_tool_calls_in_between() {
    let (_env, runs, _) = ingest_fixture("multi-run");
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r.run.status == RunStatus::Completed));
    assert!(
        runs.iter().all(|r| r.run.chain_len >= 3),
        "user, tool call, tool result, final"
    );
    assert_eq!(
        runs.iter()
            .map(|r| r.run.run_models.clone())
            .collect::<Vec<_>>(),
        vec![vec!["mock/mock-1".to_string()]; 3]
    );
    assert_finals_match_agent("multi-run", &runs);
}

#[test]
fn provider_error_run_is_failed_with_no_answer() {
    let (_env, runs, _) = ingest_fixture("error");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].run.status, RunStatus::Completed);
    assert_eq!(runs[1].run.status, RunStatus::Failed);
    assert_eq!(runread_testkit::answer(&runs[1]), None);
    assert_finals_match_agent("error", &runs);
}

#[test]
fn run_that_recovered_after_retries_is_completed() {
    let (_env, runs, _) = ingest_fixture("error-recovered");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].run.status, RunStatus::Completed);
    assert_finals_match_agent("error-recovered", &runs);
}

#[test]
fn length_stop_is_completed_and_flagged_truncated() {
    let (_env, runs, _) = ingest_fixture("length");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].run.status, RunStatus::Completed);
    assert!(runs[0].run.final_truncated);
    assert_eq!(runs[0].run.final_bytes, 480);
    assert_finals_match_agent("length", &runs);
}

#[test]
fn aborted_run_is_cancelled_with_no_answer() {
    let (_env, runs, _) = ingest_fixture("aborted");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].run.status, RunStatus::Completed);
    assert_eq!(runs[1].run.status, RunStatus::Cancelled);
    assert_eq!(runread_testkit::answer(&runs[1]), None);
}

#[test]
fn torn_last_line_is_counted_and_makes_the_last_run_unknown() {
    let (_env, runs, report) = ingest_fixture("torn");
    assert_eq!(report.torn_files, 1);
    let last = runs.last().unwrap();
    assert_eq!(last.run.status, RunStatus::Unknown);
    assert!(
        runs[..runs.len() - 1]
            .iter()
            .all(|r| r.run.status == RunStatus::Completed)
    );
}

#[test]
fn malformed_middle_line_is_counted_and_never_aborts_ingest() {
    let (env, runs, report) = ingest_fixture("malformed");
    assert_eq!(report.malformed_lines, 1);
    assert_eq!(report.new_generations, 1);
    // The broken line (run 2's tool result) was on the path: its child names it as parent. The
    // walk goes on over it from the entry before it (Pi itself stops there, and shows 8 of 15
    // messages), so run 1 stays on the branch, run 2, which holds the line, is unknown, and run 3
    // is read as before; the branch is marked incomplete.
    let agent = agent_runs(&runread_testkit::fixture_session("malformed"));
    let got: Vec<(&str, RunStatus)> = runs
        .iter()
        .map(|r| (r.target.run_id.as_str(), r.run.status))
        .collect();
    assert_eq!(
        got,
        [
            (agent[0].0.as_str(), RunStatus::Completed),
            (agent[1].0.as_str(), RunStatus::Unknown),
            (agent[2].0.as_str(), RunStatus::Completed)
        ]
    );
    assert_eq!(runread_testkit::answer(&runs[0]), agent[0].1);
    assert_eq!(runread_testkit::answer(&runs[2]), agent[2].1);
    let session = env
        .store
        .session(&runs[0].target.session_id)
        .unwrap()
        .unwrap();
    assert!(!session.branch_complete);
    assert_eq!(session.malformed_lines, vec![10]);
}

#[test]
fn v1_and_v2_files_give_the_same_runs_and_answers_as_v3() {
    let (_e3, v3, _) = ingest_fixture("multi-run");
    let (_e2, v2, _) = ingest_fixture("v2");
    let (_e1, v1, _) = ingest_fixture("v1");
    let texts = |runs: &[RunRecord]| {
        runs.iter()
            .map(|r| (r.run.status, runread_testkit::answer(r)))
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&v2), texts(&v3));
    assert_eq!(texts(&v1), texts(&v3));
    assert_eq!(
        v2.iter().map(|r| &r.target.run_id).collect::<Vec<_>>(),
        v3.iter().map(|r| &r.target.run_id).collect::<Vec<_>>()
    );
    assert!(
        v1.iter().all(|r| r.target.run_id.starts_with("v1-L")),
        "v1 ids are assigned in file order"
    );
}

#[test]
fn sessions_outside_registered_workspaces_are_skipped() {
    let env = Env::new();
    let src = runread_testkit::fixture_session("sample");
    let dst = env.sessions.join("elsewhere.jsonl");
    let bytes =
        runread_testkit::relocated(&std::fs::read(src).unwrap(), "/definitely/not/registered");
    std::fs::write(&dst, bytes).unwrap();
    let report = env.ingest();
    assert_eq!(report.outside_workspaces, 1);
    assert!(env.store.runs().unwrap().is_empty());
}
