//! The service: admission and one adapter per tool, transport-free.
//!
//! Every tool call goes through [`Service::call`], in DESIGN.md's admission order: the key
//! (already resolved to a [`KeyContext`] by [`Service::admit_key`]), exact arguments, the grant
//! (all six target fields, feature, expiry, revocation), currency of instance, revision and
//! generation, the adapter, a re-check after all I/O, and finally the trust label. Every
//! refusal is one [`ErrorCode`]; every success is a [`Labeled`] result.
#![forbid(unsafe_code)]

mod final_answer;
mod grants;
pub mod owner;
pub mod tools;

use std::sync::Arc;
use std::time::Duration;

use runread_core::envelope::Labeled;
use runread_core::{ErrorCode, Feature, key};
use runread_store::{Grant, Store};

pub use tools::{Tool, ToolDef};

/// A presented key that matched stored grants. Holds the key's hash, never the key.
#[derive(Debug, Clone)]
pub struct KeyContext {
    pub key_hash: String,
    pub grants: Vec<Grant>,
}

impl KeyContext {
    /// Features of the key's live grants.
    pub fn live_features(&self, now_ms: i64) -> Vec<Feature> {
        let mut f: Vec<Feature> = self
            .grants
            .iter()
            .filter(|g| g.is_live(now_ms))
            .flat_map(|g| g.features.iter().copied())
            .collect();
        f.sort();
        f.dedup();
        f
    }
}

/// Tunables of the service.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a session file must be quiet before a passive run counts as settled.
    pub settle_quiet: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            settle_quiet: Duration::from_millis(runread_core::limits::SETTLE_QUIET_DEFAULT_MS),
        }
    }
}

pub struct Service {
    store: Arc<dyn Store>,
    config: Config,
}

impl Service {
    pub fn new(store: Arc<dyn Store>, config: Config) -> Self {
        Service { store, config }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Admission step 3: the values of every `x-runread-key` header (or the stdio key file) →
    /// the key's grants. Exactly one value; 64 lowercase hex; a known hash (compared in
    /// constant time).
    pub fn admit_key(&self, presented: &[&[u8]]) -> Result<KeyContext, ErrorCode> {
        let value = match presented {
            [] => return Err(ErrorCode::MissingKey),
            [one] => *one,
            _ => return Err(ErrorCode::DuplicateKey),
        };
        let Ok(value) = std::str::from_utf8(value) else {
            return Err(ErrorCode::InvalidKey);
        };
        if !key::is_well_formed(value) {
            return Err(ErrorCode::InvalidKey);
        }
        let key_hash = key::hash(value);
        let grants: Vec<Grant> = self
            .store
            .grants_by_key_hash(&key_hash)
            .map_err(|e| {
                tracing::warn!(error = %e, "store unavailable during key admission");
                ErrorCode::Unavailable
            })?
            .into_iter()
            .filter(|g| key::hashes_equal(&g.key_hash, &key_hash))
            .collect();
        if grants.is_empty() {
            return Err(ErrorCode::InvalidKey);
        }
        Ok(KeyContext { key_hash, grants })
    }

    /// The tools this key may see: those of its live grants' features, plus
    /// `list_granted_targets` when it has any live grant. No live grant: an empty catalog.
    pub fn catalog(&self, ctx: &KeyContext, now_ms: i64) -> Vec<&'static ToolDef> {
        let features = ctx.live_features(now_ms);
        if features.is_empty() {
            return vec![];
        }
        tools::ALL
            .iter()
            .filter(|t| match t.feature {
                None => true,
                Some(f) => features.contains(&f),
            })
            .collect()
    }

    /// Serves one tool call for an admitted key.
    pub fn call(
        &self,
        ctx: &KeyContext,
        tool: &str,
        args: &serde_json::Value,
        now_ms: i64,
    ) -> Result<Labeled, ErrorCode> {
        let Some(def) = tools::by_name(tool) else {
            return Err(ErrorCode::UnknownTool);
        };
        let result = match def.tool {
            Tool::ListGrantedTargets => grants::list_granted_targets(self, ctx, args, now_ms),
            Tool::ReadFinalAnswer => final_answer::read(self, ctx, args, now_ms),
        };
        if let Err(code) = &result {
            tracing::debug!(tool, code = code.as_str(), "refused");
        }
        result
    }

    /// The state `read_final_answer` would report for `run` now (for the owner's listing).
    pub fn answer_state(&self, run: &runread_store::RunRecord, now_ms: i64) -> &'static str {
        final_answer::judge(self, run, now_ms).as_str()
    }

    fn unavailable(e: runread_store::StoreError) -> ErrorCode {
        tracing::warn!(error = %e, "store unavailable");
        ErrorCode::Unavailable
    }
}
