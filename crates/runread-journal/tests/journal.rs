//! The journal's promises: an entry counts only when its bytes hash to the stored digest and it
//! names the run asked for; it is private; retention keeps the newest entries.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::os::unix::fs::PermissionsExt;

use runread_core::limits::{JOURNAL_ENTRY_MAX_BYTES, JOURNAL_RETENTION_RUNS};
use runread_journal::{Entry, FORMAT, FileStamp, Journal, JournalError, Namespace};

fn ns(run: &str) -> Namespace {
    Namespace {
        instance: "inst".into(),
        workspace_id: "ws".into(),
        session_id: "sess".into(),
        generation: 1,
        run_id: run.into(),
    }
}

fn entry(run: &str) -> Entry {
    Entry {
        format: FORMAT.into(),
        namespace: ns(run),
        supervisor_id: "sup".into(),
        agent: runread_core::Agent::Pi,
        agent_version: "0.73.1".into(),
        session_file: "/s/x.jsonl".into(),
        session_stamp: FileStamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: 4,
        },
        pinned_leaf: None,
        start_entry_id: run.into(),
        user_message_sha256: "u".repeat(64),
        final_entry_id: "f".into(),
        message_sha256: "m".repeat(64),
        text_sha256: "t".repeat(64),
        text_bytes: 5,
        truncated: false,
        chain_len: 2,
        verified_at_ms: 1,
    }
}

fn journal() -> (tempfile::TempDir, Journal) {
    let d = tempfile::tempdir().unwrap();
    let j = Journal::at(&d.path().join("journal"), "inst");
    (d, j)
}

#[test]
fn a_written_entry_reads_back_only_with_its_digest_and_namespace() {
    let (_d, j) = journal();
    let w = j.write(&entry("r1")).unwrap();
    assert_eq!(w.name, ns("r1").file_name());
    assert_eq!(
        j.read_verified(&w.name, &w.sha256, &ns("r1")).unwrap(),
        entry("r1")
    );
    assert_eq!(
        j.read_verified(&w.name, &"0".repeat(64), &ns("r1")),
        Err(JournalError::Mismatch),
        "another digest"
    );
    assert_eq!(
        j.read_verified(&w.name, &w.sha256, &ns("r2")),
        Err(JournalError::Mismatch),
        "another run's namespace"
    );
    assert_eq!(
        j.read_verified(&ns("r3").file_name(), &w.sha256, &ns("r3")),
        Err(JournalError::Missing)
    );
}

#[test]
fn entries_and_their_directory_are_owner_only() {
    let (_d, j) = journal();
    let w = j.write(&entry("r1")).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&j.dir().join(&w.name)), 0o600);
    assert_eq!(mode(j.dir()), 0o700);
    std::fs::set_permissions(
        j.dir().join(&w.name),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    assert_eq!(
        j.read_verified(&w.name, &w.sha256, &ns("r1")),
        Err(JournalError::NotPrivate)
    );
}

#[test]
fn a_linked_entry_is_refused() {
    let (d, j) = journal();
    let w = j.write(&entry("r1")).unwrap();
    let path = j.dir().join(&w.name);
    // A hard link elsewhere: nlink 2.
    std::fs::hard_link(&path, d.path().join("copy")).unwrap();
    assert_eq!(
        j.read_verified(&w.name, &w.sha256, &ns("r1")),
        Err(JournalError::NotPrivate)
    );
    // A symbolic link in its place, pointing at identical bytes.
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(d.path().join("copy"), &path).unwrap();
    assert_eq!(
        j.read_verified(&w.name, &w.sha256, &ns("r1")),
        Err(JournalError::NotPrivate)
    );
}

#[test]
fn a_tampered_entry_does_not_verify() {
    let (_d, j) = journal();
    let w = j.write(&entry("r1")).unwrap();
    let path = j.dir().join(&w.name);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"textBytes\":5", "\"textBytes\":6");
    std::fs::write(&path, text).unwrap();
    assert_eq!(
        j.read_verified(&w.name, &w.sha256, &ns("r1")),
        Err(JournalError::Mismatch)
    );
}

/// Pads `session_file` so that the serialized entry is exactly `size` bytes.
fn entry_of_size(run: &str, size: u64) -> Entry {
    let mut e = entry(run);
    let base = serde_json::to_vec(&e).unwrap().len() as u64;
    e.session_file.push_str(&"x".repeat((size - base) as usize));
    assert_eq!(serde_json::to_vec(&e).unwrap().len() as u64, size);
    e
}

#[test]
fn entry_size_is_bounded_at_the_limit() {
    let (_d, j) = journal();
    assert!(
        j.write(&entry_of_size("r1", JOURNAL_ENTRY_MAX_BYTES))
            .is_ok()
    );
    assert_eq!(
        j.write(&entry_of_size("r2", JOURNAL_ENTRY_MAX_BYTES + 1)),
        Err(JournalError::Mismatch)
    );
    assert!(!j.names().contains(&ns("r2").file_name()));
}

#[test]
fn retention_keeps_the_newest_runs() {
    let (_d, j) = journal();
    let first = j.write(&entry("r0")).unwrap();
    // Make the first entry clearly the oldest, whatever the file system's time granularity.
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    std::fs::File::options()
        .write(true)
        .open(j.dir().join(&first.name))
        .unwrap()
        .set_modified(old)
        .unwrap();
    for i in 1..JOURNAL_RETENTION_RUNS {
        j.write(&entry(&format!("r{i}"))).unwrap();
    }
    assert_eq!(
        j.names().len(),
        JOURNAL_RETENTION_RUNS,
        "N entries: all kept"
    );
    let last = j.write(&entry("last")).unwrap();
    let names = j.names();
    assert_eq!(names.len(), JOURNAL_RETENTION_RUNS, "N+1: one pruned");
    assert!(names.contains(&last.name), "the entry just written is kept");
    assert!(!names.contains(&first.name), "the oldest is the one pruned");
}

#[test]
fn a_crashed_writers_temporary_file_never_counts() {
    let (_d, j) = journal();
    j.create().unwrap();
    let name = ns("r1").file_name();
    std::fs::write(j.dir().join(format!(".{name}.dead.tmp")), b"{partial").unwrap();
    assert_eq!(j.names(), Vec::<String>::new());
    assert_eq!(
        j.read_verified(&name, &"0".repeat(64), &ns("r1")),
        Err(JournalError::Missing)
    );
}
