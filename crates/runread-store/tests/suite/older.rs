//! A store as an older runread left it: the released migrations up to one, applied the way each
//! dialect's store applies them, so that a test can fill in rows of that schema and see what the
//! next migrations make of them when this runread opens the store.

#[cfg(feature = "postgres")]
use runread_testkit::pg::PgDb;

/// The released migrations of `dialect` (`sqlite`, `postgres`), 1 to `last`.
fn released(dialect: &str, last: usize) -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(dialect);
    (1..=last)
        .map(|n| std::fs::read_to_string(dir.join(format!("{n:04}.sql"))).unwrap())
        .collect()
}

/// A SQLite store file at `path` at schema `last` (WAL, as the store keeps it), open for rows.
pub(crate) fn sqlite_at(path: &std::path::Path, last: usize) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(path).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    for sql in released("sqlite", last) {
        c.execute_batch(&sql).unwrap();
    }
    c.pragma_update(None, "user_version", last as i64).unwrap();
    c
}

/// `db` at schema `last`, recorded in `schema_migrations` as the store records it; a connection
/// to it, open for rows.
#[cfg(feature = "postgres")]
pub(crate) fn postgres_at(db: &PgDb, last: usize) -> postgres::Client {
    let mut c = db.client();
    c.batch_execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, \
         applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .unwrap();
    for (n, sql) in released("postgres", last).iter().enumerate() {
        c.batch_execute(sql).unwrap();
        let version = i32::try_from(n + 1).unwrap();
        c.execute(
            "INSERT INTO schema_migrations(version) VALUES ($1)",
            &[&version],
        )
        .unwrap();
    }
    c
}
