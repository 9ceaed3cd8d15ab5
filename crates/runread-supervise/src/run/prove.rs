//! A settled run proved: verified against the session file by its agent's rule (retrying a file
//! still being written), found the same in the store, and written to the journal.

use std::path::PathBuf;
use std::time::Duration;

use runread_core::Target;
use runread_core::timefmt::now_ms;
use runread_journal::{Entry, FORMAT, FileStamp, Namespace};
use runread_store::Index;

use crate::locate::Located;
use crate::machine::Machine;
use crate::proof::{Pinned, Refusal, Verified};
use crate::run::pin::SessionPin;

/// Verification attempts at settle (the final line may still be on its way to the disk); a run
/// still not verifiable is verified once more after the agent exited.
const SETTLE_ATTEMPTS: u32 = 3;
const SETTLE_RETRY_DELAY: Duration = Duration::from_millis(100);

/// Runs `read` up to [`SETTLE_ATTEMPTS`] times, [`SETTLE_RETRY_DELAY`] apart, while it refuses
/// for a reason `retry` accepts (the file may still be on its way to the disk).
pub(crate) async fn settling<T>(
    mut read: impl FnMut() -> Result<T, Refusal>,
    retry: impl Fn(Refusal) -> bool,
) -> Result<T, Refusal> {
    let mut attempt = 1;
    loop {
        match read() {
            Err(r) if retry(r) && attempt < SETTLE_ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(SETTLE_RETRY_DELAY).await;
            }
            other => return other,
        }
    }
}

/// A run verified against the session file at `path`, as pinned.
pub(crate) struct Checked {
    pub(crate) verified: Verified,
    pub(crate) path: PathBuf,
    pub(crate) pinned: Pinned,
    /// The answer was cut off (the agent's own stop reason).
    pub(crate) truncated: bool,
}

/// Verifies run `n` with the agent's rule, retrying a file still being written.
pub(crate) async fn verify(
    machine: &dyn Machine,
    pin: &mut SessionPin,
    n: usize,
) -> Result<Checked, Refusal> {
    let (path, pinned) = pin.for_proof(machine)?;
    let (verified, truncated) =
        settling(|| machine.verify(n, &path, &pinned), Refusal::transient).await?;
    Ok(Checked {
        verified,
        path,
        pinned,
        truncated,
    })
}

/// The digests of a verified run's final message and of its text.
pub(crate) struct FinalDigests {
    message_sha256: String,
    text_sha256: String,
}

/// What the store ingested as `run_id` is what was verified: the same run, the same final
/// message, the same text. Returns the final message's and its text's digests.
pub(crate) fn stored_as_verified(
    store: &dyn Index,
    target: &Target,
    run_id: &str,
    verified: &Verified,
) -> Result<FinalDigests, Refusal> {
    let stored = store
        .run(&target.session_id, target.generation, run_id)
        .ok()
        .flatten()
        .ok_or(Refusal::NotOnBranch)?;
    let message_sha256 = verified
        .run
        .final_message_sha256
        .clone()
        .ok_or(Refusal::NotOnBranch)?;
    let text_sha256 = verified
        .run
        .final_text_sha256
        .clone()
        .ok_or(Refusal::NotOnBranch)?;
    if run_id != verified.run.run_id
        || stored.run.final_entry_id.as_deref() != Some(verified.final_entry_id.as_str())
        || stored.run.final_message_sha256.as_deref() != Some(message_sha256.as_str())
        || stored.run.final_text_sha256.as_deref() != Some(text_sha256.as_str())
    {
        return Err(Refusal::Mismatch);
    }
    Ok(FinalDigests {
        message_sha256,
        text_sha256,
    })
}

/// Who proved a run: this supervisor, of this agent.
pub(crate) struct Prover<'a> {
    pub(crate) supervisor_id: &'a str,
    pub(crate) agent: &'a Located,
}

impl Prover<'_> {
    /// The journal entry proving run `run_id` of `target`, as `checked` in the session file.
    pub(crate) fn entry(
        &self,
        target: &Target,
        run_id: String,
        checked: &Checked,
        digests: FinalDigests,
    ) -> Entry {
        let verified = &checked.verified;
        Entry {
            format: FORMAT.into(),
            namespace: Namespace {
                instance: target.instance.clone(),
                workspace_id: target.workspace_id.clone(),
                session_id: target.session_id.clone(),
                generation: target.generation,
                run_id: run_id.clone(),
            },
            supervisor_id: self.supervisor_id.to_owned(),
            agent: self.agent.kind,
            agent_version: self.agent.version.clone(),
            session_file: checked.path.to_string_lossy().into_owned(),
            session_stamp: FileStamp {
                dev: verified.identity.dev,
                ino: verified.identity.ino,
                size: verified.identity.size,
                mtime_ns: verified.identity.mtime_ns,
            },
            pinned_leaf: checked.pinned.leaf.clone(),
            start_entry_id: run_id,
            user_message_sha256: verified.user_message_sha256.clone(),
            final_entry_id: verified.final_entry_id.clone(),
            message_sha256: digests.message_sha256,
            text_sha256: digests.text_sha256,
            text_bytes: verified.text_bytes,
            truncated: checked.truncated,
            chain_len: verified.run.chain_len,
            verified_at_ms: now_ms(),
        }
    }
}
