//! What the two stores say alike: the column lists, the statements whose text both dialects
//! accept, the conversions between runread's values and stored columns, the row mappers, and
//! the [`Store`](crate::Store) methods that are the same statement in both (one macro per role,
//! `index_in_every_store!` and the others). Only SQL that differs by dialect (host namespacing, upserts of
//! many rows, paging with `NULLS LAST`, group commit) stays in `sqlite.rs` and `postgres.rs`.
//!
//! **Placeholders** are written `$1`, `$2`, … as PostgreSQL wants them. SQLite reads `$N` as a
//! named parameter and numbers named parameters in the order they first appear, so a shared
//! statement must introduce `$1`, `$2`, … in ascending order; then `$N` is the N-th in both (a
//! test in `sqlite.rs` prepares every shared statement and checks it).
//!
//! Nothing here knows a driver: each store implements [`Cols`] for its row type and binds
//! [`Value`]s with its own parameter type.

use std::borrow::Cow;

use runread_core::{Agent, Feature, Target};
use runread_sessions::FileIdentity;

use crate::{
    ArtifactRecord, Grant, OAuthClient, OAuthRequest, OAuthToken, Reader, Receipt, Result,
    RunRecord, SealedSecret, SessionRecord, SessionStamp, StartMeta, StartRecord, StoreError,
    SupervisedRun, TokenKind, Workspace,
};

/// The migration that added `runs.started_ms`; each store fills in earlier rows right after it
/// (`backfill_run_starts`), in the same transaction.
pub(crate) const RUN_STARTS_MIGRATION: usize = 7;
/// The migration that drops the prompt previews earlier versions kept in the index.
pub(crate) const PREVIEW_PURGE_MIGRATION: usize = 8;

/// The runs whose start time migration [`RUN_STARTS_MIGRATION`] fills in.
pub(crate) const RUNS_TO_BACKFILL: &str =
    "SELECT session_id, generation, run_id, run_json FROM runs";
/// Sets one run's start time: `started_ms`, then the run's key.
pub(crate) const SET_RUN_START: &str =
    "UPDATE runs SET started_ms = $1 WHERE session_id = $2 AND generation = $3 AND run_id = $4";

/// A stored integer as the unsigned value it was written from. A negative one was never written
/// by runread: the store is corrupt, and reading on would turn it into a different value.
pub(crate) fn u64_of(v: i64) -> Result<u64> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("negative stored count {v}")))
}

/// An unsigned value as a stored integer; one beyond `i64::MAX` is stored as `i64::MAX`, which
/// no identity check then matches (fails closed).
pub(crate) fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A stored integer as a `u32` field, refused as corrupt when out of its range.
fn u32_of(v: i64) -> Result<u32> {
    u32::try_from(v).map_err(|_| StoreError::Corrupt(format!("stored value {v} out of range")))
}

/// A run's position in its session, as stored.
pub(crate) fn ord_of(ord: usize) -> i64 {
    i64::try_from(ord).unwrap_or(i64::MAX)
}

pub(crate) fn features_to_string(f: &[Feature]) -> String {
    f.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(",")
}

/// Reading one column of a result row, whatever the driver. `flag` is a boolean column
/// (`INTEGER` 0/1 in SQLite, `BOOLEAN` in PostgreSQL: each driver reads its own as `bool`).
/// Implemented for a driver's row type by [`cols_by!`].
pub(crate) trait Cols {
    fn text(&self, i: usize) -> Result<String>;
    fn opt_text(&self, i: usize) -> Result<Option<String>>;
    fn int(&self, i: usize) -> Result<i64>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>>;
    fn flag(&self, i: usize) -> Result<bool>;
    fn bytes(&self, i: usize) -> Result<Vec<u8>>;
}

/// Maps one result row to a record (the row mappers below, or a closure over them).
pub(crate) trait MapRow<T>: Fn(&dyn Cols) -> Result<T> {}
impl<T, F: Fn(&dyn Cols) -> Result<T>> MapRow<T> for F {}

pub(crate) use crate::AuditRows;

/// A statement's parameters, `$1` first.
pub(crate) type Args<'v> = [Value<'v>];

/// Implements [`Cols`] for a driver's row type `$row` through its typed getter `$get`.
macro_rules! cols_by {
    ($row:ty, $get:ident) => {
        impl $crate::vocab::Cols for $row {
            fn text(&self, i: usize) -> $crate::Result<String> {
                Ok(self.$get(i)?)
            }
            fn opt_text(&self, i: usize) -> $crate::Result<Option<String>> {
                Ok(self.$get(i)?)
            }
            fn int(&self, i: usize) -> $crate::Result<i64> {
                Ok(self.$get(i)?)
            }
            fn opt_int(&self, i: usize) -> $crate::Result<Option<i64>> {
                Ok(self.$get(i)?)
            }
            fn flag(&self, i: usize) -> $crate::Result<bool> {
                Ok(self.$get(i)?)
            }
            fn bytes(&self, i: usize) -> $crate::Result<Vec<u8>> {
                Ok(self.$get(i)?)
            }
        }
    };
}
pub(crate) use cols_by;

/// One value bound to a statement: the few column types runread stores.
#[derive(Debug)]
pub(crate) enum Value<'a> {
    Text(Cow<'a, str>),
    OptText(Option<&'a str>),
    Int(i64),
    OptInt(Option<i64>),
    /// A boolean column (see [`Cols::flag`]).
    Flag(bool),
    Bytes(&'a [u8]),
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::Text(Cow::Borrowed(s))
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(s: &'a String) -> Self {
        Value::Text(Cow::Borrowed(s))
    }
}

impl From<String> for Value<'_> {
    fn from(s: String) -> Self {
        Value::Text(Cow::Owned(s))
    }
}

impl<'a> From<Option<&'a str>> for Value<'a> {
    fn from(s: Option<&'a str>) -> Self {
        Value::OptText(s)
    }
}

impl<'a> From<&'a Option<String>> for Value<'a> {
    fn from(s: &'a Option<String>) -> Self {
        Value::OptText(s.as_deref())
    }
}

impl From<i64> for Value<'_> {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<u64> for Value<'_> {
    fn from(v: u64) -> Self {
        Value::Int(i64_of(v))
    }
}

impl From<Option<i64>> for Value<'_> {
    fn from(v: Option<i64>) -> Self {
        Value::OptInt(v)
    }
}

impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Flag(v)
    }
}

impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(v: &'a [u8]) -> Self {
        Value::Bytes(v)
    }
}

impl<'a> From<&'a Vec<u8>> for Value<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        Value::Bytes(v)
    }
}

/// The values of a statement's placeholders, in order.
macro_rules! values {
    ($($v:expr),* $(,)?) => {
        [$($crate::vocab::Value::from($v)),*]
    };
}
pub(crate) use values;

/// Column lists and `SELECT`s, as macros so that statements can be `concat!`ed into constants.
/// Each `select_*!` selects the columns its row mapper reads, then appends its arguments.
macro_rules! select_workspaces {
    ($($rest:tt)*) => {
        concat!("SELECT id, name, path, revision, enabled FROM workspaces", $($rest)*)
    };
}
pub(crate) use select_workspaces;

macro_rules! session_cols {
    () => {
        "session_id, agent, path, workspace_id, generation, header_json, dev, ino, nlink, size, \
         mtime_ns, consumed, lines, tail_sha256, malformed_json, torn, branch_complete, session_name, \
         saved_model, ingested_at, ctime_ns, over_bounds, index_version"
    };
}
pub(crate) use session_cols;

macro_rules! select_sessions {
    ($($rest:tt)*) => {
        concat!("SELECT ", $crate::vocab::session_cols!(), " FROM sessions", $($rest)*)
    };
}
pub(crate) use select_sessions;

/// The columns of a [`SessionStamp`] ([`session_stamp`] reads them); a store adds its `WHERE`.
macro_rules! select_session_stamps {
    ($($rest:tt)*) => {
        concat!(
            "SELECT path, agent, dev, ino, nlink, size, mtime_ns, ctime_ns, index_version FROM sessions",
            $($rest)*
        )
    };
}
pub(crate) use select_session_stamps;

/// What a commit of a session already stored replaces (everything but its host).
macro_rules! session_upsert {
    () => {
        "ON CONFLICT (session_id) DO UPDATE SET agent = excluded.agent, path = excluded.path, \
         workspace_id = excluded.workspace_id, generation = excluded.generation, header_json = excluded.header_json, \
         dev = excluded.dev, ino = excluded.ino, nlink = excluded.nlink, size = excluded.size, mtime_ns = excluded.mtime_ns, \
         consumed = excluded.consumed, lines = excluded.lines, tail_sha256 = excluded.tail_sha256, \
         malformed_json = excluded.malformed_json, torn = excluded.torn, branch_complete = excluded.branch_complete, \
         session_name = excluded.session_name, saved_model = excluded.saved_model, ingested_at = excluded.ingested_at, \
         ctime_ns = excluded.ctime_ns, over_bounds = excluded.over_bounds, index_version = excluded.index_version"
    };
}
pub(crate) use session_upsert;

/// A run with its session, workspace and file identity ([`run_record`] reads it); a store adds
/// its `WHERE` and order.
macro_rules! select_runs {
    ($($rest:tt)*) => {
        concat!(
            "SELECT s.session_id, s.generation, s.workspace_id, w.revision, r.run_json, s.path, \
             s.dev, s.ino, s.nlink, s.size, s.mtime_ns, s.ingested_at, w.name, w.path, s.ctime_ns, s.agent, w.enabled \
             FROM runs r JOIN sessions s ON s.session_id = r.session_id AND s.generation = r.generation \
             JOIN workspaces w ON w.id = s.workspace_id",
            $($rest)*
        )
    };
}
pub(crate) use select_runs;

/// A grant's columns as written (`INSERT`).
macro_rules! grant_cols {
    () => {
        "id, reader_id, instance, revision, workspace_id, session_id, generation, run_id, \
         features, created_at, expires_at, revoked_at, label"
    };
}

/// A grant as read ([`grant`]): its columns and its reader's name, from [`grants_with_reader!`].
macro_rules! grant_read_cols {
    () => {
        "g.id, g.reader_id, r.name, g.instance, g.revision, g.workspace_id, g.session_id, \
         g.generation, g.run_id, g.features, g.created_at, g.expires_at, g.revoked_at, g.label"
    };
}

/// Grants `g` with their readers `r`.
macro_rules! grants_with_reader {
    ($($rest:tt)*) => {
        concat!("grants g JOIN readers r ON r.id = g.reader_id", $($rest)*)
    };
}

macro_rules! reader_cols {
    () => {
        "id, name, key_hash, created_at, removed_at"
    };
}

/// The start record columns audit and recovery read: never the sealed input.
macro_rules! start_meta_cols {
    () => {
        "start_id, idempotency_key, grant_id, key_hash_prefix, tool, binding_digest, \
         target_json, input_digest, sealed_key_id, created_at, reader_id"
    };
}

macro_rules! start_cols {
    () => {
        concat!(start_meta_cols!(), ", sealed_nonce, sealed_ciphertext")
    };
}

macro_rules! artifact_cols {
    () => {
        "artifact_id, instance, revision, workspace_id, session_id, generation, run_id, name, mime, \
         kind, version_json, created_at"
    };
}

macro_rules! receipt_cols {
    () => {
        "receipt_id, start_id, outcome, result_digest, output_bytes, created_at, evidence, state"
    };
}

macro_rules! supervised_cols {
    () => {
        "session_id, generation, run_id, supervisor_id, updated_at, record"
    };
}

macro_rules! secret_cols {
    () => {
        "name, key_id, nonce, ciphertext, created_at"
    };
}

/// `SELECT` the columns `$cols!()` names `FROM` the rest.
macro_rules! select {
    ($cols:ident, $($rest:tt)*) => {
        concat!("SELECT ", $cols!(), " FROM ", $($rest)*)
    };
}

/// `INSERT INTO` table `$table` the columns `$cols!()` names, the values `$values`, then the rest.
macro_rules! insert {
    ($table:literal, $cols:ident, $values:literal $(, $rest:tt)*) => {
        concat!("INSERT INTO ", $table, "(", $cols!(), ") VALUES (", $values, ")" $(, $rest)*)
    };
}

pub(crate) const WORKSPACE_BY_ID: &str = select_workspaces!(" WHERE id = $1");
pub(crate) const SESSION_BY_ID: &str = select_sessions!(" WHERE session_id = $1");
pub(crate) const ENTRIES: &str =
    "SELECT summary_json FROM entries WHERE session_id = $1 AND generation = $2 ORDER BY line";
/// Every current run of a registered (not removed) workspace, newest session first.
pub(crate) const RUNS: &str =
    select_runs!(" WHERE w.enabled ORDER BY s.ingested_at DESC, s.session_id, r.ord");
pub(crate) const RUNS_BY_ID: &str =
    select_runs!(" WHERE r.run_id = $1 AND w.enabled ORDER BY s.session_id");
/// Runs of registered (not removed) workspaces whose id starts with `$1` and whose session id
/// starts with `$2` (`NULL`: any), at most
/// `$3` (PostgreSQL's; SQLite's adds a `GLOB` its index answers). `substr` and `length` count
/// characters in both dialects; no `LIKE`, whose wildcards an id could hold.
macro_rules! runs_with_id_prefix {
    ($p1:literal, $p2:literal, $p3:literal, $($and:literal)?) => {
        $crate::vocab::select_runs!(
            " WHERE w.enabled AND ", $($and, " AND ",)? "substr(r.run_id, 1, length(CAST(", $p1, " AS TEXT))) = CAST(", $p1, " AS TEXT) \
             AND (CAST(", $p2, " AS TEXT) IS NULL \
                  OR substr(r.session_id, 1, length(CAST(", $p2, " AS TEXT))) = CAST(", $p2, " AS TEXT)) \
             ORDER BY r.run_id, r.session_id LIMIT ", $p3
        )
    };
}
pub(crate) use runs_with_id_prefix;

/// The statement of [`crate::Index::run_ids_with_heads`]: `$1` the head's length, then
/// [`crate::RUN_ID_HEADS_PER_STATEMENT`] heads (`NULL` where there are fewer: it equals nothing),
/// then the most rows (numbered in the order they appear, as SQLite binds them). Built once; both
/// dialects take it as it is.
pub(crate) fn run_ids_with_heads_statement() -> &'static str {
    static STATEMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    STATEMENT.get_or_init(|| {
        let heads: Vec<String> = (0..crate::RUN_ID_HEADS_PER_STATEMENT)
            .map(|i| format!("${}", i + 2))
            .collect();
        let limit = crate::RUN_ID_HEADS_PER_STATEMENT + 2;
        format!(
            "SELECT DISTINCT r.run_id FROM runs r JOIN sessions s \
             ON s.session_id = r.session_id AND s.generation = r.generation \
             WHERE substr(r.run_id, 1, CAST(CAST($1 AS BIGINT) AS INTEGER)) IN ({}) \
             ORDER BY r.run_id LIMIT ${limit}",
            heads.join(", ")
        )
    })
}

/// [`run_ids_with_heads_statement`] for every store: a statement per
/// [`crate::RUN_ID_HEADS_PER_STATEMENT`] heads, until more than `limit` ids are found.
pub(crate) fn run_ids_with_heads(
    heads: &[&str],
    head_chars: u32,
    limit: u32,
    mut read: impl FnMut(&[Value<'_>]) -> Result<Vec<String>>,
) -> Result<Vec<String>> {
    let mut found = std::collections::BTreeSet::new();
    for chunk in heads.chunks(crate::RUN_ID_HEADS_PER_STATEMENT) {
        let mut args = Vec::from(values![i64::from(head_chars)]);
        args.extend(chunk.iter().map(|h| Value::from(Some(*h))));
        args.resize_with(crate::RUN_ID_HEADS_PER_STATEMENT + 1, || {
            Value::OptText(None)
        });
        args.push(Value::from(i64::from(limit) + 1));
        found.extend(read(&args)?);
        if found.len() > limit as usize {
            break;
        }
    }
    Ok(found.into_iter().take(limit as usize + 1).collect())
}

/// `prefix` as a SQLite `GLOB` pattern matching every text that starts with it: its `*`, `?` and
/// `[` each in brackets (a character class of one), then `*`.
pub(crate) fn glob_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 2);
    for c in prefix.chars() {
        match c {
            '*' | '?' | '[' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            _ => out.push(c),
        }
    }
    out.push('*');
    out
}

/// A run by its target whatever its workspace's state: admission reads `enabled` to refuse it.
pub(crate) const RUN: &str =
    select_runs!(" WHERE r.session_id = $1 AND r.generation = $2 AND r.run_id = $3");
pub(crate) const INSERT_GRANT: &str = insert!(
    "grants",
    grant_cols,
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13"
);
/// A reader's grants (in any state) of exactly one target, newest first.
pub(crate) const READER_GRANTS_FOR_TARGET: &str = select!(
    grant_read_cols,
    grants_with_reader!(
        " WHERE g.reader_id = $1 AND g.instance = $2 AND g.revision = $3 AND g.workspace_id = $4 \
         AND g.session_id = $5 AND g.generation = $6 AND g.run_id = $7 \
         ORDER BY g.created_at DESC, g.id DESC"
    )
);
/// A grant, if the live reader that holds it has the key of this hash.
pub(crate) const GRANT_OF_KEY: &str = select!(
    grant_read_cols,
    grants_with_reader!(" WHERE g.id = $1 AND r.key_hash = $2 AND r.removed_at IS NULL")
);
pub(crate) const GRANTS: &str = select!(
    grant_read_cols,
    grants_with_reader!(" ORDER BY g.created_at, g.id")
);
pub(crate) const REVOKE_GRANT: &str =
    "UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL";
/// Every live grant of a reader revoked (the reader removed).
pub(crate) const REVOKE_GRANTS_OF_READER: &str =
    "UPDATE grants SET revoked_at = $1 WHERE reader_id = $2 AND revoked_at IS NULL";
pub(crate) const INSERT_READER: &str = insert!("readers", reader_cols, "$1, $2, $3, $4, $5");
/// The live reader a key hash names, each of its grants live at a time on a row of its own
/// (newest first), or on one row without a grant when it has none: admission's one read.
pub(crate) const READER_OF_KEY: &str = concat!(
    "SELECT r.id, r.name, r.key_hash, r.created_at, r.removed_at, ",
    grant_read_cols!(),
    // `$1` (the time) comes first in the text: SQLite numbers placeholders as they appear.
    " FROM readers r LEFT JOIN grants g ON g.reader_id = r.id AND g.revoked_at IS NULL \
     AND g.expires_at > $1 WHERE r.key_hash = $2 AND r.removed_at IS NULL \
     ORDER BY g.created_at DESC, g.id DESC"
);
/// The live reader of a name.
pub(crate) const READER_BY_NAME: &str = select!(
    reader_cols,
    "readers WHERE name = $1 AND removed_at IS NULL"
);
/// Every reader, removed ones included (their calls stay in the audit), oldest first.
pub(crate) const READERS: &str = select!(reader_cols, "readers ORDER BY created_at, id");
pub(crate) const ROTATE_READER_KEY: &str =
    "UPDATE readers SET key_hash = $1 WHERE id = $2 AND removed_at IS NULL";
pub(crate) const REMOVE_READER: &str =
    "UPDATE readers SET removed_at = $1 WHERE id = $2 AND removed_at IS NULL";
/// How many grants a reader holds, and how many of them were revoked.
pub(crate) const READER_GRANT_TALLY: &str =
    "SELECT count(*), count(revoked_at) FROM grants WHERE reader_id = $1";
/// When each reader's key last made a call: one lookup of its newest call per reader through
/// `start_records_by_reader` (not a pass over every call ever made); readers without a call
/// come back with `NULL`.
pub(crate) const READER_LAST_READS: &str = "SELECT r.id, (SELECT max(s.created_at) FROM start_records s \
     WHERE s.reader_id = r.id) FROM readers r ORDER BY r.id";
macro_rules! oauth_client_cols {
    () => {
        "client_id, name, redirect_uris, created_at, approved_at, registrant"
    };
}
/// A client is added only while its bounds hold (every client, those never approved, those never
/// approved of its registrant), in one statement: the checks and the insert see the same table.
pub(crate) const INSERT_OAUTH_CLIENT: &str = concat!(
    "INSERT INTO oauth_clients (",
    oauth_client_cols!(),
    ") SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS BIGINT), NULL, \
     CAST($5 AS TEXT) \
     WHERE (SELECT count(*) FROM oauth_clients) < $6 \
     AND (SELECT count(*) FROM oauth_clients WHERE approved_at IS NULL) < $7 \
     AND (SELECT count(*) FROM oauth_clients WHERE approved_at IS NULL AND registrant = $5) < $8"
);
pub(crate) const OAUTH_CLIENT: &str =
    select!(oauth_client_cols, "oauth_clients WHERE client_id = $1");
/// The client of request `$2` approved (no longer purged): one statement, without reading the
/// request back.
pub(crate) const APPROVE_OAUTH_CLIENT: &str = "UPDATE oauth_clients SET approved_at = $1 \
     WHERE client_id = (SELECT client_id FROM oauth_requests WHERE id = $2) AND approved_at IS NULL";
macro_rules! oauth_request_cols {
    () => {
        "id, user_code, client_id, client_name, redirect_uri, state_sha256, code_challenge, resource, \
         scope, created_at, expires_at, decided_at, reader_id, granted_scope, code_hash, \
         code_expires_at, code_used_at"
    };
}
/// A request is added only while its client has fewer than its share waiting for the owner, and
/// — unless its client holds tokens (the owner approved it before) — fewer than the bound wait of
/// clients that hold none: a flood of unknown clients never keeps a known one out.
pub(crate) const INSERT_OAUTH_REQUEST: &str = concat!(
    "INSERT INTO oauth_requests (",
    oauth_request_cols!(),
    ") SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS TEXT), \
     CAST($5 AS TEXT), CAST($6 AS TEXT), CAST($7 AS TEXT), CAST($8 AS TEXT), CAST($9 AS TEXT), \
     CAST($10 AS BIGINT), CAST($11 AS BIGINT), NULL, NULL, NULL, NULL, NULL, NULL \
     WHERE (EXISTS (SELECT 1 FROM oauth_tokens WHERE client_id = $3) \
          OR (SELECT count(*) FROM oauth_requests q WHERE q.decided_at IS NULL AND q.expires_at > $10 \
              AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = q.client_id)) < $12) \
     AND (SELECT count(*) FROM oauth_requests \
          WHERE client_id = $3 AND decided_at IS NULL AND expires_at > $10) < $13"
);
pub(crate) const OAUTH_REQUEST: &str = select!(oauth_request_cols, "oauth_requests WHERE id = $1");
pub(crate) const OAUTH_REQUEST_BY_CODE: &str =
    select!(oauth_request_cols, "oauth_requests WHERE code_hash = $1");
/// Requests waiting for the owner, oldest first.
pub(crate) const OAUTH_REQUESTS_PENDING: &str = select!(
    oauth_request_cols,
    "oauth_requests WHERE decided_at IS NULL AND expires_at > $1 ORDER BY created_at, id"
);
pub(crate) const DECIDE_OAUTH_REQUEST: &str = "UPDATE oauth_requests SET decided_at = $1, \
     reader_id = $2, granted_scope = $3 WHERE id = $4 AND decided_at IS NULL AND expires_at > $1";
/// An approved request's one code (a second visit of the page gets none).
pub(crate) const ISSUE_OAUTH_CODE: &str = "UPDATE oauth_requests SET code_hash = $1, \
     code_expires_at = $2 WHERE id = $3 AND reader_id IS NOT NULL AND code_hash IS NULL \
     AND expires_at > $4";
pub(crate) const REDEEM_OAUTH_CODE: &str = "UPDATE oauth_requests SET code_used_at = $1 \
     WHERE code_hash = $2 AND code_used_at IS NULL";
macro_rules! oauth_token_cols {
    () => {
        "token_hash, kind, reader_id, client_id, family, resource, scope, created_at, \
         expires_at, used_at, revoked_at"
    };
}
pub(crate) const INSERT_OAUTH_TOKEN: &str = insert!(
    "oauth_tokens",
    oauth_token_cols,
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11"
);
pub(crate) const OAUTH_TOKEN: &str =
    select!(oauth_token_cols, "oauth_tokens WHERE token_hash = $1");
/// A refresh token's one rotation.
pub(crate) const USE_OAUTH_REFRESH: &str = "UPDATE oauth_tokens SET used_at = $1 \
     WHERE token_hash = $2 AND kind = 'refresh' AND used_at IS NULL AND revoked_at IS NULL \
     AND expires_at > $1";
pub(crate) const REVOKE_OAUTH_FAMILY: &str =
    "UPDATE oauth_tokens SET revoked_at = $1 WHERE family = $2 AND revoked_at IS NULL";
pub(crate) const REVOKE_OAUTH_TOKENS_OF_READER: &str =
    "UPDATE oauth_tokens SET revoked_at = $1 WHERE reader_id = $2 AND revoked_at IS NULL";
/// What is over: tokens and requests past their expiry, clients never approved after a day.
macro_rules! wait_cols {
    () => {
        "id, reader_id, session_id, generation, run_id, started_at, until_at"
    };
}
pub(crate) const INSERT_WAIT: &str = insert!("waits", wait_cols, "$1, $2, $3, $4, $5, $6, $7");
pub(crate) const END_WAIT: &str = "DELETE FROM waits WHERE id = $1";
/// Rows of waits whose process died, once their time is up.
pub(crate) const PURGE_WAITS: &str = "DELETE FROM waits WHERE until_at <= $1";
pub(crate) const LIVE_WAITS: &str = select!(
    wait_cols,
    "waits WHERE until_at > $1 ORDER BY started_at, id LIMIT $2"
);
macro_rules! snapshot_summary_cols {
    () => {
        "session_id, generation, run_id, workspace_id, features, index_sha256, lines, bytes, \
         created_at"
    };
}
/// A snapshot put (or put again) only while the store's snapshots, without the one it replaces,
/// stay within the bound (`$14`), in one statement: two processes sealing at once cannot both
/// pass a check the other's write breaks. `$blob` is the dialect's binary type, for the casts
/// PostgreSQL needs on the parameters of an `INSERT … SELECT`.
macro_rules! put_snapshot {
    ($blob:literal) => {
        concat!(
            "INSERT INTO snapshots (",
            $crate::vocab::snapshot_summary_cols!(),
            ", key_id, data_key, nonce, sealed) SELECT CAST($1 AS TEXT), CAST($2 AS BIGINT), \
             CAST($3 AS TEXT), CAST($4 AS TEXT), CAST($5 AS TEXT), CAST($6 AS TEXT), \
             CAST($7 AS BIGINT), CAST($8 AS BIGINT), CAST($9 AS BIGINT), CAST($10 AS TEXT), CAST($11 AS ",
            $blob,
            "), CAST($12 AS ",
            $blob,
            "), CAST($13 AS ",
            $blob,
            ") WHERE (SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM snapshots \
             WHERE NOT (session_id = $1 AND generation = $2 AND run_id = $3)) \
             + CAST($8 AS BIGINT) <= CAST($14 AS BIGINT) \
             ON CONFLICT (session_id, generation, run_id) DO UPDATE SET \
             workspace_id = excluded.workspace_id, features = excluded.features, \
             index_sha256 = excluded.index_sha256, lines = excluded.lines, bytes = excluded.bytes, \
             created_at = excluded.created_at, key_id = excluded.key_id, \
             data_key = excluded.data_key, nonce = excluded.nonce, sealed = excluded.sealed"
        )
    };
}
pub(crate) use {put_snapshot, snapshot_summary_cols};
pub(crate) const SNAPSHOT: &str = concat!(
    "SELECT ",
    snapshot_summary_cols!(),
    ", key_id, data_key, nonce, sealed FROM snapshots \
     WHERE session_id = $1 AND generation = $2 AND run_id = $3 AND data_key IS NOT NULL"
);
pub(crate) const SNAPSHOT_STAMP: &str = select!(
    snapshot_summary_cols,
    "snapshots WHERE session_id = $1 AND generation = $2 AND run_id = $3 AND data_key IS NOT NULL"
);
pub(crate) const SNAPSHOTS: &str = select!(
    snapshot_summary_cols,
    "snapshots WHERE data_key IS NOT NULL ORDER BY created_at, session_id, run_id"
);
/// Snapshots no live grant holds (a destroyed one's row left behind by a crash too).
pub(crate) const SNAPSHOTS_UNSHARED: &str = select!(
    snapshot_summary_cols,
    "snapshots s WHERE NOT EXISTS (SELECT 1 FROM grants g WHERE g.session_id = s.session_id \
     AND g.generation = s.generation AND g.run_id = s.run_id AND g.revoked_at IS NULL \
     AND g.expires_at > $1) ORDER BY created_at, session_id, run_id"
);
/// A snapshot's data key, deleted first: from here on its sealed bytes can be opened by nobody.
pub(crate) const SHRED_SNAPSHOT_KEY: &str = "UPDATE snapshots SET data_key = NULL \
     WHERE session_id = $1 AND generation = $2 AND run_id = $3";
macro_rules! snapshot_event_cols {
    () => {
        "id, at, event, session_id, generation, run_id, lines, bytes"
    };
}
pub(crate) const INSERT_SNAPSHOT_EVENT: &str = insert!(
    "snapshot_log",
    snapshot_event_cols,
    "$1, $2, $3, $4, $5, $6, $7, $8"
);
pub(crate) const SNAPSHOT_LOG: &str = select!(
    snapshot_event_cols,
    "snapshot_log ORDER BY at DESC, id DESC LIMIT $1"
);
pub(crate) const DELETE_SNAPSHOT: &str =
    "DELETE FROM snapshots WHERE session_id = $1 AND generation = $2 AND run_id = $3";

macro_rules! kept_summary_cols {
    () => {
        "session_id, generation, run_id, workspace_id, features, index_sha256, lines, bytes, \
         created_at, reason, kept_since"
    };
}
/// A kept copy put (or put again) only while every kept copy, without the one it replaces, stays
/// within the bound (`$16`), in one statement, as [`put_snapshot`]. Put again, it keeps its
/// reason (a run kept by name stays so when a rule would keep it too) and since when.
macro_rules! put_kept {
    ($blob:literal) => {
        concat!(
            "INSERT INTO kept_runs (",
            $crate::vocab::snapshot_summary_cols!(),
            ", key_id, data_key, nonce, sealed, reason, kept_since) SELECT CAST($1 AS TEXT), \
             CAST($2 AS BIGINT), CAST($3 AS TEXT), CAST($4 AS TEXT), CAST($5 AS TEXT), \
             CAST($6 AS TEXT), CAST($7 AS BIGINT), CAST($8 AS BIGINT), CAST($9 AS BIGINT), \
             CAST($10 AS TEXT), CAST($11 AS ",
            $blob,
            "), CAST($12 AS ",
            $blob,
            "), CAST($13 AS ",
            $blob,
            "), CAST($14 AS TEXT), CAST($15 AS BIGINT) \
             WHERE (SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM kept_runs \
             WHERE NOT (session_id = $1 AND generation = $2 AND run_id = $3)) \
             + CAST($8 AS BIGINT) <= CAST($16 AS BIGINT) \
             ON CONFLICT (session_id, generation, run_id) DO UPDATE SET \
             workspace_id = excluded.workspace_id, features = excluded.features, \
             index_sha256 = excluded.index_sha256, lines = excluded.lines, bytes = excluded.bytes, \
             created_at = excluded.created_at, key_id = excluded.key_id, \
             data_key = excluded.data_key, nonce = excluded.nonce, sealed = excluded.sealed"
        )
    };
}
pub(crate) use put_kept;
pub(crate) const KEPT: &str = concat!(
    "SELECT ",
    snapshot_summary_cols!(),
    ", key_id, data_key, nonce, sealed FROM kept_runs \
     WHERE session_id = $1 AND generation = $2 AND run_id = $3 AND data_key IS NOT NULL"
);
pub(crate) const KEPT_STAMP: &str = select!(
    kept_summary_cols,
    "kept_runs WHERE session_id = $1 AND generation = $2 AND run_id = $3 AND data_key IS NOT NULL"
);
pub(crate) const KEPT_RUNS: &str = select!(
    kept_summary_cols,
    "kept_runs WHERE data_key IS NOT NULL ORDER BY kept_since, session_id, run_id"
);
pub(crate) const KEPT_BYTES: &str = "SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM kept_runs";
/// A kept copy's data key, deleted first: from here on its sealed bytes can be opened by nobody.
pub(crate) const SHRED_KEPT_KEY: &str = "UPDATE kept_runs SET data_key = NULL \
     WHERE session_id = $1 AND generation = $2 AND run_id = $3";
pub(crate) const DELETE_KEPT: &str =
    "DELETE FROM kept_runs WHERE session_id = $1 AND generation = $2 AND run_id = $3";
pub(crate) const KEEP_RULES: &str = "SELECT workspace_id, agent, created_at FROM keep_rules ORDER BY created_at, workspace_id, agent";
/// A keep rule added only while there are fewer than `$4`, and not already there.
pub(crate) const PUT_KEEP_RULE: &str = "INSERT INTO keep_rules (workspace_id, agent, created_at) \
     SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS BIGINT) \
     WHERE (SELECT COUNT(*) FROM keep_rules) < CAST($4 AS BIGINT) \
     ON CONFLICT (workspace_id, agent) DO NOTHING";
pub(crate) const REMOVE_KEEP_RULES: &str = "DELETE FROM keep_rules WHERE workspace_id = $1";
pub(crate) const REMOVE_KEEP_RULE: &str =
    "DELETE FROM keep_rules WHERE workspace_id = $1 AND agent = $2";

pub(crate) const PURGE_OAUTH_TOKENS: &str = "DELETE FROM oauth_tokens WHERE expires_at <= $1";
pub(crate) const PURGE_OAUTH_REQUESTS: &str = "DELETE FROM oauth_requests WHERE expires_at <= $1 AND (code_expires_at IS NULL OR code_expires_at <= $1)";
pub(crate) const PURGE_OAUTH_CLIENTS: &str =
    "DELETE FROM oauth_clients WHERE approved_at IS NULL AND created_at <= $1";
/// The live reader of an id, with its live grants (as [`READER_OF_KEY`]).
pub(crate) const READER_OF_ID: &str = concat!(
    "SELECT r.id, r.name, r.key_hash, r.created_at, r.removed_at, ",
    grant_read_cols!(),
    " FROM readers r LEFT JOIN grants g ON g.reader_id = r.id AND g.revoked_at IS NULL \
     AND g.expires_at > $1 WHERE r.id = $2 AND r.removed_at IS NULL \
     ORDER BY g.created_at DESC, g.id DESC"
);
/// The newest start record with an idempotency key at or after a time (a replay).
pub(crate) const START_REPLAY: &str = select!(
    start_cols,
    "start_records WHERE idempotency_key = $1 AND created_at >= $2 ORDER BY created_at DESC LIMIT 1"
);
pub(crate) const INSERT_START: &str = insert!(
    "start_records",
    start_cols,
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13"
);
pub(crate) const START_RECORD: &str = select!(start_cols, "start_records WHERE start_id = $1");
/// Deliberately not selecting the sealed columns.
pub(crate) const START_META: &str = select!(start_meta_cols, "start_records WHERE start_id = $1");
/// Start records at or after a time, oldest first, at most so many (`audit`).
pub(crate) const AUDIT_OLDEST_FIRST: &str = select!(
    start_meta_cols,
    "start_records WHERE created_at >= $1 ORDER BY created_at, start_id LIMIT $2"
);

macro_rules! audit_checkpoint_cols {
    () => {
        "seq, kind, after_ms, upto_ms, records, receipts, digest, chain, created_at"
    };
}
/// Every checkpoint of the gate's log, in order.
pub(crate) const AUDIT_CHECKPOINTS: &str =
    select!(audit_checkpoint_cols, "audit_checkpoints ORDER BY seq");
/// A checkpoint appended only as the next of the chain (its `seq` one past the last one's), so
/// that two maintenance passes at once never both append.
pub(crate) const INSERT_AUDIT_CHECKPOINT: &str = concat!(
    "INSERT INTO audit_checkpoints (",
    audit_checkpoint_cols!(),
    ") SELECT CAST($1 AS BIGINT), CAST($2 AS TEXT), CAST($3 AS BIGINT), CAST($4 AS BIGINT), \
     CAST($5 AS BIGINT), CAST($6 AS BIGINT), CAST($7 AS TEXT), CAST($8 AS TEXT), \
     CAST($9 AS BIGINT) \
     WHERE (SELECT COALESCE(max(seq), 0) FROM audit_checkpoints) = $1 - 1"
);
/// The start records made in (`$1`, `$2`], oldest first (then by id), at most `$3`.
pub(crate) const AUDIT_RANGE: &str = select!(
    start_meta_cols,
    "start_records WHERE created_at > $1 AND created_at <= $2 ORDER BY created_at, start_id LIMIT $3"
);
/// The receipts of the start records made in (`$1`, `$2`], in the order of their start records
/// (made, then id), then their own (made, then id): one statement for a whole range.
pub(crate) const AUDIT_RANGE_RECEIPTS: &str = "SELECT r.receipt_id, r.start_id, r.outcome, \
     r.result_digest, r.output_bytes, r.created_at, r.evidence, r.state FROM receipts r \
     JOIN start_records s ON s.start_id = r.start_id \
     WHERE s.created_at > $1 AND s.created_at <= $2 \
     ORDER BY s.created_at, s.start_id, r.created_at, r.receipt_id";

/// Start records and the receipts read for their range, each receipt put with its record (in
/// the order read); receipts of records not among them (past a limit) are left out.
pub(crate) fn with_range_receipts(metas: Vec<StartMeta>, receipts: Vec<Receipt>) -> AuditRows {
    let mut by_start: std::collections::HashMap<String, Vec<Receipt>> =
        std::collections::HashMap::with_capacity(metas.len());
    for r in receipts {
        by_start.entry(r.start_id.clone()).or_default().push(r);
    }
    metas
        .into_iter()
        .map(|m| {
            let r = by_start.remove(&m.start_id).unwrap_or_default();
            (m, r)
        })
        .collect()
}

/// When the start record `$3` places after the first made after `$1` (up to `$2`) was made:
/// where a seal of about that many ends.
pub(crate) const AUDIT_NTH_TIME: &str = "SELECT created_at FROM start_records \
     WHERE created_at > $1 AND created_at <= $2 ORDER BY created_at LIMIT 1 OFFSET $3";
/// How many start records were made after `$1`.
pub(crate) const AUDIT_COUNT_AFTER: &str =
    "SELECT count(*) FROM start_records WHERE created_at > $1";
/// The receipts, then the start records, made up to `$1` (a prune; the triggers allow it only
/// once a prune checkpoint covers them).
pub(crate) const PRUNE_RECEIPTS: &str = "DELETE FROM receipts WHERE start_id IN \
     (SELECT start_id FROM start_records WHERE created_at <= $1)";
pub(crate) const PRUNE_STARTS: &str = "DELETE FROM start_records WHERE created_at <= $1";
/// The owner's settings.
pub(crate) const SETTING: &str = "SELECT value FROM settings WHERE key = $1";
pub(crate) const PUT_SETTING: &str = "INSERT INTO settings (key, value) VALUES ($1, $2) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// An audit statement's conditions on `start_records s` and their values, `$1` on in the order
/// they are added: only the filters set, so that each statement is one an index serves (SQLite
/// fixes a plan at prepare time; `$1 IS NULL OR …` would keep it from using any).
#[derive(Default)]
struct AuditWhere<'a> {
    conditions: Vec<String>,
    values: Vec<Value<'a>>,
}

impl<'a> AuditWhere<'a> {
    /// Binds `v` as the next placeholder and names it.
    fn bind(&mut self, v: impl Into<Value<'a>>) -> String {
        self.values.push(v.into());
        format!("${}", self.values.len())
    }

    /// `f`'s conditions, continuing after the record `before` (its time and start id; newest
    /// first) when it is set. `run_id` is the dialect's expression for a start record's run id
    /// ([`crate::sqlite`]'s and [`crate::postgres`]'s `RUN_ID_OF_START`), written exactly as its
    /// index is built on.
    fn of(f: &'a crate::AuditFilter, before: Option<(i64, &'a str)>, run_id: &str) -> Self {
        let mut w = AuditWhere::default();
        if let Some(ms) = f.since_ms {
            let p = w.bind(ms);
            w.conditions.push(format!("s.created_at >= {p}"));
        }
        if let Some(g) = &f.grant_id {
            let p = w.bind(g);
            w.conditions.push(format!("s.grant_id = {p}"));
        }
        if let Some(r) = &f.reader_id {
            let p = w.bind(r);
            w.conditions.push(format!("s.reader_id = {p}"));
        }
        if let Some(r) = &f.run_id {
            let p = w.bind(r);
            w.conditions.push(format!("{run_id} = {p}"));
        }
        if let Some(t) = &f.tool {
            let p = w.bind(t);
            w.conditions.push(format!("s.tool = {p}"));
        }
        if let Some(o) = f.outcome {
            w.conditions.push(outcome_condition(o).to_owned());
        }
        if let Some((at_ms, start_id)) = before {
            let (at, id) = (w.bind(at_ms), w.bind(start_id));
            w.conditions
                .push(format!("(s.created_at, s.start_id) < ({at}, {id})"));
        }
        w
    }

    fn clause(&self) -> String {
        if self.conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.conditions.join(" AND "))
        }
    }
}

/// A call with a receipt of outcome `o` (or, `interrupted`, with none); the receipts index
/// finds a start record's receipts.
fn outcome_condition(o: crate::AuditOutcome) -> &'static str {
    use crate::AuditOutcome as O;
    match o {
        O::Ok => {
            "EXISTS (SELECT 1 FROM receipts r WHERE r.start_id = s.start_id AND r.outcome = 'ok')"
        }
        O::Refused => {
            "EXISTS (SELECT 1 FROM receipts r WHERE r.start_id = s.start_id \
             AND substr(r.outcome, 1, 8) = 'refused:')"
        }
        O::Timeout => {
            "EXISTS (SELECT 1 FROM receipts r WHERE r.start_id = s.start_id AND r.outcome = 'timeout')"
        }
        O::InvalidOutput => {
            "EXISTS (SELECT 1 FROM receipts r WHERE r.start_id = s.start_id \
             AND r.outcome = 'invalid_output')"
        }
        O::Interrupted => "NOT EXISTS (SELECT 1 FROM receipts r WHERE r.start_id = s.start_id)",
    }
}

/// A cursor as the record it continues after: its time and start id.
fn cursor_of(c: Option<&crate::AuditCursor>) -> Option<(i64, &str)> {
    c.map(|c| (c.created_at_ms, c.start_id.as_str()))
}

/// A page of the audit: the start records `f` lets through, newest first, at most `limit`
/// (≤ [`crate::AUDIT_PAGE_MAX`]); the statement and its values.
pub(crate) fn audit_page_sql<'a>(
    f: &'a crate::AuditFilter,
    limit: u32,
    run_id: &str,
) -> (String, Vec<Value<'a>>) {
    let mut w = AuditWhere::of(f, cursor_of(f.before.as_ref()), run_id);
    let clause = w.clause();
    let limit = w.bind(i64::from(limit.min(crate::AUDIT_PAGE_MAX)));
    let sql = format!(
        concat!(
            "SELECT ",
            start_meta_cols!(),
            " FROM start_records s{} ORDER BY s.created_at DESC, s.start_id DESC LIMIT {}"
        ),
        clause, limit
    );
    (sql, w.values)
}

/// How many start records `f` lets through after the page `shown` (read with
/// [`audit_page_sql`] and `limit`): the statement counting them and its values, or `None` when
/// the page was not full, so nothing is left. The count reads the same index the next page
/// would, from the page's last row on.
pub(crate) fn audit_more_sql<'a>(
    f: &'a crate::AuditFilter,
    limit: u32,
    shown: &'a [StartMeta],
    run_id: &str,
) -> Option<(String, Vec<Value<'a>>)> {
    if shown.len() < limit.min(crate::AUDIT_PAGE_MAX) as usize {
        return None;
    }
    let after = match shown.last() {
        Some(last) => Some((last.created_at_ms, last.start_id.as_str())),
        None => cursor_of(f.before.as_ref()),
    };
    let w = AuditWhere::of(f, after, run_id);
    let sql = format!("SELECT count(*) FROM start_records s{}", w.clause());
    Some((sql, w.values))
}

pub(crate) const INSERT_RECEIPT: &str =
    insert!("receipts", receipt_cols, "$1, $2, $3, $4, $5, $6, $7, $8");
pub(crate) const RECEIPTS_OF_START: &str = select!(
    receipt_cols,
    "receipts WHERE start_id = $1 ORDER BY created_at, receipt_id"
);
pub(crate) const INSERT_ARTIFACT: &str = insert!(
    "artifacts",
    artifact_cols,
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12"
);
/// The artifacts of exactly one target, oldest first.
pub(crate) const ARTIFACTS: &str = select!(
    artifact_cols,
    "artifacts WHERE instance = $1 AND revision = $2 AND workspace_id = $3 \
     AND session_id = $4 AND generation = $5 AND run_id = $6 ORDER BY created_at, artifact_id"
);
pub(crate) const PUT_SUPERVISED: &str = insert!(
    "supervised_runs",
    supervised_cols,
    "$1, $2, $3, $4, $5, $6",
    " ON CONFLICT (session_id, generation, run_id) DO UPDATE SET supervisor_id = excluded.supervisor_id, \
     updated_at = excluded.updated_at, record = excluded.record"
);
pub(crate) const SUPERVISED: &str =
    "SELECT record FROM supervised_runs WHERE session_id = $1 AND generation = $2 AND run_id = $3";
pub(crate) const PUT_SECRET: &str = insert!(
    "secrets",
    secret_cols,
    "$1, $2, $3, $4, $5",
    " ON CONFLICT (name) DO UPDATE SET key_id = excluded.key_id, nonce = excluded.nonce, \
     ciphertext = excluded.ciphertext, created_at = excluded.created_at"
);
pub(crate) const SECRETS: &str = select!(secret_cols, "secrets ORDER BY name");

macro_rules! access_request_cols {
    () => {
        "id, reader_id, fingerprint, key_id, sealed, latest, features, duration_s, created_at, \
         expires_at, decided_at, decision, grant_ids"
    };
}
/// What a request waiting for the owner is, as a condition on a row of `access_requests` at `$T`
/// (the statement's own placeholder for now, spliced in by each statement).
macro_rules! access_pending {
    ($now:literal) => {
        concat!("decided_at IS NULL AND expires_at > ", $now)
    };
}
/// A request is filed only while the requests waiting, in all and of its reader, are under their
/// bounds and no identical one of its reader waits — in one statement: two calls at once cannot
/// both pass a check the other's insert breaks.
pub(crate) const INSERT_ACCESS_REQUEST: &str = concat!(
    "INSERT INTO access_requests (",
    access_request_cols!(),
    ") SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS TEXT), \
     CAST($5 AS TEXT), CAST($6 AS BIGINT), CAST($7 AS TEXT), CAST($8 AS BIGINT), \
     CAST($9 AS BIGINT), CAST($10 AS BIGINT), NULL, NULL, NULL \
     WHERE (SELECT count(*) FROM access_requests WHERE ",
    access_pending!("$9"),
    ") < $11 AND (SELECT count(*) FROM access_requests WHERE reader_id = $2 AND ",
    access_pending!("$9"),
    ") < $12 AND NOT EXISTS (SELECT 1 FROM access_requests WHERE reader_id = $2 \
     AND fingerprint = $3 AND ",
    access_pending!("$9"),
    ")"
);
/// The waiting request of reader `$1` with fingerprint `$2` at `$3`, if any.
pub(crate) const SAME_ACCESS_REQUEST: &str = concat!(
    "SELECT id FROM access_requests WHERE reader_id = $1 AND fingerprint = $2 AND ",
    access_pending!("$3")
);
pub(crate) const ACCESS_REQUEST: &str =
    select!(access_request_cols, "access_requests WHERE id = $1");
/// Requests waiting for the owner at `$1`, oldest first.
pub(crate) const ACCESS_REQUESTS_PENDING: &str = select!(
    access_request_cols,
    concat!(
        "access_requests WHERE ",
        access_pending!("$1"),
        " ORDER BY created_at, id"
    )
);
pub(crate) const ACCESS_REQUESTS_PENDING_COUNT: &str = concat!(
    "SELECT count(*) FROM access_requests WHERE ",
    access_pending!("$1")
);
/// The owner's decision on a request still waiting at `$1`.
pub(crate) const DECIDE_ACCESS_REQUEST: &str = concat!(
    "UPDATE access_requests SET decided_at = $1, decision = $2 WHERE id = $3 AND ",
    access_pending!("$1")
);
/// The grants an approval made.
pub(crate) const ACCESS_REQUEST_GRANTS: &str = "UPDATE access_requests SET grant_ids = $1 \
     WHERE id = $2 AND decision = 'approved' AND grant_ids IS NULL";
/// Requests made before `$1`: decided or not, a day on nobody waits for them.
pub(crate) const PURGE_ACCESS_REQUESTS: &str = "DELETE FROM access_requests WHERE created_at <= $1";
/// A removed reader's requests.
pub(crate) const DROP_ACCESS_REQUESTS_OF_READER: &str =
    "DELETE FROM access_requests WHERE reader_id = $1";

/// Every statement above, for the test that SQLite numbers their placeholders as PostgreSQL does.
#[cfg(test)]
pub(crate) const SHARED_STATEMENTS: &[&str] = &[
    SET_RUN_START,
    WORKSPACE_BY_ID,
    SESSION_BY_ID,
    ENTRIES,
    RUNS,
    RUNS_BY_ID,
    RUN,
    INSERT_GRANT,
    READER_GRANTS_FOR_TARGET,
    GRANT_OF_KEY,
    GRANTS,
    REVOKE_GRANT,
    REVOKE_GRANTS_OF_READER,
    INSERT_READER,
    READER_OF_KEY,
    READER_BY_NAME,
    READERS,
    ROTATE_READER_KEY,
    REMOVE_READER,
    READER_LAST_READS,
    READER_GRANT_TALLY,
    START_REPLAY,
    INSERT_START,
    START_RECORD,
    START_META,
    INSERT_RECEIPT,
    RECEIPTS_OF_START,
    INSERT_ARTIFACT,
    ARTIFACTS,
    PUT_SUPERVISED,
    SUPERVISED,
    PUT_SECRET,
    SECRETS,
    AUDIT_OLDEST_FIRST,
    INSERT_OAUTH_CLIENT,
    OAUTH_CLIENT,
    APPROVE_OAUTH_CLIENT,
    INSERT_OAUTH_REQUEST,
    OAUTH_REQUEST,
    OAUTH_REQUESTS_PENDING,
    DECIDE_OAUTH_REQUEST,
    ISSUE_OAUTH_CODE,
    REDEEM_OAUTH_CODE,
    INSERT_OAUTH_TOKEN,
    OAUTH_TOKEN,
    USE_OAUTH_REFRESH,
    REVOKE_OAUTH_FAMILY,
    REVOKE_OAUTH_TOKENS_OF_READER,
    AUDIT_CHECKPOINTS,
    INSERT_AUDIT_CHECKPOINT,
    AUDIT_RANGE,
    AUDIT_RANGE_RECEIPTS,
    AUDIT_NTH_TIME,
    AUDIT_COUNT_AFTER,
    PRUNE_RECEIPTS,
    PRUNE_STARTS,
    SETTING,
    PUT_SETTING,
    INSERT_REFUSAL,
    PRUNE_REFUSALS,
    REFUSALS_PAGE,
    REFUSALS_COUNT,
    COUNT_UNADMITTED,
    PRUNE_UNADMITTED,
    UNADMITTED_TALLIES,
    INSERT_ACCESS_REQUEST,
    SAME_ACCESS_REQUEST,
    ACCESS_REQUEST,
    ACCESS_REQUESTS_PENDING,
    ACCESS_REQUESTS_PENDING_COUNT,
    DECIDE_ACCESS_REQUEST,
    ACCESS_REQUEST_GRANTS,
    PURGE_ACCESS_REQUESTS,
    DROP_ACCESS_REQUESTS_OF_READER,
];

pub(crate) const INSERT_REFUSAL: &str = "INSERT INTO refusals \
     (reader_id, tool, code, target_json, run_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)";
/// The refused calls more than `$1` older than the newest (by `seq`, on its index).
pub(crate) const PRUNE_REFUSALS: &str =
    "DELETE FROM refusals WHERE seq <= (SELECT max(seq) FROM refusals) - $1";
/// The refusal log's filter, `$1` to `$4`: since, reader, run, tool (each `NULL` for "any").
macro_rules! refusals_where {
    () => {
        "FROM refusals WHERE created_at >= $1 \
         AND (CAST($2 AS TEXT) IS NULL OR reader_id = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR run_id = $3) \
         AND (CAST($4 AS TEXT) IS NULL OR tool = $4)"
    };
}
pub(crate) const REFUSALS_PAGE: &str = concat!(
    "SELECT reader_id, tool, code, target_json, created_at ",
    refusals_where!(),
    " ORDER BY created_at DESC, seq DESC LIMIT $5"
);
pub(crate) const REFUSALS_COUNT: &str = concat!("SELECT count(*) ", refusals_where!());
/// One more call in the bucket of a minute and code.
pub(crate) const COUNT_UNADMITTED: &str = "INSERT INTO unadmitted_calls (minute_ms, code, calls) \
     VALUES ($1, $2, 1) ON CONFLICT (minute_ms, code) \
     DO UPDATE SET calls = unadmitted_calls.calls + 1";
/// The buckets more than `$1` ms before the newest minute counted.
pub(crate) const PRUNE_UNADMITTED: &str = "DELETE FROM unadmitted_calls \
     WHERE minute_ms <= (SELECT max(minute_ms) FROM unadmitted_calls) - $1";
pub(crate) const UNADMITTED_TALLIES: &str = "SELECT code, CAST(sum(calls) AS BIGINT), \
     min(minute_ms), max(minute_ms) FROM unadmitted_calls WHERE minute_ms >= $1 \
     GROUP BY code ORDER BY code";

/// The values of [`INSERT_REFUSAL`], with the refusal's target as JSON.
pub(crate) fn refusal_values<'a>(
    r: &'a crate::Refusal,
    target_json: &'a Option<String>,
) -> [Value<'a>; 6] {
    values![
        &r.reader_id,
        &r.tool,
        &r.code,
        target_json,
        r.target.as_ref().map(|t| t.run_id.as_str()),
        r.created_at_ms,
    ]
}

/// The values of [`REFUSALS_PAGE`]'s filter, `$1` to `$4`.
pub(crate) fn refusal_filter_values(f: &crate::RefusalFilter) -> [Value<'_>; 4] {
    values![
        f.since_ms.unwrap_or(i64::MIN),
        f.reader_id.as_deref(),
        f.run_id.as_deref(),
        f.tool.as_deref(),
    ]
}

/// A row of [`REFUSALS_PAGE`].
pub(crate) fn refusal(r: &dyn Cols) -> Result<crate::Refusal> {
    Ok(crate::Refusal {
        reader_id: r.text(0)?,
        tool: r.text(1)?,
        code: r.text(2)?,
        target: r
            .opt_text(3)?
            .map(|t| serde_json::from_str(&t))
            .transpose()?,
        created_at_ms: r.int(4)?,
    })
}

/// The start of the minute of `ms` (saturating at the earliest time).
pub(crate) fn minute_of(ms: i64) -> i64 {
    ms.div_euclid(crate::UNADMITTED_MINUTE_MS)
        .saturating_mul(crate::UNADMITTED_MINUTE_MS)
}

/// A row of [`UNADMITTED_TALLIES`].
pub(crate) fn unadmitted_tally(r: &dyn Cols) -> Result<crate::UnadmittedTally> {
    Ok(crate::UnadmittedTally {
        code: r.text(0)?,
        calls: u64_of(r.int(1)?)?,
        first_minute_ms: r.int(2)?,
        last_minute_ms: r.int(3)?,
    })
}

/// The values of a run filter's placeholders, `$1` to `$3`: agent, workspace, status (each
/// `NULL` for "any").
pub(crate) fn filter_values(f: &crate::RunFilter) -> [Value<'_>; 3] {
    values![
        f.agent.map(Agent::as_str),
        f.workspace_id.as_deref(),
        f.status.as_deref()
    ]
}

/// [`filter_values`], then the page: `$4` the most rows, `$5` how many to skip.
pub(crate) fn page_values(f: &crate::RunFilter, limit: u32, offset: u64) -> Vec<Value<'_>> {
    let mut v = Vec::from(filter_values(f));
    v.extend(values![i64::from(limit.min(crate::RUNS_PAGE_MAX)), offset]);
    v
}

/// A row of [`RUNS_TO_BACKFILL`] as the values of [`SET_RUN_START`], or `None` when its record
/// has no readable start (it keeps none and lists last, as a new run without one would).
pub(crate) fn run_start(r: &dyn Cols) -> Result<Option<[Value<'static>; 4]>> {
    let started = crate::model::stored_run_started_ms(&r.text(3)?);
    Ok(match started {
        Some(ms) => Some(values![ms, r.text(0)?, r.int(1)?, r.text(2)?]),
        None => None,
    })
}

/// A workspace registered for the first time: a fresh random id, revision 1, enabled.
pub(crate) fn new_workspace(canonical_path: &str, name: &str) -> Result<Workspace> {
    let bytes =
        runread_core::random_bytes::<8>().map_err(|e| StoreError::Unavailable(e.to_string()))?;
    Ok(Workspace {
        id: format!("w-{}", hex::encode(bytes)),
        name: name.to_owned(),
        path: canonical_path.to_owned(),
        revision: 1,
        enabled: true,
    })
}

/// A registered workspace registered again under `name`, and whether its row changes. Only what
/// can change what is readable moves the revision: a removed workspace registered again is enabled
/// under a new revision (grants made before its removal stay refused); the same root under the
/// same name changes nothing, and a new name only renames it (a name is in no target).
pub(crate) fn re_registered(mut ws: Workspace, name: &str) -> (Workspace, bool) {
    if ws.enabled && ws.name == name {
        return (ws, false);
    }
    if !ws.enabled {
        ws.revision += 1;
        ws.enabled = true;
    }
    ws.name = name.to_owned();
    (ws, true)
}

/// A workspace removed: disabled under a new revision, so that every grant made under the old one
/// is refused whatever else happens to it.
pub(crate) fn disabled(mut ws: Workspace) -> Workspace {
    ws.revision += 1;
    ws.enabled = false;
    ws
}

/// A row of [`select_workspaces!`].
pub(crate) fn workspace(r: &dyn Cols) -> Result<Workspace> {
    Ok(Workspace {
        id: r.text(0)?,
        name: r.text(1)?,
        path: r.text(2)?,
        revision: u64_of(r.int(3)?)?,
        enabled: r.flag(4)?,
    })
}

/// A row of [`select_sessions!`].
pub(crate) fn session(r: &dyn Cols) -> Result<SessionRecord> {
    Ok(SessionRecord {
        session_id: r.text(0)?,
        agent: agent_at(r, 1)?,
        path: r.text(2)?,
        workspace_id: r.text(3)?,
        generation: u64_of(r.int(4)?)?,
        header: serde_json::from_str(&r.text(5)?)?,
        identity: identity_at(r, 6, 20)?,
        consumed: u64_of(r.int(11)?)?,
        lines: u64_of(r.int(12)?)?,
        tail_sha256: r.opt_text(13)?,
        malformed_lines: serde_json::from_str(&r.text(14)?)?,
        torn: r.flag(15)?,
        branch_complete: r.flag(16)?,
        session_name: r.opt_text(17)?,
        saved_model: r.opt_text(18)?,
        ingested_at_ms: r.int(19)?,
        over_bounds: r.flag(21)?,
        index_version: u32_of(r.int(22)?)?,
    })
}

/// The agent named at column `i`; a name runread does not know is corrupt data, never a guess.
fn agent_at(r: &dyn Cols, i: usize) -> Result<Agent> {
    let name = r.text(i)?;
    Agent::parse(&name).ok_or_else(|| StoreError::Corrupt(format!("unknown agent {name:?}")))
}

/// A file identity stored as dev, ino, nlink, size, mtime_ns from column `first` on, and
/// ctime_ns at column `ctime` (added later, so not always next to the others).
fn identity_at(r: &dyn Cols, first: usize, ctime: usize) -> Result<FileIdentity> {
    Ok(FileIdentity {
        dev: u64_of(r.int(first)?)?,
        ino: u64_of(r.int(first + 1)?)?,
        nlink: u64_of(r.int(first + 2)?)?,
        size: u64_of(r.int(first + 3)?)?,
        mtime_ns: r.int(first + 4)?,
        ctime_ns: r.int(ctime)?,
    })
}

pub(crate) fn session_stamp(r: &dyn Cols) -> Result<SessionStamp> {
    Ok(SessionStamp {
        path: r.text(0)?,
        agent: agent_at(r, 1)?,
        identity: identity_at(r, 2, 7)?,
        index_version: u32_of(r.int(8)?)?,
    })
}

/// The values of [`session_cols!`], in order.
pub(crate) fn session_values(s: &SessionRecord) -> Result<[Value<'_>; 23]> {
    Ok(values![
        &s.session_id,
        s.agent.as_str(),
        &s.path,
        &s.workspace_id,
        s.generation,
        serde_json::to_string(&s.header)?,
        s.identity.dev,
        s.identity.ino,
        s.identity.nlink,
        s.identity.size,
        s.identity.mtime_ns,
        s.consumed,
        s.lines,
        &s.tail_sha256,
        serde_json::to_string(&s.malformed_lines)?,
        s.torn,
        s.branch_complete,
        &s.session_name,
        &s.saved_model,
        s.ingested_at_ms,
        s.identity.ctime_ns,
        s.over_bounds,
        i64::from(s.index_version),
    ])
}

/// The six target columns stored in the order instance, revision, workspace, session,
/// generation, run, starting at column `i`.
fn target_at(r: &dyn Cols, i: usize) -> Result<Target> {
    Ok(Target {
        instance: r.text(i)?,
        revision: u64_of(r.int(i + 1)?)?,
        workspace_id: r.text(i + 2)?,
        session_id: r.text(i + 3)?,
        generation: u64_of(r.int(i + 4)?)?,
        run_id: r.text(i + 5)?,
    })
}

/// The values of the six target columns, in [`target_at`]'s order.
pub(crate) fn target_values(t: &Target) -> [Value<'_>; 6] {
    [
        Value::from(&t.instance),
        Value::from(t.revision),
        Value::from(&t.workspace_id),
        Value::from(&t.session_id),
        Value::from(t.generation),
        Value::from(&t.run_id),
    ]
}

/// A row of [`grant_read_cols!`].
pub(crate) fn grant(r: &dyn Cols) -> Result<Grant> {
    grant_at(r, 0)
}

/// [`grant_read_cols!`] from column `i` on.
fn grant_at(r: &dyn Cols, i: usize) -> Result<Grant> {
    Ok(Grant {
        id: r.text(i)?,
        reader_id: r.text(i + 1)?,
        reader_name: r.text(i + 2)?,
        target: target_at(r, i + 3)?,
        features: Feature::parse_list(&r.text(i + 9)?).map_err(StoreError::Corrupt)?,
        created_at_ms: r.int(i + 10)?,
        expires_at_ms: r.int(i + 11)?,
        revoked_at_ms: r.opt_int(i + 12)?,
        label: r.opt_text(i + 13)?,
    })
}

/// The rows of [`READER_OF_KEY`] or [`READER_OF_ID`] as the reader and its grants.
pub(crate) fn reader_with_grants(
    rows: Vec<(Reader, Option<Grant>)>,
) -> Option<(Reader, Vec<Grant>)> {
    let mut rows = rows.into_iter();
    let (reader, first) = rows.next()?;
    let grants = first
        .into_iter()
        .chain(rows.filter_map(|(_, g)| g))
        .collect();
    Some((reader, grants))
}

/// A row of [`READER_OF_KEY`]: the reader, and one of its live grants unless it has none.
pub(crate) fn reader_and_grant(r: &dyn Cols) -> Result<(Reader, Option<Grant>)> {
    let grant = match r.opt_text(5)? {
        Some(_) => Some(grant_at(r, 5)?),
        None => None,
    };
    Ok((reader(r)?, grant))
}

/// The values of [`grant_cols!`] (the reader's name is the reader's, not written here).
pub(crate) fn grant_values(g: &Grant) -> Vec<Value<'_>> {
    let mut v = Vec::from(values![&g.id, &g.reader_id]);
    v.extend(target_values(&g.target));
    v.extend(values![
        features_to_string(&g.features),
        g.created_at_ms,
        g.expires_at_ms,
        g.revoked_at_ms,
        g.label.as_deref(),
    ]);
    v
}

pub(crate) fn oauth_client(r: &dyn Cols) -> Result<OAuthClient> {
    Ok(OAuthClient {
        client_id: r.text(0)?,
        name: r.text(1)?,
        redirect_uris: serde_json::from_str(&r.text(2)?)?,
        created_at_ms: r.int(3)?,
        approved_at_ms: r.opt_int(4)?,
        registrant: r.text(5)?,
    })
}

pub(crate) fn oauth_request(r: &dyn Cols) -> Result<OAuthRequest> {
    Ok(OAuthRequest {
        id: r.text(0)?,
        user_code: r.text(1)?,
        client_id: r.text(2)?,
        client_name: r.text(3)?,
        redirect_uri: r.text(4)?,
        state_sha256: r.opt_text(5)?,
        code_challenge: r.text(6)?,
        resource: r.text(7)?,
        scope: r.text(8)?,
        created_at_ms: r.int(9)?,
        expires_at_ms: r.int(10)?,
        decided_at_ms: r.opt_int(11)?,
        reader_id: r.opt_text(12)?,
        granted_scope: r.opt_text(13)?,
        code_hash: r.opt_text(14)?,
        code_expires_at_ms: r.opt_int(15)?,
        code_used_at_ms: r.opt_int(16)?,
    })
}

pub(crate) fn oauth_request_values(
    q: &OAuthRequest,
    bounds: crate::OAuthRequestBounds,
) -> [Value<'_>; 13] {
    values![
        &q.id,
        &q.user_code,
        &q.client_id,
        &q.client_name,
        &q.redirect_uri,
        &q.state_sha256,
        &q.code_challenge,
        &q.resource,
        &q.scope,
        q.created_at_ms,
        q.expires_at_ms,
        bounds.pending_max,
        bounds.pending_per_client_max,
    ]
}

pub(crate) fn access_request(r: &dyn Cols) -> Result<crate::AccessRequestRecord> {
    let decision = r.opt_text(11)?;
    Ok(crate::AccessRequestRecord {
        id: r.text(0)?,
        reader_id: r.text(1)?,
        fingerprint: r.text(2)?,
        key_id: r.text(3)?,
        sealed: r.text(4)?,
        latest: u32_of(r.int(5)?)?,
        features: Feature::parse_list(&r.text(6)?).map_err(StoreError::Corrupt)?,
        duration_s: u64_of(r.int(7)?)?,
        created_at_ms: r.int(8)?,
        expires_at_ms: r.int(9)?,
        decided_at_ms: r.opt_int(10)?,
        approved: match decision.as_deref() {
            None => None,
            Some(DECISION_APPROVED) => Some(true),
            Some(DECISION_DENIED) => Some(false),
            Some(other) => {
                return Err(StoreError::Corrupt(format!(
                    "access request decision {other:?}"
                )));
            }
        },
        grant_ids: r
            .opt_text(12)?
            .map(|ids| ids.split_whitespace().map(str::to_owned).collect()),
    })
}

/// The decisions `access_requests.decision` holds.
pub(crate) const DECISION_APPROVED: &str = "approved";
pub(crate) const DECISION_DENIED: &str = "denied";

pub(crate) fn access_request_values(
    q: &crate::AccessRequestRecord,
    bounds: crate::AccessRequestBounds,
) -> [Value<'_>; 12] {
    values![
        &q.id,
        &q.reader_id,
        &q.fingerprint,
        &q.key_id,
        &q.sealed,
        i64::from(q.latest),
        features_to_string(&q.features),
        q.duration_s,
        q.created_at_ms,
        q.expires_at_ms,
        bounds.pending_max,
        bounds.pending_per_reader_max,
    ]
}

pub(crate) fn audit_checkpoint(r: &dyn Cols) -> Result<crate::AuditCheckpoint> {
    let kind = r.text(1)?;
    Ok(crate::AuditCheckpoint {
        seq: u64_of(r.int(0)?)?,
        kind: crate::CheckpointKind::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("audit checkpoint kind {kind:?}")))?,
        after_ms: r.int(2)?,
        upto_ms: r.int(3)?,
        records: u64_of(r.int(4)?)?,
        receipts: u64_of(r.int(5)?)?,
        digest: r.text(6)?,
        chain: r.text(7)?,
        created_at_ms: r.int(8)?,
    })
}

pub(crate) fn audit_checkpoint_values(c: &crate::AuditCheckpoint) -> [Value<'_>; 9] {
    values![
        c.seq,
        c.kind.as_str(),
        c.after_ms,
        c.upto_ms,
        c.records,
        c.receipts,
        &c.digest,
        &c.chain,
        c.created_at_ms,
    ]
}

pub(crate) fn snapshot_summary(r: &dyn Cols) -> Result<crate::SnapshotSummary> {
    Ok(crate::SnapshotSummary {
        session_id: r.text(0)?,
        generation: u64_of(r.int(1)?)?,
        run_id: r.text(2)?,
        workspace_id: r.text(3)?,
        features: Feature::parse_list(&r.text(4)?).map_err(StoreError::Corrupt)?,
        index_sha256: r.text(5)?,
        lines: u64_of(r.int(6)?)?,
        bytes: u64_of(r.int(7)?)?,
        created_at_ms: r.int(8)?,
    })
}

pub(crate) fn kept_summary(r: &dyn Cols) -> Result<crate::KeptSummary> {
    Ok(crate::KeptSummary {
        summary: snapshot_summary(r)?,
        reason: crate::KeepReason::parse(&r.text(9)?)
            .ok_or_else(|| StoreError::Corrupt("a kept run's reason".into()))?,
        kept_since_ms: r.int(10)?,
    })
}

pub(crate) fn keep_rule(r: &dyn Cols) -> Result<crate::KeepRule> {
    let agent = r.text(1)?;
    Ok(crate::KeepRule {
        workspace_id: r.text(0)?,
        agent: match agent.as_str() {
            "" => None,
            a => Some(
                Agent::parse(a).ok_or_else(|| StoreError::Corrupt("a keep rule's agent".into()))?,
            ),
        },
        created_at_ms: r.int(2)?,
    })
}

pub(crate) fn kept_values(
    s: &crate::SnapshotRecord,
    reason: crate::KeepReason,
    store_max_bytes: u64,
) -> [Value<'_>; 16] {
    let m = &s.summary;
    values![
        &m.session_id,
        i64_of(m.generation),
        &m.run_id,
        &m.workspace_id,
        features_to_string(&m.features),
        &m.index_sha256,
        i64_of(m.lines),
        i64_of(m.bytes),
        m.created_at_ms,
        &s.key_id,
        &s.data_key,
        &s.nonce,
        &s.sealed,
        reason.as_str(),
        m.created_at_ms,
        i64_of(store_max_bytes),
    ]
}

pub(crate) fn snapshot_event(r: &dyn Cols) -> Result<crate::SnapshotEvent> {
    Ok(crate::SnapshotEvent {
        id: r.text(0)?,
        at_ms: r.int(1)?,
        event: r.text(2)?,
        session_id: r.text(3)?,
        generation: u64_of(r.int(4)?)?,
        run_id: r.text(5)?,
        lines: u64_of(r.int(6)?)?,
        bytes: u64_of(r.int(7)?)?,
    })
}

pub(crate) fn snapshot_event_values(e: &crate::SnapshotEvent) -> [Value<'_>; 8] {
    values![
        &e.id,
        e.at_ms,
        &e.event,
        &e.session_id,
        i64_of(e.generation),
        &e.run_id,
        i64_of(e.lines),
        i64_of(e.bytes),
    ]
}

pub(crate) fn snapshot(r: &dyn Cols) -> Result<crate::SnapshotRecord> {
    Ok(crate::SnapshotRecord {
        summary: snapshot_summary(r)?,
        key_id: r.text(9)?,
        data_key: r.bytes(10)?,
        nonce: r.bytes(11)?,
        sealed: r.bytes(12)?,
    })
}

pub(crate) fn snapshot_values(s: &crate::SnapshotRecord, store_max_bytes: u64) -> [Value<'_>; 14] {
    let m = &s.summary;
    values![
        &m.session_id,
        i64_of(m.generation),
        &m.run_id,
        &m.workspace_id,
        features_to_string(&m.features),
        &m.index_sha256,
        i64_of(m.lines),
        i64_of(m.bytes),
        m.created_at_ms,
        &s.key_id,
        &s.data_key,
        &s.nonce,
        &s.sealed,
        i64_of(store_max_bytes),
    ]
}

pub(crate) fn wait(r: &dyn Cols) -> Result<crate::WaitRecord> {
    Ok(crate::WaitRecord {
        id: r.text(0)?,
        reader_id: r.text(1)?,
        session_id: r.text(2)?,
        generation: u64_of(r.int(3)?)?,
        run_id: r.text(4)?,
        started_at_ms: r.int(5)?,
        until_ms: r.int(6)?,
    })
}

pub(crate) fn wait_values(w: &crate::WaitRecord) -> [Value<'_>; 7] {
    values![
        &w.id,
        &w.reader_id,
        &w.session_id,
        i64_of(w.generation),
        &w.run_id,
        w.started_at_ms,
        w.until_ms,
    ]
}

pub(crate) fn oauth_token(r: &dyn Cols) -> Result<OAuthToken> {
    let kind = match r.text(1)?.as_str() {
        "access" => TokenKind::Access,
        "refresh" => TokenKind::Refresh,
        other => return Err(StoreError::Corrupt(format!("token kind {other:?}"))),
    };
    Ok(OAuthToken {
        token_hash: r.text(0)?,
        kind,
        reader_id: r.text(2)?,
        client_id: r.text(3)?,
        family: r.text(4)?,
        resource: r.text(5)?,
        scope: r.text(6)?,
        created_at_ms: r.int(7)?,
        expires_at_ms: r.int(8)?,
        used_at_ms: r.opt_int(9)?,
        revoked_at_ms: r.opt_int(10)?,
    })
}

pub(crate) fn oauth_token_values(t: &OAuthToken) -> [Value<'_>; 11] {
    values![
        &t.token_hash,
        t.kind.as_str(),
        &t.reader_id,
        &t.client_id,
        &t.family,
        &t.resource,
        &t.scope,
        t.created_at_ms,
        t.expires_at_ms,
        t.used_at_ms,
        t.revoked_at_ms,
    ]
}

/// A row of [`reader_cols!`].
pub(crate) fn reader(r: &dyn Cols) -> Result<Reader> {
    Ok(Reader {
        id: r.text(0)?,
        name: r.text(1)?,
        key_hash: r.text(2)?,
        created_at_ms: r.int(3)?,
        removed_at_ms: r.opt_int(4)?,
    })
}

pub(crate) fn reader_values(r: &Reader) -> [Value<'_>; 5] {
    values![
        &r.id,
        &r.name,
        &r.key_hash,
        r.created_at_ms,
        r.removed_at_ms
    ]
}

/// A row of [`start_meta_cols!`].
pub(crate) fn start_meta(r: &dyn Cols) -> Result<StartMeta> {
    Ok(StartMeta {
        start_id: r.text(0)?,
        idempotency_key: r.text(1)?,
        grant_id: r.text(2)?,
        key_hash_prefix: r.text(3)?,
        tool: r.text(4)?,
        binding_digest: r.text(5)?,
        target: serde_json::from_str(&r.text(6)?)?,
        input_digest: r.text(7)?,
        sealed_key_id: r.text(8)?,
        created_at_ms: r.int(9)?,
        reader_id: r.opt_text(10)?,
    })
}

/// A row of [`start_cols!`].
pub(crate) fn start_record(r: &dyn Cols) -> Result<StartRecord> {
    Ok(StartRecord {
        meta: start_meta(r)?,
        sealed_nonce: r.bytes(11)?,
        sealed_ciphertext: r.bytes(12)?,
    })
}

pub(crate) fn start_values(rec: &StartRecord) -> Result<[Value<'_>; 13]> {
    let m = &rec.meta;
    Ok(values![
        &m.start_id,
        &m.idempotency_key,
        &m.grant_id,
        &m.key_hash_prefix,
        &m.tool,
        &m.binding_digest,
        serde_json::to_string(&m.target)?,
        &m.input_digest,
        &m.sealed_key_id,
        m.created_at_ms,
        m.reader_id.as_deref(),
        &rec.sealed_nonce,
        &rec.sealed_ciphertext,
    ])
}

/// A row of [`receipt_cols!`].
pub(crate) fn receipt(r: &dyn Cols) -> Result<Receipt> {
    Ok(Receipt {
        receipt_id: r.text(0)?,
        start_id: r.text(1)?,
        outcome: r.text(2)?,
        result_digest: r.opt_text(3)?,
        output_bytes: r.opt_int(4)?.map(u64_of).transpose()?,
        created_at_ms: r.int(5)?,
        evidence: r.opt_text(6)?,
        state: r.opt_text(7)?,
    })
}

pub(crate) fn receipt_values(r: &Receipt) -> [Value<'_>; 8] {
    values![
        &r.receipt_id,
        &r.start_id,
        &r.outcome,
        &r.result_digest,
        r.output_bytes.map(i64_of),
        r.created_at_ms,
        &r.evidence,
        &r.state,
    ]
}

/// A row of [`artifact_cols!`].
pub(crate) fn artifact(r: &dyn Cols) -> Result<ArtifactRecord> {
    Ok(ArtifactRecord {
        artifact_id: r.text(0)?,
        target: target_at(r, 1)?,
        name: r.text(7)?,
        mime: r.text(8)?,
        kind: r.text(9)?,
        version_json: r.text(10)?,
        created_at_ms: r.int(11)?,
    })
}

pub(crate) fn artifact_values(a: &ArtifactRecord) -> Vec<Value<'_>> {
    let mut v = Vec::from(values![&a.artifact_id]);
    v.extend(target_values(&a.target));
    v.extend(values![
        &a.name,
        &a.mime,
        &a.kind,
        &a.version_json,
        a.created_at_ms
    ]);
    v
}

/// A row of [`secret_cols!`].
pub(crate) fn secret(r: &dyn Cols) -> Result<SealedSecret> {
    Ok(SealedSecret {
        name: r.text(0)?,
        key_id: r.text(1)?,
        nonce: r.bytes(2)?,
        ciphertext: r.bytes(3)?,
        created_at_ms: r.int(4)?,
    })
}

pub(crate) fn secret_values(s: &SealedSecret) -> [Value<'_>; 5] {
    values![&s.name, &s.key_id, &s.nonce, &s.ciphertext, s.created_at_ms]
}

/// A row of [`SUPERVISED`].
pub(crate) fn supervised(r: &dyn Cols) -> Result<SupervisedRun> {
    Ok(serde_json::from_str(&r.text(0)?)?)
}

pub(crate) fn supervised_values(s: &SupervisedRun) -> Result<[Value<'_>; 6]> {
    Ok(values![
        &s.session_id,
        s.generation,
        &s.run_id,
        &s.supervisor_id,
        s.updated_at_ms,
        serde_json::to_string(s)?,
    ])
}

/// A row of [`ENTRIES`].
pub(crate) fn entry(r: &dyn Cols) -> Result<runread_sessions::EntrySummary> {
    Ok(serde_json::from_str(&r.text(0)?)?)
}

/// A row of [`select_runs!`]; the instance is the store's own.
pub(crate) fn run_record(r: &dyn Cols, instance: &str) -> Result<RunRecord> {
    let run: runread_sessions::Run = serde_json::from_str(&r.text(4)?)?;
    Ok(RunRecord {
        target: Target {
            instance: instance.to_owned(),
            revision: u64_of(r.int(3)?)?,
            workspace_id: r.text(2)?,
            session_id: r.text(0)?,
            generation: u64_of(r.int(1)?)?,
            run_id: run.run_id.clone(),
        },
        run,
        agent: agent_at(r, 15)?,
        session_path: r.text(5)?,
        identity: identity_at(r, 6, 14)?,
        ingested_at_ms: r.int(11)?,
        workspace_name: r.text(12)?,
        workspace_path: r.text(13)?,
        workspace_enabled: r.flag(16)?,
    })
}

// The store's methods that are the same statements in both stores, written once, one macro per
// role: each is expanded inside each store's `impl ROLE for …`, over three inherent methods every
// store has (`read_all`, `read_opt`: run a read statement and map each row; `write`: run one
// statement that changes rows and say how many) and its `instance` and `cursor_key` fields.

/// The [`crate::Identity`] methods that are the same statement in both dialects.
macro_rules! identity_in_every_store {
    () => {
        fn instance_id(&self) -> &str {
            &self.instance
        }

        fn cursor_key(&self) -> &runread_core::cursor::CursorKey {
            &self.cursor_key
        }

        fn changes(&self) -> &$crate::changes::ChangeFeed {
            &self.feed
        }
    };
}
/// The [`crate::Index`] methods that are the same statement in both dialects.
macro_rules! index_in_every_store {
    () => {
        fn workspace(&self, id: &str) -> $crate::Result<Option<$crate::Workspace>> {
            self.read_opt(
                $crate::vocab::WORKSPACE_BY_ID,
                &$crate::vocab::values![id],
                $crate::vocab::workspace,
            )
        }

        fn session(&self, session_id: &str) -> $crate::Result<Option<$crate::SessionRecord>> {
            self.read_opt(
                $crate::vocab::SESSION_BY_ID,
                &$crate::vocab::values![session_id],
                $crate::vocab::session,
            )
        }

        fn entries(
            &self,
            session_id: &str,
            generation: u64,
        ) -> $crate::Result<Vec<runread_sessions::EntrySummary>> {
            self.read_all(
                $crate::vocab::ENTRIES,
                &$crate::vocab::values![session_id, generation],
                $crate::vocab::entry,
            )
        }

        fn runs(&self) -> $crate::Result<Vec<$crate::RunRecord>> {
            self.read_all($crate::vocab::RUNS, &[], |r| {
                $crate::vocab::run_record(r, &self.instance)
            })
        }

        fn runs_by_id(&self, run_id: &str) -> $crate::Result<Vec<$crate::RunRecord>> {
            self.read_all(
                $crate::vocab::RUNS_BY_ID,
                &$crate::vocab::values![run_id],
                |r| $crate::vocab::run_record(r, &self.instance),
            )
        }

        fn run_ids_with_heads(
            &self,
            heads: &[&str],
            head_chars: u32,
            limit: u32,
        ) -> $crate::Result<Vec<String>> {
            $crate::vocab::run_ids_with_heads(heads, head_chars, limit, |args| {
                self.read_all($crate::vocab::run_ids_with_heads_statement(), args, |r| {
                    r.text(0)
                })
            })
        }

        fn run(
            &self,
            session_id: &str,
            generation: u64,
            run_id: &str,
        ) -> $crate::Result<Option<$crate::RunRecord>> {
            self.read_opt(
                $crate::vocab::RUN,
                &$crate::vocab::values![session_id, generation, run_id],
                |r| $crate::vocab::run_record(r, &self.instance),
            )
        }

        fn add_artifact(&self, a: &$crate::ArtifactRecord) -> $crate::Result<()> {
            self.write(
                $crate::vocab::INSERT_ARTIFACT,
                &$crate::vocab::artifact_values(a),
            )
            .map(drop)
        }

        fn artifacts(
            &self,
            target: &runread_core::Target,
        ) -> $crate::Result<Vec<$crate::ArtifactRecord>> {
            self.read_all(
                $crate::vocab::ARTIFACTS,
                &$crate::vocab::target_values(target),
                $crate::vocab::artifact,
            )
        }

        fn put_supervised(&self, s: &$crate::SupervisedRun) -> $crate::Result<()> {
            self.write(
                $crate::vocab::PUT_SUPERVISED,
                &$crate::vocab::supervised_values(s)?,
            )?;
            self.announce(&s.session_id);
            Ok(())
        }

        fn supervised(
            &self,
            session_id: &str,
            generation: u64,
            run_id: &str,
        ) -> $crate::Result<Option<$crate::SupervisedRun>> {
            self.read_opt(
                $crate::vocab::SUPERVISED,
                &$crate::vocab::values![session_id, generation, run_id],
                $crate::vocab::supervised,
            )
        }
    };
}
/// The [`crate::Access`] methods that are the same statement in both dialects.
macro_rules! access_in_every_store {
    () => {
        fn insert_grant(&self, g: &$crate::Grant) -> $crate::Result<()> {
            self.write($crate::vocab::INSERT_GRANT, &$crate::vocab::grant_values(g))
                .map(drop)
        }

        fn reader_grants_for_target(
            &self,
            reader_id: &str,
            target: &runread_core::Target,
        ) -> $crate::Result<Vec<$crate::Grant>> {
            let mut values = vec![$crate::vocab::Value::from(reader_id)];
            values.extend($crate::vocab::target_values(target));
            self.read_all(
                $crate::vocab::READER_GRANTS_FOR_TARGET,
                &values,
                $crate::vocab::grant,
            )
        }

        fn grant_of_key(
            &self,
            grant_id: &str,
            key_hash: &str,
        ) -> $crate::Result<Option<$crate::Grant>> {
            self.read_opt(
                $crate::vocab::GRANT_OF_KEY,
                &$crate::vocab::values![grant_id, key_hash],
                $crate::vocab::grant,
            )
        }

        fn insert_reader(&self, r: &$crate::Reader) -> $crate::Result<()> {
            self.write(
                $crate::vocab::INSERT_READER,
                &$crate::vocab::reader_values(r),
            )
            .map(drop)
        }

        fn reader_of_key(
            &self,
            key_hash: &str,
            now_ms: i64,
        ) -> $crate::Result<Option<($crate::Reader, Vec<$crate::Grant>)>> {
            let rows = self.read_all(
                $crate::vocab::READER_OF_KEY,
                &$crate::vocab::values![now_ms, key_hash],
                $crate::vocab::reader_and_grant,
            )?;
            Ok($crate::vocab::reader_with_grants(rows))
        }

        fn reader_of_id(
            &self,
            reader_id: &str,
            now_ms: i64,
        ) -> $crate::Result<Option<($crate::Reader, Vec<$crate::Grant>)>> {
            let rows = self.read_all(
                $crate::vocab::READER_OF_ID,
                &$crate::vocab::values![now_ms, reader_id],
                $crate::vocab::reader_and_grant,
            )?;
            Ok($crate::vocab::reader_with_grants(rows))
        }

        fn reader_by_name(&self, name: &str) -> $crate::Result<Option<$crate::Reader>> {
            self.read_opt(
                $crate::vocab::READER_BY_NAME,
                &$crate::vocab::values![name],
                $crate::vocab::reader,
            )
        }

        fn readers(&self) -> $crate::Result<Vec<$crate::Reader>> {
            self.read_all($crate::vocab::READERS, &[], $crate::vocab::reader)
        }

        fn rotate_reader_key(&self, reader_id: &str, key_hash: &str) -> $crate::Result<bool> {
            Ok(self.write(
                $crate::vocab::ROTATE_READER_KEY,
                &$crate::vocab::values![key_hash, reader_id],
            )? == 1)
        }

        fn remove_reader(&self, reader_id: &str, now_ms: i64) -> $crate::Result<bool> {
            // Its grants first: a remove cut short leaves a live reader without live grants,
            // never grants of a removed reader left live.
            self.write(
                $crate::vocab::REVOKE_GRANTS_OF_READER,
                &$crate::vocab::values![now_ms, reader_id],
            )?;
            // Its access requests: nobody is left to read what they would grant.
            self.write(
                $crate::vocab::DROP_ACCESS_REQUESTS_OF_READER,
                &$crate::vocab::values![reader_id],
            )?;
            Ok(self.write(
                $crate::vocab::REMOVE_READER,
                &$crate::vocab::values![now_ms, reader_id],
            )? == 1)
        }

        fn reader_grant_tally(&self, reader_id: &str) -> $crate::Result<(u64, u64)> {
            let tally = self.read_opt(
                $crate::vocab::READER_GRANT_TALLY,
                &$crate::vocab::values![reader_id],
                |r| {
                    let count = |i| {
                        u64::try_from(r.int(i)?)
                            .map_err(|_| $crate::StoreError::Corrupt("a negative count".into()))
                    };
                    Ok((count(0)?, count(1)?))
                },
            )?;
            Ok(tally.unwrap_or((0, 0)))
        }

        fn reader_last_reads(&self) -> $crate::Result<Vec<(String, i64)>> {
            let rows = self.read_all($crate::vocab::READER_LAST_READS, &[], |r| {
                Ok((r.text(0)?, r.opt_int(1)?))
            })?;
            Ok(rows
                .into_iter()
                .filter_map(|(id, last)| Some((id, last?)))
                .collect())
        }

        fn grants(&self) -> $crate::Result<Vec<$crate::Grant>> {
            self.read_all($crate::vocab::GRANTS, &[], $crate::vocab::grant)
        }

        fn revoke_grant(&self, id: &str, now_ms: i64) -> $crate::Result<bool> {
            Ok(self.write(
                $crate::vocab::REVOKE_GRANT,
                &$crate::vocab::values![now_ms, id],
            )? == 1)
        }
    };
}
/// The [`crate::Secrets`] methods that are the same statement in both dialects.
macro_rules! secrets_in_every_store {
    () => {
        fn put_secret(&self, s: &$crate::SealedSecret) -> $crate::Result<()> {
            self.write($crate::vocab::PUT_SECRET, &$crate::vocab::secret_values(s))
                .map(drop)
        }

        fn sealed_secrets(&self) -> $crate::Result<Vec<$crate::SealedSecret>> {
            self.read_all($crate::vocab::SECRETS, &[], $crate::vocab::secret)
        }
    };
}
/// The [`crate::Snapshots`] methods that are the same statement in both dialects.
macro_rules! snapshots_in_every_store {
    () => {
        fn put_snapshot(
            &self,
            s: &$crate::SnapshotRecord,
            store_max_bytes: u64,
        ) -> $crate::Result<bool> {
            Ok(self.write(
                PUT_SNAPSHOT,
                &$crate::vocab::snapshot_values(s, store_max_bytes),
            )? == 1)
        }

        fn snapshot(
            &self,
            session_id: &str,
            generation: u64,
            run_id: &str,
        ) -> $crate::Result<Option<$crate::SnapshotRecord>> {
            self.read_opt(
                $crate::vocab::SNAPSHOT,
                &$crate::vocab::values![session_id, $crate::vocab::i64_of(generation), run_id],
                $crate::vocab::snapshot,
            )
        }

        fn snapshot_stamp(
            &self,
            session_id: &str,
            generation: u64,
            run_id: &str,
        ) -> $crate::Result<Option<$crate::SnapshotSummary>> {
            self.read_opt(
                $crate::vocab::SNAPSHOT_STAMP,
                &$crate::vocab::values![session_id, $crate::vocab::i64_of(generation), run_id],
                $crate::vocab::snapshot_summary,
            )
        }

        fn snapshots(&self) -> $crate::Result<Vec<$crate::SnapshotSummary>> {
            self.read_all(
                $crate::vocab::SNAPSHOTS,
                &[],
                $crate::vocab::snapshot_summary,
            )
        }

        fn snapshots_unshared(&self, now_ms: i64) -> $crate::Result<Vec<$crate::SnapshotSummary>> {
            self.read_all(
                $crate::vocab::SNAPSHOTS_UNSHARED,
                &$crate::vocab::values![now_ms],
                $crate::vocab::snapshot_summary,
            )
        }

        fn log_snapshot(&self, e: &$crate::SnapshotEvent) -> $crate::Result<()> {
            self.write(
                $crate::vocab::INSERT_SNAPSHOT_EVENT,
                &$crate::vocab::snapshot_event_values(e),
            )
            .map(drop)
        }

        fn snapshot_log(&self, limit: u32) -> $crate::Result<Vec<$crate::SnapshotEvent>> {
            self.read_all(
                $crate::vocab::SNAPSHOT_LOG,
                &$crate::vocab::values![i64::from(limit)],
                $crate::vocab::snapshot_event,
            )
        }

        fn destroy_snapshot(
            &self,
            session_id: &str,
            generation: u64,
            run_id: &str,
        ) -> $crate::Result<bool> {
            let at = $crate::vocab::values![session_id, $crate::vocab::i64_of(generation), run_id];
            self.write($crate::vocab::SHRED_SNAPSHOT_KEY, &at)?;
            let deleted = self.write($crate::vocab::DELETE_SNAPSHOT, &at)? == 1;
            // What the deletion left behind (older versions of the row's pages) is overwritten
            // now, as far as the dialect can ([`SqliteStore::scrub`], [`PostgresStore::scrub`]).
            self.scrub();
            Ok(deleted)
        }
    };
}
/// The [`crate::Keeps`] methods: the same statements in both dialects, but for `PUT_KEPT`'s
/// binary type.
macro_rules! keeps_in_every_store {
    () => {
        fn put_kept(
            &self,
            s: &$crate::SnapshotRecord,
            reason: $crate::KeepReason,
            store_max_bytes: u64,
        ) -> $crate::Result<bool> {
            Ok(self.write(
                PUT_KEPT,
                &$crate::vocab::kept_values(s, reason, store_max_bytes),
            )? == 1)
        }

        fn kept(
            &self,
            session_id: &str,
            generation: u64,
            run_id: &str,
        ) -> $crate::Result<Option<$crate::SnapshotRecord>> {
            self.read_opt(
                $crate::vocab::KEPT,
                &$crate::vocab::values![session_id, $crate::vocab::i64_of(generation), run_id],
                $crate::vocab::snapshot,
            )
        }

        fn kept_stamp(
            &self,
            session_id: &str,
            generation: u64,
            run_id: &str,
        ) -> $crate::Result<Option<$crate::KeptSummary>> {
            self.read_opt(
                $crate::vocab::KEPT_STAMP,
                &$crate::vocab::values![session_id, $crate::vocab::i64_of(generation), run_id],
                $crate::vocab::kept_summary,
            )
        }

        fn kept_runs(&self) -> $crate::Result<Vec<$crate::KeptSummary>> {
            self.read_all($crate::vocab::KEPT_RUNS, &[], $crate::vocab::kept_summary)
        }

        fn kept_bytes(&self) -> $crate::Result<u64> {
            let total = self.read_opt($crate::vocab::KEPT_BYTES, &[], |r| r.int(0))?;
            $crate::vocab::u64_of(total.unwrap_or(0))
        }

        fn drop_kept(
            &self,
            session_id: &str,
            generation: u64,
            run_id: &str,
        ) -> $crate::Result<bool> {
            let at = $crate::vocab::values![session_id, $crate::vocab::i64_of(generation), run_id];
            self.write($crate::vocab::SHRED_KEPT_KEY, &at)?;
            let deleted = self.write($crate::vocab::DELETE_KEPT, &at)? == 1;
            // As a destroyed snapshot: what the deletion left behind is overwritten now, as far
            // as the dialect can.
            self.scrub();
            Ok(deleted)
        }

        fn keep_rules(&self) -> $crate::Result<Vec<$crate::KeepRule>> {
            self.read_all($crate::vocab::KEEP_RULES, &[], $crate::vocab::keep_rule)
        }

        fn put_keep_rule(&self, rule: &$crate::KeepRule, rules_max: u64) -> $crate::Result<bool> {
            let agent = rule.agent.map_or("", |a| a.as_str());
            Ok(self.write(
                $crate::vocab::PUT_KEEP_RULE,
                &$crate::vocab::values![
                    &rule.workspace_id,
                    agent,
                    rule.created_at_ms,
                    $crate::vocab::i64_of(rules_max)
                ],
            )? == 1)
        }

        fn remove_keep_rules(
            &self,
            workspace_id: &str,
            agent: Option<runread_core::Agent>,
        ) -> $crate::Result<u64> {
            let removed = match agent {
                None => self.write(
                    $crate::vocab::REMOVE_KEEP_RULES,
                    &$crate::vocab::values![workspace_id],
                )?,
                Some(a) => self.write(
                    $crate::vocab::REMOVE_KEEP_RULE,
                    &$crate::vocab::values![workspace_id, a.as_str()],
                )?,
            };
            Ok(removed as u64)
        }
    };
}
/// The [`crate::GateLog`] methods that are the same statement in both dialects.
macro_rules! gate_log_in_every_store {
    () => {
        fn start_record(&self, start_id: &str) -> $crate::Result<Option<$crate::StartRecord>> {
            self.read_opt(
                $crate::vocab::START_RECORD,
                &$crate::vocab::values![start_id],
                $crate::vocab::start_record,
            )
        }

        fn start_meta(&self, start_id: &str) -> $crate::Result<Option<$crate::StartMeta>> {
            self.read_opt(
                $crate::vocab::START_META,
                &$crate::vocab::values![start_id],
                $crate::vocab::start_meta,
            )
        }

        fn receipts(&self, start_id: &str) -> $crate::Result<Vec<$crate::Receipt>> {
            self.read_all(
                $crate::vocab::RECEIPTS_OF_START,
                &$crate::vocab::values![start_id],
                $crate::vocab::receipt,
            )
        }

        fn audit(
            &self,
            since_ms: i64,
            limit: u32,
        ) -> $crate::Result<Vec<($crate::StartMeta, Vec<$crate::Receipt>)>> {
            self.audit_in(since_ms, limit)
        }

        fn audit_checkpoints(&self) -> $crate::Result<Vec<$crate::AuditCheckpoint>> {
            self.read_all(
                $crate::vocab::AUDIT_CHECKPOINTS,
                &[],
                $crate::vocab::audit_checkpoint,
            )
        }

        fn append_audit_checkpoint(&self, c: &$crate::AuditCheckpoint) -> $crate::Result<bool> {
            Ok(self.write(
                $crate::vocab::INSERT_AUDIT_CHECKPOINT,
                &$crate::vocab::audit_checkpoint_values(c),
            )? == 1)
        }

        fn audit_nth_time(
            &self,
            after_ms: i64,
            upto_ms: i64,
            n: u64,
        ) -> $crate::Result<Option<i64>> {
            self.read_opt(
                $crate::vocab::AUDIT_NTH_TIME,
                &$crate::vocab::values![after_ms, upto_ms, n],
                |r| r.int(0),
            )
        }

        fn audit_count_after(&self, after_ms: i64) -> $crate::Result<u64> {
            let n = self.read_opt(
                $crate::vocab::AUDIT_COUNT_AFTER,
                &$crate::vocab::values![after_ms],
                |r| r.int(0),
            )?;
            $crate::vocab::u64_of(n.unwrap_or(0))
        }
    };
}
/// The [`crate::Connectors`] methods that are the same statement in both dialects.
macro_rules! connectors_in_every_store {
    () => {
        fn insert_oauth_client(
            &self,
            c: &$crate::OAuthClient,
            bounds: $crate::OAuthClientBounds,
        ) -> $crate::Result<bool> {
            let uris = serde_json::to_string(&c.redirect_uris)?;
            Ok(self.write(
                $crate::vocab::INSERT_OAUTH_CLIENT,
                &$crate::vocab::values![
                    &c.client_id,
                    &c.name,
                    uris,
                    c.created_at_ms,
                    &c.registrant,
                    bounds.total_max,
                    bounds.unapproved_max,
                    bounds.unapproved_per_registrant_max,
                ],
            )? == 1)
        }

        fn oauth_client(&self, client_id: &str) -> $crate::Result<Option<$crate::OAuthClient>> {
            self.read_opt(
                $crate::vocab::OAUTH_CLIENT,
                &$crate::vocab::values![client_id],
                $crate::vocab::oauth_client,
            )
        }

        fn insert_oauth_request(
            &self,
            q: &$crate::OAuthRequest,
            bounds: $crate::OAuthRequestBounds,
        ) -> $crate::Result<bool> {
            Ok(self.write(
                $crate::vocab::INSERT_OAUTH_REQUEST,
                &$crate::vocab::oauth_request_values(q, bounds),
            )? == 1)
        }

        fn oauth_request(&self, id: &str) -> $crate::Result<Option<$crate::OAuthRequest>> {
            self.read_opt(
                $crate::vocab::OAUTH_REQUEST,
                &$crate::vocab::values![id],
                $crate::vocab::oauth_request,
            )
        }

        fn oauth_requests_pending(&self, now_ms: i64) -> $crate::Result<Vec<$crate::OAuthRequest>> {
            self.read_all(
                $crate::vocab::OAUTH_REQUESTS_PENDING,
                &$crate::vocab::values![now_ms],
                $crate::vocab::oauth_request,
            )
        }

        fn decide_oauth_request(
            &self,
            id: &str,
            approved: Option<(&str, &str)>,
            now_ms: i64,
        ) -> $crate::Result<bool> {
            let (reader_id, scope) = match approved {
                Some((r, s)) => (Some(r), Some(s)),
                None => (None, None),
            };
            let decided = self.write(
                $crate::vocab::DECIDE_OAUTH_REQUEST,
                &$crate::vocab::values![now_ms, reader_id, scope, id],
            )? == 1;
            if decided && approved.is_some() {
                self.write(
                    $crate::vocab::APPROVE_OAUTH_CLIENT,
                    &$crate::vocab::values![now_ms, id],
                )?;
            }
            Ok(decided)
        }

        fn issue_oauth_code(
            &self,
            id: &str,
            code_hash: &str,
            code_expires_at_ms: i64,
            now_ms: i64,
        ) -> $crate::Result<bool> {
            Ok(self.write(
                $crate::vocab::ISSUE_OAUTH_CODE,
                &$crate::vocab::values![code_hash, code_expires_at_ms, id, now_ms],
            )? == 1)
        }

        fn redeem_oauth_code(
            &self,
            code_hash: &str,
            now_ms: i64,
        ) -> $crate::Result<$crate::CodeRedemption> {
            let fresh = self.write(
                $crate::vocab::REDEEM_OAUTH_CODE,
                &$crate::vocab::values![now_ms, code_hash],
            )? == 1;
            let request = self.read_opt(
                $crate::vocab::OAUTH_REQUEST_BY_CODE,
                &$crate::vocab::values![code_hash],
                $crate::vocab::oauth_request,
            )?;
            Ok(match (request, fresh) {
                (None, _) => $crate::CodeRedemption::Unknown,
                (Some(q), true) => $crate::CodeRedemption::Redeemed(Box::new(q)),
                (Some(q), false) => $crate::CodeRedemption::Reused(Box::new(q)),
            })
        }

        fn insert_oauth_token(&self, t: &$crate::OAuthToken) -> $crate::Result<()> {
            self.write(
                $crate::vocab::INSERT_OAUTH_TOKEN,
                &$crate::vocab::oauth_token_values(t),
            )
            .map(drop)
        }

        fn oauth_token(&self, token_hash: &str) -> $crate::Result<Option<$crate::OAuthToken>> {
            self.read_opt(
                $crate::vocab::OAUTH_TOKEN,
                &$crate::vocab::values![token_hash],
                $crate::vocab::oauth_token,
            )
        }

        fn use_oauth_refresh(&self, token_hash: &str, now_ms: i64) -> $crate::Result<bool> {
            Ok(self.write(
                $crate::vocab::USE_OAUTH_REFRESH,
                &$crate::vocab::values![now_ms, token_hash],
            )? == 1)
        }

        fn revoke_oauth_family(&self, family: &str, now_ms: i64) -> $crate::Result<u64> {
            Ok(self.write(
                $crate::vocab::REVOKE_OAUTH_FAMILY,
                &$crate::vocab::values![now_ms, family],
            )? as u64)
        }

        fn revoke_oauth_tokens_of_reader(
            &self,
            reader_id: &str,
            now_ms: i64,
        ) -> $crate::Result<u64> {
            Ok(self.write(
                $crate::vocab::REVOKE_OAUTH_TOKENS_OF_READER,
                &$crate::vocab::values![now_ms, reader_id],
            )? as u64)
        }

        fn purge_oauth(&self, now_ms: i64, unapproved_before_ms: i64) -> $crate::Result<()> {
            self.write(
                $crate::vocab::PURGE_OAUTH_TOKENS,
                &$crate::vocab::values![now_ms],
            )?;
            self.write(
                $crate::vocab::PURGE_OAUTH_REQUESTS,
                &$crate::vocab::values![now_ms],
            )?;
            self.write(
                $crate::vocab::PURGE_OAUTH_CLIENTS,
                &$crate::vocab::values![unapproved_before_ms],
            )?;
            Ok(())
        }
    };
}
/// The [`crate::Waits`] methods that are the same statement in both dialects.
macro_rules! waits_in_every_store {
    () => {
        fn begin_wait(&self, w: &$crate::WaitRecord) -> $crate::Result<()> {
            self.write(
                $crate::vocab::PURGE_WAITS,
                &$crate::vocab::values![w.started_at_ms],
            )?;
            self.write($crate::vocab::INSERT_WAIT, &$crate::vocab::wait_values(w))
                .map(drop)
        }

        fn end_wait(&self, id: &str) -> $crate::Result<()> {
            self.write($crate::vocab::END_WAIT, &$crate::vocab::values![id])
                .map(drop)
        }

        fn live_waits(&self, now_ms: i64) -> $crate::Result<Vec<$crate::WaitRecord>> {
            self.read_all(
                $crate::vocab::LIVE_WAITS,
                &$crate::vocab::values![now_ms, $crate::LIVE_WAITS_LISTED_MAX],
                $crate::vocab::wait,
            )
        }
    };
}
/// The [`crate::AccessRequests`] methods that are the same statement in both dialects.
macro_rules! access_requests_in_every_store {
    () => {
        fn file_access_request(
            &self,
            q: &$crate::AccessRequestRecord,
            bounds: $crate::AccessRequestBounds,
        ) -> $crate::Result<$crate::Filed> {
            let purge_before = q
                .created_at_ms
                .saturating_sub(runread_core::limits::ACCESS_REQUEST_KEPT_MS);
            self.write(
                $crate::vocab::PURGE_ACCESS_REQUESTS,
                &$crate::vocab::values![purge_before],
            )?;
            let filed = self.write(
                $crate::vocab::INSERT_ACCESS_REQUEST,
                &$crate::vocab::access_request_values(q, bounds),
            )? == 1;
            if filed {
                self.feed
                    .publish($crate::changes::Change::AccessRequest(q.id.clone()));
                return Ok($crate::Filed::New);
            }
            let same = self.read_opt(
                $crate::vocab::SAME_ACCESS_REQUEST,
                &$crate::vocab::values![&q.reader_id, &q.fingerprint, q.created_at_ms],
                |r| r.text(0),
            )?;
            Ok(same.map_or($crate::Filed::Full, $crate::Filed::Same))
        }

        fn access_request(&self, id: &str) -> $crate::Result<Option<$crate::AccessRequestRecord>> {
            self.read_opt(
                $crate::vocab::ACCESS_REQUEST,
                &$crate::vocab::values![id],
                $crate::vocab::access_request,
            )
        }

        fn access_requests_pending(
            &self,
            now_ms: i64,
        ) -> $crate::Result<Vec<$crate::AccessRequestRecord>> {
            self.read_all(
                $crate::vocab::ACCESS_REQUESTS_PENDING,
                &$crate::vocab::values![now_ms],
                $crate::vocab::access_request,
            )
        }

        fn access_requests_pending_count(&self, now_ms: i64) -> $crate::Result<u64> {
            let n = self.read_opt(
                $crate::vocab::ACCESS_REQUESTS_PENDING_COUNT,
                &$crate::vocab::values![now_ms],
                |r| r.int(0),
            )?;
            $crate::vocab::u64_of(n.unwrap_or(0))
        }

        fn decide_access_request(
            &self,
            id: &str,
            approved: bool,
            now_ms: i64,
        ) -> $crate::Result<bool> {
            let decision = if approved {
                $crate::vocab::DECISION_APPROVED
            } else {
                $crate::vocab::DECISION_DENIED
            };
            let decided = self.write(
                $crate::vocab::DECIDE_ACCESS_REQUEST,
                &$crate::vocab::values![now_ms, decision, id],
            )? == 1;
            if decided {
                self.feed
                    .publish($crate::changes::Change::AccessRequest(id.to_owned()));
            }
            Ok(decided)
        }

        fn record_access_grants(&self, id: &str, grant_ids: &[String]) -> $crate::Result<bool> {
            let recorded = self.write(
                $crate::vocab::ACCESS_REQUEST_GRANTS,
                &$crate::vocab::values![grant_ids.join(" "), id],
            )? == 1;
            if recorded {
                self.feed
                    .publish($crate::changes::Change::AccessRequest(id.to_owned()));
            }
            Ok(recorded)
        }
    };
}
/// The [`crate::Settings`] methods that are the same statement in both dialects.
macro_rules! settings_in_every_store {
    () => {
        fn setting(&self, key: &str) -> $crate::Result<Option<String>> {
            self.read_opt($crate::vocab::SETTING, &$crate::vocab::values![key], |r| {
                r.text(0)
            })
        }

        fn put_setting(&self, key: &str, value: &str) -> $crate::Result<()> {
            self.write(
                $crate::vocab::PUT_SETTING,
                &$crate::vocab::values![key, value],
            )
            .map(drop)
        }
    };
}

/// The [`crate::Refusals`] methods that are the same statements in both dialects.
macro_rules! refusals_in_every_store {
    () => {
        fn record_refusal(&self, r: &$crate::Refusal, kept_max: u64) -> $crate::Result<()> {
            let target = r.target.as_ref().map(serde_json::to_string).transpose()?;
            self.write(
                $crate::vocab::INSERT_REFUSAL,
                &$crate::vocab::refusal_values(r, &target),
            )?;
            self.write(
                $crate::vocab::PRUNE_REFUSALS,
                &$crate::vocab::values![$crate::vocab::i64_of(kept_max)],
            )
            .map(drop)
        }

        fn refusals_page(
            &self,
            filter: &$crate::RefusalFilter,
            limit: u32,
        ) -> $crate::Result<$crate::RefusalPage> {
            let mut args = Vec::from($crate::vocab::refusal_filter_values(filter));
            args.push($crate::vocab::Value::from(i64::from(
                limit.min($crate::REFUSALS_PAGE_MAX),
            )));
            let rows =
                self.read_all($crate::vocab::REFUSALS_PAGE, &args, $crate::vocab::refusal)?;
            let all = self
                .read_opt(
                    $crate::vocab::REFUSALS_COUNT,
                    &$crate::vocab::refusal_filter_values(filter),
                    |r| r.int(0),
                )?
                .unwrap_or(0);
            // Counted after the page was read: a refusal recorded between the two reads is
            // counted, never shown twice.
            let more = $crate::vocab::u64_of(all)?.saturating_sub(rows.len() as u64);
            Ok($crate::RefusalPage { rows, more })
        }

        fn count_unadmitted(&self, at_ms: i64, code: &str) -> $crate::Result<()> {
            let minute =
                at_ms.div_euclid($crate::UNADMITTED_MINUTE_MS) * $crate::UNADMITTED_MINUTE_MS;
            self.write(
                $crate::vocab::COUNT_UNADMITTED,
                &$crate::vocab::values![minute, code],
            )?;
            self.write(
                $crate::vocab::PRUNE_UNADMITTED,
                &$crate::vocab::values![
                    $crate::UNADMITTED_MINUTES_KEPT * $crate::UNADMITTED_MINUTE_MS
                ],
            )
            .map(drop)
        }

        fn unadmitted_tallies(
            &self,
            since_ms: i64,
        ) -> $crate::Result<Vec<$crate::UnadmittedTally>> {
            let minute = $crate::vocab::minute_of(since_ms);
            self.read_all(
                $crate::vocab::UNADMITTED_TALLIES,
                &$crate::vocab::values![minute],
                $crate::vocab::unadmitted_tally,
            )
        }
    };
}

pub(crate) use {
    access_in_every_store, access_requests_in_every_store, connectors_in_every_store,
    gate_log_in_every_store, identity_in_every_store, index_in_every_store, keeps_in_every_store,
    refusals_in_every_store, secrets_in_every_store, settings_in_every_store,
    snapshots_in_every_store, waits_in_every_store,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negative_stored_count_is_corrupt_never_zero() {
        assert!(matches!(u64_of(-1), Err(StoreError::Corrupt(_))));
        assert!(matches!(u64_of(i64::MIN), Err(StoreError::Corrupt(_))));
        assert_eq!(u64_of(0).ok(), Some(0));
        assert_eq!(u64_of(i64::MAX).ok(), Some(i64::MAX as u64));
    }

    #[test]
    fn an_out_of_range_index_version_is_corrupt() {
        assert!(matches!(u32_of(-1), Err(StoreError::Corrupt(_))));
        assert!(matches!(
            u32_of(i64::from(u32::MAX) + 1),
            Err(StoreError::Corrupt(_))
        ));
        assert_eq!(u32_of(3).ok(), Some(3));
    }

    #[test]
    fn counts_beyond_i64_saturate_when_stored() {
        assert_eq!(i64_of(u64::MAX), i64::MAX);
        assert_eq!(i64_of(7), 7);
    }
}
