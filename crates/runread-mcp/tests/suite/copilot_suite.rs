//! Every tool on real GitHub Copilot CLI session files (`fixtures/copilot/1.0.102`, written by
//! Copilot CLI 1.0.102), through MCP with a real client, each answer checked against a plain read
//! of the same file (never runread's parser): history is the run's prompt and the main agent's
//! messages — text and tool names, never reasoning, arguments, outputs or the subagent's events;
//! the answer is the run's last main-agent message, and a length cut-off is `unknown`; known
//! secrets are masked; metadata names the configured and the observed model and the CLI's version;
//! the work state shows a subagent as the run's child.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use serde_json::{Value, json};

use crate::support;
use crate::support::Served;

const SECRET: &str = "ghp_copilotTEST0123456789abcdefABCDEF0123";

async fn serve(fixtures: &[&str]) -> Served {
    support::serve_fixtures(runread_testkit::Env::place_copilot, fixtures, SECRET).await
}

/// Whether a line of the file is the main agent's (not a subagent's).
fn main_agent(v: &Value) -> bool {
    v["agentId"].is_null()
        && v["data"]["parentToolCallId"].is_null()
        && (v["type"] != "user.message" || v["data"]["source"].is_null())
}

/// The file's conversation read with plain JSON: each main-agent `user.message` and
/// `assistant.message`, in file order, as `(type, text, tool names)`.
fn messages(path: &str) -> Vec<(String, String, Vec<String>)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "user.message" || v["type"] == "assistant.message")
        .filter(main_agent)
        .map(|v| {
            let tools = v["data"]["toolRequests"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect();
            (
                v["type"].as_str().unwrap().to_owned(),
                v["data"]["content"].as_str().unwrap().to_owned(),
                tools,
            )
        })
        .collect()
}

/// The messages of the run whose prompt is `prompt`: from it to the next prompt.
fn run_messages(path: &str, prompt: &str) -> Vec<(String, String, Vec<String>)> {
    let all = messages(path);
    let start = all
        .iter()
        .position(|(k, t, _)| k == "user.message" && t == prompt)
        .unwrap();
    let mut want = vec![all[start].clone()];
    want.extend(
        all[start + 1..]
            .iter()
            .take_while(|(k, _, _)| k != "user.message")
            .cloned(),
    );
    want
}

#[tokio::test]
async fn history_is_the_prompt_and_the_main_agents_messages_never_reasoning_arguments_or_outputs() {
    let s = serve(&["tool-then-answer", "continue-unicode", "subagent"]).await;
    let runs = s.runs();
    assert_eq!(runs.len(), 5);
    for run in runs {
        let (c, target) = s.client(&run).await;
        let events = c.read_history(&target, Some(2)).await.unwrap();
        let prompt = runread_testkit::prompt(&run).unwrap();
        let want = run_messages(&run.session_path, &prompt);
        assert_eq!(events.len(), want.len(), "{prompt}: {events:?}");
        for (e, (kind, text, tools)) in events.iter().zip(&want) {
            if kind == "assistant.message" {
                assert_eq!(e["role"], "assistant");
                let calls: Vec<&str> = e["toolCalls"]
                    .as_array()
                    .map(|a| a.iter().map(|c| c.as_str().unwrap()).collect())
                    .unwrap_or_default();
                assert_eq!(calls, *tools);
            } else {
                assert_eq!(e["role"], "user");
            }
            assert_eq!(e["text"], text.as_str());
        }
        let text = serde_json::to_string(&events).unwrap();
        assert!(
            !text.contains("I should look at the files first"),
            "reasoning"
        );
        assert!(!text.contains("echo hi && ls -R"), "arguments");
        assert!(!text.contains("A tiny project."), "outputs");
        assert!(!text.contains("current_datetime"), "the transformed prompt");
        assert!(
            !text.contains("Read notes.txt and report"),
            "the subagent's prompt"
        );
        assert!(!text.contains("Reading it."), "the subagent's message");
    }
}

#[tokio::test]
async fn the_answer_is_the_last_main_agent_message_and_a_cut_off_is_unknown() {
    let s = serve(&["length-cutoff", "subagent", "provider-error", "interrupted"]).await;
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let prompt = runread_testkit::prompt(&run).unwrap();
        let got = c.read_final_answer(&target, None, |_| {}).await.unwrap();
        let want = run_messages(&run.session_path, &prompt);
        match prompt.as_str() {
            // Copilot continued a cut reply itself, then kept a third cut reply.
            "Write a long report." | "Write an endless report." => {
                assert_eq!(got.state, "unknown", "{prompt}");
                assert_eq!(got.text, None, "{prompt}");
            }
            // A 400 (`session.error`), two interrupts (`abort`).
            "Bad request." | "Run the slow job." | "Wait for the model." => {
                assert_eq!(got.state, "missing", "{prompt}");
                assert_eq!(got.text, None, "{prompt}");
            }
            _ => {
                let (kind, text, tools) = want.last().unwrap();
                assert_eq!((kind.as_str(), tools.len()), ("assistant.message", 0));
                assert_eq!(got.state, "available", "{prompt}");
                assert_eq!(got.text.as_deref(), Some(text.as_str()), "{prompt}");
            }
        }
    }
}

#[tokio::test]
async fn known_secrets_are_masked_in_history_and_answers() {
    let s = serve(&["secrets"]).await;
    let runs = s.runs();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let (c, target) = s.client(run).await;
        for limit in 1..=4u64 {
            let events = c.read_history(&target, Some(limit)).await.unwrap();
            let all = serde_json::to_string(&events).unwrap();
            assert!(!all.contains(SECRET), "limit {limit}: {all}");
            assert!(all.contains("[redacted]"), "limit {limit}: {all}");
        }
        let answer = c.read_final_answer(&target, Some(7), |_| {}).await.unwrap();
        assert_eq!(answer.state, "available");
        let text = answer.text.unwrap();
        assert!(!text.contains("0123456789abcdefABCDEF"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}

#[tokio::test]
async fn metadata_names_the_configured_and_the_observed_model_and_the_version() {
    let s = serve(&["continue-unicode"]).await;
    let run = s.runs().remove(0);
    let (c, target) = s.client(&run).await;
    let m = c
        .call("read_target_metadata", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    assert_eq!(m["agent"], "copilot");
    assert_eq!(m["cwd"]["value"], s.env.workspace.to_str().unwrap());
    assert_eq!(
        m["runModel"],
        json!({"value": "mock-1", "source": "assistant_messages"})
    );
    assert_eq!(
        m["savedModel"],
        json!({"value": "mock-1", "source": "session_start"})
    );
    assert_eq!(m["agentVersion"]["value"], "1.0.102");
    assert_eq!(m["versionTested"], true);
    assert_eq!(m["usage"]["source"], "usage_records", "{m}");
}

#[tokio::test]
async fn a_subagent_is_the_runs_child() {
    let s = serve(&["subagent", "tool-then-answer"]).await;
    support::the_helper_run_has_one_finished_subagent(&s).await;
}

/// A known secret in every field a Copilot CLI event has that runread reads — the prompt, the
/// model's text, its reasoning, a tool's name, the tool's arguments and output, the model's name,
/// the subagent's name and messages — and no tool, at any page size, lets a 12-byte window of it
/// out: what a reader is shown is masked, what is never shown stays unread.
#[tokio::test]
async fn a_secret_in_every_field_never_reaches_a_reader() {
    const LEAK: &str = "sk-runread-LEAK-0123456789abcdefghijklmn";
    const WINDOW: usize = 12;
    let s = support::serve(
        |env| {
            for f in ["secrets", "subagent"] {
                for path in env.place_copilot(f, std::time::Duration::from_secs(60)) {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let text = text
                        .replace(SECRET, LEAK)
                        .replace("\"bash\"", &format!("\"lookup_{LEAK}\""))
                        .replace("mock-1", &format!("mock-{LEAK}"))
                        .replace("I must not repeat it", &format!("I must not repeat {LEAK}"))
                        .replace("Delegating.", &format!("Delegating {LEAK}."))
                        .replace("\"reader\"", &format!("\"reader-{LEAK}\""))
                        .replace("Reading it.", &format!("Reading {LEAK}."));
                    std::fs::write(&path, text).unwrap();
                    runread_testkit::set_age(&path, std::time::Duration::from_secs(60));
                }
            }
        },
        LEAK,
    )
    .await;
    assert_eq!(s.runs().len(), 3);
    support::no_read_holds_a_piece_of(&s, LEAK, WINDOW).await;
}
