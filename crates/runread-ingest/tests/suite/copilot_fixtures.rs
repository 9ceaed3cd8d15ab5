//! GitHub Copilot CLI session files written by the real Copilot CLI 1.0.102
//! (`fixtures/copilot/1.0.102`, every scenario of `../shared/harness/scenarios/copilot/` and
//! runread's own `secrets`), ingested: what Copilot CLI's own files add to every recorded agent's
//! suite (`recorded_agents`) — one file per session with every run appended, read as it grew; the
//! usage records; and bad input, as for every agent.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::path::PathBuf;
use std::time::Duration;

use runread_ingest::FileOutcome;
use runread_sessions::{Agent, RunStatus};
use runread_store::prelude::*;
use runread_testkit::Env;

const AGE: Duration = Duration::from_secs(60);

/// One pass over the Copilot session-state folder: each file's outcome.
fn pass(env: &Env) -> Vec<(PathBuf, FileOutcome)> {
    crate::recorded_agents::pass_over(env, Agent::Copilot, &env.copilot_state)
}

/// Every run of a resumed session is in its one file, in the workspace `session.start` names.
#[test]
fn every_run_of_a_session_is_in_its_one_file() {
    let env = Env::new();
    let files = env.place_copilot("continue-unicode", AGE);
    assert_eq!(files.len(), 1);
    let report = env.ingest();
    assert_eq!(report.malformed_lines, 0, "{report:?}");
    let runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r.agent == Agent::Copilot));
    assert!(runs.iter().all(|r| r.run.status == RunStatus::Completed));
    let sessions: std::collections::HashSet<&str> =
        runs.iter().map(|r| r.target.session_id.as_str()).collect();
    assert_eq!(sessions.len(), 1);
    assert!(
        runs.iter()
            .all(|r| r.target.workspace_id == runs[0].target.workspace_id)
    );
}

/// The file as Copilot CLI wrote it, ingested line by line as it grew: every pass that adds lines
/// is an append, and the runs in the end are those of one whole read.
#[test]
fn read_as_it_grew_every_pass_is_an_append() {
    for fixture in [
        "continue-unicode",
        "subagent",
        "provider-error",
        "length-cutoff",
    ] {
        // `session.start` and the first prompt.
        crate::recorded_agents::grows_by_appends(Env::place_copilot, pass, fixture, 2);
    }
}

/// Usage is each `session.usage_record` of the run, checked against a plain read of the file:
/// the records from the run's prompt to the next prompt, subagents' calls included.
#[test]
fn usage_is_each_usage_record_of_the_run() {
    for fixture in ["subagent", "length-cutoff", "continue-unicode"] {
        let env = Env::new();
        let path = env.place_copilot(fixture, AGE).remove(0);
        env.ingest();
        let text = std::fs::read_to_string(&path).unwrap();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for run in env.store.runs().unwrap() {
            let prompt = runread_testkit::prompt(&run).unwrap();
            let start = events
                .iter()
                .position(|v| v["type"] == "user.message" && v["data"]["content"] == *prompt)
                .unwrap();
            let records: Vec<&serde_json::Value> = events[start..]
                .iter()
                .enumerate()
                .take_while(|(i, v)| {
                    *i == 0 || !(v["type"] == "user.message" && v["data"]["source"].is_null())
                })
                .map(|(_, v)| v)
                .filter(|v| v["type"] == "session.usage_record")
                .collect();
            let usage = run.run.usage.clone().unwrap();
            assert_eq!(usage.calls, records.len() as u64, "{fixture}: {prompt}");
            let sum = |k: &str| {
                records
                    .iter()
                    .map(|v| v["data"]["usage"][k].as_u64().unwrap())
                    .sum::<u64>()
            };
            assert_eq!(usage.total.input, sum("inputTokens"), "{fixture}: {prompt}");
            assert_eq!(
                usage.total.output,
                sum("outputTokens"),
                "{fixture}: {prompt}"
            );
            assert_eq!(usage.by_model.len(), 1);
            assert_eq!(usage.by_model[0].model, "mock-1");
        }
    }
}

/// Bad input never panics and never aborts an ingest, as for every agent: a torn last line, a
/// malformed line, a line over the line bound; a session path that is a symbolic link, a hard link
/// or a FIFO; a file claiming a session id another file holds. Each is counted and reported; the
/// run a bad line touches is `unknown` for that reason; every other run is as it was.
#[test]
fn bad_input_is_counted_reported_and_taints_only_the_run_it_touches() {
    let env = Env::new();
    let placed = env.place_copilot("continue-unicode", AGE).remove(0);
    let good = std::fs::read_to_string(&placed).unwrap();
    let root = env.copilot_state.clone();
    std::fs::remove_dir_all(placed.parent().unwrap()).unwrap();
    let sid = good
        .lines()
        .next()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["data"]["sessionId"].as_str().map(str::to_owned))
        .unwrap();
    // Each variant gets a session id of its own.
    let variant = |n: u8, text: &str| text.replace(&sid, &format!("{}{n}", &sid[..35]));
    let lines: Vec<&str> = good.lines().collect();
    // The second prompt: the taint must fall on the second run only.
    let second = lines
        .iter()
        .position(|l| l.contains("Say it again, with feeling."))
        .unwrap();
    let with = |at: usize, extra: &str| {
        let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        out.insert(at + 1, extra.to_owned());
        out.join("\n") + "\n"
    };
    let write = |folder: &str, text: &str| {
        let d = root.join(folder);
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("events.jsonl");
        std::fs::write(&p, text).unwrap();
        runread_testkit::set_age(&p, AGE);
        p
    };
    let mut torn = variant(1, &good);
    torn.truncate(torn.len() - 20);
    write("torn", &torn);
    write(
        "malformed",
        &variant(2, &with(second, "{\"type\":\"assistant.message\",broken")),
    );
    let huge = format!(
        "{{\"type\":\"assistant.message\",\"id\":\"big\",\"data\":{{\"content\":\"{}\"}}}}",
        "z".repeat(runread_core::limits::EVIDENCE_LINE_MAX_BYTES)
    );
    write("oversize", &variant(3, &with(second, &huge)));
    let target = write("target", &variant(4, &good));
    for folder in ["symlink", "hardlink", "fifo"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    std::os::unix::fs::symlink(&target, root.join("symlink/events.jsonl")).unwrap();
    std::fs::hard_link(&target, root.join("hardlink/events.jsonl")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(root.join("fifo/events.jsonl"))
            .status()
            .unwrap()
            .success()
    );
    // A file claiming the id of a session another file holds.
    write("zz-claims", &variant(2, &good));
    let report = env.ingest();
    assert_eq!(report.torn_files, 1, "{report:?}");
    assert_eq!(report.malformed_lines, 2, "{report:?}");
    assert_eq!(report.unreadable, 4, "{report:?}");
    assert_eq!(report.duplicates, 1, "{report:?}");
    let runs = env.store.runs().unwrap();
    for (n, at, reason) in [
        (1, 2, "unfinished last line"),
        (2, 1, "malformed line"),
        (3, 1, "malformed line"),
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
        assert_eq!(of.len(), 3, "{n}");
        for (i, r) in of.iter().enumerate() {
            if i == at {
                assert_eq!(r.run.status, RunStatus::Unknown, "{n}");
                assert_eq!(r.run.unknown_reason.as_deref(), Some(reason), "{n}");
            } else {
                assert_eq!(
                    r.run.status,
                    RunStatus::Completed,
                    "{n}: run {i} is untouched"
                );
            }
        }
    }
}
