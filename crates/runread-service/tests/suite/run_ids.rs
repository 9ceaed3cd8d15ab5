//! The one resolver of a typed run id: a prefix that names one run picks it, one that several
//! share lists them (up to `RUN_CANDIDATES_MAX`, each once), and beyond that asks for more.

use runread_service::owner::Unresolved;
use runread_service::owner::run_ids::{RUN_CANDIDATES_MAX, shortest_prefixes_within};
use runread_store::IngestCommit;
use runread_store::prelude::*;
use runread_testkit::{Env, records};

/// `n` runs whose ids all start with `shared`, in one session.
fn runs_sharing(env: &Env, shared: &str, n: u32) {
    env.store
        .commit_ingest(&IngestCommit {
            session: records::session_at("s-many", "/sessions/many.jsonl", &env.ws.id, 1),
            new_generation: true,
            new_entries: vec![],
            runs: (0..n)
                .map(|i| records::run(&format!("{shared}{i:04}")))
                .collect(),
        })
        .unwrap();
}

#[test]
fn a_shared_prefix_lists_up_to_the_bound_and_asks_for_more_beyond_it() {
    let env = Env::new();
    runs_sharing(&env, "feedbeef-", RUN_CANDIDATES_MAX);
    match env.owner().resolve_run("feedbeef", None) {
        Err(Unresolved::Ambiguous { candidates, .. }) => {
            assert_eq!(candidates.len(), RUN_CANDIDATES_MAX as usize);
            for c in &candidates {
                let picked = env.owner().resolve_run(&c.run_prefix, None).unwrap();
                assert_eq!(picked.target.run_id, c.run_id);
                assert!(
                    c.session_prefix.is_none(),
                    "one session: the run id picks it"
                );
            }
        }
        other => panic!("{other:?}"),
    }
    runs_sharing(&env, "feedbeef-", RUN_CANDIDATES_MAX + 1);
    assert!(matches!(
        env.owner().resolve_run("feedbeef", None),
        Err(Unresolved::TooMany { .. })
    ));
    // A whole id, and a prefix shorter than 4 characters is no prefix.
    let whole = format!("feedbeef-{:04}", 3);
    assert_eq!(
        env.owner().resolve_run(&whole, None).unwrap().target.run_id,
        whole
    );
    assert!(matches!(
        env.owner().resolve_run("fee", None),
        Err(Unresolved::NoSuchRun { .. })
    ));
}

#[test]
fn a_listing_shows_each_run_by_a_prefix_that_picks_it_whether_read_at_once_or_run_by_run() {
    let env = Env::new();
    let n = 5;
    runs_sharing(&env, "feedbeef-", n);
    let ids: Vec<String> = (0..n).map(|i| format!("feedbeef-{i:04}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    // Read at once (n neighbours, at the bound) and run by run (one under it): the same.
    let at_once = shortest_prefixes_within(&*env.store, &ids, n).unwrap();
    let one_by_one = shortest_prefixes_within(&*env.store, &ids, n - 1).unwrap();
    assert_eq!(at_once, one_by_one);
    for (id, shown) in ids.iter().zip(&at_once) {
        assert_eq!(
            shown.as_str(),
            *id,
            "ids differing in their last character are shown whole"
        );
        let picked = env.owner().resolve_run(shown, None).unwrap();
        assert_eq!(picked.target.run_id, *id);
    }
    // Only the first 8 characters when no other run shares them.
    assert_eq!(
        env.owner()
            .run_id_prefixes(&["feedbeef-0001", "unshared-id"])
            .unwrap(),
        ["feedbeef-0001", "unshared"]
    );
}
