//! `runread run`: supervised runs.
//!
//! Reading a session file after the fact cannot tell whether the agent is still working,
//! retrying or queued, nor whether the foreground ended normally. This crate runs the agent
//! itself — Pi (`--mode json`), Claude Code (`-p --output-format stream-json --verbose`) or
//! Codex (`exec --json`), identified by its own `--version` ([`locate`]) — and turns three
//! sources into evidence:
//!
//! - the **event stream**, one folder per agent ([`pi`], [`claude`], [`codex`]: each its
//!   `events` and its `state` machine, over what every stream shares, [`stream`]): runs, their
//!   phase, the candidate answer;
//! - the **persisted session file** ([`proof`]): re-read link-safely at settle, the candidate
//!   found as the run's final message — Pi and Claude Code: with an unbroken parent chain to the
//!   leaf pinned at start; Codex: in the turn that started after the point pinned at start, as
//!   the answer its `task_complete` reported;
//! - the **process tree** ([`census`]): the agent's exit, and the processes it left behind.
//!
//! A verified proof goes to the private journal (`runread-journal`), its digest into the store
//! with the run's supervised record; the service publishes the answer only when the journal
//! entry verifies, the store has it, and the foreground completed. This crate decides nothing
//! about publication; it records.
#![forbid(unsafe_code)]

pub mod census;
pub mod claude;
pub mod codex;
pub mod locate;
pub mod pi;
pub mod proof;
pub mod refusal;
pub mod run;
pub mod stream;
mod terminal;

pub use run::{
    OnPinned, Options, Outcome, RunReport, StartError, journal_proof, journal_root, supervise,
};
