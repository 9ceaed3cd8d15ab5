//! Which agent a command starts, how its command line is made to stream events, and where the
//! agent will keep its session file.
//!
//! An agent is identified the way its user would ask it: `<command> --version` (bounded in time
//! and output, nothing else of the command line passed). Claude Code answers `2.1.328 (Claude
//! Code)` and Codex `codex-cli 0.171.0`, whether the command is npm's package (a wrapper around
//! a native binary), the native binary itself (Codex's lies in a platform package of its own,
//! versioned `0.171.0-linux-x64`), a standalone install, or a shim (volta, asdf, mise) in front
//! of either. Pi answers its bare version number; where the command resolves into Pi's npm
//! package, the package must say the same. So a wrapper or shim that runs a known agent is
//! supervised, and a command that is neither is refused before anything of it runs but
//! `--version`.
//!
//! Codex is supervised in its non-interactive mode only: `codex exec …`, `codex exec resume …`
//! and `codex exec fork …` (a new thread holding the new turn), with `--json` added right after
//! `exec`, where Codex takes it for every one of them.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncReadExt;

pub use runread_core::Agent;

/// The npm package of the Pi coding agent.
pub const PI_PACKAGE: &str = "@mariozechner/pi-coding-agent";
/// Pi versions whose JSON event stream and session format runread knows (tested: 0.73.1).
pub const KNOWN_PI_SERIES: &[&str] = &["0.73."];
/// The npm package of Claude Code (a wrapper around the native binary).
pub const CLAUDE_PACKAGE: &str = "@anthropic-ai/claude-code";
/// What Claude Code's `--version` says after its version number.
pub const CLAUDE_VERSION_SUFFIX: &str = " (Claude Code)";
/// Claude Code versions whose stream-json output and session format runread knows (tested:
/// 2.1.328).
pub const KNOWN_CLAUDE_SERIES: &[&str] = &["2.1."];
/// The npm package of the Codex CLI (a wrapper around the native binary, which lies in a
/// platform package of the same name: see [`CODEX_PLATFORM_SUFFIXES`]).
pub const CODEX_PACKAGE: &str = "@openai/codex";
/// What Codex's `--version` says before its version number.
pub const CODEX_VERSION_PREFIX: &str = "codex-cli ";
/// Codex versions whose `--json` event stream and rollout format runread knows (tested: 0.171.0).
pub const KNOWN_CODEX_SERIES: &[&str] = &["0.171."];
/// How the version of a Codex platform package (the one holding the native binary) ends after
/// the CLI's version: `0.171.0-linux-x64`.
pub const CODEX_PLATFORM_SUFFIXES: &[&str] = &[
    "-linux-x64",
    "-linux-arm64",
    "-darwin-x64",
    "-darwin-arm64",
    "-win32-x64",
    "-win32-arm64",
];
/// Longest a `--version` probe may take (Pi's Node start-up takes seconds on a busy machine);
/// past it the probe's process group is killed and the command refused.
pub const VERSION_PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Most bytes of a `--version` answer read; a longer answer is not a version.
pub const VERSION_PROBE_MAX_BYTES: usize = 4096;
/// Directories walked up from the agent's program to find its `package.json`.
const PACKAGE_SEARCH_DEPTH: usize = 6;
/// Largest `package.json` read.
const PACKAGE_JSON_MAX_BYTES: u64 = 256 * 1024;

/// The version series of `agent` runread was built against.
fn known_series(agent: Agent) -> &'static [&'static str] {
    match agent {
        Agent::Pi => KNOWN_PI_SERIES,
        Agent::Claude => KNOWN_CLAUDE_SERIES,
        Agent::Codex => KNOWN_CODEX_SERIES,
    }
}

/// The npm package that installs `agent`.
fn npm_package(agent: Agent) -> &'static str {
    match agent {
        Agent::Pi => PI_PACKAGE,
        Agent::Claude => CLAUDE_PACKAGE,
        Agent::Codex => CODEX_PACKAGE,
    }
}

/// The agent a command line starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub kind: Agent,
    pub version: String,
    /// The npm package the command resolves into, when it does (for messages).
    pub package_root: Option<PathBuf>,
}

/// Why `runread run` will not supervise a command. Each says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    NoCommand,
    NotFound(String),
    /// `--version` did not name an agent runread supervises (what it said, shortened).
    NotAnAgent {
        program: String,
        said: String,
    },
    /// `--version` could not be asked: the reason.
    Probe {
        program: String,
        why: &'static str,
    },
    UnknownVersion {
        kind: Agent,
        version: String,
    },
    /// The program's package says one version, the program another.
    PackageDisagrees {
        program: String,
        package: String,
        said: String,
    },
    /// Pi: another `--mode` than `json`.
    Mode(String),
    /// Claude Code: another `--output-format` than `stream-json`.
    OutputFormat(String),
    /// Claude Code: another `--input-format` than `text`.
    InputFormat(String),
    /// Claude Code without `-p`/`--print`: interactive, no event stream.
    NotPrintMode,
    /// Codex without `exec` first: interactive (or another command), no event stream.
    NotExec,
    /// `codex exec` with a subcommand other than `resume` and `fork` (`review`, `help`).
    ExecSubcommand(String),
    /// A Codex option that takes the run away from what supervision can prove (why, fixed).
    CodexOption {
        option: String,
        why: &'static str,
    },
}

const SUPERVISES: &str = "runread run supervises Pi (`runread run -- pi -p \"…\"`), Claude Code \
                          (`runread run -- claude -p \"…\"`) and Codex (`runread run -- codex exec \"…\"`)";

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsupported::NoCommand => write!(
                f,
                "nothing to run: give the agent's command after `--`; {SUPERVISES}"
            ),
            Unsupported::NotFound(p) => write!(f, "cannot find `{p}` on PATH"),
            Unsupported::NotAnAgent { program, said } => write!(
                f,
                "`{program}` is not an agent runread knows: `{program} --version` said {said}; {SUPERVISES}"
            ),
            Unsupported::Probe { program, why } => write!(
                f,
                "cannot tell which agent `{program}` is: `{program} --version` {why}; {SUPERVISES}"
            ),
            Unsupported::UnknownVersion { kind, version } => write!(
                f,
                "{} {version} is not a version whose event stream runread knows (known: {}); \
                 use runread ingest/watch for passive evidence instead",
                kind.product(),
                known_series(*kind)
                    .iter()
                    .map(|s| format!("{s}x"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Unsupported::PackageDisagrees {
                program,
                package,
                said,
            } => write!(
                f,
                "`{program}` resolves into the npm package {package}, but `{program} --version` said {said}: \
                 refusing a command whose identity is unclear"
            ),
            Unsupported::Mode(m) => write!(
                f,
                "runread run reads Pi's JSON event stream; drop `--mode {m}` (runread adds `--mode json`)"
            ),
            Unsupported::OutputFormat(m) => write!(
                f,
                "runread run reads Claude Code's stream-json output; drop `--output-format {m}` \
                 (runread adds `--output-format stream-json --verbose`)"
            ),
            Unsupported::InputFormat(m) => write!(
                f,
                "runread run supervises one prompt per Claude Code invocation; drop `--input-format {m}`"
            ),
            Unsupported::NotPrintMode => f.write_str(
                "runread run supervises Claude Code's print mode only: `runread run -- claude -p \"…\"`",
            ),
            Unsupported::NotExec => f.write_str(
                "runread run supervises Codex's non-interactive mode only, with `exec` first: \
                 `runread run -- codex exec \"…\"` (or `codex exec resume --last \"…\"`, \
                 `codex exec fork <id> \"…\"`; Codex's options after `exec`)",
            ),
            Unsupported::ExecSubcommand(s) => write!(
                f,
                "runread run supervises `codex exec`, `codex exec resume` and `codex exec fork`, \
                 not `codex exec {s}`"
            ),
            Unsupported::CodexOption { option, why } => write!(
                f,
                "runread run cannot supervise `codex exec` with `{option}`: {why}"
            ),
        }
    }
}

fn which(program: &OsStr) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 {
        return Some(p.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(p))
            .find(|c| c.is_file())
    })
}

/// The npm package (`package.json` directory and contents) the file `program` lies in, following
/// its links (npm's `.bin` entries are links into the package).
fn package_of(program: &Path) -> Option<(PathBuf, serde_json::Value)> {
    let real = std::fs::canonicalize(program).ok()?;
    let mut dir = real.parent();
    for _ in 0..PACKAGE_SEARCH_DEPTH {
        let d = dir?;
        let candidate = d.join("package.json");
        if candidate.is_file() {
            let mut buf = Vec::new();
            std::fs::File::open(&candidate)
                .ok()?
                .take(PACKAGE_JSON_MAX_BYTES)
                .read_to_end(&mut buf)
                .ok()?;
            let v: serde_json::Value = serde_json::from_slice(&buf).ok()?;
            return Some((d.to_path_buf(), v));
        }
        dir = d.parent();
    }
    None
}

/// What a `--version` answer names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// `X.Y.Z (Claude Code)`.
    Claude(String),
    /// `codex-cli X.Y.Z`.
    Codex(String),
    /// A bare `X.Y.Z` (Pi's answer; a `v` prefix tolerated).
    Bare(String),
    /// Anything else (shown shortened).
    Other(String),
}

fn is_version(s: &str) -> bool {
    let core = s.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
}

/// Reads a `--version` answer (its stdout, at most [`VERSION_PROBE_MAX_BYTES`]).
pub fn parse_version_output(out: &[u8]) -> Said {
    let text = String::from_utf8_lossy(out);
    let trimmed = text.trim();
    if let Some(v) = trimmed.strip_suffix(CLAUDE_VERSION_SUFFIX)
        && is_version(v)
    {
        return Said::Claude(v.to_owned());
    }
    if let Some(v) = trimmed.strip_prefix(CODEX_VERSION_PREFIX)
        && is_version(v)
    {
        return Said::Codex(v.to_owned());
    }
    let bare = trimmed.strip_prefix('v').unwrap_or(trimmed);
    if is_version(bare) {
        return Said::Bare(bare.to_owned());
    }
    const SHOWN_CHARS: usize = 60;
    let shown = crate::stream::one_line(trimmed, SHOWN_CHARS);
    Said::Other(if shown.is_empty() {
        "nothing".into()
    } else {
        format!("`{shown}`")
    })
}

/// Runs `probe` + `--version` (stdin closed, its own process group) and returns its answer: its
/// stdout, or its stderr when stdout is blank (Pi prints its version on stderr), each at most
/// `max_bytes`, within `timeout`, exit status 0. On timeout the process group is killed.
pub async fn ask_version(
    probe: &[OsString],
    cwd: &Path,
    timeout: Duration,
    max_bytes: usize,
) -> Result<Vec<u8>, &'static str> {
    let (program, args) = probe.split_first().ok_or("has no program")?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .arg("--version")
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|_| "could not be run")?;
    let pid = child.id();
    let stdout = child.stdout.take().ok_or("could not be run")?;
    let stderr = child.stderr.take().ok_or("could not be run")?;
    let limit = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let read_bounded = |stream: Box<dyn tokio::io::AsyncRead + Unpin + Send>| async move {
        let mut out = Vec::new();
        stream
            .take(limit)
            .read_to_end(&mut out)
            .await
            .map(|_| out)
            .map_err(|_| "could not be read")
    };
    let work = async {
        let (out, err) = tokio::join!(
            read_bounded(Box::new(stdout)),
            read_bounded(Box::new(stderr))
        );
        let (out, err) = (out?, err?);
        if out.len() > max_bytes || err.len() > max_bytes {
            // Not reaped yet: its group id is still its own.
            kill_group(pid);
            return Err("printed more than a version");
        }
        let status = child.wait().await.map_err(|_| "could not be run")?;
        if !status.success() {
            return Err("failed");
        }
        Ok(if out.iter().all(u8::is_ascii_whitespace) {
            err
        } else {
            out
        })
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => {
            // Not reaped (the wait was cut short): its group id is still its own.
            kill_group(pid);
            Err("did not answer in time")
        }
    }
}

/// Ends a probe's process group (a probe cut short, and what a shim started). Only called before
/// the probe is reaped, so the group id cannot have been reused.
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// How many leading words of `command` start the agent: its program, or `node [flags] SCRIPT`.
fn program_words(command: &[OsString]) -> usize {
    let is_node = command.first().is_some_and(|p| {
        Path::new(p)
            .file_name()
            .is_some_and(|n| n == "node" || n == "nodejs")
    });
    if !is_node {
        return 1;
    }
    command
        .iter()
        .skip(1)
        .position(|a| !a.to_string_lossy().starts_with('-'))
        .map_or(command.len(), |i| i + 2)
}

/// The agent `command` starts, asked with `--version` in `cwd`.
pub async fn identify(command: &[OsString], cwd: &Path) -> Result<Located, Unsupported> {
    identify_within(command, cwd, VERSION_PROBE_TIMEOUT).await
}

/// [`identify`] with a given probe time bound.
pub async fn identify_within(
    command: &[OsString],
    cwd: &Path,
    timeout: Duration,
) -> Result<Located, Unsupported> {
    let program = command.first().ok_or(Unsupported::NoCommand)?;
    let shown = program.to_string_lossy().into_owned();
    let words = program_words(command);
    let probe = command.get(..words).ok_or(Unsupported::NoCommand)?;
    // The file that will run: the program on PATH, or the script `node` is asked to run.
    let file = if words > 1 {
        probe.last().map(PathBuf::from)
    } else {
        Some(which(program).ok_or_else(|| Unsupported::NotFound(shown.clone()))?)
    };
    let package = file
        .as_deref()
        .and_then(package_of)
        .and_then(|(root, pkg)| {
            let name = pkg.get("name").and_then(|n| n.as_str())?.to_owned();
            let version = pkg.get("version").and_then(|v| v.as_str())?.to_owned();
            Some((root, name, version))
        })
        .filter(|(_, name, _)| {
            [PI_PACKAGE, CLAUDE_PACKAGE, CODEX_PACKAGE].contains(&name.as_str())
        });
    // A Pi package of an unknown version is refused without running anything of it.
    if let Some((_, name, version)) = &package
        && name == PI_PACKAGE
        && !known(Agent::Pi, version)
    {
        return Err(Unsupported::UnknownVersion {
            kind: Agent::Pi,
            version: version.clone(),
        });
    }
    let out = ask_version(probe, cwd, timeout, VERSION_PROBE_MAX_BYTES)
        .await
        .map_err(|why| Unsupported::Probe {
            program: shown.clone(),
            why,
        })?;
    let said = parse_version_output(&out);
    let (kind, version) = match (&said, &package) {
        (Said::Claude(v), _) => (Agent::Claude, v.clone()),
        (Said::Codex(v), _) => (Agent::Codex, v.clone()),
        (Said::Bare(v), Some((_, name, _))) if name == PI_PACKAGE => (Agent::Pi, v.clone()),
        // Without Pi's package (a shim, a wrapper), Pi's bare answer is all there is: a version
        // of Pi's known series is taken as Pi. Its session file must still prove every answer.
        (Said::Bare(v), None) if known(Agent::Pi, v) => (Agent::Pi, v.clone()),
        (Said::Bare(v), _) => {
            return Err(Unsupported::NotAnAgent {
                program: shown,
                said: format!("`{v}`"),
            });
        }
        (Said::Other(s), _) => {
            return Err(Unsupported::NotAnAgent {
                program: shown,
                said: s.clone(),
            });
        }
    };
    if let Some((_, name, pkg_version)) = &package
        && (name != npm_package(kind) || !package_says(kind, pkg_version, &version))
    {
        return Err(Unsupported::PackageDisagrees {
            program: shown,
            package: format!("{name} {pkg_version}"),
            said: match &said {
                Said::Claude(v) => format!("`{v}{CLAUDE_VERSION_SUFFIX}`"),
                Said::Codex(v) => format!("`{CODEX_VERSION_PREFIX}{v}`"),
                Said::Bare(v) => format!("`{v}`"),
                Said::Other(s) => s.clone(),
            },
        });
    }
    if !known(kind, &version) {
        return Err(Unsupported::UnknownVersion { kind, version });
    }
    Ok(Located {
        kind,
        version,
        package_root: package.map(|(root, _, _)| root),
    })
}

/// Whether a package of version `pkg_version` is the agent that said `version`: the same
/// version, or — Codex's native binary lies in a platform package — the same version with the
/// platform after it.
fn package_says(kind: Agent, pkg_version: &str, version: &str) -> bool {
    pkg_version == version
        || (kind == Agent::Codex
            && pkg_version
                .strip_prefix(version)
                .is_some_and(|platform| CODEX_PLATFORM_SUFFIXES.contains(&platform)))
}

fn known(kind: Agent, version: &str) -> bool {
    known_series(kind).iter().any(|s| version.starts_with(s))
}

/// The value of `--flag VALUE` or `--flag=VALUE` among the agent's arguments (the last one wins).
fn flag_value(args: &[OsString], flag: &str) -> Option<OsString> {
    let mut found = None;
    let mut it = args.iter();
    let with_eq = format!("{flag}=");
    while let Some(a) = it.next() {
        let s = a.to_string_lossy();
        if s == "--" {
            break;
        }
        if s == flag {
            found = it.next().cloned();
        } else if let Some(v) = s.strip_prefix(&with_eq) {
            found = Some(OsString::from(v));
        }
    }
    found
}

fn has_flag(args: &[OsString], flags: &[&str]) -> bool {
    args.iter()
        .take_while(|a| a.as_os_str() != "--")
        .any(|a| flags.iter().any(|f| a.as_os_str() == *f))
}

/// `args` with `extra` added before a `--` that ends the options (else at the end).
fn with_options(args: &[OsString], extra: &[&str]) -> Vec<OsString> {
    let at = args
        .iter()
        .position(|a| a.as_os_str() == "--")
        .unwrap_or(args.len());
    let mut out = args.to_vec();
    let tail = out.split_off(at);
    out.extend(extra.iter().map(OsString::from));
    out.extend(tail);
    out
}

/// Pi's arguments with `--mode json` ensured. Another mode is refused.
pub fn with_json_mode(args: &[OsString]) -> Result<Vec<OsString>, Unsupported> {
    match flag_value(args, "--mode") {
        Some(m) if m == "json" => Ok(args.to_vec()),
        Some(m) => Err(Unsupported::Mode(m.to_string_lossy().into_owned())),
        None => Ok(with_options(args, &["--mode", "json"])),
    }
}

/// Claude Code's arguments with `--output-format stream-json --verbose` ensured. Another output
/// format, a streamed input, or an interactive session (no `-p`/`--print`) is refused.
pub fn with_stream_json(args: &[OsString]) -> Result<Vec<OsString>, Unsupported> {
    if !has_flag(args, &["-p", "--print"]) {
        return Err(Unsupported::NotPrintMode);
    }
    if let Some(m) = flag_value(args, "--input-format")
        && m != "text"
    {
        return Err(Unsupported::InputFormat(m.to_string_lossy().into_owned()));
    }
    let mut extra: Vec<&str> = Vec::new();
    match flag_value(args, "--output-format") {
        Some(m) if m == "stream-json" => {}
        Some(m) => return Err(Unsupported::OutputFormat(m.to_string_lossy().into_owned())),
        None => extra.extend(["--output-format", "stream-json"]),
    }
    if !has_flag(args, &["--verbose"]) {
        extra.push("--verbose");
    }
    Ok(with_options(args, &extra))
}

/// Codex's `exec` options that take a value (0.171.0's `codex exec --help`, and its `resume` and
/// `fork`): skipped when looking for `exec`'s subcommand.
const CODEX_VALUE_OPTIONS: &[&str] = &[
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
const CODEX_REFUSED_OPTIONS: &[(&str, &str)] = &[
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

/// Whether `arg` is `option`, or `option` with its value attached.
fn is_option(arg: &str, option: &str) -> bool {
    arg == option
        || if option.starts_with("--") {
            arg.strip_prefix(option).is_some_and(|v| v.starts_with('='))
        } else {
            arg.len() > option.len() && arg.starts_with(option)
        }
}

/// The subcommand `codex exec` was given (`resume`, `fork`, …), if any: its first positional
/// argument, when that is not a prompt.
fn codex_exec_subcommand(after_exec: &[OsString]) -> Option<String> {
    let mut it = after_exec.iter().map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if a == "--" || a == "-" {
            return None; // the rest is the prompt, or the prompt comes from stdin
        }
        if a.starts_with('-') {
            if CODEX_VALUE_OPTIONS.contains(&a.as_ref()) {
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
pub fn with_codex_json(args: &[OsString]) -> Result<Vec<OsString>, Unsupported> {
    let Some((first, rest)) = args.split_first() else {
        return Err(Unsupported::NotExec);
    };
    // `e` is Codex's alias of `exec`.
    if first != "exec" && first != "e" {
        return Err(Unsupported::NotExec);
    }
    if let Some(sub) = codex_exec_subcommand(rest)
        && sub != "resume"
        && sub != "fork"
    {
        return Err(Unsupported::ExecSubcommand(sub));
    }
    for a in rest.iter().take_while(|a| a.as_os_str() != "--") {
        let a = a.to_string_lossy();
        if let Some((option, why)) = CODEX_REFUSED_OPTIONS
            .iter()
            .find(|(option, _)| is_option(&a, option))
        {
            return Err(Unsupported::CodexOption {
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

/// The agent's arguments made to stream the events runread reads.
pub fn with_event_stream(kind: Agent, args: &[OsString]) -> Result<Vec<OsString>, Unsupported> {
    match kind {
        Agent::Pi => with_json_mode(args),
        Agent::Claude => with_stream_json(args),
        Agent::Codex => with_codex_json(args),
    }
}

/// Directories where Pi (run in `cwd` with `args`) keeps the session file: `--session-dir`,
/// else `$PI_CODING_AGENT_SESSION_DIR`, else `<agent dir>/sessions/--<cwd>--` (Pi's default).
/// An explicit `--session FILE` is returned as its own parent.
pub fn session_dirs(args: &[OsString], cwd: &Path) -> Vec<PathBuf> {
    let abs = |p: PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
    if let Some(d) = flag_value(args, "--session-dir") {
        return vec![abs(PathBuf::from(d))];
    }
    if let Some(f) = flag_value(args, "--session")
        && Path::new(&f).components().count() > 1
        && let Some(parent) = abs(PathBuf::from(f)).parent()
    {
        return vec![parent.to_path_buf()];
    }
    if let Some(d) = std::env::var_os("PI_CODING_AGENT_SESSION_DIR").filter(|d| !d.is_empty()) {
        return vec![abs(PathBuf::from(d))];
    }
    let agent_dir = std::env::var_os("PI_CODING_AGENT_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pi").join("agent")));
    let Some(agent_dir) = agent_dir else {
        return vec![];
    };
    let cwd_s = cwd.to_string_lossy();
    let safe = cwd_s
        .trim_start_matches(['/', '\\'])
        .replace(['/', '\\', ':'], "-");
    vec![agent_dir.join("sessions").join(format!("--{safe}--"))]
}

/// The session file of `session_id` in `dirs`: Pi names it `<timestamp>_<id>.jsonl`.
pub fn find_session_file(dirs: &[PathBuf], session_id: &str) -> Option<PathBuf> {
    let suffix = format!("_{session_id}.jsonl");
    dirs.iter().find_map(|d| {
        runread_ingest::session_files(d).into_iter().find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(&suffix))
        })
    })
}

/// Claude Code's `projects` directory: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`.
pub fn claude_projects_dir() -> Option<PathBuf> {
    runread_ingest::AgentDir::default_for(runread_sessions::Agent::Claude).map(|d| d.dir)
}

/// The folder name Claude Code gives a working directory under `projects/` (every character but
/// ASCII letters and digits made `-`). Only a first place to look: the folder name is never
/// trusted for anything — the session's lines say their cwd.
pub fn claude_project_folder(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Claude Code's session file of `session_id`: `<projects>/<folder of cwd>/<id>.jsonl`, else the
/// one file of that name in any folder of `projects` (by the session id from the stream, never
/// by the folder's name).
pub fn find_claude_session(projects: &Path, cwd: &str, session_id: &str) -> Option<PathBuf> {
    if !runread_core::target::is_id(session_id) {
        return None;
    }
    let name = format!("{session_id}.jsonl");
    let first = projects.join(claude_project_folder(cwd)).join(&name);
    if std::fs::symlink_metadata(&first).is_ok() {
        return Some(first);
    }
    let found: Vec<PathBuf> = runread_ingest::AgentDir::claude(projects)
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

/// Codex's `sessions` directory: `$CODEX_HOME/sessions`, else `~/.codex/sessions`.
pub fn codex_sessions_dir() -> Option<PathBuf> {
    runread_ingest::AgentDir::default_for(runread_sessions::Agent::Codex).map(|d| d.dir)
}

/// Most directories [`find_codex_rollout`] lists (the sessions directory, then year, month and
/// day folders, newest first): about three years of daily use.
pub const CODEX_FIND_MAX_DIRS: usize = 1200;
/// Most directory entries [`find_codex_rollout`] looks at, in all.
pub const CODEX_FIND_MAX_ENTRIES: usize = 200_000;

/// What a bounded walk may still do.
struct Budget {
    dirs: usize,
    entries: usize,
}

/// The walk's budget is spent: it stops, having found nothing.
struct Spent;

impl Budget {
    /// The entries of `dir`, counted against the budget (an unreadable folder has none).
    fn list(&mut self, dir: &Path) -> Result<Vec<std::fs::DirEntry>, Spent> {
        self.dirs = self.dirs.checked_sub(1).ok_or(Spent)?;
        let Ok(read) = std::fs::read_dir(dir) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in read.flatten() {
            self.entries = self.entries.checked_sub(1).ok_or(Spent)?;
            out.push(entry);
        }
        Ok(out)
    }
}

/// The sub-directories of `dir` named by `digits` ASCII digits (a date folder), newest first.
/// Links are never followed: a linked folder is not walked.
fn date_dirs(budget: &mut Budget, dir: &Path, digits: usize) -> Result<Vec<PathBuf>, Spent> {
    let mut out: Vec<(String, PathBuf)> = budget
        .list(dir)?
        .into_iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            (name.len() == digits && name.bytes().all(|b| b.is_ascii_digit()))
                .then(|| (name, e.path()))
        })
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(out.into_iter().map(|(_, p)| p).collect())
}

/// Codex's rollout file of `thread_id` under `sessions`: `YYYY/MM/DD/rollout-<local time>-<thread
/// id>.jsonl`. The folders are local time, so the date is not computed: the tree is walked,
/// newest folders first, within [`CODEX_FIND_MAX_DIRS`] and [`CODEX_FIND_MAX_ENTRIES`], by the
/// file name's suffix (the thread id from the stream, never a folder's name). Linked folders are
/// not walked; a linked file is returned, for the proof to refuse it. Two files of one thread in
/// the first folder that holds one: neither is taken.
pub fn find_codex_rollout(sessions: &Path, thread_id: &str) -> Option<PathBuf> {
    find_codex_rollout_within(
        sessions,
        thread_id,
        CODEX_FIND_MAX_DIRS,
        CODEX_FIND_MAX_ENTRIES,
    )
}

/// [`find_codex_rollout`] within given bounds.
pub fn find_codex_rollout_within(
    sessions: &Path,
    thread_id: &str,
    max_dirs: usize,
    max_entries: usize,
) -> Option<PathBuf> {
    if !runread_core::target::is_id(thread_id) {
        return None;
    }
    let suffix = format!("-{thread_id}.jsonl");
    let mut budget = Budget {
        dirs: max_dirs,
        entries: max_entries,
    };
    walk_for_rollout(&mut budget, sessions, &suffix)
        .ok()
        .flatten()
}

fn walk_for_rollout(
    budget: &mut Budget,
    sessions: &Path,
    suffix: &str,
) -> Result<Option<PathBuf>, Spent> {
    for year in date_dirs(budget, sessions, 4)? {
        for month in date_dirs(budget, &year, 2)? {
            for day in date_dirs(budget, &month, 2)? {
                let found: Vec<PathBuf> = budget
                    .list(&day)?
                    .into_iter()
                    .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
                    .filter(|e| {
                        e.file_name().to_str().is_some_and(|n| {
                            n.starts_with(runread_ingest::CODEX_ROLLOUT_PREFIX)
                                && n.ends_with(suffix)
                        })
                    })
                    .map(|e| e.path())
                    .collect();
                match found.as_slice() {
                    [] => continue,
                    [one] => return Ok(Some(one.clone())),
                    _ => return Ok(None),
                }
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn version_answers_are_read_strictly() {
        assert_eq!(
            parse_version_output(b"2.1.328 (Claude Code)\n"),
            Said::Claude("2.1.328".into())
        );
        assert_eq!(
            parse_version_output(b"0.73.1\n"),
            Said::Bare("0.73.1".into())
        );
        assert_eq!(
            parse_version_output(b"v0.73.1"),
            Said::Bare("0.73.1".into())
        );
        assert!(matches!(
            parse_version_output(b"Python 3.12.1\n"),
            Said::Other(_)
        ));
        assert!(matches!(parse_version_output(b""), Said::Other(s) if s == "nothing"));
        assert!(matches!(
            parse_version_output(b"2.1.328 (Claude Code) extra"),
            Said::Other(_)
        ));
        assert!(matches!(
            parse_version_output(b"2.1 (Claude Code)"),
            Said::Other(_)
        ));
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
            Err(Unsupported::OutputFormat("json".into()))
        );
        assert_eq!(
            with_stream_json(&os(&["-p", "--input-format", "stream-json"])),
            Err(Unsupported::InputFormat("stream-json".into()))
        );
        assert_eq!(
            with_stream_json(&os(&["hi"])),
            Err(Unsupported::NotPrintMode)
        );
        assert_eq!(
            with_json_mode(&os(&["-p", "hi"])).unwrap(),
            os(&["-p", "hi", "--mode", "json"])
        );
    }

    const THREAD: &str = "01a231e0-7813-7fd3-9f9d-8764034a71d5";
    const OTHER: &str = "01a231e0-40bf-7983-82b9-ca9d0b69bab2";

    fn rollout(sessions: &Path, day: &str, thread: &str) -> PathBuf {
        let dir = sessions.join(day);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("rollout-2026-12-01T13-52-04-{thread}.jsonl"));
        std::fs::write(&p, "{}\n").unwrap();
        p
    }

    #[test]
    fn the_rollout_is_found_by_its_thread_suffix_newest_folders_first() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        rollout(s, "2026/12/02", OTHER);
        let want = rollout(s, "2026/11/30", THREAD);
        // Not Codex's name, another thread, a longer id, not a date folder: none is taken.
        std::fs::write(s.join("2026/12/02").join(format!("{THREAD}.jsonl")), "").unwrap();
        std::fs::write(
            s.join("2026/12/02")
                .join(format!("rollout-x-{THREAD}.jsonl.bak")),
            "",
        )
        .unwrap();
        std::fs::write(
            s.join("2026/12/02")
                .join(format!("rollout-x-0{THREAD}.jsonl")),
            "",
        )
        .unwrap();
        rollout(s, "tmp/12/01", THREAD);
        assert_eq!(find_codex_rollout(s, THREAD), Some(want.clone()));
        assert_eq!(find_codex_rollout(s, "../x"), None, "only a plain id");
        assert_eq!(find_codex_rollout(&s.join("missing"), THREAD), None);
        // A second file of the thread in the same folder: neither.
        std::fs::write(
            want.with_file_name(format!("rollout-2026-11-30T00-00-00-{THREAD}.jsonl")),
            "",
        )
        .unwrap();
        assert_eq!(find_codex_rollout(s, THREAD), None);
    }

    #[test]
    fn a_linked_folder_is_not_walked_and_a_linked_file_is_refused_by_the_proof() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().join("sessions");
        let elsewhere = d.path().join("elsewhere");
        let real = rollout(&elsewhere, "01", THREAD);
        std::fs::create_dir_all(s.join("2026/12")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("01"), s.join("2026/12/01")).unwrap();
        assert_eq!(find_codex_rollout(&s, THREAD), None, "a linked day folder");
        std::fs::remove_file(s.join("2026/12/01")).unwrap();
        std::fs::create_dir_all(s.join("2026/12/01")).unwrap();
        let link = s.join("2026/12/01").join(real.file_name().unwrap());
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(find_codex_rollout(&s, THREAD), Some(link.clone()));
        assert_eq!(
            crate::proof::pin_identity(&link),
            Err(crate::proof::Refusal::NotRegular)
        );
    }

    /// `days` day folders under one month; the thread's file in the oldest. Listing it takes
    /// `3 + days` directories (sessions, year, month, then every day newest first) and
    /// `2 + 2 * days` entries (one year, one month, the days, one file in each).
    fn walk_layout(days: usize) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for day in 1..=days {
            let thread = if day == 1 { THREAD } else { OTHER };
            rollout(d.path(), &format!("2026/12/{day:02}"), thread);
        }
        d
    }

    #[test]
    fn the_walk_finds_the_file_within_its_directory_bound_and_not_one_past_it() {
        let days = 5;
        let d = walk_layout(days);
        let dirs = 3 + days;
        assert!(
            find_codex_rollout_within(d.path(), THREAD, dirs, CODEX_FIND_MAX_ENTRIES).is_some()
        );
        assert!(
            find_codex_rollout_within(d.path(), THREAD, dirs - 1, CODEX_FIND_MAX_ENTRIES).is_none(),
            "one directory more than the bound"
        );
    }

    #[test]
    fn the_walk_finds_the_file_within_its_entry_bound_and_not_one_past_it() {
        let days = 5;
        let d = walk_layout(days);
        let entries = 2 + 2 * days;
        assert!(
            find_codex_rollout_within(d.path(), THREAD, CODEX_FIND_MAX_DIRS, entries).is_some()
        );
        assert!(
            find_codex_rollout_within(d.path(), THREAD, CODEX_FIND_MAX_DIRS, entries - 1).is_none(),
            "one entry more than the bound"
        );
    }

    #[test]
    fn the_project_folder_is_claude_codes_escape() {
        assert_eq!(
            claude_project_folder("/tmp/h/x_y.z/out/workspace"),
            "-tmp-h-x-y-z-out-workspace"
        );
    }

    #[test]
    fn node_and_its_script_are_the_program() {
        assert_eq!(program_words(&os(&["pi", "-p"])), 1);
        assert_eq!(
            program_words(&os(&["node", "--no-warnings", "cli.js", "-p"])),
            3
        );
        assert_eq!(program_words(&os(&["node"])), 1);
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A script printing `n` bytes for `--version`.
    fn printer(dir: &Path, n: usize) -> OsString {
        let p = dir.join(format!("print-{n}"));
        std::fs::write(
            &p,
            format!("#!/bin/sh\nhead -c {n} /dev/zero | tr '\\0' 'x'\n"),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p.into_os_string()
    }

    #[test]
    fn a_version_answer_of_the_bound_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let max = VERSION_PROBE_MAX_BYTES;
        let at = rt()
            .block_on(ask_version(
                &[printer(dir.path(), max)],
                dir.path(),
                VERSION_PROBE_TIMEOUT,
                max,
            ))
            .unwrap();
        assert_eq!(at.len(), max);
        let over = rt().block_on(ask_version(
            &[printer(dir.path(), max + 1)],
            dir.path(),
            VERSION_PROBE_TIMEOUT,
            max,
        ));
        assert_eq!(over, Err("printed more than a version"));
    }

    #[test]
    fn a_probe_that_does_not_answer_in_time_is_killed_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("slow");
        // Answers after 400 ms: within a bound of 2 s, not within one of 100 ms.
        std::fs::write(&p, "#!/bin/sh\nsleep 0.4\necho 2.1.328 '(Claude Code)'\n").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let probe = [p.into_os_string()];
        let ok = rt()
            .block_on(ask_version(&probe, dir.path(), Duration::from_secs(2), 64))
            .unwrap();
        assert_eq!(parse_version_output(&ok), Said::Claude("2.1.328".into()));
        let started = std::time::Instant::now();
        let late = rt().block_on(ask_version(
            &probe,
            dir.path(),
            Duration::from_millis(100),
            64,
        ));
        assert_eq!(late, Err("did not answer in time"));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
