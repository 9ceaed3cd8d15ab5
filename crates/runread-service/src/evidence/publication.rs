//! The publication rule: when a run's final answer may be read, on which evidence (passive: the
//! session file, unchanged and settled; supervised: a journaled proof verified against the
//! store), and the answers already published under the current known secrets.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use runread_core::ErrorCode;
use runread_core::limits::FINAL_ANSWER_MAX_BYTES;
use runread_core::redact::Redactor;
use runread_sessions::{FileIdentity, Records, RunStatus};
use runread_store::{Foreground, Proof, RunRecord};

use crate::evidence::Reading;
use crate::evidence::snapshot;
use crate::evidence::source::SnapshotEvidence;
use crate::evidence::supervised::{JournalCheck, Supervised};

/// Whether and how the answer can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Available,
    Saving,
    Missing,
    Unknown,
    TooLarge,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Available => "available",
            State::Saving => "saving",
            State::Missing => "missing",
            State::Unknown => "unknown",
            State::TooLarge => "too_large",
        }
    }
}

/// A run's answer as published under one set of known secrets: masked over the whole text,
/// before any chunking, with its sha256 (lowercase hex).
pub(crate) struct Published {
    pub text: String,
    /// Computed on first use: not every caller hashes.
    sha256: std::sync::OnceLock<String>,
}

impl Published {
    pub(crate) fn new(text: String) -> Published {
        Published {
            text,
            sha256: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn sha256(&self) -> &str {
        self.sha256
            .get_or_init(|| runread_core::sha256_hex(self.text.as_bytes()))
    }
}

/// Most published answers kept in memory. A reader pages through an answer in many calls; each
/// would otherwise parse, mask and hash the whole answer again. At most this many times
/// `FINAL_ANSWER_MAX_BYTES` of text.
pub const PUBLISHED_ANSWERS_CACHED: usize = 16;

/// What names one version of a run's answer: the run, its final entry, and the digests of that
/// entry's line and of the lines around it that masking read (which cover every text involved).
#[derive(PartialEq, Eq)]
pub(crate) struct AnswerKey {
    pub session_id: String,
    pub generation: u64,
    pub run_id: String,
    pub final_entry_id: String,
    /// Digest over the answer's line and its masking context's lines.
    pub lines_sha256: String,
}

/// Recently published answers, each under the redactor (the set of known secrets) it was masked
/// with. The cache holds that redactor, so a new set of secrets never matches an old entry. It is
/// consulted only after the line was read back and its digest checked.
#[derive(Default)]
pub(crate) struct PublishedCache {
    entries: std::sync::Mutex<std::collections::VecDeque<CachedAnswer>>,
}

type CachedAnswer = (AnswerKey, Arc<Redactor>, Arc<Published>);

impl PublishedCache {
    pub(crate) fn get(&self, key: &AnswerKey, redactor: &Arc<Redactor>) -> Option<Arc<Published>> {
        let entries = self.entries.lock().ok()?;
        entries
            .iter()
            .find(|(k, r, _)| k == key && Arc::ptr_eq(r, redactor))
            .map(|(_, _, p)| p.clone())
    }

    pub(crate) fn put(&self, key: AnswerKey, redactor: &Arc<Redactor>, published: Arc<Published>) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|(k, _, _)| *k != key);
            if entries.len() >= PUBLISHED_ANSWERS_CACHED {
                entries.pop_front();
            }
            entries.push_back((key, redactor.clone(), published));
        }
    }
}

/// What the publication rule looks at: the run as ingested and its session file as it is now.
pub(crate) struct Evidence {
    pub run: RunRecord,
    /// The session file's identity observed now (`None`: gone, not a regular file, unreadable).
    pub file_now: Option<FileIdentity>,
    pub settle_quiet_ms: i64,
    /// The supervisor's record of the run, when `runread run` supervised it.
    pub supervised: Option<Supervised>,
    /// The run's snapshot, opened, when the file is not there (`file_now` is `None`) and one is
    /// kept for the run as indexed.
    pub snapshot: Option<Arc<SnapshotEvidence>>,
    /// The file is not there, and the run's snapshot was sealed before the index's last change:
    /// the gateway that sees the file seals it again after its commit, so what is judged now is
    /// not what will be served once it has ([`snapshot::Kept::Behind`]).
    pub snapshot_behind: bool,
}

/// Which evidence a judgement rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    SessionFile,
    Supervised,
    /// The session file is not there to read (gone, or not on this host): the run's snapshot,
    /// sealed when it was shared, checked against the index's digests.
    Snapshot,
    /// The session file is not there to read: the copy the owner kept (`runread keep`), checked
    /// against the index's digests.
    Kept,
}

impl Basis {
    /// Where `opened`'s lines come from: the session file, the owner's kept copy or a share's
    /// snapshot.
    pub(crate) fn of(opened: &crate::evidence::source::Opened) -> Basis {
        match opened.sealed_copy() {
            None => Basis::SessionFile,
            Some(copy) if copy.is_kept() => Basis::Kept,
            Some(_) => Basis::Snapshot,
        }
    }

    /// The word every output says it with, and a receipt records.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::SessionFile => "session_file",
            Basis::Supervised => "supervised",
            Basis::Snapshot => "snapshot",
            Basis::Kept => "kept",
        }
    }
}

impl Evidence {
    pub(crate) fn observe(svc: &Reading, run: &RunRecord) -> Result<Evidence, ErrorCode> {
        // The session as its agent names it: a file's path, or a session in an agent's database.
        let file_now =
            runread_sessions::session_identity(run.agent, std::path::Path::new(&run.session_path))
                .ok();
        let (snapshot, snapshot_behind) = match file_now {
            Some(_) => (None, false),
            None => match snapshot::look(svc, run)? {
                snapshot::Kept::Serves(opened) => (Some(opened), false),
                snapshot::Kept::Behind => (None, true),
                snapshot::Kept::Nothing => (None, false),
            },
        };
        Ok(Evidence {
            supervised: Supervised::observe(svc, run).map_err(crate::evidence::unavailable)?,
            run: run.clone(),
            file_now,
            settle_quiet_ms: i64::try_from(svc.config.settle_quiet.as_millis()).unwrap_or(i64::MAX),
            snapshot,
            snapshot_behind,
        })
    }

    /// The file is not there and the run's snapshot stands in for it.
    pub(crate) fn reads_snapshot(&self) -> bool {
        self.file_now.is_none() && self.snapshot.is_some()
    }

    /// Which sealed copy stands in for the file: the owner's kept copy or a share's snapshot.
    pub(crate) fn sealed_basis(&self) -> Basis {
        match &self.snapshot {
            Some(copy) if copy.is_kept() => Basis::Kept,
            _ => Basis::Snapshot,
        }
    }
}

/// The publication rule: supervised evidence when a supervisor recorded the run, else passive;
/// either on the run's snapshot when the file is not there.
pub(crate) fn judge(e: &Evidence, now_ms: i64) -> (State, Basis) {
    let (state, basis) = judge_on_record(e, now_ms);
    if e.reads_snapshot() {
        (state, e.sealed_basis())
    } else {
        (state, basis)
    }
}

/// The answer's state rests on a supervisor's verified proof (whether its lines are read from the
/// session file or from the snapshot).
pub(crate) fn proved_by_supervisor(e: &Evidence, now_ms: i64) -> bool {
    judge_on_record(e, now_ms).1 == Basis::Supervised
}

fn judge_on_record(e: &Evidence, now_ms: i64) -> (State, Basis) {
    match &e.supervised {
        Some(s) => match judge_supervised(e, s, now_ms) {
            Some(state) => (state, Basis::Supervised),
            // The proof's journal entry is gone (retention): the weaker, passive evidence stands
            // on its own and says so.
            None => (judge_passive(e, now_ms), Basis::SessionFile),
        },
        None => (judge_passive(e, now_ms), Basis::SessionFile),
    }
}

/// The publication rule for supervised evidence: readable only when the journal entry is
/// durable and verifies against the digest the store acknowledged, the proof names the run's
/// final message as ingested, and the foreground process completed. `None`: the proof's journal
/// entry no longer exists.
fn judge_supervised(e: &Evidence, s: &Supervised, now_ms: i64) -> Option<State> {
    let rec = &s.record;
    let state = match rec.foreground {
        Foreground::Running if s.current(now_ms) => State::Saving,
        // The supervisor stopped writing while the agent ran: it is gone; nothing it said holds.
        Foreground::Running => State::Unknown,
        Foreground::Cancelled => State::Missing,
        Foreground::Failed | Foreground::Killed => State::Unknown,
        Foreground::Completed => match &rec.proof {
            Proof::Pending | Proof::Refused { .. } => State::Unknown,
            Proof::NoAnswer { .. } => State::Missing,
            Proof::Journaled {
                final_entry_id,
                message_sha256,
                text_sha256,
                text_bytes,
                ..
            } => match s.journal {
                JournalCheck::Missing => return None,
                JournalCheck::NotApplicable | JournalCheck::Invalid => State::Unknown,
                JournalCheck::Verified => {
                    let run = &e.run.run;
                    let same_message = run.final_entry_id.as_deref()
                        == Some(final_entry_id.as_str())
                        && run.final_message_sha256.as_deref() == Some(message_sha256.as_str());
                    if !same_message || !answered(e) {
                        State::Unknown
                    } else if too_large(*text_bytes) {
                        State::TooLarge
                    } else if !run.final_lines.is_empty()
                        && run.final_text_sha256.as_deref() == Some(text_sha256.as_str())
                    {
                        // Readable, once the text read back from the file hashes to this.
                        State::Available
                    } else {
                        State::Unknown
                    }
                }
            },
        },
    };
    Some(state)
}

/// The run ended in the answer its final message holds, as far as a supervisor's proof needs the
/// session file to say: `completed`; or, for an agent that records no end of a response
/// ([`Records::unrecorded_end`]), `unknown` for that reason with that message as its candidate — the supervisor's
/// proof (the agent's stream reporting exactly that text, and its success) says how it ended.
fn answered(e: &Evidence) -> bool {
    let run = &e.run.run;
    match run.status {
        RunStatus::Completed => true,
        RunStatus::Unknown => {
            Records::of(e.run.agent)
                .unrecorded_end
                .is_some_and(|why| run.unknown_reason.as_deref() == Some(why))
                && run.final_entry_id.is_some()
        }
        _ => false,
    }
}

/// The one answer-size rule, wherever the size is known (the ingested text, a supervised proof,
/// the published text after masking): more than [`FINAL_ANSWER_MAX_BYTES`] is `too_large`.
pub(crate) fn too_large(bytes: u64) -> bool {
    bytes > FINAL_ANSWER_MAX_BYTES as u64
}

/// The publication rule for passive evidence: a completed run whose session file has not changed
/// since it was ingested and has been quiet for the settle window.
fn judge_passive(e: &Evidence, now_ms: i64) -> State {
    let run = &e.run;
    match run.run.status {
        RunStatus::Completed => {}
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Running => return State::Missing,
        RunStatus::Unknown => return State::Unknown,
    }
    if too_large(run.run.final_bytes) {
        return State::TooLarge;
    }
    if run.run.final_lines.is_empty() || run.run.final_text_sha256.is_none() {
        return State::Unknown;
    }
    // The file moved on since ingest (or is gone): what the store holds may no longer be on the
    // active branch. Re-ingest decides; until then the answer is not vouched for.
    if e.file_now != Some(run.identity) && !e.reads_snapshot() {
        return State::Unknown;
    }
    let mtime_ms = run.identity.mtime_ns / 1_000_000;
    if now_ms.saturating_sub(mtime_ms) < e.settle_quiet_ms {
        return State::Saving;
    }
    State::Available
}
