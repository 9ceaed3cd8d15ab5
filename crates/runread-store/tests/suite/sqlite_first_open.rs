//! Several processes open a new SQLite store at once (`serve`, `run` and `watch` started
//! together): each migration is applied exactly once and all agree on one instance.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;

use runread_store::sqlite::SqliteStore;

#[test]
fn concurrent_first_opens_migrate_once_and_share_one_instance() {
    const OPENERS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(OPENERS));
    let handles: Vec<_> = (0..OPENERS)
        .map(|_| {
            let (path, barrier) = (path.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                SqliteStore::open(&path).map(|s| s.instance_id().to_owned())
            })
        })
        .collect();
    let ids: Vec<String> = handles
        .into_iter()
        .map(|h| h.join().unwrap().expect("every opener succeeds"))
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
}
