//! Test support: a temporary runread home and workspace, real Pi session fixtures (from
//! `fixtures/pi`, written by the real agent) placed into that workspace, and helpers to read
//! what the agent wrote independently of runread's own parser.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use runread_store::sqlite::SqliteStore;
use runread_store::{Store, Workspace};

/// The repository's `fixtures/pi` directory.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pi")
}

/// The one session file of fixture `name`.
pub fn fixture_session(name: &str) -> PathBuf {
    let dir = fixtures_dir().join(name).join("sessions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        1,
        "fixture {name} should hold one session file"
    );
    files.remove(0)
}

/// A temporary runread home, one registered workspace, and a Pi sessions directory.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub workspace: PathBuf,
    pub sessions: PathBuf,
    pub store: Arc<SqliteStore>,
    pub ws: Workspace,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = dir.path().join("workspace");
        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&workspace).expect("mkdir");
        std::fs::create_dir_all(&sessions).expect("mkdir");
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
            store,
            ws,
        }
    }

    /// Copies fixture `name`'s session into the sessions directory with its header's `cwd` moved
    /// into this workspace (every other line byte-identical) and its mtime `age` in the past.
    /// Returns the copy's path.
    pub fn place(&self, name: &str, age: Duration) -> PathBuf {
        let src = fixture_session(name);
        let text = std::fs::read(&src).expect("read fixture");
        let dst = self.sessions.join(src.file_name().expect("file name"));
        std::fs::write(
            &dst,
            relocated(&text, self.workspace.to_str().expect("utf-8")),
        )
        .expect("write");
        set_age(&dst, age);
        dst
    }

    /// The sealing keys of this home (created on first use).
    pub fn keys(&self) -> Arc<runread_gate::keys::FileKeys> {
        Arc::new(runread_gate::keys::FileKeys::open(self.dir.path()).expect("gate keys"))
    }

    /// Runs one ingest over the sessions directory.
    pub fn ingest(&self) -> runread_ingest::Report {
        runread_ingest::ingest_dir(
            &*self.store,
            &self.sessions,
            runread_core::timefmt::now_ms(),
            |_| {},
        )
        .expect("ingest")
        .0
    }
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
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

/// The final answer of `run` as the session file at `path` holds it: the line the index names,
/// read back and checked against its digest (the store keeps no text). `None` when the run has no
/// final answer.
pub fn answer_of(path: &Path, run: &runread_sessions::Run) -> Option<String> {
    let line = run.final_line.as_ref()?;
    let bytes = std::fs::read(path).expect("read session file");
    let start = usize::try_from(line.offset).expect("offset");
    let end = start + usize::try_from(line.bytes).expect("length");
    let line_bytes = bytes.get(start..end).expect("line within the file");
    assert_eq!(
        runread_core::sha256_hex(line_bytes),
        line.sha256,
        "the indexed line reads back as ingested"
    );
    runread_sessions::pi::message_view(line_bytes)
        .expect("a message line")
        .answer
}

/// [`answer_of`] for a run record (its session path).
pub fn answer(run: &runread_store::RunRecord) -> Option<String> {
    answer_of(Path::new(&run.session_path), &run.run)
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
