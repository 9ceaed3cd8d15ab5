//! Pi's command line under supervision (`--mode json` ensured) and where it keeps the session
//! file of one invocation.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::args::{flag_value, with_options};

/// Why Pi's arguments cannot be supervised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Another `--mode` than `json`.
    Mode(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Mode(m) => write!(
                f,
                "runread run reads Pi's JSON event stream; drop `--mode {m}` (runread adds `--mode json`)"
            ),
        }
    }
}

/// Pi's arguments with `--mode json` ensured. Another mode is refused.
pub fn with_json_mode(args: &[OsString]) -> Result<Vec<OsString>, Refused> {
    match flag_value(args, "--mode") {
        Some(m) if m == "json" => Ok(args.to_vec()),
        Some(m) => Err(Refused::Mode(m.to_string_lossy().into_owned())),
        None => Ok(with_options(args, &["--mode", "json"])),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn pi_gets_json_mode_and_another_mode_is_refused() {
        assert_eq!(
            with_json_mode(&os(&["-p", "hi"])).unwrap(),
            os(&["-p", "hi", "--mode", "json"])
        );
        assert_eq!(
            with_json_mode(&os(&["--mode=json", "-p", "hi"])).unwrap(),
            os(&["--mode=json", "-p", "hi"])
        );
        assert_eq!(
            with_json_mode(&os(&["--mode", "text", "-p", "hi"])),
            Err(Refused::Mode("text".into()))
        );
    }
}
