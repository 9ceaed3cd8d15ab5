//! The connector's door (`serve --public-url`): the OAuth 2.1 endpoints a chat assistant's
//! connector uses at the public URL the owner's tunnel presents, and the metadata that leads it
//! there. Policy is `runread_service::oauth`'s; this module parses, bounds and answers.
//!
//! - `GET /.well-known/oauth-protected-resource/mcp` (and the root form): Protected Resource
//!   Metadata (RFC 9728).
//! - `GET /.well-known/oauth-authorization-server`: Authorization Server Metadata (RFC 8414).
//! - `GET /authorize`: the public authorization page. It shows what the client asks and a short
//!   code, never a run, and waits for the owner's decision on the console; `GET /authorize/wait`
//!   is where it refreshes to, and continues the redirect once the owner decided.
//! - `POST /token`, `POST /register` (RFC 7591), `POST /revoke` (RFC 7009).
//!
//! Every endpoint is behind the door's peer and `Host` guard and at most [`OAUTH_IN_FLIGHT_MAX`]
//! requests are processed at once (`slot_after_body`). A body is read whole — bounded
//! ([`OAUTH_BODY_MAX_BYTES`]), within the door's deadline — *before* its request takes a
//! processing slot, as on `/mcp`: a stalled sender holds a connection (which the accept loop
//! bounds), never a slot. At the cap the answer is OAuth's own `temporarily_unavailable`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;
use tokio::sync::Semaphore;

use runread_core::Feature;
use runread_core::limits::{HTTP_BODY_DEADLINE_SECS, OAUTH_BODY_MAX_BYTES};
use runread_service::Service;
use runread_service::oauth::{
    AuthorizeParams, ClientInfo, OAuthError, Progress, Registration, scope_of,
};

use crate::public::PublicOrigin;

pub use crate::public::PROTECTED_RESOURCE_PATH;
/// The root form of the Protected Resource Metadata's path.
pub const PROTECTED_RESOURCE_ROOT_PATH: &str = "/.well-known/oauth-protected-resource";
/// Path of Authorization Server Metadata (RFC 8414 3).
pub const AUTHORIZATION_SERVER_PATH: &str = "/.well-known/oauth-authorization-server";
pub const AUTHORIZE_PATH: &str = "/authorize";
pub const AUTHORIZE_WAIT_PATH: &str = "/authorize/wait";
pub const TOKEN_PATH: &str = "/token";
pub const REGISTER_PATH: &str = "/register";
pub const REVOKE_PATH: &str = "/revoke";
/// Most OAuth endpoint requests served at once; beyond, 503 at once.
pub const OAUTH_IN_FLIGHT_MAX: usize = 8;
/// Seconds between the public page's refreshes while it waits for the owner.
pub const AUTHORIZE_REFRESH_SECS: u64 = 2;
/// Most bytes of the authorization page's query string.
pub const AUTHORIZE_QUERY_MAX_BYTES: usize = 4 * 1024;

#[derive(Clone)]
struct Door {
    service: Arc<Service>,
    public: Arc<PublicOrigin>,
    permits: Arc<Semaphore>,
    fetcher: Arc<crate::cimd::Fetcher>,
}

/// The connector's routes, each behind `slot_after_body` (a body read whole first, then a slot).
/// The ones a browser-based client calls from its page — the metadata, `/register`, `/token` —
/// also behind CORS when `--cors-origin` names origins (a preflight answered before it could take
/// a slot); the authorization pages are navigated to, never fetched, and get none.
pub fn routes(service: Arc<Service>, public: Arc<PublicOrigin>) -> axum::Router {
    let fetcher = Arc::new(crate::cimd::Fetcher::new(public.cimd_private_hosts.clone()));
    let cors = crate::cors::oauth_layer(&public);
    let door = Door {
        service,
        public,
        permits: Arc::new(Semaphore::new(OAUTH_IN_FLIGHT_MAX)),
        fetcher,
    };
    let slot = axum::middleware::from_fn_with_state(door.permits.clone(), slot_after_body);
    let fetched = axum::Router::new()
        .route(PROTECTED_RESOURCE_PATH, get(protected_resource))
        .route(PROTECTED_RESOURCE_ROOT_PATH, get(protected_resource))
        .route(AUTHORIZATION_SERVER_PATH, get(authorization_server))
        .route(TOKEN_PATH, post(token))
        .route(REGISTER_PATH, post(register))
        .layer(slot.clone());
    let fetched = match cors {
        Some(cors) => fetched.layer(cors),
        None => fetched,
    };
    axum::Router::new()
        .route(AUTHORIZE_PATH, get(authorize))
        .route(AUTHORIZE_WAIT_PATH, get(authorize_wait))
        .route(REVOKE_PATH, post(revoke))
        .layer(slot)
        .merge(fetched)
        .with_state(door)
}

/// A request's body, read whole before its request took a processing slot.
#[derive(Clone)]
struct ReadBody(axum::body::Bytes);

/// Reads a `POST`'s whole body ([`bounded_body`]: bounded, within the deadline) first, and only
/// then takes one of the [`OAUTH_IN_FLIGHT_MAX`] processing slots for the request, given back with
/// its response; none free: `503` with OAuth's `temporarily_unavailable` (a page for the
/// authorization page's paths) and `Retry-After`, at once.
async fn slot_after_body(
    State(permits): State<Arc<Semaphore>>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let mut req = req;
    if req.method() == http::Method::POST {
        let (parts, body) = req.into_parts();
        let bytes = match bounded_body(&parts.headers, body).await {
            Ok(b) => b,
            Err(refused) => return refused.response(),
        };
        req = Request::from_parts(parts, Body::empty());
        req.extensions_mut().insert(ReadBody(bytes));
    }
    let Ok(_slot) = permits.try_acquire_owned() else {
        let mut r = if req.uri().path().starts_with(AUTHORIZE_PATH) {
            page_error(OAuthError::TemporarilyUnavailable)
        } else {
            oauth_error(OAuthError::TemporarilyUnavailable)
        };
        r.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(crate::guards::BUSY_RETRY_AFTER_SECS),
        );
        return r;
    };
    next.run(req).await
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn oauth_error(e: OAuthError) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, json!({"error": e.as_str()}))
}

async fn protected_resource(State(d): State<Door>) -> Response {
    json_response(
        StatusCode::OK,
        json!({
            "resource": d.public.connector.resource,
            "authorization_servers": [d.public.connector.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": Feature::ALL.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
            "resource_name": "runread",
        }),
    )
}

async fn authorization_server(State(d): State<Door>) -> Response {
    json_response(
        StatusCode::OK,
        json!({
            "issuer": d.public.connector.issuer,
            "authorization_endpoint": d.public.url(AUTHORIZE_PATH),
            "token_endpoint": d.public.url(TOKEN_PATH),
            "registration_endpoint": d.public.url(REGISTER_PATH),
            "revocation_endpoint": d.public.url(REVOKE_PATH),
            "scopes_supported": Feature::ALL.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "client_id_metadata_document_supported": true,
            "authorization_response_iss_parameter_supported": true,
        }),
    )
}

/// The query's pairs, or `None` when it is too long or names a parameter twice (RFC 6749 3.1).
fn query_pairs(req: &Request) -> Option<Vec<(String, String)>> {
    parse_query(req.uri().query().unwrap_or(""))
}

/// The pairs of an authorization page's query string: `None` when it is over
/// [`AUTHORIZE_QUERY_MAX_BYTES`] or names a parameter twice (RFC 6749 3.1). Public for the fuzz
/// targets.
pub fn parse_query(q: &str) -> Option<Vec<(String, String)>> {
    if q.len() > AUTHORIZE_QUERY_MAX_BYTES {
        return None;
    }
    let pairs: Vec<(String, String)> = form_urlencoded::parse(q.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut names: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    (names.len() == before).then_some(pairs)
}

fn param(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, OAuthError> + Send + 'static,
) -> Result<T, OAuthError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or(Err(OAuthError::ServerError))
}

async fn authorize(State(d): State<Door>, req: Request) -> Response {
    let Some(pairs) = query_pairs(&req) else {
        return page_error(OAuthError::InvalidRequest);
    };
    let params = AuthorizeParams {
        response_type: param(&pairs, "response_type"),
        client_id: param(&pairs, "client_id"),
        redirect_uri: param(&pairs, "redirect_uri"),
        state: param(&pairs, "state"),
        code_challenge: param(&pairs, "code_challenge"),
        code_challenge_method: param(&pairs, "code_challenge_method"),
        resource: param(&pairs, "resource"),
        scope: param(&pairs, "scope"),
    };
    let Some(client_id) = params.client_id.clone() else {
        return page_error(OAuthError::InvalidRequest);
    };
    let client = match client_of(&d, &client_id).await {
        Ok(c) => c,
        Err(e) => return page_error(e),
    };
    let state = params.state.clone();
    let service = d.service.clone();
    let connector = d.public.connector.clone();
    let begun = blocking(move || service.oauth_begin(&connector, &client, &params)).await;
    match begun {
        Ok(request) => page(&request_page(&request, state.as_deref())),
        Err(e) => page_error(e),
    }
}

/// The client a `client_id` names: a URL is a Client ID Metadata Document (fetched, bounded);
/// anything else a client registered here.
async fn client_of(d: &Door, client_id: &str) -> Result<ClientInfo, OAuthError> {
    if client_id.starts_with("https://") {
        return d.fetcher.client(client_id).await;
    }
    let service = d.service.clone();
    let id = client_id.to_owned();
    blocking(move || service.oauth_registered_client(&id))
        .await?
        .ok_or(OAuthError::InvalidClient)
}

async fn authorize_wait(State(d): State<Door>, req: Request) -> Response {
    let Some(pairs) = query_pairs(&req) else {
        return page_error(OAuthError::InvalidRequest);
    };
    let id = param(&pairs, "request");
    let Some(id) = id.filter(|id| id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()))
    else {
        return page_error(OAuthError::InvalidRequest);
    };
    let state = param(&pairs, "state");
    let service = d.service.clone();
    let connector = d.public.connector.clone();
    let asked = state.clone();
    match blocking(move || service.oauth_progress(&connector, &id, asked.as_deref())).await {
        Ok(Progress::Waiting(request)) => page(&request_page(&request, state.as_deref())),
        Ok(Progress::Redirect(to)) => {
            let mut r = page("<p>Continuing to the client…</p>");
            *r.status_mut() = StatusCode::SEE_OTHER;
            match HeaderValue::from_str(&to) {
                Ok(v) => {
                    r.headers_mut().insert(header::LOCATION, v);
                    r
                }
                Err(_) => page_error(OAuthError::ServerError),
            }
        }
        Ok(Progress::Over) => {
            let mut r = page(
                "<h1>This request is over</h1><p>It expired, was answered already, or never \
                 existed. Start the connection again from your assistant.</p>",
            );
            *r.status_mut() = StatusCode::GONE;
            r
        }
        Err(e) => page_error(e),
    }
}

/// The waiting page: what the client asks and the code the owner matches on the console. It
/// refreshes to itself carrying the client's `state` (runread keeps only its digest).
fn request_page(r: &runread_service::oauth::OAuthRequest, state: Option<&str>) -> String {
    let redirect_host = r
        .redirect_uri
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?']).next().unwrap_or(""))
        .unwrap_or("");
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("request", &r.id);
    if let Some(state) = state {
        query.append_pair("state", state);
    }
    format!(
        "<meta http-equiv=\"refresh\" content=\"{AUTHORIZE_REFRESH_SECS};url={AUTHORIZE_WAIT_PATH}?{query}\">\
         <h1>Connect to runread</h1>\
         <p><strong>{name}</strong> asks to read runs the owner of this runread shares with it.</p>\
         <dl><dt>Sends you back to</dt><dd>{host}</dd><dt>Asks for</dt><dd>{scope}</dd></dl>\
         <p>The owner approves on their runread console (Connections) the request with this code:</p>\
         <p class=code id=\"user-code\">{code}</p>\
         <p>This page continues by itself once they decide.</p>",
        query = escape(&query.finish()),
        name = escape(&r.client_name),
        host = escape(redirect_host),
        scope = escape(&r.scope),
        code = escape(&r.user_code),
    )
}

/// A page of the public origin: never framed, never cached, no script, nothing it can send
/// anywhere.
fn page(body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>runread</title>\
         <meta name=viewport content=\"width=device-width\"><style>body{{font:16px system-ui;\
         max-width:36em;margin:3em auto;padding:0 1em}}.code{{font:700 2em monospace;\
         letter-spacing:.1em}}</style></head><body>{body}</body></html>"
    );
    let mut r = Response::new(Body::from(html));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// A refused authorization request: its fixed code on the page, and no redirect.
fn page_error(e: OAuthError) -> Response {
    let mut r = page(&format!(
        "<h1>This connection request was refused</h1><p id=\"error\">{}</p>",
        e.as_str()
    ));
    *r.status_mut() = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    r
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Why a body was not read.
enum BodyRefused {
    TooLarge,
    /// Late or broken.
    Unread,
}

impl BodyRefused {
    /// `invalid_request`, with `413` for a body over the bound.
    fn response(self) -> Response {
        let mut r = oauth_error(OAuthError::InvalidRequest);
        if let BodyRefused::TooLarge = self {
            *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
        }
        r
    }
}

/// The whole body, at most [`OAUTH_BODY_MAX_BYTES`] within the door's deadline.
async fn bounded_body(
    headers: &http::HeaderMap,
    body: Body,
) -> Result<axum::body::Bytes, BodyRefused> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > OAUTH_BODY_MAX_BYTES as u64) {
        return Err(BodyRefused::TooLarge);
    }
    let read = axum::body::to_bytes(body, OAUTH_BODY_MAX_BYTES);
    match tokio::time::timeout(Duration::from_secs(HTTP_BODY_DEADLINE_SECS), read).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) if declared.is_none() => Err(BodyRefused::TooLarge),
        _ => Err(BodyRefused::Unread),
    }
}

/// The body [`slot_after_body`] read (empty when there was none).
fn read_body(req: &Request) -> axum::body::Bytes {
    req.extensions()
        .get::<ReadBody>()
        .map(|b| b.0.clone())
        .unwrap_or_default()
}

fn is_form(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';').next().is_some_and(|t| {
                t.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        })
}

async fn form_of(req: Request) -> Result<Vec<(String, String)>, Response> {
    if !is_form(&req) {
        return Err(oauth_error(OAuthError::InvalidRequest));
    }
    Ok(parse_form(&read_body(&req)))
}

/// The pairs of a form body (`application/x-www-form-urlencoded`), as the token and revocation
/// endpoints read them; a repeated parameter is kept, for `oauth::single` to refuse. Public for
/// the fuzz targets.
pub fn parse_form(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

async fn token(State(d): State<Door>, req: Request) -> Response {
    let form = match form_of(req).await {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let service = d.service.clone();
    let connector = d.public.connector.clone();
    match blocking(move || service.oauth_token(&connector, &form)).await {
        Ok(t) => json_response(
            StatusCode::OK,
            json!({
                "access_token": t.access_token.as_str(),
                "token_type": "Bearer",
                "expires_in": t.expires_in,
                "refresh_token": t.refresh_token.as_str(),
                "scope": t.scope,
            }),
        ),
        Err(e) => oauth_error(e),
    }
}

async fn register(State(d): State<Door>, req: Request) -> Response {
    let Some(registration) = parse_registration(&read_body(&req)) else {
        return oauth_error(OAuthError::InvalidClientMetadata);
    };
    let service = d.service.clone();
    match blocking(move || service.oauth_register(registration)).await {
        Ok(c) => json_response(
            StatusCode::CREATED,
            json!({
                "client_id": c.client_id,
                "client_id_issued_at": c.created_at_ms / 1000,
                "client_name": c.name,
                "redirect_uris": c.redirect_uris,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "scope": scope_of(&Feature::ALL),
            }),
        ),
        Err(e) => oauth_error(e),
    }
}

/// The registration fields runread reads; anything of the wrong type is invalid metadata. Public
/// for the fuzz targets.
pub fn parse_registration(body: &[u8]) -> Option<Registration> {
    let serde_json::Value::Object(m) = serde_json::from_slice::<serde_json::Value>(body).ok()?
    else {
        return None;
    };
    let strings = |name: &str| -> Option<Option<Vec<String>>> {
        match m.get(name) {
            None | Some(serde_json::Value::Null) => Some(None),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some),
            Some(_) => None,
        }
    };
    let string = |name: &str| -> Option<Option<String>> {
        match m.get(name) {
            None | Some(serde_json::Value::Null) => Some(None),
            Some(serde_json::Value::String(s)) => Some(Some(s.clone())),
            Some(_) => None,
        }
    };
    Some(Registration {
        client_name: string("client_name")?,
        redirect_uris: strings("redirect_uris")?.unwrap_or_default(),
        token_endpoint_auth_method: string("token_endpoint_auth_method")?,
        grant_types: strings("grant_types")?,
        response_types: strings("response_types")?,
    })
}

async fn revoke(State(d): State<Door>, req: Request) -> Response {
    let form = match form_of(req).await {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let token = match runread_service::oauth::single(&form, "token") {
        Ok(Some(t)) => t.to_owned(),
        Ok(None) | Err(_) => return oauth_error(OAuthError::InvalidRequest),
    };
    let service = d.service.clone();
    match blocking(move || service.oauth_revoke(&token)).await {
        Ok(()) => json_response(StatusCode::OK, json!({})),
        Err(e) => oauth_error(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_what_the_client_says() {
        assert_eq!(escape("<b>&\"'"), "&lt;b&gt;&amp;&quot;&#39;");
    }
}
