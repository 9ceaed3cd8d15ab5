//! The redaction property across every tool (issue 13): random secrets planted at random offsets
//! in random fields of real Pi sessions — text blocks, tool names, tool-call names, thinking,
//! tool arguments, models, and split across two consecutive events — read back through MCP with
//! random page sizes and chunk limits. Zero secret bytes out: no 8-byte window of a planted
//! secret appears in anything a reader receives.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{Value, json};

use runread_core::Feature;
use runread_mcp::client::Client;

use runread_testkit::Env;

/// Shortest piece of a planted secret that counts as leaked. Secrets are drawn from `[A-Z0-9]`,
/// which the fixtures' text never holds 8 of in a row by chance of the draw.
const WINDOW: usize = 8;
/// The Pi sessions secrets are planted in: these of every Pi version with fixtures.
fn fixtures() -> Vec<String> {
    runread_testkit::PI_VERSIONS
        .iter()
        .flat_map(|v| {
            ["sample", "multi-run", "secrets-history", "secrets-leaks"].map(|n| v.fixture(n))
        })
        .collect()
}
/// Cases per test run; `RUNREAD_PROPTEST_CASES` runs more (`scripts/fuzz` runs 400).
const CASES: u32 = 32;

/// Where a secret goes.
#[derive(Debug, Clone)]
enum Plant {
    /// Inside a string field of the message line at `line` (index among message lines), picked by
    /// `field`, at character position `at` (scaled to the string's length).
    Field {
        line: usize,
        field: usize,
        at: usize,
    },
    /// Split at byte `k` (scaled) between the end of one message's text and the start of the
    /// next message's text.
    Split { line: usize, k: usize },
}

#[derive(Debug, Clone)]
struct Case {
    fixture: usize,
    secrets: Vec<String>,
    plants: Vec<Plant>,
    history_limit: u64,
    chunk_limit: u64,
}

fn case() -> impl Strategy<Value = Case> {
    let secret = proptest::string::string_regex("[A-Z0-9]{8,48}").unwrap();
    let plant = prop_oneof![
        (0usize..64, 0usize..16, 0usize..1000).prop_map(|(line, field, at)| Plant::Field {
            line,
            field,
            at
        }),
        (0usize..64, 1usize..1000).prop_map(|(line, k)| Plant::Split { line, k }),
    ];
    (
        0..fixtures().len(),
        proptest::collection::vec(secret, 1..4),
        proptest::collection::vec(plant, 1..6),
        1u64..=100,
        4u64..=8192,
    )
        .prop_map(
            |(fixture, secrets, plants, history_limit, chunk_limit)| Case {
                fixture,
                secrets,
                plants,
                history_limit,
                chunk_limit,
            },
        )
}

/// JSON pointers of every string leaf under `v` (depth first), with their values.
fn string_paths(v: &Value, at: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((at, s.clone())),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                string_paths(x, format!("{at}/{i}"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                string_paths(x, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// Values that give a line its shape: planting into them would make it another kind of line.
const SHAPE: &[&str] = &[
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "text",
    "toolCall",
    "thinking",
    "image",
    "stop",
    "toolUse",
    "length",
    "error",
    "aborted",
];

fn insert_at(s: &mut String, at: usize, piece: &str) {
    let mut i = if s.is_empty() { 0 } else { at % (s.len() + 1) };
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    s.insert_str(i, piece);
}

/// The first or last text of a message: its string content, or its first/last text block.
fn message_text(v: &mut Value, last: bool) -> Option<&mut String> {
    let content = v.get_mut("message")?.get_mut("content")?;
    if content.is_string() {
        return match content {
            Value::String(s) => Some(s),
            _ => None,
        };
    }
    let blocks = content.as_array_mut()?;
    let mut texts = blocks
        .iter_mut()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| match b.get_mut("text") {
            Some(Value::String(s)) => Some(s),
            _ => None,
        });
    if last { texts.last() } else { texts.next() }
}

/// The session file of `fixture` with the case's secrets planted, for `Env::place`'s workspace.
fn planted(c: &Case) -> Vec<u8> {
    let src = runread_testkit::fixture_session(&fixtures()[c.fixture]);
    let text = std::fs::read_to_string(src).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, v)| v["type"] == "message")
        .map(|(i, _)| i)
        .collect();
    // One plant per message: two in one text could put a secret's head before another
    // secret, which is then not followed by its own tail (text that is no secret at all).
    let mut used = std::collections::HashSet::new();
    for (n, plant) in c.plants.iter().enumerate() {
        let secret = &c.secrets[n % c.secrets.len()];
        match plant {
            Plant::Field { line, field, at } => {
                let i = messages[line % messages.len()];
                if !used.insert(i) {
                    continue;
                }
                // Only the message object's strings, and never the ones that give it its shape.
                let mut fields = Vec::new();
                string_paths(&lines[i], String::new(), &mut fields);
                let fields: Vec<String> = fields
                    .into_iter()
                    .filter(|(p, v)| p.starts_with("/message/") && !SHAPE.contains(&v.as_str()))
                    .map(|(p, _)| p)
                    .collect();
                if fields.is_empty() {
                    continue;
                }
                let path = &fields[field % fields.len()];
                if let Some(Value::String(s)) = lines[i].pointer_mut(path) {
                    insert_at(s, *at, secret);
                }
            }
            Plant::Split { line, k } => {
                let at = line % messages.len();
                let Some(&next) = messages.get(at + 1) else {
                    continue;
                };
                let k = 1 + k % (secret.len() - 1);
                let (head, tail) = secret.split_at(k);
                let i = messages[at];
                if used.contains(&i) || used.contains(&next) {
                    continue;
                }
                let (a, b) = lines.split_at_mut(next);
                let (Some(first), Some(second)) = (
                    message_text(&mut a[i], true),
                    message_text(&mut b[0], false),
                ) else {
                    continue;
                };
                first.push_str(head);
                second.insert_str(0, tail);
                used.insert(i);
                used.insert(next);
            }
        }
    }
    let mut out = String::new();
    for l in &lines {
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

fn assert_no_window(case: &Case, what: &str, received: &str) {
    for s in &case.secrets {
        for start in 0..=s.len() - WINDOW {
            let piece = &s[start..start + WINDOW];
            if let Some(at) = received.find(piece) {
                let around =
                    &received.as_bytes()[at.saturating_sub(150)..(at + 150).min(received.len())];
                panic!(
                    "{what}: {piece} of secret {s} leaked: …{}… (case {case:?})",
                    String::from_utf8_lossy(around)
                );
            }
        }
    }
}

async fn check(case: &Case) {
    let env = Env::new();
    let bytes = runread_testkit::relocated(&planted(case), env.workspace.to_str().unwrap());
    let path = env.sessions.join("planted.jsonl");
    std::fs::write(&path, bytes).unwrap();
    runread_testkit::set_age(&path, Duration::from_secs(60));
    env.ingest();
    for (n, s) in case.secrets.iter().enumerate() {
        env.add_secret(&format!("s{n}"), s);
    }
    let serving = runread_testkit::serve::mcp(env.service()).await;
    let url = serving.url.clone();
    for run in env.store.runs().unwrap() {
        let g = env.grant_in(
            &run.target.run_id,
            Some(&run.target.session_id),
            Feature::ALL.to_vec(),
            "prop",
        );
        let c = Client::connect(&url, &g.key).await.unwrap();
        let target = serde_json::to_value(&g.grant.target).unwrap();
        let mut received: Vec<(String, String)> = Vec::new();
        for (tool, args) in [
            ("list_granted_targets", json!({})),
            ("get_run", json!({"target": target})),
            ("read_work_state", json!({"target": target})),
            ("read_target_metadata", json!({"target": target})),
            ("list_artifacts", json!({"target": target})),
        ] {
            let r = c.call(tool, args).await.unwrap();
            received.push((format!("{tool}: {}", r.structured), r.text));
        }
        let mut cursor: Option<String> = None;
        for _ in 0..500 {
            let mut args = json!({"target": target, "limit": case.history_limit});
            if let Some(cur) = &cursor {
                args["cursor"] = json!(cur);
            }
            let r = c.call("read_history", args).await.unwrap();
            cursor = r.structured["nextCursor"].as_str().map(str::to_owned);
            let eof = r.structured["eof"] == true;
            received.push((format!("read_history: {}", r.structured), r.text));
            if eof || cursor.is_none() {
                break;
            }
        }
        let mut chunks = Vec::new();
        // A run without a readable answer reads as a state, not a refusal.
        let _ = c
            .read_final_answer(&target, Some(case.chunk_limit), |v| {
                chunks.push(v.to_string())
            })
            .await;
        received.extend(
            chunks
                .into_iter()
                .map(|c| (format!("read_final_answer: {c}"), String::new())),
        );
        for (structured, text) in &received {
            assert_no_window(case, "structured content", structured);
            assert_no_window(case, "text block", text);
        }
    }
}

#[test]
fn no_planted_secret_leaves_through_any_tool_at_any_page_or_chunk_size() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let cases = std::env::var("RUNREAD_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES);
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        ..ProptestConfig::default()
    });
    runner
        .run(&case(), |c| {
            rt.block_on(check(&c));
            Ok(())
        })
        .unwrap();
}
