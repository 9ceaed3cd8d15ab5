//! Claude Code sessions written by the real Claude Code 2.1.328 (`fixtures/claude`, every scenario
//! of `../shared/harness/scenarios/claude/`), ingested and cut into runs. The oracle is what Claude
//! Code itself reported for each step on its stream-json output (`events-N.jsonl`, the `result`
//! event, read by `runread_testkit::reported`), never runread's own parser: a step that reported
//! a result without error is a completed run whose answer is exactly that result; an error result
//! is a failed run; an interrupted step (no result, or `error_during_execution`) is a cancelled
//! run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use runread_sessions::RunStatus;
use runread_store::RunRecord;
use runread_testkit::Env;

fn ingest(fixture: &str) -> (Env, Vec<RunRecord>, runread_ingest::Report) {
    let env = Env::new();
    env.place_claude(fixture, Duration::from_secs(60));
    let report = env.ingest();
    let mut runs = env.store.runs().unwrap();
    runs.sort_by(|a, b| {
        (&a.target.session_id, a.run.start_line).cmp(&(&b.target.session_id, b.run.start_line))
    });
    (env, runs, report)
}

#[test]
fn a_fork_is_a_session_of_its_own_whose_copied_runs_are_other_targets() {
    let (_env, runs, _) = ingest("resume-fork");
    let sessions: std::collections::BTreeSet<&str> =
        runs.iter().map(|r| r.target.session_id.as_str()).collect();
    assert_eq!(sessions.len(), 2);
    let by_session = |n: usize| -> Vec<&RunRecord> {
        runs.iter()
            .filter(|r| runread_testkit::prompt(r).is_some())
            .filter(|r| {
                runs.iter()
                    .filter(|o| o.target.session_id == r.target.session_id)
                    .count()
                    == n
            })
            .collect()
    };
    let original = by_session(2);
    let fork = by_session(3);
    assert_eq!((original.len(), fork.len()), (2, 3));
    // The fork copied the history with the same uuids: the same run id, another target.
    for (a, b) in original.iter().zip(&fork) {
        assert_eq!(a.target.run_id, b.target.run_id);
        assert_ne!(a.target.session_id, b.target.session_id);
        assert_eq!(runread_testkit::answer(a), runread_testkit::answer(b));
    }
    assert_eq!(
        runread_testkit::answer(fork[2]).as_deref(),
        Some("three (in the fork)")
    );
}

#[test]
fn a_subagents_transcript_is_not_a_session_and_bookkeeping_lines_are_skipped() {
    let (env, runs, report) = ingest("subagent");
    assert_eq!(
        report.files, 1,
        "the subagent transcript is not read as a session"
    );
    assert_eq!(report.duplicates, 0);
    assert_eq!(runs.len(), 1);
    let session = env
        .store
        .session(&runs[0].target.session_id)
        .unwrap()
        .unwrap();
    assert_eq!(session.agent, runread_core::Agent::Claude);
    assert!(session.branch_complete);
    // The configured model, from Claude Code's `model` attachment.
    assert_eq!(session.saved_model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(runs[0].run.run_models, vec!["claude-opus-5-5".to_string()]);
}

#[test]
fn a_response_split_over_lines_is_one_answer_and_the_store_holds_no_text() {
    let (env, runs, _) = ingest("tool-then-answer");
    let run = &runs[0];
    // The final response is one line here; the earlier responses (thinking, text, tool_use) are
    // lines of their own sharing a message id.
    assert_eq!(run.run.final_lines.len(), 1);
    let entries = env
        .store
        .entries(&run.target.session_id, run.target.generation)
        .unwrap();
    let groups: Vec<&str> = entries.iter().filter_map(|e| e.group.as_deref()).collect();
    assert!(
        groups.iter().filter(|g| **g == "msg_mock_0").count() >= 3,
        "{groups:?}"
    );
    let db = std::fs::read(env.dir.path().join("runread.db")).unwrap();
    let answer = runread_testkit::answer(run).unwrap();
    assert!(
        !db.windows(40).any(|w| w == &answer.as_bytes()[..40]),
        "no text in the store"
    );
}

#[test]
fn appends_cost_their_new_bytes_and_a_rewrite_is_a_new_generation() {
    let env = Env::new();
    let placed = env.place_claude("continue-unicode", Duration::from_secs(60));
    let path = &placed[0];
    let full = std::fs::read(path).unwrap();
    // The first run's lines only: cut before the second prompt's queue operation.
    let second = full
        .windows(b"Say it again".len())
        .position(|w| w == b"Say it again")
        .unwrap();
    let cut = full[..second].iter().rposition(|b| *b == b'\n').unwrap() + 1;
    let cut = full[..cut - 1].iter().rposition(|b| *b == b'\n').unwrap() + 1;
    std::fs::write(path, &full[..cut]).unwrap();
    runread_testkit::set_age(path, Duration::from_secs(60));
    let first = env.ingest();
    assert_eq!(first.new_generations, 1);
    assert_eq!(env.store.runs().unwrap().len(), 1);
    // The rest is appended, as Claude Code appends on --continue.
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    std::io::Write::write_all(&mut f, &full[cut..]).unwrap();
    drop(f);
    runread_testkit::set_age(path, Duration::from_secs(60));
    let second = env.ingest();
    assert_eq!((second.appended, second.new_generations), (1, 0));
    assert_eq!(second.bytes_read, (full.len() - cut) as u64);
    let runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.target.generation == 1));
    // Replaced by a copy: a new generation.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &full).unwrap();
    std::fs::rename(&tmp, path).unwrap();
    let third = env.ingest();
    assert_eq!(third.new_generations, 1);
    assert!(
        env.store
            .runs()
            .unwrap()
            .iter()
            .all(|r| r.target.generation == 2)
    );
}

#[test]
fn only_sessions_whose_lines_cwd_lies_in_a_workspace_are_read_whatever_the_folder_name() {
    let env = Env::new();
    let placed = env.place_claude("tool-then-answer", Duration::from_secs(60));
    // Move the lines' cwd out of every workspace, leaving the (escaped) folder name as it was.
    let bytes = std::fs::read(&placed[0]).unwrap();
    std::fs::write(
        &placed[0],
        runread_testkit::relocated_lines(&bytes, "/somewhere/else"),
    )
    .unwrap();
    let report = env.ingest();
    assert_eq!(report.outside_workspaces, 1);
    assert!(env.store.runs().unwrap().is_empty());
}

/// Bad input never panics and never aborts an ingest: a torn last line, a malformed line, a line
/// over the line bound, bookkeeping of a type runread does not know; a session path that is a
/// symbolic link, a hard link or a FIFO. Each is counted and reported; the run it touches is
/// `unknown`; every other file is read as usual.
#[test]
fn bad_input_is_counted_reported_and_taints_only_the_run_it_touches() {
    let env = Env::new();
    let placed = env.place_claude("continue-unicode", Duration::from_secs(60));
    let good = std::fs::read(&placed[0]).unwrap();
    let dir = placed[0].parent().unwrap().to_path_buf();
    let lines: Vec<&[u8]> = good
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let with = |f: &dyn Fn(usize, &[u8]) -> Vec<u8>| -> Vec<u8> {
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            out.extend(f(i, l));
            out.push(b'\n');
        }
        out
    };
    // The second prompt's line index: the taint must fall on the second run only.
    let second = lines
        .iter()
        .position(|l| {
            l.windows(b"Say it again".len())
                .any(|w| w == b"Say it again")
                && l.windows(b"\"uuid\"".len()).any(|w| w == b"\"uuid\"")
        })
        .unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        runread_testkit::set_age(&p, Duration::from_secs(60));
        p
    };
    std::fs::remove_file(&placed[0]).unwrap();
    // Each variant gets a session id of its own (the id is on every line).
    let variant = |n: u8, bytes: Vec<u8>| -> Vec<u8> {
        let from = b"fe636eb7-1fb5-42f2-bcc2-023e75fdb7fd";
        let to = format!("fe636eb7-1fb5-42f2-bcc2-023e75fdb7f{n}");
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i..].starts_with(from) {
                out.extend_from_slice(to.as_bytes());
                i += from.len();
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        out
    };
    // 1: a torn last line.
    let mut torn = variant(1, good.clone());
    torn.truncate(torn.len() - 40);
    write("torn.jsonl", &torn);
    // 2: a malformed conversation line after the second prompt.
    write(
        "malformed.jsonl",
        &variant(
            2,
            with(&|i, l| {
                if i == second + 1 {
                    b"{\"type\":\"assistant\",broken".to_vec()
                } else {
                    l.to_vec()
                }
            }),
        ),
    );
    // 3: a line over the line bound in the second run, and bookkeeping of an unknown type.
    let huge = format!(
        "{{\"type\":\"api-request-blob\",\"blob\":\"{}\"}}",
        "z".repeat(runread_core::limits::EVIDENCE_LINE_MAX_BYTES)
    );
    write(
        "oversize.jsonl",
        &variant(
            3,
            with(&|i, l| {
                if i == second + 1 {
                    [
                        huge.as_bytes(),
                        b"\n{\"type\":\"mystery-bookkeeping\",\"x\":1}\n",
                        l,
                    ]
                    .concat()
                } else {
                    l.to_vec()
                }
            }),
        ),
    );
    // 4: a symbolic link, a hard link, a FIFO.
    let target = write("target-of-links.jsonl", &variant(4, good.clone()));
    std::os::unix::fs::symlink(&target, dir.join("symlink.jsonl")).unwrap();
    std::fs::hard_link(&target, dir.join("hardlink.jsonl")).unwrap();
    let fifo = dir.join("fifo.jsonl");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let report = env.ingest();
    assert_eq!(report.torn_files, 1, "{report:?}");
    assert_eq!(
        report.malformed_lines, 2,
        "the broken line and the oversize line: {report:?}"
    );
    assert!(report.skipped_lines > 0);
    // The symlink, the FIFO, and both names of the hard-linked file are refused, never read.
    assert_eq!(report.unreadable, 4, "{report:?}");
    let runs = env.store.runs().unwrap();
    for sid in ["7f1", "7f2", "7f3"] {
        let mut of: Vec<&RunRecord> = runs
            .iter()
            .filter(|r| r.target.session_id.ends_with(&sid[1..]))
            .collect();
        of.sort_by_key(|r| r.run.start_line);
        assert_eq!(of.len(), 2, "{sid}");
        assert_eq!(
            of[0].run.status,
            RunStatus::Completed,
            "{sid}: the first run is untouched"
        );
        assert_eq!(
            of[1].run.status,
            RunStatus::Unknown,
            "{sid}: the touched run"
        );
    }
}
