//! Which store a command uses: `--store URL` (or `RUNREAD_STORE`) names a PostgreSQL database
//! shared by several runread processes and hosts; without one, the home's SQLite file.

use std::path::Path;
use std::sync::Arc;

use runread_store::Store;
#[cfg(feature = "postgres")]
use runread_store::postgres::PostgresStore;
use runread_store::sqlite::SqliteStore;

/// The environment variable read when no `--store` is given.
pub const STORE_ENV: &str = "RUNREAD_STORE";

/// The SQLite file inside the home.
pub const SQLITE_FILE: &str = "runread.db";

/// Opens the store `spec` names, else the one `RUNREAD_STORE` names, else the SQLite store at
/// `home/runread.db`.
///
/// - `postgres://…` or `postgresql://…`: `PostgresStore` on that database, namespaced by this
///   machine's host name (`RUNREAD_HOST` overrides it). Connecting applies pending migrations.
///   Refused by a build without the `postgres` feature.
/// - empty or absent: [`SqliteStore`] at `home/runread.db` (`home` must exist).
/// - anything else: refused.
///
/// An error names what failed but never repeats the spec: a URL may carry a password.
pub fn open(home: &Path, spec: Option<&str>) -> Result<Arc<dyn Store>, String> {
    open_with(home, spec, std::env::var(STORE_ENV).ok().as_deref())
}

/// [`open`] with the environment's value passed in.
pub fn open_with(
    home: &Path,
    spec: Option<&str>,
    env_spec: Option<&str>,
) -> Result<Arc<dyn Store>, String> {
    match chosen(spec, env_spec) {
        None => SqliteStore::open(&home.join(SQLITE_FILE))
            .map(|s| Arc::new(s) as Arc<dyn Store>)
            .map_err(|e| format!("cannot open the store in the home: {e}")),
        Some(url) if is_postgres(url) => open_postgres(url),
        Some(_) => Err(format!(
            "unsupported store: --store (or {STORE_ENV}) takes a postgres:// or postgresql:// URL; \
             leave it unset for the SQLite store in the home"
        )),
    }
}

/// The spec that wins: `--store`, else the environment's; blank ones are none.
fn chosen<'a>(spec: Option<&'a str>, env_spec: Option<&'a str>) -> Option<&'a str> {
    [spec, env_spec]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|s| !s.is_empty())
}

/// Where a store [`open`] opened is, as the owner is shown it (`runread status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The SQLite file.
    Sqlite(std::path::PathBuf),
    /// The PostgreSQL URL without its password, query or fragment.
    Postgres(String),
}

/// Where [`open`] opens the store with `spec` and this process's environment.
pub fn location(home: &Path, spec: Option<&str>) -> Location {
    let env_spec = std::env::var(STORE_ENV).ok();
    match chosen(spec, env_spec.as_deref()) {
        Some(url) if is_postgres(url) => Location::Postgres(redacted(url)),
        _ => Location::Sqlite(home.join(SQLITE_FILE)),
    }
}

/// A PostgreSQL URL as it may be shown: its scheme, user, host, port and database, never its
/// password or its parameters (`sslpassword`, `password` may be among them).
pub fn redacted(url: &str) -> String {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{user}@{host}")
        }
        None => authority.to_owned(),
    };
    format!("{scheme}://{authority}/{path}")
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str) -> Result<Arc<dyn Store>, String> {
    PostgresStore::connect(url)
        .map(|s| Arc::new(s) as Arc<dyn Store>)
        .map_err(|e| format!("cannot open the PostgreSQL store: {e}"))
}

/// What a build without the `postgres` feature says to a PostgreSQL URL: the URL is well formed,
/// the binary lacks the means, so the refusal says which build serves it.
#[cfg(not(feature = "postgres"))]
pub const NO_POSTGRES: &str = "this runread was built without PostgreSQL support (cargo feature \
     `postgres`), so --store (or RUNREAD_STORE) cannot name a postgres:// database; use a build \
     with default features, or leave it unset for the SQLite store in the home";

#[cfg(not(feature = "postgres"))]
fn open_postgres(_url: &str) -> Result<Arc<dyn Store>, String> {
    Err(NO_POSTGRES.into())
}

/// Whether `spec` names a PostgreSQL database.
pub fn is_postgres(spec: &str) -> bool {
    let lower = spec.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "postgres")]
    use runread_testkit::pg;

    #[test]
    fn no_spec_opens_the_homes_sqlite_file() {
        let home = tempfile::tempdir().unwrap();
        let s = open_with(home.path(), None, None).unwrap();
        assert!(home.path().join("runread.db").exists());
        let again = open_with(home.path(), Some("  "), Some("")).unwrap();
        assert_eq!(s.instance_id(), again.instance_id());
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_postgres_url_opens_the_shared_store_and_the_flag_beats_the_environment() {
        let db = pg::PgDb::fresh();
        let url = pg::url_with_db(&pg::admin_url(), &db.name);
        let home = tempfile::tempdir().unwrap();
        let a = open_with(home.path(), Some(&url), None).unwrap();
        let b = open_with(home.path(), None, Some(&url)).unwrap();
        assert_eq!(
            a.instance_id(),
            b.instance_id(),
            "the environment names the same database"
        );
        assert!(
            !home.path().join("runread.db").exists(),
            "no SQLite file made"
        );
        let c = open_with(
            home.path(),
            Some(&url),
            Some("postgres://nobody@127.0.0.1:1/x"),
        )
        .unwrap();
        assert_eq!(
            c.instance_id(),
            a.instance_id(),
            "--store wins over RUNREAD_STORE"
        );
    }

    #[cfg(not(feature = "postgres"))]
    #[test]
    fn a_build_without_postgres_refuses_a_postgres_url_and_makes_no_sqlite_file() {
        let home = tempfile::tempdir().unwrap();
        for (flag, env) in [
            (Some("postgres://u:pw-s3cret@127.0.0.1:5432/db"), None),
            (None, Some("postgresql://u@db.example/db")),
        ] {
            let err = open_with(home.path(), flag, env).err().unwrap();
            assert_eq!(err, NO_POSTGRES);
        }
        assert!(!home.path().join("runread.db").exists());
    }

    #[test]
    fn a_shown_url_has_no_password_and_no_parameters() {
        assert_eq!(
            redacted("postgres://app:pw-s3cret@db.example:5432/runread?sslpassword=x#f"),
            "postgres://app@db.example:5432/runread"
        );
        assert_eq!(
            redacted("postgresql://db.example/runread"),
            "postgresql://db.example/runread"
        );
        assert_eq!(redacted("postgres://u:p:q@h/d"), "postgres://u@h/d");
    }

    #[test]
    fn errors_never_repeat_the_spec() {
        let home = tempfile::tempdir().unwrap();
        for spec in [
            "mysql://u:pw-s3cret@h/db",
            "postgres://u:pw-s3cret@127.0.0.1:1/db",
            "postgresql://u:pw-s3cret@127.0.0.1:99999/db",
        ] {
            let err = open_with(home.path(), Some(spec), None).err().expect(spec);
            assert!(!err.contains("pw-s3cret"), "{err}");
        }
        assert!(is_postgres("PostgreSQL://x"));
        assert!(!is_postgres("sqlite:///x"));
    }
}
