//! runread's persistent state behind one [`Store`] trait: the store's identity, registered
//! workspaces, ingested sessions with their entries and runs, and grants.
//!
//! The store records and answers; it decides no policy (admission lives in `runread-service`).
//! Implementations: [`sqlite::SqliteStore`] (embedded default, WAL) and, with the `postgres`
//! feature (on by default), [`postgres::PostgresStore`] (one database shared by several processes
//! and hosts). Every implementation must pass the contract tests in `tests/suite/contract.rs`.
#![forbid(unsafe_code)]

pub mod changes;
pub mod checkpoint;
pub mod model;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod sqlite;
#[cfg(test)]
mod testing;
mod vocab;

// Migration N means the same change in both stores, so both have the same number of them.
#[cfg(feature = "postgres")]
const _: () = assert!(sqlite::MIGRATIONS.len() == postgres::MIGRATIONS.len());

/// The schema version of every opened store: opening applies each migration it lacks and refuses
/// a store of a newer one, so an open store has exactly this many applied.
pub const SCHEMA_VERSION: usize = sqlite::MIGRATIONS.len();

pub use model::*;

/// The store's roles, to call their methods on a `dyn Store` or any role:
/// `use runread_store::prelude::*`.
pub mod prelude {
    pub use crate::{
        Access, AccessRequests, Connectors, GateLog, Identity, Index, Keeps, Refusals, Secrets,
        Settings, Snapshots, Store, Waits,
    };
}

/// Most waits [`Waits::live_waits`] lists: more than one runread holds (`WAITS_MAX`), a few
/// gateways' worth.
pub const LIVE_WAITS_LISTED_MAX: i64 = 1_024;

/// This machine's name, which namespaces its workspaces and session files in a shared store and
/// names the host of a supervised run: `RUNREAD_HOST` if set (containers get random host names),
/// else the system's host name (`uname`, on Linux and macOS alike), else `localhost`. The one
/// place runread decides it.
pub fn local_host() -> String {
    if let Ok(h) = std::env::var("RUNREAD_HOST") {
        let h = h.trim();
        if !h.is_empty() {
            return h.to_owned();
        }
    }
    runread_platform::host::host_name().unwrap_or_else(|| "localhost".to_owned())
}

use runread_core::cursor::CursorKey;

/// A store failure. Carries no SQL, path or OS text outward: callers map it to
/// `ErrorCode::Unavailable`; the detail goes to the local log only.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("store data is corrupt: {0}")]
    Corrupt(String),
    #[error("conflict: {0}")]
    Conflict(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Unavailable(e.to_string())
    }
}

/// Only the SQLSTATE and the server's primary message are kept (never the statement, its
/// parameters or the connection string), and only for the local log.
#[cfg(feature = "postgres")]
impl From<::postgres::Error> for StoreError {
    fn from(e: ::postgres::Error) -> Self {
        StoreError::Unavailable(postgres::describe(&e))
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// The least string greater than every string that starts with `prefix` (its last character
/// that has a successor, moved to it, and what follows dropped), or `None` when there is none.
/// UTF-8 orders strings by code point, so `prefix <= s < bound` holds exactly for the strings
/// `s` that start with `prefix`.
pub(crate) fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// A live reader and its live grants, newest first: what a key or a token admits.
pub type ReaderWithGrants = (Reader, Vec<Grant>);

/// Everything runread persists, as the sum of its roles: what wires a process together. Each
/// layer takes the roles it uses (the gate its log, ingest the index, …), not this.
pub trait Store:
    Identity
    + Index
    + Access
    + Secrets
    + Snapshots
    + GateLog
    + Refusals
    + Connectors
    + Waits
    + Settings
    + AccessRequests
    + Keeps
{
}

impl<T> Store for T where
    T: Identity
        + Index
        + Access
        + Secrets
        + Snapshots
        + GateLog
        + Refusals
        + Connectors
        + Waits
        + Settings
        + AccessRequests
        + Keeps
{
}

/// Which store this is, the key it signs cursors with, and the feed of its changes: what every
/// layer that names targets or waits reads.
pub trait Identity: Send + Sync {
    /// The UUID of this store, made on first use.
    fn instance_id(&self) -> &str;

    /// The key that signs cursors, made on first use and shared by every server of this store.
    fn cursor_key(&self) -> &CursorKey;

    /// The feed of changes to runs, published by this store's commits (and, on PostgreSQL, by
    /// other processes' commits once a wait subscribes): what waits wake on.
    fn changes(&self) -> &changes::ChangeFeed;
}

/// The index of the agents' records: workspaces, sessions, their entries and runs (no text of a
/// conversation), what a supervisor recorded of a run, and the artifacts registered for runs.
/// Ingest and supervision write it; admission and the owner's views read it.
pub trait Index: Identity + Send + Sync {
    /// Registers a workspace root (canonical path). Registering a registered root again keeps its
    /// revision (grants made under it keep working) and takes the new name; registering a removed
    /// root again enables it under a new revision.
    fn add_workspace(&self, canonical_path: &str, name: &str, now_ms: i64) -> Result<Workspace>;

    /// Every workspace registered (on this host), removed ones included (`enabled` false).
    fn workspaces(&self) -> Result<Vec<Workspace>>;

    /// Removes the enabled workspace `id`: disabled under a new revision, so that no grant made
    /// under the old one is read again and ingest indexes it no more. Its grants are left to the
    /// caller (to revoke and name). `None` when no enabled workspace has that id.
    fn remove_workspace(&self, id: &str, now_ms: i64) -> Result<Option<Workspace>>;

    fn workspace(&self, id: &str) -> Result<Option<Workspace>>;

    /// The session recorded for this file path, if any.
    fn session_by_path(&self, path: &str) -> Result<Option<SessionRecord>>;

    /// The sessions recorded (on this host) for paths that start with `prefix`, byte for byte,
    /// in no particular order: at most `limit + 1` of them, so that a caller can tell a complete
    /// answer (≤ `limit`) from a cut one. One query instead of one [`Index::session_by_path`]
    /// per file of a directory.
    fn sessions_with_path_prefix(&self, prefix: &str, limit: u32) -> Result<Vec<SessionRecord>>;

    /// The [`SessionStamp`]s of the records [`Index::sessions_with_path_prefix`] answers, same
    /// bound: the columns a pass needs to find a directory's files unchanged, without those
    /// only reading needs (parsing them was most of a re-ingest's instructions).
    fn session_stamps_with_path_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<SessionStamp>>;

    fn session(&self, session_id: &str) -> Result<Option<SessionRecord>>;

    /// Entries of the session's current generation, in file order.
    fn entries(
        &self,
        session_id: &str,
        generation: u64,
    ) -> Result<Vec<runread_sessions::EntrySummary>>;

    /// Applies one ingest pass atomically: the session record, appended entries (all entries
    /// when the generation is new) and the complete new set of runs.
    fn commit_ingest(&self, commit: &IngestCommit) -> Result<()>;

    /// Runs of every current session generation in a registered (not removed) workspace, newest
    /// session first. So are the runs the listings below give.
    fn runs(&self) -> Result<Vec<RunRecord>>;

    /// One page of current runs, newest first (by when each run started; runs without a start
    /// time last), at most `limit` (≤ [`RUNS_PAGE_MAX`]) after skipping `offset`.
    fn runs_page(&self, filter: &RunFilter, limit: u32, offset: u64) -> Result<Vec<RunRecord>>;

    /// How many current runs `filter` lets through.
    fn runs_count(&self, filter: &RunFilter) -> Result<u64>;

    /// Current runs whose run id is `run_id`.
    fn runs_by_id(&self, run_id: &str) -> Result<Vec<RunRecord>>;

    /// Current runs whose run id starts with `run_prefix` and, when `session_prefix` is given,
    /// whose session id starts with it (character for character), ordered by run id then
    /// session: at most `limit + 1` of them, so that a caller can tell a complete answer
    /// (≤ `limit`) from a cut one. What resolves a run id the owner typed.
    fn runs_with_id_prefix(
        &self,
        run_prefix: &str,
        session_prefix: Option<&str>,
        limit: u32,
    ) -> Result<Vec<RunRecord>>;

    /// The distinct ids of current runs whose first `head_chars` characters are one of `heads`,
    /// in no particular order: at most `limit + 1` of them (a cut answer is longer than
    /// `limit`). What a listing tells its runs apart by, in one statement per
    /// [`RUN_ID_HEADS_PER_STATEMENT`] heads instead of one per run.
    fn run_ids_with_heads(
        &self,
        heads: &[&str],
        head_chars: u32,
        limit: u32,
    ) -> Result<Vec<String>>;

    /// The run a target names, if it exists in the current generation of its session.
    fn run(&self, session_id: &str, generation: u64, run_id: &str) -> Result<Option<RunRecord>>;

    /// Registers an artifact of a run (a trusted producer's act).
    fn add_artifact(&self, artifact: &ArtifactRecord) -> Result<()>;

    /// The artifacts registered for exactly `target`, oldest first.
    fn artifacts(&self, target: &runread_core::Target) -> Result<Vec<ArtifactRecord>>;

    /// Records (or replaces) what a supervisor knows of one supervised run.
    fn put_supervised(&self, run: &SupervisedRun) -> Result<()>;

    /// The supervised record of a run, if a supervisor ever recorded one.
    fn supervised(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<SupervisedRun>>;

    /// Hands back the memory the store holds only to be fast (SQLite's page cache of each open
    /// connection), for a caller that goes idle after a burst of reads: the watcher once idle
    /// after a pass. The next read fills it again from the file. A store with nothing to hand back
    /// (PostgreSQL's cache is the server's) does nothing.
    fn release_memory(&self) {}
}

/// Readers and the grants each holds: who may read what. The owner's acts write it; admission
/// reads it.
pub trait Access: Send + Sync {
    fn insert_grant(&self, grant: &Grant) -> Result<()>;

    /// Grants whose stored key hash equals `key_hash` (compared again in constant time by the caller).
    /// A reader's grants of exactly `target`, in any state, newest first.
    fn reader_grants_for_target(
        &self,
        reader_id: &str,
        target: &runread_core::Target,
    ) -> Result<Vec<Grant>>;

    /// The grant `grant_id`, if the live reader holding it has the key hashing to `key_hash`
    /// (the re-check after a call's I/O: not rotated, not removed meanwhile).
    fn grant_of_key(&self, grant_id: &str, key_hash: &str) -> Result<Option<Grant>>;

    /// Adds a reader. Fails (as `unavailable`) when a live reader already has its name or its key.
    fn insert_reader(&self, reader: &Reader) -> Result<()>;

    /// The live (not removed) reader whose key hashes to `key_hash`, and its grants live at
    /// `now_ms` (neither revoked nor expired), newest first: admission's one read.
    fn reader_of_key(&self, key_hash: &str, now_ms: i64) -> Result<Option<ReaderWithGrants>>;

    /// [`Access::reader_of_key`], when it can be answered at once: a local read on a connection
    /// that is free now. `None` when answering would wait (for a connection, or for a server
    /// across the network): the caller then calls [`Access::reader_of_key`] where it may block.
    /// It lets admission's one read stay on an async thread instead of hopping to a blocking
    /// one for every request. The default never answers at once.
    fn reader_of_key_at_once(
        &self,
        _key_hash: &str,
        _now_ms: i64,
    ) -> Option<Result<Option<ReaderWithGrants>>> {
        None
    }

    /// The live reader of an id and its live grants at `now_ms` (as [`Access::reader_of_key`]):
    /// a connector's token names its reader by id.
    fn reader_of_id(&self, reader_id: &str, now_ms: i64) -> Result<Option<(Reader, Vec<Grant>)>>;

    /// The live reader named `name`.
    fn reader_by_name(&self, name: &str) -> Result<Option<Reader>>;

    /// Every reader, removed ones included, oldest first.
    fn readers(&self) -> Result<Vec<Reader>>;

    /// Gives a live reader a new key (its hash): the old one is refused from its next call;
    /// its grants are kept. False when no live reader has that id.
    fn rotate_reader_key(&self, reader_id: &str, key_hash: &str) -> Result<bool>;

    /// Revokes every live grant of the reader, then removes it (its key refused). False when no
    /// live reader has that id.
    fn remove_reader(&self, reader_id: &str, now_ms: i64) -> Result<bool>;

    /// How many grants the reader holds in all, and how many of them were revoked.
    fn reader_grant_tally(&self, reader_id: &str) -> Result<(u64, u64)>;

    /// When each reader last made a call: (reader id, ms), for the readers that made one.
    fn reader_last_reads(&self) -> Result<Vec<(String, i64)>>;

    fn grants(&self) -> Result<Vec<Grant>>;

    /// Marks a grant revoked. `false` when there is no such grant or it was already revoked.
    fn revoke_grant(&self, id: &str, now_ms: i64) -> Result<bool>;
}

/// Known secrets, sealed at rest (the owner's and every read key).
pub trait Secrets: Send + Sync {
    /// Stores (or replaces) a sealed known secret.
    fn put_secret(&self, secret: &SealedSecret) -> Result<()>;

    /// Every sealed known secret (owner secrets and read keys), by name.
    fn sealed_secrets(&self) -> Result<Vec<SealedSecret>>;

    /// Changes whenever the set of sealed secrets changes; cheap to ask on every call.
    fn secrets_fingerprint(&self) -> Result<String>;
}

/// Shared runs' sealed snapshots and the log of them.
pub trait Snapshots: Send + Sync {
    /// Puts the sealed snapshot of a run (replacing the one it had) when the store's snapshots,
    /// with it and without the one it replaces, hold at most `store_max_bytes`; `false` (nothing
    /// written) when they would hold more.
    fn put_snapshot(&self, snapshot: &SnapshotRecord, store_max_bytes: u64) -> Result<bool>;

    /// The snapshot of a run, unless there is none (or its data key was destroyed).
    fn snapshot(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<SnapshotRecord>>;

    /// A run's snapshot without its sealed bytes (what names its version), unless there is none.
    fn snapshot_stamp(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<SnapshotSummary>>;

    /// Every snapshot, oldest first, without its sealed bytes.
    fn snapshots(&self) -> Result<Vec<SnapshotSummary>>;

    /// The snapshots no grant live at `now_ms` holds (to destroy).
    fn snapshots_unshared(&self, now_ms: i64) -> Result<Vec<SnapshotSummary>>;

    /// Appends `event` to the snapshot log (append-only).
    fn log_snapshot(&self, event: &SnapshotEvent) -> Result<()>;

    /// The snapshot log's newest `limit` events, newest first.
    fn snapshot_log(&self, limit: u32) -> Result<Vec<SnapshotEvent>>;

    /// Destroys a run's snapshot: its data key first, then its row. `false`: there was none.
    fn destroy_snapshot(&self, session_id: &str, generation: u64, run_id: &str) -> Result<bool>;
}

/// The gate's log: start records and receipts, the audit's pages of them, and the retention's
/// checkpoints. The gate writes it; the audit reads it.
pub trait GateLog: Send + Sync {
    /// Commits `record` durably, unless a record with the same idempotency key was written at or
    /// after `replay_since_ms`, which is returned instead.
    fn begin_call(&self, record: &StartRecord, replay_since_ms: i64) -> Result<StartOutcome>;

    /// Appends a receipt for a started call.
    fn append_receipt(&self, receipt: &Receipt) -> Result<()>;

    /// A start record with its sealed input (for the gate only).
    fn start_record(&self, start_id: &str) -> Result<Option<StartRecord>>;

    /// A start record without its sealed input (for audit and recovery).
    fn start_meta(&self, start_id: &str) -> Result<Option<StartMeta>>;

    /// Receipts of one start record, oldest first.
    fn receipts(&self, start_id: &str) -> Result<Vec<Receipt>>;

    /// Start records at or after `since_ms` (oldest first, at most `limit`), with their receipts.
    fn audit(&self, since_ms: i64, limit: u32) -> Result<Vec<(StartMeta, Vec<Receipt>)>>;

    /// One page of the audit: the start records `filter` lets through, newest first (by time,
    /// then start id), at most `limit` (≤ [`AUDIT_PAGE_MAX`]), each with its receipts, and how
    /// many more the filter lets through after the page's last row. Filtered, paged and counted
    /// in the store's indexes (`runread audit`, the console's audit page).
    fn audit_page(&self, filter: &AuditFilter, limit: u32) -> Result<AuditPage>;

    /// Every checkpoint of the gate's log (seals and prunes), in order.
    fn audit_checkpoints(&self) -> Result<Vec<AuditCheckpoint>>;

    /// Appends `checkpoint` when it is the next of the chain (its `seq` one past the last
    /// one's); false when another pass appended first.
    fn append_audit_checkpoint(&self, checkpoint: &AuditCheckpoint) -> Result<bool>;

    /// The start records made in (`after_ms`, `upto_ms`], oldest first (then by id), at most
    /// `limit`, each with its receipts, from one snapshot of the store.
    fn audit_range(&self, after_ms: i64, upto_ms: i64, limit: u32) -> Result<AuditRows>;

    /// When the start record `n` places after the first one made after `after_ms` (up to
    /// `upto_ms`) was made; `None` when there are not that many.
    fn audit_nth_time(&self, after_ms: i64, upto_ms: i64, n: u64) -> Result<Option<i64>>;

    /// How many start records were made after `after_ms` (`i64::MIN`: every one).
    fn audit_count_after(&self, after_ms: i64) -> Result<u64>;

    /// In one transaction: appends the prune checkpoint `checkpoint` (as
    /// [`GateLog::append_audit_checkpoint`]) and deletes every start record made up to its
    /// `upto_ms`, and their receipts. `None` when another pass appended first (nothing deleted);
    /// else the start records deleted.
    fn prune_audit(&self, checkpoint: &AuditCheckpoint) -> Result<Option<u64>>;
}

/// Calls refused before the gate, which no start record holds: those of a known reader one by
/// one, those with no valid credential counted per minute. Admission writes it; the audit reads
/// it. Both are bounded, whatever arrives.
pub trait Refusals: Send + Sync {
    /// Appends a refused call, then removes those more than `kept_max` older
    /// ([`REFUSALS_KEPT_MAX`] in production).
    fn record_refusal(&self, refusal: &Refusal, kept_max: u64) -> Result<()>;

    /// One page of refused calls `filter` lets through, newest first, at most `limit`
    /// (≤ [`REFUSALS_PAGE_MAX`]), and how many more it lets through.
    fn refusals_page(&self, filter: &RefusalFilter, limit: u32) -> Result<RefusalPage>;

    /// Counts one call with no valid credential refused with `code` in the minute of `at_ms`,
    /// then removes the minutes more than [`UNADMITTED_MINUTES_KEPT`] before the newest counted.
    fn count_unadmitted(&self, at_ms: i64, code: &str) -> Result<()>;

    /// The calls with no valid credential counted in the minutes from that of `since_ms` on, per
    /// code (by code).
    fn unadmitted_tallies(&self, since_ms: i64) -> Result<Vec<UnadmittedTally>>;
}

/// Connectors' OAuth clients, authorization requests and tokens (as hashes).
pub trait Connectors: Send + Sync {
    /// Registers an OAuth client while both `bounds` hold; false when one does not.
    fn insert_oauth_client(&self, client: &OAuthClient, bounds: OAuthClientBounds) -> Result<bool>;

    fn oauth_client(&self, client_id: &str) -> Result<Option<OAuthClient>>;

    /// Adds an authorization request while its `bounds` hold (see [`OAuthRequestBounds`]); false
    /// when one does not.
    fn insert_oauth_request(
        &self,
        request: &OAuthRequest,
        bounds: OAuthRequestBounds,
    ) -> Result<bool>;

    fn oauth_request(&self, id: &str) -> Result<Option<OAuthRequest>>;

    /// The requests waiting for the owner's decision at `now_ms`, oldest first.
    fn oauth_requests_pending(&self, now_ms: i64) -> Result<Vec<OAuthRequest>>;

    /// Decides a waiting, unexpired request: approved for a reader with a scope, or denied
    /// (`None`). False when it was decided before, expired or never made.
    fn decide_oauth_request(
        &self,
        id: &str,
        approved: Option<(&str, &str)>,
        now_ms: i64,
    ) -> Result<bool>;

    /// Gives an approved, unexpired request its one code (by hash). False when it has one
    /// already or is not approved.
    fn issue_oauth_code(
        &self,
        id: &str,
        code_hash: &str,
        code_expires_at_ms: i64,
        now_ms: i64,
    ) -> Result<bool>;

    /// Marks a code used, saying whether it was fresh or used before.
    fn redeem_oauth_code(&self, code_hash: &str, now_ms: i64) -> Result<CodeRedemption>;

    fn insert_oauth_token(&self, token: &OAuthToken) -> Result<()>;

    fn oauth_token(&self, token_hash: &str) -> Result<Option<OAuthToken>>;

    /// Uses a live refresh token for its one rotation; false when it was used, revoked, expired
    /// or never issued.
    fn use_oauth_refresh(&self, token_hash: &str, now_ms: i64) -> Result<bool>;

    /// Revokes every token of a family; how many were live.
    fn revoke_oauth_family(&self, family: &str, now_ms: i64) -> Result<u64>;

    /// Revokes every live token of the reader (its key was rotated); how many were live.
    fn revoke_oauth_tokens_of_reader(&self, reader_id: &str, now_ms: i64) -> Result<u64>;

    /// Deletes expired tokens and requests, and clients never approved registered before
    /// `unapproved_before_ms`.
    fn purge_oauth(&self, now_ms: i64, unapproved_before_ms: i64) -> Result<()>;
}

/// The waits readers hold, for the owner's view.
pub trait Waits: Send + Sync {
    /// Records a wait that starts (and purges the rows of waits whose time is up).
    fn begin_wait(&self, wait: &WaitRecord) -> Result<()>;

    /// Forgets a wait that ended.
    fn end_wait(&self, id: &str) -> Result<()>;

    /// The waits not yet past their time at `now_ms`, oldest first, at most
    /// [`LIVE_WAITS_LISTED_MAX`].
    fn live_waits(&self, now_ms: i64) -> Result<Vec<WaitRecord>>;
}

/// Kept runs (`runread keep`): a sealed copy of a run's whole evidence the owner chose to keep
/// past the agent's cleanup, and the keep rules that choose runs as they settle. Apart from
/// snapshots: a keep and a share's snapshot have their own lifetimes.
pub trait Keeps: Send + Sync {
    /// Puts the kept copy of a run (replacing the one it had, keeping its reason and since when)
    /// when every kept copy, without the one it replaces, stays within `store_max_bytes` with it,
    /// in one statement; `false`: it would not.
    fn put_kept(
        &self,
        kept: &SnapshotRecord,
        reason: KeepReason,
        store_max_bytes: u64,
    ) -> Result<bool>;

    /// The kept copy of a run, unless there is none (or its data key was destroyed).
    fn kept(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<SnapshotRecord>>;

    /// A run's kept copy without its sealed bytes, unless there is none.
    fn kept_stamp(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<KeptSummary>>;

    /// Every kept copy, oldest kept first, without its sealed bytes.
    fn kept_runs(&self) -> Result<Vec<KeptSummary>>;

    /// Bytes every kept copy holds together (what the bound counts).
    fn kept_bytes(&self) -> Result<u64>;

    /// Drops a run's kept copy: its data key first, then its row. `false`: there was none.
    fn drop_kept(&self, session_id: &str, generation: u64, run_id: &str) -> Result<bool>;

    /// Every keep rule, oldest first.
    fn keep_rules(&self) -> Result<Vec<KeepRule>>;

    /// Adds `rule` while the store holds fewer than `rules_max`; `false`: the same rule (its
    /// workspace and agent) is there already, or there are `rules_max`.
    fn put_keep_rule(&self, rule: &KeepRule, rules_max: u64) -> Result<bool>;

    /// Removes the keep rules of a workspace (of `agent` only, when named); how many.
    fn remove_keep_rules(
        &self,
        workspace_id: &str,
        agent: Option<runread_core::Agent>,
    ) -> Result<u64>;
}

/// Readers' access requests (`request_access`), waiting for the owner's decision on the
/// loopback side; an approval's grants are ordinary grants ([`Access`]).
pub trait AccessRequests: Send + Sync {
    /// Files `request` while its bounds hold (requests waiting at its `created_at_ms`, in all and
    /// of its reader) and no identical request of its reader waits (same `fingerprint`): then
    /// that one's id. Requests made more than
    /// [`ACCESS_REQUEST_KEPT_MS`](runread_core::limits::ACCESS_REQUEST_KEPT_MS) before are purged
    /// first.
    fn file_access_request(
        &self,
        request: &AccessRequestRecord,
        bounds: AccessRequestBounds,
    ) -> Result<Filed>;

    fn access_request(&self, id: &str) -> Result<Option<AccessRequestRecord>>;

    /// Requests waiting for the owner at `now_ms`, oldest first.
    fn access_requests_pending(&self, now_ms: i64) -> Result<Vec<AccessRequestRecord>>;

    fn access_requests_pending_count(&self, now_ms: i64) -> Result<u64>;

    /// Decides the request `id` if it still waits at `now_ms`; whether it did. An approval's
    /// grants are recorded afterwards ([`AccessRequests::record_access_grants`]): until then
    /// the reader is told it still waits.
    fn decide_access_request(&self, id: &str, approved: bool, now_ms: i64) -> Result<bool>;

    /// Records the grants the approval of `id` made (once).
    fn record_access_grants(&self, id: &str, grant_ids: &[String]) -> Result<bool>;
}

/// The owner's settings (the audit's retention, the kept runs' bound).
pub trait Settings: Send + Sync {
    /// One of the owner's settings.
    fn setting(&self, key: &str) -> Result<Option<String>>;

    fn put_setting(&self, key: &str, value: &str) -> Result<()>;
}

/// Start records, each with its receipts.
pub type AuditRows = Vec<(StartMeta, Vec<Receipt>)>;
