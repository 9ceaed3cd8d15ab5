//! Pi under supervision: its event stream ([`events`]), the state machine over it ([`state`]),
//! its command line and where it keeps its sessions ([`args`]), the proof of a run's final
//! answer in its session file ([`proof`]), and the machine the driver holds ([`Pi`]).

pub mod args;
pub mod events;
mod machine;
pub mod proof;
pub mod state;

use std::ffi::OsString;
use std::path::Path;

use runread_core::Agent;

use crate::machine::{Machine, SupervisedAgent, VersionAnswer};

/// The npm packages of the Pi coding agent: its name to 0.73, and since 0.74 (1.x).
pub const PI_PACKAGES: &[&str] = &[
    "@mariozechner/pi-coding-agent",
    "@earendil-works/pi-coding-agent",
];
/// The file name of Pi's program (`pi`): what tells a bare version answer as Pi's when no
/// package says so.
pub const PI_PROGRAM: &str = "pi";

/// Pi, as `runread run` supervises it (`pi --mode json`).
pub struct Pi;

impl SupervisedAgent for Pi {
    fn agent(&self) -> Agent {
        Agent::Pi
    }
    fn npm_packages(&self) -> &'static [&'static str] {
        PI_PACKAGES
    }
    fn program_names(&self) -> &'static [&'static str] {
        &[PI_PROGRAM]
    }
    /// Pi answers its bare version number (on stderr).
    fn version_answer(&self) -> VersionAnswer {
        VersionAnswer::Bare
    }
    fn usage(&self) -> &'static str {
        "runread run -- pi -p \"…\""
    }
    fn with_event_stream(&self, args: &[OsString]) -> Result<Vec<OsString>, String> {
        args::with_json_mode(args).map_err(|r| r.to_string())
    }
    fn machine(&self, args: &[OsString], cwd: &Path) -> Box<dyn Machine> {
        Box::new(machine::PiMachine::new(args::session_dirs(args, cwd)))
    }
}
