//! The known-secret leaks an outside review found (issue 13, items 1–3), each on a real Pi
//! session (`fixtures/pi/secrets-leaks`, written by Pi 0.73.1, and
//! `fixtures/pi/1.6.0/secrets-leaks`, by Pi 1.6.0: each test runs once per version) read through
//! MCP with a real client:
//!
//! 1. a tool *named* with the secret (`lookup_<secret>`): the name reached readers in
//!    `toolCalls` and `toolName` while the text beside it was masked;
//! 2. a tool result longer than the 8,192-byte event cut: ingest kept 8,192 + 256 bytes, masked
//!    that window and cut the masked text, so a secret straddling the window's end showed its first
//!    39 bytes (and one straddling the cut could be cut inside its mask);
//! 3. a secret split 20/20 between an assistant text and the next tool result: with `limit=1` the
//!    second half came out in clear on the next page.
//!
//! The rule checked everywhere: no 12-byte window of the secret appears in anything a reader
//! receives (structured content or text block), whatever the page size or chunk size.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_mcp::client::Client;

use runread_testkit::{Env, PiVersion, pi_versions};

const SECRET: &str = "sk-runread-LEAK-0123456789abcdefghijklmn";
/// Shortest piece of the secret that counts as leaked.
const WINDOW: usize = 12;

struct Served {
    env: Env,
    serving: runread_testkit::Serving,
}

async fn serve(v: PiVersion) -> Served {
    let env = Env::new();
    env.place(&v.fixture("secrets-leaks"), Duration::from_secs(60));
    env.ingest();
    env.add_secret("leak", SECRET);
    let serving = runread_testkit::serve::mcp(env.service()).await;
    Served { env, serving }
}

impl Served {
    async fn grant_all(&self) -> (Client, Value) {
        let run = self.env.store.runs().unwrap().remove(0);
        let g = self
            .env
            .grant(&run.target.run_id, Feature::ALL.to_vec(), "leaks");
        let c = Client::connect(&self.serving.url, &g.key).await.unwrap();
        (c, serde_json::to_value(&g.grant.target).unwrap())
    }
}

fn assert_no_window(what: &str, received: &str) {
    for start in 0..=SECRET.len() - WINDOW {
        let piece = &SECRET[start..start + WINDOW];
        assert!(
            !received.contains(piece),
            "{what}: bytes {start}..{} of the secret leaked",
            start + WINDOW
        );
    }
}

/// Every page of `read_history` at `limit`, raw (structured content and text block of each).
async fn history_pages(c: &Client, target: &Value, limit: u64) -> Vec<(Value, String)> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..200 {
        let mut args = json!({"target": target, "limit": limit});
        if let Some(cur) = &cursor {
            args["cursor"] = json!(cur);
        }
        let r = c.call("read_history", args).await.unwrap();
        let structured = r.structured.clone();
        cursor = structured["nextCursor"].as_str().map(str::to_owned);
        let eof = structured["eof"] == true;
        pages.push((structured, r.text.clone()));
        if eof || cursor.is_none() {
            return pages;
        }
    }
    panic!("history did not end");
}

pi_versions! {
#[tokio::test]
async fn tool_names_reach_readers_masked_like_the_text_beside_them(v) {
    let s = serve(v).await;
    let (c, target) = s.grant_all().await;
    let events = c.read_history(&target, Some(50)).await.unwrap();
    let call = events
        .iter()
        .find(|e| e["role"] == "assistant" && !e["toolCalls"].as_array().unwrap().is_empty())
        .unwrap();
    assert_eq!(call["toolCalls"], json!(["lookup_[redacted]"]), "{call}");
    let result = events.iter().find(|e| e["role"] == "toolResult").unwrap();
    assert_eq!(result["toolName"], "lookup_[redacted]", "{result}");
    assert_eq!(
        result["text"], "Tool lookup_[redacted] not found",
        "{result}"
    );
}
}

pi_versions! {
#[tokio::test]
async fn a_secret_straddling_the_event_cut_is_masked_before_the_cut(v) {
    let s = serve(v).await;
    let (c, target) = s.grant_all().await;
    let events = c.read_history(&target, Some(50)).await.unwrap();
    let log = events
        .iter()
        .find(|e| {
            e["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("[build] step 0000"))
        })
        .unwrap();
    let text = log["text"].as_str().unwrap();
    assert_eq!(log["truncated"], true);
    assert!(text.len() <= runread_core::limits::HISTORY_EVENT_MAX_BYTES);
    // The secret starts at byte 8,180 of the body and straddles the cut: it is masked whole
    // first, then the masked text is cut (never inside a mask).
    assert_eq!(
        text.get(8_180..8_190),
        Some("[redacted]"),
        "{}",
        &text[8_100..]
    );
    assert!(
        !text.ends_with("[redacted") && !text.ends_with('['),
        "a mask cut in half"
    );
    assert_no_window("the cut event", text);
    for n in 1..SECRET.len() {
        assert!(
            !text.ends_with(&SECRET[..n]),
            "ends with {n} bytes of the secret"
        );
    }
}
}

pi_versions! {
/// The reviewer's case: ten secrets early in a tool result shorten its masked text by 300 bytes,
/// so a cut at 8,192 bytes of the masked text reached past a masking window that ended inside the
/// eleventh secret (at 8,192 + 256 bytes of the body) and showed its first 39 bytes.
#[tokio::test]
async fn a_secret_beyond_a_masking_window_never_shows_after_the_cut(v) {
    let s = serve(v).await;
    let (c, target) = s.grant_all().await;
    let events = c.read_history(&target, Some(50)).await.unwrap();
    let audit = events
        .iter()
        .find(|e| {
            e["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("token 0: "))
        })
        .unwrap();
    let text = audit["text"].as_str().unwrap();
    assert_no_window("the audit event", text);
    assert!(text.starts_with("token 0: [redacted]\ntoken 1: [redacted]\n"));
    assert_eq!(
        audit["truncated"],
        false,
        "masked whole, it fits: {}",
        text.len()
    );
    assert!(
        text.ends_with("[redacted]\n[audit] end\n"),
        "{}",
        &text[text.len() - 80..]
    );
}
}

pi_versions! {
#[tokio::test]
async fn a_secret_split_across_two_events_is_masked_on_both_sides_of_every_page_boundary(v) {
    let s = serve(v).await;
    let (c, target) = s.grant_all().await;
    for limit in 1..=9u64 {
        let pages = history_pages(&c, &target, limit).await;
        let mut texts = Vec::new();
        for (structured, text) in &pages {
            assert_no_window(
                &format!("limit {limit}, structured"),
                &structured.to_string(),
            );
            assert_no_window(&format!("limit {limit}, text block"), text);
            for e in structured["events"].as_array().unwrap() {
                texts.push(e["text"].as_str().unwrap_or("").to_owned());
            }
        }
        let before = texts
            .iter()
            .find(|t| t.starts_with("The log is clean."))
            .unwrap_or_else(|| panic!("limit {limit}: the assistant text is served"));
        assert_eq!(
            before, "The log is clean. The release token starts with [redacted]",
            "limit {limit}"
        );
        let after = texts
            .iter()
            .find(|t| t.contains("<- end of the token"))
            .unwrap_or_else(|| panic!("limit {limit}: the tool result is served"));
        assert!(
            after.starts_with("[redacted] <- end of the token"),
            "limit {limit}: {after}"
        );
    }
}
}

pi_versions! {
#[tokio::test]
async fn no_tool_lets_a_window_of_the_secret_out(v) {
    let s = serve(v).await;
    let (c, target) = s.grant_all().await;
    let mut received = Vec::new();
    let calls = [
        ("list_granted_targets", json!({})),
        ("get_run", json!({"target": target})),
        ("read_work_state", json!({"target": target})),
        ("read_target_metadata", json!({"target": target})),
        ("list_artifacts", json!({"target": target})),
    ];
    for (tool, args) in calls {
        let r = c.call(tool, args).await.unwrap();
        received.push((tool.to_owned(), r.structured.to_string(), r.text));
    }
    for limit in [4u64, 17, 100, 8_192] {
        let mut chunks = Vec::new();
        c.read_final_answer(&target, Some(limit), |chunk| chunks.push(chunk.to_string()))
            .await
            .unwrap_or_else(|e| panic!("final answer at {limit}: {e:?}"));
        for chunk in chunks {
            received.push((format!("final answer {limit}"), chunk, String::new()));
        }
    }
    for limit in [1u64, 2, 3, 50, 100] {
        for (structured, text) in history_pages(&c, &target, limit).await {
            received.push((format!("history {limit}"), structured.to_string(), text));
        }
    }
    for (what, structured, text) in &received {
        assert_no_window(what, structured);
        assert_no_window(what, text);
    }
}
}

pi_versions! {
/// Issue 13, item 8: anything an agent or a file wrote is labeled untrusted (ids the agent chose
/// included: issue 30, item 4); only runread's own projections are `medium`.
#[tokio::test]
async fn agent_written_text_is_never_labeled_medium(v) {
    let s = serve(v).await;
    let (c, target) = s.grant_all().await;
    let label = |text: &str| {
        text.split_once("trust=\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(t, _)| t.to_owned())
            .unwrap()
    };
    let metadata = c
        .call("read_target_metadata", json!({"target": target}))
        .await
        .unwrap();
    // The models come from the agent's own lines.
    assert_eq!(metadata.structured["runModel"]["value"], "mock/mock-1");
    assert_eq!(label(&metadata.text), "untrusted");
    let artifacts = c
        .call("list_artifacts", json!({"target": target}))
        .await
        .unwrap();
    assert_eq!(label(&artifacts.text), "untrusted");
    // runread's own projections stay medium, and carry no agent-written string: get_run's times
    // are runread's rendering of the instants, not the agent's text.
    let run = c.call("get_run", json!({"target": target})).await.unwrap();
    assert_eq!(label(&run.text), "medium");
    let started = run.structured["startedAt"].as_str().unwrap();
    assert_eq!(
        runread_core::timefmt::rfc3339(runread_core::timefmt::parse_rfc3339(started).unwrap()),
        started
    );
    let work_state = c
        .call("read_work_state", json!({"target": target}))
        .await
        .unwrap();
    assert_eq!(label(&work_state.text), "medium");
    // The listing carries the session's and run's ids, which the agent wrote (issue 30, item 4).
    let listed = c.call("list_granted_targets", json!({})).await.unwrap();
    assert_eq!(label(&listed.text), "untrusted");
}
}
