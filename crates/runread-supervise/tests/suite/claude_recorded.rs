//! Supervision of Claude Code on real recorded stream-json (`fixtures/claude/*/events-N.jsonl`,
//! written by Claude Code 2.1.328 through the harness) and the session files Claude Code wrote in
//! the same runs. The oracle for every step is what Claude Code itself reported on its stream
//! (the `result` event, or none) and its exit code (`manifest.json`), read with plain JSON by
//! `runread_testkit::reported`, never runread's own reading: when a run settles, what its
//! candidate is, how its foreground ended, and what the verification against the session file
//! accepts and refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use serde_json::Value;

use crate::recorded_agents::exited;
use runread_sessions::{Agent, EntrySummary, EvidenceFile, Resume};
use runread_store::{Foreground, Phase, Proof};
use runread_supervise::claude::events as claude_events;
use runread_supervise::claude::foreground as claude_foreground;
use runread_supervise::claude::proof;
use runread_supervise::claude::state::{
    self as claude_state, ClaudeCandidate, ClaudeSupervision, NoCandidate,
};
use runread_supervise::proof::{Pinned, Refusal, Verified};
use runread_testkit::{
    CLAUDE_FIXTURES, Reported, ReportedStep, claude_fixture_sessions, claude_steps,
};

crate::feeder!(ClaudeSupervision, claude_events::parse);

fn event_type(line: &str) -> (String, String) {
    let v: Value = serde_json::from_str(line).unwrap();
    (
        v["type"].as_str().unwrap_or("").to_owned(),
        v["subtype"].as_str().unwrap_or("").to_owned(),
    )
}

/// How supervision judges `step`'s foreground from its stream and its exit code (runread passes
/// an interrupt on when the harness interrupts the agent): for the suite over every recorded
/// agent (`recorded_agents`).
pub(crate) fn foreground(step: &ReportedStep) -> (Foreground, String, i32) {
    let (sup, _) = feed(&step.lines);
    claude_foreground(
        exited(step.exit_code),
        step.interrupted_by_harness,
        &sup.runs,
    )
}

#[test]
fn every_recorded_step_settles_or_not_as_claude_code_reported_it() {
    let mut answered = 0;
    for fixture in CLAUDE_FIXTURES {
        for (i, step) in claude_steps(fixture).iter().enumerate() {
            let at = format!("{fixture} step {i}");
            let (sup, settled) = feed(&step.lines);
            assert!(!sup.broken, "{at}");
            assert_eq!(sup.faults, 0, "{at}");
            assert_eq!(sup.runs.len(), 1, "{at}: `claude -p` answers one prompt");
            let run = &sup.runs[0];
            assert_eq!(
                sup.init.as_ref().map(|i| i.session_id.as_str()),
                Some(step.session_id.as_str())
            );
            match &step.reported {
                Reported::Answer(text) => {
                    answered += 1;
                    assert_eq!(settled.len(), 1, "{at}: one settle");
                    let (line, n) = settled[0];
                    assert_eq!(n, 0);
                    assert_eq!(
                        event_type(&step.lines[line]).0,
                        "result",
                        "{at}: settles at the result, never at a message"
                    );
                    let c = run.candidate().unwrap();
                    assert_eq!(&c.text, text, "{at}");
                    assert!(!c.truncated);
                    assert_eq!(sup.phase(), Some(Phase::Ended), "{at}");
                    // The same stream without its result: the answer is known, nothing settles.
                    let (cut, none) = feed(&step.lines[..line]);
                    assert!(none.is_empty(), "{at}");
                    assert_eq!(
                        cut.runs[0].candidate(),
                        Err(NoCandidate::NotAnswered),
                        "{at}"
                    );
                }
                Reported::Failed(_) => {
                    assert!(settled.is_empty(), "{at}");
                    assert!(
                        matches!(
                            run.closing_proof(),
                            Proof::NoAnswer { reason } if reason.contains("provider failed")
                        ),
                        "{at}: {:?}",
                        run.closing_proof()
                    );
                }
                Reported::Interrupted => {
                    assert!(settled.is_empty(), "{at}");
                    assert_eq!(
                        run.closing_proof(),
                        Proof::NoAnswer {
                            reason: "the run was interrupted".into()
                        },
                        "{at}"
                    );
                }
            }
        }
    }
    assert!(answered >= 12, "most steps answered: {answered}");
}

#[test]
fn an_exit_that_contradicts_the_stream_is_not_a_normal_end() {
    let step = &claude_steps("tool-then-answer")[0];
    let (sup, _) = feed(&step.lines);
    // Exit 1 after an answer: failed, never read as completed.
    assert_eq!(
        claude_foreground(exited(1), false, &sup.runs).0,
        Foreground::Failed
    );
    // Killed by a signal runread did not send.
    assert_eq!(
        claude_foreground(ExitStatus::from_raw(9), false, &sup.runs).0,
        Foreground::Killed
    );
    // Exit 0 with no result on the stream: it was stopped, not done.
    let at = step
        .lines
        .iter()
        .position(|l| event_type(l).0 == "result")
        .unwrap();
    let (cut, _) = feed(&step.lines[..at]);
    assert_eq!(
        claude_foreground(exited(0), false, &cut.runs).0,
        Foreground::Cancelled
    );
}

#[test]
fn the_phase_follows_tools_retries_and_the_result() {
    let lines = &claude_steps("tool-then-answer")[0].lines;
    let tool = lines
        .iter()
        .position(|l| l.contains("\"tool_use\"") && event_type(l).0 == "assistant")
        .unwrap();
    let (sup, _) = feed(&lines[..=tool]);
    assert_eq!(sup.phase(), Some(Phase::WaitingOnTool));
    assert_eq!(sup.open_tools(), 1);
    let (sup, _) = feed(&lines[..=tool + 1]);
    assert_eq!(
        sup.phase(),
        Some(Phase::Running),
        "the tool result came back"
    );

    let lines = &claude_steps("retry-timeout")[0].lines;
    let retry = lines
        .iter()
        .position(|l| event_type(l) == ("system".into(), "api_retry".into()))
        .unwrap();
    let (sup, _) = feed(&lines[..=retry]);
    assert_eq!(sup.phase(), Some(Phase::Retrying));
    let (sup, _) = feed(&lines[..=retry + 1]);
    assert_eq!(
        sup.phase(),
        Some(Phase::Running),
        "answered after the retry"
    );
    let (sup, settled) = feed(lines);
    assert_eq!(settled.len(), 1);
    assert_eq!(sup.phase(), Some(Phase::Ended));
}

#[test]
fn a_subagents_messages_are_not_the_runs() {
    let lines = &claude_steps("subagent")[0].lines;
    let (sup, _) = feed(lines);
    let sidechain: Vec<String> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| !v["parent_tool_use_id"].is_null() && v["uuid"].is_string())
        .filter(|v| v["type"] == "assistant" || v["type"] == "user")
        .map(|v| v["uuid"].as_str().unwrap().to_owned())
        .collect();
    assert!(sidechain.len() >= 3, "the recording has a subagent");
    assert!(sidechain.iter().all(|u| !sup.runs[0].uuids.contains(u)));
    // While the subagent works, the Agent tool call is open: waiting on a tool.
    let inside = lines
        .iter()
        .position(|l| l.contains("task_progress"))
        .unwrap();
    let (sup, _) = feed(&lines[..=inside]);
    assert_eq!(sup.phase(), Some(Phase::WaitingOnTool));
}

#[test]
fn an_unreadable_line_or_a_second_init_spoils_the_stream() {
    let mut lines = claude_steps("tool-then-answer")[0].lines.clone();
    let at = lines.len() - 1;
    lines.insert(at, "{not json".into());
    let (sup, settled) = feed(&lines);
    assert!(settled.is_empty());
    assert!(sup.runs[0].faulted);
    assert!(matches!(sup.runs[0].closing_proof(), Proof::Refused { .. }));

    let lines = &claude_steps("tool-then-answer")[0].lines;
    let (sup, _) = feed(&lines[1..]);
    assert!(sup.broken, "events before init");
    let mut twice = lines.clone();
    twice.insert(2, lines[0].clone());
    let (sup, _) = feed(&twice);
    assert!(sup.broken, "a second init");
}

#[test]
fn an_unknown_event_type_inside_the_run_leaves_it_without_an_answer_and_known_ones_do_not() {
    let lines = claude_steps("tool-then-answer")[0].lines.clone();
    let end = lines.len() - 1; // the `result`
    let (sup, settled) = feed(&lines);
    assert_eq!((settled.len(), sup.unknown_events), (1, 0), "as recorded");

    let mut unknown = lines.clone();
    unknown.insert(end, r#"{"type":"turn_summary","x":1}"#.into());
    let (sup, settled) = feed(&unknown);
    assert!(
        settled.is_empty(),
        "an unknown event in the run: nothing settles"
    );
    assert!(sup.runs[0].unknown_event);
    assert_eq!(sup.unknown_events, 1);
    assert_eq!(
        sup.runs[0].closing_proof(),
        Proof::Refused {
            reason: Refusal::UnknownEvent.as_str().into()
        }
    );

    // After the run's `result` it is in no run: the answer stands.
    let mut after = lines.clone();
    after.push(r#"{"type":"turn_summary"}"#.into());
    let (sup, settled) = feed(&after);
    assert_eq!((settled.len(), sup.unknown_events), (1, 1));
    assert!(!sup.runs[0].unknown_event);

    // The types Claude Code declares and runread reads as carrying nothing of the run.
    for known in [
        r#"{"type":"stream_event","event":{"type":"message_start"}}"#,
        r#"{"type":"rate_limit_event","rate_limit_info":{}}"#,
        r#"{"type":"system","subtype":"hook_response"}"#,
    ] {
        let mut with = lines.clone();
        with.insert(end, known.into());
        let (sup, settled) = feed(&with);
        assert_eq!((settled.len(), sup.unknown_events), (1, 0), "{known}");
    }
}

#[test]
fn a_result_that_is_not_the_last_response_is_no_candidate() {
    let lines = &claude_steps("tool-then-answer")[0].lines;
    let last = lines.len() - 1;
    let mut v: Value = serde_json::from_str(&lines[last]).unwrap();
    v["result"] = Value::String("something else".into());
    let mut changed = lines.clone();
    changed[last] = v.to_string();
    let (sup, settled) = feed(&changed);
    assert_eq!(settled.len(), 1, "Claude Code reported an answer");
    assert_eq!(sup.runs[0].candidate(), Err(NoCandidate::Differs));
    assert!(matches!(sup.runs[0].closing_proof(), Proof::Refused { .. }));
}

// ---- the proof against the session file ----

fn entries(path: &Path) -> Vec<EntrySummary> {
    let file = EvidenceFile::open(path, None).unwrap();
    runread_sessions::scan(Agent::Claude, &file, Resume::Fresh)
        .unwrap()
        .entries
}

/// A private copy (one link, in a temp dir) of the session file of `session_id` in `fixture`.
fn copy_of(fixture: &str, session_id: &str) -> (tempfile::TempDir, PathBuf) {
    let src = claude_fixture_sessions(fixture)
        .into_iter()
        .find(|p| p.file_stem().is_some_and(|s| s == session_id))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(src.file_name().unwrap());
    std::fs::copy(&src, &path).unwrap();
    (dir, path)
}

/// What runread pinned when step `step` of `fixture` started: the session and cwd from `init`,
/// and the file's newest conversation line then — the parent of the step's prompt (the run
/// the stream announced, found in the final file), or none for a session the step created.
fn pinned_for(path: &Path, sup: &ClaudeSupervision) -> Pinned {
    let init = sup.init.clone().unwrap();
    let entries = entries(path);
    let first = &sup.runs[0].uuids[0];
    let by_id: std::collections::HashMap<&str, &EntrySummary> =
        entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut cur = by_id[first.as_str()];
    while cur.role.as_deref() != Some("user") {
        cur = by_id[cur.parent_id.as_deref().unwrap()];
    }
    Pinned {
        session_id: init.session_id,
        cwd: init.cwd,
        identity: None,
        leaf: cur.parent_id.clone(),
    }
}

struct Settled {
    sup: ClaudeSupervision,
    candidate: ClaudeCandidate,
}

fn settled(fixture: &str, step: usize) -> Settled {
    let (sup, s) = feed(&claude_steps(fixture)[step].lines);
    assert_eq!(s.len(), 1, "{fixture} step {step}");
    let candidate = sup.runs[0].candidate().unwrap();
    Settled { sup, candidate }
}

fn verify(path: &Path, pinned: &Pinned, s: &Settled) -> Result<Verified, Refusal> {
    proof::verify(path, pinned, &s.sup.runs[0].uuids, &s.candidate)
}

#[test]
fn every_recorded_answer_proves_against_the_file_claude_code_wrote() {
    let mut proved = 0;
    for fixture in CLAUDE_FIXTURES {
        for (i, step) in claude_steps(fixture).iter().enumerate() {
            if !matches!(step.reported, Reported::Answer(_)) {
                continue;
            }
            let s = settled(fixture, i);
            let (_d, path) = copy_of(fixture, &step.session_id);
            let pinned = pinned_for(&path, &s.sup);
            let v =
                verify(&path, &pinned, &s).unwrap_or_else(|r| panic!("{fixture} step {i}: {r:?}"));
            assert_eq!(
                Some(&v.final_entry_id),
                s.candidate.answer_uuids.last(),
                "{fixture} step {i}"
            );
            assert_eq!(v.text_bytes, s.candidate.text.len() as u64);
            assert_eq!(
                runread_testkit::answer_of_agent(&path, runread_core::Agent::Claude, &v.run)
                    .as_deref(),
                Some(s.candidate.text.as_str()),
                "{fixture} step {i}: the file's answer is the stream's result"
            );
            // A new session's run also chains to the root with nothing pinned.
            if pinned.leaf.is_none() {
                assert!(
                    verify(
                        &path,
                        &Pinned {
                            leaf: None,
                            ..pinned.clone()
                        },
                        &s
                    )
                    .is_ok()
                );
            }
            proved += 1;
        }
    }
    assert!(proved >= 12, "{proved}");
}

#[test]
fn the_proof_names_what_ingest_records_for_the_run() {
    // The fields the service's publication rule compares with the ingested run: final entry,
    // whole-message hash, text digest, length — for a one-line answer and a continued session.
    for (fixture, step) in [
        ("tool-then-answer", 0),
        ("continue-unicode", 1),
        ("edit-file", 0),
    ] {
        let s = settled(fixture, step);
        let session = &claude_steps(fixture)[step].session_id;
        // The fixture placed in a registered workspace (its lines' cwd moved there) and ingested.
        let env = runread_testkit::Env::new();
        let placed = env.place_claude(fixture, std::time::Duration::from_secs(60));
        env.ingest();
        let path = placed
            .iter()
            .find(|p| p.file_stem().is_some_and(|n| n == session.as_str()))
            .unwrap();
        let pinned = Pinned {
            cwd: env.workspace.to_str().unwrap().to_owned(),
            ..pinned_for(path, &s.sup)
        };
        let v = verify(path, &pinned, &s).unwrap();
        let stored = env
            .store
            .run(session, 1, &v.run.run_id)
            .unwrap()
            .unwrap_or_else(|| panic!("{fixture}: the run is ingested"));
        assert_eq!(
            stored.run.final_entry_id.as_deref(),
            Some(v.final_entry_id.as_str())
        );
        assert_eq!(stored.run.final_message_sha256, v.run.final_message_sha256);
        assert_eq!(
            stored.run.final_text_sha256.as_deref(),
            Some(s.candidate.text_digest.as_str())
        );
        assert_eq!(stored.run.final_bytes, v.text_bytes);
        assert_eq!(stored.run.final_truncated, s.candidate.truncated);
        assert_eq!(
            Some(v.user_message_sha256.clone()),
            env.store
                .entries(session, 1)
                .unwrap()
                .iter()
                .find(|e| e.id == v.run.run_id)
                .and_then(|e| e.message_sha256.clone())
        );
    }
}

#[test]
fn verification_refuses_a_tampered_answer_a_foreign_message_and_a_broken_chain() {
    let s = settled("tool-then-answer", 0);
    let session = &claude_steps("tool-then-answer")[0].session_id;
    let (_d, path) = copy_of("tool-then-answer", session);
    let pinned = pinned_for(&path, &s.sup);
    assert!(verify(&path, &pinned, &s).is_ok());

    // One character of the persisted answer changed (valid JSON, same length).
    let text = std::fs::read_to_string(&path).unwrap();
    let tampered = text.replacen("This is **demo**", "This is **demO**", 1);
    assert_ne!(tampered, text);
    std::fs::write(&path, &tampered).unwrap();
    assert_eq!(verify(&path, &pinned, &s).err(), Some(Refusal::Mismatch));
    std::fs::write(&path, &text).unwrap();

    // The stream announced a message the run does not hold.
    let mut foreign = Settled {
        sup: s.sup.clone(),
        candidate: s.candidate.clone(),
    };
    foreign.sup.runs[0]
        .uuids
        .push("00000000-0000-4000-8000-000000000000".into());
    assert_eq!(
        verify(&path, &pinned, &foreign).err(),
        Some(Refusal::NotOnBranch)
    );

    // A leaf pinned at start that the run does not chain to.
    let elsewhere = Pinned {
        leaf: Some("00000000-0000-4000-8000-000000000001".into()),
        ..pinned.clone()
    };
    assert_eq!(
        verify(&path, &elsewhere, &s).err(),
        Some(Refusal::BrokenChain)
    );

    // Another session, another cwd.
    for other in [
        Pinned {
            session_id: "00000000-0000-4000-8000-000000000002".into(),
            ..pinned.clone()
        },
        Pinned {
            cwd: "/elsewhere".into(),
            ..pinned.clone()
        },
    ] {
        assert_eq!(verify(&path, &other, &s).err(), Some(Refusal::OtherSession));
    }

    // An unfinished last line, then a malformed one.
    std::fs::write(&path, text.trim_end_matches('\n')).unwrap();
    assert_eq!(verify(&path, &pinned, &s).err(), Some(Refusal::Incomplete));
    std::fs::write(&path, format!("{text}{{not json\n")).unwrap();
    assert_eq!(verify(&path, &pinned, &s).err(), Some(Refusal::Malformed));
}

#[test]
fn verification_refuses_links_and_replacements() {
    let s = settled("tool-then-answer", 0);
    let session = &claude_steps("tool-then-answer")[0].session_id;
    let (d, path) = copy_of("tool-then-answer", session);
    let pinned = pinned_for(&path, &s.sup);
    let other = d.path().join("other.jsonl");
    std::fs::hard_link(&path, &other).unwrap();
    assert_eq!(verify(&path, &pinned, &s).err(), Some(Refusal::HardLinked));
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&other, &path).unwrap();
    assert_eq!(verify(&path, &pinned, &s).err(), Some(Refusal::NotRegular));
    // A regular file again, byte-identical, but not the object pinned.
    let pinned_identity = runread_sessions::file::identity(&other).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::copy(&other, &path).unwrap();
    std::fs::remove_file(&other).unwrap();
    let pinned = Pinned {
        identity: Some(pinned_identity),
        ..pinned
    };
    assert_eq!(verify(&path, &pinned, &s).err(), Some(Refusal::Replaced));
    // The same bytes, pinned as what they are: proved.
    let pinned = Pinned {
        identity: Some(runread_sessions::file::identity(&path).unwrap()),
        ..pinned
    };
    assert!(verify(&path, &pinned, &s).is_ok());
}

#[test]
fn a_fork_proves_against_its_own_file_and_not_the_parents() {
    let fork_step = 2;
    let s = settled("resume-fork", fork_step);
    let all = claude_steps("resume-fork");
    let fork_id = &all[fork_step].session_id;
    let parent_id = &all[0].session_id;
    assert_ne!(fork_id, parent_id);
    let (_d, fork) = copy_of("resume-fork", fork_id);
    let pinned = pinned_for(&fork, &s.sup);
    assert!(verify(&fork, &pinned, &s).is_ok());
    // The parent's file holds the history but not this run: another session, and no such run.
    let (_p, parent) = copy_of("resume-fork", parent_id);
    assert_eq!(
        verify(&parent, &pinned, &s).err(),
        Some(Refusal::OtherSession)
    );
    let as_parent = Pinned {
        session_id: parent_id.clone(),
        ..pinned
    };
    assert_eq!(
        verify(&parent, &as_parent, &s).err(),
        Some(Refusal::NotOnBranch)
    );
}

#[test]
fn pinning_takes_the_newest_conversation_line_and_tolerates_a_file_being_written() {
    let steps = claude_steps("continue-unicode");
    let s = settled("continue-unicode", 1);
    let (_d, path) = copy_of("continue-unicode", &steps[1].session_id);
    let full = std::fs::read(&path).unwrap();
    // The file as it was when step 1 started: cut before its prompt's queue operation.
    let second = full
        .windows(b"Say it again".len())
        .position(|w| w == b"Say it again")
        .unwrap();
    let line_start = full[..second]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let init = s.sup.init.clone().unwrap();
    let want = pinned_for(&path, &s.sup).leaf;
    std::fs::write(&path, &full[..line_start]).unwrap();
    let pin = Pinned {
        session_id: init.session_id.clone(),
        cwd: init.cwd.clone(),
        identity: None,
        leaf: None,
    };
    let (identity, leaf) = proof::pin(&path, &pin).unwrap();
    assert_eq!(leaf, want, "the leaf the next prompt chains to");
    // Half a line more (Claude Code mid-write): the same pin.
    std::fs::write(&path, &full[..line_start + 10]).unwrap();
    let (_, leaf2) = proof::pin(&path, &pin).unwrap();
    assert_eq!(leaf2, want);
    // The whole file, pinned with the first identity (same object): the run proves.
    std::fs::write(&path, &full).unwrap();
    let pinned = Pinned {
        identity: Some(identity),
        leaf,
        ..pin
    };
    assert!(verify(&path, &pinned, &s).is_ok());
    // A file of another cwd is not pinned.
    let elsewhere = Pinned {
        cwd: "/elsewhere".into(),
        ..pinned
    };
    assert_eq!(
        proof::pin(&path, &elsewhere).err(),
        Some(Refusal::OtherSession)
    );
}

#[test]
fn a_cut_off_response_continued_by_claude_code_proves_with_its_last_part() {
    // length-cutoff step 0: the first response stopped at max_tokens, Claude Code asked for the
    // rest itself; stream-failures step 0: the stream broke mid-response. Both report only the
    // last response as the result; it proves, and is not truncated.
    for fixture in ["length-cutoff", "stream-failures"] {
        let s = settled(fixture, 0);
        assert_eq!(s.candidate.answer_uuids.len(), 1);
        let (_d, path) = copy_of(fixture, &claude_steps(fixture)[0].session_id);
        let v = verify(&path, &pinned_for(&path, &s.sup), &s).unwrap();
        assert!(!v.run.final_truncated);
        assert!(
            s.sup.runs[0].uuids.len() >= 3,
            "the cut part is in the run too"
        );
    }
}

#[test]
fn a_recorded_run_is_found_in_the_store_by_its_first_message() {
    // The live record is written before the proof: the run is located from the store's index
    // by walking from the first message the stream announced back to its prompt.
    for (fixture, step) in [
        ("edit-file", 0),
        ("continue-unicode", 1),
        ("retry-timeout", 0),
    ] {
        let env = runread_testkit::Env::new();
        env.place_claude(fixture, std::time::Duration::from_secs(60));
        env.ingest();
        let (sup, _) = feed(&claude_steps(fixture)[step].lines);
        let mut runs = env.store.runs().unwrap();
        runs.sort_by_key(|r| r.run.start_line);
        let t = &runs[step].target;
        let entries = env.store.entries(&t.session_id, t.generation).unwrap();
        assert_eq!(
            claude_state::prompt_of(&entries, &sup.runs[0].uuids[0]).as_deref(),
            Some(t.run_id.as_str()),
            "{fixture}"
        );
    }
    // Before anything is announced (a retry before the first response): the one prompt after
    // the leaf pinned at start.
    let env = runread_testkit::Env::new();
    env.place_claude("continue-unicode", std::time::Duration::from_secs(60));
    env.ingest();
    let mut runs = env.store.runs().unwrap();
    runs.sort_by_key(|r| r.run.start_line);
    let t = &runs[1].target;
    let entries = env.store.entries(&t.session_id, t.generation).unwrap();
    let leaf = entries
        .iter()
        .find(|e| e.id == t.run_id)
        .and_then(|e| e.parent_id.clone());
    assert_eq!(
        claude_state::prompt_after(&entries, leaf.as_deref()).as_deref(),
        Some(t.run_id.as_str())
    );
    // Two prompts after the pin (a new session here): neither is guessed.
    assert_eq!(claude_state::prompt_after(&entries, None), None);
}
