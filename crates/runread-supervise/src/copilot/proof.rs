//! Copilot CLI's proof. Its stream carries the session file's own event ids: the run is the
//! file's run whose prompt is the stream's `user.message` (same id), and its answer must be the
//! file's final message of that run — the stream's last main-agent `assistant.message` (same id,
//! same text). The file says how each model call ended (`session.usage_record`'s
//! `finishReason`): a run the file marks completed is proven; one whose answer the file shows cut
//! at the length limit is proven as truncated; one Copilot CLI continued after a cut-off is not
//! (the stream's last message is only the rest of an answer).

use std::path::Path;

use runread_core::Agent;
use runread_sessions::{FileIdentity, RunStatus};

use crate::copilot::state::CopilotCandidate;
use crate::proof::{CwdNamed, Pinned, Refusal, Verified, pin_growing, read_runs};

/// Pins Copilot CLI's `events.jsonl` (it names its cwd in its first line, `session.start`).
/// Only `result` names the session, so the file is pinned as the invocation ends: its newest
/// entry is then the run's own, and the run is found by its prompt's id, never by the pin.
pub fn pin(path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
    pin_growing(Agent::Copilot, CwdNamed::FromTheStart, path, pinned)
}

/// Verifies Copilot CLI's run of prompt `prompt_id` (the stream's `user.message` id) that ended
/// with `candidate`; and whether its answer was cut at the length limit.
pub fn verify(
    path: &Path,
    pinned: &Pinned,
    prompt_id: &str,
    candidate: &CopilotCandidate,
) -> Result<(Verified, bool), Refusal> {
    let (identity, entries, branch) = read_runs(Agent::Copilot, path, pinned)?;
    let run = branch
        .runs
        .iter()
        .find(|r| r.run_id == prompt_id)
        .ok_or(Refusal::NotOnBranch)?;
    if run.status == RunStatus::Running {
        // Not all in the file yet.
        return Err(Refusal::NotOnBranch);
    }
    let truncated = match run.status {
        RunStatus::Completed => false,
        RunStatus::Unknown if run.final_truncated => true,
        _ => return Err(Refusal::Mismatch),
    };
    if run.final_entry_id.as_deref() != Some(candidate.entry_id.as_str())
        || run.final_text_sha256.as_deref() != Some(candidate.text_sha256.as_str())
        || run.final_bytes != candidate.text.len() as u64
    {
        return Err(Refusal::Mismatch);
    }
    let final_entry_id = candidate.entry_id.clone();
    let user_message_sha256 = entries
        .iter()
        .find(|e| e.id == run.run_id)
        .and_then(|e| e.message_sha256.clone())
        .ok_or(Refusal::NotOnBranch)?;
    Ok((
        Verified {
            identity,
            run: run.clone(),
            final_entry_id,
            text_bytes: run.final_bytes,
            user_message_sha256,
        },
        truncated,
    ))
}
