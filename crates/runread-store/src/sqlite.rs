//! The embedded store: one SQLite file in WAL mode, versioned forward-only migrations.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use runread_core::cursor::CursorKey;
use runread_core::{Feature, Target};
use runread_sessions::{EntrySummary, FileIdentity, Header, Run};

use crate::{
    ArtifactRecord, Grant, IngestCommit, RUNS_PAGE_MAX, Receipt, Result, RunFilter, RunRecord,
    SealedSecret, SessionRecord, StartMeta, StartOutcome, StartRecord, Store, StoreError,
    SupervisedRun, Workspace,
};

/// Migrations, applied in order, each once; `PRAGMA user_version` is the number applied.
/// Forward-only: a released migration is never edited, only followed by a new one.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL) STRICT;
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    path TEXT NOT NULL UNIQUE,
    revision INTEGER NOT NULL,
    enabled INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    path TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    generation INTEGER NOT NULL,
    header_json TEXT NOT NULL,
    dev INTEGER NOT NULL, ino INTEGER NOT NULL, nlink INTEGER NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    consumed INTEGER NOT NULL,
    lines INTEGER NOT NULL,
    tail_sha256 TEXT,
    malformed_json TEXT NOT NULL,
    torn INTEGER NOT NULL,
    branch_complete INTEGER NOT NULL,
    session_name TEXT,
    saved_model TEXT,
    ingested_at INTEGER NOT NULL
) STRICT;
CREATE TABLE entries (
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    line INTEGER NOT NULL,
    summary_json TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, line)
) STRICT;
CREATE TABLE runs (
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    ord INTEGER NOT NULL,
    status TEXT NOT NULL,
    run_json TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
) STRICT;
CREATE INDEX runs_by_run_id ON runs(run_id);
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    instance TEXT NOT NULL,
    revision INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    features TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;
"#,
    r#"
CREATE TABLE start_records (
    start_id TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL,
    grant_id TEXT NOT NULL,
    key_hash_prefix TEXT NOT NULL,
    tool TEXT NOT NULL,
    binding_digest TEXT NOT NULL,
    target_json TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    sealed_key_id TEXT NOT NULL,
    sealed_nonce BLOB NOT NULL,
    sealed_ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX start_records_by_idempotency ON start_records(idempotency_key, created_at);
CREATE INDEX start_records_by_time ON start_records(created_at);
CREATE TRIGGER start_records_append_only_update BEFORE UPDATE ON start_records
    BEGIN SELECT RAISE(ABORT, 'start records are append-only'); END;
CREATE TRIGGER start_records_append_only_delete BEFORE DELETE ON start_records
    BEGIN SELECT RAISE(ABORT, 'start records are append-only'); END;
CREATE TABLE receipts (
    receipt_id TEXT PRIMARY KEY,
    start_id TEXT NOT NULL REFERENCES start_records(start_id),
    outcome TEXT NOT NULL,
    result_digest TEXT,
    output_bytes INTEGER,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX receipts_by_start ON receipts(start_id);
CREATE TRIGGER receipts_append_only_update BEFORE UPDATE ON receipts
    BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
CREATE TRIGGER receipts_append_only_delete BEFORE DELETE ON receipts
    BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
"#,
    r#"
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    key_id TEXT NOT NULL,
    nonce BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
"#,
    r#"
CREATE TABLE artifacts (
    artifact_id TEXT PRIMARY KEY,
    instance TEXT NOT NULL,
    revision INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    name TEXT NOT NULL,
    mime TEXT NOT NULL,
    kind TEXT NOT NULL,
    version_json TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX artifacts_by_run ON artifacts(session_id, generation, run_id, created_at);
"#,
    r#"
CREATE TABLE supervised_runs (
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    supervisor_id TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
) STRICT;
"#,
    // 6: the index, not a copy (entries and runs say where lines are; no texts), the file's
    // status-change time in its identity, and the line bound flag. Sessions indexed before are
    // read again as a new generation (`index_version` 1 < INDEX_VERSION).
    r#"
ALTER TABLE sessions ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN over_bounds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN index_version INTEGER NOT NULL DEFAULT 1;
"#,
    // 7: when each run started, to page the owner's listing newest first without reading every
    // run (rows from before are filled in from their records: `backfill_run_starts`).
    r#"
ALTER TABLE runs ADD COLUMN started_ms INTEGER;
CREATE INDEX runs_by_start ON runs(started_ms DESC, session_id, ord DESC);
"#,
];

/// The migration that added `runs.started_ms`, whose earlier rows are filled in by
/// [`backfill_run_starts`].
const RUN_STARTS_MIGRATION: usize = 7;

/// How long a writer waits for SQLite's lock before the call fails closed.
const BUSY_TIMEOUT_MS: u64 = 5_000;
/// Prepared statements kept per connection (the store has fewer distinct statements).
const STATEMENT_CACHE_CAPACITY: usize = 128;
/// Attempts, and the pause between them, at setting up a store another process is setting up.
const OPEN_BUSY_ATTEMPTS: u32 = 50;
const OPEN_BUSY_DELAY_MS: u64 = 20;

/// Read connections beside the one writer. In WAL mode a reader sees every committed write and
/// never waits while the writer commits (and fsyncs), so a call's reads do not queue behind
/// another call's durable start record.
pub const READ_CONNECTIONS: usize = 4;

pub struct SqliteStore {
    /// The one writer (SQLite allows one at a time); also the reader when there is no pool.
    conn: Mutex<Connection>,
    /// `None` for an in-memory store, which a second connection could not see.
    path: Option<PathBuf>,
    /// Opened on the first read; empty if they could not be opened (reads use the writer).
    readers: OnceLock<Vec<Mutex<Connection>>>,
    next_reader: AtomicUsize,
    /// Durable writes waiting for the next group commit (see [`SqliteStore::write_durably`]).
    pending: Mutex<Vec<(Write, Arc<Slot>)>>,
    /// Group commits made, and the writes they carried (for measurement).
    group_commits: std::sync::atomic::AtomicU64,
    grouped_writes: std::sync::atomic::AtomicU64,
    instance: String,
    cursor_key: CursorKey,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, applies pending migrations, and makes the
    /// instance id and cursor key on first use.
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path)?;
        restrict_to_owner(path);
        tune(&conn)?;
        set_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrate(&mut conn)?;
        let (instance, cursor_key) = {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let instance = match get_meta(&tx, "instance")? {
                Some(v) => {
                    String::from_utf8(v).map_err(|_| StoreError::Corrupt("instance id".into()))?
                }
                None => {
                    let id = uuid::Uuid::new_v4().to_string();
                    tx.prepare_cached("INSERT INTO meta(key, value) VALUES ('instance', ?1)")?
                        .execute([id.as_bytes()])?;
                    id
                }
            };
            let key = match get_meta(&tx, "cursor_key")? {
                Some(v) => <[u8; 32]>::try_from(v.as_slice())
                    .map_err(|_| StoreError::Corrupt("cursor key".into()))?,
                None => {
                    let k = runread_core::random_bytes::<32>()
                        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                    tx.prepare_cached("INSERT INTO meta(key, value) VALUES ('cursor_key', ?1)")?
                        .execute([&k[..]])?;
                    k
                }
            };
            tx.commit()?;
            (instance, CursorKey::from_bytes(key))
        };
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            path: (path.as_os_str() != ":memory:").then(|| path.to_path_buf()),
            readers: OnceLock::new(),
            next_reader: AtomicUsize::new(0),
            pending: Mutex::new(Vec::new()),
            group_commits: Default::default(),
            grouped_writes: Default::default(),
            instance,
            cursor_key,
        })
    }

    /// Group commits so far and the durable writes they carried: their ratio is how many
    /// calls shared each fsync.
    pub fn group_commit_stats(&self) -> (u64, u64) {
        (
            self.group_commits.load(Ordering::Relaxed),
            self.grouped_writes.load(Ordering::Relaxed),
        )
    }

    /// The writer connection.
    fn conn(&self) -> Result<MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| StoreError::Unavailable("connection lock poisoned".into()))
    }

    /// A connection for a read-only statement: a free pooled reader, else the next one in turn.
    fn reader(&self) -> Result<MutexGuard<'_, Connection>> {
        let pool = match &self.path {
            Some(path) => self.readers.get_or_init(|| open_readers(path)),
            None => return self.conn(),
        };
        if pool.is_empty() {
            return self.conn();
        }
        for slot in pool {
            if let Ok(guard) = slot.try_lock() {
                return Ok(guard);
            }
        }
        let turn = self.next_reader.fetch_add(1, Ordering::Relaxed) % pool.len();
        pool.get(turn)
            .ok_or_else(|| StoreError::Unavailable("no read connection".into()))?
            .lock()
            .map_err(|_| StoreError::Unavailable("connection lock poisoned".into()))
    }
}

/// Most durable writes (start records and receipts) one group commit carries.
pub const GROUP_COMMIT_MAX_WRITES: usize = 64;

/// A durable write of a tool call.
#[derive(Clone)]
enum Write {
    /// A start record, unless one with its idempotency key exists since `replay_since_ms`.
    Start {
        record: Box<StartRecord>,
        replay_since_ms: i64,
    },
    Receipt(Receipt),
}

enum Written {
    Start(StartOutcome),
    Receipt,
}

/// Where a group commit leaves one write's result for the caller that queued it.
type Slot = Mutex<Option<Result<Written>>>;

fn take(slot: &Slot) -> Option<Result<Written>> {
    match slot.lock() {
        Ok(mut g) => g.take(),
        Err(poisoned) => poisoned.into_inner().take(),
    }
}

fn put(slot: &Slot, result: Result<Written>) {
    match slot.lock() {
        Ok(mut g) => *g = Some(result),
        Err(poisoned) => *poisoned.into_inner() = Some(result),
    }
}

impl SqliteStore {
    /// Commits `write` durably (synchronous=FULL) before returning, sharing one transaction, and
    /// so one fsync, with every other call's write queued meanwhile.
    ///
    /// Each caller queues its write, then waits for the writer connection. Whoever gets it
    /// commits everything queued (up to [`GROUP_COMMIT_MAX_WRITES`] at a time) and hands each
    /// caller its result; a caller whose write a previous holder committed just takes its
    /// result. No result is handed out before its transaction committed.
    fn write_durably(&self, write: Write) -> Result<Written> {
        let slot: Arc<Slot> = Arc::default();
        self.pending
            .lock()
            .map_err(|_| StoreError::Unavailable("write queue lock poisoned".into()))?
            .push((write, slot.clone()));
        let mut conn = self.conn()?;
        loop {
            if let Some(done) = take(&slot) {
                return done;
            }
            let batch: Vec<(Write, Arc<Slot>)> = {
                let mut queue = self
                    .pending
                    .lock()
                    .map_err(|_| StoreError::Unavailable("write queue lock poisoned".into()))?;
                let n = queue.len().min(GROUP_COMMIT_MAX_WRITES);
                queue.drain(..n).collect()
            };
            if batch.is_empty() {
                return Err(StoreError::Unavailable("queued write lost".into()));
            }
            self.group_commits.fetch_add(1, Ordering::Relaxed);
            self.grouped_writes
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            commit_group(&mut conn, batch);
        }
    }
}

/// One transaction for `batch`. A write that fails (each is one statement, which SQLite undoes
/// alone) fails only its caller, unless SQLite rolled the whole transaction back: then, like a
/// failed commit, every caller of the batch gets the failure.
fn commit_group(conn: &mut Connection, batch: Vec<(Write, Arc<Slot>)>) {
    let committed = (|| -> Result<Vec<Result<Written>>> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut results = Vec::with_capacity(batch.len());
        for (write, _) in &batch {
            let r = apply(&tx, write);
            if r.is_err() && tx.is_autocommit() {
                return Err(StoreError::Unavailable(
                    "group transaction rolled back".into(),
                ));
            }
            results.push(r);
        }
        tx.commit()?;
        Ok(results)
    })();
    match committed {
        Ok(results) => {
            for ((_, slot), r) in batch.iter().zip(results) {
                put(slot, r);
            }
        }
        Err(e) => {
            let why = e.to_string();
            for (_, slot) in &batch {
                put(slot, Err(StoreError::Unavailable(why.clone())));
            }
        }
    }
}

fn apply(tx: &rusqlite::Transaction<'_>, write: &Write) -> Result<Written> {
    match write {
        Write::Start {
            record,
            replay_since_ms,
        } => {
            let m = &record.meta;
            // Inside the group's IMMEDIATE transaction: the replay check and the insert are one
            // atomic step.
            let existing = tx
                .prepare_cached(&format!(
                    "SELECT {START_COLS} FROM start_records WHERE idempotency_key = ?1 AND created_at >= ?2 \
                     ORDER BY created_at DESC LIMIT 1"
                ))?
                .query_row(
                    params![m.idempotency_key, replay_since_ms],
                    start_record_row,
                )
                .optional()?;
            if let Some((meta, nonce, ct)) = existing {
                return Ok(Written::Start(StartOutcome::Existing(Box::new(
                    StartRecord {
                        meta: finish_meta(meta)?,
                        sealed_nonce: nonce,
                        sealed_ciphertext: ct,
                    },
                ))));
            }
            tx.prepare_cached(&format!("INSERT INTO start_records({START_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"))?.execute(params![
                m.start_id,
                m.idempotency_key,
                m.grant_id,
                m.key_hash_prefix,
                m.tool,
                m.binding_digest,
                serde_json::to_string(&m.target)?,
                m.input_digest,
                m.sealed_key_id,
                m.created_at_ms,
                record.sealed_nonce,
                record.sealed_ciphertext,
            ])?;
            Ok(Written::Start(StartOutcome::Created))
        }
        Write::Receipt(r) => {
            tx.prepare_cached("INSERT INTO receipts(receipt_id, start_id, outcome, result_digest, output_bytes, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
                .execute(params![r.receipt_id, r.start_id, r.outcome, r.result_digest, r.output_bytes.map(i64_of), r.created_at_ms])?;
            Ok(Written::Receipt)
        }
    }
}

/// What every connection of the store shares.
fn tune(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
    // Every statement is prepared once per connection and reused (compiling SQL was half of
    // a tool call's instructions): room for all of them.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
    // Plans never depend on bound values. Without this, SQLite (built with STAT4) compiles a
    // cached statement again whenever a parameter it might plan around is rebound: three
    // times per tool call, a fifth of a call's instructions.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// The read pool, or none if a connection cannot be opened (reads then share the writer).
fn open_readers(path: &Path) -> Vec<Mutex<Connection>> {
    let open = || -> Result<Connection> {
        // Never creates: a store file that vanished is an error, not a new empty store.
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_URI
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        tune(&conn)?;
        conn.pragma_update(None, "query_only", "ON")?;
        Ok(conn)
    };
    match (0..READ_CONNECTIONS)
        .map(|_| open().map(Mutex::new))
        .collect::<Result<Vec<_>>>()
    {
        Ok(pool) => pool,
        Err(e) => {
            tracing::warn!(error = %e, "read connections not opened; reads share the writer");
            Vec::new()
        }
    }
}

/// Switches the file to WAL. SQLite answers this switch BUSY without calling the busy handler
/// when another process sets up the same new file at that moment: retried, bounded.
fn set_wal(conn: &Connection) -> Result<()> {
    let mut attempt = 0;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::DatabaseBusy && attempt < OPEN_BUSY_ATTEMPTS =>
            {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(OPEN_BUSY_DELAY_MS));
            }
            other => return Ok(other?),
        }
    }
}

/// The store holds copies of session text (as sensitive as the session files themselves):
/// owner-only, like the home it lives in. SQLite's `-wal` and `-shm` files follow the main file's mode.
fn restrict_to_owner(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if path.as_os_str() != ":memory:" {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
}

/// Applies pending migrations, one transaction each. The schema version is read inside the
/// write transaction, so that processes opening a new store at once (`serve`, `run`, `watch`)
/// apply each migration exactly once.
fn migrate(conn: &mut Connection) -> Result<()> {
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let applied =
            usize::try_from(applied).map_err(|_| StoreError::Corrupt("schema version".into()))?;
        if applied > MIGRATIONS.len() {
            return Err(StoreError::Corrupt(format!(
                "store schema {applied} is newer than this runread ({}); upgrade runread",
                MIGRATIONS.len()
            )));
        }
        let Some(sql) = MIGRATIONS.get(applied) else {
            return Ok(());
        };
        tx.execute_batch(sql)?;
        if applied + 1 == RUN_STARTS_MIGRATION {
            backfill_run_starts(&tx)?;
        }
        tx.pragma_update(None, "user_version", (applied + 1) as i64)?;
        tx.commit()?;
    }
}

/// Gives every run indexed before migration 7 its start time, from its own record. A record
/// without a readable start keeps none (it lists last), as a new run without one would.
fn backfill_run_starts(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let rows: Vec<(String, i64, String, String)> = tx
        .prepare("SELECT session_id, generation, run_id, run_json FROM runs")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut update = tx.prepare(
        "UPDATE runs SET started_ms = ?4 WHERE session_id = ?1 AND generation = ?2 AND run_id = ?3",
    )?;
    for (session_id, generation, run_id, json) in rows {
        let started = crate::model::stored_run_started_ms(&json);
        if let Some(ms) = started {
            update.execute(params![session_id, generation, run_id, ms])?;
        }
    }
    Ok(())
}

fn get_meta(conn: &Connection, key: &str) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?)
}

fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn workspace_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Workspace> {
    Ok(Workspace {
        id: r.get(0)?,
        name: r.get(1)?,
        path: r.get(2)?,
        revision: u64_of(r.get(3)?),
        enabled: r.get::<_, i64>(4)? != 0,
    })
}

const SESSION_COLS: &str = "session_id, agent, path, workspace_id, generation, header_json, dev, ino, nlink, size, \
     mtime_ns, consumed, lines, tail_sha256, malformed_json, torn, branch_complete, session_name, saved_model, ingested_at, \
     ctime_ns, over_bounds, index_version";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(SessionRecord, String, String)> {
    let header_json: String = r.get(5)?;
    let malformed_json: String = r.get(14)?;
    let placeholder = Header {
        session_id: String::new(),
        version: 0,
        cwd: String::new(),
        timestamp: None,
        parent_session: None,
        line_sha256: String::new(),
        line_bytes: 0,
        fork: None,
    };
    Ok((
        SessionRecord {
            session_id: r.get(0)?,
            agent: r.get(1)?,
            path: r.get(2)?,
            workspace_id: r.get(3)?,
            generation: u64_of(r.get(4)?),
            header: placeholder,
            identity: FileIdentity {
                dev: u64_of(r.get(6)?),
                ino: u64_of(r.get(7)?),
                nlink: u64_of(r.get(8)?),
                size: u64_of(r.get(9)?),
                mtime_ns: r.get(10)?,
                ctime_ns: r.get(20)?,
            },
            consumed: u64_of(r.get(11)?),
            lines: u64_of(r.get(12)?),
            tail_sha256: r.get(13)?,
            malformed_lines: vec![],
            torn: r.get::<_, i64>(15)? != 0,
            branch_complete: r.get::<_, i64>(16)? != 0,
            session_name: r.get(17)?,
            saved_model: r.get(18)?,
            ingested_at_ms: r.get(19)?,
            over_bounds: r.get::<_, i64>(21)? != 0,
            index_version: u32::try_from(r.get::<_, i64>(22)?).unwrap_or(0),
        },
        header_json,
        malformed_json,
    ))
}

fn finish_session(
    (mut s, header_json, malformed_json): (SessionRecord, String, String),
) -> Result<SessionRecord> {
    s.header = serde_json::from_str(&header_json)?;
    s.malformed_lines = serde_json::from_str(&malformed_json)?;
    Ok(s)
}

fn features_to_string(f: &[Feature]) -> String {
    f.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(",")
}

/// The six target columns stored in the order instance, revision, workspace, session,
/// generation, run, starting at column `i`.
fn target_at(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Target> {
    Ok(Target {
        instance: r.get(i)?,
        revision: u64_of(r.get(i + 1)?),
        workspace_id: r.get(i + 2)?,
        session_id: r.get(i + 3)?,
        generation: u64_of(r.get(i + 4)?),
        run_id: r.get(i + 5)?,
    })
}

fn grant_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(Grant, String)> {
    Ok((
        Grant {
            id: r.get(0)?,
            key_hash: r.get(1)?,
            label: r.get(2)?,
            target: target_at(r, 3)?,
            features: vec![],
            created_at_ms: r.get(10)?,
            expires_at_ms: r.get(11)?,
            revoked_at_ms: r.get(12)?,
        },
        r.get(9)?,
    ))
}

fn finish_grant((mut g, features): (Grant, String)) -> Result<Grant> {
    g.features = Feature::parse_list(&features).map_err(StoreError::Corrupt)?;
    Ok(g)
}

const GRANT_COLS: &str = "id, key_hash, label, instance, revision, workspace_id, session_id, generation, run_id, \
     features, created_at, expires_at, revoked_at";

/// The start record columns audit and recovery read: never the sealed input.
const START_META_COLS: &str = "start_id, idempotency_key, grant_id, key_hash_prefix, tool, binding_digest, \
     target_json, input_digest, sealed_key_id, created_at";

const RECEIPTS_OF_START: &str = "SELECT receipt_id, start_id, outcome, result_digest, output_bytes, created_at \
     FROM receipts WHERE start_id = ?1 ORDER BY created_at, receipt_id";

const START_COLS: &str = "start_id, idempotency_key, grant_id, key_hash_prefix, tool, binding_digest, target_json, \
     input_digest, sealed_key_id, created_at, sealed_nonce, sealed_ciphertext";

fn start_meta_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(StartMeta, String)> {
    Ok((
        StartMeta {
            start_id: r.get(0)?,
            idempotency_key: r.get(1)?,
            grant_id: r.get(2)?,
            key_hash_prefix: r.get(3)?,
            tool: r.get(4)?,
            binding_digest: r.get(5)?,
            target: None,
            input_digest: r.get(7)?,
            sealed_key_id: r.get(8)?,
            created_at_ms: r.get(9)?,
        },
        r.get(6)?,
    ))
}

fn finish_meta((mut m, target_json): (StartMeta, String)) -> Result<StartMeta> {
    m.target = serde_json::from_str(&target_json)?;
    Ok(m)
}

/// A start record row: its metadata (with the target still as JSON) and the sealed input.
type StartRow = ((StartMeta, String), Vec<u8>, Vec<u8>);

fn start_record_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StartRow> {
    Ok((start_meta_row(r)?, r.get(10)?, r.get(11)?))
}

fn receipt_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Receipt> {
    Ok(Receipt {
        receipt_id: r.get(0)?,
        start_id: r.get(1)?,
        outcome: r.get(2)?,
        result_digest: r.get(3)?,
        output_bytes: r.get::<_, Option<i64>>(4)?.map(u64_of),
        created_at_ms: r.get(5)?,
    })
}

const RUN_SELECT: &str = "SELECT s.session_id, s.generation, s.workspace_id, w.revision, r.run_json, s.path, \
     s.dev, s.ino, s.nlink, s.size, s.mtime_ns, s.ingested_at, w.name, w.path, s.ctime_ns, s.agent \
     FROM runs r JOIN sessions s ON s.session_id = r.session_id AND s.generation = r.generation \
     JOIN workspaces w ON w.id = s.workspace_id";

impl SqliteStore {
    fn run_rows(&self, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<RunRecord>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt
            .query_map(params, |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    FileIdentity {
                        dev: u64_of(r.get(6)?),
                        ino: u64_of(r.get(7)?),
                        nlink: u64_of(r.get(8)?),
                        size: u64_of(r.get(9)?),
                        mtime_ns: r.get(10)?,
                        ctime_ns: r.get(14)?,
                    },
                    r.get::<_, i64>(11)?,
                    r.get::<_, String>(12)?,
                    r.get::<_, String>(13)?,
                    r.get::<_, String>(15)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(
                |(
                    sid,
                    generation,
                    ws,
                    rev,
                    run_json,
                    path,
                    identity,
                    ingested,
                    ws_name,
                    ws_path,
                    agent,
                )| {
                    let run: Run = serde_json::from_str(&run_json)?;
                    Ok(RunRecord {
                        target: Target {
                            instance: self.instance.clone(),
                            revision: u64_of(rev),
                            workspace_id: ws,
                            session_id: sid,
                            generation: u64_of(generation),
                            run_id: run.run_id.clone(),
                        },
                        run,
                        agent,
                        session_path: path,
                        identity,
                        ingested_at_ms: ingested,
                        workspace_name: ws_name,
                        workspace_path: ws_path,
                    })
                },
            )
            .collect()
    }
}

impl Store for SqliteStore {
    fn instance_id(&self) -> &str {
        &self.instance
    }

    fn cursor_key(&self) -> &CursorKey {
        &self.cursor_key
    }

    fn add_workspace(&self, canonical_path: &str, name: &str, now_ms: i64) -> Result<Workspace> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = tx
            .prepare_cached(
                "SELECT id, name, path, revision, enabled FROM workspaces WHERE path = ?1",
            )?
            .query_row([canonical_path], workspace_row)
            .optional()?;
        let ws = match existing {
            Some(mut ws) => {
                ws.revision += 1;
                ws.name = name.to_owned();
                ws.enabled = true;
                tx.prepare_cached("UPDATE workspaces SET revision = ?1, name = ?2, enabled = 1, updated_at = ?3 WHERE id = ?4")?.execute(params![i64_of(ws.revision), ws.name, now_ms, ws.id],
                )?;
                ws
            }
            None => {
                let bytes = runread_core::random_bytes::<8>()
                    .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                let ws = Workspace {
                    id: format!("w-{}", hex::encode(bytes)),
                    name: name.to_owned(),
                    path: canonical_path.to_owned(),
                    revision: 1,
                    enabled: true,
                };
                tx.prepare_cached("INSERT INTO workspaces(id, name, path, revision, enabled, created_at, updated_at) \
                     VALUES (?1, ?2, ?3, 1, 1, ?4, ?4)")?.execute(params![ws.id, ws.name, ws.path, now_ms],
                )?;
                ws
            }
        };
        tx.commit()?;
        Ok(ws)
    }

    fn workspaces(&self) -> Result<Vec<Workspace>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, name, path, revision, enabled FROM workspaces ORDER BY created_at, id",
        )?;
        Ok(stmt
            .query_map([], workspace_row)?
            .collect::<rusqlite::Result<_>>()?)
    }

    fn workspace(&self, id: &str) -> Result<Option<Workspace>> {
        let conn = self.reader()?;
        Ok(conn
            .prepare_cached(
                "SELECT id, name, path, revision, enabled FROM workspaces WHERE id = ?1",
            )?
            .query_row([id], workspace_row)
            .optional()?)
    }

    fn session_by_path(&self, path: &str) -> Result<Option<SessionRecord>> {
        let conn = self.reader()?;
        let row = conn
            .prepare_cached(&format!(
                "SELECT {SESSION_COLS} FROM sessions WHERE path = ?1"
            ))?
            .query_row([path], session_row)
            .optional()?;
        row.map(finish_session).transpose()
    }

    fn sessions_with_path_prefix(&self, prefix: &str, limit: u32) -> Result<Vec<SessionRecord>> {
        let conn = self.reader()?;
        let take = i64::from(limit) + 1;
        // A range of the path index: from the prefix up to the first string past every string
        // that starts with it (UTF-8 byte order is code point order, SQLite's BINARY collation).
        let rows = match crate::prefix_upper_bound(prefix) {
            Some(end) => conn
                .prepare_cached(&format!(
                    "SELECT {SESSION_COLS} FROM sessions WHERE path >= ?1 AND path < ?2 ORDER BY path LIMIT ?3"
                ))?
                .query_map(params![prefix, end, take], session_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
            None => conn
                .prepare_cached(&format!(
                    "SELECT {SESSION_COLS} FROM sessions WHERE path >= ?1 ORDER BY path LIMIT ?2"
                ))?
                .query_map(params![prefix, take], session_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
        };
        rows.into_iter()
            .filter(|(s, _, _)| s.path.starts_with(prefix))
            .map(finish_session)
            .collect()
    }

    fn session(&self, session_id: &str) -> Result<Option<SessionRecord>> {
        let conn = self.reader()?;
        let row = conn
            .prepare_cached(&format!(
                "SELECT {SESSION_COLS} FROM sessions WHERE session_id = ?1"
            ))?
            .query_row([session_id], session_row)
            .optional()?;
        row.map(finish_session).transpose()
    }

    fn entries(&self, session_id: &str, generation: u64) -> Result<Vec<EntrySummary>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(
            "SELECT summary_json FROM entries WHERE session_id = ?1 AND generation = ?2 ORDER BY line",
        )?;
        let rows: Vec<String> = stmt
            .query_map(params![session_id, i64_of(generation)], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        rows.iter().map(|j| Ok(serde_json::from_str(j)?)).collect()
    }

    fn commit_ingest(&self, c: &IngestCommit) -> Result<()> {
        let s = &c.session;
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if c.new_generation {
            tx.prepare_cached("DELETE FROM entries WHERE session_id = ?1")?
                .execute([&s.session_id])?;
            tx.prepare_cached("DELETE FROM runs WHERE session_id = ?1")?
                .execute([&s.session_id])?;
            // The path may have held another session id before (a file replaced by another session).
            tx.prepare_cached("DELETE FROM sessions WHERE path = ?1 AND session_id <> ?2")?
                .execute(params![s.path, s.session_id])?;
        }
        tx.prepare_cached(&format!(
                "INSERT INTO sessions({SESSION_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23) \
                 ON CONFLICT(session_id) DO UPDATE SET agent = excluded.agent, path = excluded.path, \
                 workspace_id = excluded.workspace_id, generation = excluded.generation, header_json = excluded.header_json, \
                 dev = excluded.dev, ino = excluded.ino, nlink = excluded.nlink, size = excluded.size, mtime_ns = excluded.mtime_ns, \
                 consumed = excluded.consumed, lines = excluded.lines, tail_sha256 = excluded.tail_sha256, \
                 malformed_json = excluded.malformed_json, torn = excluded.torn, branch_complete = excluded.branch_complete, \
                 session_name = excluded.session_name, saved_model = excluded.saved_model, ingested_at = excluded.ingested_at, \
                 ctime_ns = excluded.ctime_ns, over_bounds = excluded.over_bounds, index_version = excluded.index_version"
            ))?.execute(params![
                s.session_id,
                s.agent,
                s.path,
                s.workspace_id,
                i64_of(s.generation),
                serde_json::to_string(&s.header)?,
                i64_of(s.identity.dev),
                i64_of(s.identity.ino),
                i64_of(s.identity.nlink),
                i64_of(s.identity.size),
                s.identity.mtime_ns,
                i64_of(s.consumed),
                i64_of(s.lines),
                s.tail_sha256,
                serde_json::to_string(&s.malformed_lines)?,
                s.torn as i64,
                s.branch_complete as i64,
                s.session_name,
                s.saved_model,
                s.ingested_at_ms,
                s.identity.ctime_ns,
                s.over_bounds as i64,
                i64::from(s.index_version),
            ],
        )?;
        {
            let mut ins = tx.prepare_cached(
                "INSERT OR REPLACE INTO entries(session_id, generation, line, summary_json) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for e in &c.new_entries {
                ins.execute(params![
                    s.session_id,
                    i64_of(s.generation),
                    i64_of(e.line),
                    serde_json::to_string(e)?
                ])?;
            }
        }
        tx.prepare_cached("DELETE FROM runs WHERE session_id = ?1")?
            .execute([&s.session_id])?;
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO runs(session_id, generation, run_id, ord, status, run_json, started_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for (ord, r) in c.runs.iter().enumerate() {
                ins.execute(params![
                    s.session_id,
                    i64_of(s.generation),
                    r.run_id,
                    ord as i64,
                    r.status.as_str(),
                    serde_json::to_string(r)?,
                    crate::run_started_ms(r),
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn runs(&self) -> Result<Vec<RunRecord>> {
        self.run_rows(
            &format!("{RUN_SELECT} ORDER BY s.ingested_at DESC, s.session_id, r.ord"),
            &[],
        )
    }

    fn runs_page(&self, filter: &RunFilter, limit: u32, offset: u64) -> Result<Vec<RunRecord>> {
        let limit = i64::from(limit.min(RUNS_PAGE_MAX));
        let offset = i64_of(offset);
        self.run_rows(
            &format!(
                "{RUN_SELECT} WHERE (?1 IS NULL OR s.agent = ?1) AND (?2 IS NULL OR s.workspace_id = ?2) \
                 AND (?5 IS NULL OR r.status = ?5) \
                 ORDER BY r.started_ms DESC, r.session_id, r.ord DESC LIMIT ?3 OFFSET ?4"
            ),
            &[&filter.agent, &filter.workspace_id, &limit, &offset, &filter.status],
        )
    }

    fn runs_count(&self, filter: &RunFilter) -> Result<u64> {
        let conn = self.reader()?;
        let n: i64 = conn
            .prepare_cached(
                "SELECT count(*) FROM runs r JOIN sessions s ON s.session_id = r.session_id AND s.generation = r.generation \
                 WHERE (?1 IS NULL OR s.agent = ?1) AND (?2 IS NULL OR s.workspace_id = ?2) \
                 AND (?3 IS NULL OR r.status = ?3)",
            )?
            .query_row(
                params![filter.agent, filter.workspace_id, filter.status],
                |r| r.get(0),
            )?;
        Ok(u64_of(n))
    }

    fn runs_by_id(&self, run_id: &str) -> Result<Vec<RunRecord>> {
        self.run_rows(
            &format!("{RUN_SELECT} WHERE r.run_id = ?1 ORDER BY s.session_id"),
            &[&run_id],
        )
    }

    fn run(&self, session_id: &str, generation: u64, run_id: &str) -> Result<Option<RunRecord>> {
        let generation = i64_of(generation);
        let mut rows = self.run_rows(
            &format!(
                "{RUN_SELECT} WHERE r.session_id = ?1 AND r.generation = ?2 AND r.run_id = ?3"
            ),
            &[&session_id, &generation, &run_id],
        )?;
        Ok(rows.pop())
    }

    fn insert_grant(&self, g: &Grant) -> Result<()> {
        let conn = self.conn()?;
        conn.prepare_cached(&format!("INSERT INTO grants({GRANT_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"))?.execute(params![
                g.id,
                g.key_hash,
                g.label,
                g.target.instance,
                i64_of(g.target.revision),
                g.target.workspace_id,
                g.target.session_id,
                i64_of(g.target.generation),
                g.target.run_id,
                features_to_string(&g.features),
                g.created_at_ms,
                g.expires_at_ms,
                g.revoked_at_ms,
            ],
        )?;
        Ok(())
    }

    fn grants_by_key_hash(&self, key_hash: &str) -> Result<Vec<Grant>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {GRANT_COLS} FROM grants WHERE key_hash = ?1"
        ))?;
        let rows: Vec<_> = stmt
            .query_map([key_hash], grant_row)?
            .collect::<rusqlite::Result<_>>()?;
        rows.into_iter().map(finish_grant).collect()
    }

    fn grants(&self) -> Result<Vec<Grant>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {GRANT_COLS} FROM grants ORDER BY created_at, id"
        ))?;
        let rows: Vec<_> = stmt
            .query_map([], grant_row)?
            .collect::<rusqlite::Result<_>>()?;
        rows.into_iter().map(finish_grant).collect()
    }

    fn revoke_grant(&self, id: &str, now_ms: i64) -> Result<bool> {
        let conn = self.conn()?;
        let n = conn
            .prepare_cached(
                "UPDATE grants SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL",
            )?
            .execute(params![now_ms, id])?;
        Ok(n == 1)
    }

    fn begin_call(&self, rec: &StartRecord, replay_since_ms: i64) -> Result<StartOutcome> {
        match self.write_durably(Write::Start {
            record: Box::new(rec.clone()),
            replay_since_ms,
        })? {
            Written::Start(outcome) => Ok(outcome),
            Written::Receipt => Err(StoreError::Unavailable("group commit mixed up".into())),
        }
    }

    fn append_receipt(&self, r: &Receipt) -> Result<()> {
        match self.write_durably(Write::Receipt(r.clone()))? {
            Written::Receipt => Ok(()),
            Written::Start(_) => Err(StoreError::Unavailable("group commit mixed up".into())),
        }
    }

    fn start_record(&self, start_id: &str) -> Result<Option<StartRecord>> {
        let conn = self.reader()?;
        let row = conn
            .prepare_cached(&format!(
                "SELECT {START_COLS} FROM start_records WHERE start_id = ?1"
            ))?
            .query_row([start_id], start_record_row)
            .optional()?;
        row.map(|(meta, nonce, ct)| {
            Ok(StartRecord {
                meta: finish_meta(meta)?,
                sealed_nonce: nonce,
                sealed_ciphertext: ct,
            })
        })
        .transpose()
    }

    fn start_meta(&self, start_id: &str) -> Result<Option<StartMeta>> {
        let conn = self.reader()?;
        // Deliberately not selecting the sealed columns.
        let row = conn
            .prepare_cached(&format!(
                "SELECT {START_META_COLS} FROM start_records WHERE start_id = ?1"
            ))?
            .query_row([start_id], start_meta_row)
            .optional()?;
        row.map(finish_meta).transpose()
    }

    fn add_artifact(&self, a: &ArtifactRecord) -> Result<()> {
        let conn = self.conn()?;
        let t = &a.target;
        conn.prepare_cached("INSERT INTO artifacts(artifact_id, instance, revision, workspace_id, session_id, generation, run_id, name, mime, \
             kind, version_json, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)")?.execute(params![a.artifact_id, t.instance, i64_of(t.revision), t.workspace_id, t.session_id, i64_of(t.generation), t.run_id,
                    a.name, a.mime, a.kind, a.version_json, a.created_at_ms],
        )?;
        Ok(())
    }

    fn artifacts(&self, target: &Target) -> Result<Vec<ArtifactRecord>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(
            "SELECT artifact_id, instance, revision, workspace_id, session_id, generation, run_id, name, mime, kind, \
             version_json, created_at FROM artifacts WHERE session_id = ?1 AND generation = ?2 AND run_id = ?3 \
             AND instance = ?4 AND revision = ?5 AND workspace_id = ?6 ORDER BY created_at, artifact_id",
        )?;
        let rows = stmt
            .query_map(
                params![
                    target.session_id,
                    i64_of(target.generation),
                    target.run_id,
                    target.instance,
                    i64_of(target.revision),
                    target.workspace_id
                ],
                |r| {
                    Ok(ArtifactRecord {
                        artifact_id: r.get(0)?,
                        target: target_at(r, 1)?,
                        name: r.get(7)?,
                        mime: r.get(8)?,
                        kind: r.get(9)?,
                        version_json: r.get(10)?,
                        created_at_ms: r.get(11)?,
                    })
                },
            )?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    fn put_supervised(&self, s: &SupervisedRun) -> Result<()> {
        let conn = self.conn()?;
        conn.prepare_cached("INSERT INTO supervised_runs(session_id, generation, run_id, supervisor_id, updated_at, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(session_id, generation, run_id) DO UPDATE SET \
             supervisor_id = excluded.supervisor_id, updated_at = excluded.updated_at, record = excluded.record")?.execute(params![s.session_id, i64_of(s.generation), s.run_id, s.supervisor_id, s.updated_at_ms,
                    serde_json::to_string(s)?],
        )?;
        Ok(())
    }

    fn supervised(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<SupervisedRun>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(
            "SELECT record FROM supervised_runs WHERE session_id = ?1 AND generation = ?2 AND run_id = ?3",
        )?;
        let record: Option<String> = stmt
            .query_row(params![session_id, i64_of(generation), run_id], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(match record {
            Some(json) => Some(serde_json::from_str(&json)?),
            None => None,
        })
    }

    fn put_secret(&self, s: &SealedSecret) -> Result<()> {
        let conn = self.conn()?;
        conn.prepare_cached("INSERT INTO secrets(name, key_id, nonce, ciphertext, created_at) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT(name) DO UPDATE SET key_id = excluded.key_id, nonce = excluded.nonce, \
             ciphertext = excluded.ciphertext, created_at = excluded.created_at")?.execute(params![s.name, s.key_id, s.nonce, s.ciphertext, s.created_at_ms],
        )?;
        Ok(())
    }

    fn sealed_secrets(&self) -> Result<Vec<SealedSecret>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(
            "SELECT name, key_id, nonce, ciphertext, created_at FROM secrets ORDER BY name",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(SealedSecret {
                    name: r.get(0)?,
                    key_id: r.get(1)?,
                    nonce: r.get(2)?,
                    ciphertext: r.get(3)?,
                    created_at_ms: r.get(4)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    fn secrets_fingerprint(&self) -> Result<String> {
        let conn = self.reader()?;
        let (n, max, total): (i64, Option<i64>, Option<i64>) = conn
            .prepare_cached(
                "SELECT count(*), max(created_at), total(length(ciphertext)) FROM secrets",
            )?
            .query_row([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get::<_, Option<f64>>(2)?.map(|f| f as i64),
                ))
            })?;
        Ok(format!("{n}:{}:{}", max.unwrap_or(0), total.unwrap_or(0)))
    }

    fn receipts(&self, start_id: &str) -> Result<Vec<Receipt>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(RECEIPTS_OF_START)?;
        Ok(stmt
            .query_map([start_id], receipt_row)?
            .collect::<rusqlite::Result<_>>()?)
    }

    fn audit(&self, since_ms: i64, limit: u32) -> Result<Vec<(StartMeta, Vec<Receipt>)>> {
        self.audit_in(since_ms, limit, "created_at, start_id")
    }

    fn audit_newest(&self, since_ms: i64, limit: u32) -> Result<Vec<(StartMeta, Vec<Receipt>)>> {
        self.audit_in(since_ms, limit, "created_at DESC, start_id DESC")
    }
}

impl SqliteStore {
    /// Start records at or after `since_ms` in `order` (one of two fixed orders), at most `limit`.
    fn audit_in(
        &self,
        since_ms: i64,
        limit: u32,
        order: &'static str,
    ) -> Result<Vec<(StartMeta, Vec<Receipt>)>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(
            &format!("SELECT {START_META_COLS} FROM start_records WHERE created_at >= ?1 ORDER BY {order} LIMIT ?2"),
        )?;
        let metas: Vec<_> = stmt
            .query_map(params![since_ms, limit], start_meta_row)?
            .collect::<rusqlite::Result<_>>()?;
        let mut rstmt = conn.prepare_cached(RECEIPTS_OF_START)?;
        let mut out = Vec::with_capacity(metas.len());
        for m in metas {
            let m = finish_meta(m)?;
            let receipts = rstmt
                .query_map([&m.start_id], receipt_row)?
                .collect::<rusqlite::Result<_>>()?;
            out.push((m, receipts));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_do_not_wait_for_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(SqliteStore::open(&dir.path().join("s.db")).unwrap());
        store.add_workspace("/w", "w", 1).unwrap();
        // Another call holds the writer (as while it commits and fsyncs a start record).
        let writer = store.conn().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let s = store.clone();
        std::thread::spawn(move || {
            let _ = tx.send(s.workspaces().map(|w| w.len()).ok());
        });
        let read = rx.recv_timeout(std::time::Duration::from_secs(10));
        drop(writer);
        assert_eq!(
            read,
            Ok(Some(1)),
            "the read finished while the writer was held"
        );
    }

    fn start(id: &str) -> StartRecord {
        StartRecord {
            meta: StartMeta {
                start_id: id.into(),
                idempotency_key: format!("once-{id}"),
                grant_id: "g".into(),
                key_hash_prefix: "0123456789ab".into(),
                tool: "read_final_answer".into(),
                binding_digest: "b".into(),
                target: None,
                input_digest: "i".into(),
                sealed_key_id: "k1".into(),
                created_at_ms: 1,
            },
            sealed_nonce: vec![0; 12],
            sealed_ciphertext: vec![1, 2, 3],
        }
    }

    fn receipt(id: &str, start_id: &str) -> Receipt {
        Receipt {
            receipt_id: id.into(),
            start_id: start_id.into(),
            outcome: "ok".into(),
            result_digest: None,
            output_bytes: None,
            created_at_ms: 2,
        }
    }

    #[test]
    fn concurrent_calls_share_group_commits_and_every_write_lands() {
        const THREADS: usize = 8;
        const CALLS: usize = 40;
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("s.db")).unwrap());
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for c in 0..CALLS {
                        let id = format!("st-{t}-{c}");
                        let out = store.begin_call(&start(&id), 0).unwrap();
                        assert!(matches!(out, StartOutcome::Created), "{id}");
                        store
                            .append_receipt(&receipt(&format!("rc-{t}-{c}"), &id))
                            .unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let rows = store.audit(0, (THREADS * CALLS * 2) as u32).unwrap();
        assert_eq!(rows.len(), THREADS * CALLS);
        assert!(rows.iter().all(|(_, receipts)| receipts.len() == 1));
        // And from a new connection: it was committed, not only visible to this process.
        drop(store);
        let reopened = SqliteStore::open(&dir.path().join("s.db")).unwrap();
        assert_eq!(reopened.audit(0, 1000).unwrap().len(), THREADS * CALLS);
    }

    #[test]
    fn a_failing_write_fails_only_its_caller_in_a_group() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s.db")).unwrap();
        store.begin_call(&start("st-1"), 0).unwrap();
        store.append_receipt(&receipt("rc-dup", "st-1")).unwrap();
        let batch: Vec<(Write, Arc<Slot>)> = vec![
            (
                Write::Start {
                    record: Box::new(start("st-2")),
                    replay_since_ms: 0,
                },
                Arc::default(),
            ),
            // The same receipt id again: this insert fails.
            (Write::Receipt(receipt("rc-dup", "st-1")), Arc::default()),
            (Write::Receipt(receipt("rc-2", "st-2")), Arc::default()),
            // A replay of st-1's idempotency key finds it.
            (
                Write::Start {
                    record: Box::new(start("st-1")),
                    replay_since_ms: 0,
                },
                Arc::default(),
            ),
        ];
        commit_group(
            &mut store.conn().unwrap(),
            batch.iter().map(|(w, s)| (w.clone(), s.clone())).collect(),
        );
        let results: Vec<_> = batch.iter().map(|(_, s)| take(s).unwrap()).collect();
        assert!(matches!(
            results[0],
            Ok(Written::Start(StartOutcome::Created))
        ));
        assert!(results[1].is_err());
        assert!(matches!(results[2], Ok(Written::Receipt)));
        assert!(matches!(
            results[3],
            Ok(Written::Start(StartOutcome::Existing(_)))
        ));
        assert!(store.start_record("st-2").unwrap().is_some());
        assert_eq!(store.receipts("st-2").unwrap().len(), 1);
        assert_eq!(store.receipts("st-1").unwrap().len(), 1);
    }

    #[test]
    fn an_in_memory_store_reads_through_its_one_connection() {
        let store = SqliteStore::open(Path::new(":memory:")).unwrap();
        store.add_workspace("/w", "w", 1).unwrap();
        assert_eq!(store.workspaces().unwrap().len(), 1);
    }
}
