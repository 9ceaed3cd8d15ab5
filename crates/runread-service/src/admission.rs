//! Admission step 5 (the key's grant for a target, and the target's currency) and the re-check
//! after all I/O (step 7): the rules every tool that names a run is admitted by.

use runread_core::{ErrorCode, Feature, Target};
use runread_store::{Grant, RunRecord};

use crate::{KeyContext, Service};

/// The key's grant for exactly `target` that allows `feature`, or the fixed refusal.
///
/// A target no grant of this key names — whether it exists or not — is `not_granted`.
pub(crate) fn grant_for<'a>(
    ctx: &'a KeyContext,
    target: &Target,
    feature: Feature,
    now_ms: i64,
) -> Result<&'a Grant, ErrorCode> {
    let matching: Vec<&Grant> = ctx.grants.iter().filter(|g| &g.target == target).collect();
    if matching.is_empty() {
        return Err(ErrorCode::NotGranted);
    }
    let live: Vec<&Grant> = matching
        .iter()
        .copied()
        .filter(|g| g.is_live(now_ms))
        .collect();
    if let Some(g) = live.iter().find(|g| g.features.contains(&feature)) {
        return Ok(g);
    }
    if !live.is_empty() {
        return Err(ErrorCode::FeatureNotGranted);
    }
    if matching.iter().all(|g| g.revoked_at_ms.is_some()) {
        Err(ErrorCode::GrantRevoked)
    } else {
        Err(ErrorCode::GrantExpired)
    }
}

/// The run `target` names, if instance, revision and generation are all still current.
pub(crate) fn current_run(svc: &Service, target: &Target) -> Result<RunRecord, ErrorCode> {
    if target.instance != svc.store.instance_id() {
        return Err(ErrorCode::TargetStale);
    }
    let run = svc
        .store
        .run(&target.session_id, target.generation, &target.run_id)
        .map_err(Service::unavailable)?
        .ok_or(ErrorCode::TargetStale)?;
    let ws = svc
        .store
        .workspace(&target.workspace_id)
        .map_err(Service::unavailable)?
        .ok_or(ErrorCode::TargetStale)?;
    if !ws.enabled || run.target != *target {
        return Err(ErrorCode::TargetStale);
    }
    Ok(run)
}

/// Re-check after all I/O (admission step 7): the grant is still live now and was not revoked
/// meanwhile, and the run is still current with the same file identity.
pub(crate) fn recheck(
    svc: &Service,
    ctx: &KeyContext,
    grant: &Grant,
    before: &RunRecord,
    now_ms: i64,
) -> Result<(), ErrorCode> {
    let fresh = svc
        .store
        .grants_by_key_hash(&ctx.key_hash)
        .map_err(Service::unavailable)?;
    let still = fresh
        .iter()
        .find(|g| g.id == grant.id)
        .ok_or(ErrorCode::TargetChanged)?;
    if still.revoked_at_ms.is_some() {
        return Err(ErrorCode::GrantRevoked);
    }
    if !still.is_live(now_ms) {
        return Err(ErrorCode::GrantExpired);
    }
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
