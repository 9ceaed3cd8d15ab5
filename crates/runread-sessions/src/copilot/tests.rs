#![cfg(test)]
//! Copilot CLI's reader over the committed real fixtures (`fixtures/copilot/1.0.102`).

use std::path::{Path, PathBuf};

use super::*;
use crate::profile::UsageKind;

fn fixture_file(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot/1.0.102")
        .join(name)
        .join("sessions/session-state");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path().join(EVENTS_FILE))
        .collect();
    files.sort();
    files.remove(0)
}

fn runs_of(name: &str) -> (Scan, Branch) {
    let file = EvidenceFile::open(&fixture_file(name), None).unwrap();
    let scan = scan(&file, Resume::Fresh, ReadAhead::Allowed).unwrap();
    let branch = cut_runs(&scan.entries, &scan.malformed, scan.torn);
    (scan, branch)
}

fn answer(name: &str, run: &Run) -> String {
    let bytes = std::fs::read(fixture_file(name)).unwrap();
    let line = run.final_lines.first().unwrap();
    let at = usize::try_from(line.offset).unwrap();
    let len = usize::try_from(line.bytes).unwrap();
    message_view(&bytes[at..at + len]).unwrap().answer.unwrap()
}

#[test]
fn tool_then_answer_completes_with_the_last_message() {
    let (scan, branch) = runs_of("tool-then-answer");
    assert!(scan.malformed.is_empty() && !scan.torn);
    assert_eq!(scan.header.agent_version.as_deref(), Some("1.0.102"));
    assert_eq!(branch.runs.len(), 1);
    let run = &branch.runs[0];
    assert_eq!(run.status, RunStatus::Completed);
    assert!(answer("tool-then-answer", run).starts_with("This is **demo**"));
    assert_eq!(run.run_models, vec!["mock-1".to_owned()]);
    assert_eq!(branch.saved_model.as_deref(), Some("mock-1"));
}

#[test]
fn every_resumed_run_is_one_run_of_the_same_file() {
    let (_, branch) = runs_of("continue-unicode");
    assert_eq!(branch.runs.len(), 3);
    assert!(branch.runs.iter().all(|r| r.status == RunStatus::Completed));
    assert_eq!(
        answer("continue-unicode", &branch.runs[1]),
        "Again: hello — naïve 日本語 🎉"
    );
}

#[test]
fn an_error_fails_its_run_and_an_abort_cancels_it() {
    let (_, branch) = runs_of("provider-error");
    let status: Vec<RunStatus> = branch.runs.iter().map(|r| r.status).collect();
    assert_eq!(
        status,
        [
            RunStatus::Completed,
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Completed
        ]
    );
    let (_, branch) = runs_of("interrupted");
    let status: Vec<RunStatus> = branch.runs.iter().map(|r| r.status).collect();
    assert_eq!(
        status,
        [
            RunStatus::Cancelled,
            RunStatus::Cancelled,
            RunStatus::Completed
        ]
    );
}

#[test]
fn a_length_cut_off_is_never_complete() {
    let (_, branch) = runs_of("length-cutoff");
    assert_eq!(branch.runs.len(), 2);
    let [first, second] = [&branch.runs[0], &branch.runs[1]];
    assert_eq!(first.status, RunStatus::Unknown);
    assert_eq!(
        first.unknown_reason.as_deref(),
        Some(CONTINUED_AFTER_LENGTH)
    );
    assert!(!first.final_lines.is_empty());
    assert_eq!(second.status, RunStatus::Unknown);
    assert_eq!(second.unknown_reason.as_deref(), Some(CUT_AT_LENGTH));
    assert!(second.final_truncated);
    assert_eq!(answer("length-cutoff", second), "part three");
}

#[test]
fn a_subagent_is_a_child_not_the_runs_answer() {
    let (_, branch) = runs_of("subagent");
    assert_eq!(branch.runs.len(), 1);
    let run = &branch.runs[0];
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(
        answer("subagent", run),
        "The helper reports: hello from notes."
    );
    // The prompt, the delegating message, the answer: nothing of the subagent's.
    assert_eq!(run.message_lines.len(), 3);
    let bytes = std::fs::read(fixture_file("subagent")).unwrap();
    let lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    let calls: Vec<String> = lines.iter().flat_map(|l| subagent_calls(l)).collect();
    assert_eq!(calls, ["call_0_0"]);
    let records = subagent_records(&fixture_file("subagent"), &calls);
    assert_eq!(records.len(), 1);
    assert!(records[0].is_some_and(|r| r.finished));
}

#[test]
fn usage_is_each_call_of_the_run_once() {
    let (scan, mut branch) = runs_of("length-cutoff");
    crate::usage::attribute(UsageKind::PerCallRecords, &scan.entries, &mut branch.runs);
    let usage = branch.runs[1].usage.as_ref().unwrap();
    assert_eq!(usage.calls, 3);
    assert_eq!(usage.total.input, 102 + 103 + 104);
    assert_eq!(usage.total.output, 6);
}

#[test]
fn a_line_of_an_unknown_type_makes_its_run_unknown_and_a_second_start_is_malformed() {
    let path = fixture_file("tool-then-answer");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let n = lines.len();
    lines.insert(
        n - 2,
        r#"{"type":"assistant.new_thing","data":{},"id":"x1","timestamp":"t","parentId":null}"#
            .to_owned(),
    );
    let first = lines[0].clone();
    lines.push(first);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(EVENTS_FILE);
    std::fs::write(&copy, lines.join("\n") + "\n").unwrap();
    let file = EvidenceFile::open(&copy, None).unwrap();
    let scan = scan(&file, Resume::Fresh, ReadAhead::Allowed).unwrap();
    assert_eq!(scan.malformed, vec![lines.len() as u64]);
    assert!(scan.first_unrecognised.is_some());
    let branch = cut_runs(&scan.entries, &scan.malformed, scan.torn);
    assert_eq!(branch.runs[0].status, RunStatus::Unknown);
}
