//! Supervision of Gemini CLI on real recorded `stream-json` streams
//! (`fixtures/gemini/0.61.0/*/events-N.jsonl`, written by Gemini CLI 0.61.0 through the harness)
//! and the chat files Gemini CLI wrote in the same runs. The oracle for every step is what Gemini
//! CLI itself reported — the assistant text after its last tool event before a `result` of status
//! `success`, a failed `result`, or the stream stopping — and its exit code (`manifest.json`),
//! read with plain JSON by `runread_testkit::reported`, never runread's own reading: when a run
//! settles, what its candidate is, how its foreground ended, and what the verification against
//! the chat file accepts and refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::path::{Path, PathBuf};

use runread_sessions::{Agent, EntrySummary, EvidenceFile, Resume, Run, RunStatus};
use runread_store::{Foreground, Phase, Proof};
use runread_supervise::gemini::events as gemini_events;
use runread_supervise::gemini::foreground as gemini_foreground;
use runread_supervise::gemini::state::{GeminiCandidate, GeminiSupervision, RunEnd};
use runread_supervise::gemini::{args, proof};
use runread_supervise::proof::{Pinned, Refusal};
use runread_testkit::{GEMINI_FIXTURES, Reported, ReportedStep, gemini_fixtures_dir, gemini_steps};
use serde_json::Value;

use crate::recorded_agents::exited;

crate::feeder!(GeminiSupervision, gemini_events::parse);

/// How supervision judges `step`'s foreground from its stream and its exit code (runread passes
/// an interrupt on when the harness interrupts the agent): for the suite over every recorded
/// agent (`recorded_agents`).
pub(crate) fn foreground(step: &ReportedStep) -> (Foreground, String, i32) {
    let (sup, _) = feed(&step.lines);
    gemini_foreground(
        exited(step.exit_code),
        step.interrupted_by_harness,
        &sup.runs,
    )
}

fn event_type(line: &str) -> String {
    let v: Value = serde_json::from_str(line).unwrap();
    v["type"].as_str().unwrap_or("").to_owned()
}

#[test]
fn every_recorded_step_settles_or_not_as_gemini_cli_reported_it() {
    let (mut answered, mut failed, mut stopped) = (0, 0, 0);
    for fixture in GEMINI_FIXTURES {
        for (i, step) in gemini_steps(fixture).iter().enumerate() {
            let at = format!("{fixture} step {i}");
            let (sup, settled) = feed(&step.lines);
            assert!(!sup.broken, "{at}");
            assert_eq!(sup.faults, 0, "{at}");
            assert_eq!(sup.unknown_events, 0, "{at}");
            assert_eq!(sup.runs.len(), 1, "{at}: `gemini -p` runs one prompt");
            assert_eq!(sup.session_id.as_deref(), Some(step.session_id.as_str()));
            let run = &sup.runs[0];
            match &step.reported {
                Reported::Answer(text) => {
                    answered += 1;
                    assert_eq!(settled.len(), 1, "{at}: one settle");
                    let (line, n) = settled[0];
                    assert_eq!(n, 0);
                    assert_eq!(event_type(&step.lines[line]), "result", "{at}");
                    let c = run.candidate().unwrap();
                    assert_eq!(&c.text, text, "{at}");
                    assert_eq!(sup.phase(), Some(Phase::Ended), "{at}");
                    // The same stream without its `result`: nothing settles.
                    let (cut, none) = feed(&step.lines[..line]);
                    assert!(none.is_empty(), "{at}");
                    assert_eq!(cut.runs[0].candidate(), None, "{at}");
                }
                Reported::Failed(_) => {
                    failed += 1;
                    assert!(settled.is_empty(), "{at}");
                    assert!(
                        matches!(&run.end, Some(RunEnd::Failed(_))),
                        "{at}: {:?}",
                        run.end
                    );
                    assert_eq!(run.candidate(), None, "{at}");
                    assert_eq!(
                        run.closing_proof(false),
                        Proof::NoAnswer {
                            reason: "the agent reported that the run failed".into()
                        },
                        "{at}"
                    );
                }
                Reported::Interrupted => {
                    stopped += 1;
                    assert!(settled.is_empty(), "{at}");
                    assert_eq!(run.end, None, "{at}");
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
    assert!(
        answered >= 10 && failed >= 4 && stopped >= 2,
        "{answered} answered, {failed} failed, {stopped} stopped"
    );
}

#[test]
fn the_unmarked_cut_off_is_a_success_on_the_stream_too() {
    // The length-cutoff scenario's model answered with text and `MAX_TOKENS`: Gemini CLI streams
    // it as any answer, and reports a success.
    let steps = gemini_steps("length-cutoff");
    let cut = &steps[0];
    assert!(cut.lines.iter().all(|l| !l.contains("MAX_TOKENS")));
    let (sup, settled) = feed(&cut.lines);
    assert_eq!(settled.len(), 1);
    assert_eq!(sup.runs[0].end, Some(RunEnd::Success));
    assert_eq!(
        sup.runs[0].candidate().unwrap().text,
        "This answer was cut off by the length lim"
    );
}

#[test]
fn an_exit_or_a_stream_that_contradicts_an_answer_is_not_a_normal_end() {
    let step = &gemini_steps("tool-then-answer")[0];
    let (sup, _) = feed(&step.lines);
    assert_eq!(
        gemini_foreground(exited(0), false, &sup.runs).0,
        Foreground::Completed
    );
    // A non-zero exit after a success: failed, never read as completed.
    assert_eq!(
        gemini_foreground(exited(1), false, &sup.runs).0,
        Foreground::Failed
    );
    // Exit 0 with no `result` (an interrupt): stopped, not done.
    let (cut, _) = feed(&step.lines[..step.lines.len() - 1]);
    assert_eq!(
        gemini_foreground(exited(0), false, &cut.runs).0,
        Foreground::Cancelled
    );
    // A failed request's exit (500 → 244) after the failure was reported: its normal end.
    let step = &gemini_steps("provider-error")[1];
    assert_eq!(step.exit_code, 244);
    let (sup, _) = feed(&step.lines);
    assert_eq!(
        gemini_foreground(exited(244), false, &sup.runs).0,
        Foreground::Completed
    );
    // The same exit without the report: failed.
    let (cut, _) = feed(&step.lines[..step.lines.len() - 1]);
    assert_eq!(
        gemini_foreground(exited(244), false, &cut.runs).0,
        Foreground::Failed
    );
    // An unknown event inside the run: no candidate, a refused proof.
    let mut lines = step_lines("tool-then-answer", 0);
    let at = lines.len() - 1;
    lines.insert(at, r#"{"type":"turn_summary","text":"x"}"#.to_owned());
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

fn step_lines(fixture: &str, step: usize) -> Vec<String> {
    gemini_steps(fixture)[step].lines.clone()
}

/// The fixture's `tmp` folder (`sessions/`, as Gemini CLI's `tmp/`).
fn tmp_of(fixture: &str) -> PathBuf {
    gemini_fixtures_dir().join(fixture).join("sessions")
}

fn entries(path: &Path) -> Vec<EntrySummary> {
    let file = EvidenceFile::open(path, None).unwrap();
    runread_sessions::scan(Agent::Gemini, &file, Resume::Fresh)
        .unwrap()
        .entries
}

fn runs(path: &Path) -> Vec<Run> {
    runread_sessions::cut_runs(Agent::Gemini, &entries(path), &[], false).runs
}

fn cwd_of(path: &Path) -> String {
    let project = path.parent().unwrap().parent().unwrap();
    std::fs::read_to_string(project.join(".project_root")).unwrap()
}

/// Which run of its chat file step `step` of `fixture` was: the steps of one session run their
/// prompts in order.
fn run_index(fixture: &str, step: usize) -> usize {
    let all = gemini_steps(fixture);
    let session = &all[step].session_id;
    all[..step]
        .iter()
        .filter(|s| &s.session_id == session)
        .count()
}

/// What runread pinned when step `step` of `fixture` started: the session and cwd, and the
/// file's newest entry before the step's prompt (none for a session the step created).
fn pinned_for(path: &Path, fixture: &str, step: usize) -> Pinned {
    let start = runs(path)[run_index(fixture, step)].start_line;
    Pinned {
        session_id: gemini_steps(fixture)[step].session_id.clone(),
        cwd: cwd_of(path),
        identity: None,
        leaf: entries(path)
            .iter()
            .rfind(|e| e.line < start)
            .map(|e| e.id.clone()),
    }
}

fn other(text: &str) -> GeminiCandidate {
    GeminiCandidate {
        text: text.into(),
        text_sha256: runread_core::sha256_hex(text.as_bytes()),
    }
}

#[test]
fn every_recorded_answer_proves_against_the_chat_file_gemini_cli_wrote() {
    let mut proved = 0;
    for fixture in GEMINI_FIXTURES {
        for (i, step) in gemini_steps(fixture).iter().enumerate() {
            let Reported::Answer(text) = &step.reported else {
                continue;
            };
            let at = format!("{fixture} step {i}");
            let (sup, _) = feed(&step.lines);
            let c = sup.runs[0].candidate().unwrap();
            let path = args::find_session(&tmp_of(fixture), &step.session_id)
                .unwrap_or_else(|| panic!("{at}: the session's file"));
            let pinned = pinned_for(&path, fixture, i);
            let v = proof::verify(&path, &pinned, &c).unwrap_or_else(|r| panic!("{at}: {r:?}"));
            let run = &runs(&path)[run_index(fixture, i)];
            assert_eq!(
                v.run.run_id, run.run_id,
                "{at}: the run is the step's prompt"
            );
            // Passively, the same run is only a candidate.
            assert_eq!(run.status, RunStatus::Unknown, "{at}");
            assert_eq!(v.text_bytes, text.len() as u64);
            assert_eq!(
                runread_testkit::answer_of_agent(&path, Agent::Gemini, &v.run).as_deref(),
                Some(text.as_str()),
                "{at}: the file's candidate is the stream's answer"
            );
            // A different text: not proven.
            assert_eq!(
                proof::verify(&path, &pinned, &other("not what Gemini CLI said")).err(),
                Some(Refusal::Mismatch),
                "{at}"
            );
            // Pinned after the run: it is not this invocation's.
            let late = Pinned {
                leaf: entries(&path).last().map(|e| e.id.clone()),
                ..pinned.clone()
            };
            if runs(&path).last().map(|r| &r.run_id) == Some(&run.run_id) {
                assert_eq!(
                    proof::verify(&path, &late, &c).err(),
                    Some(Refusal::NotOnBranch),
                    "{at}"
                );
            }
            // Another session's id, another cwd: not the file pinned.
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
    assert!(proved >= 10, "{proved}");
}

#[test]
fn a_new_sessions_file_without_a_message_pins_with_no_entry() {
    let d = tempfile::tempdir().unwrap();
    let src = args::find_session(
        &tmp_of("tool-then-answer"),
        &gemini_steps("tool-then-answer")[0].session_id,
    )
    .unwrap();
    let cwd = cwd_of(&src);
    let project = d.path().join("workspace");
    let chats = project.join("chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(project.join(".project_root"), &cwd).unwrap();
    // Its first two lines: the metadata and the session context.
    let text = std::fs::read_to_string(&src).unwrap();
    let head: Vec<&str> = text.lines().take(2).collect();
    let path = chats.join(src.file_name().unwrap());
    std::fs::write(&path, format!("{}\n", head.join("\n"))).unwrap();
    let pinned = Pinned {
        session_id: gemini_steps("tool-then-answer")[0].session_id.clone(),
        cwd,
        identity: None,
        leaf: None,
    };
    let (_, leaf) = proof::pin(&path, &pinned).unwrap();
    assert_eq!(leaf, None);
}
