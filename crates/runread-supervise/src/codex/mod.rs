//! Codex under supervision: its event stream ([`events`]), the state machine over it
//! ([`state`]), its command line ([`args`]), where it keeps its rollout files ([`find`]), the
//! proof of a run's final answer in its rollout file ([`proof`]), how it ended ([`foreground`]),
//! and the machine the driver holds ([`Codex`]).

pub mod args;
pub mod events;
pub mod find;
mod machine;
pub mod proof;
pub mod state;

use std::ffi::OsString;
use std::path::Path;

use runread_core::Agent;

pub use machine::foreground;

use crate::machine::{Machine, SupervisedAgent, VersionAnswer};

/// The npm package of the Codex CLI (a wrapper around the native binary, which lies in a
/// platform package of the same name: see [`CODEX_PLATFORM_SUFFIXES`]).
pub const CODEX_PACKAGE: &str = "@openai/codex";
/// What Codex's `--version` says before its version number.
pub const CODEX_VERSION_PREFIX: &str = "codex-cli ";
/// How the version of a Codex platform package (the one holding the native binary) ends after
/// the CLI's version: `0.171.0-linux-x64`.
pub const CODEX_PLATFORM_SUFFIXES: &[&str] = &[
    "-linux-x64",
    "-linux-arm64",
    "-darwin-x64",
    "-darwin-arm64",
    "-win32-x64",
    "-win32-arm64",
];

/// Codex, as `runread run` supervises it (`codex exec --json`).
pub struct Codex;

impl SupervisedAgent for Codex {
    fn agent(&self) -> Agent {
        Agent::Codex
    }
    fn npm_packages(&self) -> &'static [&'static str] {
        &[CODEX_PACKAGE]
    }
    /// `codex-cli 0.171.0`.
    fn version_answer(&self) -> VersionAnswer {
        VersionAnswer::Prefixed(CODEX_VERSION_PREFIX)
    }
    fn platform_suffixes(&self) -> &'static [&'static str] {
        CODEX_PLATFORM_SUFFIXES
    }
    fn usage(&self) -> &'static str {
        "runread run -- codex exec \"…\""
    }
    fn with_event_stream(&self, args: &[OsString]) -> Result<Vec<OsString>, String> {
        args::with_json(args).map_err(|r| r.to_string())
    }
    fn machine(&self, _args: &[OsString], _cwd: &Path) -> Box<dyn Machine> {
        Box::new(machine::CodexMachine::new(find::sessions_dir()))
    }
}
