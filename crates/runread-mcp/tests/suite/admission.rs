//! The admission order, walked over real HTTP with a real MCP client (rmcp's) against a real
//! server and a real Pi session: every refusal has its fixed code and never carries the answer,
//! a path or a key.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_mcp::client::{Client, ClientError};
use runread_store::Grant;
use runread_testkit::Env;

struct Harness {
    env: Env,
    url: String,
    /// The granted run's answer, as the agent wrote it.
    answer: String,
    key: String,
    grant: Grant,
    session_path: std::path::PathBuf,
    _serving: runread_testkit::Serving,
}

impl Harness {
    async fn start() -> Harness {
        let env = Env::new();
        let session_path = env.place("sample", Duration::from_secs(60));
        env.ingest();
        let run = env.longest_answer_run();
        let answer = runread_testkit::answer(&run).unwrap();
        let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "test");
        let serving = runread_testkit::serve::mcp(env.service_unthrottled()).await;
        Harness {
            env,
            url: serving.url.clone(),
            answer,
            key: g.key,
            grant: g.grant,
            session_path,
            _serving: serving,
        }
    }

    fn target(&self) -> Value {
        serde_json::to_value(&self.grant.target).unwrap()
    }

    async fn client(&self) -> Client {
        Client::connect(&self.url, &self.key).await.unwrap()
    }

    /// A grant of `features` on the same run for a fresh key.
    fn another_key(&self, features: Vec<Feature>, expires_in_ms: i64) -> String {
        self.env
            .raw_grant(&self.grant.target, features, expires_in_ms)
            .1
    }

    /// Asserts `text` carries nothing it must not: no part of the answer, no path, no key.
    fn assert_no_leak(&self, text: &str) {
        for probe in [
            &self.answer[..40],
            &self.answer[4000..4040],
            &self.answer[self.answer.len() - 40..],
        ] {
            assert!(!text.contains(probe), "leaked answer text: {text}");
        }
        assert!(
            !text.contains(self.session_path.to_str().unwrap()),
            "leaked a path: {text}"
        );
        assert!(
            !text.contains(self.env.workspace.to_str().unwrap()),
            "leaked a path: {text}"
        );
        assert!(!text.contains(&self.key), "leaked the key: {text}");
    }

    /// One raw JSON-RPC POST with the given key headers.
    async fn raw(&self, keys: &[&str], method: &str, params: Value) -> (u16, String) {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut req = reqwest::Client::new()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = body["params"]["name"].as_str() {
            req = req.header("mcp-name", name);
        }
        for k in keys {
            req = req.header("x-runread-key", *k);
        }
        let resp = req.body(body.to_string()).send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap())
    }

    async fn refusal(&self, client: &Client, args: Value) -> String {
        match client.call("read_final_answer", args).await {
            Err(ClientError::Refused { code, message }) => {
                self.assert_no_leak(&code);
                self.assert_no_leak(&message);
                code
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}

fn code_of(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    v["error"]["data"]["code"].as_str().unwrap_or("").to_owned()
}

#[tokio::test]
async fn granted_answer_is_read_whole_with_matching_sha256() {
    let h = Harness::start().await;
    let client = h.client().await;
    assert_eq!(
        client.tool_names().await.unwrap(),
        crate::support::every_read_tool()
    );
    let targets = client.granted_targets().await.unwrap();
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0]["target"], h.target());
    for limit in [None, Some(4), Some(4096), Some(8192)] {
        let a = client
            .read_final_answer(&h.target(), limit, |_| {})
            .await
            .unwrap();
        assert_eq!(
            a.text.as_deref(),
            Some(h.answer.as_str()),
            "limit {limit:?}"
        );
        assert_eq!(
            a.sha256.as_deref(),
            Some(runread_core::sha256_hex(h.answer.as_bytes()).as_str())
        );
        assert_eq!(a.first["evidence"], "session_file");
        assert_eq!(a.first["foregroundFinalConfirmed"], false);
        assert_eq!(a.first["aggregateCompletionConfirmed"], false);
    }
}

#[tokio::test]
async fn missing_wrong_and_duplicate_keys_are_refused_before_mcp() {
    let h = Harness::start().await;
    let wrong = "0".repeat(64);
    for (keys, status, code) in [
        (vec![], 403, "missing_key"),
        (vec![wrong.as_str()], 403, "invalid_key"),
        (vec!["not-a-key"], 403, "invalid_key"),
        (vec![&h.key[..63]], 403, "invalid_key"),
        (vec![h.key.as_str(), h.key.as_str()], 400, "duplicate_key"),
    ] {
        for (method, params) in [
            ("server/discover", json!({})),
            ("tools/list", json!({})),
            (
                "tools/call",
                json!({"name": "read_final_answer", "arguments": {"target": h.target()}}),
            ),
        ] {
            let (s, body) = h.raw(&keys, method, params).await;
            assert_eq!(s, status, "{method} with {} keys: {body}", keys.len());
            assert_eq!(code_of(&body), code, "{method}: {body}");
            h.assert_no_leak(&body);
        }
    }
    // The granted key on the same raw path succeeds: the refusals above were about the key.
    let (s, body) = h
        .raw(
            &[&h.key],
            "tools/call",
            json!({"name": "read_final_answer", "arguments": {"target": h.target()}}),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert!(body.contains("\"readable\":true"));
}

#[tokio::test]
async fn each_wrong_target_field_is_not_granted() {
    let h = Harness::start().await;
    let client = h.client().await;
    let t = h.target();
    let mut variants = Vec::new();
    for field in ["instance", "workspaceId", "sessionId", "runId"] {
        let mut v = t.clone();
        v[field] = json!(format!("{}x", v[field].as_str().unwrap()));
        variants.push((field, v));
    }
    for field in ["revision", "generation"] {
        let mut v = t.clone();
        v[field] = json!(v[field].as_u64().unwrap() + 1);
        variants.push((field, v));
    }
    // A run that exists in the same session, but was not granted, is refused the same way.
    let other_run = h
        .env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .find(|r| r.target.run_id != h.grant.target.run_id)
        .unwrap();
    variants.push((
        "existing but ungranted run",
        serde_json::to_value(&other_run.target).unwrap(),
    ));
    for (field, target) in variants {
        assert_eq!(
            h.refusal(&client, json!({"target": target})).await,
            "not_granted",
            "{field}"
        );
    }
}

#[tokio::test]
async fn feature_not_granted_expired_and_revoked_are_refused_with_their_codes() {
    let h = Harness::start().await;
    let history_only = h.another_key(vec![Feature::History], 600_000);
    let c = Client::connect(&h.url, &history_only).await.unwrap();
    assert_eq!(
        c.tool_names().await.unwrap(),
        crate::support::every_read_tool(),
        "the catalog is every read tool; the grant decides each call"
    );
    assert_eq!(
        h.refusal(&c, json!({"target": h.target()})).await,
        "feature_not_granted"
    );

    let expired = h.another_key(vec![Feature::FinalAnswer], -1);
    let c = Client::connect(&h.url, &expired).await.unwrap();
    assert_eq!(
        c.tool_names().await.unwrap(),
        crate::support::every_read_tool(),
        "a key with no live grant sees the same catalog"
    );
    assert_eq!(
        h.refusal(&c, json!({"target": h.target()})).await,
        "grant_expired"
    );

    let client = h.client().await;
    assert!(
        client
            .read_final_answer(&h.target(), None, |_| {})
            .await
            .is_ok()
    );
    assert!(
        h.env
            .store
            .revoke_grant(&h.grant.id, runread_core::timefmt::now_ms())
            .unwrap()
    );
    assert_eq!(
        h.refusal(&client, json!({"target": h.target()})).await,
        "grant_revoked"
    );
}

#[tokio::test]
async fn a_new_generation_makes_old_grants_stale() {
    let h = Harness::start().await;
    let client = h.client().await;
    // The agent's file is replaced (e.g. rewritten by a migration): a new generation.
    let bytes = std::fs::read(&h.session_path).unwrap();
    let tmp = h.session_path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, &h.session_path).unwrap();
    runread_testkit::set_age(&h.session_path, Duration::from_secs(60));
    h.env.ingest();
    assert_eq!(
        h.refusal(&client, json!({"target": h.target()})).await,
        "target_stale"
    );
}

#[tokio::test]
async fn cursors_replay_and_refuse_tampering_and_other_targets() {
    let h = Harness::start().await;
    let client = h.client().await;
    let first = client
        .call(
            "read_final_answer",
            json!({"target": h.target(), "limit": 100}),
        )
        .await
        .unwrap()
        .structured;
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    let a = client
        .call(
            "read_final_answer",
            json!({"target": h.target(), "cursor": cursor, "limit": 100}),
        )
        .await
        .unwrap();
    let b = client
        .call(
            "read_final_answer",
            json!({"target": h.target(), "cursor": cursor, "limit": 100}),
        )
        .await
        .unwrap();
    assert_eq!(
        a.structured, b.structured,
        "a replayed cursor returns the same chunk"
    );
    assert_eq!(a.structured["byteOffset"], 100);

    let mut tampered = cursor.clone().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_eq!(
        h.refusal(&client, json!({"target": h.target(), "cursor": tampered}))
            .await,
        "invalid_cursor"
    );
    assert_eq!(
        h.refusal(
            &client,
            json!({"target": h.target(), "cursor": &cursor[..cursor.len() - 2]})
        )
        .await,
        "invalid_cursor"
    );

    // A cursor issued for another target (another run, another key) is refused here.
    let other_run = h
        .env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .find(|r| r.target.run_id != h.grant.target.run_id)
        .unwrap();
    let g2 = h
        .env
        .grant(&other_run.target.run_id, vec![Feature::FinalAnswer], "t");
    let c2 = Client::connect(&h.url, &g2.key).await.unwrap();
    let other = c2
        .call(
            "read_final_answer",
            json!({"target": g2.grant.target, "limit": 100}),
        )
        .await
        .unwrap()
        .structured;
    let foreign = other["nextCursor"].as_str().unwrap();
    assert_eq!(
        h.refusal(&client, json!({"target": h.target(), "cursor": foreign}))
            .await,
        "invalid_cursor"
    );
}

#[tokio::test]
async fn chunk_limit_is_enforced_at_its_edges_and_arguments_are_exact() {
    let h = Harness::start().await;
    let client = h.client().await;
    for (limit, ok) in [(3, false), (4, true), (8192, true), (8193, false)] {
        let r = client
            .call(
                "read_final_answer",
                json!({"target": h.target(), "limit": limit}),
            )
            .await;
        match (ok, r) {
            (true, Ok(r)) => assert!(r.structured["bytes"].as_u64().unwrap() <= limit),
            (false, Err(ClientError::Refused { code, .. })) => {
                assert_eq!(code, "invalid_arguments")
            }
            (_, other) => panic!("limit {limit}: {other:?}"),
        }
    }
    assert_eq!(
        h.refusal(
            &client,
            json!({"target": h.target(), "path": "/etc/passwd"})
        )
        .await,
        "invalid_arguments"
    );
    let mut t = h.target();
    t["scope"] = json!("all");
    assert_eq!(
        h.refusal(&client, json!({"target": t})).await,
        "invalid_arguments"
    );
    assert_eq!(h.refusal(&client, json!({})).await, "invalid_arguments");
    assert_eq!(
        h.refusal(&client, json!({"target": h.target(), "limit": "100"}))
            .await,
        "invalid_arguments"
    );
}

#[tokio::test]
async fn a_key_without_live_grants_cannot_list_targets_either() {
    let h = Harness::start().await;
    let expired = h.another_key(vec![Feature::FinalAnswer], -1);
    let c = Client::connect(&h.url, &expired).await.unwrap();
    match c.call("list_granted_targets", json!({})).await {
        Err(ClientError::Refused { code, .. }) => assert_eq!(code, "grant_expired"),
        other => panic!("{other:?}"),
    }
    let client = h.client().await;
    assert_eq!(client.granted_targets().await.unwrap().len(), 1);
    h.env
        .store
        .revoke_grant(&h.grant.id, runread_core::timefmt::now_ms())
        .unwrap();
    match client.call("list_granted_targets", json!({})).await {
        Err(ClientError::Refused { code, .. }) => assert_eq!(code, "grant_revoked"),
        other => panic!("{other:?}"),
    }
}
