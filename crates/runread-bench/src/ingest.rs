//! `runread-bench ingest`: reading and indexing one Pi session file into a fresh durable SQLite
//! store (`runread_ingest::ingest_dir`, what `runread ingest` runs), timed in process after a
//! warm-up. Prints JSON: the file's size and entries, and one time per repeat.

use std::time::{Duration, Instant};

use runread_store::Store;
use runread_store::sqlite::SqliteStore;
use serde_json::json;

pub fn run(session: &str, repeats: usize, warmup: usize) {
    let raw = std::fs::read(session).expect("read session");
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("workspace");
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&ws).expect("mkdir");
    std::fs::create_dir_all(&sessions).expect("mkdir");
    let ws = std::fs::canonicalize(ws).expect("canonical");
    let ws_str = ws.to_str().expect("utf-8").to_owned();
    let bytes = runread_testkit::relocated(&raw, &ws_str);
    let name = std::path::Path::new(session)
        .file_name()
        .expect("file name")
        .to_owned();
    let path = sessions.join(name);
    std::fs::write(&path, &bytes).expect("write");
    runread_testkit::set_age(&path, Duration::from_secs(60));
    let entries = bytes.iter().filter(|b| **b == b'\n').count();
    let mut samples = Vec::new();
    let mut runs = 0;
    for i in 0..warmup + repeats {
        let db_dir = tempfile::tempdir_in(dir.path()).expect("tempdir");
        let store = SqliteStore::open(&db_dir.path().join("runread.db")).expect("store");
        store
            .add_workspace(&ws_str, "bench", runread_core::timefmt::now_ms())
            .expect("workspace");
        let t = Instant::now();
        let (report, _) = runread_ingest::ingest_dir(
            &store,
            &runread_ingest::AgentDir::pi(&sessions),
            runread_core::timefmt::now_ms(),
            |_| {},
        )
        .expect("ingest");
        let dt = t.elapsed().as_secs_f64();
        assert_eq!(report.new_generations, 1, "the file was ingested");
        assert_eq!(report.malformed_lines, 0, "no malformed line");
        runs = report.runs;
        if i >= warmup {
            samples.push(dt);
        }
    }
    println!(
        "{}",
        json!({"bytes": bytes.len(), "entries": entries, "runs": runs, "seconds": samples})
    );
}
