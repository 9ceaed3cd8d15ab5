//! The public origin a connector reaches runread at (`--public-url`): the one place its URL is
//! read, and what the door's guards, the key layer and the connector's endpoints take from it.

use runread_service::oauth::Connector;

use crate::MCP_PATH;

/// Path of Protected Resource Metadata for `/mcp` (RFC 9728 3.1).
pub const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The public origin the owner's tunnel or proxy presents (`--public-url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicOrigin {
    /// Its issuer (`https://host[:port]`) and resource (`{issuer}/mcp`).
    pub connector: Connector,
    /// The `Host` it arrives with (`host[:port]`, lowercase).
    pub authority: String,
    /// Hosts whose Client ID Metadata Documents may be fetched from loopback, private or
    /// link-local addresses (`--cimd-allow-host`); none by default.
    pub cimd_private_hosts: Vec<String>,
    /// Origins of browser-based clients answered with CORS (`--cors-origin`, each read by
    /// [`crate::cors::parse_origin`]); none by default.
    pub cors_origins: Vec<String>,
}

impl PublicOrigin {
    /// Reads `https://host[:port]` (a trailing `/` allowed): HTTPS only, no user, path, query or
    /// fragment.
    pub fn parse(url: &str) -> Result<PublicOrigin, String> {
        let bad = || {
            format!(
                "--public-url {url:?}: give the https origin your tunnel presents, like https://name.example"
            )
        };
        let rest = url.strip_prefix("https://").ok_or_else(bad)?;
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        let parsed: http::uri::Authority = authority.parse().map_err(|_| bad())?;
        if authority.is_empty()
            || authority.contains(['@', '/', '?', '#'])
            || parsed.as_str() != authority
            || parsed.host().is_empty()
        {
            return Err(bad());
        }
        let authority = authority.to_ascii_lowercase();
        let issuer = format!("https://{authority}");
        Ok(PublicOrigin {
            connector: Connector {
                resource: format!("{issuer}{MCP_PATH}"),
                issuer,
            },
            authority,
            cimd_private_hosts: Vec::new(),
            cors_origins: Vec::new(),
        })
    }

    /// `path` at the public origin.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.connector.issuer)
    }

    /// The `WWW-Authenticate` challenge of a request to `/mcp` without a usable credential.
    pub fn challenge(&self, invalid_token: bool) -> String {
        let error = if invalid_token {
            "error=\"invalid_token\", "
        } else {
            ""
        };
        format!(
            "Bearer {error}resource_metadata=\"{}\"",
            self.url(PROTECTED_RESOURCE_PATH)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_are_https_origins_only() {
        let p = PublicOrigin::parse("https://Runread.Example:8443/").unwrap();
        assert_eq!(p.authority, "runread.example:8443");
        assert_eq!(p.connector.issuer, "https://runread.example:8443");
        assert_eq!(p.connector.resource, "https://runread.example:8443/mcp");
        for bad in [
            "http://runread.example",
            "https://user@runread.example",
            "https://runread.example/mcp",
            "https://runread.example?x",
            "https://runread.example#x",
            "https://",
            "runread.example",
        ] {
            assert!(PublicOrigin::parse(bad).is_err(), "{bad}");
        }
    }
}
