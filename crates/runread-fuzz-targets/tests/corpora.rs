//! Replays every committed fuzz input (`fuzz/corpus/NAME/`) through its target, on stable, in the
//! normal test suite: what the fuzzer once covered (and any crash it found, once fixed) stays
//! covered. A target whose corpus is missing or empty fails.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::path::PathBuf;

fn replay(name: &str, target: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
    for path in &files {
        let data = std::fs::read(path).expect("corpus file");
        if std::panic::catch_unwind(|| target(&data)).is_err() {
            panic!("{name}: {} fails", path.display());
        }
    }
}

#[test]
fn pi_line() {
    replay("pi_line", runread_fuzz_targets::pi_line);
}

#[test]
fn pi_scan() {
    replay("pi_scan", runread_fuzz_targets::pi_scan);
}

#[test]
fn cursor() {
    replay("cursor", runread_fuzz_targets::cursor);
}

#[test]
fn body_guard() {
    replay("body_guard", runread_fuzz_targets::body_guard);
}

#[test]
fn redactor() {
    replay("redactor", runread_fuzz_targets::redactor);
}

#[test]
fn claude_scan() {
    replay("claude_scan", runread_fuzz_targets::claude_scan);
}

#[test]
fn codex_scan() {
    replay("codex_scan", runread_fuzz_targets::codex_scan);
}

#[test]
fn gemini_scan() {
    replay("gemini_scan", runread_fuzz_targets::gemini_scan);
}

#[test]
fn copilot_scan() {
    replay("copilot_scan", runread_fuzz_targets::copilot_scan);
}

#[test]
fn opencode_view() {
    replay("opencode_view", runread_fuzz_targets::opencode_view);
}

#[test]
fn console_form() {
    replay("console_form", runread_fuzz_targets::console_form);
}

#[test]
fn console_query() {
    replay("console_query", runread_fuzz_targets::console_query);
}

#[test]
fn oauth_query() {
    replay("oauth_query", runread_fuzz_targets::oauth_query);
}

#[test]
fn oauth_form() {
    replay("oauth_form", runread_fuzz_targets::oauth_form);
}

#[test]
fn oauth_registration() {
    replay(
        "oauth_registration",
        runread_fuzz_targets::oauth_registration,
    );
}
