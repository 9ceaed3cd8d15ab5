//! Codex's command line under supervision: its non-interactive mode only — `codex exec …`,
//! `codex exec resume …` and `codex exec fork …` (a new thread holding the new turn) — with
//! `--json` added right after `exec`, where Codex takes it for every one of them.

use std::ffi::OsString;

use crate::args::{has_flag, is_option};

/// Why Codex's arguments cannot be supervised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not `exec` first: interactive (or another command), no event stream.
    NotExec,
    /// `codex exec` with a subcommand other than `resume` and `fork` (`review`, `help`).
    ExecSubcommand(String),
    /// An option that takes the run away from what supervision can prove (why, fixed).
    Option { option: String, why: &'static str },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NotExec => f.write_str(
                "runread run supervises Codex's non-interactive mode only, with `exec` first: \
                 `runread run -- codex exec \"…\"` (or `codex exec resume --last \"…\"`, \
                 `codex exec fork <id> \"…\"`; Codex's options after `exec`)",
            ),
            Refused::ExecSubcommand(s) => write!(
                f,
                "runread run supervises `codex exec`, `codex exec resume` and `codex exec fork`, \
                 not `codex exec {s}`"
            ),
            Refused::Option { option, why } => write!(
                f,
                "runread run cannot supervise `codex exec` with `{option}`: {why}"
            ),
        }
    }
}

/// Codex's `exec` options that take a value (0.171.0's `codex exec --help`, and its `resume` and
/// `fork`): skipped when looking for `exec`'s subcommand.
const VALUE_OPTIONS: &[&str] = &[
    "-c",
    "--config",
    "--enable",
    "--disable",
    "--remote",
    "--remote-auth-token-env",
    "-i",
    "--image",
    "-m",
    "--model",
    "--local-provider",
    "-p",
    "--profile",
    "-s",
    "--sandbox",
    "-C",
    "--cd",
    "--add-dir",
    "--thread-source",
    "--cyber-access-program",
    "--output-schema",
    "--color",
    "-o",
    "--output-last-message",
];

/// Why `-C`/`--cd` is refused.
const ANOTHER_DIRECTORY: &str =
    "the agent would work in another directory than the supervised one; run runread there instead";

/// Codex options that take the run away from what supervision proves, and why. A long option
/// also matches its `--option=value` form, a short one its `-Xvalue` form.
const REFUSED_OPTIONS: &[(&str, &str)] = &[
    (
        "--ephemeral",
        "Codex then writes no rollout file, and every answer is proved against that file",
    ),
    ("-C", ANOTHER_DIRECTORY),
    ("--cd", ANOTHER_DIRECTORY),
    (
        "--worktree",
        "the agent would work in a new Git worktree, not in the supervised directory",
    ),
    (
        "--remote",
        "the agent would run in another app server, whose rollout file runread cannot read",
    ),
];

/// The subcommand `codex exec` was given (`resume`, `fork`, …), if any: its first positional
/// argument, when that is not a prompt.
fn codex_exec_subcommand(after_exec: &[OsString]) -> Option<String> {
    let mut it = after_exec.iter().map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if a == "--" || a == "-" {
            return None; // the rest is the prompt, or the prompt comes from stdin
        }
        if a.starts_with('-') {
            if VALUE_OPTIONS.contains(&a.as_ref()) {
                it.next();
            }
            continue;
        }
        return match a.as_ref() {
            "resume" | "fork" | "review" | "help" => Some(a.into_owned()),
            _ => None, // the prompt
        };
    }
    None
}

/// Codex's arguments with `--json` ensured right after `exec` (where `codex exec`, `codex exec
/// resume` and `codex exec fork` all take it). Anything but `codex exec` (interactive Codex,
/// another command, options before `exec`), `exec review`, and options that take the run away
/// from what supervision proves are refused.
pub fn with_json(args: &[OsString]) -> Result<Vec<OsString>, Refused> {
    let Some((first, rest)) = args.split_first() else {
        return Err(Refused::NotExec);
    };
    // `e` is Codex's alias of `exec`.
    if first != "exec" && first != "e" {
        return Err(Refused::NotExec);
    }
    if let Some(sub) = codex_exec_subcommand(rest)
        && sub != "resume"
        && sub != "fork"
    {
        return Err(Refused::ExecSubcommand(sub));
    }
    for a in rest.iter().take_while(|a| a.as_os_str() != "--") {
        let a = a.to_string_lossy();
        if let Some((option, why)) = REFUSED_OPTIONS
            .iter()
            .find(|(option, _)| is_option(&a, option))
        {
            return Err(Refused::Option {
                option: (*option).to_owned(),
                why,
            });
        }
    }
    if has_flag(rest, &["--json"]) {
        return Ok(args.to_vec());
    }
    let mut out = Vec::with_capacity(args.len() + 1);
    out.push(first.clone());
    out.push(OsString::from("--json"));
    out.extend(rest.iter().cloned());
    Ok(out)
}
