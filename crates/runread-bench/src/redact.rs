//! `runread-bench redact`: `runread_core::redact::Redactor::mask` over agent text (the bundled
//! real Pi session, repeated) with 1,000 known secrets, a few of them present, masked in pieces of
//! 64 KiB (the largest final answer runread publishes; history pages are smaller), so the figure
//! is the automaton's and not the page faults of one huge output buffer.
//!
//! References, on the same pieces: a plain copy (`to_owned`: the memory-bandwidth ceiling of any
//! masking that returns a new string) and a naive per-secret `contains` + `replace` loop (what one
//! would write without an automaton; on the first 1 MiB only, it is slow). Repeats interleave.
//!
//! `--write-dir D` writes the exact text (`D/text.txt`) and secrets (`D/secrets.txt`, one a line)
//! used; `--rg PATH` then also times ripgrep on them in every repeat, interleaved with the rest:
//! `rg -F -f D/secrets.txt --count-matches D/text.txt` as a whole process (spawn, compile the
//! 1,000 literals, read the file from the page cache, search), and the same on an empty file (its
//! fixed cost). Prints JSON with seconds per repeat.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use runread_core::redact::Redactor;
use serde_json::json;

const PIECE: usize = 64 * 1024;

fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + PIECE).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// Where the text and secrets are written, and the ripgrep to time on them.
pub struct Rg<'a> {
    pub dir: &'a str,
    pub rg: Option<&'a str>,
}

fn write_inputs(
    dir: &Path,
    text: &str,
    keys: &[String],
) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (t, s, empty) = (
        dir.join("text.txt"),
        dir.join("secrets.txt"),
        dir.join("empty.txt"),
    );
    std::fs::write(&t, text).map_err(|e| format!("{}: {e}", t.display()))?;
    std::fs::write(&s, keys.join("\n") + "\n").map_err(|e| format!("{}: {e}", s.display()))?;
    std::fs::write(&empty, "").map_err(|e| format!("{}: {e}", empty.display()))?;
    Ok((t, s, empty))
}

/// One `rg -F -f SECRETS --count-matches FILE`: wall seconds and the count it printed.
fn rg_once(rg: &str, secrets: &Path, file: &Path) -> Result<(f64, u64), String> {
    let t = Instant::now();
    let out = Command::new(rg)
        .arg("-F")
        .arg("-f")
        .arg(secrets)
        .arg("--count-matches")
        .arg(file)
        .output()
        .map_err(|e| format!("{rg}: {e}"))?;
    let dt = t.elapsed().as_secs_f64();
    // Exit 1: no match (the empty file).
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!("{rg}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let count = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    Ok((dt, count))
}

pub fn run(secrets: usize, mib: usize, repeats: usize, rg: Option<Rg<'_>>) -> Result<(), String> {
    let keys: Vec<String> = (0..secrets)
        .map(|i| {
            let h = runread_core::sha256_hex(format!("bench-secret-{i}").as_bytes());
            // API-key-like: a common prefix and 24–48 hex characters.
            let len = 24 + (i % 25);
            format!("sk-{}", &h[..len])
        })
        .collect();
    let redactor = Redactor::new(&keys).map_err(|e| format!("redactor: {e:?}"))?;
    let sample = std::fs::read_to_string(runread_testkit::fixture_session("sample"))
        .map_err(|e| format!("sample session: {e}"))?;
    let target = mib * 1024 * 1024;
    let mut text = String::with_capacity(target + sample.len() + 64);
    let mut planted = 0usize;
    while text.len() < target {
        text.push_str(&sample);
        // One secret per repetition of the sample (~34 KiB): masking really happens.
        text.push_str(&keys[(planted * 7919) % keys.len()]);
        text.push('\n');
        planted += 1;
    }
    let files = match &rg {
        Some(r) => Some(write_inputs(Path::new(r.dir), &text, &keys)?),
        None => None,
    };
    let rg_bin = rg.as_ref().and_then(|r| r.rg);
    let (mut rg_s, mut rg_empty_s, mut rg_count) = (Vec::new(), Vec::new(), 0);
    let parts = pieces(&text);
    let naive_parts = &parts[..16.min(parts.len())];
    let naive_bytes: usize = naive_parts.iter().map(|p| p.len()).sum();
    let (mut mask_s, mut copy_s, mut naive_s) = (Vec::new(), Vec::new(), Vec::new());
    let mut masks = 0;
    for i in 0..=repeats {
        let t = Instant::now();
        let mut n = 0;
        for p in &parts {
            let out = redactor.mask(p);
            n += out.matches(runread_core::redact::MASK).count() * usize::from(i == 0);
            std::hint::black_box(out);
        }
        let dt = t.elapsed().as_secs_f64();
        if i == 0 {
            masks = n;
            // A secret cut by a piece boundary is not in either piece; all others are masked.
            assert!(masks + parts.len() >= planted, "planted secrets masked");
        }

        let t = Instant::now();
        for p in &parts {
            std::hint::black_box(std::hint::black_box(*p).to_owned());
        }
        let dt_copy = t.elapsed().as_secs_f64();

        let t = Instant::now();
        for p in naive_parts {
            let mut out = (*p).to_owned();
            for k in &keys {
                if out.contains(k.as_str()) {
                    out = out.replace(k.as_str(), runread_core::redact::MASK);
                }
            }
            std::hint::black_box(out);
        }
        let dt_naive = t.elapsed().as_secs_f64();
        if let (Some(bin), Some((t, s, empty))) = (rg_bin, &files) {
            let (dt_rg, count) = rg_once(bin, s, t)?;
            let (dt_empty, _) = rg_once(bin, s, empty)?;
            rg_count = count;
            if i > 0 {
                rg_s.push(dt_rg);
                rg_empty_s.push(dt_empty);
            }
        }
        if i > 0 {
            mask_s.push(dt);
            copy_s.push(dt_copy);
            naive_s.push(dt_naive);
        }
    }
    println!(
        "{}",
        json!({
            "secrets": redactor.len(), "bytes": text.len(), "pieces": parts.len(), "piece_bytes": PIECE,
            "planted": planted, "masked": masks, "naive_bytes": naive_bytes,
            "mask_s": mask_s, "copy_s": copy_s, "naive_s": naive_s,
            "text_file": files.as_ref().map(|f| f.0.display().to_string()),
            "secrets_file": files.as_ref().map(|f| f.1.display().to_string()),
            "rg_s": rg_s, "rg_empty_s": rg_empty_s, "rg_count": rg_count,
        })
    );
    Ok(())
}
