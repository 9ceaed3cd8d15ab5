//! `runread run`: supervised runs.
//!
//! Reading a session file after the fact cannot tell whether the agent is still working,
//! retrying or queued, nor whether the foreground ended normally. This crate runs the agent
//! (Pi, `--mode json`) itself and turns three sources into evidence:
//!
//! - the **event stream** ([`events`], [`state`]): runs, their phase, the candidate answer;
//! - the **persisted session file** ([`proof`]): re-read link-safely at settle, the candidate's
//!   whole-message hash found as the run's final message with an unbroken parent chain to the
//!   leaf pinned at start;
//! - the **process tree** ([`census`]): the agent's exit, and the processes it left behind.
//!
//! A verified proof goes to the private journal (`runread-journal`), its digest into the store
//! with the run's supervised record; the service publishes the answer only when the journal
//! entry verifies, the store has it, and the foreground completed. This crate decides nothing
//! about publication; it records.
#![forbid(unsafe_code)]

pub mod census;
pub mod events;
pub mod locate;
pub mod proof;
pub mod run;
pub mod state;

pub use run::{Options, Outcome, RunReport, StartError, journal_proof, journal_root, supervise};
