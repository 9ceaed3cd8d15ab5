//! What the CLI says, as a person reads it: messages that name the real problem, one format for
//! times and sizes, plurals right (issue 48, item 10).

use std::process::Command;

#[test]
fn a_home_that_is_a_file_is_named_as_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("home");
    std::fs::write(&file, "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runread"))
        .arg("--home")
        .arg(&file)
        .arg("runs")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is not a directory"), "{err}");
    assert!(!err.contains("readable by other users"), "{err}");
}
