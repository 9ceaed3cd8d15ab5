//! Access requests: a reader asks for runs (`request_access`), the owner decides on the loopback
//! side only (the console, `runread requests`: [`crate::owner::requests`]), an approval makes
//! ordinary exact grants, one run each, and the reader learns the decision (`wait_for_access`).
//!
//! What the reader wrote (its hints and its reason) is its own untrusted text: sealed in the store
//! under the gate key, opened only for the owner, and shown masked. The reader's side of a request
//! says nothing of any run until the owner approved it: filing answers the same whatever runs
//! exist, and a request that is not the caller's answers as one that expired.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use runread_core::limits::{
    ACCESS_REQUEST_ID_MAX_BYTES, ACCESS_REQUESTS_PENDING_MAX,
    ACCESS_REQUESTS_PENDING_PER_READER_MAX,
};
use runread_core::{ErrorCode, Feature};
use runread_keys::KeyProvider;
use runread_keys::seal::{self, Sealed};
use runread_store::{AccessRequestBounds, AccessRequestRecord, Filed};

use crate::evidence::Reading;

/// What the reader wrote: its hints and its reason, each optional. Sealed in the store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asked {
    /// An agent's name (`runread_core::Agent::as_str`).
    pub agent: Option<String>,
    /// A workspace's name.
    pub workspace: Option<String>,
    /// Words the runs' prompts or answers hold, matched as the owner's search matches.
    pub words: Option<String>,
    /// Why the reader asks: its own text, never an instruction.
    pub reason: Option<String>,
}

/// A request as a reader makes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct NewRequest {
    pub asked: Asked,
    pub latest: u32,
    pub features: Vec<Feature>,
    pub duration_s: u64,
}

/// Whether `id` is shaped as runread makes request ids (`q-` and lowercase hex, at most
/// [`ACCESS_REQUEST_ID_MAX_BYTES`]): what a reader's `wait_for_access` and the owner's decision
/// take, before any store is asked.
pub fn is_request_id(id: &str) -> bool {
    id.len() <= ACCESS_REQUEST_ID_MAX_BYTES
        && id.strip_prefix("q-").is_some_and(|hex| {
            !hex.is_empty() && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
}

/// What the sealed text is bound to: its request and reader, so that a sealed blob moved to
/// another row does not open.
const AAD_DOMAIN: &[u8] = b"runread.access-request.v1\0";
/// What the fingerprint of a request is a digest of, apart from the cursor key's other uses.
const FINGERPRINT_DOMAIN: &[u8] = b"access-request";

fn aad(id: &str, reader_id: &str) -> Vec<u8> {
    let mut a = AAD_DOMAIN.to_vec();
    a.extend_from_slice(&(id.len() as u64).to_be_bytes());
    a.extend_from_slice(id.as_bytes());
    a.extend_from_slice(reader_id.as_bytes());
    a
}

/// Files `new` for the reader `reader_id`: its id and when it expires. An identical request of
/// the same reader still waiting is answered with its own id; beyond the bounds,
/// `requests_pending`.
pub(crate) fn file(
    reading: &Reading,
    reader_id: &str,
    new: &NewRequest,
    now_ms: i64,
) -> Result<(String, i64), ErrorCode> {
    let store = &reading.store;
    let identity = serde_json::json!({ "reader": reader_id, "request": new });
    let fingerprint = store.cursor_key().fingerprint(
        FINGERPRINT_DOMAIN,
        &runread_core::canonical::to_vec(&identity),
    );
    let id = crate::evidence::values::random_id("q-").map_err(|_| ErrorCode::Unavailable)?;
    let (key_id, sealed) = seal_asked(&*reading.keys, &id, reader_id, &new.asked)?;
    let ttl_ms = i64::try_from(reading.config.access_request_ttl.as_millis()).unwrap_or(i64::MAX);
    let record = AccessRequestRecord {
        id,
        reader_id: reader_id.to_owned(),
        fingerprint,
        key_id,
        sealed,
        latest: new.latest,
        features: new.features.clone(),
        duration_s: new.duration_s,
        created_at_ms: now_ms,
        expires_at_ms: now_ms.saturating_add(ttl_ms),
        decided_at_ms: None,
        approved: None,
        grant_ids: None,
    };
    let bounds = AccessRequestBounds {
        pending_max: ACCESS_REQUESTS_PENDING_MAX,
        pending_per_reader_max: ACCESS_REQUESTS_PENDING_PER_READER_MAX,
    };
    match store
        .file_access_request(&record, bounds)
        .map_err(crate::evidence::unavailable)?
    {
        Filed::New => Ok((record.id, record.expires_at_ms)),
        Filed::Same(id) => {
            let same = store
                .access_request(&id)
                .map_err(crate::evidence::unavailable)?
                .ok_or(ErrorCode::Unavailable)?;
            Ok((same.id, same.expires_at_ms))
        }
        Filed::Full => Err(ErrorCode::RequestsPending),
    }
}

fn seal_asked(
    keys: &dyn KeyProvider,
    id: &str,
    reader_id: &str,
    asked: &Asked,
) -> Result<(String, String), ErrorCode> {
    let (key_id, key) = keys.current().map_err(|_| ErrorCode::Unavailable)?;
    let plain = serde_json::to_vec(asked).map_err(|_| ErrorCode::Unavailable)?;
    let sealed =
        seal::seal_bytes(&key, &aad(id, reader_id), &plain).map_err(|_| ErrorCode::Unavailable)?;
    let mut bytes = sealed.nonce.to_vec();
    bytes.extend_from_slice(&sealed.ciphertext);
    Ok((key_id, STANDARD.encode(bytes)))
}

/// What the reader of `record` wrote, opened; `unavailable` when it does not open (its key
/// gone, the row tampered with or moved).
pub(crate) fn open_asked(
    keys: &dyn KeyProvider,
    record: &AccessRequestRecord,
) -> Result<Asked, ErrorCode> {
    let key = keys
        .get(&record.key_id)
        .map_err(|_| ErrorCode::Unavailable)?;
    let bytes = STANDARD
        .decode(&record.sealed)
        .map_err(|_| ErrorCode::Unavailable)?;
    let (nonce, ciphertext) = bytes
        .split_at_checked(seal::NONCE_BYTES)
        .ok_or(ErrorCode::Unavailable)?;
    let sealed = Sealed {
        nonce: nonce.try_into().map_err(|_| ErrorCode::Unavailable)?,
        ciphertext: ciphertext.to_vec(),
    };
    let plain = seal::open_bytes(&key, &aad(&record.id, &record.reader_id), &sealed)
        .map_err(|_| ErrorCode::Unavailable)?;
    serde_json::from_slice(&plain).map_err(|_| ErrorCode::Unavailable)
}

/// Where a request stands for the reader asking about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Waiting for the owner (or for an approval's grants to be made) until `expires_at_ms`.
    Pending {
        expires_at_ms: i64,
    },
    /// Approved: the grants made for it.
    Approved {
        expires_at_ms: i64,
        grant_ids: Vec<String>,
    },
    Denied {
        expires_at_ms: i64,
    },
    /// Expired undecided — or not this reader's request, or no request at all: the same answer.
    Expired,
}

impl Standing {
    /// Whether the reader waits on: nothing is decided yet.
    pub(crate) fn pending(&self) -> bool {
        matches!(self, Standing::Pending { .. })
    }
}

/// Where the request `id` stands for `reader_id` at `now_ms`, read afresh from `store`: what a
/// reader's wait, its task and its gated answer all read.
pub(crate) fn standing_now(
    store: &dyn runread_store::Store,
    reader_id: &str,
    id: &str,
    now_ms: i64,
) -> runread_store::Result<Standing> {
    let record = store.access_request(id)?;
    Ok(standing(record.as_ref(), reader_id, now_ms))
}

/// Where `record` (the request the reader named, if the store has it) stands for `reader_id`
/// at `now_ms`.
pub(crate) fn standing(
    record: Option<&AccessRequestRecord>,
    reader_id: &str,
    now_ms: i64,
) -> Standing {
    let Some(q) = record.filter(|q| q.reader_id == reader_id) else {
        return Standing::Expired;
    };
    let expires_at_ms = q.expires_at_ms;
    match (q.approved, &q.grant_ids) {
        (Some(true), Some(ids)) => Standing::Approved {
            expires_at_ms,
            grant_ids: ids.clone(),
        },
        (Some(false), _) => Standing::Denied { expires_at_ms },
        // Approved, its grants still being made: it is told once they are.
        (Some(true), None) if now_ms < expires_at_ms => Standing::Pending { expires_at_ms },
        (None, _) if now_ms < expires_at_ms => Standing::Pending { expires_at_ms },
        _ => Standing::Expired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(approved: Option<bool>, grant_ids: Option<Vec<String>>) -> AccessRequestRecord {
        AccessRequestRecord {
            id: "q-1".into(),
            reader_id: "r1".into(),
            fingerprint: "f".into(),
            key_id: "k".into(),
            sealed: String::new(),
            latest: 1,
            features: vec![Feature::FinalAnswer],
            duration_s: 60,
            created_at_ms: 0,
            expires_at_ms: 100,
            decided_at_ms: approved.map(|_| 50),
            approved,
            grant_ids,
        }
    }

    #[test]
    fn a_request_stands_pending_until_decided_or_expired_and_only_for_its_reader() {
        let pending = record(None, None);
        assert!(standing(Some(&pending), "r1", 99).pending());
        assert_eq!(standing(Some(&pending), "r1", 100), Standing::Expired);
        assert_eq!(standing(Some(&pending), "r2", 99), Standing::Expired);
        assert_eq!(standing(None, "r1", 0), Standing::Expired);
        let granting = record(Some(true), None);
        assert!(standing(Some(&granting), "r1", 60).pending());
        let approved = record(Some(true), Some(vec!["g-1".into()]));
        assert_eq!(
            standing(Some(&approved), "r1", 500),
            Standing::Approved {
                expires_at_ms: 100,
                grant_ids: vec!["g-1".into()]
            },
            "a decision outlives the request's wait"
        );
        assert_eq!(standing(Some(&approved), "r2", 60), Standing::Expired);
        let denied = record(Some(false), None);
        assert_eq!(
            standing(Some(&denied), "r1", 500),
            Standing::Denied { expires_at_ms: 100 }
        );
    }
}
