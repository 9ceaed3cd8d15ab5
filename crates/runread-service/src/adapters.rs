//! The compiled-in adapters, their pinned definition digests, and admission up to the gate.
//!
//! Each adapter receives only the reader of its own feature, built here from what admission
//! already read: a snapshot of one run, the session file's identity observed now, or the key's
//! live grants. No adapter gets the store, the filesystem, the network or a process.

use std::any::Any;
use std::sync::Arc;

use serde_json::{Map, Value};

use runread_core::redact::Redactor;
use runread_core::{ErrorCode, Feature, Target};
use runread_gate::{Adapter, Definition, ExecToken};
use runread_store::{Grant, RunRecord};

use crate::tools::{self, Tool, ToolDef};
use crate::{
    KeyContext, Service, artifacts, final_answer, get_run, grants, history, metadata, work_state,
};

/// Every adapter's definition digest, pinned. A change to a tool's name, version, description,
/// feature, schemas or deadline changes its digest, and the service refuses to start until the
/// change is acknowledged here (`binding_digests_are_pinned` prints the new values).
pub const PINNED_BINDINGS: &[(&str, &str)] = &[
    (
        "get_run",
        "9b35932cb109a1057a4162e7a53d943884bd2d6b21a43aa8c8edc6d52565f7ec",
    ),
    (
        "list_artifacts",
        "75c760163d9c83d2c6c5d1774c46c61b346760153b2d75937aaf2ab1ce368ea3",
    ),
    (
        "list_granted_targets",
        "a2f8ac64b07a3a71d9869e4f99ea63d9f7e1e7604324b51156d61b78247921c5",
    ),
    (
        "read_artifact",
        "11d3a48fd40232113b2aa4f35418e30ee9ac62c13b427900126a075dc33cffcb",
    ),
    (
        "read_final_answer",
        "bb340f3f59eced69ff718bc7f4e24d591de96e80137694876c153566ecf798c0",
    ),
    (
        "read_history",
        "e5fada3d61c4da8dde0db8e1cb35f1eea6a1f55fba3e011b1c7174c157986724",
    ),
    (
        "read_target_metadata",
        "33ec09f34cabab7664446c0101ac29b494b74b87167f6b42bd43cf47673a17cc",
    ),
    (
        "read_work_state",
        "dc38f9095c3a10f4f07d6b127ec2a15b78a756a700e87947de1c72f041ee0275",
    ),
];

/// The adapter's deadline (the gate's maximum).
const DEADLINE: std::time::Duration = runread_core::limits::ADAPTER_DEADLINE_MAX;

pub(crate) fn definition(def: &ToolDef) -> Definition {
    Definition {
        name: def.name,
        version: def.version,
        description: def.description,
        feature: def.feature,
        input_schema: (**def.input_schema).clone(),
        output_schema: (**def.output_schema).clone(),
        timeout: DEADLINE,
    }
}

struct ToolAdapter(&'static ToolDef);

/// What every adapter is handed: its feature's reader, and the known secrets every string of
/// its output is masked with.
pub(crate) struct Reading {
    redactor: Arc<Redactor>,
    feature: Box<dyn Any + Send + Sync>,
}

impl Adapter for ToolAdapter {
    fn definition(&self) -> Definition {
        definition(self.0)
    }

    fn execute(
        &self,
        _token: &ExecToken,
        input: &Value,
        reader: &(dyn Any + Send + Sync),
    ) -> Result<Map<String, Value>, ErrorCode> {
        execute_reading(self.0.tool, input, reader)
    }
}

/// Runs `tool` on what admission built for it (a [`Reading`]) and masks its output: the adapter's
/// work, shared by the gate and the owner's preview ([`crate::Service::preview`]).
pub(crate) fn execute_reading(
    tool: Tool,
    input: &Value,
    reader: &(dyn Any + Send + Sync),
) -> Result<Map<String, Value>, ErrorCode> {
    let reading: &Reading = reader.downcast_ref().ok_or(ErrorCode::Unavailable)?;
    let mut output = execute_tool(tool, input, &*reading.feature)?;
    // One rule for every tool: no string leaves unmasked (names, ids, error text, metadata),
    // whatever the tool's own masking did. A tool masks across its own boundaries first
    // (answers before chunking, history across events and pages); this catches the rest.
    mask_strings(&mut output, &reading.redactor);
    Ok(output)
}

/// Masks every string in `map`, keys included, in place.
fn mask_strings(map: &mut Map<String, Value>, redactor: &Redactor) {
    if redactor.is_empty() {
        return;
    }
    let keys_clean = map.keys().all(|k| !redactor.contains_secret(k.as_bytes()));
    if !keys_clean {
        let old = std::mem::take(map);
        for (k, v) in old {
            map.insert(redactor.mask(&k), v);
        }
    }
    for v in map.values_mut() {
        mask_value(v, redactor);
    }
}

fn mask_value(v: &mut Value, redactor: &Redactor) {
    match v {
        Value::String(s) => {
            if redactor.contains_secret(s.as_bytes()) {
                *s = redactor.mask(s);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| mask_value(i, redactor)),
        Value::Object(m) => mask_strings(m, redactor),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn execute_tool(
    tool: Tool,
    input: &Value,
    reader: &(dyn Any + Send + Sync),
) -> Result<Map<String, Value>, ErrorCode> {
    {
        match tool {
            Tool::ReadFinalAnswer => {
                final_answer::execute(input, reader.downcast_ref().ok_or(ErrorCode::Unavailable)?)
            }
            Tool::GetRun => get_run::execute(reader.downcast_ref().ok_or(ErrorCode::Unavailable)?),
            Tool::ListGrantedTargets => {
                grants::execute_list(reader.downcast_ref().ok_or(ErrorCode::Unavailable)?)
            }
            Tool::ListArtifacts => {
                artifacts::execute_list(input, reader.downcast_ref().ok_or(ErrorCode::Unavailable)?)
            }
            Tool::ReadArtifact => {
                artifacts::execute_read(input, reader.downcast_ref().ok_or(ErrorCode::Unavailable)?)
            }
            Tool::ReadHistory => {
                history::execute(input, reader.downcast_ref().ok_or(ErrorCode::Unavailable)?)
            }
            Tool::ReadWorkState => {
                work_state::execute(reader.downcast_ref().ok_or(ErrorCode::Unavailable)?)
            }
            Tool::ReadTargetMetadata => {
                metadata::execute(reader.downcast_ref().ok_or(ErrorCode::Unavailable)?)
            }
        }
    }
}

/// One adapter per tool, compiled in.
pub fn adapters() -> Vec<Arc<dyn Adapter>> {
    tools::ALL
        .iter()
        .map(|d| Arc::new(ToolAdapter(d)) as Arc<dyn Adapter>)
        .collect()
}

/// What admission hands the gate.
pub(crate) struct Admitted {
    pub input: Value,
    pub target: Option<Target>,
    pub grant: Option<Grant>,
    pub run: Option<RunRecord>,
    /// A [`Reading`], once admission is complete.
    pub reader: Arc<dyn Any + Send + Sync>,
    /// The feature's reader, until it is wrapped into the [`Reading`].
    feature: Option<Box<dyn Any + Send + Sync>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetOnly {
    target: Target,
}

/// Admission steps 4 and 5 for `def`: exact arguments, then the grant and the target's currency.
pub(crate) fn admit(
    svc: &Service,
    ctx: &KeyContext,
    def: &ToolDef,
    args: &Value,
    now_ms: i64,
) -> Result<Admitted, ErrorCode> {
    let mut admitted = admit_feature(svc, ctx, def, args, now_ms)?;
    admitted.reader = Arc::new(Reading {
        redactor: svc.secrets.redactor()?,
        feature: admitted.feature.take().ok_or(ErrorCode::Unavailable)?,
    });
    Ok(admitted)
}

fn admit_feature(
    svc: &Service,
    ctx: &KeyContext,
    def: &ToolDef,
    args: &Value,
    now_ms: i64,
) -> Result<Admitted, ErrorCode> {
    match def.tool {
        Tool::ListGrantedTargets => {
            match args {
                Value::Object(m) if m.is_empty() => {}
                Value::Null => {}
                _ => return Err(ErrorCode::InvalidArguments),
            }
            let live: Vec<Grant> = ctx
                .grants
                .iter()
                .filter(|g| g.is_live(now_ms))
                .cloned()
                .collect();
            if live.is_empty() {
                // The tool is not in this key's (empty) catalog: refuse it like any ungranted tool.
                let all_revoked = ctx.grants.iter().all(|g| g.revoked_at_ms.is_some());
                return Err(if all_revoked {
                    ErrorCode::GrantRevoked
                } else {
                    ErrorCode::GrantExpired
                });
            }
            Ok(Admitted {
                input: Value::Object(Map::new()),
                target: None,
                grant: None,
                run: None,
                reader: Arc::new(()),
                feature: Some(Box::new(grants::ListReader { grants: live })),
            })
        }
        Tool::ReadFinalAnswer => {
            let target = final_answer::parse_args(args)?.target;
            let (grant, run) = admit_run(svc, ctx, &target, Feature::FinalAnswer, now_ms)?;
            let reader = final_answer::Reader::new(svc, &run, svc.secrets.redactor()?, now_ms)?;
            Ok(Admitted::for_run(args, target, grant, run, reader))
        }
        Tool::ReadHistory => {
            let target = history::parse_args(args)?.target;
            let (grant, run) = admit_run(svc, ctx, &target, Feature::History, now_ms)?;
            let session = session_of(svc, &target)?;
            let entries = svc
                .store
                .entries(&target.session_id, target.generation)
                .map_err(Service::unavailable)?;
            let cursor_key = svc.store.cursor_key().clone();
            let fork = crate::fork::of(&*svc.store, &session).map_err(Service::unavailable)?;
            let reader = history::Reader::new(
                run.clone(),
                entries,
                session,
                fork,
                svc.secrets.redactor()?,
                cursor_key,
            );
            Ok(Admitted::for_run(args, target, grant, run, reader))
        }
        Tool::ListArtifacts => {
            let target = artifacts::parse_list(args)?.target;
            let (grant, run) = admit_run(svc, ctx, &target, Feature::Artifacts, now_ms)?;
            let list = svc.store.artifacts(&target).map_err(Service::unavailable)?;
            Ok(Admitted::for_run(
                args,
                target,
                grant,
                run,
                artifacts::ListReader { artifacts: list },
            ))
        }
        Tool::ReadArtifact => {
            let a = artifacts::parse_read(args)?;
            let (grant, run) = admit_run(svc, ctx, &a.target, Feature::Artifacts, now_ms)?;
            let artifact = svc
                .store
                .artifacts(&a.target)
                .map_err(Service::unavailable)?
                .into_iter()
                .find(|x| x.artifact_id == a.artifact_id);
            let reader = artifacts::ReadReader {
                root: std::path::PathBuf::from(&run.workspace_path),
                artifact,
                redactor: svc.secrets.redactor()?,
            };
            Ok(Admitted::for_run(args, a.target, grant, run, reader))
        }
        Tool::ReadWorkState => {
            let target = target_only(args)?;
            let (grant, run) = admit_run(svc, ctx, &target, Feature::Aggregate, now_ms)?;
            // The run's tool calls, for an agent whose child agents leave records (Claude Code).
            let tool_call_lines = if run.agent == "claude" {
                let lines: std::collections::HashSet<u64> =
                    run.run.message_lines.iter().copied().collect();
                svc.store
                    .entries(&target.session_id, target.generation)
                    .map_err(Service::unavailable)?
                    .into_iter()
                    .filter(|e| e.has_tool_call && lines.contains(&e.line))
                    .filter_map(|e| e.line_ref())
                    .collect()
            } else {
                Vec::new()
            };
            let reader = work_state::Reader {
                supervised: crate::supervised::Supervised::observe(svc, &run)
                    .map_err(Service::unavailable)?,
                source: crate::source::Source::of(&run),
                tool_call_lines,
                run: run.clone(),
                session: session_of(svc, &target)?,
                now_ms,
            };
            Ok(Admitted::for_run(args, target, grant, run, reader))
        }
        Tool::ReadTargetMetadata => {
            let target = target_only(args)?;
            let (grant, run) = admit_run(svc, ctx, &target, Feature::Metadata, now_ms)?;
            let session = session_of(svc, &target)?;
            let reader = metadata::Reader {
                source: crate::source::Source::of(&run),
                fork: crate::fork::of(&*svc.store, &session).map_err(Service::unavailable)?,
                run: run.clone(),
                session,
            };
            Ok(Admitted::for_run(args, target, grant, run, reader))
        }
        Tool::GetRun => {
            let target = target_only(args)?;
            // Missing, elsewhere, not granted, expired, stale: all the same `{found:false}`.
            let admitted = grants::grant_for(ctx, &target, Feature::Status, now_ms)
                .ok()
                .cloned()
                .and_then(|g| grants::current_run(svc, &target).ok().map(|r| (g, r)));
            let (grant, run) = match admitted {
                Some((g, r)) => (Some(g), Some(r)),
                None => (None, None),
            };
            let reader = get_run::Reader { run: run.clone() };
            Ok(Admitted {
                input: args.clone(),
                target: Some(target),
                grant,
                run,
                reader: Arc::new(()),
                feature: Some(Box::new(reader)),
            })
        }
    }
}

/// Admission step 5 for a tool that names a run: the key's grant for exactly `target` with
/// `feature`, and the run, current in instance, revision and generation.
fn admit_run(
    svc: &Service,
    ctx: &KeyContext,
    target: &Target,
    feature: Feature,
    now_ms: i64,
) -> Result<(Grant, RunRecord), ErrorCode> {
    let grant = grants::grant_for(ctx, target, feature, now_ms)?.clone();
    let run = grants::current_run(svc, target)?;
    Ok((grant, run))
}

/// The session record of `target` (its branch, malformed lines, name, saved model).
fn session_of(svc: &Service, target: &Target) -> Result<runread_store::SessionRecord, ErrorCode> {
    svc.store
        .session(&target.session_id)
        .map_err(Service::unavailable)?
        .ok_or(ErrorCode::TargetStale)
}

/// Arguments that are exactly `{"target": …}`.
fn target_only(args: &Value) -> Result<Target, ErrorCode> {
    let TargetOnly { target } =
        serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)?;
    if !target.validate_shape() {
        return Err(ErrorCode::InvalidArguments);
    }
    Ok(target)
}

impl Admitted {
    fn for_run(
        args: &Value,
        target: Target,
        grant: Grant,
        run: RunRecord,
        reader: impl Any + Send + Sync,
    ) -> Admitted {
        Admitted {
            input: args.clone(),
            target: Some(target),
            grant: Some(grant),
            run: Some(run),
            reader: Arc::new(()),
            feature: Some(Box::new(reader)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pinned digests equal the compiled definitions. When a tool's definition changes on
    /// purpose, this test prints the new digest to pin (and the version should be bumped).
    #[test]
    fn binding_digests_are_pinned() {
        let mut drift = Vec::new();
        for a in adapters() {
            let d = a.definition();
            let pinned = PINNED_BINDINGS
                .iter()
                .find(|(t, _)| *t == d.name)
                .map(|(_, p)| *p);
            if pinned != Some(d.digest().as_str()) {
                drift.push(format!("(\"{}\", \"{}\"),", d.name, d.digest()));
            }
        }
        assert!(
            drift.is_empty(),
            "pin these digests in PINNED_BINDINGS:\n{}",
            drift.join("\n")
        );
        assert!(runread_gate::Registry::build(adapters(), PINNED_BINDINGS).is_ok());
    }

    /// Schemas compile on a tool's first call, not at startup: every compiled-in one must.
    #[test]
    fn every_tool_schema_compiles() {
        let registry = runread_gate::Registry::build(adapters(), PINNED_BINDINGS).unwrap();
        let tools: Vec<&str> = registry.tools().map(|b| b.tool).collect();
        assert_eq!(tools.len(), adapters().len());
        for b in registry.tools() {
            assert!(b.schemas_compile(), "{}", b.tool);
        }
    }

    #[test]
    fn a_drifted_binding_is_refused_at_startup() {
        let mut pinned: Vec<(&'static str, &'static str)> = PINNED_BINDINGS.to_vec();
        pinned[0].1 = "0000000000000000000000000000000000000000000000000000000000000000";
        let err = runread_gate::Registry::build(adapters(), &pinned)
            .err()
            .expect("drift must be refused");
        assert!(
            matches!(
                err,
                runread_gate::registry::RegistryError::DigestDrift { .. }
            ),
            "{err}"
        );
        let missing: Vec<_> = PINNED_BINDINGS[1..].to_vec();
        assert!(
            runread_gate::Registry::build(adapters(), &missing).is_err(),
            "an unpinned adapter is refused"
        );
    }
}
