//! Supervision of Copilot CLI on real recorded `--output-format json` streams
//! (`fixtures/copilot/1.0.102/*/events-N.jsonl`, written by Copilot CLI 1.0.102 through the
//! harness) and the `events.jsonl` files it wrote in the same runs. The oracle for every step is
//! what Copilot CLI itself reported — the last main-agent `assistant.message`, a
//! `session.error`, an `abort` or no `result` — and its exit code (`manifest.json`), read with
//! plain JSON by `runread_testkit::reported`, never runread's own reading.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::path::{Path, PathBuf};

use runread_sessions::{Agent, EvidenceFile, Resume, Run, RunStatus};
use runread_store::{Foreground, Phase, Proof};
use runread_supervise::copilot::events as copilot_events;
use runread_supervise::copilot::foreground as copilot_foreground;
use runread_supervise::copilot::state::{CopilotCandidate, CopilotSupervision};
use runread_supervise::copilot::{args, proof};
use runread_supervise::proof::{Pinned, Refusal};
use runread_testkit::{
    COPILOT_FIXTURES, Reported, ReportedStep, copilot_fixtures_dir, copilot_steps,
};
use serde_json::Value;

use crate::recorded_agents::exited;

crate::feeder!(CopilotSupervision, copilot_events::parse);

/// How supervision judges `step`'s foreground from its stream and its exit code: for the suite
/// over every recorded agent (`recorded_agents`).
pub(crate) fn foreground(step: &ReportedStep) -> (Foreground, String, i32) {
    let (sup, _) = feed(&step.lines);
    copilot_foreground(
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
fn every_recorded_step_settles_or_not_as_copilot_cli_reported_it() {
    let (mut answered, mut cut, mut failed, mut stopped) = (0, 0, 0, 0);
    for fixture in COPILOT_FIXTURES {
        for (i, step) in copilot_steps(fixture).iter().enumerate() {
            let at = format!("{fixture} step {i}");
            let (sup, settled) = feed(&step.lines);
            assert!(!sup.broken, "{at}");
            assert_eq!(sup.faults, 0, "{at}");
            assert_eq!(sup.unknown_events, 0, "{at}");
            assert_eq!(sup.runs.len(), 1, "{at}: `copilot -p` runs one prompt");
            let run = &sup.runs[0];
            match &step.reported {
                Reported::Answer(_) if step.cut_off => {
                    cut += 1;
                    assert!(settled.is_empty(), "{at}");
                    assert!(run.cut_off, "{at}");
                    assert_eq!(run.candidate(), None, "{at}");
                }
                Reported::Answer(text) => {
                    answered += 1;
                    assert_eq!(sup.session_id.as_deref(), Some(step.session_id.as_str()));
                    assert_eq!(settled.len(), 1, "{at}: one settle");
                    let (line, n) = settled[0];
                    assert_eq!(n, 0);
                    assert_eq!(event_type(&step.lines[line]), "result", "{at}");
                    assert_eq!(&run.candidate().unwrap().text, text, "{at}");
                    assert_eq!(sup.phase(), Some(Phase::Ended), "{at}");
                    // The same stream without its `result`: nothing settles.
                    let (cut, none) = feed(&step.lines[..line]);
                    assert!(none.is_empty(), "{at}");
                    assert_eq!(cut.runs[0].candidate(), None, "{at}");
                }
                Reported::Failed(_) => {
                    failed += 1;
                    assert!(settled.is_empty(), "{at}");
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
        answered >= 10 && cut >= 1 && failed >= 1 && stopped >= 2,
        "{answered} answered, {cut} cut, {failed} failed, {stopped} stopped"
    );
}

#[test]
fn an_exit_or_a_stream_that_contradicts_an_answer_is_not_a_normal_end() {
    let step = &copilot_steps("tool-then-answer")[0];
    let (sup, _) = feed(&step.lines);
    assert_eq!(
        copilot_foreground(exited(0), false, &sup.runs).0,
        Foreground::Completed
    );
    // A non-zero exit after a success: failed.
    assert_eq!(
        copilot_foreground(exited(1), false, &sup.runs).0,
        Foreground::Failed
    );
    // Exit 0 with no `result`: stopped, not done.
    let (cut, _) = feed(&step.lines[..step.lines.len() - 1]);
    assert_eq!(
        copilot_foreground(exited(0), false, &cut.runs).0,
        Foreground::Cancelled
    );
    // The failure Copilot CLI reported, with the exit code its `result` named: its normal end.
    let failed = copilot_steps("provider-error")
        .into_iter()
        .find(|s| matches!(s.reported, Reported::Failed(_)))
        .unwrap();
    assert_ne!(failed.exit_code, 0);
    let (sup, _) = feed(&failed.lines);
    assert_eq!(
        copilot_foreground(exited(failed.exit_code), false, &sup.runs).0,
        Foreground::Completed
    );
    // The same exit without the report: failed.
    let (cut, _) = feed(&failed.lines[..failed.lines.len() - 1]);
    assert_eq!(
        copilot_foreground(exited(failed.exit_code), false, &cut.runs).0,
        Foreground::Failed
    );
    // An interrupt while the model thinks writes `abort` and a `result` of exit code 0: stopped.
    let thinking = &copilot_steps("interrupted")[1];
    assert!(thinking.lines.iter().any(|l| event_type(l) == "result"));
    let (sup, _) = feed(&thinking.lines);
    assert_eq!(
        copilot_foreground(exited(0), true, &sup.runs).0,
        Foreground::Cancelled
    );
    // An unknown event inside the run: no candidate, a refused proof.
    let mut lines = step.lines.clone();
    let at = lines.len() - 1;
    lines.insert(at, r#"{"type":"turn.summary","data":{}}"#.to_owned());
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

/// The fixture's `session-state` folder.
fn state_of(fixture: &str) -> PathBuf {
    copilot_fixtures_dir()
        .join(fixture)
        .join("sessions")
        .join("session-state")
}

fn runs(path: &Path) -> Vec<Run> {
    let file = EvidenceFile::open(path, None).unwrap();
    let entries = runread_sessions::scan(Agent::Copilot, &file, Resume::Fresh)
        .unwrap()
        .entries;
    runread_sessions::cut_runs(Agent::Copilot, &entries, &[], false).runs
}

fn cwd_of(fixture: &str) -> String {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(copilot_fixtures_dir().join(fixture).join("manifest.json"))
            .unwrap(),
    )
    .unwrap();
    manifest["workspace"].as_str().unwrap().to_owned()
}

fn other(c: &CopilotCandidate, text: &str) -> CopilotCandidate {
    CopilotCandidate {
        entry_id: c.entry_id.clone(),
        text: text.into(),
        text_sha256: runread_core::sha256_hex(text.as_bytes()),
    }
}

#[test]
fn every_recorded_answer_proves_against_the_file_copilot_cli_wrote() {
    let mut proved = 0;
    for fixture in COPILOT_FIXTURES {
        for (i, step) in copilot_steps(fixture).iter().enumerate() {
            let Reported::Answer(text) = &step.reported else {
                continue;
            };
            if step.cut_off {
                continue;
            }
            let at = format!("{fixture} step {i}");
            let (sup, _) = feed(&step.lines);
            let run = &sup.runs[0];
            let c = run.candidate().unwrap();
            let path = args::find_session(&state_of(fixture), &step.session_id)
                .unwrap_or_else(|| panic!("{at}: the session's file"));
            let pinned = Pinned {
                session_id: step.session_id.clone(),
                cwd: cwd_of(fixture),
                identity: None,
                leaf: None,
            };
            proof::pin(&path, &pinned).unwrap_or_else(|r| panic!("{at}: pin {r:?}"));
            let (v, truncated) = proof::verify(&path, &pinned, &run.prompt_id, &c)
                .unwrap_or_else(|r| panic!("{at}: {r:?}"));
            assert!(!truncated, "{at}");
            assert_eq!(v.run.run_id, run.prompt_id, "{at}: the run is the prompt's");
            assert_eq!(v.run.status, RunStatus::Completed, "{at}");
            assert_eq!(v.text_bytes, text.len() as u64);
            assert_eq!(
                runread_testkit::answer_of_agent(&path, Agent::Copilot, &v.run).as_deref(),
                Some(text.as_str()),
                "{at}: the file's answer is the stream's"
            );
            // A different text, another message, another prompt: not proven.
            assert_eq!(
                proof::verify(
                    &path,
                    &pinned,
                    &run.prompt_id,
                    &other(&c, "not what it said")
                )
                .err(),
                Some(Refusal::Mismatch),
                "{at}"
            );
            let elsewhere_msg = CopilotCandidate {
                entry_id: "00000000-0000-0000-0000-000000000000".into(),
                ..c.clone()
            };
            assert_eq!(
                proof::verify(&path, &pinned, &run.prompt_id, &elsewhere_msg).err(),
                Some(Refusal::Mismatch),
                "{at}"
            );
            assert_eq!(
                proof::verify(&path, &pinned, "no-such-prompt", &c).err(),
                Some(Refusal::NotOnBranch),
                "{at}"
            );
            // Another cwd or session: not the file pinned.
            let elsewhere = Pinned {
                cwd: "/elsewhere".into(),
                ..pinned.clone()
            };
            assert_eq!(
                proof::verify(&path, &elsewhere, &run.prompt_id, &c).err(),
                Some(Refusal::OtherSession),
                "{at}"
            );
            proved += 1;
        }
    }
    assert!(proved >= 10, "{proved}");
}

#[test]
fn a_cut_off_copilot_cli_continued_is_not_proven_from_the_file_either() {
    let step = copilot_steps("length-cutoff")
        .into_iter()
        .find(|s| s.cut_off)
        .unwrap();
    let (sup, _) = feed(&step.lines);
    // Were the stream's last message taken as an answer, the file still refuses it: it shows
    // the cut-off in its usage records.
    let run = &sup.runs[0];
    let (_, text, _) = run.last.clone().unwrap();
    let c = CopilotCandidate {
        entry_id: run.last.clone().unwrap().0,
        text_sha256: runread_core::sha256_hex(text.as_bytes()),
        text,
    };
    let path = args::find_session(&state_of("length-cutoff"), &step.session_id).unwrap();
    let pinned = Pinned {
        session_id: step.session_id.clone(),
        cwd: cwd_of("length-cutoff"),
        identity: None,
        leaf: None,
    };
    assert_eq!(
        proof::verify(&path, &pinned, &run.prompt_id, &c).err(),
        Some(Refusal::Mismatch)
    );
    assert!(runs(&path).iter().any(|r| r.status == RunStatus::Unknown));
}
