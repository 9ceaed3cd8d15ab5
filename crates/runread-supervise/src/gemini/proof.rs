//! Gemini CLI's proof. The chat file records no end of a response: its run whose last record is a
//! model message is `unknown`, that message its candidate (`runread_sessions::gemini`). The
//! stream says how the run ended: the proof takes the file's candidate as the answer only when it
//! is exactly the text the stream reported before its `result` of status `success` (the process's
//! exit 0 is the foreground's, judged apart). The chat file must be the session's (its
//! `sessionId` the stream's, its project root the supervised cwd), and the run the one prompt of
//! this invocation: the run that started after the point pinned at start.

use std::path::Path;

use runread_core::Agent;
use runread_sessions::file::EvidenceFile;
use runread_sessions::{EntrySummary, FileIdentity, Resume, Run, RunStatus, ScanError};

use crate::gemini::state::GeminiCandidate;
use crate::proof::{CwdNamed, Pinned, Refusal, Verified, pin_growing, read_runs};

/// Pins Gemini CLI's chat file (its newest entry: the point after which this invocation's run
/// starts). A new session's file holds no message of its own yet (not a session to the reader):
/// pinned with no entry.
pub fn pin(path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
    if let Ok(file) = EvidenceFile::open(path, pinned.identity.as_ref())
        && matches!(
            runread_sessions::scan(Agent::Gemini, &file, Resume::Fresh),
            Err(ScanError::NotASession)
        )
    {
        let identity = crate::proof::pin_identity(path)?;
        if !identity.same_object(&file.identity()) {
            return Err(Refusal::Replaced);
        }
        return Ok((identity, None));
    }
    pin_growing(Agent::Gemini, CwdNamed::FromTheStart, path, pinned)
}

/// The line of the entry pinned at start (`None`: nothing pinned, every run may be this
/// invocation's; `Err`: the file no longer holds it — not the file as pinned).
fn leaf_line(entries: &[EntrySummary], leaf: Option<&str>) -> Result<u64, Refusal> {
    match leaf {
        None => Ok(0),
        Some(leaf) => entries
            .iter()
            .filter(|e| e.id == leaf)
            .map(|e| e.line)
            .max()
            .ok_or(Refusal::BrokenChain),
    }
}

/// The runs of the chat file (`branch`) that started after the point pinned at start.
pub fn runs_after<'r>(
    entries: &[EntrySummary],
    runs: &'r [Run],
    leaf: Option<&str>,
) -> Result<Vec<&'r Run>, Refusal> {
    let after = leaf_line(entries, leaf)?;
    Ok(runs.iter().filter(|r| r.start_line > after).collect())
}

/// Verifies Gemini CLI's run that ended with `candidate` (the stream's text after its last tool
/// event, before `result` `success`): the run of this invocation (the first after the pin),
/// whose candidate in the file must be exactly that text.
pub fn verify(
    path: &Path,
    pinned: &Pinned,
    candidate: &GeminiCandidate,
) -> Result<Verified, Refusal> {
    let (identity, entries, branch) = read_runs(Agent::Gemini, path, pinned)?;
    let mine = runs_after(&entries, &branch.runs, pinned.leaf.as_deref())?;
    // `gemini -p` sends one prompt: this invocation's run is the first after the pin (a later
    // one is a later invocation's, in the file by the time it is read). None: not in the file
    // yet, read again.
    let run: &Run = mine.first().copied().ok_or(Refusal::NotOnBranch)?;
    let unrecorded = runread_sessions::Records::of(Agent::Gemini).unrecorded_end;
    let settled = match run.status {
        RunStatus::Completed => true,
        RunStatus::Unknown => run.unknown_reason.as_deref() == unrecorded,
        _ => false,
    };
    if run.status == RunStatus::Running {
        // The answer is not (all) in the file yet.
        return Err(Refusal::NotOnBranch);
    }
    if !settled
        || run.final_text_sha256.as_deref() != Some(candidate.text_sha256.as_str())
        || run.final_bytes != candidate.text.len() as u64
    {
        return Err(Refusal::Mismatch);
    }
    let final_entry_id = run.final_entry_id.clone().ok_or(Refusal::NotOnBranch)?;
    let user_message_sha256 = entries
        .iter()
        .rfind(|e| {
            e.id == run.run_id && e.role.as_deref() == Some(runread_sessions::gemini::role::USER)
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
