//! runread-mcp's integration tests, one binary (one link) for all of them: each module is one
//! behavior's tests, as its own doc says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

mod support;

mod admission;
mod agent_ids;
mod claude_suite;
mod codex_suite;
mod connector;
mod copilot_suite;
mod cors;
mod eras;
mod gemini_suite;
mod opencode_suite;
mod readers;
mod recorded_agents;
mod redaction_property;
mod results_suite;
mod secret_leaks;
mod tasks;
mod transport;
mod tunnel;
mod view;
mod waits;
