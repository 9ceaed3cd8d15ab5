//! The agents runread reads: what this crate knows of each one, as one [`AgentProfile`] in that
//! agent's folder (`pi/`, `claude/`, `codex/`, `gemini/`, `copilot/`), and the one place each is registered
//! ([`profile`]). Nothing outside the agents' folders and this registry names an agent: the
//! layers above ask the profile of the [`Agent`] a session is stored with (enforced by
//! `crates/runread/tests/suite/architecture.rs`).
//!
//! A new agent is a folder here with its profile (its line format, run cutter and view, where it
//! keeps its sessions, what its records can show), a folder in `runread-supervise` (its event
//! stream, state machine and proof), a variant of [`Agent`], and a line in each registry.

use std::path::Path;

use crate::file::{EvidenceFile, FileIdentity};
use crate::model::{Agent, EntrySummary, ForkBase};
use crate::profile::AgentProfile;
use crate::records::{ChildRecord, Records};
use crate::runs::Run;

/// The profile of `agent`: the one registration of each agent in this crate.
pub fn profile(agent: Agent) -> &'static dyn AgentProfile {
    match agent {
        Agent::Pi => &crate::pi::PROFILE,
        Agent::Claude => &crate::claude::PROFILE,
        Agent::Codex => &crate::codex::PROFILE,
        Agent::Gemini => &crate::gemini::PROFILE,
        Agent::Copilot => &crate::copilot::PROFILE,
        Agent::OpenCode => &crate::opencode::PROFILE,
    }
}

/// Opens the session `path` names, written by `agent`, as evidence (a session file, or a
/// session's records in the agent's database); `expect`, when given, must be the same object.
pub fn open_session(
    agent: Agent,
    path: &Path,
    expect: Option<&FileIdentity>,
) -> Result<EvidenceFile, crate::file::ReadError> {
    profile(agent).open(path, expect)
}

/// The identity the session `path` names, written by `agent`, has now.
pub fn session_identity(agent: Agent, path: &Path) -> Result<FileIdentity, crate::file::ReadError> {
    profile(agent).identity(path)
}

/// Whether the lines appended to a session file of `agent` (their entries `new`) rewrite what
/// was indexed of it before (`old`): then the file is read again as a new generation.
pub fn rewrites(agent: Agent, old: &[EntrySummary], new: &[EntrySummary]) -> bool {
    profile(agent).rewrites(old, new)
}

/// Whether the parent session file at `parent_path` (as ingested: `identity`), written by
/// `agent`, still holds the line a fork's inherited history ends at (`base`). Opened
/// link-safely; a file that is gone, replaced or changed does not.
pub fn parent_holds_fork_base(
    agent: Agent,
    parent_path: &Path,
    identity: &FileIdentity,
    base: &ForkBase,
) -> bool {
    open_session(agent, parent_path, Some(identity))
        .is_ok_and(|file| profile(agent).holds_fork_base(&file, base))
}

impl Records {
    /// What `agent`'s records can show (its profile's).
    pub fn of(agent: Agent) -> Records {
        profile(agent).records()
    }
}

/// The child agents the run started from `tool_call_lines` (the exact bytes of the run's lines
/// that call tools, read back as ingested), in the order it started them, each with its record
/// beside the session file `session_file` of `session_id` (`None`: the child has no record).
/// `None` for an agent whose children leave no records ([`Records::child_records`]).
pub fn children(
    agent: Agent,
    session_file: &Path,
    session_id: &str,
    tool_call_lines: &[Vec<u8>],
) -> Option<Vec<Option<ChildRecord>>> {
    profile(agent).children(session_file, session_id, tool_call_lines)
}

/// Sets each run's usage from `entries` (the session's, in file order), the way `agent` keeps
/// token counts ([`crate::usage::attribute`]).
pub fn attribute_usage(agent: Agent, entries: &[EntrySummary], runs: &mut [Run]) {
    crate::usage::attribute(profile(agent).usage_kind(), entries, runs);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The session files (`.jsonl` under a `sessions` folder) below `dir`, and the `sessions`
    /// folders that hold a database (an agent that keeps its sessions in one).
    fn session_files(
        dir: &Path,
        under_sessions: bool,
        out: &mut Vec<std::path::PathBuf>,
        databases: &mut Vec<std::path::PathBuf>,
    ) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                let sessions = under_sessions || p.file_name().is_some_and(|n| n == "sessions");
                session_files(&p, sessions, out, databases);
            } else if under_sessions && p.extension().is_some_and(|e| e == "jsonl") {
                out.push(p);
            } else if under_sessions && p.extension().is_some_and(|e| e == "db") {
                databases.push(p);
            }
        }
    }

    /// The sessions the agent's profile lists in a copy of each database of `databases` (a
    /// read-only open may still create a database's companions: never in the fixtures), in
    /// folders kept alive by the returned guards.
    fn sessions_in_copies(
        agent: Agent,
        databases: &[std::path::PathBuf],
    ) -> (Vec<tempfile::TempDir>, Vec<std::path::PathBuf>) {
        let mut dirs = Vec::new();
        let mut names = Vec::new();
        for db in databases {
            let dir = tempfile::tempdir().unwrap();
            std::fs::copy(db, dir.path().join(db.file_name().unwrap())).unwrap();
            names.extend(profile(agent).session_files(dir.path()));
            dirs.push(dir);
        }
        (dirs, names)
    }

    /// Every line of every real session file committed is of a type runread knows: what the
    /// agents write today never makes a run `unknown` as an unrecognised line.
    #[test]
    fn every_line_type_of_the_committed_fixtures_is_known() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        for agent in Agent::ALL {
            let (mut files, mut databases) = (Vec::new(), Vec::new());
            session_files(
                &fixtures.join(agent.as_str()),
                false,
                &mut files,
                &mut databases,
            );
            let (_copies, in_databases) = sessions_in_copies(agent, &databases);
            files.extend(in_databases);
            assert!(files.len() >= 5, "{agent}: {files:?}");
            let mut scanned = 0;
            for f in &files {
                let file = open_session(agent, f, None).unwrap();
                let Ok(scan) = crate::scan(agent, &file, crate::Resume::Fresh) else {
                    continue; // a subagent's transcript: not a session of its own
                };
                scanned += 1;
                assert_eq!(scan.first_unrecognised, None, "{}", f.display());
                assert!(
                    scan.entries
                        .iter()
                        .all(|e| e.kind != crate::EntryKind::Unrecognised),
                    "{}",
                    f.display()
                );
            }
            assert!(scanned >= 5, "{agent}: {scanned}");
        }
    }

    #[test]
    fn every_agent_has_its_own_profile_and_flag() {
        let mut flags = Vec::new();
        for agent in Agent::ALL {
            let p = profile(agent);
            assert_eq!(p.agent(), agent);
            assert!(!flags.contains(&p.dir_flag()), "{agent:?}");
            flags.push(p.dir_flag());
            assert!(!p.default_place().under_home.is_empty());
        }
    }
}
