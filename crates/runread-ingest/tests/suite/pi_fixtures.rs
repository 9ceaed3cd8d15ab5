//! Ingest of real Pi session files (fixtures/pi, written through the harness by Pi 0.73.1 and,
//! in fixtures/pi/1.6.0, by Pi 1.6.0): each test runs once per version.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use runread_sessions::RunStatus;
use runread_store::RunRecord;
use runread_testkit::{Env, agent_runs, pi_versions};

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

pi_versions! {
#[test]
fn sample_session_has_two_completed_runs_with_the_agents_answers(v) {
    let (_env, runs, report) = ingest_fixture(&v.fixture("sample"));
    assert_eq!(report.runs, 2);
    assert_eq!(report.malformed_lines, 0);
    assert!(runs.iter().all(|r| r.run.status == RunStatus::Completed));
    assert_eq!(runs[0].run.final_bytes, 9554);
    assert_eq!(
        runread_core::sha256_hex(runread_testkit::answer(&runs[0]).unwrap().as_bytes()),
        "524d513f546336f1be6d43a03c64b84033497811ecea7833be4af6d115ec2b23"
    );
    assert_finals_match_agent(&v.fixture("sample"), &runs);
}
}

pi_versions! {
#[test]
fn multi_run_session_cuts_three_runs_with_tool_calls_in_between(v) {
    let (_env, runs, _) = ingest_fixture(&v.fixture("multi-run"));
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
    assert_finals_match_agent(&v.fixture("multi-run"), &runs);
}
}

pi_versions! {
#[test]
fn provider_error_run_is_failed_with_no_answer(v) {
    let (_env, runs, _) = ingest_fixture(&v.fixture("error"));
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].run.status, RunStatus::Completed);
    assert_eq!(runs[1].run.status, RunStatus::Failed);
    assert_eq!(runread_testkit::answer(&runs[1]), None);
    assert_finals_match_agent(&v.fixture("error"), &runs);
}
}

pi_versions! {
#[test]
fn run_that_recovered_after_retries_is_completed(v) {
    let (_env, runs, _) = ingest_fixture(&v.fixture("error-recovered"));
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].run.status, RunStatus::Completed);
    assert_finals_match_agent(&v.fixture("error-recovered"), &runs);
}
}

pi_versions! {
#[test]
fn length_stop_is_completed_and_flagged_truncated(v) {
    let (_env, runs, _) = ingest_fixture(&v.fixture("length"));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].run.status, RunStatus::Completed);
    assert!(runs[0].run.final_truncated);
    assert_eq!(runs[0].run.final_bytes, 480);
    assert_finals_match_agent(&v.fixture("length"), &runs);
}
}

pi_versions! {
#[test]
fn aborted_run_is_cancelled_with_no_answer(v) {
    let (_env, runs, _) = ingest_fixture(&v.fixture("aborted"));
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].run.status, RunStatus::Completed);
    assert_eq!(runs[1].run.status, RunStatus::Cancelled);
    assert_eq!(runread_testkit::answer(&runs[1]), None);
    assert_finals_match_agent(&v.fixture("aborted"), &runs);
}
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

pi_versions! {
#[test]
fn sessions_outside_registered_workspaces_are_skipped(v) {
    let env = Env::new();
    let src = runread_testkit::fixture_session(&v.fixture("sample"));
    let dst = env.sessions.join("elsewhere.jsonl");
    let bytes =
        runread_testkit::relocated(&std::fs::read(src).unwrap(), "/definitely/not/registered");
    std::fs::write(&dst, bytes).unwrap();
    let report = env.ingest();
    assert_eq!(report.outside_workspaces, 1);
    assert!(env.store.runs().unwrap().is_empty());
}
}

pi_versions! {
#[test]
fn the_session_id_is_the_headers_uuid_v7_and_every_run_is_cut_as_pi_wrote_it(v) {
    let mut names = vec![
        "sample",
        "multi-run",
        "error",
        "error-recovered",
        "length",
        "aborted",
        "secrets-history",
        "secrets-leaks",
    ];
    if v.is_1x() {
        names.push("compaction");
    }
    for name in names {
        let name = v.fixture(name);
        let (env, runs, report) = ingest_fixture(&name);
        assert_eq!(report.malformed_lines, 0, "{name}");
        let path = runread_testkit::fixture_session(&name);
        let text = std::fs::read_to_string(&path).unwrap();
        let header: serde_json::Value =
            serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let id = header["id"].as_str().unwrap();
        assert_eq!(
            uuid_version(id),
            Some(7),
            "{name}: Pi names a session by a UUID v7"
        );
        assert!(
            runs.iter().all(|r| r.target.session_id == id),
            "{name}: the session id is the header's, as written"
        );
        let session = env.store.session(id).unwrap().unwrap();
        assert!(session.branch_complete, "{name}");
        assert_finals_match_agent(&name, &runs);
    }
}
}

/// The version nibble of a UUID in its text form, if `id` is one.
fn uuid_version(id: &str) -> Option<u32> {
    let groups: Vec<&str> = id.split('-').collect();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    if lens != [8, 4, 4, 4, 12] || !id.chars().all(|c| c == '-' || c.is_ascii_hexdigit()) {
        return None;
    }
    groups[2].chars().next()?.to_digit(16)
}

/// Pi 1.x writes entries that are no conversation message: a `system` message (the prompt and
/// tool loadout) before the first prompt, and a `context_edit` after an answer it drops from
/// later context (a cut or failed one). Neither is a run, a prompt or an answer.
#[test]
fn pi_1x_system_messages_and_context_edits_are_neither_runs_nor_answers() {
    let v = runread_testkit::PI_1_6_0;
    for name in ["length", "error", "error-recovered"] {
        let name = v.fixture(name);
        let path = runread_testkit::fixture_session(&name);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines[3]["message"]["role"], "system",
            "{name}: the system message precedes the first prompt"
        );
        assert!(
            lines.iter().any(|l| l["type"] == "context_edit"),
            "{name}: Pi wrote a context_edit"
        );
        let (_env, runs, _) = ingest_fixture(&name);
        assert_eq!(runs.len(), agent_runs(&path).len(), "{name}");
        assert_finals_match_agent(&name, &runs);
    }
    let (_env, runs, _) = ingest_fixture(&v.fixture("length"));
    assert_eq!(runs[0].run.status, RunStatus::Completed);
    assert!(runs[0].run.final_truncated);
    assert_eq!(runs[0].run.final_bytes, 480);
}

/// `pi --fork` (Pi 1.x) copies the parent's entries, ids and all, into a new session whose header
/// names the parent file as `parentSession`; `--continue` then goes on in the fork.
#[test]
fn a_pi_fork_is_its_own_session_naming_its_parent_and_continue_goes_on_in_it() {
    let name = runread_testkit::PI_1_6_0.fixture("fork");
    let env = Env::new();
    let placed = env.place_all(&name, SETTLED);
    assert_eq!(placed.len(), 2, "the parent and the fork");
    let report = env.ingest();
    assert_eq!(report.malformed_lines, 0);
    let runs = env.store.runs().unwrap();
    let files = runread_testkit::fixture_sessions(&name);
    let header = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(std::fs::read_to_string(p).unwrap().lines().next().unwrap()).unwrap()
    };
    let (parent, fork) = (header(&files[0]), header(&files[1]));
    assert!(parent.get("parentSession").is_none());
    let parent_id = parent["id"].as_str().unwrap();
    let fork_id = fork["id"].as_str().unwrap();
    let of = |session: &str| {
        let mut v: Vec<&RunRecord> = runs
            .iter()
            .filter(|r| r.target.session_id == session)
            .collect();
        v.sort_by_key(|r| r.run.start_line);
        v
    };
    let (in_parent, in_fork) = (of(parent_id), of(fork_id));
    assert_eq!(in_parent.len(), 1);
    assert_eq!(
        in_fork.len(),
        3,
        "the copied run, the forked one, the continued one"
    );
    assert!(in_fork.iter().all(|r| r.run.status == RunStatus::Completed));
    assert_eq!(
        in_fork[0].target.run_id, in_parent[0].target.run_id,
        "the copy keeps Pi's entry ids: one run id, two targets told apart by session"
    );
    assert_eq!(
        runread_testkit::answer(in_fork[0]),
        runread_testkit::answer(in_parent[0])
    );
    for (file, list) in [(&files[0], &in_parent), (&files[1], &in_fork)] {
        let agent = agent_runs(file);
        let got: Vec<(String, Option<String>)> = list
            .iter()
            .map(|r| (r.target.run_id.clone(), runread_testkit::answer(r)))
            .collect();
        let want: Vec<(String, Option<String>)> =
            agent.into_iter().map(|(id, text, _)| (id, text)).collect();
        assert_eq!(got, want);
    }
    let session = env.store.session(fork_id).unwrap().unwrap();
    assert_eq!(
        session.header.parent_session.as_deref(),
        fork["parentSession"].as_str(),
        "the fork names its parent file as Pi wrote it"
    );
}

/// Pi 1.x's auto-compaction wrote a `compaction` entry between run 1's tool result and its answer
/// and one after each answer (the last line is one): they are no messages, so both runs keep
/// their answers, and the walk from that last entry reaches the root.
#[test]
fn compaction_entries_inside_and_after_runs_leave_the_runs_and_answers_as_pi_wrote_them() {
    let name = runread_testkit::PI_1_6_0.fixture("compaction");
    let path = runread_testkit::fixture_session(&name);
    let text = std::fs::read_to_string(&path).unwrap();
    let compactions = text
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"] == "compaction")
        .count();
    assert_eq!(compactions, 3);
    let (env, runs, report) = ingest_fixture(&name);
    assert_eq!(report.malformed_lines, 0);
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.run.status == RunStatus::Completed));
    assert_finals_match_agent(&name, &runs);
    let session = env
        .store
        .session(&runs[0].target.session_id)
        .unwrap()
        .unwrap();
    assert!(session.branch_complete);
}
