//! Admission step 1, the transport: small named guards in front of rmcp, each refusing with a
//! fixed code and a JSON-RPC error body, none reading anything but headers, the peer address and
//! (bounded, with a deadline) the body.
//!
//! Order, outermost first: [`peer_and_host`] → [`origin_and_fetch_metadata`] →
//! [`forbidden_headers`] → [`body`] → [`in_flight`] → (key admission) → rmcp. The body is read
//! before a processing slot is taken, so slow senders hold only a body-reader slot.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderMap;
use tokio::sync::Semaphore;

use runread_core::ErrorCode;
use runread_core::limits::{HTTP_BODY_DEADLINE_SECS, HTTP_BODY_MAX_BYTES, HTTP_MAX_IN_FLIGHT};

use crate::server::refusal;

/// Seconds a refused-because-busy client is told to wait.
pub const BUSY_RETRY_AFTER_SECS: u64 = 1;

/// Hosts the transport answers besides the literal loopback names.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    /// Extra `Host` values (`--allow-host`), compared case-insensitively, with or without port.
    pub hosts: Vec<String>,
    /// Allowed `Origin` values (none by default: any present `Origin` is refused).
    pub origins: Vec<String>,
}

/// At most [`HTTP_MAX_IN_FLIGHT`] requests at once; beyond that an immediate 503 with
/// `Retry-After`, never a queue that grows.
pub async fn in_flight(
    State(permits): State<Arc<Semaphore>>,
    req: Request,
    next: Next,
) -> Response {
    let Ok(_permit) = permits.clone().try_acquire_owned() else {
        return busy();
    };
    next.run(req).await
}

/// A semaphore sized for [`in_flight`].
pub fn in_flight_permits() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(HTTP_MAX_IN_FLIGHT))
}

fn is_loopback_host(host: &str, allowed: &Allowed) -> bool {
    let h = host.to_ascii_lowercase();
    let name = if let Some(rest) = h.strip_prefix('[') {
        // [::1] or [::1]:port
        match rest.split_once(']') {
            Some((inner, tail))
                if tail.is_empty()
                    || tail
                        .strip_prefix(':')
                        .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit())) =>
            {
                format!("[{inner}]")
            }
            _ => return false,
        }
    } else {
        match h.rsplit_once(':') {
            Some((n, p)) if p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty() => n.to_owned(),
            Some(_) => return false,
            None => h.clone(),
        }
    };
    matches!(name.as_str(), "127.0.0.1" | "localhost" | "[::1]")
        || allowed
            .hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&name) || a.eq_ignore_ascii_case(&h))
}

/// The peer must be on loopback (unless extra hosts are configured) and exactly one `Host` must
/// name a loopback address (or a configured host): DNS-rebinding protection.
pub async fn peer_and_host(
    State(allowed): State<Arc<Allowed>>,
    req: Request,
    next: Next,
) -> Response {
    let peer_ok = match req.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(addr)) => addr.ip().is_loopback() || !allowed.hosts.is_empty(),
        None => true, // in-process (tests): no socket to check
    };
    let hosts: Vec<&http::HeaderValue> = req.headers().get_all(http::header::HOST).iter().collect();
    let host_ok = match hosts.as_slice() {
        [one] => one.to_str().is_ok_and(|h| is_loopback_host(h, &allowed)),
        _ => false,
    };
    if !peer_ok || !host_ok {
        return refusal(ErrorCode::ForbiddenOrigin);
    }
    next.run(req).await
}

/// A present `Origin` must be allowlisted (none by default); cross-site fetch metadata is refused.
pub async fn origin_and_fetch_metadata(
    State(allowed): State<Arc<Allowed>>,
    req: Request,
    next: Next,
) -> Response {
    if !origin_ok(req.headers(), &allowed) || !fetch_metadata_ok(req.headers()) {
        return refusal(ErrorCode::ForbiddenOrigin);
    }
    next.run(req).await
}

fn origin_ok(h: &HeaderMap, allowed: &Allowed) -> bool {
    let origins: Vec<_> = h.get_all(http::header::ORIGIN).iter().collect();
    match origins.as_slice() {
        [] => true,
        [o] => o
            .to_str()
            .is_ok_and(|o| allowed.origins.iter().any(|a| a == o) || same_loopback_origin(o, h)),
        _ => false,
    }
}

/// An `Origin` of `http://` + exactly this request's (loopback) `Host`: the server's own origin.
/// A page on another port or host — a local dev server, a rebinding attacker — never matches.
fn same_loopback_origin(origin: &str, h: &HeaderMap) -> bool {
    let Some(host) = h.get(http::header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let authority = origin.strip_prefix("http://").unwrap_or("");
    !authority.is_empty()
        && authority.eq_ignore_ascii_case(host)
        && is_loopback_host(host, &Allowed::default())
}

fn fetch_metadata_ok(h: &HeaderMap) -> bool {
    // Every value counts: a duplicated header cannot hide a cross-site one behind a benign one.
    let site_ok = h
        .get_all("sec-fetch-site")
        .iter()
        .all(|v| matches!(v.to_str(), Ok("same-origin" | "none")));
    let mode_ok = h.get_all("sec-fetch-mode").iter().all(|v| {
        !matches!(
            v.to_str(),
            Ok("navigate" | "nested-navigate" | "no-cors" | "websocket") | Err(_)
        )
    });
    site_ok && mode_ok
}

/// Headers runread never accepts: credentials and cookies (runread's only credential is its own
/// key header), and proxy forwarding (runread is not served through proxies).
pub fn is_forbidden_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "cookie" | "forwarded" | "via" | "x-real-ip"
    ) || n.starts_with("x-forwarded-")
        || n.starts_with("proxy-")
}

pub async fn forbidden_headers(req: Request, next: Next) -> Response {
    if req
        .headers()
        .keys()
        .any(|k| is_forbidden_header(k.as_str()))
    {
        return refusal(ErrorCode::ForbiddenHeader);
    }
    next.run(req).await
}

/// Most request bodies being received at once. Bodies are read before a request takes one of
/// the [`HTTP_MAX_IN_FLIGHT`] processing slots, so slow senders cannot starve processing; this
/// bound keeps what they can hold (at most this many × 32 KiB, each for at most 5 s) small.
pub const BODY_READERS_MAX: usize = 64;

/// A semaphore sized for [`body`].
pub fn body_reader_permits() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(BODY_READERS_MAX))
}

/// The whole body within [`HTTP_BODY_DEADLINE_SECS`] and at most [`HTTP_BODY_MAX_BYTES`]: slow
/// senders are cut off (408), oversized bodies refused (413), anything but one JSON-RPC request
/// refused (400) — before any parsing by rmcp. Requests without a POST body (GET, DELETE, …) go on
/// to rmcp, which answers them with 405.
pub async fn body(State(readers): State<Arc<Semaphore>>, req: Request, next: Next) -> Response {
    if req.method() != http::Method::POST {
        return next.run(req).await;
    }
    let Ok(_reader) = readers.clone().try_acquire_owned() else {
        return busy();
    };
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > HTTP_BODY_MAX_BYTES as u64) {
        return refusal(ErrorCode::BodyTooLarge);
    }
    let (parts, body) = req.into_parts();
    let read = axum::body::to_bytes(body, HTTP_BODY_MAX_BYTES + 1);
    let bytes = match tokio::time::timeout(Duration::from_secs(HTTP_BODY_DEADLINE_SECS), read).await
    {
        Err(_) => return refusal(ErrorCode::BodyTimeout),
        Ok(Err(e)) if is_length_limit(&e) => return refusal(ErrorCode::BodyTooLarge),
        // A malformed body (a broken chunked encoding, say).
        Ok(Err(_)) => return refusal(ErrorCode::InvalidRequest),
        Ok(Ok(b)) if b.len() > HTTP_BODY_MAX_BYTES => return refusal(ErrorCode::BodyTooLarge),
        Ok(Ok(b)) => b,
    };
    if !is_single_request(&bytes) {
        return refusal(ErrorCode::InvalidRequest);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = err.source();
    }
    false
}

fn busy() -> Response {
    let mut r = refusal(ErrorCode::Busy);
    if let Ok(v) = http::HeaderValue::from_str(&BUSY_RETRY_AFTER_SECS.to_string()) {
        r.headers_mut().insert(http::header::RETRY_AFTER, v);
    }
    r
}

/// Whether `body` is exactly one JSON-RPC 2.0 request: an object with `jsonrpc: "2.0"`, a string
/// `method` and a string or integer `id`. Batches, notifications, responses, empty bodies and
/// anything that is not JSON (including nesting deeper than serde_json's limit) are not.
pub fn is_single_request(body: &[u8]) -> bool {
    let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    m.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0")
        && m.get("method").is_some_and(|v| v.is_string())
        && m.get("id")
            .is_some_and(|v| v.is_string() || v.is_i64() || v.is_u64())
        && !m.contains_key("result")
        && !m.contains_key("error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_literal_loopback_hosts_pass_unless_configured() {
        let none = Allowed::default();
        for ok in [
            "127.0.0.1",
            "127.0.0.1:7077",
            "localhost:7077",
            "LOCALHOST",
            "[::1]",
            "[::1]:80",
        ] {
            assert!(is_loopback_host(ok, &none), "{ok}");
        }
        for bad in [
            "evil.example",
            "127.0.0.1.evil.example",
            "127.0.0.2",
            "localhost:port",
            "[::1]x",
            "0.0.0.0",
            "127.1",
            "",
        ] {
            assert!(!is_loopback_host(bad, &none), "{bad}");
        }
        let some = Allowed {
            hosts: vec!["runread.internal".into()],
            origins: vec![],
        };
        assert!(is_loopback_host("runread.internal:7077", &some));
    }

    #[test]
    fn origins_are_refused_unless_allowlisted() {
        let mut h = HeaderMap::new();
        assert!(origin_ok(&h, &Allowed::default()));
        h.insert(
            http::header::ORIGIN,
            http::HeaderValue::from_static("http://localhost:3000"),
        );
        assert!(!origin_ok(&h, &Allowed::default()));
        let a = Allowed {
            hosts: vec![],
            origins: vec!["http://localhost:3000".into()],
        };
        assert!(origin_ok(&h, &a));
    }

    #[test]
    fn cross_site_fetch_metadata_is_refused() {
        for (site, mode, ok) in [
            (None, None, true),
            (Some("same-origin"), Some("cors"), true),
            (Some("none"), None, true),
            (None, Some("cors"), true),
            (Some("cross-site"), None, false),
            (Some("same-site"), None, false),
            (None, Some("no-cors"), false),
            (None, Some("navigate"), false),
        ] {
            let mut h = HeaderMap::new();
            if let Some(s) = site {
                h.insert("sec-fetch-site", http::HeaderValue::from_static(s));
            }
            if let Some(m) = mode {
                h.insert("sec-fetch-mode", http::HeaderValue::from_static(m));
            }
            assert_eq!(fetch_metadata_ok(&h), ok, "{site:?} {mode:?}");
        }
    }

    #[test]
    fn only_single_json_rpc_requests_pass() {
        assert!(is_single_request(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
        assert!(is_single_request(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#
        ));
        for bad in [
            &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            b"",
            b"{not json",
            b"\xff\xfe",
        ] {
            assert!(!is_single_request(bad), "{}", String::from_utf8_lossy(bad));
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(
            !is_single_request(deep.as_bytes()),
            "a depth bomb is refused, not a stack overflow"
        );
    }

    #[test]
    fn credential_and_proxy_headers_are_forbidden() {
        for n in [
            "Authorization",
            "cookie",
            "Forwarded",
            "X-Forwarded-For",
            "x-forwarded-host",
            "X-Real-IP",
            "Via",
            "Proxy-Authorization",
        ] {
            assert!(is_forbidden_header(n), "{n}");
        }
        for n in [
            "x-runread-key",
            "content-type",
            "mcp-method",
            "accept",
            "user-agent",
        ] {
            assert!(!is_forbidden_header(n), "{n}");
        }
    }
}
