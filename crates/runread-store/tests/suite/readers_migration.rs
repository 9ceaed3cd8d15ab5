//! Migration 10: a store whose grants each had a key of their own becomes one where each of those
//! grants is held by a reader of its own, named by its label (a label several grants share made
//! unique with the grant's id after the first), with the grant's key — so every key reads exactly
//! what it read before, and a revoked grant stays revoked — and every call recorded before names
//! its reader: its grant's, or for a call under no grant the one reader its key prefix fits.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_core::{Feature, Target};
#[cfg(feature = "postgres")]
use runread_store::postgres::PostgresStore;
use runread_store::sqlite::SqliteStore;
use runread_store::{Grant, Reader, Store};
#[cfg(feature = "postgres")]
use runread_testkit::pg::PgDb;

/// The last migration of the runreads whose grants held their own keys.
const LAST_WITHOUT_READERS: usize = 9;

/// The grants an older runread held: (id, key hash, label, created, revoked).
const OLD_GRANTS: &[(&str, &str, &str, i64, Option<i64>)] = &[
    ("g-a", "hash-a", "claude-code", 10, None),
    ("g-b", "hash-b", "claude-code", 20, None),
    ("g-c", "hash-c", "ci", 30, Some(35)),
];

/// Calls an older runread recorded: (start id, grant id, key hash prefix, when).
const OLD_CALLS: &[(&str, &str, &str, i64)] = &[
    ("st-under-g-b", "g-b", "hash-b", 100),
    ("st-list-c", "", "hash-c", 101),
    ("st-list-any", "", "hash-", 102),
];

const INSERT_OLD_CALL: &str = "INSERT INTO start_records (start_id, idempotency_key, grant_id, \
     key_hash_prefix, tool, binding_digest, target_json, input_digest, sealed_key_id, sealed_nonce, \
     sealed_ciphertext, created_at) VALUES ($1, $1, $2, $3, 't', 'b', 'null', 'i', 'k', $4, $4, $5)";

const INSERT_OLD_GRANT: &str = "INSERT INTO grants (id, key_hash, label, instance, revision, \
     workspace_id, session_id, generation, run_id, features, created_at, expires_at, revoked_at) \
     VALUES ($1, $2, $3, 'i', 1, 'w', 's', 1, $4, 'final_answer,history', $5, 4000000000000, $6)";

fn target(run_id: &str) -> Target {
    Target {
        instance: "i".into(),
        revision: 1,
        workspace_id: "w".into(),
        session_id: "s".into(),
        generation: 1,
        run_id: run_id.into(),
    }
}

/// What the migrated store must hold: each old grant, with a reader of its own holding its key.
fn assert_migrated(s: &dyn Store) {
    let readers = s.readers().unwrap();
    assert_eq!(
        readers,
        vec![
            Reader {
                id: "r-g-a".into(),
                name: "claude-code".into(),
                key_hash: "hash-a".into(),
                created_at_ms: 10,
                removed_at_ms: None,
            },
            Reader {
                id: "r-g-b".into(),
                name: "claude-code (g-b)".into(),
                key_hash: "hash-b".into(),
                created_at_ms: 20,
                removed_at_ms: None,
            },
            Reader {
                id: "r-g-c".into(),
                name: "ci".into(),
                key_hash: "hash-c".into(),
                created_at_ms: 30,
                removed_at_ms: None,
            },
        ]
    );
    for (id, hash, _, created, revoked) in OLD_GRANTS {
        let (reader, _) = s.reader_of_key(hash, 0).unwrap().unwrap();
        let g = s.grant_of_key(id, hash).unwrap().unwrap();
        assert_eq!(
            g,
            Grant {
                id: (*id).into(),
                reader_id: reader.id.clone(),
                reader_name: reader.name.clone(),
                target: target(id),
                features: vec![Feature::FinalAnswer, Feature::History],
                created_at_ms: *created,
                expires_at_ms: 4_000_000_000_000,
                revoked_at_ms: *revoked,
                label: None,
            }
        );
    }
    let reader_of = |start_id: &str| s.start_meta(start_id).unwrap().unwrap().reader_id;
    assert_eq!(reader_of("st-under-g-b").as_deref(), Some("r-g-b"));
    assert_eq!(
        reader_of("st-list-c").as_deref(),
        Some("r-g-c"),
        "by its key prefix"
    );
    assert_eq!(
        reader_of("st-list-any"),
        None,
        "a prefix several keys share names none"
    );
    assert_eq!(
        s.reader_last_reads().unwrap(),
        vec![("r-g-b".to_owned(), 100), ("r-g-c".to_owned(), 101)]
    );
    // The readers behave as readers: a name is one live reader's, a grant to it adds no key.
    assert!(
        s.insert_reader(&Reader {
            id: "r-new".into(),
            name: "claude-code".into(),
            key_hash: "hash-new".into(),
            created_at_ms: 40,
            removed_at_ms: None,
        })
        .is_err()
    );
    let mut more = s.grant_of_key("g-a", "hash-a").unwrap().unwrap();
    more.id = "g-d".into();
    more.created_at_ms = 50;
    s.insert_grant(&more).unwrap();
    assert_eq!(
        s.reader_of_key("hash-a", 60)
            .unwrap()
            .unwrap()
            .1
            .into_iter()
            .map(|g| g.id)
            .collect::<Vec<_>>(),
        vec!["g-d", "g-a"]
    );
}

#[test]
fn sqlite_gives_each_old_grant_a_reader_of_its_own_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runread.db");
    {
        let c = crate::older::sqlite_at(&path, LAST_WITHOUT_READERS);
        for (id, hash, label, created, revoked) in OLD_GRANTS {
            c.execute(
                INSERT_OLD_GRANT,
                rusqlite::params![id, hash, label, id, created, revoked],
            )
            .unwrap();
        }
        for (start_id, grant_id, prefix, at) in OLD_CALLS {
            c.execute(
                INSERT_OLD_CALL,
                rusqlite::params![start_id, grant_id, prefix, vec![0u8; 12], at],
            )
            .unwrap();
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_migrated(&store);
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_gives_each_old_grant_a_reader_of_its_own_with_its_key() {
    let db = PgDb::fresh();
    let mut c = crate::older::postgres_at(&db, LAST_WITHOUT_READERS);
    for (id, hash, label, created, revoked) in OLD_GRANTS {
        c.execute(INSERT_OLD_GRANT, &[id, hash, label, id, created, revoked])
            .unwrap();
    }
    for (start_id, grant_id, prefix, at) in OLD_CALLS {
        c.execute(
            INSERT_OLD_CALL,
            &[start_id, grant_id, prefix, &vec![0u8; 12], at],
        )
        .unwrap();
    }
    let store: PostgresStore = db.store();
    assert_migrated(&store);
}
