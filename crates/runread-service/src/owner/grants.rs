//! The owner's grants: one exact run, named features, until an expiry, to one reader (made by
//! its first grant when the name is no reader's yet); revoked by id.

use runread_core::Feature;
use runread_core::limits::{GRANT_LABEL_MAX_BYTES, GRANT_MAX_LIFETIME_SECS};
use runread_keys::KeyProvider;
use runread_store::{Grant, Reader, RunRecord, Store};

use crate::evidence::values::random_id;
use crate::owner::readers::{
    NewReaderPolicy, ReaderError, add_reader, is_reader_name, live_reader, may_make_reader,
};

/// Why a grant could not be made. Owner-facing: these messages may name runs and sessions.
#[derive(Debug)]
pub enum GrantError {
    /// The run id (and session) named no one run.
    Run(crate::owner::run_ids::Unresolved),
    BadExpiry(String),
    Reader(ReaderError),
    /// The label is not one line of at most [`GRANT_LABEL_MAX_BYTES`] bytes.
    BadLabel,
    Store(String),
}

impl std::fmt::Display for GrantError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrantError::Run(e) => write!(f, "{e}"),
            GrantError::BadExpiry(m) => write!(f, "{m}"),
            GrantError::Reader(e) => write!(f, "{e}"),
            GrantError::BadLabel => write!(
                f,
                "a label is one line of 1 to {GRANT_LABEL_MAX_BYTES} bytes, with no control characters"
            ),
            GrantError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// A grant as made: the record, its run, the reader holding it, and — when the grant made that
/// reader — its key, shown once and never stored.
pub struct NewGrant {
    pub grant: Grant,
    pub run: RunRecord,
    pub reader: Reader,
    /// `Some` only when this grant made its reader (the name was no reader's yet).
    pub key: Option<String>,
    /// What sealing the run's snapshot did (the grant is made whatever it did).
    pub snapshot: crate::evidence::snapshot::Sealing,
}

/// Revokes the grant `id` (`false`: no live grant has that id), and destroys the snapshot of its
/// run when no live grant holds it any more.
pub(crate) fn revoke_grant(store: &dyn Store, id: &str, now_ms: i64) -> Result<bool, String> {
    Ok(!revoke_grants(store, &[id], now_ms)?.is_empty())
}

/// Revokes the grants `ids`, then destroys the snapshots no live grant holds any more (a run's
/// last grant takes its snapshot with it): the one way grants end. The ids that were live.
pub(crate) fn revoke_grants<'a>(
    store: &dyn Store,
    ids: &[&'a str],
    now_ms: i64,
) -> Result<Vec<&'a str>, String> {
    let mut revoked = Vec::with_capacity(ids.len());
    for id in ids {
        if store.revoke_grant(id, now_ms).map_err(|e| e.to_string())? {
            revoked.push(*id);
        }
    }
    if revoked.is_empty() {
        return Ok(revoked);
    }
    if let Err(e) = crate::evidence::snapshot::destroy_unshared(store, now_ms) {
        tracing::warn!(
            code = e.as_str(),
            "snapshots not destroyed yet after a revocation"
        );
    }
    Ok(revoked)
}

/// Resolves `--expires` (a duration like `15m`, or an RFC 3339 time) to an absolute time.
pub fn expiry(spec: &str, now_ms: i64) -> Result<i64, GrantError> {
    let at = match runread_core::timefmt::parse_duration_ms(spec) {
        Some(d) => now_ms.saturating_add(d),
        None => runread_core::timefmt::parse_rfc3339(spec).ok_or_else(|| {
            GrantError::BadExpiry(format!(
                "--expires {spec:?}: use a duration (90s, 15m, 2h, 7d) or an RFC 3339 time"
            ))
        })?,
    };
    if at <= now_ms {
        return Err(GrantError::BadExpiry("--expires is in the past".into()));
    }
    let max = GRANT_MAX_LIFETIME_SECS as i64 * 1000;
    if at - now_ms > max {
        return Err(GrantError::BadExpiry(format!(
            "--expires is more than {} days away",
            GRANT_MAX_LIFETIME_SECS / 86_400
        )));
    }
    Ok(at)
}

/// What the owner asks to grant: a run (its id or a unique prefix, and its session when the same
/// id names runs in several), the features, until when, and to which reader (its name).
#[derive(Debug, Clone)]
pub struct GrantRequest<'a> {
    pub run_id: &'a str,
    pub session_id: Option<&'a str>,
    pub features: Vec<Feature>,
    pub expires_at_ms: i64,
    pub reader: &'a str,
    /// Whether a name that is no reader's yet is made one.
    pub new_reader: NewReaderPolicy,
    /// What to call the shared run for its reader ([`runread_core::label`]).
    pub label: Option<&'a str>,
}

/// Grants `features` of one run to the reader `request.reader`: no new key when it is a reader
/// already (its client's next call sees the grant); otherwise the reader is made, holding this
/// grant, and its key is returned to be shown once.
pub(crate) fn grant(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    request: GrantRequest<'_>,
    now_ms: i64,
) -> Result<NewGrant, GrantError> {
    let GrantRequest {
        run_id,
        session_id,
        features,
        expires_at_ms,
        reader,
        new_reader,
        label,
    } = request;
    let run = crate::owner::run_ids::resolve(store, run_id, session_id).map_err(GrantError::Run)?;
    let to = (reader, new_reader);
    grant_run(store, keys, run, features, expires_at_ms, to, label, now_ms)
}

/// [`grant`] of exactly `run` (a current run record: `runread run --share` has its exact target).
#[expect(
    clippy::too_many_arguments,
    reason = "the store, the keys and each fact of the grant; a struct would only rename them"
)]
pub(crate) fn grant_run(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    run: RunRecord,
    features: Vec<Feature>,
    expires_at_ms: i64,
    (reader, new_reader): (&str, NewReaderPolicy),
    label: Option<&str>,
    now_ms: i64,
) -> Result<NewGrant, GrantError> {
    if label.is_some_and(|l| !runread_core::label::is_valid(l)) {
        return Err(GrantError::BadLabel);
    }
    if !is_reader_name(reader) {
        return Err(GrantError::Reader(ReaderError::BadName));
    }
    let (holder, key) = match live_reader(store, reader).map_err(GrantError::Reader)? {
        Some(r) => (r, None),
        None => {
            may_make_reader(store, reader, new_reader).map_err(GrantError::Reader)?;
            let made = add_reader(store, keys, reader, now_ms).map_err(GrantError::Reader)?;
            (made.reader, Some(made.key))
        }
    };
    let grant = Grant {
        id: random_id("g-").map_err(GrantError::Store)?,
        reader_id: holder.id.clone(),
        reader_name: holder.name.clone(),
        target: run.target.clone(),
        features,
        created_at_ms: now_ms,
        expires_at_ms,
        revoked_at_ms: None,
        label: label.map(str::to_owned),
    };
    store
        .insert_grant(&grant)
        .map_err(|e| GrantError::Store(e.to_string()))?;
    // The grant stands whatever sealing its snapshot does; what it did is said.
    let snapshot = crate::evidence::snapshot::seal(store, keys, &run, now_ms)
        .unwrap_or(crate::evidence::snapshot::Sealing::Failed);
    Ok(NewGrant {
        grant,
        run,
        reader: holder,
        key,
        snapshot,
    })
}
