//! Whether runread serves MCP where a reader's client looks for it: one short connection to the
//! address, which `status` reports and `grant` words its message by.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs as _};
use std::time::Duration;

/// How long one probe waits for the address to accept: a listener on this machine accepts at
/// once, so waiting longer would only delay the answer that nothing serves.
pub(crate) const SERVE_PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// What one probe of the MCP address found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Serving {
    /// Something accepts connections at the address.
    Yes(SocketAddr),
    /// Nothing does.
    No(SocketAddr),
    /// The URL names no address this machine can probe (an `https://` tunnel, a host that does
    /// not resolve).
    Unknown,
}

/// Probes `addr` once, for at most [`SERVE_PROBE_TIMEOUT`].
pub(crate) fn probe(addr: SocketAddr) -> Serving {
    match TcpStream::connect_timeout(&addr, SERVE_PROBE_TIMEOUT) {
        Ok(_) => Serving::Yes(addr),
        Err(_) => Serving::No(addr),
    }
}

/// Probes the address of an MCP endpoint's URL (`http://127.0.0.1:7077/mcp`).
pub(crate) fn probe_url(url: &str) -> Serving {
    address_of_url(url).map_or(Serving::Unknown, probe)
}

/// The socket address of a plain `http://HOST[:PORT]/…` URL (port 80 when none), resolved; `None`
/// for any other scheme or a host that does not resolve.
fn address_of_url(url: &str) -> Option<SocketAddr> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let with_port = match host_port.rsplit_once(':') {
        Some((_, port)) if !port.contains(']') => host_port.to_owned(),
        _ => format!("{host_port}:80"),
    };
    with_port.to_socket_addrs().ok()?.next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_http_url_names_its_address_and_an_https_one_none() {
        let addr = |s: &str| address_of_url(s).map(|a| a.to_string());
        assert_eq!(
            addr("http://127.0.0.1:7077/mcp").as_deref(),
            Some("127.0.0.1:7077")
        );
        assert_eq!(addr("http://[::1]:9/mcp").as_deref(), Some("[::1]:9"));
        assert_eq!(
            addr("http://127.0.0.1/mcp").as_deref(),
            Some("127.0.0.1:80")
        );
        assert_eq!(addr("https://runread.example/mcp"), None);
        assert_eq!(probe_url("https://runread.example/mcp"), Serving::Unknown);
    }

    #[test]
    fn a_listener_is_serving_and_a_closed_port_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        assert_eq!(probe(addr), Serving::Yes(addr));
        drop(listener);
        assert_eq!(probe(addr), Serving::No(addr));
    }
}
