//! The shared store: one PostgreSQL database behind several runread processes on several hosts
//! (gateways serving MCP, agent hosts ingesting their sessions). Same behavior as
//! [`crate::sqlite::SqliteStore`]; what differs is how it stays correct with concurrent writers:
//!
//! - **Migrations** are versioned and forward-only (`schema_migrations`), each in its own
//!   transaction under a transaction-scoped advisory lock, so two processes starting at once on
//!   a fresh database apply each migration exactly once.
//! - **Start records and receipts are append-only** twice over: triggers refuse UPDATE, DELETE
//!   and TRUNCATE for everyone (the owner included), and the restricted role [`APP_ROLE`] has only
//!   SELECT and INSERT on them (see `docs/deployment.md`).
//! - **Multi-statement writes** (`begin_call`, `add_workspace`, `commit_ingest`) run SERIALIZABLE
//!   and are retried a bounded number of times on serialization failures and deadlocks.
//! - **Connections** come from a small bounded pool with a checkout timeout; every connection has
//!   a connect timeout, TCP keepalives, a TCP user timeout and server-side statement/lock/idle
//!   timeouts, so no call waits unboundedly on a dead or slow database. A failure is
//!   [`StoreError::Unavailable`] (callers map it to the fixed code `unavailable`): the store never
//!   answers from a cache, so a database it cannot reach means refusal, never stale grants.
//! - **Sessions are namespaced by host**: each process has a host name (the machine's, or
//!   `RUNREAD_HOST`); workspaces and session paths are per host, because `/home/a/proj` on one
//!   machine is not the same directory as on another. Reads by id (`workspace`, `session`, runs,
//!   grants) see every host, so a gateway serves runs ingested anywhere.
//!
//! The client is the synchronous `postgres` crate: each connection drives its own small
//! current-thread runtime, which fits the synchronous [`Store`] trait and works from the
//! blocking threads (`spawn_blocking`) the async service calls it on. It must not be called from
//! inside an async task (nor can any other blocking store).

use std::borrow::Cow;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::changes::CHANNEL;
use crate::prelude::*;
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, IsolationLevel, NoTls, Row, Transaction};

mod listen;
pub mod tls;

use runread_core::cursor::CursorKey;

use crate::vocab::{self, Args, AuditRows, MapRow, RUN_STARTS_MIGRATION, Value, i64_of, values};
use crate::{
    AuditFilter, AuditPage, IngestCommit, Receipt, Result, RunFilter, RunRecord, SessionRecord,
    SessionStamp, StartMeta, StartOutcome, StartRecord, StoreError, Workspace,
};

/// Most connections one store holds open. Store calls are short and the service bounds calls
/// in flight, so a handful suffices; N gateways on one server use N × this many backends.
pub const POOL_MAX_CONNECTIONS: usize = 8;
/// How long a call waits for a free pooled connection before it fails closed.
pub const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long opening one connection may take (unless the URL sets `connect_timeout`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Server-side bound on one statement.
pub const STATEMENT_TIMEOUT_MS: u64 = 5_000;
/// Server-side bound on waiting for a row or table lock; below [`STATEMENT_TIMEOUT_MS`], so a
/// lock wait is reported as one (SQLSTATE 55P03) rather than as a slow statement.
pub const LOCK_TIMEOUT_MS: u64 = 3_000;
/// The server ends a session that sits inside a transaction this long (a stuck client).
pub const IDLE_IN_TRANSACTION_TIMEOUT_MS: u64 = 30_000;
/// Bound on one migration step (and on waiting for another process's migration).
pub const MIGRATION_TIMEOUT_MS: u64 = 300_000;
/// Attempts of one transaction that fails with a serialization failure or a deadlock.
pub const TX_ATTEMPTS: u32 = 8;
/// First backoff between attempts; doubles each attempt up to [`RETRY_BACKOFF_MAX`].
pub const RETRY_BACKOFF: Duration = Duration::from_millis(5);
pub const RETRY_BACKOFF_MAX: Duration = Duration::from_millis(250);
/// An idle connection is probed after this long, so a vanished server is noticed.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(15);
/// Sent data unacknowledged this long kills the connection: bounds a call on a server that
/// disappeared without closing (statement_timeout cannot, since the server is gone).
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(15);
/// Rows per statement when ingest writes entries and runs.
pub const INGEST_BATCH_ROWS: usize = 1_000;
/// Longest host name a store accepts.
pub const HOST_MAX_BYTES: usize = 255;
/// The restricted role runread's processes should connect as (through LOGIN roles that are its
/// members): no DDL, and only SELECT and INSERT on start records, receipts and the store identity.
pub const APP_ROLE: &str = "runread_app";

/// Key of the advisory lock that serializes migrations across processes ("runread" + 1).
const MIGRATION_LOCK: i64 = 0x7275_6e72_6561_6401;

/// Migrations, applied in order, each once, numbered from 1 in `schema_migrations`.
/// Forward-only: a released migration is never edited, only followed by a new one. The numbers
/// match the SQLite store's, so migration N means the same change in both; each is a file in
/// `migrations/postgres/`.
pub(crate) const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/postgres/0001.sql"),
    include_str!("../migrations/postgres/0002.sql"),
    include_str!("../migrations/postgres/0003.sql"),
    include_str!("../migrations/postgres/0004.sql"),
    include_str!("../migrations/postgres/0005.sql"),
    // 6: as SQLite's migration 6 (the index, not a copy; ctime; the line bound flag).
    include_str!("../migrations/postgres/0006.sql"),
    // 7: as SQLite's migration 7 (when each run started, for paging; earlier rows filled in by
    // `backfill_run_starts`).
    include_str!("../migrations/postgres/0007.sql"),
    // 8: as SQLite's migration 8 (no prompt previews in the store). Old row versions stay in the
    // table files until PostgreSQL reuses their space (`VACUUM FULL runs, entries` drops them now).
    include_str!("../migrations/postgres/0008.sql"),
    // 9: as SQLite's migration 9 (the audit's indexes, for `audit_page`).
    include_str!("../migrations/postgres/0009.sql"),
    // 10: as SQLite's migration 10 (readers: each grant of before one reader holding it).
    include_str!("../migrations/postgres/0010.sql"),
    include_str!("../migrations/postgres/0011.sql"),
    include_str!("../migrations/postgres/0012.sql"),
    // 13: as SQLite's migration 13 (snapshots of shared runs).
    include_str!("../migrations/postgres/0013.sql"),
    // 14: as SQLite's migration 14 (connectors, round two).
    include_str!("../migrations/postgres/0014.sql"),
    // 15: as SQLite's migration 15 (the audit's retention; settings).
    include_str!("../migrations/postgres/0015.sql"),
    // 16: as SQLite's migration 16 (calls refused before the gate; calls with no credential, counted).
    include_str!("../migrations/postgres/0016.sql"),
    include_str!("../migrations/postgres/0017.sql"),
    // 18: as SQLite's migration 18 (a receipt's evidence and settled state).
    include_str!("../migrations/postgres/0018.sql"),
    // 19: as SQLite's migration 19 (access requests).
    include_str!("../migrations/postgres/0019.sql"),
    // 20: as SQLite's migration 20 (kept runs and keep rules).
    include_str!("../migrations/postgres/0020.sql"),
];

/// Tables [`APP_ROLE`] may read and change. A table added by a migration must be listed here or
/// in [`APP_APPEND_ONLY_TABLES`] (a test checks that every table is).
pub const APP_READ_WRITE_TABLES: &[&str] = &[
    "workspaces",
    "sessions",
    "entries",
    "runs",
    "grants",
    "readers",
    "oauth_clients",
    "oauth_requests",
    "oauth_tokens",
    "secrets",
    "artifacts",
    "supervised_runs",
    "waits",
    "snapshots",
    "settings",
    "refusals",
    "unadmitted_calls",
    "access_requests",
    "kept_runs",
    "keep_rules",
];
/// Tables [`APP_ROLE`] may only read and append to. `meta` holds the instance id and cursor key:
/// made once, never changed by the application.
pub const APP_APPEND_ONLY_TABLES: &[&str] = &["meta", "snapshot_log", "audit_checkpoints"];
/// Tables [`APP_ROLE`] may read, append to and delete from, but not update: the gate's log, whose
/// triggers refuse a delete unless a prune checkpoint covers the row (the audit's retention).
pub const APP_PRUNED_TABLES: &[&str] = &["start_records", "receipts"];
/// Tables [`APP_ROLE`] may only read.
pub const APP_READ_ONLY_TABLES: &[&str] = &["schema_migrations"];

/// A failure inside a transaction: a database error (which may be retried) or a store error.
enum Fail {
    Pg(postgres::Error),
    Store(StoreError),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

impl From<serde_json::Error> for Fail {
    fn from(e: serde_json::Error) -> Self {
        Fail::Store(e.into())
    }
}

impl From<Fail> for StoreError {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Pg(e) => e.into(),
            Fail::Store(e) => e,
        }
    }
}

type Tx<T> = std::result::Result<T, Fail>;

/// Where one attempt of a transaction failed.
enum Step {
    /// At BEGIN: nothing was done.
    Begin(postgres::Error),
    /// In the body or at COMMIT.
    Body(Fail),
}

/// One attempt: BEGIN with `mode`, the body, COMMIT (an uncommitted transaction rolls back when
/// dropped).
fn attempt_once<T>(
    client: &mut Client,
    mode: Mode,
    f: &mut impl FnMut(&mut Transaction<'_>) -> Tx<T>,
) -> std::result::Result<T, Step> {
    let mut txn = client
        .build_transaction()
        .isolation_level(mode.isolation())
        .read_only(mode.read_only())
        .start()
        .map_err(Step::Begin)?;
    let v = f(&mut txn).map_err(Step::Body)?;
    txn.commit().map_err(|e| Step::Body(Fail::Pg(e)))?;
    Ok(v)
}

/// A log-safe description of a database error: the SQLSTATE and the server's primary message
/// (never the statement, its parameters, the DETAIL line that can quote values, or the URL).
pub(crate) fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("postgres {}: {}", db.code().code(), db.message()),
        None if e.is_closed() => "postgres: connection closed".to_owned(),
        // The cause (an I/O error, a timeout) is where the useful part is; it never holds the URL.
        None => match std::error::Error::source(e) {
            Some(cause) => format!("postgres: {e}: {cause}"),
            None => format!("postgres: {e}"),
        },
    }
}

/// A serialization failure or a deadlock: the transaction did nothing and may run again.
fn is_retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    })
}

/// The connection is unusable: closed, an I/O or protocol error (no SQLSTATE), a connection
/// exception (class 08) or the server shutting the session down (57P01–57P03, e.g.
/// `pg_terminate_backend`).
fn is_broken(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        None => true,
        Some(c) => c.code().starts_with("08") || c.code().starts_with("57P"),
    }
}

/// Closes connections on a thread of their own: closing waits for the server's goodbye (bounded
/// by [`TCP_USER_TIMEOUT`] on a dead peer) and drives a runtime, which must neither delay the
/// caller nor happen inside an async task (it would panic there). If no thread can be made the
/// connections are leaked (the OS closes them at exit) rather than closed in place.
fn retire(clients: Vec<Client>) {
    if clients.is_empty() {
        return;
    }
    let clients: Vec<ManuallyDrop<Client>> = clients.into_iter().map(ManuallyDrop::new).collect();
    let _ = std::thread::Builder::new()
        .name("runread-pg-close".into())
        .spawn(move || {
            for c in clients {
                drop(ManuallyDrop::into_inner(c));
            }
        });
}

struct PoolState {
    idle: Vec<Client>,
    /// Connections open or being opened, idle ones included; at most [`POOL_MAX_CONNECTIONS`].
    open: usize,
}

/// A bounded pool: a mutex-guarded stack of idle connections and a condition variable for
/// callers waiting for one. Small on purpose (no background tasks): a connection is opened on
/// demand, and one that failed is closed instead of being returned.
struct Pool {
    config: postgres::Config,
    tls: tls::Tls,
    state: Mutex<PoolState>,
    freed: Condvar,
}

struct Conn<'p> {
    pool: &'p Pool,
    client: Option<Client>,
    /// Taken from the idle stack (it may have died while idle) rather than freshly opened.
    reused: bool,
    broken: bool,
}

impl Conn<'_> {
    fn client(&mut self) -> Result<&mut Client> {
        self.client
            .as_mut()
            .ok_or_else(|| StoreError::Unavailable("pooled connection missing".into()))
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        let mut st = self.pool.lock();
        if self.broken || client.is_closed() {
            st.open = st.open.saturating_sub(1);
            drop(st);
            retire(vec![client]);
        } else {
            st.idle.push(client);
            drop(st);
        }
        self.pool.freed.notify_one();
    }
}

impl Pool {
    /// The state holds only a stack and a counter that no panic can leave half-updated, so a
    /// poisoned lock is still consistent.
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn checkout(&self) -> Result<Conn<'_>> {
        let deadline = Instant::now() + CHECKOUT_TIMEOUT;
        let mut st = self.lock();
        loop {
            if let Some(client) = st.idle.pop() {
                if client.is_closed() {
                    st.open = st.open.saturating_sub(1);
                    retire(vec![client]);
                    continue;
                }
                return Ok(Conn {
                    pool: self,
                    client: Some(client),
                    reused: true,
                    broken: false,
                });
            }
            if st.open < POOL_MAX_CONNECTIONS {
                st.open += 1;
                drop(st);
                return match self.open_connection() {
                    Ok(client) => Ok(Conn {
                        pool: self,
                        client: Some(client),
                        reused: false,
                        broken: false,
                    }),
                    Err(e) => {
                        let mut st = self.lock();
                        st.open = st.open.saturating_sub(1);
                        drop(st);
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(StoreError::Unavailable(
                    "no pooled connection became free in time".into(),
                ));
            }
            st = self
                .freed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn open_connection(&self) -> Result<Client> {
        dial(&self.config, &self.tls)
    }

    /// A pool for the database at `url`, no connection opened yet: runread's connect timeout,
    /// TCP user timeout and application name where the URL sets none, and keepalives always.
    fn new(url: &str) -> Result<Pool> {
        let tls::Connector {
            mut config, tls, ..
        } = tls::connector(url)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        config.keepalives(true).keepalives_idle(KEEPALIVE_IDLE);
        if config.get_application_name().is_none() {
            config.application_name("runread");
        }
        Ok(Pool {
            config,
            tls,
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
        })
    }

    /// Applies pending migrations ([`migrate`]) on a connection of their own, closed afterwards
    /// rather than pooled: it carries the longer migration timeouts.
    fn apply_migrations(&self) -> Result<()> {
        let mut client = self.open_connection()?;
        let res = migrate(&mut client);
        retire(vec![client]);
        res.map_err(StoreError::from)
    }
}

/// A new connection with runread's session settings (the pool's, and the change listener's).
fn dial(config: &postgres::Config, tls: &tls::Tls) -> Result<Client> {
    let mut client = match tls {
        tls::Tls::Off => config.connect(NoTls)?,
        tls::Tls::On(connector) => config.connect(connector.clone())?,
    };
    let settings = format!(
        "SET statement_timeout = {STATEMENT_TIMEOUT_MS}; SET lock_timeout = {LOCK_TIMEOUT_MS}; \
         SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_TIMEOUT_MS}"
    );
    if let Err(e) = client.batch_execute(&settings) {
        retire(vec![client]);
        return Err(e.into());
    }
    Ok(client)
}

impl Drop for Pool {
    fn drop(&mut self) {
        let idle = std::mem::take(&mut self.lock().idle);
        retire(idle);
    }
}

/// How a transaction runs.
#[derive(Clone, Copy)]
enum Mode {
    /// One statement reading: it sees one snapshot of everything committed when it started.
    Read,
    /// Several statements reading one snapshot.
    Snapshot,
    /// One statement writing: atomic on its own; row locks order concurrent writers.
    Write,
    /// Read-then-write: SERIALIZABLE, retried on serialization failures.
    Serializable,
}

impl Mode {
    fn isolation(self) -> IsolationLevel {
        match self {
            Mode::Read | Mode::Write => IsolationLevel::ReadCommitted,
            Mode::Snapshot => IsolationLevel::RepeatableRead,
            Mode::Serializable => IsolationLevel::Serializable,
        }
    }

    fn read_only(self) -> bool {
        matches!(self, Mode::Read | Mode::Snapshot)
    }
}

fn backoff(attempt: u32) {
    let base = RETRY_BACKOFF
        .saturating_mul(1u32 << attempt.min(16))
        .min(RETRY_BACKOFF_MAX);
    // Jitter, so that writers that collided do not collide again in lockstep.
    let jitter = runread_core::random_bytes::<1>().map_or(0, |b| u32::from(b[0]));
    std::thread::sleep(base + base.mul_f64(f64::from(jitter) / 255.0));
}

/// A store's change feed: its own commits, and, from the first wait on (unless the store was
/// made deaf first), other processes' `NOTIFY`s through a listener on a connection of its own.
fn listening_feed(
    pool: &Pool,
    origin: &str,
    stop: &Arc<AtomicBool>,
    deaf: &Arc<AtomicBool>,
) -> crate::changes::ChangeFeed {
    let (config, tls) = (pool.config.clone(), pool.tls.clone());
    let (origin, stop, deaf) = (origin.to_owned(), stop.clone(), deaf.clone());
    crate::changes::ChangeFeed::new(Some(Box::new(move |feed| {
        if !deaf.load(Ordering::Acquire) {
            listen::spawn(move || dial(&config, &tls), origin, feed, stop);
        }
    })))
}

pub struct PostgresStore {
    pool: Pool,
    host: String,
    instance: String,
    cursor_key: CursorKey,
    /// This process's changes, and (once a wait subscribes) other processes' through `LISTEN`.
    feed: crate::changes::ChangeFeed,
    /// Names this store in the `NOTIFY` payloads it sends (random per process).
    origin: String,
    /// Set when the store is dropped: the listener, if any, stops.
    stop_listening: Arc<AtomicBool>,
    /// Set by [`PostgresStore::ignore_other_processes`]: no listener is started.
    deaf: Arc<AtomicBool>,
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        self.stop_listening.store(true, Ordering::Release);
    }
}

pub use crate::local_host;

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/db?…` or a
    /// `key=value` connection string) as this machine ([`local_host`]), applies pending
    /// migrations, and makes the instance id and cursor key on first use.
    pub fn connect(url: &str) -> Result<Self> {
        Self::connect_as(url, &local_host())
    }

    /// Like [`PostgresStore::connect`], naming the host explicitly.
    pub fn connect_as(url: &str, host: &str) -> Result<Self> {
        if host.is_empty() || host.len() > HOST_MAX_BYTES || host.chars().any(char::is_control) {
            return Err(StoreError::Unavailable("invalid host name".into()));
        }
        let pool = Pool::new(url)?;
        pool.apply_migrations()?;
        let origin = hex::encode(
            runread_core::random_bytes::<8>()
                .map_err(|e| StoreError::Unavailable(e.to_string()))?,
        );
        let stop_listening = Arc::new(AtomicBool::new(false));
        let deaf = Arc::new(AtomicBool::new(false));
        let feed = listening_feed(&pool, &origin, &stop_listening, &deaf);
        let mut store = PostgresStore {
            pool,
            host: host.to_owned(),
            instance: String::new(),
            cursor_key: CursorKey::from_bytes([0; 32]),
            feed,
            origin,
            stop_listening,
            deaf,
        };
        (store.instance, store.cursor_key) = store.identity()?;
        Ok(store)
    }

    /// The store's instance id and cursor key: made by the first process that starts on this
    /// database, read by every later one.
    fn identity(&self) -> Result<(String, CursorKey)> {
        let fresh_id = uuid::Uuid::new_v4().to_string();
        let fresh_key = runread_core::random_bytes::<32>()
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let (instance, key) = self.tx(Mode::Write, |t| {
            // ON CONFLICT DO NOTHING waits for a concurrent first start and keeps its values;
            // the SELECT (a new statement under READ COMMITTED) then sees them.
            t.execute(
                "INSERT INTO meta(key, value) VALUES ('instance', $1), ('cursor_key', $2) \
                 ON CONFLICT (key) DO NOTHING",
                &[&fresh_id.as_bytes(), &&fresh_key[..]],
            )?;
            let mut instance = None;
            let mut key = None;
            for r in t.query(
                "SELECT key, value FROM meta WHERE key IN ('instance', 'cursor_key')",
                &[],
            )? {
                let k: String = r.try_get(0)?;
                let v: Vec<u8> = r.try_get(1)?;
                match k.as_str() {
                    "instance" => instance = Some(v),
                    _ => key = Some(v),
                }
            }
            Ok((instance, key))
        })?;
        let instance = instance
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or_else(|| StoreError::Corrupt("instance id".into()))?;
        let key = key
            .and_then(|v| <[u8; 32]>::try_from(v.as_slice()).ok())
            .ok_or_else(|| StoreError::Corrupt("cursor key".into()))?;
        Ok((instance, CursorKey::from_bytes(key)))
    }

    /// The host this store writes workspaces and sessions for.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Never listens for other processes' changes: waits on this store see them only by their
    /// re-checks. For a process that only writes, and for tests of that fallback.
    pub fn ignore_other_processes(&self) {
        self.deaf.store(true, Ordering::Release);
    }

    /// Tells waits that the runs of `session_id` changed, after the commit: this process's at
    /// once, other processes' through `NOTIFY` (for a commit that could not send it in its own
    /// transaction). A `NOTIFY` that fails costs the waits elsewhere one re-check.
    fn announce(&self, session_id: &str) {
        let payload = listen::payload(&self.origin, session_id);
        if let Err(e) = self.tx(Mode::Write, |t| {
            t.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])?;
            Ok(())
        }) {
            tracing::debug!(error = %e, "change not announced to other processes");
        }
        self.feed
            .publish(crate::changes::Change::Session(session_id.to_owned()));
    }

    /// Runs `f` in one transaction on a pooled connection and commits. Retries, with backoff,
    /// up to [`TX_ATTEMPTS`] times on serialization failures and deadlocks (the transaction did
    /// nothing), and on a pooled connection found dead at BEGIN (nothing was sent yet). Any
    /// other failure, including a connection lost after BEGIN, is returned: the outcome of a
    /// commit whose answer was lost is unknown, and the caller fails closed.
    fn tx<T>(&self, mode: Mode, mut f: impl FnMut(&mut Transaction<'_>) -> Tx<T>) -> Result<T> {
        let mut attempt: u32 = 0;
        let mut stale: usize = 0;
        loop {
            let mut conn = self.pool.checkout()?;
            let outcome = attempt_once(conn.client()?, mode, &mut f);
            match outcome {
                Ok(v) => return Ok(v),
                Err(Step::Begin(e)) => {
                    let broken = is_broken(&e);
                    conn.broken = broken;
                    let reused = conn.reused;
                    drop(conn);
                    // Every idle connection may have died with the server: try each at most once.
                    if broken && reused && stale < POOL_MAX_CONNECTIONS {
                        stale += 1;
                        continue;
                    }
                    return Err(e.into());
                }
                Err(Step::Body(Fail::Store(e))) => return Err(e),
                Err(Step::Body(Fail::Pg(e))) => {
                    if is_broken(&e) {
                        conn.broken = true;
                        return Err(e.into());
                    }
                    if is_retryable(&e) && attempt + 1 < TX_ATTEMPTS {
                        drop(conn);
                        attempt += 1;
                        backoff(attempt);
                        continue;
                    }
                    return Err(e.into());
                }
            }
        }
    }
}

/// The highest migration applied, 0 on an empty database.
fn applied_version(t: &mut Transaction<'_>) -> Tx<usize> {
    // to_regclass instead of CREATE TABLE IF NOT EXISTS: the restricted role may not create.
    let exists: bool = t
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])?
        .try_get(0)?;
    if !exists {
        return Ok(0);
    }
    let v: i32 = t
        .query_one(
            "SELECT coalesce(max(version), 0) FROM schema_migrations",
            &[],
        )?
        .try_get(0)?;
    usize::try_from(v).map_err(|_| Fail::Store(StoreError::Corrupt("schema version".into())))
}

fn check_not_newer(applied: usize) -> Tx<()> {
    if applied > MIGRATIONS.len() {
        return Err(Fail::Store(StoreError::Corrupt(format!(
            "store schema {applied} is newer than this runread ({}); upgrade runread",
            MIGRATIONS.len()
        ))));
    }
    Ok(())
}

/// Applies pending migrations, each in its own transaction, while holding the migration lock (a
/// second process starting at the same time waits, then finds them applied); then, if this login
/// owns the schema, (re)applies the privileges of [`APP_ROLE`].
///
/// The lock is session-level, taken before the transactions begin, not transaction-level: a
/// transaction that began before waiting could look at catalog caches from before the other
/// process's commit and try to create its tables again. Runs on a connection of its own, which
/// the caller closes afterwards (it carries the longer migration timeouts).
fn migrate(client: &mut Client) -> Tx<()> {
    client.batch_execute(&format!(
        "SET statement_timeout = {MIGRATION_TIMEOUT_MS}; SET lock_timeout = {MIGRATION_TIMEOUT_MS}"
    ))?;
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let res = migrate_locked(client);
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    res?;
    unlocked?;
    Ok(())
}

fn migrate_locked(client: &mut Client) -> Tx<()> {
    for (n, sql) in MIGRATIONS.iter().enumerate() {
        let version = n + 1;
        let mut t = client.transaction()?;
        let applied = applied_version(&mut t)?;
        check_not_newer(applied)?;
        if applied >= version {
            continue;
        }
        if applied == 0 {
            t.batch_execute(
                "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, \
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            )?;
        }
        t.batch_execute(sql)?;
        if version == RUN_STARTS_MIGRATION {
            backfill_run_starts(&mut t)?;
        }
        let v = i32::try_from(version)
            .map_err(|_| Fail::Store(StoreError::Corrupt("schema version".into())))?;
        t.execute("INSERT INTO schema_migrations(version) VALUES ($1)", &[&v])?;
        t.commit()?;
    }
    let mut t = client.transaction()?;
    let owner: bool = t
        .query_one(
            "SELECT coalesce(bool_or(pg_get_userbyid(relowner) = current_user), false) FROM pg_class \
             WHERE oid = to_regclass('start_records')",
            &[],
        )?
        .try_get(0)?;
    if owner {
        t.batch_execute(&app_role_sql())?;
    }
    t.commit()?;
    Ok(())
}

/// Creates [`APP_ROLE`] (NOLOGIN) when this login may create roles, and grants it exactly what
/// runread needs on this schema's tables. Idempotent; run by the schema owner on every start,
/// so a table added by a later migration is covered, and under the migration lock (concurrent
/// GRANTs on one table can fail with "tuple concurrently updated").
pub fn app_role_sql() -> String {
    let list = |tables: &[&str]| tables.join(", ");
    format!(
        r#"DO $do$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}')
       AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolcreaterole)) THEN
        BEGIN
            CREATE ROLE {role} NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL; -- another database of this cluster created it at the same moment
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO {role}', current_schema());
        GRANT SELECT, INSERT, UPDATE, DELETE ON {rw} TO {role};
        GRANT SELECT, INSERT ON {ao} TO {role};
        REVOKE UPDATE, DELETE, TRUNCATE ON {ao} FROM {role};
        GRANT SELECT ON {ro} TO {role};
        REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {ro} FROM {role};
        GRANT SELECT, INSERT, DELETE ON {pruned} TO {role};
        REVOKE UPDATE, TRUNCATE ON {pruned} FROM {role};
    END IF;
END
$do$;"#,
        role = APP_ROLE,
        rw = list(APP_READ_WRITE_TABLES),
        ao = list(APP_APPEND_ONLY_TABLES),
        ro = list(APP_READ_ONLY_TABLES),
        pruned = list(APP_PRUNED_TABLES),
    )
}

/// Gives every run indexed before migration 7 its start time, from its own record (as SQLite's
/// `backfill_run_starts`).
fn backfill_run_starts(t: &mut Transaction<'_>) -> Tx<()> {
    let starts = t
        .query(vocab::RUNS_TO_BACKFILL, &[])?
        .iter()
        .map(|r| vocab::run_start(r))
        .collect::<Result<Vec<_>>>()?;
    for start in starts.into_iter().flatten() {
        t.execute(vocab::SET_RUN_START, &pg_params(&start))?;
    }
    Ok(())
}

vocab::cols_by!(Row, try_get);

/// `values` as the driver's parameters (booleans as `BOOLEAN`).
fn pg_params<'v>(values: &'v Args<'_>) -> Vec<&'v (dyn ToSql + Sync)> {
    values
        .iter()
        .map(|v| -> &'v (dyn ToSql + Sync) {
            match v {
                Value::Text(Cow::Borrowed(s)) => s,
                Value::Text(Cow::Owned(s)) => s,
                Value::OptText(s) => s,
                Value::Int(n) => n,
                Value::OptInt(n) => n,
                Value::Flag(b) => b,
                Value::Bytes(b) => b,
            }
        })
        .collect()
}

/// How [`vocab::same_in_every_store!`] runs its statements here: each read is one statement's
/// snapshot, each write one statement's transaction.
impl PostgresStore {
    fn read_all<T>(&self, sql: &str, params: &Args<'_>, row: impl MapRow<T>) -> Result<Vec<T>> {
        let params = pg_params(params);
        self.tx(Mode::Read, |t| {
            let rows = t.query(sql, &params)?;
            Ok(rows.iter().map(|r| row(r)).collect::<Result<Vec<T>>>()?)
        })
    }

    fn read_opt<T>(&self, sql: &str, params: &Args<'_>, row: impl MapRow<T>) -> Result<Option<T>> {
        let params = pg_params(params);
        self.tx(Mode::Read, |t| {
            Ok(t.query_opt(sql, &params)?.map(|r| row(&r)).transpose()?)
        })
    }

    fn write(&self, sql: &str, params: &Args<'_>) -> Result<u64> {
        let params = pg_params(params);
        self.tx(Mode::Write, |t| Ok(t.execute(sql, &params)?))
    }

    /// Start records at or after `since_ms`, oldest first ([`vocab::AUDIT_OLDEST_FIRST`]),
    /// with their receipts, from one snapshot.
    fn audit_in(&self, since_ms: i64, limit: u32) -> Result<AuditRows> {
        self.tx(Mode::Snapshot, |t| {
            let metas = t
                .query(vocab::AUDIT_OLDEST_FIRST, &[&since_ms, &i64::from(limit)])?
                .iter()
                .map(|r| vocab::start_meta(r))
                .collect::<Result<Vec<_>>>()?;
            with_receipts(t, metas)
        })
    }
}

impl PostgresStore {
    /// What can be done on PostgreSQL about a deletion's remains: a deleted row's old versions
    /// stay in the table's files until a VACUUM reclaims their space and later writes overwrite
    /// it, and in the server's WAL segments and every backup. runread asks for that VACUUM of the
    /// snapshots table now (PostgreSQL lets only the table's owner run it: as the restricted
    /// role it is skipped, and autovacuum does it later); nothing it can ask reaches WAL segments
    /// or backups. docs/store.md says what a destroyed row means here.
    pub fn scrub(&self) {
        self.vacuum("snapshots, kept_runs");
    }

    /// [`PostgresStore::scrub`] for the gate's log after a prune.
    fn scrub_audit(&self) {
        self.vacuum("receipts, start_records");
    }

    fn vacuum(&self, tables: &str) {
        let vacuumed = self.pool.checkout().and_then(|mut conn| {
            conn.client()?
                .batch_execute(&format!("VACUUM {tables}"))
                .map_err(StoreError::from)
        });
        if let Err(e) = vacuumed {
            tracing::debug!(error = %e, "not vacuumed after a deletion");
        }
    }
}

/// Each start record with its receipts, in the transaction `t`.
fn with_receipts(t: &mut Transaction<'_>, metas: Vec<StartMeta>) -> Tx<AuditRows> {
    let mut out = Vec::with_capacity(metas.len());
    for m in metas {
        let receipts = t
            .query(vocab::RECEIPTS_OF_START, &[&m.start_id])?
            .iter()
            .map(|r| vocab::receipt(r))
            .collect::<Result<Vec<_>>>()?;
        out.push((m, receipts));
    }
    Ok(out)
}

/// A start record's run id: the expression migration 9's index `start_records_by_run` is built
/// on, written exactly so (else the planner does not match it). The column is text; the cast
/// reads it as the JSON it always is (`null` for a call without a target: no run id).
const RUN_ID_OF_START: &str = "((s.target_json::jsonb) ->> 'runId')";

const WORKSPACE_BY_PATH: &str = vocab::select_workspaces!(" WHERE host = $1 AND path = $2");
const PUT_SNAPSHOT: &str = vocab::put_snapshot!("BYTEA");
const PUT_KEPT: &str = vocab::put_kept!("BYTEA");
const WORKSPACES: &str = vocab::select_workspaces!(" WHERE host = $1 ORDER BY created_at, id");
const SESSION_BY_PATH: &str = vocab::select_sessions!(" WHERE host = $1 AND path = $2");
/// `starts_with` compares bytes whatever the database's collation.
const SESSIONS_WITH_PATH_PREFIX: &str =
    vocab::select_sessions!(" WHERE host = $1 AND starts_with(path, $2) ORDER BY path LIMIT $3");
const STAMPS_WITH_PATH_PREFIX: &str = vocab::select_session_stamps!(
    " WHERE host = $1 AND starts_with(path, $2) ORDER BY path LIMIT $3"
);
/// A session row with its host last.
const INSERT_SESSION: &str = concat!(
    "INSERT INTO sessions(",
    vocab::session_cols!(),
    ", host) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
     $18, $19, $20, $21, $22, $23, $24) ",
    vocab::session_upsert!()
);

/// One ingest commit's rows as the statements take them, encoded once before the transaction
/// (which may run several times).
struct IngestRows<'c> {
    /// The session row, its host last ([`INSERT_SESSION`]).
    session: Vec<Value<'c>>,
    /// (line, summary JSON), by line.
    entries: Vec<(i64, String)>,
    /// (run id, ord, status, run JSON, started ms), in the session's order.
    runs: Vec<(String, i64, String, String, Option<i64>)>,
    /// The `NOTIFY` payload that tells other processes the session changed.
    notice: String,
}

impl<'c> IngestRows<'c> {
    fn of(c: &'c IngestCommit, host: &'c str, origin: &str) -> Result<IngestRows<'c>> {
        let s = &c.session;
        let mut session = Vec::from(vocab::session_values(s)?);
        session.push(Value::from(host));
        // Later duplicates of a line win, as with SQLite's INSERT OR REPLACE.
        let mut entries = std::collections::BTreeMap::new();
        for e in &c.new_entries {
            entries.insert(i64_of(e.line), serde_json::to_string(e)?);
        }
        let mut runs = Vec::with_capacity(c.runs.len());
        for (ord, r) in c.runs.iter().enumerate() {
            runs.push((
                r.run_id.clone(),
                vocab::ord_of(ord),
                r.status.as_str().to_owned(),
                serde_json::to_string(r)?,
                crate::run_started_ms(r),
            ));
        }
        Ok(IngestRows {
            session,
            entries: entries.into_iter().collect(),
            runs,
            notice: listen::payload(origin, &s.session_id),
        })
    }
}

/// One attempt of [`Index::commit_ingest`]'s transaction, its statements in the lock order its
/// documentation gives: the session's row first, then its entries, then its runs.
fn write_ingest(
    t: &mut Transaction<'_>,
    host: &str,
    c: &IngestCommit,
    rows: &IngestRows<'_>,
) -> Tx<()> {
    // The index is made again from the session files: this commit does not wait for the
    // server's disk (for this transaction only). A later synchronous commit (a grant, a
    // start record) flushes the log in order, so nothing durable names a row that is gone.
    t.batch_execute("SET LOCAL synchronous_commit TO OFF")?;
    write_ingested_session(t, host, c, &rows.session)?;
    let s = &c.session;
    let generation = i64_of(s.generation);
    if c.new_generation {
        t.execute(
            "DELETE FROM entries WHERE session_id = $1",
            &[&s.session_id],
        )?;
    }
    for batch in rows.entries.chunks(INGEST_BATCH_ROWS) {
        let lines: Vec<i64> = batch.iter().map(|e| e.0).collect();
        let jsons: Vec<&str> = batch.iter().map(|e| e.1.as_str()).collect();
        t.execute(
            "INSERT INTO entries(session_id, generation, line, summary_json) \
             SELECT $1, $2, u.line, u.summary FROM unnest($3::bigint[], $4::text[]) AS u(line, summary) \
             ON CONFLICT (session_id, generation, line) DO UPDATE SET summary_json = excluded.summary_json",
            &[&s.session_id, &generation, &lines, &jsons],
        )?;
    }
    replace_ingested_runs(t, &s.session_id, generation, &rows.runs)?;
    // Delivered to other processes' waits only if this commits.
    t.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &rows.notice])?;
    Ok(())
}

/// Writes the ingested session's row, refusing (`Conflict`) a session id another host ingested.
fn write_ingested_session(
    t: &mut Transaction<'_>,
    host: &str,
    c: &IngestCommit,
    session: &Args<'_>,
) -> Tx<()> {
    let s = &c.session;
    let owner: Option<String> = t
        .query_opt(
            "SELECT host FROM sessions WHERE session_id = $1",
            &[&s.session_id],
        )?
        .map(|r| r.try_get(0))
        .transpose()?;
    if owner.as_ref().is_some_and(|h| *h != host) {
        return Err(Fail::Store(StoreError::Conflict(
            "session already ingested from another host".into(),
        )));
    }
    if c.new_generation {
        // The path may have held another session id before (a file replaced by another
        // session); that row goes before this one takes the path.
        t.execute(
            "DELETE FROM sessions WHERE host = $1 AND path = $2 AND session_id <> $3",
            &[&host, &s.path, &s.session_id],
        )?;
    }
    t.execute(INSERT_SESSION, &pg_params(session))?;
    Ok(())
}

/// Replaces the session's runs with `runs`.
fn replace_ingested_runs(
    t: &mut Transaction<'_>,
    session_id: &str,
    generation: i64,
    runs: &[(String, i64, String, String, Option<i64>)],
) -> Tx<()> {
    t.execute("DELETE FROM runs WHERE session_id = $1", &[&session_id])?;
    for batch in runs.chunks(INGEST_BATCH_ROWS) {
        let ids: Vec<&str> = batch.iter().map(|r| r.0.as_str()).collect();
        let ords: Vec<i64> = batch.iter().map(|r| r.1).collect();
        let statuses: Vec<&str> = batch.iter().map(|r| r.2.as_str()).collect();
        let jsons: Vec<&str> = batch.iter().map(|r| r.3.as_str()).collect();
        let starts: Vec<Option<i64>> = batch.iter().map(|r| r.4).collect();
        t.execute(
            "INSERT INTO runs(session_id, generation, run_id, ord, status, run_json, started_ms) \
             SELECT $1, $2, u.run_id, u.ord, u.status, u.run_json, u.started_ms \
             FROM unnest($3::text[], $4::bigint[], $5::text[], $6::text[], $7::bigint[]) AS u(run_id, ord, status, run_json, started_ms)",
            &[&session_id, &generation, &ids, &ords, &statuses, &jsons, &starts],
        )?;
    }
    Ok(())
}

impl Identity for PostgresStore {
    vocab::identity_in_every_store!();
}

impl Index for PostgresStore {
    vocab::index_in_every_store!();

    fn add_workspace(&self, canonical_path: &str, name: &str, now_ms: i64) -> Result<Workspace> {
        self.tx(Mode::Serializable, |t| {
            let existing = t
                .query_opt(WORKSPACE_BY_PATH, &[&self.host, &canonical_path])?
                .map(|r| vocab::workspace(&r))
                .transpose()?;
            match existing {
                Some(ws) => {
                    let (ws, changed) = vocab::re_registered(ws, name);
                    if changed {
                        t.execute(
                            "UPDATE workspaces SET revision = $1, name = $2, enabled = TRUE, updated_at = $3 WHERE id = $4",
                            &[&i64_of(ws.revision), &ws.name, &now_ms, &ws.id],
                        )?;
                    }
                    Ok(ws)
                }
                None => {
                    let ws = vocab::new_workspace(canonical_path, name)?;
                    t.execute(
                        "INSERT INTO workspaces(id, host, name, path, revision, enabled, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, 1, TRUE, $5, $5)",
                        &[&ws.id, &self.host, &ws.name, &ws.path, &now_ms],
                    )?;
                    Ok(ws)
                }
            }
        })
    }

    /// This host's workspaces: ingest matches session directories against them, and another
    /// host's paths mean nothing here.
    fn workspaces(&self) -> Result<Vec<Workspace>> {
        self.read_all(WORKSPACES, &values![&self.host], vocab::workspace)
    }

    fn remove_workspace(&self, id: &str, now_ms: i64) -> Result<Option<Workspace>> {
        self.tx(Mode::Serializable, |t| {
            let existing = t
                .query_opt(vocab::WORKSPACE_BY_ID, &[&id])?
                .map(|r| vocab::workspace(&r))
                .transpose()?;
            let Some(ws) = existing.filter(|w| w.enabled).map(vocab::disabled) else {
                return Ok(None);
            };
            t.execute(
                "UPDATE workspaces SET revision = $1, enabled = FALSE, updated_at = $2 WHERE id = $3",
                &[&i64_of(ws.revision), &now_ms, &ws.id],
            )?;
            Ok(Some(ws))
        })
    }

    /// The session recorded for this file path on this host.
    fn session_by_path(&self, path: &str) -> Result<Option<SessionRecord>> {
        self.read_opt(SESSION_BY_PATH, &values![&self.host, path], vocab::session)
    }

    fn sessions_with_path_prefix(&self, prefix: &str, limit: u32) -> Result<Vec<SessionRecord>> {
        let take = i64::from(limit) + 1;
        self.read_all(
            SESSIONS_WITH_PATH_PREFIX,
            &values![&self.host, prefix, take],
            vocab::session,
        )
    }

    fn session_stamps_with_path_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<SessionStamp>> {
        let take = i64::from(limit) + 1;
        self.read_all(
            STAMPS_WITH_PATH_PREFIX,
            &values![&self.host, prefix, take],
            vocab::session_stamp,
        )
    }

    /// As in SQLite, plus: a session id already ingested from another host is refused
    /// (`Conflict`) instead of being taken over, since its file is not on this machine.
    ///
    /// Lock order: the session's row is the first of its rows written, before any of its
    /// entries or runs, so that concurrent commits of one session (say `watch` and `ingest`)
    /// queue on that row instead of taking row locks in opposite orders. A commit of a new
    /// generation used to delete entries and runs first while a commit of the same generation
    /// held the session row and then deleted runs: a deadlock, found only after PostgreSQL's
    /// `deadlock_timeout` and repeated down a queue of writers until one statement outlived
    /// [`STATEMENT_TIMEOUT_MS`].
    fn commit_ingest(&self, c: &IngestCommit) -> Result<()> {
        let rows = IngestRows::of(c, &self.host, &self.origin)?;
        self.tx(Mode::Serializable, |t| {
            write_ingest(t, &self.host, c, &rows)
        })?;
        self.feed.publish(crate::changes::Change::Session(
            c.session.session_id.clone(),
        ));
        Ok(())
    }

    fn runs_page(&self, filter: &RunFilter, limit: u32, offset: u64) -> Result<Vec<RunRecord>> {
        self.read_all(
            vocab::select_runs!(
                " WHERE ($1::text IS NULL OR s.agent = $1) AND ($2::text IS NULL OR s.workspace_id = $2) \
                 AND ($3::text IS NULL OR r.status = $3) AND w.enabled \
                 ORDER BY r.started_ms DESC NULLS LAST, r.session_id, r.ord DESC LIMIT $4 OFFSET $5"
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
        self.read_all(
            vocab::runs_with_id_prefix!("$1", "$2", "$3",),
            &vocab::values![run_prefix, session_prefix, i64::from(limit) + 1],
            |r| vocab::run_record(r, &self.instance),
        )
    }

    fn runs_count(&self, filter: &RunFilter) -> Result<u64> {
        let n = self.read_opt(
            "SELECT count(*) FROM runs r JOIN sessions s ON s.session_id = r.session_id AND s.generation = r.generation \
             JOIN workspaces w ON w.id = s.workspace_id \
             WHERE ($1::text IS NULL OR s.agent = $1) AND ($2::text IS NULL OR s.workspace_id = $2) \
             AND ($3::text IS NULL OR r.status = $3) AND w.enabled",
            &vocab::filter_values(filter),
            |r| r.int(0),
        )?;
        vocab::u64_of(n.unwrap_or(0))
    }
}

impl Access for PostgresStore {
    vocab::access_in_every_store!();
}

impl Secrets for PostgresStore {
    vocab::secrets_in_every_store!();

    fn secrets_fingerprint(&self) -> Result<String> {
        self.tx(Mode::Read, |t| {
            let r = t.query_one(
                "SELECT count(*), max(created_at), coalesce(sum(length(ciphertext)), 0)::bigint FROM secrets",
                &[],
            )?;
            let n: i64 = r.try_get(0)?;
            let max: Option<i64> = r.try_get(1)?;
            let total: i64 = r.try_get(2)?;
            Ok(format!("{n}:{}:{total}", max.unwrap_or(0)))
        })
    }
}

impl Snapshots for PostgresStore {
    vocab::snapshots_in_every_store!();
}

impl Keeps for PostgresStore {
    vocab::keeps_in_every_store!();
}

impl GateLog for PostgresStore {
    vocab::gate_log_in_every_store!();

    fn audit_range(&self, after_ms: i64, upto_ms: i64, limit: u32) -> Result<AuditRows> {
        self.tx(Mode::Snapshot, |t| {
            let metas = t
                .query(
                    vocab::AUDIT_RANGE,
                    &[&after_ms, &upto_ms, &i64::from(limit)],
                )?
                .iter()
                .map(|r| vocab::start_meta(r))
                .collect::<Result<Vec<_>>>()?;
            let upto = metas.last().map_or(after_ms, |m| m.created_at_ms);
            let receipts = t
                .query(vocab::AUDIT_RANGE_RECEIPTS, &[&after_ms, &upto])?
                .iter()
                .map(|r| vocab::receipt(r))
                .collect::<Result<Vec<_>>>()?;
            Ok(vocab::with_range_receipts(metas, receipts))
        })
    }

    /// The checkpoint and the deletions in one transaction; one pass at a time across every
    /// host (an advisory lock), so two passes never race to the same chain position.
    fn prune_audit(&self, checkpoint: &crate::AuditCheckpoint) -> Result<Option<u64>> {
        let values = vocab::audit_checkpoint_values(checkpoint);
        let params = pg_params(&values);
        let deleted = self.tx(Mode::Write, |t| {
            t.execute("SELECT pg_advisory_xact_lock(7077046)", &[])?;
            if t.execute(vocab::INSERT_AUDIT_CHECKPOINT, &params)? != 1 {
                return Ok(None);
            }
            t.execute(vocab::PRUNE_RECEIPTS, &[&checkpoint.upto_ms])?;
            Ok(Some(
                t.execute(vocab::PRUNE_STARTS, &[&checkpoint.upto_ms])?,
            ))
        })?;
        if deleted.is_some() {
            self.scrub_audit();
        }
        Ok(deleted)
    }

    fn audit_page(&self, filter: &AuditFilter, limit: u32) -> Result<AuditPage> {
        let (page, args) = vocab::audit_page_sql(filter, limit, RUN_ID_OF_START);
        let page_args = pg_params(&args);
        // One snapshot for the page, its count and its receipts.
        self.tx(Mode::Snapshot, |t| {
            let metas = t
                .query(page.as_str(), &page_args)?
                .iter()
                .map(|r| vocab::start_meta(r))
                .collect::<Result<Vec<_>>>()?;
            let more = match vocab::audit_more_sql(filter, limit, &metas, RUN_ID_OF_START) {
                None => 0,
                Some((count, args)) => {
                    let n: i64 = t.query_one(count.as_str(), &pg_params(&args))?.try_get(0)?;
                    vocab::u64_of(n)?
                }
            };
            let rows = with_receipts(t, metas)?;
            Ok(AuditPage { rows, more })
        })
    }

    fn begin_call(&self, rec: &StartRecord, replay_since_ms: i64) -> Result<StartOutcome> {
        let replay = values![&rec.meta.idempotency_key, replay_since_ms];
        let replay = pg_params(&replay);
        let insert = vocab::start_values(rec)?;
        let insert = pg_params(&insert);
        // SERIALIZABLE: two concurrent calls with one idempotency key cannot both see "none" and
        // both insert; the loser is retried and finds the winner's record. The commit returns
        // only once the record is durable (synchronous_commit, the server's default).
        self.tx(Mode::Serializable, |t| {
            if let Some(r) = t.query_opt(vocab::START_REPLAY, &replay)? {
                return Ok(StartOutcome::Existing(Box::new(vocab::start_record(&r)?)));
            }
            t.execute(vocab::INSERT_START, &insert)?;
            Ok(StartOutcome::Created)
        })
    }

    fn append_receipt(&self, r: &Receipt) -> Result<()> {
        self.write(vocab::INSERT_RECEIPT, &vocab::receipt_values(r))
            .map(drop)
    }
}

impl Refusals for PostgresStore {
    vocab::refusals_in_every_store!();
}

impl Connectors for PostgresStore {
    vocab::connectors_in_every_store!();
}

impl Waits for PostgresStore {
    vocab::waits_in_every_store!();
}

impl AccessRequests for PostgresStore {
    vocab::access_requests_in_every_store!();
}

impl Settings for PostgresStore {
    vocab::settings_in_every_store!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use runread_testkit::pg;

    #[test]
    fn an_ingest_leaves_its_connection_committing_durably_afterwards() {
        let db = pg::PgDb::fresh();
        let s = PostgresStore::connect_as(&db.url, "host-a").unwrap();
        let ws = s.add_workspace("/w", "w", 1).unwrap();
        s.commit_ingest(&crate::testing::ingest_commit(&ws.id))
            .unwrap();
        assert!(s.session("s1").unwrap().is_some());
        // One thread: the pool hands back the connection the commit just used (a stack).
        let mut conn = s.pool.checkout().unwrap();
        let setting: String = conn
            .client()
            .unwrap()
            .query_one("SHOW synchronous_commit", &[])
            .unwrap()
            .get(0);
        assert_eq!(
            setting, "on",
            "the next transaction on it waits for the disk again"
        );
    }
}
