//! The contract every `Store` implementation passes. Each check takes a fresh store from a
//! factory and runs against SQLite and against PostgreSQL (a fresh database per check, from
//! `RUNREAD_TEST_PG`; see `runread_testkit::pg`), the latter with the `postgres` feature.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_core::{Feature, Target};
use runread_sessions::{EntryKind, EntrySummary};
#[cfg(feature = "postgres")]
use runread_store::postgres::PostgresStore;
use runread_store::prelude::*;
use runread_store::sqlite::SqliteStore;
use runread_store::{
    AccessRequestBounds, AccessRequestRecord, ArtifactRecord, AuditCheckpoint, AuditCursor,
    AuditFilter, AuditOutcome, AuditPage, Background, CheckpointKind, CodeRedemption, Filed,
    Foreground, Grant, IngestCommit, OAuthClient, OAuthClientBounds, OAuthRequest,
    OAuthRequestBounds, OAuthToken, Phase, Proof, REFUSALS_PAGE_MAX, Reader, Receipt, Refusal,
    RefusalFilter, RunFilter, SealedSecret, SessionRecord, SessionStamp, StartMeta, StartOutcome,
    StartRecord, Store, SupervisedRun, TokenKind, UNADMITTED_MINUTE_MS, UNADMITTED_MINUTES_KEPT,
    UnadmittedTally,
};
#[cfg(feature = "postgres")]
use runread_testkit::pg;
use runread_testkit::records;

fn session(ws: &str, generation: u64) -> SessionRecord {
    records::session_at("s1", "/sessions/s1.jsonl", ws, generation)
}

fn sqlite() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("runread.db")).unwrap();
    (dir, s)
}

fn reader(id: &str, name: &str, key_hash: &str) -> Reader {
    Reader {
        id: id.into(),
        name: name.into(),
        key_hash: key_hash.into(),
        created_at_ms: 1,
        removed_at_ms: None,
    }
}

/// A grant to the reader `reader_id`, which [`reader`] made with the name `name_of(reader_id)`.
fn grant(id: &str, reader_id: &str, target: Target) -> Grant {
    Grant {
        id: id.into(),
        reader_id: reader_id.into(),
        reader_name: name_of(reader_id),
        target,
        features: vec![Feature::FinalAnswer, Feature::History],
        created_at_ms: 1,
        expires_at_ms: 1_000,
        revoked_at_ms: None,
        // Read back as written, Unicode and all (every grant read compares whole records).
        label: Some(format!("review of {id} ✓")),
    }
}

fn workspace_revision_moves_only_when_what_is_readable_changes(s: &dyn Store) {
    let a = s.add_workspace("/w", "one", 1).unwrap();
    assert_eq!(a.revision, 1);
    // The same root under the same name changes nothing.
    assert_eq!(s.add_workspace("/w", "one", 2).unwrap(), a);
    // A new name renames it; no target names it, so the revision stays.
    let b = s.add_workspace("/w", "two", 3).unwrap();
    assert_eq!(
        (b.id.as_str(), b.revision, b.name.as_str(), b.enabled),
        (a.id.as_str(), 1, "two", true)
    );
    assert_eq!(s.workspaces().unwrap(), vec![b.clone()]);
    assert_eq!(s.workspace(&a.id).unwrap(), Some(b.clone()));
    assert_eq!(s.workspace("nope").unwrap(), None);
    // Removed: disabled under a new revision; removing it again finds nothing.
    let removed = s.remove_workspace(&a.id, 4).unwrap().unwrap();
    assert_eq!((removed.revision, removed.enabled), (2, false));
    assert_eq!(s.workspace(&a.id).unwrap(), Some(removed));
    assert_eq!(s.remove_workspace(&a.id, 5).unwrap(), None);
    assert_eq!(s.remove_workspace("nope", 5).unwrap(), None);
    // Registered again: enabled under yet another revision (the old grants stay refused).
    let back = s.add_workspace("/w", "two", 6).unwrap();
    assert_eq!(
        (back.id.as_str(), back.revision, back.enabled),
        (a.id.as_str(), 3, true)
    );
}

fn a_removed_workspaces_runs_are_listed_no_more_but_found_by_their_target(s: &dyn Store) {
    let ws = s.add_workspace("/w", "w", 1).unwrap();
    s.commit_ingest(&IngestCommit {
        session: session(&ws.id, 1),
        new_generation: true,
        new_entries: vec![],
        runs: vec![records::run("r1")],
    })
    .unwrap();
    let all = RunFilter::default();
    assert_eq!(s.runs_count(&all).unwrap(), 1);
    s.remove_workspace(&ws.id, 2).unwrap().unwrap();
    assert_eq!(s.runs().unwrap(), vec![]);
    assert_eq!(s.runs_by_id("r1").unwrap(), vec![]);
    assert_eq!(s.runs_page(&all, 10, 0).unwrap(), vec![]);
    assert_eq!(s.runs_count(&all).unwrap(), 0);
    // Admission still finds it by its target, to refuse it.
    let run = s.run("s1", 1, "r1").unwrap().unwrap();
    assert!(!run.workspace_enabled);
    assert_eq!(run.target.revision, 2);
    s.add_workspace("/w", "w", 3).unwrap();
    assert_eq!(s.runs_count(&all).unwrap(), 1);
}

fn ingest_commits_replace_runs_and_new_generations_drop_old_ones(s: &dyn Store) {
    let ws = s.add_workspace("/w", "w", 1).unwrap();
    s.commit_ingest(&IngestCommit {
        session: session(&ws.id, 1),
        new_generation: true,
        new_entries: vec![],
        runs: vec![records::run("r1"), records::run("r2")],
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
    assert_eq!(r.run, records::run("r2"));
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
        runs: vec![records::run("r3")],
    })
    .unwrap();
    assert_eq!(s.run("s1", 1, "r2").unwrap(), None, "old generation gone");
    assert_eq!(s.runs_by_id("r3").unwrap().len(), 1);
    assert!(s.runs_by_id("r1").unwrap().is_empty());
}

/// A run of `id` that started `at` (RFC 3339), or without a start time.
fn run_at(id: &str, at: Option<&str>) -> runread_sessions::Run {
    runread_sessions::Run {
        started_at: at.map(str::to_owned),
        ..records::run(id)
    }
}

fn runs_page_newest_first_filtered_and_bounded(s: &dyn Store) {
    let w1 = s.add_workspace("/w1", "one", 1).unwrap();
    let w2 = s.add_workspace("/w2", "two", 1).unwrap();
    let mut claude = records::session_at("c1", "/sessions/c1.jsonl", &w2.id, 1);
    claude.agent = runread_core::Agent::Claude;
    s.commit_ingest(&IngestCommit {
        session: records::session_at("p1", "/sessions/p1.jsonl", &w1.id, 1),
        new_generation: true,
        new_entries: vec![],
        runs: vec![
            runread_sessions::Run {
                status: runread_sessions::RunStatus::Running,
                ..run_at("p-old", Some("2026-01-01T00:00:00Z"))
            },
            run_at("p-none", None),
            run_at("p-new", Some("2026-03-01T00:00:00.500Z")),
        ],
    })
    .unwrap();
    s.commit_ingest(&IngestCommit {
        session: claude,
        new_generation: true,
        new_entries: vec![],
        runs: vec![run_at("c-mid", Some("2026-02-01T01:00:00+01:00"))],
    })
    .unwrap();
    let ids = |f: &RunFilter, limit: u32, offset: u64| -> Vec<String> {
        s.runs_page(f, limit, offset)
            .unwrap()
            .into_iter()
            .map(|r| r.target.run_id)
            .collect()
    };
    let all = RunFilter::default();
    assert_eq!(
        ids(&all, 10, 0),
        ["p-new", "c-mid", "p-old", "p-none"],
        "newest first, no start time last"
    );
    assert_eq!(ids(&all, 2, 0), ["p-new", "c-mid"]);
    assert_eq!(ids(&all, 2, 2), ["p-old", "p-none"]);
    assert!(ids(&all, 2, 4).is_empty());
    assert_eq!(s.runs_count(&all).unwrap(), 4);
    let pi = RunFilter {
        agent: Some(runread_core::Agent::Pi),
        ..Default::default()
    };
    assert_eq!(ids(&pi, 10, 0), ["p-new", "p-old", "p-none"]);
    assert_eq!(s.runs_count(&pi).unwrap(), 3);
    let two = RunFilter {
        workspace_id: Some(w2.id.clone()),
        ..Default::default()
    };
    assert_eq!(ids(&two, 10, 0), ["c-mid"]);
    let none = RunFilter {
        agent: Some(runread_core::Agent::Claude),
        workspace_id: Some(w1.id.clone()),
        ..Default::default()
    };
    assert!(ids(&none, 10, 0).is_empty());
    assert_eq!(s.runs_count(&none).unwrap(), 0);
    // By status: the stored status of each run, with the other filters.
    let running = RunFilter {
        status: Some("running".into()),
        ..Default::default()
    };
    assert_eq!(ids(&running, 10, 0), ["p-old"]);
    assert_eq!(s.runs_count(&running).unwrap(), 1);
    let completed_pi = RunFilter {
        agent: Some(runread_core::Agent::Pi),
        status: Some("completed".into()),
        ..Default::default()
    };
    assert_eq!(ids(&completed_pi, 10, 0), ["p-new", "p-none"]);
    assert_eq!(s.runs_count(&completed_pi).unwrap(), 2);
    // A new generation replaces the session's runs in the listing too.
    s.commit_ingest(&IngestCommit {
        session: records::session_at("p1", "/sessions/p1.jsonl", &w1.id, 2),
        new_generation: true,
        new_entries: vec![],
        runs: vec![run_at("p-2", Some("2025-01-01T00:00:00Z"))],
    })
    .unwrap();
    assert_eq!(ids(&all, 10, 0), ["c-mid", "p-2"]);
    // A page holds at most RUNS_PAGE_MAX runs, however many are asked for.
    let w3 = s.add_workspace("/w3", "three", 1).unwrap();
    let max = runread_store::RUNS_PAGE_MAX;
    s.commit_ingest(&IngestCommit {
        session: records::session_at("big", "/sessions/big.jsonl", &w3.id, 1),
        new_generation: true,
        new_entries: vec![],
        runs: (0..=max).map(|i| run_at(&format!("b{i}"), None)).collect(),
    })
    .unwrap();
    let big = RunFilter {
        workspace_id: Some(w3.id.clone()),
        ..Default::default()
    };
    assert_eq!(s.runs_count(&big).unwrap(), u64::from(max) + 1);
    assert_eq!(s.runs_page(&big, max, 0).unwrap().len(), max as usize);
    assert_eq!(s.runs_page(&big, max + 1, 0).unwrap().len(), max as usize);
    assert_eq!(s.runs_page(&big, max, u64::from(max)).unwrap().len(), 1);
}

/// A run id prefix finds every current run whose id starts with it, narrowed by a session id
/// prefix, within `limit + 1`; a `%`, `_`, `*`, `?` or `[` in a prefix is a character, not a
/// wildcard.
fn runs_with_an_id_prefix_are_found_within_the_bound(s: &dyn Store) {
    let w = s.add_workspace("/w", "one", 1).unwrap();
    let commit = |session: &str, generation: u64, ids: &[&str]| {
        s.commit_ingest(&IngestCommit {
            session: records::session_at(
                session,
                &format!("/sessions/{session}.jsonl"),
                &w.id,
                generation,
            ),
            new_generation: true,
            new_entries: vec![],
            runs: ids.iter().map(|id| records::run(id)).collect(),
        })
        .unwrap();
    };
    commit("sa-1", 1, &["01a231df-aa", "01a231df-bb", "9%_x", "8*?[]x"]);
    // The same run id in a second session (a fork), and a run of an old generation gone.
    commit("sb-2", 1, &["01a231df-aa", "old"]);
    commit("sb-2", 2, &["01a231df-aa"]);
    let found = |run: &str, session: Option<&str>, limit: u32| -> Vec<(String, String)> {
        let mut v: Vec<_> = s
            .runs_with_id_prefix(run, session, limit)
            .unwrap()
            .into_iter()
            .map(|r| (r.target.run_id, r.target.session_id))
            .collect();
        v.sort();
        v
    };
    let pair = |r: &str, s: &str| (r.to_owned(), s.to_owned());
    assert_eq!(
        found("01a231df", None, 10),
        [
            pair("01a231df-aa", "sa-1"),
            pair("01a231df-aa", "sb-2"),
            pair("01a231df-bb", "sa-1")
        ]
    );
    assert_eq!(
        found("01a231df-a", Some("sb"), 10),
        [pair("01a231df-aa", "sb-2")]
    );
    assert_eq!(
        found("01a231df-aa", Some("sa-1"), 10),
        [pair("01a231df-aa", "sa-1")]
    );
    assert!(
        found("old", None, 10).is_empty(),
        "an old generation's run is gone"
    );
    assert!(found("9%", None, 10).len() == 1 && found("%", None, 10).is_empty());
    assert!(found("0_a", None, 10).is_empty(), "`_` is no wildcard");
    // Nor are GLOB's.
    assert_eq!(found("8*?[]", None, 10).len(), 1);
    for glob in ["8*", "8?", "8[*]", "*", "?*?[]x"] {
        assert_eq!(
            found(glob, None, 10).len(),
            usize::from(glob == "8*"),
            "{glob}"
        );
    }
    assert!(found("01a231df-aa-more", None, 10).is_empty());
    // At most limit + 1: three runs start with it, so a limit of 2 answers 3 (cut), 1 answers 2.
    assert_eq!(found("01a231df", None, 3).len(), 3);
    assert_eq!(found("01a231df", None, 2).len(), 3);
    assert_eq!(found("01a231df", None, 1).len(), 2);
    // The ids that begin with one of several heads, once each (the fork's id is in two
    // sessions), within limit + 1, however many heads (more than one statement takes).
    let heads = |heads: &[&str], limit: u32| -> Vec<String> {
        let mut v = s.run_ids_with_heads(heads, 8, limit).unwrap();
        v.sort();
        v
    };
    assert_eq!(
        heads(&["01a231df", "9%_x", "nothere1"], 10),
        ["01a231df-aa", "01a231df-bb", "9%_x"]
    );
    assert_eq!(heads(&["01a231df"], 2).len(), 2);
    assert_eq!(heads(&["01a231df"], 1).len(), 2, "cut: limit + 1");
    let mut many: Vec<String> = (0..runread_store::RUN_ID_HEADS_PER_STATEMENT)
        .map(|i| format!("{i:08}"))
        .collect();
    many.push("01a231df".into());
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(heads(&many, 10), ["01a231df-aa", "01a231df-bb"]);
}

/// The name the contract's readers have: `r1` is `one`, `r2` is `two`.
fn name_of(reader_id: &str) -> String {
    match reader_id {
        "r1" => "one".into(),
        "r2" => "two".into(),
        other => other.into(),
    }
}

fn readers_are_found_by_key_and_name_and_one_live_reader_has_a_name(s: &dyn Store) {
    s.insert_reader(&reader("r1", "one", "hash1")).unwrap();
    s.insert_reader(&reader("r2", "two", "hash2")).unwrap();
    assert!(
        s.insert_reader(&reader("r3", "one", "hash3")).is_err(),
        "a live reader's name is taken"
    );
    assert!(
        s.insert_reader(&reader("r3", "three", "hash1")).is_err(),
        "a key hash names one reader"
    );
    assert_eq!(
        s.reader_of_key("hash1", 0).unwrap(),
        Some((reader("r1", "one", "hash1"), vec![])),
        "a reader without grants is found, with none"
    );
    assert_eq!(s.reader_of_key("other", 0).unwrap(), None);
    assert_eq!(
        s.reader_by_name("two").unwrap(),
        Some(reader("r2", "two", "hash2"))
    );
    assert_eq!(s.reader_by_name("Two").unwrap(), None, "names are exact");
    // Rotated: the new key names it, the old one nothing.
    assert!(s.rotate_reader_key("r1", "hash1b").unwrap());
    assert_eq!(s.reader_of_key("hash1", 0).unwrap(), None);
    assert_eq!(
        s.reader_of_key("hash1b", 0).unwrap().map(|(r, _)| r.id),
        Some("r1".to_owned())
    );
    assert!(!s.rotate_reader_key("nope", "hash9").unwrap());
    // Removed: neither its key nor its name finds it, the name is free again, and it is still
    // listed (its calls stay in the audit).
    assert!(s.remove_reader("r2", 7).unwrap());
    assert!(
        !s.remove_reader("r2", 8).unwrap(),
        "removing twice is a no-op"
    );
    assert!(
        !s.rotate_reader_key("r2", "hash2b").unwrap(),
        "a removed reader keeps no key"
    );
    assert_eq!(s.reader_of_key("hash2", 0).unwrap(), None);
    assert_eq!(s.reader_by_name("two").unwrap(), None);
    s.insert_reader(&reader("r4", "two", "hash4")).unwrap();
    let all: Vec<(String, Option<i64>)> = s
        .readers()
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.removed_at_ms))
        .collect();
    assert_eq!(
        all,
        vec![
            ("r1".to_owned(), None),
            ("r2".to_owned(), Some(7)),
            ("r4".to_owned(), None)
        ]
    );
}

fn a_readers_grants_are_live_until_revoked_or_expired_and_removing_it_revokes_them(s: &dyn Store) {
    let t = target();
    let t2 = Target {
        run_id: "r-2".into(),
        ..target()
    };
    s.insert_reader(&reader("r1", "one", "hash1")).unwrap();
    s.insert_reader(&reader("r2", "two", "hash2")).unwrap();
    let mut older = grant("g1", "r1", t.clone());
    older.created_at_ms = 1;
    let mut newer = grant("g2", "r1", t2.clone());
    newer.created_at_ms = 2;
    let mut expired = grant("g3", "r1", t.clone());
    expired.expires_at_ms = 10;
    let theirs = grant("g4", "r2", t.clone());
    for g in [&older, &newer, &expired, &theirs] {
        s.insert_grant(g).unwrap();
    }
    let ids = |gs: Vec<Grant>| gs.into_iter().map(|g| g.id).collect::<Vec<_>>();
    // The live grants of the reader a key names (none when the key names no live reader).
    let live = |key_hash: &str, now_ms: i64| {
        s.reader_of_key(key_hash, now_ms)
            .unwrap()
            .map(|(_, grants)| grants)
            .unwrap_or_default()
    };
    assert_eq!(
        live("hash1", 500),
        vec![newer.clone(), older.clone()],
        "newest first, read with the reader's name"
    );
    assert_eq!(
        ids(live("hash1", 5)),
        vec!["g2", "g3", "g1"],
        "an expiry in the future is live; one millisecond's grants newest id first"
    );
    assert_eq!(
        ids(live("hash1", 10)),
        vec!["g2", "g1"],
        "at its expiry it is not"
    );
    assert_eq!(
        ids(s.reader_grants_for_target("r1", &t).unwrap()),
        vec!["g3", "g1"]
    );
    assert_eq!(
        ids(s.reader_grants_for_target("r2", &t2).unwrap()),
        Vec::<String>::new()
    );
    assert_eq!(s.grant_of_key("g1", "hash1").unwrap(), Some(older.clone()));
    assert_eq!(
        s.grant_of_key("g1", "hash2").unwrap(),
        None,
        "another reader's key"
    );
    assert_eq!(s.grant_of_key("g4", "hash1").unwrap(), None);
    // Revoked once.
    assert!(s.revoke_grant("g1", 5).unwrap());
    assert!(
        !s.revoke_grant("g1", 6).unwrap(),
        "revoking twice is a no-op"
    );
    assert!(!s.revoke_grant("nope", 6).unwrap());
    assert_eq!(ids(live("hash1", 5)), vec!["g2", "g3"]);
    assert_eq!(
        s.grant_of_key("g1", "hash1")
            .unwrap()
            .unwrap()
            .revoked_at_ms,
        Some(5)
    );
    // Rotated: the grants stay, the old key holds none of them.
    assert!(s.rotate_reader_key("r1", "hash1b").unwrap());
    assert_eq!(s.grant_of_key("g2", "hash1").unwrap(), None);
    assert_eq!(s.grant_of_key("g2", "hash1b").unwrap(), Some(newer.clone()));
    // Removed: every live grant revoked at that time, those ended before kept as they were;
    // another reader's untouched.
    assert!(s.remove_reader("r1", 9).unwrap());
    assert_eq!(s.grant_of_key("g2", "hash1b").unwrap(), None);
    let by_id = |id: &str| {
        s.grants()
            .unwrap()
            .into_iter()
            .find(|g| g.id == id)
            .unwrap()
    };
    assert_eq!(by_id("g1").revoked_at_ms, Some(5));
    assert_eq!(by_id("g2").revoked_at_ms, Some(9));
    assert_eq!(by_id("g3").revoked_at_ms, Some(9));
    assert_eq!(by_id("g4").revoked_at_ms, None);
    assert!(
        live("hash1b", 5).is_empty(),
        "a removed reader's key names nothing"
    );
    assert_eq!(ids(live("hash2", 5)), vec!["g4"]);
    assert_eq!(s.grants().unwrap().len(), 4);
}

fn target() -> Target {
    Target {
        instance: "i".into(),
        revision: 1,
        workspace_id: "w".into(),
        session_id: "s".into(),
        generation: 1,
        run_id: "r".into(),
    }
}

fn entry(line: u64, text: &str) -> EntrySummary {
    EntrySummary {
        line_sha256: Some(runread_core::sha256_hex(text.as_bytes())),
        kind: EntryKind::Message,
        role: Some("user".into()),
        text_bytes: text.len() as u64,
        body_bytes: text.len() as u64,
        ..EntrySummary::at(line, line * 100, 90, format!("e{line}"))
    }
}

fn entries_append_and_new_generations_replace_them(s: &dyn Store) {
    let ws = s.add_workspace("/w", "w", 1).unwrap();
    let commit = |generation, new_generation, entries: Vec<EntrySummary>| IngestCommit {
        session: session(&ws.id, generation),
        new_generation,
        new_entries: entries,
        runs: vec![records::run("r1")],
    };
    s.commit_ingest(&commit(1, true, vec![entry(3, "c"), entry(2, "b")]))
        .unwrap();
    s.commit_ingest(&commit(1, false, vec![entry(4, "d"), entry(3, "c2")]))
        .unwrap();
    assert_eq!(
        s.entries("s1", 1).unwrap(),
        vec![entry(2, "b"), entry(3, "c2"), entry(4, "d")],
        "file order; a line written again replaces the old one"
    );
    s.commit_ingest(&commit(2, true, vec![entry(2, "x")]))
        .unwrap();
    assert!(
        s.entries("s1", 1).unwrap().is_empty(),
        "old generation dropped"
    );
    assert_eq!(s.entries("s1", 2).unwrap(), vec![entry(2, "x")]);
    assert_eq!(s.runs().unwrap().len(), 1);
}

fn a_path_taken_over_by_another_session_replaces_it(s: &dyn Store) {
    let ws = s.add_workspace("/w", "w", 1).unwrap();
    s.commit_ingest(&IngestCommit {
        session: session(&ws.id, 1),
        new_generation: true,
        new_entries: vec![],
        runs: vec![records::run("r1")],
    })
    .unwrap();
    let mut other = session(&ws.id, 1);
    other.session_id = "s2".into();
    s.commit_ingest(&IngestCommit {
        session: other.clone(),
        new_generation: true,
        new_entries: vec![],
        runs: vec![records::run("r2")],
    })
    .unwrap();
    assert_eq!(s.session("s1").unwrap(), None);
    assert_eq!(
        s.session_by_path("/sessions/s1.jsonl").unwrap(),
        Some(other)
    );
    let runs: Vec<_> = s
        .runs()
        .unwrap()
        .into_iter()
        .map(|r| r.run.run_id)
        .collect();
    assert_eq!(runs, vec!["r2".to_owned()]);
}

/// `sessions_with_path_prefix` answers what `session_by_path` answers for each path under the
/// prefix, byte for byte (no pattern characters, any UTF-8), and at most `limit + 1` records;
/// `session_stamps_with_path_prefix` the stamps of the same records.
fn sessions_under_a_path_prefix_are_those_session_by_path_finds(s: &dyn Store) {
    let ws = s.add_workspace("/w", "w", 1).unwrap();
    let paths = [
        "/s/a/1.jsonl",
        "/s/a/2.jsonl",
        "/s/a/x/3.jsonl",
        "/s/a.jsonl",
        "/s/a0.jsonl",
        "/s/ab/4.jsonl",
        "/s/_/5.jsonl",
        "/s/%/6.jsonl",
        "/s/é/7.jsonl",
        "/s/éa/8.jsonl",
        "/s/\u{10FFFF}/9.jsonl",
        "/s/\u{10FFFF}\u{10FFFF}.jsonl",
        "/t/a/10.jsonl",
    ];
    for (i, p) in paths.iter().enumerate() {
        s.commit_ingest(&IngestCommit {
            session: records::session_at(&format!("s{i}"), p, &ws.id, 1),
            new_generation: true,
            new_entries: vec![],
            runs: vec![],
        })
        .unwrap();
    }
    let under = |prefix: &str, limit: u32| -> Vec<String> {
        let records = s.sessions_with_path_prefix(prefix, limit).unwrap();
        // The stamps are those of the same records, under the same bound.
        let mut stamps = s.session_stamps_with_path_prefix(prefix, limit).unwrap();
        assert_eq!(stamps.len(), records.len(), "stamps under {prefix:?}");
        if records.len() <= limit as usize {
            let mut of_records: Vec<SessionStamp> = records.iter().map(|r| r.stamp()).collect();
            of_records.sort_by(|a, b| a.path.cmp(&b.path));
            stamps.sort_by(|a, b| a.path.cmp(&b.path));
            assert_eq!(stamps, of_records, "stamps under {prefix:?}");
        }
        let mut found: Vec<String> = records
            .into_iter()
            .map(|r| {
                assert_eq!(s.session_by_path(&r.path).unwrap(), Some(r.clone()));
                r.path
            })
            .collect();
        found.sort();
        found
    };
    let expect = |prefix: &str| -> Vec<String> {
        let mut e: Vec<String> = paths
            .iter()
            .filter(|p| p.starts_with(prefix))
            .map(|p| p.to_string())
            .collect();
        e.sort();
        e
    };
    for prefix in [
        "/s/a/",
        "/s/a",
        "/s/",
        "/s/_/",
        "/s/%/",
        "/s/é/",
        "/s/é",
        "/s/\u{10FFFF}",
        "/t/",
        "/u/",
        "/",
        "",
    ] {
        assert_eq!(under(prefix, 100), expect(prefix), "prefix {prefix:?}");
    }
    assert_eq!(
        under("/s/a/", 1).len(),
        2,
        "limit + 1: the caller sees it was cut"
    );
    assert_eq!(under("/s/a/", 0).len(), 1);
    assert_eq!(under("/s/a/", 3).len(), 3);
}

fn start(id: &str, key: &str, at: i64, target: Option<Target>) -> StartRecord {
    StartRecord {
        meta: StartMeta {
            start_id: id.into(),
            idempotency_key: key.into(),
            grant_id: "g".into(),
            key_hash_prefix: "abcd".into(),
            tool: "read_final_answer".into(),
            binding_digest: "b".into(),
            target,
            input_digest: "in".into(),
            sealed_key_id: "k1".into(),
            created_at_ms: at,
            reader_id: Some("r-a".into()),
        },
        sealed_nonce: vec![1, 2, 3],
        sealed_ciphertext: vec![0, 255, 7],
    }
}

fn receipt(id: &str, start_id: &str, at: i64) -> Receipt {
    Receipt {
        receipt_id: id.into(),
        start_id: start_id.into(),
        outcome: "ok".into(),
        result_digest: Some("d".into()),
        output_bytes: Some(12),
        created_at_ms: at,
        evidence: Some("session_file".into()),
        state: Some("settled".into()),
    }
}

fn begin_call_replays_within_the_window_only(s: &dyn Store) {
    let a = start("st1", "idem", 100, Some(target()));
    assert_eq!(s.begin_call(&a, 50).unwrap(), StartOutcome::Created);
    let replay = start("st2", "idem", 110, Some(target()));
    assert_eq!(
        s.begin_call(&replay, 60).unwrap(),
        StartOutcome::Existing(Box::new(a.clone())),
        "same key within the window: the first record"
    );
    assert_eq!(s.start_record("st2").unwrap(), None);
    let late = start("st3", "idem", 200, Some(target()));
    assert_eq!(
        s.begin_call(&late, 150).unwrap(),
        StartOutcome::Created,
        "outside the window: a new record"
    );
    assert_eq!(
        s.begin_call(&start("st4", "idem", 210, None), 60).unwrap(),
        StartOutcome::Existing(Box::new(late)),
        "the newest record in the window"
    );
    assert!(
        s.begin_call(&start("st1", "other", 300, None), 300)
            .is_err(),
        "a start id is written once"
    );
}

fn start_records_receipts_and_audit(s: &dyn Store) {
    let a = start("st1", "k1", 100, Some(target()));
    let b = start("st2", "k2", 200, None);
    s.begin_call(&a, 0).unwrap();
    s.begin_call(&b, 0).unwrap();
    // One receipt with what its result carried, one without (as written before migration 18):
    // each reads back as written.
    let without = Receipt {
        evidence: None,
        state: None,
        ..receipt("rc1", "st1", 101)
    };
    s.append_receipt(&receipt("rc2", "st1", 105)).unwrap();
    s.append_receipt(&without).unwrap();
    assert!(
        s.append_receipt(&receipt("rc3", "missing", 1)).is_err(),
        "a receipt names a start record"
    );
    assert_eq!(s.start_record("st1").unwrap(), Some(a.clone()));
    assert_eq!(s.start_meta("st2").unwrap(), Some(b.meta.clone()));
    assert_eq!(s.start_meta("nope").unwrap(), None);
    assert_eq!(
        s.receipts("st1").unwrap(),
        vec![without.clone(), receipt("rc2", "st1", 105)]
    );
    assert!(s.receipts("st2").unwrap().is_empty());
    let audit = s.audit(0, 10).unwrap();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0].0, a.meta);
    let both = vec![without.clone(), receipt("rc2", "st1", 105)];
    assert_eq!(audit[0].1, both);
    assert_eq!(s.audit_range(0, 1_000, 10).unwrap()[0].1, both);
    assert_eq!(audit[1], (b.meta.clone(), vec![]));
    assert_eq!(s.audit(150, 10).unwrap().len(), 1);
    assert_eq!(s.audit(0, 1).unwrap().len(), 1, "limit");
    // A page of the audit: the same rows newest first, the limit keeping the newest.
    let newest = s.audit_page(&AuditFilter::default(), 10).unwrap();
    assert_eq!(newest.rows, audit.iter().rev().cloned().collect::<Vec<_>>());
    assert_eq!(newest.more, 0);
    let one = s.audit_page(&AuditFilter::default(), 1).unwrap();
    assert_eq!((one.rows, one.more), (vec![(b.meta.clone(), vec![])], 1));
    let since = AuditFilter {
        since_ms: Some(150),
        ..Default::default()
    };
    assert_eq!(s.audit_page(&since, 10).unwrap().rows.len(), 1);
}

/// Every page of the audit that `filter` lets through, `limit` at a time, each page continuing
/// after the previous one's last row; asserts that each page's `more` counts what the pages
/// after it hold.
fn audit_pages(s: &dyn Store, filter: &AuditFilter, limit: u32) -> Vec<String> {
    let mut pages: Vec<AuditPage> = vec![];
    let mut f = filter.clone();
    loop {
        let page = s.audit_page(&f, limit).unwrap();
        assert!(page.rows.len() <= limit as usize);
        let next = page.next();
        pages.push(page);
        match next {
            Some(c) => f.before = Some(c),
            None => break,
        }
    }
    let ids: Vec<Vec<String>> = pages
        .iter()
        .map(|p| p.rows.iter().map(|(m, _)| m.start_id.clone()).collect())
        .collect();
    for (i, p) in pages.iter().enumerate() {
        let after: usize = ids[i + 1..].iter().map(Vec::len).sum();
        assert_eq!(p.more, after as u64, "page {i} of {filter:?}: {ids:?}");
    }
    ids.concat()
}

fn audit_pages_newest_first_filtered_without_a_gap_or_a_repeat(s: &dyn Store) {
    // 15 calls, three to a millisecond (ties are ordered by start id, newest first); their
    // start ids are not in time order. Grants alternate; runs r1, r2 or none; outcomes cycle
    // through ok, refused, timeout, invalid_output and none (interrupted).
    let outcomes = ["ok", "refused:invalid_cursor", "timeout", "invalid_output"];
    let mut calls = vec![];
    for i in 0..15u32 {
        let id = format!("st-{:02}", (i * 7) % 15);
        let run = ["r1", "r2", ""][(i % 3) as usize];
        let t = (!run.is_empty()).then(|| Target {
            run_id: run.into(),
            ..target()
        });
        let mut rec = start(&id, &format!("k{i}"), 1_000 + i64::from(i / 3), t);
        rec.meta.grant_id = ["g-a", "g-b"][(i % 2) as usize].into();
        rec.meta.reader_id = Some(["r-a", "r-b"][(i % 2) as usize].into());
        s.begin_call(&rec, 0).unwrap();
        let outcome = outcomes.get((i % 5) as usize).copied();
        if let Some(o) = outcome {
            let mut r = receipt(&format!("rc-{id}"), &id, rec.meta.created_at_ms);
            r.outcome = o.into();
            s.append_receipt(&r).unwrap();
        }
        calls.push((rec.meta, outcome));
    }
    // What each filter must answer: the calls it lets through, newest first.
    let expect = |keep: &dyn Fn(&StartMeta, Option<&str>) -> bool| -> Vec<String> {
        let mut kept: Vec<&StartMeta> = calls
            .iter()
            .filter(|(m, o)| keep(m, *o))
            .map(|(m, _)| m)
            .collect();
        kept.sort_by(|a, b| (b.created_at_ms, &b.start_id).cmp(&(a.created_at_ms, &a.start_id)));
        kept.iter().map(|m| m.start_id.clone()).collect()
    };
    let run_of = |m: &StartMeta| m.target.as_ref().map(|t| t.run_id.clone());
    let every = expect(&|_, _| true);
    assert_eq!(every.len(), 15);
    for limit in [1, 2, 4, 15, 16] {
        assert_eq!(
            audit_pages(s, &AuditFilter::default(), limit),
            every,
            "{limit}"
        );
    }
    let first = s.audit_page(&AuditFilter::default(), 4).unwrap();
    assert_eq!(first.more, 11);
    assert_eq!(first.rows[0].0.start_id, every[0], "the newest first");
    assert_eq!(
        first.rows[0].1.len(),
        usize::from(
            calls
                .iter()
                .any(|(m, o)| m.start_id == every[0] && o.is_some())
        ),
        "with its receipts"
    );
    let by = |f: AuditFilter| audit_pages(s, &f, 2);
    assert_eq!(
        by(AuditFilter {
            reader_id: Some("r-b".into()),
            ..Default::default()
        }),
        expect(&|m, _| m.reader_id.as_deref() == Some("r-b"))
    );
    assert_eq!(
        by(AuditFilter {
            grant_id: Some("g-a".into()),
            ..Default::default()
        }),
        expect(&|m, _| m.grant_id == "g-a")
    );
    assert_eq!(
        by(AuditFilter {
            run_id: Some("r1".into()),
            ..Default::default()
        }),
        expect(&|m, _| run_of(m).as_deref() == Some("r1"))
    );
    assert!(
        by(AuditFilter {
            run_id: Some("r".into()),
            ..Default::default()
        })
        .is_empty()
    );
    let of_tool = |tool: &str| AuditFilter {
        tool: Some(tool.into()),
        ..Default::default()
    };
    assert_eq!(by(of_tool("read_final_answer")), expect(&|_, _| true));
    assert!(by(of_tool("get_run")).is_empty());
    for (outcome, want) in [
        (AuditOutcome::Ok, Some("ok")),
        (AuditOutcome::Refused, Some("refused:invalid_cursor")),
        (AuditOutcome::Timeout, Some("timeout")),
        (AuditOutcome::InvalidOutput, Some("invalid_output")),
        (AuditOutcome::Interrupted, None),
    ] {
        let got = by(AuditFilter {
            outcome: Some(outcome),
            ..Default::default()
        });
        assert_eq!(got, expect(&|_, o| o == want), "{outcome:?}");
        assert_eq!(got.len(), 3, "{outcome:?}");
    }
    // Filters together, and a time bound.
    assert_eq!(
        by(AuditFilter {
            since_ms: Some(1_002),
            grant_id: Some("g-b".into()),
            reader_id: None,
            run_id: Some("r2".into()),
            tool: None,
            outcome: None,
            before: None,
        }),
        expect(&|m, _| m.created_at_ms >= 1_002
            && m.grant_id == "g-b"
            && run_of(m).as_deref() == Some("r2"))
    );
    // A cursor in the middle of a millisecond continues with the rest of that millisecond.
    let tie = calls.iter().find(|(m, _)| m.start_id == every[1]).unwrap();
    let rest = s
        .audit_page(
            &AuditFilter {
                before: Some(AuditCursor::after(&tie.0)),
                ..Default::default()
            },
            100,
        )
        .unwrap();
    let rest: Vec<String> = rest.rows.into_iter().map(|(m, _)| m.start_id).collect();
    assert_eq!(rest, every[2..]);
    // The page bound holds whatever is asked.
    let page = s.audit_page(&AuditFilter::default(), u32::MAX).unwrap();
    assert_eq!((page.rows.len(), page.more), (15, 0));
}

fn readers_last_reads_are_their_newest_calls(s: &dyn Store) {
    for (id, hash) in [("r-a", "hash-a"), ("r-b", "hash-b"), ("r-c", "hash-c")] {
        s.insert_reader(&reader(id, id, hash)).unwrap();
    }
    assert!(s.reader_last_reads().unwrap().is_empty());
    for (id, reader_id, at) in [
        ("st-1", Some("r-a"), 5),
        ("st-2", Some("r-a"), 9),
        ("st-3", Some("r-b"), 7),
        ("st-4", None, 11),
    ] {
        let mut rec = start(id, id, at, None);
        rec.meta.reader_id = reader_id.map(str::to_owned);
        s.begin_call(&rec, 0).unwrap();
    }
    assert_eq!(
        s.reader_last_reads().unwrap(),
        vec![("r-a".to_owned(), 9), ("r-b".to_owned(), 7)]
    );
}

fn secrets_replace_by_name_and_change_the_fingerprint(s: &dyn Store) {
    let empty = s.secrets_fingerprint().unwrap();
    assert_eq!(empty, "0:0:0");
    let sec = |name: &str, ct: &[u8], at| SealedSecret {
        name: name.into(),
        key_id: "k1".into(),
        nonce: vec![9; 12],
        ciphertext: ct.to_vec(),
        created_at_ms: at,
    };
    s.put_secret(&sec("b", b"xyz", 5)).unwrap();
    s.put_secret(&sec("a", b"12", 6)).unwrap();
    let two = s.secrets_fingerprint().unwrap();
    assert_eq!(two, "2:6:5");
    s.put_secret(&sec("a", b"1234", 7)).unwrap();
    assert_eq!(s.secrets_fingerprint().unwrap(), "2:7:7");
    assert_eq!(
        s.sealed_secrets().unwrap(),
        vec![sec("a", b"1234", 7), sec("b", b"xyz", 5)]
    );
}

fn artifacts_belong_to_their_exact_target(s: &dyn Store) {
    let art = |id: &str, at, t: Target| ArtifactRecord {
        artifact_id: id.into(),
        target: t,
        name: "out.md".into(),
        mime: "text/markdown".into(),
        kind: "generated".into(),
        version_json: "{\"sha256\":\"x\"}".into(),
        created_at_ms: at,
    };
    s.add_artifact(&art("a2", 20, target())).unwrap();
    s.add_artifact(&art("a1", 10, target())).unwrap();
    let mut other = target();
    other.revision = 2;
    s.add_artifact(&art("a3", 5, other.clone())).unwrap();
    assert_eq!(
        s.artifacts(&target()).unwrap(),
        vec![art("a1", 10, target()), art("a2", 20, target())]
    );
    assert_eq!(s.artifacts(&other).unwrap().len(), 1);
    other.revision = 3;
    assert!(s.artifacts(&other).unwrap().is_empty());
}

fn supervised_runs_are_replaced_by_key(s: &dyn Store) {
    let mut rec = SupervisedRun {
        session_id: "s1".into(),
        generation: 1,
        run_id: "r1".into(),
        supervisor_id: "sup".into(),
        host: "h".into(),
        agent_version: "1".into(),
        foreground: Foreground::Running,
        exit: None,
        phase: Phase::Running,
        proof: Proof::Pending,
        background: Background {
            census_complete: true,
            census_gap: None,
            active: 0,
            observed_at_ms: 1,
        },
        updated_at_ms: 1,
        supervising: true,
    };
    assert_eq!(s.supervised("s1", 1, "r1").unwrap(), None);
    s.put_supervised(&rec).unwrap();
    rec.foreground = Foreground::Completed;
    rec.updated_at_ms = 2;
    s.put_supervised(&rec).unwrap();
    assert_eq!(s.supervised("s1", 1, "r1").unwrap(), Some(rec));
    assert_eq!(s.supervised("s1", 2, "r1").unwrap(), None);
}

fn oauth_client(id: &str, at: i64) -> OAuthClient {
    OAuthClient {
        client_id: id.into(),
        name: format!("client {id}"),
        redirect_uris: vec![
            "https://c.example/cb".into(),
            "http://127.0.0.1:9/cb".into(),
        ],
        created_at_ms: at,
        approved_at_ms: None,
        registrant: format!("host-of-{id}"),
    }
}

fn oauth_request(id: &str, at: i64) -> OAuthRequest {
    oauth_request_of(id, "c1", at)
}

fn oauth_request_of(id: &str, client_id: &str, at: i64) -> OAuthRequest {
    OAuthRequest {
        id: id.into(),
        user_code: "BCDF-GHJK".into(),
        client_id: client_id.into(),
        client_name: format!("client {client_id}"),
        redirect_uri: "https://c.example/cb".into(),
        state_sha256: Some("5t".into()),
        code_challenge: "ch".into(),
        resource: "https://r.example/mcp".into(),
        scope: "final_answer".into(),
        created_at_ms: at,
        expires_at_ms: at + 100,
        decided_at_ms: None,
        reader_id: None,
        granted_scope: None,
        code_hash: None,
        code_expires_at_ms: None,
        code_used_at_ms: None,
    }
}

fn oauth_token(hash: &str, kind: TokenKind, family: &str) -> OAuthToken {
    OAuthToken {
        token_hash: hash.into(),
        kind,
        reader_id: "r1".into(),
        client_id: "c1".into(),
        family: family.into(),
        resource: "https://r.example/mcp".into(),
        scope: "final_answer".into(),
        created_at_ms: 10,
        expires_at_ms: 1_000,
        used_at_ms: None,
        revoked_at_ms: None,
    }
}

/// Connectors' records: client bounds held at N and refused at N + 1, requests waiting for the
/// owner bounded the same way and decided once, a code issued once and redeemed once (then
/// reported reused), a refresh token used once, a family revoked together, and what is over
/// purged.
fn oauth_clients_requests_codes_and_tokens(s: &dyn Store) {
    let bounds = OAuthClientBounds {
        total_max: 3,
        unapproved_max: 2,
        unapproved_per_registrant_max: 2,
    };
    let requests = OAuthRequestBounds {
        pending_max: 2,
        pending_per_client_max: 2,
    };
    assert!(
        s.insert_oauth_client(&oauth_client("c1", 10), bounds)
            .unwrap()
    );
    assert!(
        s.insert_oauth_client(&oauth_client("c2", 10), bounds)
            .unwrap()
    );
    assert!(
        !s.insert_oauth_client(&oauth_client("c3", 10), bounds)
            .unwrap(),
        "unapproved bound"
    );
    assert_eq!(
        s.oauth_client("c1").unwrap().unwrap(),
        oauth_client("c1", 10)
    );
    assert_eq!(s.oauth_client("c3").unwrap(), None);
    s.insert_reader(&reader("r1", "reader", "kh1")).unwrap();

    assert!(
        s.insert_oauth_request(&oauth_request("q1", 10), requests)
            .unwrap()
    );
    assert!(
        s.insert_oauth_request(&oauth_request("q2", 10), requests)
            .unwrap()
    );
    assert!(
        !s.insert_oauth_request(&oauth_request("q3", 10), requests)
            .unwrap(),
        "pending bound"
    );
    assert_eq!(s.oauth_requests_pending(20).unwrap().len(), 2);
    assert_eq!(s.oauth_requests_pending(200).unwrap().len(), 0, "expired");
    // Decided once; approving marks the client approved (no longer under the unapproved bound).
    assert!(
        s.decide_oauth_request("q1", Some(("r1", "final_answer")), 20)
            .unwrap()
    );
    assert!(!s.decide_oauth_request("q1", None, 21).unwrap());
    assert!(!s.decide_oauth_request("q2", None, 500).unwrap(), "expired");
    assert!(s.decide_oauth_request("q2", None, 22).unwrap());
    assert_eq!(
        s.oauth_client("c1").unwrap().unwrap().approved_at_ms,
        Some(20)
    );
    assert!(
        s.insert_oauth_client(&oauth_client("c3", 10), bounds)
            .unwrap()
    );
    assert!(
        !s.insert_oauth_client(&oauth_client("c4", 10), bounds)
            .unwrap(),
        "total bound"
    );
    // One code per approved request, redeemed once.
    assert!(
        !s.issue_oauth_code("q2", "code2", 90, 30).unwrap(),
        "denied: no code"
    );
    assert!(s.issue_oauth_code("q1", "code1", 90, 30).unwrap());
    assert!(
        !s.issue_oauth_code("q1", "code1b", 90, 31).unwrap(),
        "one code"
    );
    let q1 = s.oauth_request("q1").unwrap().unwrap();
    assert_eq!(q1.reader_id.as_deref(), Some("r1"));
    assert_eq!(q1.granted_scope.as_deref(), Some("final_answer"));
    assert_eq!(q1.code_expires_at_ms, Some(90));
    match s.redeem_oauth_code("code1", 40).unwrap() {
        CodeRedemption::Redeemed(q) => assert_eq!(q.id, "q1"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.redeem_oauth_code("code1", 41).unwrap(),
        CodeRedemption::Reused(_)
    ));
    assert_eq!(
        s.redeem_oauth_code("nope", 41).unwrap(),
        CodeRedemption::Unknown
    );

    // Tokens: a refresh token used once; a family revoked together.
    s.insert_oauth_token(&oauth_token("a1", TokenKind::Access, "q1"))
        .unwrap();
    s.insert_oauth_token(&oauth_token("f1", TokenKind::Refresh, "q1"))
        .unwrap();
    s.insert_oauth_token(&oauth_token("a2", TokenKind::Access, "other"))
        .unwrap();
    assert_eq!(
        s.oauth_token("a1").unwrap().unwrap(),
        oauth_token("a1", TokenKind::Access, "q1")
    );
    assert!(
        !s.use_oauth_refresh("a1", 50).unwrap(),
        "an access token is not a refresh token"
    );
    assert!(s.use_oauth_refresh("f1", 50).unwrap());
    assert!(!s.use_oauth_refresh("f1", 51).unwrap(), "used once");
    assert_eq!(s.revoke_oauth_family("q1", 60).unwrap(), 2);
    assert_eq!(
        s.oauth_token("a1").unwrap().unwrap().revoked_at_ms,
        Some(60)
    );
    assert_eq!(s.oauth_token("a2").unwrap().unwrap().revoked_at_ms, None);
    // A connector's reader, by id, with its live grants.
    let (r, grants) = s.reader_of_id("r1", 50).unwrap().unwrap();
    assert_eq!((r.id.as_str(), grants.len()), ("r1", 0));
    assert!(s.reader_of_id("r2", 50).unwrap().is_none());
    // Purged: expired tokens and requests, clients never approved registered before the cut.
    s.purge_oauth(2_000, 11).unwrap();
    assert_eq!(s.oauth_token("a2").unwrap(), None);
    assert_eq!(s.oauth_request("q2").unwrap(), None);
    assert_eq!(s.oauth_client("c2").unwrap(), None, "never approved");
    assert!(s.oauth_client("c1").unwrap().is_some(), "approved");
}

/// The shares of the connectors' bounds: registrations never approved per registrant (N of one
/// registrant allowed, N + 1 refused, another registrant still let in), requests waiting per
/// client (the same), and a client that holds tokens never counted against, nor kept out by, the
/// bound on requests of clients that hold none. A rotated reader's tokens all end.
fn oauth_bounds_have_shares(s: &dyn Store) {
    let bounds = OAuthClientBounds {
        total_max: 10,
        unapproved_max: 4,
        unapproved_per_registrant_max: 2,
    };
    let of = |id: &str, registrant: &str| OAuthClient {
        registrant: registrant.into(),
        ..oauth_client(id, 10)
    };
    assert!(
        s.insert_oauth_client(&of("c1", "a.example"), bounds)
            .unwrap()
    );
    assert!(
        s.insert_oauth_client(&of("c2", "a.example"), bounds)
            .unwrap()
    );
    assert!(
        !s.insert_oauth_client(&of("c3", "a.example"), bounds)
            .unwrap(),
        "N + 1 of one registrant"
    );
    assert!(
        s.insert_oauth_client(&of("c3", "b.example"), bounds)
            .unwrap()
    );

    let requests = OAuthRequestBounds {
        pending_max: 3,
        pending_per_client_max: 2,
    };
    let add = |id: &str, client: &str| {
        s.insert_oauth_request(&oauth_request_of(id, client, 10), requests)
            .unwrap()
    };
    assert!(add("q1", "c1"));
    assert!(add("q2", "c1"));
    assert!(!add("q3", "c1"), "N + 1 of one client");
    assert!(add("q3", "c2"));
    assert!(!add("q4", "c3"), "the bound on clients without tokens");
    // A client the owner approved before (it holds a token) still gets its share.
    s.insert_reader(&reader("r1", "reader", "kh1")).unwrap();
    let known = OAuthToken {
        client_id: "known".into(),
        ..oauth_token("t1", TokenKind::Refresh, "f1")
    };
    s.insert_oauth_token(&known).unwrap();
    assert!(add("q4", "known"));
    assert!(add("q5", "known"));
    assert!(!add("q6", "known"), "its own share still holds");
    // Rotation ends every token of the reader, and only its own.
    let other = OAuthToken {
        reader_id: "r2".into(),
        ..oauth_token("t2", TokenKind::Access, "f2")
    };
    s.insert_reader(&reader("r2", "other", "kh2")).unwrap();
    s.insert_oauth_token(&other).unwrap();
    assert_eq!(s.revoke_oauth_tokens_of_reader("r1", 20).unwrap(), 1);
    assert_eq!(
        s.oauth_token("t1").unwrap().unwrap().revoked_at_ms,
        Some(20)
    );
    assert_eq!(s.oauth_token("t2").unwrap().unwrap().revoked_at_ms, None);
}

fn checkpoint(seq: u64, kind: CheckpointKind, after: i64, upto: i64) -> AuditCheckpoint {
    AuditCheckpoint {
        seq,
        kind,
        after_ms: after,
        upto_ms: upto,
        records: 3,
        receipts: 2,
        digest: format!("d{seq}"),
        chain: format!("c{seq}"),
        created_at_ms: 1_000 + seq as i64,
    }
}

/// The gate's log over time: start records read by time range in order (bounded), the n-th one's
/// time, counts, checkpoints appended only as the next of the chain, a prune that deletes what
/// its checkpoint covers (and their receipts) in the same transaction and only if it is the next
/// of the chain; the owner's settings.
fn audit_checkpoints_ranges_prunes_and_settings(s: &dyn Store) {
    for (id, at) in [
        ("st1", 10),
        ("st3", 20),
        ("st2", 20),
        ("st4", 30),
        ("st5", 40),
    ] {
        s.begin_call(&start(id, id, at, None), 0).unwrap();
    }
    s.append_receipt(&receipt("rc1", "st1", 11)).unwrap();
    s.append_receipt(&receipt("rc2", "st2", 21)).unwrap();
    s.append_receipt(&receipt("rc4", "st4", 31)).unwrap();
    let min = i64::MIN;
    assert_eq!(s.audit_nth_time(min, 100, 0).unwrap(), Some(10));
    assert_eq!(s.audit_nth_time(min, 100, 1).unwrap(), Some(20));
    assert_eq!(s.audit_nth_time(min, 100, 4).unwrap(), Some(40));
    assert_eq!(s.audit_nth_time(min, 100, 5).unwrap(), None);
    assert_eq!(s.audit_nth_time(20, 35, 0).unwrap(), Some(30));
    let ids = |rows: &runread_store::AuditRows| {
        rows.iter()
            .map(|(m, r)| (m.start_id.clone(), r.len()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&s.audit_range(min, 20, 10).unwrap()),
        vec![("st1".into(), 1), ("st2".into(), 1), ("st3".into(), 0)],
        "made, then id; with receipts"
    );
    assert_eq!(
        ids(&s.audit_range(10, 30, 1).unwrap()),
        vec![("st2".into(), 1)]
    );
    assert_eq!(s.audit_count_after(min).unwrap(), 5);
    assert_eq!(s.audit_count_after(20).unwrap(), 2);

    assert!(s.audit_checkpoints().unwrap().is_empty());
    let seal = checkpoint(1, CheckpointKind::Seal, min, 20);
    assert!(s.append_audit_checkpoint(&seal).unwrap());
    assert!(!s.append_audit_checkpoint(&seal).unwrap(), "seq 1 again");
    assert!(
        !s.append_audit_checkpoint(&checkpoint(3, CheckpointKind::Seal, 20, 30))
            .unwrap(),
        "a gap"
    );
    let seal2 = checkpoint(2, CheckpointKind::Seal, 20, 30);
    assert!(s.append_audit_checkpoint(&seal2).unwrap());
    assert_eq!(s.audit_checkpoints().unwrap(), vec![seal.clone(), seal2]);

    let stale = checkpoint(2, CheckpointKind::Prune, min, 20);
    assert_eq!(
        s.prune_audit(&stale).unwrap(),
        None,
        "not the next of the chain"
    );
    assert_eq!(s.audit_count_after(min).unwrap(), 5, "nothing deleted");
    let prune = checkpoint(3, CheckpointKind::Prune, min, 20);
    assert_eq!(s.prune_audit(&prune).unwrap(), Some(3));
    assert_eq!(
        ids(&s.audit_range(min, 100, 10).unwrap()),
        vec![("st4".into(), 1), ("st5".into(), 0)]
    );
    assert!(s.receipts("st1").unwrap().is_empty());
    assert!(s.start_meta("st2").unwrap().is_none());
    assert_eq!(s.audit_checkpoints().unwrap().len(), 3);

    assert_eq!(s.setting("audit.retention_days").unwrap(), None);
    s.put_setting("audit.retention_days", "30").unwrap();
    s.put_setting("audit.retention_days", "31").unwrap();
    assert_eq!(
        s.setting("audit.retention_days").unwrap().as_deref(),
        Some("31")
    );
}

/// Runs `check` on a fresh database as a LOGIN role that is only a member of the restricted
/// role (what operators connect runread as): the owner migrates and grants first.
#[cfg(feature = "postgres")]
fn as_the_restricted_role(check: fn(&dyn Store)) {
    let db = pg::PgDb::fresh();
    drop(db.store());
    let login = pg::AppLogin::create();
    let url = pg::kv_url(&db.name, Some(&login.name), None);
    let s = PostgresStore::connect_as(&url, "host-a").unwrap();
    check(&s);
    drop(s);
    drop(db);
}

/// One `#[test]` per check and store (`sqlite_store::NAME`, `postgres_store::NAME`,
/// `postgres_store_as_the_restricted_role::NAME`), each on a fresh store, so that every failing check
/// is reported, by name.
macro_rules! contract {
    ($($check:ident),* $(,)?) => {
        mod sqlite_store {
            $(
                #[test]
                fn $check() {
                    let (_dir, s) = super::sqlite();
                    super::$check(&s);
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres_store {
            $(
                #[test]
                fn $check() {
                    let db = super::pg::PgDb::fresh();
                    let s = db.store();
                    super::$check(&s);
                    drop(s);
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres_store_as_the_restricted_role {
            $(
                #[test]
                fn $check() {
                    super::as_the_restricted_role(super::$check);
                }
            )*
        }
    };
}

contract!(
    workspace_revision_moves_only_when_what_is_readable_changes,
    a_removed_workspaces_runs_are_listed_no_more_but_found_by_their_target,
    ingest_commits_replace_runs_and_new_generations_drop_old_ones,
    entries_append_and_new_generations_replace_them,
    a_path_taken_over_by_another_session_replaces_it,
    readers_are_found_by_key_and_name_and_one_live_reader_has_a_name,
    a_readers_grants_are_live_until_revoked_or_expired_and_removing_it_revokes_them,
    readers_last_reads_are_their_newest_calls,
    begin_call_replays_within_the_window_only,
    start_records_receipts_and_audit,
    audit_pages_newest_first_filtered_without_a_gap_or_a_repeat,
    secrets_replace_by_name_and_change_the_fingerprint,
    artifacts_belong_to_their_exact_target,
    supervised_runs_are_replaced_by_key,
    runs_page_newest_first_filtered_and_bounded,
    runs_with_an_id_prefix_are_found_within_the_bound,
    sessions_under_a_path_prefix_are_those_session_by_path_finds,
    oauth_clients_requests_codes_and_tokens,
    oauth_bounds_have_shares,
    audit_checkpoints_ranges_prunes_and_settings,
    waits_are_listed_until_they_end_or_their_time_is_up,
    snapshots_are_bounded_in_all_replaced_by_run_and_destroyed_with_their_last_grant,
    refused_calls_are_kept_newest_first_filtered_and_at_most_the_bound,
    calls_without_a_credential_are_counted_per_minute_and_code_for_the_minutes_kept,
    access_requests_are_bounded_deduplicated_decided_once_and_purged,
    kept_runs_are_bounded_in_all_keep_their_reason_and_are_dropped_key_first,
    keep_rules_are_bounded_unique_and_removed_by_workspace_and_agent,
);

fn kept_runs_are_bounded_in_all_keep_their_reason_and_are_dropped_key_first(s: &dyn Store) {
    use runread_store::KeepReason;
    let a = snapshot_of("run-1", 60);
    // The bound holds every kept run together: at N it is put, at N+1 it is not.
    assert!(s.put_kept(&a, KeepReason::Run, 60).unwrap(), "at the bound");
    assert_eq!(s.kept("s1", 1, "run-1").unwrap(), Some(a.clone()));
    let b = snapshot_of("run-2", 41);
    assert!(
        !s.put_kept(&b, KeepReason::Workspace, 100).unwrap(),
        "one byte over"
    );
    assert_eq!(s.kept("s1", 1, "run-2").unwrap(), None);
    assert_eq!(s.kept_bytes().unwrap(), 60);
    let b = snapshot_of("run-2", 40);
    assert!(
        s.put_kept(&b, KeepReason::Workspace, 100).unwrap(),
        "at the bound again"
    );
    assert_eq!(s.kept_bytes().unwrap(), 100);
    // Kept apart from snapshots: neither table sees the other's rows.
    assert_eq!(s.snapshot("s1", 1, "run-1").unwrap(), None);
    assert!(s.snapshots().unwrap().is_empty());
    // Put again, a copy replaces its row (what it replaces does not count against it) and
    // keeps its reason and since when.
    let mut a2 = snapshot_of("run-1", 60);
    a2.summary.created_at_ms = 99;
    a2.sealed = vec![4, 4];
    assert!(s.put_kept(&a2, KeepReason::Workspace, 100).unwrap());
    let stamp = s.kept_stamp("s1", 1, "run-1").unwrap().unwrap();
    assert_eq!(stamp.reason, KeepReason::Run, "kept by name stays so");
    assert_eq!(stamp.kept_since_ms, 7, "since the first time");
    assert_eq!(stamp.summary.created_at_ms, 99, "sealed again");
    assert_eq!(
        s.kept("s1", 1, "run-1").unwrap().unwrap().sealed,
        vec![4, 4]
    );
    let listed: Vec<(String, KeepReason)> = s
        .kept_runs()
        .unwrap()
        .into_iter()
        .map(|k| (k.summary.run_id, k.reason))
        .collect();
    assert_eq!(
        listed,
        [
            ("run-1".to_owned(), KeepReason::Run),
            ("run-2".to_owned(), KeepReason::Workspace)
        ]
    );
    assert!(s.drop_kept("s1", 1, "run-1").unwrap());
    assert!(!s.drop_kept("s1", 1, "run-1").unwrap(), "dropped once");
    assert_eq!(s.kept("s1", 1, "run-1").unwrap(), None);
    assert_eq!(s.kept_stamp("s1", 1, "run-1").unwrap(), None);
    assert_eq!(s.kept_bytes().unwrap(), 40);
}

fn keep_rules_are_bounded_unique_and_removed_by_workspace_and_agent(s: &dyn Store) {
    use runread_core::Agent;
    use runread_store::KeepRule;
    let rule = |w: &str, agent, at| KeepRule {
        workspace_id: w.into(),
        agent,
        created_at_ms: at,
    };
    assert!(s.put_keep_rule(&rule("w1", None, 1), 3).unwrap());
    assert!(
        !s.put_keep_rule(&rule("w1", None, 2), 3).unwrap(),
        "the same rule"
    );
    assert!(
        s.put_keep_rule(&rule("w1", Some(Agent::Claude), 3), 3)
            .unwrap()
    );
    assert!(
        s.put_keep_rule(&rule("w2", Some(Agent::Pi), 4), 3).unwrap(),
        "at the bound"
    );
    assert!(
        !s.put_keep_rule(&rule("w3", None, 5), 3).unwrap(),
        "one over"
    );
    assert_eq!(
        s.keep_rules().unwrap(),
        [
            rule("w1", None, 1),
            rule("w1", Some(Agent::Claude), 3),
            rule("w2", Some(Agent::Pi), 4)
        ]
    );
    assert_eq!(s.remove_keep_rules("w1", Some(Agent::Claude)).unwrap(), 1);
    assert_eq!(s.remove_keep_rules("w1", Some(Agent::Claude)).unwrap(), 0);
    assert_eq!(s.remove_keep_rules("w2", None).unwrap(), 1, "every agent's");
    assert_eq!(s.keep_rules().unwrap(), [rule("w1", None, 1)]);
}

fn snapshot_of(run_id: &str, bytes: u64) -> runread_store::SnapshotRecord {
    runread_store::SnapshotRecord {
        summary: runread_store::SnapshotSummary {
            session_id: "s1".into(),
            generation: 1,
            run_id: run_id.into(),
            workspace_id: "w1".into(),
            features: vec![Feature::FinalAnswer, Feature::History],
            index_sha256: "ab".repeat(32),
            lines: 3,
            bytes,
            created_at_ms: 7,
        },
        key_id: "k1".into(),
        data_key: vec![1, 2, 3],
        nonce: vec![0; 12],
        sealed: vec![0, 255, 9, 8],
    }
}

fn snapshots_are_bounded_in_all_replaced_by_run_and_destroyed_with_their_last_grant(s: &dyn Store) {
    let a = snapshot_of("run-1", 60);
    // The bound holds every snapshot together: at N it is put, at N+1 it is not.
    assert!(s.put_snapshot(&a, 60).unwrap(), "at the bound");
    assert_eq!(
        s.snapshot("s1", 1, "run-1").unwrap(),
        Some(a.clone()),
        "every field back"
    );
    assert_eq!(
        s.snapshot_stamp("s1", 1, "run-1").unwrap(),
        Some(a.summary.clone())
    );
    let b = snapshot_of("run-2", 41);
    assert!(
        !s.put_snapshot(&b, 100).unwrap(),
        "one byte over the bound in all"
    );
    assert_eq!(s.snapshot("s1", 1, "run-2").unwrap(), None);
    let b = snapshot_of("run-2", 40);
    assert!(
        s.put_snapshot(&b, 100).unwrap(),
        "exactly at the bound in all"
    );
    // A run's snapshot put again replaces it: what it replaces does not count against it.
    let mut a2 = snapshot_of("run-1", 60);
    a2.sealed = vec![4, 4];
    assert!(s.put_snapshot(&a2, 100).unwrap());
    assert_eq!(
        s.snapshot("s1", 1, "run-1").unwrap().unwrap().sealed,
        vec![4, 4]
    );
    assert_eq!(
        s.snapshots()
            .unwrap()
            .iter()
            .map(|x| x.run_id.as_str())
            .collect::<Vec<_>>(),
        ["run-1", "run-2"]
    );
    // With no grant on their runs, both are unshared; destroyed, nothing of them is left.
    assert_eq!(s.snapshots_unshared(0).unwrap().len(), 2);
    assert!(s.destroy_snapshot("s1", 1, "run-1").unwrap());
    assert!(!s.destroy_snapshot("s1", 1, "run-1").unwrap(), "gone");
    assert_eq!(s.snapshot("s1", 1, "run-1").unwrap(), None);
    assert_eq!(s.snapshot_stamp("s1", 1, "run-1").unwrap(), None);
    assert_eq!(s.snapshots().unwrap().len(), 1);
    // The snapshot log: appended, read newest first.
    let event = |id: &str, at: i64, what: &str| runread_store::SnapshotEvent {
        id: id.into(),
        at_ms: at,
        event: what.into(),
        session_id: "s1".into(),
        generation: 1,
        run_id: "run-1".into(),
        lines: 3,
        bytes: 60,
    };
    s.log_snapshot(&event("sl-1", 10, "sealed")).unwrap();
    s.log_snapshot(&event("sl-2", 20, "destroyed")).unwrap();
    assert_eq!(
        s.snapshot_log(10).unwrap(),
        vec![event("sl-2", 20, "destroyed"), event("sl-1", 10, "sealed")]
    );
    assert_eq!(s.snapshot_log(1).unwrap().len(), 1);
}

fn access_request(id: &str, reader: &str, fingerprint: &str, at: i64) -> AccessRequestRecord {
    AccessRequestRecord {
        id: id.into(),
        reader_id: reader.into(),
        fingerprint: fingerprint.into(),
        key_id: "k1".into(),
        sealed: "c2VhbGVk".into(),
        latest: 2,
        features: vec![Feature::FinalAnswer, Feature::Status],
        duration_s: 3_600,
        created_at_ms: at,
        expires_at_ms: at + 600_000,
        decided_at_ms: None,
        approved: None,
        grant_ids: None,
    }
}

fn access_requests_are_bounded_deduplicated_decided_once_and_purged(s: &dyn Store) {
    let bounds = AccessRequestBounds {
        pending_max: 3,
        pending_per_reader_max: 2,
    };
    let q1 = access_request("q-1", "r1", "f1", 1_000);
    assert_eq!(s.file_access_request(&q1, bounds).unwrap(), Filed::New);
    assert_eq!(
        s.access_request("q-1").unwrap(),
        Some(q1.clone()),
        "every field"
    );
    // The same request of the same reader while it waits: its id, nothing filed.
    let again = access_request("q-1b", "r1", "f1", 1_100);
    assert_eq!(
        s.file_access_request(&again, bounds).unwrap(),
        Filed::Same("q-1".into())
    );
    assert_eq!(s.access_request("q-1b").unwrap(), None);
    // The same fingerprint of another reader is its own request.
    let other = access_request("q-2", "r2", "f1", 1_200);
    assert_eq!(s.file_access_request(&other, bounds).unwrap(), Filed::New);
    // r1 at its bound (N = 2), then one more refused.
    let q3 = access_request("q-3", "r1", "f3", 1_300);
    assert_eq!(s.file_access_request(&q3, bounds).unwrap(), Filed::New);
    let q4 = access_request("q-4", "r1", "f4", 1_400);
    assert_eq!(s.file_access_request(&q4, bounds).unwrap(), Filed::Full);
    // Every reader at the bound in all (N = 3), then one more of another reader refused.
    let q5 = access_request("q-5", "r3", "f5", 1_500);
    assert_eq!(s.file_access_request(&q5, bounds).unwrap(), Filed::Full);
    assert_eq!(s.access_requests_pending_count(1_500).unwrap(), 3);
    let pending: Vec<String> = s
        .access_requests_pending(1_500)
        .unwrap()
        .into_iter()
        .map(|q| q.id)
        .collect();
    assert_eq!(pending, ["q-1", "q-2", "q-3"], "oldest first");
    // Decided once; a decided request no longer counts against the bounds.
    assert!(s.decide_access_request("q-1", true, 2_000).unwrap());
    assert!(!s.decide_access_request("q-1", false, 2_001).unwrap());
    let decided = s.access_request("q-1").unwrap().unwrap();
    assert_eq!(
        (decided.decided_at_ms, decided.approved, decided.grant_ids),
        (Some(2_000), Some(true), None),
        "approved, its grants not made yet"
    );
    let grants = vec!["g-1".to_owned(), "g-2".to_owned()];
    assert!(s.record_access_grants("q-1", &grants).unwrap());
    assert!(!s.record_access_grants("q-1", &grants).unwrap(), "once");
    assert_eq!(
        s.access_request("q-1").unwrap().unwrap().grant_ids,
        Some(grants)
    );
    assert!(s.decide_access_request("q-2", false, 2_100).unwrap());
    assert!(
        !s.record_access_grants("q-2", &["g-3".to_owned()]).unwrap(),
        "denied"
    );
    assert_eq!(
        s.access_request("q-2").unwrap().unwrap().approved,
        Some(false)
    );
    assert_eq!(s.file_access_request(&q4, bounds).unwrap(), Filed::New);
    // Past its expiry a request is neither pending nor decidable, nor counted.
    let late = q3.expires_at_ms;
    assert!(!s.decide_access_request("q-3", true, late).unwrap());
    assert_eq!(
        s.access_requests_pending_count(late).unwrap(),
        1,
        "q-4 only"
    );
    // A day on, filing purges what was made before.
    let day = runread_core::limits::ACCESS_REQUEST_KEPT_MS;
    let next = access_request("q-6", "r1", "f6", 1_300 + day);
    assert_eq!(s.file_access_request(&next, bounds).unwrap(), Filed::New);
    for gone in ["q-1", "q-2", "q-3"] {
        assert_eq!(s.access_request(gone).unwrap(), None, "{gone}");
    }
    assert!(s.access_request("q-4").unwrap().is_some());
    // Removing a reader drops its requests.
    s.insert_reader(&reader("r1", "alice", &"a".repeat(64)))
        .unwrap();
    assert!(s.remove_reader("r1", 3_000).unwrap());
    assert_eq!(s.access_request("q-4").unwrap(), None);
    assert_eq!(s.access_request("q-6").unwrap(), None);
}

fn wait_at(id: &str, started: i64, until: i64) -> runread_store::WaitRecord {
    runread_store::WaitRecord {
        id: id.into(),
        reader_id: "r1".into(),
        session_id: "s1".into(),
        generation: 2,
        run_id: "run-1".into(),
        started_at_ms: started,
        until_ms: until,
    }
}

fn waits_are_listed_until_they_end_or_their_time_is_up(s: &dyn Store) {
    let (a, b) = (wait_at("w-a", 1_000, 26_000), wait_at("w-b", 2_000, 3_000));
    s.begin_wait(&a).unwrap();
    s.begin_wait(&b).unwrap();
    assert_eq!(
        s.live_waits(2_500).unwrap(),
        vec![a.clone(), b.clone()],
        "oldest first, every field"
    );
    // At its time a wait is no longer listed, ended or not.
    assert_eq!(s.live_waits(3_000).unwrap(), vec![a.clone()]);
    // A wait that starts later purges the rows whose time is up.
    let c = wait_at("w-c", 5_000, 30_000);
    s.begin_wait(&c).unwrap();
    assert_eq!(s.live_waits(0).unwrap(), vec![a.clone(), c.clone()]);
    s.end_wait("w-a").unwrap();
    assert_eq!(s.live_waits(5_000).unwrap(), vec![c]);
    // Ending an unknown wait is not an error (a wait that never started its record).
    s.end_wait("w-none").unwrap();
}

/// The restricted role can do nothing to the append-only tables but read and insert, nor change
/// the schema; and every table has its privileges stated in exactly one list.
#[cfg(feature = "postgres")]
#[test]
fn postgres_restricted_role_only_reads_and_appends_the_audit_tables() {
    let db = pg::PgDb::fresh();
    let owner = db.store();
    let login = pg::AppLogin::create();
    owner.begin_call(&start("st1", "k", 1, None), 0).unwrap();
    owner.append_receipt(&receipt("rc1", "st1", 2)).unwrap();
    let url = pg::kv_url(&db.name, Some(&login.name), None);
    let app = PostgresStore::connect_as(&url, "host-a").unwrap();
    assert_eq!(app.instance_id(), owner.instance_id());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for sql in [
        "UPDATE start_records SET tool = 'x'",
        "TRUNCATE start_records CASCADE",
        "UPDATE receipts SET outcome = 'x'",
        "UPDATE meta SET value = '\\x00'",
        "DELETE FROM meta",
        "INSERT INTO schema_migrations(version) VALUES (1000)",
        "DELETE FROM schema_migrations",
        "CREATE TABLE t (x int)",
        "DROP TABLE grants",
        "ALTER TABLE start_records DISABLE TRIGGER start_records_append_only",
        "DELETE FROM audit_checkpoints",
        "UPDATE audit_checkpoints SET upto_ms = 0",
    ] {
        let e = c.batch_execute(sql).expect_err(sql);
        let code = e.code().map(|c| c.code().to_owned()).unwrap_or_default();
        assert!(
            code == "42501",
            "{sql}: expected permission denied, got {code} {e}"
        );
    }
    // The gate's log may be deleted from, but only where a prune covers the rows: none does.
    for sql in ["DELETE FROM start_records", "DELETE FROM receipts"] {
        let e = c.batch_execute(sql).expect_err(sql);
        let msg = e
            .as_db_error()
            .map(|d| d.message().to_owned())
            .unwrap_or_default();
        assert!(msg.contains("append-only"), "{sql}: {msg}");
    }
    assert_eq!(owner.audit_count_after(i64::MIN).unwrap(), 1);
    // Every table of the schema has its privileges stated in exactly one list.
    let tables: Vec<String> = c
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    use runread_store::postgres::{
        APP_APPEND_ONLY_TABLES, APP_PRUNED_TABLES, APP_READ_ONLY_TABLES, APP_READ_WRITE_TABLES,
    };
    for t in &tables {
        let n = [
            APP_READ_WRITE_TABLES,
            APP_APPEND_ONLY_TABLES,
            APP_PRUNED_TABLES,
            APP_READ_ONLY_TABLES,
        ]
        .iter()
        .filter(|l| l.contains(&t.as_str()))
        .count();
        assert_eq!(n, 1, "table {t} must be in exactly one APP_*_TABLES list");
    }
    drop(c);
    drop(app);
    drop(owner);
    drop(db);
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_instance_id_and_cursor_key_survive_reconnecting() {
    let db = pg::PgDb::fresh();
    let a = db.store();
    let cursor = a.cursor_key().encode(
        runread_core::cursor::Purpose::FinalAnswer,
        &target(),
        "v",
        9,
    );
    let id = a.instance_id().to_owned();
    drop(a);
    let b = db.store();
    assert_eq!(b.instance_id(), id);
    assert_eq!(
        b.cursor_key().decode(
            &cursor,
            runread_core::cursor::Purpose::FinalAnswer,
            &target(),
            "v"
        ),
        Some(9)
    );
    let other = pg::PgDb::fresh();
    assert_ne!(
        other.store().instance_id(),
        id,
        "a new store is a new instance"
    );
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

/// A store indexed before runs had a start-time column gets one for every run it holds when a
/// newer runread opens it: the listing pages old runs newest first too.
#[test]
fn sqlite_fills_in_start_times_of_runs_indexed_before_migration_7() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    {
        let s = SqliteStore::open(&path).unwrap();
        let ws = s.add_workspace("/w", "w", 1).unwrap();
        s.commit_ingest(&IngestCommit {
            session: session(&ws.id, 1),
            new_generation: true,
            new_entries: vec![],
            // Listed by position alone (the last first), "old" would come first.
            runs: vec![
                run_at("new", Some("2026-02-01T00:00:00Z")),
                run_at("old", Some("2026-01-01T00:00:00Z")),
            ],
        })
        .unwrap();
    }
    // Back to schema 6, as an earlier runread left it (migration 16's refusals, 15's retention,
    // 13's snapshots, 12's waits, 11's connectors (and 14's changes to them), 10's readers and
    // 9's audit indexes undone too).
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TRIGGER start_records_append_only_delete; DROP TRIGGER receipts_append_only_delete; \
         CREATE TRIGGER start_records_append_only_delete BEFORE DELETE ON start_records \
         BEGIN SELECT RAISE(ABORT, 'start records are append-only'); END; \
         CREATE TRIGGER receipts_append_only_delete BEFORE DELETE ON receipts \
         BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END; \
         DROP TABLE keep_rules; DROP TABLE kept_runs; \
         DROP TABLE access_requests; DROP TABLE refusals; DROP TABLE unadmitted_calls; \
         DROP TABLE settings; DROP TABLE audit_checkpoints; DROP TABLE snapshot_log; DROP TABLE snapshots; DROP TABLE waits; DROP TABLE oauth_tokens; DROP TABLE oauth_requests; DROP TABLE oauth_clients; \
         DROP INDEX start_records_by_reader; ALTER TABLE start_records DROP COLUMN reader_id; \
         DROP TABLE grants; DROP TABLE readers; CREATE TABLE grants (id TEXT PRIMARY KEY, \
         key_hash TEXT NOT NULL UNIQUE, label TEXT NOT NULL, instance TEXT NOT NULL, \
         revision INTEGER NOT NULL, workspace_id TEXT NOT NULL, session_id TEXT NOT NULL, \
         generation INTEGER NOT NULL, run_id TEXT NOT NULL, features TEXT NOT NULL, \
         created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, revoked_at INTEGER) STRICT; \
         DROP INDEX start_records_by_time_and_id; DROP INDEX start_records_by_grant; \
         DROP INDEX start_records_by_run; CREATE INDEX start_records_by_time ON start_records(created_at); \
         DROP INDEX runs_by_start; ALTER TABLE runs DROP COLUMN started_ms; \
         ALTER TABLE receipts DROP COLUMN evidence; ALTER TABLE receipts DROP COLUMN state; \
         PRAGMA user_version = 6;",
    )
    .unwrap();
    drop(conn);
    let s = SqliteStore::open(&path).unwrap();
    let page: Vec<String> = s
        .runs_page(&RunFilter::default(), 10, 0)
        .unwrap()
        .into_iter()
        .map(|r| r.target.run_id)
        .collect();
    assert_eq!(page, ["new", "old"]);
}

/// On SQLite, the gate's log can be deleted from only where a prune checkpoint covers the rows,
/// and the checkpoints only appended to: an outside delete of a row no prune covers is refused.
#[test]
fn sqlite_gate_log_is_deleted_only_where_a_prune_covers_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    let s = SqliteStore::open(&path).unwrap();
    s.begin_call(&start("st1", "k1", 10, None), 0).unwrap();
    s.begin_call(&start("st2", "k2", 20, None), 0).unwrap();
    s.append_receipt(&receipt("rc1", "st1", 11)).unwrap();
    s.append_receipt(&receipt("rc2", "st2", 21)).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let refused = |sql: &str| {
        let e = conn.execute(sql, []).expect_err(sql);
        assert!(e.to_string().contains("append-only"), "{sql}: {e}");
    };
    refused("DELETE FROM receipts WHERE start_id = 'st1'");
    refused("DELETE FROM start_records WHERE start_id = 'st1'");
    s.append_audit_checkpoint(&checkpoint(1, CheckpointKind::Seal, i64::MIN, 10))
        .unwrap();
    refused("DELETE FROM receipts WHERE start_id = 'st1'");
    // A prune of up to 10 covers st1 (its checkpoint written by hand, as a tamperer would: what
    // `audit verify` catches then is the chain).
    conn.execute(
        "INSERT INTO audit_checkpoints VALUES (2, 'prune', -1, 10, 1, 1, 'd', 'c', 1)",
        [],
    )
    .unwrap();
    conn.execute("DELETE FROM receipts WHERE start_id = 'st1'", [])
        .unwrap();
    conn.execute("DELETE FROM start_records WHERE start_id = 'st1'", [])
        .unwrap();
    refused("DELETE FROM receipts WHERE start_id = 'st2'");
    refused("DELETE FROM start_records WHERE start_id = 'st2'");
    refused("DELETE FROM audit_checkpoints");
    refused("UPDATE audit_checkpoints SET upto_ms = 100");
    assert_eq!(s.audit_count_after(i64::MIN).unwrap(), 1);
}

/// On SQLite as on PostgreSQL, the snapshot log (the audit of snapshots sealed and destroyed)
/// can only be read and appended to.
#[test]
fn sqlite_snapshot_log_is_append_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    let s = SqliteStore::open(&path).unwrap();
    s.log_snapshot(&runread_store::SnapshotEvent {
        id: "sl-1".into(),
        at_ms: 1,
        event: "sealed".into(),
        session_id: "s".into(),
        generation: 1,
        run_id: "r".into(),
        lines: 1,
        bytes: 1,
    })
    .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    for sql in [
        "UPDATE snapshot_log SET event = 'x'",
        "DELETE FROM snapshot_log",
    ] {
        let e = conn.execute(sql, []).expect_err(sql);
        assert!(e.to_string().contains("append-only"), "{sql}: {e}");
    }
    assert_eq!(s.snapshot_log(10).unwrap().len(), 1);
}

/// A key looked up at once (on an async thread, no hop) is answered exactly as the lookup that may
/// wait: the same reader and live grants, the same nothing for an unknown or rotated key.
#[test]
fn sqlite_answers_a_key_at_once_as_it_answers_it_otherwise() {
    let (_dir, s) = sqlite();
    s.insert_reader(&reader("r1", "one", "hash1")).unwrap();
    // The read connections open with the first read, which may wait: before it, nothing is
    // answered at once.
    assert!(s.reader_of_key_at_once("hash1", 0).is_none());
    let waited = s.reader_of_key("hash1", 0).unwrap();
    assert!(waited.is_some());
    assert_eq!(
        s.reader_of_key_at_once("hash1", 0).unwrap().unwrap(),
        waited
    );
    assert_eq!(s.reader_of_key_at_once("other", 0).unwrap().unwrap(), None);
    assert!(s.rotate_reader_key("r1", "hash1b").unwrap());
    assert_eq!(s.reader_of_key_at_once("hash1", 0).unwrap().unwrap(), None);
    assert_eq!(
        s.reader_of_key_at_once("hash1b", 0).unwrap().unwrap(),
        s.reader_of_key("hash1b", 0).unwrap()
    );
}

/// An in-memory SQLite store (one connection, no pool) and PostgreSQL (a server across the
/// network) never answer a key at once: the caller looks it up where it may wait.
#[test]
fn a_store_without_a_free_local_read_connection_does_not_answer_at_once() {
    let s = SqliteStore::open(std::path::Path::new(":memory:")).unwrap();
    s.insert_reader(&reader("r1", "one", "hash1")).unwrap();
    assert!(s.reader_of_key("hash1", 0).unwrap().is_some());
    assert!(s.reader_of_key_at_once("hash1", 0).is_none());
    #[cfg(feature = "postgres")]
    {
        let db = pg::PgDb::fresh();
        let p = db.store();
        p.insert_reader(&reader("r1", "one", "hash1")).unwrap();
        assert!(p.reader_of_key("hash1", 0).unwrap().is_some());
        assert!(p.reader_of_key_at_once("hash1", 0).is_none());
    }
}

fn refusal(reader: &str, tool: &str, code: &str, run: Option<&str>, at: i64) -> Refusal {
    Refusal {
        reader_id: reader.into(),
        tool: tool.into(),
        target: run.map(|r| Target {
            run_id: r.into(),
            ..target()
        }),
        code: code.into(),
        created_at_ms: at,
    }
}

fn refusals_shown(s: &dyn Store, filter: &RefusalFilter) -> Vec<(String, i64)> {
    let page = s.refusals_page(filter, REFUSALS_PAGE_MAX).unwrap();
    assert_eq!(page.more, 0);
    page.rows
        .into_iter()
        .map(|r| (r.code, r.created_at_ms))
        .collect()
}

fn refused_calls_are_kept_newest_first_filtered_and_at_most_the_bound(s: &dyn Store) {
    const KEPT: u64 = 3;
    let all = RefusalFilter::default();
    let first = refusal("rd1", "read_final_answer", "grant_expired", Some("r1"), 10);
    s.record_refusal(&first, KEPT).unwrap();
    s.record_refusal(
        &refusal("rd2", "read_history", "not_granted", Some("r2"), 20),
        KEPT,
    )
    .unwrap();
    s.record_refusal(
        &refusal("rd1", "list_granted_targets", "invalid_arguments", None, 30),
        KEPT,
    )
    .unwrap();
    // At the bound: every one kept, newest first, every field.
    let page = s.refusals_page(&all, REFUSALS_PAGE_MAX).unwrap();
    assert_eq!(page.rows.len(), 3);
    assert_eq!(page.rows.last(), Some(&first));
    assert_eq!(page.rows.first().map(|r| r.target.clone()), Some(None));
    // Filtered by reader, run, tool and time; a page and how many more.
    let by_reader = RefusalFilter {
        reader_id: Some("rd1".into()),
        ..Default::default()
    };
    assert_eq!(
        refusals_shown(s, &by_reader),
        vec![
            ("invalid_arguments".into(), 30),
            ("grant_expired".into(), 10)
        ]
    );
    let by_run = RefusalFilter {
        run_id: Some("r2".into()),
        ..Default::default()
    };
    assert_eq!(refusals_shown(s, &by_run), vec![("not_granted".into(), 20)]);
    let by_tool = RefusalFilter {
        tool: Some("read_final_answer".into()),
        ..Default::default()
    };
    assert_eq!(
        refusals_shown(s, &by_tool),
        vec![("grant_expired".into(), 10)]
    );
    let since = RefusalFilter {
        since_ms: Some(20),
        ..Default::default()
    };
    assert_eq!(refusals_shown(s, &since).len(), 2);
    let one = s.refusals_page(&all, 1).unwrap();
    assert_eq!((one.rows.len(), one.more), (1, 2));
    // One past the bound: the oldest goes.
    s.record_refusal(
        &refusal("rd2", "read_history", "target_stale", Some("r3"), 40),
        KEPT,
    )
    .unwrap();
    assert_eq!(
        refusals_shown(s, &all),
        vec![
            ("target_stale".into(), 40),
            ("invalid_arguments".into(), 30),
            ("not_granted".into(), 20)
        ]
    );
}

fn calls_without_a_credential_are_counted_per_minute_and_code_for_the_minutes_kept(s: &dyn Store) {
    let minute = UNADMITTED_MINUTE_MS;
    // A burst in one minute is one count, however many calls.
    for i in 0..50 {
        s.count_unadmitted(minute * 5 + i, "invalid_key").unwrap();
    }
    s.count_unadmitted(minute * 5, "missing_key").unwrap();
    s.count_unadmitted(minute * 6 + 1, "invalid_key").unwrap();
    let tallies = s.unadmitted_tallies(i64::MIN).unwrap();
    assert_eq!(
        tallies,
        vec![
            UnadmittedTally {
                code: "invalid_key".into(),
                calls: 51,
                first_minute_ms: minute * 5,
                last_minute_ms: minute * 6,
            },
            UnadmittedTally {
                code: "missing_key".into(),
                calls: 1,
                first_minute_ms: minute * 5,
                last_minute_ms: minute * 5,
            },
        ]
    );
    // From a time on: the minutes from that time's minute.
    let later = s.unadmitted_tallies(minute * 6 + 30_000).unwrap();
    assert_eq!(later.iter().map(|t| t.calls).collect::<Vec<_>>(), vec![1]);
    // At the bound: minute 5 is kept while the newest is the last of the minutes kept with it.
    let last_kept = minute * (5 + UNADMITTED_MINUTES_KEPT - 1);
    s.count_unadmitted(last_kept, "invalid_key").unwrap();
    let first = |s: &dyn Store| {
        s.unadmitted_tallies(i64::MIN)
            .unwrap()
            .into_iter()
            .find(|t| t.code == "invalid_key")
            .map(|t| (t.first_minute_ms, t.calls))
    };
    assert_eq!(first(s), Some((minute * 5, 52)));
    // One past it: minute 5 goes, with its 50 calls (and the other code's).
    s.count_unadmitted(last_kept + minute, "invalid_key")
        .unwrap();
    assert_eq!(first(s), Some((minute * 6, 3)));
    assert_eq!(s.unadmitted_tallies(i64::MIN).unwrap().len(), 1);
}

/// The refusal log's bound at its real value, `REFUSALS_KEPT_MAX`, without writing that many: a
/// row placed by hand `REFUSALS_KEPT_MAX - 1` places before the next (the ones between never
/// written) is kept at the bound, and goes one past it.
#[test]
fn sqlite_refusals_keep_refusals_kept_max_and_drop_one_past_it() {
    use runread_store::REFUSALS_KEPT_MAX;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    let s = SqliteStore::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO refusals (seq, reader_id, tool, code, created_at) \
         VALUES (1, 'rd-old', 'get_run', 'not_granted', 1)",
        [],
    )
    .unwrap();
    let last_placed = i64::try_from(REFUSALS_KEPT_MAX).unwrap() - 1;
    conn.execute(
        "INSERT INTO refusals (seq, reader_id, tool, code, created_at) \
         VALUES (?1, 'rd', 'get_run', 'not_granted', 2)",
        [last_placed],
    )
    .unwrap();
    let readers = |s: &SqliteStore| -> Vec<String> {
        let page = s.refusals_page(&RefusalFilter::default(), 10).unwrap();
        page.rows.into_iter().map(|r| r.reader_id).collect()
    };
    // The newest is number REFUSALS_KEPT_MAX: the first is still among the last that many.
    s.record_refusal(
        &refusal("rd", "get_run", "busy", None, 3),
        REFUSALS_KEPT_MAX,
    )
    .unwrap();
    assert_eq!(readers(&s), ["rd", "rd", "rd-old"]);
    s.record_refusal(
        &refusal("rd", "get_run", "busy", None, 4),
        REFUSALS_KEPT_MAX,
    )
    .unwrap();
    assert_eq!(readers(&s), ["rd", "rd", "rd"]);
}
