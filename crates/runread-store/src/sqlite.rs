//! The embedded store: one SQLite file in WAL mode, versioned forward-only migrations.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rusqlite::types::ToSqlOutput;
use rusqlite::{
    Connection, OptionalExtension, Statement, ToSql, TransactionBehavior, params, params_from_iter,
};

use runread_core::cursor::CursorKey;
use runread_core::limits::{SQLITE_COMMIT_IDLE_POLL_MS, SQLITE_COMMIT_POLL_MS};

use crate::checkpoint::{CheckpointStats, Checkpointer, open_existing};
use crate::prelude::*;
use crate::vocab::{
    self, Args, AuditRows, MapRow, PREVIEW_PURGE_MIGRATION, RUN_STARTS_MIGRATION, Value, i64_of,
    values,
};

use crate::{
    AuditFilter, AuditPage, IngestCommit, Receipt, Result, RunFilter, RunRecord, SessionRecord,
    SessionStamp, StartMeta, StartOutcome, StartRecord, StoreError, Workspace,
};

/// Migrations, applied in order, each once; `PRAGMA user_version` is the number applied.
/// Forward-only: a released migration is never edited, only followed by a new one. Each is a file
/// of its dialect in `migrations/` (the same tables in PostgreSQL are `migrations/postgres/`).
pub(crate) const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/sqlite/0001.sql"),
    include_str!("../migrations/sqlite/0002.sql"),
    include_str!("../migrations/sqlite/0003.sql"),
    include_str!("../migrations/sqlite/0004.sql"),
    include_str!("../migrations/sqlite/0005.sql"),
    // 6: the index, not a copy (entries and runs say where lines are; no texts), the file's
    // status-change time in its identity, and the line bound flag. Sessions indexed before are
    // read again as a new generation (`index_version` 1 < INDEX_VERSION).
    include_str!("../migrations/sqlite/0006.sql"),
    // 7: when each run started, to page the owner's listing newest first without reading every
    // run (rows from before are filled in from their records: `backfill_run_starts`).
    include_str!("../migrations/sqlite/0007.sql"),
    // 8: no prompt previews in the store; the file is rewritten afterwards, so the old rows' bytes
    // are not left in its free space (`PREVIEW_PURGE_MIGRATION`, `rewrite_without_free_space`).
    include_str!("../migrations/sqlite/0008.sql"),
    // 9: the audit's indexes, newest first by (time, start id), by grant and by run id, for
    // `audit_page`.
    include_str!("../migrations/sqlite/0009.sql"),
    // 10: readers (a named client with one key, holding grants); each grant of before becomes
    // one reader holding it, with its key; calls name their reader.
    include_str!("../migrations/sqlite/0010.sql"),
    // 11: connectors: dynamically registered OAuth clients, authorization requests waiting for
    // the owner's consent, tokens as hashes.
    include_str!("../migrations/sqlite/0011.sql"),
    // 12: the waits readers hold (`wait_for_run`), for the owner's view.
    include_str!("../migrations/sqlite/0012.sql"),
    // 13: snapshots: sealed copies of shared runs' evidence, until their grants end.
    include_str!("../migrations/sqlite/0013.sql"),
    // 14: connectors, round two: a request's `state` kept only as its SHA-256; shares of the
    // bounds on waiting requests (per client) and unapproved registrations (per registrant).
    include_str!("../migrations/sqlite/0014.sql"),
    // 15: the audit's retention: seals and prunes, chained, and deletes of start records and
    // receipts refused unless a prune covers them; the owner's settings.
    include_str!("../migrations/sqlite/0015.sql"),
    include_str!("../migrations/sqlite/0016.sql"),
    include_str!("../migrations/sqlite/0017.sql"),
    // 18: what a call's result carried, with its receipt (its evidence and settled state).
    include_str!("../migrations/sqlite/0018.sql"),
    // 19: access requests: a reader's request for runs, its hints and reason sealed, waiting for
    // the owner's decision.
    include_str!("../migrations/sqlite/0019.sql"),
    // 20: kept runs (`runread keep`) and keep rules.
    include_str!("../migrations/sqlite/0020.sql"),
];

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
    /// The read pool, each connection opened when a read finds the open ones busy (an idle
    /// server holds one, not [`READ_CONNECTIONS`]: each holds its own parse of the schema, its
    /// statements and its page cache); `None` in a slot that could not be opened (reads then
    /// use the writer).
    readers: [OnceLock<Option<Mutex<Connection>>>; READ_CONNECTIONS],
    next_reader: AtomicUsize,
    /// Durable writes waiting for the next group commit (see [`SqliteStore::write_durably`]).
    pending: Mutex<Vec<(Write, Arc<Slot>)>>,
    /// Group commits made, and the writes they carried (for measurement).
    group_commits: std::sync::atomic::AtomicU64,
    grouped_writes: std::sync::atomic::AtomicU64,
    /// Set while the writer may not be at `synchronous=FULL` (an ingest commit switched it to
    /// NORMAL and has not yet switched it back): the next use of the writer sets FULL again
    /// first, or refuses. See [`SqliteStore::commit_ingest`].
    writer_relaxed: std::sync::atomic::AtomicBool,
    /// Copies the log back into the file off the writer's path; `None` for an in-memory store
    /// (no log). Stopped and joined when the store is dropped.
    checkpointer: Option<Arc<Checkpointer>>,
    instance: String,
    cursor_key: CursorKey,
    /// Changes this store committed, for waits in this process; another process's commits to
    /// the same file are heard by [`watch_other_commits`], started by the first wait.
    feed: crate::changes::ChangeFeed,
}

impl SqliteStore {
    /// Tells this process's waits that the runs of `session_id` changed (after the commit).
    fn announce(&self, session_id: &str) {
        self.feed
            .publish(crate::changes::Change::Session(session_id.to_owned()));
    }

    /// Opens (creating if needed) the store at `path`, applies pending migrations, and makes the
    /// instance id and cursor key on first use.
    pub fn open(path: &Path) -> Result<Self> {
        // `None` for an in-memory store, which no second connection could see.
        let file = (path.as_os_str() != ":memory:").then(|| path.to_path_buf());
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
        let checkpointer = match &file {
            Some(file) => {
                let checkpointer = Checkpointer::new(file.clone());
                Checkpointer::install(&checkpointer, &mut conn)?;
                Some(checkpointer)
            }
            None => None,
        };
        let feed = crate::changes::ChangeFeed::new(file.clone().map(|f| {
            Box::new(move |feed| watch_other_commits(f, feed)) as crate::changes::Starter
        }));
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            path: file,
            readers: Default::default(),
            next_reader: AtomicUsize::new(0),
            pending: Mutex::new(Vec::new()),
            group_commits: Default::default(),
            grouped_writes: Default::default(),
            writer_relaxed: Default::default(),
            checkpointer,
            instance,
            cursor_key,
            feed,
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

    /// The store's file (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Checkpoints of the log so far, by whom, and the longest log a commit left.
    pub fn checkpoint_stats(&self) -> CheckpointStats {
        self.checkpointer
            .as_ref()
            .map(|c| c.stats())
            .unwrap_or_default()
    }

    /// The writer connection, at `synchronous=FULL`: every write but an ingest's waits for the
    /// disk before it is reported done.
    fn conn(&self) -> Result<MutexGuard<'_, Connection>> {
        let conn = self
            .conn
            .lock()
            .map_err(|_| StoreError::Unavailable("connection lock poisoned".into()))?;
        if self.writer_relaxed.load(Ordering::Acquire) {
            // An ingest commit could not set it back: fail closed rather than write lightly.
            conn.pragma_update(None, "synchronous", "FULL")?;
            self.writer_relaxed.store(false, Ordering::Release);
        }
        Ok(conn)
    }

    /// A connection for a read-only statement: a free pooled reader, else a new one while the
    /// pool has room, else the next one in turn (waiting for it).
    fn reader(&self) -> Result<MutexGuard<'_, Connection>> {
        let Some(path) = &self.path else {
            return self.conn();
        };
        for slot in &self.readers {
            match slot.get_or_init(|| open_reader(path)) {
                Some(conn) => {
                    if let Ok(guard) = conn.try_lock() {
                        return Ok(guard);
                    }
                }
                None => return self.conn(),
            }
        }
        let turn = self.next_reader.fetch_add(1, Ordering::Relaxed) % READ_CONNECTIONS;
        match self.readers.get(turn).and_then(OnceLock::get) {
            Some(Some(conn)) => conn
                .lock()
                .map_err(|_| StoreError::Unavailable("connection lock poisoned".into())),
            _ => self.conn(),
        }
    }
}

/// How long a scrub waits for the readers of other processes to move past the log's older
/// frames before it leaves them to the checkpointer's next attempt.
const SCRUB_BUSY_TIMEOUT_MS: u64 = 2_000;

impl SqliteStore {
    /// Overwrites what a deletion left in the write-ahead log. The deletion itself zeroed the
    /// content in the database's pages (`secure_delete`), but the log still holds the pages as
    /// they were before, in older frames, until it is reused. A TRUNCATE checkpoint copies the
    /// log into the database and empties the log file; it waits (bounded) for readers still on
    /// older frames. When it cannot finish now, the checkpointer does it at its next chance (the
    /// next commit asks for it again). Never fails the deletion it follows.
    pub fn scrub(&self) {
        let Some(checkpointer) = &self.checkpointer else {
            return;
        };
        checkpointer.want_scrub();
        let done = (|| -> rusqlite::Result<bool> {
            let conn = open_existing(checkpointer.path())?;
            conn.busy_timeout(std::time::Duration::from_millis(SCRUB_BUSY_TIMEOUT_MS))?;
            // A connection opens the log with its first read; before it, it sees no log.
            let _: i64 = conn.pragma_query_value(None, "schema_version", |r| r.get(0))?;
            Ok(checkpointer.scrub_on(&conn))
        })();
        match done {
            Ok(true) => {}
            Ok(false) => tracing::info!("log not emptied yet after a deletion; retried later"),
            Err(e) => tracing::warn!(error = %e, "log not emptied after a deletion"),
        }
    }

    /// A read connection of the pool that is open and free now, if one is: never waits, and
    /// never opens one (which touches the disk).
    fn free_reader(&self) -> Option<MutexGuard<'_, Connection>> {
        self.readers
            .iter()
            .filter_map(|slot| slot.get()?.as_ref())
            .find_map(|conn| conn.try_lock().ok())
    }
}

impl Drop for SqliteStore {
    /// The checkpointer's connection closes before the writer's: the last connection to close
    /// checkpoints what is left and removes the log.
    fn drop(&mut self) {
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.stop();
        }
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
            // Inside the group's IMMEDIATE transaction: the replay check and the insert are one
            // atomic step.
            let existing = first(
                &mut *tx.prepare_cached(vocab::START_REPLAY)?,
                &values![&record.meta.idempotency_key, *replay_since_ms],
                vocab::start_record,
            )?;
            if let Some(existing) = existing {
                return Ok(Written::Start(StartOutcome::Existing(Box::new(existing))));
            }
            tx.prepare_cached(vocab::INSERT_START)?
                .execute(params_from_iter(vocab::start_values(record)?))?;
            Ok(Written::Start(StartOutcome::Created))
        }
        Write::Receipt(r) => {
            tx.prepare_cached(vocab::INSERT_RECEIPT)?
                .execute(params_from_iter(vocab::receipt_values(r)))?;
            Ok(Written::Receipt)
        }
    }
}

/// What every connection of the store shares.
fn tune(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
    // Deleted content is overwritten with zeros, in its page and in the pages a deletion frees
    // (a snapshot's sealed bytes and wrapped key, tokens, requests): nothing deleted stays in the
    // file's free space. The log's older frames are emptied by [`SqliteStore::scrub`].
    conn.pragma_update(None, "secure_delete", "ON")?;
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

/// Hears commits to the file at `path` by any connection — another process's (`runread run`
/// beside `runread serve`), or another store's on the same file — and announces them on `feed`
/// as [`Change::Unknown`](crate::changes::Change::Unknown): every wait re-checks. SQLite has no
/// `NOTIFY`; its `data_version` changes whenever another connection committed, so a thread asks
/// it every [`SQLITE_COMMIT_POLL_MS`] while a wait listens (every
/// [`SQLITE_COMMIT_IDLE_POLL_MS`] while none does) on a connection of its own, and ends with
/// the store (when the feed's last sender is gone). This process's own commits are heard too
/// (they are another connection's): one more re-check each, never a wrong answer.
fn watch_other_commits(path: PathBuf, feed: crate::changes::ChangeFeed) {
    let weak = feed.downgrade();
    drop(feed);
    let spawned = std::thread::Builder::new()
        .name("runread-sqlite-commits".into())
        .spawn(move || {
            let conn = match open_existing(&path).and_then(|c| {
                c.pragma_update(None, "query_only", "ON")?;
                Ok(c)
            }) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "commits by other processes are heard by the waits' re-checks only");
                    return;
                }
            };
            let version = |c: &Connection| -> Option<i64> {
                c.pragma_query_value(None, "data_version", |r| r.get(0)).ok()
            };
            let mut seen = version(&conn);
            loop {
                let Some(feed) = weak.upgrade() else { return };
                let listening = feed.listening();
                if listening {
                    let now = version(&conn);
                    if now != seen {
                        seen = now;
                        feed.publish(crate::changes::Change::Unknown);
                    }
                }
                drop(feed);
                std::thread::sleep(std::time::Duration::from_millis(if listening {
                    SQLITE_COMMIT_POLL_MS
                } else {
                    SQLITE_COMMIT_IDLE_POLL_MS
                }));
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "commits by other processes are heard by the waits' re-checks only");
    }
}

/// One read connection of the pool, or none if it cannot be opened (reads then share the writer).
fn open_reader(path: &Path) -> Option<Mutex<Connection>> {
    let open = || -> Result<Connection> {
        let conn = open_existing(path)?;
        tune(&conn)?;
        conn.pragma_update(None, "query_only", "ON")?;
        Ok(conn)
    };
    match open() {
        Ok(conn) => Some(Mutex::new(conn)),
        Err(e) => {
            tracing::warn!(error = %e, "a read connection was not opened; reads share the writer");
            None
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

/// The store holds the index of the owner's sessions (no text of them), the grants
/// and the gate's records: owner-only, like the home it lives in. SQLite's `-wal` and `-shm`
/// files follow the main file's mode.
fn restrict_to_owner(path: &Path) {
    if path.as_os_str() != ":memory:" {
        let _ = runread_platform::file::restrict_to_owner(path);
    }
}

/// Applies pending migrations, one transaction each. The schema version is read inside the
/// write transaction, so that processes opening a new store at once (`serve`, `run`, `watch`)
/// apply each migration exactly once.
fn migrate(conn: &mut Connection) -> Result<()> {
    let mut purged = false;
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
            drop(tx);
            if purged {
                rewrite_without_free_space(conn);
            }
            return Ok(());
        };
        tx.execute_batch(sql)?;
        purged |= applied + 1 == PREVIEW_PURGE_MIGRATION;
        if applied + 1 == RUN_STARTS_MIGRATION {
            backfill_run_starts(&tx)?;
        }
        tx.pragma_update(None, "user_version", (applied + 1) as i64)?;
        tx.commit()?;
    }
}

/// Rewrites the file whole (`VACUUM`) once the previews an older index kept are dropped: SQLite
/// leaves a rewritten row's old bytes in the page's free space (`secure_delete` does not reach all
/// of it: pages defragmented on update keep theirs), and the point of the purge is that no prompt
/// text is left in the file. Once per store; a failure (another process holding it) leaves the
/// rows purged and only the free space to a later `VACUUM`, so it is logged, not fatal.
fn rewrite_without_free_space(conn: &Connection) {
    if let Err(e) = conn.execute_batch("VACUUM") {
        tracing::warn!(error = %e, "store: the file was not rewritten after dropping old previews");
    }
}

/// Gives every run indexed before migration 7 its start time, from its own record.
fn backfill_run_starts(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let starts = all(
        &mut tx.prepare(vocab::RUNS_TO_BACKFILL)?,
        &[],
        vocab::run_start,
    )?;
    let mut update = tx.prepare(vocab::SET_RUN_START)?;
    for start in starts.into_iter().flatten() {
        update.execute(params_from_iter(start))?;
    }
    Ok(())
}

fn get_meta(conn: &Connection, key: &str) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?)
}

vocab::cols_by!(rusqlite::Row<'_>, get);

impl ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Value::Text(s) => s.as_ref().to_sql(),
            Value::OptText(s) => s.to_sql(),
            Value::Int(v) => v.to_sql(),
            Value::OptInt(v) => v.to_sql(),
            Value::Flag(b) => b.to_sql(),
            Value::Bytes(b) => b.to_sql(),
        }
    }
}

/// Every row `stmt` returns for `params`, each through `row`.
fn all<T>(stmt: &mut Statement<'_>, params: &Args<'_>, row: impl MapRow<T>) -> Result<Vec<T>> {
    let mut rows = stmt.query(params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(row(r)?);
    }
    Ok(out)
}

/// The first row `stmt` returns for `params`, through `row`.
fn first<T>(stmt: &mut Statement<'_>, params: &Args<'_>, row: impl MapRow<T>) -> Result<Option<T>> {
    let mut rows = stmt.query(params_from_iter(params))?;
    rows.next()?.map(|r| row(r)).transpose()
}

/// How [`vocab::same_in_every_store!`] runs its statements here: reads on a read connection,
/// writes on the writer.
impl SqliteStore {
    /// The rows of sessions whose path (`path_of`) starts with `prefix`, at most `limit + 1`:
    /// `from` queries the path index from a path on, `range` between two paths.
    fn with_path_prefix<T>(
        &self,
        prefix: &str,
        limit: u32,
        [from, range]: [&str; 2],
        row: impl MapRow<T>,
        path_of: fn(&T) -> &str,
    ) -> Result<Vec<T>> {
        let take = i64::from(limit) + 1;
        // A range of the path index: from the prefix up to the first string past every string
        // that starts with it (UTF-8 byte order is code point order, SQLite's BINARY collation).
        let rows = match crate::prefix_upper_bound(prefix) {
            Some(end) => self.read_all(range, &values![prefix, end, take], row)?,
            None => self.read_all(from, &values![prefix, take], row)?,
        };
        Ok(rows
            .into_iter()
            .filter(|r| path_of(r).starts_with(prefix))
            .collect())
    }

    fn read_all<T>(&self, sql: &str, params: &Args<'_>, row: impl MapRow<T>) -> Result<Vec<T>> {
        all(&mut *self.reader()?.prepare_cached(sql)?, params, row)
    }

    fn read_opt<T>(&self, sql: &str, params: &Args<'_>, row: impl MapRow<T>) -> Result<Option<T>> {
        first(&mut *self.reader()?.prepare_cached(sql)?, params, row)
    }

    fn write(&self, sql: &str, params: &Args<'_>) -> Result<usize> {
        Ok(self
            .conn()?
            .prepare_cached(sql)?
            .execute(params_from_iter(params))?)
    }

    /// Start records at or after `since_ms`, oldest first ([`vocab::AUDIT_OLDEST_FIRST`]),
    /// with their receipts.
    fn audit_in(&self, since_ms: i64, limit: u32) -> Result<AuditRows> {
        let conn = self.reader()?;
        let metas = all(
            &mut *conn.prepare_cached(vocab::AUDIT_OLDEST_FIRST)?,
            &values![since_ms, i64::from(limit)],
            vocab::start_meta,
        )?;
        with_receipts(&conn, metas)
    }
}

impl SqliteStore {
    /// [`Store::audit_range`], in one read transaction.
    fn audit_range_in(&self, after_ms: i64, upto_ms: i64, limit: u32) -> Result<AuditRows> {
        let conn = self.reader()?;
        let tx = conn.unchecked_transaction()?;
        let metas = all(
            &mut *tx.prepare_cached(vocab::AUDIT_RANGE)?,
            &values![after_ms, upto_ms, i64::from(limit)],
            vocab::start_meta,
        )?;
        let upto = metas.last().map_or(after_ms, |m| m.created_at_ms);
        let receipts = all(
            &mut *tx.prepare_cached(vocab::AUDIT_RANGE_RECEIPTS)?,
            &values![after_ms, upto],
            vocab::receipt,
        )?;
        tx.commit()?;
        Ok(vocab::with_range_receipts(metas, receipts))
    }

    /// [`Store::prune_audit`]: the checkpoint and the deletions in one transaction of the
    /// writer, durable before it returns.
    fn prune_audit_on(&self, checkpoint: &crate::AuditCheckpoint) -> Result<Option<u64>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let appended = tx
            .prepare_cached(vocab::INSERT_AUDIT_CHECKPOINT)?
            .execute(params_from_iter(vocab::audit_checkpoint_values(checkpoint)))?;
        if appended != 1 {
            return Ok(None);
        }
        let upto = values![checkpoint.upto_ms];
        tx.prepare_cached(vocab::PRUNE_RECEIPTS)?
            .execute(params_from_iter(&upto))?;
        let deleted = tx
            .prepare_cached(vocab::PRUNE_STARTS)?
            .execute(params_from_iter(&upto))?;
        tx.commit()?;
        drop(conn);
        self.scrub();
        Ok(Some(deleted as u64))
    }
}

/// Each start record with its receipts.
fn with_receipts(conn: &Connection, metas: Vec<StartMeta>) -> Result<AuditRows> {
    let mut receipts = conn.prepare_cached(vocab::RECEIPTS_OF_START)?;
    metas
        .into_iter()
        .map(|m| {
            let r = all(&mut receipts, &values![&m.start_id], vocab::receipt)?;
            Ok((m, r))
        })
        .collect()
}

/// A start record's run id: the expression migration 9's index `start_records_by_run` is built
/// on, written exactly so (else SQLite does not use it).
const RUN_ID_OF_START: &str = "json_extract(s.target_json, '$.runId')";

/// Sessions whose path is `prefix` or after it, in path order (the path index); and the same
/// before `end` too.
const SESSIONS_FROM_PATH: &str =
    vocab::select_sessions!(" WHERE path >= ?1 ORDER BY path LIMIT ?2");
const SESSIONS_IN_PATH_RANGE: &str =
    vocab::select_sessions!(" WHERE path >= ?1 AND path < ?2 ORDER BY path LIMIT ?3");
/// The same two for stamps.
const STAMPS_FROM_PATH: &str =
    vocab::select_session_stamps!(" WHERE path >= ?1 ORDER BY path LIMIT ?2");
const STAMPS_IN_PATH_RANGE: &str =
    vocab::select_session_stamps!(" WHERE path >= ?1 AND path < ?2 ORDER BY path LIMIT ?3");
const SESSION_BY_PATH: &str = vocab::select_sessions!(" WHERE path = ?1");
const INSERT_SESSION: &str = concat!(
    "INSERT INTO sessions(",
    vocab::session_cols!(),
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, \
     ?20, ?21, ?22, ?23) ",
    vocab::session_upsert!()
);
const PUT_SNAPSHOT: &str = vocab::put_snapshot!("BLOB");
const PUT_KEPT: &str = vocab::put_kept!("BLOB");
const WORKSPACES: &str = vocab::select_workspaces!(" ORDER BY created_at, id");
const WORKSPACE_BY_PATH: &str = vocab::select_workspaces!(" WHERE path = ?1");

impl Identity for SqliteStore {
    vocab::identity_in_every_store!();
}

impl Index for SqliteStore {
    vocab::index_in_every_store!();

    fn release_memory(&self) {
        // A connection busy now is skipped: it is in use, and its cache with it.
        let writer = self.conn.try_lock().ok();
        let readers = self
            .readers
            .iter()
            .filter_map(|slot| slot.get()?.as_ref()?.try_lock().ok());
        for conn in writer.into_iter().chain(readers) {
            if let Err(e) = conn.execute_batch("PRAGMA shrink_memory") {
                tracing::debug!(error = %e, "a connection kept its page cache");
            }
        }
    }

    fn add_workspace(&self, canonical_path: &str, name: &str, now_ms: i64) -> Result<Workspace> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = first(
            &mut *tx.prepare_cached(WORKSPACE_BY_PATH)?,
            &values![canonical_path],
            vocab::workspace,
        )?;
        let ws = match existing {
            Some(ws) => {
                let (ws, changed) = vocab::re_registered(ws, name);
                if changed {
                    tx.prepare_cached("UPDATE workspaces SET revision = ?1, name = ?2, enabled = 1, updated_at = ?3 WHERE id = ?4")?.execute(params![i64_of(ws.revision), ws.name, now_ms, ws.id],
                    )?;
                }
                ws
            }
            None => {
                let ws = vocab::new_workspace(canonical_path, name)?;
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
        self.read_all(WORKSPACES, &[], vocab::workspace)
    }

    fn remove_workspace(&self, id: &str, now_ms: i64) -> Result<Option<Workspace>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = first(
            &mut *tx.prepare_cached(vocab::WORKSPACE_BY_ID)?,
            &values![id],
            vocab::workspace,
        )?;
        let Some(ws) = existing.filter(|w| w.enabled).map(vocab::disabled) else {
            return Ok(None);
        };
        tx.prepare_cached(
            "UPDATE workspaces SET revision = ?1, enabled = 0, updated_at = ?2 WHERE id = ?3",
        )?
        .execute(params![i64_of(ws.revision), now_ms, ws.id])?;
        tx.commit()?;
        Ok(Some(ws))
    }

    fn session_by_path(&self, path: &str) -> Result<Option<SessionRecord>> {
        self.read_opt(SESSION_BY_PATH, &values![path], vocab::session)
    }

    fn sessions_with_path_prefix(&self, prefix: &str, limit: u32) -> Result<Vec<SessionRecord>> {
        self.with_path_prefix(
            prefix,
            limit,
            [SESSIONS_FROM_PATH, SESSIONS_IN_PATH_RANGE],
            vocab::session,
            |s| &s.path,
        )
    }

    fn session_stamps_with_path_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<SessionStamp>> {
        self.with_path_prefix(
            prefix,
            limit,
            [STAMPS_FROM_PATH, STAMPS_IN_PATH_RANGE],
            vocab::session_stamp,
            |s| &s.path,
        )
    }

    /// The index is made from the session files and made again from them: an ingest commit does
    /// not wait for the disk (`synchronous=NORMAL` for its transaction). A power cut may lose the
    /// last passes' rows, which the next pass reads again; the WAL is written in order, so any
    /// later durable commit (a grant, a start record) flushes them with it, and nothing durable
    /// can name a row that is gone. The writer is at FULL again before it is let go.
    fn commit_ingest(&self, c: &IngestCommit) -> Result<()> {
        let mut conn = self.conn()?;
        self.writer_relaxed.store(true, Ordering::Release);
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let committed = commit_ingest_on(&mut conn, c);
        if conn.pragma_update(None, "synchronous", "FULL").is_ok() {
            self.writer_relaxed.store(false, Ordering::Release);
        }
        drop(conn);
        if committed.is_ok() {
            self.announce(&c.session.session_id);
        }
        committed
    }

    fn runs_page(&self, filter: &RunFilter, limit: u32, offset: u64) -> Result<Vec<RunRecord>> {
        self.read_all(
            vocab::select_runs!(
                " WHERE (?1 IS NULL OR s.agent = ?1) AND (?2 IS NULL OR s.workspace_id = ?2) \
                 AND (?3 IS NULL OR r.status = ?3) AND w.enabled \
                 ORDER BY r.started_ms DESC, r.session_id, r.ord DESC LIMIT ?4 OFFSET ?5"
            ),
            &vocab::page_values(filter, limit, offset),
            |r| vocab::run_record(r, &self.instance),
        )
    }

    fn runs_with_id_prefix(
        &self,
        run_prefix: &str,
        session_prefix: Option<&str>,
        limit: u32,
    ) -> Result<Vec<RunRecord>> {
        // The GLOB (wildcards escaped) is what SQLite answers from `runs_by_run_id`: the exact
        // comparison alone scans every run, once per row of a listing.
        let glob = vocab::glob_prefix(run_prefix);
        self.read_all(
            vocab::runs_with_id_prefix!("?1", "?2", "?3", "r.run_id GLOB ?4"),
            &vocab::values![
                run_prefix,
                session_prefix,
                i64::from(limit) + 1,
                glob.as_str()
            ],
            |r| vocab::run_record(r, &self.instance),
        )
    }

    fn runs_count(&self, filter: &RunFilter) -> Result<u64> {
        let n = self.read_opt(
            "SELECT count(*) FROM runs r JOIN sessions s ON s.session_id = r.session_id AND s.generation = r.generation \
             JOIN workspaces w ON w.id = s.workspace_id \
             WHERE (?1 IS NULL OR s.agent = ?1) AND (?2 IS NULL OR s.workspace_id = ?2) \
             AND (?3 IS NULL OR r.status = ?3) AND w.enabled",
            &vocab::filter_values(filter),
            |r| r.int(0),
        )?;
        vocab::u64_of(n.unwrap_or(0))
    }
}

impl Access for SqliteStore {
    vocab::access_in_every_store!();

    fn reader_of_key_at_once(
        &self,
        key_hash: &str,
        now_ms: i64,
    ) -> Option<Result<Option<crate::ReaderWithGrants>>> {
        let conn = self.free_reader()?;
        let rows = (|| {
            all(
                &mut *conn.prepare_cached(vocab::READER_OF_KEY)?,
                &values![now_ms, key_hash],
                vocab::reader_and_grant,
            )
        })();
        Some(rows.map(vocab::reader_with_grants))
    }
}

impl Secrets for SqliteStore {
    vocab::secrets_in_every_store!();

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
}

impl Snapshots for SqliteStore {
    vocab::snapshots_in_every_store!();
}

impl Keeps for SqliteStore {
    vocab::keeps_in_every_store!();
}

impl GateLog for SqliteStore {
    vocab::gate_log_in_every_store!();

    fn audit_range(&self, after_ms: i64, upto_ms: i64, limit: u32) -> Result<AuditRows> {
        self.audit_range_in(after_ms, upto_ms, limit)
    }

    fn prune_audit(&self, checkpoint: &crate::AuditCheckpoint) -> Result<Option<u64>> {
        self.prune_audit_on(checkpoint)
    }

    fn audit_page(&self, filter: &AuditFilter, limit: u32) -> Result<AuditPage> {
        let conn = self.reader()?;
        // One snapshot for the page, its count and its receipts.
        let snapshot = conn.unchecked_transaction()?;
        let (page, args) = vocab::audit_page_sql(filter, limit, RUN_ID_OF_START);
        let metas = all(
            &mut *snapshot.prepare_cached(&page)?,
            &args,
            vocab::start_meta,
        )?;
        let more = match vocab::audit_more_sql(filter, limit, &metas, RUN_ID_OF_START) {
            None => 0,
            Some((count, args)) => {
                let n = first(&mut *snapshot.prepare_cached(&count)?, &args, |r| r.int(0))?;
                vocab::u64_of(n.unwrap_or(0))?
            }
        };
        let rows = with_receipts(&snapshot, metas)?;
        Ok(AuditPage { rows, more })
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
}

impl Refusals for SqliteStore {
    vocab::refusals_in_every_store!();
}

impl Connectors for SqliteStore {
    vocab::connectors_in_every_store!();
}

impl Waits for SqliteStore {
    vocab::waits_in_every_store!();
}

impl AccessRequests for SqliteStore {
    vocab::access_requests_in_every_store!();
}

impl Settings for SqliteStore {
    vocab::settings_in_every_store!();
}

/// [`SqliteStore::commit_ingest`]'s transaction.
fn commit_ingest_on(conn: &mut Connection, c: &IngestCommit) -> Result<()> {
    let s = &c.session;
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
    tx.prepare_cached(INSERT_SESSION)?
        .execute(params_from_iter(vocab::session_values(s)?))?;
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
                vocab::ord_of(ord),
                r.status.as_str(),
                serde_json::to_string(r)?,
                crate::run_started_ms(r),
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StartMeta;

    /// The writer's `PRAGMA synchronous`: 2 is FULL, 1 NORMAL.
    fn writer_synchronous(s: &SqliteStore) -> i64 {
        s.conn
            .lock()
            .unwrap()
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap()
    }

    fn open_readers(s: &SqliteStore) -> usize {
        s.readers.iter().filter(|slot| slot.get().is_some()).count()
    }

    #[test]
    fn the_read_pool_opens_a_connection_only_when_the_open_ones_are_busy_and_never_more_than_its_bound()
     {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("runread.db")).unwrap();
        assert_eq!(open_readers(&s), 0, "no read yet: no read connection");
        drop(s.reader().unwrap());
        drop(s.reader().unwrap());
        assert_eq!(open_readers(&s), 1, "reads one after another share one");
        let held: Vec<_> = (0..READ_CONNECTIONS).map(|_| s.reader().unwrap()).collect();
        assert_eq!(
            open_readers(&s),
            READ_CONNECTIONS,
            "N reads at once: N connections"
        );
        assert!(s.free_reader().is_none());
        std::thread::scope(|scope| {
            // Read N+1 waits for one of the N instead of opening another.
            let waiting = scope.spawn(|| {
                let conn = s.reader().unwrap();
                conn.pragma_query_value(None, "query_only", |r| r.get::<_, i64>(0))
                    .unwrap()
            });
            drop(held);
            assert_eq!(
                waiting.join().unwrap(),
                1,
                "a pooled reader, not the writer"
            );
        });
        assert_eq!(open_readers(&s), READ_CONNECTIONS);
    }

    #[test]
    fn an_ingest_commit_gives_the_writer_back_at_full_sync_whether_it_commits_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("runread.db")).unwrap();
        let ws = s.add_workspace("/w", "w", 1).unwrap();
        assert_eq!(writer_synchronous(&s), 2);
        s.commit_ingest(&crate::testing::ingest_commit(&ws.id))
            .unwrap();
        assert!(s.session("s1").unwrap().is_some());
        assert_eq!(writer_synchronous(&s), 2);
        // Refused inside its transaction (no such workspace): rolled back, and FULL again.
        assert!(
            s.commit_ingest(&crate::testing::ingest_commit("no-such-workspace"))
                .is_err()
        );
        assert_eq!(writer_synchronous(&s), 2);
        assert!(!s.writer_relaxed.load(Ordering::Acquire));
    }

    #[test]
    fn a_writer_left_at_normal_sync_is_set_back_to_full_before_any_other_write() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("runread.db")).unwrap();
        // As if an ingest commit could not set it back.
        s.conn
            .lock()
            .unwrap()
            .pragma_update(None, "synchronous", "NORMAL")
            .unwrap();
        s.writer_relaxed.store(true, Ordering::Release);
        assert_eq!(writer_synchronous(&s), 1);
        s.add_workspace("/w", "w", 1).unwrap();
        assert_eq!(writer_synchronous(&s), 2);
        assert!(!s.writer_relaxed.load(Ordering::Acquire));
    }

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

    /// Commits `n` entries of about a kilobyte each to session `s1` after `line`.
    fn commit_bulky(s: &SqliteStore, ws: &str, line: &mut u64, n: u64) {
        let mut commit = crate::testing::ingest_commit(ws);
        commit.new_generation = *line == 0;
        commit.new_entries = (*line + 1..=*line + n)
            .map(|l| runread_sessions::EntrySummary::at(l, l * 1_000, 900, "x".repeat(900)))
            .collect();
        *line += n;
        s.commit_ingest(&commit).unwrap();
    }

    #[test]
    fn at_the_bound_the_writer_waits_for_a_checkpoint_in_flight_instead_of_skipping_its_own() {
        use crate::checkpoint::{CHECKPOINT_AFTER_PAGES, CHECKPOINT_INLINE_PAGES};
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(SqliteStore::open(&dir.path().join("s.db")).unwrap());
        let ws = store.add_workspace("/w", "w", 1).unwrap().id;
        let checkpointer = store.checkpointer.clone().unwrap();
        // The thread is mid-checkpoint for as long as this is held.
        let in_flight = checkpointer.hold_checkpoint();
        let (done, committed) = std::sync::mpsc::channel();
        let s = store.clone();
        let committer = std::thread::spawn(move || {
            let mut line = 0;
            while s.checkpoint_stats().last_log_pages < i64::from(CHECKPOINT_INLINE_PAGES) {
                commit_bulky(&s, &ws, &mut line, 200);
                let _ = done.send(());
            }
            (s, ws, line)
        });
        // Every commit short of the bound returns while the checkpoint is in flight ...
        while store.checkpoint_stats().largest_log_pages < i64::from(CHECKPOINT_INLINE_PAGES) {
            let _ = committed.recv_timeout(std::time::Duration::from_millis(10));
        }
        // (each of them said so before the next began, so before the bound was seen)
        while committed.try_recv().is_ok() {}
        // ... the one that reached it waits for that checkpoint instead of being turned away.
        assert_eq!(
            committed.recv_timeout(std::time::Duration::from_millis(200)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout),
            "the commit at the bound returned while a checkpoint was in flight"
        );
        drop(in_flight);
        let (s, ws, mut line) = committer.join().unwrap();
        let stats = s.checkpoint_stats();
        assert_eq!(stats.inline, 1, "{stats:?}");
        // It copied the whole log back, so the next commit starts the log again.
        commit_bulky(&s, &ws, &mut line, 200);
        let stats = s.checkpoint_stats();
        assert!(
            stats.last_log_pages < i64::from(CHECKPOINT_AFTER_PAGES),
            "{stats:?}"
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
                reader_id: Some("r".into()),
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
            evidence: None,
            state: None,
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

    /// Every filter combination of the audit (page and count, with and without a cursor), as
    /// SQLite plans it: placeholders `$1`… as PostgreSQL numbers them, one per value, and every
    /// statement reading an index in the page's order (no table scan, no sort).
    #[test]
    fn every_audit_statement_numbers_its_placeholders_and_reads_an_index() {
        use crate::{AuditCursor, AuditOutcome};
        let store = SqliteStore::open(Path::new(":memory:")).unwrap();
        let conn = store.conn().unwrap();
        let shown = [StartMeta {
            created_at_ms: 5,
            start_id: "st-5".into(),
            ..start("st-5").meta
        }];
        for bits in 0..128u32 {
            let has = |b: u32| bits & (1 << b) != 0;
            let filter = AuditFilter {
                since_ms: has(0).then_some(1),
                grant_id: has(1).then(|| "g".into()),
                run_id: has(2).then(|| "r".into()),
                outcome: has(3).then_some(AuditOutcome::Refused),
                before: has(4).then(|| AuditCursor::after(&shown[0])),
                reader_id: has(5).then(|| "r".into()),
                tool: has(6).then(|| "get_run".into()),
            };
            let page = vocab::audit_page_sql(&filter, 1, RUN_ID_OF_START);
            let more = vocab::audit_more_sql(&filter, 1, &shown, RUN_ID_OF_START).unwrap();
            for (sql, values) in [page, more] {
                let stmt = conn.prepare(&sql).unwrap();
                assert_eq!(stmt.parameter_count(), values.len(), "{sql}");
                for i in 1..=stmt.parameter_count() {
                    assert_eq!(stmt.parameter_name(i), Some(format!("${i}").as_str()));
                }
                let plan = query_plan(&conn, &sql, &values);
                let reads = &plan[0];
                let index = if has(1) || has(2) || has(5) {
                    "start_records_by_"
                } else {
                    "start_records_by_time_and_id"
                };
                assert!(
                    reads.starts_with("SEARCH s USING") || reads.starts_with("SCAN s USING"),
                    "{sql}: {plan:?}"
                );
                assert!(reads.contains(index), "{sql}: {plan:?}");
                assert!(
                    !plan.iter().any(|p| p.contains("TEMP B-TREE")),
                    "{sql}: {plan:?}"
                );
            }
        }
    }

    /// SQLite's plan for `sql` with `values`: one line per step.
    fn query_plan(conn: &Connection, sql: &str, values: &[Value<'_>]) -> Vec<String> {
        let mut plan = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        plan.query_map(params_from_iter(values), |r| r.get(3))
            .unwrap()
            .map(|d| d.unwrap())
            .collect()
    }

    /// The retention's statements read the time index, never every start record, and sort
    /// nothing whole (a record's own few receipts are put in order): their cost grows with the
    /// range they read, not with the log.
    #[test]
    fn every_retention_statement_reads_the_time_index() {
        let store = SqliteStore::open(Path::new(":memory:")).unwrap();
        let conn = store.conn().unwrap();
        for (sql, values) in [
            (vocab::AUDIT_RANGE, Vec::from(values![1i64, 2i64, 3i64])),
            (vocab::AUDIT_RANGE_RECEIPTS, Vec::from(values![1i64, 2i64])),
            (vocab::AUDIT_NTH_TIME, Vec::from(values![1i64, 2i64, 3i64])),
            (vocab::AUDIT_COUNT_AFTER, Vec::from(values![1i64])),
            (vocab::PRUNE_RECEIPTS, Vec::from(values![1i64])),
            (vocab::PRUNE_STARTS, Vec::from(values![1i64])),
        ] {
            let plan = query_plan(&conn, sql, &values);
            assert!(
                plan.iter()
                    .any(|p| p.contains("start_records_by_time_and_id")),
                "{sql}: {plan:?}"
            );
            assert!(
                !plan
                    .iter()
                    .any(|p| p.contains("USE TEMP B-TREE FOR ORDER BY")
                        || p.contains("USE TEMP B-TREE FOR DISTINCT")
                        || p == "SCAN start_records"),
                "{sql}: {plan:?}"
            );
        }
    }

    #[test]
    fn sqlite_numbers_every_shared_placeholder_as_postgres_does() {
        let store = SqliteStore::open(Path::new(":memory:")).unwrap();
        let conn = store.conn().unwrap();
        for sql in vocab::SHARED_STATEMENTS {
            let stmt = conn.prepare(sql).unwrap();
            assert!(stmt.parameter_count() > 0 || !sql.contains('$'), "{sql}");
            for i in 1..=stmt.parameter_count() {
                assert_eq!(
                    stmt.parameter_name(i),
                    Some(format!("${i}").as_str()),
                    "{sql}"
                );
            }
        }
    }

    #[test]
    fn a_negative_stored_revision_reads_as_corrupt() {
        let store = SqliteStore::open(Path::new(":memory:")).unwrap();
        let ws = store.add_workspace("/w", "w", 1).unwrap();
        store
            .conn()
            .unwrap()
            .execute("UPDATE workspaces SET revision = -1", [])
            .unwrap();
        assert!(matches!(
            store.workspace(&ws.id),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn an_in_memory_store_reads_through_its_one_connection() {
        let store = SqliteStore::open(Path::new(":memory:")).unwrap();
        store.add_workspace("/w", "w", 1).unwrap();
        assert_eq!(store.workspaces().unwrap().len(), 1);
    }
}
