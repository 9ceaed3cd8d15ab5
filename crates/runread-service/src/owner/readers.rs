//! The owner's readers: a named client with one key — added, rotated, removed. A key is shown
//! once and never stored (only its hash).

use runread_core::key;
use runread_core::limits::READER_NAME_MAX_BYTES;
use runread_keys::KeyProvider;
use runread_store::{Reader, Store};

use crate::evidence::values::random_id;

/// Why a reader could not be added, rotated or removed. Owner-facing.
#[derive(Debug)]
pub enum ReaderError {
    BadName,
    /// `reader add` of a name a live reader already has.
    Taken(String),
    /// A name that looks like a live reader's (another case, look-alike characters): a person
    /// could not tell them apart on a listing.
    LooksLike {
        name: String,
        like: String,
    },
    /// No live reader of that name.
    NoSuchReader(String),
    /// A grant to a name that is no reader's yet and is a probable typo of the live readers'
    /// names in `close` (`runread_core::names::is_probable_typo_of`): made only on purpose.
    ProbableTypo {
        name: String,
        close: Vec<String>,
    },
    /// A grant to a name that is no reader's yet, where the owner is asked first (the console).
    NotAReaderYet {
        name: String,
        close: Vec<String>,
    },
    Store(String),
}

impl std::fmt::Display for ReaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReaderError::BadName => write!(
                f,
                "a reader's name must be 1..={READER_NAME_MAX_BYTES} bytes, without control, \
                 bidirectional or zero-width characters"
            ),
            ReaderError::LooksLike { name, like } => write!(
                f,
                "{name:?} looks like the reader {like:?}: a listing could not tell them apart; \
                 choose a name that differs in more than case or look-alike letters"
            ),
            ReaderError::Taken(n) => write!(
                f,
                "there is already a reader {n:?}; share runs with it (`runread grant --to {n:?}`) or \
                 give it a new key (`runread reader rotate {n:?}`)"
            ),
            ReaderError::NoSuchReader(n) => {
                write!(f, "no reader {n:?}; see `runread reader list`")
            }
            ReaderError::ProbableTypo { name, close } => write!(
                f,
                "no reader {name:?}; did you mean {}? Share with it (`--to {}`), or make a new \
                 reader {name:?} on purpose with `--new-reader`",
                quoted_list(close),
                close.first().map(String::as_str).unwrap_or_default()
            ),
            ReaderError::NotAReaderYet { name, close } if close.is_empty() => {
                write!(f, "{name:?} is no reader yet")
            }
            ReaderError::NotAReaderYet { name, close } => write!(
                f,
                "{name:?} is no reader yet; the readers with a close name: {}",
                quoted_list(close)
            ),
            ReaderError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// `"a", "b" or "c"`.
fn quoted_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// What a grant does when its reader's name is no live reader's yet: readers are made only on
/// purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewReaderPolicy {
    /// Make it: the owner said so (`--new-reader`, the console's confirmation).
    Make,
    /// Make it, unless the name is a probable typo of a live reader's (the CLI's default: a
    /// script naming a fresh reader still makes it, `--to claude-cod` does not).
    MakeUnlessTypo,
    /// Make none: the owner is asked first (the console's "Share with").
    Ask,
}

/// The most close names a refusal suggests.
pub const CLOSE_READER_NAMES_MAX: usize = 3;

/// The live readers' names `name` is a probable typo of, at most [`CLOSE_READER_NAMES_MAX`], in
/// name order.
pub fn readers_close_to(store: &dyn Store, name: &str) -> Result<Vec<String>, ReaderError> {
    let mut close: Vec<String> = store
        .readers()
        .map_err(|e| ReaderError::Store(e.to_string()))?
        .into_iter()
        .filter(|r| {
            r.removed_at_ms.is_none() && runread_core::names::is_probable_typo_of(name, &r.name)
        })
        .map(|r| r.name)
        .collect();
    close.sort();
    close.truncate(CLOSE_READER_NAMES_MAX);
    Ok(close)
}

/// Whether a grant may make the reader `name` (no live reader's name) under `policy`.
pub(crate) fn may_make_reader(
    store: &dyn Store,
    name: &str,
    policy: NewReaderPolicy,
) -> Result<(), ReaderError> {
    let close = match policy {
        NewReaderPolicy::Make => return Ok(()),
        _ => readers_close_to(store, name)?,
    };
    match policy {
        NewReaderPolicy::Ask => Err(ReaderError::NotAReaderYet {
            name: name.to_owned(),
            close,
        }),
        _ if close.is_empty() => Ok(()),
        _ => Err(ReaderError::ProbableTypo {
            name: name.to_owned(),
            close,
        }),
    }
}

/// A reader and its key, shown once and never stored (`reader add`, `reader rotate`, or the
/// first grant to a new name).
pub struct NewReader {
    pub reader: Reader,
    pub key: String,
}

/// Whether `name` may name a reader: 1..=[`READER_NAME_MAX_BYTES`] bytes, every character shown
/// as written (no control, bidirectional, zero-width or other invisible character:
/// [`runread_core::names::is_shown_as_written`]).
pub fn is_reader_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= READER_NAME_MAX_BYTES
        && runread_core::names::is_shown_as_written(name)
}

/// The live reader whose name looks like `name` without being it, if any
/// ([`runread_core::names::looks_like`]).
pub(crate) fn reader_looking_like(
    store: &dyn Store,
    name: &str,
) -> Result<Option<Reader>, ReaderError> {
    let look = runread_core::names::look(name);
    Ok(store
        .readers()
        .map_err(|e| ReaderError::Store(e.to_string()))?
        .into_iter()
        .find(|r| {
            r.removed_at_ms.is_none()
                && r.name != name
                && runread_core::names::look(&r.name) == look
        }))
}

/// A fresh read key for `reader_id`, sealed as a known secret (so that every text that leaves
/// masks it, this key and every key the reader had before), and its hash.
fn mint_key(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    reader_id: &str,
    now_ms: i64,
) -> Result<(String, String), ReaderError> {
    let key = key::generate().map_err(|e| ReaderError::Store(e.to_string()))?;
    let key_hash = key::hash(&key);
    // One secret per key (the hash's first characters tell a reader's keys apart), so a
    // rotated key stays masked.
    let name = format!(
        "{}{reader_id}:{}",
        crate::evidence::secrets::READ_KEY_SECRET_PREFIX,
        key_hash.get(..16).unwrap_or(&key_hash)
    );
    let sealed = crate::evidence::secrets::seal_secret(keys, &name, &key, now_ms)
        .map_err(|e| ReaderError::Store(e.as_str().into()))?;
    store
        .put_secret(&sealed)
        .map_err(|e| ReaderError::Store(e.to_string()))?;
    Ok((key, key_hash))
}

/// Adds the reader `name` with a fresh key. Refused when a live reader has that name.
pub(crate) fn add_reader(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    name: &str,
    now_ms: i64,
) -> Result<NewReader, ReaderError> {
    if !is_reader_name(name) {
        return Err(ReaderError::BadName);
    }
    if live_reader(store, name)?.is_some() {
        return Err(ReaderError::Taken(name.to_owned()));
    }
    if let Some(like) = reader_looking_like(store, name)? {
        return Err(ReaderError::LooksLike {
            name: name.to_owned(),
            like: like.name,
        });
    }
    let id = random_id("r-").map_err(ReaderError::Store)?;
    let (key, key_hash) = mint_key(store, keys, &id, now_ms)?;
    let reader = Reader {
        id,
        name: name.to_owned(),
        key_hash,
        created_at_ms: now_ms,
        removed_at_ms: None,
    };
    store
        .insert_reader(&reader)
        .map_err(|e| ReaderError::Store(e.to_string()))?;
    Ok(NewReader { reader, key })
}

/// Gives the reader `name` a new key: the old one is refused from its next call, and so is every
/// OAuth token a connector of this reader holds (its client signs in again, and the owner approves
/// it again); its grants are kept.
pub(crate) fn rotate_reader(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    name: &str,
    now_ms: i64,
) -> Result<NewReader, ReaderError> {
    let mut reader =
        live_reader(store, name)?.ok_or_else(|| ReaderError::NoSuchReader(name.to_owned()))?;
    let (key, key_hash) = mint_key(store, keys, &reader.id, now_ms)?;
    if !store
        .rotate_reader_key(&reader.id, &key_hash)
        .map_err(|e| ReaderError::Store(e.to_string()))?
    {
        // Removed meanwhile.
        return Err(ReaderError::NoSuchReader(name.to_owned()));
    }
    store
        .revoke_oauth_tokens_of_reader(&reader.id, now_ms)
        .map_err(|e| ReaderError::Store(e.to_string()))?;
    reader.key_hash = key_hash;
    Ok(NewReader { reader, key })
}

/// Removes the reader `name`: every grant of it revoked, its key refused from its next call.
pub(crate) fn remove_reader(
    store: &dyn Store,
    name: &str,
    now_ms: i64,
) -> Result<Reader, ReaderError> {
    let reader =
        live_reader(store, name)?.ok_or_else(|| ReaderError::NoSuchReader(name.to_owned()))?;
    if !store
        .remove_reader(&reader.id, now_ms)
        .map_err(|e| ReaderError::Store(e.to_string()))?
    {
        return Err(ReaderError::NoSuchReader(name.to_owned()));
    }
    // Snapshots its grants alone held go with them. The reader is removed whatever this does: a
    // snapshot left behind is destroyed by the next `maintain`, and no revoked grant reads it.
    if let Err(e) = crate::evidence::snapshot::destroy_unshared(store, now_ms) {
        tracing::warn!(
            code = e.as_str(),
            "snapshots not destroyed yet after a reader's removal"
        );
    }
    Ok(reader)
}

/// The live reader named `name`.
pub(crate) fn live_reader(store: &dyn Store, name: &str) -> Result<Option<Reader>, ReaderError> {
    store
        .reader_by_name(name)
        .map_err(|e| ReaderError::Store(e.to_string()))
}
