//! Records the store keeps.

use serde::{Deserialize, Serialize};

use runread_core::{Agent, Feature, Target};
use runread_sessions::{EntrySummary, FileIdentity, Header, Run};

/// A registered workspace root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    pub id: String,
    pub name: String,
    pub path: String,
    pub revision: u64,
    pub enabled: bool,
}

impl Workspace {
    /// Whether `cwd` (a session's working directory) lies inside this workspace, comparing names
    /// as this system's volumes do (case folded on macOS: an agent started in `~/projects/app`
    /// works in the workspace registered as `~/Projects/App`).
    pub fn contains(&self, cwd: &str) -> bool {
        runread_platform::names::within(&self.path, cwd)
    }
}

/// One ingested session file and where ingest stopped reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub session_id: String,
    pub agent: Agent,
    pub path: String,
    pub workspace_id: String,
    pub generation: u64,
    pub header: Header,
    pub identity: FileIdentity,
    /// Bytes consumed: the file offset just past the last complete line read.
    pub consumed: u64,
    /// Lines consumed, the header included.
    pub lines: u64,
    /// SHA-256 of the last complete line consumed (with its newline), to detect rewrites.
    pub tail_sha256: Option<String>,
    /// Line numbers of lines that could not be parsed.
    pub malformed_lines: Vec<u64>,
    /// The file ended in an unfinished line at the last read.
    pub torn: bool,
    pub branch_complete: bool,
    pub session_name: Option<String>,
    pub saved_model: Option<String>,
    pub ingested_at_ms: i64,
    /// Reading stopped at the line bound (`EVIDENCE_FILE_MAX_LINES`): lines after it are unread.
    pub over_bounds: bool,
    /// The index format the session was read in; one older than [`INDEX_VERSION`] is read again
    /// as a new generation.
    pub index_version: u32,
}

/// What decides that a session file is unchanged since its record was taken: the record's path,
/// agent, file identity and index format. A part of [`SessionRecord`] ([`SessionRecord::stamp`]),
/// loaded for a whole directory when a pass starts without the columns only reading needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStamp {
    pub path: String,
    pub agent: Agent,
    pub identity: FileIdentity,
    pub index_version: u32,
}

impl SessionRecord {
    /// This record's [`SessionStamp`].
    pub fn stamp(&self) -> SessionStamp {
        SessionStamp {
            path: self.path.clone(),
            agent: self.agent,
            identity: self.identity,
            index_version: self.index_version,
        }
    }
}

/// The format of the index ingest writes (entries and runs). 2: where each line is and its
/// digest, no texts. 3: a final answer may span several lines (Claude Code), events may group
/// lines, runs carry their prompt line.
pub const INDEX_VERSION: u32 = 3;

/// One ingest pass over one file.
#[derive(Debug, Clone)]
pub struct IngestCommit {
    pub session: SessionRecord,
    /// Whether `session.generation` is new: replaces all entries and runs of the session.
    pub new_generation: bool,
    pub new_entries: Vec<EntrySummary>,
    pub runs: Vec<Run>,
}

/// A run with the target that names it and the session file it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RunRecord {
    pub target: Target,
    pub run: Run,
    /// The agent that wrote the session file.
    pub agent: Agent,
    pub session_path: String,
    pub identity: FileIdentity,
    pub ingested_at_ms: i64,
    pub workspace_name: String,
    pub workspace_path: String,
    /// Whether the owner's workspace is enabled, read with the run (admission refuses a run of
    /// a disabled one).
    pub workspace_enabled: bool,
}

/// Which runs a page of the owner's listing shows ([`crate::Index::runs_page`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only runs of this agent.
    pub agent: Option<Agent>,
    /// Only runs of sessions in this workspace (its id).
    pub workspace_id: Option<String>,
    /// Only runs with this status (`completed`, `failed`, `cancelled`, `running`, `unknown`).
    pub status: Option<String>,
}

/// Most runs one page of the owner's listing holds.
pub const RUNS_PAGE_MAX: u32 = 1_000;

/// Most heads one statement of [`crate::Index::run_ids_with_heads`] asks for (a listing's page;
/// more are asked a statement at a time).
pub const RUN_ID_HEADS_PER_STATEMENT: usize = RUNS_PAGE_MAX as usize;

/// When a run started, in ms since the epoch, for paging newest first: the agent's own
/// timestamp of the run's first line, if it is RFC 3339.
pub fn run_started_ms(run: &Run) -> Option<i64> {
    run.started_at
        .as_deref()
        .and_then(runread_core::timefmt::parse_rfc3339)
}

/// [`run_started_ms`] of a stored run record (`run_json`), for rows written before the column
/// existed; `None` for a record that does not parse.
pub(crate) fn stored_run_started_ms(run_json: &str) -> Option<i64> {
    serde_json::from_str::<Run>(run_json)
        .ok()
        .and_then(|run| run_started_ms(&run))
}

/// A reader: the client identity the owner chose (`claude-code`, `ci`, a connector), with one
/// key, holding grants. The client is configured once; the owner shares runs with it one by one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Reader {
    pub id: String,
    /// The owner's name for it; one live reader per name.
    pub name: String,
    /// The hash of its key (`runread_core::key::hash`): the key itself is shown once, never stored.
    pub key_hash: String,
    pub created_at_ms: i64,
    /// When the owner removed it: its key is refused and its grants were revoked.
    pub removed_at_ms: Option<i64>,
}

/// What an owner granted: one exact target, named features, until an expiry, to one reader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Grant {
    pub id: String,
    /// The reader that holds it ([`Reader::id`]).
    pub reader_id: String,
    /// That reader's name, read with the grant (never written with it).
    pub reader_name: String,
    pub target: Target,
    pub features: Vec<Feature>,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
    /// What the owner (or `runread run --share … --label`) called the shared run, for a reader
    /// to tell it apart and wait for it by; checked by [`runread_core::label::is_valid`].
    pub label: Option<String>,
}

impl Grant {
    pub fn is_live(&self, now_ms: i64) -> bool {
        self.state(now_ms) == GrantState::Live
    }

    /// Revoked (whenever it would have expired), else expired, else live.
    pub fn state(&self, now_ms: i64) -> GrantState {
        if self.revoked_at_ms.is_some() {
            GrantState::Revoked
        } else if self.expires_at_ms <= now_ms {
            GrantState::Expired
        } else {
            GrantState::Live
        }
    }
}

/// Where a grant stands for the owner's listings (`runread grant list`, the console).
/// [`Grant::state`] tells time only (live, expired, revoked); whether a live grant's target is
/// still current — else `Stale` — needs the store's index, and only the service says it
/// (`runread_service::admission::grant_standing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantState {
    Live,
    Stale,
    Expired,
    Revoked,
}

impl GrantState {
    pub const ALL: [GrantState; 4] = [
        GrantState::Live,
        GrantState::Stale,
        GrantState::Expired,
        GrantState::Revoked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GrantState::Live => "live",
            GrantState::Stale => "stale",
            GrantState::Expired => "expired",
            GrantState::Revoked => "revoked",
        }
    }
}

/// The durable record of a call, written before any adapter work. Append-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartRecord {
    pub meta: StartMeta,
    /// The call's normalized input, sealed (AES-256-GCM); only the key id is stored.
    pub sealed_nonce: Vec<u8>,
    pub sealed_ciphertext: Vec<u8>,
}

/// Everything a start record says except the sealed input: what audit and recovery read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartMeta {
    pub start_id: String,
    /// Same key, same request id, same input: a replay within the window finds this record.
    pub idempotency_key: String,
    pub grant_id: String,
    pub key_hash_prefix: String,
    /// The reader whose key made the call (migration 10 named it for the calls recorded before
    /// readers existed); `None` only for such a call whose reader could not be told.
    pub reader_id: Option<String>,
    pub tool: String,
    pub binding_digest: String,
    /// The target the call named; `None` for tools without one (`list_granted_targets`).
    pub target: Option<Target>,
    pub input_digest: String,
    pub sealed_key_id: String,
    pub created_at_ms: i64,
}

/// What became of a started call. Append-only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    pub receipt_id: String,
    pub start_id: String,
    /// `ok`, `refused:<code>`, `timeout` or `invalid_output`.
    pub outcome: String,
    /// Domain-separated SHA-256 of the normalized output, when there is one.
    pub result_digest: Option<String>,
    pub output_bytes: Option<u64>,
    pub created_at_ms: i64,
    /// The evidence the result was read from, in its tool's words (`supervised`, `session_file`,
    /// `snapshot`; a status's origin, `passive` or `supervised`). `None`: a result that reads no
    /// run's evidence, no result (a refusal, a timeout), or a receipt written before runread
    /// recorded it.
    pub evidence: Option<String>,
    /// The result's settled state, in its tool's words (`settled`, `not_settled`, `not_found`, a
    /// final answer's state). `None` as for [`Receipt::evidence`].
    pub state: Option<String>,
}

/// What an audit checkpoint records (`runread audit verify` reads the chain of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointKind {
    /// The start records of a time range, with their receipts, counted and digested.
    Seal,
    /// Everything sealed up to a time, removed.
    Prune,
}

impl CheckpointKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointKind::Seal => "seal",
            CheckpointKind::Prune => "prune",
        }
    }

    pub fn parse(s: &str) -> Option<CheckpointKind> {
        match s {
            "seal" => Some(CheckpointKind::Seal),
            "prune" => Some(CheckpointKind::Prune),
            _ => None,
        }
    }
}

/// One checkpoint of the gate's log: a seal of the start records created in (`after_ms`,
/// `upto_ms`] and their receipts, or a prune of everything sealed up to `upto_ms`. Append-only,
/// numbered from 1 without gaps, each chained to the one before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditCheckpoint {
    pub seq: u64,
    pub kind: CheckpointKind,
    pub after_ms: i64,
    pub upto_ms: i64,
    /// Start records (a prune: those it removed).
    pub records: u64,
    /// Their receipts.
    pub receipts: u64,
    /// A seal: the digest of its records and receipts in order. A prune: the chain value of the
    /// last seal it removed.
    pub digest: String,
    /// The digest of the previous checkpoint's chain value and this one's fields.
    pub chain: String,
    pub created_at_ms: i64,
}

/// The result of writing a start record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartOutcome {
    Created,
    /// A replay within the window: the record already written.
    Existing(Box<StartRecord>),
}

/// Most start records one page of the audit holds ([`crate::GateLog::audit_page`]).
pub const AUDIT_PAGE_MAX: u32 = 1_000;

/// What became of a call, as the audit filters by it: a receipt with outcome `ok`, one with
/// `refused:<code>`, `timeout` or `invalid_output`, or no receipt at all (`interrupted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditOutcome {
    Ok,
    Refused,
    Timeout,
    InvalidOutput,
    Interrupted,
}

impl AuditOutcome {
    /// Every outcome, by its name.
    pub const ALL: [AuditOutcome; 5] = [
        AuditOutcome::Ok,
        AuditOutcome::Refused,
        AuditOutcome::Timeout,
        AuditOutcome::InvalidOutput,
        AuditOutcome::Interrupted,
    ];
    /// The names of [`AuditOutcome::ALL`], in that order.
    pub const NAMES: [&'static str; 5] =
        ["ok", "refused", "timeout", "invalid_output", "interrupted"];

    pub fn as_str(self) -> &'static str {
        match self {
            AuditOutcome::Ok => "ok",
            AuditOutcome::Refused => "refused",
            AuditOutcome::Timeout => "timeout",
            AuditOutcome::InvalidOutput => "invalid_output",
            AuditOutcome::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<AuditOutcome> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// Where a page of the audit continues: the last start record the previous page showed. Start
/// records are ordered newest first by (time, start id), so records that share a millisecond
/// still have one order and a page continues exactly after this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditCursor {
    pub created_at_ms: i64,
    pub start_id: String,
}

impl AuditCursor {
    /// The cursor that continues after `meta`.
    pub fn after(meta: &StartMeta) -> AuditCursor {
        AuditCursor {
            created_at_ms: meta.created_at_ms,
            start_id: meta.start_id.clone(),
        }
    }
}

/// Which start records a page of the audit shows ([`crate::GateLog::audit_page`]); every filter
/// set must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only calls made at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Only calls under this grant (its id).
    pub grant_id: Option<String>,
    /// Only calls of this reader (its id).
    pub reader_id: Option<String>,
    /// Only calls that named a run with this id.
    pub run_id: Option<String>,
    /// Only calls of this tool (its name).
    pub tool: Option<String>,
    /// Only calls with a receipt of this outcome (or, for `interrupted`, with none).
    pub outcome: Option<AuditOutcome>,
    /// Only calls after this one, newest first (the previous page's last row).
    pub before: Option<AuditCursor>,
}

impl AuditFilter {
    /// The refusal log's filter for the calls refused before the gate that this filter lets
    /// through; `None` when it lets none through: they have no grant, no receipt (only the
    /// outcome `refused` holds them) and no start id to page after.
    pub fn refused_before_gate(&self) -> Option<RefusalFilter> {
        let refused = matches!(self.outcome, None | Some(AuditOutcome::Refused));
        (refused && self.grant_id.is_none() && self.before.is_none()).then(|| RefusalFilter {
            since_ms: self.since_ms,
            reader_id: self.reader_id.clone(),
            run_id: self.run_id.clone(),
            tool: self.tool.clone(),
        })
    }

    /// Whether the counts of calls with no valid credential are among what this filter lets
    /// through: those of the calls refused before the gate, but they name no reader or run.
    pub fn holds_unadmitted(&self) -> bool {
        self.refused_before_gate().is_some() && self.reader_id.is_none() && self.run_id.is_none()
    }
}

/// One page of the audit, newest first, each start record with its receipts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    pub rows: Vec<(StartMeta, Vec<Receipt>)>,
    /// How many more start records the filter lets through after this page's last row.
    pub more: u64,
}

impl AuditPage {
    /// Where the next page starts, when there is one.
    pub fn next(&self) -> Option<AuditCursor> {
        let (last, _) = self.rows.last().filter(|_| self.more > 0)?;
        Some(AuditCursor::after(last))
    }
}

/// Most calls refused before the gate the refusal log keeps ([`crate::Refusals::record_refusal`]):
/// each new one removes those more than this many older. Refused calls are few (a reader's calls
/// are bounded per minute), so this keeps weeks of them.
pub const REFUSALS_KEPT_MAX: u64 = 10_000;

/// Most refused calls one page of the refusal log holds ([`crate::Refusals::refusals_page`]).
pub const REFUSALS_PAGE_MAX: u32 = 1_000;

/// Minutes of counts of calls with no valid credential kept
/// ([`crate::Refusals::count_unadmitted`]): a week. Each count removes the minutes more than this
/// before the newest one, so the counts hold at most this many minutes per code, whatever
/// arrives.
pub const UNADMITTED_MINUTES_KEPT: i64 = 7 * 24 * 60;

/// One minute, the width of a bucket of counted calls.
pub const UNADMITTED_MINUTE_MS: i64 = 60_000;

/// A call refused before the gate, by a caller whose credential named a reader: admission knew
/// who asked, so the owner sees who, what and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub reader_id: String,
    pub tool: String,
    /// The target the arguments named, when they named a well-formed one.
    pub target: Option<Target>,
    /// The fixed error code the caller was answered.
    pub code: String,
    pub created_at_ms: i64,
}

/// Which refused calls a page of the refusal log shows; every filter set must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefusalFilter {
    /// Only calls made at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Only calls of this reader (its id).
    pub reader_id: Option<String>,
    /// Only calls that named a run with this id.
    pub run_id: Option<String>,
    /// Only calls of this tool.
    pub tool: Option<String>,
}

/// One page of the refusal log, newest first, and how many more the filter lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusalPage {
    pub rows: Vec<Refusal>,
    pub more: u64,
}

/// The calls with no valid credential refused with one code over the minutes counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnadmittedTally {
    pub code: String,
    pub calls: u64,
    /// The first and the last minute (its start, ms) that counted any.
    pub first_minute_ms: i64,
    pub last_minute_ms: i64,
}

/// A known secret at rest: sealed (AES-256-GCM) under a gate key; only the key id is stored.
/// Read keys are stored the same way under a `read-key:` name (of the grant that minted it, or of
/// the reader and the key), so that every read key — a rotated one too — is also masked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedSecret {
    pub name: String,
    pub key_id: String,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
    pub created_at_ms: i64,
}

/// An artifact a trusted producer registered for a run: metadata and the exact version
/// (path, size, sha256, file identity) as JSON owned by `runread-artifacts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRecord {
    pub artifact_id: String,
    pub target: Target,
    pub name: String,
    pub mime: String,
    /// `generated` or `attached`.
    pub kind: String,
    pub version_json: String,
    pub created_at_ms: i64,
}

/// What `runread run` recorded of one supervised run: how its foreground ended, what it is doing
/// now, the proof of its final answer, and the processes it left behind. Written by the
/// supervisor only; the service reads it and decides (the publication rule is not here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SupervisedRun {
    pub session_id: String,
    pub generation: u64,
    pub run_id: String,
    /// The `runread run` process that supervises (one UUID per invocation).
    pub supervisor_id: String,
    /// Host name of the supervising machine.
    pub host: String,
    pub agent_version: String,
    pub foreground: Foreground,
    /// How the agent process ended: `exit:N` or `signal:N`; `None` while it runs.
    pub exit: Option<String>,
    /// The run's phase from the event stream.
    pub phase: Phase,
    pub proof: Proof,
    pub background: Background,
    /// When the supervisor last wrote this record. Older than the freshness window while
    /// `supervising` is true: the supervisor is gone and nothing it said is current.
    pub updated_at_ms: i64,
    /// The supervisor still watches (the agent or a process it left is alive).
    pub supervising: bool,
}

/// How the agent's foreground process ended, as the supervisor saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Foreground {
    /// Still running.
    Running,
    /// Exited normally (status 0) after its runs ended.
    Completed,
    /// Exited with a failure status.
    Failed,
    /// Interrupted by the user (SIGINT/SIGTERM forwarded by runread, or exit status 130).
    Cancelled,
    /// Killed by a signal runread did not send, or its stream broke off: nothing it said is proven.
    Killed,
}

impl Foreground {
    pub fn as_str(self) -> &'static str {
        match self {
            Foreground::Running => "running",
            Foreground::Completed => "completed",
            Foreground::Failed => "failed",
            Foreground::Cancelled => "cancelled",
            Foreground::Killed => "killed",
        }
    }
}

/// What the run is doing, from the agent's event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The model is producing (or about to).
    Running,
    /// A tool call is executing.
    WaitingOnTool,
    /// A provider error is being retried.
    Retrying,
    /// The context is being compacted.
    Compacting,
    /// The agent ended the run (`agent_end` with nothing pending).
    Ended,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Running => "running",
            Phase::WaitingOnTool => "waiting_on_tool",
            Phase::Retrying => "retrying",
            Phase::Compacting => "compacting",
            Phase::Ended => "ended",
        }
    }
}

/// The proof of a supervised run's final answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state", deny_unknown_fields)]
pub enum Proof {
    /// Not verified yet.
    Pending,
    /// Verified against the session file and written to the journal (this is the store's
    /// acknowledgement of it).
    #[serde(rename_all = "camelCase")]
    Journaled {
        journal_name: String,
        /// SHA-256 of the journal entry's bytes.
        journal_sha256: String,
        final_entry_id: String,
        message_sha256: String,
        text_sha256: String,
        text_bytes: u64,
        truncated: bool,
    },
    /// The run ended without a final answer (provider error, aborted, tool call left open).
    #[serde(rename_all = "camelCase")]
    NoAnswer { reason: String },
    /// Verification failed: the file was a link, replaced, changed, or the chain broken.
    #[serde(rename_all = "camelCase")]
    Refused { reason: String },
}

/// The processes the agent left behind, counted by the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Background {
    /// Whether the census could see every descendant (the supervisor is their subreaper and the
    /// process table was read whole).
    pub census_complete: bool,
    /// Why not, when it could not (absent when it could, and in records written before the
    /// reason was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub census_gap: Option<CensusGap>,
    /// Live descendants of the agent other than the agent itself.
    pub active: u32,
    pub observed_at_ms: i64,
}

/// Why a census of the agent's leftovers could not see every one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CensusGap {
    /// The system has no child subreaper (macOS), or refused to make runread one: a process
    /// that detaches from the agent is re-parented away from runread and cannot be followed.
    NoSubreaper,
    /// The process table could not be read whole (a bound, a process that could not be read,
    /// `ps` missing or failing).
    TableIncomplete,
}

/// An OAuth client registered dynamically (RFC 7591) at a connector's public URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// Made by runread (`dcr-` and random).
    pub client_id: String,
    /// What the client calls itself (shown to the owner, never trusted).
    pub name: String,
    /// The exact redirect URIs it registered.
    pub redirect_uris: Vec<String>,
    pub created_at_ms: i64,
    /// When the owner first approved one of its requests; clients never approved are purged.
    pub approved_at_ms: Option<i64>,
    /// Who registered it, as far as a registration tells: what its share of the bound on clients
    /// never approved is counted by (the service decides what it is).
    pub registrant: String,
}

/// The bounds a new [`OAuthClient`] must fit under: every client, those not yet approved, and
/// those not yet approved of its registrant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OAuthClientBounds {
    pub total_max: u64,
    pub unapproved_max: u64,
    pub unapproved_per_registrant_max: u64,
}

/// The bounds a new [`OAuthRequest`] must fit under: requests waiting for the owner of clients
/// that hold no token (a client the owner approved before is not counted), and requests waiting
/// of its own client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OAuthRequestBounds {
    pub pending_max: u64,
    pub pending_per_client_max: u64,
}

/// An authorization request a client made at the public authorization page, waiting for (or
/// given) the owner's decision on the console, and the code it was answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthRequest {
    /// Random; names the request in the public page's address.
    pub id: String,
    /// The short code shown on both the public page and the console, to match them.
    pub user_code: String,
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    /// SHA-256 (hex) of the `state` the client sent, if it sent one: the value itself is carried
    /// back by the browser and checked against this, never stored.
    pub state_sha256: Option<String>,
    /// PKCE S256 challenge.
    pub code_challenge: String,
    /// The resource (RFC 8707) every token of this request is bound to.
    pub resource: String,
    /// The features asked for, space-separated.
    pub scope: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    pub decided_at_ms: Option<i64>,
    /// The reader it was approved for (decided without one: denied).
    pub reader_id: Option<String>,
    /// The features the owner allowed, space-separated.
    pub granted_scope: Option<String>,
    pub code_hash: Option<String>,
    pub code_expires_at_ms: Option<i64>,
    pub code_used_at_ms: Option<i64>,
}

/// What redeeming a code found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRedemption {
    /// Unused until now (and now used): its request.
    Redeemed(Box<OAuthRequest>),
    /// Used before: its request, whose tokens the caller revokes.
    Reused(Box<OAuthRequest>),
    /// No such code.
    Unknown,
}

/// Which kind of token a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }
}

/// A reader's call waiting for a run (`wait_for_run`), while it waits: what the owner is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct WaitRecord {
    pub id: String,
    pub reader_id: String,
    pub session_id: String,
    pub generation: u64,
    pub run_id: String,
    pub started_at_ms: i64,
    /// When the wait ends at the latest (its timeout): a row left by a process that died is shown
    /// until then.
    pub until_ms: i64,
}

/// An issued token, by its hash only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthToken {
    pub token_hash: String,
    pub kind: TokenKind,
    pub reader_id: String,
    pub client_id: String,
    /// The authorization request it descends from.
    pub family: String,
    pub resource: String,
    pub scope: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    /// A refresh token's rotation (used once).
    pub used_at_ms: Option<i64>,
    pub revoked_at_ms: Option<i64>,
}

/// What the owner is shown of a snapshot (`runread snapshots`, the console): which run, what it
/// holds, how large. Never its sealed bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SnapshotSummary {
    pub session_id: String,
    pub generation: u64,
    pub run_id: String,
    pub workspace_id: String,
    /// The features whose lines it holds (the union of the run's live grants' when it was sealed).
    pub features: Vec<Feature>,
    /// Digest over the index entries (line offsets, lengths and digests) it holds: a run whose
    /// index moved since (it went on) is sealed again.
    pub index_sha256: String,
    pub lines: u64,
    /// Bytes of the lines it holds (plaintext size; what the store's bound counts).
    pub bytes: u64,
    pub created_at_ms: i64,
}

/// A sealed copy of the evidence of one shared run: its lines, sealed (AES-256-GCM) under a data
/// key of its own, that key sealed under the gate key `key_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRecord {
    pub summary: SnapshotSummary,
    pub key_id: String,
    /// The data key, sealed under the gate key: nonce, then ciphertext and tag.
    pub data_key: Vec<u8>,
    pub nonce: Vec<u8>,
    pub sealed: Vec<u8>,
}

/// Why a run is kept: the owner kept it by name (`runread keep RUN`), or a keep rule of its
/// workspace kept it as it settled (`runread keep --workspace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeepReason {
    Run,
    Workspace,
}

impl KeepReason {
    pub fn as_str(self) -> &'static str {
        match self {
            KeepReason::Run => "run",
            KeepReason::Workspace => "workspace",
        }
    }

    pub fn parse(s: &str) -> Option<KeepReason> {
        match s {
            "run" => Some(KeepReason::Run),
            "workspace" => Some(KeepReason::Workspace),
            _ => None,
        }
    }
}

/// What the owner is shown of a kept run: its sealed copy's summary (every feature's lines), why
/// it is kept and since when. Never its sealed bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct KeptSummary {
    pub summary: SnapshotSummary,
    pub reason: KeepReason,
    /// When it was first kept (`summary.created_at_ms` is when it was last sealed).
    pub kept_since_ms: i64,
}

/// A keep rule: every run of the workspace (of the agent, when one is named) is kept as it
/// settles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct KeepRule {
    pub workspace_id: String,
    pub agent: Option<Agent>,
    pub created_at_ms: i64,
}

/// One line of the snapshot log: a snapshot sealed (again) or destroyed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotEvent {
    pub id: String,
    pub at_ms: i64,
    /// `sealed` or `destroyed`.
    pub event: String,
    pub session_id: String,
    pub generation: u64,
    pub run_id: String,
    pub lines: u64,
    pub bytes: u64,
}

/// The bounds a new [`AccessRequestRecord`] must fit under: requests waiting for the owner, in
/// all and of its reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessRequestBounds {
    pub pending_max: u64,
    pub pending_per_reader_max: u64,
}

/// A reader's request for runs (`request_access`), waiting for (or given) the owner's decision.
/// What the reader wrote is sealed; runread's own facts are in clear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRequestRecord {
    /// `q-` and random hex: what the reader waits on.
    pub id: String,
    pub reader_id: String,
    /// A keyed digest of the reader and everything it asked: an identical request still waiting
    /// is answered with its own id, not filed twice.
    pub fingerprint: String,
    /// The gate key the hints and reason are sealed under.
    pub key_id: String,
    /// The hints and reason, sealed: base64 of the nonce, then ciphertext and tag.
    pub sealed: String,
    /// How many of the newest matching runs it asks for.
    pub latest: u32,
    pub features: Vec<Feature>,
    /// How long it asks to read them, in seconds.
    pub duration_s: u64,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    pub decided_at_ms: Option<i64>,
    /// `None` until decided; then whether it was approved.
    pub approved: Option<bool>,
    /// An approval's grants, once made (`None` while they are being made).
    pub grant_ids: Option<Vec<String>>,
}

/// What filing an [`AccessRequestRecord`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filed {
    /// Filed under its own id.
    New,
    /// An identical request of the same reader still waits: its id.
    Same(String),
    /// A bound is reached: nothing filed.
    Full,
}
