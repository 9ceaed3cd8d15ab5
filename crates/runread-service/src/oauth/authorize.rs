//! The authorization request: checked, kept pending for the owner's decision (its `state` kept
//! as a digest only), and its progress as the client's browser polls it.

use runread_core::limits::{
    OAUTH_CODE_SECS, OAUTH_PENDING_REQUESTS_MAX, OAUTH_PENDING_REQUESTS_PER_CLIENT_MAX,
    OAUTH_REQUEST_SECS, OAUTH_STATE_MAX_BYTES,
};
use runread_core::{Feature, oauth};
use runread_store::{OAuthRequestBounds, Store};

use crate::oauth::{
    ClientInfo, Connector, OAuthError, purge, scope_features, scope_of, store_failed,
};
pub use runread_store::OAuthRequest;

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
/// client registered (any port of a loopback one), the code flow, PKCE S256 with a well-formed challenge, exactly this
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
    if !client
        .redirect_uris
        .iter()
        .any(|u| crate::oauth::register::redirect_uri_matches(u, redirect_uri))
    {
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
