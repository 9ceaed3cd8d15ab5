//! Codex's proof: the stream names neither the turn nor its prompt, and the rollout file has no
//! parent chain: a run is a turn. The rollout must be the thread's (its `session_meta` id the
//! stream's thread id, its cwd the supervised one), and the run is a turn that started after the
//! point pinned at start, or was open then ([`state::turns_after`]); it must have ended with
//! `task_complete` reporting exactly the candidate's text, which must also be the turn's last
//! assistant message (the reader marks the run completed only then).

use std::path::Path;

use runread_core::Agent;
use runread_sessions::{FileIdentity, Run, RunStatus};

use crate::codex::state::{self, CodexCandidate};
use crate::proof::{CwdNamed, Pinned, Refusal, Verified, pin_growing, read_runs};

/// Pins Codex's rollout file, a resumed thread's or a new thread's when first seen (its newest
/// entry: the point after which this invocation's turn starts). Its `session_meta` names the cwd
/// from the first line on.
pub fn pin(path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
    pin_growing(Agent::Codex, CwdNamed::FromTheStart, path, pinned)
}

/// Verifies Codex's run that ended with `candidate` (the stream's last `agent_message` before
/// `turn.completed`), the one turn of this invocation.
pub fn verify(
    path: &Path,
    pinned: &Pinned,
    candidate: &CodexCandidate,
) -> Result<Verified, Refusal> {
    let (identity, entries, branch) = read_runs(Agent::Codex, path, pinned)?;
    // A leaf the file no longer holds: not the file as pinned.
    let ours = state::turns_after(&entries, pinned.leaf.as_deref())
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
