//! The walk: each agent's default place and the session files under a directory, listed in
//! path order without following links.

use std::path::{Path, PathBuf};

use runread_sessions::Agent;

/// Deepest directory level searched under the sessions directory.
pub const SCAN_DEPTH_MAX: usize = 3;
/// Most session files considered in one scan.
pub const SCAN_FILES_MAX: usize = 100_000;
/// How Codex names its rollout files (`rollout-<local time>-<thread id>.jsonl`).
pub const CODEX_ROLLOUT_PREFIX: &str = "rollout-";

/// One agent's directory of session files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDir {
    pub agent: Agent,
    pub dir: PathBuf,
}

impl AgentDir {
    /// Pi's sessions directory `dir`.
    pub fn pi(dir: impl Into<PathBuf>) -> AgentDir {
        AgentDir {
            agent: Agent::Pi,
            dir: dir.into(),
        }
    }

    /// Claude Code's projects directory `dir`.
    pub fn claude(dir: impl Into<PathBuf>) -> AgentDir {
        AgentDir {
            agent: Agent::Claude,
            dir: dir.into(),
        }
    }

    /// Codex's sessions directory `dir` (`YYYY/MM/DD/rollout-….jsonl` under it).
    pub fn codex(dir: impl Into<PathBuf>) -> AgentDir {
        AgentDir {
            agent: Agent::Codex,
            dir: dir.into(),
        }
    }

    /// Where each agent keeps its sessions by default, from the environment: Pi at
    /// `$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions`; Claude Code at
    /// `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`; Codex at `$CODEX_HOME/sessions`,
    /// else `~/.codex/sessions`. `None` for an agent whose place cannot be named (no `HOME`).
    pub fn default_for(agent: Agent) -> Option<AgentDir> {
        let home = || std::env::var_os("HOME").map(PathBuf::from);
        let dir = match agent {
            Agent::Pi => match std::env::var_os("PI_CODING_AGENT_DIR") {
                Some(d) => PathBuf::from(d).join("sessions"),
                None => home()?.join(".pi").join("agent").join("sessions"),
            },
            Agent::Claude => match std::env::var_os("CLAUDE_CONFIG_DIR") {
                Some(d) => PathBuf::from(d).join("projects"),
                None => home()?.join(".claude").join("projects"),
            },
            Agent::Codex => match std::env::var_os("CODEX_HOME") {
                Some(d) => PathBuf::from(d).join("sessions"),
                None => home()?.join(".codex").join("sessions"),
            },
        };
        Some(AgentDir { agent, dir })
    }

    /// The session files in this directory, sorted: Pi's `*.jsonl` files at most
    /// [`SCAN_DEPTH_MAX`] levels down; Claude Code's `<escaped cwd>/<session id>.jsonl` (its
    /// subagents' transcripts, under `<session id>/subagents/`, are not sessions); Codex's
    /// `rollout-*.jsonl` (the date folders are local time: nothing is taken from their names).
    pub fn session_files(&self) -> Vec<PathBuf> {
        // Decided on each directory entry's name and depth, not on its joined path (parsing
        // every path's components was a tenth of a re-ingest's instructions).
        match self.agent {
            Agent::Pi => session_files(&self.dir),
            // `<dir>/<escaped cwd>/<session id>.jsonl`: one level down.
            Agent::Claude => jsonl_files(&self.dir, |depth, _| depth == 1),
            Agent::Codex => jsonl_files(&self.dir, |_, name| {
                name.to_str()
                    .is_some_and(|n| n.starts_with(CODEX_ROLLOUT_PREFIX))
            }),
        }
    }
}

/// Session files (`*.jsonl`) under `dir`, at most [`SCAN_DEPTH_MAX`] levels down, sorted.
/// Directories are walked without following links; a `*.jsonl` that is not a regular file (a
/// symbolic link, a FIFO) is listed too, so that ingest reports it as unreadable instead of
/// passing over it in silence (it is never opened).
pub fn session_files(dir: &Path) -> Vec<PathBuf> {
    jsonl_files(dir, |_, _| true)
}

/// [`session_files`], keeping only those whose depth (0: directly in `dir`) and name `keep`
/// accepts. The first [`SCAN_FILES_MAX`] `*.jsonl` files met count, kept or not.
pub(crate) fn jsonl_files(
    dir: &Path,
    keep: impl Fn(usize, &std::ffi::OsStr) -> bool,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut met = 0usize;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if depth < SCAN_DEPTH_MAX {
                    stack.push((entry.path(), depth + 1));
                }
                continue;
            }
            let name = entry.file_name();
            if Path::new(&name).extension().is_some_and(|e| e == "jsonl") && met < SCAN_FILES_MAX {
                met += 1;
                if keep(depth, &name) {
                    out.push(entry.path());
                }
            }
        }
    }
    sort_paths(&mut out);
    out
}

/// Sorts `paths` in [`Path`]'s order (component by component) without parsing components in
/// every comparison: each path's bytes with every `/` made `0`, compared as bytes. That is the
/// same order for the paths [`session_files`] lists — one directory's, joined with names that
/// hold no `/` and no `0` byte and are never empty, `.` or `..` — because a separator then
/// sorts before any byte a name can hold, as a shorter component sorts before a longer one
/// that starts with it.
pub(crate) fn sort_paths(paths: &mut [PathBuf]) {
    use std::os::unix::ffi::OsStrExt;
    paths.sort_by_cached_key(|p| {
        p.as_os_str()
            .as_bytes()
            .iter()
            .map(|&b| if b == b'/' { 0 } else { b })
            .collect::<Vec<u8>>()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte order with separators made `0` is `Path`'s order, on names that differ where a
    /// separator meets a byte below and above it.
    #[test]
    fn paths_sort_as_path_orders_them() {
        let names = [
            "a", "a-b", "a.b", "a b", "a0", "a/b", "a/b/c", "a/b-c", "a/b.c", "a-/b", "ab", "a\\b",
            "é", "é/a", "z", "Z", "~", "a/~", "a/ ", "a./b", "-", "--/a",
        ];
        for dir in ["/d", "/d/", "d", "/d//e", "/"] {
            let mut paths: Vec<PathBuf> = names.iter().map(|n| Path::new(dir).join(n)).collect();
            let mut expected = paths.clone();
            expected.sort();
            paths.reverse();
            sort_paths(&mut paths);
            assert_eq!(paths, expected, "under {dir:?}");
        }
    }

    /// The listing as it was made before it was decided on names and depths: every `*.jsonl`
    /// path, then filtered by its parsed path.
    fn listed_by_paths(d: &AgentDir) -> Vec<PathBuf> {
        fn all(dir: &Path) -> Vec<PathBuf> {
            let mut out = Vec::new();
            let mut stack = vec![(dir.to_path_buf(), 0usize)];
            while let Some((d, depth)) = stack.pop() {
                let Ok(rd) = std::fs::read_dir(&d) else {
                    continue;
                };
                for entry in rd.flatten() {
                    let Ok(ft) = entry.file_type() else { continue };
                    let p = entry.path();
                    if ft.is_dir() && depth < SCAN_DEPTH_MAX {
                        stack.push((p, depth + 1));
                    } else if !ft.is_dir()
                        && p.extension().is_some_and(|e| e == "jsonl")
                        && out.len() < SCAN_FILES_MAX
                    {
                        out.push(p);
                    }
                }
            }
            out.sort();
            out
        }
        let files = all(&d.dir).into_iter();
        match d.agent {
            Agent::Pi => files.collect(),
            Agent::Claude => files
                .filter(|p| {
                    p.parent()
                        .and_then(Path::parent)
                        .is_some_and(|grandparent| grandparent == d.dir)
                })
                .collect(),
            Agent::Codex => files
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(CODEX_ROLLOUT_PREFIX))
                })
                .collect(),
        }
    }

    #[test]
    fn each_agents_listing_is_the_one_made_from_parsed_paths() {
        let root = tempfile::tempdir().unwrap();
        let names = [
            "a.jsonl",
            ".jsonl",
            "..jsonl",
            "a.JSONL",
            "a.jsonl.bak",
            "jsonl",
            "rollout-1.jsonl",
            "rollout-.jsonl",
            "rollout.jsonl",
            "x.rollout-.jsonl",
        ];
        let dirs = [
            "",
            "p",
            "p/q",
            "p/q/r",
            "p/q/r/s",
            "rollout-d.jsonl",
            "-a",
            "a-",
        ];
        for d in dirs {
            let d = root.path().join(d);
            std::fs::create_dir_all(&d).unwrap();
            for n in names {
                let p = d.join(n);
                if !p.exists() {
                    std::fs::write(p, b"").unwrap();
                }
            }
        }
        std::os::unix::fs::symlink(root.path().join("a.jsonl"), root.path().join("p/l.jsonl"))
            .unwrap();
        for dir in [
            root.path().to_path_buf(),
            root.path().join("p"),
            PathBuf::from(format!("{}/", root.path().display())),
            root.path().join("p").join("..").join("p"),
        ] {
            for agent in Agent::ALL {
                let d = AgentDir {
                    agent,
                    dir: dir.clone(),
                };
                let listed = d.session_files();
                assert_eq!(listed, listed_by_paths(&d), "{agent:?} under {dir:?}");
                assert!(!listed.is_empty() || agent == Agent::Codex);
            }
        }
    }

    #[test]
    fn session_files_are_listed_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            "a/x.jsonl",
            "a-b/x.jsonl",
            "a.jsonl",
            "a/b/y.jsonl",
            "ab.jsonl",
            "a0/z.jsonl",
        ] {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
        }
        let listed = session_files(dir.path());
        let mut expected = listed.clone();
        expected.sort();
        assert_eq!(listed, expected);
        assert_eq!(listed.len(), 6);
    }
}
