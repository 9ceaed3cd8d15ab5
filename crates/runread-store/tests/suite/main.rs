//! runread-store's integration tests, one binary (one link) for all of them: each module is one
//! behavior's tests, as its own doc says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

mod contract;
mod migrations_frozen;
mod older;
#[cfg(feature = "postgres")]
mod postgres;
mod preview_purge;
mod readers_migration;
mod sqlite_checkpoint;
mod sqlite_first_open;
mod sqlite_other_commits;
