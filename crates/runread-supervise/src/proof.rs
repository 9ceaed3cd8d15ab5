//! Verifying a settled run against the session file the agent persisted.
//!
//! The file must be a regular file with one link, opened without following links, the same
//! object as pinned (when pinned), unchanged in identity and stat across the read, within the
//! evidence bounds, complete (no unfinished or malformed line), of the pinned session and cwd.
//! It is read with the agent's own session reader (`runread_sessions`: the same scan and run
//! cutting ingest uses), never a second parser.
//!
//! Pi ([`verify`]): on its active branch the run must start at the user message the stream
//! announced (same whole-message hash), end at the candidate (same whole-message hash) as its
//! final answer, and its start must chain, parent by parent, to the leaf pinned at start (or to
//! the root for a new session).
//!
//! Claude Code ([`verify_claude`]): the stream carries the file's own uuids but not the prompt.
//! On the active chain the run must hold every message the stream announced for it, its final
//! answer must be exactly the lines of the last response the stream announced (same uuids, same
//! text digests, joining to `result.result`), and its final entry must chain, parent by parent,
//! to the leaf pinned at start (or to the root for a new session).
//!
//! Codex ([`verify_codex`]): the stream names neither the turn nor its prompt, and the rollout
//! file has no parent chain: a run is a turn. The rollout must be the thread's (its
//! `session_meta` id the stream's thread id, its cwd the supervised one), and the run is a turn
//! that started after the point pinned at start, or was open then
//! ([`crate::codex::state::turns_after`]); it
//! must have ended with `task_complete` reporting exactly the candidate's text, which must also
//! be the turn's last assistant message (the reader marks the run completed only then).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use runread_sessions::file::{self, EvidenceFile, ReadError};
use runread_sessions::{Branch, EntrySummary, FileIdentity, Resume, Run, RunStatus, ScanError};

use crate::claude::state::ClaudeCandidate;
use crate::codex::state::{self as codex_state, CodexCandidate};
use crate::locate::Agent;
use crate::pi::events::Candidate;

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

/// The active leaf of the session file at `path` now (for pinning at start).
pub fn current_leaf(
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Option<String>), Refusal> {
    let (identity, entries) = read_entries(Agent::Pi, path, pinned)?;
    Ok((
        identity,
        runread_sessions::cut_runs(runread_sessions::Agent::Pi, &entries, &[], false).leaf_id,
    ))
}

/// A read error, told apart: a file that changed during the read but is still the object the
/// path named (and that was pinned) is being written — `Busy`, read again; anything else is what
/// it says.
fn refusal_at(path: &Path, pinned: &Pinned, e: ReadError) -> Refusal {
    if e == ReadError::ChangedDuringRead
        && let Ok(now) = file::identity(path)
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
    let at = |e| refusal_at(path, pinned, e);
    let file = EvidenceFile::open(path, pinned.identity.as_ref()).map_err(at)?;
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

/// Pins a session file the agent may be writing (Claude Code's, Codex's) at the start of
/// supervision: its identity and its newest entry — the leaf a Claude Code run must chain to, the
/// point after which a Codex turn starts; `None` while the file holds none. The complete lines up
/// to the size at open count (an unfinished last line is left for later), and the file may only
/// have grown across the read.
fn pin_growing(
    agent: Agent,
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Option<String>), Refusal> {
    let (file, scan) = open_and_scan(agent, path, pinned, |f| f.check_grown_only().map(drop))?;
    // Codex's `session_meta` names the cwd from the first line on; Claude Code names it on
    // conversation lines only.
    let cwd_named = agent == Agent::Codex || !scan.entries.is_empty();
    if scan.header.session_id != pinned.session_id || (cwd_named && scan.header.cwd != pinned.cwd) {
        return Err(Refusal::OtherSession);
    }
    let leaf = scan.entries.last().map(|e| e.id.clone());
    Ok((file.identity(), leaf))
}

/// Pins Claude Code's session file (see `pin_growing`).
pub fn pin_claude(path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
    pin_growing(Agent::Claude, path, pinned)
}

/// Pins Codex's rollout file, a resumed thread's or a new thread's when first seen (see
/// `pin_growing`).
pub fn pin_codex(path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
    pin_growing(Agent::Codex, path, pinned)
}

fn read_entries(
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
fn read_runs(
    agent: Agent,
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Vec<EntrySummary>, Branch), Refusal> {
    let (identity, entries) = read_entries(agent, path, pinned)?;
    let branch = runread_sessions::cut_runs(agent, &entries, &[], false);
    Ok((identity, entries, branch))
}

/// Verifies one settled run: `user_message_sha256` and `candidate` from the stream.
pub fn verify(
    path: &Path,
    pinned: &Pinned,
    user_message_sha256: &str,
    candidate: &Candidate,
) -> Result<Verified, Refusal> {
    let (identity, entries, branch) = read_runs(Agent::Pi, path, pinned)?;
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
        user_message_sha256: user_message_sha256.to_owned(),
    })
}

/// Whether `leaf` is `from` or one of its ancestors, parent by parent.
fn chains_to(from: &EntrySummary, leaf: &str, by_id: &HashMap<&str, &EntrySummary>) -> bool {
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

/// Verifies Claude Code's run that ended with `candidate`, whose messages the stream announced
/// as `uuids` (main thread, in stream order).
pub fn verify_claude(
    path: &Path,
    pinned: &Pinned,
    uuids: &[String],
    candidate: &ClaudeCandidate,
) -> Result<Verified, Refusal> {
    let (identity, entries, branch) = read_runs(Agent::Claude, path, pinned)?;
    if !branch.complete {
        return Err(Refusal::BrokenChain);
    }
    let last = candidate.answer_uuids.last().ok_or(Refusal::NotOnBranch)?;
    let run = branch
        .runs
        .iter()
        .find(|r| r.final_entry_id.as_deref() == Some(last.as_str()))
        .ok_or(Refusal::NotOnBranch)?;
    if run.status != RunStatus::Completed {
        return Err(Refusal::NotOnBranch);
    }
    let by_id: HashMap<&str, &EntrySummary> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let by_line: HashMap<u64, &EntrySummary> = entries.iter().map(|e| (e.line, e)).collect();
    // Every message the stream announced is one of this run's (the run is this invocation's).
    let lines: HashSet<u64> = run.message_lines.iter().copied().collect();
    for u in uuids {
        let e = by_id.get(u.as_str()).ok_or(Refusal::NotOnBranch)?;
        if !lines.contains(&e.line) {
            return Err(Refusal::NotOnBranch);
        }
    }
    // The answer is the lines the stream announced, with the texts it announced.
    if run.final_lines.len() != candidate.answer_uuids.len() {
        return Err(Refusal::Mismatch);
    }
    for ((line, uuid), sha) in run
        .final_lines
        .iter()
        .zip(&candidate.answer_uuids)
        .zip(&candidate.line_text_sha256s)
    {
        let e = by_line.get(&line.line).ok_or(Refusal::NotOnBranch)?;
        if e.id != *uuid || e.text_sha256.as_deref() != Some(sha.as_str()) {
            return Err(Refusal::Mismatch);
        }
    }
    if run.final_text_sha256.as_deref() != Some(candidate.text_digest.as_str())
        || run.final_bytes != candidate.text.len() as u64
        || run.final_truncated != candidate.truncated
    {
        return Err(Refusal::Mismatch);
    }
    let final_entry_id = run.final_entry_id.clone().ok_or(Refusal::NotOnBranch)?;
    let start = by_id.get(run.run_id.as_str()).ok_or(Refusal::NotOnBranch)?;
    let user_message_sha256 = start.message_sha256.clone().ok_or(Refusal::NotOnBranch)?;
    // The run continues the session as it was at start: the leaf pinned then is on its chain
    // (before the prompt, or — when Claude Code had already written the prompt — inside the run).
    // A new session chains to the root, which `branch.complete` already proved.
    if let Some(leaf) = &pinned.leaf {
        let end = by_id
            .get(final_entry_id.as_str())
            .ok_or(Refusal::NotOnBranch)?;
        if !chains_to(end, leaf, &by_id) {
            return Err(Refusal::BrokenChain);
        }
    }
    Ok(Verified {
        identity,
        run: run.clone(),
        final_entry_id,
        text_bytes: run.final_bytes,
        user_message_sha256,
    })
}

/// Verifies Codex's run that ended with `candidate` (the stream's last `agent_message` before
/// `turn.completed`), the one turn of this invocation.
pub fn verify_codex(
    path: &Path,
    pinned: &Pinned,
    candidate: &CodexCandidate,
) -> Result<Verified, Refusal> {
    let (identity, entries, branch) = read_runs(Agent::Codex, path, pinned)?;
    // A leaf the file no longer holds: not the file as pinned.
    let ours = codex_state::turns_after(&entries, pinned.leaf.as_deref())
        .ok_or(Refusal::BrokenChain)?
        .all();
    let answered = |r: &Run| {
        r.status == RunStatus::Completed
            && r.final_text_sha256.as_deref() == Some(candidate.text_sha256.as_str())
    };
    let mine: Vec<&Run> = branch
        .runs
        .iter()
        .filter(|r| ours.contains(&r.run_id))
        .collect();
    let found: Vec<&Run> = mine.iter().copied().filter(|r| answered(r)).collect();
    let run: &Run = match found.as_slice() {
        [one] => one,
        [] if mine.is_empty() || mine.iter().any(|r| r.status == RunStatus::Running) => {
            // The turn is not (all) in the file yet: read again.
            return Err(Refusal::NotOnBranch);
        }
        // The answer is a turn's from before the pin.
        [] if branch.runs.iter().any(answered) => return Err(Refusal::BrokenChain),
        [] => return Err(Refusal::Mismatch),
        // Two turns of this invocation with the answer: which one is not known.
        _ => return Err(Refusal::NotOnBranch),
    };
    let turn = Some(run.run_id.as_str());
    // What `task_complete` reported, besides the last assistant message the reader matched it to.
    let end = entries
        .iter()
        .find(|e| e.kind == runread_sessions::EntryKind::TurnEnd && e.turn.as_deref() == turn)
        .ok_or(Refusal::NotOnBranch)?;
    if end.text_sha256.as_deref() != Some(candidate.text_sha256.as_str())
        || end.text_bytes != candidate.text.len() as u64
        || run.final_bytes != candidate.text.len() as u64
        || run.final_truncated
    {
        return Err(Refusal::Mismatch);
    }
    let final_entry_id = run.final_entry_id.clone().ok_or(Refusal::NotOnBranch)?;
    let user_message_sha256 = entries
        .iter()
        .find(|e| {
            e.turn.as_deref() == turn
                && e.role.as_deref() == Some(runread_sessions::codex::role::USER)
        })
        .and_then(|e| e.message_sha256.clone())
        .ok_or(Refusal::NotOnBranch)?;
    Ok(Verified {
        identity,
        run: run.clone(),
        final_entry_id,
        text_bytes: run.final_bytes,
        user_message_sha256,
    })
}
