//! What admission knows of a caller ([`KeyContext`]: its key's reader and live grants), admission
//! step 5 (the reader's grant for a target, and the target's currency) and the re-check after all
//! I/O (step 7): the rules every tool that names a run is admitted by.

use runread_core::{ErrorCode, Feature, Target};
use runread_store::{Grant, GrantState, Reader, RunRecord, Store};

use crate::evidence::Reading;

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

/// The reader's grant for exactly `target` that allows `feature`, or the fixed refusal.
///
/// A target no grant of this reader names — whether it exists or not, whoever else holds a
/// grant of it — is `not_granted`. A target the reader's live grants do not name is looked up
/// among its other grants of that target only, to say whether they ended by revocation or expiry.
pub(crate) fn grant_for(
    svc: &Reading,
    ctx: &KeyContext,
    target: &Target,
    feature: Feature,
    now_ms: i64,
) -> Result<Grant, ErrorCode> {
    let live: Vec<&Grant> = ctx
        .live_grants
        .iter()
        .filter(|g| &g.target == target && g.is_live(now_ms))
        .collect();
    if let Some(g) = live.iter().find(|g| g.features.contains(&feature)) {
        return Ok((*g).clone());
    }
    if !live.is_empty() {
        return Err(ErrorCode::FeatureNotGranted);
    }
    let ended = svc
        .store
        .reader_grants_for_target(&ctx.reader.id, target)
        .map_err(crate::evidence::unavailable)?;
    if ended.is_empty() {
        Err(ErrorCode::NotGranted)
    } else if ctx.feature_cap.is_some() && ended.iter().any(|g| g.is_live(now_ms)) {
        // A live grant whose every feature the connector's client was not allowed.
        Err(ErrorCode::FeatureNotGranted)
    } else if ended.iter().all(|g| g.revoked_at_ms.is_some()) {
        Err(ErrorCode::GrantRevoked)
    } else {
        Err(ErrorCode::GrantExpired)
    }
}

/// The reader's newest grant live now, read afresh from the store (it may have been made after
/// the key was admitted), that carries `label` and allows `feature`: what a wait by label waits
/// for. Whose label it is never widens anything: the grant is the reader's own.
pub(crate) fn labelled_grant(
    svc: &Reading,
    ctx: &KeyContext,
    label: &str,
    feature: Feature,
    now_ms: i64,
) -> Result<Option<Grant>, ErrorCode> {
    Ok(fresh_live_grants(svc, ctx, feature, now_ms)?
        .into_iter()
        .find(|g| g.label.as_deref() == Some(label)))
}

/// The reader's earliest grant shared after `after_ms` (its `created_at_ms` later) and live now,
/// read afresh from the store, that allows `feature`: what a wait for the next shared run waits
/// for. Only the reader's own grants are read: a share with another reader is never seen.
pub(crate) fn next_shared_grant(
    svc: &Reading,
    ctx: &KeyContext,
    after_ms: i64,
    feature: Feature,
    now_ms: i64,
) -> Result<Option<Grant>, ErrorCode> {
    // The earliest that qualifies, whatever order the store lists them in.
    Ok(fresh_live_grants(svc, ctx, feature, now_ms)?
        .into_iter()
        .filter(|g| g.created_at_ms > after_ms)
        .min_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id))))
}

/// The reader's grants live now that allow `feature`, read afresh from the store (newest first):
/// what a wait before the share looks among.
fn fresh_live_grants(
    svc: &Reading,
    ctx: &KeyContext,
    feature: Feature,
    now_ms: i64,
) -> Result<Vec<Grant>, ErrorCode> {
    let fresh = svc
        .store
        .reader_of_id(&ctx.reader.id, now_ms)
        .map_err(crate::evidence::unavailable)?;
    Ok(fresh.map_or_else(Vec::new, |(_, grants)| {
        grants
            .into_iter()
            .filter(|g| g.is_live(now_ms) && g.features.contains(&feature))
            .collect()
    }))
}

/// The run `target` names, if instance, revision and generation are all still current.
pub(crate) fn current_run(svc: &Reading, target: &Target) -> Result<RunRecord, ErrorCode> {
    currency(&*svc.store, target)?.map_err(|_| ErrorCode::TargetStale)
}

/// Why a target is no longer current: what makes a reader's call `target_stale`, said to the
/// owner with its cause (a reader hears `target_stale` whatever it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Staleness {
    /// Made in another store (the store was made anew).
    OtherStore,
    /// Its workspace was removed.
    WorkspaceRemoved,
    /// Its workspace is registered under another revision, or its session moved to another one.
    WorkspaceChanged,
    /// Its session file was replaced or rewritten: a new generation.
    SessionChanged,
    /// Its run is no longer in its session.
    RunGone,
}

impl Staleness {
    pub fn as_str(self) -> &'static str {
        match self {
            Staleness::OtherStore => "other_store",
            Staleness::WorkspaceRemoved => "workspace_removed",
            Staleness::WorkspaceChanged => "workspace_changed",
            Staleness::SessionChanged => "session_changed",
            Staleness::RunGone => "run_gone",
        }
    }

    /// The cause in words, for the owner.
    pub fn says(self) -> &'static str {
        match self {
            Staleness::OtherStore => "it was made in another store",
            Staleness::WorkspaceRemoved => "its workspace was removed",
            Staleness::WorkspaceChanged => "its workspace's registration changed",
            Staleness::SessionChanged => "its session file was rewritten",
            Staleness::RunGone => "its run is no longer in its session",
        }
    }
}

/// The run `target` names if it is current, else why not: the one place the currency of a
/// target is decided, for admission (step 5), the re-check (step 7) and every listing of grants.
pub(crate) fn currency(
    store: &dyn Store,
    target: &Target,
) -> Result<Result<RunRecord, Staleness>, ErrorCode> {
    if target.instance != store.instance_id() {
        return Ok(Err(Staleness::OtherStore));
    }
    // One read: the run with its workspace (its revision and whether it is enabled).
    let run = store
        .run(&target.session_id, target.generation, &target.run_id)
        .map_err(crate::evidence::unavailable)?;
    let Some(run) = run else {
        // Only a refusal pays for telling a rewritten session from a run gone.
        let rewritten = store
            .session(&target.session_id)
            .map_err(crate::evidence::unavailable)?
            .is_some_and(|s| s.generation != target.generation);
        return Ok(Err(if rewritten {
            Staleness::SessionChanged
        } else {
            Staleness::RunGone
        }));
    };
    if !run.workspace_enabled {
        return Ok(Err(Staleness::WorkspaceRemoved));
    }
    if run.target != *target {
        return Ok(Err(Staleness::WorkspaceChanged));
    }
    Ok(Ok(run))
}

/// Where a grant stands now: its state, and for a stale one why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantStanding {
    pub state: GrantState,
    /// Set exactly when `state` is [`GrantState::Stale`].
    pub stale: Option<Staleness>,
}

impl GrantStanding {
    pub fn is_live(self) -> bool {
        self.state == GrantState::Live
    }

    /// The state, with the cause of a stale one in words ("stale: its workspace was removed").
    pub fn says(self) -> String {
        match self.stale {
            Some(why) => format!("{}: {}", self.state.as_str(), why.says()),
            None => self.state.as_str().to_owned(),
        }
    }
}

/// Whether `grant` can be read at `now_ms`: revoked or expired by its own record, else stale when
/// its target is no longer current (the very checks that refuse a reader's call `target_stale`),
/// else live. What every listing of grants shows.
pub fn grant_standing(
    store: &dyn Store,
    grant: &Grant,
    now_ms: i64,
) -> Result<GrantStanding, ErrorCode> {
    let state = grant.state(now_ms);
    if state != GrantState::Live {
        return Ok(GrantStanding { state, stale: None });
    }
    Ok(match currency(store, &grant.target)? {
        Ok(_) => GrantStanding { state, stale: None },
        Err(why) => GrantStanding {
            state: GrantState::Stale,
            stale: Some(why),
        },
    })
}

/// `grant` as the store holds it now: still the key's (not rotated, its reader not removed:
/// `invalid_key`), not revoked, live at `now_ms`. What the re-check after I/O reads, and what a
/// waiting call reads on each of its checks.
pub(crate) fn grant_holds(
    svc: &Reading,
    ctx: &KeyContext,
    grant: &Grant,
    now_ms: i64,
) -> Result<(), ErrorCode> {
    let still = svc
        .store
        .grant_of_key(&grant.id, &ctx.key_hash)
        .map_err(crate::evidence::unavailable)?
        .ok_or(ErrorCode::InvalidKey)?;
    if still.revoked_at_ms.is_some() {
        return Err(ErrorCode::GrantRevoked);
    }
    if !still.is_live(now_ms) {
        return Err(ErrorCode::GrantExpired);
    }
    Ok(())
}

/// Re-check after all I/O (admission step 7): the key still names the reader holding the grant
/// (not rotated, not removed meanwhile: `invalid_key`), the grant is still live now and was not
/// revoked meanwhile, and the run is still current with the same file identity.
pub(crate) fn recheck(
    svc: &Reading,
    ctx: &KeyContext,
    grant: &Grant,
    before: &RunRecord,
    now_ms: i64,
) -> Result<(), ErrorCode> {
    grant_holds(svc, ctx, grant, now_ms)?;
    // A store that cannot answer is `unavailable`; only a run that is really gone or moved is
    // `target_changed`. Either way nothing leaves.
    let after = current_run(svc, &before.target).map_err(|code| match code {
        ErrorCode::Unavailable => ErrorCode::Unavailable,
        _ => ErrorCode::TargetChanged,
    })?;
    if after.identity != before.identity || after.run != before.run {
        return Err(ErrorCode::TargetChanged);
    }
    Ok(())
}
