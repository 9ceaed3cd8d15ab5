//! Killing the proof committer at random points — during journal writes, renames, read-backs,
//! pruning and store acknowledgements — never leaves a journal entry that verifies but is wrong,
//! nor a store acknowledgement (what makes an answer readable) without a verifying entry.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runread_core::limits::JOURNAL_RETENTION_RUNS;
use runread_journal::{Entry, Journal, JournalError, Namespace};
use runread_store::Proof;
use runread_store::sqlite::SqliteStore;

/// Kills, at least the hundred.
const KILLS: usize = 120;
/// Longest a committer lives before it is killed.
const MAX_LIFETIME_MS: u64 = 60;

/// A small, dependency-free random source (the kill points need spread, not quality).
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_kills_never_leave_a_wrong_entry_or_an_unproven_acknowledgement() {
    let home = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_runread-journal-torture");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("seed {seed}");
    let mut rng = XorShift(seed);
    let mut pids = Vec::new();
    let mut committed_any = 0usize;
    for _ in 0..KILLS {
        let mut child = Command::new(bin)
            .arg(home.path())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        pids.push(child.id());
        std::thread::sleep(Duration::from_millis(rng.next() % MAX_LIFETIME_MS + 1));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(
            status.code().is_none(),
            "the committer must have been killed, not have failed: {status:?}"
        );
    }
    let store = SqliteStore::open(&home.path().join("runread.db")).unwrap();
    let journal = Journal::at(
        &runread_supervise::journal_root(home.path()),
        store.instance_id(),
    );
    let names: HashSet<String> = journal.names().into_iter().collect();
    assert!(names.len() <= JOURNAL_RETENTION_RUNS);

    // Every named entry is whole: it parses and lives under its own namespace's name.
    for name in &names {
        let bytes = std::fs::read(journal.dir().join(name)).unwrap();
        let entry: Entry = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{name} is not a whole entry: {e}"));
        assert_eq!(&entry.namespace.file_name(), name);
    }

    // Every acknowledgement names an entry that verifies and says what the store says; an entry
    // may be absent only when retention pruned it (then the service falls back to passive).
    let started = Instant::now();
    for pid in &pids {
        let mut n = 0u64;
        loop {
            let run_id = format!("p{pid}-r{n}");
            let Some(rec) = store.supervised("torture", 1, &run_id).unwrap() else {
                // Acknowledgements are written in order: nothing after the first gap.
                assert!(
                    store
                        .supervised("torture", 1, &format!("p{pid}-r{}", n + 1))
                        .unwrap()
                        .is_none()
                );
                break;
            };
            let Proof::Journaled {
                journal_name,
                journal_sha256,
                text_sha256,
                final_entry_id,
                ..
            } = &rec.proof
            else {
                panic!("{run_id}: acknowledged without a journaled proof");
            };
            let ns = Namespace {
                instance: store.instance_id().into(),
                workspace_id: "ws".into(),
                session_id: "torture".into(),
                generation: 1,
                run_id: run_id.clone(),
            };
            match journal.read_verified(journal_name, journal_sha256, &ns) {
                Ok(entry) => {
                    assert_eq!(&entry.text_sha256, text_sha256, "{run_id}");
                    assert_eq!(&entry.final_entry_id, final_entry_id, "{run_id}");
                    assert_eq!(
                        entry.text_sha256,
                        runread_core::sha256_hex(format!("answer of {run_id}").as_bytes()),
                        "{run_id}: the entry verifies, so it must be right"
                    );
                    committed_any += 1;
                }
                // Pruning makes room before each write, so a kill right after it leaves one fewer.
                Err(JournalError::Missing) => assert!(
                    names.len() >= JOURNAL_RETENTION_RUNS - 1,
                    "{run_id}: an acknowledged entry is missing before retention was reached"
                ),
                Err(e) => panic!("{run_id}: acknowledged but its entry does not verify: {e}"),
            }
            n += 1;
        }
    }
    assert!(
        committed_any > 0,
        "no committer got as far as one acknowledgement"
    );
    eprintln!(
        "{KILLS} kills, {} entries on disk, {committed_any} verified acknowledgements, checked in {:?}",
        names.len(),
        started.elapsed()
    );
}
