//! Known secrets: the owner's (`runread secret add`, a secrets file, named environment variables)
//! and every read key. They are stored sealed under a gate key, opened only to build the
//! [`Redactor`], which is rebuilt when the stored set changes.
//!
//! This is exact-match masking of known values, not general secret detection.

use std::sync::{Arc, Mutex};

use zeroize::Zeroizing;

use runread_core::ErrorCode;
use runread_core::redact::Redactor;
use runread_keys::KeyProvider;
use runread_keys::seal::{self, Sealed};
use runread_store::{SealedSecret, Store};

/// Name prefix under which read keys are stored as known secrets.
pub const READ_KEY_SECRET_PREFIX: &str = "read-key:";
const AAD_DOMAIN: &[u8] = b"runread.secret.v1\0";

fn aad(name: &str) -> Vec<u8> {
    let mut a = AAD_DOMAIN.to_vec();
    a.extend_from_slice(name.as_bytes());
    a
}

/// Seals `value` under the current gate key as the known secret `name`.
pub fn seal_secret(
    keys: &dyn KeyProvider,
    name: &str,
    value: &str,
    now_ms: i64,
) -> Result<SealedSecret, ErrorCode> {
    let (key_id, key) = keys.current().map_err(|_| ErrorCode::Unavailable)?;
    let sealed =
        seal::seal_bytes(&key, &aad(name), value.as_bytes()).map_err(|_| ErrorCode::Unavailable)?;
    Ok(SealedSecret {
        name: name.to_owned(),
        key_id,
        nonce: sealed.nonce.to_vec(),
        ciphertext: sealed.ciphertext,
        created_at_ms: now_ms,
    })
}

fn open(keys: &dyn KeyProvider, s: &SealedSecret) -> Result<Zeroizing<String>, ErrorCode> {
    let key = keys.get(&s.key_id).map_err(|_| ErrorCode::Unavailable)?;
    let nonce = s
        .nonce
        .as_slice()
        .try_into()
        .map_err(|_| ErrorCode::Unavailable)?;
    let plain = seal::open_bytes(
        &key,
        &aad(&s.name),
        &Sealed {
            nonce,
            ciphertext: s.ciphertext.clone(),
        },
    )
    .map_err(|_| ErrorCode::Unavailable)?;
    String::from_utf8(plain)
        .map(Zeroizing::new)
        .map_err(|_| ErrorCode::Unavailable)
}

/// The current set of known secrets as a redactor, cached by the store's fingerprint.
pub struct KnownSecrets {
    store: Arc<dyn Store>,
    keys: Arc<dyn KeyProvider>,
    /// Secrets from the secrets file and named environment variables, read at startup.
    extra: Vec<Zeroizing<String>>,
    cache: Mutex<Option<(String, Arc<Redactor>)>>,
}

/// Whether `value` can be a known secret: within the redactor's bounds
/// (`SECRET_MIN_BYTES..=SECRET_MAX_BYTES`), whether it is stored, read from a secrets file or
/// from the environment.
pub fn acceptable_length(value: &str) -> bool {
    (runread_core::redact::SECRET_MIN_BYTES..=runread_core::redact::SECRET_MAX_BYTES)
        .contains(&value.len())
}

/// The known secrets of a secrets file's text: one per line, trailing whitespace dropped, blank
/// lines and lines starting with `#` skipped.
pub fn parse_secrets_file(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

impl KnownSecrets {
    pub fn new(
        store: Arc<dyn Store>,
        keys: Arc<dyn KeyProvider>,
        extra: Vec<String>,
    ) -> KnownSecrets {
        KnownSecrets {
            store,
            keys,
            extra: extra.into_iter().map(Zeroizing::new).collect(),
            cache: Mutex::new(None),
        }
    }

    /// The gate's keys the secrets are sealed under.
    pub(crate) fn keys(&self) -> &dyn KeyProvider {
        &*self.keys
    }

    /// The redactor for every secret known now. Fails closed: if a secret cannot be opened, no
    /// text leaves (`unavailable`).
    pub fn redactor(&self) -> Result<Arc<Redactor>, ErrorCode> {
        let fp = self
            .store
            .secrets_fingerprint()
            .map_err(|_| ErrorCode::Unavailable)?;
        let mut cache = self.cache.lock().map_err(|_| ErrorCode::Unavailable)?;
        if let Some((cached, r)) = cache.as_ref()
            && *cached == fp
        {
            return Ok(r.clone());
        }
        let sealed = self
            .store
            .sealed_secrets()
            .map_err(|_| ErrorCode::Unavailable)?;
        let mut values: Vec<Zeroizing<String>> =
            Vec::with_capacity(sealed.len() + self.extra.len());
        for s in &sealed {
            values.push(open(&*self.keys, s)?);
        }
        values.extend(self.extra.iter().cloned());
        let r = Arc::new(
            Redactor::new(values.iter().map(|v| v.as_str())).map_err(|_| {
                tracing::error!("a known secret is outside the accepted length bounds");
                ErrorCode::Unavailable
            })?,
        );
        *cache = Some((fp, r.clone()));
        Ok(r)
    }
}
