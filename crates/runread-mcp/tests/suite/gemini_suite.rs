//! Every tool on real Gemini CLI chat files (`fixtures/gemini/0.61.0`, written by Gemini CLI
//! 0.61.0), through MCP with a real client, each answer checked against a plain read of the same
//! file (never runread's parser): history is each record once, as last written — prompts, model
//! text and tool names, never thoughts, arguments or outputs; no answer is served (Gemini CLI
//! records no end of a response: `unknown`); known secrets are masked; metadata names the models
//! the records name and no configured model or version (the file records none); the work state
//! shows a subagent as the run's child.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::support;
use crate::support::Served;

const SECRET: &str = "AIzaSy-gemini-TEST-0123456789abcdef";

async fn serve(fixtures: &[&str]) -> Served {
    support::serve_fixtures(runread_testkit::Env::place_gemini, fixtures, SECRET).await
}

/// The file's message records as Gemini CLI's loader leaves them, read with plain JSON: each id
/// once, as last written, in the order of the final message list; `(type, text, tool names)`.
fn records(path: &str) -> Vec<(String, String, Vec<String>)> {
    let mut order: Vec<String> = Vec::new();
    let mut last: HashMap<String, Value> = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(id) = v["id"].as_str() {
            if !order.iter().any(|o| o == id) {
                order.push(id.to_owned());
            }
            last.insert(id.to_owned(), v);
        } else if let Some(list) = v["$set"]["messages"].as_array() {
            order = list
                .iter()
                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                .collect();
        }
    }
    order
        .iter()
        .filter_map(|id| last.get(id))
        .map(|v| {
            let text = match &v["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter(|p| p["thought"] != true)
                    .filter_map(|p| p["text"].as_str())
                    .collect(),
                _ => String::new(),
            };
            let tools = v["toolCalls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str().map(str::to_owned))
                .collect();
            (v["type"].as_str().unwrap().to_owned(), text, tools)
        })
        .filter(|(kind, text, _)| !(kind == "user" && text.starts_with("<session_context>")))
        .collect()
}

#[tokio::test]
async fn history_is_each_record_once_as_last_written_never_thoughts_arguments_or_outputs() {
    let s = serve(&["tool-then-answer", "continue-unicode"]).await;
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let events = c.read_history(&target, Some(2)).await.unwrap();
        let prompt = runread_testkit::prompt(&run).unwrap();
        // The run's records in the plain read: from its prompt to the next prompt.
        let all = records(&run.session_path);
        let start = all
            .iter()
            .position(|(k, t, _)| k == "user" && *t == prompt)
            .unwrap();
        let mut want = vec![all[start].clone()];
        want.extend(
            all[start + 1..]
                .iter()
                .take_while(|(k, t, _)| k != "user" || t.is_empty())
                .cloned(),
        );
        assert_eq!(events.len(), want.len(), "{prompt}: {events:?}");
        for (e, (kind, text, tools)) in events.iter().zip(&want) {
            match kind.as_str() {
                "gemini" => {
                    assert_eq!(e["role"], "assistant");
                    assert_eq!(e["text"], text.as_str());
                    let calls: Vec<&str> = e["toolCalls"]
                        .as_array()
                        .map(|a| a.iter().map(|c| c.as_str().unwrap()).collect())
                        .unwrap_or_default();
                    assert_eq!(calls, *tools);
                }
                _ if text.is_empty() => assert_eq!(e["role"], "toolResult"),
                _ => {
                    assert_eq!(e["role"], "user");
                    assert_eq!(e["text"], text.as_str());
                }
            }
        }
        let text = serde_json::to_string(&events).unwrap();
        assert!(
            !text.contains("I should look at the files first"),
            "thoughts"
        );
        assert!(!text.contains("echo hi && ls -R"), "arguments");
        assert!(!text.contains("A tiny project."), "outputs");
        assert!(!text.contains("session_context"));
    }
}

#[tokio::test]
async fn no_answer_is_served_the_file_cannot_prove_one() {
    let s = serve(&["tool-then-answer", "length-cutoff", "provider-error"]).await;
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let got = c.read_final_answer(&target, None, |_| {}).await.unwrap();
        assert_eq!(got.state, "unknown");
        assert_eq!(got.text, None);
        let w = c
            .call("read_work_state", json!({"target": target}))
            .await
            .unwrap()
            .structured;
        assert_eq!(w["foreground"]["state"], "unknown", "{w}");
        assert_eq!(w["completionConfirmed"], false);
    }
}

#[tokio::test]
async fn known_secrets_are_masked_in_history() {
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
            assert!(all.contains("[redacted]"), "limit {limit}: {all}");
        }
        let answer = c.read_final_answer(&target, None, |_| {}).await.unwrap();
        assert_eq!(answer.text, None);
    }
}

#[tokio::test]
async fn metadata_names_the_models_the_records_name_and_nothing_the_file_does_not_record() {
    let s = serve(&["continue-unicode"]).await;
    let run = s.runs().remove(0);
    let (c, target) = s.client(&run).await;
    let m = c
        .call("read_target_metadata", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    assert_eq!(m["agent"], "gemini");
    assert_eq!(m["cwd"]["value"], s.env.workspace.to_str().unwrap());
    assert_eq!(
        m["runModel"],
        json!({"value": "gemini-2.5-flash", "source": "gemini_messages"})
    );
    assert_eq!(m["savedModel"]["value"], Value::Null);
    assert_eq!(m["agentVersion"]["value"], Value::Null);
    assert_eq!(m["versionTested"], Value::Null);
}

#[tokio::test]
async fn a_subagent_is_the_runs_child() {
    let s = serve(&["subagent", "tool-then-answer"]).await;
    support::the_helper_run_has_one_finished_subagent(&s).await;
    // The subagent's file moved away: the child has no record, the coverage says so.
    let run = s
        .runs()
        .into_iter()
        .find(|r| {
            runread_testkit::prompt(r)
                .unwrap()
                .starts_with("Ask a helper")
        })
        .unwrap();
    let chats = std::path::Path::new(&run.session_path).parent().unwrap();
    let folder = chats.join(&run.target.session_id);
    std::fs::rename(&folder, chats.join("elsewhere")).unwrap();
    let (c, target) = s.client(&run).await;
    let w = c
        .call("read_work_state", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    assert_ne!(w["coverage"]["subagents"]["state"], "complete", "{w}");
}

/// A known secret in every field a Gemini CLI record has — the prompt, the model's text, its
/// thoughts, a tool's name (in the call and in its result), the tool's arguments and output, the
/// model's name, the subagent's id — and no tool, at any page size, lets a 12-byte window of it
/// out: what a reader is shown is masked, what is never shown stays unread.
#[tokio::test]
async fn a_secret_in_every_field_never_reaches_a_reader() {
    const LEAK: &str = "sk-runread-LEAK-0123456789abcdefghijklmn";
    const WINDOW: usize = 12;
    let s = support::serve(
        |env| {
            for f in ["secrets", "subagent"] {
                for path in env.place_gemini(f, std::time::Duration::from_secs(60)) {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let text = text
                        .replace("AIzaSy-gemini-TEST-0123456789abcdef", LEAK)
                        .replace("run_shell_command", &format!("lookup_{LEAK}"))
                        .replace("gemini-2.5-flash", &format!("gemini-{LEAK}"))
                        .replace("I must not repeat it", &format!("I must not repeat {LEAK}"))
                        .replace("Delegating.", &format!("Delegating {LEAK}."));
                    std::fs::write(&path, text).unwrap();
                    runread_testkit::set_age(&path, std::time::Duration::from_secs(60));
                }
            }
        },
        LEAK,
    )
    .await;
    support::no_read_holds_a_piece_of(&s, LEAK, WINDOW).await;
}
