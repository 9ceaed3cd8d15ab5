//! Pi's proof: on its active branch the run must start at the user message the stream announced
//! (same whole-message hash), end at the candidate (same whole-message hash) as its final
//! answer, and its start must chain, parent by parent, to the leaf pinned at start (or to the
//! root for a new session).

use std::collections::HashMap;
use std::path::Path;

use runread_core::Agent;
use runread_sessions::{EntrySummary, FileIdentity, RunStatus};

use crate::pi::events::Candidate;
use crate::proof::{Pinned, Refusal, Verified, chains_to, read_entries, read_runs};

/// The active leaf of the session file at `path` now (for pinning at start).
pub fn current_leaf(
    path: &Path,
    pinned: &Pinned,
) -> Result<(FileIdentity, Option<String>), Refusal> {
    let (identity, entries) = read_entries(Agent::Pi, path, pinned)?;
    Ok((
        identity,
        runread_sessions::cut_runs(Agent::Pi, &entries, &[], false).leaf_id,
    ))
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
    if let Some(leaf) = &pinned.leaf
        && !chains_to(start, leaf, &by_id)
    {
        return Err(Refusal::BrokenChain);
    }
    let final_entry = by_id
        .get(final_entry_id.as_str())
        .ok_or(Refusal::NotOnBranch)?;
    if final_entry.text_bytes != candidate.text.len() as u64
        || run.final_text_sha256.as_deref() != Some(candidate.text_sha256.as_str())
    {
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
