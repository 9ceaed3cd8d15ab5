//! Connectors: runread as its own OAuth 2.1 authorization server at the owner's public URL
//! (`serve --public-url`), per the MCP authorization spec. An OAuth client the owner approved on
//! the console is a reader; its access tokens are admitted like that reader's key.
//!
//! The rules, each in one place here:
//! - authorization code with PKCE S256 only; `resource` (RFC 8707) required and equal to this
//!   server's resource, in the authorization and every token request, and bound into every token;
//! - a redirect URI matches a registered one byte for byte;
//! - a code is single-use and short-lived ([`OAUTH_CODE_SECS`]); a reused one revokes every
//!   token its authorization gave;
//! - access tokens opaque, short-lived ([`OAUTH_ACCESS_TOKEN_SECS`]), stored as hashes; refresh
//!   tokens rotated on every use, a replayed one revokes its family;
//! - nothing is approved here: the owner decides on the console ([`approve`], [`deny`]).
//!
//! The HTTP endpoints (`runread-mcp`) parse and answer; the client of a Client ID Metadata
//! Document is fetched there and handed in as a [`ClientInfo`].

use runread_core::limits::{
    OAUTH_ACCESS_TOKEN_SECS, OAUTH_CLIENT_NAME_MAX_BYTES, OAUTH_CLIENTS_MAX, OAUTH_CODE_SECS,
    OAUTH_PENDING_REQUESTS_MAX, OAUTH_REDIRECT_URIS_MAX, OAUTH_REFRESH_TOKEN_SECS,
    OAUTH_REQUEST_SECS, OAUTH_STATE_MAX_BYTES, OAUTH_UNAPPROVED_CLIENT_SECS,
    OAUTH_UNAPPROVED_CLIENTS_MAX, OAUTH_URI_MAX_BYTES,
};
use runread_core::{ErrorCode, Feature, oauth};
use runread_gate::keys::KeyProvider;
use runread_store::{
    CodeRedemption, OAuthClient, OAuthClientBounds, OAuthToken, Reader, Store, TokenKind,
};

pub use runread_store::OAuthRequest;

use crate::KeyContext;
use crate::owner::{ReaderError, add_reader, is_reader_name, live_reader};

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

/// The features a `scope` names (space-separated feature names); no scope: every feature.
pub fn scope_features(scope: Option<&str>) -> Result<Vec<Feature>, OAuthError> {
    let Some(scope) = scope.filter(|s| !s.trim().is_empty()) else {
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

/// Registers a public client (no secret: `token_endpoint_auth_method` `none`), within the
/// bounds on clients in all and clients never approved; those never approved are purged first.
pub fn register(
    store: &dyn Store,
    r: Registration,
    now_ms: i64,
) -> Result<OAuthClient, OAuthError> {
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
    let name = r.client_name.unwrap_or_else(|| "unnamed client".into());
    if !method_ok
        || !grants_ok
        || !responses_ok
        || name.len() > OAUTH_CLIENT_NAME_MAX_BYTES
        || name.chars().any(char::is_control)
    {
        return Err(OAuthError::InvalidClientMetadata);
    }
    purge(store, now_ms)?;
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
    };
    let bounds = OAuthClientBounds {
        total_max: OAUTH_CLIENTS_MAX,
        unapproved_max: OAUTH_UNAPPROVED_CLIENTS_MAX,
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

/// Checks an authorization request of `client` and records it, waiting for the owner. Every
/// refusal is answered on the page, never by a redirect: a request runread refuses sends the
/// browser nowhere.
pub fn begin(
    store: &dyn Store,
    connector: &Connector,
    client: &ClientInfo,
    p: &AuthorizeParams,
    now_ms: i64,
) -> Result<OAuthRequest, OAuthError> {
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
    let features = scope_features(p.scope.as_deref())?;
    purge(store, now_ms)?;
    let request = OAuthRequest {
        id: oauth::generate("").map_err(|_| OAuthError::ServerError)?,
        user_code: oauth::user_code().map_err(|_| OAuthError::ServerError)?,
        client_id: client.client_id.clone(),
        client_name: client.name.clone(),
        redirect_uri: redirect_uri.to_owned(),
        state: p.state.clone(),
        code_challenge: challenge.to_owned(),
        resource: connector.resource.clone(),
        scope: scope_of(&features),
        created_at_ms: now_ms,
        expires_at_ms: now_ms + OAUTH_REQUEST_SECS * 1000,
        decided_at_ms: None,
        reader_id: None,
        granted_scope: None,
        code_hash: None,
        code_expires_at_ms: None,
        code_used_at_ms: None,
    };
    match store.insert_oauth_request(&request, OAUTH_PENDING_REQUESTS_MAX) {
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

/// The public page's next step for request `id`: its one code is made here, on the first visit
/// after the owner approved.
pub fn progress(
    store: &dyn Store,
    connector: &Connector,
    id: &str,
    now_ms: i64,
) -> Result<Progress, OAuthError> {
    let Some(request) = store.oauth_request(id).map_err(store_failed)? else {
        return Ok(Progress::Over);
    };
    if request.expires_at_ms <= now_ms {
        return Ok(Progress::Over);
    }
    if request.decided_at_ms.is_none() {
        return Ok(Progress::Waiting(Box::new(request)));
    }
    if request.reader_id.is_none() {
        return Ok(Progress::Redirect(redirect_to(
            &request,
            connector,
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
        &[("code", &code)],
    )))
}

/// The request's redirect URI with `extra`, its `state` and `iss` (RFC 9207) appended.
fn redirect_to(request: &OAuthRequest, connector: &Connector, extra: &[(&str, &str)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in extra {
        query.append_pair(k, v);
    }
    if let Some(state) = &request.state {
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
            DecideError::Reader(e) => write!(f, "{e}"),
            DecideError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// The owner approves request `id` for the reader `reader_name` (made now unless a live reader
/// has that name; a reader made here has a key nobody is shown), allowing at most `features` of
/// those asked for.
pub fn approve(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    id: &str,
    reader_name: &str,
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
    if !is_reader_name(reader_name) {
        return Err(DecideError::Reader(ReaderError::BadName));
    }
    let reader = match live_reader(store, reader_name).map_err(DecideError::Reader)? {
        Some(r) => r,
        None => {
            add_reader(store, keys, reader_name, now_ms)
                .map_err(DecideError::Reader)?
                .reader
        }
    };
    let decided = store
        .decide_oauth_request(id, Some((&reader.id, &scope_of(&allowed))), now_ms)
        .map_err(|e| DecideError::Store(e.to_string()))?;
    if !decided {
        return Err(DecideError::NotPending);
    }
    Ok(reader)
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
    let code = required(form, "code")?;
    let client_id = required(form, "client_id")?;
    let redirect_uri = required(form, "redirect_uri")?;
    let verifier = required(form, "code_verifier")?;
    let resource = required(form, "resource")?;
    if !oauth::is_well_formed(oauth::CODE_PREFIX, code) {
        return Err(OAuthError::InvalidGrant);
    }
    let request = match store
        .redeem_oauth_code(&oauth::hash(code), now_ms)
        .map_err(store_failed)?
    {
        CodeRedemption::Redeemed(r) => r,
        CodeRedemption::Reused(r) => {
            // A code used twice was stolen or replayed: whatever it gave is ended.
            store
                .revoke_oauth_family(&r.id, now_ms)
                .map_err(store_failed)?;
            return Err(OAuthError::InvalidGrant);
        }
        CodeRedemption::Unknown => return Err(OAuthError::InvalidGrant),
    };
    // The code is spent whatever follows: a wrong verifier cannot be retried.
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
