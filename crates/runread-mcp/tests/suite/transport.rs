//! The transport guards over real sockets: hosts, origins, forbidden headers, body size and
//! deadline, and the in-flight cap — each refusal with its status, fixed code and no content.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use runread_core::Feature;
use runread_core::limits::{HTTP_BODY_MAX_BYTES, HTTP_IN_FLIGHT_MAX};

use runread_testkit::Env;

struct Server {
    addr: SocketAddr,
    key: String,
    _env: Env,
    _serving: runread_testkit::Serving,
    _rt: tokio::runtime::Runtime,
}

fn start() -> Server {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.store.runs().unwrap().into_iter().next().unwrap();
    let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "t");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let serving = rt.block_on(runread_testkit::serve::mcp(env.service()));
    Server {
        addr: serving.addr,
        key: g.key,
        _env: env,
        _serving: serving,
        _rt: rt,
    }
}

const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// Sends a raw request; returns (status, body).
fn raw(s: &Server, extra_headers: &str, body: &str) -> (u16, String) {
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let host = if extra_headers.to_ascii_lowercase().contains("host:") {
        String::new()
    } else {
        format!("Host: 127.0.0.1:{}\r\n", s.addr.port())
    };
    let req = format!(
        "POST /mcp HTTP/1.1\r\n{host}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nx-runread-key: {}\r\n{extra_headers}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        s.key,
        body.len()
    );
    c.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    let status = out.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn code(body: &str) -> String {
    // Bodies may be chunked; find the fixed code in the JSON-RPC error.
    body.split("\"code\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("")
        .to_owned()
}

#[test]
fn a_clean_request_passes_every_guard() {
    let s = start();
    let (status, body) = raw(&s, "", DISCOVER);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("2026-07-28"));
}

#[test]
fn foreign_hosts_origins_and_cross_site_requests_are_refused() {
    let s = start();
    for headers in [
        "Host: evil.example\r\n".to_string(),
        format!(
            "Host: 127.0.0.1:{0}\r\nHost: 127.0.0.1:{0}\r\n",
            s.addr.port()
        ),
        "Host: 127.0.0.1.evil.example\r\n".to_string(),
        "Origin: http://evil.example\r\n".to_string(),
        "Origin: null\r\n".to_string(),
        "Sec-Fetch-Site: cross-site\r\n".to_string(),
        "Sec-Fetch-Mode: no-cors\r\n".to_string(),
    ] {
        let (status, body) = raw(&s, &headers, DISCOVER);
        assert_eq!(
            (status, code(&body).as_str()),
            (403, "forbidden_origin"),
            "{headers:?}: {body}"
        );
        assert!(!body.contains(&s.key));
    }
}

#[test]
fn credential_and_proxy_headers_are_refused() {
    let s = start();
    for h in [
        "Cookie: a=b",
        "Forwarded: for=1.2.3.4",
        "X-Forwarded-For: 1.2.3.4",
        "X-Real-IP: 1.2.3.4",
        "Via: 1.1 proxy",
        "Proxy-Authorization: x",
    ] {
        let (status, body) = raw(&s, &format!("{h}\r\n"), DISCOVER);
        assert_eq!(
            (status, code(&body).as_str()),
            (400, "forbidden_header"),
            "{h}: {body}"
        );
    }
}

#[test]
fn an_authorization_header_is_refused_with_words_that_say_where_the_key_goes() {
    let s = start();
    // The usual habit: the valid key as a bearer token (Codex's `bearer_token_env_var`).
    for h in [
        format!("Authorization: Bearer {}", s.key),
        "authorization: Basic dXNlcjpwdw==".to_owned(),
    ] {
        let (status, body) = raw(&s, &format!("{h}\r\n"), DISCOVER);
        assert_eq!(
            (status, code(&body).as_str()),
            (400, "authorization_header"),
            "{body}"
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v["error"]["message"],
            "runread does not accept an Authorization header here; send the read key as the \
             x-runread-key header"
        );
        let value = h.split_once(": ").unwrap().1;
        assert!(!body.contains(&s.key) && !body.contains(value), "{body}");
        assert!(
            !body.contains("Bearer") && !body.contains("Basic"),
            "{body}"
        );
    }
}

#[test]
fn body_limit_holds_at_n_and_refuses_n_plus_one() {
    let s = start();
    // Pad a valid JSON-RPC body with whitespace to exactly N bytes, then N + 1.
    let pad = HTTP_BODY_MAX_BYTES - DISCOVER.len();
    let at_limit = format!("{DISCOVER}{}", " ".repeat(pad));
    assert_eq!(at_limit.len(), HTTP_BODY_MAX_BYTES);
    let (status, body) = raw(&s, "", &at_limit);
    assert_eq!(status, 200, "{body}");
    let over = format!("{at_limit} ");
    let (status, body) = raw(&s, "", &over);
    assert_eq!((status, code(&body).as_str()), (413, "body_too_large"));
}

#[test]
fn a_slow_body_is_cut_off_at_the_deadline() {
    let s = start();
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nx-runread-key: {}\r\nContent-Length: 100\r\n\r\n{{\"json",
        s.addr.port(),
        s.key
    );
    c.write_all(head.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    assert_eq!(code(&out), "body_timeout");
}

/// Concurrent clients well beyond the cap of 4 (a bounded burst, not a timing assertion).
const BURST_CLIENTS: usize = 32;
const BURST_REQUESTS_EACH: usize = 40;

#[test]
fn requests_beyond_the_in_flight_cap_are_refused_at_once_not_queued() {
    let s = start();
    let results = std::sync::Mutex::new((0usize, 0usize, Vec::<String>::new()));
    std::thread::scope(|scope| {
        for _ in 0..BURST_CLIENTS {
            scope.spawn(|| {
                for _ in 0..BURST_REQUESTS_EACH {
                    let mut c = TcpStream::connect(s.addr).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    let req = format!(
                        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
                         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nx-runread-key: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{DISCOVER}",
                        s.addr.port(),
                        s.key,
                        DISCOVER.len()
                    );
                    c.write_all(req.as_bytes()).unwrap();
                    let mut out = String::new();
                    let _ = c.read_to_string(&mut out);
                    let mut r = results.lock().unwrap();
                    if out.starts_with("HTTP/1.1 200") {
                        r.0 += 1;
                    } else if out.starts_with("HTTP/1.1 503") && out.to_ascii_lowercase().contains("retry-after: 1") && code(&out) == "busy" {
                        r.1 += 1;
                    } else {
                        r.2.push(out.chars().take(200).collect());
                    }
                }
            });
        }
    });
    let (ok, busy, other) = results.into_inner().unwrap();
    assert!(
        other.is_empty(),
        "every response is a success or an immediate busy: {other:?}"
    );
    assert!(ok > 0, "admitted calls succeed");
    assert!(
        busy > 0,
        "beyond {HTTP_IN_FLIGHT_MAX} in flight, requests are refused with 503 busy ({ok} ok)"
    );
}

#[test]
fn slow_senders_do_not_take_processing_slots() {
    let s = start();
    // More slow bodies than processing slots: they wait for their body, not for a slot.
    let _slow: Vec<TcpStream> = (0..HTTP_IN_FLIGHT_MAX * 2)
        .map(|_| {
            let mut c = TcpStream::connect(s.addr).unwrap();
            let head = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nx-runread-key: {}\r\nContent-Length: 100\r\n\r\n{{", s.addr.port(), s.key);
            c.write_all(head.as_bytes()).unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..10 {
        let (status, body) = raw(&s, "", DISCOVER);
        assert_eq!(status, 200, "{body}");
    }
}

/// One in-process request to the router, no socket under it: (status, body).
async fn in_process(app: axum::Router, key: &str) -> (u16, String) {
    use tower::ServiceExt as _;
    let req = http::Request::post("/mcp")
        .header("host", "127.0.0.1:7077")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .header("x-runread-key", key)
        .body(axum::body::Body::from(DISCOVER))
        .unwrap();
    let response = app.oneshot(req).await.unwrap();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), HTTP_BODY_MAX_BYTES)
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// Issue 30, finding 10: a request whose peer is unknown (no `ConnectInfo`, as when the router
/// is served without runread's accept loop) is refused exactly like a remote peer; with its
/// loopback peer supplied (axum's `MockConnectInfo`, what a listener gives) it passes.
#[tokio::test]
async fn a_request_without_a_known_peer_is_refused_like_a_remote_one() {
    use axum::extract::connect_info::MockConnectInfo;
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.store.runs().unwrap().into_iter().next().unwrap();
    let key = env
        .grant(&run.target.run_id, vec![Feature::FinalAnswer], "t")
        .key;
    let app = runread_mcp::server::router(env.service(), SocketAddr::from(([127, 0, 0, 1], 7077)));
    let peer = |ip: [u8; 4]| MockConnectInfo(SocketAddr::from((ip, 50_000)));
    let (status, body) = in_process(app.clone(), &key).await;
    assert_eq!(
        (status, code(&body).as_str()),
        (403, "forbidden_origin"),
        "{body}"
    );
    assert!(!body.contains(&key));
    let remote = in_process(app.clone().layer(peer([10, 0, 0, 1])), &key).await;
    assert_eq!(remote, (status, body), "the same refusal as a remote peer");
    let (status, body) = in_process(app.layer(peer([127, 0, 0, 1])), &key).await;
    assert_eq!(status, 200, "{body}");
}
