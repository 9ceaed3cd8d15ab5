//! TLS to the database, with libpq's meanings of `sslmode`, `sslrootcert`, `sslcert` and
//! `sslkey`, over rustls (the ring provider; no OpenSSL).
//!
//! The `postgres` crate knows only `sslmode` `disable`/`prefer`/`require` and none of the other
//! three parameters, so they are taken out of the connection string here (both its URL and its
//! `key=value` form) and turned into a rustls client configuration; the rest of the string is
//! parsed by the crate as before.
//!
//! | `sslmode` | encrypted | server certificate checked |
//! | --- | --- | --- |
//! | `disable` | never | — |
//! | `prefer` | if the server offers it | only against an explicit `sslrootcert` file |
//! | `require` | always | only against an explicit `sslrootcert` file (then as `verify-ca`) |
//! | `verify-ca` | always | chain to a trusted root |
//! | `verify-full` | always | chain to a trusted root, and the host name |
//!
//! Without `sslmode`, a database reached over the network (any host that is not loopback or a
//! Unix socket) is `verify-full`, and a loopback one `prefer` (libpq's default). Any weaker mode
//! for a database over the network is said once per process, as a warning in the log (stderr
//! for the CLI). Trusted roots are the `sslrootcert` file, or the system's (`sslrootcert=system`,
//! and also when `sslrootcert` is absent: unlike libpq, runread reads no `~/.postgresql/` files).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use zeroize::Zeroizing;

use postgres::config::Host;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::StoreError;

/// Longest certificate or key file read (a system bundle of roots is ~200 KiB).
pub const TLS_FILE_MAX_BYTES: u64 = 1024 * 1024;
/// The ALPN protocol id PostgreSQL servers know (libpq sends it too).
const ALPN_POSTGRESQL: &[u8] = b"postgresql";
/// The `sslrootcert` value that names the system's trusted roots.
const ROOTCERT_SYSTEM: &str = "system";

/// libpq's `sslmode`, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    const ALL: [SslMode; 5] = [
        SslMode::Disable,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn parse(s: &str) -> Option<SslMode> {
        SslMode::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// What the connection string says about TLS (taken out of it before the crate parses it).
#[derive(Debug, Default, PartialEq, Eq)]
struct TlsParams {
    mode: Option<SslMode>,
    rootcert: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

impl TlsParams {
    /// Takes `key=value` if it is one of the TLS parameters; the last one given wins, as in libpq.
    fn take(&mut self, key: &str, value: String) -> Result<bool, StoreError> {
        match key {
            "sslmode" => {
                self.mode = Some(SslMode::parse(&value).ok_or_else(|| {
                    refused(format!(
                        "sslmode={value} is not one of {}",
                        SslMode::ALL.map(SslMode::as_str).join(", ")
                    ))
                })?);
            }
            "sslrootcert" => self.rootcert = Some(value),
            "sslcert" => self.cert = Some(value),
            "sslkey" => self.key = Some(value),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// How connections are made: the crate's configuration and the TLS connector, if any.
#[derive(Clone)]
pub(crate) enum Tls {
    Off,
    On(MakeRustlsConnect),
}

/// How one store connects.
pub(crate) struct Connector {
    pub(crate) config: postgres::Config,
    pub(crate) tls: Tls,
    /// The effective mode (the default filled in): the tests check the default chosen.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) mode: SslMode,
}

fn refused(why: String) -> StoreError {
    StoreError::Unavailable(format!("the store URL: {why}"))
}

/// The connection string without its TLS parameters, and those parameters. Never quotes the
/// string in an error: it may hold a password.
fn split(url: &str) -> Result<(String, TlsParams), StoreError> {
    let mut params = TlsParams::default();
    let is_url = ["postgres://", "postgresql://"]
        .iter()
        .any(|p| url.starts_with(p));
    let rest = if is_url {
        split_url(url, &mut params)?
    } else {
        split_key_values(url, &mut params)?
    };
    Ok((rest, params))
}

/// The URL form: the query starts at the first `?` after the credentials (which end at the
/// first `@`, as the crate reads them); parameters are `&`-separated and percent-encoded.
fn split_url(url: &str, params: &mut TlsParams) -> Result<String, StoreError> {
    let after_creds = url.find('@').map_or(0, |i| i + 1);
    let Some(q) = url[after_creds..].find('?').map(|i| i + after_creds) else {
        return Ok(url.to_owned());
    };
    let mut kept = Vec::new();
    for segment in url[q + 1..].split('&') {
        let taken = match segment.split_once('=') {
            Some((k, v)) => params.take(&percent_decode(k)?, percent_decode(v)?)?,
            None => false,
        };
        if !taken {
            kept.push(segment);
        }
    }
    let base = &url[..q];
    Ok(if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    })
}

/// A `%XX`-encoded query key or value. A `%` not followed by two hex digits stays as it is, as
/// the `postgres` crate reads the rest of the URL.
fn percent_decode(s: &str) -> Result<String, StoreError> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| refused("a parameter is not UTF-8".into()))
}

/// The `key=value` form, read as the crate reads it: whitespace-separated `key = value`, a
/// value in single quotes or bare, backslash escaping the next character. The pairs that are not
/// TLS parameters are kept as written.
fn split_key_values(s: &str, params: &mut TlsParams) -> Result<String, StoreError> {
    let malformed = || refused("not a PostgreSQL connection string".into());
    let mut it = s.char_indices().peekable();
    let mut kept: Vec<&str> = Vec::new();
    loop {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = it.peek() else { break };
        let mut key_end = start;
        while let Some((i, c)) = it.next_if(|(_, c)| !c.is_whitespace() && *c != '=') {
            key_end = i + c.len_utf8();
        }
        let key = &s[start..key_end];
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if key.is_empty() || it.next().map(|(_, c)| c) != Some('=') {
            return Err(malformed());
        }
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let quoted = it.next_if(|(_, c)| *c == '\'').is_some();
        let mut value = String::new();
        let mut end = s.len();
        let mut closed = !quoted;
        while let Some(&(i, c)) = it.peek() {
            if (quoted && c == '\'') || (!quoted && c.is_whitespace()) {
                end = i;
                break;
            }
            it.next();
            if c == '\\' {
                if let Some((_, escaped)) = it.next() {
                    value.push(escaped);
                }
            } else {
                value.push(c);
            }
        }
        if quoted {
            closed = it.next_if(|(_, c)| *c == '\'').is_some();
            end = it.peek().map_or(s.len(), |&(i, _)| i);
        }
        if !closed || (!quoted && value.is_empty()) {
            return Err(malformed());
        }
        if !params.take(key, value)? {
            kept.push(&s[start..end]);
        }
    }
    Ok(kept.join(" "))
}

/// Whether a host is this machine: a Unix socket, `localhost`, or a loopback address.
fn is_local(host: &Host) -> bool {
    match host {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name.eq_ignore_ascii_case("localhost")
                || name
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    }
}

/// Set once the weak-mode warning was given in this process.
static WEAK_MODE_SAID: AtomicBool = AtomicBool::new(false);

/// Parses `url` into how the store connects: the TLS parameters resolved, files read, the
/// default mode filled in, and the warning for a weak mode over the network given.
pub(crate) fn connector(url: &str) -> Result<Connector, StoreError> {
    let (rest, params) = split(url)?;
    // The parse error is not passed on: it could quote the URL, password included.
    let mut config = <postgres::Config as std::str::FromStr>::from_str(&rest)
        .map_err(|_| refused("not a PostgreSQL connection string".into()))?;
    let hosts = config.get_hosts();
    let remote = hosts.iter().any(|h| !is_local(h))
        || config.get_hostaddrs().iter().any(|a| !a.is_loopback());
    let only_sockets = !hosts.is_empty() && hosts.iter().all(|h| matches!(h, Host::Unix(_)));
    let system_roots = params.rootcert.as_deref() == Some(ROOTCERT_SYSTEM);
    let mode = params.mode.unwrap_or(if remote || system_roots {
        SslMode::VerifyFull
    } else {
        SslMode::Prefer
    });
    // libpq refuses this too: the system's roots vouch for any name they signed, so only the
    // host-name check makes them mean something.
    if system_roots && mode < SslMode::VerifyFull {
        return Err(refused(format!(
            "sslrootcert=system needs sslmode=verify-full, not {}",
            mode.as_str()
        )));
    }
    if params.cert.is_some() != params.key.is_some() {
        return Err(refused("sslcert and sslkey go together".into()));
    }
    // PostgreSQL never speaks TLS on a Unix socket; libpq ignores sslmode there.
    if only_sockets || mode == SslMode::Disable {
        config.ssl_mode(postgres::config::SslMode::Disable);
        if remote && !only_sockets {
            say_weak(mode, false);
        }
        return Ok(Connector {
            config,
            tls: Tls::Off,
            mode: SslMode::Disable,
        });
    }
    config.ssl_mode(if mode == SslMode::Prefer {
        postgres::config::SslMode::Prefer
    } else {
        postgres::config::SslMode::Require
    });
    let rootcert_file = params
        .rootcert
        .as_deref()
        .filter(|r| *r != ROOTCERT_SYSTEM)
        .map(PathBuf::from);
    // libpq: with a root certificate file, `prefer` and `require` check the chain too.
    let check = match mode {
        SslMode::VerifyFull => Check::Full,
        SslMode::VerifyCa => Check::Chain,
        _ if rootcert_file.is_some() => Check::Chain,
        _ => Check::None,
    };
    if remote {
        say_weak(mode, check == Check::Chain);
    }
    let client_auth = match (&params.cert, &params.key) {
        (Some(cert), Some(key)) => Some((read_certs(Path::new(cert))?, read_key(Path::new(key))?)),
        _ => None,
    };
    let tls = client_config(check, rootcert_file.as_deref(), client_auth)?;
    Ok(Connector {
        config,
        tls: Tls::On(MakeRustlsConnect::new(tls)),
        mode,
    })
}

/// Says once per process that a database over the network is reached with less than
/// `verify-full`, and what that leaves open.
fn say_weak(mode: SslMode, chain_checked: bool) {
    if mode >= SslMode::VerifyFull || WEAK_MODE_SAID.swap(true, Ordering::SeqCst) {
        return;
    }
    let open = match mode {
        SslMode::Disable => "nothing is encrypted",
        SslMode::Prefer if chain_checked => {
            "the connection is plain text if the server does not offer TLS, and the server's host name is not checked"
        }
        SslMode::Prefer => {
            "the connection is plain text if the server does not offer TLS, and the server is not authenticated"
        }
        SslMode::Require if !chain_checked => {
            "the server is not authenticated: anyone on the path can pose as it"
        }
        _ => "the server's certificate is checked, but not its host name",
    };
    tracing::warn!(
        "the store's database is reached over the network with sslmode={}: {open} (use sslmode=verify-full)",
        mode.as_str()
    );
}

/// How much of the server's certificate is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    None,
    Chain,
    Full,
}

type ClientAuth = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn client_config(
    check: Check,
    rootcert: Option<&Path>,
    client_auth: Option<ClientAuth>,
) -> Result<ClientConfig, StoreError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| refused(format!("TLS: {e}")))?;
    let full = match check {
        Check::None => None,
        Check::Chain | Check::Full => {
            let roots = match rootcert {
                Some(path) => roots_from_file(path)?,
                None => system_roots()?,
            };
            Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| refused(format!("TLS roots: {e}")))?,
            )
        }
    };
    let verifier = Arc::new(Verifier {
        full,
        name_checked: check == Check::Full,
        provider,
    });
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match client_auth {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| refused(format!("sslcert/sslkey: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![ALPN_POSTGRESQL.to_vec()];
    Ok(config)
}

/// A certificate or key file, read within [`TLS_FILE_MAX_BYTES`]; with `owner_only`, refused
/// when group or others may read it (libpq's rule for `sslkey`).
fn read_tls_file(
    what: &str,
    path: &Path,
    owner_only: bool,
) -> Result<Zeroizing<Vec<u8>>, StoreError> {
    let unreadable = |e: std::io::Error| refused(format!("{what} {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if owner_only && !runread_platform::file::is_owner_only(&meta) {
        return Err(refused(format!(
            "{what} {} is readable by other users; chmod 600 it",
            path.display()
        )));
    }
    let mut bytes = Zeroizing::new(Vec::new());
    if !runread_core::read_at_most(file, TLS_FILE_MAX_BYTES, &mut bytes).map_err(unreadable)? {
        return Err(refused(format!(
            "{what} {} is larger than {TLS_FILE_MAX_BYTES} bytes",
            path.display()
        )));
    }
    Ok(bytes)
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, StoreError> {
    let pem = read_tls_file("sslcert", path, false)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| refused(format!("sslcert {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(refused(format!(
            "sslcert {}: no certificate in it",
            path.display()
        )));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, StoreError> {
    let pem = read_tls_file("sslkey", path, true)?;
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| refused(format!("sslkey {}: {e}", path.display())))
}

fn roots_from_file(path: &Path) -> Result<RootCertStore, StoreError> {
    let pem = read_tls_file("sslrootcert", path, false)?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| refused(format!("sslrootcert {}: {e}", path.display())))?;
        roots
            .add(cert)
            .map_err(|e| refused(format!("sslrootcert {}: {e}", path.display())))?;
    }
    if roots.is_empty() {
        return Err(refused(format!(
            "sslrootcert {}: no certificate in it",
            path.display()
        )));
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, StoreError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        return Err(refused(
            "no system root certificates found (install ca-certificates, or name sslrootcert=FILE)"
                .into(),
        ));
    }
    Ok(roots)
}

/// Checks the server's certificate as far as the mode asks; the handshake's signatures are
/// always checked against the certificate presented.
#[derive(Debug)]
struct Verifier {
    /// The full check (chain and name); `None` when the server is not authenticated
    /// (`prefer`/`require` without a root file, as libpq).
    full: Option<Arc<WebPkiServerVerifier>>,
    /// `verify-full`: the name too; else (`verify-ca`) only the chain.
    name_checked: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(full) = &self.full else {
            return Ok(ServerCertVerified::assertion());
        };
        // The full check tests the name last, after the chain: a name mismatch alone means the
        // chain was good.
        match full.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.name_checked => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(mode: Option<SslMode>, root: Option<&str>) -> TlsParams {
        TlsParams {
            mode,
            rootcert: root.map(str::to_owned),
            ..TlsParams::default()
        }
    }

    #[test]
    fn tls_parameters_leave_a_url_and_the_rest_stays_as_written() {
        let (rest, p) = split(
            "postgres://u:p%3Fw@db.example:5433/rr?sslmode=verify-ca&application_name=x&sslrootcert=%2Ftmp%2Fca.pem",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgres://u:p%3Fw@db.example:5433/rr?application_name=x"
        );
        assert_eq!(p, params(Some(SslMode::VerifyCa), Some("/tmp/ca.pem")));
        let (rest, p) = split("postgresql://u@h/db?sslmode=require").unwrap();
        assert_eq!(rest, "postgresql://u@h/db");
        assert_eq!(p, params(Some(SslMode::Require), None));
        // A `?` inside the credentials is not the query.
        let (rest, p) = split("postgres://u:a?b@h/db").unwrap();
        assert_eq!(rest, "postgres://u:a?b@h/db");
        assert_eq!(p, TlsParams::default());
    }

    #[test]
    fn url_parameters_are_percent_decoded_and_refused_when_not_utf8() {
        // A `%` without two hex digits after it is kept as written.
        let (_, p) = split("postgres://u@h/db?sslrootcert=%2Fa%zz%C3%A9%2").unwrap();
        assert_eq!(p.rootcert.as_deref(), Some("/a%zzé%2"));
        // An encoded key is a key.
        let (rest, p) = split("postgres://u@h/db?ssl%6Dode=require").unwrap();
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(p.mode, Some(SslMode::Require));
        for url in [
            "postgres://u:secretpw@h/db?sslrootcert=%FF",
            "postgres://u:secretpw@h/db?sslcert=%C3",
            "postgres://u:secretpw@h/db?%FF=x",
        ] {
            let e = split(url).unwrap_err().to_string();
            assert!(e.contains("a parameter is not UTF-8"), "{e}");
            assert!(!e.contains("secretpw"), "{e}");
        }
    }

    #[test]
    fn tls_parameters_leave_a_key_value_string() {
        let (rest, p) = split(
            "host=db.example  sslmode = verify-full user=u password='a b\\'c' sslrootcert='/x y/ca.pem' dbname=rr",
        )
        .unwrap();
        assert_eq!(rest, "host=db.example user=u password='a b\\'c' dbname=rr");
        assert_eq!(p, params(Some(SslMode::VerifyFull), Some("/x y/ca.pem")));
        assert!(split("host=h password='unterminated").is_err());
        assert!(split("host").is_err());
    }

    #[test]
    fn an_unknown_sslmode_is_refused_without_quoting_the_url() {
        let e = split("postgres://u:secretpw@h/db?sslmode=allow")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sslmode=allow"), "{e}");
        assert!(!e.contains("secretpw"), "{e}");
    }

    #[test]
    fn a_database_over_the_network_defaults_to_verify_full_and_loopback_to_prefer() {
        let remote = connector("postgres://u@db.example/rr?sslrootcert=/dev/null");
        // The default verify-full needs roots: /dev/null holds none, which is the error.
        assert!(
            matches!(remote, Err(StoreError::Unavailable(ref e)) if e.contains("no certificate")),
            "{:?}",
            remote.err()
        );
        let local = connector("postgres://u@127.0.0.1:5432/rr").unwrap();
        assert_eq!(local.mode, SslMode::Prefer);
        let local = connector("host=localhost user=u").unwrap();
        assert_eq!(local.mode, SslMode::Prefer);
        let socket = connector("host=/run/postgresql user=u sslmode=verify-full").unwrap();
        assert_eq!(socket.mode, SslMode::Disable, "no TLS on a Unix socket");
        let named = connector("host=db.example hostaddr=127.0.0.1 sslmode=require user=u").unwrap();
        assert_eq!(named.mode, SslMode::Require);
        assert!(matches!(named.tls, Tls::On(_)));
    }

    #[test]
    fn system_roots_need_verify_full_and_a_lone_client_cert_is_refused() {
        assert!(connector("postgres://u@h/db?sslrootcert=system&sslmode=verify-ca").is_err());
        assert!(connector("postgres://u@127.0.0.1/db?sslcert=/tmp/c.pem").is_err());
    }
}
