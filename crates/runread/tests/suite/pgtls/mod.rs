//! A PostgreSQL cluster of a test's own with TLS on: its own CA, server and client certificates
//! (rcgen), `initdb` and `pg_ctl` from the installed server, a free loopback port, `ssl=on`, and
//! a pg_hba that accepts TCP only over TLS (certificate login for [`CERT_USER`], trust for the
//! others). Administration goes over the cluster's Unix socket. Stopped and removed when the
//! [`Cluster`] is dropped, a failed test included.
//!
//! The server missing is a failure with how to install it, never a skip.
#![allow(dead_code)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The host name in the server's certificate (besides `localhost`); tests reach it with
/// `hostaddr=127.0.0.1`, so nothing needs resolving.
pub const SERVER_NAME: &str = "pg.test";
/// The role that logs in with a client certificate (its common name).
pub const CERT_USER: &str = "runread_cert";
/// Longest wait for the server to start or stop (`pg_ctl -t`).
const PG_CTL_WAIT_SECS: &str = "60";

/// Files the cluster and its clients use.
pub struct Pki {
    /// The CA that signed the server's and the client's certificates.
    pub ca: PathBuf,
    /// A CA that signed nothing here: an untrusted root for the server.
    pub other_ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// The client certificate of [`CERT_USER`] and its key (0600).
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn ca(name: &str) -> (rcgen::Issuer<'static, rcgen::KeyPair>, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).unwrap();
    (rcgen::Issuer::new(params, key), cert.pem())
}

fn leaf(
    issuer: &rcgen::Issuer<'static, rcgen::KeyPair>,
    common_name: &str,
    names: Vec<String>,
    usage: rcgen::ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(names).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

impl Pki {
    /// Makes every certificate and key in `dir`.
    pub fn make(dir: &Path) -> Pki {
        let (issuer, ca_pem) = ca("runread test CA");
        let (_, other_pem) = ca("some other CA");
        let (server_pem, server_key) = leaf(
            &issuer,
            SERVER_NAME,
            vec![SERVER_NAME.to_owned(), "localhost".to_owned()],
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        );
        let (client_pem, client_key) = leaf(
            &issuer,
            CERT_USER,
            Vec::new(),
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        );
        let pki = Pki {
            ca: dir.join("ca.pem"),
            other_ca: dir.join("other-ca.pem"),
            server_cert: dir.join("server.pem"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.pem"),
            client_key: dir.join("client.key"),
        };
        std::fs::write(&pki.ca, ca_pem).unwrap();
        std::fs::write(&pki.other_ca, other_pem).unwrap();
        std::fs::write(&pki.server_cert, server_pem).unwrap();
        write_private(&pki.server_key, &server_key);
        std::fs::write(&pki.client_cert, client_pem).unwrap();
        write_private(&pki.client_key, &client_key);
        pki
    }
}

/// The installed server's programs: `RUNREAD_PG_BINDIR`, else `pg_config --bindir`, else the
/// newest `/usr/lib/postgresql/*/bin` that has `initdb`.
pub fn bindir() -> PathBuf {
    let has_initdb = |d: &Path| d.join("initdb").is_file();
    if let Some(d) = std::env::var_os("RUNREAD_PG_BINDIR").map(PathBuf::from) {
        assert!(
            has_initdb(&d),
            "RUNREAD_PG_BINDIR={} has no initdb",
            d.display()
        );
        return d;
    }
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(d) = from_pg_config.filter(|d| has_initdb(d)) {
        return d;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has_initdb(d))
        .collect();
    versions.sort();
    match versions.pop() {
        Some((_, d)) => d,
        None => panic!(
            "\n\nThe TLS tests start a PostgreSQL cluster of their own and need the server's \
             initdb and pg_ctl, which were not found (RUNREAD_PG_BINDIR, pg_config --bindir, \
             /usr/lib/postgresql/*/bin).\nInstall the server: apt-get install postgresql \
             (Debian/Ubuntu), or set RUNREAD_PG_BINDIR to the directory holding initdb.\n\
             These tests never skip.\n"
        ),
    }
}

/// Whether this process runs as root (then the server runs as the `postgres` user: it refuses
/// to run as root).
fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The uid and gid of the `postgres` user, from /etc/passwd.
fn postgres_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&"postgres") && f.len() > 3)
                .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
                .flatten()
        })
        .unwrap_or_else(|| {
            panic!(
                "running as root, the TLS tests run the server as the `postgres` user, which does \
                 not exist: install the server (apt-get install postgresql) or run as another user"
            )
        })
}

/// The real binary with its own home and store: nothing from the caller's environment picks
/// another store, home or key file.
pub fn runread(home: &Path, store: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runread"));
    cmd.env_remove("RUNREAD_STORE")
        .env_remove("RUNREAD_HOME")
        .env_remove("RUNREAD_GATE_KEYS_FILE")
        .arg("--home")
        .arg(home)
        .arg("--store")
        .arg(store);
    cmd
}

/// A free loopback port (taken by the server right after; a collision only fails the start).
pub use runread_testkit::serve::free_port;

/// A running cluster with TLS on; stopped and removed when dropped.
pub struct Cluster {
    pub port: u16,
    pub pki: Pki,
    bin: PathBuf,
    data: PathBuf,
    log: PathBuf,
    /// The Unix socket's directory (also where the certificates are).
    socket_dir: PathBuf,
    run_as: Option<(u32, u32)>,
    started: bool,
    // Last: removed after the server stopped.
    dir: tempfile::TempDir,
}

impl Cluster {
    pub fn start() -> Cluster {
        let bin = bindir();
        let dir = tempfile::tempdir().unwrap();
        let run_as = is_root().then(postgres_user);
        let socket_dir = dir.path().to_path_buf();
        let pki = Pki::make(dir.path());
        let mut c = Cluster {
            port: free_port(),
            bin,
            data: dir.path().join("data"),
            log: dir.path().join("server.log"),
            socket_dir,
            pki,
            run_as,
            started: false,
            dir,
        };
        if let Some((uid, gid)) = c.run_as {
            for p in [
                c.dir.path(),
                &c.pki.server_cert,
                &c.pki.server_key,
                &c.pki.ca,
            ] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
            }
        }
        c.pg("initdb")
            .args([
                "--no-sync",
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "-D",
            ])
            .arg(&c.data)
            .run("initdb");
        let conf = format!(
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n\
             ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\nssl_ca_file = '{}'\n\
             fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n\
             max_connections = 100\nshared_buffers = 16MB\n",
            c.port,
            c.socket_dir.display(),
            c.pki.server_cert.display(),
            c.pki.server_key.display(),
            c.pki.ca.display()
        );
        append(&c.data.join("postgresql.conf"), &conf);
        // TCP only over TLS: a certificate for CERT_USER, trust for the rest (the tests' roles
        // have no passwords); the socket is the administrator's.
        std::fs::write(
            c.data.join("pg_hba.conf"),
            format!(
                "local all all trust\n\
                 hostssl all {CERT_USER} 127.0.0.1/32 cert\n\
                 hostssl all all 127.0.0.1/32 trust\n"
            ),
        )
        .unwrap();
        c.started = true;
        c.pg("pg_ctl")
            .args(["-w", "-t", PG_CTL_WAIT_SECS, "-l"])
            .arg(&c.log)
            .arg("-D")
            .arg(&c.data)
            .arg("start")
            .run("pg_ctl start");
        let mut admin = c.admin();
        admin
            .batch_execute(&format!("CREATE ROLE {CERT_USER} LOGIN"))
            .unwrap();
        c
    }

    /// A command of the server's, run as the server's user.
    fn pg(&self, program: &str) -> PgCommand {
        let mut cmd = match self.run_as {
            Some(_) => {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(self.bin.join(program));
                c
            }
            None => Command::new(self.bin.join(program)),
        };
        cmd.current_dir(self.dir.path());
        PgCommand {
            cmd,
            log: self.log.clone(),
        }
    }

    /// The administrator's `key=value` connection string for `db`, over the Unix socket.
    pub fn admin_url(&self, db: &str) -> String {
        format!(
            "host={} port={} user=postgres dbname={db}",
            self.socket_dir.display(),
            self.port
        )
    }

    pub fn admin(&self) -> postgres::Client {
        postgres::Client::connect(&self.admin_url("postgres"), postgres::NoTls).unwrap()
    }

    /// A URL to `db` as `user` by the certificate's name, over TCP to 127.0.0.1, with more
    /// `params` (`sslmode=…&sslrootcert=…`).
    pub fn url(&self, host: &str, user: &str, db: &str, params: &str) -> String {
        let sep = if params.is_empty() { "" } else { "&" };
        format!(
            "postgres://{user}@{host}:{}/{db}?hostaddr=127.0.0.1{sep}{params}",
            self.port
        )
    }

    /// The URL runread's processes use in the tests: `verify-full` (the default for a host that
    /// is not loopback) against the cluster's CA.
    pub fn store_url(&self, db: &str) -> String {
        self.url(
            SERVER_NAME,
            "postgres",
            db,
            &format!("sslrootcert={}", self.pki.ca.display()),
        )
    }

    /// A fresh database, dropped when the returned value is.
    pub fn fresh_db(&self) -> ClusterDb {
        let name = format!("runread_t_{}", uuid::Uuid::new_v4().simple());
        self.admin()
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        ClusterDb {
            url: self.store_url(&name),
            admin_url: self.admin_url("postgres"),
            name,
        }
    }

    /// The server's log so far (for a failure's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started {
            let _ = self
                .pg("pg_ctl")
                .cmd
                .args(["-w", "-t", PG_CTL_WAIT_SECS, "-m", "immediate", "-D"])
                .arg(&self.data)
                .arg("stop")
                .output();
        }
    }
}

/// A database of a [`Cluster`], dropped with its connections when this is dropped.
pub struct ClusterDb {
    pub name: String,
    /// How runread's processes reach it (TLS, `verify-full`).
    pub url: String,
    admin_url: String,
}

impl Drop for ClusterDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

struct PgCommand {
    cmd: Command,
    log: PathBuf,
}

impl PgCommand {
    fn args<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(mut self, a: I) -> Self {
        self.cmd.args(a);
        self
    }

    fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.arg(a);
        self
    }

    fn run(mut self, what: &str) {
        let out = self
            .cmd
            .output()
            .unwrap_or_else(|e| panic!("{what}: cannot run it: {e}"));
        assert!(
            out.status.success(),
            "{what} failed: {}{}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}
