//! Incremental ingest: unchanged files cost nothing, appends cost the new bytes, identity
//! changes start a new generation.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::io::Write;
use std::time::Duration;

use runread_ingest::{FileOutcome, TAIL_WINDOW_BYTES};
use runread_sessions::RunStatus;

use runread_testkit::{Env, PiVersion, fixture_session, pi_versions, relocated};

const SETTLED: Duration = Duration::from_secs(60);

/// Pi `v`'s relocated multi-run session, and the byte offset just after its first run's final
/// line.
fn multi_run(env: &Env, v: PiVersion) -> (Vec<u8>, usize) {
    let name = v.fixture("multi-run");
    let bytes = relocated(
        &std::fs::read(fixture_session(&name)).unwrap(),
        env.workspace.to_str().unwrap(),
    );
    let agent = runread_testkit::agent_runs(&fixture_session(&name));
    let second_user = &agent[1].0;
    let needle = format!("\"id\":\"{second_user}\"");
    let line_start = String::from_utf8_lossy(&bytes).find(&needle).unwrap();
    let cut = bytes[..line_start]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    (bytes, cut)
}

fn one_file(env: &Env) -> std::path::PathBuf {
    env.sessions.join("s.jsonl")
}

fn outcome(env: &Env) -> (FileOutcome, runread_ingest::Report) {
    let ws = env.store.workspaces().unwrap();
    let mut report = runread_ingest::Report::default();
    let o = runread_ingest::ingest_file(
        &*env.store,
        &ws,
        runread_sessions::Agent::Pi,
        &one_file(env),
        runread_core::timefmt::now_ms(),
        &mut report,
    )
    .unwrap();
    (o, report)
}

pi_versions! {
#[test]
fn reingesting_an_unchanged_file_reads_nothing(v) {
    let env = Env::new();
    env.place(&v.fixture("multi-run"), SETTLED);
    let first = env.ingest();
    assert_eq!(first.new_generations, 1);
    let again = env.ingest();
    assert_eq!(again.unchanged, 1);
    assert_eq!(again.bytes_read, 0);
    assert_eq!(again.verify_bytes, 0);
}
}

pi_versions! {
#[test]
fn an_appended_file_costs_the_new_bytes(v) {
    let env = Env::new();
    let (bytes, cut) = multi_run(&env, v);
    std::fs::write(one_file(&env), &bytes[..cut]).unwrap();
    let (o, _) = outcome(&env);
    assert!(
        matches!(o, FileOutcome::NewGeneration { generation: 1, .. }),
        "{o:?}"
    );
    assert_eq!(env.store.runs().unwrap().len(), 1);

    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(one_file(&env))
        .unwrap();
    f.write_all(&bytes[cut..]).unwrap();
    drop(f);
    let (o, report) = outcome(&env);
    let appended = (bytes.len() - cut) as u64;
    assert_eq!(o, FileOutcome::Appended { bytes: appended });
    assert_eq!(report.bytes_read, appended);
    let header_line = bytes.iter().position(|b| *b == b'\n').unwrap() as u64 + 1;
    assert!(
        report.verify_bytes <= header_line + 2 * TAIL_WINDOW_BYTES,
        "verification is bounded: {}",
        report.verify_bytes
    );
    let runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(
        runs.iter()
            .all(|r| r.target.generation == 1 && r.run.status == RunStatus::Completed)
    );
}
}

pi_versions! {
#[test]
fn a_torn_line_waits_and_completes_on_the_next_pass(v) {
    let env = Env::new();
    let (bytes, _) = multi_run(&env, v);
    let mid = bytes.len() - 40;
    std::fs::write(one_file(&env), &bytes[..mid]).unwrap();
    let (_, report) = outcome(&env);
    assert_eq!(report.torn_files, 1);
    let last = env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .max_by_key(|r| r.run.start_line)
        .unwrap();
    assert_eq!(last.run.status, RunStatus::Unknown);

    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(one_file(&env))
        .unwrap();
    f.write_all(&bytes[mid..]).unwrap();
    drop(f);
    let (o, report) = outcome(&env);
    assert!(matches!(o, FileOutcome::Appended { .. }), "{o:?}");
    assert_eq!(report.torn_files, 0);
    let runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(
        runs.iter()
            .all(|r| r.run.status == RunStatus::Completed && r.target.generation == 1)
    );
}
}

pi_versions! {
#[test]
fn truncation_starts_a_new_generation(v) {
    let env = Env::new();
    let (bytes, cut) = multi_run(&env, v);
    std::fs::write(one_file(&env), &bytes).unwrap();
    outcome(&env);
    // Same inode, fewer bytes.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(one_file(&env))
        .unwrap();
    f.set_len(cut as u64).unwrap();
    drop(f);
    let (o, _) = outcome(&env);
    assert_eq!(
        o,
        FileOutcome::NewGeneration {
            generation: 2,
            bytes: cut as u64,
            reason: "file truncated"
        }
    );
    let runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].target.generation, 2);
}
}

pi_versions! {
#[test]
fn replacing_the_file_starts_a_new_generation(v) {
    let env = Env::new();
    let (bytes, _) = multi_run(&env, v);
    std::fs::write(one_file(&env), &bytes).unwrap();
    outcome(&env);
    let tmp = env.sessions.join("tmp.part");
    std::fs::write(&tmp, &bytes).unwrap();
    std::fs::rename(&tmp, one_file(&env)).unwrap();
    let (o, _) = outcome(&env);
    assert!(
        matches!(
            o,
            FileOutcome::NewGeneration {
                generation: 2,
                reason: "file replaced",
                ..
            }
        ),
        "{o:?}"
    );
}
}

pi_versions! {
#[test]
fn a_changed_header_starts_a_new_generation(v) {
    let env = Env::new();
    let (bytes, _) = multi_run(&env, v);
    std::fs::write(one_file(&env), &bytes).unwrap();
    outcome(&env);
    // Rewrite in place (same inode) with another header version, as Pi's migration does.
    let text = String::from_utf8(bytes.clone()).unwrap();
    let rewritten = text.replacen("\"version\":3", "\"version\":2", 1);
    assert_ne!(rewritten, text);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(one_file(&env))
        .unwrap();
    f.write_all(rewritten.as_bytes()).unwrap();
    f.write_all(b"\n").unwrap();
    drop(f);
    let (o, _) = outcome(&env);
    assert!(
        matches!(
            o,
            FileOutcome::NewGeneration {
                generation: 2,
                reason: "header changed",
                ..
            }
        ),
        "{o:?}"
    );
}
}

pi_versions! {
#[test]
fn a_rewrite_before_the_consumed_offset_starts_a_new_generation(v) {
    let env = Env::new();
    let (bytes, _) = multi_run(&env, v);
    std::fs::write(one_file(&env), &bytes).unwrap();
    outcome(&env);
    let mut changed = bytes.clone();
    let n = changed.len();
    changed[n - 10] = if changed[n - 10] == b'a' { b'b' } else { b'a' };
    changed.extend_from_slice(b"\n");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(one_file(&env))
        .unwrap();
    f.write_all(&changed).unwrap();
    drop(f);
    let (o, _) = outcome(&env);
    assert!(
        matches!(
            o,
            FileOutcome::NewGeneration {
                generation: 2,
                reason: "file rewritten",
                ..
            }
        ),
        "{o:?}"
    );
}
}

pi_versions! {
#[test]
fn a_symlinked_session_file_is_not_read(v) {
    let env = Env::new();
    let (bytes, _) = multi_run(&env, v);
    let real = env.dir.path().join("real.jsonl");
    std::fs::write(&real, &bytes).unwrap();
    std::os::unix::fs::symlink(&real, env.sessions.join("link.jsonl")).unwrap();
    let report = env.ingest();
    // Listed, refused without being opened, and reported: never followed, never silent.
    assert_eq!((report.files, report.unreadable), (1, 1), "{report:?}");
    assert!(env.store.runs().unwrap().is_empty());
}
}

pi_versions! {
/// Files are read ahead on several threads but committed in file order: of many copies of one
/// session, the first file holds it and every later one is a duplicate, every time; and a second
/// pass over the same files changes nothing.
#[test]
fn a_pass_read_ahead_commits_in_file_order(v) {
    let env = Env::new();
    let bytes = relocated(
        &std::fs::read(fixture_session(&v.fixture("multi-run"))).unwrap(),
        env.workspace.to_str().unwrap(),
    );
    // More copies than the read-ahead window, so some are read while earlier ones commit.
    let copies = runread_ingest::INGEST_READ_AHEAD_FILES * 3;
    for i in 0..copies {
        std::fs::write(env.sessions.join(format!("copy-{i:03}.jsonl")), &bytes).unwrap();
    }
    let dir = runread_ingest::AgentDir::new(runread_sessions::Agent::Pi, &env.sessions);
    let (report, outcomes) =
        runread_ingest::ingest_dir(&*env.store, &dir, runread_core::timefmt::now_ms(), |_| {})
            .unwrap();
    assert_eq!(report.files, copies as u64);
    assert_eq!(report.new_generations, 1);
    assert_eq!(report.duplicates, copies as u64 - 1);
    assert!(matches!(outcomes[0].1, FileOutcome::NewGeneration { .. }));
    assert!(
        outcomes[1..]
            .iter()
            .all(|(_, o)| *o == FileOutcome::DuplicateSessionId)
    );
    let held = env.store.runs().unwrap();
    assert!(
        held.iter()
            .all(|r| r.session_path.ends_with("copy-000.jsonl"))
    );
    let (again, _) =
        runread_ingest::ingest_dir(&*env.store, &dir, runread_core::timefmt::now_ms(), |_| {})
            .unwrap();
    assert_eq!((again.unchanged, again.duplicates), (1, copies as u64 - 1));
}
}
