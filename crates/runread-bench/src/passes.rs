//! The bare references for ingest: what reading the same session files costs when nothing is
//! done with them beyond what any ingest must do.
//!
//! - `json-pass (--file F | --dir D)… [--repeats N]`: every line of every file validated as JSON,
//!   one line at a time (`serde_json` into `serde::de::IgnoredAny`, nothing kept), the file read
//!   through a 64 KiB `BufReader`. Invalid lines are counted, not fatal (real homes hold torn and
//!   malformed files). Against `runread ingest` of the same files. With `--sha256`, each line's
//!   SHA-256 is taken too (`runread_core::sha256_hex`, the digest ingest keeps of every line):
//!   the least any ingest that validates and digests every line must do, one thread, so the
//!   report can show the ceiling the digest alone puts on the ratio.
//! - `stat-pass --dir D… [--repeats N]`: the same directories walked and every `*.jsonl` file in
//!   them `stat`ed, nothing read. Against a `runread ingest` that finds nothing changed.
//!
//! Both print JSON: files, bytes (json-pass), lines, and seconds per repeat (in process; the
//! caller also times the whole process).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;

/// Every `*.jsonl` file under `dir`, recursively (no links followed), sorted.
pub fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for entry in rd {
            let entry = entry.map_err(|e| format!("{}: {e}", d.display()))?;
            let ft = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            let p = entry.path();
            if ft.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn inputs(files: &[String], dirs: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut all: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
    for d in dirs {
        all.extend(jsonl_files(Path::new(d))?);
    }
    if all.is_empty() {
        return Err("no input files (--file F or --dir D)".into());
    }
    Ok(all)
}

#[derive(Default)]
struct Counts {
    bytes: u64,
    lines: u64,
    invalid: u64,
}

fn validate(path: &Path, buf: &mut Vec<u8>, sha256: bool, c: &mut Counts) -> Result<(), String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = std::io::BufReader::with_capacity(64 * 1024, f);
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            return Ok(());
        }
        c.bytes += n as u64;
        let line = buf.strip_suffix(b"\n").unwrap_or(buf);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        c.lines += 1;
        if sha256 {
            std::hint::black_box(runread_core::sha256_hex(line));
        }
        let mut de = serde_json::Deserializer::from_slice(line);
        let ok = serde::de::IgnoredAny::deserialize(&mut de).is_ok() && de.end().is_ok();
        c.invalid += u64::from(!ok);
    }
}

pub fn json_pass(
    files: &[String],
    dirs: &[String],
    sha256: bool,
    repeats: usize,
) -> Result<(), String> {
    let all = inputs(files, dirs)?;
    let mut buf = Vec::with_capacity(1 << 20);
    let mut seconds = Vec::new();
    let mut counts = Counts::default();
    for _ in 0..repeats.max(1) {
        counts = Counts::default();
        let t = Instant::now();
        for p in &all {
            validate(p, &mut buf, sha256, &mut counts)?;
        }
        seconds.push(t.elapsed().as_secs_f64());
    }
    println!(
        "{}",
        json!({"files": all.len(), "bytes": counts.bytes, "lines": counts.lines,
               "invalid_lines": counts.invalid, "sha256": sha256, "seconds": seconds})
    );
    Ok(())
}

pub fn stat_pass(dirs: &[String], repeats: usize) -> Result<(), String> {
    if dirs.is_empty() {
        return Err("no --dir D".into());
    }
    let mut seconds = Vec::new();
    let mut files = 0usize;
    let mut bytes = 0u64;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        files = 0;
        bytes = 0;
        for d in dirs {
            for p in jsonl_files(Path::new(d))? {
                let m = std::fs::metadata(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                files += 1;
                bytes += m.len();
            }
        }
        seconds.push(t.elapsed().as_secs_f64());
    }
    println!(
        "{}",
        json!({"files": files, "bytes": bytes, "seconds": seconds})
    );
    Ok(())
}
