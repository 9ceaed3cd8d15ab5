//! Supervision of OpenCode on real recorded `--format json` streams
//! (`fixtures/opencode/1.18.33/*/events-N.jsonl`, written by OpenCode 1.18.33 through the
//! harness) and the database it wrote in the same runs (`sessions/opencode.db`). The oracle for
//! every step is what OpenCode itself reported — an `error`, else the text of the message whose
//! `step_finish` said `stop` or `length`, else an interrupted step — and its exit code
//! (`manifest.json`; a negative one is the signal that ended it), read with plain JSON by
//! `runread_testkit::reported`, never runread's own reading.
//!
//! The proofs against the database need OpenCode's session reader (`runread_sessions::opencode`'s
//! scan and run cutter): while it cannot read a session yet, those tests say so and check
//! nothing more.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::path::PathBuf;

use runread_sessions::{Agent, Resume, RunStatus};
use runread_store::{Foreground, Phase, Proof};
use runread_supervise::opencode::events as opencode_events;
use runread_supervise::opencode::foreground as opencode_foreground;
use runread_supervise::opencode::state::{OpenCodeCandidate, OpenCodeSupervision};
use runread_supervise::opencode::{args, proof};
use runread_supervise::proof::{Pinned, Refusal};
use runread_testkit::{
    OPENCODE_FIXTURES, Reported, ReportedStep, opencode_fixtures_dir, opencode_steps,
};
use serde_json::Value;

use crate::recorded_agents::status_of;

crate::feeder!(OpenCodeSupervision, opencode_events::parse);

/// How supervision judges `step`'s foreground from its stream and its exit code: for the suite
/// over every recorded agent (`recorded_agents`).
pub(crate) fn foreground(step: &ReportedStep) -> (Foreground, String, i32) {
    let (sup, _) = feed(&step.lines);
    opencode_foreground(
        status_of(step.exit_code),
        step.interrupted_by_harness,
        &sup.runs,
    )
}

fn event_of(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

#[test]
fn every_recorded_step_settles_or_not_as_opencode_reported_it() {
    let (mut answered, mut cut, mut failed, mut stopped) = (0, 0, 0, 0);
    for fixture in OPENCODE_FIXTURES {
        for (i, step) in opencode_steps(fixture).iter().enumerate() {
            let at = format!("{fixture} step {i}");
            let (sup, settled) = feed(&step.lines);
            assert_eq!(sup.faults, 0, "{at}");
            assert_eq!(sup.unknown_events, 0, "{at}");
            assert!(sup.runs.len() <= 1, "{at}: `opencode run` sends one prompt");
            match &step.reported {
                Reported::Answer(text) => {
                    let run = &sup.runs[0];
                    assert!(!run.broken, "{at}");
                    assert_eq!(sup.session_id.as_deref(), Some(step.session_id.as_str()));
                    assert_eq!(settled.len(), 1, "{at}: one settle");
                    let (line, n) = settled[0];
                    assert_eq!(n, 0);
                    let end = event_of(&step.lines[line]);
                    assert_eq!(end["type"], "step_finish", "{at}");
                    let c = run.candidate().unwrap();
                    assert_eq!(&c.text, text, "{at}");
                    assert_eq!(c.truncated, end["part"]["reason"] == "length", "{at}");
                    if c.truncated {
                        cut += 1;
                    } else {
                        answered += 1;
                    }
                    assert_eq!(sup.phase(), Some(Phase::Ended), "{at}");
                    // The same stream without its end: nothing settles.
                    let (cut, none) = feed(&step.lines[..line]);
                    assert!(none.is_empty(), "{at}");
                    assert_eq!(cut.runs[0].candidate(), None, "{at}");
                }
                Reported::Failed(_) => {
                    failed += 1;
                    assert!(settled.is_empty(), "{at}");
                    assert_eq!(sup.runs[0].candidate(), None, "{at}");
                    assert_eq!(
                        sup.runs[0].closing_proof(false),
                        Proof::NoAnswer {
                            reason: "the agent reported that the run failed".into()
                        },
                        "{at}"
                    );
                }
                Reported::Interrupted => {
                    stopped += 1;
                    assert!(settled.is_empty(), "{at}");
                    for run in &sup.runs {
                        assert_eq!(
                            run.closing_proof(true),
                            Proof::NoAnswer {
                                reason: "the run was interrupted".into()
                            },
                            "{at}"
                        );
                    }
                }
            }
        }
    }
    assert!(
        answered >= 15 && cut >= 1 && failed >= 2 && stopped >= 4,
        "{answered} answered, {cut} cut, {failed} failed, {stopped} stopped"
    );
}

#[test]
fn an_exit_or_a_stream_that_contradicts_an_answer_is_not_a_normal_end() {
    let step = &opencode_steps("tool-then-answer")[0];
    let (sup, _) = feed(&step.lines);
    assert_eq!(
        opencode_foreground(status_of(0), false, &sup.runs).0,
        Foreground::Completed
    );
    // A non-zero exit after an answer: failed.
    assert_eq!(
        opencode_foreground(status_of(1), false, &sup.runs).0,
        Foreground::Failed
    );
    // Exit 0 with no end reported: stopped, not done.
    let (cut, _) = feed(&step.lines[..step.lines.len() - 1]);
    assert_eq!(
        opencode_foreground(status_of(0), false, &cut.runs).0,
        Foreground::Cancelled
    );
    // The failure OpenCode reported, with its exit 1: its normal end.
    let failed = opencode_steps("provider-error")
        .into_iter()
        .find(|s| matches!(s.reported, Reported::Failed(_)))
        .unwrap();
    assert_eq!(failed.exit_code, 1);
    let (sup, _) = feed(&failed.lines);
    assert_eq!(
        opencode_foreground(status_of(1), false, &sup.runs).0,
        Foreground::Completed
    );
    // The same exit without the report: failed.
    assert_eq!(
        opencode_foreground(status_of(1), false, &[]).0,
        Foreground::Failed
    );
    // An interrupt kills OpenCode: cancelled when runread passed it on, killed otherwise.
    let (part, _) = feed(&opencode_steps("interrupted-late")[0].lines);
    assert_eq!(
        opencode_foreground(status_of(-2), true, &part.runs),
        (Foreground::Cancelled, "signal:2".to_owned(), 130)
    );
    assert_eq!(
        opencode_foreground(status_of(-9), false, &part.runs).0,
        Foreground::Killed
    );
    // An unknown event inside the run: no candidate, a refused proof.
    let mut lines = step.lines.clone();
    let at = lines.len() - 1;
    lines.insert(
        at,
        format!(
            r#"{{"type":"step_summary","sessionID":"{}"}}"#,
            step.session_id
        ),
    );
    let (sup, settled) = feed(&lines);
    assert!(settled.is_empty());
    assert_eq!(sup.unknown_events, 1);
    assert_eq!(
        sup.runs[0].closing_proof(false),
        Proof::Refused {
            reason: Refusal::UnknownEvent.as_str().into()
        }
    );
}

/// A copy of the fixture's database (its folder: SQLite writes a WAL database's companions next
/// to it, even when read only), and its path in the copy.
fn database_of(fixture: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let from = opencode_fixtures_dir().join(fixture).join("sessions");
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), d.path().join(entry.file_name())).unwrap();
    }
    let db = d.path().join("opencode.db");
    (d, db)
}

fn cwd_of(fixture: &str) -> String {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(opencode_fixtures_dir().join(fixture).join("manifest.json"))
            .unwrap(),
    )
    .unwrap();
    manifest["workspace"].as_str().unwrap().to_owned()
}

fn other(c: &OpenCodeCandidate, text: &str) -> OpenCodeCandidate {
    OpenCodeCandidate {
        text: text.into(),
        text_sha256: runread_core::sha256_hex(text.as_bytes()),
        ..c.clone()
    }
}

#[test]
fn every_recorded_answer_proves_against_the_database_opencode_wrote() {
    let mut proved = 0;
    for fixture in OPENCODE_FIXTURES {
        for (i, step) in opencode_steps(fixture).iter().enumerate() {
            let Reported::Answer(text) = &step.reported else {
                continue;
            };
            let at = format!("{fixture} step {i}");
            let (sup, _) = feed(&step.lines);
            let c = sup.runs[0].candidate().unwrap();
            let (_copy, db) = database_of(fixture);
            let path = args::find_session(&db, &step.session_id)
                .unwrap_or_else(|| panic!("{at}: the session's name"));
            let pinned = Pinned {
                session_id: step.session_id.clone(),
                cwd: cwd_of(fixture),
                identity: None,
                leaf: None,
            };
            proof::pin(&path, &pinned).unwrap_or_else(|r| panic!("{at}: pin {r:?}"));
            let (v, truncated) =
                proof::verify(&path, &pinned, &c).unwrap_or_else(|r| panic!("{at}: {r:?}"));
            assert_eq!(truncated, c.truncated, "{at}");
            assert_eq!(v.run.status, RunStatus::Completed, "{at}");
            assert_eq!(v.final_entry_id, c.entry_id, "{at}");
            assert_eq!(v.text_bytes, text.len() as u64, "{at}");
            assert_eq!(
                runread_testkit::answer_of_agent(&path, Agent::OpenCode, &v.run).as_deref(),
                Some(text.as_str()),
                "{at}: the database's answer is the stream's"
            );
            // A different text, another part, a cut the stream did not say: not proven.
            assert_eq!(
                proof::verify(&path, &pinned, &other(&c, "not what it said")).err(),
                Some(Refusal::Mismatch),
                "{at}"
            );
            let elsewhere_part = OpenCodeCandidate {
                entry_id: "prt_00000000000000000000000000".into(),
                ..c.clone()
            };
            assert_eq!(
                proof::verify(&path, &pinned, &elsewhere_part).err(),
                Some(Refusal::Mismatch),
                "{at}"
            );
            let flipped = OpenCodeCandidate {
                truncated: !c.truncated,
                ..c.clone()
            };
            assert_eq!(
                proof::verify(&path, &pinned, &flipped).err(),
                Some(Refusal::Mismatch),
                "{at}"
            );
            // A message the session does not hold: not its run.
            let elsewhere_msg = OpenCodeCandidate {
                message_id: "msg_00000000000000000000000000".into(),
                ..c.clone()
            };
            assert_eq!(
                proof::verify(&path, &pinned, &elsewhere_msg).err(),
                Some(Refusal::NotOnBranch),
                "{at}"
            );
            // Another cwd: not the session pinned.
            let elsewhere = Pinned {
                cwd: "/elsewhere".into(),
                ..pinned.clone()
            };
            assert_eq!(
                proof::verify(&path, &elsewhere, &c).err(),
                Some(Refusal::OtherSession),
                "{at}"
            );
            proved += 1;
        }
    }
    assert!(proved >= 15, "{proved}");
}

#[test]
fn a_run_that_reported_only_an_error_is_the_sessions_last_failed_run() {
    let mut found = 0;
    for fixture in OPENCODE_FIXTURES {
        for (i, step) in opencode_steps(fixture).iter().enumerate() {
            let Reported::Failed(_) = &step.reported else {
                continue;
            };
            let at = format!("{fixture} step {i}");
            let (sup, _) = feed(&step.lines);
            assert!(sup.runs[0].messages.is_empty(), "{at}: an error alone");
            let (_copy, db) = database_of(fixture);
            let path = args::find_session(&db, &step.session_id).unwrap();
            let file = runread_sessions::open_session(Agent::OpenCode, &path, None).unwrap();
            let entries = runread_sessions::scan(Agent::OpenCode, &file, Resume::Fresh)
                .unwrap()
                .entries;
            let runs = runread_sessions::cut_runs(Agent::OpenCode, &entries, &[], false).runs;
            // The session as it stood when the step ended: up to the end of its failed run.
            let failed: Vec<_> = runs
                .iter()
                .filter(|r| r.status == RunStatus::Failed)
                .collect();
            assert!(!failed.is_empty(), "{at}");
            for run in failed {
                let then: Vec<_> = entries
                    .iter()
                    .filter(|e| e.line <= run.end_line)
                    .cloned()
                    .collect();
                assert_eq!(
                    proof::last_failed_run(&then).as_deref(),
                    Some(run.run_id.as_str()),
                    "{at}"
                );
            }
            // A session whose last run answered: not a failed run of this invocation.
            if runs
                .last()
                .is_some_and(|r| r.status == RunStatus::Completed)
            {
                assert_eq!(proof::last_failed_run(&entries), None, "{at}");
            }
            found += 1;
        }
    }
    assert!(found >= 2, "{found}");
}
