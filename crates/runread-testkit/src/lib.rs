//! Test support: a temporary runread home and workspace, real session fixtures (from
//! `fixtures/pi` and `fixtures/claude`, written by the real agents) placed into that workspace,
//! and helpers to read what the agent wrote independently of runread's own parser.
#![forbid(unsafe_code)]
// Test support: a failed setup step is a failed test, so panicking on it is the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod hooked;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod records;
pub mod reported;
pub mod serve;
pub mod unrecognised;

use runread_store::prelude::*;
pub use serve::{Serving, TestGrant, block_on, free_port};

pub use reported::{
    CLAUDE_FIXTURES, CODEX_FIXTURES, COPILOT_FIXTURES, GEMINI_FIXTURES, OPENCODE_FIXTURES,
    RECORDED_AGENTS, RecordedAgent, Reported, ReportedStep, claude_steps, codex_steps,
    copilot_steps, gemini_steps, opencode_steps, step_for,
};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use runread_store::Workspace;
use runread_store::sqlite::SqliteStore;

/// The repository's `fixtures/pi` directory.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pi")
}

/// A Pi version whose real sessions `fixtures/pi` holds: 0.73.1's in `fixtures/pi/NAME`, every
/// later one's in `fixtures/pi/VERSION/NAME`, made from the same scenarios
/// (`fixtures/pi/tools/regenerate.sh`). A test that reads Pi fixtures runs once per version
/// ([`pi_versions!`]), naming its fixtures through [`PiVersion::fixture`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PiVersion {
    /// The version, as the harness manifests record it.
    pub version: &'static str,
    /// The folder under `fixtures/pi` (empty for 0.73.1, which sits at its top).
    dir: &'static str,
}

/// Pi 0.73.1 (`@mariozechner/pi-coding-agent`).
pub const PI_0_73_1: PiVersion = PiVersion {
    version: "0.73.1",
    dir: "",
};
/// Pi 1.6.0 (`@earendil-works/pi-coding-agent`).
pub const PI_1_6_0: PiVersion = PiVersion {
    version: "1.6.0",
    dir: "1.6.0/",
};
/// Every Pi version with fixtures, oldest first.
pub const PI_VERSIONS: [PiVersion; 2] = [PI_0_73_1, PI_1_6_0];

impl PiVersion {
    /// The name of this version's fixture `name`, for [`Env::place`], [`fixture_session`] and
    /// [`fixtures_dir`]`.join(…)`.
    pub fn fixture(&self, name: &str) -> String {
        format!("{}{name}", self.dir)
    }

    /// Whether Pi of this version is 1.x or later (`@earendil-works/pi-coding-agent`), which
    /// writes what 0.73.1 did not: a `system` message before the first prompt, `context_edit`
    /// entries, `agent_settled` and `entry_appended` events, and forks (`parentSession`).
    pub fn is_1x(&self) -> bool {
        !self.version.starts_with("0.")
    }
}

impl std::fmt::Display for PiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pi {}", self.version)
    }
}

/// One test body per Pi version: `pi_versions! { #[test] fn name(v) { … } }` makes the module
/// `name` with one test per version (`name::pi_0_73_1`, `name::pi_1_6_0`), the body run with `v`
/// bound to that [`PiVersion`], so a failure names the version. `async fn` works the same with
/// an async test attribute.
#[macro_export]
macro_rules! pi_versions {
    ($(#[$attr:meta])* fn $name:ident($v:ident) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(#[$attr])* fn pi_0_73_1() { let $v = $crate::PI_0_73_1; $body }
            $(#[$attr])* fn pi_1_6_0() { let $v = $crate::PI_1_6_0; $body }
        }
    };
    ($(#[$attr:meta])* async fn $name:ident($v:ident) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(#[$attr])* async fn pi_0_73_1() { let $v = $crate::PI_0_73_1; $body }
            $(#[$attr])* async fn pi_1_6_0() { let $v = $crate::PI_1_6_0; $body }
        }
    };
}

/// The one session file of fixture `name`.
pub fn fixture_session(name: &str) -> PathBuf {
    let mut files = fixture_sessions(name);
    assert_eq!(
        files.len(),
        1,
        "fixture {name} should hold one session file"
    );
    files.remove(0)
}

/// The session files of fixture `name`, sorted (Pi names them by creation time, so a fork comes
/// after the session it forked).
pub fn fixture_sessions(name: &str) -> Vec<PathBuf> {
    let dir = fixtures_dir().join(name).join("sessions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fixture {name} has no session file");
    files
}

/// The repository's `fixtures/claude` directory.
pub fn claude_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/claude")
}

/// The session files of Claude Code fixture `name` (`sessions/<escaped cwd>/<id>.jsonl`), sorted.
pub fn claude_fixture_sessions(name: &str) -> Vec<PathBuf> {
    let dir = claude_fixtures_dir().join(name).join("sessions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fixture {name} has no session file");
    files
}

pub fn codex_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex")
}

/// The repository's `fixtures/gemini/0.61.0` directory (Gemini CLI 0.61.0's recordings).
pub fn gemini_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gemini/0.61.0")
}

/// The session files of Gemini CLI fixture `name` (`sessions/<project>/chats/session-*.jsonl`;
/// not a subagent's), sorted.
pub fn gemini_fixture_sessions(name: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = files_under(&gemini_fixtures_dir().join(name).join("sessions"))
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("session-") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fixture {name} has no session file");
    files
}

/// The repository's `fixtures/copilot/1.0.102` directory (Copilot CLI 1.0.102's recordings).
pub fn copilot_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/copilot/1.0.102")
}

/// The session files of Copilot CLI fixture `name` (`sessions/session-state/<id>/events.jsonl`),
/// sorted.
pub fn copilot_fixture_sessions(name: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = files_under(&copilot_fixtures_dir().join(name).join("sessions"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "events.jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fixture {name} has no session file");
    files
}

/// The rollout files of Codex fixture `name` (`sessions/YYYY/MM/DD/rollout-….jsonl`), sorted.
pub fn codex_fixture_sessions(name: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = files_under(&codex_fixtures_dir().join(name).join("sessions"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fixture {name} has no session file");
    files
}

/// A temporary runread home, one registered workspace, a Pi sessions directory, a Claude Code
/// projects directory and a Codex sessions directory.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub workspace: PathBuf,
    pub sessions: PathBuf,
    /// Claude Code's `projects` directory for this workspace's sessions.
    pub claude_projects: PathBuf,
    /// Codex's `sessions` directory.
    pub codex_sessions: PathBuf,
    /// Gemini CLI's `tmp` directory (`~/.gemini/tmp`).
    pub gemini_tmp: PathBuf,
    /// Copilot CLI's `session-state` directory (`~/.copilot/session-state`).
    pub copilot_state: PathBuf,
    /// OpenCode's data directory (`~/.local/share/opencode`, holding `opencode.db`).
    pub opencode_data: PathBuf,
    pub store: Arc<SqliteStore>,
    pub ws: Workspace,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = dir.path().join("workspace");
        let sessions = dir.path().join("sessions");
        let claude_projects = dir.path().join("claude-projects");
        std::fs::create_dir_all(&workspace).expect("mkdir");
        std::fs::create_dir_all(&sessions).expect("mkdir");
        std::fs::create_dir_all(&claude_projects).expect("mkdir");
        let codex_sessions = dir.path().join("codex-sessions");
        std::fs::create_dir_all(&codex_sessions).expect("mkdir");
        let gemini_tmp = dir.path().join("gemini-tmp");
        std::fs::create_dir_all(&gemini_tmp).expect("mkdir");
        let copilot_state = dir.path().join("copilot-session-state");
        std::fs::create_dir_all(&copilot_state).expect("mkdir");
        let opencode_data = dir.path().join("opencode-data");
        std::fs::create_dir_all(&opencode_data).expect("mkdir");
        let workspace = std::fs::canonicalize(&workspace).expect("canonicalize");
        let store =
            Arc::new(SqliteStore::open(&dir.path().join("runread.db")).expect("open store"));
        let ws = store
            .add_workspace(workspace.to_str().expect("utf-8"), "test", 1)
            .expect("add workspace");
        Env {
            dir,
            workspace,
            sessions,
            claude_projects,
            codex_sessions,
            gemini_tmp,
            copilot_state,
            opencode_data,
            store,
            ws,
        }
    }

    /// Copies fixture `name`'s session into the sessions directory with its header's `cwd` moved
    /// into this workspace (every other line byte-identical) and its mtime `age` in the past.
    /// Returns the copy's path.
    pub fn place(&self, name: &str, age: Duration) -> PathBuf {
        self.place_file(&fixture_session(name), age)
    }

    /// [`Env::place`] for every session file of fixture `name` (a fork and its parent).
    pub fn place_all(&self, name: &str, age: Duration) -> Vec<PathBuf> {
        fixture_sessions(name)
            .iter()
            .map(|src| self.place_file(src, age))
            .collect()
    }

    fn place_file(&self, src: &Path, age: Duration) -> PathBuf {
        let text = std::fs::read(src).expect("read fixture");
        let dst = self.sessions.join(src.file_name().expect("file name"));
        std::fs::write(
            &dst,
            relocated(&text, self.workspace.to_str().expect("utf-8")),
        )
        .expect("write");
        set_age(&dst, age);
        dst
    }

    /// [`Env::place`] with every line after the header passed through `edit` as JSON first (and
    /// written back compact): a real session with what the agent wrote changed, as an attacker
    /// who controls the agent's input could have it written.
    pub fn place_edited(
        &self,
        name: &str,
        age: Duration,
        mut edit: impl FnMut(&mut serde_json::Value),
    ) -> PathBuf {
        let path = self.place(name, age);
        let text = std::fs::read_to_string(&path).expect("read placed session");
        let mut lines = text.lines();
        let mut out = String::from(lines.next().expect("header"));
        out.push('\n');
        for line in lines {
            let mut v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            edit(&mut v);
            out.push_str(&serde_json::to_string(&v).expect("serialize"));
            out.push('\n');
        }
        std::fs::write(&path, out).expect("write");
        set_age(&path, age);
        path
    }

    /// Pi fixture `name` placed with its first prompts' texts replaced by `prompts` (in order; the
    /// rest as they are), each replaced prompt's time set to `time` (any text: what an agent, or
    /// whoever wrote its input, put where a time belongs).
    pub fn place_with_prompts(&self, name: &str, age: Duration, prompts: &[String], time: &str) {
        let mut seen = 0;
        self.place_edited(name, age, |line| {
            if line["type"] != "message" || line["message"]["role"] != "user" {
                return;
            }
            let Some(text) = prompts.get(seen) else {
                return;
            };
            seen += 1;
            line["message"]["content"] = serde_json::json!([{"type": "text", "text": text}]);
            line["timestamp"] = serde_json::json!(time);
        });
    }

    /// The sealing keys of this home (created on first use).
    pub fn keys(&self) -> Arc<runread_keys::FileKeys> {
        Arc::new(runread_keys::FileKeys::open(self.dir.path()).expect("gate keys"))
    }

    /// Copies Claude Code fixture `name`'s session files (and subagent transcripts) into the
    /// projects directory, under a folder named as Claude Code names this workspace's, with every
    /// line's `cwd` moved into this workspace (nothing else changes), mtimes `age` in the past.
    /// Returns the copied session files.
    pub fn place_claude(&self, name: &str, age: Duration) -> Vec<PathBuf> {
        let ws = self.workspace.to_str().expect("utf-8");
        let dst_dir = self.claude_projects.join(claude_project_dir(ws));
        let mut out = Vec::new();
        for src in claude_fixture_sessions(name) {
            let src_dir = src.parent().expect("dir");
            copy_tree(src_dir, &dst_dir, ws);
            out.push(dst_dir.join(src.file_name().expect("name")));
        }
        for p in files_under(&dst_dir) {
            set_age(&p, age);
        }
        out
    }

    /// Copies Codex fixture `name`'s rollout files into the sessions directory (same
    /// `YYYY/MM/DD/` folders), with the cwd of `session_meta` and `turn_context` moved into this
    /// workspace (nothing else changes, but for what the move shifts: a fork's
    /// `history_base.end_byte_offset` is set to where its parent's line now ends, as Codex would
    /// have written it there), mtimes `age` in the past. Returns the copied files, sorted.
    pub fn place_codex(&self, name: &str, age: Duration) -> Vec<PathBuf> {
        let ws = self.workspace.to_str().expect("utf-8");
        let src_root = codex_fixtures_dir().join(name).join("sessions");
        let mut out = Vec::new();
        for src in codex_fixture_sessions(name) {
            let to = self
                .codex_sessions
                .join(src.strip_prefix(&src_root).expect("under sessions"));
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            let bytes = std::fs::read(&src).expect("read");
            std::fs::write(&to, relocated_codex(&bytes, ws)).expect("write");
            out.push(to);
        }
        for p in &out {
            rebase_codex_fork(p, &out);
            set_age(p, age);
        }
        out
    }

    /// Pi fixture `name`'s session without its last line (the last run's answer), placed as
    /// `live.jsonl` (its `cwd` moved into this workspace), and that line, to append later: its
    /// last run is running until the line is appended and ingested.
    pub fn place_unfinished(&self, name: &str) -> (PathBuf, Vec<u8>) {
        let src = fixture_session(name);
        let bytes = relocated(
            &std::fs::read(src).expect("fixture"),
            self.workspace.to_str().expect("utf-8"),
        );
        let (head, tail) = without_last_line(&bytes);
        let path = self.sessions.join("live.jsonl");
        std::fs::write(&path, head).expect("write");
        (path, tail.to_vec())
    }

    /// The ingested run that is running (the last of [`Env::place_unfinished`]'s session).
    pub fn running_run(&self) -> runread_store::RunRecord {
        self.store
            .runs()
            .expect("runs")
            .into_iter()
            .find(|r| r.run.status == runread_sessions::RunStatus::Running)
            .expect("a running run: place_unfinished, then ingest")
    }

    /// Appends `tail` to the session file at `path`.
    pub fn append(path: &Path, tail: &[u8]) {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(tail))
            .expect("append");
    }

    /// Copies Gemini CLI fixture `name`'s tmp folder (`<project>/.project_root`, `chats/`, a
    /// subagent's `chats/<session id>/`) into the Gemini tmp directory, with the project root
    /// moved into this workspace: `.project_root` holds it, and every metadata line's
    /// `projectHash` its SHA-256 (the same length: nothing else moves), mtimes `age` in the past.
    /// Returns the copied session files (`chats/session-*.jsonl`), sorted.
    pub fn place_gemini(&self, name: &str, age: Duration) -> Vec<PathBuf> {
        let ws = self.workspace.to_str().expect("utf-8");
        let src_root = gemini_fixtures_dir().join(name).join("sessions");
        let new_hash = runread_core::sha256_hex(ws.as_bytes());
        let mut out = Vec::new();
        for src in files_under(&src_root) {
            let rel = src.strip_prefix(&src_root).expect("under sessions");
            let to = self.gemini_tmp.join(rel);
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            let bytes = std::fs::read(&src).expect("read");
            if src.file_name().is_some_and(|n| n == ".project_root") {
                std::fs::write(&to, ws).expect("write");
            } else {
                let project = src_root.join(rel.components().next().expect("project"));
                let root = std::fs::read(project.join(".project_root")).expect(".project_root");
                let old_hash = runread_core::sha256_hex(&root);
                let text = String::from_utf8(bytes).expect("utf-8");
                std::fs::write(&to, text.replace(&old_hash, &new_hash)).expect("write");
                if to
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("session-") && n.ends_with(".jsonl"))
                {
                    out.push(to.clone());
                }
            }
            set_age(&to, age);
        }
        out.sort();
        assert!(!out.is_empty(), "fixture {name} has no session file");
        out
    }

    /// Copies Copilot CLI fixture `name`'s session folders (`<id>/events.jsonl`, `workspace.yaml`)
    /// into the Copilot session-state directory, with the workspace the harness ran in (the
    /// manifest's `workspace`, in `context.cwd` and the system prompt) moved into this workspace,
    /// mtimes `age` in the past. Returns the copied session files, sorted.
    pub fn place_copilot(&self, name: &str, age: Duration) -> Vec<PathBuf> {
        let ws = self.workspace.to_str().expect("utf-8");
        let fixture = copilot_fixtures_dir().join(name);
        let manifest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(fixture.join("manifest.json")).expect("manifest"),
        )
        .expect("manifest JSON");
        let old = manifest["workspace"]
            .as_str()
            .expect("workspace")
            .to_owned();
        let src_root = fixture.join("sessions").join("session-state");
        let mut out = Vec::new();
        for src in files_under(&src_root) {
            let to = self
                .copilot_state
                .join(src.strip_prefix(&src_root).expect("under session-state"));
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            let text = String::from_utf8(std::fs::read(&src).expect("read")).expect("utf-8");
            std::fs::write(&to, text.replace(&old, ws)).expect("write");
            set_age(&to, age);
            if to.file_name().is_some_and(|n| n == "events.jsonl") {
                out.push(to);
            }
        }
        out.sort();
        assert!(!out.is_empty(), "fixture {name} has no session file");
        out
    }

    /// Copies OpenCode fixture `name`'s database (`opencode.db`, and its `-wal` when the fixture
    /// keeps one) into the OpenCode data directory, with the workspace the harness ran in (the
    /// manifest's `workspace`, in every row that names it) moved into this workspace and every
    /// session and message last changed `age` in the past. Returns the names of its sessions
    /// (`<database>#<session id>`), sorted. A second fixture placed goes into the same database
    /// as OpenCode keeps every session in one.
    pub fn place_opencode(&self, name: &str, age: Duration) -> Vec<PathBuf> {
        let fixture = opencode_fixtures_dir().join(name);
        let old = manifest_workspace(&fixture);
        let db = self.opencode_data.join("opencode.db");
        if db.exists() {
            merge_opencode(&fixture.join("sessions").join("opencode.db"), &db);
        } else {
            for f in std::fs::read_dir(fixture.join("sessions")).expect("fixture") {
                let f = f.expect("entry");
                std::fs::copy(f.path(), self.opencode_data.join(f.file_name())).expect("copy");
            }
        }
        let ws = self.workspace.to_str().expect("utf-8");
        let c = rusqlite::Connection::open(&db).expect("open the copy");
        for (table, column) in [
            ("event", "data"),
            ("session", "directory"),
            ("message", "data"),
            ("part", "data"),
            ("project", "worktree"),
        ] {
            c.execute(
                &format!("UPDATE {table} SET {column} = replace({column}, ?1, ?2)"),
                rusqlite::params![old, ws],
            )
            .expect("move the workspace");
        }
        drop(c);
        self.set_opencode_age(age);
        let names = runread_sessions::profile(runread_sessions::Agent::OpenCode)
            .session_files(&self.opencode_data);
        assert!(!names.is_empty(), "fixture {name} has no session");
        names
    }

    /// Every OpenCode session of the data directory last changed `age` in the past.
    pub fn set_opencode_age(&self, age: Duration) {
        let changed_ms = i64::try_from(
            (SystemTime::now() - age)
                .duration_since(SystemTime::UNIX_EPOCH)
                .expect("after the epoch")
                .as_millis(),
        )
        .expect("ms");
        let c = rusqlite::Connection::open(self.opencode_data.join("opencode.db")).expect("open");
        c.execute("UPDATE session SET time_updated = ?1", [changed_ms])
            .expect("age");
        c.execute("UPDATE message SET time_updated = ?1", [changed_ms])
            .expect("age");
    }

    /// Runs one ingest over the Pi, Claude Code, Codex, Gemini CLI, Copilot CLI and OpenCode
    /// session directories.
    pub fn ingest(&self) -> runread_ingest::Report {
        let mut total = runread_ingest::Report::default();
        for dir in [
            runread_ingest::AgentDir {
                agent: runread_sessions::Agent::Pi,
                dir: self.sessions.clone(),
            },
            runread_ingest::AgentDir {
                agent: runread_sessions::Agent::Claude,
                dir: self.claude_projects.clone(),
            },
            runread_ingest::AgentDir::new(
                runread_sessions::Agent::Codex,
                self.codex_sessions.clone(),
            ),
            runread_ingest::AgentDir::new(runread_sessions::Agent::Gemini, self.gemini_tmp.clone()),
            runread_ingest::AgentDir::new(
                runread_sessions::Agent::Copilot,
                self.copilot_state.clone(),
            ),
            runread_ingest::AgentDir::new(
                runread_sessions::Agent::OpenCode,
                self.opencode_data.clone(),
            ),
        ] {
            let (r, _) = runread_ingest::ingest_dir(
                &*self.store,
                &dir,
                runread_core::timefmt::now_ms(),
                |_| {},
            )
            .expect("ingest");
            total.add(&r);
        }
        total
    }

    /// The ingested run with the longest final answer (the one most tests read).
    pub fn longest_answer_run(&self) -> runread_store::RunRecord {
        self.store
            .runs()
            .expect("runs")
            .into_iter()
            .max_by_key(|r| r.run.final_bytes)
            .expect("an ingested run")
    }
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

/// The repository's OpenCode fixtures (`fixtures/opencode/1.18.33`).
pub fn opencode_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/opencode/1.18.33")
}

/// The workspace the harness ran fixture `fixture` in (its manifest's `workspace`).
fn manifest_workspace(fixture: &Path) -> String {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture.join("manifest.json")).expect("manifest"))
            .expect("manifest JSON");
    manifest["workspace"]
        .as_str()
        .expect("workspace")
        .to_owned()
}

/// Copies every session of the OpenCode database `from` (its sessions, messages, parts and
/// event logs) into the database `into`, as OpenCode would have written them there.
fn merge_opencode(from: &Path, into: &Path) {
    let scratch = tempfile::tempdir().expect("tempdir");
    for f in std::fs::read_dir(from.parent().expect("sessions")).expect("fixture") {
        let f = f.expect("entry");
        std::fs::copy(f.path(), scratch.path().join(f.file_name())).expect("copy");
    }
    let c = rusqlite::Connection::open(into).expect("open");
    c.execute(
        "ATTACH DATABASE ?1 AS other",
        rusqlite::params![scratch.path().join("opencode.db").to_str().expect("utf-8")],
    )
    .expect("attach");
    c.execute_batch(
        "INSERT OR IGNORE INTO project SELECT * FROM other.project;
         INSERT INTO session SELECT * FROM other.session;
         INSERT INTO message SELECT * FROM other.message;
         INSERT INTO part SELECT * FROM other.part;
         INSERT INTO event_sequence SELECT * FROM other.event_sequence;
         INSERT INTO event SELECT * FROM other.event;",
    )
    .expect("merge");
}

/// A session file's bytes cut before its last line: everything before it, and the line.
pub fn without_last_line(bytes: &[u8]) -> (&[u8], &[u8]) {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let cut = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.split_at(cut)
}

/// `bytes` of a session file with the header's `cwd` replaced.
pub fn relocated(bytes: &[u8], cwd: &str) -> Vec<u8> {
    let split = bytes.iter().position(|b| *b == b'\n').expect("header line");
    let header = std::str::from_utf8(&bytes[..split]).expect("utf-8 header");
    let mut out = runread_ingest::relocate_header(header, cwd)
        .expect("header")
        .into_bytes();
    out.extend_from_slice(&bytes[split..]);
    out
}

/// The final answer of `run` (a session of `agent`) as the file at `path` holds it: the lines the
/// index names, read back and checked against their digests (the store keeps no text), their
/// texts joined by `\n`. `None` when the run has no final answer.
pub fn answer_of_agent(
    path: &Path,
    agent: runread_core::Agent,
    run: &runread_sessions::Run,
) -> Option<String> {
    if run.final_lines.is_empty() {
        return None;
    }
    let texts: Vec<String> = run
        .final_lines
        .iter()
        .map(|line| {
            let line_bytes = &line_at(agent, path, line).expect("line within the file");
            assert_eq!(
                runread_core::sha256_hex(line_bytes),
                line.sha256,
                "the indexed line reads back as ingested"
            );
            runread_sessions::message_view(agent, line_bytes)
                .expect("a message line")
                .answer
                .expect("an answer line")
        })
        .collect();
    Some(texts.join("\n"))
}

/// [`answer_of_agent`] for a Pi session file.
pub fn answer_of(path: &Path, run: &runread_sessions::Run) -> Option<String> {
    answer_of_agent(path, runread_core::Agent::Pi, run)
}

/// The bytes of the line `line` names in the session `path` names (a file's bytes at its offset;
/// a record of an agent's database), unchecked.
fn line_at(
    agent: runread_core::Agent,
    path: &Path,
    line: &runread_sessions::LineRef,
) -> Option<Vec<u8>> {
    let len = usize::try_from(line.bytes).expect("length");
    runread_sessions::open_session(agent, path, None)
        .ok()?
        .read_at(line.offset, len)
        .ok()
}

/// [`answer_of_agent`] for a run record (its session path and agent).
pub fn answer(run: &runread_store::RunRecord) -> Option<String> {
    answer_of_agent(Path::new(&run.session_path), run.agent, &run.run)
}

/// The prompt of `run` as its session file holds it: the prompt line the index names, read back
/// and checked against its digest (the store keeps no text, previews included). `None` when the
/// run has no prompt line, or the file no longer holds it as ingested (a test that changed it).
pub fn prompt(run: &runread_store::RunRecord) -> Option<String> {
    let line = run.run.prompt_line.as_ref()?;
    let line_bytes = &line_at(run.agent, Path::new(&run.session_path), line)?;
    if runread_core::sha256_hex(line_bytes) != line.sha256 {
        return None;
    }
    Some(
        runread_sessions::message_view(run.agent, line_bytes)
            .expect("a message line")
            .body,
    )
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Copies the files under `src` to `dst` (same relative paths), with every `.jsonl` line's
/// `cwd` set to `cwd` (lines without one, and every other file, byte-identical).
fn copy_tree(src: &Path, dst: &Path, cwd: &str) {
    for p in files_under(src) {
        let rel = p.strip_prefix(src).expect("under src");
        let to = dst.join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        let bytes = std::fs::read(&p).expect("read");
        let out = if p.extension().is_some_and(|e| e == "jsonl") {
            relocated_lines(&bytes, cwd)
        } else {
            bytes
        };
        std::fs::write(&to, out).expect("write");
    }
}

/// `bytes` (JSON lines) with each line's top-level `cwd` replaced, key order kept; lines without
/// `cwd` are left byte-identical.
pub fn relocated_lines(bytes: &[u8], cwd: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let (body, nl) = match line.strip_suffix(b"\n") {
            Some(b) => (b, &b"\n"[..]),
            None => (line, &b""[..]),
        };
        match serde_json::from_slice::<Value>(body) {
            Ok(mut v) if v.get("cwd").is_some() => {
                v["cwd"] = Value::String(cwd.to_owned());
                out.extend_from_slice(v.to_string().as_bytes());
            }
            _ => out.extend_from_slice(body),
        }
        out.extend_from_slice(nl);
    }
    out
}

/// `bytes` (a Codex rollout) with the `cwd` of its `session_meta` and `turn_context` lines set to
/// `cwd`, every other byte as it was.
pub fn relocated_codex(bytes: &[u8], cwd: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let v: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
        let old = v["payload"]["cwd"].as_str();
        match (v["type"].as_str(), old) {
            (Some("session_meta" | "turn_context"), Some(old)) => {
                let from = format!("\"cwd\":{}", Value::String(old.to_owned()));
                let to = format!("\"cwd\":{}", Value::String(cwd.to_owned()));
                let text = std::str::from_utf8(line).expect("utf-8 line");
                assert!(text.contains(&from), "compact cwd in {text:.80}");
                out.extend_from_slice(text.replacen(&from, &to, 1).as_bytes());
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}

/// Points the `history_base.end_byte_offset` of the fork at `path` (if it is one) at the end of
/// the line its parent (one of `files`) numbers `end_ordinal_exclusive - 1`.
fn rebase_codex_fork(path: &Path, files: &[PathBuf]) {
    let bytes = std::fs::read(path).expect("read");
    let split = bytes.iter().position(|b| *b == b'\n').expect("first line");
    let meta: Value = serde_json::from_slice(&bytes[..split]).expect("session_meta");
    let base = &meta["payload"]["history_base"];
    let (Some(parent), Some(end), Some(old)) = (
        base["thread_id"].as_str(),
        base["end_ordinal_exclusive"].as_u64(),
        base["end_byte_offset"].as_u64(),
    ) else {
        return;
    };
    let parent_file = files
        .iter()
        .find(|f| {
            f.to_str()
                .is_some_and(|n| n.ends_with(&format!("{parent}.jsonl")))
        })
        .expect("the fork's parent is placed with it");
    let parent_bytes = std::fs::read(parent_file).expect("read");
    let mut offset = 0usize;
    let mut new = None;
    for line in parent_bytes.split_inclusive(|b| *b == b'\n') {
        offset += line.len();
        let v: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
        if v["ordinal"].as_u64() == Some(end - 1) {
            new = Some(offset);
        }
    }
    let new = new.expect("the parent has the fork's base line");
    let head = std::str::from_utf8(&bytes[..split]).expect("utf-8");
    let from = format!("\"end_byte_offset\":{old}");
    assert!(head.contains(&from));
    let mut out = head
        .replacen(&from, &format!("\"end_byte_offset\":{new}"), 1)
        .into_bytes();
    out.extend_from_slice(&bytes[split..]);
    std::fs::write(path, out).expect("write");
}

/// The folder Claude Code keeps the sessions of a session run in `cwd` under (in its
/// `projects/`): the path with `/`, `.` and `_` as `-`.
pub fn claude_project_dir(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if matches!(c, '/' | '.' | '_') { '-' } else { c })
        .collect()
}

/// Sets a file's modification time `age` in the past.
pub fn set_age(path: &Path, age: Duration) {
    let f = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    f.set_modified(SystemTime::now() - age).expect("set mtime");
}

/// What the agent wrote, read with plain JSON: for each user message (in file order), the id of
/// its entry and the text of the last assistant message before the next user message, if that
/// message stopped with `stop`/`length` and no tool call.
pub fn agent_runs(path: &Path) -> Vec<(String, Option<String>, String)> {
    let text = std::fs::read_to_string(path).expect("read");
    let mut runs: Vec<(String, Option<String>, String)> = Vec::new();
    for line in text.lines().skip(1) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        // Entries that are no message (model and thinking-level changes, Pi 1.x's `context_edit`
        // that drops a failed or cut answer from later context) leave the raw history as it was.
        if v["type"] != "message" {
            continue;
        }
        let m = &v["message"];
        match m["role"].as_str() {
            Some("user") => runs.push((
                v["id"].as_str().unwrap_or("").to_owned(),
                None,
                String::new(),
            )),
            Some("assistant") => {
                if let Some(run) = runs.last_mut() {
                    let blocks = m["content"].as_array().cloned().unwrap_or_default();
                    let tool = blocks.iter().any(|b| b["type"] == "toolCall");
                    let stop = m["stopReason"].as_str().unwrap_or("").to_owned();
                    run.2 = stop.clone();
                    run.1 = if !tool && (stop == "stop" || stop == "length") {
                        let t: Vec<&str> = blocks
                            .iter()
                            .filter(|b| b["type"] == "text")
                            .filter_map(|b| b["text"].as_str())
                            .collect();
                        Some(t.join("\n"))
                    } else {
                        None
                    };
                }
            }
            _ => {
                if let Some(run) = runs.last_mut() {
                    run.1 = None;
                    run.2 = String::new();
                }
            }
        }
    }
    runs
}
