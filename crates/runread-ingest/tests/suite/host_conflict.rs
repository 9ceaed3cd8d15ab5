//! A session id another host already ingested into a shared store (the store answers
//! `Conflict`) skips that one file: the pass goes on with every other session.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::collections::HashSet;
use std::time::Duration;

use runread_ingest::FileOutcome;
use runread_store::StoreError;
use runread_testkit::Env;
use runread_testkit::hooked::Hooked;

/// The home's store, except that ingest commits of `foreign` session ids fail with `Conflict`,
/// as the PostgreSQL store answers for a session id another host ingested first.
fn foreign_sessions(env: &Env, foreign: HashSet<String>) -> Hooked {
    let mut store = Hooked::new(env.store.clone());
    store.before_commit_ingest = Some(Box::new(move |commit| {
        if foreign.contains(&commit.session.session_id) {
            return Err(StoreError::Conflict(
                "session already ingested from another host".into(),
            ));
        }
        Ok(())
    }));
    store
}

/// The session id in a session file's header.
fn session_id(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_session_another_host_ingested_is_skipped_and_the_pass_goes_on() {
    let env = Env::new();
    let foreign_path = env.place("sample", Duration::from_secs(60));
    let own_path = env.place("multi-run", Duration::from_secs(60));
    let store = foreign_sessions(&env, HashSet::from([session_id(&foreign_path)]));
    for pass in 0..2 {
        let (report, outcomes) = runread_ingest::ingest_dir(
            &store,
            &runread_ingest::AgentDir::new(runread_sessions::Agent::Pi, &env.sessions),
            runread_core::timefmt::now_ms(),
            |_| {},
        )
        .expect("a conflict must not abort the pass");
        let outcome_of = |p: &std::path::Path| {
            outcomes
                .iter()
                .find(|(q, _)| q == p)
                .map(|(_, o)| o.clone())
                .unwrap()
        };
        assert_eq!(
            outcome_of(&foreign_path),
            FileOutcome::DuplicateSessionId,
            "pass {pass}"
        );
        assert_eq!(report.files, 2, "pass {pass}");
        assert_eq!(report.duplicates, 1, "pass {pass}");
        if pass == 0 {
            assert!(
                matches!(outcome_of(&own_path), FileOutcome::NewGeneration { .. }),
                "the other session is ingested in the same pass"
            );
            assert_eq!(report.new_generations, 1);
            // Only the stored session's runs are counted.
            assert_eq!(report.runs, 3);
        } else {
            // The skipped file is tried again (its owner may have let it go), the other is unchanged.
            assert_eq!(outcome_of(&own_path), FileOutcome::Unchanged);
            assert_eq!(report.runs, 0);
        }
    }
    let runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(
        runs.iter()
            .all(|r| r.target.session_id == session_id(&own_path))
    );
    assert!(
        env.store
            .session(&session_id(&foreign_path))
            .unwrap()
            .is_none()
    );
}
