//! The client configs the docs show are the ones runread prints: every `client-config` block of
//! README.md and docs/clients.md that `runread_mcp::configs` makes equals what it makes for a
//! reader named `claude-code` on port 7077 (`tests/agents/readers.py` then pastes those blocks
//! into the real clients), and `reader add` prints them.

use std::path::Path;

use runread_mcp::configs::{ClientConfigs, for_key};

use crate::support::{json_of, ok, runread};

const URL: &str = "http://127.0.0.1:7077/mcp";
const READER: &str = "claude-code";

/// Every `<!-- client-config: NAME -->` block of the README and docs/clients.md: (name, text).
fn doc_blocks() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for doc in ["README.md", "docs/clients.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for part in text.split("<!-- client-config: ").skip(1) {
            let (name, rest) = part.split_once(" -->\n```").unwrap();
            let body = rest.split_once('\n').unwrap().1;
            let body = body.split_once("```").unwrap().0;
            out.push((name.to_owned(), body.to_owned()));
        }
    }
    out
}

/// What `configs` makes for the block `name`, in the block's form; `None` for a block it does
/// not make (the stdio configs: the client launches runread with a key file).
fn printed(c: &ClientConfigs, name: &str) -> Option<Printed> {
    Some(match name {
        "mcp-servers-http" => Printed::Json(c.mcp_servers.clone()),
        "pi-mcp-json" => Printed::Json(c.pi_json.clone()),
        "claude-http-command" => Printed::Text(format!("{}\n", c.claude_command)),
        "pi-command" => Printed::Text(format!("{}\n", c.pi_command)),
        "codex-http" => Printed::Text(c.codex_toml.clone()),
        "key-file-env" => Printed::Text(format!("{}\n{}\n", c.store_key, c.export_key)),
        _ => return None,
    })
}

#[derive(Debug, PartialEq)]
enum Printed {
    /// Compared parsed: the docs wrap JSON for reading, runread prints it pretty.
    Json(serde_json::Value),
    Text(String),
}

#[test]
fn every_http_config_in_the_docs_is_what_runread_prints() {
    let c = for_key(URL, "<key>", READER);
    let mut seen = Vec::new();
    for (name, body) in doc_blocks() {
        let Some(want) = printed(&c, &name) else {
            continue;
        };
        let got = match want {
            Printed::Json(_) => Printed::Json(serde_json::from_str(&body).unwrap()),
            // The docs name the file a TOML block goes in, in a comment line of its own.
            Printed::Text(_) => Printed::Text(
                body.lines()
                    .filter(|l| !l.starts_with("# "))
                    .map(|l| format!("{l}\n"))
                    .collect(),
            ),
        };
        assert_eq!(got, want, "docs block {name}");
        seen.push(name);
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "claude-http-command",
            "codex-http",
            "key-file-env",
            "mcp-servers-http",
            "pi-command",
            "pi-mcp-json"
        ]
    );
}

#[test]
fn reader_add_prints_the_key_once_and_configs_that_read_it_from_the_environment() {
    let home = tempfile::tempdir().unwrap();
    let out = ok(runread(home.path(), &["reader", "add", READER]));
    let key = out
        .lines()
        .find(|l| runread_core::key::is_well_formed(l.trim()))
        .unwrap()
        .trim()
        .to_owned();
    let c = for_key(URL, &key, READER);
    for part in [
        c.store_key.as_str(),
        c.export_key.as_str(),
        c.claude_command.as_str(),
        c.codex_toml.trim_end(),
        c.pi_command.as_str(),
    ] {
        assert!(out.contains(part), "{part} not in:\n{out}");
    }
    // The key itself only twice: its own line and the line that stores it.
    assert_eq!(out.matches(key.as_str()).count(), 2, "{out}");
    let json = json_of(home.path(), &["reader", "add", "codex", "--json"]);
    let key = json["key"].as_str().unwrap();
    let c = for_key(URL, key, "codex");
    assert_eq!(json["clientConfig"], c.mcp_servers);
    assert_eq!(json["claudeCommand"], c.claude_command.as_str());
    assert_eq!(json["codexToml"], c.codex_toml.as_str());
    assert_eq!(json["piConfig"], c.pi_json);
    assert_eq!(json["piCommand"], c.pi_command.as_str());
    assert_eq!(json["storeKeyLine"], c.store_key.as_str());
    assert_eq!(json["exportKeyLine"], c.export_key.as_str());
    assert_eq!(json["keyEnv"], "RUNREAD_KEY");
    assert_eq!(json["keyFile"], "~/.config/runread/codex.key");
    assert_eq!(json["clientConfigLiteral"], c.mcp_servers_literal);
}

#[test]
fn key_file_writes_the_new_key_to_a_new_0600_file_and_never_shows_it() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("ci.key");
    let f = file.to_str().unwrap();
    let out = ok(runread(
        home.path(),
        &["reader", "add", "ci", "--key-file", f],
    ));
    let key = std::fs::read_to_string(&file).unwrap();
    let key = key.strip_suffix('\n').unwrap();
    assert!(runread_core::key::is_well_formed(key));
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(!out.contains(key), "{out}");
    assert!(
        out.contains(&format!("export RUNREAD_KEY=\"$(cat {f})\"")),
        "{out}"
    );
    // Never over an existing file: refused before a reader is made, the file untouched.
    let again = runread(home.path(), &["reader", "add", "ci2", "--key-file", f]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("never overwrites"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{key}\n"));
    let readers = json_of(home.path(), &["reader", "list", "--json"]);
    assert_eq!(readers.as_array().unwrap().len(), 1, "{readers}");
    // Its directory must exist.
    let gone = keys.path().join("no-such-dir/ci3.key");
    let refused = runread(
        home.path(),
        &["reader", "add", "ci3", "--key-file", gone.to_str().unwrap()],
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("does not exist"));
    // --json: the file, and nothing that holds the key.
    let rotated = keys.path().join("ci-rotated.key");
    let json = json_of(
        home.path(),
        &[
            "reader",
            "rotate",
            "ci",
            "--key-file",
            rotated.to_str().unwrap(),
            "--json",
        ],
    );
    let new_key = std::fs::read_to_string(&rotated).unwrap();
    assert!(!json.to_string().contains(new_key.trim()), "{json}");
    assert_eq!(json["keyFile"], rotated.to_str().unwrap());
    assert!(json.get("key").is_none() && json.get("storeKeyLine").is_none());
    assert_ne!(new_key.trim(), key);
}

#[test]
fn grant_key_file_writes_a_new_readers_key_and_nothing_for_a_reader_that_has_one() {
    let env = runread_testkit::Env::new();
    env.place("sample", std::time::Duration::from_secs(60));
    let home = env.dir.path();
    ok(runread(
        home,
        &["ingest", "--pi", env.sessions.to_str().unwrap()],
    ));
    let runs = json_of(home, &["runs", "--json"]);
    let run_id = runs[0]["target"]["runId"].as_str().unwrap().to_owned();
    let file = env.dir.path().join("new.key");
    let f = file.to_str().unwrap();
    let grant = |to: &str, key_file: &str| {
        runread(
            home,
            &[
                "grant",
                "--run",
                &run_id,
                "--to",
                to,
                "--key-file",
                key_file,
            ],
        )
    };
    let out = ok(grant("claude-code", f));
    let key = std::fs::read_to_string(&file).unwrap();
    assert!(runread_core::key::is_well_formed(key.trim()));
    assert!(!out.contains(key.trim()), "{out}");
    assert!(out.contains("read key written to"), "{out}");
    // The reader has its key: no new one, nothing written.
    let other = env.dir.path().join("other.key");
    let again = grant("claude-code", other.to_str().unwrap());
    assert!(again.status.success());
    assert!(!other.exists());
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing written"));
}
