//! Supervision of Codex on real recorded `--json` streams (`fixtures/codex/*/events-N.jsonl`,
//! written by Codex 0.171.0 through the harness) and the rollout files Codex wrote in the same
//! runs. The oracle for every step is what Codex itself reported — its last `agent_message`
//! before `turn.completed`, `turn.failed`, or the stream stopping — and its exit code
//! (`manifest.json`), read with plain JSON by `runread_testkit::reported`, never runread's own
//! reading: when a run settles, what its candidate is, how its foreground ended, and what the
//! verification against the rollout file accepts and refuses. Also: how a Codex command is identified and made to stream.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;

use crate::recorded_agents::exited;
use runread_sessions::{Agent, EntrySummary, EvidenceFile, Resume};
use runread_store::{Foreground, Phase, Proof};
use runread_supervise::codex::args::Refused;
use runread_supervise::codex::events as codex_events;
use runread_supervise::codex::foreground as codex_foreground;
use runread_supervise::codex::state::{
    self as codex_state, CodexCandidate, CodexSupervision, TurnEnd,
};
use runread_supervise::codex::{self, find, proof};
use runread_supervise::locate::{self, Said, Unsupported};
use runread_supervise::proof::{Pinned, Refusal};
use runread_testkit::{
    CODEX_FIXTURES, Reported, ReportedStep, codex_fixture_sessions, codex_fixtures_dir, codex_steps,
};

crate::feeder!(CodexSupervision, codex_events::parse);

fn event_type(line: &str) -> String {
    let v: Value = serde_json::from_str(line).unwrap();
    v["type"].as_str().unwrap_or("").to_owned()
}

/// How supervision judges `step`'s foreground from its stream and its exit code (runread passes
/// an interrupt on when the harness interrupts the agent): for the suite over every recorded
/// agent (`recorded_agents`).
pub(crate) fn foreground(step: &ReportedStep) -> (Foreground, String, i32) {
    let (sup, _) = feed(&step.lines);
    codex_foreground(
        exited(step.exit_code),
        step.interrupted_by_harness,
        &sup.runs,
    )
}

#[test]
fn every_recorded_step_settles_or_not_as_codex_reported_it() {
    let (mut answered, mut failed, mut stopped) = (0, 0, 0);
    for fixture in CODEX_FIXTURES {
        for (i, step) in codex_steps(fixture).iter().enumerate() {
            let at = format!("{fixture} step {i}");
            let (sup, settled) = feed(&step.lines);
            assert!(!sup.broken, "{at}");
            assert_eq!(sup.faults, 0, "{at}");
            assert_eq!(sup.runs.len(), 1, "{at}: `codex exec` runs one turn");
            assert_eq!(sup.thread_id.as_deref(), Some(step.session_id.as_str()));
            let run = &sup.runs[0];
            match &step.reported {
                Reported::Answer(text) => {
                    answered += 1;
                    assert_eq!(settled.len(), 1, "{at}: one settle");
                    let (line, n) = settled[0];
                    assert_eq!(n, 0);
                    assert_eq!(
                        event_type(&step.lines[line]),
                        "turn.completed",
                        "{at}: settles at the turn's end, never at a message"
                    );
                    let c = run.candidate().unwrap();
                    assert_eq!(&c.text, text, "{at}");
                    assert_eq!(c.text_sha256, runread_core::sha256_hex(text.as_bytes()));
                    assert_eq!(sup.phase(), Some(Phase::Ended), "{at}");
                    // The same stream without its end: the message is known, nothing settles.
                    let (cut, none) = feed(&step.lines[..line]);
                    assert!(none.is_empty(), "{at}");
                    assert_eq!(cut.runs[0].candidate(), None, "{at}");
                    assert_eq!(cut.phase(), Some(Phase::Running), "{at}");
                }
                Reported::Failed(message) => {
                    failed += 1;
                    assert!(settled.is_empty(), "{at}");
                    assert_eq!(run.end, Some(TurnEnd::Failed(message.clone())), "{at}");
                    assert_eq!(run.candidate(), None, "{at}: a message before a failure");
                    assert_eq!(
                        run.closing_proof(false),
                        Proof::NoAnswer {
                            reason: "the agent reported that the turn failed".into()
                        },
                        "{at}"
                    );
                }
                Reported::Interrupted => {
                    stopped += 1;
                    assert!(settled.is_empty(), "{at}");
                    assert_eq!(run.end, None);
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
        answered >= 12 && failed >= 5 && stopped >= 2,
        "{answered} answered, {failed} failed, {stopped} stopped"
    );
}

#[test]
fn an_exit_that_contradicts_the_stream_is_not_a_normal_end() {
    let step = &codex_steps("tool-then-answer")[0];
    let (sup, _) = feed(&step.lines);
    // Exit 1 after an answer: failed, never read as completed.
    assert_eq!(
        codex_foreground(exited(1), false, &sup.runs).0,
        Foreground::Failed
    );
    // Killed by a signal runread did not send.
    assert_eq!(
        codex_foreground(ExitStatus::from_raw(9), false, &sup.runs).0,
        Foreground::Killed
    );
    // Exit 0 with no turn end on the stream: stopped, not done.
    let end = step.lines.len() - 1;
    let (cut, _) = feed(&step.lines[..end]);
    assert_eq!(
        codex_foreground(exited(0), false, &cut.runs).0,
        Foreground::Cancelled
    );
    // Stopped by something other than runread (exit 1, no turn end): failed.
    let step = &codex_steps("interrupted")[0];
    let (sup, _) = feed(&step.lines);
    assert_eq!(
        codex_foreground(exited(step.exit_code), false, &sup.runs).0,
        Foreground::Failed
    );
    // No turn at all.
    assert_eq!(
        codex_foreground(exited(0), false, &[]).0,
        Foreground::Cancelled
    );
}

#[test]
fn the_phase_follows_commands_and_file_changes() {
    for (fixture, item) in [
        ("tool-then-answer", "command_execution"),
        ("edit-file", "file_change"),
        ("code-mode", "command_execution"),
    ] {
        let lines = &codex_steps(fixture)[0].lines;
        let started = lines
            .iter()
            .position(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["type"] == "item.started" && v["item"]["type"] == item
            })
            .unwrap();
        let (sup, _) = feed(&lines[..=started]);
        assert_eq!(sup.phase(), Some(Phase::WaitingOnTool), "{fixture}");
        assert_eq!(sup.open_tools(), 1);
        let (sup, _) = feed(&lines[..=started + 1]);
        assert_eq!(sup.phase(), Some(Phase::Running), "{fixture}: it completed");
        assert_eq!(sup.open_tools(), 0);
    }
    // Interrupted during the command: still waiting on it when the stream stops.
    let (sup, _) = feed(&codex_steps("interrupted")[0].lines);
    assert_eq!(sup.phase(), Some(Phase::WaitingOnTool));
    // Before the first turn, no phase.
    let (sup, _) = feed(&codex_steps("tool-then-answer")[0].lines[..1]);
    assert_eq!(sup.phase(), None);
}

#[test]
fn the_candidate_is_the_last_message_of_the_turn() {
    // tool-then-answer says "Let me look around." before its commands, then answers.
    let (sup, _) = feed(&codex_steps("tool-then-answer")[0].lines);
    assert!(
        sup.runs[0]
            .candidate()
            .unwrap()
            .text
            .starts_with("This is **demo**")
    );
    // A turn that completes with no message has no candidate, and says so.
    let lines: Vec<String> = codex_steps("resume-fork")[0]
        .lines
        .iter()
        .filter(|l| !l.contains("agent_message"))
        .cloned()
        .collect();
    let (sup, settled) = feed(&lines);
    assert!(settled.is_empty());
    assert_eq!(sup.runs[0].end, Some(TurnEnd::Completed));
    assert_eq!(
        sup.runs[0].closing_proof(false),
        Proof::NoAnswer {
            reason: "the turn ended without an answer".into()
        }
    );
    // The stream stopped without runread interrupting it.
    let (sup, _) = feed(&codex_steps("interrupted")[1].lines);
    assert_eq!(
        sup.runs[0].closing_proof(false),
        Proof::NoAnswer {
            reason: "the agent ended before reporting the turn's end".into()
        }
    );
}

#[test]
fn unknown_items_are_skipped_and_an_unknown_event_or_an_unreadable_line_spoils_the_run() {
    let lines = &codex_steps("tool-then-answer")[0].lines;
    let end = lines.len() - 1;
    // An event of a type runread never saw, inside the turn: the answer is not guessed.
    let mut unknown = lines.clone();
    unknown.insert(end, r#"{"type":"turn.progress","x":1}"#.into());
    let (sup, settled) = feed(&unknown);
    assert!(settled.is_empty());
    assert!(sup.runs[0].unknown_event);
    assert_eq!(sup.runs[0].candidate(), None);
    assert_eq!(
        sup.runs[0].closing_proof(false),
        Proof::Refused {
            reason: "the event stream had an event of a type runread does not know in this run"
                .into()
        }
    );

    let mut extra = lines.clone();
    extra.insert(
        end,
        r#"{"type":"item.completed","item":{"id":"item_9","type":"brand_new","x":[1]}}"#.into(),
    );
    extra.insert(
        end,
        r#"{"type":"item.updated","item":{"id":"item_8","type":"todo_list","items":[]}}"#.into(),
    );
    let (sup, settled) = feed(&extra);
    assert_eq!(sup.faults, 0);
    assert_eq!(settled.len(), 1);
    assert!(sup.runs[0].candidate().is_some());

    let mut bad = lines.clone();
    bad.insert(end, "{not json".into());
    let (sup, settled) = feed(&bad);
    assert!(settled.is_empty());
    assert!(sup.runs[0].faulted);
    assert_eq!(sup.runs[0].candidate(), None);
    assert_eq!(
        sup.runs[0].closing_proof(false),
        Proof::Refused {
            reason: Refusal::StreamFault.as_str().into()
        }
    );

    let (sup, _) = feed(&lines[1..]);
    assert!(sup.broken, "events before thread.started");
    let mut two = lines.clone();
    two.insert(
        2,
        r#"{"type":"thread.started","thread_id":"01a231e0-40bf-7983-82b9-ca9d0b69bab2"}"#.into(),
    );
    let (sup, _) = feed(&two);
    assert!(sup.broken, "a second thread");
}

// ---- the proof against the rollout file ----

fn entries(path: &Path) -> Vec<EntrySummary> {
    let file = EvidenceFile::open(path, None).unwrap();
    runread_sessions::scan(Agent::Codex, &file, Resume::Fresh)
        .unwrap()
        .entries
}

/// The rollout file of `thread` in `fixture`.
fn rollout_of(fixture: &str, thread: &str) -> PathBuf {
    codex_fixture_sessions(fixture)
        .into_iter()
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(&format!("-{thread}.jsonl")))
        })
        .unwrap()
}

/// A private copy (one link, in a temp dir) of the rollout of `thread` in `fixture`.
fn copy_of(fixture: &str, thread: &str) -> (tempfile::TempDir, PathBuf) {
    let src = rollout_of(fixture, thread);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(src.file_name().unwrap());
    std::fs::copy(&src, &path).unwrap();
    (dir, path)
}

/// The cwd the rollout's `session_meta` names (plain JSON).
fn cwd_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["payload"]["cwd"].as_str().unwrap().to_owned()
}

/// What Codex wrote, read with plain JSON: each turn's id, the 1-based line of its
/// `task_started`, and its `task_complete.last_agent_message`, in file order.
fn turns(path: &Path) -> Vec<(String, u64, Option<String>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<(String, u64, Option<String>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        let p = &v["payload"];
        match (v["type"].as_str(), p["type"].as_str()) {
            (Some("event_msg"), Some("task_started")) => out.push((
                p["turn_id"].as_str().unwrap().to_owned(),
                i as u64 + 1,
                None,
            )),
            (Some("event_msg"), Some("task_complete")) => {
                let t = out
                    .iter_mut()
                    .find(|t| p["turn_id"].as_str() == Some(t.0.as_str()))
                    .unwrap();
                t.2 = p["last_agent_message"].as_str().map(str::to_owned);
            }
            _ => {}
        }
    }
    out
}

/// Which turn of its rollout step `step` of `fixture` was: the steps of one thread run its turns
/// in order.
fn turn_index(fixture: &str, step: usize) -> usize {
    let all = codex_steps(fixture);
    let thread = &all[step].session_id;
    all[..step]
        .iter()
        .filter(|s| &s.session_id == thread)
        .count()
}

/// What runread pinned when step `step` of `fixture` started: the thread and cwd, and the file's
/// newest entry before the step's turn started (none for a thread the step created).
fn pinned_for(path: &Path, fixture: &str, step: usize) -> Pinned {
    let (_, start, _) = turns(path)[turn_index(fixture, step)].clone();
    Pinned {
        session_id: codex_steps(fixture)[step].session_id.clone(),
        cwd: cwd_of(path),
        identity: None,
        leaf: entries(path)
            .iter()
            .rfind(|e| e.line < start)
            .map(|e| e.id.clone()),
    }
}

fn candidate(fixture: &str, step: usize) -> CodexCandidate {
    let (sup, settled) = feed(&codex_steps(fixture)[step].lines);
    assert_eq!(settled.len(), 1, "{fixture} step {step}");
    sup.runs[0].candidate().unwrap()
}

fn other(text: &str) -> CodexCandidate {
    CodexCandidate {
        text: text.into(),
        text_sha256: runread_core::sha256_hex(text.as_bytes()),
    }
}

#[test]
fn every_recorded_answer_proves_against_the_rollout_codex_wrote() {
    let mut proved = 0;
    for fixture in CODEX_FIXTURES {
        for (i, step) in codex_steps(fixture).iter().enumerate() {
            let Reported::Answer(text) = &step.reported else {
                continue;
            };
            let at = format!("{fixture} step {i}");
            let c = candidate(fixture, i);
            let (_d, path) = copy_of(fixture, &step.session_id);
            let pinned = pinned_for(&path, fixture, i);
            let v = proof::verify(&path, &pinned, &c).unwrap_or_else(|r| panic!("{at}: {r:?}"));
            let (turn, start, reported) = turns(&path)[turn_index(fixture, i)].clone();
            assert_eq!(v.run.run_id, turn, "{at}: the run is the step's turn");
            assert_eq!(
                reported.as_ref(),
                Some(text),
                "{at}: Codex wrote what it announced"
            );
            assert_eq!(v.text_bytes, text.len() as u64);
            assert_eq!(
                runread_testkit::answer_of_agent(&path, runread_core::Agent::Codex, &v.run)
                    .as_deref(),
                Some(text.as_str()),
                "{at}: the file's answer line is the stream's message"
            );
            // Pinned after Codex had written the turn's start (it does so before announcing the
            // turn): the same run proves.
            let late = Pinned {
                leaf: Some(start.to_string()),
                ..pinned.clone()
            };
            assert_eq!(
                proof::verify(&path, &late, &c).map(|v| v.run.run_id),
                Ok(turn.clone()),
                "{at}"
            );
            // The wrong answer for this turn.
            assert_eq!(
                proof::verify(&path, &pinned, &other("not what Codex said")).err(),
                Some(Refusal::Mismatch),
                "{at}"
            );
            proved += 1;
        }
    }
    assert!(proved >= 12, "{proved}");
}

#[test]
fn verification_refuses_a_turn_from_before_the_pin_another_thread_and_a_damaged_file() {
    let session = &codex_steps("continue-unicode")[1].session_id;
    let (_d, path) = copy_of("continue-unicode", session);
    let first = candidate("continue-unicode", 0);
    let second = candidate("continue-unicode", 1);
    let pinned = pinned_for(&path, "continue-unicode", 1);
    assert!(proof::verify(&path, &pinned, &second).is_ok());
    // Step 0's answer, verified for the run that started after step 1's pin: a turn from before.
    assert_eq!(
        proof::verify(&path, &pinned, &first).err(),
        Some(Refusal::BrokenChain)
    );
    // With nothing pinned (a new thread), step 0's answer is its turn's.
    let fresh = pinned_for(&path, "continue-unicode", 0);
    assert_eq!(fresh.leaf, None);
    assert!(proof::verify(&path, &fresh, &first).is_ok());
    // A leaf the file does not hold: not the file pinned.
    let nowhere = Pinned {
        leaf: Some("100000".into()),
        ..pinned.clone()
    };
    assert_eq!(
        proof::verify(&path, &nowhere, &second).err(),
        Some(Refusal::BrokenChain)
    );
    // Another thread, another cwd.
    for elsewhere in [
        Pinned {
            session_id: "01a231e0-40bf-7983-82b9-ca9d0b69bab2".into(),
            ..pinned.clone()
        },
        Pinned {
            cwd: "/elsewhere".into(),
            ..pinned.clone()
        },
    ] {
        assert_eq!(
            proof::verify(&path, &elsewhere, &second).err(),
            Some(Refusal::OtherSession)
        );
    }

    let text = std::fs::read_to_string(&path).unwrap();
    // Truncated mid-line: an unfinished last line.
    std::fs::write(&path, &text.as_bytes()[..text.len() - 20]).unwrap();
    assert_eq!(
        proof::verify(&path, &pinned, &second).err(),
        Some(Refusal::Incomplete)
    );
    // Truncated before the turn's end: the turn is not in the file yet (read again later).
    let end = text.rfind("\"task_complete\"").unwrap();
    let cut = text[..end].rfind('\n').unwrap() + 1;
    std::fs::write(&path, &text[..cut]).unwrap();
    let r = proof::verify(&path, &pinned, &second).err();
    assert_eq!(r, Some(Refusal::NotOnBranch));
    assert!(r.is_some_and(Refusal::transient));
    // The answer changed in the file (same length, valid JSON): the reported answer is no longer
    // the last message, or both changed — either way not the announced one.
    let answer = "Again: hello";
    let tampered_one = replace_last(&text, answer, "Again: HELLO");
    std::fs::write(&path, &tampered_one).unwrap();
    assert_eq!(
        proof::verify(&path, &pinned, &second).err(),
        Some(Refusal::Mismatch)
    );
    let tampered_both = text.replace(answer, "Again: HELLO");
    std::fs::write(&path, &tampered_both).unwrap();
    assert_eq!(
        proof::verify(&path, &pinned, &second).err(),
        Some(Refusal::Mismatch)
    );
    // A malformed line appended.
    std::fs::write(&path, format!("{text}{{not json\n")).unwrap();
    assert_eq!(
        proof::verify(&path, &pinned, &second).err(),
        Some(Refusal::Malformed)
    );
    std::fs::write(&path, &text).unwrap();
    assert!(proof::verify(&path, &pinned, &second).is_ok());
}

fn replace_last(text: &str, from: &str, to: &str) -> String {
    let at = text.rfind(from).unwrap();
    format!("{}{}{}", &text[..at], to, &text[at + from.len()..])
}

#[test]
fn verification_refuses_links_and_replacements() {
    let session = &codex_steps("tool-then-answer")[0].session_id;
    let c = candidate("tool-then-answer", 0);
    let (d, path) = copy_of("tool-then-answer", session);
    let pinned = pinned_for(&path, "tool-then-answer", 0);
    let other_name = d.path().join("other.jsonl");
    std::fs::hard_link(&path, &other_name).unwrap();
    assert_eq!(
        proof::verify(&path, &pinned, &c).err(),
        Some(Refusal::HardLinked)
    );
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&other_name, &path).unwrap();
    assert_eq!(
        proof::verify(&path, &pinned, &c).err(),
        Some(Refusal::NotRegular)
    );
    assert_eq!(proof::pin(&path, &pinned).err(), Some(Refusal::NotRegular));
    // A regular file again, byte-identical, but not the object pinned.
    let pinned_identity = runread_sessions::file::identity(&other_name).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::copy(&other_name, &path).unwrap();
    std::fs::remove_file(&other_name).unwrap();
    let pinned = Pinned {
        identity: Some(pinned_identity),
        ..pinned
    };
    assert_eq!(
        proof::verify(&path, &pinned, &c).err(),
        Some(Refusal::Replaced)
    );
    let pinned = Pinned {
        identity: Some(runread_sessions::file::identity(&path).unwrap()),
        ..pinned
    };
    assert!(proof::verify(&path, &pinned, &c).is_ok());
}

#[test]
fn a_fork_and_a_resume_prove_against_their_own_files() {
    let all = codex_steps("resume-fork");
    let (parent_id, fork_id) = (&all[0].session_id, &all[2].session_id);
    assert_eq!(&all[1].session_id, parent_id, "step 1 resumed the thread");
    assert_ne!(fork_id, parent_id);
    let (_p, parent) = copy_of("resume-fork", parent_id);
    let (_f, fork) = copy_of("resume-fork", fork_id);
    // The resume appended its turn to the thread's file.
    let resumed = pinned_for(&parent, "resume-fork", 1);
    assert!(resumed.leaf.is_some());
    assert!(proof::verify(&parent, &resumed, &candidate("resume-fork", 1)).is_ok());
    // The fork's file holds only its own turn, and it proves there with nothing pinned.
    let forked = pinned_for(&fork, "resume-fork", 2);
    assert_eq!(forked.leaf, None);
    let c = candidate("resume-fork", 2);
    assert!(proof::verify(&fork, &forked, &c).is_ok());
    // The parent's file is another thread's, and as the parent it has no such answer.
    assert_eq!(
        proof::verify(&parent, &forked, &c).err(),
        Some(Refusal::OtherSession)
    );
    let as_parent = Pinned {
        session_id: parent_id.clone(),
        ..forked
    };
    assert_eq!(
        proof::verify(&parent, &as_parent, &c).err(),
        Some(Refusal::Mismatch)
    );
}

#[test]
fn after_interrupted_turns_the_next_answer_proves() {
    let session = &codex_steps("interrupted")[2].session_id;
    let (_d, path) = copy_of("interrupted", session);
    let c = candidate("interrupted", 2);
    let pinned = pinned_for(&path, "interrupted", 2);
    let v = proof::verify(&path, &pinned, &c).unwrap();
    assert_eq!(v.run.run_id, turns(&path)[2].0);
    // The interrupted turns are no answer's, with or without a pin.
    let (sup, _) = feed(&codex_steps("interrupted")[0].lines);
    assert_eq!(sup.runs[0].candidate(), None);
    let fresh = Pinned {
        leaf: None,
        ..pinned
    };
    assert!(
        proof::verify(&path, &fresh, &c).is_ok(),
        "one turn answered this"
    );
}

#[test]
fn pinning_takes_the_newest_entry_and_tolerates_a_file_being_written() {
    let session = &codex_steps("continue-unicode")[1].session_id;
    let (_d, path) = copy_of("continue-unicode", session);
    let full = std::fs::read(&path).unwrap();
    let want = pinned_for(&path, "continue-unicode", 1);
    // The file as it was when step 1 started: cut before its turn's first line.
    let (_, start, _) = turns(&path)[1].clone();
    let cut: usize = full
        .split_inclusive(|b| *b == b'\n')
        .take(usize::try_from(start).unwrap() - 1)
        .map(<[u8]>::len)
        .sum();
    std::fs::write(&path, &full[..cut]).unwrap();
    let pin = Pinned {
        identity: None,
        leaf: None,
        ..want.clone()
    };
    let (identity, leaf) = proof::pin(&path, &pin).unwrap();
    assert_eq!(leaf, want.leaf, "the newest entry before the turn");
    // Half a line more (Codex mid-write): the same pin.
    std::fs::write(&path, &full[..cut + 10]).unwrap();
    assert_eq!(proof::pin(&path, &pin).unwrap().1, want.leaf);
    // The whole file, pinned with the first identity (same object): the run proves.
    std::fs::write(&path, &full).unwrap();
    let pinned = Pinned {
        identity: Some(identity),
        leaf,
        ..pin.clone()
    };
    assert!(proof::verify(&path, &pinned, &candidate("continue-unicode", 1)).is_ok());
    // Another thread's file, a file of another cwd: not pinned.
    for elsewhere in [
        Pinned {
            cwd: "/elsewhere".into(),
            ..pin.clone()
        },
        Pinned {
            session_id: "01a231e0-40bf-7983-82b9-ca9d0b69bab2".into(),
            ..pin.clone()
        },
    ] {
        assert_eq!(
            proof::pin(&path, &elsewhere).err(),
            Some(Refusal::OtherSession)
        );
    }
    // A fork's new file holds no turn yet at `thread.started`: no leaf.
    let fork_id = &codex_steps("resume-fork")[2].session_id;
    let (_f, fork) = copy_of("resume-fork", fork_id);
    let text = std::fs::read_to_string(&fork).unwrap();
    let first_line = text.split_inclusive('\n').next().unwrap();
    std::fs::write(&fork, first_line).unwrap();
    let pin = Pinned {
        session_id: fork_id.clone(),
        cwd: cwd_of(&fork),
        identity: None,
        leaf: None,
    };
    assert_eq!(proof::pin(&fork, &pin).unwrap().1, None);
}

#[test]
fn the_proof_names_what_ingest_records_and_the_live_record_finds_the_run() {
    for (fixture, step) in [
        ("tool-then-answer", 0),
        ("continue-unicode", 1),
        ("edit-file", 0),
        ("secrets", 1),
        ("code-mode", 0),
    ] {
        let at = format!("{fixture} step {step}");
        let c = candidate(fixture, step);
        let session = &codex_steps(fixture)[step].session_id;
        // The fixture placed in a registered workspace (its cwd moved there) and ingested.
        let env = runread_testkit::Env::new();
        let placed = env.place_codex(fixture, Duration::from_secs(60));
        env.ingest();
        let path = placed
            .iter()
            .find(|p| {
                p.to_str()
                    .is_some_and(|n| n.ends_with(&format!("-{session}.jsonl")))
            })
            .unwrap();
        let pinned = pinned_for(path, fixture, step);
        assert_eq!(pinned.cwd, env.workspace.to_str().unwrap());
        // Found where Codex keeps it, by the thread id alone.
        assert_eq!(
            find::find_rollout(&env.codex_sessions, session).as_ref(),
            Some(path),
            "{at}"
        );
        let v = proof::verify(path, &pinned, &c).unwrap();
        let stored = env
            .store
            .run(session, 1, &v.run.run_id)
            .unwrap()
            .unwrap_or_else(|| panic!("{at}: the run is ingested"));
        assert_eq!(
            stored.run.final_entry_id.as_deref(),
            Some(v.final_entry_id.as_str())
        );
        assert_eq!(stored.run.final_message_sha256, v.run.final_message_sha256);
        assert_eq!(
            stored.run.final_text_sha256.as_deref(),
            Some(c.text_sha256.as_str())
        );
        assert_eq!(stored.run.final_bytes, v.text_bytes);
        assert!(!stored.run.final_truncated);
        // The live record, before any proof: the turn after the pin, from the store's index.
        let entries = env.store.entries(session, 1).unwrap();
        assert_eq!(
            codex_state::turns_after(&entries, pinned.leaf.as_deref()).map(|t| t.for_runs()),
            Some(vec![v.run.run_id.clone()]),
            "{at}"
        );
        assert_eq!(
            Some(v.user_message_sha256.clone()),
            entries
                .iter()
                .find(|e| e.turn.as_deref() == Some(v.run.run_id.as_str())
                    && e.role.as_deref() == Some("user"))
                .and_then(|e| e.message_sha256.clone())
        );
    }
}

// ---- identifying Codex, and making it stream ----

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

#[test]
fn codex_version_answers_are_read_strictly() {
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(codex_fixtures_dir().join("tool-then-answer/manifest.json")).unwrap(),
    )
    .unwrap();
    // What the real CLI answered when the fixtures were recorded.
    let said = manifest["cli_version"].as_str().unwrap();
    assert_eq!(said, "codex-cli 0.171.0");
    assert_eq!(
        locate::parse_version_output(format!("{said}\n").as_bytes()),
        Said::Agent(Agent::Codex, "0.171.0".into())
    );
    for not in [
        "codex-cli 0.171",
        "codex 0.171.0",
        "codex-cli 0.171.0 extra",
        "codex-cli",
    ] {
        assert!(
            matches!(locate::parse_version_output(not.as_bytes()), Said::Other(_)),
            "{not}"
        );
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An executable at `path` that prints `answer` for `--version`.
fn script(path: &Path, answer: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\necho '{answer}'\n")).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

fn identify(program: &Path, cwd: &Path) -> Result<locate::Located, Unsupported> {
    rt().block_on(locate::identify(
        &[program.as_os_str().to_owned(), "exec".into(), "hi".into()],
        cwd,
    ))
}

#[test]
fn codex_is_identified_by_its_version_behind_npm_or_standalone() {
    let d = tempfile::tempdir().unwrap();
    // A standalone binary (or a shim): its answer is all there is.
    let standalone = d.path().join("bin/codex");
    script(&standalone, "codex-cli 0.171.0");
    let agent = identify(&standalone, d.path()).unwrap();
    assert_eq!(
        (agent.kind, agent.version.as_str()),
        (Agent::Codex, "0.171.0")
    );
    assert_eq!(agent.package_root, None);
    // npm's wrapper: `@openai/codex` of the same version.
    let npm = d.path().join("node_modules/@openai/codex");
    std::fs::create_dir_all(&npm).unwrap();
    std::fs::write(
        npm.join("package.json"),
        r#"{"name":"@openai/codex","version":"0.171.0"}"#,
    )
    .unwrap();
    script(&npm.join("bin/codex.js"), "codex-cli 0.171.0");
    let agent = identify(&npm.join("bin/codex.js"), d.path()).unwrap();
    assert_eq!(agent.kind, Agent::Codex);
    assert_eq!(agent.package_root, Some(npm.clone()));
    // The native binary in its platform package (`0.171.0-linux-x64`).
    let native_pkg = d.path().join("node_modules/@openai/codex-linux-x64");
    let native = native_pkg.join("vendor/x86_64-unknown-linux-musl/bin/codex");
    script(&native, "codex-cli 0.171.0");
    std::fs::write(
        native_pkg.join("package.json"),
        r#"{"name":"@openai/codex","version":"0.171.0-linux-x64"}"#,
    )
    .unwrap();
    let agent = identify(&native, d.path()).unwrap();
    assert_eq!(agent.kind, Agent::Codex);
    assert_eq!(agent.package_root, Some(native_pkg.clone()));
    // A package that says another version, or another platform word: refused.
    for version in [
        "0.170.0-linux-x64",
        "0.171.0-linux-x64-extra",
        "0.171.0-beta",
    ] {
        std::fs::write(
            native_pkg.join("package.json"),
            format!(r#"{{"name":"@openai/codex","version":"{version}"}}"#),
        )
        .unwrap();
        assert!(
            matches!(
                identify(&native, d.path()),
                Err(Unsupported::PackageDisagrees { .. })
            ),
            "{version}"
        );
    }
}

#[test]
fn a_codex_of_any_version_is_identified_and_its_version_kept() {
    let d = tempfile::tempdir().unwrap();
    let codex = d.path().join("codex");
    // Newer than any tested, a new minor and a new major: there is no allowlist to fall behind.
    for version in ["0.171.9", "0.172.0", "0.999.0", "1.0.0"] {
        script(&codex, &format!("codex-cli {version}"));
        let agent = identify(&codex, d.path()).unwrap();
        assert_eq!(
            (agent.kind, agent.version.as_str()),
            (Agent::Codex, version)
        );
    }
    // Codex's form with no version in it is no agent.
    script(&codex, "codex-cli next");
    assert!(matches!(
        identify(&codex, d.path()),
        Err(Unsupported::NotAnAgent { .. })
    ));
}

#[test]
fn codex_gets_json_right_after_exec() {
    let json = |args: &[&str]| codex::args::with_json(&os(args));
    assert_eq!(
        json(&["exec", "hi"]).unwrap(),
        os(&["exec", "--json", "hi"])
    );
    assert_eq!(json(&["e", "hi"]).unwrap(), os(&["e", "--json", "hi"]));
    // Before `resume` and `fork`: where the real CLI takes it for both.
    assert_eq!(
        json(&["exec", "resume", "--last", "hi"]).unwrap(),
        os(&["exec", "--json", "resume", "--last", "hi"])
    );
    assert_eq!(
        json(&["exec", "fork", "01a231e0-40bf-7983-82b9-ca9d0b69bab2", "hi"]).unwrap(),
        os(&[
            "exec",
            "--json",
            "fork",
            "01a231e0-40bf-7983-82b9-ca9d0b69bab2",
            "hi"
        ])
    );
    // Already there (after `exec`, or after `resume`): unchanged.
    for given in [
        &["exec", "--json", "hi"][..],
        &["exec", "resume", "--json", "--last", "hi"][..],
    ] {
        assert_eq!(json(given).unwrap(), os(given));
    }
    // Other options stay, `-o` included; a `--json` after `--` is the prompt's.
    assert_eq!(
        json(&["exec", "-o", "last.txt", "-m", "gpt-5.5", "hi"]).unwrap(),
        os(&["exec", "--json", "-o", "last.txt", "-m", "gpt-5.5", "hi"])
    );
    assert_eq!(
        json(&["exec", "--", "--json is a prompt"]).unwrap(),
        os(&["exec", "--json", "--", "--json is a prompt"])
    );
    // An option's value is not a subcommand.
    assert!(json(&["exec", "-m", "review", "hi"]).is_ok());
}

#[test]
fn only_codex_exec_is_supervised() {
    let json = |args: &[&str]| codex::args::with_json(&os(args));
    for interactive in [
        &[][..],
        &["hi"][..],
        &["resume", "--last"][..],
        &["-c", "model=\"o3\"", "exec", "hi"][..],
    ] {
        assert_eq!(json(interactive), Err(Refused::NotExec), "{interactive:?}");
    }
    let message = Refused::NotExec.to_string();
    assert!(message.contains("codex exec"), "{message}");
    for (args, sub) in [
        (&["exec", "review"][..], "review"),
        (&["exec", "-m", "gpt-5.5", "review"][..], "review"),
        (&["exec", "help"][..], "help"),
    ] {
        assert_eq!(json(args), Err(Refused::ExecSubcommand(sub.into())));
    }
    for (args, option) in [
        (&["exec", "--ephemeral", "hi"][..], "--ephemeral"),
        (&["exec", "-C", "/x", "hi"][..], "-C"),
        (&["exec", "-C/x", "hi"][..], "-C"),
        (&["exec", "--cd=/x", "hi"][..], "--cd"),
        (
            &["exec", "resume", "--last", "--cd", "/x", "hi"][..],
            "--cd",
        ),
        (&["exec", "--worktree", "hi"][..], "--worktree"),
        (&["exec", "--remote", "ws://h:1", "hi"][..], "--remote"),
    ] {
        match json(args) {
            Err(Refused::Option { option: o, why }) => {
                assert_eq!(o, option);
                assert!(!why.is_empty());
            }
            other => panic!("{args:?}: {other:?}"),
        }
    }
    // After `--` they are the prompt's words.
    assert!(json(&["exec", "--", "--ephemeral"]).is_ok());
    // The lower-case `-c` is a config override, not `-C`.
    assert!(json(&["exec", "-c", "model=\"gpt-5.5\"", "hi"]).is_ok());
    // The other agents are unchanged by Codex's rules.
    assert!(locate::with_event_stream(Agent::Claude, &os(&["exec", "hi"])).is_err());
}
