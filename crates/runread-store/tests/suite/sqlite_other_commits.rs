//! A wait on one SQLite store hears a commit another store (another process, in life) made to
//! the same file, without waiting for its re-check: SQLite has no `NOTIFY`, so the first
//! subscriber starts a watcher of the file's `data_version`.

use std::time::Duration;

use runread_store::changes::Change;
use runread_store::prelude::*;
use runread_store::sqlite::SqliteStore;

/// Long enough for any loaded machine; the test asserts that the change arrives, not how fast
/// (`runread-bench wake` measures that).
const PATIENCE: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_commit_by_another_store_on_the_same_file_reaches_a_subscribed_wait() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    let waiting = SqliteStore::open(&path).unwrap();
    let committing = SqliteStore::open(&path).unwrap();
    let mut changes = waiting.changes().subscribe();
    // Give the watcher its first look before the commit, so the commit is a change it sees.
    tokio::time::sleep(Duration::from_millis(200)).await;
    committing.put_setting("a", "1").unwrap();
    let heard = tokio::time::timeout(PATIENCE, changes.recv()).await;
    assert!(
        matches!(heard, Ok(Ok(Change::Unknown))),
        "the other store's commit was not heard: {heard:?}"
    );
}

#[tokio::test]
async fn a_store_on_its_own_file_hears_nothing_of_another_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let waiting = SqliteStore::open(&path).unwrap();
    let other = SqliteStore::open(&dir.path().join("b.db")).unwrap();
    let mut changes = waiting.changes().subscribe();
    tokio::time::sleep(Duration::from_millis(200)).await;
    other.put_setting("a", "1").unwrap();
    // Then a commit to its own file, by a second store on it: the first change heard must be
    // that one's (the watcher was looking all along), with nothing before it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        changes.try_recv().is_err(),
        "a commit to another file was announced"
    );
    SqliteStore::open(&path)
        .unwrap()
        .put_setting("a", "1")
        .unwrap();
    let heard = tokio::time::timeout(PATIENCE, changes.recv()).await;
    assert!(matches!(heard, Ok(Ok(Change::Unknown))), "{heard:?}");
}
