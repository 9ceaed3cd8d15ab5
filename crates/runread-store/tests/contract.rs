//! The contract every `Store` implementation passes. Each check takes a fresh store from a
//! factory, so that the PostgreSQL store can run the same functions.

use runread_core::{Feature, Target};
use runread_sessions::{FileIdentity, Header, Run, RunStatus};
use runread_store::sqlite::SqliteStore;
use runread_store::{Grant, IngestCommit, SessionRecord, Store};

fn sqlite() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("runread.db")).unwrap();
    (dir, s)
}

fn session(ws: &str, generation: u64) -> SessionRecord {
    SessionRecord {
        session_id: "s1".into(),
        agent: "pi".into(),
        path: "/sessions/s1.jsonl".into(),
        workspace_id: ws.into(),
        generation,
        header: Header {
            session_id: "s1".into(),
            version: 3,
            cwd: "/w".into(),
            timestamp: None,
            parent_session: None,
            line_sha256: "h".into(),
            line_bytes: 10,
        },
        identity: FileIdentity {
            dev: 1,
            ino: 2,
            nlink: 1,
            size: 100,
            mtime_ns: 5,
        },
        consumed: 100,
        lines: 3,
        tail_sha256: Some("t".into()),
        malformed_lines: vec![7],
        torn: false,
        branch_complete: true,
        session_name: Some("name".into()),
        saved_model: None,
        ingested_at_ms: 1,
    }
}

fn run(id: &str) -> Run {
    Run {
        run_id: id.into(),
        start_line: 2,
        end_line: 3,
        status: RunStatus::Completed,
        unknown_reason: None,
        final_entry_id: Some("a".into()),
        final_message_sha256: Some("m".into()),
        final_text: Some("answer é".into()),
        final_bytes: 9,
        final_truncated: false,
        chain_len: 2,
        chain_sha256: Some("c".into()),
        preview: None,
        started_at: None,
        ended_at: None,
        run_models: vec![],
        message_lines: vec![2, 3],
        first_sequence: 1,
        waiting_on_tool: false,
    }
}

fn grant(id: &str, key_hash: &str, target: Target) -> Grant {
    Grant {
        id: id.into(),
        key_hash: key_hash.into(),
        label: "l".into(),
        target,
        features: vec![Feature::FinalAnswer, Feature::History],
        created_at_ms: 1,
        expires_at_ms: 1_000,
        revoked_at_ms: None,
    }
}

fn workspace_revision_bumps_on_re_add(s: &dyn Store) {
    let a = s.add_workspace("/w", "one", 1).unwrap();
    assert_eq!(a.revision, 1);
    let b = s.add_workspace("/w", "two", 2).unwrap();
    assert_eq!(
        (b.id.as_str(), b.revision, b.name.as_str()),
        (a.id.as_str(), 2, "two")
    );
    assert_eq!(s.workspaces().unwrap(), vec![b.clone()]);
    assert_eq!(s.workspace(&a.id).unwrap(), Some(b));
    assert_eq!(s.workspace("nope").unwrap(), None);
}

fn ingest_commits_replace_runs_and_new_generations_drop_old_ones(s: &dyn Store) {
    let ws = s.add_workspace("/w", "w", 1).unwrap();
    s.commit_ingest(&IngestCommit {
        session: session(&ws.id, 1),
        new_generation: true,
        new_entries: vec![],
        runs: vec![run("r1"), run("r2")],
    })
    .unwrap();
    assert_eq!(s.session("s1").unwrap(), Some(session(&ws.id, 1)));
    assert_eq!(
        s.session_by_path("/sessions/s1.jsonl")
            .unwrap()
            .map(|x| x.generation),
        Some(1)
    );
    assert_eq!(s.runs().unwrap().len(), 2);
    let r = s.run("s1", 1, "r2").unwrap().unwrap();
    assert_eq!(r.run, run("r2"));
    assert_eq!(
        r.target,
        Target {
            instance: s.instance_id().into(),
            revision: 1,
            workspace_id: ws.id.clone(),
            session_id: "s1".into(),
            generation: 1,
            run_id: "r2".into()
        }
    );
    s.commit_ingest(&IngestCommit {
        session: session(&ws.id, 2),
        new_generation: true,
        new_entries: vec![],
        runs: vec![run("r3")],
    })
    .unwrap();
    assert_eq!(s.run("s1", 1, "r2").unwrap(), None, "old generation gone");
    assert_eq!(s.runs_by_id("r3").unwrap().len(), 1);
    assert!(s.runs_by_id("r1").unwrap().is_empty());
}

fn grants_are_found_by_key_hash_and_revoked_once(s: &dyn Store) {
    let t = Target {
        instance: "i".into(),
        revision: 1,
        workspace_id: "w".into(),
        session_id: "s".into(),
        generation: 1,
        run_id: "r".into(),
    };
    s.insert_grant(&grant("g1", "hash1", t.clone())).unwrap();
    s.insert_grant(&grant("g2", "hash2", t.clone())).unwrap();
    assert!(
        s.insert_grant(&grant("g3", "hash1", t.clone())).is_err(),
        "a key hash names one grant"
    );
    let found = s.grants_by_key_hash("hash1").unwrap();
    assert_eq!(found, vec![grant("g1", "hash1", t.clone())]);
    assert!(s.grants_by_key_hash("other").unwrap().is_empty());
    assert!(s.revoke_grant("g1", 5).unwrap());
    assert!(
        !s.revoke_grant("g1", 6).unwrap(),
        "revoking twice is a no-op"
    );
    assert!(!s.revoke_grant("nope", 6).unwrap());
    assert_eq!(
        s.grants_by_key_hash("hash1").unwrap()[0].revoked_at_ms,
        Some(5)
    );
    assert_eq!(s.grants().unwrap().len(), 2);
}

#[test]
fn sqlite_passes_the_store_contract() {
    for check in [
        workspace_revision_bumps_on_re_add as fn(&dyn Store),
        ingest_commits_replace_runs_and_new_generations_drop_old_ones,
        grants_are_found_by_key_hash_and_revoked_once,
    ] {
        let (_dir, s) = sqlite();
        check(&s);
    }
}

#[test]
fn sqlite_instance_id_and_cursor_key_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    let a = SqliteStore::open(&path).unwrap();
    let t = Target {
        instance: "i".into(),
        revision: 1,
        workspace_id: "w".into(),
        session_id: "s".into(),
        generation: 1,
        run_id: "r".into(),
    };
    let cursor = a
        .cursor_key()
        .encode(runread_core::cursor::Purpose::FinalAnswer, &t, "v", 9);
    let id = a.instance_id().to_owned();
    drop(a);
    let b = SqliteStore::open(&path).unwrap();
    assert_eq!(b.instance_id(), id);
    assert_eq!(
        b.cursor_key()
            .decode(&cursor, runread_core::cursor::Purpose::FinalAnswer, &t, "v"),
        Some(9)
    );
    let other = SqliteStore::open(&dir.path().join("other.db")).unwrap();
    assert_ne!(other.instance_id(), id, "a new store is a new instance");
}

#[test]
fn sqlite_refuses_a_store_from_a_newer_runread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 999).unwrap();
    drop(conn);
    assert!(SqliteStore::open(&path).is_err());
}

#[test]
fn sqlite_store_file_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, _s) = sqlite();
    let mode = std::fs::metadata(dir.path().join("runread.db"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}
