//! Test harness, not a product command: commits supervised proofs in a loop exactly as
//! `runread run` does (journal entry durable and read back, then the store's acknowledgement),
//! so that a test can kill it at random points and check what is left.
//!
//! Usage: runread-journal-torture HOME
#![forbid(unsafe_code)]

use runread_store::prelude::*;
use std::path::PathBuf;

use runread_journal::{Entry, FORMAT, FileStamp, Journal, Namespace};
use runread_store::sqlite::SqliteStore;
use runread_store::{Background, Foreground, Phase, Proof, SupervisedRun};

fn main() -> std::process::ExitCode {
    let Some(home) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: runread-journal-torture HOME");
        return std::process::ExitCode::FAILURE;
    };
    let store = match SqliteStore::open(&home.join("runread.db")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("store: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let journal = Journal::at(&runread_supervise::journal_root(&home), store.instance_id());
    let pid = std::process::id();
    for n in 0u64.. {
        if let Err(failure) = commit(&store, &journal, pid, n) {
            eprintln!("{failure}");
            return std::process::ExitCode::FAILURE;
        }
    }
    std::process::ExitCode::SUCCESS
}

/// Commits run `n` of process `pid` as `runread run` commits a proof: journaled first, then
/// acknowledged in the store. `Err`: what failed, as the harness reports it.
fn commit(store: &SqliteStore, journal: &Journal, pid: u32, n: u64) -> Result<(), String> {
    let run_id = format!("p{pid}-r{n}");
    let entry = entry_of(store.instance_id(), pid, n, &run_id);
    let proof =
        runread_supervise::journal_proof(journal, &entry).map_err(|e| format!("journal: {e}"))?;
    store
        .put_supervised(&record_of(pid, run_id, proof))
        .map_err(|e| format!("store: {e}"))
}

/// The journal entry of run `n` (`run_id`) of process `pid`, shaped like a Pi run's: its ids,
/// file stamp and digests differ from every other run's.
fn entry_of(instance: &str, pid: u32, n: u64, run_id: &str) -> Entry {
    let text = format!("answer of {run_id}");
    Entry {
        format: FORMAT.into(),
        namespace: Namespace {
            instance: instance.into(),
            workspace_id: "ws".into(),
            session_id: "torture".into(),
            generation: 1,
            run_id: run_id.to_owned(),
        },
        supervisor_id: format!("torture-{pid}"),
        agent: runread_core::Agent::Pi,
        agent_version: "0.73.1".into(),
        session_file: "/torture.jsonl".into(),
        session_stamp: FileStamp {
            dev: 1,
            ino: n,
            size: n,
            mtime_ns: 0,
        },
        pinned_leaf: None,
        start_entry_id: run_id.to_owned(),
        user_message_sha256: runread_core::sha256_hex(run_id.as_bytes()),
        final_entry_id: format!("f{n}"),
        message_sha256: runread_core::sha256_hex(format!("m{run_id}").as_bytes()),
        text_sha256: runread_core::sha256_hex(text.as_bytes()),
        text_bytes: text.len() as u64,
        truncated: false,
        chain_len: 2,
        verified_at_ms: runread_core::timefmt::now_ms(),
    }
}

/// The store's record of run `run_id` of process `pid`, ended and proven by `proof`.
fn record_of(pid: u32, run_id: String, proof: Proof) -> SupervisedRun {
    SupervisedRun {
        session_id: "torture".into(),
        generation: 1,
        run_id,
        supervisor_id: format!("torture-{pid}"),
        host: "localhost".into(),
        agent_version: "0.73.1".into(),
        foreground: Foreground::Completed,
        exit: Some("exit:0".into()),
        phase: Phase::Ended,
        proof,
        background: Background {
            census_complete: true,
            census_gap: None,
            active: 0,
            observed_at_ms: 0,
        },
        updated_at_ms: runread_core::timefmt::now_ms(),
        supervising: false,
    }
}
