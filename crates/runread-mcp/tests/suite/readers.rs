//! Readers over real HTTP with rmcp's client: a client configured once with a reader's key reads
//! every run shared with it, one after another, with no new key; a grant to one reader is never
//! another's; rotating and removing a reader cut its key off at its next call, mid-paging too;
//! `list_granted_targets` pages the reader's grants newest first at its bound.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::limits::GRANTED_TARGETS_PAGE_MAX;
use runread_mcp::client::{Client, ClientError};
use runread_store::RunRecord;
use runread_testkit::Env;

const SETTLED: Duration = Duration::from_secs(60);

/// A home holding one settled run of each agent whose answers are served (Pi, Claude Code,
/// Codex, Copilot CLI), served.
struct Shared {
    env: Env,
    runs: Vec<RunRecord>,
    serving: runread_testkit::Serving,
}

impl Shared {
    async fn start() -> Shared {
        let env = Env::new();
        env.place("sample", SETTLED);
        env.place_claude("tool-then-answer", SETTLED);
        env.place_codex("tool-then-answer", SETTLED);
        env.place_copilot("tool-then-answer", SETTLED);
        env.ingest();
        // Each agent whose session file proves an answer (Gemini CLI's never does: see its
        // suite, `gemini_suite`).
        let runs: Vec<RunRecord> = [
            runread_core::Agent::Pi,
            runread_core::Agent::Claude,
            runread_core::Agent::Codex,
            runread_core::Agent::Copilot,
        ]
        .iter()
        .map(|agent| {
            env.store
                .runs()
                .unwrap()
                .into_iter()
                .filter(|r| r.agent == *agent && !r.run.final_lines.is_empty())
                .max_by_key(|r| r.run.final_bytes)
                .unwrap()
        })
        .collect();
        let serving = runread_testkit::serve::mcp(env.service()).await;
        Shared { env, runs, serving }
    }

    fn share(&self, reader: &str, run: &RunRecord) -> runread_service::owner::NewGrant {
        self.env.grant_to(
            reader,
            &run.target.run_id,
            Some(&run.target.session_id),
            vec![Feature::FinalAnswer],
        )
    }

    async fn client(&self, key: &str) -> Client {
        Client::connect(&self.serving.url, key).await.unwrap()
    }

    /// Every string a refusal may not carry: each run's answer and session path, the keys.
    fn assert_no_leak(&self, text: &str, keys: &[&str]) {
        for run in &self.runs {
            let answer = runread_testkit::answer(run).unwrap();
            assert!(!text.contains(&answer[..answer.len().min(40)]), "{text}");
            assert!(!text.contains(&run.session_path), "{text}");
        }
        for k in keys {
            assert!(!text.contains(k), "{text}");
        }
    }
}

fn target(run: &RunRecord) -> Value {
    serde_json::to_value(&run.target).unwrap()
}

fn refused(r: Result<impl std::fmt::Debug, ClientError>) -> (String, String) {
    match r {
        Err(ClientError::Refused { code, message }) => (code, message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A client's targets, newest first, page by page.
async fn listed(c: &Client) -> Vec<Value> {
    c.granted_targets().await.unwrap()
}

#[tokio::test]
async fn one_reader_configured_once_reads_each_run_shared_with_it_until_its_grant_is_revoked() {
    let s = Shared::start().await;
    let reader = s.env.add_reader("claude-code");
    let c = s.client(&reader.key).await;
    // Configured before anything is shared: admitted, every read tool listed, nothing readable.
    assert_eq!(
        c.tool_names().await.unwrap(),
        crate::support::every_read_tool()
    );
    assert_eq!(
        refused(c.call("list_granted_targets", json!({})).await).0,
        "not_granted"
    );
    let mut grants = vec![];
    for (n, run) in s.runs.iter().enumerate() {
        let g = s.share("claude-code", run);
        assert!(g.key.is_none(), "a reader's grant makes no new key");
        assert_eq!(g.reader.id, reader.reader.id);
        grants.push(g);
        // The same client, not reconnected, not reconfigured: the newest grant first.
        let targets = listed(&c).await;
        assert_eq!(targets.len(), n + 1);
        assert_eq!(targets[0]["target"], target(run));
        let line = &targets[0]["run"];
        assert_eq!(line["agent"], run.agent.as_str());
        assert_eq!(line["status"], "completed");
        assert!(
            line["description"]
                .as_str()
                .unwrap()
                .starts_with(run.agent.product()),
            "{line}"
        );
        let answer = c
            .read_final_answer(&target(run), None, |_| {})
            .await
            .unwrap();
        assert_eq!(
            answer.text.as_deref(),
            Some(runread_testkit::answer(run).unwrap().as_str())
        );
    }
    assert_eq!(
        c.tool_names().await.unwrap(),
        crate::support::every_read_tool()
    );
    // One grant revoked: that run is refused, the reader's others still read.
    assert!(
        s.env
            .store
            .revoke_grant(&grants[1].grant.id, runread_core::timefmt::now_ms())
            .unwrap()
    );
    let (code, message) = refused(c.read_final_answer(&target(&s.runs[1]), None, |_| {}).await);
    assert_eq!(code, "grant_revoked");
    s.assert_no_leak(&format!("{code} {message}"), &[&reader.key]);
    let others: Vec<&RunRecord> = s
        .runs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, r)| r)
        .collect();
    for run in &others {
        assert!(
            c.read_final_answer(&target(run), None, |_| {})
                .await
                .is_ok()
        );
    }
    let targets: Vec<Value> = listed(&c)
        .await
        .into_iter()
        .map(|t| t["target"].clone())
        .collect();
    // The newest grant first.
    let want: Vec<Value> = others.iter().rev().map(|r| target(r)).collect();
    assert_eq!(targets, want);
    // The audit names the reader of every call.
    let page = s
        .env
        .store
        .audit_page(&runread_store::AuditFilter::default(), 1_000)
        .unwrap();
    assert!(!page.rows.is_empty());
    assert!(
        page.rows
            .iter()
            .all(|(m, _)| m.reader_id.as_deref() == Some(reader.reader.id.as_str()))
    );
}

#[tokio::test]
async fn a_grant_to_one_reader_is_refused_to_another_exactly_as_a_run_that_does_not_exist() {
    let s = Shared::start().await;
    let a = s.env.add_reader("a");
    let b = s.env.add_reader("b");
    s.share("a", &s.runs[0]);
    s.share("b", &s.runs[1]);
    let cb = s.client(&b.key).await;
    let theirs = refused(
        cb.read_final_answer(&target(&s.runs[0]), None, |_| {})
            .await,
    );
    let mut missing = target(&s.runs[0]);
    missing["runId"] = json!("no-such-run");
    let nowhere = refused(cb.read_final_answer(&missing, None, |_| {}).await);
    assert_eq!(theirs.0, "not_granted");
    assert_eq!(
        theirs, nowhere,
        "another reader's run and no run at all look the same"
    );
    s.assert_no_leak(&format!("{theirs:?}"), &[&a.key, &b.key]);
    // Each lists only its own.
    let ca = s.client(&a.key).await;
    let mine: Vec<Value> = listed(&ca)
        .await
        .into_iter()
        .map(|t| t["target"].clone())
        .collect();
    assert_eq!(mine, [target(&s.runs[0])]);
    // get_run's answer for another reader's run is the one it gives for no run.
    let status = |t: Value| {
        let cb = &cb;
        async move {
            cb.call("get_run", json!({"target": t}))
                .await
                .unwrap()
                .structured
        }
    };
    assert_eq!(status(target(&s.runs[0])).await, status(missing).await);
}

#[tokio::test]
async fn rotating_or_removing_a_reader_refuses_its_old_key_at_the_next_call_even_mid_paging() {
    let s = Shared::start().await;
    let first = s.env.add_reader("ci");
    let run = &s.runs[0];
    s.share("ci", run);
    let c = s.client(&first.key).await;
    // Mid-paging: the first chunk read, its cursor in hand.
    let chunk = c
        .call(
            "read_final_answer",
            json!({"target": target(run), "limit": runread_core::limits::FINAL_ANSWER_CHUNK_MIN_BYTES}),
        )
        .await
        .unwrap();
    let cursor = chunk.structured["nextCursor"].as_str().unwrap().to_owned();
    let rotated = s
        .env
        .owner()
        .rotate_reader("ci", runread_core::timefmt::now_ms())
        .unwrap();
    assert_ne!(rotated.key, first.key);
    let next = json!({"target": target(run), "cursor": cursor, "limit": runread_core::limits::FINAL_ANSWER_CHUNK_MIN_BYTES});
    match c.call("read_final_answer", next.clone()).await {
        Err(ClientError::Transport(e)) => {
            assert!(e.contains("invalid_key") || e.contains("401"), "{e}");
            s.assert_no_leak(&e, &[&first.key, &rotated.key]);
        }
        other => panic!("the old key after a rotation: {other:?}"),
    }
    // The new key carries on from the same cursor: the grants were kept.
    let c2 = s.client(&rotated.key).await;
    assert!(c2.call("read_final_answer", next.clone()).await.is_ok());
    // Removed: the key is refused, and the grant is revoked (so a new reader of that name gets
    // nothing of it).
    s.env
        .owner()
        .remove_reader("ci", runread_core::timefmt::now_ms())
        .unwrap();
    match c2.call("read_final_answer", next).await {
        Err(ClientError::Transport(e)) => {
            assert!(e.contains("invalid_key") || e.contains("401"), "{e}");
            s.assert_no_leak(&e, &[&rotated.key]);
        }
        other => panic!("a removed reader's key: {other:?}"),
    }
    assert!(
        s.env
            .store
            .grants()
            .unwrap()
            .iter()
            .all(|g| g.revoked_at_ms.is_some())
    );
    let again = s.env.add_reader("ci");
    let c3 = s.client(&again.key).await;
    assert_eq!(
        c3.tool_names().await.unwrap(),
        crate::support::every_read_tool()
    );
    let (code, _) = refused(c3.read_final_answer(&target(run), None, |_| {}).await);
    assert_eq!(code, "not_granted");
}

#[tokio::test]
async fn list_granted_targets_pages_newest_first_at_its_bound() {
    let s = Shared::start().await;
    let reader = s.env.add_reader("many");
    // N + 1 live grants (the same runs shared again, each a grant of its own).
    let n = GRANTED_TARGETS_PAGE_MAX;
    let mut ids = vec![];
    for i in 0..=n {
        ids.push(s.share("many", &s.runs[i % s.runs.len()]).grant.id);
    }
    let c = s.client(&reader.key).await;
    let page = |args: Value| {
        let c = &c;
        async move { c.call("list_granted_targets", args).await }
    };
    let full = page(json!({"limit": n})).await.unwrap().structured;
    assert_eq!(full["targets"].as_array().unwrap().len(), n);
    let cursor = full["nextCursor"].as_str().unwrap().to_owned();
    let rest = page(json!({"limit": n, "cursor": cursor}))
        .await
        .unwrap()
        .structured;
    assert_eq!(rest["targets"].as_array().unwrap().len(), 1);
    assert_eq!(rest["nextCursor"], Value::Null);
    let (code, _) = refused(page(json!({"limit": n + 1})).await);
    assert_eq!(code, "invalid_arguments");
    let (code, _) = refused(page(json!({"limit": 0})).await);
    assert_eq!(code, "invalid_arguments");
    // Newest first: the order of the grants made, reversed (one millisecond's, newest id
    // first), and the default page.
    let first = page(json!({})).await.unwrap().structured;
    assert_eq!(
        first["targets"].as_array().unwrap().len(),
        runread_core::limits::GRANTED_TARGETS_PAGE_DEFAULT
    );
    let all = listed(&c).await;
    assert_eq!(all.len(), n + 1);
    // In the store's order: newest first (grants of one millisecond by id).
    let stored: Vec<Value> = s
        .env
        .store
        .reader_of_key(
            &runread_core::key::hash(&reader.key),
            runread_core::timefmt::now_ms(),
        )
        .unwrap()
        .unwrap()
        .1
        .into_iter()
        .map(|g| serde_json::to_value(&g.target).unwrap())
        .collect();
    let shown: Vec<Value> = all.iter().map(|t| t["target"].clone()).collect();
    assert_eq!(shown, stored);
    // A grant added meanwhile makes the old cursor stale rather than skip or repeat one.
    s.share("many", &s.runs[0]);
    let (code, _) = refused(page(json!({"limit": n, "cursor": full["nextCursor"]})).await);
    assert_eq!(code, "invalid_cursor");
    // Another reader's cursor is not this one's.
    let other = s.env.add_reader("other");
    s.share("other", &s.runs[0]);
    s.share("other", &s.runs[1]);
    let co = s.client(&other.key).await;
    let theirs = co
        .call("list_granted_targets", json!({"limit": 1}))
        .await
        .unwrap()
        .structured;
    let (code, _) = refused(page(json!({"cursor": theirs["nextCursor"]})).await);
    assert_eq!(code, "invalid_cursor");
}

#[tokio::test]
async fn a_reader_with_no_grant_sees_every_tool_and_each_call_is_refused_as_before() {
    let s = Shared::start().await;
    let reader = s.env.add_reader("orchestrator");
    let c = s.client(&reader.key).await;
    let names = c.tool_names().await.unwrap();
    assert_eq!(names, crate::support::every_read_tool());
    // A run that exists, granted to nobody: each tool's answer is the one a missing run gets.
    let t = target(&s.runs[0]);
    for name in &names {
        let name = name.as_str();
        // A reader with no grant may ask the owner: filed, and nothing said of any run.
        if name == "request_access" || name == "wait_for_access" {
            let args = match name {
                "request_access" => json!({}),
                _ => json!({"requestId": "q-00", "timeoutSeconds": 1}),
            };
            let got = c.call(name, args).await.unwrap().structured;
            let expected = if name == "request_access" {
                "pending"
            } else {
                "expired"
            };
            assert_eq!(got["state"], expected, "{got}");
            s.assert_no_leak(&got.to_string(), &[&reader.key, &s.runs[0].target.run_id]);
            continue;
        }
        let args = match name {
            "list_granted_targets" => json!({}),
            "read_artifact" => {
                json!({"target": t, "artifactId": "a".repeat(16), "version": "b".repeat(64)})
            }
            _ => json!({"target": t}),
        };
        let answer = c.call(name, args).await;
        if name == "get_run" || name == "wait_for_run" {
            // The status tools answer a run that is not granted exactly as one that does not
            // exist, at once.
            let got = answer.unwrap().structured;
            assert_eq!(got["found"], false, "{got}");
            s.assert_no_leak(&got.to_string(), &[&reader.key]);
            continue;
        }
        let (code, message) = refused(answer);
        assert_eq!(code, "not_granted", "{name}");
        s.assert_no_leak(&message, &[&reader.key]);
    }
}
