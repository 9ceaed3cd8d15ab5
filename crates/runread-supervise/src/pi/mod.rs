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

/// The npm package of the Pi coding agent.
pub const PI_PACKAGE: &str = "@mariozechner/pi-coding-agent";
/// Pi versions whose JSON event stream and session format runread knows (tested: 0.73.1).
pub const KNOWN_PI_SERIES: &[&str] = &["0.73."];

/// Pi, as `runread run` supervises it (`pi --mode json`).
pub struct Pi;

impl SupervisedAgent for Pi {
    fn agent(&self) -> Agent {
        Agent::Pi
    }
    fn npm_package(&self) -> &'static str {
        PI_PACKAGE
    }
    fn known_series(&self) -> &'static [&'static str] {
        KNOWN_PI_SERIES
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
