//! The compiled-in adapters, their pinned definition digests, and admission up to the gate.
//!
//! Each tool's rules live in its own module, as one [`ToolRules`] implementation: its exact
//! arguments ([`ExactArgs`]), what admission reads for it, and its execution. This module runs
//! them the same way for every tool ([`admit`], then the gate or the preview runs the typed
//! reader the tool's admission made); [`tools::Tool::rules`] is the table from
//! the catalog to them. A new tool is its module, its catalog entry (in `tools`) and its pinned
//! digest here.
//!
//! Each adapter receives only the reader of its own feature, built at admission from what
//! admission already read: a snapshot of one run, the session file's identity observed now, or
//! the key's live grants. No adapter gets the store, the filesystem, the network or a process.

use std::sync::Arc;

use serde_json::{Map, Value};

use runread_core::redact::Redactor;
use runread_core::{ErrorCode, Feature, Target};
use runread_gate::{Definition, ExecToken, FeatureReader};
use runread_store::{Grant, RunRecord, SessionRecord};

use crate::tools::{self, ToolDef};
use crate::{KeyContext, Service, grants};

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
        "6f73538e2cfd1db9a2330fe1eb4aba7b26e8d6c2b9889599726e75051d4546b8",
    ),
    (
        "list_granted_targets",
        "78198aa14ce80fbe62c414419a9f2a161418c993de2d69875f9036bcc450e4fc",
    ),
    (
        "read_artifact",
        "f4856091db3603220ce3d54063b02ad2654cd82c2b2f026b9798233974783d9d",
    ),
    (
        "read_final_answer",
        "5401a11056db3ff446f5ec5c068f03cb7dde0bf513951f2afa6009a4324cb9fc",
    ),
    (
        "read_history",
        "047efdf159608bb914e874a3497409114b9c27b11bdf35471eda1cd58e971f83",
    ),
    (
        "read_target_metadata",
        "a515cfceaadf0e167858a3e355379bd9aaaf4f04fc311da9d5540cbe4d558545",
    ),
    (
        "read_work_state",
        "13cb6091b3fffd3dc4c731badd5e5860216e5a68cd09321be2bc06e23519a757",
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

/// One tool's rules, implemented once in the tool's own module: its exact arguments (admission
/// step 4), the grant and currency it needs and the reader it gets (step 5), and what it serves
/// from that reader. Its name, schemas and feature are its entry in [`tools::ALL`].
pub(crate) trait ToolRules: Sync + 'static {
    /// The tool's exact arguments.
    type Args: ExactArgs;
    /// Everything the tool's execution may read, built at admission.
    type Reader: Send + Sync + 'static;
    /// What the tool serves, as one type: its fields are the output's, its enums the states an
    /// output can hold, and its schema is tested equal to the declared one
    /// (`every_output_type_matches_its_declared_schema`).
    type Output: serde::Serialize + schemars::JsonSchema;

    /// The input the gate seals for `args` (which [`ExactArgs::parse`] accepted): the arguments
    /// as given, unless the tool accepts an absent argument object.
    fn input(args: &Value) -> Value {
        args.clone()
    }

    /// Admission step 5 for `args` (through [`AdmissionContext`]), and the reader built from what it
    /// read.
    fn admit(
        at: &AdmissionContext<'_>,
        args: &Self::Args,
    ) -> Result<ToolAdmission<Self::Reader>, ErrorCode>;

    /// The adapter: serves `args` (the unsealed input, parsed again) from `reader`. Every string
    /// of its output is masked afterwards, whatever it masked itself.
    fn execute(args: Self::Args, reader: &Self::Reader) -> Result<Self::Output, ErrorCode>;
}

/// What admission knows while step 5 runs for one call.
pub(crate) struct AdmissionContext<'a> {
    pub svc: &'a Service,
    pub ctx: &'a KeyContext,
    /// The called tool's catalog entry: its feature is the one a grant must allow.
    pub def: &'static ToolDef,
    pub now_ms: i64,
}

/// What step 5 admitted for a call, and the reader its tool executes with.
pub(crate) struct ToolAdmission<R> {
    pub target: Option<Target>,
    pub grant: Option<Grant>,
    pub run: Option<RunRecord>,
    pub reader: R,
}

/// Step 5 passed for a tool that names a run: the key's grant for it and the run, current.
pub(crate) struct CurrentRunGrant {
    pub target: Target,
    pub grant: Grant,
    pub run: RunRecord,
}

impl CurrentRunGrant {
    /// The admission, with the tool's `reader` built on it.
    pub(crate) fn with<R>(self, reader: R) -> ToolAdmission<R> {
        ToolAdmission {
            target: Some(self.target),
            grant: Some(self.grant),
            run: Some(self.run),
            reader,
        }
    }
}

impl AdmissionContext<'_> {
    /// Admission step 5 for a tool that names a run: the key's grant for exactly `target` that
    /// allows the tool's feature (the catalog's, so what a key is shown and what it is admitted
    /// to are one rule), and the run, current in instance, revision and generation.
    pub(crate) fn run(&self, target: &Target) -> Result<CurrentRunGrant, ErrorCode> {
        // Every tool that names a run has a feature; one without cannot be granted a run.
        let feature: Feature = self.def.feature.ok_or(ErrorCode::NotGranted)?;
        let grant = grants::grant_for(self.ctx, target, feature, self.now_ms)?.clone();
        let run = grants::current_run(self.svc, target)?;
        Ok(CurrentRunGrant {
            target: target.clone(),
            grant,
            run,
        })
    }

    /// The session record of `target` (its branch, malformed lines, name, saved model).
    pub(crate) fn session(&self, target: &Target) -> Result<SessionRecord, ErrorCode> {
        self.svc
            .store
            .session(&target.session_id)
            .map_err(Service::unavailable)?
            .ok_or(ErrorCode::TargetStale)
    }
}

/// A tool's exact arguments.
pub(crate) trait ExactArgs: Sized {
    /// Admission step 4: the arguments, every bound checked; anything else (an unknown field
    /// included) is `invalid_arguments`.
    fn parse(args: &Value) -> Result<Self, ErrorCode>;
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetOnly {
    target: Target,
}

/// Arguments that are exactly `{"target": …}`: those of the tools that take nothing else.
impl ExactArgs for Target {
    fn parse(args: &Value) -> Result<Target, ErrorCode> {
        let TargetOnly { target } =
            serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)?;
        if !target.validate_shape() {
            return Err(ErrorCode::InvalidArguments);
        }
        Ok(target)
    }
}

/// What one call's admission made: the tool's reader, and the known secrets every string of its
/// output is masked with. Typed by the tool whose admission made it, so running it recovers
/// nothing.
struct Reading<T: ToolRules> {
    tool: &'static str,
    redactor: Arc<Redactor>,
    feature: T::Reader,
}

impl<T: ToolRules> Reading<T> {
    /// The tool's execution on `input` (parsed again), every string of its output masked.
    fn run(&self, input: &Value) -> Result<Map<String, Value>, ErrorCode> {
        let output = T::execute(T::Args::parse(input)?, &self.feature)?;
        // A struct serializes to an object; anything else is a broken tool, refused.
        let Ok(Value::Object(mut output)) = serde_json::to_value(output) else {
            return Err(ErrorCode::Unavailable);
        };
        // One rule for every tool: no string leaves unmasked (names, ids, error text, metadata),
        // whatever the tool's own masking did. A tool masks across its own boundaries first
        // (answers before chunking, history across events and pages); this catches the rest.
        mask_strings(&mut output, &self.redactor);
        Ok(output)
    }
}

impl<T: ToolRules> FeatureReader for Reading<T> {
    fn tool(&self) -> &'static str {
        self.tool
    }

    fn execute(&self, _token: &ExecToken, input: &Value) -> Result<Map<String, Value>, ErrorCode> {
        self.run(input)
    }
}

/// An admitted call's reader, run by the gate ([`FeatureReader`]) or, for the owner's preview,
/// here ([`AdmittedReader::run_preview`]), which records nothing.
pub(crate) trait AdmittedReader: FeatureReader {
    fn run_preview(&self, input: &Value) -> Result<Map<String, Value>, ErrorCode>;
}

impl<T: ToolRules> AdmittedReader for Reading<T> {
    fn run_preview(&self, input: &Value) -> Result<Map<String, Value>, ErrorCode> {
        self.run(input)
    }
}

/// [`ToolRules`] as the table ([`tools::Tool::rules`]) holds it: one admission per tool, each making
/// its own typed [`Reading`].
pub(crate) trait Rules: Sync {
    fn admit(&self, at: &AdmissionContext<'_>, args: &Value) -> Result<AdmittedCall, ErrorCode>;
    /// The schema of the tool's output type, as it serializes.
    #[cfg(test)]
    fn derived_output_schema(&self) -> Value;
}

impl<T: ToolRules> Rules for T {
    fn admit(&self, at: &AdmissionContext<'_>, args: &Value) -> Result<AdmittedCall, ErrorCode> {
        let parsed = T::Args::parse(args)?;
        let granted = T::admit(at, &parsed)?;
        let reading: Reading<T> = Reading {
            tool: at.def.name,
            redactor: at.svc.secrets.redactor()?,
            feature: granted.reader,
        };
        Ok(AdmittedCall {
            input: T::input(args),
            target: granted.target,
            grant: granted.grant,
            run: granted.run,
            reader: Arc::new(reading),
        })
    }

    #[cfg(test)]
    fn derived_output_schema(&self) -> Value {
        let mut settings = schemars::generate::SchemaSettings::draft2020_12();
        settings.inline_subschemas = true;
        settings.contract = schemars::generate::Contract::Serialize;
        settings
            .into_generator()
            .into_root_schema_for::<T::Output>()
            .to_value()
    }
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

/// Every tool's definition, compiled in.
pub fn definitions() -> Vec<Definition> {
    tools::ALL.iter().map(definition).collect()
}

/// What admission hands the gate.
pub(crate) struct AdmittedCall {
    pub input: Value,
    pub target: Option<Target>,
    pub grant: Option<Grant>,
    pub run: Option<RunRecord>,
    /// The tool's reader with the known secrets its output is masked with.
    pub reader: Arc<dyn AdmittedReader>,
}

/// Admission steps 4 and 5 for `def`: exact arguments, then the grant and the target's currency.
pub(crate) fn admit(
    svc: &Service,
    ctx: &KeyContext,
    def: &'static ToolDef,
    args: &Value,
    now_ms: i64,
) -> Result<AdmittedCall, ErrorCode> {
    let at = AdmissionContext {
        svc,
        ctx,
        def,
        now_ms,
    };
    def.tool.rules().admit(&at, args)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The pinned digests equal the compiled definitions. When a tool's definition changes on
    /// purpose, this test prints the new digest to pin (and the version should be bumped).
    #[test]
    fn binding_digests_are_pinned() {
        let mut drift = Vec::new();
        for d in definitions() {
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
        assert!(runread_gate::Registry::build(definitions(), PINNED_BINDINGS).is_ok());
    }

    /// Schemas compile on a tool's first call, not at startup: every compiled-in one must.
    #[test]
    fn every_tool_schema_compiles() {
        let registry = runread_gate::Registry::build(definitions(), PINNED_BINDINGS).unwrap();
        let tools: Vec<&str> = registry.tools().map(|b| b.tool).collect();
        assert_eq!(tools.len(), definitions().len());
        for b in registry.tools() {
            assert!(b.schemas_compile(), "{}", b.tool);
        }
    }

    #[test]
    fn a_drifted_binding_is_refused_at_startup() {
        let mut pinned: Vec<(&'static str, &'static str)> = PINNED_BINDINGS.to_vec();
        pinned[0].1 = "0000000000000000000000000000000000000000000000000000000000000000";
        let err = runread_gate::Registry::build(definitions(), &pinned)
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
            runread_gate::Registry::build(definitions(), &missing).is_err(),
            "an unpinned adapter is refused"
        );
    }

    /// Each tool's output type and its declared output schema say the same: the same fields at
    /// every depth, the same required ones, the same types (null included), the same enums
    /// where both name values. What only the declared schema says (bounds, patterns, marks of
    /// the agent's data, conditions) narrows it and is not compared.
    #[test]
    fn every_output_type_matches_its_declared_schema() {
        let mut drift = Vec::new();
        for def in &tools::ALL {
            let derived = def.tool.rules().derived_output_schema();
            agree(def.name, def.output_schema, &derived, &mut drift);
        }
        assert!(drift.is_empty(), "{}", drift.join("\n"));
    }

    /// The comparison can fail: a renamed field, a dropped requirement, a changed type and an
    /// enum value more are each found.
    #[test]
    fn the_schema_comparison_finds_drift() {
        let declared = serde_json::json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"enum": ["x", "y"]}, "c": {"type": ["integer", "null"]}},
            "required": ["a", "b", "c"]});
        let same = serde_json::json!({"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 3}, "b": {"type": "string", "enum": ["y", "x"]},
            "c": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
            "required": ["c", "b", "a"]});
        let mut found = Vec::new();
        agree("t", &declared, &same, &mut found);
        assert!(found.is_empty(), "{found:?}");
        for drifted in [
            serde_json::json!({"type": "object", "properties": {"A": {"type": "string"}, "b": {"enum": ["x", "y"]}, "c": {"type": ["integer", "null"]}}, "required": ["A", "b", "c"]}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"enum": ["x", "y"]}, "c": {"type": ["integer", "null"]}}, "required": ["b", "c"]}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"enum": ["x", "y"]}, "c": {"type": "integer"}}, "required": ["a", "b", "c"]}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"enum": ["x", "y", "z"]}, "c": {"type": ["integer", "null"]}}, "required": ["a", "b", "c"]}),
        ] {
            let mut found = Vec::new();
            agree("t", &declared, &drifted, &mut found);
            assert!(!found.is_empty(), "{drifted}");
        }
    }

    /// `schema`'s JSON types: its `type`, else those of its enum's values; `anyOf` branches
    /// united (a derived `Option` is `anyOf` with `null`).
    fn types(schema: &Value) -> BTreeSet<String> {
        if let Some(branches) = schema
            .get("anyOf")
            .or(schema.get("oneOf"))
            .and_then(Value::as_array)
        {
            return branches.iter().flat_map(types).collect();
        }
        match schema.get("type") {
            Some(Value::String(t)) => BTreeSet::from([t.clone()]),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => listed(schema)
                .unwrap_or_default()
                .iter()
                .map(|v| {
                    match v {
                        Value::Null => "null",
                        Value::Bool(_) => "boolean",
                        Value::Number(n) if n.is_f64() => "number",
                        Value::Number(_) => "integer",
                        Value::String(_) => "string",
                        Value::Array(_) => "array",
                        Value::Object(_) => "object",
                    }
                    .to_owned()
                })
                .collect(),
        }
    }

    /// The values `schema` allows, when it lists them (`enum` or `const`), as JSON text.
    fn values(schema: &Value) -> Option<BTreeSet<String>> {
        listed(schema).map(|vs| vs.iter().map(Value::to_string).collect())
    }

    /// The values `schema` lists: its `enum`, its `const`, or (a derived enum with documented
    /// variants) one `const` per `anyOf`/`oneOf` branch.
    fn listed(schema: &Value) -> Option<Vec<Value>> {
        if let Some(branches) = schema
            .get("anyOf")
            .or(schema.get("oneOf"))
            .and_then(Value::as_array)
        {
            let mut all = Vec::new();
            for b in branches {
                all.extend(listed(b)?);
            }
            return Some(all);
        }
        if let Some(Value::Array(vs)) = schema.get("enum") {
            return Some(vs.clone());
        }
        schema.get("const").map(|v| vec![v.clone()])
    }

    /// The branch of `schema` that describes an object or array (an `Option`'s non-null one).
    fn structured(schema: &Value) -> &Value {
        schema
            .get("anyOf")
            .and_then(Value::as_array)
            .and_then(|bs| {
                bs.iter()
                    .find(|b| b.get("properties").is_some() || b.get("items").is_some())
            })
            .unwrap_or(schema)
    }

    fn agree(path: &str, declared: &Value, derived: &Value, drift: &mut Vec<String>) {
        let (td, tv) = (types(declared), types(derived));
        if !td.is_empty() && !tv.is_empty() && td != tv {
            drift.push(format!("{path}: types {td:?} declared, {tv:?} derived"));
        }
        if let (Some(vd), Some(vv)) = (values(declared), values(derived))
            && vd != vv
        {
            drift.push(format!("{path}: values {vd:?} declared, {vv:?} derived"));
        }
        let (declared, derived) = (structured(declared), structured(derived));
        let keys = |s: &Value, k: &str| -> BTreeSet<String> {
            match s.get(k) {
                Some(Value::Object(m)) => m.keys().cloned().collect(),
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                _ => BTreeSet::new(),
            }
        };
        let (pd, pv) = (keys(declared, "properties"), keys(derived, "properties"));
        if pd != pv {
            drift.push(format!(
                "{path}: properties {pd:?} declared, {pv:?} derived"
            ));
        }
        let (rd, rv) = (keys(declared, "required"), keys(derived, "required"));
        if rd != rv {
            drift.push(format!("{path}: required {rd:?} declared, {rv:?} derived"));
        }
        for p in pd.intersection(&pv) {
            agree(
                &format!("{path}.{p}"),
                &declared["properties"][p],
                &derived["properties"][p],
                drift,
            );
        }
        if let (Some(id), Some(iv)) = (declared.get("items"), derived.get("items")) {
            agree(&format!("{path}[]"), id, iv, drift);
        }
    }
}
