//! runread's integration tests, one binary (one link) for all of them: each module is one
//! behavior's tests, as its own doc says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

mod pgtls;

mod agent_text;
mod architecture;
mod cli;
mod gate_crash;
mod ingest_memory;
mod postgres_gateways;
mod postgres_tls;
mod supervised;
mod transport_limits;
mod walkthrough;
