//! Agent session readers. Today: Pi (`@mariozechner/pi-coding-agent`) session files, versions
//! 1 to 3. Each reader turns an agent's own records into a neutral model — entries, the active
//! branch, runs, each run's final-answer candidate and the evidence it rests on — and checks
//! the files it reads (regular, unlinked, identity stable across the read, bounded).
//!
//! This crate knows nothing of MCP, grants or storage.
#![forbid(unsafe_code)]

pub mod file;
pub mod pi;
pub mod runs;

pub use file::{FileIdentity, ReadChunk, ReadError};
pub use pi::{EntryKind, EntrySummary, Header, LineOutcome};
pub use runs::{Run, RunStatus, cut_runs};
