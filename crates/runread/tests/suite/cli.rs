//! The owner's CLI, as a user runs it: workspace, ingest, runs, grant (once), list, revoke, demo.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use crate::support::{ok, runread};
use runread_store::prelude::*;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use runread_testkit::pi_versions;

pi_versions! {
#[test]
fn owner_flow_from_workspace_to_revoked_grant(v) {
    let env = runread_testkit::Env::new();
    env.place(&v.fixture("multi-run"), Duration::from_secs(60));
    let home = env.dir.path().join("cli-home");
    let ws = env.workspace.to_str().unwrap();
    assert!(ok(runread(&home, &["workspace", "add", ws, "--name", "proj"])).contains("revision 1"));
    // No grant exists by default.
    assert_eq!(
        ok(runread(&home, &["grant", "list", "--json"])).trim(),
        "[]"
    );
    let out = ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    assert!(out.contains("3 runs"), "{out}");
    let again = ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    assert!(again.contains("1 unchanged"), "{again}");

    let runs: Vec<Value> = serde_json::from_str(&ok(runread(&home, &["runs", "--json"]))).unwrap();
    assert_eq!(runs.len(), 3);
    assert!(
        runs.iter()
            .all(|r| r["answerState"] == "available" && r["status"] == "completed")
    );
    let run_id = runs[0]["target"]["runId"].as_str().unwrap();

    let grant: Value = serde_json::from_str(&ok(runread(
        &home,
        &[
            "grant",
            "--run",
            run_id,
            "--features",
            "final_answer",
            "--expires",
            "15m",
            "--to",
            "assistant",
            "--json",
        ],
    )))
    .unwrap();
    let key = grant["key"].as_str().unwrap();
    assert!(runread_core::key::is_well_formed(key));
    assert_eq!(grant["target"], runs[0]["target"]);
    assert!(grant["url"].as_str().unwrap().ends_with("/mcp"));
    assert!(grant["expiresAt"].as_str().unwrap().ends_with('Z'));
    // The config reads the key from the environment; only the literal one holds it.
    assert_eq!(
        grant["clientConfig"]["mcpServers"]["runread"]["headers"]["x-runread-key"],
        "${RUNREAD_KEY}"
    );
    assert_eq!(
        grant["clientConfigLiteral"]["mcpServers"]["runread"]["headers"]["x-runread-key"],
        key
    );
    let id = grant["grantId"].as_str().unwrap();

    let listed = ok(runread(&home, &["grant", "list", "--json"]));
    assert!(!listed.contains(key), "the key is shown once, never listed");
    let listed: Vec<Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["state"], "live");
    assert!(ok(runread(&home, &["grant", "revoke", id])).contains("revoked"));
    let listed: Vec<Value> =
        serde_json::from_str(&ok(runread(&home, &["grant", "list", "--json"]))).unwrap();
    assert_eq!(listed[0]["state"], "revoked");
    assert!(!runread(&home, &["grant", "revoke", id]).status.success());
    // The database holds the key's hash, never the key.
    let db = std::fs::read(home.join("runread.db")).unwrap();
    assert!(!db.windows(key.len()).any(|w| w == key.as_bytes()));
}
}

#[test]
fn grant_refuses_bad_input_with_a_clear_message() {
    let env = runread_testkit::Env::new();
    let home = env.dir.path().join("cli-home");
    for (args, needle) in [
        (
            vec![
                "grant",
                "--run",
                "nope",
                "--features",
                "final_answer",
                "--expires",
                "15m",
                "--to",
                "x",
            ],
            "no current run",
        ),
        (
            vec![
                "grant",
                "--run",
                "nope",
                "--features",
                "bogus",
                "--expires",
                "15m",
                "--to",
                "x",
            ],
            // clap names the possible values (tests/suite/grant_asks.rs).
            "invalid value 'bogus' for '--features",
        ),
        (
            vec![
                "grant",
                "--run",
                "nope",
                "--features",
                "final_answer",
                "--expires",
                "soon",
                "--to",
                "x",
            ],
            "--expires",
        ),
        (
            vec![
                "grant",
                "--run",
                "nope",
                "--features",
                "final_answer",
                "--expires",
                "2001-01-01T00:00:00Z",
                "--to",
                "x",
            ],
            "past",
        ),
    ] {
        let out = runread(&home, &args);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn demo_runs_the_whole_job_and_exits_zero() {
    let home = tempfile::tempdir().unwrap();
    let out = ok(runread(home.path(), &["demo"]));
    assert!(
        out.contains("sha256 524d513f546336f1be6d43a03c64b84033497811ecea7833be4af6d115ec2b23"),
        "{out}"
    );
    assert!(out.contains("byte for byte"));
    assert!(out.contains("refused: not_granted"));
}

/// `runread secret add --name NAME` with `value` and a newline on standard input, as typed.
fn secret_add(home: &Path, name: &str, value: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(["secret", "add", "--name", name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{value}\n").as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn secrets_are_stored_sealed_and_listed_by_name_only() {
    let home = tempfile::tempdir().unwrap();
    let value = "sk-cli-test-secret-value-0001";
    let out = secret_add(home.path(), "openai", value);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains(value));
    let listed = ok(runread(home.path(), &["secret", "list"]));
    assert_eq!(listed.trim(), "openai");
    let db = std::fs::read(home.path().join("runread.db")).unwrap();
    assert!(
        !db.windows(value.len()).any(|w| w == value.as_bytes()),
        "stored sealed, never in the clear"
    );
    // Too short to be a secret: refused with a clear message.
    let out = secret_add(home.path(), "short", "abc");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("8..=256 bytes"));
}

#[test]
fn stdio_transport_serves_the_same_admission_with_a_key_file() {
    use std::io::{BufRead, BufReader, Write};
    let env = runread_testkit::Env::new();
    env.place("sample", Duration::from_secs(60));
    let home = env.dir.path();
    ok(runread(
        home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    let runs: Vec<Value> = serde_json::from_str(&ok(runread(home, &["runs", "--json"]))).unwrap();
    let run_id = runs
        .iter()
        .max_by_key(|r| r["finalBytes"].as_u64())
        .unwrap()["target"]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    let grant: Value = serde_json::from_str(&ok(runread(
        home,
        &[
            "grant",
            "--run",
            &run_id,
            "--features",
            "final_answer",
            "--expires",
            "15m",
            "--to",
            "stdio",
            "--json",
        ],
    )))
    .unwrap();
    let key_file = home.join("key");
    std::fs::write(&key_file, grant["key"].as_str().unwrap()).unwrap();
    // A key file others can read is refused.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = runread(
        home,
        &["serve", "--stdio", "--key-file", key_file.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("chmod 600"));
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(["serve", "--stdio", "--key-file", key_file.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;
    let target = grant["target"].to_string();
    let lines = [
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{meta}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{meta}}}}}"#),
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"read_final_answer","arguments":{{"target":{target}}},{meta}}}}}"#
        ),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for l in &lines {
        writeln!(stdin, "{l}").unwrap();
    }
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut replies = Vec::new();
    for _ in 0..3 {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        replies.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    drop(stdin);
    let _ = child.wait();
    assert_eq!(
        replies[0]["result"]["supportedVersions"],
        serde_json::json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    let tools: Vec<&str> = replies[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Every tool, whatever the key holds: the grant decides each call.
    assert_eq!(
        tools,
        [
            "list_granted_targets",
            "read_final_answer",
            "get_run",
            "wait_for_run",
            "read_history",
            "read_work_state",
            "read_target_metadata",
            "list_artifacts",
            "read_artifact",
            "request_access",
            "wait_for_access"
        ]
    );
    let r = &replies[2]["result"];
    assert_eq!(r["structuredContent"]["readable"], true);
    assert_eq!(r["structuredContent"]["trust"], "untrusted_data");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("<tool_result tool=\"read_final_answer\" trust=\"untrusted\">")
    );

    // The dated era over stdio: the `initialize` handshake, then the same call and label.
    let dated = |protocol: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_runread"))
            .arg("--home")
            .arg(home)
            .args(["serve", "--stdio", "--key-file", key_file.to_str().unwrap()])
            .args(["--protocol", protocol])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"codex-like","version":"1"}}}}}}"#
        )
        .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let init: Value = serde_json::from_str(&line).unwrap();
        let mut call = None;
        if init.get("result").is_some() {
            writeln!(
                stdin,
                r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
            )
            .unwrap();
            writeln!(
                stdin,
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"read_final_answer","arguments":{{"target":{target}}}}}}}"#
            )
            .unwrap();
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            call = Some(serde_json::from_str::<Value>(&line).unwrap());
        }
        drop(stdin);
        let _ = child.wait();
        (init, call)
    };
    let (init, call) = dated("all");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    let call = call.unwrap();
    let sc = &call["result"]["structuredContent"];
    assert_eq!(sc["readable"], true, "{call}");
    assert!(
        sc.to_string().starts_with(
            r#"{"trust":"untrusted_data","instructions":false,"tool":"read_final_answer","#
        ),
        "{sc}"
    );
    let (init, call) = dated("modern");
    assert!(
        init.get("result").is_none() && init["error"]["code"].is_i64(),
        "{init}"
    );
    assert!(call.is_none());

    // A revoked key is refused on stdio exactly as on HTTP.
    ok(runread(
        home,
        &["grant", "revoke", grant["grantId"].as_str().unwrap()],
    ));
    let out = runread(
        home,
        &["serve", "--stdio", "--key-file", key_file.to_str().unwrap()],
    );
    assert!(!out.status.success() || String::from_utf8_lossy(&out.stdout).is_empty());
}

/// A user with Claude Code sessions in the default place (`~/.claude/projects`, or
/// `$CLAUDE_CONFIG_DIR/projects`) runs `runread ingest` with no flag, sees the runs with their
/// agent, and grants one by a prefix of its uuid.
#[test]
fn claude_code_sessions_in_the_default_place_are_ingested_listed_and_granted_by_prefix() {
    let env = runread_testkit::Env::new();
    env.place_claude("continue-unicode", Duration::from_secs(60));
    let home = env.dir.path().join("cli-home");
    let user_home = env.dir.path().join("user");
    std::fs::create_dir_all(user_home.join(".claude")).unwrap();
    std::fs::rename(
        &env.claude_projects,
        user_home.join(".claude").join("projects"),
    )
    .unwrap();
    let run = |args: &[&str], config_dir: Option<&Path>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_runread"));
        c.arg("--home")
            .arg(&home)
            .args(args)
            .env("HOME", &user_home);
        c.env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("PI_CODING_AGENT_DIR");
        if let Some(d) = config_dir {
            c.env("CLAUDE_CONFIG_DIR", d);
        }
        c.output().expect("run runread")
    };
    let ws = env.workspace.to_str().unwrap();
    ok(run(&["workspace", "add", ws], None));
    let out = ok(run(&["ingest"], None));
    assert!(out.contains("2 runs"), "{out}");
    let runs: Vec<Value> = serde_json::from_str(&ok(run(&["runs", "--json"], None))).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(
        runs.iter()
            .all(|r| r["agent"] == "claude" && r["answerState"] == "available")
    );
    // Each run's tokens: `usage` in the JSON, a column of the table (in/out, prompt tokens with
    // Claude Code's cache reads and writes).
    for r in &runs {
        assert_eq!(r["usage"]["source"], "assistant_messages", "{r}");
        assert!(r["usage"]["total"]["output"].as_u64().unwrap() > 0, "{r}");
    }
    let table = ok(run(&["runs"], None));
    assert!(table.contains("claude"), "{table}");
    assert!(table.contains("TOKENS IN/OUT"), "{table}");
    let t = &runs[0]["usage"]["total"];
    let prompt = ["input", "cacheRead", "cacheWrite"]
        .iter()
        .map(|k| t[*k].as_u64().unwrap())
        .sum::<u64>();
    assert!(
        table.contains(&format!("{prompt}/{}", t["output"])),
        "{table}"
    );
    let full = runs[1]["target"]["runId"].as_str().unwrap();
    assert_eq!(full.len(), 36);
    let grant: Value = serde_json::from_str(&ok(run(
        &[
            "grant",
            "--run",
            &full[..8],
            "--features",
            "final_answer",
            "--expires",
            "15m",
            "--to",
            "claude",
            "--json",
        ],
        None,
    )))
    .unwrap();
    assert_eq!(grant["target"]["runId"], full);
    // A prefix too short to be a choice is not taken.
    let short = run(
        &[
            "grant",
            "--run",
            &full[..3],
            "--features",
            "final_answer",
            "--expires",
            "15m",
            "--to",
            "x",
        ],
        None,
    );
    assert!(!short.status.success());
    // $CLAUDE_CONFIG_DIR names the place instead of ~/.claude (the session moved with it: a
    // new generation, read from there).
    let moved = env.dir.path().join("claude-config");
    std::fs::rename(user_home.join(".claude"), &moved).unwrap();
    let out = ok(run(&["ingest"], Some(&moved)));
    assert!(out.contains("claude-config/projects/"), "{out}");
    assert!(out.contains("2 runs"), "{out}");
}

#[test]
fn output_to_a_reader_that_went_away_ends_quietly() {
    // `runread runs | head -1` on a long listing: the reader closes the pipe first. A closed pipe
    // ends a Unix filter quietly; it must not be a panic (exit 101 and a backtrace).
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home.path())
        .arg("runs")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn codex_sessions_in_the_default_place_are_listed_by_prefixes_that_grant() {
    let env = runread_testkit::Env::new();
    // Three turns of one thread, a resume and a fork: time-ordered turn ids that share their
    // first characters.
    env.place_codex("resume-fork", Duration::from_secs(60));
    let home = env.dir.path().join("cli-home");
    let user_home = env.dir.path().join("user");
    std::fs::create_dir_all(user_home.join(".codex")).unwrap();
    std::fs::rename(
        &env.codex_sessions,
        user_home.join(".codex").join("sessions"),
    )
    .unwrap();
    let run = |args: &[&str], codex_home: Option<&Path>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_runread"));
        c.arg("--home")
            .arg(&home)
            .args(args)
            .env("HOME", &user_home)
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("PI_CODING_AGENT_DIR");
        if let Some(d) = codex_home {
            c.env("CODEX_HOME", d);
        }
        c.output().expect("run runread")
    };
    ok(run(
        &["workspace", "add", env.workspace.to_str().unwrap()],
        None,
    ));
    let out = ok(run(&["ingest"], None));
    assert!(out.contains(".codex/sessions/"), "{out}");
    let runs: Vec<Value> = serde_json::from_str(&ok(run(&["runs", "--json"], None))).unwrap();
    assert!(runs.len() >= 3, "{runs:?}");
    assert!(runs.iter().all(|r| r["agent"] == "codex"));
    // Each row's RUN column grants exactly that row's run.
    let table = ok(run(&["runs"], None));
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), runs.len(), "{table}");
    for (row, listed) in rows.iter().zip(&runs) {
        let shown = row.split_whitespace().next().unwrap();
        let full = listed["target"]["runId"].as_str().unwrap();
        assert!(full.starts_with(shown) && shown.len() >= 8, "{row}");
        let out = run(
            &[
                "grant",
                "--run",
                shown,
                "--session",
                listed["target"]["sessionId"].as_str().unwrap(),
                "--features",
                "final_answer",
                "--expires",
                "15m",
                "--to",
                "x",
                "--json",
            ],
            None,
        );
        let grant: Value = serde_json::from_str(&ok(out)).unwrap();
        assert_eq!(grant["target"]["runId"], full, "{row}");
    }
    // $CODEX_HOME names the place instead of ~/.codex.
    let moved = env.dir.path().join("codex-home");
    std::fs::rename(user_home.join(".codex"), &moved).unwrap();
    let out = ok(run(&["ingest"], Some(&moved)));
    assert!(out.contains("codex-home/sessions/"), "{out}");
}

pi_versions! {
#[test]
fn runs_lists_pages_newest_first_filtered_by_agent_workspace_and_status(v) {
    let env = runread_testkit::Env::new();
    env.place(&v.fixture("multi-run"), Duration::from_secs(60));
    env.place(&v.fixture("sample"), Duration::from_secs(60));
    env.place(&v.fixture("aborted"), Duration::from_secs(60));
    let home = env.dir.path().join("cli-home");
    let ws = env.workspace.to_str().unwrap();
    ok(runread(&home, &["workspace", "add", ws, "--name", "proj"]));
    ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    let page = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["runs", "--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&ok(runread(&home, &all))).unwrap()
    };
    let every = page(&[]);
    assert!(every.len() >= 4, "{every:?}");
    let started: Vec<&str> = every
        .iter()
        .map(|r| r["startedAt"].as_str().unwrap())
        .collect();
    let mut newest_first = started.clone();
    newest_first.sort_by(|a, b| b.cmp(a));
    assert_eq!(started, newest_first, "newest first");
    // Pages of two, in order, cover the same runs.
    let mut paged = vec![];
    for offset in (0..every.len()).step_by(2) {
        paged.extend(page(&["--limit", "2", "--offset", &offset.to_string()]));
    }
    assert_eq!(paged, every);
    // The table says where the next page starts.
    let table = ok(runread(&home, &["runs", "--limit", "2"]));
    assert!(
        table.contains(&format!("runs 1–2 of {}", every.len()))
            && table.contains("next page: --offset 2"),
        "{table}"
    );
    // Filters: by agent, by workspace name or path.
    assert_eq!(page(&["--agent", "pi"]), every);
    assert!(page(&["--agent", "claude"]).is_empty());
    assert_eq!(page(&["--workspace", "proj"]), every);
    assert_eq!(page(&["--workspace", ws]), every);
    let unknown = runread(&home, &["runs", "--workspace", "nope"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no registered workspace"));
    // By status: exactly the runs of that status, in the same order.
    for status in ["completed", "failed", "cancelled", "running", "unknown"] {
        let want: Vec<Value> = every
            .iter()
            .filter(|r| r["status"] == status)
            .cloned()
            .collect();
        assert_eq!(page(&["--status", status]), want, "{status}");
    }
    assert!(
        every.iter().any(|r| r["status"] == "completed")
            && every.iter().any(|r| r["status"] != "completed"),
        "the fixtures hold completed runs and others: {every:?}"
    );
    assert!(
        !runread(&home, &["runs", "--status", "done"])
            .status
            .success()
    );
    // The page bound: RUNS_PAGE_MAX is taken, one more is refused.
    let max = runread_store::RUNS_PAGE_MAX;
    assert_eq!(page(&["--limit", &max.to_string()]), every);
    let over = runread(&home, &["runs", "--limit", &(max + 1).to_string()]);
    assert!(!over.status.success());
    assert!(String::from_utf8_lossy(&over.stderr).contains("--limit"));
}
}

/// More calls than `runread audit` once printed (the oldest 10,000, and nothing of the rest):
/// the audit shows the newest first, a page at a time; its last line counts the calls beyond
/// the page and names the next page, which continues exactly, and the filters are the store's.
#[test]
fn audit_pages_the_newest_calls_first_and_says_how_many_more() {
    use runread_testkit::records;
    /// More than the 10,000 rows `audit` stopped at.
    const CALLS: u32 = 10_050;
    let env = runread_testkit::Env::new();
    let home = env.dir.path();
    let base = runread_core::timefmt::now_ms() - 60_000;
    let target = runread_core::Target {
        instance: env.store.instance_id().into(),
        revision: 1,
        workspace_id: env.ws.id.clone(),
        session_id: "s".into(),
        generation: 1,
        run_id: "r-1".into(),
    };
    // Three calls a millisecond; start ids out of time order (ties go by start id). Grants
    // alternate; every third call names run r-1; every tenth is refused, the next one ok, the
    // rest interrupted. Written from several threads, so that the writer commits them in groups.
    let call = |i: u32| {
        let id = format!("st-{:05}", (i * 7919) % CALLS);
        let grant = ["g-a", "g-b"][(i % 2) as usize];
        let t = i.is_multiple_of(3).then(|| target.clone());
        let outcome = ["refused:invalid_cursor", "ok"]
            .get((i % 10) as usize)
            .copied();
        (
            records::start(&id, grant, t, base + i64::from(i / 3)),
            outcome,
        )
    };
    std::thread::scope(|scope| {
        for part in 0..8 {
            let (store, call) = (&env.store, &call);
            scope.spawn(move || {
                for i in (part..CALLS).step_by(8) {
                    let (rec, outcome) = call(i);
                    store.begin_call(&rec, 0).unwrap();
                    if let Some(o) = outcome {
                        let r = records::receipt(&rec.meta.start_id, o, rec.meta.created_at_ms);
                        store.append_receipt(&r).unwrap();
                    }
                }
            });
        }
    });
    // Newest first: by time, then start id.
    let mut calls: Vec<_> = (0..CALLS).map(call).collect();
    calls.sort_by(|(a, _), (b, _)| {
        (b.meta.created_at_ms, &b.meta.start_id).cmp(&(a.meta.created_at_ms, &a.meta.start_id))
    });
    let ids: Vec<&str> = calls
        .iter()
        .map(|(r, _)| r.meta.start_id.as_str())
        .collect();

    // The table: the newest call first, then a line with the rest and the next page's command.
    let table = ok(runread(home, &["audit"]));
    assert!(table.contains(ids[0]), "the newest call is shown");
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert!(
        rows[0].contains(ids[0]),
        "the newest call first: {}",
        rows[0]
    );
    assert_eq!(rows.len(), 101, "a page of 100 and its last line");
    let last = rows[100];
    let next = format!("runread audit --before {}", ids[99]);
    assert_eq!(
        last,
        format!(
            "100 calls, newest first; {} more; next page: {next}",
            CALLS - 100
        )
    );
    let args: Vec<&str> = next.split(' ').skip(1).collect();
    let second = ok(runread(home, &args));
    assert!(
        second.lines().nth(1).unwrap().contains(ids[100]),
        "{second}"
    );

    // JSON, a page of the most rows at a time: every call once, in order, each page's `more`
    // what the pages after it hold.
    let page = |extra: &[&str]| -> Value {
        let mut args = vec!["audit", "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&ok(runread(home, &args))).unwrap()
    };
    let max = runread_store::AUDIT_PAGE_MAX.to_string();
    let mut seen: Vec<String> = vec![];
    let mut before: Option<String> = None;
    loop {
        let mut extra = vec!["--limit", max.as_str()];
        if let Some(b) = &before {
            extra.extend(["--before", b.as_str()]);
        }
        let p = page(&extra);
        let rows = p["rows"].as_array().unwrap();
        assert!(rows.len() <= runread_store::AUDIT_PAGE_MAX as usize);
        seen.extend(
            rows.iter()
                .map(|r| r["startId"].as_str().unwrap().to_owned()),
        );
        assert_eq!(p["more"], u64::from(CALLS) - seen.len() as u64);
        match p["nextBefore"].as_str() {
            Some(b) => {
                assert_eq!(Some(b), seen.last().map(String::as_str));
                before = Some(b.to_owned());
            }
            None => break,
        }
    }
    assert_eq!(seen, ids, "every call once, newest first");

    // Filters, in the store: grant and outcome together (1,005 calls: a full page and 5 more).
    let want: Vec<&str> = calls
        .iter()
        .filter(|(r, o)| r.meta.grant_id == "g-a" && o.is_some_and(|o| o.starts_with("refused:")))
        .map(|(r, _)| r.meta.start_id.as_str())
        .collect();
    let refused = page(&["--grant", "g-a", "--outcome", "refused", "--limit", &max]);
    let got: Vec<&str> = refused["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["startId"].as_str().unwrap())
        .collect();
    assert_eq!(
        (got.as_slice(), refused["more"].as_u64()),
        (&want[..1000], Some(5))
    );
    let filtered = ok(runread(
        home,
        &["audit", "--grant", "g-a", "--outcome", "refused"],
    ));
    assert!(
        filtered.ends_with(&format!(
            "; {} more; next page: runread audit --before {} --grant g-a --outcome refused\n",
            want.len() - 100,
            want[99]
        )),
        "{filtered}"
    );
    let interrupted = page(&["--run", "r-1", "--outcome", "interrupted", "--limit", "1"]);
    let want = calls
        .iter()
        .filter(|(r, o)| r.meta.target.is_some() && o.is_none())
        .count();
    assert_eq!(interrupted["more"].as_u64(), Some(want as u64 - 1));
    // --since still bounds the window; the next page keeps the window it stood for.
    let recent = page(&["--since", "1h"]);
    assert_eq!(recent["more"].as_u64(), Some(u64::from(CALLS) - 100));
    let since = runread_core::timefmt::rfc3339(base + i64::from(CALLS / 3) - 10);
    let late = page(&["--since", &since]);
    // The last 10 milliseconds, three calls each.
    assert_eq!(late["rows"].as_array().unwrap().len(), 30);

    // The page bound: AUDIT_PAGE_MAX is taken, one more refused by the arguments; a cursor that
    // names no call is refused.
    let over = runread(
        home,
        &[
            "audit",
            "--limit",
            &(runread_store::AUDIT_PAGE_MAX + 1).to_string(),
        ],
    );
    assert!(!over.status.success());
    let err = String::from_utf8_lossy(&over.stderr);
    assert!(err.contains("--limit") && err.contains("1001"), "{err}");
    let unknown = runread(home, &["audit", "--before", "st-nope"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no start record"));
    assert!(
        !runread(home, &["audit", "--outcome", "fine"])
            .status
            .success()
    );
}

#[test]
fn a_key_file_is_read_up_to_its_bound_and_refused_beyond() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    // KEY_FILE_MAX_BYTES (crates/runread/src/servecmd.rs): a key and whitespace.
    const KEY_FILE_MAX_BYTES: usize = 1024;
    let key = "a".repeat(64);
    for (len, refused) in [(KEY_FILE_MAX_BYTES, false), (KEY_FILE_MAX_BYTES + 1, true)] {
        let path = dir.path().join(format!("key-{len}"));
        std::fs::write(&path, format!("{key}{}", " ".repeat(len - key.len()))).unwrap();
        // Nothing listens on port 9: a key read whole gets as far as connecting.
        let out = runread(
            &home,
            &[
                "read",
                "--url",
                "http://127.0.0.1:9/mcp",
                "--key-file",
                path.to_str().unwrap(),
                "final-answer",
            ],
        );
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.contains("not a key file"), refused, "{len}: {err}");
    }
}

/// `runread secret add --name NAME`, the value on standard input.
fn add_secret(home: &Path, name: &str, value: &str) {
    assert!(secret_add(home, name, value).status.success());
}

/// Every byte of the files in a home's store (the database and any log left beside it).
fn store_bytes(home: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(home).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("runread.db") {
            all.extend(std::fs::read(e.path()).unwrap());
        }
    }
    all
}

#[test]
fn the_store_keeps_no_prompt_text_and_runs_masks_prompts_with_the_secrets_known_now() {
    const LATE: &str = "tok-cli-added-later-0123456789ab";
    let env = runread_testkit::Env::new();
    let prompts = [
        format!("deploy with token {LATE} please"),
        format!("{}{LATE} and the rest", "x".repeat(70)),
    ];
    env.place_with_prompts(
        "multi-run",
        Duration::from_secs(60),
        &prompts,
        "not a time at all",
    );
    let home = env.dir.path().join("cli-home");
    ok(runread(
        &home,
        &["workspace", "add", env.workspace.to_str().unwrap()],
    ));
    ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    // An index, not a copy: no piece of any prompt in the store, the secret's or the fixture's own.
    let db = store_bytes(&home);
    for text in ["deploy with token", &LATE[4..20], "count_words handle"] {
        assert!(
            !db.windows(text.len()).any(|w| w == text.as_bytes()),
            "{text:?} is in the store"
        );
    }

    add_secret(&home, "late", LATE);
    let listed = ok(runread(&home, &["runs"]));
    let json = ok(runread(&home, &["runs", "--json"]));
    for out in [&listed, &json] {
        for i in 0..=LATE.len() - 12 {
            assert!(!out.contains(&LATE[i..i + 12]), "{out}");
        }
        assert!(!out.contains("not a time"), "{out}");
        assert!(out.contains("deploy with token [redacted] please"), "{out}");
        // The secret straddled the 80-character cut: masked whole before the cut.
        assert!(
            out.contains(&format!("{}[redacted]…", "x".repeat(70))),
            "{out}"
        );
        // The untouched prompt is read back from the file as it is.
        assert!(
            out.contains("Does count_words handle non-English text?"),
            "{out}"
        );
    }
    let runs: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert!(
        runs.iter().all(|r| r["startedAt"].is_null()
            || r["startedAt"].as_str().is_some_and(|t| t.ends_with('Z'))),
        "only what parses as a time: {json}"
    );
}

/// `runread …` that must fail: its stderr.
fn fails(out: Output) -> String {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).expect("utf-8")
}

#[test]
fn a_reader_is_added_once_and_runs_are_shared_with_it_one_by_one_without_a_new_key() {
    let env = runread_testkit::Env::new();
    env.place("multi-run", Duration::from_secs(60));
    let home = env.dir.path().join("cli-home");
    ok(runread(
        &home,
        &["workspace", "add", env.workspace.to_str().unwrap()],
    ));
    ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    let runs: Vec<Value> = serde_json::from_str(&ok(runread(&home, &["runs", "--json"]))).unwrap();
    let run = |i: usize| runs[i]["target"]["runId"].as_str().unwrap().to_owned();
    let share = |run_id: &str, to: &str| {
        let args = [
            "grant",
            "--run",
            run_id,
            "--features",
            "final_answer",
            "--expires",
            "1h",
            "--to",
            to,
            "--json",
        ];
        serde_json::from_str::<Value>(&ok(runread(&home, &args))).unwrap()
    };

    let added: Value = serde_json::from_str(&ok(runread(
        &home,
        &["reader", "add", "claude-code", "--json"],
    )))
    .unwrap();
    let key = added["key"].as_str().unwrap().to_owned();
    assert!(runread_core::key::is_well_formed(&key));
    assert_eq!(
        added["clientConfigLiteral"]["mcpServers"]["runread"]["headers"]["x-runread-key"],
        key.as_str()
    );
    assert!(added["storeKeyLine"].as_str().unwrap().contains(&key));
    assert!(!added["claudeCommand"].as_str().unwrap().contains(&key));
    assert!(fails(runread(&home, &["reader", "add", "claude-code"])).contains("already a reader"));

    // Shared twice: the same reader, no key, nothing to configure.
    let first = share(&run(0), "claude-code");
    let second = share(&run(1), "claude-code");
    for g in [&first, &second] {
        assert_eq!(g["readerId"], added["readerId"]);
        assert_eq!(g["newReader"], false);
        assert!(
            g.get("key").is_none() && g.get("clientConfig").is_none(),
            "{g}"
        );
    }
    let text = ok(runread(
        &home,
        &[
            "grant",
            "--run",
            &run(2),
            "--features",
            "history",
            "--expires",
            "1h",
            "--to",
            "claude-code",
        ],
    ));
    assert!(text.contains("no new key"), "{text}");
    assert!(!text.contains("read key"), "{text}");
    // A name that is no reader yet becomes one, its key shown once.
    let fresh = share(&run(0), "codex");
    assert_eq!(fresh["newReader"], true);
    assert_ne!(fresh["key"].as_str().unwrap(), key);

    let listed = ok(runread(&home, &["reader", "list", "--json"]));
    assert!(!listed.contains(&key), "a key is never listed");
    let listed: Vec<Value> = serde_json::from_str(&listed).unwrap();
    let names: Vec<(&str, u64)> = listed
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["liveGrants"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("claude-code", 3), ("codex", 1)]);
    assert_eq!(listed[0]["lastRead"], Value::Null);

    // Revoking one grant leaves the reader's others.
    ok(runread(
        &home,
        &["grant", "revoke", first["grantId"].as_str().unwrap()],
    ));
    let live = |name: &str| {
        let listed: Vec<Value> =
            serde_json::from_str(&ok(runread(&home, &["reader", "list", "--json"]))).unwrap();
        listed
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["liveGrants"].as_u64().unwrap())
    };
    assert_eq!(live("claude-code"), Some(2));

    // Rotated: a new key, the grants kept.
    let rotated: Value = serde_json::from_str(&ok(runread(
        &home,
        &["reader", "rotate", "claude-code", "--json"],
    )))
    .unwrap();
    assert_ne!(rotated["key"].as_str().unwrap(), key);
    assert_eq!(rotated["readerId"], added["readerId"]);
    assert_eq!(live("claude-code"), Some(2));

    // Removed: gone from the list, every grant of it revoked.
    assert!(ok(runread(&home, &["reader", "remove", "claude-code"])).contains("revoked"));
    assert_eq!(live("claude-code"), None);
    let grants: Vec<Value> =
        serde_json::from_str(&ok(runread(&home, &["grant", "list", "--json"]))).unwrap();
    for g in &grants {
        let to_removed = g["readerId"] == added["readerId"];
        assert_eq!(g["state"] == "revoked", to_removed, "{g}");
    }
    assert!(fails(runread(&home, &["reader", "remove", "claude-code"])).contains("no reader"));
    assert!(fails(runread(&home, &["reader", "rotate", "claude-code"])).contains("no reader"));
    // Its calls stay findable by name in the audit.
    assert!(ok(runread(&home, &["audit", "--reader", "claude-code"])).contains("no calls"));
    assert!(fails(runread(&home, &["audit", "--reader", "nobody"])).contains("no reader"));
    // The database holds the keys' hashes, never the keys.
    let db = std::fs::read(home.join("runread.db")).unwrap();
    for k in [&key, rotated["key"].as_str().unwrap()] {
        assert!(!db.windows(k.len()).any(|w| w == k.as_bytes()));
    }
}

#[test]
fn run_share_is_refused_before_the_agent_starts_unless_the_reader_exists() {
    let env = runread_testkit::Env::new();
    let home = env.dir.path().join("cli-home");
    let marker = env.dir.path().join("started");
    let agent = ["--", "sh", "-c", &format!("touch {}", marker.display())];
    for (share, needle) in [
        ("nobody:final_answer:1h", "no reader \"nobody\""),
        ("claude-code:final_answer", "READER:FEATURES:DURATION"),
        ("claude-code:bogus:1h", "unknown feature"),
        ("claude-code:final_answer:soon", "READER:FEATURES:DURATION"),
        ("claude-code:final_answer:90d", "days away"),
    ] {
        if share.starts_with("claude-code") {
            let _ = runread(&home, &["reader", "add", "claude-code"]);
        }
        let mut args = vec![
            "run",
            "--workspace",
            env.workspace.to_str().unwrap(),
            "--share",
            share,
        ];
        args.extend(agent);
        let err = fails(runread(&home, &args));
        assert!(err.contains(needle), "{share}: {err}");
        assert!(!marker.exists(), "{share}: the agent was started");
    }
    // A label is one line of at most GRANT_LABEL_MAX_BYTES bytes, and labels what --share shares.
    let max = runread_core::limits::GRANT_LABEL_MAX_BYTES;
    let (long, blank) = ("x".repeat(max + 1), " ".to_owned());
    for (extra, needle) in [
        (vec!["--label", long.as_str()], "a label is one line"),
        (vec!["--label", blank.as_str()], "a label is one line"),
    ] {
        let ws = env.workspace.to_str().unwrap();
        let mut args = vec!["run", "--workspace", ws];
        args.extend(["--share", "claude-code:final_answer:1h"]);
        args.extend(extra);
        args.extend(agent);
        let err = fails(runread(&home, &args));
        assert!(err.contains(needle), "{err}");
        assert!(!marker.exists(), "the agent was started");
    }
    let err = fails(runread(&home, &["run", "--label", "x", "--", "true"]));
    assert!(err.contains("--share"), "{err}");
}

/// `runread show`: the owner reads a run in the terminal — its answer whole and masked (the
/// console's preview, no key), its tokens, its grants — and pages its history by cursor.
#[test]
fn show_prints_a_run_as_the_console_does_and_pages_its_history() {
    let env = runread_testkit::Env::new();
    let path = env.place("multi-run", Duration::from_secs(60));
    let home = env.dir.path().join("cli-home");
    ok(runread(
        &home,
        &["workspace", "add", env.workspace.to_str().unwrap()],
    ));
    ok(runread(
        &home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    let (run_id, answer, _) = runread_testkit::agent_runs(&path)
        .into_iter()
        .find(|(_, text, _)| text.as_ref().is_some_and(|t| t.len() > 40))
        .unwrap();
    let answer = answer.unwrap();
    // A piece of the answer becomes a known secret: shown masked, never in the clear.
    let secret = answer.get(8..32).unwrap().to_owned();
    ok(secret_add(&home, "piece", &secret));

    let shown = ok(runread(&home, &["show", &run_id]));
    assert!(
        shown.contains("answer   available · evidence session_file"),
        "{shown}"
    );
    assert!(shown.contains("tokens   in "), "{shown}");
    assert!(shown.contains("grants   none"), "{shown}");
    assert!(!shown.contains(&secret), "{shown}");
    // Pi records no version in its session file, and this run was not supervised.
    assert!(shown.contains("version  not recorded"), "{shown}");
    let json: Value =
        serde_json::from_str(&ok(runread(&home, &["show", &run_id, "--json"]))).unwrap();
    assert_eq!(json["agentVersion"], Value::Null);
    assert_eq!(json["versionTested"], Value::Null);
    let text = json["answerText"].as_str().unwrap();
    assert_eq!(
        text,
        answer.replace(&secret, runread_core::redact::MASK),
        "the whole answer, masked"
    );
    assert_eq!(
        json["answer"]["sha256"],
        runread_core::sha256_hex(text.as_bytes()).as_str()
    );
    assert_eq!(json["usage"]["source"], "assistant_messages");

    // The history, one event a page, followed by its cursor to the end.
    let mut args = vec![
        "show".to_owned(),
        run_id.clone(),
        "--history".into(),
        "--limit".into(),
        "1".into(),
    ];
    let mut seen = Vec::new();
    for _ in 0..32 {
        let page = ok(runread(
            &home,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
        seen.extend(
            page.lines()
                .filter(|l| l.starts_with('#'))
                .map(str::to_owned),
        );
        match page.lines().find_map(|l| l.split_once("--cursor ")) {
            Some((_, cursor)) => {
                args.truncate(5);
                args.extend(["--cursor".into(), cursor.trim().to_owned()]);
            }
            None => {
                assert!(page.contains("(end of the history)"), "{page}");
                break;
            }
        }
    }
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(seen[0].ends_with(" user"), "{seen:?}");
    let unknown = runread(&home, &["show", "zzzzzzzz"]);
    assert!(!unknown.status.success());
}

/// Completions and the man page come from the clap definitions: every command is in them, the
/// bash script parses, and the man page renders (groff, as `man` would).
#[test]
fn completions_and_the_man_page_name_every_command() {
    let home = tempfile::tempdir().unwrap();
    let commands = [
        "ingest",
        "runs",
        "show",
        "grant",
        "requests",
        "serve",
        "snapshots",
        "status",
        "completions",
        "man",
    ];
    for shell in ["bash", "zsh", "fish"] {
        let script = ok(runread(home.path(), &["completions", shell]));
        for c in commands {
            assert!(script.contains(c), "{shell} completions lack {c}");
        }
    }
    let bash = ok(runread(home.path(), &["completions", "bash"]));
    let parsed = Command::new("bash")
        .args(["-n", "-c", &bash])
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let page = ok(runread(home.path(), &["man"]));
    assert!(page.contains(".TH runread 1"), "{page}");
    let rendered = {
        use std::io::Write;
        let mut groff = Command::new("groff")
            .args(["-man", "-Tutf8", "-Kutf8"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("groff (man's formatter)");
        groff
            .stdin
            .take()
            .unwrap()
            .write_all(page.as_bytes())
            .unwrap();
        groff.wait_with_output().unwrap()
    };
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let text = String::from_utf8_lossy(&rendered.stdout);
    for c in commands {
        assert!(text.contains(c), "the man page lacks {c}");
    }
    // Neither needs a home: none was made.
    assert!(std::fs::read_dir(home.path()).unwrap().next().is_none());
    assert!(
        !runread(home.path(), &["completions", "tcsh"])
            .status
            .success()
    );
}

/// The systemd user unit and the launchd agent run the documented command with the binary `cargo
/// install` puts in `~/.cargo/bin`, the README installs both, and that command parses
/// (`scripts/test` also has systemd verify the unit and runs the agent's command as launchd would).
#[test]
fn the_service_definitions_run_the_documented_command() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let unit = std::fs::read_to_string(root.join("contrib/systemd/runread.service")).unwrap();
    let exec: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStart="))
        .collect();
    assert_eq!(exec, ["%h/.cargo/bin/runread serve --watch"]);
    let agent = std::fs::read_to_string(root.join("contrib/launchd/runread.plist")).unwrap();
    assert!(agent.contains(r#"exec "$HOME/.cargo/bin/runread" serve --watch "#));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("(`runread serve --watch`, the binary"));
    assert!(readme.contains("cp contrib/systemd/runread.service ~/.config/systemd/user/"));
    assert!(readme.contains("cp contrib/launchd/runread.plist ~/Library/LaunchAgents/"));
    assert!(readme.contains("cargo install --locked --path crates/runread"));
    let home = tempfile::tempdir().unwrap();
    ok(runread(home.path(), &["serve", "--watch", "--help"]));
}

/// `server.json` describes runread to the MCP Registry: valid against the registry's published
/// schema (vendored in `tests/registry/`, the version its `$schema` names), of this version, with
/// the endpoint and the stdio command the docs give (both of which parse).
#[test]
fn server_json_is_valid_for_the_mcp_registry_and_says_what_the_docs_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(root.join(p)).unwrap()).unwrap()
    };
    let schema = read("tests/registry/server.schema.json");
    let server = read("server.json");
    assert_eq!(
        server["$schema"], schema["$id"],
        "validated against the version it names"
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&server)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // The schema is not blind: a name without its namespace and an over-long description fail.
    let mut broken = server.clone();
    broken["name"] = "runread".into();
    broken["description"] = "x".repeat(101).into();
    assert_eq!(validator.iter_errors(&broken).count(), 2);

    assert_eq!(server["version"], env!("CARGO_PKG_VERSION"));
    let remote = &server["remotes"][0];
    assert_eq!(remote["url"], "http://127.0.0.1:7077/mcp");
    assert_eq!(remote["headers"][0]["name"], "x-runread-key");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains(
            "runread serve                                    # http://127.0.0.1:7077/mcp"
        )
    );
    let meta = &server["_meta"]["io.modelcontextprotocol.registry/publisher-provided"];
    let clients = std::fs::read_to_string(root.join("docs/clients.md")).unwrap();
    assert!(clients.contains(r#""args": ["serve", "--stdio", "--key-file", "#));
    let args: Vec<&str> = meta["stdio"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args, ["serve", "--stdio", "--key-file", "{key_file}"]);
    let home = tempfile::tempdir().unwrap();
    ok(runread(
        home.path(),
        &["serve", "--stdio", "--key-file", "k", "--help"],
    ));
    assert_eq!(
        meta["install"],
        "cargo install --locked --path crates/runread"
    );
    assert!(readme.contains(meta["install"].as_str().unwrap()));
    // No address nobody can reach: runread has no public repository yet.
    for (file, text) in [
        (
            "server.json",
            std::fs::read_to_string(root.join("server.json")).unwrap(),
        ),
        ("README.md", readme.clone()),
        (
            "Cargo.toml",
            std::fs::read_to_string(root.join("Cargo.toml")).unwrap(),
        ),
    ] {
        assert!(
            !text.contains("github.com/runread"),
            "{file} names a repository that does not exist"
        );
    }
}

/// `serve --cors-origin` takes exact origins only, with `--public-url` only: anything else stops
/// `serve` before it listens, saying what to give.
#[test]
fn serve_refuses_a_cors_origin_that_is_not_exact_or_has_no_public_url() {
    let env = runread_testkit::Env::new();
    let home = env.dir.path().join("cli-home");
    for bad in [
        "*",
        "null",
        "https://app.example/",
        "https://app.example:443",
    ] {
        let out = runread(
            &home,
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--public-url",
                "https://runread.example",
                "--cors-origin",
                bad,
            ],
        );
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--cors-origin") && err.contains("https://app.example"),
            "{bad}: {err}"
        );
    }
    let out = runread(&home, &["serve", "--cors-origin", "https://app.example"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--public-url"));
}
