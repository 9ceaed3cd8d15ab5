//! Gemini CLI under supervision: its event stream ([`events`]), the state machine over it
//! ([`state`]), its command line and where it keeps its chat files ([`args`]), the proof of a
//! run's final answer in its chat file ([`proof`]), how it ended ([`foreground`]), and the
//! machine the driver holds ([`GeminiCli`]).
//!
//! Gemini CLI's chat file records no end of a response: passively, its last model message is
//! only a candidate (`runread_sessions::gemini`). Supervised, the stream says more: its `result`
//! event reports the run's end and its success, and the assistant text after the last tool event
//! is the answer it reported. That text equal to the file's candidate, the `result` a success and
//! the process's exit 0 prove the answer. A cut-off at the model's output limit is marked in
//! neither (the stream reports it as a success): the answer served says its truncation is not
//! known.

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

/// The npm package of Gemini CLI.
pub const GEMINI_PACKAGE: &str = "@google/gemini-cli";
/// The name Gemini CLI's program goes by (it answers `--version` with a bare version).
pub const GEMINI_PROGRAM: &str = "gemini";

/// Gemini CLI, as `runread run` supervises it (`gemini -p … --output-format stream-json`).
pub struct GeminiCli;

impl SupervisedAgent for GeminiCli {
    fn agent(&self) -> Agent {
        Agent::Gemini
    }
    fn npm_packages(&self) -> &'static [&'static str] {
        &[GEMINI_PACKAGE]
    }
    fn program_names(&self) -> &'static [&'static str] {
        &[GEMINI_PROGRAM]
    }
    /// `0.61.0`.
    fn version_answer(&self) -> VersionAnswer {
        VersionAnswer::Bare
    }
    fn usage(&self) -> &'static str {
        "runread run -- gemini -p \"…\""
    }
    fn with_event_stream(&self, args: &[OsString]) -> Result<Vec<OsString>, String> {
        args::with_stream_json(args).map_err(|r| r.to_string())
    }
    fn machine(&self, _args: &[OsString], _cwd: &Path) -> Box<dyn Machine> {
        Box::new(machine::GeminiMachine::new(args::tmp_dir()))
    }
}
