//! Issue 46, finding 5: every string an agent wrote reaches the owner only masked. For a real
//! session of each agent, every string value of every line of its files (ids, names, models,
//! times, texts; the first 64 bytes of a long one) becomes a known secret after ingest; then every
//! page of the console (the Requests page with a request pending) and every owner's output of the CLI (`runs`, `show`, `grant list`,
//! `reader list`, `audit`, `snapshots`, as text and as JSON) is rendered, and none of them holds
//! any of those strings — raw, HTML-escaped or JSON-escaped.

use runread_store::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;

use runread_testkit::Env;

/// The first `max` bytes of `s`, on a character boundary.
fn head(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn strings_of(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => {
            out.insert(s.clone());
        }
        Value::Array(a) => a.iter().for_each(|v| strings_of(v, out)),
        Value::Object(m) => m.values().for_each(|v| strings_of(v, out)),
        _ => {}
    }
}

/// Every string an agent wrote in `files` that can be a known secret: at least its bound's
/// length, and not one of the formats' own words (`assistant`, `end_turn`, `toolResult`: letters
/// alone), which no one's secret is. Times are left out: a time the agent wrote is shown only as the instant it names,
/// in runread's own format (`agent_time`), never as its text.
fn agent_strings(files: &[PathBuf]) -> Vec<String> {
    let mut all = BTreeSet::new();
    for f in files {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                strings_of(&v, &mut all);
            }
        }
    }
    let word = |s: &str| s.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_');
    let mut out: BTreeSet<String> = BTreeSet::new();
    for s in all {
        let s = head(s.trim(), 64).trim().to_owned();
        let date = s.len() == 10 && s.bytes().filter(|b| *b == b'-').count() == 2;
        let time = runread_core::timefmt::parse_rfc3339(&s).is_some() || date;
        if s.len() >= runread_core::redact::SECRET_MIN_BYTES && !word(&s) && !time {
            out.insert(s);
        }
    }
    out.into_iter().collect()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Every form `s` takes in a page or in JSON.
fn forms(s: &str) -> Vec<String> {
    let html = s
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    let json = serde_json::to_string(s).unwrap();
    let json = json[1..json.len() - 1].to_owned();
    vec![s.to_owned(), html, json]
}

fn assert_masked(what: &str, out: &str, secrets: &[String]) {
    for s in secrets {
        for form in forms(s) {
            assert!(!out.contains(&form), "{what} shows {s:?}");
        }
    }
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

/// The console's pages over `env`'s store, logged in: (path, body) for each.
fn console_pages(env: &Env, run: &runread_store::RunRecord) -> Vec<(String, String)> {
    let t = &run.target;
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                b => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    let run_page = format!(
        "/run?session={}&generation={}&run={}",
        enc(&t.session_id),
        t.generation,
        enc(&t.run_id)
    );
    let paths = [
        "/runs".to_owned(),
        "/runs/rows".to_owned(),
        run_page.clone(),
        format!("{run_page}&history=1"),
        "/grants".to_owned(),
        "/readers".to_owned(),
        "/audit".to_owned(),
        "/connections".to_owned(),
        "/secrets".to_owned(),
        "/requests".to_owned(),
    ];
    runread_testkit::block_on(async {
        let service = env.service();
        let console = runread_console::Console::new(service.owner(), "http://x/mcp".into());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let c = console.clone();
        tokio::spawn(runread_console::serve(
            console,
            "127.0.0.1:0".parse().unwrap(),
            move |a| {
                let _ = tx.send((a, c.login_url(a).unwrap()));
            },
            async move {
                let _ = stopped.await;
            },
        ));
        let (addr, login) = rx.await.unwrap();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let r = http.get(&login).send().await.unwrap();
        let cookie = r.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let mut pages = Vec::new();
        for p in paths {
            let r = http
                .get(format!("http://{addr}{p}"))
                .header("cookie", &cookie)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{p}");
            pages.push((p, r.text().await.unwrap()));
        }
        pages
    })
}

#[test]
fn every_string_an_agent_wrote_is_masked_in_every_view_of_the_owner() {
    type Place = fn(&Env) -> Vec<PathBuf>;
    let agents: [(&str, Place); 4] = [
        ("pi 0.73.1", |env| {
            vec![env.place(
                &runread_testkit::PI_0_73_1.fixture("sample"),
                Duration::from_secs(60),
            )]
        }),
        ("pi 1.6.0", |env| {
            vec![env.place(
                &runread_testkit::PI_1_6_0.fixture("sample"),
                Duration::from_secs(60),
            )]
        }),
        ("claude", |env| {
            env.place_claude("tool-then-answer", Duration::from_secs(60));
            files_under(&env.claude_projects)
        }),
        ("codex", |env| {
            env.place_codex("tool-then-answer", Duration::from_secs(60))
        }),
    ];
    for (agent, place) in agents {
        let env = Env::new();
        let files = place(&env);
        env.ingest();
        let run = env.longest_answer_run();
        let t = run.target.clone();
        // Shared (its snapshot sealed), read once by its reader (a row of the audit).
        let now = runread_core::timefmt::now_ms();
        let g = env
            .owner()
            .grant_run(
                run.clone(),
                Feature::ALL.to_vec(),
                now + 3_600_000,
                ("assistant", runread_service::owner::NewReaderPolicy::Make),
                None,
                now,
            )
            .unwrap();
        let svc = env.service();
        let ctx = Arc::new(svc.admit_key(&[g.key.unwrap().as_bytes()]).unwrap());
        runread_testkit::block_on(svc.call(
            ctx.clone(),
            "read_final_answer",
            json!({"target": t}),
            None,
        ))
        .unwrap();
        // And it asks for more (`request_access`): the Requests page shows the runs it matches.
        runread_testkit::block_on(svc.call(ctx, "request_access", json!({"latest": 5}), None))
            .unwrap();
        // Now every string the agent wrote is a known secret.
        let secrets = agent_strings(&files);
        assert!(secrets.len() > 20, "{agent}: {} strings", secrets.len());
        assert!(
            secrets.contains(&t.run_id) || secrets.iter().any(|s| t.run_id.starts_with(s)),
            "{agent}: the run id is among them"
        );
        for (i, s) in secrets.iter().enumerate() {
            env.owner().add_secret(&format!("s{i}"), s, now).unwrap();
        }

        for (path, body) in console_pages(&env, &run) {
            assert_masked(&format!("{agent}: console {path}"), &body, &secrets);
            if path == "/requests" {
                assert!(
                    body.contains("data-request=") && body.contains("name=\"run\""),
                    "{agent}: the request and its runs are on the page, not vacuous"
                );
            }
        }
        let home = env.dir.path();
        for args in [
            vec!["runs"],
            vec!["runs", "--json"],
            vec![
                "show",
                t.run_id.as_str(),
                "--session",
                t.session_id.as_str(),
            ],
            vec![
                "show",
                t.run_id.as_str(),
                "--session",
                t.session_id.as_str(),
                "--json",
            ],
            vec![
                "show",
                t.run_id.as_str(),
                "--session",
                t.session_id.as_str(),
                "--history",
            ],
            vec!["grant", "list"],
            vec!["grant", "list", "--json"],
            vec!["reader", "list"],
            vec!["reader", "list", "--json"],
            vec!["audit"],
            vec!["audit", "--json"],
            vec!["snapshots"],
            vec!["snapshots", "--json"],
        ] {
            let out = runread(home, &args);
            assert!(!out.trim().is_empty(), "{agent}: {args:?} printed nothing");
            assert_masked(&format!("{agent}: runread {args:?}"), &out, &secrets);
        }
        assert!(
            env.store.snapshots().unwrap().len() == 1,
            "{agent}: the shared run is kept"
        );
    }
}
