//! `runread-bench redact`: `runread_core::redact::Redactor::mask` over agent text (the bundled
//! real Pi session, repeated) with 1,000 known secrets, a few of them present, masked in pieces of
//! 64 KiB (the largest final answer runread publishes; history pages are smaller), so the figure
//! is the automaton's and not the page faults of one huge output buffer.
//!
//! References, on the same pieces: a plain copy (`to_owned`: the memory-bandwidth ceiling of any
//! masking that returns a new string) and a naive per-secret `contains` + `replace` loop (what one
//! would write without an automaton; on the first 1 MiB only, it is slow). Repeats interleave.
//! Prints JSON with seconds per repeat.

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

pub fn run(secrets: usize, mib: usize, repeats: usize) {
    let keys: Vec<String> = (0..secrets)
        .map(|i| {
            let h = runread_core::sha256_hex(format!("bench-secret-{i}").as_bytes());
            // API-key-like: a common prefix and 24–48 hex characters.
            let len = 24 + (i % 25);
            format!("sk-{}", &h[..len])
        })
        .collect();
    let redactor = Redactor::new(&keys).expect("redactor");
    let sample = std::fs::read_to_string(runread_testkit::fixture_session("sample"))
        .expect("sample session");
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
        })
    );
}
