//! Admission step 1, the transport: small named guards in front of rmcp, each refusing with a
//! fixed code and a JSON-RPC error body, none reading anything but headers, the peer address and
//! (bounded, with a deadline) the body.
//!
//! Order, outermost first: [`peer_and_host`] → [`origin_and_fetch_metadata`] →
//! [`forbidden_headers`] → (key admission) → [`body`] → [`in_flight`] → rmcp. The key is checked
//! on the headers alone, before any body byte is read, so a request without a valid key never
//! holds a body-reader slot; body readers are bounded per key ([`BODY_READERS_PER_KEY_MAX`]) and
//! in total ([`BODY_READERS_MAX`]). The body is read before a processing slot is taken, so slow
//! senders hold only a body-reader slot. Below all of them, the accept loop
//! ([`crate::accept`]) bounds connections, header bytes and the time to deliver headers.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::connect_info::MockConnectInfo;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use runread_core::ErrorCode;
use runread_core::limits::{HTTP_BODY_DEADLINE_SECS, HTTP_BODY_MAX_BYTES, HTTP_IN_FLIGHT_MAX};

use crate::door::{AdmittedKey, refusal};

/// Seconds a refused-because-busy client is told to wait.
pub const BUSY_RETRY_AFTER_SECS: u64 = 1;

/// What the door answers besides the defaults: hosts and origins beyond the literal loopback
/// names, and which protocol eras.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    /// Extra `Host` values (`--allow-host`), compared case-insensitively, with or without port.
    pub hosts: Vec<String>,
    /// Allowed `Origin` values (none by default: any present `Origin` is refused).
    pub origins: Vec<String>,
    /// The protocol versions served (`--protocol`).
    pub protocols: Protocols,
    /// The public origin of a connector (`--public-url`): its authority is answered as `Host`,
    /// bearer tokens are taken in `Authorization`, and the forwarding headers its tunnel adds are
    /// tolerated (never read). `None`: none of this.
    pub public: Option<Arc<crate::public::PublicOrigin>>,
}

/// Which MCP protocol versions the endpoint speaks. Admission is the same for all of them: every
/// request on its own key, nothing of a session grants anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocols {
    /// 2026-07-28 (stateless, `server/discover`) and the dated versions with their `initialize`
    /// handshake (2025-11-25, 2025-06-18, 2025-03-26), served statelessly.
    #[default]
    All,
    /// 2026-07-28 only: `initialize` is answered "unsupported protocol version".
    Modern,
}

/// At most [`HTTP_IN_FLIGHT_MAX`] requests at once; beyond that an immediate 503 with
/// `Retry-After`, never a queue that grows.
pub async fn in_flight(
    State(permits): State<Arc<Semaphore>>,
    mut req: Request,
    next: Next,
) -> Response {
    let Ok(permit) = permits.clone().try_acquire_owned() else {
        return busy();
    };
    let slot = ProcessingSlot {
        permits,
        held: Arc::new(Mutex::new(Some(permit))),
    };
    req.extensions_mut().insert(slot.clone());
    let response = next.run(req).await;
    // Given back with the response, whatever still holds a copy of the request's extensions.
    slot.give_back();
    response
}

/// The processing slot [`in_flight`] gave one request. A call that waits (`wait_for_run`) gives
/// it back while it waits, so that waiting calls never hold up the others, and queues for one
/// again to be answered.
#[derive(Clone)]
pub struct ProcessingSlot {
    permits: Arc<Semaphore>,
    held: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
}

impl ProcessingSlot {
    /// Gives the slot back (nothing if it is not held).
    pub fn give_back(&self) {
        drop(
            self.held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }

    /// Takes a slot again, queueing behind the requests that hold them (only waiting calls
    /// queue, at most `WAITS_MAX`).
    pub async fn take_again(&self) {
        if let Ok(permit) = self.permits.clone().acquire_owned().await {
            *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(permit);
        }
    }
}

/// A semaphore sized for [`in_flight`].
pub fn in_flight_permits() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(HTTP_IN_FLIGHT_MAX))
}

/// Whether a `Host` value (with or without port) names this machine's loopback: `127.0.0.1`,
/// `localhost` or `[::1]` — the only names a loopback-only listener answers (the console too).
pub fn host_is_loopback(host: &str) -> bool {
    is_loopback_host(host, &Allowed::default())
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
        || allowed.public.as_ref().is_some_and(|p| p.authority == h)
        || allowed
            .hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&name) || a.eq_ignore_ascii_case(&h))
}

/// The request's peer: what the accept loop recorded (`ConnectInfo`), or what a test's axum
/// `MockConnectInfo` layer stands in for a listener with — the same two axum's own `ConnectInfo`
/// extractor takes. `None` when neither is there: the peer is not known, and every door refuses
/// it like a remote one.
pub fn peer(extensions: &http::Extensions) -> Option<SocketAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| *addr)
        .or_else(|| {
            extensions
                .get::<MockConnectInfo<SocketAddr>>()
                .map(|MockConnectInfo(addr)| *addr)
        })
}

/// The peer must be on loopback (unless extra hosts are configured) and exactly one `Host` must
/// name a loopback address (or a configured host): DNS-rebinding protection. A request whose peer
/// is not known is refused like a remote one: the accept loop gives every request its peer, so a
/// missing one is a path that skipped it. An absolute-form request target (`POST
/// http://host/mcp`), whose authority replaces `Host` for HTTP (RFC 9112 3.2.2), must pass the
/// same rule.
pub async fn peer_and_host(
    State(allowed): State<Arc<Allowed>>,
    req: Request,
    next: Next,
) -> Response {
    let peer_ok = peer(req.extensions())
        .is_some_and(|addr| addr.ip().is_loopback() || !allowed.hosts.is_empty());
    let hosts: Vec<&http::HeaderValue> = req.headers().get_all(http::header::HOST).iter().collect();
    let host_ok = match hosts.as_slice() {
        [one] => one.to_str().is_ok_and(|h| is_loopback_host(h, &allowed)),
        _ => false,
    };
    if !peer_ok || !host_ok || !target_authority_ok(req.uri(), &allowed) {
        return refusal(ErrorCode::ForbiddenOrigin);
    }
    next.run(req).await
}

/// An origin-form target (`/mcp`) has no authority; an absolute-form one (`http://host/mcp`)
/// and an authority-form one (`CONNECT host:port`) must name an allowed host (userinfo, like any
/// other text, makes the authority not allowed), and the only scheme is `http`.
fn target_authority_ok(uri: &http::Uri, allowed: &Allowed) -> bool {
    match (uri.scheme_str(), uri.authority()) {
        (None, None) => true,
        (None | Some("http"), Some(a)) => is_loopback_host(a.as_str(), allowed),
        _ => false,
    }
}

/// A present `Origin` must be allowlisted (none by default); cross-site fetch metadata is refused,
/// except a browser's CORS request (`Sec-Fetch-Mode: cors`) from an origin of `--cors-origin`,
/// which is what that option allows.
pub async fn origin_and_fetch_metadata(
    State(allowed): State<Arc<Allowed>>,
    req: Request,
    next: Next,
) -> Response {
    let h = req.headers();
    let cors_origin = single_origin(h).is_ok_and(|o| {
        o.is_some_and(|o| crate::cors::is_cors_origin(allowed.public.as_deref(), o))
    });
    let origin_ok = origin_ok(h, &allowed) || cors_origin;
    let fetch_ok = fetch_metadata_ok(h) || (cors_origin && cors_mode(h));
    if !origin_ok || !fetch_ok {
        return refusal(ErrorCode::ForbiddenOrigin);
    }
    next.run(req).await
}

fn origin_ok(h: &HeaderMap, allowed: &Allowed) -> bool {
    match single_origin(h) {
        Ok(None) => true,
        Ok(Some(o)) => allowed.origins.iter().any(|a| a == o) || same_loopback_origin(o, h),
        Err(()) => false,
    }
}

/// The request's one `Origin`, if it has one; `Err` for two, or one that is not text.
fn single_origin(h: &HeaderMap) -> Result<Option<&str>, ()> {
    let origins: Vec<_> = h.get_all(http::header::ORIGIN).iter().collect();
    match origins.as_slice() {
        [] => Ok(None),
        [o] => o.to_str().map(Some).map_err(drop),
        _ => Err(()),
    }
}

/// Whether the fetch metadata says a CORS fetch: every `Sec-Fetch-Mode` (at least one) `cors` —
/// never a navigation, a `no-cors` form post or a websocket, whatever page it comes from.
fn cors_mode(h: &HeaderMap) -> bool {
    let modes: Vec<_> = h.get_all("sec-fetch-mode").iter().collect();
    !modes.is_empty() && modes.iter().all(|m| m.as_bytes() == b"cors")
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

/// Behind a connector's tunnel (`--public-url`): `Authorization` carries the bearer token, and
/// the headers tunnels and proxies add are let through, never read (runread trusts no forwarded
/// address; the peer is the tunnel's, on loopback). Cookies and proxy credentials stay refused.
pub fn is_forbidden_header_behind_tunnel(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "cookie" || n.starts_with("proxy-")
}

pub async fn forbidden_headers(
    State(allowed): State<Arc<Allowed>>,
    req: Request,
    next: Next,
) -> Response {
    let forbidden = match allowed.public {
        Some(_) => is_forbidden_header_behind_tunnel,
        None => is_forbidden_header,
    };
    // On the keyed door an `Authorization` header is a client sending the key as a bearer
    // token: refused like every forbidden header, with words that say where the key goes.
    // Behind a tunnel it is the connector's bearer token and passes.
    if allowed.public.is_none() && req.headers().contains_key(http::header::AUTHORIZATION) {
        return refusal(ErrorCode::AuthorizationHeader);
    }
    if req.headers().keys().any(|k| forbidden(k.as_str())) {
        return refusal(ErrorCode::ForbiddenHeader);
    }
    next.run(req).await
}

/// Most request bodies being received at once. Bodies are read before a request takes one of
/// the [`HTTP_IN_FLIGHT_MAX`] processing slots, so slow senders cannot starve processing; this
/// bound keeps what they can hold (at most this many × 32 KiB, each for at most 5 s) small. Only
/// requests with a valid key read a body.
pub const BODY_READERS_MAX: usize = 64;
/// Most request bodies being received at once for one key: a slow sender with one key holds at
/// most a quarter of [`BODY_READERS_MAX`], and other keys are read meanwhile.
pub const BODY_READERS_PER_KEY_MAX: usize = 16;

/// The body-reader slots: [`BODY_READERS_MAX`] in all, [`BODY_READERS_PER_KEY_MAX`] per key
/// (by the key's hash).
pub type BodyReaders = runread_core::slots::KeyedSlots;

/// The body-reader slots for [`body`].
pub fn body_readers() -> Arc<BodyReaders> {
    BodyReaders::new(BODY_READERS_MAX, BODY_READERS_PER_KEY_MAX)
}

/// The whole body within [`HTTP_BODY_DEADLINE_SECS`] and at most [`HTTP_BODY_MAX_BYTES`]: slow
/// senders are cut off (408), oversized bodies refused (413), anything but one JSON-RPC request
/// refused (400) — before any parsing by rmcp. Runs after key admission: the request's key holds
/// the reader slot, which is given back once the body is in. Requests without a POST body (GET,
/// DELETE, …) go on to rmcp, which answers them with 405.
pub async fn body(State(readers): State<Arc<BodyReaders>>, req: Request, next: Next) -> Response {
    if req.method() != http::Method::POST {
        return next.run(req).await;
    }
    // Key admission runs first; without it no body is read.
    let Some(AdmittedKey(key)) = req.extensions().get::<AdmittedKey>().cloned() else {
        return refusal(ErrorCode::MissingKey);
    };
    let Some(reader) = readers.try_take(&key.key_hash) else {
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
    drop(reader);
    if !is_single_message(&bytes) {
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

/// Whether `body` is exactly one JSON-RPC 2.0 request (a message with an `id`; see
/// [`is_single_message`]).
pub fn is_single_request(body: &[u8]) -> bool {
    is_single_message(body)
        && serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|v| v.get("id").is_some())
}

/// Whether `body` is exactly one JSON-RPC 2.0 message a client may send: an object with
/// `jsonrpc: "2.0"` and a string `method`, and either a string or integer `id` (a request) or no
/// `id` at all (a notification, such as the dated era's `notifications/initialized`, which does
/// nothing and is answered 202). Batches, responses, `id: null`, empty bodies and anything that is
/// not JSON (including nesting deeper than serde_json's limit) are not.
pub fn is_single_message(body: &[u8]) -> bool {
    let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    m.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0")
        && m.get("method").is_some_and(|v| v.is_string())
        && m.get("id")
            .is_none_or(|v| v.is_string() || v.is_i64() || v.is_u64())
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
            ..Allowed::default()
        };
        assert!(is_loopback_host("runread.internal:7077", &some));
    }

    #[test]
    fn absolute_form_targets_pass_only_the_host_rule() {
        let none = Allowed::default();
        for (target, ok) in [
            ("/mcp", true),
            ("http://127.0.0.1:7077/mcp", true),
            ("http://localhost/mcp", true),
            ("http://[::1]:7077/mcp", true),
            ("http://evil.example/mcp", false),
            ("http://evil.example:7077/mcp", false),
            ("http://127.0.0.1.evil.example/mcp", false),
            ("http://user@127.0.0.1:7077/mcp", false),
            ("https://127.0.0.1:7077/mcp", false),
            ("127.0.0.1:7077", true),
            ("evil.example:443", false),
        ] {
            let uri: http::Uri = target.parse().unwrap();
            assert_eq!(target_authority_ok(&uri, &none), ok, "{target}");
        }
        let some = Allowed {
            hosts: vec!["runread.internal".into()],
            origins: vec![],
            ..Allowed::default()
        };
        let uri: http::Uri = "http://runread.internal:7077/mcp".parse().unwrap();
        assert!(target_authority_ok(&uri, &some));
    }

    #[test]
    fn body_readers_are_bounded_per_key_and_in_total() {
        let readers = body_readers();
        let key = |i: usize| format!("key-{i}");
        // One key: N readers, not N + 1; another key meanwhile.
        let mut held: Vec<_> = (0..BODY_READERS_PER_KEY_MAX)
            .map(|_| readers.try_take(&key(0)).unwrap())
            .collect();
        assert!(readers.try_take(&key(0)).is_none());
        drop(readers.try_take(&key(1)).unwrap());
        // A reader given back is a reader for the same key again.
        held.pop();
        held.push(readers.try_take(&key(0)).unwrap());
        // In total: N readers across keys each under their bound, not N + 1.
        let mut k = 1;
        while held.len() < BODY_READERS_MAX {
            for _ in 0..BODY_READERS_PER_KEY_MAX.min(BODY_READERS_MAX - held.len()) {
                held.push(readers.try_take(&key(k)).unwrap());
            }
            k += 1;
        }
        assert_eq!(readers.held(), BODY_READERS_MAX);
        assert!(readers.try_take(&key(k + 1)).is_none());
        drop(held);
        assert_eq!(readers.held(), 0, "no reader left behind");
        // Every key has its whole share again.
        let again: Vec<_> = (0..BODY_READERS_PER_KEY_MAX)
            .map(|_| readers.try_take(&key(0)).unwrap())
            .collect();
        assert_eq!(again.len(), BODY_READERS_PER_KEY_MAX);
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
            ..Allowed::default()
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
    fn only_single_json_rpc_requests_and_notifications_pass() {
        assert!(is_single_message(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
        assert!(is_single_message(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#
        ));
        assert!(is_single_message(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ));
        for bad in [
            &br#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#[..],
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            b"",
            b"{not json",
            b"\xff\xfe",
        ] {
            assert!(!is_single_message(bad), "{}", String::from_utf8_lossy(bad));
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(
            !is_single_message(deep.as_bytes()),
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
