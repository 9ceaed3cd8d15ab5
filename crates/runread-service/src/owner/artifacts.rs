//! The owner's artifacts: a file of a run's workspace registered as one of its produced files,
//! refused when it holds a known secret.

use runread_store::{RunRecord, Store};

use crate::evidence::secrets::KnownSecrets;
use crate::evidence::values::random_id;
use crate::owner::grants::GrantError;

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

/// An artifact the owner registers: the file at `path` (relative to the run's workspace root,
/// or absolute inside it) of the run `run_id` (in `session_id`, when the id is ambiguous).
#[derive(Debug, Clone, Copy)]
pub struct NewArtifact<'a> {
    pub run_id: &'a str,
    pub session_id: Option<&'a str>,
    pub path: &'a str,
    /// Its name as shown (default: the file's name).
    pub name: Option<&'a str>,
    /// Its MIME type (default: guessed from the file's name).
    pub mime: Option<&'a str>,
    /// `generated` or `attached`.
    pub kind: &'a str,
}

/// The one current run `a` names.
fn the_run(store: &dyn Store, a: &NewArtifact<'_>) -> Result<RunRecord, ArtifactError> {
    crate::owner::run_ids::resolve(store, a.run_id, a.session_id)
        .map_err(|e| ArtifactError::Run(GrantError::Run(e)))
}

/// Whether the registered file holds a known secret: read whole (an artifact is bounded), since
/// an artifact is served as it is, never masked.
fn holds_a_secret(
    root: &std::path::Path,
    version: &runread_artifacts::ArtifactVersion,
    secrets: &KnownSecrets,
) -> Result<bool, ArtifactError> {
    let redactor = secrets
        .redactor()
        .map_err(|e| ArtifactError::Store(e.as_str().into()))?;
    let mut data = Vec::with_capacity(usize::try_from(version.size).unwrap_or(0));
    let mut pos = 0u64;
    while pos < version.size {
        let c = runread_artifacts::read_chunk(
            root,
            version,
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
    Ok(redactor.contains_secret(&data))
}

/// Registers the artifact `a` (see [`NewArtifact`]). Only the owner calls this: never a reader,
/// never text from an answer.
pub(crate) fn add_artifact(
    store: &dyn Store,
    secrets: &KnownSecrets,
    a: &NewArtifact<'_>,
    now_ms: i64,
) -> Result<(String, runread_artifacts::ArtifactVersion), ArtifactError> {
    if a.kind != "generated" && a.kind != "attached" {
        return Err(ArtifactError::BadKind);
    }
    let run = the_run(store, a)?;
    let root = std::path::Path::new(&run.workspace_path);
    let path = std::path::Path::new(a.path);
    let rel = match path.strip_prefix(root) {
        Ok(r) if path.is_absolute() => r.to_str().unwrap_or(a.path).to_owned(),
        _ => a.path.to_owned(),
    };
    let rel_path = runread_artifacts::validate_path(&rel).map_err(ArtifactError::Refused)?;
    let mime = a
        .mime
        .unwrap_or_else(|| runread_artifacts::guess_mime(&rel_path));
    let version = runread_artifacts::register(root, &rel, mime).map_err(ArtifactError::Refused)?;
    if holds_a_secret(root, &version, secrets)? {
        return Err(ArtifactError::ContainsSecret);
    }
    let display = a
        .name
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
        kind: a.kind.to_owned(),
        version_json: serde_json::to_string(&version)
            .map_err(|e| ArtifactError::Store(e.to_string()))?,
        created_at_ms: now_ms,
    };
    store
        .add_artifact(&rec)
        .map_err(|e| ArtifactError::Store(e.to_string()))?;
    reseal_if_shared(store, secrets, &run, now_ms);
    Ok((artifact_id, version))
}

/// A shared run's snapshot holds its artifacts when `artifacts` is granted: sealed again with the
/// new one. The artifact is registered whatever this does (the run keeps its old snapshot).
fn reseal_if_shared(store: &dyn Store, secrets: &KnownSecrets, run: &RunRecord, now_ms: i64) {
    let t = &run.target;
    if let Ok(Some(_)) = store.snapshot(&t.session_id, t.generation, &t.run_id)
        && let Err(e) = crate::evidence::snapshot::seal(store, secrets.keys(), run, now_ms)
    {
        tracing::warn!(
            code = e.as_str(),
            "a shared run's snapshot not sealed again"
        );
    }
}
