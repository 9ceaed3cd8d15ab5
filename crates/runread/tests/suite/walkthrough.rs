//! docs/deployment.md's walk-through, executed: its shell blocks, in order, exactly as written,
//! against a PostgreSQL cluster with TLS on (`pgtls`), with the real binary first on `PATH`. The
//! only thing the test gives is the values of the section's first block (the variables it names:
//! host, ports, paths); a variable the doc names and the test does not give, or the other way
//! round, fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use crate::pgtls;

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The section of docs/deployment.md that is run.
const SECTION: &str = "## Walk-through: two gateways and one agent host on a TLS database";
/// How old the placed session is: past the settle window, so its answers are available.
const SETTLED: Duration = Duration::from_secs(60);
/// Hang guard on the whole walk-through.
const WALK_GUARD: Duration = Duration::from_secs(300);

/// The shell blocks of `SECTION`, in order.
fn blocks(doc: &str) -> Vec<String> {
    let start = doc.find(SECTION).expect("the walk-through section");
    let body = &doc[start + SECTION.len()..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    let mut out = Vec::new();
    let mut lines = body.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "```sh" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            out.push(block.join("\n"));
        }
    }
    out
}

/// The variables the settings block exports (`export A=1 B=2`, comments aside).
fn exported(settings: &str) -> BTreeSet<String> {
    settings
        .lines()
        .filter_map(|l| l.trim().strip_prefix("export "))
        .flat_map(|rest| {
            let rest = rest.split(" #").next().unwrap_or("");
            rest.split_whitespace()
                .filter_map(|w| w.split_once('=').map(|(k, _)| k.to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The walk-through's shell and everything it left running (the gateways it started in the
/// background), killed as a process group when dropped, a failed run included.
struct Walk(Child);

impl Drop for Walk {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

#[test]
fn the_postgres_walk_through_runs_as_written() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/deployment.md"),
    )
    .unwrap();
    for tool in ["bash", "psql", "jq", "curl"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "the walk-through runs {tool}, which is not installed: apt-get install {} \
             (scripts/test installs jq and curl)",
            if tool == "psql" {
                "postgresql-client"
            } else {
                tool
            }
        );
    }
    let blocks = blocks(&doc);
    assert!(blocks.len() > 2, "the walk-through's blocks: {blocks:?}");

    let cluster = pgtls::Cluster::start();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    let sessions = dir.path().join("sessions");
    for d in [&project, &sessions] {
        std::fs::create_dir_all(d).unwrap();
    }
    let project = std::fs::canonicalize(&project).unwrap();
    let src = runread_testkit::fixture_session("sample");
    let session = sessions.join(src.file_name().unwrap());
    std::fs::write(
        &session,
        runread_testkit::relocated(&std::fs::read(&src).unwrap(), project.to_str().unwrap()),
    )
    .unwrap();
    runread_testkit::set_age(&session, SETTLED);

    let given: Vec<(&str, String)> = vec![
        ("DB_HOST", "localhost".to_owned()),
        ("DB_PORT", cluster.port.to_string()),
        ("DB_CA", cluster.pki.ca.display().to_string()),
        ("WALK", dir.path().join("walk").display().to_string()),
        ("PROJECT", project.display().to_string()),
        ("SESSIONS", sessions.display().to_string()),
        ("GW1_PORT", pgtls::free_port().to_string()),
        ("GW2_PORT", pgtls::free_port().to_string()),
    ];
    assert_eq!(
        exported(&blocks[0]),
        given.iter().map(|(k, _)| (*k).to_owned()).collect(),
        "the test gives exactly the variables the doc's first block names"
    );

    let bin_dir = Path::new(env!("CARGO_BIN_EXE_runread")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = format!("set -euo pipefail\n{}\n", blocks[1..].join("\n"));
    let out_file = dir.path().join("walk.out");
    let err_file = dir.path().join("walk.err");
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(&script)
        .envs(given.iter().map(|(k, v)| (*k, v.as_str())))
        .env("PATH", path)
        .env("HOME", dir.path())
        .env_remove("RUNREAD_HOME")
        .env_remove("RUNREAD_STORE")
        .env_remove("RUNREAD_GATE_KEYS_FILE")
        .env_remove("RUNREAD_HOST")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .process_group(0);
    let mut walk = Walk(cmd.spawn().unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = walk.0.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < WALK_GUARD, "the walk-through hung");
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = std::fs::read_to_string(&out_file).unwrap();
    let err = std::fs::read_to_string(&err_file).unwrap();
    eprintln!("--- the walk-through's output\n{out}\n--- its stderr\n{err}");
    assert!(
        status.success(),
        "the walk-through failed ({status}):\n--- stdout\n{out}\n--- stderr\n{err}\n--- server log\n{}",
        cluster.log()
    );

    // The reader got one of the session's answers, byte for byte, through each gateway.
    let answers: Vec<String> = runread_testkit::agent_runs(&session)
        .into_iter()
        .filter_map(|(_, text, _)| text)
        .collect();
    assert!(
        answers.iter().any(|a| out.matches(a.as_str()).count() == 2),
        "no answer read through both gateways:\n{out}"
    );
    // Step 2 listed key ids, and the export never printed a key.
    let keys = std::fs::read_to_string(dir.path().join("walk/runread-gate-keys")).unwrap();
    for line in keys.lines() {
        let (id, hex) = line.split_once(' ').unwrap();
        assert!(out.contains(id), "{out}");
        assert!(
            !out.contains(hex) && !err.contains(hex),
            "a key was printed"
        );
    }
    // Only verify-full was used: nothing weaker was said.
    assert!(
        !err.contains("reached over the network with sslmode="),
        "{err}"
    );
}
