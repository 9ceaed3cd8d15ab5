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

pub use file::{EvidenceFile, FileIdentity, ReadChunk, ReadError};
pub use pi::{EntryKind, EntrySummary, Header, LineOutcome, LineRef, MessageView};
pub use runs::{Context, Run, RunStatus, TextRef, cut_runs};

/// What a reader may be shown of one message line of a session file written by `agent`, read
/// back when served. `None`: not a message line of that agent (or an agent runread does not read).
pub fn message_view(agent: &str, line: &[u8]) -> Option<MessageView> {
    match agent {
        "pi" => pi::message_view(line),
        _ => None,
    }
}
