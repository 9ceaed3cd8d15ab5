//! A session id another host already ingested into a shared store (the store answers
//! `Conflict`) skips that one file: the pass goes on with every other session.

use std::collections::HashSet;
use std::time::Duration;

use runread_core::Target;
use runread_core::cursor::CursorKey;
use runread_ingest::FileOutcome;
use runread_sessions::EntrySummary;
use runread_store::sqlite::SqliteStore;
use runread_store::{
    ArtifactRecord, Grant, IngestCommit, Receipt, Result, RunRecord, SealedSecret, SessionRecord,
    StartMeta, StartOutcome, StartRecord, Store, StoreError, SupervisedRun, Workspace,
};
use runread_testkit::Env;

/// The SQLite store, except that ingest commits of `foreign` session ids fail with `Conflict`,
/// as the PostgreSQL store answers for a session id another host ingested first.
struct ForeignSessions<'a> {
    inner: &'a SqliteStore,
    foreign: HashSet<String>,
}

impl Store for ForeignSessions<'_> {
    fn instance_id(&self) -> &str {
        self.inner.instance_id()
    }
    fn cursor_key(&self) -> &CursorKey {
        self.inner.cursor_key()
    }
    fn add_workspace(&self, path: &str, name: &str, now_ms: i64) -> Result<Workspace> {
        self.inner.add_workspace(path, name, now_ms)
    }
    fn workspaces(&self) -> Result<Vec<Workspace>> {
        self.inner.workspaces()
    }
    fn workspace(&self, id: &str) -> Result<Option<Workspace>> {
        self.inner.workspace(id)
    }
    fn session_by_path(&self, path: &str) -> Result<Option<SessionRecord>> {
        self.inner.session_by_path(path)
    }
    fn sessions_with_path_prefix(&self, prefix: &str, limit: u32) -> Result<Vec<SessionRecord>> {
        self.inner.sessions_with_path_prefix(prefix, limit)
    }
    fn session(&self, session_id: &str) -> Result<Option<SessionRecord>> {
        self.inner.session(session_id)
    }
    fn entries(&self, session_id: &str, generation: u64) -> Result<Vec<EntrySummary>> {
        self.inner.entries(session_id, generation)
    }
    fn commit_ingest(&self, commit: &IngestCommit) -> Result<()> {
        if self.foreign.contains(&commit.session.session_id) {
            return Err(StoreError::Conflict(
                "session already ingested from another host".into(),
            ));
        }
        self.inner.commit_ingest(commit)
    }
    fn runs(&self) -> Result<Vec<RunRecord>> {
        self.inner.runs()
    }
    fn runs_page(
        &self,
        filter: &runread_store::RunFilter,
        limit: u32,
        offset: u64,
    ) -> Result<Vec<RunRecord>> {
        self.inner.runs_page(filter, limit, offset)
    }
    fn runs_count(&self, filter: &runread_store::RunFilter) -> Result<u64> {
        self.inner.runs_count(filter)
    }
    fn runs_by_id(&self, run_id: &str) -> Result<Vec<RunRecord>> {
        self.inner.runs_by_id(run_id)
    }
    fn run(&self, session_id: &str, generation: u64, run_id: &str) -> Result<Option<RunRecord>> {
        self.inner.run(session_id, generation, run_id)
    }
    fn insert_grant(&self, grant: &Grant) -> Result<()> {
        self.inner.insert_grant(grant)
    }
    fn grants_by_key_hash(&self, key_hash: &str) -> Result<Vec<Grant>> {
        self.inner.grants_by_key_hash(key_hash)
    }
    fn grants(&self) -> Result<Vec<Grant>> {
        self.inner.grants()
    }
    fn revoke_grant(&self, id: &str, now_ms: i64) -> Result<bool> {
        self.inner.revoke_grant(id, now_ms)
    }
    fn begin_call(&self, record: &StartRecord, replay_since_ms: i64) -> Result<StartOutcome> {
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
    fn put_secret(&self, secret: &SealedSecret) -> Result<()> {
        self.inner.put_secret(secret)
    }
    fn sealed_secrets(&self) -> Result<Vec<SealedSecret>> {
        self.inner.sealed_secrets()
    }
    fn secrets_fingerprint(&self) -> Result<String> {
        self.inner.secrets_fingerprint()
    }
    fn receipts(&self, start_id: &str) -> Result<Vec<Receipt>> {
        self.inner.receipts(start_id)
    }
    fn audit(&self, since_ms: i64, limit: u32) -> Result<Vec<(StartMeta, Vec<Receipt>)>> {
        self.inner.audit(since_ms, limit)
    }
}

/// The session id in a session file's header.
fn session_id(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_session_another_host_ingested_is_skipped_and_the_pass_goes_on() {
    let env = Env::new();
    let foreign_path = env.place("sample", Duration::from_secs(60));
    let own_path = env.place("multi-run", Duration::from_secs(60));
    let store = ForeignSessions {
        inner: &env.store,
        foreign: HashSet::from([session_id(&foreign_path)]),
    };
    for pass in 0..2 {
        let (report, outcomes) = runread_ingest::ingest_dir(
            &store,
            &runread_ingest::AgentDir::pi(&env.sessions),
            runread_core::timefmt::now_ms(),
            |_| {},
        )
        .expect("a conflict must not abort the pass");
        let outcome_of = |p: &std::path::Path| {
            outcomes
                .iter()
                .find(|(q, _)| q == p)
                .map(|(_, o)| o.clone())
                .unwrap()
        };
        assert_eq!(
            outcome_of(&foreign_path),
            FileOutcome::DuplicateSessionId,
            "pass {pass}"
        );
        assert_eq!(report.files, 2, "pass {pass}");
        assert_eq!(report.duplicates, 1, "pass {pass}");
        if pass == 0 {
            assert!(
                matches!(outcome_of(&own_path), FileOutcome::NewGeneration { .. }),
                "the other session is ingested in the same pass"
            );
            assert_eq!(report.new_generations, 1);
            // Only the stored session's runs are counted.
            assert_eq!(report.runs, 3);
        } else {
            // The skipped file is tried again (its owner may have let it go), the other is unchanged.
            assert_eq!(outcome_of(&own_path), FileOutcome::Unchanged);
            assert_eq!(report.runs, 0);
        }
    }
    let runs = env.store.runs().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(
        runs.iter()
            .all(|r| r.target.session_id == session_id(&own_path))
    );
    assert!(
        env.store
            .session(&session_id(&foreign_path))
            .unwrap()
            .is_none()
    );
}
