//! OpenAI's `tunnel-client` in keyed mode (`MCP_SERVER_URL=http://127.0.0.1:PORT/mcp`,
//! `MCP_EXTRA_HEADERS="x-runread-key: file:…"`): every request shape it sends to the local server,
//! byte for byte in the headers that matter, and what each must get for the client to work.
//!
//! The shapes are read from its source, github.com/openai/tunnel-client at commit
//! 5ce4fed0a730da034c54c1de17f2610f8b2727f1 (the stored snapshot; `000_…` pins a390c168, not in
//! it), and from the MCP Go SDK it forwards through, modelcontextprotocol/go-sdk v1.4.1
//! (`mcp/streamable.go`, its go.mod's version). Go's HTTP client adds `User-Agent:
//! Go-http-client/1.1` and `Accept-Encoding: gzip` and canonicalizes header names
//! (`X-Runread-Key`); the static header goes to every request to the configured origin
//! (`pkg/mcpclient/internal/static_headers.go`). The connector's headers a command carries never
//! include `Host`, `X-Forwarded-*`, `Forwarded`, `Via` or cookies in the client's local stand-in
//! for tunnel-service (`tunnel-client dev proxy`: `pkg/localproxy/localproxy.go`,
//! `blockedRequestMCPHeaders`); were one forwarded, the keyed door would refuse it
//! `forbidden_header` — a failure that shows, never a guard let down.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_testkit::Env;

struct Served {
    url: String,
    origin: String,
    key: String,
    target: Value,
    _env: Env,
    _serving: runread_testkit::Serving,
}

async fn serve() -> Served {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let g = env.grant(&run.target.run_id, Feature::ALL.to_vec(), "tunnel");
    let serving = runread_testkit::serve::mcp(env.service()).await;
    Served {
        url: serving.url.clone(),
        origin: format!("http://{}", serving.addr),
        key: g.key,
        target: serde_json::to_value(&g.grant.target).unwrap(),
        _env: env,
        _serving: serving,
    }
}

/// What every request of the tunnel-client's MCP HTTP client carries: Go's defaults and the
/// static header of `MCP_EXTRA_HEADERS`. (reqwest adds `Accept: */*` to a request that sets no
/// `Accept` — the `DELETE`s below — where Go sends none; runread reads no `Accept` there.)
fn tunnel(method: reqwest::Method, url: &str, key: &str) -> reqwest::RequestBuilder {
    tunnel_as("Go-http-client/1.1", method, url, key)
}

/// [`tunnel`] with the `User-Agent` the request sets itself (OAuth discovery sets its own).
fn tunnel_as(
    agent: &str,
    method: reqwest::Method,
    url: &str,
    key: &str,
) -> reqwest::RequestBuilder {
    reqwest::Client::builder()
        .no_gzip()
        .build()
        .unwrap()
        .request(method, url)
        .header("User-Agent", agent)
        .header("Accept-Encoding", "gzip")
        .header("X-Runread-Key", key)
}

/// A JSON-RPC POST as the Go SDK's `streamableClientConn.Write` sends it (`Content-Type`,
/// `Accept` of both kinds), with the headers of the forwarded command on top.
fn rpc(s: &Served, body: &Value, command_headers: &[(&str, &str)]) -> reqwest::RequestBuilder {
    let mut r = tunnel(reqwest::Method::POST, &s.url, &s.key)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in command_headers {
        r = r.header(*name, *value);
    }
    r
}

/// The response headers tunnel-client keeps and posts back (docs/protocol.md, "Structured MCP
/// errors"): runread's must be among them where the connector needs one, and carry no session.
fn kept(r: &reqwest::Response) -> Vec<(String, String)> {
    const ALLOWLIST: [&str; 6] = [
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
        "access-control-expose-headers",
        "www-authenticate",
    ];
    r.headers()
        .iter()
        .filter(|(n, _)| ALLOWLIST.contains(&n.as_str()))
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
        .collect()
}

/// The startup probe's first request: `mcp.Client.Connect` (pkg/mcpclient/fxmodule.go,
/// `probeMcpServer`) sends `initialize` for 2025-06-18, the Go SDK's latest, without
/// `Mcp-Protocol-Version` (it has none before the result).
#[tokio::test]
async fn a_tunnel_client_startup_initialize_is_answered_with_json_and_no_session() {
    let s = serve().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "tunnel-client", "version": "0.0.0"}}});
    let r = rpc(&s, &init, &[]).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        kept(&r),
        [("content-type".to_owned(), "application/json".to_owned())],
        "JSON (the SDK reads it whole), no Mcp-Session-Id: nothing to carry between commands"
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18", "{v}");
    assert_eq!(v["result"]["serverInfo"]["name"], "runread", "{v}");
}

/// The probe's second request: `notifications/initialized` with the negotiated version
/// (`setMCPHeaders`); the SDK wants 202 or 204 for a message that is not a call.
#[tokio::test]
async fn a_tunnel_client_initialized_notification_is_accepted_with_202() {
    let s = serve().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}});
    let r = rpc(&s, &note, &[("Mcp-Protocol-Version", "2025-06-18")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    assert!(r.headers().get("mcp-session-id").is_none());
}

/// Once initialized, the SDK opens its standalone stream (`connectStandaloneSSE`): `GET` with
/// `Accept: text/event-stream` and the version. `405` is the spec's "no stream here", which the
/// SDK takes as such and goes on; a stream would hold a connection for nothing runread sends.
#[tokio::test]
async fn a_tunnel_client_standalone_stream_get_is_answered_405_allow_post() {
    let s = serve().await;
    let r = tunnel(reqwest::Method::GET, &s.url, &s.key)
        .header("Accept", "text/event-stream")
        .header("Mcp-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    assert_ne!(
        r.headers().get("content-type").map(|v| v.to_str().unwrap()),
        Some("text/event-stream")
    );
    assert_eq!(r.text().await.unwrap(), "Method Not Allowed");
}

/// The probe's session is closed (`recordStartupProbeResult` → `Close`): the SDK sends `DELETE`
/// with the version and no `Mcp-Session-Id` (none was issued), and ignores the status. runread
/// has no session to end: `405`, fixed, nothing read.
#[tokio::test]
async fn a_tunnel_client_close_without_a_session_is_answered_405() {
    let s = serve().await;
    let r = tunnel(reqwest::Method::DELETE, &s.url, &s.key)
        .header("Mcp-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    assert_eq!(r.text().await.unwrap(), "Method Not Allowed");
}

/// A `session_termination` command (docs/protocol.md; pkg/mcpclient/forwarding_transport_impl.go,
/// `terminateStreamableSession`): `DELETE` to the server URL with the command's headers — the
/// connector's `Mcp-Session-Id` (tunnel-service sends the command only with one) and its version.
/// runread issues no sessions, so there is none to end: `405` (the spec's answer of a server that
/// does not let clients end sessions), which tunnel-client posts back as the command's terminal
/// `session_termination_response` with `resp_code` 405 — nothing waits, nothing is retried.
/// The same key reads on: nothing was ended.
#[tokio::test]
async fn a_tunnel_client_session_termination_is_answered_405_and_ends_nothing() {
    let s = serve().await;
    let r = tunnel(reqwest::Method::DELETE, &s.url, &s.key)
        .header("Mcp-Session-Id", "session_123")
        .header("Mcp-Protocol-Version", "2025-06-18")
        .header("X-Request-Id", "req_0123")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    let list = json!({"jsonrpc": "2.0", "id": "rpc_1", "method": "tools/list", "params": {}});
    let r = rpc(&s, &list, &[("Mcp-Session-Id", "session_123")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// A `jsonrpc` command (pkg/dispatcher/internal/processor.go, `processJsonRpcCommand`): the
/// connector's call, with the command's headers applied over the SDK's (`Mcp-Session-Id` of the
/// connector's session if it has one, `Mcp-Protocol-Version`, tunnel-service's `X-Request-Id`,
/// `Accept` defaulted to both kinds). Served statelessly on the key: the session id is neither
/// required nor read, and the answer is one JSON response with the request's id.
#[tokio::test]
async fn a_forwarded_json_rpc_call_is_answered_on_the_key_whatever_session_it_names() {
    let s = serve().await;
    let headers = [
        ("Mcp-Session-Id", "session_123"),
        ("Mcp-Protocol-Version", "2025-06-18"),
        ("X-Request-Id", "req_0123"),
    ];
    let list = json!({"jsonrpc": "2.0", "id": "rpc_1", "method": "tools/list", "params": {}});
    let r = rpc(&s, &list, &headers).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        kept(&r),
        [("content-type".to_owned(), "application/json".to_owned())]
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], "rpc_1");
    assert_eq!(
        v["result"]["tools"].as_array().unwrap().len(),
        runread_service::tools::ALL.len(),
        "{v}"
    );
    let call = json!({"jsonrpc": "2.0", "id": "rpc_2", "method": "tools/call", "params": {
        "name": "read_final_answer", "arguments": {"target": s.target, "limit": 64}}});
    let r = rpc(&s, &call, &headers).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], "rpc_2");
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_eq!(
        v["result"]["structuredContent"]["trust"], "untrusted_data",
        "{v}"
    );
}

/// A `jsonrpc` command that is a notification: acknowledged after the write (`notify_ack`), so
/// `202` with no body.
#[tokio::test]
async fn a_forwarded_notification_is_acknowledged_with_202_and_no_body() {
    let s = serve().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "rpc_1"}});
    let r = rpc(&s, &note, &[("Mcp-Protocol-Version", "2025-06-18")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    assert!(r.bytes().await.unwrap().is_empty());
}

/// Startup OAuth discovery (pkg/oauth/module.go, resource_meta.go): a `WWW-Authenticate` probe,
/// `POST` then `GET` of the server URL with an empty body and `Accept: application/json`, then
/// the RFC 9728 well-known URLs, path form first. The keyed door offers no OAuth: neither probe is
/// a `401`, and both metadata URLs are `404` — exactly what `IsOptionalDiscoveryFailure`
/// (pkg/oauth/discovery_failure.go) needs for the tunnel to become ready ("every attempt 404").
#[tokio::test]
async fn a_tunnel_client_oauth_discovery_finds_no_oauth_on_the_keyed_door() {
    let s = serve().await;
    for method in [reqwest::Method::POST, reqwest::Method::GET] {
        let r = tunnel_as("tunnel-client/0.0.0", method.clone(), &s.url, &s.key)
            .header("Accept", "application/json")
            .send()
            .await
            .unwrap();
        assert_ne!(r.status(), 401, "{method}");
        assert!(r.headers().get("www-authenticate").is_none(), "{method}");
    }
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let url = format!("{}{path}", s.origin);
        let r = tunnel_as("tunnel-client/0.0.0", reqwest::Method::GET, &url, &s.key)
            .header("Accept", "application/json")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{path}");
    }
}

/// Keyed mode is the connector's "no authentication": a connector set up with OAuth would have its
/// `Authorization` forwarded (docs/connectors.md, "OAuth-protected connector behavior"), and the
/// keyed door refuses it as it refuses any credential but the key — with the fixed code that says
/// where the key goes, nothing of the token echoed.
#[tokio::test]
async fn a_forwarded_bearer_on_the_keyed_door_is_refused_authorization_header() {
    let s = serve().await;
    let list = json!({"jsonrpc": "2.0", "id": "rpc_1", "method": "tools/list", "params": {}});
    let r = rpc(&s, &list, &[("Authorization", "Bearer connector-token")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["data"]["code"], "authorization_header", "{v}");
    assert!(!v.to_string().contains("connector-token"), "{v}");
}
