//! OpenCode's proof. Its stream carries the database's own ids: each part names its `id` and its
//! message. The run is the session's run whose answer ends in the stream's last text part of the
//! message that ended the run (same id), and that answer must be the stream's (same text, same
//! digest, same length); the database must mark the run completed — cut at the length limit
//! exactly when the stream said `length`. The session is read through the session reader
//! (`<database>#<session id>`, its event log one record per line), with the shared proof code.

use std::path::Path;

use runread_core::Agent;
use runread_sessions::{EntrySummary, FileIdentity, RunStatus};

use crate::opencode::state::OpenCodeCandidate;
use crate::proof::{CwdNamed, Pinned, Refusal, Verified, pin_growing, read_runs};

/// The role of a model message's record in the session reader.
const ASSISTANT: &str = "assistant";

/// Pins OpenCode's session (its log names its directory from its first record,
/// `session.created`), at the stream's first event: its newest record is then the point this
/// invocation's run follows; the run itself is found by its messages' ids, never by the pin.
pub fn pin(path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
    pin_growing(Agent::OpenCode, CwdNamed::FromTheStart, path, pinned)
}

/// The run id (its prompt's message id) of the run whose model messages include one of
/// `messages` (the stream's ids): the prompt a model message's record names as its parent.
pub fn run_of_messages(entries: &[EntrySummary], messages: &[String]) -> Option<String> {
    entries
        .iter()
        .filter(|e| e.role.as_deref() == Some(ASSISTANT))
        .find(|e| messages.contains(&e.id))
        .and_then(|e| e.parent_id.clone())
}

/// The run id of the session's last run when OpenCode marks it failed: the run of an invocation
/// whose stream reported only an `error` (a request refused before any part was streamed names no
/// message). `opencode run` sends one prompt and its stream ended there, so the session's last run
/// is its own.
pub fn last_failed_run(entries: &[EntrySummary]) -> Option<String> {
    let branch = runread_sessions::cut_runs(Agent::OpenCode, entries, &[], false);
    branch
        .runs
        .last()
        .filter(|r| r.status == RunStatus::Failed)
        .map(|r| r.run_id.clone())
}

/// Verifies OpenCode's run that ended with `candidate`; and whether its answer was cut at the
/// model's length limit.
pub fn verify(
    path: &Path,
    pinned: &Pinned,
    candidate: &OpenCodeCandidate,
) -> Result<(Verified, bool), Refusal> {
    let (identity, entries, branch) = read_runs(Agent::OpenCode, path, pinned)?;
    let prompt = run_of_messages(&entries, std::slice::from_ref(&candidate.message_id))
        .ok_or(Refusal::NotOnBranch)?;
    let run = branch
        .runs
        .iter()
        .find(|r| r.run_id == prompt)
        .ok_or(Refusal::NotOnBranch)?;
    if run.status == RunStatus::Running {
        // Not all in the database yet.
        return Err(Refusal::NotOnBranch);
    }
    if run.status != RunStatus::Completed
        || run.final_truncated != candidate.truncated
        || run.final_entry_id.as_deref() != Some(candidate.entry_id.as_str())
        || run.final_text_sha256.as_deref() != Some(candidate.text_sha256.as_str())
        || run.final_bytes != candidate.text.len() as u64
    {
        return Err(Refusal::Mismatch);
    }
    // The prompt's record as last written (OpenCode writes a message again at each change).
    let user_message_sha256 = entries
        .iter()
        .rfind(|e| e.id == run.run_id)
        .and_then(|e| e.message_sha256.clone().or_else(|| e.line_sha256.clone()))
        .ok_or(Refusal::NotOnBranch)?;
    Ok((
        Verified {
            identity,
            run: run.clone(),
            final_entry_id: candidate.entry_id.clone(),
            text_bytes: run.final_bytes,
            user_message_sha256,
        },
        candidate.truncated,
    ))
}
