//! runread-service's integration tests, one binary (one link) for all of them: each module is one
//! behavior's tests, as its own doc says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

mod access;
mod call_rate;
mod evidence_source;
mod final_answer;
mod get_run;
mod gone_files;
mod grant_standing;
mod history_limits;
mod keeps;
mod key_admission;
mod opencode;
mod recheck;
mod refusals;
mod run_ids;
mod search;
mod snapshots;
mod supervised;
mod unrecognised;
mod usage;
mod wait;
