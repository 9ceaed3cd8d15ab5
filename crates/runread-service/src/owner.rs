//! The owner's acts: readers (a named client with one key: add, rotate, remove), granting one
//! exact run to a reader, known secrets and artifacts. (The owner acts on the local machine
//! through the CLI and the console; readers never reach these functions.)

use runread_core::limits::{GRANT_MAX_LIFETIME_SECS, READER_NAME_MAX_BYTES};
use runread_core::{Feature, key};
use runread_gate::keys::KeyProvider;
use runread_store::{Grant, Reader, RunRecord, Store};

use crate::vocab::random_id;

/// Why a grant could not be made. Owner-facing: these messages may name runs and sessions.
#[derive(Debug)]
pub enum GrantError {
    NoSuchRun(String),
    Ambiguous(Vec<RunRecord>),
    BadExpiry(String),
    Reader(ReaderError),
    Store(String),
}

impl std::fmt::Display for GrantError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrantError::NoSuchRun(r) => write!(f, "no current run {r:?}; see `runread runs`"),
            GrantError::Ambiguous(runs) => {
                write!(
                    f,
                    "run id matches {} runs; give more of the run id, or add --session; they are:",
                    runs.len()
                )?;
                for r in runs {
                    write!(f, " {} (session {})", r.target.run_id, r.target.session_id)?;
                }
                Ok(())
            }
            GrantError::BadExpiry(m) => write!(f, "{m}"),
            GrantError::Reader(e) => write!(f, "{e}"),
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
    pub snapshot: crate::snapshot::Sealing,
}

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
            ReaderError::Store(e) => write!(f, "store: {e}"),
        }
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
pub fn reader_looking_like(store: &dyn Store, name: &str) -> Result<Option<Reader>, ReaderError> {
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
        crate::secrets::READ_KEY_SECRET_PREFIX,
        key_hash.get(..16).unwrap_or(&key_hash)
    );
    let sealed = crate::secrets::seal_secret(keys, &name, &key, now_ms)
        .map_err(|e| ReaderError::Store(e.as_str().into()))?;
    store
        .put_secret(&sealed)
        .map_err(|e| ReaderError::Store(e.to_string()))?;
    Ok((key, key_hash))
}

/// Adds the reader `name` with a fresh key. Refused when a live reader has that name.
pub fn add_reader(
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
pub fn rotate_reader(
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
pub fn remove_reader(store: &dyn Store, name: &str, now_ms: i64) -> Result<Reader, ReaderError> {
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
    if let Err(e) = crate::snapshot::destroy_unshared(store, now_ms) {
        tracing::warn!(
            code = e.as_str(),
            "snapshots not destroyed yet after a reader's removal"
        );
    }
    Ok(reader)
}

/// Revokes the grant `id` (`false`: no live grant has that id), and destroys the snapshot of its
/// run when no live grant holds it any more.
pub fn revoke_grant(store: &dyn Store, id: &str, now_ms: i64) -> Result<bool, String> {
    if !store.revoke_grant(id, now_ms).map_err(|e| e.to_string())? {
        return Ok(false);
    }
    if let Err(e) = crate::snapshot::destroy_unshared(store, now_ms) {
        tracing::warn!(
            code = e.as_str(),
            "snapshots not destroyed yet after a revocation"
        );
    }
    Ok(true)
}

/// The live reader named `name`.
pub fn live_reader(store: &dyn Store, name: &str) -> Result<Option<Reader>, ReaderError> {
    store
        .reader_by_name(name)
        .map_err(|e| ReaderError::Store(e.to_string()))
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

/// Shortest run-id prefix `grant --run` takes: shorter prefixes name too many runs to be a
/// deliberate choice.
pub const RUN_ID_PREFIX_MIN: usize = 4;

/// The runs `run_id` names: those with exactly that id, else (for at least
/// [`RUN_ID_PREFIX_MIN`] characters) those whose id starts with it — Claude Code's run ids are
/// whole uuids, which nobody types.
pub fn find_runs(
    store: &dyn Store,
    run_id: &str,
) -> Result<Vec<runread_store::RunRecord>, runread_store::StoreError> {
    let exact = store.runs_by_id(run_id)?;
    if !exact.is_empty() || run_id.len() < RUN_ID_PREFIX_MIN {
        return Ok(exact);
    }
    Ok(store
        .runs()?
        .into_iter()
        .filter(|r| r.target.run_id.starts_with(run_id))
        .collect())
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
}

/// Grants `features` of one run to the reader `request.reader`: no new key when it is a reader
/// already (its client's next call sees the grant); otherwise the reader is made, holding this
/// grant, and its key is returned to be shown once.
pub fn grant(
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
    } = request;
    let mut runs = find_runs(store, run_id).map_err(|e| GrantError::Store(e.to_string()))?;
    if let Some(s) = session_id {
        runs.retain(|r| r.target.session_id == s);
    }
    let run = match runs.len() {
        0 => return Err(GrantError::NoSuchRun(run_id.to_owned())),
        1 => runs.remove(0),
        _ => return Err(GrantError::Ambiguous(runs)),
    };
    grant_run(store, keys, run, features, expires_at_ms, reader, now_ms)
}

/// [`grant`] of exactly `run` (a current run record: `runread run --share` has its exact target).
pub fn grant_run(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    run: RunRecord,
    features: Vec<Feature>,
    expires_at_ms: i64,
    reader: &str,
    now_ms: i64,
) -> Result<NewGrant, GrantError> {
    if !is_reader_name(reader) {
        return Err(GrantError::Reader(ReaderError::BadName));
    }
    let (holder, key) = match live_reader(store, reader).map_err(GrantError::Reader)? {
        Some(r) => (r, None),
        None => {
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
    };
    store
        .insert_grant(&grant)
        .map_err(|e| GrantError::Store(e.to_string()))?;
    // The grant stands whatever sealing its snapshot does; what it did is said.
    let snapshot = crate::snapshot::seal(store, keys, &run, now_ms)
        .unwrap_or(crate::snapshot::Sealing::Failed);
    Ok(NewGrant {
        grant,
        run,
        reader: holder,
        key,
        snapshot,
    })
}

/// Why a secret could not be added.
#[derive(Debug)]
pub enum SecretError {
    BadName,
    /// Shorter or longer than the redactor accepts.
    BadLength,
    Store(String),
}

impl std::fmt::Display for SecretError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretError::BadName => write!(
                f,
                "--name must be an id (letters, digits, - _ . :) and not start with read-key:"
            ),
            SecretError::BadLength => write!(
                f,
                "a known secret must be {}..={} bytes",
                runread_core::redact::SECRET_MIN_BYTES,
                runread_core::redact::SECRET_MAX_BYTES
            ),
            SecretError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// Adds (or replaces) the known secret `name`. Its value is stored sealed and never shown again.
pub fn add_secret(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    name: &str,
    value: &str,
    now_ms: i64,
) -> Result<(), SecretError> {
    if !runread_core::target::is_id(name)
        || name.starts_with(crate::secrets::READ_KEY_SECRET_PREFIX)
    {
        return Err(SecretError::BadName);
    }
    if !crate::secrets::acceptable_length(value) {
        return Err(SecretError::BadLength);
    }
    let sealed = crate::secrets::seal_secret(keys, name, value, now_ms)
        .map_err(|e| SecretError::Store(e.as_str().into()))?;
    store
        .put_secret(&sealed)
        .map_err(|e| SecretError::Store(e.to_string()))
}

/// Names of the owner's known secrets (read keys are not listed).
pub fn secret_names(store: &dyn Store) -> Result<Vec<String>, SecretError> {
    Ok(store
        .sealed_secrets()
        .map_err(|e| SecretError::Store(e.to_string()))?
        .into_iter()
        .map(|s| s.name)
        .filter(|n| !n.starts_with(crate::secrets::READ_KEY_SECRET_PREFIX))
        .collect())
}

/// Why an artifact could not be registered. Owner-facing.
#[derive(Debug)]
pub enum ArtifactError {
    Run(GrantError),
    Refused(runread_artifacts::Refusal),
    BadKind,
    BadName,
    ContainsSecret,
    Store(String),
}

impl std::fmt::Display for ArtifactError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArtifactError::Run(e) => write!(f, "{e}"),
            ArtifactError::Refused(r) => write!(f, "artifact refused: {}", r.as_str()),
            ArtifactError::BadKind => write!(f, "--kind must be generated or attached"),
            ArtifactError::BadName => {
                write!(f, "--name must be 1..=255 bytes without control characters")
            }
            ArtifactError::ContainsSecret => {
                write!(f, "artifact refused: it contains a known secret")
            }
            ArtifactError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// Registers the file at `path` (relative to the run's workspace root, or absolute inside it) as
/// an artifact of the run. Only the owner's CLI calls this: never a reader, never text from an answer.
#[allow(clippy::too_many_arguments)]
pub fn add_artifact(
    store: &dyn Store,
    secrets: &crate::secrets::KnownSecrets,
    run_id: &str,
    session_id: Option<&str>,
    path: &str,
    name: Option<&str>,
    mime: Option<&str>,
    kind: &str,
    now_ms: i64,
) -> Result<(String, runread_artifacts::ArtifactVersion), ArtifactError> {
    if kind != "generated" && kind != "attached" {
        return Err(ArtifactError::BadKind);
    }
    let mut runs = store
        .runs_by_id(run_id)
        .map_err(|e| ArtifactError::Store(e.to_string()))?;
    if let Some(s) = session_id {
        runs.retain(|r| r.target.session_id == s);
    }
    let run = match runs.len() {
        0 => return Err(ArtifactError::Run(GrantError::NoSuchRun(run_id.to_owned()))),
        1 => runs.remove(0),
        _ => return Err(ArtifactError::Run(GrantError::Ambiguous(runs))),
    };
    let root = std::path::Path::new(&run.workspace_path);
    let rel = match std::path::Path::new(path).strip_prefix(root) {
        Ok(r) if std::path::Path::new(path).is_absolute() => r.to_str().unwrap_or(path).to_owned(),
        _ => path.to_owned(),
    };
    let rel_path = runread_artifacts::validate_path(&rel).map_err(ArtifactError::Refused)?;
    let mime = mime.unwrap_or_else(|| runread_artifacts::guess_mime(&rel_path));
    let version = runread_artifacts::register(root, &rel, mime).map_err(ArtifactError::Refused)?;
    // Refuse an artifact that contains a known secret (it is never masked).
    let redactor = secrets
        .redactor()
        .map_err(|e| ArtifactError::Store(e.as_str().into()))?;
    let mut data = Vec::with_capacity(usize::try_from(version.size).unwrap_or(0));
    let mut pos = 0u64;
    while pos < version.size {
        let c = runread_artifacts::read_chunk(
            root,
            &version,
            pos,
            runread_artifacts::TRANSFER_MAX_BYTES,
        )
        .map_err(ArtifactError::Refused)?;
        if c.bytes.is_empty() {
            break;
        }
        pos += c.bytes.len() as u64;
        data.extend_from_slice(&c.bytes);
    }
    if redactor.contains_secret(&data) {
        return Err(ArtifactError::ContainsSecret);
    }
    let display = name
        .map(str::to_owned)
        .unwrap_or_else(|| rel_path.file_name().to_owned());
    if display.is_empty() || display.len() > 255 || display.chars().any(char::is_control) {
        return Err(ArtifactError::BadName);
    }
    let artifact_id = random_id("a-").map_err(ArtifactError::Store)?;
    let rec = runread_store::ArtifactRecord {
        artifact_id: artifact_id.clone(),
        target: run.target.clone(),
        name: display,
        mime: mime.to_owned(),
        kind: kind.to_owned(),
        version_json: serde_json::to_string(&version)
            .map_err(|e| ArtifactError::Store(e.to_string()))?,
        created_at_ms: now_ms,
    };
    store
        .add_artifact(&rec)
        .map_err(|e| ArtifactError::Store(e.to_string()))?;
    // A shared run's snapshot holds its artifacts when `artifacts` is granted: sealed again with
    // this one. The artifact is registered whatever this does (the run keeps its old snapshot).
    let t = &run.target;
    if let Ok(Some(_)) = store.snapshot(&t.session_id, t.generation, &t.run_id)
        && let Err(e) = crate::snapshot::seal(store, secrets.keys(), &run, now_ms)
    {
        tracing::warn!(
            code = e.as_str(),
            "a shared run's snapshot not sealed again"
        );
    }
    Ok((artifact_id, version))
}
