//! The walk: each agent's default place and the session files under a directory, listed in
//! path order without following links.

use std::path::PathBuf;

use runread_sessions::Agent;

pub use runread_sessions::walk::{SCAN_DEPTH_MAX, SCAN_FILES_MAX, session_files};

/// One agent's directory of session files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDir {
    pub agent: Agent,
    pub dir: PathBuf,
}

impl AgentDir {
    /// `agent`'s sessions directory `dir`.
    pub fn new(agent: Agent, dir: impl Into<PathBuf>) -> AgentDir {
        AgentDir {
            agent,
            dir: dir.into(),
        }
    }

    /// Where `agent` keeps its sessions by default, from the environment (its profile's
    /// [`runread_sessions::profile::DefaultPlace`]). `None` when it cannot be named (no `HOME`).
    pub fn default_for(agent: Agent) -> Option<AgentDir> {
        let dir = runread_sessions::profile(agent).default_place().resolve()?;
        Some(AgentDir { agent, dir })
    }

    /// The session files in this directory, sorted: those the agent's profile lists.
    pub fn session_files(&self) -> Vec<PathBuf> {
        runread_sessions::profile(self.agent).session_files(&self.dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
                        .is_some_and(|n| n.starts_with("rollout-"))
                })
                .collect(),
            Agent::Gemini => files
                .filter(|p| {
                    p.parent()
                        .and_then(Path::parent)
                        .and_then(Path::parent)
                        .is_some_and(|ggp| ggp == d.dir)
                        && p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("session-"))
                })
                .collect(),
            Agent::Copilot => files
                .filter(|p| {
                    p.parent()
                        .and_then(Path::parent)
                        .is_some_and(|grandparent| grandparent == d.dir)
                        && p.file_name().is_some_and(|n| n == "events.jsonl")
                })
                .collect(),
            // No session file: its sessions are in its database.
            Agent::OpenCode => Vec::new(),
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
            "session-1.jsonl",
            "session.jsonl",
            "events.jsonl",
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
                assert!(
                    !listed.is_empty()
                        || matches!(
                            agent,
                            Agent::Codex | Agent::Gemini | Agent::Copilot | Agent::OpenCode
                        )
                );
            }
        }
    }
}
