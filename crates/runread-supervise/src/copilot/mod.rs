//! Copilot CLI under supervision: its event stream ([`events`]), the state machine over it
//! ([`state`]), its command line and where it keeps its session files ([`args`]), the proof of a
//! run's final answer in its `events.jsonl` ([`proof`]), how it ended ([`foreground`]), and the
//! machine the driver holds ([`CopilotCli`]).
//!
//! `copilot -p … --output-format json` streams the session file's own events (the same ids) and
//! ends with `result`, which names the session and the exit code. The answer is the main agent's
//! last `assistant.message` without tool requests; it is proven when the file's run of the
//! stream's prompt ends in that very message with that text, the file marks the run completed
//! (its usage records say how each model call ended), `result` reported exit code 0 with no
//! `abort` and no `session.error`, and the process exited 0.

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

/// The npm package of Copilot CLI.
pub const COPILOT_PACKAGE: &str = "@github/copilot";
/// How Copilot CLI's `--version` answer begins (`GitHub Copilot CLI 1.0.102.`, then a line on
/// `copilot update`).
pub const COPILOT_VERSION_PREFIX: &str = "GitHub Copilot CLI ";

/// Copilot CLI, as `runread run` supervises it (`copilot -p … --output-format json`).
pub struct CopilotCli;

impl SupervisedAgent for CopilotCli {
    fn agent(&self) -> Agent {
        Agent::Copilot
    }
    fn npm_packages(&self) -> &'static [&'static str] {
        &[COPILOT_PACKAGE]
    }
    fn program_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// `GitHub Copilot CLI 1.0.102.` on its first line.
    fn version_answer(&self) -> VersionAnswer {
        VersionAnswer::FirstLine(COPILOT_VERSION_PREFIX, ".")
    }
    fn usage(&self) -> &'static str {
        "runread run -- copilot -p \"…\""
    }
    fn with_event_stream(&self, args: &[OsString]) -> Result<Vec<OsString>, String> {
        args::with_json(args).map_err(|r| r.to_string())
    }
    fn machine(&self, args: &[OsString], cwd: &Path) -> Box<dyn Machine> {
        Box::new(machine::CopilotMachine::new(args::state_dir(args, cwd)))
    }
}
