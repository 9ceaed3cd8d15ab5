//! `runread grant` as the owner types it: the console's defaults, everything missing said at
//! once, the feature names in its help, a typo of a reader's name refused rather than made a new
//! client, and a warning when the run has no answer to read (issue 48, items 3 and 9).

use crate::support::{json_of, ok, runread};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// A home with the fixture `name`'s runs indexed, and the first run's id.
fn home_with(env: &runread_testkit::Env, name: &str) -> (std::path::PathBuf, String) {
    env.place(name, Duration::from_secs(60));
    let home = env.dir.path().join("home");
    ok(runread(
        &home,
        &["workspace", "add", env.workspace.to_str().unwrap()],
    ));
    ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    let runs = json_of(&home, &["runs", "--json"]);
    let run = runs[0]["target"]["runId"].as_str().unwrap().to_owned();
    (home, run)
}

fn reader_names(home: &Path) -> Vec<String> {
    let readers = json_of(home, &["reader", "list", "--json"]);
    readers
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_typo_of_a_readers_name_is_refused_with_the_close_names_and_made_only_on_purpose() {
    let env = runread_testkit::Env::new();
    let (home, run) = home_with(&env, "sample");
    ok(runread(&home, &["reader", "add", "claude-code"]));

    for typo in ["claude-cod", "Claude-Code", "claude"] {
        let out = runread(&home, &["grant", "--run", &run, "--to", typo]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{typo}: {err}");
        assert!(out.stdout.is_empty(), "{typo}: nothing printed as made");
        assert!(
            err.contains("did you mean \"claude-code\"") && err.contains("--new-reader"),
            "{typo}: {err}"
        );
    }
    assert_eq!(reader_names(&home), ["claude-code"], "no reader made");
    assert_eq!(
        json_of(&home, &["grant", "list", "--json"]),
        Value::Array(vec![])
    );

    let made = json_of(
        &home,
        &[
            "grant",
            "--run",
            &run,
            "--to",
            "claude-cod",
            "--new-reader",
            "--json",
        ],
    );
    assert_eq!(made["newReader"], true);
    assert!(made["key"].is_string());
    // A name close to no reader's still makes one, as scripts and the demo expect, and says so.
    let fresh = ok(runread(&home, &["grant", "--run", &run, "--to", "ci-bot"]));
    assert!(fresh.contains("\"ci-bot\" is a new reader"), "{fresh}");
    let mut names = reader_names(&home);
    names.sort();
    assert_eq!(names, ["ci-bot", "claude-cod", "claude-code"]);
}

#[test]
fn a_grant_takes_the_consoles_defaults_final_answer_and_status_for_an_hour() {
    let env = runread_testkit::Env::new();
    let (home, run) = home_with(&env, "sample");
    let before = runread_core::timefmt::now_ms();
    let g = json_of(&home, &["grant", "--run", &run, "--to", "ci-bot", "--json"]);
    let after = runread_core::timefmt::now_ms();
    assert_eq!(g["features"], serde_json::json!(["final_answer", "status"]));
    let expires = runread_core::timefmt::parse_rfc3339(g["expiresAt"].as_str().unwrap()).unwrap();
    // RFC 3339 in --json keeps whole seconds at least: within the second around an hour.
    assert!(
        expires >= before + 3_600_000 - 1_000 && expires <= after + 3_600_000,
        "{g}"
    );
}

#[test]
fn everything_a_grant_misses_is_said_in_one_message() {
    let env = runread_testkit::Env::new();
    let (home, run) = home_with(&env, "sample");
    let out = runread(&home, &["grant"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--run") && err.contains("--to"), "{err}");
    let out = runread(&home, &["grant", "--run", &run]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--to") && !err.contains("--run RUN_ID"),
        "{err}"
    );
}

#[test]
fn grant_help_names_every_feature_and_an_unknown_one_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let help = ok(runread(dir.path(), &["grant", "--help"]));
    for f in runread_core::Feature::ALL {
        assert!(help.contains(f.as_str()), "{} missing: {help}", f.as_str());
        assert!(help.contains(f.exposes()), "{help}");
    }
    let out = runread(
        dir.path(),
        &["grant", "--run", "x", "--to", "y", "--features", "answers"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("final_answer"),
        "the possible values are named: {err}"
    );
}

#[test]
fn granting_the_answer_of_a_run_that_has_none_warns_and_still_grants() {
    let env = runread_testkit::Env::new();
    let (home, run) = home_with(&env, "error");
    let out = runread(&home, &["grant", "--run", &run, "--to", "ci-bot", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("no readable final answer"), "{err}");
    // The status alone is no promise of an answer: no warning.
    let out = runread(
        &home,
        &[
            "grant",
            "--run",
            &run,
            "--to",
            "ci-bot",
            "--features",
            "status",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("warning"), "{err}");
    // A run with an answer: no warning.
    let env = runread_testkit::Env::new();
    let (home, run) = home_with(&env, "sample");
    let out = runread(&home, &["grant", "--run", &run, "--to", "ci-bot"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("warning"), "{err}");
}
