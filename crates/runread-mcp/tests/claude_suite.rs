//! Every tool on real Claude Code sessions (`fixtures/claude`, written by Claude Code 2.1.328),
//! through MCP with a real client: answers are exactly what Claude Code reported as each run's
//! result, history is messages rebuilt from Claude Code's one-line-per-block records, known
//! secrets are masked across those events, metadata says what the session records with its
//! source, and the work state shows Claude Code's subagents as children.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::time::Duration;

use serde_json::{Value, json};

const SECRET: &str = "sk-claude-TEST-0123456789abcdef";

mod support;

use runread_testkit::{CLAUDE_FIXTURES, claude_steps};
use support::Served;

async fn serve(fixtures: &[&str]) -> Served {
    support::serve(
        |env| {
            for f in fixtures {
                env.place_claude(f, Duration::from_secs(60));
            }
        },
        SECRET,
    )
    .await
}

#[tokio::test]
async fn every_answer_read_over_mcp_is_what_claude_code_reported() {
    // Every recording but `secrets`, whose answers are served masked (its own test below).
    support::every_answer_is_what_the_agent_reported(
        CLAUDE_FIXTURES,
        claude_steps,
        |env, f| drop(env.place_claude(f, Duration::from_secs(60))),
        SECRET,
    )
    .await;
}

#[tokio::test]
async fn history_is_messages_rebuilt_from_claude_codes_one_line_per_block_records() {
    let s = serve(&["edit-file", "tool-then-answer"]).await;
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let events = c.read_history(&target, Some(2)).await.unwrap();
        let roles: Vec<&str> = events.iter().map(|e| e["role"].as_str().unwrap()).collect();
        let calls: Vec<Value> = events.iter().map(|e| e["toolCalls"].clone()).collect();
        let text = serde_json::to_string(&events).unwrap();
        if run
            .run
            .preview
            .as_deref()
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
    let s = serve(&["tool-then-answer"]).await;
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
        json!({"value": "2.1.328", "source": "prompt_line"})
    );
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
        if run
            .run
            .preview
            .as_deref()
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
