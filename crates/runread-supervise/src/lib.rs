//! `runread run`: supervised runs.
//!
//! Reading a session file after the fact cannot tell whether the agent is still working,
//! retrying or queued, nor whether the foreground ended normally. This crate runs the agent
//! itself, identified by its own `--version` ([`locate`]) and started with its event stream,
//! and turns three sources into evidence:
//!
//! - the **event stream**, one folder per agent (each its `events` and its `state` machine, over
//!   what every stream shares, [`stream`]): runs, their phase, the candidate answer;
//! - the **persisted session file** (each agent's `proof`, over what every proof shares,
//!   [`proof`]): re-read link-safely at settle, the candidate found as the run's final message,
//!   following the point pinned at start by the agent's rule;
//! - the **process tree** ([`census`]): the agent's exit, and the processes it left behind.
//!
//! Every call that differs between operating systems (the subreaper, the process table, process
//! groups and signals, exit signals) is in [`platform`], side by side for Linux, macOS and the
//! rest; nothing else here names an OS.
//!
//! A verified proof goes to the private journal (`runread-journal`), its digest into the store
//! with the run's supervised record; the service publishes the answer only when the journal
//! entry verifies, the store has it, and the foreground completed. This crate decides nothing
//! about publication; it records.
//!
//! Each agent is one folder (`pi/`, `claude/`, `codex/`, `gemini/`, `copilot/`, `opencode/`) holding everything
//! above that is its own, and one line in the registry ([`agents`]); the driver ([`run`]) holds the agent's
//! [`machine::Machine`] and names no agent.
#![forbid(unsafe_code)]

pub mod agents;
pub mod args;
pub mod census;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod exit;
pub mod gemini;
pub mod locate;
pub mod machine;
pub mod opencode;
pub mod pi;
pub mod platform;
pub mod proof;
pub mod refusal;
pub mod run;
pub mod stream;
pub mod terminal;

pub use run::{
    OnPinned, Options, Outcome, RunReport, StartError, journal_proof, journal_root, supervise,
    supervise_located,
};
