//! Store selection (`crates/runread/src/storeopen.rs`), compiled here on its own.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

#[path = "../src/storeopen.rs"]
#[allow(dead_code)]
mod storeopen;

#[path = "../../runread-store/tests/support/mod.rs"]
mod support;

#[test]
fn no_spec_opens_the_homes_sqlite_file() {
    let home = tempfile::tempdir().unwrap();
    let s = storeopen::open_with(home.path(), None, None).unwrap();
    assert!(home.path().join("runread.db").exists());
    let again = storeopen::open_with(home.path(), Some("  "), Some("")).unwrap();
    assert_eq!(s.instance_id(), again.instance_id());
}

#[test]
fn a_postgres_url_opens_the_shared_store_and_the_flag_beats_the_environment() {
    let db = support::PgDb::fresh();
    let url = support::url_with_db(&support::admin_url(), &db.name);
    let home = tempfile::tempdir().unwrap();
    let a = storeopen::open_with(home.path(), Some(&url), None).unwrap();
    let b = storeopen::open_with(home.path(), None, Some(&url)).unwrap();
    assert_eq!(
        a.instance_id(),
        b.instance_id(),
        "the environment names the same database"
    );
    assert!(
        !home.path().join("runread.db").exists(),
        "no SQLite file made"
    );
    let c = storeopen::open_with(
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

#[test]
fn errors_never_repeat_the_spec() {
    let home = tempfile::tempdir().unwrap();
    for spec in [
        "mysql://u:pw-s3cret@h/db",
        "postgres://u:pw-s3cret@127.0.0.1:1/db",
        "postgresql://u:pw-s3cret@127.0.0.1:99999/db",
    ] {
        let err = storeopen::open_with(home.path(), Some(spec), None)
            .err()
            .expect(spec);
        assert!(!err.contains("pw-s3cret"), "{err}");
    }
    assert!(storeopen::is_postgres("PostgreSQL://x"));
    assert!(!storeopen::is_postgres("sqlite:///x"));
}
