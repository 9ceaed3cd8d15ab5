//! The self-check (issue 48, surprise 7): `runread status` says whether runread serves, which
//! agents' folders it follows, who reads and what Claude Code will delete soon; `serve --watch`
//! says what each pass changed; `serve --console` does not serve MCP alone when its console
//! cannot listen; `grant` says whether anything serves the run it shared.

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::runread_in;

/// Longest a test waits for a child to do what it waits for; past it the test fails (no
/// assertion is on how long anything took).
const PATIENCE: Duration = Duration::from_secs(60);

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Waits for `child` to end, at most [`PATIENCE`]; kills it and fails past that.
fn wait_ended(mut child: Child) -> Output {
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("runread did not end");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// `serve --console` whose console port is taken: it exits non-zero and says so in words,
/// instead of serving MCP alone for the rest of its life.
#[test]
fn serve_console_with_its_port_taken_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (home, user) = (dir.path().join("home"), dir.path().join("user"));
    std::fs::create_dir_all(&user).unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let console = taken.local_addr().unwrap().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(&home)
        .args(["serve", "--listen", "127.0.0.1:0", "--console"])
        .args(["--console-listen", &console])
        .env("HOME", &user)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_ended(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("the console cannot listen on {console}")),
        "{stderr}"
    );
    assert!(stderr.contains("already listens there"), "{stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");

    // `runread console` alone says the same.
    let out = runread_in(&home, &user, &["console", "--listen", &console]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("the console cannot listen on {console}")),
        "{stderr}"
    );
    drop(taken);
}

/// A long-running `runread` (`serve`, `watch`) whose standard error is read line by line.
struct Running {
    child: Child,
    lines: Receiver<String>,
    /// Every line read so far.
    seen: Vec<String>,
}

impl Running {
    fn start(home: &Path, user: &Path, args: &[&str], log: &str) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_runread"))
            .arg("--home")
            .arg(home)
            .args(args)
            .env("HOME", user)
            .env("RUNREAD_LOG", log)
            .env("NO_COLOR", "1")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("RUNREAD_STORE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = channel();
        for out in [
            Box::new(child.stderr.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stdout.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(out).lines() {
                    let Ok(line) = line else { return };
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        }
        Running {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line that holds `needle`, waiting at most [`PATIENCE`].
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!("no line holding {needle:?}; saw {:#?}", self.seen),
            }
        }
    }

    /// The MCP address a `serve` says it serves at.
    fn serving_address(&mut self) -> String {
        let line = self.wait_for("runread serving MCP");
        let url = line.split("http://").nth(1).unwrap();
        url.split('/').next().unwrap().to_owned()
    }

    /// Ends the process and returns every line it wrote.
    fn end(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        while let Ok(line) = self.lines.recv_timeout(PATIENCE) {
            self.seen.push(line);
        }
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An address of this machine where nothing listens (a port just given back).
fn closed_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A fresh home and an empty user home: `status` says nothing serves (and how to start it) and
/// names each agent's default session folder, not there yet, with its counts.
#[test]
fn status_on_a_fresh_home_says_not_serving_and_lists_the_agents_folders() {
    let dir = tempfile::tempdir().unwrap();
    let (home, user) = (dir.path().join("home"), dir.path().join("user"));
    std::fs::create_dir_all(&user).unwrap();
    let addr = closed_address();
    let out = ok(runread_in(&home, &user, &["status", "--listen", &addr]));
    assert!(
        out.contains(&format!("serving      no: nothing answers at {addr}")),
        "{out}"
    );
    assert!(out.contains("`runread serve`"), "{out}");
    for place in [".pi/agent/sessions", ".claude/projects", ".codex/sessions"] {
        let folder = user.join(place);
        assert!(
            out.contains(&format!(
                "{} (default, not there): 0 sessions",
                folder.display()
            )),
            "{out}"
        );
    }
    assert!(out.contains("readers      none"), "{out}");
    assert!(
        out.contains("deletes session files not written to for 30 days (its default)"),
        "{out}"
    );
    assert!(out.contains("store        sqlite "), "{out}");
    assert!(out.contains("schema version "), "{out}");
}

/// `status --json`: one object with `serving`, `agents` (each with its folders, runs and
/// cleanup), `readers` and `store`, times in RFC 3339 and sizes in bytes.
#[test]
fn status_json_has_its_shape() {
    let dir = tempfile::tempdir().unwrap();
    let (home, user) = (dir.path().join("home"), dir.path().join("user"));
    std::fs::create_dir_all(user.join(".claude")).unwrap();
    std::fs::write(
        user.join(".claude/settings.json"),
        r#"{"cleanupPeriodDays": 12}"#,
    )
    .unwrap();
    ok(runread_in(&home, &user, &["reader", "add", "assistant"]));
    let addr = closed_address();
    let out = ok(runread_in(
        &home,
        &user,
        &["status", "--listen", &addr, "--json"],
    ));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["serving"]["answering"], false);
    assert_eq!(v["serving"]["address"], addr.as_str());
    assert_eq!(v["serving"]["url"], format!("http://{addr}/mcp"));
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents.len(), runread_core::Agent::ALL.len());
    for a in agents {
        assert!(a["agent"].is_string() && a["runs"] == 0, "{a}");
        let f = &a["folders"][0];
        assert_eq!(
            (f["exists"].clone(), f["remembered"].clone()),
            (false.into(), false.into())
        );
        assert_eq!(
            (f["sessions"].clone(), f["moreSessions"].clone()),
            (0.into(), false.into())
        );
    }
    let cleanups: Vec<&Value> = agents
        .iter()
        .map(|a| &a["cleanup"])
        .filter(|c| !c.is_null())
        .collect();
    assert_eq!(cleanups.len(), 1, "one agent deletes its own files");
    assert_eq!(cleanups[0]["afterDays"], 12);
    let settings = user.join(".claude/settings.json");
    assert_eq!(cleanups[0]["setIn"], settings.to_str().unwrap());
    assert_eq!(cleanups[0]["sharedAtRisk"], serde_json::json!([]));
    assert_eq!(v["readers"][0]["name"], "assistant");
    assert_eq!(v["readers"][0]["liveGrants"], 0);
    assert_eq!(v["readers"][0]["lastRead"], Value::Null);
    assert_eq!(v["store"]["kind"], "sqlite");
    assert!(v["store"]["bytes"].as_u64().unwrap() > 0);
    assert!(v["store"]["schemaVersion"].as_u64().unwrap() > 0);
    assert_eq!(
        v["store"]["location"],
        home.join("runread.db").to_str().unwrap()
    );
}

/// With `serve` running, `status` probing its address says it serves.
#[test]
fn status_with_serve_running_says_serving() {
    let dir = tempfile::tempdir().unwrap();
    let (home, user) = (dir.path().join("home"), dir.path().join("user"));
    std::fs::create_dir_all(&user).unwrap();
    let mut served = Running::start(&home, &user, &["serve", "--listen", "127.0.0.1:0"], "warn");
    let addr = served.serving_address();
    let out = ok(runread_in(&home, &user, &["status", "--listen", &addr]));
    assert!(
        out.contains(&format!(
            "serving      yes: something answers at http://{addr}/mcp"
        )),
        "{out}"
    );
    served.end();
}

/// A home with `env`'s workspace registered.
fn home_with_workspace(env: &runread_testkit::Env, user: &Path) -> std::path::PathBuf {
    let home = env.dir.path().join("cli-home");
    std::fs::create_dir_all(user).unwrap();
    let ws = env.workspace.to_str().unwrap();
    ok(runread_in(&home, user, &["workspace", "add", ws]));
    home
}

/// A folder named to `ingest --pi DIR` once is remembered: `status` lists it, and a bare
/// `watch` follows it (a session placed there later is read), as `serve --watch` does, not only
/// the default places.
#[test]
fn a_folder_given_to_ingest_is_listed_by_status_and_followed_by_watch() {
    let env = runread_testkit::Env::new();
    env.place("multi-run", Duration::from_secs(60));
    let user = env.dir.path().join("user");
    let home = home_with_workspace(&env, &user);
    let sessions = env.sessions.to_str().unwrap();
    ok(runread_in(&home, &user, &["ingest", "--pi", sessions]));
    let out = ok(runread_in(
        &home,
        &user,
        &["status", "--listen", &closed_address()],
    ));
    assert!(
        out.contains(&format!("{sessions} (remembered): 1 session")),
        "{out}"
    );
    let v: Value = serde_json::from_str(&ok(runread_in(
        &home,
        &user,
        &["status", "--listen", &closed_address(), "--json"],
    )))
    .unwrap();
    let pi = &v["agents"][0];
    assert_eq!(pi["runs"], 3);
    assert_eq!(pi["folders"][1]["path"], sessions);
    assert_eq!(pi["folders"][1]["remembered"], true);

    let mut watching = Running::start(&home, &user, &["watch"], "warn");
    watching.wait_for(&format!("watching {sessions} (pi)"));
    watching.wait_for("(Ctrl-C to stop)");
    env.place("sample", Duration::from_secs(60));
    watching.wait_for("ingested: 1 session new or re-read");
    watching.end();

    let args = ["serve", "--listen", "127.0.0.1:0", "--watch"];
    let mut served = Running::start(&home, &user, &args, "warn");
    served.wait_for(&format!("watching {sessions} (pi)"));
    served.end();
}

/// `serve --watch`: a pass that read a new session is one line saying so; passes that changed
/// nothing say nothing (they are seen only at `RUNREAD_LOG=runread::watch=debug`).
#[test]
fn serve_watch_logs_a_line_per_pass_that_changed_something_and_none_otherwise() {
    let env = runread_testkit::Env::new();
    let user = env.dir.path().join("user");
    let home = home_with_workspace(&env, &user);
    let watched = env.dir.path().join("watched");
    std::fs::create_dir_all(&watched).unwrap();
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--watch",
        "--pi",
        watched.to_str().unwrap(),
    ];
    let mut served = Running::start(&home, &user, &args, "warn,runread::watch=debug");
    served.wait_for("an ingest pass changed nothing");
    // Written whole elsewhere, then moved in: the watcher sees one finished file.
    let placed = env.place("multi-run", Duration::from_secs(60));
    std::fs::rename(&placed, watched.join(placed.file_name().unwrap())).unwrap();
    let line = served.wait_for("ingested:");
    assert!(line.contains("1 session new or re-read"), "{line}");
    assert!(line.contains("3 runs in them"), "{line}");
    served.wait_for("an ingest pass changed nothing");
    let lines = served.end();
    let changed: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("ingested:"))
        .collect();
    assert_eq!(changed.len(), 1, "{lines:#?}");
}

/// `grant` to an existing reader while nothing serves says so and how to start it, instead of
/// "its client's next call sees this run"; with `serve` running at the grant's URL it says that.
#[test]
fn grant_says_nothing_serves_when_nothing_does() {
    let env = runread_testkit::Env::new();
    env.place("multi-run", Duration::from_secs(60));
    let user = env.dir.path().join("user");
    let home = home_with_workspace(&env, &user);
    ok(runread_in(
        &home,
        &user,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    ok(runread_in(&home, &user, &["reader", "add", "assistant"]));
    let runs: Value =
        serde_json::from_str(&ok(runread_in(&home, &user, &["runs", "--json"]))).unwrap();
    let grant = |run: usize, url: &str| {
        let run_id = runs[run]["target"]["runId"].as_str().unwrap();
        ok(runread_in(
            &home,
            &user,
            &[
                "grant",
                "--run",
                run_id,
                "--features",
                "final_answer",
                "--expires",
                "1h",
                "--to",
                "assistant",
                "--url",
                url,
            ],
        ))
    };
    let nowhere = format!("http://{}/mcp", closed_address());
    let out = grant(0, &nowhere);
    assert!(!out.contains("next call sees this run"), "{out}");
    assert!(
        out.contains(&format!("Nothing serves {nowhere} yet")),
        "{out}"
    );
    assert!(out.contains("`runread serve`"), "{out}");

    let mut served = Running::start(&home, &user, &["serve", "--listen", "127.0.0.1:0"], "warn");
    let addr = served.serving_address();
    let out = grant(1, &format!("http://{addr}/mcp"));
    assert!(
        out.contains("its client's next call sees this run"),
        "{out}"
    );
    assert!(!out.contains("Nothing serves"), "{out}");
    served.end();
}

/// Claude Code deletes session files not written to for `cleanupPeriodDays` (30 by default):
/// a shared run whose file is 25 days old goes within the week, and `status` names it; with
/// `cleanupPeriodDays: 90` in Claude Code's settings it does not.
#[test]
fn status_names_the_shared_runs_claude_code_will_delete_within_a_week() {
    let env = runread_testkit::Env::new();
    env.place_claude("continue-unicode", Duration::from_secs(25 * 86_400));
    let user = env.dir.path().join("user");
    let home = home_with_workspace(&env, &user);
    let projects = env.claude_projects.to_str().unwrap();
    ok(runread_in(&home, &user, &["ingest", "--claude", projects]));
    let runs: Value =
        serde_json::from_str(&ok(runread_in(&home, &user, &["runs", "--json"]))).unwrap();
    let run_id = runs[0]["target"]["runId"].as_str().unwrap();
    ok(runread_in(
        &home,
        &user,
        &[
            "grant",
            "--run",
            run_id,
            "--features",
            "final_answer",
            "--expires",
            "30d",
            "--to",
            "assistant",
        ],
    ));
    let status = |json: bool| {
        let mut args = vec!["status", "--listen"];
        let addr = closed_address();
        args.push(&addr);
        if json {
            args.push("--json");
        }
        ok(runread_in(&home, &user, &args))
    };
    let v: Value = serde_json::from_str(&status(true)).unwrap();
    let cleanup = &v["agents"][1]["cleanup"];
    assert_eq!(cleanup["afterDays"], 30);
    let at_risk = cleanup["sharedAtRisk"].as_array().unwrap();
    assert_eq!(at_risk.len(), 1, "{cleanup}");
    assert_eq!(at_risk[0]["runId"], run_id);
    assert_eq!(at_risk[0]["reader"], "assistant");
    assert!(at_risk[0]["deletedFrom"].as_str().unwrap().ends_with('Z'));
    assert_eq!(v["agents"][1]["folders"][1]["deletedWithinWeek"], 1);
    assert_eq!(
        v["agents"][0]["folders"][0]["deletedWithinWeek"],
        Value::Null
    );
    let out = status(false);
    assert!(
        out.contains(&format!(
            "at risk    run {run_id} shared with \"assistant\""
        )),
        "{out}"
    );
    assert!(out.contains("in 4 d"), "{out}");
    assert!(
        out.contains("1 session, 1 of them deleted by Claude Code within a week"),
        "{out}"
    );

    std::fs::create_dir_all(user.join(".claude")).unwrap();
    std::fs::write(
        user.join(".claude/settings.json"),
        r#"{"cleanupPeriodDays": 90}"#,
    )
    .unwrap();
    let v: Value = serde_json::from_str(&status(true)).unwrap();
    assert_eq!(v["agents"][1]["cleanup"]["afterDays"], 90);
    assert_eq!(
        v["agents"][1]["cleanup"]["sharedAtRisk"],
        serde_json::json!([])
    );
    assert_eq!(v["agents"][1]["folders"][1]["deletedWithinWeek"], 0);
}
