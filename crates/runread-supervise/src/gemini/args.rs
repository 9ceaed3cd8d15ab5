//! Gemini CLI's command line under supervision (headless mode, `-p`/`--prompt`, with
//! `--output-format stream-json` ensured) and where it keeps the chat file of one invocation.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use runread_core::Agent;

use crate::args::{is_option, with_options};

/// Why Gemini CLI's arguments cannot be supervised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// No `-p`/`--prompt`: interactive, no event stream.
    NotHeadless,
    /// Another `--output-format` than `stream-json`.
    OutputFormat(String),
    /// An option that takes the run away from what supervision can prove (why, fixed).
    Option { option: String, why: &'static str },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NotHeadless => f.write_str(
                "runread run supervises Gemini CLI's headless mode only: `runread run -- gemini -p \"…\"`",
            ),
            Refused::OutputFormat(m) => write!(
                f,
                "runread run reads Gemini CLI's stream-json output; drop `--output-format {m}` \
                 (runread adds `--output-format stream-json`)"
            ),
            Refused::Option { option, why } => write!(
                f,
                "runread run cannot supervise Gemini CLI with `{option}`: {why}"
            ),
        }
    }
}

/// Options that take a run away from what supervision proves.
const REFUSED_OPTIONS: &[(&str, &str)] = &[
    ("-i", "it continues interactively, without an event stream"),
    (
        "--prompt-interactive",
        "it continues interactively, without an event stream",
    ),
    ("--acp", "it speaks ACP, not the event stream"),
    ("--experimental-acp", "it speaks ACP, not the event stream"),
    (
        "-w",
        "it runs in another worktree, whose chat files are another project's",
    ),
    (
        "--worktree",
        "it runs in another worktree, whose chat files are another project's",
    ),
];

/// The value of `-o`/`--output-format` (its last one; options end at `--`).
fn output_format(args: &[OsString]) -> Option<String> {
    let mut found = None;
    let mut it = args.iter().map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if a == "-o" || a == "--output-format" {
            found = Some(it.next().map(|v| v.into_owned()).unwrap_or_default());
        } else if let Some(v) = a.strip_prefix("--output-format=") {
            found = Some(v.to_owned());
        } else if let Some(v) = a.strip_prefix("-o").filter(|v| !v.is_empty()) {
            found = Some(v.trim_start_matches('=').to_owned());
        }
    }
    found
}

/// Gemini CLI's arguments with `--output-format stream-json` ensured. Without `-p`/`--prompt`
/// (interactive), with another output format, or with an option that leaves headless mode or
/// the supervised folder, they are refused.
pub fn with_stream_json(args: &[OsString]) -> Result<Vec<OsString>, Refused> {
    let options: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .take_while(|a| a != "--")
        .collect();
    if !options
        .iter()
        .any(|a| is_option(a, "-p") || is_option(a, "--prompt"))
    {
        return Err(Refused::NotHeadless);
    }
    for a in &options {
        if let Some((option, why)) = REFUSED_OPTIONS.iter().find(|(o, _)| is_option(a, o)) {
            return Err(Refused::Option {
                option: (*option).to_owned(),
                why,
            });
        }
    }
    match output_format(args) {
        Some(m) if m == "stream-json" => Ok(args.to_vec()),
        Some(m) => Err(Refused::OutputFormat(m)),
        None => Ok(with_options(args, &["--output-format", "stream-json"])),
    }
}

/// Gemini CLI's `tmp` directory: `$GEMINI_CLI_HOME/.gemini/tmp`, else `~/.gemini/tmp`.
pub fn tmp_dir() -> Option<PathBuf> {
    runread_ingest::AgentDir::default_for(Agent::Gemini).map(|d| d.dir)
}

/// Most project folders [`find_session`] looks into.
pub const FIND_MAX_PROJECTS: usize = 10_000;
/// Most directory entries [`find_session`] looks at, in all.
pub const FIND_MAX_ENTRIES: usize = 200_000;

/// Gemini CLI's chat file of `session_id` under `tmp`: `<project>/chats/session-<UTC
/// minute>-<first 8 characters of the id>.jsonl`, found by the id from the stream (never by a
/// folder's name), within [`FIND_MAX_PROJECTS`] and [`FIND_MAX_ENTRIES`]. A session resumed in a
/// later minute leaves a stub of a later minute beside its file: the earliest is the session's.
/// Links are not walked; a linked file is returned, for the proof to refuse it. Files of the
/// same minute in two projects: neither is taken.
pub fn find_session(tmp: &Path, session_id: &str) -> Option<PathBuf> {
    if !runread_core::target::is_id(session_id) || session_id.len() < 8 {
        return None;
    }
    let suffix = format!("-{}.jsonl", session_id.get(..8)?);
    let prefix = runread_sessions::gemini::SESSION_FILE_PREFIX;
    let mut entries = FIND_MAX_ENTRIES;
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let projects = std::fs::read_dir(tmp).ok()?;
    for project in projects.flatten().take(FIND_MAX_PROJECTS) {
        if !project.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(chats) = std::fs::read_dir(project.path().join("chats")) else {
            continue;
        };
        for file in chats.flatten() {
            entries = entries.checked_sub(1)?;
            let name = file.file_name().to_string_lossy().into_owned();
            if name.starts_with(prefix) && name.ends_with(&suffix) {
                found.push((name, file.path()));
            }
        }
    }
    found.sort();
    match found.as_slice() {
        [] => None,
        [(a, _), (b, _), ..] if a == b => None,
        [(_, first), ..] => Some(first.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn gemini_cli_gets_stream_json_and_what_leaves_headless_mode_is_refused() {
        assert_eq!(
            with_stream_json(&os(&["-p", "hi"])).unwrap(),
            os(&["-p", "hi", "--output-format", "stream-json"])
        );
        assert_eq!(
            with_stream_json(&os(&["--prompt=hi", "-o", "stream-json"])).unwrap(),
            os(&["--prompt=hi", "-o", "stream-json"])
        );
        assert_eq!(
            with_stream_json(&os(&["-p", "hi", "--output-format=stream-json"])).unwrap(),
            os(&["-p", "hi", "--output-format=stream-json"])
        );
        assert_eq!(
            with_stream_json(&os(&["-p", "hi", "--output-format", "json"])),
            Err(Refused::OutputFormat("json".into()))
        );
        assert_eq!(
            with_stream_json(&os(&["-p", "hi", "-o", "text"])),
            Err(Refused::OutputFormat("text".into()))
        );
        assert_eq!(with_stream_json(&os(&["hi"])), Err(Refused::NotHeadless));
        assert_eq!(
            with_stream_json(&os(&["--", "-p"])),
            Err(Refused::NotHeadless)
        );
        assert!(matches!(
            with_stream_json(&os(&["-p", "hi", "-i", "more"])),
            Err(Refused::Option { option, .. }) if option == "-i"
        ));
        assert!(matches!(
            with_stream_json(&os(&["-p", "hi", "--worktree"])),
            Err(Refused::Option { option, .. }) if option == "--worktree"
        ));
        assert!(
            Refused::NotHeadless
                .to_string()
                .contains("runread run -- gemini -p")
        );
    }

    #[test]
    fn the_session_file_is_the_earliest_of_its_id_and_never_a_guess() {
        let tmp = tempfile::tempdir().unwrap();
        let id = "14983ac9-ea69-44ef-8190-1998a5af1fea";
        let chats = tmp.path().join("workspace").join("chats");
        std::fs::create_dir_all(&chats).unwrap();
        assert_eq!(find_session(tmp.path(), id), None);
        let stub = chats.join("session-2026-12-06T13-13-14983ac9.jsonl");
        let real = chats.join("session-2026-12-06T13-12-14983ac9.jsonl");
        std::fs::write(&stub, "{}\n").unwrap();
        std::fs::write(&real, "{}\n").unwrap();
        std::fs::write(chats.join("session-2026-12-06T13-11-00000000.jsonl"), "").unwrap();
        assert_eq!(find_session(tmp.path(), id), Some(real.clone()));
        // The same minute in another project: which one is not known.
        let other = tmp.path().join("other").join("chats");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("session-2026-12-06T13-12-14983ac9.jsonl"), "").unwrap();
        assert_eq!(find_session(tmp.path(), id), None);
        assert_eq!(find_session(tmp.path(), "../x"), None);
    }
}
