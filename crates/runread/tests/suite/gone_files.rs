//! `runread runs` and `runread show` say what happened to a run's session file: deleted (the
//! agent's cleanup) is `file gone, not kept`, or `file gone, sealed for sharing` when a share's
//! copy is read instead; a file that is there but rewritten stays "changed since ingest".

use std::time::Duration;

use serde_json::Value;

use crate::support::{json_of, ok, runread};

const SETTLED: Duration = Duration::from_secs(60);

/// A home with Pi's `sample` and Claude Code's `tool-then-answer` ingested through the CLI.
fn home() -> (
    runread_testkit::Env,
    std::path::PathBuf,
    Vec<std::path::PathBuf>,
) {
    let env = runread_testkit::Env::new();
    let pi = env.place("sample", SETTLED);
    let claude = env.place_claude("tool-then-answer", SETTLED);
    ok(runread(
        env.dir.path(),
        &[
            "ingest",
            "--pi",
            env.sessions.to_str().unwrap(),
            "--claude",
            env.claude_projects.to_str().unwrap(),
        ],
    ));
    (env, pi, claude)
}

/// The runs `runs --json` lists, each with its agent.
fn listed(home: &std::path::Path) -> Vec<Value> {
    json_of(home, &["runs", "--json"])
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_deleted_session_file_is_listed_and_shown_gone_not_kept_and_a_rewritten_one_changed() {
    let (env, pi, claude) = home();
    let home = env.dir.path();
    assert!(listed(home).iter().all(|r| r["sessionFile"] == "there"));

    std::fs::remove_file(&pi).unwrap();
    for f in &claude {
        let bytes: Vec<u8> = std::fs::read(f)
            .unwrap()
            .into_iter()
            .map(|b| if b == b'e' { b'E' } else { b })
            .collect();
        std::fs::write(f, bytes).unwrap();
    }
    let runs = listed(home);
    for r in &runs {
        let want = if r["agent"] == "pi" {
            "gone_not_kept"
        } else {
            "changed"
        };
        assert_eq!(r["sessionFile"], want, "{r}");
        assert_eq!(r["prompt"], Value::Null, "{r}");
        assert_eq!(r["answerState"], "unknown", "{r}");
    }
    let table = ok(runread(home, &["runs"]));
    assert!(table.contains("(file gone, not kept)"), "{table}");
    assert!(
        table.contains("(session file changed since ingest)"),
        "{table}"
    );

    let pi_run = runs.iter().find(|r| r["agent"] == "pi").unwrap();
    let id = pi_run["target"]["runId"].as_str().unwrap();
    let session = pi_run["target"]["sessionId"].as_str().unwrap();
    let shown = ok(runread(home, &["show", id, "--session", session]));
    assert!(shown.contains("\nfile     gone, not kept\n"), "{shown}");
    assert!(shown.contains("prompt   (file gone, not kept)"), "{shown}");
    let json = json_of(home, &["show", id, "--session", session, "--json"]);
    assert_eq!(json["sessionFile"], "gone_not_kept");
}

#[test]
fn a_shared_run_whose_file_is_deleted_is_shown_sealed_for_sharing() {
    let (env, _, claude) = home();
    let home = env.dir.path();
    let run = listed(home)
        .into_iter()
        .find(|r| r["agent"] == "claude" && r["answerState"] == "available")
        .unwrap();
    let id = run["target"]["runId"].as_str().unwrap();
    let session = run["target"]["sessionId"].as_str().unwrap();
    ok(runread(
        home,
        &[
            "grant",
            "--run",
            id,
            "--session",
            session,
            "--to",
            "claude-code",
            "--features",
            "final_answer,metadata",
        ],
    ));
    for f in &claude {
        std::fs::remove_file(f).unwrap();
    }
    let listed = listed(home);
    let after = listed
        .iter()
        .find(|r| r["target"] == run["target"])
        .unwrap();
    assert_eq!(after["sessionFile"], "gone_sealed_for_sharing", "{after}");
    assert_eq!(after["prompt"], run["prompt"], "read from the sealed copy");
    assert_eq!(after["answerState"], "available");
    let table = ok(runread(home, &["runs"]));
    assert!(table.contains("file gone, sealed for sharing"), "{table}");
    let shown = ok(runread(home, &["show", id, "--session", session]));
    assert!(
        shown.contains("\nfile     gone, sealed for sharing\n"),
        "{shown}"
    );
    assert!(shown.contains("evidence snapshot"), "{shown}");
    assert!(
        shown.contains("\nsealed   for sharing: a copy of its evidence ("),
        "{shown}"
    );
}
