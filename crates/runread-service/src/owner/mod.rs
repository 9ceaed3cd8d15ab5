//! The owner's room: one [`Owner`] handle for every act and view of the owner — readers, grants,
//! known secrets, artifacts, snapshots, connectors' and readers' requests, and the masked views and previews
//! of their own records — used alike by the CLI and the console. It holds the store and the
//! sealing keys, never the gate: nothing here answers a reader (readers reach only
//! [`crate::service::Service`]).

mod artifacts;
mod connections;
mod grants;
pub mod keeps;
mod preview;
mod readers;
pub mod requests;
pub mod run_ids;
pub mod search;
mod secrets;
pub mod shown;
mod workspaces;

use std::sync::Arc;

use runread_core::{ErrorCode, Feature};
use runread_store::{Reader, RunRecord, SnapshotSummary, Store};

use crate::evidence::publication;
use crate::evidence::snapshot::{self, Maintained, Sealing, Standing};
use crate::evidence::{Config, Reading};
use crate::oauth::{OAuthError, OAuthRequest};

pub use artifacts::{ArtifactError, NewArtifact};
pub use connections::{DecideError, ReaderChoice};
pub use grants::{GrantError, GrantRequest, NewGrant, expiry};
pub use keeps::{
    DroppedKeeps, KeepError, KeepRuleAdded, Keeping, KeptPass, KeptRun, KeptTotals, ShownKeepRule,
};
pub use preview::{ANSWER_CHUNKS_MAX, PreviewedAnswer};
pub use readers::{
    CLOSE_READER_NAMES_MAX, NewReader, NewReaderPolicy, ReaderError, is_reader_name,
};
pub use requests::{Approval, Approved, RequestError, RunChoice, ShownRequest};
pub use run_ids::{Candidate, RUN_PREFIX_MIN_CHARS, Unresolved};
pub use search::{SEARCH_QUERY_MAX_BYTES, SEARCH_WORDS_MAX, words as search_words};
pub use secrets::SecretError;
pub use workspaces::{RemovedWorkspace, ShownWorkspace, WorkspaceError};

/// The owner's handle: the ground every reading rests on (the store, the keys, the known
/// secrets), with no gate.
#[derive(Clone)]
pub struct Owner {
    reading: Arc<Reading>,
}

impl Owner {
    /// The owner's handle over `store`, with the sealing `keys`, masking the stored known secrets
    /// and the `extra` ones.
    pub fn new(
        store: Arc<dyn Store>,
        keys: Arc<dyn runread_keys::KeyProvider>,
        config: Config,
        extra: Vec<String>,
    ) -> Owner {
        Owner::over(Arc::new(Reading::new(store, keys, config, extra)))
    }

    /// The owner's handle over a ground shared with a service (one process serving and showing
    /// the console reads once, masks alike, caches once).
    pub(crate) fn over(reading: Arc<Reading>) -> Owner {
        Owner { reading }
    }

    /// The store, for the owner's own queries (listings, sessions, workspaces).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.reading.store
    }

    /// The known secrets everything shown is masked with.
    pub fn known_secrets(&self) -> &crate::evidence::secrets::KnownSecrets {
        self.reading.known_secrets()
    }

    fn keys(&self) -> &dyn runread_keys::KeyProvider {
        &*self.reading.keys
    }

    /// A new reader of `name` and its key (shown once).
    pub fn add_reader(&self, name: &str, now_ms: i64) -> Result<NewReader, ReaderError> {
        readers::add_reader(&**self.store(), self.keys(), name, now_ms)
    }

    /// A new key for the reader `name` (the old one refused from its next call; its connector
    /// tokens revoked).
    pub fn rotate_reader(&self, name: &str, now_ms: i64) -> Result<NewReader, ReaderError> {
        readers::rotate_reader(&**self.store(), self.keys(), name, now_ms)
    }

    /// Removes the reader `name`: its key refused, every grant of it revoked.
    pub fn remove_reader(&self, name: &str, now_ms: i64) -> Result<Reader, ReaderError> {
        readers::remove_reader(&**self.store(), name, now_ms)
    }

    /// The live reader named `name`.
    pub fn live_reader(&self, name: &str) -> Result<Option<Reader>, ReaderError> {
        readers::live_reader(&**self.store(), name)
    }

    /// The live reader whose name looks like `name` without being it.
    pub fn reader_looking_like(&self, name: &str) -> Result<Option<Reader>, ReaderError> {
        readers::reader_looking_like(&**self.store(), name)
    }

    /// Grants the run `request` names (by run id, and session when ambiguous).
    pub fn grant(&self, request: GrantRequest<'_>, now_ms: i64) -> Result<NewGrant, GrantError> {
        grants::grant(&**self.store(), self.keys(), request, now_ms)
    }

    /// Grants `run` itself to `reader` for `features` until `expires_at_ms`, labelled `label`.
    pub fn grant_run(
        &self,
        run: RunRecord,
        features: Vec<Feature>,
        expires_at_ms: i64,
        to: (&str, NewReaderPolicy),
        label: Option<&str>,
        now_ms: i64,
    ) -> Result<NewGrant, GrantError> {
        grants::grant_run(
            &**self.store(),
            self.keys(),
            run,
            features,
            expires_at_ms,
            to,
            label,
            now_ms,
        )
    }

    /// Revokes the grant `id`; whether it was live.
    pub fn revoke_grant(&self, id: &str, now_ms: i64) -> Result<bool, String> {
        grants::revoke_grant(&**self.store(), id, now_ms)
    }

    /// Where `grant` stands now: live, stale (and why), expired or revoked.
    pub fn grant_standing(
        &self,
        grant: &runread_store::Grant,
        now_ms: i64,
    ) -> Result<crate::admission::GrantStanding, ErrorCode> {
        crate::admission::grant_standing(&**self.store(), grant, now_ms)
    }

    /// The registered (not removed) workspaces, oldest first.
    pub fn workspaces(&self) -> Result<Vec<runread_store::Workspace>, WorkspaceError> {
        workspaces::registered(&**self.store())
    }

    /// Every registered workspace with its runs and its live and stale grants.
    pub fn shown_workspaces(&self, now_ms: i64) -> Result<Vec<ShownWorkspace>, WorkspaceError> {
        workspaces::shown(&**self.store(), now_ms)
    }

    /// The registered workspace `which` names (its id, root or name).
    pub fn find_workspace(&self, which: &str) -> Result<runread_store::Workspace, WorkspaceError> {
        workspaces::find(&**self.store(), which)
    }

    /// Removes the workspace `which` names (its id, root or name): nothing of it is read or
    /// indexed any more, and every grant in it ends.
    pub fn remove_workspace(
        &self,
        which: &str,
        now_ms: i64,
    ) -> Result<RemovedWorkspace, WorkspaceError> {
        workspaces::remove(&**self.store(), which, now_ms)
    }

    /// The one current run `run` (its id or a prefix of it) names, in a session whose id is or
    /// starts with `session`; see [`run_ids`].
    pub fn resolve_run(&self, run: &str, session: Option<&str>) -> Result<RunRecord, Unresolved> {
        run_ids::resolve(&**self.store(), run, session)
    }

    /// What a listing shows of each run id: its shortest prefix no other current run shares.
    pub fn run_id_prefixes(&self, ids: &[&str]) -> Result<Vec<String>, ErrorCode> {
        run_ids::shortest_prefixes(&**self.store(), ids).map_err(crate::evidence::unavailable)
    }

    /// Seals (or replaces) `run`'s snapshot with what its live grants share.
    pub fn seal_snapshot(&self, run: &RunRecord, now_ms: i64) -> Result<Sealing, ErrorCode> {
        snapshot::seal(&**self.store(), self.keys(), run, now_ms)
    }

    /// Where the snapshot `s` stands against its run as indexed now.
    pub fn snapshot_standing(&self, s: &SnapshotSummary) -> Result<Standing, ErrorCode> {
        snapshot::standing(&**self.store(), self.keys(), s)
    }

    /// After an ingest pass: destroys the snapshots no live grant holds and reseals those whose
    /// run went on; keeps the settled runs the keep rules name and reseals the kept runs that
    /// went on.
    pub fn maintain_snapshots(&self, now_ms: i64) -> Result<(Maintained, KeptPass), ErrorCode> {
        let maintained = snapshot::maintain(&**self.store(), self.keys(), now_ms)?;
        let kept = keeps::keep_pass(&**self.store(), self.keys(), now_ms)
            .map_err(|_| ErrorCode::Unavailable)?;
        Ok((maintained, kept))
    }

    /// Keeps `run` by name: seals its whole evidence into the store (again, when it went on).
    pub fn keep_run(&self, run: &RunRecord, now_ms: i64) -> Result<Keeping, KeepError> {
        keeps::keep_run(
            &**self.store(),
            self.keys(),
            run,
            runread_store::KeepReason::Run,
            now_ms,
        )
    }

    /// Keeps every run of the workspace `which` names (its id, root or name; of `agent` only,
    /// when named) as it settles, and its settled runs now.
    pub fn add_keep_rule(
        &self,
        which: &str,
        agent: Option<runread_core::Agent>,
        now_ms: i64,
    ) -> Result<KeepRuleAdded, KeepError> {
        keeps::add_rule(&**self.store(), self.keys(), which, agent, now_ms)
    }

    /// The keep rules, oldest first.
    pub fn keep_rules(&self) -> Result<Vec<ShownKeepRule>, KeepError> {
        keeps::rules(&**self.store())
    }

    /// Every kept run, oldest kept first, with how it stands.
    pub fn kept_runs(&self) -> Result<Vec<KeptRun>, KeepError> {
        keeps::kept_runs(&**self.store(), self.keys())
    }

    /// `run`'s kept copy, when the owner kept it.
    pub fn kept(&self, run: &RunRecord) -> Result<Option<runread_store::KeptSummary>, KeepError> {
        let t = &run.target;
        self.store()
            .kept_stamp(&t.session_id, t.generation, &t.run_id)
            .map_err(|_| KeepError::Unavailable)
    }

    /// Drops `run`'s kept copy (its data key first, then its row); whether there was one.
    pub fn drop_kept(&self, run: &RunRecord, now_ms: i64) -> Result<bool, KeepError> {
        keeps::drop_run(&**self.store(), run, now_ms)
    }

    /// Removes the keep rules of the workspace `which` names and drops its kept runs (of
    /// `agent` only, when named).
    pub fn drop_workspace_keeps(
        &self,
        which: &str,
        agent: Option<runread_core::Agent>,
        now_ms: i64,
    ) -> Result<DroppedKeeps, KeepError> {
        keeps::drop_workspace(&**self.store(), which, agent, now_ms)
    }

    /// The kept runs together, against their bound.
    pub fn kept_totals(&self) -> Result<KeptTotals, KeepError> {
        keeps::totals(&**self.store())
    }

    /// Sets the bound on every kept run together.
    pub fn set_keep_limit(&self, bytes: u64) -> Result<(), KeepError> {
        keeps::set_limit(&**self.store(), bytes)
    }

    /// Destroys every snapshot no live grant holds.
    pub fn destroy_unshared_snapshots(
        &self,
        now_ms: i64,
    ) -> Result<Vec<SnapshotSummary>, ErrorCode> {
        snapshot::destroy_unshared(&**self.store(), now_ms)
    }

    /// Adds (or replaces) the known secret `name`.
    pub fn add_secret(&self, name: &str, value: &str, now_ms: i64) -> Result<(), SecretError> {
        secrets::add_secret(&**self.store(), self.keys(), name, value, now_ms)
    }

    /// The names of the stored known secrets (never their values).
    pub fn secret_names(&self) -> Result<Vec<String>, SecretError> {
        secrets::secret_names(&**self.store())
    }

    /// Registers the file at `artifact.path` as an artifact of the run `artifact.run_id`.
    pub fn add_artifact(
        &self,
        artifact: &NewArtifact<'_>,
        now_ms: i64,
    ) -> Result<(String, runread_artifacts::ArtifactVersion), ArtifactError> {
        artifacts::add_artifact(&**self.store(), self.known_secrets(), artifact, now_ms)
    }

    /// Connectors' authorization requests waiting for the owner's decision.
    pub fn pending_connections(&self, now_ms: i64) -> Result<Vec<OAuthRequest>, OAuthError> {
        connections::pending(&**self.store(), now_ms)
    }

    /// The name a new reader for the client `client_name` is offered (`X (connector)`, made
    /// unique): never an existing reader's.
    pub fn suggested_reader_name(&self, client_name: &str) -> Result<String, DecideError> {
        connections::suggested_reader_name(&**self.store(), client_name)
    }

    /// Approves the request `id` for the reader `choice` names, allowing at most `features`.
    pub fn approve_connection(
        &self,
        id: &str,
        choice: ReaderChoice<'_>,
        features: &[Feature],
        now_ms: i64,
    ) -> Result<Reader, DecideError> {
        connections::approve(&**self.store(), self.keys(), id, choice, features, now_ms)
    }

    /// What joining a client to the reader `reader_id` would let it read (its live grants).
    pub fn join_preview(
        &self,
        reader_id: &str,
        now_ms: i64,
    ) -> Result<Option<(Reader, Vec<runread_store::Grant>)>, DecideError> {
        connections::join_preview(&**self.store(), reader_id, now_ms)
    }

    /// Denies the request `id`: the client is sent back with `access_denied`.
    pub fn deny_connection(&self, id: &str, now_ms: i64) -> Result<(), DecideError> {
        connections::deny(&**self.store(), id, now_ms)
    }

    /// The state `read_final_answer` would report for `run` now (for the owner's listing).
    pub fn answer_state(&self, run: &RunRecord, now_ms: i64) -> &'static str {
        match publication::Evidence::observe(&self.reading, run) {
            Ok(e) => publication::judge(&e, now_ms).0.as_str(),
            Err(_) => "unknown",
        }
    }
}
