//! TLS to PostgreSQL with libpq's `sslmode` meanings, against a real server with TLS on (a
//! cluster of the test's own, `pgtls`): `verify-full` connects; a wrong host name, an untrusted
//! CA and a plain-text server are refused; a client certificate logs in; a mode weaker than
//! `verify-full` to a database over the network is said once on stderr; the database's and
//! the TLS library's error text never carries the URL.
//!
//! The whole gateway suite over TLS is `postgres_gateways.rs` (`over_tls_*`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use crate::pgtls;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use runread_store::postgres::PostgresStore;

use crate::pgtls::{CERT_USER, Cluster, SERVER_NAME};

/// How the warning about a weak mode begins (runread-store's `postgres::tls`).
const WEAK_MODE_SAID: &str = "reached over the network with sslmode=";

/// A password in every URL here, to show it never reaches an error or the log.
const PASSWORD: &str = "pw-never-printed-7c1d";

fn connect(url: &str) -> Result<PostgresStore, String> {
    PostgresStore::connect_as(url, "tls-test").map_err(|e| e.to_string())
}

fn refused(url: &str, why: &str) -> String {
    match connect(url) {
        Ok(_) => panic!("connected, but {why}"),
        Err(e) => {
            assert!(!e.contains(PASSWORD), "the URL reached the error: {e}");
            e
        }
    }
}

/// Whether every backend of `db` speaks TLS, and how many there are.
fn backends_on_tls(c: &Cluster, db: &str) -> (i64, bool) {
    let row = c
        .admin()
        .query_one(
            "SELECT count(*), coalesce(bool_and(s.ssl), false) FROM pg_stat_activity a \
             JOIN pg_stat_ssl s ON s.pid = a.pid WHERE a.datname = $1",
            &[&db],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

/// A server that answers the TLS request as a server without TLS does (`N`), then hangs up.
fn plain_text_server() -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        // One connection per refused attempt below.
        for _ in 0..2 {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut request = [0u8; 8];
            if s.read_exact(&mut request).is_ok() {
                let _ = s.write_all(b"N");
            }
        }
    });
    (port, handle)
}

#[test]
fn verify_full_connects_and_a_wrong_name_an_untrusted_ca_or_a_plain_server_is_refused() {
    let c = Cluster::start();
    let db = c.fresh_db();
    let ca = format!("sslrootcert={}", c.pki.ca.display());
    let other_ca = format!("sslrootcert={}", c.pki.other_ca.display());
    let user = format!("postgres:{PASSWORD}");

    // verify-full is the default for a host that is not loopback; the backends speak TLS.
    let store = connect(&c.url(SERVER_NAME, &user, &db.name, &ca)).unwrap();
    let (n, tls) = backends_on_tls(&c, &db.name);
    assert!(n > 0 && tls, "{n} backends, all on TLS: {tls}");
    drop(store);
    connect(&c.url(
        SERVER_NAME,
        &user,
        &db.name,
        &format!("sslmode=verify-full&{ca}"),
    ))
    .unwrap();

    // A certificate for another name: refused under verify-full, accepted by verify-ca (the
    // chain is good), as libpq does.
    let e = refused(
        &c.url("wrong.test", &user, &db.name, &ca),
        "the certificate does not name wrong.test",
    );
    assert!(e.contains("not valid for name"), "{e}");
    connect(&c.url(
        "wrong.test",
        &user,
        &db.name,
        &format!("sslmode=verify-ca&{ca}"),
    ))
    .unwrap();

    // An untrusted CA: refused by verify-full, verify-ca, and by require once a root file is
    // named (libpq: require with a root file checks the chain).
    for mode in ["verify-full", "verify-ca", "require"] {
        let e = refused(
            &c.url(
                SERVER_NAME,
                &user,
                &db.name,
                &format!("sslmode={mode}&{other_ca}"),
            ),
            "the server's CA is not trusted",
        );
        assert!(e.contains("UnknownIssuer"), "{mode}: {e}");
    }
    // require without a root file: encrypted, the server not authenticated (libpq's meaning).
    connect(&c.url(SERVER_NAME, &user, &db.name, "sslmode=require")).unwrap();

    // The cluster refuses TCP without TLS, so disable is refused by the server, not by runread.
    refused(
        &c.url(SERVER_NAME, &user, &db.name, "sslmode=disable"),
        "the server allows no plain TCP",
    );

    // A plain-text server: refused under require and verify-full.
    let (port, server) = plain_text_server();
    for mode in ["require", "verify-full"] {
        let url = format!(
            "postgres://{user}@{SERVER_NAME}:{port}/x?hostaddr=127.0.0.1&sslmode={mode}&{ca}"
        );
        let e = refused(&url, "the server speaks no TLS");
        assert!(e.contains("TLS"), "{mode}: {e}");
    }
    server.join().unwrap();
}

#[test]
fn a_client_certificate_logs_in_and_its_key_must_be_private() {
    let c = Cluster::start();
    let db = c.fresh_db();
    let ca = format!("sslrootcert={}", c.pki.ca.display());
    let cert = format!(
        "sslcert={}&sslkey={}",
        c.pki.client_cert.display(),
        c.pki.client_key.display()
    );
    // The cluster's owner runs the migrations; the certificate's role then only uses the store.
    connect(&db.url).unwrap();
    c.admin()
        .batch_execute(&format!(
            "GRANT {} TO {CERT_USER}",
            runread_store::postgres::APP_ROLE
        ))
        .unwrap();

    connect(&c.url(SERVER_NAME, CERT_USER, &db.name, &format!("{ca}&{cert}"))).unwrap();
    let e = refused(
        &c.url(SERVER_NAME, CERT_USER, &db.name, &ca),
        "the role logs in only with its certificate",
    );
    assert!(e.contains("28000") || e.contains("certificate"), "{e}");

    // A key file others may read is refused before anything is sent (libpq's rule).
    let loose = c.pki.client_key.with_extension("loose");
    std::fs::copy(&c.pki.client_key, &loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = refused(
        &c.url(
            SERVER_NAME,
            CERT_USER,
            &db.name,
            &format!(
                "{ca}&sslcert={}&sslkey={}",
                c.pki.client_cert.display(),
                loose.display()
            ),
        ),
        "the key is readable by others",
    );
    assert!(e.contains("readable by other users"), "{e}");
}

fn runread(home: &Path, store: &str, args: &[&str]) -> Output {
    pgtls::runread(home, store)
        .env_remove("RUNREAD_LOG")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_mode_weaker_than_verify_full_over_the_network_is_said_once_on_stderr() {
    let c = Cluster::start();
    let db = c.fresh_db();
    let home = tempfile::tempdir().unwrap();
    let user = format!("postgres:{PASSWORD}");
    let said = |out: &Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!err.contains(PASSWORD), "{err}");
        err.matches(WEAK_MODE_SAID).count()
    };
    let ca = format!("sslrootcert={}", c.pki.ca.display());
    let verified = runread(
        home.path(),
        &c.url(SERVER_NAME, &user, &db.name, &ca),
        &["runs", "--json"],
    );
    assert_eq!(said(&verified), 0, "verify-full is said nothing");
    for mode in ["require", "verify-ca", "prefer"] {
        let out = runread(
            home.path(),
            &c.url(
                SERVER_NAME,
                &user,
                &db.name,
                &format!("sslmode={mode}&{ca}"),
            ),
            &["runs", "--json"],
        );
        assert_eq!(said(&out), 1, "{mode}: said once");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("{WEAK_MODE_SAID}{mode}")),
            "{mode}"
        );
    }
    // Loopback by name: the default (prefer) is not a warning.
    let local = format!(
        "postgres://postgres@127.0.0.1:{}/{}?sslmode=prefer",
        c.port, db.name
    );
    assert_eq!(said(&runread(home.path(), &local, &["runs", "--json"])), 0);
}

#[test]
fn sslrootcert_system_trusts_the_systems_roots_and_only_under_verify_full() {
    let c = Cluster::start();
    let db = c.fresh_db();
    let home = tempfile::tempdir().unwrap();
    let url = c.url(SERVER_NAME, "postgres", &db.name, "sslrootcert=system");
    // The system's store, as rustls-native-certs reads it: SSL_CERT_FILE names its bundle.
    let with_roots = |bundle: &Path, url: &str| {
        pgtls::runread(home.path(), url)
            .env("SSL_CERT_FILE", bundle)
            .env_remove("SSL_CERT_DIR")
            .args(["runs", "--json"])
            .output()
            .unwrap()
    };
    let out = with_roots(&c.pki.ca, &url);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = with_roots(&c.pki.other_ca, &url);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("UnknownIssuer"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // As libpq: the system's roots vouch for any name they signed, so a weaker mode is refused.
    let weak = format!("{url}&sslmode=verify-ca");
    let out = with_roots(&c.pki.ca, &weak);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("sslrootcert=system needs sslmode=verify-full"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
