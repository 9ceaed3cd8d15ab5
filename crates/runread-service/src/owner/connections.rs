//! The owner's decisions on connectors: pending authorization requests, approved as a new reader
//! (or joined to one the owner chose, never by the client's name) or denied.

use runread_core::Feature;
use runread_core::limits::READER_NAME_MAX_BYTES;
use runread_keys::KeyProvider;
use runread_store::{Grant, Reader, Store};

pub use runread_store::OAuthRequest;

use crate::oauth::{OAuthError, scope_features, scope_of, store_failed};
use crate::owner::readers::{ReaderError, add_reader, is_reader_name};

/// The requests waiting for the owner (the console's list).
pub(crate) fn pending(store: &dyn Store, now_ms: i64) -> Result<Vec<OAuthRequest>, OAuthError> {
    store.oauth_requests_pending(now_ms).map_err(store_failed)
}

/// Why the owner's decision did not take. Owner-facing.
#[derive(Debug)]
pub enum DecideError {
    /// Decided before, expired, or never made.
    NotPending,
    /// No feature left to allow.
    NoFeatures,
    /// Joining a reader that is not (or no longer) live.
    NoSuchReader,
    Reader(ReaderError),
    Store(String),
}

impl std::fmt::Display for DecideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecideError::NotPending => {
                write!(f, "that request is no longer waiting (decided or expired)")
            }
            DecideError::NoFeatures => write!(f, "allow at least one feature"),
            DecideError::NoSuchReader => write!(f, "that reader was removed meanwhile"),
            DecideError::Reader(e) => write!(f, "{e}"),
            DecideError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// Which reader an approved client becomes: a new one (the name the owner chose; refused when a
/// live reader has it or one like it), or — only when the owner chose so explicitly, having been
/// shown that reader's live grants — an existing one, by id. A client's own name never picks a
/// reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderChoice<'a> {
    New { name: &'a str },
    Join { reader_id: &'a str },
}

/// The name the console offers for the new reader a client would become: the client's name with
/// ` (connector)`, numbered when a live reader has that name or one that looks like it, and cut to
/// the bound on reader names. Never a live reader's name.
pub(crate) fn suggested_reader_name(
    store: &dyn Store,
    client_name: &str,
) -> Result<String, DecideError> {
    let readers = store
        .readers()
        .map_err(|e| DecideError::Store(e.to_string()))?;
    let looks: Vec<String> = readers
        .iter()
        .filter(|r| r.removed_at_ms.is_none())
        .map(|r| runread_core::names::look(&r.name))
        .collect();
    let base: String = if is_reader_name(client_name.trim()) {
        client_name.trim().to_owned()
    } else {
        "client".to_owned()
    };
    (1u32..)
        .map(|n| {
            let suffix = match n {
                1 => " (connector)".to_owned(),
                n => format!(" (connector {n})"),
            };
            let mut head = base.clone();
            while head.len() + suffix.len() > READER_NAME_MAX_BYTES {
                head.pop();
            }
            format!("{head}{suffix}")
        })
        .find(|name| !looks.contains(&runread_core::names::look(name)))
        .ok_or_else(|| DecideError::Store("no reader name left".into()))
}

/// The owner approves request `id`, allowing at most `features` of those asked for, for the
/// reader `choice` names (see [`ReaderChoice`]; a reader made here has a key nobody is shown).
pub(crate) fn approve(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    id: &str,
    choice: ReaderChoice<'_>,
    features: &[Feature],
    now_ms: i64,
) -> Result<Reader, DecideError> {
    let request = store
        .oauth_request(id)
        .map_err(|e| DecideError::Store(e.to_string()))?
        .filter(|r| r.decided_at_ms.is_none() && r.expires_at_ms > now_ms)
        .ok_or(DecideError::NotPending)?;
    let asked = scope_features(Some(&request.scope)).map_err(|_| DecideError::NotPending)?;
    let allowed: Vec<Feature> = asked.into_iter().filter(|f| features.contains(f)).collect();
    if allowed.is_empty() {
        return Err(DecideError::NoFeatures);
    }
    let reader = match choice {
        ReaderChoice::New { name } => {
            add_reader(store, keys, name, now_ms)
                .map_err(DecideError::Reader)?
                .reader
        }
        ReaderChoice::Join { reader_id } => store
            .reader_of_id(reader_id, now_ms)
            .map_err(|e| DecideError::Store(e.to_string()))?
            .map(|(r, _)| r)
            .ok_or(DecideError::NoSuchReader)?,
    };
    let decided = store
        .decide_oauth_request(id, Some((&reader.id, &scope_of(&allowed))), now_ms)
        .map_err(|e| DecideError::Store(e.to_string()))?;
    if !decided {
        return Err(DecideError::NotPending);
    }
    Ok(reader)
}

/// What joining a client to the reader `reader_id` would let it read: that reader's grants that
/// can be read at `now_ms` (neither ended nor stale), newest first (the console shows them before the owner confirms). `None`: no live
/// reader has that id.
pub(crate) fn join_preview(
    store: &dyn Store,
    reader_id: &str,
    now_ms: i64,
) -> Result<Option<(Reader, Vec<Grant>)>, DecideError> {
    let found = store
        .reader_of_id(reader_id, now_ms)
        .map_err(|e| DecideError::Store(e.to_string()))?;
    let Some((reader, grants)) = found else {
        return Ok(None);
    };
    // What the client would read: a stale grant reads nothing, so it is not shown as if it did.
    let mut readable = Vec::with_capacity(grants.len());
    for g in grants {
        let standing = crate::admission::grant_standing(store, &g, now_ms)
            .map_err(|e| DecideError::Store(e.as_str().to_owned()))?;
        if standing.is_live() {
            readable.push(g);
        }
    }
    Ok(Some((reader, readable)))
}

/// The owner denies request `id`: the client is sent back with `access_denied`.
pub(crate) fn deny(store: &dyn Store, id: &str, now_ms: i64) -> Result<(), DecideError> {
    match store.decide_oauth_request(id, None, now_ms) {
        Ok(true) => Ok(()),
        Ok(false) => Err(DecideError::NotPending),
        Err(e) => Err(DecideError::Store(e.to_string())),
    }
}
