//! Finding a run and reading it (issue 48, surprises 5, 6 and 8): run ids resolve as git's
//! object names do, from every listing into every command that takes one; `runread read` says
//! in words what stands between it and a served read, and picks among a key's runs; `runs
//! --search` searches every run and says how many.

use crate::support::{ok, runread};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

fn fails(out: Output) -> String {
    assert!(!out.status.success(), "it succeeded");
    String::from_utf8(out.stderr).expect("utf-8")
}

/// A home with one registered workspace, and where its Pi sessions are written.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    sessions: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let workspace = dir.path().join("workspace");
        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(&sessions).unwrap();
        let workspace = std::fs::canonicalize(&workspace).unwrap();
        let h = Home {
            _dir: dir,
            home,
            workspace,
            sessions,
        };
        ok(h.run(&[
            "workspace",
            "add",
            h.workspace.to_str().unwrap(),
            "--name",
            "proj",
        ]));
        h
    }

    fn run(&self, args: &[&str]) -> Output {
        runread(&self.home, args)
    }

    /// A Pi session `session_id` whose runs are `runs` (run id, prompt, answer), one a minute
    /// from `start_ms`, each completed.
    fn pi_session(&self, session_id: &str, start_ms: i64, runs: &[(String, String, String)]) {
        let time = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        let mut lines = vec![json!({"type": "session", "version": 3, "id": session_id,
            "timestamp": time(start_ms), "cwd": self.workspace.to_str().unwrap()})];
        let mut parent = Value::Null;
        for (i, (id, prompt, answer)) in runs.iter().enumerate() {
            let at = start_ms + 60_000 * i as i64;
            let reply = format!("{id}-answer");
            lines.push(json!({"type": "message", "id": id, "parentId": parent, "timestamp": time(at),
                "message": {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": at}}));
            lines.push(json!({"type": "message", "id": reply, "parentId": id, "timestamp": time(at + 1_000),
                "message": {"role": "assistant", "content": [{"type": "text", "text": answer}],
                    "api": "openai-completions", "provider": "mock", "model": "mock-1",
                    "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                    "stopReason": "stop", "timestamp": at + 1_000}}));
            parent = json!(reply);
        }
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let path = self.sessions.join(format!("{session_id}.jsonl"));
        std::fs::write(&path, text).unwrap();
        // Quiet for a while: its runs are settled.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    fn ingest(&self) {
        ok(self.run(&["ingest", "--pi", self.sessions.to_str().unwrap()]));
    }

    /// `show ARGS --json`'s target.
    fn shown(&self, args: &[&str]) -> Value {
        let mut all = vec!["show"];
        all.extend_from_slice(args);
        all.push("--json");
        let v: Value = serde_json::from_str(&ok(self.run(&all))).unwrap();
        v["target"].clone()
    }
}

fn run_of(id: &str, prompt: &str) -> (String, String, String) {
    (id.into(), prompt.into(), format!("The answer to {prompt}."))
}

/// Two runs whose ids share their first 8 characters, and the same run id in a second session
/// (a fork): a prefix they share is refused with each run listed once, with what picks it.
fn shared_prefixes() -> Home {
    let h = Home::new();
    let now = chrono::Utc::now().timestamp_millis();
    h.pi_session(
        "sess-alpha-1111",
        now - 3_600_000,
        &[
            run_of("01a231df-aa11", "first question"),
            run_of("01a231df-bb22", "second question"),
        ],
    );
    h.pi_session(
        "sess-beta-2222",
        now - 1_800_000,
        &[run_of("01a231df-aa11", "first question")],
    );
    h.ingest();
    h
}

#[test]
fn a_run_id_prefix_two_runs_share_is_refused_listing_each_candidate_once_with_its_picking_prefix() {
    let h = shared_prefixes();
    let err = fails(h.run(&["show", "01a231df"]));
    assert!(err.contains("\"01a231df\" names 3 runs"), "{err}");
    let picks: Vec<&str> = err.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(picks.len(), 3, "each candidate once: {err}");
    let mut unique = picks.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3, "no candidate twice: {err}");
    // Each listed pick resolves to its run; the shared run id needs its session's prefix.
    let mut picked = Vec::new();
    for line in picks {
        let pick: Vec<&str> = line
            .split("    (")
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        let target = h.shown(&pick);
        assert!(
            target["runId"].as_str().unwrap().starts_with(pick[0]),
            "{line}"
        );
        picked.push((target["runId"].clone(), target["sessionId"].clone()));
        if target["runId"] == "01a231df-aa11" {
            assert_eq!(pick.get(1), Some(&"--session"), "{line}");
        }
    }
    picked.sort_by_key(|p| format!("{p:?}"));
    picked.dedup();
    assert_eq!(picked.len(), 3, "three different runs picked");
    // `grant` and `artifact` resolve alike: the same refusal.
    let grant = fails(h.run(&[
        "grant",
        "--run",
        "01a231df",
        "--features",
        "final_answer",
        "--expires",
        "15m",
        "--to",
        "x",
    ]));
    assert!(grant.contains("names 3 runs"), "{grant}");
    // A prefix with --session that still names two runs lists them too; none names nothing.
    let err = fails(h.run(&["show", "01a231df-aa", "--session", "sess-"]));
    assert!(err.contains("names 2 runs"), "{err}");
    let err = fails(h.run(&["show", "01a231df-cc"]));
    assert!(err.contains("no current run"), "{err}");
}

#[test]
fn a_session_is_taken_by_a_prefix_of_its_id() {
    let h = shared_prefixes();
    let t = h.shown(&["01a231df-a", "--session", "sess-bet"]);
    assert_eq!(
        (t["runId"].as_str(), t["sessionId"].as_str()),
        (Some("01a231df-aa11"), Some("sess-beta-2222"))
    );
    let t = h.shown(&["01a231df-b"]);
    assert_eq!(t["runId"], "01a231df-bb22");
    let err = fails(h.run(&["show", "01a231df-b", "--session", "sess-beta"]));
    assert!(err.contains("no current run"), "{err}");
}

/// The RUN column of a table: each row's first word.
fn listed_ids(table: &str) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|w| w.starts_with("01a2"))
        .collect()
}

#[test]
fn runs_and_runs_search_print_ids_that_show_takes_back() {
    let h = shared_prefixes();
    let table = ok(h.run(&["runs"]));
    assert!(
        table.contains("STARTED") && table.contains("WORKSPACE"),
        "{table}"
    );
    assert!(
        table.contains("proj") && table.contains("min ago"),
        "{table}"
    );
    let found = ok(h.run(&["runs", "--search", "question"]));
    assert!(found.contains("searched 3 runs in 2 sessions"), "{found}");
    for table in [table, found] {
        let ids = listed_ids(&table);
        assert_eq!(ids.len(), 3, "{table}");
        for id in ids {
            assert!(id.len() >= 8, "{id}");
            // The fork's run is one id in two sessions: show asks which, never another id.
            let out = h.run(&["show", &id, "--json"]);
            if id.starts_with("01a231df-a") {
                let err = fails(out);
                assert!(
                    err.contains("names 2 runs") && err.contains("--session"),
                    "{err}"
                );
            } else {
                let t: Value = serde_json::from_str(&ok(out)).unwrap();
                assert!(t["target"]["runId"].as_str().unwrap().starts_with(&id));
            }
        }
    }
    // `--json` keeps RFC 3339 start times.
    let runs: Vec<Value> = serde_json::from_str(&ok(h.run(&["runs", "--json"]))).unwrap();
    assert!(runs[0]["startedAt"].as_str().unwrap().ends_with('Z'));
}

/// More runs than the search used to examine (the newest 2,000, as the console's still does):
/// the oldest holds the word.
const MANY_RUNS: usize = runread_service::owner::search::SEARCH_RUNS_MAX as usize + 1;

#[test]
fn a_search_finds_a_match_older_than_its_first_pages() {
    let h = Home::new();
    let now = chrono::Utc::now().timestamp_millis();
    let per_session = 700;
    for s in 0..MANY_RUNS.div_ceil(per_session) {
        let runs: Vec<_> = (0..per_session)
            .map(|i| s * per_session + i)
            .filter(|n| *n < MANY_RUNS)
            .map(|n| {
                let prompt = if n == 0 {
                    "the zanzibar question".to_owned()
                } else {
                    format!("question {n}")
                };
                run_of(&format!("{n:08x}"), &prompt)
            })
            .collect();
        let start = now - 86_400_000 * 30 + (s * per_session) as i64 * 60_000;
        h.pi_session(&format!("many-{s}"), start, &runs);
    }
    h.ingest();
    let found = ok(h.run(&["runs", "--search", "zanzibar"]));
    let ids = found
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("0000"))
        .collect::<Vec<_>>();
    assert_eq!(ids, ["00000000"], "{found}");
    assert!(
        found
            .trim_end()
            .ends_with(&format!("searched {MANY_RUNS} runs in 3 sessions")),
        "{found}"
    );
}

// ---- runread read ----

const DUMPS: [&str; 4] = ["rmcp", "Transport", "worker", "Error {"];

fn key_file(dir: &Path, key: &str) -> PathBuf {
    let path = dir.join("key");
    std::fs::write(&path, key).unwrap();
    path
}

fn read(home: &Path, url: &str, key: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["read", "--url", url, "--key-file", key.to_str().unwrap()];
    args.extend_from_slice(extra);
    runread(home, &args)
}

#[test]
fn read_where_nothing_listens_says_so_in_words() {
    let h = Home::new();
    let port = runread_testkit::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let key = key_file(&h.home, &"a".repeat(64));
    let err = fails(read(&h.home, &url, &key, &["final-answer"]));
    assert!(
        err.contains(&format!("nothing is serving at {url}")),
        "{err}"
    );
    assert!(err.contains("runread serve"), "{err}");
    for dump in DUMPS {
        assert!(!err.contains(dump), "{dump}: {err}");
    }
}

/// `runread serve` on a free loopback port, and its URL once it listens.
struct Served(Child, String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(home: &Path) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find("http://") {
                let url = line[at..].split_whitespace().next().unwrap_or("");
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("serve starts");
    Served(child, url)
}

#[test]
fn read_with_a_key_nobody_holds_says_the_fixed_code_and_a_failed_tls_handshake_says_so() {
    let h = Home::new();
    let served = serve(&h.home);
    let key = key_file(&h.home, &"ab".repeat(32));
    let err = fails(read(&h.home, &served.1, &key, &["final-answer"]));
    assert!(err.contains("refused the read key (invalid_key)"), "{err}");
    // TLS to a server that speaks plain HTTP.
    let tls = fails(read(
        &h.home,
        &served.1.replace("http://", "https://"),
        &key,
        &["final-answer"],
    ));
    assert!(tls.contains("the TLS handshake with"), "{tls}");
    for words in [err, tls] {
        for dump in DUMPS {
            assert!(!words.contains(dump), "{dump}: {words}");
        }
    }
}

#[test]
fn read_run_picks_among_the_keys_granted_runs() {
    let h = Home::new();
    let now = chrono::Utc::now().timestamp_millis();
    h.pi_session(
        "two-runs",
        now - 3_600_000,
        &[run_of("cafe0001", "alpha"), run_of("cafe0002", "beta")],
    );
    h.ingest();
    let grant = |run: &str| -> Value {
        let out = ok(h.run(&[
            "grant",
            "--run",
            run,
            "--features",
            "final_answer",
            "--expires",
            "15m",
            "--to",
            "reader",
            "--json",
        ]));
        serde_json::from_str(&out).unwrap()
    };
    let first = grant("cafe0001");
    grant("cafe0002");
    let key = key_file(&h.home, first["key"].as_str().unwrap());
    let served = serve(&h.home);
    let err = fails(read(&h.home, &served.1, &key, &["final-answer"]));
    assert!(
        err.contains("holds 2 runs granted final_answer; pick one with --run"),
        "{err}"
    );
    assert!(
        err.contains("--run cafe0001") && err.contains("--run cafe0002"),
        "{err}"
    );
    let answer = ok(read(
        &h.home,
        &served.1,
        &key,
        &["--run", "cafe0002", "final-answer"],
    ));
    assert_eq!(answer.trim(), "The answer to beta.");
    let err = fails(read(
        &h.home,
        &served.1,
        &key,
        &["--run", "cafe0009", "final-answer"],
    ));
    assert!(
        err.contains("no live final_answer grant of a run \"cafe0009\""),
        "{err}"
    );
}

#[test]
fn show_grant_list_and_snapshots_print_the_prefix_that_picks_the_run() {
    let h = shared_prefixes();
    ok(h.run(&[
        "grant",
        "--run",
        "01a231df-bb22",
        "--features",
        "final_answer",
        "--expires",
        "15m",
        "--to",
        "x",
    ]));
    let shown = ok(h.run(&["show", "01a231df-bb22"]));
    assert!(
        shown.starts_with("run      01a231df-b (01a231df-bb22)\n"),
        "{shown}"
    );
    let listed = ok(h.run(&["grant", "list"]));
    let row = listed.lines().nth(1).unwrap_or_default();
    assert_eq!(
        row.split_whitespace().nth(1),
        Some("01a231df-b"),
        "{listed}"
    );
    let kept = ok(h.run(&["snapshots"]));
    assert!(kept.contains("sealed    run 01a231df-b ("), "{kept}");
    assert!(kept.contains("\nrun 01a231df-b "), "{kept}");
    assert!(!kept.contains("01a231df-bb22"), "{kept}");
}
