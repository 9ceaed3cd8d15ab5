//! Test databases on a real PostgreSQL server: each test gets a database of its own, made from
//! the admin connection `RUNREAD_TEST_PG` and dropped afterwards.
//!
//! PostgreSQL missing is a failure, never a skip: a skipped store test must not look green.

use runread_store::postgres::PostgresStore;

pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The admin connection string (`RUNREAD_TEST_PG`, else the local server's `test` database).
pub fn admin_url() -> String {
    std::env::var("RUNREAD_TEST_PG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_ADMIN_URL.to_owned())
}

/// An admin client, or a panic that says how to get PostgreSQL running.
pub fn admin() -> postgres::Client {
    let url = admin_url();
    match postgres::Client::connect(&url, postgres::NoTls) {
        Ok(c) => c,
        Err(e) => {
            let ci = std::env::var_os("CI").is_some()
                || std::env::var("RUNREAD_REQUIRE_PG").is_ok_and(|v| v == "1");
            panic!(
                "\n\nPostgreSQL is required for the store contract tests and is not reachable at \
                 RUNREAD_TEST_PG={url}: {e}\n{}\nStart the local server with\n    \
                 pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n\
                 or point RUNREAD_TEST_PG at an admin connection (a role that may CREATE DATABASE).\n\
                 These tests never skip: a skipped store test would look green.\n",
                if ci {
                    "CI requires PostgreSQL (CI / RUNREAD_REQUIRE_PG=1): scripts/test starts it."
                } else {
                    "(locally too: the PostgreSQL store is tested on every run)"
                }
            )
        }
    }
}

/// `url` with its database replaced by `db` (URL form or `key=value` form).
pub fn url_with_db(url: &str, db: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        let (before_query, query) = match rest.find('?') {
            Some(q) => (&rest[..q], &rest[q..]),
            None => (rest, ""),
        };
        let authority = match before_query.find('/') {
            Some(p) => &before_query[..p],
            None => before_query,
        };
        format!("{}://{authority}/{db}{query}", &url[..scheme_end])
    } else {
        format!("{url} dbname={db}")
    }
}

/// A database made for one test, dropped (with its connections) when this is dropped.
pub struct PgDb {
    pub name: String,
    pub url: String,
}

impl PgDb {
    pub fn fresh() -> PgDb {
        let name = format!("runread_t_{}", uuid::Uuid::new_v4().simple());
        admin()
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let url = url_with_db(&admin_url(), &name);
        PgDb { name, url }
    }

    pub fn store(&self) -> PostgresStore {
        PostgresStore::connect_as(&self.url, "host-a").unwrap()
    }

    pub fn store_as(&self, host: &str) -> PostgresStore {
        PostgresStore::connect_as(&self.url, host).unwrap()
    }

    /// A client on this database (as the admin role).
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).unwrap()
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&admin_url(), postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// A `key=value` connection string for database `db` as `user`, on the admin URL's server, or
/// on `127.0.0.1:port` when a port is given (a proxy in front of it).
pub fn kv_url(db: &str, user: Option<&str>, port: Option<u16>) -> String {
    let admin: postgres::Config = admin_url().parse().unwrap();
    let host = match (port, admin.get_hosts().first()) {
        (Some(_), _) => "127.0.0.1".to_owned(),
        (None, Some(postgres::config::Host::Tcp(h))) => h.clone(),
        (None, Some(postgres::config::Host::Unix(p))) => p.display().to_string(),
        (None, None) => "127.0.0.1".to_owned(),
    };
    let port = port.unwrap_or_else(|| admin.get_ports().first().copied().unwrap_or(5432));
    let user = user
        .map(str::to_owned)
        .unwrap_or_else(|| admin.get_user().unwrap_or("postgres").to_owned());
    let mut url = format!("host={host} port={port} dbname={db} user={user}");
    if let Some(pw) = admin.get_password() {
        url.push_str(&format!(" password='{}'", String::from_utf8_lossy(pw)));
    }
    url
}

/// The upstream server's TCP address, for a proxy.
pub fn server_addr() -> std::net::SocketAddr {
    let admin: postgres::Config = admin_url().parse().unwrap();
    let host = match admin.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".to_owned(),
    };
    let port = admin.get_ports().first().copied().unwrap_or(5432);
    std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .unwrap()
        .next()
        .unwrap()
}

/// A LOGIN role that is a member of the restricted role, dropped when this is dropped.
pub struct AppLogin {
    pub name: String,
}

impl AppLogin {
    pub fn create() -> AppLogin {
        let name = format!("runread_t_app_{}", uuid::Uuid::new_v4().simple());
        admin()
            .batch_execute(&format!(
                "CREATE ROLE {name} LOGIN IN ROLE {}",
                runread_store::postgres::APP_ROLE
            ))
            .unwrap();
        AppLogin { name }
    }
}

impl Drop for AppLogin {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&admin_url(), postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP ROLE IF EXISTS {}", self.name));
        }
    }
}

/// Terminates every backend connected to database `db` (except `admin`'s own); returns how
/// many were terminated.
pub fn terminate_backends(admin: &mut postgres::Client, db: &str) -> i64 {
    admin
        .query_one(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&db],
        )
        .unwrap()
        .get(0)
}
