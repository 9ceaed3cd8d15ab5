//! A pass loads the store's records of its directory in one query instead of asking per file.
//! Its outcome must be the one a lookup per file gives, whatever changed between passes and
//! whatever changes during one (this pass's own commits moving a session, another writer
//! ingesting a file the pass has not reached yet).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runread_ingest::{AgentDir, FileOutcome, Report};
use runread_sessions::Agent;

use runread_testkit::{Env, fixture_session, relocated, set_age};

const SETTLED: Duration = Duration::from_secs(60);

/// Fixture `name`'s session relocated into `env`'s workspace, its session id (several fixtures
/// share one) made distinct by `n`: the id's last two characters, so every offset stays.
fn session_bytes(env: &Env, name: &str, n: u8) -> Vec<u8> {
    let bytes = relocated(
        &std::fs::read(fixture_session(name)).unwrap(),
        env.workspace.to_str().unwrap(),
    );
    let split = bytes.iter().position(|b| *b == b'\n').unwrap();
    let header: serde_json::Value = serde_json::from_slice(&bytes[..split]).unwrap();
    let id = header["id"].as_str().unwrap();
    let new_id = format!("{}{n:02}", &id[..id.len() - 2]);
    let mut out = String::from_utf8(bytes[..split].to_vec())
        .unwrap()
        .replace(&format!("\"id\":\"{id}\""), &format!("\"id\":\"{new_id}\""))
        .into_bytes();
    assert_eq!(out.len(), split);
    out.extend_from_slice(&bytes[split..]);
    out
}

/// The byte offset just after the first run of the multi-run session `bytes`.
fn first_run_end(bytes: &[u8]) -> usize {
    let agent = runread_testkit::agent_runs(&fixture_session("multi-run"));
    let needle = format!("\"id\":\"{}\"", agent[1].0);
    let line_start = String::from_utf8_lossy(bytes).find(&needle).unwrap();
    bytes[..line_start]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1
}

fn put(env: &Env, name: &str, bytes: &[u8]) -> PathBuf {
    let p = env.sessions.join(name);
    std::fs::write(&p, bytes).unwrap();
    set_age(&p, SETTLED);
    p
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
    drop(f);
    set_age(path, SETTLED);
}

/// How a pass is run: `ingest_dir` (records loaded once, files read ahead) or one
/// `ingest_file` per file in the same order (one lookup per file, nothing ahead).
#[derive(Clone, Copy)]
enum Pass {
    Dir,
    PerFile,
}

/// One pass over `env`'s Pi directory: each file's name and outcome, in file order.
fn pass(env: &Env, how: Pass) -> Vec<(String, FileOutcome)> {
    let dir = AgentDir::new(runread_sessions::Agent::Pi, &env.sessions);
    let now = runread_core::timefmt::now_ms();
    let outcomes: Vec<(PathBuf, FileOutcome)> = match how {
        Pass::Dir => {
            runread_ingest::ingest_dir(&*env.store, &dir, now, |_| {})
                .unwrap()
                .1
        }
        Pass::PerFile => {
            let ws = env.store.workspaces().unwrap();
            let mut report = Report::default();
            dir.session_files()
                .into_iter()
                .map(|p| {
                    let o = runread_ingest::ingest_file(
                        &*env.store,
                        &ws,
                        Agent::Pi,
                        &p,
                        now,
                        &mut report,
                    )
                    .unwrap();
                    (p, o)
                })
                .collect()
        }
    };
    outcomes
        .into_iter()
        .map(|(p, o)| (p.file_name().unwrap().to_str().unwrap().to_owned(), o))
        .collect()
}

/// What the store holds of `env`'s sessions, without what differs between two homes (paths
/// under the temporary directory, workspace ids, inodes, times; the temporary directories'
/// names are of one length, so offsets agree).
fn held(env: &Env) -> Vec<String> {
    let mut out: Vec<String> = env
        .store
        .sessions_with_path_prefix("/", u32::MAX - 1)
        .unwrap()
        .into_iter()
        .map(|s| {
            let entries = env.store.entries(&s.session_id, s.generation).unwrap();
            format!(
                "{} {} gen={} consumed={} lines={} torn={} malformed={:?} tail={} entries={}",
                Path::new(&s.path).file_name().unwrap().to_str().unwrap(),
                s.session_id,
                s.generation,
                s.consumed,
                s.lines,
                s.torn,
                s.malformed_lines,
                // The window before the offset may hold the header, whose cwd names the home.
                s.tail_sha256.is_some(),
                serde_json::to_string(&entries).unwrap(),
            )
        })
        .collect();
    let mut runs: Vec<String> = env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .map(|r| {
            format!(
                "{} {}",
                Path::new(&r.session_path)
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap(),
                serde_json::to_string(&r.run).unwrap()
            )
        })
        .collect();
    out.sort();
    runs.sort();
    out.extend(runs);
    out
}

/// Lays out the first state of the scenario in `env`.
fn first_state(env: &Env) {
    let multi = session_bytes(env, "multi-run", 11);
    put(env, "b-grows.jsonl", &multi[..first_run_end(&multi)]);
    put(
        env,
        "c-truncated.jsonl",
        &session_bytes(env, "multi-run", 19),
    );
    put(env, "d-replaced.jsonl", &session_bytes(env, "sample", 12));
    put(env, "e-unchanged.jsonl", &session_bytes(env, "v2", 13));
    put(env, "m-moves.jsonl", &session_bytes(env, "aborted", 14));
    put(env, "t-torn.jsonl", &session_bytes(env, "torn", 15));
    put(env, "u-touched.jsonl", &session_bytes(env, "error", 16));
    put(env, "v-v1.jsonl", &session_bytes(env, "v1", 17));
    put(env, "x-removed.jsonl", &session_bytes(env, "length", 18));
}

/// Changes every kind of thing a pass must notice, in `env`.
fn second_state(env: &Env) {
    let multi = session_bytes(env, "multi-run", 11);
    let s = &env.sessions;
    // Grown by its second run.
    append(&s.join("b-grows.jsonl"), &multi[first_run_end(&multi)..]);
    // Cut back to its first run.
    let cut = session_bytes(env, "multi-run", 19);
    put(env, "c-truncated.jsonl", &cut[..first_run_end(&cut)]);
    // Another session written over it (same path, another inode): written beside it and renamed
    // over it, so that both inodes exist at once. Removing it first would let the filesystem hand
    // the freed inode number straight to the new file, which is then not a replaced file at all.
    put(
        env,
        "d-replaced.jsonl.next",
        &session_bytes(env, "malformed", 20),
    );
    std::fs::rename(s.join("d-replaced.jsonl.next"), s.join("d-replaced.jsonl")).unwrap();
    // Moved to a name before every other: the session's record moves there at that file's
    // commit, before the pass reaches the other files.
    std::fs::rename(s.join("m-moves.jsonl"), s.join("a-moved.jsonl")).unwrap();
    // A second copy of an ingested session: a duplicate.
    put(env, "w-duplicate.jsonl", &session_bytes(env, "v2", 13));
    // Status changed only (chmod sets the ctime).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        s.join("u-touched.jsonl"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    std::fs::remove_file(s.join("x-removed.jsonl")).unwrap();
    // A new file.
    put(
        env,
        "y-new.jsonl",
        &session_bytes(env, "secrets-history", 22),
    );
}

/// Records loaded once give every file the outcome, and the store the contents, that one lookup
/// per file gives: on a first pass, after every kind of change, and on a pass with nothing new.
#[test]
fn preloaded_records_give_the_outcome_of_one_lookup_per_file() {
    let (dir_env, file_env) = (Env::new(), Env::new());
    first_state(&dir_env);
    first_state(&file_env);
    let first = (pass(&dir_env, Pass::Dir), pass(&file_env, Pass::PerFile));
    assert_eq!(first.0, first.1);
    assert_eq!(held(&dir_env), held(&file_env));

    second_state(&dir_env);
    second_state(&file_env);
    let second = (pass(&dir_env, Pass::Dir), pass(&file_env, Pass::PerFile));
    assert_eq!(second.0, second.1);
    assert_eq!(held(&dir_env), held(&file_env));
    // The scenario does what it says: each kind of change is seen as such.
    let of = |name: &str| {
        second
            .0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| o.clone())
            .unwrap()
    };
    assert!(matches!(
        of("a-moved.jsonl"),
        FileOutcome::NewGeneration { generation: 2, .. }
    ));
    assert!(matches!(of("b-grows.jsonl"), FileOutcome::Appended { .. }));
    assert!(matches!(
        of("c-truncated.jsonl"),
        FileOutcome::NewGeneration {
            reason: "file truncated",
            ..
        }
    ));
    assert!(matches!(
        of("d-replaced.jsonl"),
        FileOutcome::NewGeneration {
            reason: "file replaced",
            ..
        }
    ));
    assert_eq!(of("e-unchanged.jsonl"), FileOutcome::Unchanged);
    assert_eq!(of("w-duplicate.jsonl"), FileOutcome::DuplicateSessionId);
    assert_ne!(of("u-touched.jsonl"), FileOutcome::Unchanged);
    assert!(matches!(
        of("y-new.jsonl"),
        FileOutcome::NewGeneration { .. }
    ));

    let third = (pass(&dir_env, Pass::Dir), pass(&file_env, Pass::PerFile));
    assert_eq!(third.0, third.1);
    assert!(
        third
            .0
            .iter()
            .all(|(n, o)| *o == FileOutcome::Unchanged || n == "w-duplicate.jsonl"),
        "{:?}",
        third.0
    );
    assert_eq!(held(&dir_env), held(&file_env));
}

/// A file that grew, and that another writer ingested while this pass was under way (after its
/// records were loaded, before it reached that file), is found unchanged: its loaded record is
/// not appended to again (which would index the new lines twice).
#[test]
fn a_record_another_writer_changes_during_the_pass_is_asked_for_again() {
    let env = Env::new();
    let multi = session_bytes(&env, "multi-run", 23);
    put(&env, "a.jsonl", &session_bytes(&env, "sample", 24));
    put(&env, "b.jsonl", &session_bytes(&env, "v2", 25));
    let grows = put(&env, "c.jsonl", &multi[..first_run_end(&multi)]);
    let first = pass(&env, Pass::Dir);
    assert!(
        first
            .iter()
            .all(|(_, o)| matches!(o, FileOutcome::NewGeneration { .. }))
    );
    append(&grows, &multi[first_run_end(&multi)..]);

    let dir = AgentDir::new(runread_sessions::Agent::Pi, &env.sessions);
    let ws = env.store.workspaces().unwrap();
    let mut other = None;
    let (report, outcomes) =
        runread_ingest::ingest_dir(&*env.store, &dir, runread_core::timefmt::now_ms(), |p| {
            if p.files_done == 1 {
                let mut r = Report::default();
                other = Some(
                    runread_ingest::ingest_file(
                        &*env.store,
                        &ws,
                        Agent::Pi,
                        &grows,
                        runread_core::timefmt::now_ms(),
                        &mut r,
                    )
                    .unwrap(),
                );
            }
        })
        .unwrap();
    assert!(
        matches!(other, Some(FileOutcome::Appended { .. })),
        "{other:?}"
    );
    assert_eq!(report.unchanged, 3, "{outcomes:?}");
    assert_eq!(report.bytes_read, 0);

    // What the store holds is what one pass over the final files makes.
    let fresh = Env::new();
    put(&fresh, "a.jsonl", &session_bytes(&fresh, "sample", 24));
    put(&fresh, "b.jsonl", &session_bytes(&fresh, "v2", 25));
    put(&fresh, "c.jsonl", &session_bytes(&fresh, "multi-run", 23));
    pass(&fresh, Pass::Dir);
    let strip_ws = |env: &Env| -> Vec<String> {
        let ws = env.workspace.to_str().unwrap().to_owned();
        held(env).into_iter().map(|l| l.replace(&ws, "W")).collect()
    };
    assert_eq!(strip_ws(&env), strip_ws(&fresh));
}
