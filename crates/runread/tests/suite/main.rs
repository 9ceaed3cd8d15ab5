//! runread's integration tests, one binary (one link) for all of them: each module is one
//! behavior's tests, as its own doc says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

// The PostgreSQL store's tests: a build without it (`--no-default-features`) has none to run.
#[cfg(feature = "postgres")]
mod pgtls;

mod access_requests;
mod agent_text;
mod architecture;
mod audit_refusals;
mod cli;
mod client_configs;
mod closed_pipe;
mod finding_runs;
mod gate_crash;
mod gone_files;
mod grant_asks;
mod ingest_memory;
mod keep;
// Another machine, as far as files go, is a mount namespace (`unshare`): Linux only.
#[cfg(all(feature = "postgres", target_os = "linux"))]
mod postgres_gateways;
#[cfg(feature = "postgres")]
mod postgres_tls;
mod self_check;
mod supervised;
mod support;
// Measures the server's sockets, memory and CPU time through `/proc`: Linux only.
#[cfg(target_os = "linux")]
mod transport_limits;
#[cfg(feature = "postgres")]
mod walkthrough;
mod words;
mod workspaces;
