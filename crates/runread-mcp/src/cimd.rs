//! Client ID Metadata Documents: a client whose `client_id` is an HTTPS URL is described by the
//! JSON document at that URL, which runread fetches when the client asks to be authorized.
//!
//! The URL is chosen by whoever opens the public authorization page, so the fetch is a
//! server-side request an attacker chooses, bounded accordingly:
//! - `https` only, default port or an explicit one, no userinfo, no fragment;
//! - the host is resolved once and runread connects to an address it checked: never loopback,
//!   private, link-local, shared, multicast or otherwise non-global, unless the owner named the
//!   host (`--cimd-allow-host`); the connection goes to that very address (no second lookup an
//!   attacker's DNS could answer differently);
//! - the certificate is checked against the system's roots for the host's name;
//! - no redirect is followed;
//! - at most [`CIMD_MAX_BYTES`], and the whole fetch, connecting included, within
//!   [`CIMD_DEADLINE_SECS`];
//! - the document's `client_id` must be the URL itself, its redirect URIs valid.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;

use runread_core::limits::{
    CIMD_DEADLINE_SECS, CIMD_MAX_BYTES, OAUTH_REDIRECT_URIS_MAX, OAUTH_URI_MAX_BYTES,
};
use runread_service::oauth::{ClientInfo, OAuthError, is_redirect_uri};

/// Fetches Client ID Metadata Documents.
pub struct Fetcher {
    /// Hosts allowed at non-global addresses (lowercase).
    private_hosts: Vec<String>,
    tls: Option<tokio_rustls::TlsConnector>,
}

impl Fetcher {
    pub fn new(private_hosts: Vec<String>) -> Fetcher {
        Fetcher {
            private_hosts: private_hosts
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            tls: tls_connector(),
        }
    }

    /// The client `url` describes, or `invalid_client` (whatever went wrong: the reason is
    /// logged locally, never answered).
    pub async fn client(&self, url: &str) -> Result<ClientInfo, OAuthError> {
        let deadline = Duration::from_secs(CIMD_DEADLINE_SECS);
        match tokio::time::timeout(deadline, self.fetch(url)).await {
            Ok(Ok(info)) => Ok(info),
            Ok(Err(reason)) => {
                tracing::info!(reason, "client metadata document refused");
                Err(OAuthError::InvalidClient)
            }
            Err(_) => {
                tracing::info!("client metadata document: deadline passed");
                Err(OAuthError::InvalidClient)
            }
        }
    }

    async fn fetch(&self, url: &str) -> Result<ClientInfo, &'static str> {
        let target = Target::parse(url)?;
        let tls = self.tls.clone().ok_or("no TLS roots")?;
        let addr = self.address_of(&target).await?;
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|_| "connect failed")?;
        let name = rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|_| "bad server name")?;
        let stream = tls.connect(name, tcp).await.map_err(|_| "TLS failed")?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|_| "HTTP handshake failed")?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let request = http::Request::get(target.path_and_query.as_str())
            .header(http::header::HOST, target.authority.as_str())
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, "runread")
            .body(Empty::<Bytes>::new())
            .map_err(|_| "bad request")?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|_| "request failed")?;
        // Redirects are not followed: a 3xx is a refusal like any other non-200.
        if response.status() != http::StatusCode::OK {
            return Err("status not 200");
        }
        let body = Limited::new(response.into_body(), CIMD_MAX_BYTES)
            .collect()
            .await
            .map_err(|_| "body too large or broken")?
            .to_bytes();
        document(url, &body)
    }

    /// One address of the host this fetch may connect to.
    async fn address_of(&self, target: &Target) -> Result<SocketAddr, &'static str> {
        let private_ok = self.private_hosts.iter().any(|h| h == &target.host);
        let addrs = tokio::net::lookup_host((target.host.as_str(), target.port))
            .await
            .map_err(|_| "host not found")?;
        let mut any = false;
        for addr in addrs {
            any = true;
            if private_ok || is_global(addr.ip()) {
                return Ok(addr);
            }
        }
        Err(if any {
            "host resolves to a non-global address"
        } else {
            "host not found"
        })
    }
}

/// The system's roots (`SSL_CERT_FILE` respected), with the ring provider.
fn tls_connector() -> Option<tokio_rustls::TlsConnector> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Some(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// A metadata document URL, taken apart.
struct Target {
    host: String,
    port: u16,
    authority: String,
    path_and_query: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, &'static str> {
        if url.len() > OAUTH_URI_MAX_BYTES || !url.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("bad URL");
        }
        let uri: http::Uri = url.parse().map_err(|_| "bad URL")?;
        if uri.scheme_str() != Some("https") || url.contains('#') {
            return Err("not https");
        }
        let authority = uri.authority().ok_or("no host")?;
        if authority.as_str().contains('@') {
            return Err("userinfo");
        }
        let path_and_query = uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .filter(|p| p.len() > 1)
            .ok_or("no path")?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        Ok(Target {
            port: authority.port_u16().unwrap_or(443),
            authority: authority.as_str().to_owned(),
            host,
            path_and_query,
        })
    }
}

/// Whether `ip` is a global unicast address: not loopback, private, link-local, shared (CGNAT),
/// unspecified, broadcast, multicast, documentation or benchmarking, nor an IPv6 form of one.
pub fn is_global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_global(IpAddr::V4(v4));
            }
            let first = v6.segments().first().copied().unwrap_or(0);
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments().get(1) == Some(&0x0db8)
                || first == 0x0064
                || first == 0)
        }
    }
}

/// The client a document describes, if it is one for `url`.
fn document(url: &str, body: &[u8]) -> Result<ClientInfo, &'static str> {
    let serde_json::Value::Object(m) =
        serde_json::from_slice::<serde_json::Value>(body).map_err(|_| "not JSON")?
    else {
        return Err("not an object");
    };
    if m.get("client_id").and_then(|v| v.as_str()) != Some(url) {
        return Err("client_id is not the document's URL");
    }
    let redirect_uris: Vec<String> = m
        .get("redirect_uris")
        .and_then(|v| v.as_array())
        .ok_or("no redirect_uris")?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or("redirect_uris not strings")?;
    if redirect_uris.is_empty()
        || redirect_uris.len() > OAUTH_REDIRECT_URIS_MAX
        || !redirect_uris.iter().all(|u| is_redirect_uri(u))
    {
        return Err("bad redirect_uris");
    }
    let method = m.get("token_endpoint_auth_method").and_then(|v| v.as_str());
    if method.is_some_and(|m| m != "none") {
        return Err("not a public client");
    }
    let name = m
        .get("client_name")
        .and_then(|v| v.as_str())
        .unwrap_or(url)
        .to_owned();
    if !runread_service::oauth::is_client_name(&name) {
        return Err("bad client_name");
    }
    Ok(ClientInfo {
        client_id: url.to_owned(),
        name,
        redirect_uris,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_global_addresses_pass() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "2001:db8::1",
        ] {
            assert!(!is_global(bad.parse().unwrap()), "{bad}");
        }
        for ok in ["1.1.1.1", "93.184.216.34", "2606:4700::1111"] {
            assert!(is_global(ok.parse().unwrap()), "{ok}");
        }
    }

    #[test]
    fn urls_are_https_with_a_path() {
        assert!(Target::parse("https://client.example/meta.json").is_ok());
        for bad in [
            "http://client.example/meta.json",
            "https://client.example",
            "https://client.example/",
            "https://u@client.example/meta.json",
            "https://client.example/meta.json#x",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_document_must_name_its_own_url() {
        let url = "https://client.example/meta.json";
        let ok = format!(
            r#"{{"client_id":"{url}","client_name":"C","redirect_uris":["https://client.example/cb"]}}"#
        );
        assert_eq!(document(url, ok.as_bytes()).unwrap().name, "C");
        let other = r#"{"client_id":"https://evil.example/m.json","redirect_uris":["https://a.example/cb"]}"#;
        assert!(document(url, other.as_bytes()).is_err());
        let secret = format!(
            r#"{{"client_id":"{url}","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}}"#
        );
        assert!(document(url, secret.as_bytes()).is_err());
    }
}
