//! `read_history`'s read budget at its edge: a page reads at most `HISTORY_PAGE_READ_MAX_BYTES`
//! of session lines and ends early rather than read more, its next page starting where it ended.
//! The session is built here (lines of exact sizes), in Pi's v3 format.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::limits::HISTORY_PAGE_READ_MAX_BYTES;
use runread_service::tools;

use runread_testkit::Env;

fn line(id: &str, parent: Option<&str>, message: Value) -> String {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-12-01T10:00:00.000Z",
           "message": message})
    .to_string()
}

fn tool_call(id: &str, parent: &str) -> String {
    line(
        id,
        Some(parent),
        json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": "bash",
               "arguments": {}}], "stopReason": "toolUse"}),
    )
}

fn tool_result(id: &str, parent: &str, text_bytes: usize) -> String {
    line(
        id,
        Some(parent),
        json!({"role": "toolResult", "toolName": "bash",
               "content": [{"type": "text", "text": "r".repeat(text_bytes)}]}),
    )
}

/// A run whose page-able lines (prompt, three tool calls and three big results) add up to
/// exactly `total` bytes; then the final answer.
fn session(cwd: &str, total: usize) -> String {
    let header = json!({"type": "session", "version": 3, "id": "limits-session", "cwd": cwd,
                        "timestamp": "2026-12-01T10:00:00.000Z"})
    .to_string();
    let u = line(
        "u1",
        None,
        json!({"role": "user", "content": "read three big files"}),
    );
    let calls = [
        tool_call("c1", "u1"),
        tool_call("c2", "r1"),
        tool_call("c3", "r2"),
    ];
    let big = 5 * 1024 * 1024;
    let r1 = tool_result("r1", "c1", big);
    let r2 = tool_result("r2", "c2", big);
    let fixed: usize = u.len() + calls.iter().map(String::len).sum::<usize>() + r1.len() + r2.len();
    let r3_empty = tool_result("r3", "c3", 0).len();
    let r3 = tool_result("r3", "c3", total - fixed - r3_empty);
    let fin = line(
        "fin",
        Some("r3"),
        json!({"role": "assistant", "content": [{"type": "text", "text": "all read"}],
               "stopReason": "stop"}),
    );
    let lines = [
        header,
        u,
        calls[0].clone(),
        r1,
        calls[1].clone(),
        r2,
        calls[2].clone(),
        r3,
        fin,
    ];
    lines.join("\n") + "\n"
}

fn first_page_sizes(total: usize) -> (usize, Value) {
    let env = Env::new();
    let path = env.sessions.join("limits.jsonl");
    std::fs::write(&path, session(env.workspace.to_str().unwrap(), total)).unwrap();
    runread_testkit::set_age(&path, Duration::from_secs(60));
    env.ingest();
    let run = env.store.runs().unwrap().remove(0);
    let svc = env.service();
    let g = env.grant(&run.target.run_id, vec![Feature::History], "t");
    let ctx = Arc::new(svc.admit_key(&[g.key.as_bytes()]).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = |args: Value| {
        rt.block_on(svc.call(ctx.clone(), tools::READ_HISTORY, args, None))
            .unwrap()
            .labeled
            .structured
    };
    let page = call(json!({"target": run.target, "limit": 100}));
    let n = page["events"].as_array().unwrap().len();
    let next = call(json!({"target": run.target, "limit": 100,
                           "cursor": page["nextCursor"].as_str().unwrap()}));
    (n, next)
}

#[test]
fn a_page_reads_up_to_its_byte_budget_and_ends_before_one_byte_more() {
    // Exactly the budget: the seven lines fit; the final answer (one more line) does not.
    let (n, next) = first_page_sizes(HISTORY_PAGE_READ_MAX_BYTES);
    assert_eq!(n, 7);
    let events = next["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["text"], "all read");
    assert_eq!(next["eof"], true);
    // One byte more: the third big result no longer fits; it opens the next page.
    let (n, next) = first_page_sizes(HISTORY_PAGE_READ_MAX_BYTES + 1);
    assert_eq!(n, 6);
    let events = next["events"].as_array().unwrap();
    assert_eq!(events[0]["sequence"], 7);
    assert_eq!(events[0]["toolName"], "bash");
}

/// `ANSWER_CONTEXT_READ_MAX_BYTES` at its edge: the texts before an answer are read as masking
/// context within the budget; one byte more and that context is unknown, so the answer's start is
/// masked conservatively where it could end a secret begun before it.
#[test]
fn an_answers_masking_context_is_read_up_to_its_budget_and_masked_conservatively_beyond() {
    use runread_core::limits::ANSWER_CONTEXT_READ_MAX_BYTES;
    const SECRET: &str = "SECRETXYZ123";
    let answer_of = |total: usize| {
        let env = Env::new();
        let cwd = env.workspace.to_str().unwrap().to_owned();
        // Results whose text is tiny but whose lines are big (tool details Pi keeps).
        let header =
            json!({"type": "session", "version": 3, "id": "ctx-session", "cwd": cwd}).to_string();
        let u = line("u1", None, json!({"role": "user", "content": "q"}));
        let result = |id: &str, parent: &str, pad: usize| {
            line(
                id,
                Some(parent),
                json!({"role": "toolResult", "toolName": "bash",
                       "content": [{"type": "text", "text": "ab"}],
                       "details": {"pad": "p".repeat(pad)}}),
            )
        };
        let calls = [
            tool_call("c1", "u1"),
            tool_call("c2", "r1"),
            tool_call("c3", "r2"),
        ];
        let big = 5 * 1024 * 1024;
        let (r1, r2) = (result("r1", "c1", big), result("r2", "c2", big));
        // The context read: the prompt and the three results (tool calls carry no text).
        let fixed = u.len() + r1.len() + r2.len();
        let r3 = result("r3", "c3", total - fixed - result("r3", "c3", 0).len());
        let fin = line(
            "fin",
            Some("r3"),
            json!({"role": "assistant", "content": [{"type": "text", "text": "XYZ123 is the tail"}],
                   "stopReason": "stop"}),
        );
        let text = [
            header,
            u,
            calls[0].clone(),
            r1,
            calls[1].clone(),
            r2,
            calls[2].clone(),
            r3,
            fin,
        ]
        .join("\n")
            + "\n";
        let path = env.sessions.join("ctx.jsonl");
        std::fs::write(&path, text).unwrap();
        runread_testkit::set_age(&path, Duration::from_secs(60));
        env.ingest();
        env.add_secret("s", SECRET);
        let run = env.store.runs().unwrap().remove(0);
        let svc = env.service();
        let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "t");
        let ctx = Arc::new(svc.admit_key(&[g.key.as_bytes()]).unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let out = rt
            .block_on(svc.call(
                ctx,
                tools::READ_FINAL_ANSWER,
                json!({"target": run.target}),
                None,
            ))
            .unwrap()
            .labeled
            .structured;
        out["text"].as_str().unwrap().to_owned()
    };
    // Within the budget the text before is read: "…ab" + "XYZ123" is no secret.
    assert_eq!(
        answer_of(ANSWER_CONTEXT_READ_MAX_BYTES),
        "XYZ123 is the tail"
    );
    // Beyond it the text before is unknown: "XYZ123" could end the secret.
    assert_eq!(
        answer_of(ANSWER_CONTEXT_READ_MAX_BYTES + 1),
        "[redacted] is the tail"
    );
}
