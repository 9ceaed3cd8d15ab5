//! Which agent a command starts, and where it will keep its session file.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The npm package of the Pi coding agent.
pub const PI_PACKAGE: &str = "@mariozechner/pi-coding-agent";
/// Pi versions whose JSON event stream and session format runread knows (tested: 0.73.1).
pub const KNOWN_PI_SERIES: &[&str] = &["0.73."];
/// Directories walked up from the agent's entry script to find its `package.json`.
const PACKAGE_SEARCH_DEPTH: usize = 6;
/// Largest `package.json` read.
const PACKAGE_JSON_MAX_BYTES: u64 = 256 * 1024;

/// The agent a command line starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub package: String,
    pub version: String,
    /// Where the package lives (for messages).
    pub root: PathBuf,
}

/// Why `runread run` will not supervise a command. Each says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    NoCommand,
    NotFound(String),
    NotPi(String),
    UnknownVersion { version: String },
    Mode(String),
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsupported::NoCommand => f.write_str("nothing to run: give the agent's command after `--`, e.g. `runread run -- pi -p \"…\"`"),
            Unsupported::NotFound(p) => write!(f, "cannot find `{p}` on PATH"),
            Unsupported::NotPi(p) => write!(
                f,
                "`{p}` is not the Pi coding agent ({PI_PACKAGE}) as installed by npm; runread run supervises Pi only \
                 (run it as the npm `pi` link or `node …/pi-coding-agent/dist/cli.js`)"
            ),
            Unsupported::UnknownVersion { version } => write!(
                f,
                "Pi {version} is not a version whose event stream runread knows (known: {}); \
                 use runread ingest/watch for passive evidence instead",
                KNOWN_PI_SERIES.iter().map(|s| format!("{s}x")).collect::<Vec<_>>().join(", ")
            ),
            Unsupported::Mode(m) => write!(
                f,
                "runread run reads Pi's JSON event stream; drop `--mode {m}` (runread adds `--mode json`)"
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

fn package_of(script: &Path) -> Option<(PathBuf, serde_json::Value)> {
    let real = std::fs::canonicalize(script).ok()?;
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

/// The agent `command` starts: its program, or the script `node` is asked to run.
pub fn agent_of(command: &[OsString]) -> Result<Agent, Unsupported> {
    let program = command.first().ok_or(Unsupported::NoCommand)?;
    let shown = program.to_string_lossy().into_owned();
    let is_node = Path::new(program)
        .file_name()
        .is_some_and(|n| n == "node" || n == "nodejs");
    let script = if is_node {
        let s = command
            .iter()
            .skip(1)
            .find(|a| !a.to_string_lossy().starts_with('-'))
            .ok_or_else(|| Unsupported::NotPi(shown.clone()))?;
        PathBuf::from(s)
    } else {
        which(program).ok_or_else(|| Unsupported::NotFound(shown.clone()))?
    };
    let (root, pkg) = package_of(&script).ok_or_else(|| Unsupported::NotPi(shown.clone()))?;
    if pkg.get("name").and_then(|n| n.as_str()) != Some(PI_PACKAGE) {
        return Err(Unsupported::NotPi(shown));
    }
    let version = pkg
        .get("version")
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_owned();
    if !KNOWN_PI_SERIES.iter().any(|s| version.starts_with(s)) {
        return Err(Unsupported::UnknownVersion { version });
    }
    Ok(Agent {
        package: PI_PACKAGE.into(),
        version,
        root,
    })
}

/// The value of `--flag VALUE` or `--flag=VALUE` among Pi's arguments (the last one wins).
fn flag_value(args: &[OsString], flag: &str) -> Option<OsString> {
    let mut found = None;
    let mut it = args.iter();
    let with_eq = format!("{flag}=");
    while let Some(a) = it.next() {
        let s = a.to_string_lossy();
        if s == flag {
            found = it.next().cloned();
        } else if let Some(v) = s.strip_prefix(&with_eq) {
            found = Some(OsString::from(v));
        }
    }
    found
}

/// Pi's arguments with `--mode json` ensured. Another mode is refused.
pub fn with_json_mode(args: &[OsString]) -> Result<Vec<OsString>, Unsupported> {
    match flag_value(args, "--mode") {
        Some(m) if m == "json" => Ok(args.to_vec()),
        Some(m) => Err(Unsupported::Mode(m.to_string_lossy().into_owned())),
        None => {
            let mut out = args.to_vec();
            out.push("--mode".into());
            out.push("json".into());
            Ok(out)
        }
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
