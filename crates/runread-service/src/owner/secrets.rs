//! The owner's known secrets: sealed under the owner's keys, masked from everything served.

use runread_keys::KeyProvider;
use runread_store::Store;

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
pub(crate) fn add_secret(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    name: &str,
    value: &str,
    now_ms: i64,
) -> Result<(), SecretError> {
    if !runread_core::target::is_id(name)
        || name.starts_with(crate::evidence::secrets::READ_KEY_SECRET_PREFIX)
    {
        return Err(SecretError::BadName);
    }
    if !crate::evidence::secrets::acceptable_length(value) {
        return Err(SecretError::BadLength);
    }
    let sealed = crate::evidence::secrets::seal_secret(keys, name, value, now_ms)
        .map_err(|e| SecretError::Store(e.as_str().into()))?;
    store
        .put_secret(&sealed)
        .map_err(|e| SecretError::Store(e.to_string()))
}

/// Names of the owner's known secrets (read keys are not listed).
pub(crate) fn secret_names(store: &dyn Store) -> Result<Vec<String>, SecretError> {
    Ok(store
        .sealed_secrets()
        .map_err(|e| SecretError::Store(e.to_string()))?
        .into_iter()
        .map(|s| s.name)
        .filter(|n| !n.starts_with(crate::evidence::secrets::READ_KEY_SECRET_PREFIX))
        .collect())
}
