//! Claude Code's proof: the stream carries the file's own uuids but not the prompt. On the
//! active chain the run must hold every message the stream announced for it, its final answer
//! must be exactly the lines of the last response the stream announced (same uuids, same text
//! digests, joining to `result.result`), and its final entry must chain, parent by parent, to the
//! leaf pinned at start (or to the root for a new session).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use runread_core::Agent;
use runread_sessions::{EntrySummary, FileIdentity, Run, RunStatus};

use crate::claude::state::ClaudeCandidate;
use crate::proof::{CwdNamed, Pinned, Refusal, Verified, chains_to, pin_growing, read_runs};

/// Pins Claude Code's session file at the start of supervision (its newest entry: the leaf a run
/// must chain to). Claude Code names the cwd on conversation lines only.
pub fn pin(path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
    pin_growing(Agent::Claude, CwdNamed::WithEntries, path, pinned)
}

/// Every message the stream announced (`uuids`) is one of `run`'s: the run is this invocation's.
fn holds_announced(
    run: &Run,
    uuids: &[String],
    by_id: &HashMap<&str, &EntrySummary>,
) -> Result<(), Refusal> {
    let lines: HashSet<u64> = run.message_lines.iter().copied().collect();
    for u in uuids {
        let e = by_id.get(u.as_str()).ok_or(Refusal::NotOnBranch)?;
        if !lines.contains(&e.line) {
            return Err(Refusal::NotOnBranch);
        }
    }
    Ok(())
}

/// `run`'s answer is the lines the stream announced, with the texts it announced.
fn answer_is_announced(
    run: &Run,
    candidate: &ClaudeCandidate,
    entries: &[EntrySummary],
) -> Result<(), Refusal> {
    let by_line: HashMap<u64, &EntrySummary> = entries.iter().map(|e| (e.line, e)).collect();
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
    Ok(())
}

/// Verifies Claude Code's run that ended with `candidate`, whose messages the stream announced
/// as `uuids` (main thread, in stream order).
pub fn verify(
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
    holds_announced(run, uuids, &by_id)?;
    answer_is_announced(run, candidate, &entries)?;
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
