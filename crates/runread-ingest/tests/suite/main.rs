//! runread-ingest's integration tests, one binary (one link) for all of them: each module is one
//! behavior's tests, as its own doc says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

mod claude_fixtures;
mod codex_fixtures;
mod copilot_fixtures;
mod gemini_fixtures;
mod host_conflict;
mod incremental;
mod pi_fixtures;
mod preload;
mod recorded_agents;
mod unrecognised;
mod watch;
