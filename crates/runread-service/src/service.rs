//! What readers reach: every tool call goes through [`Service::call`], in the admission order
//! docs/architecture.md numbers: the key (already resolved to a [`KeyContext`] by
//! [`Service::admit_key`], or a connector's token by [`Service::admit_bearer`]), exact arguments,
//! the grant (all six target fields, feature, expiry, revocation), currency of instance, revision
//! and generation, then the execution gate (durable start record, sealed input, the adapter with
//! only its feature's reader, normalized output, receipt), a re-check after all I/O, and finally
//! the trust label. Every refusal is one [`ErrorCode`]; every success is a [`Labeled`] result.

use std::sync::Arc;

use runread_core::envelope::{Labeled, label};
use runread_core::limits::TARGET_MOVED_READS_MAX;
use runread_core::{ErrorCode, key};
use runread_gate::registry::RegistryError;
use runread_gate::{Call, Gate, GateAdmission, Registry};
use runread_keys::KeyProvider;
use runread_store::{Grant, Reader, Store};

use crate::admission::{self, KeyContext};
use crate::evidence::{Config, Reading, unavailable};
use crate::oauth;
use crate::owner::Owner;
use crate::rate::CallRate;
use crate::refusals;
use crate::tasks::{self, NewTask, TaskPoll};
use crate::tools::{self, ToolDef, adapters, definitions, pinned_bindings};

/// A labeled success and the start record it was served under.
#[derive(Debug, Clone)]
pub struct Answer {
    pub labeled: Labeled,
    pub start_id: String,
}

/// What readers reach: the ground every reading rests on, the gate every call goes through, and
/// the bound on each reader's calls.
pub struct Service {
    reading: Arc<Reading>,
    gate: Gate,
    /// The bound on each reader's calls.
    rate: CallRate,
}

impl Service {
    /// Builds the service and its frozen binding registry. Fails when a compiled-in tool's
    /// definition drifted from its pinned digest.
    pub fn new(
        store: Arc<dyn Store>,
        keys: Arc<dyn KeyProvider>,
        config: Config,
    ) -> Result<Service, RegistryError> {
        Service::with_extra_secrets(store, keys, config, Vec::new())
    }

    /// [`Service::new`], masking also known secrets that are not stored (from a secrets file or
    /// environment variables).
    pub fn with_extra_secrets(
        store: Arc<dyn Store>,
        keys: Arc<dyn KeyProvider>,
        config: Config,
        extra: Vec<String>,
    ) -> Result<Service, RegistryError> {
        let registry = Registry::build(definitions(), &pinned_bindings())?;
        let rate = CallRate::new(config.calls_per_minute);
        Ok(Service {
            gate: Gate::new(store.clone(), registry, keys.clone()),
            reading: Arc::new(Reading::new(store, keys, config, extra)),
            rate,
        })
    }

    /// The owner's handle over this service's ground (the console beside it): the same store,
    /// keys, known secrets and caches, with no gate.
    pub fn owner(&self) -> Owner {
        Owner::over(self.reading.clone())
    }

    pub fn registry(&self) -> &Registry {
        self.gate.registry()
    }

    /// Admission step 3: the values of every `x-runread-key` header (or the stdio key file) →
    /// the reader the key names, and its live grants. Exactly one value; 64 lowercase hex; the
    /// hash of a live reader's key (compared in constant time). A reader with no live grant is
    /// admitted (its catalog is empty): a client configured once stays configured while the
    /// owner shares nothing.
    ///
    /// A refusal is counted in the audit's per-minute counts of calls with no valid credential.
    pub fn admit_key(&self, presented: &[&[u8]]) -> Result<KeyContext, ErrorCode> {
        let now_ms = runread_core::timefmt::now_ms();
        let admitted = Service::presented_key_hash(presented).and_then(|key_hash| {
            let found = self.reading.store.reader_of_key(&key_hash, now_ms);
            Service::key_context(key_hash, found)
        });
        admitted.map_err(|code| refusals::unadmitted(&*self.reading.store, code, now_ms))
    }

    /// [`Service::admit_key`] when the store answers at once ([`Access::reader_of_key_at_once`](runread_store::Access::reader_of_key_at_once)),
    /// so that it may run on an async thread; `None` when it would wait: call
    /// [`Service::admit_key`] on a blocking thread then. The same checks, the same admissions; a
    /// key it would refuse is `None` too, as counting the refusal is a write that may wait.
    pub fn admit_key_at_once(&self, presented: &[&[u8]]) -> Option<Result<KeyContext, ErrorCode>> {
        let key_hash = Service::presented_key_hash(presented).ok()?;
        let found = self
            .reading
            .store
            .reader_of_key_at_once(&key_hash, runread_core::timefmt::now_ms())?;
        Service::key_context(key_hash, found).ok().map(Ok)
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
            .map_err(unavailable)?
            .filter(|(r, _)| key::hashes_equal(&r.key_hash, &key_hash))
            .ok_or(ErrorCode::InvalidKey)?;
        Ok(KeyContext {
            key_hash,
            reader,
            live_grants,
            feature_cap: None,
        })
    }

    /// The tools this reader may see: every tool of a feature it could ever be granted (any
    /// feature for a key, the owner's cap for a connector's token), whether or not it holds a
    /// live grant now. Clients fetch the list once when they connect, and an orchestrator
    /// connects before its delegate's run is shared; each call is still admitted against its
    /// exact target and feature, so listing a tool grants nothing.
    pub fn catalog(&self, ctx: &KeyContext) -> Vec<&'static ToolDef> {
        tools::ALL
            .iter()
            .copied()
            .filter(|t| match (t.feature, &ctx.feature_cap) {
                (None, _) | (Some(_), None) => true,
                (Some(f), Some(cap)) => cap.contains(&f),
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
            return Err(self
                .refused(&ctx, tool, &args, ErrorCode::UnknownTool)
                .await);
        };
        let now_ms = runread_core::timefmt::now_ms();
        if !self.rate.take(&ctx.reader.id, now_ms) {
            return Err(self.busy(&ctx, tool, &args, now_ms).await);
        }
        // A run still being written may move between admission and the re-check; the same call
        // is then read again (a replay: one start record, a receipt per outcome). Each read
        // shares the arguments instead of copying them.
        let args = Arc::new(args);
        let out = until_target_holds(|| {
            let (ctx, args, request_id) = (ctx.clone(), args.clone(), request_id.clone());
            self.admitted_call(def, ctx, args, request_id, replay_since_ms)
        })
        .await;
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

    /// Admission steps 4 to 7 of one read of a call: arguments, grant and currency, the gate, the
    /// re-check.
    async fn admitted_call(
        &self,
        def: &'static ToolDef,
        ctx: Arc<KeyContext>,
        args: Arc<serde_json::Value>,
        request_id: Option<String>,
        replay_since_ms: Option<i64>,
    ) -> Result<runread_gate::GateOutput, ErrorCode> {
        let now_ms = runread_core::timefmt::now_ms();
        // Steps 4 to 7 all read or write the store: they run together on one blocking thread.
        let svc = self.reading.clone();
        let admit = move || {
            // Steps 4 and 5: arguments, grant, currency. Refused here, the call never reaches
            // the gate: the refusal log keeps it.
            let refused = refusals::recorder(&*svc.store, &ctx.reader.id, def.name, &args, now_ms);
            let admitted =
                adapters::admit(&svc, &ctx, def, &tools::ALL, &args, now_ms).map_err(refused)?;
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
            |(svc, ctx, admitted): &(Arc<Reading>, Arc<KeyContext>, Option<_>)| match admitted {
                Some((grant, run)) => {
                    admission::recheck(svc, ctx, grant, run, runread_core::timefmt::now_ms())
                }
                None => Ok(()),
            };
        // Step 6: the gate.
        self.gate.execute_admitted(def.name, admit, recheck).await
    }

    /// A call beyond the reader's bound: `busy`, recorded once a minute per reader.
    async fn busy(
        &self,
        ctx: &KeyContext,
        tool: &str,
        args: &serde_json::Value,
        now_ms: i64,
    ) -> ErrorCode {
        if !self.rate.first_busy_of_minute(&ctx.reader.id, now_ms) {
            return ErrorCode::Busy;
        }
        self.refused(ctx, tool, args, ErrorCode::Busy).await
    }

    /// Records a call of `ctx`'s reader refused before the gate, on a blocking thread (the
    /// store may wait), and answers its code.
    async fn refused(
        &self,
        ctx: &KeyContext,
        tool: &str,
        args: &serde_json::Value,
        code: ErrorCode,
    ) -> ErrorCode {
        let store = self.reading.store.clone();
        let (reader, tool, args) = (ctx.reader.id.clone(), tool.to_owned(), args.clone());
        let now_ms = runread_core::timefmt::now_ms();
        let record = move || refusals::refused(&*store, &reader, &tool, &args, code, now_ms);
        // A record that could not be made changes nothing of the answer.
        let _recorded = tokio::task::spawn_blocking(record).await;
        code
    }

    /// Admission step 3 for a connector: the values of every `Authorization` header, exactly one
    /// `Bearer` access token of `connector` ([`oauth::admit_bearer`]).
    pub fn admit_bearer(
        &self,
        connector: &oauth::Connector,
        presented: &[&[u8]],
    ) -> Result<KeyContext, ErrorCode> {
        let now_ms = runread_core::timefmt::now_ms();
        let store = &*self.reading.store;
        let token = match presented {
            [] => Err(ErrorCode::MissingKey),
            [one] => std::str::from_utf8(one)
                .ok()
                .and_then(|v| v.split_once(' '))
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, token)| token)
                .ok_or(ErrorCode::InvalidKey),
            _ => Err(ErrorCode::DuplicateKey),
        };
        token
            .and_then(|token| oauth::admit_bearer(store, connector, token, now_ms))
            .map_err(|code| refusals::unadmitted(store, code, now_ms))
    }

    /// The public endpoints of the connector's authorization server, over this service's
    /// store (each is [`oauth`]'s function of the same name).
    pub fn oauth_register(
        &self,
        r: oauth::Registration,
    ) -> Result<runread_store::OAuthClient, oauth::OAuthError> {
        oauth::register(&*self.reading.store, r, runread_core::timefmt::now_ms())
    }

    pub fn oauth_registered_client(
        &self,
        client_id: &str,
    ) -> Result<Option<oauth::ClientInfo>, oauth::OAuthError> {
        oauth::registered_client(&*self.reading.store, client_id)
    }

    pub fn oauth_begin(
        &self,
        connector: &oauth::Connector,
        client: &oauth::ClientInfo,
        params: &oauth::AuthorizeParams,
    ) -> Result<runread_store::OAuthRequest, oauth::OAuthError> {
        let now = runread_core::timefmt::now_ms();
        oauth::begin(&*self.reading.store, connector, client, params, now)
    }

    pub fn oauth_progress(
        &self,
        connector: &oauth::Connector,
        id: &str,
        state: Option<&str>,
    ) -> Result<oauth::Progress, oauth::OAuthError> {
        let now = runread_core::timefmt::now_ms();
        oauth::progress(&*self.reading.store, connector, id, state, now)
    }

    pub fn oauth_token(
        &self,
        connector: &oauth::Connector,
        form: &[(String, String)],
    ) -> Result<oauth::Tokens, oauth::OAuthError> {
        oauth::token(
            &*self.reading.store,
            connector,
            form,
            runread_core::timefmt::now_ms(),
        )
    }

    pub fn oauth_revoke(&self, token: &str) -> Result<(), oauth::OAuthError> {
        oauth::revoke(&*self.reading.store, token, runread_core::timefmt::now_ms())
    }

    /// Admission before the gate for a tool that waits (`wait_for_run`, `wait_for_access`):
    /// returns once the call should be answered, with the arguments to call it with
    /// ([`crate::tools::wait::wait_for_change`]).
    pub async fn wait_for_change(
        &self,
        ctx: &Arc<KeyContext>,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<serde_json::Value, ErrorCode> {
        match crate::tools::wait::wait_for_change(&self.reading, ctx, tool, args).await {
            Err(code) => Err(self.refused(ctx, tool, args, code).await),
            waited => waited,
        }
    }

    /// Refuses a call of a tool runread does not have (a transport answers it as its
    /// protocol's error) and records it as every call refused before the gate.
    pub async fn unknown_tool(
        &self,
        ctx: &KeyContext,
        tool: &str,
        args: &serde_json::Value,
    ) -> ErrorCode {
        self.refused(ctx, tool, args, ErrorCode::UnknownTool).await
    }

    /// Waits held now in this runread (for tests and measurements).
    pub fn waits_held(&self) -> usize {
        self.reading.waits.held()
    }

    /// For a client that declared the Tasks extension: a task handle instead of an answer, when
    /// the call may be deferred ([`crate::tasks::defer`]). On a blocking thread.
    pub fn defer_to_task(
        &self,
        ctx: &KeyContext,
        tool: &str,
        args: &serde_json::Value,
        now_ms: i64,
    ) -> Option<NewTask> {
        tasks::defer(&self.reading, ctx, tool, args, now_ms)
    }

    /// What the task handle `id` stands for now ([`crate::tasks::poll`]). On a blocking thread.
    pub fn poll_task(
        &self,
        ctx: &KeyContext,
        id: &str,
        now_ms: i64,
    ) -> Result<TaskPoll, ErrorCode> {
        tasks::poll(&self.reading, ctx, id, now_ms)
    }
}

/// Reads a call by `read` until it answers anything but `target_changed`, at most
/// [`TARGET_MOVED_READS_MAX`] reads in all: a run being written moves under a read now and then,
/// and the reader asked for the run, not for one of its moments.
async fn until_target_holds<T, Read, Reading>(mut read: Read) -> Result<T, ErrorCode>
where
    Read: FnMut() -> Reading,
    Reading: std::future::Future<Output = Result<T, ErrorCode>>,
{
    let mut reads = 1;
    loop {
        match read().await {
            Err(ErrorCode::TargetChanged) if reads < TARGET_MOVED_READS_MAX => reads += 1,
            answered => return answered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Reads through [`until_target_holds`] a call whose target moves under its first `moves`
    /// reads; what it answered and how many reads it took.
    async fn read_moving(moves: u32) -> (Result<&'static str, ErrorCode>, u32) {
        let reads = Cell::new(0);
        let answer = until_target_holds(|| {
            reads.set(reads.get() + 1);
            let moved = reads.get() <= moves;
            async move {
                match moved {
                    true => Err(ErrorCode::TargetChanged),
                    false => Ok("answer"),
                }
            }
        })
        .await;
        (answer, reads.get())
    }

    #[tokio::test]
    async fn a_target_that_moves_under_fewer_reads_than_the_bound_is_answered() {
        assert_eq!(read_moving(0).await, (Ok("answer"), 1));
        let under = TARGET_MOVED_READS_MAX - 1;
        assert_eq!(
            read_moving(under).await,
            (Ok("answer"), TARGET_MOVED_READS_MAX)
        );
    }

    #[tokio::test]
    async fn a_target_that_moves_under_every_read_of_the_bound_is_refused_target_changed() {
        let at = TARGET_MOVED_READS_MAX;
        assert_eq!(
            read_moving(at).await,
            (Err(ErrorCode::TargetChanged), TARGET_MOVED_READS_MAX)
        );
    }

    #[tokio::test]
    async fn other_refusals_are_answered_at_once() {
        let reads = Cell::new(0);
        let answer: Result<(), ErrorCode> = until_target_holds(|| {
            reads.set(reads.get() + 1);
            async { Err(ErrorCode::GrantRevoked) }
        })
        .await;
        assert_eq!((answer, reads.get()), (Err(ErrorCode::GrantRevoked), 1));
    }
}
