//! Why runread's own client could not talk to a server, in words a person acts on: rmcp's
//! transport errors are type dumps, so when a connection or a call fails at the transport, one
//! plain request (`server/discover` with the key) is made and what came back is classified. No
//! message carries the key, an OS error's text or the server's body beyond its fixed code.

use std::time::Duration;

use crate::KEY_HEADER;

/// How long the diagnosing request may take, connection included.
pub const DIAGNOSE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes of the diagnosing answer's body read (a refusal is a small JSON-RPC error).
pub const DIAGNOSE_BODY_MAX_BYTES: usize = 16 * 1024;

/// What stood between the client and a served call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreachable {
    /// The URL is not an `http://` or `https://` address.
    BadUrl,
    /// Nothing accepted a connection there.
    NotServing,
    /// A connection was accepted but the TLS handshake failed.
    Tls,
    /// Nothing answered within [`DIAGNOSE_TIMEOUT`].
    NoAnswer,
    /// The key file's content cannot be sent as a header.
    KeyNotAHeader,
    /// The server refused the key at its door with this fixed code.
    KeyRefused(String),
    /// The server asks for an OAuth bearer token (`Authorization`), with this fixed code: the
    /// address is a connector's public one.
    AuthorizationRequired(String),
    /// The server refused the request with this fixed code (not about the key).
    Refused(String),
    /// Something answered with this HTTP status that is not runread's MCP endpoint.
    NotRunread(u16),
    /// The server answers as runread does: the failure was in the call itself.
    ServerAnswers,
}

impl Unreachable {
    /// The words for `url` (the address the owner gave).
    pub fn describe(&self, url: &str) -> String {
        match self {
            Unreachable::BadUrl => format!("{url:?} is not an http:// or https:// address"),
            Unreachable::NotServing => format!(
                "nothing is serving at {url}; start it with `runread serve` (or check the port)"
            ),
            Unreachable::Tls => format!(
                "the TLS handshake with {url} failed (its certificate is not trusted, or it \
                 does not speak TLS: try http://)"
            ),
            Unreachable::NoAnswer => format!(
                "{url} did not answer within {} s",
                DIAGNOSE_TIMEOUT.as_secs()
            ),
            Unreachable::KeyNotAHeader => {
                "the key file does not hold a read key (64 hexadecimal characters)".to_owned()
            }
            Unreachable::KeyRefused(code) => format!(
                "the server at {url} refused the read key ({code}): it names no live reader \
                 (revoked, rotated or removed?); `runread reader list` shows the readers"
            ),
            Unreachable::AuthorizationRequired(code) => format!(
                "the server at {url} asks for an Authorization bearer token ({code}): that is \
                 a connector's public address; use the local address with the read key"
            ),
            Unreachable::Refused(code) => {
                format!("the server at {url} refused the request ({code})")
            }
            Unreachable::NotRunread(status) => format!(
                "{url} answered HTTP {status}, not as runread's MCP endpoint (is the path /mcp?)"
            ),
            Unreachable::ServerAnswers => format!(
                "the connection to {url} failed during the call (the server answers now: try again)"
            ),
        }
    }
}

/// Why `key` at `url` failed at the transport: one `server/discover` request, classified.
pub async fn diagnose(url: &str, key: &str) -> Unreachable {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Unreachable::BadUrl;
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return Unreachable::BadUrl;
    }
    let Ok(value) = http::HeaderValue::from_str(key) else {
        return Unreachable::KeyNotAHeader;
    };
    let Ok(client) = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(DIAGNOSE_TIMEOUT)
        .build()
    else {
        return Unreachable::NotServing;
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}
    });
    let sent = client
        .post(parsed.clone())
        .header(KEY_HEADER, value)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", crate::PROTOCOL_VERSION)
        .body(body.to_string())
        .send()
        .await;
    match sent {
        Ok(response) => classify(response).await,
        Err(e) if e.is_timeout() => Unreachable::NoAnswer,
        Err(_) if parsed.scheme() == "https" && accepts_connections(&parsed).await => {
            Unreachable::Tls
        }
        Err(_) => Unreachable::NotServing,
    }
}

/// What an answer says: a refusal's fixed code (of the key, of the bearer token, or another),
/// success, or something that is not runread.
async fn classify(mut response: reqwest::Response) -> Unreachable {
    let status = response.status();
    let challenged = response
        .headers()
        .contains_key(http::header::WWW_AUTHENTICATE);
    let mut body = Vec::new();
    while body.len() < DIAGNOSE_BODY_MAX_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(DIAGNOSE_BODY_MAX_BYTES);
    match refusal_code(&body) {
        Some(code) if challenged => Unreachable::AuthorizationRequired(code),
        Some(code) if code.contains("key") => Unreachable::KeyRefused(code),
        Some(code) => Unreachable::Refused(code),
        None if status.is_success() => Unreachable::ServerAnswers,
        None => Unreachable::NotRunread(status.as_u16()),
    }
}

/// The fixed code of a runread refusal body (`error.data.code`), if it is one: a short word of
/// lowercase letters and underscores, so that nothing else of the body is repeated.
fn refusal_code(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let code = v.pointer("/error/data/code")?.as_str()?;
    let fixed = !code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    fixed.then(|| code.to_owned())
}

/// Whether something accepts a TCP connection at the URL's host and port.
async fn accepts_connections(url: &reqwest::Url) -> bool {
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    matches!(
        tokio::time::timeout(
            DIAGNOSE_TIMEOUT,
            tokio::net::TcpStream::connect((host, port))
        )
        .await,
        Ok(Ok(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fixed_code_is_taken_from_a_body() {
        let body = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"m","data":{"code":"invalid_key"}}}"#;
        assert_eq!(refusal_code(body).as_deref(), Some("invalid_key"));
        let odd = br#"{"error":{"data":{"code":"/home/me/secret path"}}}"#;
        assert_eq!(refusal_code(odd), None);
        assert_eq!(refusal_code(b"<html>"), None);
    }

    #[test]
    fn no_description_names_a_library_type() {
        for u in [
            Unreachable::BadUrl,
            Unreachable::NotServing,
            Unreachable::Tls,
            Unreachable::NoAnswer,
            Unreachable::KeyNotAHeader,
            Unreachable::KeyRefused("invalid_key".into()),
            Unreachable::AuthorizationRequired("missing_key".into()),
            Unreachable::Refused("busy".into()),
            Unreachable::NotRunread(404),
            Unreachable::ServerAnswers,
        ] {
            let words = u.describe("http://127.0.0.1:1/mcp");
            for dump in ["rmcp", "Transport", "worker", "reqwest", "Error {"] {
                assert!(!words.contains(dump), "{words}");
            }
        }
    }
}
