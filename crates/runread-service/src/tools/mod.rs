//! The tool catalog: every tool runread serves, each defined in its own module (its name,
//! description, feature, trust, schemas, rules and pinned digest), listed here once. Every
//! transport renders these and nothing else. Beside them: how a tool is admitted and run
//! (`adapters`), the schemas' shared parts (`schema`), and each output as a type ([`outputs`]).

pub(crate) mod adapters;
pub(crate) mod artifacts;
pub(crate) mod final_answer;
pub(crate) mod get_run;
pub(crate) mod granted_targets;
pub(crate) mod history;
pub(crate) mod metadata;
pub mod outputs;
pub(crate) mod schema;
pub mod wait;
pub(crate) mod work_state;

use runread_gate::Definition;

pub use adapters::ToolDef;

pub const LIST_GRANTED_TARGETS: &str = granted_targets::NAME;
pub const READ_FINAL_ANSWER: &str = final_answer::NAME;
pub const GET_RUN: &str = get_run::NAME;
pub const WAIT_FOR_RUN: &str = wait::NAME;
pub const READ_HISTORY: &str = history::NAME;
pub const READ_WORK_STATE: &str = work_state::NAME;
pub const READ_TARGET_METADATA: &str = metadata::NAME;
pub const LIST_ARTIFACTS: &str = artifacts::LIST_NAME;
pub const READ_ARTIFACT: &str = artifacts::READ_NAME;

/// Every tool, in the order clients list them.
pub static ALL: [&ToolDef; 9] = [
    &granted_targets::DEF,
    &final_answer::DEF,
    &get_run::DEF,
    &wait::DEF,
    &history::DEF,
    &work_state::DEF,
    &metadata::DEF,
    &artifacts::LIST_DEF,
    &artifacts::READ_DEF,
];

pub use wait::waits;

/// Whether a call of `name` may be answered with a task handle, for a client with the Tasks
/// extension ([`crate::service::Service::defer_to_task`]).
pub fn defers(name: &str) -> bool {
    name == READ_FINAL_ANSWER
}

pub fn by_name(name: &str) -> Option<&'static ToolDef> {
    ALL.iter().copied().find(|t| t.name == name)
}

/// Every tool's definition, as the gate's registry binds it.
pub fn definitions() -> Vec<Definition> {
    ALL.iter().map(|d| d.definition()).collect()
}

/// Every tool's definition digest, pinned in its own module ([`ToolDef::pinned`]). A change to a
/// tool's name, version, description, feature, schemas or deadline changes its digest, and the
/// service refuses to start until the change is acknowledged there
/// (`binding_digests_are_pinned` prints the new values).
pub fn pinned_bindings() -> Vec<(&'static str, &'static str)> {
    ALL.iter().map(|d| (d.name, d.pinned)).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use runread_core::envelope::Trust;

    use super::*;
    use crate::tools::schema::{AGENT_SOURCE, SOURCE_KEYWORD, carries_agent_data};

    /// Every value of the mark, at any depth of `schema`.
    fn marks(schema: &Value, out: &mut Vec<Value>) {
        match schema {
            Value::Object(m) => {
                out.extend(m.get(SOURCE_KEYWORD).cloned());
                m.values().for_each(|v| marks(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| marks(v, out)),
            _ => {}
        }
    }

    /// The label is the lowest trust of the fields: `untrusted` exactly when the declared output
    /// schema marks a field as the agent's, `medium` only for output that is all runread's.
    #[test]
    fn a_tool_is_untrusted_iff_its_output_carries_an_agent_field() {
        for def in ALL {
            let schema = def.declared_output_schema();
            assert_eq!(
                def.trust == Trust::Untrusted,
                carries_agent_data(&schema),
                "{}: label {:?}",
                def.name,
                def.trust
            );
            let mut found = Vec::new();
            marks(&schema, &mut found);
            assert!(
                found.iter().all(|m| m == AGENT_SOURCE),
                "{}: {found:?}",
                def.name
            );
        }
    }

    /// The pinned digests equal the compiled definitions. When a tool's definition changes on
    /// purpose, this test prints the new digest to pin (and the version should be bumped).
    #[test]
    fn binding_digests_are_pinned() {
        let mut drift = Vec::new();
        for d in definitions() {
            let pinned = pinned_bindings()
                .into_iter()
                .find(|(t, _)| *t == d.name)
                .map(|(_, p)| p);
            if pinned != Some(d.digest().as_str()) {
                drift.push(format!("(\"{}\", \"{}\"),", d.name, d.digest()));
            }
        }
        assert!(
            drift.is_empty(),
            "pin these digests (each tool's `pinned`, beside its definition):\n{}",
            drift.join("\n")
        );
        assert!(runread_gate::Registry::build(definitions(), &pinned_bindings()).is_ok());
    }

    /// Schemas compile on a tool's first call, not at startup: every compiled-in one must.
    #[test]
    fn every_tool_schema_compiles() {
        let registry = runread_gate::Registry::build(definitions(), &pinned_bindings()).unwrap();
        let tools: Vec<&str> = registry.tools().map(|b| b.tool).collect();
        assert_eq!(tools.len(), definitions().len());
        for b in registry.tools() {
            assert!(b.schemas_compile(), "{}", b.tool);
        }
    }

    #[test]
    fn a_drifted_binding_is_refused_at_startup() {
        let mut pinned = pinned_bindings();
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
        let missing: Vec<_> = pinned_bindings()[1..].to_vec();
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
        for def in ALL {
            let derived = def.rules.derived_output_schema();
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
