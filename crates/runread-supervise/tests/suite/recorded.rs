//! Supervision on real recorded Pi event streams (`fixtures/pi/*/events-*.jsonl`, Pi 0.73.1, and
//! `fixtures/pi/1.6.0/*/events-*.jsonl`, Pi 1.6.0) and the session files Pi wrote in the same
//! runs: when a run settles, what its candidate is, and what the verification against the session
//! file accepts and refuses. Each test runs once per version.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::path::{Path, PathBuf};

use runread_sessions::EntrySummary;
use runread_sessions::pi::cut_runs;
use runread_sessions::pi::parse_header;
use runread_store::{Phase, Proof};
use runread_supervise::pi::events;
use runread_supervise::pi::proof;
use runread_supervise::pi::state::Supervision;
use runread_supervise::proof::{Pinned, Refusal, Verified};
use runread_testkit::{PiVersion, fixture_session, fixtures_dir, pi_versions};

crate::feeder!(Supervision, events::parse);

fn stream(name: &str, step: usize) -> Vec<String> {
    std::fs::read_to_string(
        fixtures_dir()
            .join(name)
            .join(format!("events-{step}.jsonl")),
    )
    .unwrap()
    .lines()
    .map(str::to_owned)
    .collect()
}

fn event_type(line: &str) -> String {
    serde_json::from_str::<serde_json::Value>(line).unwrap()["type"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn entries(path: &Path) -> Vec<EntrySummary> {
    let file = runread_sessions::EvidenceFile::open(path, None).unwrap();
    runread_sessions::pi::scan(
        &file,
        runread_sessions::pi::Resume::Fresh,
        runread_sessions::ReadAhead::Allowed,
    )
    .unwrap()
    .entries
}

/// A private copy of a fixture's session file (one link, in a temp dir) and its pin for a new
/// session (no leaf: the chain must reach the root).
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf, Pinned) {
    let src = fixture_session(name);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(src.file_name().unwrap());
    std::fs::copy(&src, &path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let header = parse_header(text.lines().next().unwrap().as_bytes()).unwrap();
    let pinned = Pinned {
        session_id: header.session_id,
        cwd: header.cwd,
        identity: None,
        leaf: None,
    };
    (dir, path, pinned)
}

fn settled_run(name: &str, step: usize) -> (Supervision, usize) {
    let (sup, settled) = feed(&stream(name, step));
    assert_eq!(settled.len(), 1, "{name} step {step}: one settle");
    let (_, n) = settled[0];
    (sup, n)
}

pi_versions! {
#[test]
fn a_run_settles_at_agent_end_and_never_at_message_end(v) {
    let lines = stream(&v.fixture("sample"), 0);
    let (sup, settled) = feed(&lines);
    assert_eq!(sup.runs.len(), 1);
    assert_eq!(settled.len(), 1);
    let (at, _) = settled[0];
    assert_eq!(event_type(&lines[at]), "agent_end");
    assert_eq!(sup.phase(), Some(Phase::Ended));
    // Pi 1.x ends the stream with `agent_settled`, after that agent_end: it settles nothing again.
    assert_eq!(
        event_type(lines.last().unwrap()) == "agent_settled",
        v.is_1x()
    );
    // The same stream cut just before agent_end: the answer's message_end is in, nothing settles.
    let (sup, settled) = feed(&lines[..at]);
    assert!(settled.is_empty());
    assert!(
        sup.runs[0].candidate.is_some(),
        "the candidate is known, not published"
    );
}
}

pi_versions! {
#[test]
fn the_candidate_is_the_answer_pi_persisted(v) {
    for (name, step, run_index) in [
        ("sample", 0, 0),
        ("sample", 1, 1),
        ("multi-run", 2, 2),
        ("secrets-history", 0, 0),
    ] {
        let name = &v.fixture(name);
        let (sup, n) = settled_run(name, step);
        let candidate = sup.runs[n].candidate.clone().unwrap();
        let branch = cut_runs(&entries(&fixture_session(name)), &[], false);
        let run = &branch.runs[run_index];
        assert_eq!(
            runread_testkit::answer_of(&fixture_session(name), run).as_deref(),
            Some(candidate.text.as_str()),
            "{name} step {step}"
        );
        assert_eq!(
            run.final_message_sha256.as_deref(),
            Some(candidate.message_sha256.as_str())
        );
        assert!(!candidate.truncated);
    }
}
}

pi_versions! {
#[test]
fn a_length_stop_settles_truncated(v) {
    let (sup, n) = settled_run(&v.fixture("length"), 0);
    assert!(sup.runs[n].candidate.as_ref().unwrap().truncated);
}
}

pi_versions! {
#[test]
fn a_provider_error_retried_to_exhaustion_never_settles(v) {
    let lines = stream(&v.fixture("error"), 1);
    let (sup, settled) = feed(&lines);
    assert!(settled.is_empty());
    assert_eq!(sup.runs.len(), 1, "retries stay in the run they retry");
    assert_eq!(sup.runs[0].last_stop.as_deref(), Some("error"));
    assert!(sup.runs[0].candidate.is_none());
    // Mid-way, right after the first auto_retry_start, the phase is `retrying`.
    let retry = lines
        .iter()
        .position(|l| event_type(l) == "auto_retry_start")
        .unwrap();
    let (sup, _) = feed(&lines[..=retry]);
    assert_eq!(sup.phase(), Some(Phase::Retrying));
}
}

pi_versions! {
#[test]
fn a_recovered_error_settles_with_the_successful_answer(v) {
    let (sup, n) = settled_run(&v.fixture("error-recovered"), 1);
    let branch = cut_runs(&entries(&fixture_session(&v.fixture("error-recovered"))), &[], false);
    assert_eq!(
        runread_testkit::answer_of(
            &fixture_session(&v.fixture("error-recovered")),
            &branch.runs[1]
        )
        .as_deref(),
        Some(sup.runs[n].candidate.as_ref().unwrap().text.as_str())
    );
}
}

pi_versions! {
#[test]
fn a_tool_call_in_flight_is_waiting_on_a_tool(v) {
    let lines = stream(&v.fixture("multi-run"), 0);
    let start = lines
        .iter()
        .position(|l| event_type(l) == "tool_execution_start")
        .unwrap();
    let (sup, _) = feed(&lines[..=start]);
    assert_eq!(sup.phase(), Some(Phase::WaitingOnTool));
    assert_eq!(sup.open_tools(), 1);
}
}

pi_versions! {
#[test]
fn an_unreadable_line_inside_a_run_blocks_its_settle(v) {
    let mut lines = stream(&v.fixture("sample"), 0);
    let at = lines
        .iter()
        .position(|l| event_type(l) == "turn_end")
        .unwrap();
    lines.insert(at, "{not json".into());
    let (sup, settled) = feed(&lines);
    assert!(settled.is_empty());
    assert!(sup.runs[0].faulted);
}
}

pi_versions! {
#[test]
fn an_event_of_a_type_runread_never_saw_inside_a_run_leaves_it_without_an_answer(v) {
    let mut lines = stream(&v.fixture("sample"), 0);
    let at = lines
        .iter()
        .position(|l| event_type(l) == "turn_end")
        .unwrap();
    lines.insert(
        at,
        r#"{"type":"plan_revised","plan":["answer differently"]}"#.into(),
    );
    let (sup, settled) = feed(&lines);
    assert!(settled.is_empty(), "the answer is not guessed");
    assert!(sup.runs[0].unknown_event);
    assert!(!sup.runs[0].faulted, "a well-formed event: not a fault");
    assert_eq!(
        sup.runs[0].closing_proof(),
        Proof::Refused {
            reason: "the event stream had an event of a type runread does not know in this run"
                .into()
        }
    );
    assert_eq!(
        Refusal::UnknownEvent.as_str(),
        "the event stream had an event of a type runread does not know in this run"
    );
}
}

pi_versions! {
#[test]
fn the_events_pi_1x_adds_are_read_and_an_unknown_type_is_not_ignored(v) {
    // Pi 1.x's docs/json.md: a `system` message's start and end, an extension's appended entry,
    // session-state changes and summarization retries, each inside a run: the run still settles.
    let mut lines = stream(&v.fixture("sample"), 0);
    let at = lines
        .iter()
        .position(|l| event_type(l) == "turn_end")
        .unwrap();
    for added in [
        r#"{"type":"message_start","message":{"role":"system","content":"be brief"}}"#,
        r#"{"type":"message_end","message":{"role":"system","content":"be brief"}}"#,
        r#"{"type":"entry_appended","entry":{"type":"custom","id":"e1"}}"#,
        r#"{"type":"session_info_changed","name":"x"}"#,
        r#"{"type":"thinking_level_changed","level":"low"}"#,
        r#"{"type":"summarization_retry_scheduled","attempt":1,"maxAttempts":3}"#,
        r#"{"type":"summarization_retry_attempt_start","source":"compaction"}"#,
        r#"{"type":"summarization_retry_finished"}"#,
    ] {
        lines.insert(at, added.into());
        assert_eq!(
            events::parse(added.as_bytes()).unwrap(),
            if added.contains("message_end") {
                events::Event::OtherMessageEnd
            } else {
                events::Event::Ignored
            },
            "{added}"
        );
    }
    let (sup, settled) = feed(&lines);
    assert_eq!(settled.len(), 1, "the run settles");
    assert!(!sup.runs[0].unknown_event);
    for ignored in events::IGNORED_TYPES {
        let line = format!(r#"{{"type":"{ignored}"}}"#);
        assert_eq!(
            events::parse(line.as_bytes()).unwrap(),
            events::Event::Ignored
        );
    }
    assert_eq!(
        events::parse(br#"{"type":"plan_revised"}"#).unwrap(),
        events::Event::Unknown
    );
}
}

pi_versions! {
#[test]
fn an_agent_end_that_will_retry_does_not_end_the_run(v) {
    // Pi 1.x: `agent_end` with `willRetry` closes a low-level loop, not the prompt's run.
    let lines = stream(&v.fixture("sample"), 0);
    let at = lines
        .iter()
        .position(|l| event_type(l) == "agent_end")
        .unwrap();
    let mut retried: serde_json::Value = serde_json::from_str(&lines[at]).unwrap();
    retried["willRetry"] = true.into();
    let mut cut = lines[..at].to_vec();
    cut.push(retried.to_string());
    let (sup, settled) = feed(&cut);
    assert!(settled.is_empty(), "no settle while Pi retries");
    assert!(!sup.runs[0].ended);
    // The same agent_end without willRetry settles (as 0.73 streams say).
    let (_, settled) = feed(&lines[..=at]);
    assert_eq!(settled.len(), 1);
}
}

pi_versions! {
#[test]
fn events_before_the_header_break_the_stream(v) {
    let lines = stream(&v.fixture("sample"), 0);
    let (sup, _) = feed(&lines[1..]);
    assert!(sup.broken);
    assert!(sup.runs.is_empty());
}
}

/// Verifies run 1 of `sample` (a new session) of Pi `v` on `path` with `pinned`.
fn verify_sample(v: PiVersion, path: &Path, pinned: &Pinned) -> Result<Verified, Refusal> {
    let (sup, n) = settled_run(&v.fixture("sample"), 0);
    let run = &sup.runs[n];
    proof::verify(
        path,
        pinned,
        &run.user_message_sha256,
        run.candidate.as_ref().unwrap(),
    )
}

pi_versions! {
#[test]
fn verification_accepts_the_file_pi_wrote(v) {
    let (_d, path, pinned) = copy_of(&v.fixture("sample"));
    let verified = verify_sample(v, &path, &pinned).unwrap();
    let branch = cut_runs(&entries(&path), &[], false);
    assert_eq!(
        Some(verified.final_entry_id.clone()),
        branch.runs[0].final_entry_id
    );
    assert_eq!(verified.run.run_id, branch.runs[0].run_id);
    // A continued session: run 2 chains to the leaf pinned when it started (run 1's answer).
    let (sup, n) = settled_run(&v.fixture("sample"), 1);
    let pinned2 = Pinned {
        leaf: branch.runs[0].final_entry_id.clone(),
        ..pinned.clone()
    };
    let run = &sup.runs[n];
    let v2 = proof::verify(
        &path,
        &pinned2,
        &run.user_message_sha256,
        run.candidate.as_ref().unwrap(),
    )
    .unwrap();
    assert_eq!(v2.run.run_id, branch.runs[1].run_id);
    // … and not to a leaf that is not on its chain.
    let elsewhere = Pinned {
        leaf: Some("not-an-entry".into()),
        ..pinned
    };
    assert_eq!(
        proof::verify(
            &path,
            &elsewhere,
            &run.user_message_sha256,
            run.candidate.as_ref().unwrap()
        )
        .err(),
        Some(Refusal::BrokenChain)
    );
}
}

pi_versions! {
#[test]
fn verification_refuses_links_and_replacements(v) {
    let (d, path, pinned) = copy_of(&v.fixture("sample"));
    let other = d.path().join("other.jsonl");
    std::fs::hard_link(&path, &other).unwrap();
    assert_eq!(
        verify_sample(v, &path, &pinned).err(),
        Some(Refusal::HardLinked)
    );
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&other, &path).unwrap();
    assert_eq!(
        verify_sample(v, &path, &pinned).err(),
        Some(Refusal::NotRegular)
    );
    // A regular file again, but not the object pinned.
    let pinned_identity = runread_sessions::file::identity(&other).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::copy(&other, &path).unwrap();
    std::fs::remove_file(&other).unwrap();
    let pinned = Pinned {
        identity: Some(pinned_identity),
        ..pinned
    };
    assert_eq!(verify_sample(v, &path, &pinned).err(), Some(Refusal::Replaced));
}
}

pi_versions! {
#[test]
fn verification_refuses_another_session_a_torn_file_and_a_changed_answer(v) {
    let (_d, path, pinned) = copy_of(&v.fixture("sample"));
    let other = Pinned {
        session_id: "another".into(),
        ..pinned.clone()
    };
    assert_eq!(
        verify_sample(v, &path, &other).err(),
        Some(Refusal::OtherSession)
    );

    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.trim_end_matches('\n')).unwrap();
    assert_eq!(
        verify_sample(v, &path, &pinned).err(),
        Some(Refusal::Incomplete)
    );

    // The persisted answer differs by one character from what the stream announced.
    let (sup, n) = settled_run(&v.fixture("sample"), 0);
    let answer = sup.runs[n].candidate.as_ref().unwrap().text.clone();
    let first = answer.chars().next().unwrap();
    let changed = text.replacen(
        &serde_json::to_string(&answer).unwrap()[1..40],
        &format!(
            "{}{}",
            if first == 'X' { 'Y' } else { 'X' },
            &serde_json::to_string(&answer).unwrap()[1 + first.len_utf8()..40]
        ),
        1,
    );
    assert_ne!(changed, text);
    std::fs::write(&path, changed).unwrap();
    assert_eq!(
        verify_sample(v, &path, &pinned).err(),
        Some(Refusal::NotOnBranch)
    );
}
}

pi_versions! {
#[test]
fn every_event_pi_wrote_in_json_mode_is_one_runread_knows(v) {
    // `aborted` is RPC mode's stdout (`runread run` refuses `--mode rpc`).
    let mut names = vec![
        "sample",
        "multi-run",
        "error",
        "error-recovered",
        "length",
        "secrets-history",
        "secrets-leaks",
    ];
    if v.is_1x() {
        names.extend(["fork", "compaction"]);
    }
    for name in names {
        let dir = fixtures_dir().join(v.fixture(name));
        let mut step = 0;
        while dir.join(format!("events-{step}.jsonl")).exists() {
            for line in stream(&v.fixture(name), step) {
                assert_ne!(
                    events::parse(line.as_bytes()).unwrap(),
                    events::Event::Unknown,
                    "{name} step {step}: {}",
                    event_type(&line)
                );
            }
            let (sup, _) = feed(&stream(&v.fixture(name), step));
            assert!(
                !sup.broken && sup.runs.iter().all(|r| !r.unknown_event && !r.faulted),
                "{name} step {step}"
            );
            step += 1;
        }
        assert!(step > 0, "{name} has event streams");
    }
}
}

/// Pi 1.x's `--fork`: the forked run and the run `--continue` adds to the fork settle with the
/// answers Pi persisted in the fork's file, verified there (the fork is a new session whose
/// copied chain reaches its root).
#[test]
fn a_forked_session_and_its_continuation_verify_against_the_fork() {
    let name = runread_testkit::PI_1_6_0.fixture("fork");
    let files = runread_testkit::fixture_sessions(&name);
    assert_eq!(files.len(), 2);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(files[1].file_name().unwrap());
    std::fs::copy(&files[1], &path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let header = parse_header(text.lines().next().unwrap().as_bytes()).unwrap();
    assert!(header.parent_session.is_some(), "the fork names its parent");
    let branch = cut_runs(&entries(&path), &[], false);
    assert_eq!(branch.runs.len(), 3);
    let mut pinned = Pinned {
        session_id: header.session_id,
        cwd: header.cwd,
        identity: None,
        leaf: None,
    };
    for (step, run_index) in [(1, 1), (2, 2)] {
        let (sup, n) = settled_run(&name, step);
        let run = &sup.runs[n];
        let candidate = run.candidate.as_ref().unwrap();
        let verified = proof::verify(&path, &pinned, &run.user_message_sha256, candidate).unwrap();
        assert_eq!(
            verified.run.run_id, branch.runs[run_index].run_id,
            "step {step}"
        );
        assert_eq!(
            runread_testkit::answer_of(&path, &branch.runs[run_index]).as_deref(),
            Some(candidate.text.as_str())
        );
        pinned.leaf = branch.runs[run_index].final_entry_id.clone();
    }
}

/// Pi 1.x's auto-compaction, in the middle of a run (between a tool result and the answer) and
/// after each answer (the file's last entry is then a `compaction`): each run settles once, at its
/// `agent_end`, with the answer Pi persisted, verified against the file.
#[test]
fn runs_with_compactions_before_and_after_their_answers_settle_with_the_persisted_answer() {
    let name = runread_testkit::PI_1_6_0.fixture("compaction");
    let (_d, path, mut pinned) = copy_of(&name);
    let text = std::fs::read_to_string(&path).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "\"compaction\"").count(),
        3,
        "Pi compacted three times"
    );
    assert_eq!(kinds.last().unwrap(), "\"compaction\"");
    let branch = cut_runs(&entries(&path), &[], false);
    assert_eq!(branch.runs.len(), 2);
    for step in 0..2 {
        let lines = stream(&name, step);
        assert!(
            lines.iter().any(|l| event_type(l) == "compaction_start"),
            "step {step} compacts"
        );
        let (sup, n) = settled_run(&name, step);
        assert_eq!(event_type(&lines[feed(&lines).1[0].0]), "agent_end");
        let run = &sup.runs[n];
        let candidate = run.candidate.as_ref().unwrap();
        assert_eq!(
            runread_testkit::answer_of(&path, &branch.runs[step]).as_deref(),
            Some(candidate.text.as_str()),
            "step {step}"
        );
        let verified = proof::verify(&path, &pinned, &run.user_message_sha256, candidate).unwrap();
        assert_eq!(verified.run.run_id, branch.runs[step].run_id);
        // The next run is pinned to the session's leaf when its prompt was sent: the compaction
        // Pi wrote after this answer, whose parent is the answer.
        let next_prompt_parent = text.lines().find_map(|l| {
            let e: serde_json::Value = serde_json::from_str(l).unwrap();
            let parent = e["parentId"].as_str()?;
            (e["type"] == "compaction" && parent == verified.final_entry_id)
                .then(|| e["id"].as_str().unwrap().to_owned())
        });
        assert!(
            next_prompt_parent.is_some(),
            "a compaction follows the answer"
        );
        pinned.leaf = next_prompt_parent;
    }
}
