//! The SQLite store copies its write-ahead log back into the file on a thread of its own, and
//! the log stays bounded: by that thread while it keeps up, by the writer itself at
//! `CHECKPOINT_INLINE_PAGES`, and by SQLite when the store closes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::path::Path;
use std::time::{Duration, Instant};

use runread_sessions::{EntryKind, EntrySummary};
use runread_store::IngestCommit;
use runread_store::checkpoint::{CHECKPOINT_AFTER_PAGES, CHECKPOINT_INLINE_PAGES};
use runread_store::sqlite::SqliteStore;
use runread_testkit::records;

/// Entries per commit, each with about a kilobyte of summary: a commit writes some tens of pages,
/// far fewer than the log's thresholds.
const ENTRIES_PER_COMMIT: u64 = 200;
/// The most log pages one such commit adds (the entries, their index, the session's rows).
const COMMIT_PAGES_MAX: i64 = 200;

fn entry(line: u64) -> EntrySummary {
    let id = format!("e{line}-{}", "x".repeat(900));
    EntrySummary {
        kind: EntryKind::Message,
        role: Some("user".into()),
        ..EntrySummary::at(line, line * 1_000, 900, id)
    }
}

/// Commits generation 1 of session `s1`, `ENTRIES_PER_COMMIT` new entries after `line`.
fn commit(s: &SqliteStore, ws: &str, line: &mut u64) {
    commit_to(s, ws, "s1", line);
}

/// [`commit`] to session `id`.
fn commit_to(s: &SqliteStore, ws: &str, id: &str, line: &mut u64) {
    let first = *line == 0;
    let entries = (0..ENTRIES_PER_COMMIT)
        .map(|i| entry(*line + i + 1))
        .collect();
    *line += ENTRIES_PER_COMMIT;
    s.commit_ingest(&IngestCommit {
        session: records::session_at(id, &format!("/sessions/{id}.jsonl"), ws, 1),
        new_generation: first,
        new_entries: entries,
        runs: vec![records::run("r1")],
    })
    .unwrap();
}

/// Commits until the log has taken `pages` pages in all (as the commits report them); returns
/// how many it took.
fn commit_pages(s: &SqliteStore, ws: &str, line: &mut u64, pages: i64) -> i64 {
    let mut written = 0;
    while written < pages {
        let before = s.checkpoint_stats().last_log_pages;
        commit(s, ws, line);
        let after = s.checkpoint_stats().last_log_pages;
        // A commit after a completed checkpoint starts the log again.
        written += if after > before {
            after - before
        } else {
            after
        };
    }
    written
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn open(dir: &Path) -> (SqliteStore, String) {
    let s = SqliteStore::open(&dir.join("runread.db")).unwrap();
    let ws = s.add_workspace("/w", "w", 1).unwrap().id;
    (s, ws)
}

#[test]
fn a_long_ingest_is_checkpointed_by_the_thread_and_its_log_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (s, ws) = open(dir.path());
    let mut line = 0;
    let written = commit_pages(&s, &ws, &mut line, 3 * i64::from(CHECKPOINT_INLINE_PAGES));
    wait_for("a checkpoint on the thread", || {
        s.checkpoint_stats().background > 0
    });
    let stats = s.checkpoint_stats();
    assert!(
        stats.largest_log_pages <= i64::from(CHECKPOINT_INLINE_PAGES) + COMMIT_PAGES_MAX,
        "the log outgrew its bound: {stats:?}"
    );
    // In steps of the threshold, not one per commit: each checkpoint but the first of a log
    // follows CHECKPOINT_AFTER_PAGES new pages.
    let steps = written / i64::from(CHECKPOINT_AFTER_PAGES);
    assert!(
        (stats.background + stats.inline) as i64 <= 2 * steps + 2,
        "{written} pages written: {stats:?}"
    );
    assert_eq!(s.entries("s1", 1).unwrap().len() as u64, line);
}

#[test]
fn the_threads_checkpoint_copies_the_whole_log_and_the_next_commit_starts_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let (s, ws) = open(dir.path());
    let mut line = 0;
    while s.checkpoint_stats().last_log_pages < i64::from(CHECKPOINT_AFTER_PAGES) {
        commit(&s, &ws, &mut line);
    }
    wait_for("a checkpoint on the thread", || {
        s.checkpoint_stats().background > 0
    });
    commit(&s, &ws, &mut line);
    let stats = s.checkpoint_stats();
    assert!(
        stats.last_log_pages < COMMIT_PAGES_MAX,
        "the log was not copied back: {stats:?}"
    );
    assert_eq!(stats.inline, 0, "{stats:?}");
}

#[test]
fn a_short_log_is_not_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    let (s, ws) = open(dir.path());
    let mut line = 0;
    while s.checkpoint_stats().last_log_pages + COMMIT_PAGES_MAX < i64::from(CHECKPOINT_AFTER_PAGES)
    {
        commit(&s, &ws, &mut line);
    }
    let stats = s.checkpoint_stats();
    assert_eq!((stats.background, stats.inline), (0, 0), "{stats:?}");
}

#[test]
fn a_reader_holding_the_log_makes_the_writer_checkpoint_at_the_bound_and_releasing_it_shortens_the_log()
 {
    let dir = tempfile::tempdir().unwrap();
    let (s, ws) = open(dir.path());
    let mut line = 0;
    commit(&s, &ws, &mut line);
    // A read transaction on its own connection: no checkpoint may copy a frame written after it
    // began, so the log cannot start again while it lasts.
    let reader = rusqlite::Connection::open(dir.path().join("runread.db")).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM entries", [], |r| r.get(0))
        .unwrap();
    commit_pages(&s, &ws, &mut line, i64::from(CHECKPOINT_INLINE_PAGES) + 1);
    let held = s.checkpoint_stats();
    assert!(
        held.last_log_pages > i64::from(CHECKPOINT_INLINE_PAGES),
        "{held:?}"
    );
    assert!(
        held.inline > 0,
        "the writer checkpointed at the bound: {held:?}"
    );
    reader.execute_batch("COMMIT").unwrap();
    // The next commits copy the rest (the writer's own checkpoint may meet the thread's and
    // leave it to a later commit) and then start the log again.
    for _ in 0..50 {
        commit(&s, &ws, &mut line);
        if s.checkpoint_stats().last_log_pages < i64::from(CHECKPOINT_AFTER_PAGES) {
            break;
        }
    }
    let released = s.checkpoint_stats();
    assert!(
        released.last_log_pages < i64::from(CHECKPOINT_AFTER_PAGES),
        "{released:?}"
    );
    assert_eq!(s.entries("s1", 1).unwrap().len() as u64, line);
}

#[test]
fn dropping_the_store_stops_the_checkpointer_and_the_last_close_removes_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("runread.db-wal");
    let mut line = 0;
    {
        let (s, ws) = open(dir.path());
        commit_pages(&s, &ws, &mut line, 2 * i64::from(CHECKPOINT_AFTER_PAGES));
        wait_for("a checkpoint on the thread", || {
            s.checkpoint_stats().background > 0
        });
        assert!(s.entries("s1", 1).unwrap().len() as u64 == line);
        assert!(wal.exists());
    }
    // Had the thread's connection outlived the store, the log would still be there.
    assert!(!wal.exists(), "the log outlived the store");
    let (s, _) = open(dir.path());
    assert_eq!(s.entries("s1", 1).unwrap().len() as u64, line);
}

#[test]
fn two_stores_on_one_file_checkpoint_beside_each_other() {
    // `serve` and `watch` on one home: two writers, two checkpointers, one log.
    let dir = tempfile::tempdir().unwrap();
    let (a, ws) = open(dir.path());
    let (b, _) = open(dir.path());
    std::thread::scope(|scope| {
        for (s, id) in [(&a, "a"), (&b, "b")] {
            let ws = ws.clone();
            scope.spawn(move || {
                let mut line = 0;
                for _ in 0..40 {
                    commit_to(s, &ws, id, &mut line);
                }
            });
        }
    });
    for (s, id) in [(&a, "a"), (&b, "b")] {
        assert_eq!(
            s.entries(id, 1).unwrap().len() as u64,
            40 * ENTRIES_PER_COMMIT
        );
    }
    let checked: String = rusqlite::Connection::open(dir.path().join("runread.db"))
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(checked, "ok");
}
