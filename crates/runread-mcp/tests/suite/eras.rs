//! Both protocol eras on one endpoint: MCP 2026-07-28 (stateless, `server/discover`) and the
//! dated versions with their `initialize` handshake, served statelessly. Admission, the catalog,
//! the labels and the refusals are the same in every era; `--protocol modern` refuses the dated
//! era. Clients: rmcp's own (as dated-era clients connect) and raw HTTP for what a client library
//! would hide (headers, status codes, the bytes on the wire).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};

use runread_core::Feature;
use runread_mcp::client::{Client, ClientError};
use runread_mcp::guards::{Allowed, Protocols};

use runread_testkit::Env;

const ERAS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
];

struct Served {
    env: Env,
    url: String,
    key: String,
    target: Value,
    _serving: runread_testkit::Serving,
}

async fn serve(protocols: Protocols) -> Served {
    let env = Env::new();
    env.place("secrets-history", Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let g = env.grant(&run.target.run_id, Feature::ALL.to_vec(), "eras");
    let serving = runread_testkit::serve::mcp_with(
        env.service(),
        Allowed {
            protocols,
            ..Allowed::default()
        },
    )
    .await;
    Served {
        env,
        url: serving.url.clone(),
        key: g.key,
        target: serde_json::to_value(&g.grant.target).unwrap(),
        _serving: serving,
    }
}

/// What a reader gets from every tool, in one era.
async fn read_everything(s: &Served, version: ProtocolVersion) -> Vec<Value> {
    let c = Client::connect_speaking(&s.url, &s.key, version.clone())
        .await
        .unwrap_or_else(|e| panic!("{version}: {e}"));
    assert_eq!(c.protocol_version().as_deref(), Some(version.as_str()));
    let mut names = c.tool_names().await.unwrap();
    names.sort();
    let mut out = vec![json!(names)];
    for tool in [
        "list_granted_targets",
        "get_run",
        "read_work_state",
        "read_target_metadata",
        "list_artifacts",
    ] {
        let args = if tool == "list_granted_targets" {
            json!({})
        } else {
            json!({"target": s.target})
        };
        let mut v = c.call(tool, args).await.unwrap().structured;
        // Times and freshness move between calls; everything else must be equal.
        for k in ["observedAt", "fresh"] {
            if let Some(m) = v.as_object_mut() {
                m.remove(k);
            }
        }
        out.push(v);
    }
    let answer = c
        .read_final_answer(&s.target, Some(1000), |_| {})
        .await
        .unwrap();
    out.push(json!({"text": answer.text, "sha256": answer.sha256, "chunks": answer.chunks}));
    out.push(json!(c.read_history(&s.target, Some(3)).await.unwrap()));
    out
}

#[tokio::test]
async fn every_era_reads_the_same_results_through_the_same_admission() {
    let s = serve(Protocols::All).await;
    let modern = read_everything(&s, ProtocolVersion::V_2026_07_28).await;
    assert_eq!(
        modern[0].as_array().unwrap().len(),
        runread_service::tools::ALL.len(),
        "every tool"
    );
    for version in &ERAS[1..] {
        assert_eq!(
            read_everything(&s, version.clone()).await,
            modern,
            "{version}"
        );
    }
}

#[tokio::test]
async fn refusals_are_the_same_in_every_era() {
    let s = serve(Protocols::All).await;
    let now = runread_core::timefmt::now_ms();
    let run = s.env.store.runs().unwrap().remove(0);
    let expired = s
        .env
        .owner()
        .grant(
            runread_service::owner::GrantRequest {
                run_id: &run.target.run_id,
                session_id: None,
                features: vec![Feature::History],
                expires_at_ms: now - 1,
                reader: "expired",
                new_reader: runread_service::owner::NewReaderPolicy::Make,
                label: None,
            },
            now - 10_000,
        )
        .unwrap();
    for version in ERAS {
        let c = Client::connect_speaking(&s.url, &s.key, version.clone())
            .await
            .unwrap();
        let mut other = s.target.clone();
        other["runId"] = json!("ffffffff");
        let codes = [
            c.call("read_final_answer", json!({"target": other})).await,
            c.call("read_final_answer", json!({"target": s.target, "x": 1}))
                .await,
            c.call(
                "read_final_answer",
                json!({"target": s.target, "cursor": "AAAA"}),
            )
            .await,
        ]
        .map(|r| match r {
            Err(ClientError::Refused { code, .. }) => code,
            other => panic!("{version}: {other:?}"),
        });
        assert_eq!(
            codes,
            ["not_granted", "invalid_arguments", "invalid_cursor"],
            "{version}"
        );
        let c = Client::connect_speaking(&s.url, expired.key.as_deref().unwrap(), version.clone())
            .await
            .unwrap();
        assert_eq!(
            c.tool_names().await.unwrap(),
            crate::support::every_read_tool(),
            "{version}"
        );
        match c.call("list_granted_targets", json!({})).await {
            Err(ClientError::Refused { code, .. }) => assert_eq!(code, "grant_expired"),
            other => panic!("{version}: {other:?}"),
        }
    }
}

fn post(
    url: &str,
    key: Option<&str>,
    version: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(k) = key {
        r = r.header("x-runread-key", k);
    }
    if let Some(v) = version {
        r = r.header("mcp-protocol-version", v);
    }
    r
}

#[tokio::test]
async fn the_dated_era_is_stateless_and_every_request_is_admitted_on_its_own_key() {
    let s = serve(Protocols::All).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "codex-like", "version": "1"}}});
    // The handshake itself needs the key.
    let r = post(&s.url, None, None, &init).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let r = post(&s.url, Some(&s.key), None, &init)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers().get("mcp-session-id").is_none(),
        "no session is made"
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18", "{v}");
    assert!(v["result"]["capabilities"]["tools"].is_object(), "{v}");
    // The notification that follows is accepted and does nothing.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(&s.url, Some(&s.key), Some("2025-06-18"), &note)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    // A call in the dated era, without any handshake on this connection: its key admits it.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "read_final_answer", "arguments": {"target": s.target, "limit": 64}}});
    let r = post(&s.url, Some(&s.key), Some("2025-06-18"), &call)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let raw = r.text().await.unwrap();
    // The label comes first on the wire, before any agent text, in structuredContent and in the
    // text block's JSON.
    let at = |needle: &str| {
        raw.find(needle)
            .unwrap_or_else(|| panic!("{needle} not in {raw}"))
    };
    let label = r#"{"trust":"untrusted_data","instructions":false,"tool":"read_final_answer","#;
    assert!(at(&format!(r#""structuredContent":{label}"#)) > 0, "{raw}");
    let v: Value = serde_json::from_str(&raw).unwrap();
    let block = v["result"]["content"][0]["text"].as_str().unwrap();
    let head = format!("<tool_result tool=\"read_final_answer\" trust=\"untrusted\">\n{label}");
    assert!(block.starts_with(&head), "{block}");
    // The same call without the key, or with another, is refused at the door: nothing of the
    // handshake above admits anything.
    let r = post(&s.url, None, Some("2025-06-18"), &call)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = post(&s.url, Some(&"0".repeat(64)), Some("2025-06-18"), &call)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["data"]["code"], "invalid_key");
    // GET (a server stream) and DELETE (ending a session) have nothing to serve.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = reqwest::Client::new()
            .request(method.clone(), &s.url)
            .header("x-runread-key", &s.key)
            .header("mcp-protocol-version", "2025-06-18")
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 405, "{method}");
    }
}

#[tokio::test]
async fn protocol_modern_refuses_the_dated_era_and_serves_2026_07_28() {
    let s = serve(Protocols::Modern).await;
    for version in &ERAS[1..] {
        assert!(
            Client::connect_speaking(&s.url, &s.key, version.clone())
                .await
                .is_err(),
            "{version} must be refused"
        );
    }
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "old", "version": "1"}}});
    let r = post(&s.url, Some(&s.key), None, &init)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert!(v.get("result").is_none(), "{v}");
    assert!(v["error"]["code"].is_i64(), "{v}");
    let c = Client::connect(&s.url, &s.key).await.unwrap();
    assert_eq!(c.granted_targets().await.unwrap().len(), 1);
}
