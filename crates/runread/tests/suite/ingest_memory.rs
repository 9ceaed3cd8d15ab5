//! Ingest memory is bounded whatever the session file's size (issue 13, item 10): the file is
//! read line by line, holding one line (at most `EVIDENCE_LINE_MAX_BYTES`) and the index, never
//! the whole file. Measured on the real binary: its peak resident set (`ru_maxrss` of the child,
//! read by Python's `resource`, which every CI machine of this project has).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use runread_core::limits::EVIDENCE_LINE_MAX_BYTES;

/// Size of the session file built for the test: far above any in-memory bound below.
const FILE_BYTES: usize = 96 * 1024 * 1024;
/// Each filler line (a Pi `custom` entry, which runread indexes but never serves).
const LINE_BYTES: usize = 1024 * 1024;
/// Peak RSS a streaming ingest stays under: one line at the bound, its read buffer, the parsed
/// line's strings, the index, SQLite's cache and the binary itself, with room to spare. Reading
/// the 96 MiB file whole (as before) cannot fit.
const PEAK_RSS_CEILING_BYTES: u64 = 64 * 1024 * 1024;

fn runread(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .expect("run runread")
}

/// Runs `runread ARGS` as Python's child and returns (its stdout, its peak RSS in bytes:
/// `ru_maxrss` is KiB on Linux, bytes on macOS).
fn peak_rss(home: &Path, args: &[&str]) -> (String, u64) {
    let script = "import resource, subprocess, sys\n\
                  r = subprocess.run(sys.argv[1:], capture_output=True)\n\
                  sys.stderr.buffer.write(r.stderr)\n\
                  assert r.returncode == 0, r.returncode\n\
                  m = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n\
                  print(m if sys.platform == 'darwin' else m * 1024)\n\
                  sys.stdout.buffer.write(r.stdout)\n";
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (bytes, rest) = text.split_once('\n').unwrap();
    (rest.to_owned(), bytes.trim().parse::<u64>().unwrap())
}

/// A real Pi session (`multi-run`) with `FILE_BYTES` of 1 MiB `custom` entries before its runs
/// and one line over the line bound among them.
fn big_session(env: &runread_testkit::Env) -> std::path::PathBuf {
    let src = runread_testkit::fixture_session("multi-run");
    let text = std::fs::read(&src).unwrap();
    let relocated = runread_testkit::relocated(&text, env.workspace.to_str().unwrap());
    let split = relocated.iter().position(|b| *b == b'\n').unwrap() + 1;
    let (header, entries) = relocated.split_at(split);
    let path = env.sessions.join("big.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(header).unwrap();
    let payload = "z".repeat(LINE_BYTES - 100);
    let mut written = header.len();
    let mut n = 0;
    while written < FILE_BYTES {
        // Custom entries hang off no message: the runs below keep their own parent chain.
        let line =
            format!(r#"{{"type":"custom","id":"fill{n:04}","parentId":null,"data":"{payload}"}}"#);
        writeln!(f, "{line}").unwrap();
        written += line.len() + 1;
        n += 1;
    }
    let oversize = "o".repeat(EVIDENCE_LINE_MAX_BYTES + 1);
    writeln!(
        f,
        r#"{{"type":"custom","id":"huge","parentId":null,"data":"{oversize}"}}"#
    )
    .unwrap();
    f.write_all(entries).unwrap();
    drop(f);
    runread_testkit::set_age(&path, Duration::from_secs(60));
    path
}

#[test]
fn a_session_file_far_larger_than_memory_bounds_is_ingested_in_bounded_memory() {
    let env = runread_testkit::Env::new();
    let path = big_session(&env);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 100 * 1024 * 1024, "{size}");
    let home = env.dir.path().join("home");
    let ws = env.workspace.to_str().unwrap();
    assert!(runread(&home, &["workspace", "add", ws]).status.success());
    let (out, peak) = peak_rss(&home, &["ingest", "--pi", env.sessions.to_str().unwrap()]);
    assert!(
        peak < PEAK_RSS_CEILING_BYTES,
        "peak RSS {} MiB for a {} MiB file",
        peak >> 20,
        size >> 20
    );
    eprintln!("peak RSS {} KiB for a {} MiB file", peak >> 10, size >> 20);
    assert!(
        out.contains("1 malformed"),
        "the oversize line is counted: {out}"
    );
    // The runs after the filler are indexed and readable.
    let runs = runread(&home, &["runs", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "completed"), "{runs:?}");
}
