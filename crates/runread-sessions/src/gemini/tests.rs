//! Gemini CLI's reader on the real files of `fixtures/gemini/0.61.0` (and edits of them).
#![cfg(test)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use super::*;
use crate::model::Resume;
use crate::profile::AgentProfile;
use crate::runs::RunStatus;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/gemini/0.61.0")
        .join(name)
        .join("sessions/workspace/chats")
}

/// The session files of fixture `name` (`chats/session-*.jsonl`), sorted.
fn sessions(name: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture(name))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn scan_path(path: &Path) -> Result<Scan, ScanError> {
    let file = EvidenceFile::open(path, None).unwrap();
    scan(&file, Resume::Fresh, ReadAhead::Off)
}

fn runs_of(path: &Path) -> Vec<Run> {
    let s = scan_path(path).unwrap();
    assert!(s.malformed.is_empty(), "{}", path.display());
    cut_runs(&s.entries, &s.malformed, s.torn).runs
}

/// The text of a run's candidate answer, read back from its line.
fn candidate(path: &Path, run: &Run) -> Option<String> {
    let line = run.final_lines.first()?;
    let bytes = std::fs::read(path).unwrap();
    let start = usize::try_from(line.offset).unwrap();
    let end = start + usize::try_from(line.bytes).unwrap();
    message_view(&bytes[start..end])?.answer
}

fn line_of(path: &Path, n: u64) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().nth(usize::try_from(n - 1).unwrap()).unwrap()).unwrap()
}

#[test]
fn the_session_is_the_files_id_and_its_workspace_the_verified_project_root() {
    let path = &sessions("tool-then-answer")[0];
    let s = scan_path(path).unwrap();
    let first = line_of(path, 1);
    assert_eq!(s.header.session_id, first["sessionId"].as_str().unwrap());
    assert_eq!(s.header.cwd, "/tmp/gemini-fx/tool-then-answer/workspace");
    assert_eq!(
        runread_core::sha256_hex(s.header.cwd.as_bytes()),
        first["projectHash"].as_str().unwrap()
    );
    // A project root whose SHA-256 is not the file's `projectHash`: in no workspace.
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("p/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(dir.path().join("p/.project_root"), "/somewhere/else").unwrap();
    let copy = chats.join(path.file_name().unwrap());
    std::fs::copy(path, &copy).unwrap();
    assert_eq!(scan_path(&copy).unwrap().header.cwd, "");
    // A link in its place is not read.
    std::fs::remove_file(dir.path().join("p/.project_root")).unwrap();
    std::os::unix::fs::symlink(
        fixture("tool-then-answer").join("../.project_root"),
        dir.path().join("p/.project_root"),
    )
    .unwrap();
    assert_eq!(scan_path(&copy).unwrap().header.cwd, "");
}

/// Upserts: a `gemini` message written again with its tool calls is one record, served from its
/// last line; the run's events are each record once, in order.
#[test]
fn the_last_line_of_a_record_is_its_truth() {
    let path = &sessions("tool-then-answer")[0];
    let runs = runs_of(path);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    // prompt, model (+tool), result, model (+tool), result, model: lines 3, 7, 8, 12, 13, 15.
    assert_eq!(run.message_lines, vec![3, 7, 8, 12, 13, 15]);
    for (superseded, by) in [(5u64, 7u64), (10, 12)] {
        assert_eq!(line_of(path, superseded)["id"], line_of(path, by)["id"]);
        assert!(!run.message_lines.contains(&superseded));
    }
    let views: Vec<MessageView> = run
        .message_lines
        .iter()
        .map(|n| message_view(line_of(path, *n).to_string().as_bytes()).unwrap())
        .collect();
    assert_eq!(views[1].tool_calls, vec!["run_shell_command"]);
    assert_eq!(views[2].role, role::TOOL_RESULT);
    assert_eq!(views[2].body, "", "a tool's output is never served");
    assert_eq!(views[3].tool_calls, vec!["read_file"]);
    assert_eq!(run.run_models, vec!["gemini-2.5-flash"]);
}

/// No answer is proven: the last model message is kept as the candidate, the run is `unknown`.
#[test]
fn an_answer_is_a_candidate_and_the_run_unknown() {
    let path = &sessions("tool-then-answer")[0];
    let run = &runs_of(path)[0];
    assert_eq!(run.status, RunStatus::Unknown);
    assert_eq!(run.unknown_reason.as_deref(), Some(END_NOT_RECORDED));
    let text = candidate(path, run).unwrap();
    assert!(text.starts_with("This is **demo**"));
    assert_eq!(run.final_bytes, text.len() as u64);
}

/// `MAX_TOKENS` with text is written as any answer: flagged (`unknown`), never `completed`.
#[test]
fn an_unmarked_cut_off_is_never_complete() {
    let path = &sessions("length-cutoff")[0];
    let runs = runs_of(path);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].status, RunStatus::Unknown);
    assert_eq!(runs[0].unknown_reason.as_deref(), Some(END_NOT_RECORDED));
    assert!(!runs[0].final_truncated);
    assert_eq!(
        candidate(path, &runs[0]).as_deref(),
        Some("This answer was cut off by the length lim")
    );
}

/// A failed run shows only as a prompt the next snapshot drops: `unknown`, rolled back, no
/// candidate; the runs around it stand as before.
#[test]
fn a_rolled_back_prompt_is_an_unknown_run_without_an_answer() {
    let files = sessions("provider-error");
    let runs = runs_of(&files[0]);
    let statuses: Vec<(RunStatus, Option<&str>)> = runs
        .iter()
        .map(|r| (r.status, r.unknown_reason.as_deref()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            (RunStatus::Unknown, Some(END_NOT_RECORDED)),
            (RunStatus::Unknown, Some(ROLLED_BACK)),
            (RunStatus::Unknown, Some(END_NOT_RECORDED)),
        ]
    );
    assert!(runs[1].final_lines.is_empty());
    assert_eq!(runs[1].message_lines.len(), 1);
    // A session whose only run failed at once: a session all the same, its run rolled back.
    let failed = runs_of(&files[1]);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].unknown_reason.as_deref(), Some(ROLLED_BACK));
    // Stream failures and an empty cut-off are rolled back the same way.
    let s = runs_of(&sessions("stream-failures")[0]);
    let reasons: Vec<Option<&str>> = s.iter().map(|r| r.unknown_reason.as_deref()).collect();
    assert_eq!(
        reasons,
        vec![
            Some(END_NOT_RECORDED),
            Some(ROLLED_BACK),
            Some(ROLLED_BACK),
            Some(END_NOT_RECORDED)
        ]
    );
}

/// An interruption while the model was still answering leaves the prompt alone; the next run
/// followed: `unknown`, no response. One during a tool call looks like an answer: a candidate,
/// never more.
#[test]
fn interrupted_runs_are_unknown() {
    let path = &sessions("interrupted")[0];
    let runs = runs_of(path);
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0].unknown_reason.as_deref(), Some(END_NOT_RECORDED));
    assert_eq!(
        candidate(path, &runs[0]).as_deref(),
        Some("Starting the slow job.")
    );
    assert_eq!(runs[1].unknown_reason.as_deref(), Some(NO_RESPONSE));
    assert!(runs[1].final_lines.is_empty());
}

/// A resume in a later minute leaves a stub with the session's id and no conversation: not a
/// session; the real file has all three runs (its snapshots restate the earlier ones).
#[test]
fn a_resume_stub_is_not_a_session() {
    let files = sessions("continue-unicode");
    assert_eq!(files.len(), 2);
    let real = scan_path(&files[0]).unwrap();
    assert_eq!(
        scan_path(&files[1]).unwrap_err(),
        ScanError::NotASession,
        "the stub"
    );
    let stub_id = line_of(&files[1], 1)["sessionId"].clone();
    assert_eq!(stub_id.as_str(), Some(real.header.session_id.as_str()));
    let runs = runs_of(&files[0]);
    let answers: Vec<Option<String>> = runs.iter().map(|r| candidate(&files[0], r)).collect();
    assert_eq!(
        answers,
        vec![
            Some("notes.txt says: hello".to_owned()),
            Some("Again: hello — naïve 日本語 🎉".to_owned()),
            Some("Third time: hello.".to_owned()),
        ]
    );
    // Usage: each response once, from its record's last line.
    let usage = runs[0].usage.as_ref();
    assert!(usage.is_none(), "cut_runs alone attributes no usage");
}

/// Read in pieces, as ingest reads a growing file, the runs are the ones a whole read cuts; and
/// the appended lines of a real resume (snapshots restating the history, a record written again
/// with its tool calls) rewrite nothing.
#[test]
fn read_in_pieces_the_runs_are_the_same_and_nothing_is_rewritten() {
    for name in [
        "continue-unicode",
        "secrets",
        "provider-error",
        "interrupted",
    ] {
        let path = &sessions(name)[0];
        let whole = runs_of(path);
        let text = std::fs::read(path).unwrap();
        let ends: Vec<usize> = text
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        for cut in ends.iter().copied().skip(3) {
            let dir = tempfile::tempdir().unwrap();
            let project = dir.path().join("workspace");
            std::fs::create_dir_all(project.join("chats")).unwrap();
            std::fs::copy(
                fixture(name).join("../.project_root"),
                project.join(".project_root"),
            )
            .unwrap();
            let copy = project.join("chats").join(path.file_name().unwrap());
            std::fs::write(&copy, &text[..cut]).unwrap();
            let file = EvidenceFile::open(&copy, None).unwrap();
            let Ok(head) = scan(&file, Resume::Fresh, ReadAhead::Off) else {
                continue; // no message yet
            };
            std::fs::write(&copy, &text).unwrap();
            let file = EvidenceFile::open(&copy, None).unwrap();
            let last_id = head.entries.last().map(|e| e.id.clone());
            let tail = scan(
                &file,
                Resume::After {
                    header: &head.header,
                    offset: head.consumed,
                    lines: head.lines,
                    last_id: last_id.as_deref(),
                },
                ReadAhead::Off,
            )
            .unwrap();
            assert!(!rewrites(&head.entries, &tail.entries), "{name} at {cut}");
            let mut all = head.entries.clone();
            all.extend(tail.entries);
            assert_eq!(cut_runs(&all, &[], false).runs, whole, "{name} at {cut}");
        }
    }
}

/// A later line that gives a record another text rewrites history (a new generation); one that
/// completes it (tool calls added), restates it, or drops it from the list does not.
#[test]
fn only_a_changed_record_is_a_rewrite() {
    let path = &sessions("tool-then-answer")[0];
    let s = scan_path(path).unwrap();
    let (old, new) = s.entries.split_at(4);
    assert!(!rewrites(old, new), "tool calls added");
    let mut changed = line_of(path, 15);
    changed["content"] = serde_json::json!("Something else entirely.");
    let header = &mut s.header.clone();
    let hash = runread_core::sha256_hex(header.cwd.as_bytes());
    let line = changed.to_string();
    let LineOutcome::Entry(e) = parse_line(
        header,
        &hash,
        line.as_bytes(),
        &LineDigest::of(line.as_bytes()),
        99,
        0,
    ) else {
        panic!("an entry");
    };
    assert!(rewrites(&s.entries, std::slice::from_ref(&*e)));
    // The same record restated (thoughts as parts, a tool call part) is no rewrite.
    let restated = serde_json::json!({"$set": {"messages": [{
        "id": changed["id"], "type": "gemini",
        "content": [{"text": "thinking", "thought": true}, {"text": line_of(path, 15)["content"]}]
    }]}})
    .to_string();
    let LineOutcome::Entry(snap) = parse_line(
        header,
        &hash,
        restated.as_bytes(),
        &LineDigest::of(restated.as_bytes()),
        99,
        0,
    ) else {
        panic!("a snapshot");
    };
    assert_eq!(snap.kind, EntryKind::Snapshot);
    assert!(!rewrites(&s.entries, std::slice::from_ref(&*snap)));
    // …and dropping everything else from the list rolls the run back: `unknown`, no rewrite.
    let mut all = s.entries.clone();
    all.push(*snap);
    let runs = cut_runs(&all, &[], false).runs;
    assert_eq!(runs[0].unknown_reason.as_deref(), Some(ROLLED_BACK));
}

/// A `$rewindTo` drops the record and everything after it: the run it rewinds is rolled back.
#[test]
fn a_rewind_rolls_back_the_runs_it_drops() {
    let path = &sessions("continue-unicode")[0];
    let s = scan_path(path).unwrap();
    let runs = cut_runs(&s.entries, &[], false).runs;
    let rewind = serde_json::json!({"$rewindTo": runs[1].run_id}).to_string();
    let mut header = s.header.clone();
    let hash = runread_core::sha256_hex(header.cwd.as_bytes());
    let LineOutcome::Entry(e) = parse_line(
        &mut header,
        &hash,
        rewind.as_bytes(),
        &LineDigest::of(rewind.as_bytes()),
        99,
        0,
    ) else {
        panic!("an entry");
    };
    let mut all = s.entries.clone();
    all.push(*e);
    let after = cut_runs(&all, &[], false).runs;
    let reasons: Vec<Option<&str>> = after.iter().map(|r| r.unknown_reason.as_deref()).collect();
    assert_eq!(
        reasons,
        vec![Some(END_NOT_RECORDED), Some(ROLLED_BACK), Some(ROLLED_BACK)]
    );
}

/// The subagent an `invoke_agent` call names is the run's child, finished: its own file under
/// `chats/<session id>/` holds its summary. A link in its place, or another agent's id, is none.
#[test]
fn a_subagent_is_a_child_with_its_record() {
    let path = &sessions("subagent")[0];
    let runs = runs_of(path);
    assert_eq!(runs.len(), 1);
    let calls: Vec<Vec<u8>> = runs[0]
        .message_lines
        .iter()
        .map(|n| line_of(path, *n).to_string().into_bytes())
        .collect();
    let session_id = scan_path(path).unwrap().header.session_id;
    let children = children(path, &session_id, &calls);
    assert_eq!(children.len(), 1);
    let child = children[0].unwrap();
    assert!(child.finished);
    assert!(child.transcript_modified_ns.is_some());
    assert_eq!(subagent_record(path, &session_id, "not-an-agent"), None);
    assert_eq!(subagent_record(path, "../x", "a"), None);
    // Its transcript is not a session of its own (not listed, and not one when read as one).
    let sub = std::fs::read_dir(fixture("subagent").join(&session_id))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert_eq!(scan_path(&sub).unwrap_err(), ScanError::NotASession);
    let listed = PROFILE.session_files(&fixture("subagent").join("../.."));
    let names: Vec<_> = listed.iter().map(|p| p.file_name()).collect();
    assert_eq!(names, vec![path.file_name()]);
}

/// The children the profile finds for the run whose lines calling tools are `lines`.
fn children(path: &Path, id: &str, lines: &[Vec<u8>]) -> Vec<Option<ChildRecord>> {
    PROFILE.children(path, id, lines).unwrap()
}

/// What is not Gemini CLI's, or not this session's, is no entry of it: another session's or
/// project's metadata, another id set, a record without a valid id are malformed; a record of a
/// type runread does not know is unrecognised.
#[test]
fn foreign_and_unknown_lines() {
    let path = &sessions("tool-then-answer")[0];
    let s = scan_path(path).unwrap();
    let hash = runread_core::sha256_hex(s.header.cwd.as_bytes());
    let parse = |v: serde_json::Value| {
        let mut h = s.header.clone();
        let l = v.to_string();
        parse_line(
            &mut h,
            &hash,
            l.as_bytes(),
            &LineDigest::of(l.as_bytes()),
            9,
            0,
        )
    };
    let first = line_of(path, 1);
    assert_eq!(parse(first.clone()), LineOutcome::Skipped);
    let mut other = first.clone();
    other["sessionId"] = serde_json::json!("0badc0de-0000-4000-8000-000000000000");
    assert_eq!(parse(other), LineOutcome::Malformed);
    let mut moved = first;
    moved["projectHash"] = serde_json::json!("0".repeat(64));
    assert_eq!(parse(moved), LineOutcome::Malformed);
    assert_eq!(
        parse(serde_json::json!({"$set": {"sessionId": "someone-else"}})),
        LineOutcome::Malformed
    );
    assert_eq!(
        parse(serde_json::json!({"id": "a/b", "type": "user", "content": "x"})),
        LineOutcome::Malformed
    );
    assert!(matches!(
        parse(serde_json::json!({"id": "x1", "type": "error", "content": "boom"})),
        LineOutcome::Unrecognised(..)
    ));
    assert_eq!(
        parse(serde_json::json!({"$set": {"lastUpdated": "now"}})),
        LineOutcome::Skipped
    );
}
