//! `runread keep`: a run the owner keeps reads as before once its session file is gone (`show`
//! says `file gone, kept` and `evidence kept`, the answer byte for byte); a keep rule keeps a
//! workspace's runs as ingest settles them; `keep list`, `keep drop` (the run is then `file gone,
//! not kept`), `keep limit` at its bound and one byte under it; `status` says the total and the
//! runs Claude Code's cleanup takes that are not kept. Every refusal says why without a path or
//! an OS error.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::support::{json_of, ok, runread, runread_in};

const SETTLED: Duration = Duration::from_secs(60);

/// The standard error of a command that must have failed, checked to name no path of the test's
/// and no OS error.
fn refused(out: Output, root: &Path) -> String {
    assert!(!out.status.success(), "it succeeded");
    // The home's own warning (a temporary directory others may read) names it; what the
    // refusal says is its `runread:` line.
    let stderr: String = String::from_utf8(out.stderr)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("warning: "))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!stderr.contains(root.to_str().unwrap()), "a path: {stderr}");
    assert!(!stderr.contains("os error"), "an OS error: {stderr}");
    stderr
}

/// The Pi runs `runs --json` lists.
fn pi_runs(home: &Path) -> Vec<Value> {
    json_of(home, &["runs", "--json", "--agent", "pi"])
        .as_array()
        .unwrap()
        .clone()
}

/// `[RUN, --session, SESSION]` of a listed run.
fn named(run: &Value) -> [String; 3] {
    [
        run["target"]["runId"].as_str().unwrap().to_owned(),
        "--session".to_owned(),
        run["target"]["sessionId"].as_str().unwrap().to_owned(),
    ]
}

/// `runread ARGS… RUN --session S` on `home`.
fn on(home: &Path, args: &[&str], run: &Value) -> Output {
    let n = named(run);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(n.iter().map(String::as_str));
    runread(home, &all)
}

/// runread on one home and store (SQLite in the home, or a PostgreSQL URL).
struct Cli<'a> {
    home: &'a Path,
    store: Option<&'a str>,
}

impl Cli<'_> {
    fn run(&self, args: &[&str]) -> Output {
        let mut all: Vec<&str> = self.store.map_or_else(Vec::new, |url| vec!["--store", url]);
        all.extend(args);
        runread(self.home, &all)
    }

    fn ok(&self, args: &[&str]) -> String {
        ok(self.run(args))
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// `runread ARGS… RUN --session S`.
    fn on(&self, args: &[&str], run: &Value) -> Output {
        let n = named(run);
        let mut all: Vec<&str> = args.to_vec();
        all.extend(n.iter().map(String::as_str));
        self.run(&all)
    }
}

#[test]
fn a_kept_run_reads_as_before_when_its_file_is_gone_and_not_once_dropped() {
    let env = runread_testkit::Env::new();
    let pi = env.place("sample", SETTLED);
    let cli = Cli {
        home: env.dir.path(),
        store: None,
    };
    kept_then_dropped(&cli, &env, &pi);
}

/// The same on PostgreSQL: the kept copy is the store's, read by any runread that opens it.
#[cfg(feature = "postgres")]
#[test]
fn a_kept_run_reads_as_before_on_postgresql() {
    let env = runread_testkit::Env::new();
    let pi = env.place("sample", SETTLED);
    let db = runread_testkit::pg::PgDb::fresh();
    let home = env.dir.path().join("pg-home");
    let cli = Cli {
        home: &home,
        store: Some(&db.url),
    };
    cli.ok(&[
        "workspace",
        "add",
        env.workspace.to_str().unwrap(),
        "--name",
        "test",
    ]);
    kept_then_dropped(&cli, &env, &pi);
}

/// Keeps a Pi run of `env`'s `sample` (placed at `pi`), deletes its file, reads it, drops it.
fn kept_then_dropped(cli: &Cli, env: &runread_testkit::Env, pi: &Path) {
    let root = env.dir.path();
    cli.ok(&["ingest", "--pi", env.sessions.to_str().unwrap()]);
    let listed = || {
        cli.json(&["runs", "--json", "--agent", "pi"])
            .as_array()
            .unwrap()
            .clone()
    };
    let run = listed()
        .into_iter()
        .find(|r| r["answerState"] == "available")
        .unwrap();
    assert_eq!(run["kept"], false);
    let show = || serde_json::from_str::<Value>(&ok(cli.on(&["show", "--json"], &run))).unwrap();
    let before = show();
    assert_eq!(before["kept"], false);
    let answer = before["answerText"].as_str().unwrap().to_owned();

    let said = ok(cli.on(&["keep"], &run));
    assert!(
        said.starts_with("kept: a sealed copy of its whole evidence ("),
        "{said}"
    );
    let again = ok(cli.on(&["keep"], &run));
    assert!(again.starts_with("already kept"), "{again}");
    let now = listed()
        .into_iter()
        .find(|r| r["target"] == run["target"])
        .unwrap();
    assert_eq!(now["kept"], true, "{now}");
    let table = cli.ok(&["runs"]);
    assert!(table.contains(", kept"), "{table}");

    std::fs::remove_file(pi).unwrap();
    let after = show();
    assert_eq!(after["sessionFile"], "gone_kept", "{after}");
    assert_eq!(after["answerText"].as_str(), Some(answer.as_str()));
    assert_eq!(after["kept"], true);
    assert_eq!(after["keptReason"], "run");
    assert!(after["keptBytes"].as_u64().unwrap() > 0, "{after}");
    assert!(
        after["keptSince"].as_str().unwrap().ends_with('Z'),
        "{after}"
    );
    assert_eq!(after["sealedForSharing"], Value::Null, "{after}");
    let shown = ok(cli.on(&["show"], &run));
    assert!(shown.contains("\nfile     gone, kept\n"), "{shown}");
    assert!(shown.contains("evidence kept"), "{shown}");
    assert!(shown.contains("\nkept     since "), "{shown}");
    assert!(shown.contains("(kept by name)"), "{shown}");
    assert!(!shown.contains("sealed   for sharing"), "{shown}");
    let history = ok(cli.on(&["show", "--history", "--json"], &run));
    assert!(
        history.contains(&answer[..answer.len().min(40)]),
        "{history}"
    );
    let table = cli.ok(&["runs"]);
    assert!(table.contains("file gone, kept"), "{table}");

    let list = cli.json(&["keep", "list", "--json"]);
    let kept = list["runs"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{list}");
    assert_eq!(kept[0]["runId"], run["target"]["runId"]);
    assert_eq!(kept[0]["reason"], "run");
    assert_eq!(kept[0]["standing"], "ok");
    assert_eq!(kept[0]["agent"], "pi");
    assert_eq!(kept[0]["workspace"], "test");
    assert!(kept[0]["keptSince"].as_str().unwrap().ends_with('Z'));
    assert_eq!(list["total"]["runs"], 1);
    assert_eq!(list["total"]["bytes"], after["keptBytes"]);
    assert_eq!(list["rules"], serde_json::json!([]));
    let text = cli.ok(&["keep", "list"]);
    assert!(text.contains("1 run kept, "), "{text}");
    assert!(text.contains("of 2.0 GiB"), "{text}");

    let dropped = ok(cli.on(&["keep", "drop"], &run));
    assert!(
        dropped.contains("dropped the kept copy of run"),
        "{dropped}"
    );
    assert!(dropped.contains("until that share ends"), "{dropped}");
    let gone = show();
    assert_eq!(gone["sessionFile"], "gone_not_kept", "{gone}");
    assert_eq!(gone["kept"], false);
    let why = refused(cli.on(&["keep", "drop"], &run), root);
    assert!(why.contains("is not kept"), "{why}");
    // Its file gone and no copy: nothing to keep, and said so.
    let why = refused(cli.on(&["keep"], &run), root);
    assert!(
        why.contains("not kept: the session file does not hold the run"),
        "{why}"
    );
    assert_eq!(
        cli.json(&["keep", "list", "--json"])["runs"],
        serde_json::json!([])
    );
}

#[test]
fn a_keep_rule_keeps_a_workspaces_runs_as_they_settle_and_status_counts_them() {
    let env = runread_testkit::Env::new();
    let user = env.dir.path().join("user");
    std::fs::create_dir_all(&user).unwrap();
    let home = env.dir.path();
    let said = ok(runread_in(home, &user, &["keep", "--workspace", "test"]));
    assert!(
        said.contains("keeping every run of workspace test ("),
        "{said}"
    );
    assert!(said.contains("kept 0 runs now"), "{said}");
    let again = ok(runread_in(home, &user, &["keep", "--workspace", "test"]));
    assert!(again.starts_with("already keeping"), "{again}");
    let why = refused(
        runread_in(home, &user, &["keep", "--workspace", "nowhere"]),
        home,
    );
    assert!(why.contains("nowhere"), "{why}");

    // Claude Code deletes these within the week (30 days by default, 25 written ago).
    env.place_claude("tool-then-answer", Duration::from_secs(25 * 86_400));
    env.place("sample", SETTLED);
    let ingest = runread_in(
        home,
        &user,
        &[
            "ingest",
            "--pi",
            env.sessions.to_str().unwrap(),
            "--claude",
            env.claude_projects.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&ingest.stderr).into_owned();
    ok(ingest);
    assert!(stderr.contains("kept by a keep rule"), "{stderr}");
    let runs = json_of(home, &["runs", "--json"]);
    let runs = runs.as_array().unwrap();
    assert!(
        runs.len() >= 2 && runs.iter().all(|r| r["kept"] == true),
        "{runs:?}"
    );

    let list = json_of(home, &["keep", "list", "--json"]);
    assert_eq!(list["rules"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["rules"][0]["workspace"], "test");
    assert_eq!(list["rules"][0]["agent"], Value::Null);
    let kept = list["runs"].as_array().unwrap();
    assert_eq!(kept.len(), runs.len(), "{list}");
    assert!(
        kept.iter()
            .all(|k| k["reason"] == "workspace" && k["standing"] == "ok")
    );
    let text = ok(runread(home, &["keep", "list"]));
    assert!(text.contains("rule  workspace test ("), "{text}");
    assert!(
        text.contains(&format!("{} runs kept, ", runs.len())),
        "{text}"
    );

    let status = |json: bool| {
        let mut args = vec!["status", "--listen", "127.0.0.1:9"];
        if json {
            args.push("--json");
        }
        ok(runread_in(home, &user, &args))
    };
    let v: Value = serde_json::from_str(&status(true)).unwrap();
    assert_eq!(v["kept"]["runs"], runs.len(), "{v}");
    assert_eq!(v["kept"]["rules"], 1);
    assert_eq!(v["kept"]["limitBytes"], 2u64 << 30);
    assert_eq!(v["agents"][1]["cleanup"]["notKeptDeletedWithinWeek"], 0);
    let out = status(false);
    assert!(
        out.contains(&format!("kept runs: {}, ", runs.len())),
        "{out}"
    );
    assert!(out.contains("of 2.0 GiB bound; 1 keep rule"), "{out}");
    assert!(!out.contains("not kept   "), "{out}");

    let dropped = ok(runread(home, &["keep", "drop", "--workspace", "test"]));
    assert!(
        dropped.contains(&format!(
            "removed 1 keep rule; dropped {} kept runs",
            runs.len()
        )),
        "{dropped}"
    );
    let claude = runs.iter().filter(|r| r["agent"] == "claude").count();
    let v: Value = serde_json::from_str(&status(true)).unwrap();
    assert_eq!(v["kept"]["runs"], 0, "{v}");
    assert_eq!(
        v["agents"][1]["cleanup"]["notKeptDeletedWithinWeek"], claude,
        "{v}"
    );
    let out = status(false);
    assert!(
        out.contains(&format!(
            "not kept   {claude} run{} deleted by Claude Code within a week and not kept",
            if claude == 1 { "" } else { "s" }
        )),
        "{out}"
    );
    assert!(out.contains("runread keep --workspace NAME"), "{out}");
}

/// Pi's `sample` with its first prompt made `bytes` long: a run whose kept copy passes the least
/// bound (1 MiB), and the session's other run a small one.
fn home_with_a_large_run(env: &runread_testkit::Env, bytes: usize) -> (Value, Value) {
    let mut first = true;
    env.place_edited("sample", SETTLED, |line| {
        if first && line["type"] == "message" && line["message"]["role"] == "user" {
            first = false;
            let text = "x".repeat(bytes);
            line["message"]["content"] = serde_json::json!([{"type": "text", "text": text}]);
        }
    });
    let home = env.dir.path();
    ok(runread(
        home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    let mut runs = pi_runs(home);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let kept_bytes = |run: &Value| {
        ok(on(home, &["keep"], run));
        let b = json_of(home, &["keep", "list", "--json"])["total"]["bytes"].clone();
        ok(on(home, &["keep", "drop"], run));
        b.as_u64().unwrap()
    };
    runs.sort_by_key(|r| std::cmp::Reverse(kept_bytes(r)));
    let small = runs.pop().unwrap();
    (runs.pop().unwrap(), small)
}

#[test]
fn the_bound_on_kept_runs_is_held_at_n_and_refused_at_n_plus_one() {
    let env = runread_testkit::Env::new();
    let home = env.dir.path();
    let (large, small) = home_with_a_large_run(&env, 1_200_000);
    let bytes = |run: &Value| {
        ok(on(home, &["keep"], run));
        json_of(
            home,
            &[
                "show",
                "--json",
                named(run)[0].as_str(),
                "--session",
                named(run)[2].as_str(),
            ],
        )["keptBytes"]
            .as_u64()
            .unwrap()
    };
    let a = bytes(&large);
    let b = bytes(&small);
    assert!(a >= 1 << 20, "{a}");
    ok(on(home, &["keep", "drop"], &large));
    ok(on(home, &["keep", "drop"], &small));

    // Exactly one run's bytes: it is kept; the other is refused, the message saying why.
    let said = ok(runread(home, &["keep", "limit", &a.to_string()]));
    assert!(said.starts_with("kept runs are now bounded to "), "{said}");
    ok(on(home, &["keep"], &large));
    let why = refused(on(home, &["keep"], &small), home);
    assert!(why.contains("not kept: with it ("), "{why}");
    assert!(why.contains("`runread keep limit`"), "{why}");
    // Both runs' bytes: both are kept; one byte under them, the second is refused.
    ok(runread(home, &["keep", "limit", &(a + b).to_string()]));
    ok(on(home, &["keep"], &small));
    ok(on(home, &["keep", "drop"], &small));
    ok(runread(home, &["keep", "limit", &(a + b - 1).to_string()]));
    let why = refused(on(home, &["keep"], &small), home);
    assert!(why.contains("not kept: with it ("), "{why}");
    let list = json_of(home, &["keep", "list", "--json"]);
    assert_eq!(
        list["total"]["runs"], 1,
        "nothing dropped to make room: {list}"
    );
    assert_eq!(list["total"]["limitBytes"], a + b - 1);

    // Sizes it reads, and what it refuses with a fixed message.
    ok(runread(home, &["keep", "limit", "2GiB"]));
    let shown = ok(runread(home, &["keep", "limit"]));
    assert!(
        shown.starts_with("kept runs are bounded to 2.0 GiB (1 run kept, "),
        "{shown}"
    );
    ok(runread(home, &["keep", "limit", "500MiB"]));
    for bad in ["1.5GiB", "2GB", "lots", "-1"] {
        let why = refused(runread(home, &["keep", "limit", "--", bad]), home);
        assert!(
            why.contains("SIZE is a whole number of bytes"),
            "{bad}: {why}"
        );
    }
    let why = refused(runread(home, &["keep", "limit", "1KiB"]), home);
    assert!(
        why.contains("the bound on kept runs must be from 1.0 MiB to"),
        "{why}"
    );
    let why = refused(runread(home, &["keep"]), home);
    assert!(why.contains("name a run"), "{why}");
}
