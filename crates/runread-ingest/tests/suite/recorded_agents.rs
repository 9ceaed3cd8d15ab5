//! Every agent recorded with its reported stream (Claude Code, Codex, Gemini CLI, Copilot CLI:
//! `RECORDED_AGENTS`), one
//! suite: each run of each recording, ingested, is what the agent itself reported — its status,
//! its answer byte for byte, its prompt — and every step the agent ran is a run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runread_ingest::FileOutcome;

use runread_sessions::RunStatus;

use runread_testkit::{Env, RECORDED_AGENTS, Reported};

#[test]
fn every_run_of_every_recording_is_what_its_agent_reported() {
    for recorded in RECORDED_AGENTS {
        for fixture in recorded.fixtures {
            let at = format!("{} {fixture}", recorded.agent);
            let env = Env::new();
            (recorded.place)(&env, fixture, Duration::from_secs(60));
            let report = env.ingest();
            assert_eq!(report.malformed_lines, 0, "{at}");
            assert_eq!(report.torn_files, 0, "{at}");
            let runs = env.store.runs().unwrap();
            let steps = (recorded.steps)(fixture);
            assert!(!runs.is_empty(), "{at}: no runs");
            if !recorded.fork_repeats_parent {
                assert_eq!(runs.len(), steps.len(), "{at}: one run per step");
            }
            for run in &runs {
                assert_eq!(run.agent, recorded.agent, "{at}");
                let prompt = runread_testkit::prompt(run).unwrap_or_default();
                let step = steps
                    .iter()
                    .find(|s| s.prompt == prompt)
                    .unwrap_or_else(|| panic!("{at}: a run for a prompt no step sent: {prompt}"));
                let answer = runread_testkit::answer(run);
                match &step.reported {
                    Reported::Answer(text) if recorded.end_recorded && !step.cut_off => {
                        assert_eq!(run.run.status, RunStatus::Completed, "{at}: {prompt}");
                        assert_eq!(answer.as_deref(), Some(text.as_str()), "{at}: {prompt}");
                        assert_eq!(run.run.final_bytes, text.len() as u64, "{at}: {prompt}");
                    }
                    // The file cannot prove how the response ended (or, cut off, that it is the
                    // whole answer): never `completed`, but the candidate it keeps is exactly
                    // what the agent answered.
                    Reported::Answer(text) => {
                        assert_eq!(run.run.status, RunStatus::Unknown, "{at}: {prompt}");
                        assert_eq!(answer.as_deref(), Some(text.as_str()), "{at}: {prompt}");
                        assert_eq!(run.run.final_bytes, text.len() as u64, "{at}: {prompt}");
                    }
                    Reported::Failed(_) if recorded.end_recorded => {
                        assert_eq!(run.run.status, RunStatus::Failed, "{at}: {prompt}");
                        assert_eq!(answer, None, "{at}: {prompt}");
                    }
                    Reported::Interrupted if recorded.interrupt_recorded => {
                        assert_eq!(run.run.status, RunStatus::Cancelled, "{at}: {prompt}");
                        assert_eq!(answer, None, "{at}: {prompt}");
                    }
                    // A failure or an interruption the file does not record: never an answer
                    // that stands (at most an unproven candidate, or a run still open).
                    Reported::Failed(_) | Reported::Interrupted => {
                        assert_ne!(run.run.status, RunStatus::Completed, "{at}: {prompt}");
                        if run.run.status != RunStatus::Unknown {
                            assert_eq!(answer, None, "{at}: {prompt}");
                        }
                    }
                }
                // The run id is the agent's own id of the prompt (or the turn): a uuid, or
                // OpenCode's message id (`msg_` and 26 letters and digits).
                let id = &run.target.run_id;
                let own = match recorded.agent {
                    runread_core::Agent::OpenCode => id.len() == 30 && id.starts_with("msg_"),
                    _ => id.len() == 36,
                };
                assert!(own, "{at}: {id}");
            }
            for step in &steps {
                let prompt = step.prompt.as_str();
                assert!(
                    runs.iter()
                        .any(|r| runread_testkit::prompt(r).as_deref() == Some(prompt)),
                    "{at}: no run for {prompt}"
                );
            }
        }
    }
}

/// The shared body of "a session file read as it grew": `fixture`'s first file, as `place` puts
/// it, written `lines_before` whole lines at first (the first pass makes it a session: generation
/// 1), then one line at a time, `pass` after each: every pass is an append of exactly the new
/// bytes, and the runs in the end are those of one whole read. For an agent whose lines are
/// upserts (Gemini CLI) as for an append-only one (Copilot CLI).
pub(crate) fn grows_by_appends(
    place: fn(&Env, &str, Duration) -> Vec<PathBuf>,
    pass: fn(&Env) -> Vec<(PathBuf, FileOutcome)>,
    fixture: &str,
    lines_before: usize,
) {
    const AGE: Duration = Duration::from_secs(60);
    let whole = Env::new();
    place(&whole, fixture, AGE);
    pass(&whole);
    let mut want = whole.store.runs().unwrap();

    let env = Env::new();
    let path = place(&env, fixture, AGE).remove(0);
    let bytes = std::fs::read(&path).unwrap();
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    let first = ends[lines_before - 1];
    std::fs::write(&path, &bytes[..first]).unwrap();
    runread_testkit::set_age(&path, AGE);
    let o = outcome_of(&pass(&env), &path);
    assert!(
        matches!(o, FileOutcome::NewGeneration { generation: 1, .. }),
        "{fixture}: {o:?}"
    );
    let mut from = first;
    for end in ends.iter().copied().skip(lines_before) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&bytes[from..end]).unwrap();
        drop(f);
        runread_testkit::set_age(&path, AGE);
        let o = outcome_of(&pass(&env), &path);
        assert_eq!(
            o,
            FileOutcome::Appended {
                bytes: (end - from) as u64
            },
            "{fixture} at {end}"
        );
        from = end;
    }
    let mut got = env.store.runs().unwrap();
    for runs in [&mut want, &mut got] {
        runs.sort_by_key(|r| r.run.start_line);
    }
    let key = |r: &runread_store::RunRecord| {
        (
            r.target.run_id.clone(),
            r.run.status,
            r.run.unknown_reason.clone(),
            r.run.message_lines.clone(),
            r.run.final_text_sha256.clone(),
            r.run.usage.clone(),
        )
    };
    assert_eq!(
        got.iter().map(key).collect::<Vec<_>>(),
        want.iter().map(key).collect::<Vec<_>>(),
        "{fixture}"
    );
}

/// The outcome `outcomes` (one pass's) gives `path`.
pub(crate) fn outcome_of(outcomes: &[(PathBuf, FileOutcome)], path: &Path) -> FileOutcome {
    outcomes
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, o)| o.clone())
        .unwrap()
}

/// One ingest pass over `agent`'s folder `dir`: each file's outcome.
pub(crate) fn pass_over(
    env: &Env,
    agent: runread_sessions::Agent,
    dir: &Path,
) -> Vec<(PathBuf, FileOutcome)> {
    let dir = runread_ingest::AgentDir::new(agent, dir);
    runread_ingest::ingest_dir(&*env.store, &dir, runread_core::timefmt::now_ms(), |_| {})
        .unwrap()
        .1
}
