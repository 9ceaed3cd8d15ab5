//! Workspaces as the owner keeps them, and what their grants say: a registration that changes
//! nothing changes no revision, a removed workspace ends its grants and names them, a grant that
//! cannot be read is listed stale with why everywhere grants are listed, and `runread run`
//! registers a workspace only for an agent it is about to start, never the home directory.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use crate::support::{ok, runread};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

fn json(home: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(runread(home, args))).unwrap()
}

/// A home with the workspace `proj` registered and its Pi session ingested, and one of its runs
/// granted to the reader `assistant`: (env, home, the session file, the grant's id).
fn granted() -> (
    runread_testkit::Env,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
) {
    let env = runread_testkit::Env::new();
    let session = env.place("multi-run", Duration::from_secs(60));
    let home = env.dir.path().join("cli-home");
    let ws = env.workspace.to_str().unwrap();
    ok(runread(&home, &["workspace", "add", ws, "--name", "proj"]));
    ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    let runs = json(&home, &["runs", "--json"]);
    let run_id = runs[0]["target"]["runId"].as_str().unwrap().to_owned();
    let grant = json(
        &home,
        &[
            "grant",
            "--run",
            &run_id,
            "--features",
            "final_answer",
            "--expires",
            "1h",
            "--to",
            "assistant",
            "--json",
        ],
    );
    let id = grant["grantId"].as_str().unwrap().to_owned();
    (env, home, session, id)
}

/// The one grant `grant list --json` lists.
fn the_grant(home: &Path) -> Value {
    let listed = json(home, &["grant", "list", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    listed[0].clone()
}

#[test]
fn re_adding_a_registered_root_keeps_its_revision_and_its_grants_live() {
    let (env, home, _, id) = granted();
    let ws = env.workspace.to_str().unwrap();
    let again = ok(runread(&home, &["workspace", "add", ws, "--name", "proj"]));
    assert!(again.contains("already registered"), "{again}");
    assert!(again.contains("revision 1"), "{again}");
    let grant = the_grant(&home);
    assert_eq!(
        (grant["grantId"].as_str(), grant["state"].as_str()),
        (Some(id.as_str()), Some("live"))
    );
    // A new name renames it, and still moves nothing a grant names.
    let renamed = ok(runread(&home, &["workspace", "add", ws, "--name", "other"]));
    assert!(renamed.contains("renamed proj → other"), "{renamed}");
    assert_eq!(the_grant(&home)["state"], "live");
    let listed = json(&home, &["workspace", "list", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["name"], "other");
    assert_eq!(listed[0]["revision"], 1);
    assert_eq!(listed[0]["runs"], 3);
    assert_eq!(listed[0]["liveGrants"], 1);
    assert_eq!(listed[0]["staleGrants"], 0);
    let shown = ok(runread(&home, &["workspace", "list"]));
    assert!(shown.contains("3 runs, 1 live grant"), "{shown}");
}

#[test]
fn a_grant_whose_session_file_was_replaced_is_stale_with_why_wherever_grants_are_listed() {
    let (env, home, session, id) = granted();
    // The session file replaced by a copy of itself: a new generation, the grant's run gone.
    let copy = session.with_extension("copy");
    std::fs::copy(&session, &copy).unwrap();
    std::fs::rename(&copy, &session).unwrap();
    runread_testkit::set_age(&session, Duration::from_secs(60));
    ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));

    let grant = the_grant(&home);
    assert_eq!(grant["state"], "stale", "{grant}");
    assert_eq!(grant["staleReason"], "session_changed", "{grant}");
    let listed = ok(runread(&home, &["grant", "list"]));
    assert!(
        listed.contains("stale: its session file was rewritten"),
        "{listed}"
    );

    let readers = json(&home, &["reader", "list", "--json"]);
    assert_eq!(readers[0]["liveGrants"], 0, "{readers}");
    assert_eq!(readers[0]["staleGrants"], 1, "{readers}");
    let shown = ok(runread(&home, &["reader", "list"]));
    assert!(shown.contains("a stale grant cannot be read"), "{shown}");

    let kept = json(&home, &["snapshots", "--json"]);
    let holder = &kept["snapshots"][0]["grants"][0];
    assert_eq!(holder["grantId"].as_str(), Some(id.as_str()), "{kept}");
    assert_eq!(holder["state"], "stale", "{kept}");
    assert_eq!(holder["staleReason"], "session_changed", "{kept}");
    let shown = ok(runread(&home, &["snapshots"]));
    assert!(
        shown.contains("assistant (stale: session_changed)"),
        "{shown}"
    );

    // The run, current again in its new generation, shows its old grant stale.
    let run_id = the_grant(&home)["target"]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = json(&home, &["show", &run_id, "--json"]);
    assert_eq!(shown["grants"][0]["state"], "stale", "{shown}");
    assert_eq!(
        shown["grants"][0]["staleReason"], "session_changed",
        "{shown}"
    );
    let shown = ok(runread(&home, &["show", &run_id]));
    assert!(
        shown.contains("stale: its session file was rewritten"),
        "{shown}"
    );

    let shown = ok(runread(&home, &["workspace", "list"]));
    assert!(
        shown.contains("3 runs, 0 live grants, 1 stale grant (cannot be read)"),
        "{shown}"
    );
    let ws = json(&home, &["workspace", "list", "--json"]);
    assert_eq!(
        (ws[0]["liveGrants"].as_u64(), ws[0]["staleGrants"].as_u64()),
        (Some(0), Some(1))
    );
}

#[test]
fn removing_a_workspace_ends_its_grants_names_them_and_indexes_it_no_more() {
    let (env, home, _, id) = granted();
    let removed = json(&home, &["workspace", "remove", "proj", "--json"]);
    assert_eq!(removed["name"], "proj", "{removed}");
    assert_eq!(removed["endedGrants"], serde_json::json!([id]), "{removed}");
    assert_eq!(the_grant(&home)["state"], "revoked");
    assert_eq!(
        json(&home, &["workspace", "list", "--json"]),
        serde_json::json!([])
    );
    assert!(ok(runread(&home, &["workspace", "list"])).contains("no workspace registered"));
    // Its runs are listed no more, and ingest indexes nothing of it.
    assert_eq!(json(&home, &["runs", "--json"]), serde_json::json!([]));
    let again = ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    assert_eq!(
        json(&home, &["runs", "--json"]),
        serde_json::json!([]),
        "{again}"
    );
    // The run's last grant ended: its snapshot went with it.
    assert_eq!(
        json(&home, &["snapshots", "--json"])["snapshots"],
        serde_json::json!([])
    );
    let readers = json(&home, &["reader", "list", "--json"]);
    assert_eq!(
        (
            readers[0]["liveGrants"].as_u64(),
            readers[0]["staleGrants"].as_u64()
        ),
        (Some(0), Some(0))
    );
    // Gone: removing it again finds nothing, by name or by root.
    let again = runread(&home, &["workspace", "remove", "proj"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("no workspace \"proj\""));

    // Registered again and its root named by path: removed again, in words, with no grant live.
    let ws = env.workspace.to_str().unwrap();
    let back = ok(runread(&home, &["workspace", "add", ws, "--name", "proj"]));
    assert!(back.contains("stay ended"), "{back}");
    let said = ok(runread(&home, &["workspace", "remove", ws]));
    assert!(said.contains("removed workspace proj"), "{said}");
    assert!(said.contains("no grant in it was live"), "{said}");
}

#[test]
fn run_of_a_command_that_is_no_agent_registers_no_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let here = dir.path().join("project");
    std::fs::create_dir_all(&here).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(&home)
        .args(["run", "--", "ls"])
        .current_dir(&here)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not an agent runread knows"), "{err}");
    assert!(!err.contains("workspace"), "{err}");
    assert_eq!(
        json(&home, &["workspace", "list", "--json"]),
        serde_json::json!([])
    );
}

/// A program that answers `--version` as Pi does (its bare version, on stderr): runread takes it
/// for Pi without starting it for anything else.
fn pi_look_alike(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let shim = dir.join("pi");
    std::fs::write(&shim, "#!/bin/sh\necho 0.73.1 >&2\n").unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    shim
}

#[test]
fn run_from_the_home_directory_registers_it_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let user_home = std::fs::canonicalize(dir.path()).unwrap();
    let home = user_home.join(".runread");
    let pi = pi_look_alike(&user_home);
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_runread"))
            .env("HOME", &user_home)
            .arg("--home")
            .arg(&home)
            .arg("run")
            .args(extra)
            .arg("--")
            .arg(&pi)
            .args(["-p", "hello"])
            .current_dir(&user_home)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is your home directory"), "{err}");
    assert!(err.contains("--workspace-here"), "{err}");
    assert!(err.contains("runread workspace add"), "{err}");
    assert!(!err.contains("registered workspace"), "{err}");
    assert_eq!(
        json(&home, &["workspace", "list", "--json"]),
        serde_json::json!([])
    );

    // Asked: registered, and said so.
    let out = run(&["--workspace-here"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("registered workspace"), "{err}");
    let listed = json(&home, &["workspace", "list", "--json"]);
    assert_eq!(listed[0]["path"].as_str(), user_home.to_str(), "{listed}");
}
