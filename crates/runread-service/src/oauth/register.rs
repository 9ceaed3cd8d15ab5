//! Dynamic client registration (RFC 7591) and a registered client's record: redirect URIs,
//! names, who registered, and the bounds on clients not approved yet.

use crate::oauth::{ClientInfo, OAuthError, is_client_name, store_failed};
use runread_core::limits::{
    OAUTH_CLIENTS_MAX, OAUTH_REDIRECT_URIS_MAX, OAUTH_UNAPPROVED_CLIENT_SECS,
    OAUTH_UNAPPROVED_CLIENTS_MAX, OAUTH_UNAPPROVED_CLIENTS_PER_REGISTRANT_MAX, OAUTH_URI_MAX_BYTES,
};
use runread_core::oauth;
use runread_store::{OAuthClient, OAuthClientBounds, Store};

/// A URI's parts as redirect URIs are compared: `scheme://host[:port]rest`, `rest` the path and
/// query as written.
struct UriParts<'a> {
    scheme: &'a str,
    /// Lowercase.
    host: String,
    port: Option<&'a str>,
    authority: &'a str,
    rest: &'a str,
}

fn uri_parts(uri: &str) -> Option<UriParts<'_>> {
    let (scheme, after) = uri.split_once("://")?;
    let end = after.find(['/', '?']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(end);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => (h, Some(port)),
        _ => (authority, None),
    };
    Some(UriParts {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
        authority,
        rest,
    })
}

/// The host of `uri` (lowercase, without port), if it has one.
fn host_of(uri: &str) -> Option<String> {
    uri_parts(uri).map(|p| p.host)
}

fn is_loopback_host(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

/// Whether an authorization request's redirect URI `asked` is the registered `registered`: the
/// same text, or — for an `http` URI to a loopback host — the same but for the port, which a
/// native client picks when it starts listening (RFC 8252 §7.3: the authorization server MUST
/// allow any port there). Scheme, host, path and query still match exactly.
pub fn redirect_uri_matches(registered: &str, asked: &str) -> bool {
    if registered == asked {
        return true;
    }
    let (Some(r), Some(a)) = (uri_parts(registered), uri_parts(asked)) else {
        return false;
    };
    r.scheme == "http"
        && a.scheme == "http"
        && is_loopback_host(&r.host)
        && r.host == a.host
        && r.rest == a.rest
        && a.port.is_none_or(|p| !p.is_empty())
        && is_redirect_uri(asked)
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
    let Some(parts) = uri_parts(uri) else {
        return false;
    };
    if parts.authority.is_empty() || parts.authority.contains('@') {
        return false;
    }
    match parts.scheme {
        "https" => true,
        "http" => is_loopback_host(&parts.host),
        _ => false,
    }
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
pub(crate) fn purge(store: &dyn Store, now_ms: i64) -> Result<(), OAuthError> {
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
