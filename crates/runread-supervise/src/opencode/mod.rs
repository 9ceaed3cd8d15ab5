//! OpenCode under supervision: its event stream ([`events`]), the state machine over it
//! ([`state`]), its command line and the database that keeps its sessions ([`args`]), the proof
//! of a run's final answer in that database ([`proof`]), how it ended ([`foreground`]), and the
//! machine the driver holds ([`OpenCode`]).
//!
//! `opencode run … --format json` streams each part of the model's messages once saved, with the
//! database's own ids, the first event naming the session. The run ends at a `step_finish` of
//! reason `stop` or `length` (its answer: that message's text parts) or at an `error`; an
//! interrupt kills OpenCode, leaving the stream without an end. The answer is proven when the
//! session's run in the database (read with the session reader, `<database>#<session id>`) ends
//! in that very text part with that text, the database marks the run completed (cut exactly when
//! the stream said `length`), and the process exited 0.

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

/// The npm package of OpenCode.
pub const OPENCODE_PACKAGE: &str = "opencode-ai";
/// Every npm package of OpenCode: its own, then those holding its native binary for one platform
/// (the program a user may run directly), versioned as its own is.
const OPENCODE_PACKAGES: [&str; 13] = [
    OPENCODE_PACKAGE,
    "opencode-linux-x64",
    "opencode-linux-x64-baseline",
    "opencode-linux-x64-musl",
    "opencode-linux-x64-baseline-musl",
    "opencode-linux-arm64",
    "opencode-linux-arm64-musl",
    "opencode-darwin-x64",
    "opencode-darwin-x64-baseline",
    "opencode-darwin-arm64",
    "opencode-windows-x64",
    "opencode-windows-x64-baseline",
    "opencode-windows-arm64",
];
/// The name OpenCode's program goes by (it answers `--version` with a bare version).
pub const OPENCODE_PROGRAM: &str = "opencode";

/// OpenCode, as `runread run` supervises it (`opencode run … --format json`).
pub struct OpenCode;

impl SupervisedAgent for OpenCode {
    fn agent(&self) -> Agent {
        Agent::OpenCode
    }
    fn npm_packages(&self) -> &'static [&'static str] {
        &OPENCODE_PACKAGES
    }
    fn program_names(&self) -> &'static [&'static str] {
        &[OPENCODE_PROGRAM]
    }
    /// `1.18.33`.
    fn version_answer(&self) -> VersionAnswer {
        VersionAnswer::Bare
    }
    fn usage(&self) -> &'static str {
        "runread run -- opencode run \"…\""
    }
    fn with_event_stream(&self, args: &[OsString]) -> Result<Vec<OsString>, String> {
        args::with_json(args).map_err(|r| r.to_string())
    }
    fn machine(&self, _args: &[OsString], _cwd: &Path) -> Box<dyn Machine> {
        Box::new(machine::OpenCodeMachine::new(args::database()))
    }
}
