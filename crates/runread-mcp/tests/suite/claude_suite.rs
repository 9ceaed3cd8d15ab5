//! Every tool on real Claude Code sessions (`fixtures/claude`, written by Claude Code 2.1.328),
//! through MCP with a real client: answers are exactly what Claude Code reported as each run's
//! result, history is messages rebuilt from Claude Code's one-line-per-block records, known
//! secrets are masked across those events, metadata says what the session records with its
//! source, and the work state shows Claude Code's subagents as children.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::time::Duration;

use serde_json::{Value, json};

const SECRET: &str = "sk-claude-TEST-0123456789abcdef";

use crate::support;

use crate::support::Served;
use runread_testkit::claude_steps;

async fn serve(fixtures: &[&str]) -> Served {
    support::serve_fixtures(runread_testkit::Env::place_claude, fixtures, SECRET).await
}

#[tokio::test]
async fn history_is_messages_rebuilt_from_claude_codes_one_line_per_block_records() {
    let s = serve(&["edit-file", "tool-then-answer", "tool-then-answer-2.1.332"]).await;
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let events = c.read_history(&target, Some(2)).await.unwrap();
        let roles: Vec<&str> = events.iter().map(|e| e["role"].as_str().unwrap()).collect();
        let calls: Vec<Value> = events.iter().map(|e| e["toolCalls"].clone()).collect();
        let text = serde_json::to_string(&events).unwrap();
        if runread_testkit::prompt(&run)
            .unwrap()
            .starts_with("Change the greeting")
        {
            // Two tool results of one response: the second hangs off the chain, and is read.
            assert_eq!(
                roles,
                [
                    "user",
                    "assistant",
                    "toolResult",
                    "assistant",
                    "toolResult",
                    "toolResult",
                    "assistant"
                ]
            );
            assert_eq!(calls[1], json!(["Read"]));
            assert_eq!(calls[3], json!(["Edit", "Write"]));
            assert_eq!(events[3]["text"], "Editing the greeting.");
            // Tool inputs never leave (the Edit's new string, the Write's content).
            assert!(!text.contains("old_string") && !text.contains("new_string"));
        } else {
            assert_eq!(
                roles,
                [
                    "user",
                    "assistant",
                    "toolResult",
                    "assistant",
                    "toolResult",
                    "assistant"
                ]
            );
            assert_eq!(events[1]["text"], "Let me look around.");
            assert_eq!(calls[1], json!(["Bash"]));
            assert!(
                !text.contains("I should look at the files first"),
                "thinking"
            );
            assert!(!text.contains("echo hi && ls -R"), "tool arguments");
        }
        let seqs: Vec<u64> = events
            .iter()
            .map(|e| e["sequence"].as_u64().unwrap())
            .collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    }
}

#[tokio::test]
async fn a_secret_split_between_a_response_and_its_tool_result_is_masked_on_both_sides() {
    let s = serve(&["secrets"]).await;
    let run = s.runs().remove(0);
    let (c, target) = s.client(&run).await;
    for limit in 1..=5u64 {
        let events = c.read_history(&target, Some(limit)).await.unwrap();
        let all = serde_json::to_string(&events).unwrap();
        for w in 0..=SECRET.len() - 8 {
            assert!(!all.contains(&SECRET[w..w + 8]), "limit {limit}: {all}");
        }
        assert_eq!(
            events[1]["text"], "Reading the settings, the key starts with [redacted]",
            "limit {limit}"
        );
        assert!(
            events[2]["text"]
                .as_str()
                .unwrap()
                .starts_with("[redacted] is the rest"),
            "limit {limit}: {}",
            events[2]
        );
    }
    let answer = c.read_final_answer(&target, None, |_| {}).await.unwrap();
    assert_eq!(
        answer.text.as_deref(),
        Some(
            "The configured key is [redacted] (staging). Rotate it: it sits in plain text in config/settings.env."
        )
    );
}

#[tokio::test]
async fn metadata_says_what_the_session_records_with_its_source() {
    // The oldest and the newest tested Claude Code, each its own session file.
    for (fixture, version) in [
        ("tool-then-answer", "2.1.328"),
        ("tool-then-answer-2.1.332", "2.1.332"),
    ] {
        metadata_of(fixture, version).await;
    }
}

async fn metadata_of(fixture: &str, version: &str) {
    let s = serve(&[fixture]).await;
    let run = s.runs().remove(0);
    let (c, target) = s.client(&run).await;
    let m = c
        .call("read_target_metadata", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    assert_eq!(m["agent"], "claude");
    assert_eq!(
        m["cwd"],
        json!({"value": s.env.workspace.to_str().unwrap(), "source": "prompt_line"})
    );
    assert_eq!(
        m["agentVersion"],
        json!({"value": version, "source": "prompt_line"}),
        "{fixture}"
    );
    // The session records a tested version: said so.
    assert_eq!(m["versionTested"], true, "{fixture}");
    assert_eq!(m["gitBranch"]["source"], "prompt_line");
    assert_eq!(
        m["savedModel"],
        json!({"value": "claude-opus-5-5", "source": "model_attachment"})
    );
    assert_eq!(m["runModel"]["value"], "claude-opus-5-5");
    assert_eq!(m["sessionName"]["value"], Value::Null);
    assert!(
        m["unknownFields"]
            .as_array()
            .unwrap()
            .contains(&json!("sessionName"))
    );
}

#[tokio::test]
async fn claude_codes_subagents_are_the_runs_children() {
    let s = serve(&["subagent", "tool-then-answer"]).await;
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let w = c
            .call("read_work_state", json!({"target": target}))
            .await
            .unwrap()
            .structured;
        assert_eq!(w["foreground"]["state"], "completed", "{w}");
        assert_eq!(w["coverage"]["subagents"]["state"], "complete", "{w}");
        assert_eq!(w["completionConfirmed"], false);
        if runread_testkit::prompt(&run)
            .unwrap()
            .starts_with("Ask a helper")
        {
            assert_eq!(
                w["aggregate"]["children"],
                json!([{"kind": "subagent", "index": 0, "state": "completed"}])
            );
            assert_eq!(w["aggregate"]["state"], "completed", "{w}");
        } else {
            assert_eq!(w["aggregate"]["children"], json!([]));
        }
    }
}

/// The run's subagents as `read_work_state` shows them (each child's state) and their coverage.
async fn children_of(s: &Served, run: &runread_store::RunRecord) -> (Vec<String>, String) {
    let (c, target) = s.client(run).await;
    let w = c
        .call("read_work_state", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    let states = w["aggregate"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|child| child["state"].as_str().unwrap().to_owned())
        .collect();
    let coverage = w["coverage"]["subagents"]["state"].as_str().unwrap();
    (states, coverage.to_owned())
}

/// Issue 30, finding 5: a session's `<session id>/` or `subagents/` folder that is a symbolic
/// link to a folder holding a valid record, or a record or transcript that is a link or a hard
/// link, gives no child from it — and the call still answers. The same records read as a real
/// folder of plain files before and after each case.
#[tokio::test]
async fn a_subagent_folder_or_record_that_is_a_link_is_not_followed() {
    let s = serve(&["subagent"]).await;
    let run = s.runs().remove(0);
    let session_dir = std::path::PathBuf::from(&run.session_path).with_extension("");
    let folder = session_dir.join("subagents");
    let meta = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().ends_with(".meta.json"))
        .unwrap();
    let transcript =
        std::path::PathBuf::from(meta.to_str().unwrap().replace(".meta.json", ".jsonl"));
    let outside = s.env.dir.path().join("outside");
    let completed = (vec!["completed".to_owned()], "complete".to_owned());
    let not_read = (vec!["unknown".to_owned()], "incomplete".to_owned());
    assert_eq!(children_of(&s, &run).await, completed);

    // A folder moved away and a link to it left in its place: in turn `subagents/` and the
    // session's own folder.
    for linked in [&folder, &session_dir] {
        std::fs::rename(linked, &outside).unwrap();
        std::os::unix::fs::symlink(&outside, linked).unwrap();
        assert_eq!(children_of(&s, &run).await, not_read, "{linked:?}");
        std::fs::remove_file(linked).unwrap();
        std::fs::rename(&outside, linked).unwrap();
        assert_eq!(children_of(&s, &run).await, completed);
    }

    // The record a link to a copy outside the folder, then a hard link.
    std::fs::create_dir(&outside).unwrap();
    let copy = outside.join("record.json");
    std::fs::rename(&meta, &copy).unwrap();
    std::os::unix::fs::symlink(&copy, &meta).unwrap();
    assert_eq!(children_of(&s, &run).await, not_read, "a linked record");
    std::fs::remove_file(&meta).unwrap();
    std::fs::hard_link(&copy, &meta).unwrap();
    assert_eq!(
        children_of(&s, &run).await,
        not_read,
        "a hard-linked record"
    );
    std::fs::remove_file(&copy).unwrap();
    assert_eq!(children_of(&s, &run).await, completed);

    // An unfinished record whose transcript was just written: `running` — unless the transcript
    // is a link or has a second name, when its time is not taken.
    let unfinished = std::fs::read_to_string(&meta)
        .unwrap()
        .replace("\"finished\":true", "\"finished\":false");
    std::fs::write(&meta, unfinished).unwrap();
    runread_testkit::set_age(&transcript, Duration::ZERO);
    let running = (vec!["running".to_owned()], "complete".to_owned());
    assert_eq!(children_of(&s, &run).await, running);
    let unknown = (vec!["unknown".to_owned()], "complete".to_owned());
    std::fs::hard_link(&transcript, outside.join("second-name.jsonl")).unwrap();
    assert_eq!(
        children_of(&s, &run).await,
        unknown,
        "a hard-linked transcript"
    );
    std::fs::remove_file(outside.join("second-name.jsonl")).unwrap();
    let moved = outside.join("transcript.jsonl");
    std::fs::rename(&transcript, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &transcript).unwrap();
    assert_eq!(children_of(&s, &run).await, unknown, "a linked transcript");
}

/// Pads the first tool-result line of the session file at `path` (its result's text) to exactly
/// `len` bytes, newline not counted; every other line is left as it was.
fn pad_first_tool_result(path: &std::path::Path, len: usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut padded = false;
    let mut out = String::new();
    for line in text.lines() {
        if !padded && line.contains("\"type\":\"tool_result\"") {
            let (head, tail) = line
                .split_once("\"type\":\"tool_result\",\"content\":\"")
                .unwrap();
            let head = format!("{head}\"type\":\"tool_result\",\"content\":\"");
            out.push_str(&head);
            out.push_str(&"p".repeat(len - line.len()));
            out.push_str(tail);
            padded = true;
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    assert!(padded);
    assert!(out.lines().any(|l| l.len() == len));
    std::fs::write(path, out).unwrap();
    runread_testkit::set_age(path, Duration::from_secs(60));
}

/// Issue 30, finding 7: a tool-result line of a real Claude Code session at the evidence line
/// bound is read like any other; one byte more is skipped unread, and only the run it lies in
/// becomes `unknown` — the session's other runs are listed and read as before. In
/// `continue-unicode` the tool result is in the first of two runs; in `tool-then-answer`, in its
/// only run (which was not listed at all).
#[tokio::test]
async fn a_tool_result_line_past_the_line_bound_makes_only_its_run_unknown() {
    let bound = runread_core::limits::EVIDENCE_LINE_MAX_BYTES;
    for (len, over) in [(bound, false), (bound + 1, true)] {
        let s = serve(&[]).await;
        for fixture in ["continue-unicode", "tool-then-answer"] {
            let placed = s.env.place_claude(fixture, Duration::from_secs(60));
            pad_first_tool_result(&placed[0], len);
        }
        let report = s.env.ingest();
        assert_eq!(report.malformed_lines, if over { 2 } else { 0 }, "{len}");
        // By session: tool-then-answer's (c7ade1c3…) first, then continue-unicode's two.
        let runs = s.runs();
        let statuses: Vec<&str> = runs.iter().map(|r| r.run.status.as_str()).collect();
        let touched = if over { "unknown" } else { "completed" };
        assert_eq!(statuses, [touched, touched, "completed"], "{len}");
        for (run, fixture) in
            runs.iter()
                .zip(["tool-then-answer", "continue-unicode", "continue-unicode"])
        {
            let (c, target) = s.client(run).await;
            let got = c.read_final_answer(&target, None, |_| {}).await.unwrap();
            let events = c.read_history(&target, None).await.unwrap();
            assert_eq!(events[0]["role"], "user", "{len}: the prompt reads back");
            if run.run.status.as_str() == "unknown" {
                assert_eq!(got.state, "unknown");
                continue;
            }
            let steps = claude_steps(fixture);
            let prompt = runread_testkit::prompt(run).unwrap();
            let want = runread_testkit::step_for(&steps, &prompt).reported.answer();
            assert_eq!(got.state, "available", "{len}: {prompt}");
            assert_eq!(got.text.as_deref(), want, "{len}: {prompt}");
        }
    }
}
