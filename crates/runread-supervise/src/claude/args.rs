//! Claude Code's command line under supervision (print mode, `--output-format stream-json
//! --verbose` ensured) and where it keeps the session file of one invocation.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use runread_core::Agent;

use crate::args::{flag_value, has_flag, with_options};

/// Why Claude Code's arguments cannot be supervised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Another `--output-format` than `stream-json`.
    OutputFormat(String),
    /// Another `--input-format` than `text`.
    InputFormat(String),
    /// No `-p`/`--print`: interactive, no event stream.
    NotPrintMode,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::OutputFormat(m) => write!(
                f,
                "runread run reads Claude Code's stream-json output; drop `--output-format {m}` \
                 (runread adds `--output-format stream-json --verbose`)"
            ),
            Refused::InputFormat(m) => write!(
                f,
                "runread run supervises one prompt per Claude Code invocation; drop `--input-format {m}`"
            ),
            Refused::NotPrintMode => f.write_str(
                "runread run supervises Claude Code's print mode only: `runread run -- claude -p \"…\"`",
            ),
        }
    }
}

/// Claude Code's arguments with `--output-format stream-json --verbose` ensured. Another output
/// format, a streamed input, or an interactive session (no `-p`/`--print`) is refused.
pub fn with_stream_json(args: &[OsString]) -> Result<Vec<OsString>, Refused> {
    if !has_flag(args, &["-p", "--print"]) {
        return Err(Refused::NotPrintMode);
    }
    if let Some(m) = flag_value(args, "--input-format")
        && m != "text"
    {
        return Err(Refused::InputFormat(m.to_string_lossy().into_owned()));
    }
    let mut extra: Vec<&str> = Vec::new();
    match flag_value(args, "--output-format") {
        Some(m) if m == "stream-json" => {}
        Some(m) => return Err(Refused::OutputFormat(m.to_string_lossy().into_owned())),
        None => extra.extend(["--output-format", "stream-json"]),
    }
    if !has_flag(args, &["--verbose"]) {
        extra.push("--verbose");
    }
    Ok(with_options(args, &extra))
}

/// Claude Code's `projects` directory: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`.
pub fn projects_dir() -> Option<PathBuf> {
    runread_ingest::AgentDir::default_for(Agent::Claude).map(|d| d.dir)
}

/// The folder name Claude Code gives a working directory under `projects/` (every character but
/// ASCII letters and digits made `-`). Only a first place to look: the folder name is never
/// trusted for anything — the session's lines say their cwd.
pub fn project_folder(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Claude Code's session file of `session_id`: `<projects>/<folder of cwd>/<id>.jsonl`, else the
/// one file of that name in any folder of `projects` (by the session id from the stream, never
/// by the folder's name).
pub fn find_session(projects: &Path, cwd: &str, session_id: &str) -> Option<PathBuf> {
    if !runread_core::target::is_id(session_id) {
        return None;
    }
    let name = format!("{session_id}.jsonl");
    let first = projects.join(project_folder(cwd)).join(&name);
    if std::fs::symlink_metadata(&first).is_ok() {
        return Some(first);
    }
    let found: Vec<PathBuf> = runread_ingest::AgentDir::new(Agent::Claude, projects)
        .session_files()
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == name))
        .collect();
    // Two files of one session id: neither is taken.
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn claude_code_gets_stream_json_and_other_formats_are_refused() {
        assert_eq!(
            with_stream_json(&os(&["-p", "hi"])).unwrap(),
            os(&["-p", "hi", "--output-format", "stream-json", "--verbose"])
        );
        assert_eq!(
            with_stream_json(&os(&[
                "-p",
                "--output-format=stream-json",
                "--verbose",
                "hi"
            ]))
            .unwrap(),
            os(&["-p", "--output-format=stream-json", "--verbose", "hi"])
        );
        // Options go before a `--` that ends them.
        assert_eq!(
            with_stream_json(&os(&["--print", "--", "-p is a prompt"])).unwrap(),
            os(&[
                "--print",
                "--output-format",
                "stream-json",
                "--verbose",
                "--",
                "-p is a prompt"
            ])
        );
        assert_eq!(
            with_stream_json(&os(&["-p", "hi", "--output-format", "json"])),
            Err(Refused::OutputFormat("json".into()))
        );
        assert_eq!(
            with_stream_json(&os(&["-p", "--input-format", "stream-json"])),
            Err(Refused::InputFormat("stream-json".into()))
        );
        assert_eq!(with_stream_json(&os(&["hi"])), Err(Refused::NotPrintMode));
    }

    #[test]
    fn the_project_folder_is_claude_codes_escape() {
        assert_eq!(
            project_folder("/tmp/h/x_y.z/out/workspace"),
            "-tmp-h-x-y-z-out-workspace"
        );
    }
}
