//! One file per subcommand: each parses nothing (clap did, `crate::args`), takes the shared
//! [`crate::context::Context`] when it works on a home, does its work through the library crates,
//! and prints.

pub(crate) mod artifact;
pub(crate) mod audit;
pub(crate) mod console;
pub(crate) mod demo;
pub(crate) mod grant;
pub(crate) mod ingest;
pub(crate) mod keep;
pub(crate) mod keys;
pub(crate) mod read;
pub(crate) mod reader;
pub(crate) mod requests;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod secret;
pub(crate) mod serve;
pub(crate) mod show;
pub(crate) mod snapshots;
pub(crate) mod status;
pub(crate) mod workspace;
