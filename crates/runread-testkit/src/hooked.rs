//! A store that delegates to another and lets a test act at chosen moments: refuse an ingest
//! commit (as a shared store does for a session another host holds), or change the store just
//! before a call's start record is written (between admission and the re-check).

use std::sync::Arc;

use runread_core::Target;
use runread_core::cursor::CursorKey;
use runread_sessions::EntrySummary;
use runread_store::prelude::*;
use runread_store::{
    ArtifactRecord, AuditFilter, AuditPage, CodeRedemption, Grant, IngestCommit, OAuthClient,
    OAuthClientBounds, OAuthRequest, OAuthToken, Reader, Receipt, Result, RunFilter, RunRecord,
    SealedSecret, SessionRecord, SessionStamp, StartMeta, StartOutcome, StartRecord, Store,
    SupervisedRun, Workspace,
};

/// Runs before an ingest commit; an error refuses the commit.
pub type CommitHook = Box<dyn Fn(&IngestCommit) -> Result<()> + Send + Sync>;
/// Runs before a start record is written, with the inner store.
pub type BeginCallHook = Box<dyn Fn(&dyn Store, &StartRecord) + Send + Sync>;

/// `inner`, with hooks.
pub struct Hooked {
    pub inner: Arc<dyn Store>,
    pub before_commit_ingest: Option<CommitHook>,
    pub before_begin_call: Option<BeginCallHook>,
    /// Every refusal and count the service records fails (a store that cannot write them).
    pub refusals_fail: bool,
    /// The store as another host of a shared store sees it: every session read by id, none of
    /// this host's by path (on PostgreSQL sessions are per host).
    pub on_another_host: bool,
}

impl Hooked {
    pub fn new(inner: Arc<dyn Store>) -> Hooked {
        Hooked {
            inner,
            before_commit_ingest: None,
            before_begin_call: None,
            refusals_fail: false,
            on_another_host: false,
        }
    }
}

impl Identity for Hooked {
    fn instance_id(&self) -> &str {
        self.inner.instance_id()
    }

    fn cursor_key(&self) -> &CursorKey {
        self.inner.cursor_key()
    }

    fn changes(&self) -> &runread_store::changes::ChangeFeed {
        self.inner.changes()
    }
}

impl Index for Hooked {
    fn release_memory(&self) {
        self.inner.release_memory()
    }

    fn add_workspace(&self, path: &str, name: &str, now_ms: i64) -> Result<Workspace> {
        self.inner.add_workspace(path, name, now_ms)
    }

    fn workspaces(&self) -> Result<Vec<Workspace>> {
        self.inner.workspaces()
    }

    fn remove_workspace(&self, id: &str, now_ms: i64) -> Result<Option<Workspace>> {
        self.inner.remove_workspace(id, now_ms)
    }

    fn workspace(&self, id: &str) -> Result<Option<Workspace>> {
        self.inner.workspace(id)
    }

    fn session_by_path(&self, path: &str) -> Result<Option<SessionRecord>> {
        if self.on_another_host {
            return Ok(None);
        }
        self.inner.session_by_path(path)
    }

    fn session(&self, session_id: &str) -> Result<Option<SessionRecord>> {
        self.inner.session(session_id)
    }

    fn sessions_with_path_prefix(&self, prefix: &str, limit: u32) -> Result<Vec<SessionRecord>> {
        self.inner.sessions_with_path_prefix(prefix, limit)
    }

    fn session_stamps_with_path_prefix(
        &self,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<SessionStamp>> {
        self.inner.session_stamps_with_path_prefix(prefix, limit)
    }

    fn entries(&self, session_id: &str, generation: u64) -> Result<Vec<EntrySummary>> {
        self.inner.entries(session_id, generation)
    }

    fn commit_ingest(&self, commit: &IngestCommit) -> Result<()> {
        if let Some(hook) = &self.before_commit_ingest {
            hook(commit)?;
        }
        self.inner.commit_ingest(commit)
    }

    fn runs(&self) -> Result<Vec<RunRecord>> {
        self.inner.runs()
    }

    fn runs_page(&self, filter: &RunFilter, limit: u32, offset: u64) -> Result<Vec<RunRecord>> {
        self.inner.runs_page(filter, limit, offset)
    }

    fn runs_count(&self, filter: &RunFilter) -> Result<u64> {
        self.inner.runs_count(filter)
    }

    fn runs_by_id(&self, run_id: &str) -> Result<Vec<RunRecord>> {
        self.inner.runs_by_id(run_id)
    }

    fn run_ids_with_heads(
        &self,
        heads: &[&str],
        head_chars: u32,
        limit: u32,
    ) -> Result<Vec<String>> {
        self.inner.run_ids_with_heads(heads, head_chars, limit)
    }

    fn runs_with_id_prefix(
        &self,
        run_prefix: &str,
        session_prefix: Option<&str>,
        limit: u32,
    ) -> Result<Vec<RunRecord>> {
        self.inner
            .runs_with_id_prefix(run_prefix, session_prefix, limit)
    }

    fn run(&self, session_id: &str, generation: u64, run_id: &str) -> Result<Option<RunRecord>> {
        self.inner.run(session_id, generation, run_id)
    }

    fn add_artifact(&self, artifact: &ArtifactRecord) -> Result<()> {
        self.inner.add_artifact(artifact)
    }

    fn artifacts(&self, target: &Target) -> Result<Vec<ArtifactRecord>> {
        self.inner.artifacts(target)
    }

    fn put_supervised(&self, run: &SupervisedRun) -> Result<()> {
        self.inner.put_supervised(run)
    }

    fn supervised(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<SupervisedRun>> {
        self.inner.supervised(session_id, generation, run_id)
    }
}

impl Access for Hooked {
    fn insert_grant(&self, grant: &Grant) -> Result<()> {
        self.inner.insert_grant(grant)
    }

    fn reader_grants_for_target(&self, reader_id: &str, target: &Target) -> Result<Vec<Grant>> {
        self.inner.reader_grants_for_target(reader_id, target)
    }

    fn grant_of_key(&self, grant_id: &str, key_hash: &str) -> Result<Option<Grant>> {
        self.inner.grant_of_key(grant_id, key_hash)
    }

    fn insert_reader(&self, reader: &Reader) -> Result<()> {
        self.inner.insert_reader(reader)
    }

    fn reader_of_key(&self, key_hash: &str, now_ms: i64) -> Result<Option<(Reader, Vec<Grant>)>> {
        self.inner.reader_of_key(key_hash, now_ms)
    }

    fn reader_of_id(&self, reader_id: &str, now_ms: i64) -> Result<Option<(Reader, Vec<Grant>)>> {
        self.inner.reader_of_id(reader_id, now_ms)
    }

    fn reader_by_name(&self, name: &str) -> Result<Option<Reader>> {
        self.inner.reader_by_name(name)
    }

    fn readers(&self) -> Result<Vec<Reader>> {
        self.inner.readers()
    }

    fn rotate_reader_key(&self, reader_id: &str, key_hash: &str) -> Result<bool> {
        self.inner.rotate_reader_key(reader_id, key_hash)
    }

    fn remove_reader(&self, reader_id: &str, now_ms: i64) -> Result<bool> {
        self.inner.remove_reader(reader_id, now_ms)
    }

    fn reader_grant_tally(&self, reader_id: &str) -> Result<(u64, u64)> {
        self.inner.reader_grant_tally(reader_id)
    }

    fn reader_last_reads(&self) -> Result<Vec<(String, i64)>> {
        self.inner.reader_last_reads()
    }

    fn grants(&self) -> Result<Vec<Grant>> {
        self.inner.grants()
    }

    fn revoke_grant(&self, id: &str, now_ms: i64) -> Result<bool> {
        self.inner.revoke_grant(id, now_ms)
    }
}

impl Secrets for Hooked {
    fn put_secret(&self, secret: &SealedSecret) -> Result<()> {
        self.inner.put_secret(secret)
    }

    fn sealed_secrets(&self) -> Result<Vec<SealedSecret>> {
        self.inner.sealed_secrets()
    }

    fn secrets_fingerprint(&self) -> Result<String> {
        self.inner.secrets_fingerprint()
    }
}

impl Snapshots for Hooked {
    fn put_snapshot(&self, s: &runread_store::SnapshotRecord, max: u64) -> Result<bool> {
        self.inner.put_snapshot(s, max)
    }

    fn snapshot(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<runread_store::SnapshotRecord>> {
        self.inner.snapshot(session_id, generation, run_id)
    }

    fn snapshot_stamp(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<runread_store::SnapshotSummary>> {
        self.inner.snapshot_stamp(session_id, generation, run_id)
    }

    fn snapshots(&self) -> Result<Vec<runread_store::SnapshotSummary>> {
        self.inner.snapshots()
    }

    fn snapshots_unshared(&self, now_ms: i64) -> Result<Vec<runread_store::SnapshotSummary>> {
        self.inner.snapshots_unshared(now_ms)
    }

    fn log_snapshot(&self, e: &runread_store::SnapshotEvent) -> Result<()> {
        self.inner.log_snapshot(e)
    }

    fn snapshot_log(&self, limit: u32) -> Result<Vec<runread_store::SnapshotEvent>> {
        self.inner.snapshot_log(limit)
    }

    fn destroy_snapshot(&self, session_id: &str, generation: u64, run_id: &str) -> Result<bool> {
        self.inner.destroy_snapshot(session_id, generation, run_id)
    }
}

impl runread_store::Keeps for Hooked {
    fn put_kept(
        &self,
        kept: &runread_store::SnapshotRecord,
        reason: runread_store::KeepReason,
        max: u64,
    ) -> Result<bool> {
        self.inner.put_kept(kept, reason, max)
    }

    fn kept(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<runread_store::SnapshotRecord>> {
        self.inner.kept(session_id, generation, run_id)
    }

    fn kept_stamp(
        &self,
        session_id: &str,
        generation: u64,
        run_id: &str,
    ) -> Result<Option<runread_store::KeptSummary>> {
        self.inner.kept_stamp(session_id, generation, run_id)
    }

    fn kept_runs(&self) -> Result<Vec<runread_store::KeptSummary>> {
        self.inner.kept_runs()
    }

    fn kept_bytes(&self) -> Result<u64> {
        self.inner.kept_bytes()
    }

    fn drop_kept(&self, session_id: &str, generation: u64, run_id: &str) -> Result<bool> {
        self.inner.drop_kept(session_id, generation, run_id)
    }

    fn keep_rules(&self) -> Result<Vec<runread_store::KeepRule>> {
        self.inner.keep_rules()
    }

    fn put_keep_rule(&self, rule: &runread_store::KeepRule, rules_max: u64) -> Result<bool> {
        self.inner.put_keep_rule(rule, rules_max)
    }

    fn remove_keep_rules(
        &self,
        workspace_id: &str,
        agent: Option<runread_core::Agent>,
    ) -> Result<u64> {
        self.inner.remove_keep_rules(workspace_id, agent)
    }
}

impl GateLog for Hooked {
    fn begin_call(&self, record: &StartRecord, replay_since_ms: i64) -> Result<StartOutcome> {
        if let Some(hook) = &self.before_begin_call {
            hook(&*self.inner, record);
        }
        self.inner.begin_call(record, replay_since_ms)
    }

    fn append_receipt(&self, receipt: &Receipt) -> Result<()> {
        self.inner.append_receipt(receipt)
    }

    fn start_record(&self, start_id: &str) -> Result<Option<StartRecord>> {
        self.inner.start_record(start_id)
    }

    fn start_meta(&self, start_id: &str) -> Result<Option<StartMeta>> {
        self.inner.start_meta(start_id)
    }

    fn receipts(&self, start_id: &str) -> Result<Vec<Receipt>> {
        self.inner.receipts(start_id)
    }

    fn audit(&self, since_ms: i64, limit: u32) -> Result<Vec<(StartMeta, Vec<Receipt>)>> {
        self.inner.audit(since_ms, limit)
    }

    fn audit_page(&self, filter: &AuditFilter, limit: u32) -> Result<AuditPage> {
        self.inner.audit_page(filter, limit)
    }

    fn audit_checkpoints(&self) -> Result<Vec<runread_store::AuditCheckpoint>> {
        self.inner.audit_checkpoints()
    }

    fn append_audit_checkpoint(&self, c: &runread_store::AuditCheckpoint) -> Result<bool> {
        self.inner.append_audit_checkpoint(c)
    }

    fn audit_range(&self, after: i64, upto: i64, limit: u32) -> Result<runread_store::AuditRows> {
        self.inner.audit_range(after, upto, limit)
    }

    fn audit_nth_time(&self, after: i64, upto: i64, n: u64) -> Result<Option<i64>> {
        self.inner.audit_nth_time(after, upto, n)
    }

    fn audit_count_after(&self, after_ms: i64) -> Result<u64> {
        self.inner.audit_count_after(after_ms)
    }

    fn prune_audit(&self, c: &runread_store::AuditCheckpoint) -> Result<Option<u64>> {
        self.inner.prune_audit(c)
    }
}

impl Connectors for Hooked {
    fn insert_oauth_client(&self, c: &OAuthClient, bounds: OAuthClientBounds) -> Result<bool> {
        self.inner.insert_oauth_client(c, bounds)
    }

    fn oauth_client(&self, client_id: &str) -> Result<Option<OAuthClient>> {
        self.inner.oauth_client(client_id)
    }

    fn insert_oauth_request(
        &self,
        q: &OAuthRequest,
        bounds: runread_store::OAuthRequestBounds,
    ) -> Result<bool> {
        self.inner.insert_oauth_request(q, bounds)
    }

    fn oauth_request(&self, id: &str) -> Result<Option<OAuthRequest>> {
        self.inner.oauth_request(id)
    }

    fn oauth_requests_pending(&self, now_ms: i64) -> Result<Vec<OAuthRequest>> {
        self.inner.oauth_requests_pending(now_ms)
    }

    fn decide_oauth_request(
        &self,
        id: &str,
        approved: Option<(&str, &str)>,
        now_ms: i64,
    ) -> Result<bool> {
        self.inner.decide_oauth_request(id, approved, now_ms)
    }

    fn issue_oauth_code(
        &self,
        id: &str,
        code_hash: &str,
        code_expires_at_ms: i64,
        now_ms: i64,
    ) -> Result<bool> {
        self.inner
            .issue_oauth_code(id, code_hash, code_expires_at_ms, now_ms)
    }

    fn redeem_oauth_code(&self, code_hash: &str, now_ms: i64) -> Result<CodeRedemption> {
        self.inner.redeem_oauth_code(code_hash, now_ms)
    }

    fn insert_oauth_token(&self, t: &OAuthToken) -> Result<()> {
        self.inner.insert_oauth_token(t)
    }

    fn oauth_token(&self, token_hash: &str) -> Result<Option<OAuthToken>> {
        self.inner.oauth_token(token_hash)
    }

    fn use_oauth_refresh(&self, token_hash: &str, now_ms: i64) -> Result<bool> {
        self.inner.use_oauth_refresh(token_hash, now_ms)
    }

    fn revoke_oauth_family(&self, family: &str, now_ms: i64) -> Result<u64> {
        self.inner.revoke_oauth_family(family, now_ms)
    }

    fn revoke_oauth_tokens_of_reader(&self, reader_id: &str, now_ms: i64) -> Result<u64> {
        self.inner.revoke_oauth_tokens_of_reader(reader_id, now_ms)
    }

    fn purge_oauth(&self, now_ms: i64, unapproved_before_ms: i64) -> Result<()> {
        self.inner.purge_oauth(now_ms, unapproved_before_ms)
    }
}

impl Waits for Hooked {
    fn begin_wait(&self, wait: &runread_store::WaitRecord) -> Result<()> {
        self.inner.begin_wait(wait)
    }

    fn end_wait(&self, id: &str) -> Result<()> {
        self.inner.end_wait(id)
    }

    fn live_waits(&self, now_ms: i64) -> Result<Vec<runread_store::WaitRecord>> {
        self.inner.live_waits(now_ms)
    }
}

impl AccessRequests for Hooked {
    fn file_access_request(
        &self,
        request: &runread_store::AccessRequestRecord,
        bounds: runread_store::AccessRequestBounds,
    ) -> Result<runread_store::Filed> {
        self.inner.file_access_request(request, bounds)
    }

    fn access_request(&self, id: &str) -> Result<Option<runread_store::AccessRequestRecord>> {
        self.inner.access_request(id)
    }

    fn access_requests_pending(
        &self,
        now_ms: i64,
    ) -> Result<Vec<runread_store::AccessRequestRecord>> {
        self.inner.access_requests_pending(now_ms)
    }

    fn access_requests_pending_count(&self, now_ms: i64) -> Result<u64> {
        self.inner.access_requests_pending_count(now_ms)
    }

    fn decide_access_request(&self, id: &str, approved: bool, now_ms: i64) -> Result<bool> {
        self.inner.decide_access_request(id, approved, now_ms)
    }

    fn record_access_grants(&self, id: &str, grant_ids: &[String]) -> Result<bool> {
        self.inner.record_access_grants(id, grant_ids)
    }
}

impl Settings for Hooked {
    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.inner.setting(key)
    }

    fn put_setting(&self, key: &str, value: &str) -> Result<()> {
        self.inner.put_setting(key, value)
    }
}

impl Refusals for Hooked {
    fn record_refusal(&self, refusal: &runread_store::Refusal, kept_max: u64) -> Result<()> {
        if self.refusals_fail {
            return Err(runread_store::StoreError::Unavailable("hooked".into()));
        }
        self.inner.record_refusal(refusal, kept_max)
    }

    fn refusals_page(
        &self,
        filter: &runread_store::RefusalFilter,
        limit: u32,
    ) -> Result<runread_store::RefusalPage> {
        self.inner.refusals_page(filter, limit)
    }

    fn count_unadmitted(&self, at_ms: i64, code: &str) -> Result<()> {
        if self.refusals_fail {
            return Err(runread_store::StoreError::Unavailable("hooked".into()));
        }
        self.inner.count_unadmitted(at_ms, code)
    }

    fn unadmitted_tallies(&self, since_ms: i64) -> Result<Vec<runread_store::UnadmittedTally>> {
        self.inner.unadmitted_tallies(since_ms)
    }
}
