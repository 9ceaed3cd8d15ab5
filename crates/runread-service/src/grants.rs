//! Admission step 5 (the grant and the target's currency), the re-check after I/O (step 7),
//! and `list_granted_targets`, the one tool admitted on the key's grants rather than a run.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use runread_core::redact::Redactor;
use runread_core::timefmt::rfc3339;
use runread_core::{ErrorCode, Feature, Target};
use runread_store::{Grant, RunRecord};

use crate::adapters::{AdmissionContext, ExactArgs, ToolAdmission, ToolRules};
use crate::{KeyContext, Service, tools};

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

/// `list_granted_targets`: the exact targets of the key's live grants, with their features and
/// the tools that read them.
pub(crate) struct ListGrantedTargets;

/// `list_granted_targets`' reader: the key's live grants, and the known secrets an id of their
/// targets may hold.
pub(crate) struct ListReader {
    pub grants: Vec<Grant>,
    pub redactor: Arc<Redactor>,
}

/// No arguments: an empty object, or none at all.
pub(crate) struct NoArgs;

impl ExactArgs for NoArgs {
    fn parse(args: &Value) -> Result<NoArgs, ErrorCode> {
        match args {
            Value::Object(m) if m.is_empty() => Ok(NoArgs),
            Value::Null => Ok(NoArgs),
            _ => Err(ErrorCode::InvalidArguments),
        }
    }
}

impl ToolRules for ListGrantedTargets {
    type Args = NoArgs;
    type Reader = ListReader;
    type Output = ListOutput;

    /// Absent arguments are the empty object the schema names.
    fn input(_args: &Value) -> Value {
        Value::Object(Map::new())
    }

    /// No run: the key's live grants, at least one.
    fn admit(
        at: &AdmissionContext<'_>,
        _args: &NoArgs,
    ) -> Result<ToolAdmission<ListReader>, ErrorCode> {
        let live: Vec<Grant> = at
            .ctx
            .grants
            .iter()
            .filter(|g| g.is_live(at.now_ms))
            .cloned()
            .collect();
        if live.is_empty() {
            // The tool is not in this key's (empty) catalog: refuse it like any ungranted tool.
            let all_revoked = at.ctx.grants.iter().all(|g| g.revoked_at_ms.is_some());
            return Err(if all_revoked {
                ErrorCode::GrantRevoked
            } else {
                ErrorCode::GrantExpired
            });
        }
        Ok(ToolAdmission {
            target: None,
            grant: None,
            run: None,
            reader: ListReader {
                grants: live,
                redactor: at.svc.secrets.redactor()?,
            },
        })
    }

    fn execute(_args: NoArgs, reader: &ListReader) -> Result<ListOutput, ErrorCode> {
        Ok(list(reader))
    }
}

/// `list_granted_targets`' output.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ListOutput {
    targets: Vec<Listed>,
}

/// One live grant as it is listed.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Listed {
    target: ListedTarget,
    masked: bool,
    features: Vec<Feature>,
    tools: Vec<&'static str>,
    expires_at: String,
}

/// A target as it is listed: its six fields, any id that holds a known secret masked.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ListedTarget {
    instance: String,
    revision: u64,
    workspace_id: String,
    session_id: String,
    generation: u64,
    run_id: String,
}

fn list(reader: &ListReader) -> ListOutput {
    let targets = reader
        .grants
        .iter()
        .map(|g| {
            let tools = tools::ALL
                .iter()
                .filter(|t| t.feature.is_some_and(|f| g.features.contains(&f)))
                .map(|t| t.name)
                .collect();
            let (target, masked) = listed(&g.target, &reader.redactor);
            Listed {
                target,
                masked,
                features: g.features.clone(),
                tools,
                expires_at: rfc3339(g.expires_at_ms),
            }
        })
        .collect();
    ListOutput { targets }
}

/// `target` as it is listed: every id that holds a known secret masked, and whether one did. The
/// reader learns its target is there, and no byte of the secret; a masked id names no run (the
/// mask is not id text), so the other tools refuse it like any malformed target.
fn listed(target: &Target, redactor: &Redactor) -> (ListedTarget, bool) {
    let mut masked = false;
    let mut id = |id: &str| {
        if redactor.contains_secret(id.as_bytes()) {
            masked = true;
            redactor.mask(id)
        } else {
            id.to_owned()
        }
    };
    let listed = ListedTarget {
        instance: id(&target.instance),
        revision: target.revision,
        workspace_id: id(&target.workspace_id),
        session_id: id(&target.session_id),
        generation: target.generation,
        run_id: id(&target.run_id),
    };
    (listed, masked)
}
