//! Connectors: runread as its own OAuth 2.1 authorization server at the owner's public URL
//! (`serve --public-url`), per the MCP authorization spec. An OAuth client the owner approved on
//! the console is a reader; its access tokens are admitted like that reader's key.
//!
//! The rules, each in one place here:
//! - authorization code with PKCE S256 only; `resource` (RFC 8707) required and equal to this
//!   server's resource, in the authorization and every token request, and bound into every token;
//! - a redirect URI matches a registered one byte for byte;
//! - a code is single-use and short-lived ([`OAUTH_CODE_SECS`](runread_core::limits::OAUTH_CODE_SECS)); a reused one revokes every
//!   token its authorization gave; any exchange that presents it spends it, a malformed one too;
//! - the client's `state` is echoed back, never kept: the store holds its SHA-256;
//! - a client's name is shown to the owner and never trusted: approving a client makes a new
//!   reader unless the owner explicitly joins it to an existing one ([`ReaderChoice`](crate::owner::ReaderChoice));
//! - access tokens opaque, short-lived ([`OAUTH_ACCESS_TOKEN_SECS`](runread_core::limits::OAUTH_ACCESS_TOKEN_SECS)), stored as hashes; refresh
//!   tokens rotated on every use, a replayed one revokes its family;
//! - nothing is approved here: the owner decides on the console ([`Owner::approve_connection`](crate::owner::Owner::approve_connection), [`Owner::deny_connection`](crate::owner::Owner::deny_connection)).
//!
//! The HTTP endpoints (`runread-mcp`) parse and answer; the client of a Client ID Metadata
//! Document is fetched there and handed in as a [`ClientInfo`].

use runread_core::Feature;
use runread_core::limits::OAUTH_CLIENT_NAME_MAX_BYTES;

pub use runread_store::OAuthRequest;

mod authorize;
mod bearer;
mod register;
mod token;

pub use authorize::{Authorization, AuthorizeParams, Progress, begin, check_authorize, progress};
pub use bearer::admit_bearer;
pub(crate) use register::purge;
pub use register::{
    Registration, check_registration, is_redirect_uri, register, registered_client,
};
pub use token::{Tokens, revoke, single, token};

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

pub(crate) fn store_failed(e: runread_store::StoreError) -> OAuthError {
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

#[cfg(test)]
mod tests {
    use super::*;
    use runread_core::limits::OAUTH_URI_MAX_BYTES;

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
