//! Agent session readers: Pi (`@mariozechner/pi-coding-agent`) session files, versions 1 to 3
//! ([`pi`]), Claude Code's ([`claude`]), Codex CLI's rollouts ([`codex`]), Gemini CLI's chat
//! files ([`gemini`]) and GitHub Copilot CLI's session events ([`copilot`]). Each reader turns an agent's own records into the
//! neutral [`model`] — index entries, the active branch, runs, each run's final-answer candidate
//! and the evidence it rests on — and checks the files it reads (regular, unlinked, identity
//! stable across the read, bounded). Nothing above this crate (ingest aside, which picks the
//! reader) knows which agent wrote a file: what an agent's records can show is asked of
//! [`records`] with the [`Agent`] as a value.
//!
//! This crate knows nothing of MCP, grants or storage.
#![forbid(unsafe_code)]

pub mod agents;
pub mod claude;
pub mod codex;
mod content;
pub mod copilot;
pub mod file;
pub mod gemini;
pub mod model;
pub mod opencode;
pub mod pi;
pub mod profile;
pub mod records;
pub mod runs;
pub mod scan;
pub mod usage;
pub mod walk;

pub use agents::{open_session, profile, rewrites, session_identity};
pub use file::{EvidenceFile, FileIdentity, ReadChunk, ReadError, Record, RecordLog};
pub use model::{
    Agent, EntryKind, EntrySummary, ForkBase, Header, LineOutcome, LineRef, Listed, MessageView,
    Resume, Scan, ScanError, Tokens, Unrecognised, answer_digest, join_groups,
};
pub use profile::{AgentProfile, Cleanup};
pub use records::{ChildRecord, MetadataSources, Records};
pub use runs::{Branch, Context, FIRST_SEQUENCE, Run, RunStatus, TextRef, UNRECOGNISED_LINE};
pub use scan::{LineDigest, ReadAhead};

/// What a reader may be shown of one message line of a session file written by `agent`, read
/// back when served. `None`: not a message line of that agent.
pub fn message_view(agent: Agent, line: &[u8]) -> Option<MessageView> {
    profile(agent).message_view(line)
}

/// One streamed pass over a session file of `agent` (see [`pi::scan`]); a large file's lines are
/// read and hashed on a second thread ([`ReadAhead::Allowed`]).
pub fn scan(agent: Agent, file: &EvidenceFile, resume: Resume<'_>) -> Result<Scan, ScanError> {
    scan_with(agent, file, resume, ReadAhead::Allowed)
}

/// [`scan()`], saying whether a second thread may read ahead.
pub fn scan_with(
    agent: Agent,
    file: &EvidenceFile,
    resume: Resume<'_>,
    ahead: ReadAhead,
) -> Result<Scan, ScanError> {
    profile(agent).scan(file, resume, ahead)
}

/// The runs of a session of `agent` from its index entries (in file order).
pub fn cut_runs(agent: Agent, entries: &[EntrySummary], malformed: &[u64], torn: bool) -> Branch {
    let mut branch = profile(agent).cut_runs(entries, malformed, torn);
    agents::attribute_usage(agent, entries, &mut branch.runs);
    branch
}
