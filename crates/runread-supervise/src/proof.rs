//! Verifying a settled run against the session file the agent persisted.
//!
//! The file must be a regular file with one link, opened without following links, the same
//! object as pinned (when pinned), unchanged in identity and stat across the read, within the
//! evidence bounds, complete (no unfinished or malformed line), of the pinned session and cwd.
//! On its active branch the run must start at the user message the stream announced (same
//! whole-message hash), end at the candidate (same whole-message hash) as its final answer, and
//! its start must chain, parent by parent, to the leaf pinned at start (or to the root for a new
//! session).

use std::collections::HashMap;
use std::path::Path;

use runread_sessions::file::{self, EvidenceFile, ReadError};
use runread_sessions::pi::{self, Resume, ScanError};
use runread_sessions::runs::cut_runs;
use runread_sessions::{EntrySummary, FileIdentity, Run, RunStatus};

use crate::events::Candidate;

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
    pub text_bytes: u64,
}

/// Why a run could not be verified. Fixed texts: they go into the store and the owner's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    NotRegular,
    HardLinked,
    Replaced,
    Unreadable,
    TooLarge,
    Incomplete,
    Malformed,
    OtherSession,
    NotOnBranch,
    BrokenChain,
    Mismatch,
    StreamFault,
    NotFound,
    /// The proof could not be written to the journal (or did not read back).
    Journal,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::NotRegular => "session file is not a regular file (a symbolic link?)",
            Refusal::HardLinked => "session file has more than one link",
            Refusal::Replaced => "session file was replaced or changed during the read",
            Refusal::Unreadable => "session file could not be read",
            Refusal::TooLarge => "session file exceeds the evidence line bound",
            Refusal::Incomplete => "session file ends in an unfinished line",
            Refusal::Malformed => "session file has a malformed line",
            Refusal::OtherSession => "session file belongs to another session or cwd",
            Refusal::NotOnBranch => {
                "the announced answer is not the run's final message on the active branch"
            }
            Refusal::BrokenChain => "the run does not chain to the leaf pinned at start",
            Refusal::Mismatch => "the persisted answer differs from the announced one",
            Refusal::StreamFault => "the event stream had an unreadable line in this run",
            Refusal::NotFound => "the session file was not found",
            Refusal::Journal => "the proof could not be journaled",
        }
    }
}

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

/// The active leaf of the session file at `path` now (for pinning at start).
pub fn current_leaf(
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Option<String>), Refusal> {
    let (identity, entries) = read_entries(path, pinned)?;
    Ok((identity, cut_runs(&entries, &[], false).leaf_id))
}

fn read_entries(
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Vec<EntrySummary>), Refusal> {
    let file = EvidenceFile::open(path, pinned.identity.as_ref()).map_err(refusal_of)?;
    let scan = pi::scan(&file, Resume::Fresh).map_err(|e| match e {
        ScanError::Read(e) => refusal_of(e),
        ScanError::NotASession => Refusal::Malformed,
    })?;
    // The whole file, unchanged across the read: a proof never rests on part of it.
    file.check_unchanged().map_err(refusal_of)?;
    if scan.over_bounds {
        return Err(Refusal::TooLarge);
    }
    if scan.torn {
        return Err(Refusal::Incomplete);
    }
    if !scan.malformed.is_empty() {
        return Err(Refusal::Malformed);
    }
    if scan.header.session_id != pinned.session_id || scan.header.cwd != pinned.cwd {
        return Err(Refusal::OtherSession);
    }
    Ok((file.identity(), scan.entries))
}

/// Verifies one settled run: `user_message_sha256` and `candidate` from the stream.
pub fn verify(
    path: &Path,
    pinned: &Pinned,
    user_message_sha256: &str,
    candidate: &Candidate,
) -> Result<Verified, Refusal> {
    let (identity, entries) = read_entries(path, pinned)?;
    let branch = cut_runs(&entries, &[], false);
    if !branch.complete {
        return Err(Refusal::BrokenChain);
    }
    let run = branch
        .runs
        .iter()
        .find(|r| r.final_message_sha256.as_deref() == Some(candidate.message_sha256.as_str()))
        .ok_or(Refusal::NotOnBranch)?;
    if run.status != RunStatus::Completed {
        return Err(Refusal::NotOnBranch);
    }
    let final_entry_id = run.final_entry_id.clone().ok_or(Refusal::NotOnBranch)?;
    let by_id: HashMap<&str, &EntrySummary> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let start = by_id.get(run.run_id.as_str()).ok_or(Refusal::NotOnBranch)?;
    if start.message_sha256.as_deref() != Some(user_message_sha256) {
        return Err(Refusal::NotOnBranch);
    }
    // The start chains to the pinned leaf: the leaf is the start itself (Pi appended the prompt
    // before the pin was read) or one of its ancestors. A new session chains to the root, which
    // `branch.complete` already proved.
    if let Some(leaf) = &pinned.leaf {
        let mut cur = Some(*start);
        let mut found = false;
        let mut steps = 0usize;
        while let Some(e) = cur {
            if &e.id == leaf {
                found = true;
                break;
            }
            steps += 1;
            if steps > entries.len() {
                break; // a cycle; `complete` excludes it, but never loop on input
            }
            cur = e.parent_id.as_deref().and_then(|p| by_id.get(p).copied());
        }
        if !found {
            return Err(Refusal::BrokenChain);
        }
    }
    let final_entry = by_id
        .get(final_entry_id.as_str())
        .ok_or(Refusal::NotOnBranch)?;
    if final_entry.text_bytes != candidate.text.len() as u64 {
        return Err(Refusal::Mismatch);
    }
    if run.final_text_sha256.as_deref() != Some(candidate.text_sha256.as_str()) {
        return Err(Refusal::Mismatch);
    }
    Ok(Verified {
        identity,
        run: run.clone(),
        final_entry_id,
        text_bytes: final_entry.text_bytes,
    })
}
