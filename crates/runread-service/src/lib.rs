//! The service: admission and one adapter per tool, transport-free.
//!
//! Every tool call goes through [`Service::call`], in the admission order docs/architecture.md numbers: the key
//! (already resolved to a [`KeyContext`] by [`Service::admit_key`]), exact arguments, the grant
//! (all six target fields, feature, expiry, revocation), currency of instance, revision and
//! generation, then the execution gate (durable start record, sealed input, the adapter with only
//! its feature's reader, normalized output, receipt), a re-check after all I/O, and finally the
//! trust label. Every refusal is one [`ErrorCode`]; every success is a [`Labeled`] result.
#![forbid(unsafe_code)]

mod adapters;
mod admission;
mod artifacts;
mod final_answer;
mod fork;
mod get_run;
mod grants;
mod history;
mod metadata;
pub mod oauth;
pub mod outputs;
pub mod owner;
pub mod preview;
mod publication;
pub mod rate;
mod schema;
pub mod search;
pub mod secrets;
pub mod shown;
pub mod snapshot;
mod source;
mod supervised;
pub mod tasks;
pub mod tools;
mod vocab;
mod wait;
mod work_state;

use std::sync::Arc;
use std::time::Duration;

use runread_core::envelope::{Labeled, label};
use runread_core::{ErrorCode, Feature, key};
use runread_gate::keys::KeyProvider;
use runread_gate::registry::RegistryError;
use runread_gate::{Call, Gate, GateAdmission, Registry};
use runread_store::{Grant, Reader, Store};

pub use tools::{ToolDef, definitions, pinned_bindings};

/// A presented key that names a live reader, and that reader's grants live when it was presented.
/// Holds the key's hash, never the key.
#[derive(Debug, Clone)]
pub struct KeyContext {
    pub key_hash: String,
    pub reader: Reader,
    /// The reader's grants live at admission of the key, newest first (capped, for a token).
    pub live_grants: Vec<Grant>,
    /// For a connector's token: the features the owner allowed its client, the most any grant
    /// of the reader gives it. `None` for a key.
    pub feature_cap: Option<Vec<Feature>>,
}

impl KeyContext {
    /// Features of the reader's live grants.
    pub fn live_features(&self, now_ms: i64) -> Vec<Feature> {
        let mut f: Vec<Feature> = self
            .live_grants
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
    /// `<home>/journal`: where `runread run` journals its proofs. `None`: no supervised answer
    /// can be published (a journaled proof that cannot be checked is not a proof).
    pub journal_root: Option<std::path::PathBuf>,
    /// How often a waiting call re-checks its run when no change arrives
    /// ([`runread_core::limits::WAIT_RECHECK_MS`]).
    pub wait_recheck: Duration,
    /// Gated calls one reader may make per minute ([`rate::CallRate`]; default
    /// [`runread_core::limits::READER_CALLS_PER_MINUTE_MAX`]).
    pub calls_per_minute: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            settle_quiet: Duration::from_millis(runread_core::limits::SETTLE_QUIET_DEFAULT_MS),
            journal_root: None,
            wait_recheck: Duration::from_millis(runread_core::limits::WAIT_RECHECK_MS),
            calls_per_minute: runread_core::limits::READER_CALLS_PER_MINUTE_MAX,
        }
    }
}

/// A labeled success and the start record it was served under.
#[derive(Debug, Clone)]
pub struct Answer {
    pub labeled: Labeled,
    pub start_id: String,
}

pub struct Service {
    store: Arc<dyn Store>,
    gate: Gate,
    config: Config,
    secrets: secrets::KnownSecrets,
    /// The gate's keys: snapshots are opened with them.
    keys: Arc<dyn KeyProvider>,
    published: Arc<publication::PublishedCache>,
    /// Snapshots recently opened (`snapshot::kept`).
    opened_snapshots: snapshot::OpenedSnapshots,
    /// The wait slots of `wait_for_run` ([`Service::wait_for_change`]).
    waits: Arc<runread_core::slots::KeyedSlots>,
    /// The bound on each reader's calls.
    rate: rate::CallRate,
}

impl Service {
    /// Builds the service and its frozen binding registry. Fails when a compiled-in tool's
    /// definition drifted from its pinned digest.
    pub fn new(
        store: Arc<dyn Store>,
        keys: Arc<dyn KeyProvider>,
        config: Config,
    ) -> Result<Service, RegistryError> {
        let registry = Registry::build(definitions(), &pinned_bindings())?;
        let secrets = secrets::KnownSecrets::new(store.clone(), keys.clone(), vec![]);
        Ok(Service {
            gate: Gate::new(store.clone(), registry, keys.clone()),
            keys,
            store,
            rate: rate::CallRate::new(config.calls_per_minute),
            config,
            secrets,
            published: Default::default(),
            opened_snapshots: Default::default(),
            waits: wait::wait_slots(),
        })
    }

    /// Adds known secrets that are not stored (from a secrets file or environment variables).
    pub fn with_extra_secrets(mut self, keys: Arc<dyn KeyProvider>, extra: Vec<String>) -> Service {
        self.secrets = secrets::KnownSecrets::new(self.store.clone(), keys, extra);
        self
    }

    pub fn registry(&self) -> &Registry {
        self.gate.registry()
    }

    /// Admission step 3: the values of every `x-runread-key` header (or the stdio key file) →
    /// the reader the key names, and its live grants. Exactly one value; 64 lowercase hex; the
    /// hash of a live reader's key (compared in constant time). A reader with no live grant is
    /// admitted (its catalog is empty): a client configured once stays configured while the
    /// owner shares nothing.
    pub fn admit_key(&self, presented: &[&[u8]]) -> Result<KeyContext, ErrorCode> {
        let key_hash = Service::presented_key_hash(presented)?;
        let found = self
            .store
            .reader_of_key(&key_hash, runread_core::timefmt::now_ms());
        Service::key_context(key_hash, found)
    }

    /// [`Service::admit_key`] when the store answers at once ([`Store::reader_of_key_at_once`]),
    /// so that it may run on an async thread; `None` when it would wait: call
    /// [`Service::admit_key`] on a blocking thread then. The same checks, the same answers.
    pub fn admit_key_at_once(&self, presented: &[&[u8]]) -> Option<Result<KeyContext, ErrorCode>> {
        let key_hash = match Service::presented_key_hash(presented) {
            Ok(h) => h,
            Err(code) => return Some(Err(code)),
        };
        let found = self
            .store
            .reader_of_key_at_once(&key_hash, runread_core::timefmt::now_ms())?;
        Some(Service::key_context(key_hash, found))
    }

    /// Admission steps 1–2: exactly one key, well formed; its hash.
    fn presented_key_hash(presented: &[&[u8]]) -> Result<String, ErrorCode> {
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
        Ok(key::hash(value))
    }

    /// Admission step 3 from the store's answer: the key's live reader and its live grants.
    fn key_context(
        key_hash: String,
        found: runread_store::Result<Option<(Reader, Vec<Grant>)>>,
    ) -> Result<KeyContext, ErrorCode> {
        let (reader, live_grants) = found
            .map_err(Service::unavailable)?
            .filter(|(r, _)| key::hashes_equal(&r.key_hash, &key_hash))
            .ok_or(ErrorCode::InvalidKey)?;
        Ok(KeyContext {
            key_hash,
            reader,
            live_grants,
            feature_cap: None,
        })
    }

    /// The tools this reader may see: those of its live grants' features, plus
    /// `list_granted_targets` when it has any live grant. No live grant: an empty catalog.
    pub fn catalog(&self, ctx: &KeyContext, now_ms: i64) -> Vec<&'static ToolDef> {
        let features = ctx.live_features(now_ms);
        if features.is_empty() {
            return vec![];
        }
        tools::ALL
            .iter()
            .copied()
            .filter(|t| match t.feature {
                None => true,
                Some(f) => features.contains(&f),
            })
            .collect()
    }

    /// Serves one tool call for an admitted key, through the gate.
    pub async fn call(
        self: &Arc<Self>,
        ctx: Arc<KeyContext>,
        tool: &str,
        args: serde_json::Value,
        request_id: Option<String>,
    ) -> Result<Answer, ErrorCode> {
        self.call_replaying(ctx, tool, args, request_id, None).await
    }

    /// Answers a task (the Tasks extension) through the gate: every poll of one task is one call
    /// — its start record made at the first answer is reused by every later poll while the task
    /// lives, and a receipt is written only when the outcome changes.
    pub async fn answer_task(
        self: &Arc<Self>,
        ctx: Arc<KeyContext>,
        tool: &str,
        args: serde_json::Value,
        task_id: &str,
        task_created_ms: i64,
    ) -> Result<Answer, ErrorCode> {
        let request_id = Some(format!(
            "t:{}",
            runread_core::sha256_hex(task_id.as_bytes())
        ));
        self.call_replaying(ctx, tool, args, request_id, Some(task_created_ms))
            .await
    }

    async fn call_replaying(
        self: &Arc<Self>,
        ctx: Arc<KeyContext>,
        tool: &str,
        args: serde_json::Value,
        request_id: Option<String>,
        replay_since_ms: Option<i64>,
    ) -> Result<Answer, ErrorCode> {
        let Some(def) = tools::by_name(tool) else {
            return Err(ErrorCode::UnknownTool);
        };
        let now_ms = runread_core::timefmt::now_ms();
        if !self.rate.take(&ctx.reader.id, now_ms) {
            return Err(ErrorCode::Busy);
        }
        // Steps 4 to 7 all read or write the store: they run together on one blocking thread.
        let svc = self.clone();
        let admit = move || {
            // Steps 4 and 5: arguments, grant, currency.
            let admitted = adapters::admit(&svc, &ctx, def, &tools::ALL, &args, now_ms)?;
            let call = Call {
                tool: def.name.to_owned(),
                request_id,
                grant_id: admitted
                    .grant
                    .as_ref()
                    .map(|g| g.id.clone())
                    .unwrap_or_default(),
                reader_id: ctx.reader.id.clone(),
                key_hash: ctx.key_hash.clone(),
                target: admitted.target,
                input: admitted.input,
                now_ms,
                replay_since_ms,
            };
            let recheck = admitted.grant.zip(admitted.run);
            Ok(GateAdmission {
                call,
                reader: admitted.reader,
                context: (svc, ctx, recheck),
            })
        };
        // Step 7: nothing leaves if the grant or the target moved while we read.
        let recheck =
            |(svc, ctx, admitted): &(Arc<Service>, Arc<KeyContext>, Option<_>)| match admitted {
                Some((grant, run)) => {
                    admission::recheck(svc, ctx, grant, run, runread_core::timefmt::now_ms())
                }
                None => Ok(()),
            };
        // Step 6: the gate.
        let out = self.gate.execute_admitted(def.name, admit, recheck).await;
        if let Err(code) = &out {
            tracing::debug!(tool, code = code.as_str(), "refused");
        }
        let out = out?;
        // Step 8: label.
        Ok(Answer {
            labeled: label(def.name, def.trust, out.output),
            start_id: out.start_id,
        })
    }

    /// The state `read_final_answer` would report for `run` now (for the owner's listing).
    pub fn answer_state(&self, run: &runread_store::RunRecord, now_ms: i64) -> &'static str {
        match publication::Evidence::observe(self, run) {
            Ok(e) => publication::judge(&e, now_ms).0.as_str(),
            Err(_) => "unknown",
        }
    }

    /// Admission step 3 for a connector: the values of every `Authorization` header, exactly one
    /// `Bearer` access token of `connector` ([`oauth::admit_bearer`]).
    pub fn admit_bearer(
        &self,
        connector: &oauth::Connector,
        presented: &[&[u8]],
    ) -> Result<KeyContext, ErrorCode> {
        let value = match presented {
            [] => return Err(ErrorCode::MissingKey),
            [one] => *one,
            _ => return Err(ErrorCode::DuplicateKey),
        };
        let token = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token)
            .ok_or(ErrorCode::InvalidKey)?;
        oauth::admit_bearer(
            &*self.store,
            connector,
            token,
            runread_core::timefmt::now_ms(),
        )
    }

    /// The public endpoints of the connector's authorization server, over this service's
    /// store (each is [`oauth`]'s function of the same name).
    pub fn oauth_register(
        &self,
        r: oauth::Registration,
    ) -> Result<runread_store::OAuthClient, oauth::OAuthError> {
        oauth::register(&*self.store, r, runread_core::timefmt::now_ms())
    }

    pub fn oauth_registered_client(
        &self,
        client_id: &str,
    ) -> Result<Option<oauth::ClientInfo>, oauth::OAuthError> {
        oauth::registered_client(&*self.store, client_id)
    }

    pub fn oauth_begin(
        &self,
        connector: &oauth::Connector,
        client: &oauth::ClientInfo,
        params: &oauth::AuthorizeParams,
    ) -> Result<runread_store::OAuthRequest, oauth::OAuthError> {
        let now = runread_core::timefmt::now_ms();
        oauth::begin(&*self.store, connector, client, params, now)
    }

    pub fn oauth_progress(
        &self,
        connector: &oauth::Connector,
        id: &str,
        state: Option<&str>,
    ) -> Result<oauth::Progress, oauth::OAuthError> {
        let now = runread_core::timefmt::now_ms();
        oauth::progress(&*self.store, connector, id, state, now)
    }

    pub fn oauth_token(
        &self,
        connector: &oauth::Connector,
        form: &[(String, String)],
    ) -> Result<oauth::Tokens, oauth::OAuthError> {
        oauth::token(
            &*self.store,
            connector,
            form,
            runread_core::timefmt::now_ms(),
        )
    }

    pub fn oauth_revoke(&self, token: &str) -> Result<(), oauth::OAuthError> {
        oauth::revoke(&*self.store, token, runread_core::timefmt::now_ms())
    }

    fn unavailable(e: runread_store::StoreError) -> ErrorCode {
        tracing::warn!(error = %e, "store unavailable");
        ErrorCode::Unavailable
    }
}
