//! Claude Code under supervision: its event stream ([`events`]), the state machine over it
//! ([`state`]), its command line and where it keeps its sessions ([`args`]), the proof of a run's
//! final answer in its session file ([`proof`]), how it ended ([`foreground`]), and the machine
//! the driver holds ([`ClaudeCode`]).

pub mod args;
pub mod events;
mod machine;
pub mod proof;
pub mod state;

use std::ffi::OsString;
use std::path::Path;

use runread_core::Agent;

pub use machine::foreground;

use crate::machine::{Machine, SupervisedAgent, VersionAnswer};

/// The npm package of Claude Code (a wrapper around the native binary).
pub const CLAUDE_PACKAGE: &str = "@anthropic-ai/claude-code";
/// What Claude Code's `--version` says after its version number.
pub const CLAUDE_VERSION_SUFFIX: &str = " (Claude Code)";

/// Claude Code, as `runread run` supervises it (`claude -p --output-format stream-json`).
pub struct ClaudeCode;

impl SupervisedAgent for ClaudeCode {
    fn agent(&self) -> Agent {
        Agent::Claude
    }
    fn npm_packages(&self) -> &'static [&'static str] {
        &[CLAUDE_PACKAGE]
    }
    /// `2.1.328 (Claude Code)`.
    fn version_answer(&self) -> VersionAnswer {
        VersionAnswer::Suffixed(CLAUDE_VERSION_SUFFIX)
    }
    fn usage(&self) -> &'static str {
        "runread run -- claude -p \"…\""
    }
    fn with_event_stream(&self, args: &[OsString]) -> Result<Vec<OsString>, String> {
        args::with_stream_json(args).map_err(|r| r.to_string())
    }
    fn machine(&self, _args: &[OsString], _cwd: &Path) -> Box<dyn Machine> {
        Box::new(machine::ClaudeMachine::new(args::projects_dir()))
    }
}
