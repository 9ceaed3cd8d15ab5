//! runread-supervise's integration tests, one binary (one link) for all of them: each module is one
//! behavior's tests, as its own doc says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

mod claude_recorded;
mod codex_recorded;
mod journal_crash;
mod recorded;
mod recorded_agents;
