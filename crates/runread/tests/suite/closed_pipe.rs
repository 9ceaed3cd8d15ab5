//! Every command that prints, with its reader gone before it writes (`runread … | head -c1` on a
//! long output): a closed pipe ends a Unix filter quietly, never with a panic (exit 101 and a
//! backtrace). Each command runs on a home with something to list: a workspace, ingested
//! sessions, a reader, a grant, a known secret.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs `runread --home HOME ARGS` with its standard output closed before it writes; its exit
/// status and standard error.
fn with_stdout_closed(home: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn runread(home: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn no_command_panics_when_its_reader_is_gone() {
    let env = runread_testkit::Env::new();
    env.place("multi-run", Duration::from_secs(60));
    let home = env.dir.path().join("home");
    let (ws, sessions) = (
        env.workspace.to_str().unwrap(),
        env.sessions.to_str().unwrap(),
    );
    runread(&home, &["workspace", "add", ws]);
    runread(&home, &["ingest", "--pi", sessions]);
    let runs: serde_json::Value =
        serde_json::from_str(&runread(&home, &["runs", "--json"])).unwrap();
    let run = runs[0]["target"]["runId"].as_str().unwrap().to_owned();
    runread(&home, &["reader", "add", "assistant"]);
    runread(
        &home,
        &[
            "grant",
            "--run",
            &run,
            "--features",
            "final_answer",
            "--expires",
            "1h",
            "--to",
            "assistant",
        ],
    );
    let commands: &[&[&str]] = &[
        &["--help"],
        &["runs"],
        &["runs", "--json"],
        &["runs", "--search", "the"],
        &["show", &run],
        &["show", &run, "--history"],
        &["reader", "list"],
        &["reader", "list", "--json"],
        &["reader", "add", "second"],
        &["grant", "list"],
        &["grant", "list", "--json"],
        &["snapshots"],
        &["snapshots", "--json"],
        &["status"],
        &["status", "--json"],
        &["audit"],
        &["audit", "--json"],
        &["audit", "retention"],
        &["audit", "verify"],
        &["keys", "list"],
        &["secret", "list"],
        &["ingest", "--pi", sessions],
        &["workspace", "add", ws],
        &["workspace", "add", ws, "--json"],
        &["workspace", "list"],
        &["workspace", "list", "--json"],
        &["ingest", "--pi", sessions, "--json"],
        &["grant", "--run", &run, "--to", "assistant"],
        &["grant", "--run", &run, "--to", "assistant", "--json"],
        &["grant", "--help"],
        &["completions", "bash"],
        &["completions", "zsh"],
        &["man"],
    ];
    for args in commands {
        let (code, err) = with_stdout_closed(&home, args);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_ne!(code, Some(101), "{args:?}: {err}");
        assert!(code.is_some(), "{args:?}: ended by a signal");
    }
}
