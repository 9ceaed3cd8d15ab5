//! What every reading of a run rests on, for a reader's tool call and the owner's preview alike:
//! the store, the known secrets everything served is masked with, the keys snapshots open with,
//! the journal supervised proofs are checked in, and what is kept in memory between calls (the
//! published answers, the snapshots lately opened, the wait slots). The gate is not here: the
//! [`crate::service::Service`] adds it for readers; the [`crate::owner::Owner`] needs none.

use std::sync::Arc;
use std::time::Duration;

use runread_core::ErrorCode;
use runread_core::limits::{WAITS_MAX, WAITS_PER_READER_MAX};
use runread_core::slots::KeyedSlots;
use runread_keys::KeyProvider;
use runread_store::Store;

use crate::evidence::publication::PublishedCache;
use crate::evidence::secrets::KnownSecrets;
use crate::evidence::snapshot::OpenedSnapshots;

/// Tunables of the service.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a session file must be quiet before a passive run counts as settled.
    pub settle_quiet: Duration,
    /// `<home>/journal`: where `runread run` journals its proofs. `None`: no supervised answer
    /// can be published (a journaled proof that cannot be checked is not a proof).
    pub journal_root: Option<std::path::PathBuf>,
    /// How often a waiting call re-checks its run when no change arrives
    /// ([`runread_core::limits::WAIT_RECHECK_MS`]).
    pub wait_recheck: Duration,
    /// Gated calls one reader may make per minute ([`crate::rate::CallRate`]; default
    /// [`runread_core::limits::READER_CALLS_PER_MINUTE_MAX`]).
    pub calls_per_minute: u32,
    /// How long an access request waits for the owner's decision
    /// ([`runread_core::limits::ACCESS_REQUEST_TTL_MS`]).
    pub access_request_ttl: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            settle_quiet: Duration::from_millis(runread_core::limits::SETTLE_QUIET_DEFAULT_MS),
            journal_root: None,
            wait_recheck: Duration::from_millis(runread_core::limits::WAIT_RECHECK_MS),
            calls_per_minute: runread_core::limits::READER_CALLS_PER_MINUTE_MAX,
            access_request_ttl: Duration::from_millis(
                runread_core::limits::ACCESS_REQUEST_TTL_MS.unsigned_abs(),
            ),
        }
    }
}

pub struct Reading {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) config: Config,
    pub(crate) secrets: KnownSecrets,
    /// The sealing keys: snapshots are opened with them.
    pub(crate) keys: Arc<dyn KeyProvider>,
    pub(crate) published: Arc<PublishedCache>,
    /// Snapshots recently opened (`snapshot::kept`).
    pub(crate) opened_snapshots: OpenedSnapshots,
    /// Kept runs recently opened (`snapshot::look`), apart from snapshots.
    pub(crate) opened_kept: OpenedSnapshots,
    /// The wait slots of `wait_for_run` ([`crate::tools::wait::wait_for_change`]).
    pub(crate) waits: Arc<KeyedSlots>,
}

impl Reading {
    /// The ground over `store` with the sealing `keys`, masking the stored known secrets and the
    /// `extra` ones (from a secrets file or environment variables).
    pub fn new(
        store: Arc<dyn Store>,
        keys: Arc<dyn KeyProvider>,
        config: Config,
        extra: Vec<String>,
    ) -> Reading {
        Reading {
            secrets: KnownSecrets::new(store.clone(), keys.clone(), extra),
            keys,
            store,
            config,
            published: Default::default(),
            opened_snapshots: Default::default(),
            opened_kept: Default::default(),
            waits: wait_slots(),
        }
    }

    /// The known secrets everything served is masked with (stored, from files, from the
    /// environment, and the read keys): what the owner's artifact registration checks against.
    pub fn known_secrets(&self) -> &KnownSecrets {
        &self.secrets
    }
}

/// The wait slots of `wait_for_run`: [`WAITS_MAX`] in all, [`WAITS_PER_READER_MAX`] per reader
/// (by its id).
pub(crate) fn wait_slots() -> Arc<KeyedSlots> {
    KeyedSlots::new(WAITS_MAX, WAITS_PER_READER_MAX)
}

/// A store failure, as every caller is told it: `unavailable` (the cause goes to the log only).
pub(crate) fn unavailable(e: runread_store::StoreError) -> ErrorCode {
    tracing::warn!(error = %e, "store unavailable");
    ErrorCode::Unavailable
}
