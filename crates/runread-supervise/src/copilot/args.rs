//! Copilot CLI's command line under supervision (prompt mode, `-p`/`--prompt`, with
//! `--output-format json` ensured) and where it keeps the session file of one invocation.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use runread_core::Agent;

use crate::args::{is_option, with_options};

/// Why Copilot CLI's arguments cannot be supervised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// No `-p`/`--prompt`: interactive, no event stream.
    NotPromptMode,
    /// Another `--output-format` than `json`.
    OutputFormat(String),
    /// An option that takes the run away from what supervision can prove (why, fixed).
    Option { option: String, why: &'static str },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NotPromptMode => f.write_str(
                "runread run supervises Copilot CLI's prompt mode only: `runread run -- copilot -p \"…\"`",
            ),
            Refused::OutputFormat(m) => write!(
                f,
                "runread run reads Copilot CLI's json output; drop `--output-format {m}` \
                 (runread adds `--output-format json`)"
            ),
            Refused::Option { option, why } => write!(
                f,
                "runread run cannot supervise Copilot CLI with `{option}`: {why}"
            ),
        }
    }
}

/// Options that take a run away from what supervision proves.
const REFUSED_OPTIONS: &[(&str, &str)] = &[
    ("-i", "it continues interactively, without an event stream"),
    (
        "--interactive",
        "it continues interactively, without an event stream",
    ),
    ("--acp", "it speaks ACP, not the event stream"),
    (
        "--connect",
        "it runs a remote session, whose file is not on this machine",
    ),
    (
        "--remote",
        "it runs a remote session, whose file is not on this machine",
    ),
    (
        "-C",
        "it works in another folder than the one runread supervises",
    ),
    ("-s", "it prints the answer alone, without the event stream"),
    (
        "--silent",
        "it prints the answer alone, without the event stream",
    ),
];

/// The options before `--`, as text.
fn options(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .take_while(|a| a != "--")
        .collect()
}

/// The value of long option `name` (its last one; `--name value` or `--name=value`).
fn value_of(options: &[String], name: &str) -> Option<String> {
    let mut found = None;
    let mut it = options.iter();
    while let Some(a) = it.next() {
        if a == name {
            found = Some(it.next().cloned().unwrap_or_default());
        } else if let Some(v) = a.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
            found = Some(v.to_owned());
        }
    }
    found
}

/// Copilot CLI's arguments with `--output-format json` ensured. Without `-p`/`--prompt`, with
/// another output format, or with an option that leaves prompt mode or the supervised folder,
/// they are refused.
pub fn with_json(args: &[OsString]) -> Result<Vec<OsString>, Refused> {
    let options = options(args);
    if !options
        .iter()
        .any(|a| is_option(a, "-p") || is_option(a, "--prompt"))
    {
        return Err(Refused::NotPromptMode);
    }
    for a in &options {
        if let Some((option, why)) = REFUSED_OPTIONS.iter().find(|(o, _)| is_option(a, o)) {
            return Err(Refused::Option {
                option: (*option).to_owned(),
                why,
            });
        }
    }
    match value_of(&options, "--output-format") {
        Some(m) if m == "json" => Ok(args.to_vec()),
        Some(m) => Err(Refused::OutputFormat(m)),
        None => Ok(with_options(args, &["--output-format", "json"])),
    }
}

/// Copilot CLI's `session-state` directory for this invocation: `<--config-dir>/session-state`
/// (relative to `cwd`), else `$COPILOT_HOME/session-state`, else `~/.copilot/session-state`.
pub fn state_dir(args: &[OsString], cwd: &Path) -> Option<PathBuf> {
    match value_of(&options(args), "--config-dir").filter(|d| !d.is_empty()) {
        Some(d) => Some(cwd.join(d).join("session-state")),
        None => runread_ingest::AgentDir::default_for(Agent::Copilot).map(|d| d.dir),
    }
}

/// The session file of `session_id` (the id `result` named, never a folder's guess):
/// `<state>/<id>/events.jsonl`.
pub fn find_session(state: &Path, session_id: &str) -> Option<PathBuf> {
    if !runread_core::target::is_id(session_id) {
        return None;
    }
    let path = state
        .join(session_id)
        .join(runread_sessions::copilot::EVENTS_FILE);
    // A link is returned as it is, for the proof to refuse it.
    std::fs::symlink_metadata(&path).ok().map(|_| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn copilot_cli_gets_json_output_and_what_leaves_prompt_mode_is_refused() {
        assert_eq!(
            with_json(&os(&["-p", "hi", "--allow-all-tools"])).unwrap(),
            os(&["-p", "hi", "--allow-all-tools", "--output-format", "json"])
        );
        assert_eq!(
            with_json(&os(&["--prompt=hi", "--output-format", "json"])).unwrap(),
            os(&["--prompt=hi", "--output-format", "json"])
        );
        assert_eq!(
            with_json(&os(&["-p", "hi", "--output-format=json"])).unwrap(),
            os(&["-p", "hi", "--output-format=json"])
        );
        assert_eq!(
            with_json(&os(&["-p", "hi", "--output-format", "text"])),
            Err(Refused::OutputFormat("text".into()))
        );
        assert_eq!(with_json(&os(&["hi"])), Err(Refused::NotPromptMode));
        assert_eq!(with_json(&os(&["--", "-p"])), Err(Refused::NotPromptMode));
        for o in ["-i", "--acp", "-C", "--silent", "--remote", "--connect"] {
            assert!(
                matches!(
                    with_json(&os(&["-p", "hi", o, "x"])),
                    Err(Refused::Option { option, .. }) if option == o
                ),
                "{o}"
            );
        }
        assert!(
            Refused::NotPromptMode
                .to_string()
                .contains("runread run -- copilot -p")
        );
    }

    #[test]
    fn the_session_file_is_found_by_the_id_under_the_invocations_config_dir() {
        let d = tempfile::tempdir().unwrap();
        let args = os(&["-p", "hi", "--config-dir", "conf"]);
        let state = state_dir(&args, d.path()).unwrap();
        assert_eq!(state, d.path().join("conf/session-state"));
        assert_eq!(
            state_dir(&os(&["-p", "hi", "--config-dir=/abs"]), d.path()).unwrap(),
            PathBuf::from("/abs/session-state")
        );
        let id = "6ad0b58e-6588-458d-8602-ed2726717502";
        assert_eq!(find_session(&state, id), None);
        std::fs::create_dir_all(state.join(id)).unwrap();
        std::fs::write(state.join(id).join("events.jsonl"), "").unwrap();
        assert_eq!(
            find_session(&state, id),
            Some(state.join(id).join("events.jsonl"))
        );
        assert_eq!(find_session(&state, "../x"), None);
    }
}
