//! Connectors: runread as its own OAuth 2.1 authorization server at the owner's public URL
//! (`serve --public-url`), per the MCP authorization spec. An OAuth client the owner approved on
//! the console is a reader; its access tokens are admitted like that reader's key.
//!
//! The rules, each in one place here:
//! - authorization code with PKCE S256 only; `resource` (RFC 8707) required and equal to this
//!   server's resource, in the authorization and every token request, and bound into every token;
//! - a redirect URI matches a registered one byte for byte;
//! - a code is single-use and short-lived ([`OAUTH_CODE_SECS`]); a reused one revokes every
//!   token its authorization gave; any exchange that presents it spends it, a malformed one too;
//! - the client's `state` is echoed back, never kept: the store holds its SHA-256;
//! - a client's name is shown to the owner and never trusted: approving a client makes a new
//!   reader unless the owner explicitly joins it to an existing one ([`ReaderChoice`]);
//! - access tokens opaque, short-lived ([`OAUTH_ACCESS_TOKEN_SECS`]), stored as hashes; refresh
//!   tokens rotated on every use, a replayed one revokes its family;
//! - nothing is approved here: the owner decides on the console ([`approve`], [`deny`]).
//!
//! The HTTP endpoints (`runread-mcp`) parse and answer; the client of a Client ID Metadata
//! Document is fetched there and handed in as a [`ClientInfo`].

use runread_core::limits::{
    OAUTH_ACCESS_TOKEN_SECS, OAUTH_CLIENT_NAME_MAX_BYTES, OAUTH_CLIENTS_MAX, OAUTH_CODE_SECS,
    OAUTH_PENDING_REQUESTS_MAX, OAUTH_PENDING_REQUESTS_PER_CLIENT_MAX, OAUTH_REDIRECT_URIS_MAX,
    OAUTH_REFRESH_TOKEN_SECS, OAUTH_REQUEST_SECS, OAUTH_STATE_MAX_BYTES,
    OAUTH_UNAPPROVED_CLIENT_SECS, OAUTH_UNAPPROVED_CLIENTS_MAX,
    OAUTH_UNAPPROVED_CLIENTS_PER_REGISTRANT_MAX, OAUTH_URI_MAX_BYTES, READER_NAME_MAX_BYTES,
};
use runread_core::{ErrorCode, Feature, oauth};
use runread_gate::keys::KeyProvider;
use runread_store::{
    CodeRedemption, Grant, OAuthClient, OAuthClientBounds, OAuthRequestBounds, OAuthToken, Reader,
    Store, TokenKind,
};

pub use runread_store::OAuthRequest;

use crate::KeyContext;
use crate::owner::{ReaderError, add_reader, is_reader_name};

/// This server as an authorization server: its issuer (the public URL, `https://host[:port]`)
/// and the resource its tokens are for (`{issuer}/mcp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connector {
    pub issuer: String,
    pub resource: String,
}

/// An OAuth error as the token, registration and authorization endpoints answer it (RFC 6749
/// 5.2, RFC 7591 3.2.2): a fixed code, never a detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthError {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    InvalidScope,
    InvalidTarget,
    UnsupportedGrantType,
    UnsupportedResponseType,
    InvalidRedirectUri,
    InvalidClientMetadata,
    /// A bound is full (registrations, requests waiting for the owner).
    TemporarilyUnavailable,
    ServerError,
}

impl OAuthError {
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthError::InvalidRequest => "invalid_request",
            OAuthError::InvalidClient => "invalid_client",
            OAuthError::InvalidGrant => "invalid_grant",
            OAuthError::InvalidScope => "invalid_scope",
            OAuthError::InvalidTarget => "invalid_target",
            OAuthError::UnsupportedGrantType => "unsupported_grant_type",
            OAuthError::UnsupportedResponseType => "unsupported_response_type",
            OAuthError::InvalidRedirectUri => "invalid_redirect_uri",
            OAuthError::InvalidClientMetadata => "invalid_client_metadata",
            OAuthError::TemporarilyUnavailable => "temporarily_unavailable",
            OAuthError::ServerError => "server_error",
        }
    }

    /// The HTTP status it is answered with.
    pub fn http_status(self) -> u16 {
        match self {
            OAuthError::InvalidClient => 401,
            OAuthError::TemporarilyUnavailable => 503,
            OAuthError::ServerError => 500,
            _ => 400,
        }
    }
}

fn store_failed(e: runread_store::StoreError) -> OAuthError {
    tracing::warn!(error = %e, "store unavailable (oauth)");
    OAuthError::ServerError
}

/// A client as the authorization endpoint knows it: registered here, or described by its
/// metadata document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    pub client_id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
}

/// Whether `name` may be a client's name: bounded, and every character shown as written (no
/// control, bidirectional or zero-width character that could make it look like another name).
pub fn is_client_name(name: &str) -> bool {
    name.len() <= OAUTH_CLIENT_NAME_MAX_BYTES && runread_core::names::is_shown_as_written(name)
}

/// The host of `uri` (lowercase, without port), if it has one.
fn host_of(uri: &str) -> Option<String> {
    let (_, rest) = uri.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let host = authority
        .rsplit_once(':')
        .filter(|(h, port)| !h.ends_with(']') || port.bytes().all(|b| b.is_ascii_digit()))
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(h, _)| h);
    Some(host.to_ascii_lowercase())
}

fn is_loopback_host(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

/// Who registered a client, as far as its registration tells: the host of its first redirect
/// URI, or — for a native client listening on loopback, which every such client shares — the
/// name it gave. What the share of unapproved registrations
/// ([`OAUTH_UNAPPROVED_CLIENTS_PER_REGISTRANT_MAX`]) is counted by: it keeps one registrant from
/// filling the bound, not a party that varies its hosts and names (the total bound holds them).
fn registrant(redirect_uris: &[String], name: &str) -> String {
    match redirect_uris.first().and_then(|u| host_of(u)) {
        Some(host) if !is_loopback_host(&host) => host,
        _ => format!("loopback:{}", runread_core::names::look(name)),
    }
}

/// Whether `uri` may be a redirect URI: absolute `https`, or `http` to a loopback host (a
/// native client's local listener); no fragment, no userinfo, visible ASCII, bounded.
pub fn is_redirect_uri(uri: &str) -> bool {
    if uri.is_empty()
        || uri.len() > OAUTH_URI_MAX_BYTES
        || !uri.bytes().all(|b| b.is_ascii_graphic())
        || uri.contains('#')
    {
        return false;
    }
    let Some((scheme, rest)) = uri.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    if authority.is_empty() || authority.contains('@') {
        return false;
    }
    let host = authority
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(h, _)| h)
        .to_ascii_lowercase();
    match scheme {
        "https" => true,
        "http" => matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]"),
        _ => false,
    }
}

/// The features a `scope` names (feature names separated by spaces, RFC 6749 3.3); no scope, or
/// one of spaces only: every feature. Any other character (a tab included) is part of a word,
/// and a word that is no feature's name is `invalid_scope`.
pub fn scope_features(scope: Option<&str>) -> Result<Vec<Feature>, OAuthError> {
    let Some(scope) = scope.filter(|s| s.bytes().any(|b| b != b' ')) else {
        return Ok(Feature::ALL.to_vec());
    };
    let mut out = Vec::new();
    for word in scope.split(' ').filter(|w| !w.is_empty()) {
        let f = Feature::parse(word).ok_or(OAuthError::InvalidScope)?;
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out.sort();
    Ok(out)
}

/// Features written as a scope.
pub fn scope_of(features: &[Feature]) -> String {
    features
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A registration (RFC 7591) as runread reads it: a name, the redirect URIs, and nothing that
/// would need a client secret.
#[derive(Debug, Clone)]
pub struct Registration {
    pub client_name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: Option<String>,
    pub grant_types: Option<Vec<String>>,
    pub response_types: Option<Vec<String>>,
}

/// The name a registration gives its client, if runread accepts the registration: a public
/// client (no secret: `token_endpoint_auth_method` `none`), 1..=[`OAUTH_REDIRECT_URIS_MAX`]
/// redirect URIs runread accepts ([`is_redirect_uri`]), the code flow only, and a name that is
/// shown as written ([`is_client_name`]; none: `unnamed client`). Reads nothing: the fuzz targets
/// call it.
pub fn check_registration(r: &Registration) -> Result<String, OAuthError> {
    if r.redirect_uris.is_empty()
        || r.redirect_uris.len() > OAUTH_REDIRECT_URIS_MAX
        || !r.redirect_uris.iter().all(|u| is_redirect_uri(u))
    {
        return Err(OAuthError::InvalidRedirectUri);
    }
    let method_ok = r
        .token_endpoint_auth_method
        .as_deref()
        .is_none_or(|m| m == "none");
    let grants_ok = r.grant_types.as_ref().is_none_or(|g| {
        g.iter()
            .all(|t| t == "authorization_code" || t == "refresh_token")
    });
    let responses_ok = r
        .response_types
        .as_ref()
        .is_none_or(|t| t.iter().all(|t| t == "code"));
    let name = r.client_name.as_deref().unwrap_or("unnamed client");
    if !method_ok || !grants_ok || !responses_ok || !is_client_name(name) {
        return Err(OAuthError::InvalidClientMetadata);
    }
    Ok(name.to_owned())
}

/// Registers a public client ([`check_registration`]), within the bounds on clients in all,
/// clients never approved, and clients never approved of its registrant; those never approved
/// are purged first.
pub fn register(
    store: &dyn Store,
    r: Registration,
    now_ms: i64,
) -> Result<OAuthClient, OAuthError> {
    let name = check_registration(&r)?;
    purge(store, now_ms)?;
    let registrant = registrant(&r.redirect_uris, &name);
    let client = OAuthClient {
        client_id: oauth::generate("dcr_")
            .map_err(|_| OAuthError::ServerError)?
            .chars()
            .take(4 + 32)
            .collect(),
        name,
        redirect_uris: r.redirect_uris,
        created_at_ms: now_ms,
        approved_at_ms: None,
        registrant,
    };
    let bounds = OAuthClientBounds {
        total_max: OAUTH_CLIENTS_MAX,
        unapproved_max: OAUTH_UNAPPROVED_CLIENTS_MAX,
        unapproved_per_registrant_max: OAUTH_UNAPPROVED_CLIENTS_PER_REGISTRANT_MAX,
    };
    match store.insert_oauth_client(&client, bounds) {
        Ok(true) => Ok(client),
        Ok(false) => Err(OAuthError::TemporarilyUnavailable),
        Err(e) => Err(store_failed(e)),
    }
}

/// Deletes what is over: expired tokens and requests, clients never approved within
/// [`OAUTH_UNAPPROVED_CLIENT_SECS`].
fn purge(store: &dyn Store, now_ms: i64) -> Result<(), OAuthError> {
    store
        .purge_oauth(now_ms, now_ms - OAUTH_UNAPPROVED_CLIENT_SECS * 1000)
        .map_err(store_failed)
}

/// A registered client, by id.
pub fn registered_client(
    store: &dyn Store,
    client_id: &str,
) -> Result<Option<ClientInfo>, OAuthError> {
    Ok(store
        .oauth_client(client_id)
        .map_err(store_failed)?
        .map(|c| ClientInfo {
            client_id: c.client_id,
            name: c.name,
            redirect_uris: c.redirect_uris,
        }))
}

/// An authorization request's parameters, each present at most once (the endpoint refuses a
/// repeated one before this).
#[derive(Debug, Clone, Default)]
pub struct AuthorizeParams {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub resource: Option<String>,
    pub scope: Option<String>,
}

/// What an authorization request asks, once runread accepts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    pub redirect_uri: String,
    pub code_challenge: String,
    pub features: Vec<Feature>,
}

/// Checks an authorization request of `client` against this connector: the redirect URI one the
/// client registered, the code flow, PKCE S256 with a well-formed challenge, exactly this
/// resource, a bounded printable `state`, a scope of feature names. Reads nothing: the fuzz
/// targets call it.
pub fn check_authorize(
    connector: &Connector,
    client: &ClientInfo,
    p: &AuthorizeParams,
) -> Result<Authorization, OAuthError> {
    let redirect_uri = p
        .redirect_uri
        .as_deref()
        .ok_or(OAuthError::InvalidRequest)?;
    if !client.redirect_uris.iter().any(|u| u == redirect_uri) {
        return Err(OAuthError::InvalidRedirectUri);
    }
    if p.response_type.as_deref() != Some("code") {
        return Err(OAuthError::UnsupportedResponseType);
    }
    let challenge = p
        .code_challenge
        .as_deref()
        .ok_or(OAuthError::InvalidRequest)?;
    if p.code_challenge_method.as_deref() != Some("S256") || !oauth::is_s256_challenge(challenge) {
        return Err(OAuthError::InvalidRequest);
    }
    if p.resource.as_deref() != Some(connector.resource.as_str()) {
        return Err(OAuthError::InvalidTarget);
    }
    if p.state.as_deref().is_some_and(|s| {
        s.len() > OAUTH_STATE_MAX_BYTES || !s.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
    }) {
        return Err(OAuthError::InvalidRequest);
    }
    Ok(Authorization {
        redirect_uri: redirect_uri.to_owned(),
        code_challenge: challenge.to_owned(),
        features: scope_features(p.scope.as_deref())?,
    })
}

/// Checks an authorization request of `client` ([`check_authorize`]) and records it, waiting
/// for the owner. Every refusal is answered on the page, never by a redirect: a request runread
/// refuses sends the browser nowhere.
pub fn begin(
    store: &dyn Store,
    connector: &Connector,
    client: &ClientInfo,
    p: &AuthorizeParams,
    now_ms: i64,
) -> Result<OAuthRequest, OAuthError> {
    let asked = check_authorize(connector, client, p)?;
    purge(store, now_ms)?;
    let request = OAuthRequest {
        id: oauth::generate("").map_err(|_| OAuthError::ServerError)?,
        user_code: oauth::user_code().map_err(|_| OAuthError::ServerError)?,
        client_id: client.client_id.clone(),
        client_name: client.name.clone(),
        redirect_uri: asked.redirect_uri,
        state_sha256: p.state.as_deref().map(state_digest),
        code_challenge: asked.code_challenge,
        resource: connector.resource.clone(),
        scope: scope_of(&asked.features),
        created_at_ms: now_ms,
        expires_at_ms: now_ms + OAUTH_REQUEST_SECS * 1000,
        decided_at_ms: None,
        reader_id: None,
        granted_scope: None,
        code_hash: None,
        code_expires_at_ms: None,
        code_used_at_ms: None,
    };
    let bounds = OAuthRequestBounds {
        pending_max: OAUTH_PENDING_REQUESTS_MAX,
        pending_per_client_max: OAUTH_PENDING_REQUESTS_PER_CLIENT_MAX,
    };
    match store.insert_oauth_request(&request, bounds) {
        Ok(true) => Ok(request),
        Ok(false) => Err(OAuthError::TemporarilyUnavailable),
        Err(e) => Err(store_failed(e)),
    }
}

/// Where the public page stands for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Waiting for the owner: show the code again.
    Waiting(Box<OAuthRequest>),
    /// Decided: send the browser to this address (the client's redirect URI with a code, or
    /// with `error=access_denied`).
    Redirect(String),
    /// Unknown, expired, or answered already.
    Over,
}

/// The SHA-256 (hex) a request keeps of the client's `state`.
fn state_digest(state: &str) -> String {
    runread_core::sha256_hex(state.as_bytes())
}

/// The public page's next step for request `id`, whose page came back with the client's `state`
/// (the browser carries it; it must be the one the request began with): its one code is made
/// here, on the first visit after the owner approved.
pub fn progress(
    store: &dyn Store,
    connector: &Connector,
    id: &str,
    state: Option<&str>,
    now_ms: i64,
) -> Result<Progress, OAuthError> {
    let Some(request) = store.oauth_request(id).map_err(store_failed)? else {
        return Ok(Progress::Over);
    };
    if request.expires_at_ms <= now_ms {
        return Ok(Progress::Over);
    }
    let state_matches = match (&request.state_sha256, state) {
        (None, None) => true,
        (Some(kept), Some(s)) => *kept == state_digest(s),
        _ => false,
    };
    if !state_matches {
        return Err(OAuthError::InvalidRequest);
    }
    if request.decided_at_ms.is_none() {
        return Ok(Progress::Waiting(Box::new(request)));
    }
    if request.reader_id.is_none() {
        return Ok(Progress::Redirect(redirect_to(
            &request,
            connector,
            state,
            &[("error", "access_denied")],
        )));
    }
    let code = oauth::generate(oauth::CODE_PREFIX).map_err(|_| OAuthError::ServerError)?;
    let issued = store
        .issue_oauth_code(
            id,
            &oauth::hash(&code),
            now_ms + OAUTH_CODE_SECS * 1000,
            now_ms,
        )
        .map_err(store_failed)?;
    if !issued {
        return Ok(Progress::Over);
    }
    Ok(Progress::Redirect(redirect_to(
        &request,
        connector,
        state,
        &[("code", &code)],
    )))
}

/// The request's redirect URI with `extra`, the client's `state` and `iss` (RFC 9207) appended.
fn redirect_to(
    request: &OAuthRequest,
    connector: &Connector,
    state: Option<&str>,
    extra: &[(&str, &str)],
) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in extra {
        query.append_pair(k, v);
    }
    if let Some(state) = state {
        query.append_pair("state", state);
    }
    query.append_pair("iss", &connector.issuer);
    let sep = if request.redirect_uri.contains('?') {
        '&'
    } else {
        '?'
    };
    format!("{}{sep}{}", request.redirect_uri, query.finish())
}

/// The requests waiting for the owner (the console's list).
pub fn pending(store: &dyn Store, now_ms: i64) -> Result<Vec<OAuthRequest>, OAuthError> {
    store.oauth_requests_pending(now_ms).map_err(store_failed)
}

/// Why the owner's decision did not take. Owner-facing.
#[derive(Debug)]
pub enum DecideError {
    /// Decided before, expired, or never made.
    NotPending,
    /// No feature left to allow.
    NoFeatures,
    /// Joining a reader that is not (or no longer) live.
    NoSuchReader,
    Reader(ReaderError),
    Store(String),
}

impl std::fmt::Display for DecideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecideError::NotPending => {
                write!(f, "that request is no longer waiting (decided or expired)")
            }
            DecideError::NoFeatures => write!(f, "allow at least one feature"),
            DecideError::NoSuchReader => write!(f, "that reader was removed meanwhile"),
            DecideError::Reader(e) => write!(f, "{e}"),
            DecideError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// Which reader an approved client becomes: a new one (the name the owner chose; refused when a
/// live reader has it or one like it), or — only when the owner chose so explicitly, having been
/// shown that reader's live grants — an existing one, by id. A client's own name never picks a
/// reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderChoice<'a> {
    New { name: &'a str },
    Join { reader_id: &'a str },
}

/// The name the console offers for the new reader a client would become: the client's name with
/// ` (connector)`, numbered when a live reader has that name or one that looks like it, and cut to
/// the bound on reader names. Never a live reader's name.
pub fn suggested_reader_name(store: &dyn Store, client_name: &str) -> Result<String, DecideError> {
    let readers = store
        .readers()
        .map_err(|e| DecideError::Store(e.to_string()))?;
    let looks: Vec<String> = readers
        .iter()
        .filter(|r| r.removed_at_ms.is_none())
        .map(|r| runread_core::names::look(&r.name))
        .collect();
    let base: String = if is_reader_name(client_name.trim()) {
        client_name.trim().to_owned()
    } else {
        "client".to_owned()
    };
    (1u32..)
        .map(|n| {
            let suffix = match n {
                1 => " (connector)".to_owned(),
                n => format!(" (connector {n})"),
            };
            let mut head = base.clone();
            while head.len() + suffix.len() > READER_NAME_MAX_BYTES {
                head.pop();
            }
            format!("{head}{suffix}")
        })
        .find(|name| !looks.contains(&runread_core::names::look(name)))
        .ok_or_else(|| DecideError::Store("no reader name left".into()))
}

/// The owner approves request `id`, allowing at most `features` of those asked for, for the
/// reader `choice` names (see [`ReaderChoice`]; a reader made here has a key nobody is shown).
pub fn approve(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    id: &str,
    choice: ReaderChoice<'_>,
    features: &[Feature],
    now_ms: i64,
) -> Result<Reader, DecideError> {
    let request = store
        .oauth_request(id)
        .map_err(|e| DecideError::Store(e.to_string()))?
        .filter(|r| r.decided_at_ms.is_none() && r.expires_at_ms > now_ms)
        .ok_or(DecideError::NotPending)?;
    let asked = scope_features(Some(&request.scope)).map_err(|_| DecideError::NotPending)?;
    let allowed: Vec<Feature> = asked.into_iter().filter(|f| features.contains(f)).collect();
    if allowed.is_empty() {
        return Err(DecideError::NoFeatures);
    }
    let reader = match choice {
        ReaderChoice::New { name } => {
            add_reader(store, keys, name, now_ms)
                .map_err(DecideError::Reader)?
                .reader
        }
        ReaderChoice::Join { reader_id } => store
            .reader_of_id(reader_id, now_ms)
            .map_err(|e| DecideError::Store(e.to_string()))?
            .map(|(r, _)| r)
            .ok_or(DecideError::NoSuchReader)?,
    };
    let decided = store
        .decide_oauth_request(id, Some((&reader.id, &scope_of(&allowed))), now_ms)
        .map_err(|e| DecideError::Store(e.to_string()))?;
    if !decided {
        return Err(DecideError::NotPending);
    }
    Ok(reader)
}

/// What joining a client to the reader `reader_id` would let it read: that reader's grants live
/// at `now_ms`, newest first (the console shows them before the owner confirms). `None`: no live
/// reader has that id.
pub fn join_preview(
    store: &dyn Store,
    reader_id: &str,
    now_ms: i64,
) -> Result<Option<(Reader, Vec<Grant>)>, DecideError> {
    store
        .reader_of_id(reader_id, now_ms)
        .map_err(|e| DecideError::Store(e.to_string()))
}

/// The owner denies request `id`: the client is sent back with `access_denied`.
pub fn deny(store: &dyn Store, id: &str, now_ms: i64) -> Result<(), DecideError> {
    match store.decide_oauth_request(id, None, now_ms) {
        Ok(true) => Ok(()),
        Ok(false) => Err(DecideError::NotPending),
        Err(e) => Err(DecideError::Store(e.to_string())),
    }
}

/// What the token endpoint answers: a new access token and its rotated refresh token.
#[derive(Debug, Clone)]
pub struct Tokens {
    pub access_token: zeroize::Zeroizing<String>,
    pub refresh_token: zeroize::Zeroizing<String>,
    pub expires_in: i64,
    pub scope: String,
}

/// One parameter of a form, present at most once (a repeated one is `invalid_request`, RFC
/// 6749 3.2).
pub fn single<'a>(form: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, OAuthError> {
    let mut found = form.iter().filter(|(k, _)| k == name);
    let first = found.next().map(|(_, v)| v.as_str());
    if found.next().is_some() {
        return Err(OAuthError::InvalidRequest);
    }
    Ok(first)
}

fn required<'a>(form: &'a [(String, String)], name: &str) -> Result<&'a str, OAuthError> {
    single(form, name)?.ok_or(OAuthError::InvalidRequest)
}

/// The token endpoint (RFC 6749 3.2) for the authorization-code and refresh-token grants.
pub fn token(
    store: &dyn Store,
    connector: &Connector,
    form: &[(String, String)],
    now_ms: i64,
) -> Result<Tokens, OAuthError> {
    match required(form, "grant_type")? {
        "authorization_code" => redeem_code(store, connector, form, now_ms),
        "refresh_token" => refresh(store, connector, form, now_ms),
        _ => Err(OAuthError::UnsupportedGrantType),
    }
}

fn redeem_code(
    store: &dyn Store,
    connector: &Connector,
    form: &[(String, String)],
    now_ms: i64,
) -> Result<Tokens, OAuthError> {
    // Every code presented is spent before anything else is checked: an exchange that fails for
    // any reason (a missing or repeated parameter included) cannot be retried with the same code.
    let codes: Vec<&str> = form
        .iter()
        .filter(|(k, _)| k == "code")
        .map(|(_, v)| v.as_str())
        .collect();
    let mut redeemed = Vec::with_capacity(1);
    for code in codes
        .iter()
        .filter(|c| oauth::is_well_formed(oauth::CODE_PREFIX, c))
    {
        match store
            .redeem_oauth_code(&oauth::hash(code), now_ms)
            .map_err(store_failed)?
        {
            CodeRedemption::Redeemed(r) => redeemed.push(r),
            CodeRedemption::Reused(r) => {
                // A code used twice was stolen or replayed: whatever it gave is ended.
                store
                    .revoke_oauth_family(&r.id, now_ms)
                    .map_err(store_failed)?;
                return Err(OAuthError::InvalidGrant);
            }
            CodeRedemption::Unknown => {}
        }
    }
    required(form, "code")?;
    let client_id = required(form, "client_id")?;
    let redirect_uri = required(form, "redirect_uri")?;
    let verifier = required(form, "code_verifier")?;
    let resource = required(form, "resource")?;
    let request = match (redeemed.pop(), redeemed.is_empty()) {
        (Some(r), true) => r,
        _ => return Err(OAuthError::InvalidGrant),
    };
    let fresh = request.code_expires_at_ms.is_some_and(|t| t > now_ms);
    if !fresh
        || request.client_id != client_id
        || request.redirect_uri != redirect_uri
        || !oauth::s256_matches(verifier, &request.code_challenge)
    {
        return Err(OAuthError::InvalidGrant);
    }
    if resource != request.resource || resource != connector.resource {
        return Err(OAuthError::InvalidTarget);
    }
    let (Some(reader_id), Some(scope)) = (&request.reader_id, &request.granted_scope) else {
        return Err(OAuthError::InvalidGrant);
    };
    issue(
        store,
        Issue {
            reader_id,
            client_id,
            family: &request.id,
            resource,
            scope,
        },
        now_ms,
    )
}

fn refresh(
    store: &dyn Store,
    connector: &Connector,
    form: &[(String, String)],
    now_ms: i64,
) -> Result<Tokens, OAuthError> {
    let presented = required(form, "refresh_token")?;
    let client_id = required(form, "client_id")?;
    let resource = required(form, "resource")?;
    if !oauth::is_well_formed(oauth::REFRESH_TOKEN_PREFIX, presented) {
        return Err(OAuthError::InvalidGrant);
    }
    let hash = oauth::hash(presented);
    let Some(token) = store
        .oauth_token(&hash)
        .map_err(store_failed)?
        .filter(|t| t.kind == TokenKind::Refresh)
    else {
        return Err(OAuthError::InvalidGrant);
    };
    if token.client_id != client_id {
        return Err(OAuthError::InvalidGrant);
    }
    if resource != token.resource || resource != connector.resource {
        return Err(OAuthError::InvalidTarget);
    }
    if !store
        .use_oauth_refresh(&hash, now_ms)
        .map_err(store_failed)?
    {
        // Used before (replayed after its rotation), revoked or expired: a replay ends the
        // whole family, the legitimate client's tokens included.
        store
            .revoke_oauth_family(&token.family, now_ms)
            .map_err(store_failed)?;
        return Err(OAuthError::InvalidGrant);
    }
    issue(
        store,
        Issue {
            reader_id: &token.reader_id,
            client_id,
            family: &token.family,
            resource,
            scope: &token.scope,
        },
        now_ms,
    )
}

struct Issue<'a> {
    reader_id: &'a str,
    client_id: &'a str,
    family: &'a str,
    resource: &'a str,
    scope: &'a str,
}

/// A new access and refresh token for a live reader.
fn issue(store: &dyn Store, i: Issue<'_>, now_ms: i64) -> Result<Tokens, OAuthError> {
    if store
        .reader_of_id(i.reader_id, now_ms)
        .map_err(store_failed)?
        .is_none()
    {
        return Err(OAuthError::InvalidGrant);
    }
    let access = zeroize::Zeroizing::new(
        oauth::generate(oauth::ACCESS_TOKEN_PREFIX).map_err(|_| OAuthError::ServerError)?,
    );
    let refresh = zeroize::Zeroizing::new(
        oauth::generate(oauth::REFRESH_TOKEN_PREFIX).map_err(|_| OAuthError::ServerError)?,
    );
    for (kind, value, secs) in [
        (TokenKind::Access, &access, OAUTH_ACCESS_TOKEN_SECS),
        (TokenKind::Refresh, &refresh, OAUTH_REFRESH_TOKEN_SECS),
    ] {
        store
            .insert_oauth_token(&OAuthToken {
                token_hash: oauth::hash(value),
                kind,
                reader_id: i.reader_id.to_owned(),
                client_id: i.client_id.to_owned(),
                family: i.family.to_owned(),
                resource: i.resource.to_owned(),
                scope: i.scope.to_owned(),
                created_at_ms: now_ms,
                expires_at_ms: now_ms + secs * 1000,
                used_at_ms: None,
                revoked_at_ms: None,
            })
            .map_err(store_failed)?;
    }
    Ok(Tokens {
        access_token: access,
        refresh_token: refresh,
        expires_in: OAUTH_ACCESS_TOKEN_SECS,
        scope: i.scope.to_owned(),
    })
}

/// Revocation (RFC 7009): the token's whole family ends, whichever kind was presented. Unknown
/// tokens are not an error.
pub fn revoke(store: &dyn Store, presented: &str, now_ms: i64) -> Result<(), OAuthError> {
    if let Some(t) = store
        .oauth_token(&oauth::hash(presented))
        .map_err(store_failed)?
    {
        store
            .revoke_oauth_family(&t.family, now_ms)
            .map_err(store_failed)?;
    }
    Ok(())
}

/// Admission of a bearer token (the connector's credential, in place of the key): a live access
/// token for exactly this resource, of a live reader. Its reader's live grants are capped to the
/// features the owner allowed the client.
pub fn admit_bearer(
    store: &dyn Store,
    connector: &Connector,
    presented: &str,
    now_ms: i64,
) -> Result<KeyContext, ErrorCode> {
    if !oauth::is_well_formed(oauth::ACCESS_TOKEN_PREFIX, presented) {
        return Err(ErrorCode::InvalidKey);
    }
    let unavailable = |e: runread_store::StoreError| {
        tracing::warn!(error = %e, "store unavailable (bearer)");
        ErrorCode::Unavailable
    };
    let token = store
        .oauth_token(&oauth::hash(presented))
        .map_err(unavailable)?
        .filter(|t| {
            t.kind == TokenKind::Access
                && t.revoked_at_ms.is_none()
                && t.expires_at_ms > now_ms
                && t.resource == connector.resource
        })
        .ok_or(ErrorCode::InvalidKey)?;
    let (reader, grants) = store
        .reader_of_id(&token.reader_id, now_ms)
        .map_err(unavailable)?
        .ok_or(ErrorCode::InvalidKey)?;
    let cap = scope_features(Some(&token.scope)).map_err(|_| ErrorCode::InvalidKey)?;
    let live_grants = grants
        .into_iter()
        .filter_map(|mut g| {
            g.features.retain(|f| cap.contains(f));
            (!g.features.is_empty()).then_some(g)
        })
        .collect();
    Ok(KeyContext {
        key_hash: reader.key_hash.clone(),
        reader,
        live_grants,
        feature_cap: Some(cap),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_https_or_loopback_http_without_fragment_or_userinfo() {
        for ok in [
            "https://chatgpt.com/connector_platform_oauth_redirect",
            "https://claude.ai/api/mcp/auth_callback",
            "http://localhost:3118/callback",
            "http://127.0.0.1:9/cb?x=1",
        ] {
            assert!(is_redirect_uri(ok), "{ok}");
        }
        for bad in [
            "",
            "http://evil.example/cb",
            "https://user@evil.example/cb",
            "https://a.example/cb#frag",
            "javascript:alert(1)",
            "ftp://a.example/cb",
            "https:///cb",
            "https://a.example/c b",
        ] {
            assert!(!is_redirect_uri(bad), "{bad}");
        }
        let long = format!("https://a.example/{}", "a".repeat(OAUTH_URI_MAX_BYTES));
        assert!(!is_redirect_uri(&long));
        let at_bound = format!(
            "https://a.example/{}",
            "a".repeat(OAUTH_URI_MAX_BYTES - "https://a.example/".len())
        );
        assert!(is_redirect_uri(&at_bound));
    }

    #[test]
    fn scopes_are_feature_names() {
        assert_eq!(scope_features(None).unwrap(), Feature::ALL.to_vec());
        assert_eq!(
            scope_features(Some("status final_answer status")).unwrap(),
            vec![Feature::FinalAnswer, Feature::Status]
        );
        assert_eq!(
            scope_features(Some("final_answer admin")),
            Err(OAuthError::InvalidScope)
        );
    }

    #[test]
    fn a_repeated_parameter_is_invalid() {
        let form = vec![
            ("code".to_owned(), "a".to_owned()),
            ("code".to_owned(), "b".to_owned()),
        ];
        assert_eq!(single(&form, "code"), Err(OAuthError::InvalidRequest));
        assert_eq!(single(&form, "state"), Ok(None));
    }
}
