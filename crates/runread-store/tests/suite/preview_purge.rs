//! Migration 8: a store written by a runread that kept prompt previews in its index (the first 80
//! characters of every prompt, secrets and all) holds none of that text once it is opened by this
//! one — not in the rows, and (SQLite) not in the file's free space either.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

#[cfg(feature = "postgres")]
use runread_store::postgres::PostgresStore;
use runread_store::sqlite::SqliteStore;
#[cfg(feature = "postgres")]
use runread_testkit::pg::PgDb;

/// What an older runread wrote into a run's and a user entry's JSON.
const PROMPT: &str = "deploy with token PREVIEW-SECRET-0123456789abcdef please";
const RUN_JSON: &str = r#"{"run_id":"r1","start_line":2,"status":"completed","preview":"deploy with token PREVIEW-SECRET-0123456789abcdef please","final_bytes":7}"#;
const ENTRY_JSON: &str = r#"{"line":2,"offset":10,"bytes":90,"id":"r1","kind":"message","role":"user","preview":"deploy with token PREVIEW-SECRET-0123456789abcdef please"}"#;

/// The last migration of the runreads that kept previews.
const LAST_WITH_PREVIEWS: usize = 7;

/// Runs (and user entries) the old store holds.
const ROWS: i64 = 200;

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Every byte of the store's files: the database and whatever log or shared memory is left.
fn store_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        all.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    all
}

#[test]
fn sqlite_drops_the_previews_an_older_index_kept_and_leaves_none_of_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    {
        // The store as an older runread left it: its schema, previews in the rows.
        let c = crate::older::sqlite_at(&path, LAST_WITH_PREVIEWS);
        // Rows enough to fill pages, so that what an update frees is left in them.
        for n in 1..=ROWS {
            c.execute(
                "INSERT INTO runs (session_id, generation, run_id, ord, status, run_json) \
                 VALUES ('s1', 1, ?1, ?2, 'completed', ?3)",
                rusqlite::params![
                    format!("r{n}"),
                    n,
                    RUN_JSON.replace("\"r1\"", &format!("\"r{n}\""))
                ],
            )
            .unwrap();
            c.execute(
                "INSERT INTO entries (session_id, generation, line, summary_json) \
                 VALUES ('s1', 1, ?1, ?2)",
                rusqlite::params![n + 1, ENTRY_JSON],
            )
            .unwrap();
        }
        c.pragma_update(None, "wal_checkpoint", "TRUNCATE").unwrap();
    }
    assert!(
        holds(&store_bytes(dir.path()), PROMPT),
        "the old rows are written"
    );

    drop(SqliteStore::open(&path).unwrap());

    let c = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = c
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert!(version > LAST_WITH_PREVIEWS as i64);
    let run: String = c
        .query_row("SELECT run_json FROM runs WHERE run_id = 'r1'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let run: serde_json::Value = serde_json::from_str(&run).unwrap();
    assert!(run.get("preview").is_none(), "{run}");
    assert_eq!(run["final_bytes"], 7, "the rest of the record is kept");
    let left: i64 = c
        .query_row(
            "SELECT (SELECT count(*) FROM runs WHERE run_json LIKE '%PREVIEW%') \
                  + (SELECT count(*) FROM entries WHERE summary_json LIKE '%PREVIEW%')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0, "every row is purged");
    let entry: String = c
        .query_row("SELECT summary_json FROM entries WHERE line = 2", [], |r| {
            r.get(0)
        })
        .unwrap();
    let entry: serde_json::Value = serde_json::from_str(&entry).unwrap();
    assert!(entry.get("preview").is_none(), "{entry}");
    assert_eq!(entry["role"], "user");
    drop(c);
    assert!(
        !holds(&store_bytes(dir.path()), "PREVIEW-SECRET"),
        "no byte of the old previews is left in the store's files"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_drops_the_previews_an_older_index_kept() {
    let db = PgDb::fresh();
    let mut c = crate::older::postgres_at(&db, LAST_WITH_PREVIEWS);
    c.execute(
        "INSERT INTO runs (session_id, generation, run_id, ord, status, run_json) \
         VALUES ('s1', 1, 'r1', 0, 'completed', $1)",
        &[&RUN_JSON],
    )
    .unwrap();
    c.execute(
        "INSERT INTO entries (session_id, generation, line, summary_json) VALUES ('s1', 1, 2, $1)",
        &[&ENTRY_JSON],
    )
    .unwrap();

    let store: PostgresStore = db.store();
    drop(store);

    let run: String = c
        .query_one("SELECT run_json FROM runs WHERE run_id = 'r1'", &[])
        .unwrap()
        .get(0);
    let run: serde_json::Value = serde_json::from_str(&run).unwrap();
    assert!(run.get("preview").is_none(), "{run}");
    assert_eq!(run["final_bytes"], 7);
    let entry: String = c
        .query_one("SELECT summary_json FROM entries WHERE line = 2", &[])
        .unwrap()
        .get(0);
    assert!(!entry.contains("PREVIEW-SECRET"), "{entry}");
    assert!(!entry.contains("preview"), "{entry}");
}
