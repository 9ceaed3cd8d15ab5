//! Which agent a command starts, and how its command line is made to stream events.
//!
//! An agent is identified the way its user would ask it: `<command> --version` (bounded in time
//! and output, nothing else of the command line passed). Each agent answers in a form of its own
//! ([`VersionAnswer`], in its folder), whether the command is npm's package (a wrapper around a
//! native binary), the native binary itself (which may lie in a platform package of its own,
//! versioned `X.Y.Z-linux-x64`), a standalone install, or a shim (volta, asdf, mise) in front of
//! either. An agent answering a bare version number is told by its npm package where the command
//! resolves into one, else by its program's file name (`pi`); a package must say the same version.
//! So a wrapper or shim that runs a known agent is supervised, and a command that is neither is
//! refused before anything of it runs but `--version`.
//!
//! Any version is accepted: there is no allowlist to fall behind the agent's next release. What
//! protects the reader is the strict reading of the event stream and the session file (anything
//! not recognised leaves the answer unknown, with a fixed reason), and the version a run was
//! supervised at is recorded with it, tested or not (`versionTested` in its metadata).

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncReadExt;

pub use runread_core::Agent;

use crate::agents::{SUPERVISED, supervised};
use crate::machine::{SupervisedAgent, VersionAnswer};

/// Longest a `--version` probe may take (a Node start-up takes seconds on a busy machine); past
/// it the probe's process group is killed and the command refused.
pub const VERSION_PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Most bytes of a `--version` answer read; a longer answer is not a version.
pub const VERSION_PROBE_MAX_BYTES: usize = 4096;
/// Directories walked up from the agent's program to find its `package.json`.
const PACKAGE_SEARCH_DEPTH: usize = 6;
/// Largest `package.json` read.
const PACKAGE_JSON_MAX_BYTES: u64 = 256 * 1024;
/// Most characters of an answer that is not a version shown back.
const SAID_SHOWN_MAX_CHARS: usize = 60;

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
    /// The program's package says one version, the program another.
    PackageDisagrees {
        program: String,
        package: String,
        said: String,
    },
    /// The agent's arguments ask for what supervision cannot follow: its folder's rule, said.
    Arguments(String),
}

/// The agents `runread run` supervises and how, for a refusal to end with.
fn supervises() -> String {
    let each: Vec<String> = SUPERVISED
        .iter()
        .map(|s| format!("{} (`{}`)", s.agent().product(), s.usage()))
        .collect();
    let listed = match each.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    format!("runread run supervises {listed}")
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsupported::NoCommand => write!(
                f,
                "nothing to run: give the agent's command after `--`; {}",
                supervises()
            ),
            Unsupported::NotFound(p) => write!(f, "cannot find `{p}` on PATH"),
            Unsupported::NotAnAgent { program, said } => write!(
                f,
                "`{program}` is not an agent runread knows: `{program} --version` said {said}; {}",
                supervises()
            ),
            Unsupported::Probe { program, why } => write!(
                f,
                "cannot tell which agent `{program}` is: `{program} --version` {why}; {}",
                supervises()
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
            Unsupported::Arguments(why) => f.write_str(why),
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
    /// An agent's own form of answer ([`VersionAnswer::Prefixed`], [`VersionAnswer::Suffixed`]).
    Agent(Agent, String),
    /// A bare `X.Y.Z` (a `v` prefix tolerated).
    Bare(String),
    /// Anything else (shown shortened).
    Other(String),
}

impl Said {
    /// The answer as it was given, for a message.
    fn shown(&self) -> String {
        match self {
            Said::Agent(a, v) => match supervised(*a) {
                Some(s) => format!("`{}`", s.version_answer().written(v)),
                None => format!("`{v}`"),
            },
            Said::Bare(v) => format!("`{v}`"),
            Said::Other(s) => s.clone(),
        }
    }
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
    for s in SUPERVISED {
        let form = s.version_answer();
        if form != VersionAnswer::Bare
            && let Some(v) = form.version_in(trimmed)
            && is_version(v)
        {
            return Said::Agent(s.agent(), v.to_owned());
        }
    }
    if let Some(v) = VersionAnswer::Bare.version_in(trimmed)
        && is_version(v)
    {
        return Said::Bare(v.to_owned());
    }
    let shown = crate::stream::one_line(trimmed, SAID_SHOWN_MAX_CHARS);
    Said::Other(if shown.is_empty() {
        "nothing".into()
    } else {
        format!("`{shown}`")
    })
}

/// Runs `probe` + `--version` (stdin closed, its own process group) and returns its answer: its
/// stdout, or its stderr when stdout is blank (some agents print their version there), each at most
/// `max_bytes`, within `timeout`, exit status 0. On timeout the process group is killed.
pub async fn ask_version(
    probe: &[OsString],
    cwd: &Path,
    timeout: Duration,
    max_bytes: usize,
) -> Result<Vec<u8>, &'static str> {
    let (program, args) = probe.split_first().ok_or("has no program")?;
    let mut child = crate::platform::own_process_group(&mut tokio::process::Command::new(program))
        .args(args)
        .arg("--version")
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
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
    if let Some(pid) = pid {
        crate::platform::kill_group(pid);
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

/// The npm package of a supervised agent that the command's program lies in.
struct Package {
    root: PathBuf,
    agent: &'static dyn SupervisedAgent,
    name: String,
    version: String,
}

/// The package `file` (the program that will run) lies in, when it is a supervised agent's.
fn agent_package(file: &Path) -> Option<Package> {
    let (root, pkg) = package_of(file)?;
    let name = pkg.get("name").and_then(|n| n.as_str())?.to_owned();
    let version = pkg.get("version").and_then(|v| v.as_str())?.to_owned();
    let agent = SUPERVISED
        .into_iter()
        .find(|s| s.npm_packages().contains(&name.as_str()))?;
    Some(Package {
        root,
        agent,
        name,
        version,
    })
}

/// The agent that answering `--version` with `said` names, the command's package and the file
/// name of its program (`file_name`) considered.
fn agent_said(
    said: &Said,
    package: Option<&Package>,
    file_name: Option<&OsStr>,
    program: &str,
) -> Result<(&'static dyn SupervisedAgent, String), Unsupported> {
    let mut bare_agents = SUPERVISED
        .into_iter()
        .filter(|s| s.version_answer() == VersionAnswer::Bare);
    let bare_agent = match package {
        // The agent's package says which agent answered bare.
        Some(p) => bare_agents.find(|b| b.agent() == p.agent.agent()),
        // Without the agent's package (a shim, a standalone install), a bare answer could be any
        // program's: only a program going by an agent's own name is taken as it. Its event
        // stream is still read strictly and its session file must still prove every answer.
        None => bare_agents
            .find(|b| file_name.is_some_and(|n| b.program_names().iter().any(|p| n == *p))),
    };
    match (said, package, bare_agent) {
        (Said::Agent(a, v), _, _) => {
            supervised(*a)
                .map(|s| (s, v.clone()))
                .ok_or_else(|| Unsupported::NotAnAgent {
                    program: program.to_owned(),
                    said: said.shown(),
                })
        }
        (Said::Bare(v), _, Some(bare)) => Ok((bare, v.clone())),
        (said, _, _) => Err(Unsupported::NotAnAgent {
            program: program.to_owned(),
            said: said.shown(),
        }),
    }
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
    let package = file.as_deref().and_then(agent_package);
    let out = ask_version(probe, cwd, timeout, VERSION_PROBE_MAX_BYTES)
        .await
        .map_err(|why| Unsupported::Probe {
            program: shown.clone(),
            why,
        })?;
    let said = parse_version_output(&out);
    let file_name = file.as_deref().and_then(Path::file_name);
    let (agent, version) = agent_said(&said, package.as_ref(), file_name, &shown)?;
    if let Some(p) = &package
        && (p.agent.agent() != agent.agent() || !agent.package_says(&p.version, &version))
    {
        return Err(Unsupported::PackageDisagrees {
            program: shown,
            package: format!("{} {}", p.name, p.version),
            said: said.shown(),
        });
    }
    Ok(Located {
        kind: agent.agent(),
        version,
        package_root: package.map(|p| p.root),
    })
}

/// The agent's arguments made to stream the events runread reads.
pub fn with_event_stream(kind: Agent, args: &[OsString]) -> Result<Vec<OsString>, Unsupported> {
    supervised(kind)
        .ok_or_else(|| {
            Unsupported::Arguments(format!("{} is read only passively", kind.product()))
        })?
        .with_event_stream(args)
        .map_err(Unsupported::Arguments)
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
            Said::Agent(Agent::Claude, "2.1.328".into())
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

    /// Copilot CLI answers `GitHub Copilot CLI 1.0.102.` and a second line on updates: the first
    /// line is the answer, in its own form.
    #[test]
    fn copilot_clis_two_line_answer_is_read_by_its_first_line() {
        assert_eq!(
            parse_version_output(
                b"GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n"
            ),
            Said::Agent(Agent::Copilot, "1.0.102".into())
        );
        assert_eq!(
            parse_version_output(b"GitHub Copilot CLI 1.0.102.\n"),
            Said::Agent(Agent::Copilot, "1.0.102".into())
        );
        assert!(matches!(
            parse_version_output(b"GitHub Copilot CLI 1.0.\n"),
            Said::Other(_)
        ));
        assert!(matches!(
            parse_version_output(b"note\nGitHub Copilot CLI 1.0.102.\n"),
            Said::Other(_)
        ));
    }

    #[test]
    fn a_refusal_names_every_supervised_agent_and_how() {
        let message = Unsupported::NoCommand.to_string();
        for s in SUPERVISED {
            assert!(message.contains(s.agent().product()), "{message}");
            assert!(message.contains(s.usage()), "{message}");
        }
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
        assert_eq!(
            parse_version_output(&ok),
            Said::Agent(Agent::Claude, "2.1.328".into())
        );
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

    /// An executable at `path` answering `--version` with `answer` on stderr, as Pi does.
    fn answers_on_stderr(path: &Path, answer: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("#!/bin/sh\necho '{answer}' >&2\n")).unwrap();
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }

    fn identified(program: &Path, cwd: &Path) -> Result<Located, Unsupported> {
        rt().block_on(identify(
            &[program.as_os_str().to_owned(), "-p".into(), "hi".into()],
            cwd,
        ))
    }

    #[test]
    fn pi_is_either_package_of_any_version() {
        let d = tempfile::tempdir().unwrap();
        for (name, version) in [
            ("@mariozechner/pi-coding-agent", "0.73.1"),
            ("@mariozechner/pi-coding-agent", "0.73.9"),
            ("@earendil-works/pi-coding-agent", "1.6.0"),
            ("@earendil-works/pi-coding-agent", "9.0.0"),
        ] {
            let root = d.path().join(name).join(version);
            std::fs::create_dir_all(&root).unwrap();
            std::fs::write(
                root.join("package.json"),
                format!(r#"{{"name":"{name}","version":"{version}"}}"#),
            )
            .unwrap();
            // Not named `pi`: its package tells it.
            let cli = root.join("dist/cli.js");
            answers_on_stderr(&cli, version);
            let agent = identified(&cli, d.path()).unwrap();
            assert_eq!((agent.kind, agent.version.as_str()), (Agent::Pi, version));
            assert_eq!(agent.package_root.as_deref(), Some(root.as_path()));
            // The package says one version, the program another: refused.
            answers_on_stderr(&cli, "0.1.0");
            assert!(matches!(
                identified(&cli, d.path()),
                Err(Unsupported::PackageDisagrees { .. })
            ));
        }
    }

    /// Gemini CLI answers a bare version too: told from Pi by its package, else by its name.
    #[test]
    fn gemini_cli_answers_bare_and_is_told_by_its_package_or_its_name() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("@google/gemini-cli");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join("package.json"),
            r#"{"name":"@google/gemini-cli","version":"0.61.0"}"#,
        )
        .unwrap();
        let cli = root.join("bundle/gemini.js");
        answers_on_stderr(&cli, "0.61.0");
        let agent = identified(&cli, d.path()).unwrap();
        assert_eq!(
            (agent.kind, agent.version.as_str()),
            (Agent::Gemini, "0.61.0")
        );
        assert_eq!(agent.package_root.as_deref(), Some(root.as_path()));
        let shim = d.path().join("shims/gemini");
        answers_on_stderr(&shim, "0.62.0");
        let agent = identified(&shim, d.path()).unwrap();
        assert_eq!(
            (agent.kind, agent.version.as_str()),
            (Agent::Gemini, "0.62.0")
        );
    }

    /// OpenCode answers a bare version: told by its package (`opencode-ai`, or the platform
    /// package holding its native binary), else by its name.
    #[test]
    fn opencode_answers_bare_and_is_told_by_its_package_or_its_name() {
        let d = tempfile::tempdir().unwrap();
        for (name, program) in [
            ("opencode-ai", "bin/opencode.exe"),
            ("opencode-linux-x64", "bin/opencode"),
        ] {
            let root = d.path().join(name);
            std::fs::create_dir_all(&root).unwrap();
            std::fs::write(
                root.join("package.json"),
                format!(r#"{{"name":"{name}","version":"1.18.33"}}"#),
            )
            .unwrap();
            let cli = root.join(program);
            answers_on_stderr(&cli, "1.18.33");
            let agent = identified(&cli, d.path()).unwrap();
            assert_eq!(
                (agent.kind, agent.version.as_str()),
                (Agent::OpenCode, "1.18.33"),
                "{name}"
            );
            answers_on_stderr(&cli, "1.18.34");
            assert!(matches!(
                identified(&cli, d.path()),
                Err(Unsupported::PackageDisagrees { .. })
            ));
        }
        let shim = d.path().join("shims/opencode");
        answers_on_stderr(&shim, "1.19.0");
        let agent = identified(&shim, d.path()).unwrap();
        assert_eq!(
            (agent.kind, agent.version.as_str()),
            (Agent::OpenCode, "1.19.0")
        );
    }

    #[test]
    fn a_bare_answer_without_a_package_is_pi_only_by_its_name() {
        let d = tempfile::tempdir().unwrap();
        let pi = d.path().join("shims/pi");
        answers_on_stderr(&pi, "1.6.0");
        let agent = identified(&pi, d.path()).unwrap();
        assert_eq!((agent.kind, agent.version.as_str()), (Agent::Pi, "1.6.0"));
        assert_eq!(agent.package_root, None);
        // Any other program answering a bare version is no agent, whatever the version.
        for version in ["0.73.1", "1.6.0"] {
            let other = d.path().join("shims/pip");
            answers_on_stderr(&other, version);
            let refused = identified(&other, d.path()).unwrap_err();
            assert!(
                matches!(refused, Unsupported::NotAnAgent { .. }),
                "{refused:?}"
            );
            assert!(
                refused
                    .to_string()
                    .contains("is not an agent runread knows"),
                "{refused}"
            );
        }
        // A package that is not an agent's is no agent either.
        let root = d.path().join("left-pad");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join("package.json"),
            r#"{"name":"left-pad","version":"1.6.0"}"#,
        )
        .unwrap();
        let cli = root.join("cli.js");
        answers_on_stderr(&cli, "1.6.0");
        assert!(matches!(
            identified(&cli, d.path()),
            Err(Unsupported::NotAnAgent { .. })
        ));
    }
}
