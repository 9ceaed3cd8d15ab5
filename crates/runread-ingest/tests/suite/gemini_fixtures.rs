//! Gemini CLI chat files written by the real Gemini CLI 0.61.0 (`fixtures/gemini/0.61.0`, every
//! scenario of `../shared/harness/scenarios/gemini/` and runread's own `secrets`), ingested: what
//! Gemini CLI's own files add to every recorded agent's suite (`recorded_agents`) — the resume
//! stub, the subagent's file, and the upserts read incrementally: a line that only completes or
//! restates a record is an append, one that changes a record a new generation.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use runread_ingest::FileOutcome;
use runread_sessions::{Agent, RunStatus};
use runread_store::prelude::*;
use runread_testkit::Env;

const AGE: Duration = Duration::from_secs(60);

/// One pass over the Gemini tmp folder: each file's outcome.
fn pass(env: &Env) -> Vec<(PathBuf, FileOutcome)> {
    crate::recorded_agents::pass_over(env, Agent::Gemini, &env.gemini_tmp)
}

use crate::recorded_agents::outcome_of;

/// A resume a minute later leaves a stub with the session's id: it is not a session (no
/// duplicate of the real one), and the session's three runs are in the real file, its workspace
/// the project root Gemini CLI recorded.
#[test]
fn the_resume_stub_is_no_session_and_takes_no_id() {
    let env = Env::new();
    let files = env.place_gemini("continue-unicode", AGE);
    assert_eq!(files.len(), 2);
    let outcomes = pass(&env);
    assert!(matches!(
        outcome_of(&outcomes, &files[0]),
        FileOutcome::NewGeneration { generation: 1, .. }
    ));
    assert_eq!(outcome_of(&outcomes, &files[1]), FileOutcome::NotASession);
    let runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(
        runs.iter()
            .all(|r| r.session_path == files[0].to_str().unwrap())
    );
    assert!(runs.iter().all(|r| r.agent == Agent::Gemini));
}

/// A subagent's file (`chats/<session id>/<agent id>.jsonl`) is not listed as a session.
#[test]
fn a_subagents_file_is_not_a_session() {
    let env = Env::new();
    let files = env.place_gemini("subagent", AGE);
    let outcomes = pass(&env);
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].0, files[0]);
    assert_eq!(env.store.runs().unwrap().len(), 1);
}

/// A project root that is not the one the file's `projectHash` names puts the session in no
/// workspace.
#[test]
fn a_project_root_the_file_does_not_name_is_in_no_workspace() {
    let env = Env::new();
    let files = env.place_gemini("tool-then-answer", AGE);
    let project = files[0].parent().unwrap().parent().unwrap();
    std::fs::write(
        project.join(".project_root"),
        env.workspace.join("other").to_str().unwrap(),
    )
    .unwrap();
    let outcomes = pass(&env);
    assert_eq!(outcomes[0].1, FileOutcome::OutsideWorkspaces);
}

/// The file as Gemini CLI wrote it, ingested line by line as it grew: every pass that adds lines
/// is an append (the re-writes of a record with its tool calls, the snapshots of a resume restate
/// what was there), and the runs in the end are those of one whole read.
#[test]
fn read_as_it_grew_every_pass_is_an_append() {
    for fixture in ["continue-unicode", "tool-then-answer", "provider-error"] {
        // Up to the first prompt (line 3): before it, no session yet.
        crate::recorded_agents::grows_by_appends(Env::place_gemini, pass, fixture, 3);
    }
}

#[test]
fn an_appended_line_that_changes_a_record_is_a_new_generation() {
    let env = Env::new();
    let path = env.place_gemini("tool-then-answer", AGE).remove(0);
    pass(&env);
    let before = env.store.runs().unwrap();
    assert_eq!(before[0].target.generation, 1);
    let text = std::fs::read_to_string(&path).unwrap();
    let last_message = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .rfind(|v| v["type"] == "gemini")
        .unwrap();
    // The same record, restated with the same text: no rewrite.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{last_message}").unwrap();
    drop(f);
    runread_testkit::set_age(&path, AGE);
    assert!(matches!(
        outcome_of(&pass(&env), &path),
        FileOutcome::Appended { .. }
    ));
    // Another text for it: a new generation.
    let mut changed = last_message;
    changed["content"] = serde_json::json!("A different answer, written over the first.");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{changed}").unwrap();
    drop(f);
    runread_testkit::set_age(&path, AGE);
    assert_eq!(
        outcome_of(&pass(&env), &path),
        FileOutcome::NewGeneration {
            generation: 2,
            bytes: std::fs::metadata(&path).unwrap().len(),
            reason: "history rewritten",
        }
    );
    let after = env.store.runs().unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].target.generation, 2);
    assert_eq!(after[0].run.status, RunStatus::Unknown);
    assert_eq!(
        runread_testkit::answer(&after[0]).as_deref(),
        Some("A different answer, written over the first.")
    );
}

/// Usage is each response's `tokens`, once per record (a response written again with its tool
/// calls is not counted twice), and the model each response names.
#[test]
fn usage_counts_each_response_once() {
    let env = Env::new();
    env.place_gemini("tool-then-answer", AGE);
    pass(&env);
    let runs = env.store.runs().unwrap();
    let usage = runs[0].run.usage.as_ref().unwrap();
    assert_eq!(usage.calls, 3);
    // The stream's `result` reported the run's totals: 303 in, 57 out; the records add 8 of
    // thoughts (`tokens.thoughts`), which Gemini CLI counts apart from `output`.
    assert_eq!(usage.total.input, 303);
    assert_eq!(usage.total.output, 57);
    assert_eq!(usage.total.reasoning, 8);
    assert_eq!(usage.by_model.len(), 1);
    assert_eq!(usage.by_model[0].model, "gemini-2.5-flash");
}

/// Bad input never panics and never aborts an ingest, as for every agent: a torn last line, a
/// malformed line, a line over the line bound; a session path that is a symbolic link, a hard link
/// or a FIFO; a file claiming a session id another file holds. Each is counted and reported; the
/// run a bad line touches is `unknown` for that reason; every other run is as it was.
#[test]
fn bad_input_is_counted_reported_and_taints_only_the_run_it_touches() {
    let env = Env::new();
    let placed = env.place_gemini("length-cutoff", AGE).remove(0);
    let good = std::fs::read_to_string(&placed).unwrap();
    let dir = placed.parent().unwrap().to_path_buf();
    std::fs::remove_file(&placed).unwrap();
    let sid = good
        .lines()
        .next()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["sessionId"].as_str().map(str::to_owned))
        .unwrap();
    // Each variant gets a session id of its own (in every metadata line).
    let variant = |n: u8, text: &str| text.replace(&sid, &format!("{}{n}", &sid[..35]));
    let lines: Vec<&str> = good.lines().collect();
    // The second prompt: the taint must fall on the second run only.
    let second = lines
        .iter()
        .position(|l| l.contains("And now a short one."))
        .unwrap();
    let with = |at: usize, extra: &str| {
        let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        out.insert(at + 1, extra.to_owned());
        out.join("\n") + "\n"
    };
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        runread_testkit::set_age(&p, AGE);
        p
    };
    let mut torn = variant(1, &good);
    torn.truncate(torn.len() - 20);
    write("session-torn.jsonl", &torn);
    write(
        "session-malformed.jsonl",
        &variant(2, &with(second, "{\"id\":\"x\",broken")),
    );
    let huge = format!(
        "{{\"id\":\"big\",\"type\":\"gemini\",\"content\":\"{}\"}}",
        "z".repeat(runread_core::limits::EVIDENCE_LINE_MAX_BYTES)
    );
    write("session-oversize.jsonl", &variant(3, &with(second, &huge)));
    let target = write("session-target.jsonl", &variant(4, &good));
    std::os::unix::fs::symlink(&target, dir.join("session-symlink.jsonl")).unwrap();
    std::fs::hard_link(&target, dir.join("session-hardlink.jsonl")).unwrap();
    let fifo = dir.join("session-fifo.jsonl");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // A file claiming the id of a session another file holds.
    write("session-zz-claims.jsonl", &variant(2, &good));
    let report = env.ingest();
    assert_eq!(report.torn_files, 1, "{report:?}");
    assert_eq!(report.malformed_lines, 2, "{report:?}");
    assert_eq!(report.unreadable, 4, "{report:?}");
    assert_eq!(report.duplicates, 1, "{report:?}");
    let runs = env.store.runs().unwrap();
    for (n, reason) in [
        (1, "unfinished last line"),
        (2, "malformed line"),
        (3, "malformed line"),
    ] {
        let mut of: Vec<&runread_store::RunRecord> = runs
            .iter()
            .filter(|r| {
                r.target
                    .session_id
                    .ends_with(&format!("{}{n}", &sid[34..35]))
            })
            .collect();
        of.sort_by_key(|r| r.run.start_line);
        assert_eq!(of.len(), 2, "{n}");
        assert_eq!(
            of[0].run.unknown_reason.as_deref(),
            Some(runread_sessions::gemini::END_NOT_RECORDED),
            "{n}: the first run is untouched"
        );
        assert_eq!(of[1].run.unknown_reason.as_deref(), Some(reason), "{n}");
    }
}
