//! CORS for browser-based clients (`serve --cors-origin ORIGIN`, with `--public-url` only): the one
//! place that says which origins, which endpoints, which methods and which headers.
//!
//! A browser-based MCP client (an inspector, a web chat) runs on its own origin and reaches the
//! connector's door cross-origin: its OAuth discovery (the metadata documents), `/register`,
//! `/token`, and then `/mcp` with its bearer token. The browser lets it read those answers only if
//! they carry `Access-Control-Allow-Origin` for its origin, and sends a preflight (`OPTIONS` with
//! `Access-Control-Request-Method`) first for anything but a simple request. runread answers both
//! for the origins named exactly, and for no other: none by default. The loopback keyed door never
//! gets CORS: a page that could read it would read with whatever key it holds, and a key is for
//! clients that are not pages.
//!
//! tower-http's `CorsLayer` does the answering (already in the tree through reqwest; its `cors`
//! feature adds no crate): preflight and actual responses per the Fetch standard, `Vary` included,
//! rather than hand-written header logic. The layer only adds headers; what is refused stays
//! refused: an allowed origin still passes every guard and the credential check of the door.

use http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::public::PublicOrigin;

/// The request headers a browser MCP client may send to `/mcp`: its token, the content type, the
/// protocol's own headers (both eras, and 2026-07-28's per-request ones).
const MCP_REQUEST_HEADERS: [&str; 8] = [
    "accept",
    "authorization",
    "content-type",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
];
/// The response headers of `/mcp` a browser client must read: the OAuth challenge of a `401`
/// (where its discovery starts) and the protocol's own.
const MCP_EXPOSED_HEADERS: [&str; 3] =
    ["www-authenticate", "mcp-protocol-version", "mcp-session-id"];
/// The request headers of the OAuth metadata, `/register` and `/token`: JSON and form bodies, and
/// the protocol version header SDKs add to their discovery requests.
const OAUTH_REQUEST_HEADERS: [&str; 4] = [
    "accept",
    "authorization",
    "content-type",
    "mcp-protocol-version",
];

/// Reads one `--cors-origin`: exactly the serialization a browser sends in `Origin`
/// (`scheme://host[:port]`, `http` or `https`, no path, no trailing slash, no default port), so
/// that an exact comparison is the whole rule. `*`, `null` and anything else are refused, with
/// what to give instead.
pub fn parse_origin(origin: &str) -> Result<String, String> {
    let bad = |why: &str| {
        format!(
            "--cors-origin {origin:?}: {why}; give the exact origin of the page, like https://app.example or http://localhost:5173"
        )
    };
    if origin == "*" || origin.eq_ignore_ascii_case("null") {
        return Err(bad("only named origins are allowed"));
    }
    let lower = origin.to_ascii_lowercase();
    let (scheme, authority, default_port) = if let Some(a) = lower.strip_prefix("https://") {
        ("https", a, ":443")
    } else if let Some(a) = lower.strip_prefix("http://") {
        ("http", a, ":80")
    } else {
        return Err(bad("the scheme must be http or https"));
    };
    let parsed: http::uri::Authority = authority.parse().map_err(|_| bad("not an origin"))?;
    // A host name, an IPv4 address or a bracketed IPv6 one, and a port: nothing else (no
    // wildcard, user, path, query or fragment).
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b);
    if authority.is_empty()
        || !authority.bytes().all(plain)
        || parsed.as_str() != authority
        || parsed.host().is_empty()
    {
        return Err(bad("an origin has no path, user, query or fragment"));
    }
    if authority.ends_with(default_port) {
        return Err(bad("a browser leaves the default port out of an origin"));
    }
    Ok(format!("{scheme}://{authority}"))
}

/// The CORS layer of `/mcp`: `None` without `--public-url` or without `--cors-origin`.
pub(crate) fn mcp_layer(public: Option<&PublicOrigin>) -> Option<CorsLayer> {
    let layer = layer_for(public?)?
        .allow_methods([Method::POST, Method::GET, Method::DELETE])
        .allow_headers(names(&MCP_REQUEST_HEADERS))
        .expose_headers(names(&MCP_EXPOSED_HEADERS));
    Some(layer)
}

/// The CORS layer of the OAuth metadata, `/register` and `/token`: `None` without `--cors-origin`.
pub(crate) fn oauth_layer(public: &PublicOrigin) -> Option<CorsLayer> {
    let layer = layer_for(public)?
        .allow_methods([Method::GET, Method::POST])
        .allow_headers(names(&OAUTH_REQUEST_HEADERS));
    Some(layer)
}

/// The origins of `--cors-origin`, exactly; no credentials mode (runread's credentials are
/// headers, never cookies).
fn layer_for(public: &PublicOrigin) -> Option<CorsLayer> {
    if public.cors_origins.is_empty() {
        return None;
    }
    let origins: Vec<HeaderValue> = public
        .cors_origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    Some(CorsLayer::new().allow_origin(AllowOrigin::list(origins)))
}

fn names(list: &[&'static str]) -> Vec<HeaderName> {
    list.iter().map(|n| HeaderName::from_static(n)).collect()
}

/// Whether `origin` (a request's `Origin` value) is one of `--cors-origin`.
pub(crate) fn is_cors_origin(public: Option<&PublicOrigin>, origin: &str) -> bool {
    public.is_some_and(|p| p.cors_origins.iter().any(|o| o == origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_exact_browser_serializations_only() {
        for (given, read) in [
            ("https://app.example", "https://app.example"),
            ("HTTPS://App.Example:8443", "https://app.example:8443"),
            ("http://localhost:5173", "http://localhost:5173"),
            ("http://127.0.0.1:6274", "http://127.0.0.1:6274"),
            ("http://[::1]:3000", "http://[::1]:3000"),
        ] {
            assert_eq!(parse_origin(given).as_deref(), Ok(read), "{given}");
        }
        for bad in [
            "*",
            "null",
            "NULL",
            "app.example",
            "ftp://app.example",
            "https://",
            "https://app.example/",
            "https://app.example/path",
            "https://user@app.example",
            "https://app.example?x",
            "https://app.example#x",
            "https://app.example:443",
            "http://app.example:80",
            "https://*.example",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
}
