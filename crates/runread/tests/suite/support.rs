//! What the CLI suites share: runread run on a home as a user runs it, and its output read.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The built `runread` with `--home HOME` and `args`.
pub fn runread(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .expect("run runread")
}

/// The standard output of a command that must have succeeded (its stderr shown if not).
pub fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// `runread ARGS` on `home`, which must succeed, its standard output as JSON.
pub fn json_of(home: &Path, args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(runread(home, args))).expect("JSON")
}

/// `runread --home HOME ARGS` with `HOME` (where agents keep their folders and settings) set to
/// `user` and no agent's or store's variable set, as a user on a fresh machine runs it.
pub fn runread_in(home: &Path, user: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env("HOME", user)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("RUNREAD_STORE")
        .stdin(Stdio::null())
        .output()
        .expect("run runread")
}
