//! Every tool on real Codex rollouts (`fixtures/codex`, written by Codex CLI 0.171.0), through MCP
//! with a real client: answers are exactly what Codex reported on its `--json` stream, history is
//! prompts, messages and tool names (code mode's nested commands included) and never reasoning,
//! arguments or outputs, known secrets are masked, metadata says what `session_meta` and
//! `turn_context` record with their sources, and a fork's inherited history is reported as the
//! parent's — available, or a gap — never as the fork's own.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use serde_json::{Value, json};

const SECRET: &str = "sk-codex-TEST-0123456789abcdef";

use crate::support;

use crate::support::Served;

async fn serve(fixtures: &[&str]) -> Served {
    support::serve_fixtures(runread_testkit::Env::place_codex, fixtures, SECRET).await
}

#[tokio::test]
async fn history_is_prompts_messages_and_tool_names_never_reasoning_arguments_or_outputs() {
    let s = serve(&["tool-then-answer", "code-mode", "edit-file"]).await;
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let events = c.read_history(&target, Some(2)).await.unwrap();
        let roles: Vec<&str> = events.iter().map(|e| e["role"].as_str().unwrap()).collect();
        let calls: Vec<Value> = events.iter().map(|e| e["toolCalls"].clone()).collect();
        let text = serde_json::to_string(&events).unwrap();
        let prompt = runread_testkit::prompt(&run).unwrap();
        assert_eq!(events[0]["text"], prompt.as_str());
        match prompt.as_str() {
            "Show me notes.txt." => {
                assert_eq!(roles, ["user", "assistant", "assistant", "assistant"]);
                assert_eq!(calls[1], json!(["exec"]));
                assert_eq!(calls[2], json!(["exec_command"]));
                assert_eq!(events[3]["text"], "notes.txt says: hello from notes");
                assert!(!text.contains("tools.exec_command"), "the script");
                assert!(!text.contains("Script completed"), "the output");
            }
            p if p.starts_with("List the files") => {
                assert_eq!(
                    roles,
                    ["user", "assistant", "assistant", "assistant", "assistant"]
                );
                assert_eq!(events[1]["text"], "Let me look around.");
                assert_eq!(calls[2], json!(["exec_command"]));
                assert_eq!(calls[3], json!(["exec_command"]));
                assert!(
                    !text.contains("I should look at the files first"),
                    "reasoning"
                );
                assert!(!text.contains("echo hi && ls -R"), "arguments");
                assert!(!text.contains("A tiny project."), "outputs");
            }
            _ => {
                // apply_patch is a custom tool: its name, never the patch.
                assert!(
                    calls.iter().any(|c| c == &json!(["apply_patch"])),
                    "{calls:?}"
                );
                assert!(!text.contains("Begin Patch"));
            }
        }
        assert!(!text.contains("environment_context"));
        let seqs: Vec<u64> = events
            .iter()
            .map(|e| e["sequence"].as_u64().unwrap())
            .collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    }
}

#[tokio::test]
async fn known_secrets_are_masked_in_answers_and_history() {
    let s = serve(&["secrets"]).await;
    let runs = s.runs();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let (c, target) = s.client(run).await;
        for limit in 1..=4u64 {
            let events = c.read_history(&target, Some(limit)).await.unwrap();
            let all = serde_json::to_string(&events).unwrap();
            assert!(!all.contains(SECRET), "limit {limit}: {all}");
            assert!(!all.contains("0123456789abcdef"), "limit {limit}: {all}");
        }
        let answer = c.read_final_answer(&target, None, |_| {}).await.unwrap();
        let text = answer.text.unwrap();
        assert!(
            text.contains("[redacted]") && !text.contains(SECRET),
            "{text}"
        );
    }
}

#[tokio::test]
async fn metadata_says_what_session_meta_and_turn_context_record_with_their_sources() {
    let s = serve(&["code-mode"]).await;
    let run = s.runs().remove(0);
    let (c, target) = s.client(&run).await;
    let m = c
        .call("read_target_metadata", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    assert_eq!(m["agent"], "codex");
    assert_eq!(
        m["cwd"],
        json!({"value": s.env.workspace.to_str().unwrap(), "source": "session_meta"})
    );
    assert_eq!(
        m["agentVersion"],
        json!({"value": "0.171.0", "source": "session_meta"})
    );
    // The session records a tested version: said so.
    assert_eq!(m["versionTested"], true);
    assert_eq!(
        m["modelProvider"],
        json!({"value": "mock", "source": "session_meta"})
    );
    assert_eq!(
        m["savedModel"],
        json!({"value": "gpt-6.2-sol", "source": "turn_context"})
    );
    assert_eq!(
        m["runModel"],
        json!({"value": "gpt-6.2-sol", "source": "turn_context"})
    );
    assert_eq!(m["parentSession"]["value"], Value::Null);
    assert_eq!(m["inheritedHistory"]["value"], Value::Null);
}

#[tokio::test]
async fn the_work_state_is_the_turns_own() {
    let s = serve(&["interrupted", "length-cutoff"]).await;
    let mut states = Vec::new();
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let w = c
            .call("read_work_state", json!({"target": target}))
            .await
            .unwrap()
            .structured;
        states.push(w["foreground"]["state"].as_str().unwrap().to_owned());
        assert_eq!(w["completionConfirmed"], false);
    }
    states.sort();
    assert_eq!(
        states,
        ["cancelled", "cancelled", "completed", "completed", "failed"]
    );
}

/// Reads the fork's run (`Third, in a fork.`): its metadata and its history's gaps.
async fn fork_run(s: &Served) -> (Value, Value) {
    let run = s
        .runs()
        .into_iter()
        .find(|r| runread_testkit::prompt(r).as_deref() == Some("Third, in a fork."))
        .unwrap();
    let (c, target) = s.client(&run).await;
    let m = c
        .call("read_target_metadata", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    let h = c
        .call("read_history", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    (m, h)
}

#[tokio::test]
async fn a_forks_inherited_history_is_its_parents_and_a_gap_once_that_is_gone() {
    let s = serve(&["resume-fork"]).await;
    let runs = s.runs();
    assert_eq!(runs.len(), 3, "the fork's own turn, and the parent's two");
    let parent = runs
        .iter()
        .find(|r| runread_testkit::prompt(r).as_deref() == Some("First."))
        .unwrap();
    let (m, h) = fork_run(&s).await;
    assert_eq!(
        m["parentSession"],
        json!({"value": parent.target.session_id, "source": "session_meta"})
    );
    assert_eq!(
        m["inheritedHistory"],
        json!({"value": "available", "source": "parent_file"})
    );
    assert_eq!(h["gapReasons"], json!([]));
    // The fork's history is its own turn only.
    let roles: Vec<&str> = h["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"]);

    // The parent's file rewritten (the same file, its base line gone): changed.
    let path = std::path::PathBuf::from(&parent.session_path);
    let bytes = std::fs::read(&path).unwrap();
    let cut = bytes.len() / 2;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(cut as u64)
        .unwrap();
    let (m, h) = fork_run(&s).await;
    assert_eq!(m["inheritedHistory"]["value"], "changed");
    assert_eq!(h["gapReasons"], json!(["fork_parent_changed"]));
    assert_eq!(h["gap"], true);
}

#[tokio::test]
async fn a_fork_whose_parent_was_never_read_reports_it_not_granted() {
    let s = serve(&[]).await;
    let placed = s.env.place_codex("resume-fork", Duration::from_secs(60));
    // Only the fork: its parent is not where runread reads.
    let fork = placed
        .iter()
        .find(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .contains("\"forked_from_id\":\"01a231e0")
        })
        .unwrap();
    for p in &placed {
        if p != fork {
            std::fs::remove_file(p).unwrap();
        }
    }
    s.env.ingest();
    assert_eq!(s.runs().len(), 1);
    let (m, h) = fork_run(&s).await;
    assert_eq!(m["inheritedHistory"]["value"], "not_granted");
    assert_eq!(h["gapReasons"], json!(["fork_parent_not_granted"]));
}

/// What the fork's run tells its reader of its parent: metadata's parent fields, history's gaps
/// and events.
async fn fork_fields(s: &Served) -> Value {
    let (m, h) = fork_run(s).await;
    json!({
        "parentSession": m["parentSession"],
        "inheritedHistory": m["inheritedHistory"],
        "unknownFields": m["unknownFields"],
        "gapReasons": h["gapReasons"],
        "gap": h["gap"],
        "events": h["events"],
    })
}

/// Issue 30, finding 6: a fork whose parent was read into another registered workspace is told
/// exactly what a fork whose parent is nowhere is told — `not_granted`, byte for byte — so a
/// reader of the fork never learns whether a session exists outside its workspace.
#[tokio::test]
async fn a_forks_parent_outside_its_workspace_is_not_granted_whether_it_exists_or_not() {
    let is_fork = |p: &std::path::PathBuf| {
        std::fs::read_to_string(p)
            .unwrap()
            .contains("\"forked_from_id\":\"01a231e0")
    };
    // The parent's files moved into a second registered workspace, whose path is as long as the
    // first's (the fork's base offset into its parent's file still holds).
    let elsewhere = serve(&[]).await;
    let other = elsewhere.env.dir.path().join("elsewhere");
    std::fs::create_dir(&other).unwrap();
    let other = std::fs::canonicalize(&other).unwrap();
    assert_eq!(
        other.as_os_str().len(),
        elsewhere.env.workspace.as_os_str().len()
    );
    let other_ws = elsewhere
        .env
        .store
        .add_workspace(other.to_str().unwrap(), "other", 1)
        .unwrap();
    for p in elsewhere
        .env
        .place_codex("resume-fork", Duration::from_secs(60))
    {
        if !is_fork(&p) {
            let bytes = std::fs::read(&p).unwrap();
            let moved = runread_testkit::relocated_codex(&bytes, other.to_str().unwrap());
            std::fs::write(&p, moved).unwrap();
            runread_testkit::set_age(&p, Duration::from_secs(60));
        }
    }
    elsewhere.env.ingest();
    let runs = elsewhere.runs();
    assert_eq!(runs.len(), 3, "the parent's two runs are read, elsewhere");
    assert_eq!(
        runs.iter()
            .filter(|r| r.target.workspace_id == other_ws.id)
            .count(),
        2
    );

    // The parent nowhere: only the fork placed.
    let nowhere = serve(&[]).await;
    for p in nowhere
        .env
        .place_codex("resume-fork", Duration::from_secs(60))
    {
        if !is_fork(&p) {
            std::fs::remove_file(&p).unwrap();
        }
    }
    nowhere.env.ingest();
    assert_eq!(nowhere.runs().len(), 1);

    let (seen_elsewhere, seen_nowhere) =
        (fork_fields(&elsewhere).await, fork_fields(&nowhere).await);
    assert_eq!(
        serde_json::to_string(&seen_elsewhere).unwrap(),
        serde_json::to_string(&seen_nowhere).unwrap()
    );
    assert_eq!(
        seen_nowhere["inheritedHistory"],
        json!({"value": "not_granted", "source": "parent_file"})
    );
    assert_eq!(
        seen_nowhere["gapReasons"],
        json!(["fork_parent_not_granted"])
    );
    assert_eq!(seen_nowhere["gap"], true);
}
