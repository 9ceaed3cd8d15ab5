//! Verifying a settled run against the session file the agent persisted: what every agent's
//! proof (in its folder: `proof`) is built from.
//!
//! The file must be a regular file with one link, opened without following links, the same
//! object as pinned (when pinned), unchanged in identity and stat across the read, within the
//! evidence bounds, complete (no unfinished or malformed line), of the pinned session and cwd.
//! It is read with the agent's own session reader (`runread_sessions`: the same scan and run
//! cutting ingest uses), never a second parser. What the run must then be — which message starts
//! it, which ends it, what it chains to — is the agent's rule.

use std::collections::HashMap;
use std::path::Path;

use runread_sessions::file::{self, EvidenceFile, ReadError};
use runread_sessions::{Branch, EntrySummary, FileIdentity, Resume, Run, ScanError};

use runread_core::Agent;

/// What was pinned when supervision started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    pub session_id: String,
    pub cwd: String,
    /// The session file's identity, once it was first seen.
    pub identity: Option<FileIdentity>,
    /// The active leaf when the agent started (`None`: a new session).
    pub leaf: Option<String>,
}

/// A verified run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub identity: FileIdentity,
    pub run: Run,
    pub final_entry_id: String,
    /// The final answer's length in bytes (its lines' texts joined).
    pub text_bytes: u64,
    /// The whole-message hash of the run's first message (its prompt).
    pub user_message_sha256: String,
}

pub use crate::refusal::Refusal;

fn refusal_of(e: ReadError) -> Refusal {
    match e {
        ReadError::NotRegular => Refusal::NotRegular,
        ReadError::HardLinked => Refusal::HardLinked,
        ReadError::ChangedDuringRead | ReadError::Truncated => Refusal::Replaced,
        ReadError::Missing => Refusal::NotFound,
        _ => Refusal::Unreadable,
    }
}

/// Identity of the file now, refusing what may not be pinned (a link, several links).
pub fn pin_identity(path: &Path) -> Result<FileIdentity, Refusal> {
    let id = file::identity(path).map_err(refusal_of)?;
    if id.nlink != 1 {
        return Err(Refusal::HardLinked);
    }
    Ok(id)
}

/// A read error, told apart: a session that changed during the read but is still the object the
/// path named (and that was pinned) is being written — `Busy`, read again; anything else is what
/// it says. The session's identity is its agent's (a file's, or a session's in a database).
fn refusal_at(agent: Agent, path: &Path, pinned: &Pinned, e: ReadError) -> Refusal {
    if e == ReadError::ChangedDuringRead
        && let Ok(now) = runread_sessions::session_identity(agent, path)
        && now.nlink == 1
        && pinned.identity.is_none_or(|p| p.same_object(&now))
    {
        return Refusal::Busy;
    }
    refusal_of(e)
}

/// Opens the session file link-safely (the pinned identity, when there is one), scans it, and
/// checks how the file may have changed across the read (`settled`) before judging what was
/// read: a line read while it was being written is `Busy`, not malformed.
fn open_and_scan(
    agent: Agent,
    path: &Path,
    pinned: &Pinned,
    settled: impl Fn(&EvidenceFile) -> Result<(), ReadError>,
) -> Result<(EvidenceFile, runread_sessions::Scan), Refusal> {
    let at = |e| refusal_at(agent, path, pinned, e);
    let file = runread_sessions::open_session(agent, path, pinned.identity.as_ref()).map_err(at)?;
    let scan = runread_sessions::scan(agent, &file, Resume::Fresh).map_err(|e| match e {
        ScanError::Read(e) => at(e),
        ScanError::NotASession => Refusal::Malformed,
    })?;
    settled(&file).map_err(at)?;
    if scan.over_bounds {
        return Err(Refusal::TooLarge);
    }
    if !scan.malformed.is_empty() {
        return Err(Refusal::Malformed);
    }
    Ok((file, scan))
}

/// Where a session file says its cwd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CwdNamed {
    /// From its first line on.
    FromTheStart,
    /// On conversation lines only: a file without one has not said it yet.
    WithEntries,
}

/// Pins a session file the agent may be writing at the start of supervision: its identity and
/// its newest entry (the leaf a run must chain to, or the point after which a turn starts);
/// `None` while the file holds none. The complete lines up to the size at open count (an
/// unfinished last line is left for later), and the file may only have grown across the read.
pub fn pin_growing(
    agent: Agent,
    cwd_named: CwdNamed,
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Option<String>), Refusal> {
    let (file, scan) = open_and_scan(agent, path, pinned, |f| f.check_grown_only().map(drop))?;
    let cwd_named = cwd_named == CwdNamed::FromTheStart || !scan.entries.is_empty();
    if scan.header.session_id != pinned.session_id || (cwd_named && scan.header.cwd != pinned.cwd) {
        return Err(Refusal::OtherSession);
    }
    let leaf = scan.entries.last().map(|e| e.id.clone());
    Ok((file.identity(), leaf))
}

pub fn read_entries(
    agent: Agent,
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Vec<EntrySummary>), Refusal> {
    // The whole file, unchanged across the read: a proof never rests on part of it.
    let (file, scan) = open_and_scan(agent, path, pinned, EvidenceFile::check_unchanged)?;
    if scan.torn {
        return Err(Refusal::Incomplete);
    }
    if scan.header.session_id != pinned.session_id || scan.header.cwd != pinned.cwd {
        return Err(Refusal::OtherSession);
    }
    Ok((file.identity(), scan.entries))
}

/// The whole file read as for a proof ([`read_entries`]), and its runs cut with the agent's rule.
pub fn read_runs(
    agent: Agent,
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Vec<EntrySummary>, Branch), Refusal> {
    let (identity, entries) = read_entries(agent, path, pinned)?;
    let branch = runread_sessions::cut_runs(agent, &entries, &[], false);
    Ok((identity, entries, branch))
}

/// Whether `leaf` is `from` or one of its ancestors, parent by parent.
pub fn chains_to(from: &EntrySummary, leaf: &str, by_id: &HashMap<&str, &EntrySummary>) -> bool {
    let mut cur = Some(from);
    let mut steps = 0usize;
    while let Some(e) = cur {
        if e.id == leaf {
            return true;
        }
        steps += 1;
        if steps > by_id.len() {
            return false; // a cycle; never loop on input
        }
        cur = e.parent_id.as_deref().and_then(|p| by_id.get(p).copied());
    }
    false
}
