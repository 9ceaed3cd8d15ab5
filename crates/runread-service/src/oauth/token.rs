//! The token endpoint: a code redeemed once (PKCE S256, the resource bound), refresh tokens
//! rotated with replay detection, and revocation.

use crate::oauth::{Connector, OAuthError, store_failed};
use runread_core::limits::{OAUTH_ACCESS_TOKEN_SECS, OAUTH_REFRESH_TOKEN_SECS};
use runread_core::oauth;
use runread_store::{CodeRedemption, OAuthToken, Store, TokenKind};

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
