//! The console's door, before any page: loopback only (peer and `Host`), never a credential of
//! another kind (the MCP read key, `Authorization`, proxy headers), never a cross-origin caller
//! (`Origin`, fetch metadata), and headers on every response that keep pages out of frames,
//! caches and referrers. Each refusal is one fixed code ([`Refusal`]).

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, header};

use crate::Refusal;

/// Pages run only the console's own script and style; nothing is framed, sent elsewhere or
/// loaded from elsewhere.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Headers that carry credentials or proxy hops the console never takes. The console's only
/// credentials are its login token and its own cookie; a read key is for MCP only.
fn is_foreign_credential_or_proxy(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == runread_mcp::KEY_HEADER
        || matches!(
            n.as_str(),
            "authorization" | "forwarded" | "via" | "x-real-ip"
        )
        || n.starts_with("x-forwarded-")
        || n.starts_with("proxy-")
}

/// The one `Host` of a request, if it is a loopback name.
pub(crate) fn loopback_host(h: &HeaderMap) -> Option<&str> {
    let hosts: Vec<&HeaderValue> = h.get_all(header::HOST).iter().collect();
    match hosts.as_slice() {
        [one] => one
            .to_str()
            .ok()
            .filter(|h| runread_mcp::guards::host_is_loopback(h)),
        _ => None,
    }
}

/// `Origin` absent, or exactly this console's own (`http://` + its loopback `Host`).
fn origin_is_own(h: &HeaderMap, required: bool) -> bool {
    let origins: Vec<&HeaderValue> = h.get_all(header::ORIGIN).iter().collect();
    match origins.as_slice() {
        [] => !required,
        [o] => match (o.to_str(), loopback_host(h)) {
            (Ok(o), Some(host)) => o
                .strip_prefix("http://")
                .is_some_and(|a| a.eq_ignore_ascii_case(host)),
            _ => false,
        },
        _ => false,
    }
}

/// Fetch metadata, when the browser sends it: the owner typed or opened the URL (`none`) or a
/// console page made the request (`same-origin`). `same-site` is refused too: another port on
/// localhost is the same site.
fn fetch_site_ok(h: &HeaderMap) -> bool {
    h.get_all("sec-fetch-site")
        .iter()
        .all(|v| matches!(v.to_str(), Ok("same-origin" | "none")))
}

/// The door: every request passes here first. A request whose peer is not known is refused like
/// a remote one (the accept loop gives every request its peer; a missing one skipped it).
pub(crate) async fn door(req: Request, next: Next) -> Response {
    let peer_ok = runread_mcp::guards::peer(req.extensions()).is_some_and(|a| a.ip().is_loopback());
    let h = req.headers();
    let authority_ok = match req.uri().authority() {
        None => req.uri().scheme().is_none(),
        Some(a) => {
            req.uri().scheme_str() == Some("http")
                && runread_mcp::guards::host_is_loopback(a.as_str())
        }
    };
    let refusal = if !peer_ok || loopback_host(h).is_none() || !authority_ok {
        Some(Refusal::ForbiddenHost)
    } else if h.keys().any(|k| is_foreign_credential_or_proxy(k.as_str())) {
        Some(Refusal::ForbiddenHeader)
    } else if !fetch_site_ok(h) || !origin_is_own(h, req.method() != Method::GET) {
        // A state-changing request must say where it comes from, and it must be here.
        Some(Refusal::ForbiddenOrigin)
    } else if !matches!(*req.method(), Method::GET | Method::POST) {
        Some(Refusal::MethodNotAllowed)
    } else {
        None
    };
    let mut response = match refusal {
        Some(r) => r.into_response(),
        None => next.run(req).await,
    };
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CONTENT_SECURITY_POLICY),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        // No page's address (the login URL carries its token) leaves in a Referer to anywhere
        // else. Not `no-referrer`: with it, browsers send `Origin: null` on the console's own form
        // posts, and the origin check needs the real one.
        ("referrer-policy", "same-origin"),
        ("cache-control", "no-store"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
