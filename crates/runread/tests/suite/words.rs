//! What the CLI says, as a person reads it: messages that name the real problem, one format for
//! times and sizes, plurals right (issue 48, item 10).

use crate::support::{json_of, runread};
use std::process::Command;

#[test]
fn a_home_that_is_a_file_is_named_as_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("home");
    std::fs::write(&file, "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(&file)
        .arg("runs")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is not a directory"), "{err}");
    assert!(!err.contains("readable by other users"), "{err}");
}

/// The README's first screen is what a person reads before scrolling.
const README_FIRST_SCREEN_LINES: usize = 30;

/// The README's length: long enough to start, short enough to read (issue 48, item 10).
const README_LINES_MAX: usize = 250;

#[test]
fn the_readmes_first_screen_says_what_runread_does_and_how_to_start_and_check_it() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    assert!(
        lines.len() <= README_LINES_MAX,
        "README.md has {} lines",
        lines.len()
    );
    let first = lines
        .iter()
        .take(README_FIRST_SCREEN_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    for wanted in [
        "cargo run --release -- demo",
        "scripts/test",
        "cargo install --locked --path crates/runread",
        "runread workspace add",
        "runread serve --watch",
        "runread reader add",
        "runread status",
    ] {
        assert!(first.contains(wanted), "{wanted} not on the first screen");
    }
    // Protocol and gate vocabulary lives in docs/, not on the first screen.
    for jargon in [
        "LISTEN",
        "NOTIFY",
        "2025-11-25",
        "execution gate",
        "Streamable HTTP",
    ] {
        assert!(!first.contains(jargon), "{jargon} on the first screen");
    }
}

#[test]
fn ingest_grant_revoke_and_reader_remove_print_json_when_asked() {
    let env = runread_testkit::Env::new();
    env.place("sample", std::time::Duration::from_secs(60));
    let home = env.dir.path().join("home");
    runread(
        &home,
        &["workspace", "add", env.workspace.to_str().unwrap()],
    );
    let sessions = env.sessions.to_str().unwrap();
    let ingested = json_of(&home, &["ingest", "--pi", sessions, "--json"]);
    assert_eq!(ingested["files"], 1);
    assert_eq!(ingested["newOrReread"], 1);
    assert!(ingested["runs"].as_u64().unwrap() >= 1, "{ingested}");
    assert!(ingested["bytesRead"].as_u64().unwrap() > 0, "{ingested}");
    let runs = json_of(&home, &["runs", "--json"]);
    let run = runs[0]["target"]["runId"].as_str().unwrap();
    let g = json_of(&home, &["grant", "--run", run, "--to", "ci-bot", "--json"]);
    let grant_id = g["grantId"].as_str().unwrap();
    let revoked = json_of(&home, &["grant", "revoke", grant_id, "--json"]);
    assert_eq!(
        revoked,
        serde_json::json!({"revoked": true, "grantId": grant_id})
    );
    let removed = json_of(&home, &["reader", "remove", "ci-bot", "--json"]);
    assert_eq!(removed["removed"], true);
    assert_eq!(removed["name"], "ci-bot");
    assert_eq!(removed["readerId"], g["readerId"]);
}

#[test]
fn counts_and_sizes_are_written_for_a_person() {
    let env = runread_testkit::Env::new();
    env.place("sample", std::time::Duration::from_secs(60));
    let home = env.dir.path().join("home");
    runread(
        &home,
        &["workspace", "add", env.workspace.to_str().unwrap()],
    );
    let out = runread(&home, &["ingest", "--pi", env.sessions.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let summary = text.lines().last().unwrap();
    assert!(summary.starts_with("1 file: "), "{summary}");
    assert!(summary.contains("KiB read"), "{summary}");
    assert!(!summary.contains(" bytes"), "{summary}");
    assert!(!summary.contains("1 runs"), "{summary}");
}

/// docs/agents.md states the versions the tests cover as a table; `versionTested` follows
/// `Agent::tested_versions`, and the agent suites (tests/agents/readers.py) read their expectation
/// of it from the table, so the two must say the same.
#[test]
fn the_tested_versions_table_is_agent_tested_versions() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/agents.md")).unwrap();
    for agent in runread_core::Agent::ALL {
        let (oldest, newest) = agent.tested_versions();
        let prefix = format!("| {} | ", agent.product());
        let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with(&prefix)).collect();
        assert_eq!(rows.len(), 1, "{}: rows {rows:?}", agent.product());
        let cells: Vec<&str> = rows[0]
            .trim_matches('|')
            .split(" | ")
            .map(str::trim)
            .collect();
        // a cell is the version, then what it is (Pi's package) after a space
        let version = |cell: &str| cell.split(' ').next().unwrap_or("").to_string();
        assert_eq!(
            cells.iter().skip(1).map(|c| version(c)).collect::<Vec<_>>(),
            vec![oldest.to_string(), newest.to_string()],
            "{}",
            rows[0]
        );
    }
}
