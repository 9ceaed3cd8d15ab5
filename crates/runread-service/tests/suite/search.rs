//! The owner's search of runs by words in their prompt and answer: read from the session files
//! through the index, on the masked text (a known secret's value finds nothing), newest first,
//! within its bounds at N and N+1.

use runread_store::prelude::*;
use std::time::Duration;

use runread_service::owner::search::{Bounds, SEARCH_RESULTS_MAX};
use runread_store::{RunFilter, RunRecord};
use runread_testkit::Env;

/// The multi-run Pi session, ingested: its runs, newest first, with their prompt and answer.
fn runs(env: &Env) -> Vec<(RunRecord, String)> {
    env.place("multi-run", Duration::from_secs(60));
    env.ingest();
    let mut runs = env.store.runs_page(&RunFilter::default(), 10, 0).unwrap();
    runs.truncate(10);
    runs.into_iter()
        .map(|r| {
            let text = format!(
                "{}\n{}",
                runread_testkit::prompt(&r).unwrap_or_default(),
                runread_testkit::answer(&r).unwrap_or_default()
            )
            .to_lowercase();
            (r, text)
        })
        .collect()
}

/// A word of `runs[i]`'s answer in no other run's prompt or answer.
fn only_in(runs: &[(RunRecord, String)], i: usize) -> String {
    let answer = runread_testkit::answer(&runs[i].0).unwrap().to_lowercase();
    answer
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| w.len() >= 6)
        .find(|w| {
            runs.iter()
                .enumerate()
                .all(|(j, (_, t))| j == i || !t.contains(*w))
        })
        .expect("a word of its own")
        .to_owned()
}

fn found(env: &Env, query: &str, bounds: Bounds) -> (Vec<String>, u64, bool) {
    let f = env
        .owner()
        .search_runs_within(query, &RunFilter::default(), 0, bounds)
        .unwrap();
    (
        f.runs
            .into_iter()
            .map(|r| r.record.target.run_id.clone())
            .collect(),
        f.examined,
        f.complete,
    )
}

#[test]
fn a_word_of_one_runs_answer_finds_that_run_and_case_does_not_matter() {
    let env = Env::new();
    let runs = runs(&env);
    assert!(runs.len() >= 3);
    let word = only_in(&runs, 1);
    let (hits, examined, complete) = found(&env, &word.to_uppercase(), Bounds::default());
    assert_eq!(hits, [runs[1].0.target.run_id.clone()]);
    assert_eq!((examined, complete), (runs.len() as u64, true));
    // Every word must be found: one from another run's answer makes it none.
    let other = only_in(&runs, 0);
    assert!(
        found(&env, &format!("{word} {other}"), Bounds::default())
            .0
            .is_empty()
    );
}

#[test]
fn a_known_secrets_value_finds_nothing() {
    let env = Env::new();
    let runs = runs(&env);
    let word = only_in(&runs, 2);
    assert_eq!(found(&env, &word, Bounds::default()).0.len(), 1);
    env.add_secret("found-word", &word);
    assert!(
        found(&env, &word, Bounds::default()).0.is_empty(),
        "searching for a secret must not tell which runs hold it"
    );
}

#[test]
fn the_bounds_hold_at_n_and_n_plus_one() {
    let env = Env::new();
    let runs = runs(&env);
    let n = runs.len() as u64;
    let all = Bounds::default();
    // Runs examined: all of them at N; one short, the search says it is not complete.
    assert_eq!(found(&env, "the", Bounds { runs_max: n, ..all }).1, n);
    assert!(found(&env, "the", Bounds { runs_max: n, ..all }).2);
    let (_, examined, complete) = found(
        &env,
        "the",
        Bounds {
            runs_max: n - 1,
            ..all
        },
    );
    assert_eq!((examined, complete), (n - 1, false));
    // Bytes read: exactly the runs' prompt and answer lines, then one byte fewer.
    let bytes: u64 = runs
        .iter()
        .map(|(r, _)| {
            r.run
                .prompt_line
                .iter()
                .chain(&r.run.final_lines)
                .map(|l| l.bytes)
                .sum::<u64>()
        })
        .sum();
    assert!(
        found(
            &env,
            "the",
            Bounds {
                read_max_bytes: bytes,
                ..all
            }
        )
        .2
    );
    assert!(
        !found(
            &env,
            "the",
            Bounds {
                read_max_bytes: bytes - 1,
                ..all
            }
        )
        .2
    );
    // Results: every run holds "the"; at most the bound is returned.
    let every = found(&env, "the", all).0.len();
    assert_eq!(every, runs.len(), "every run's answer holds \"the\"");
    assert!(every <= SEARCH_RESULTS_MAX);
    let (hits, _, complete) = found(
        &env,
        "the",
        Bounds {
            results_max: every,
            ..all
        },
    );
    assert_eq!((hits.len(), complete), (every, true));
    let (hits, _, complete) = found(
        &env,
        "the",
        Bounds {
            results_max: every - 1,
            ..all
        },
    );
    assert_eq!((hits.len(), complete), (every - 1, false));
}

/// A run whose session file is gone is searched in its kept copy (`runread keep`), and found no
/// more once the keep is dropped.
#[test]
fn a_kept_run_whose_file_is_gone_is_still_found_and_not_once_dropped() {
    let env = Env::new();
    let runs = runs(&env);
    let word = only_in(&runs, 1);
    let run = &runs[1].0;
    let owner = env.owner();
    assert!(owner.keep_run(run, 0).unwrap().is_kept());
    std::fs::remove_file(&run.session_path).unwrap();
    let (hits, _, _) = found(&env, &word, Bounds::default());
    assert_eq!(
        hits,
        std::slice::from_ref(&run.target.run_id),
        "read from the kept copy"
    );
    assert!(owner.drop_kept(run, 0).unwrap());
    assert!(found(&env, &word, Bounds::default()).0.is_empty());
}
