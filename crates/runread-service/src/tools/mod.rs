//! The tool catalog: every tool runread serves, each defined in its own module (its name,
//! description, feature, trust, schemas, rules and pinned digest), listed here once. Every
//! transport renders these and nothing else. Beside them: how a tool is admitted and run
//! (`adapters`), the schemas' shared parts (`schema`), and each output as a type ([`outputs`]).

pub(crate) mod access;
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
pub const REQUEST_ACCESS: &str = access::REQUEST_NAME;
pub const WAIT_FOR_ACCESS: &str = access::WAIT_NAME;

/// Every tool, in the order clients list them.
pub static ALL: [&ToolDef; 11] = [
    &granted_targets::DEF,
    &final_answer::DEF,
    &get_run::DEF,
    &wait::DEF,
    &history::DEF,
    &work_state::DEF,
    &metadata::DEF,
    &artifacts::LIST_DEF,
    &artifacts::READ_DEF,
    &access::REQUEST_DEF,
    &access::WAIT_DEF,
];

pub use wait::waits;

/// Whether a call of `name` may be answered with a task handle, for a client with the Tasks
/// extension ([`crate::service::Service::defer_to_task`]).
pub fn defers(name: &str) -> bool {
    name == READ_FINAL_ANSWER || name == WAIT_FOR_ACCESS
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

    /// Each tool's output schema is the one schemars derives from its rules' output type: the
    /// catalog serves no schema its type does not make.
    #[test]
    fn every_tool_serves_its_output_types_schema() {
        for def in ALL {
            assert_eq!(
                **def.output_schema,
                def.rules.derived_output_schema(),
                "{}",
                def.name
            );
        }
    }

    /// What `tools/list` declared for each tool while its output schema was written by hand,
    /// before it was derived from the type — with the one word added on purpose since: the
    /// evidence a run is read from may be the owner's kept copy (`kept`, issue 56).
    fn hand_written() -> serde_json::Map<String, Value> {
        let text = include_str!("../../tests/fixtures/output-schemas-before.json");
        let mut tools = match serde_json::from_str(text) {
            Ok(Value::Object(tools)) => tools,
            other => panic!("the fixture is an object of schemas: {other:?}"),
        };
        for tool in [READ_FINAL_ANSWER, READ_HISTORY, READ_WORK_STATE] {
            match tools[tool].pointer_mut("/properties/evidence/enum") {
                Some(Value::Array(words)) => words.push(Value::from("kept")),
                other => panic!("{tool} names its evidence words: {other:?}"),
            }
        }
        tools
    }

    /// The derived schemas keep every bound, pattern, mark, requirement, enum, condition and
    /// description the hand-written ones had, each at the same place: none validates less.
    #[test]
    fn the_derived_schemas_keep_every_constraint_the_hand_written_ones_had() {
        let before = hand_written();
        // The tools made after the schemas were derived never had a hand-written one.
        let born_derived: Vec<&str> = ALL
            .iter()
            .filter(|d| !before.contains_key(d.name))
            .map(|d| d.name)
            .collect();
        assert_eq!(born_derived, [REQUEST_ACCESS, WAIT_FOR_ACCESS]);
        let mut lost = Vec::new();
        for def in ALL.iter().filter(|d| before.contains_key(d.name)) {
            let old = &before[def.name];
            differences(
                def.name,
                old,
                &def.declared_output_schema(),
                true,
                &mut lost,
            );
        }
        assert!(lost.is_empty(), "{lost:#?}");
    }

    /// What the derived schemas say that the hand-written ones did not is only what the types
    /// themselves guarantee: an unsigned count is at least 0, and a list of grant features names
    /// features. Nothing else validates more.
    #[test]
    fn the_derived_schemas_add_only_what_the_types_guarantee() {
        let before = hand_written();
        let mut added = Vec::new();
        for def in ALL.iter().filter(|d| before.contains_key(d.name)) {
            let old = &before[def.name];
            differences(
                def.name,
                &def.declared_output_schema(),
                old,
                false,
                &mut added,
            );
        }
        added.retain(|(_, what)| what != "minimum 0");
        let features = "list_granted_targets/properties/targets/items/properties/features/items";
        assert_eq!(added, [(features.to_owned(), "values".to_owned())]);
    }

    /// The comparison can fail: a bound, a pattern, a mark, a requirement, an enum value, a
    /// condition, a description or a property lost is each found; an enum written as `oneOf`
    /// consts, an `Option` as a type with `null`, is the same.
    #[test]
    fn the_schema_comparison_finds_a_lost_constraint() {
        let old = serde_json::json!({"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 3, "pattern": "^a+$", "x-runread-source": "agent"},
            "b": {"enum": ["x", "y"]}, "c": {"type": ["integer", "null"], "minimum": 1},
            "d": {"type": "boolean", "description": "d."}},
            "required": ["a", "b"], "additionalProperties": false,
            "if": {"properties": {"d": {"const": true}}}, "then": {"required": ["c"]}});
        let same = serde_json::json!({"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 3, "pattern": "^a+$", "x-runread-source": "agent"},
            "b": {"oneOf": [{"type": "string", "const": "y"}, {"type": "string", "const": "x"}]},
            "c": {"type": ["integer", "null"], "format": "uint64", "minimum": 1},
            "d": {"type": "boolean", "description": "d."}},
            "required": ["b", "a"], "additionalProperties": false, "title": "T",
            "if": {"properties": {"d": {"const": true}}}, "then": {"required": ["c"]}});
        let mut found = Vec::new();
        differences("t", &old, &same, true, &mut found);
        assert!(found.is_empty(), "{found:?}");
        for (pointer, lost) in [
            ("/properties/a/maxLength", Value::Null),
            ("/properties/a/pattern", Value::Null),
            ("/properties/a/x-runread-source", Value::Null),
            ("/properties/b/oneOf/0/const", serde_json::json!("z")),
            ("/properties/c/minimum", serde_json::json!(0)),
            ("/properties/d/description", Value::Null),
            ("/required/1", serde_json::json!("c")),
            ("/additionalProperties", serde_json::json!(true)),
            ("/then/required/0", serde_json::json!("a")),
            ("/if", Value::Null),
            ("/properties/d", Value::Null),
        ] {
            let mut drifted = same.clone();
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            match drifted.pointer_mut(parent).unwrap() {
                Value::Object(m) if lost.is_null() => {
                    m.remove(key);
                }
                Value::Object(m) => {
                    m.insert(key.to_owned(), lost);
                }
                Value::Array(a) => a[key.parse::<usize>().unwrap()] = lost,
                _ => unreachable!(),
            }
            let mut found = Vec::new();
            differences("t", &old, &drifted, true, &mut found);
            assert!(!found.is_empty(), "{pointer}");
        }
    }

    /// What `differences` compares exactly wherever the expected schema says it.
    const EXACT: [&str; 14] = [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "pattern",
        "additionalProperties",
        "unevaluatedProperties",
        "contentEncoding",
        SOURCE_KEYWORD,
    ];

    /// The names `schema` lists under `key`: its properties, or its required ones.
    fn names(schema: &Value, key: &str) -> Option<BTreeSet<String>> {
        match schema.get(key)? {
            Value::Object(m) => Some(m.keys().cloned().collect()),
            Value::Array(a) => Some(
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
            ),
            _ => None,
        }
    }

    /// Each place (a JSON pointer under `path`) where `expected` says something `actual` does
    /// not say the same: its types, the values it lists, an [`EXACT`] keyword, its required and
    /// its properties, and (with `annotations`) its description; in every property, item,
    /// condition and `anyOf` branch. An enum's `oneOf` branches are its values, not compared one
    /// by one.
    fn differences(
        path: &str,
        expected: &Value,
        actual: &Value,
        annotations: bool,
        out: &mut Vec<(String, String)>,
    ) {
        let mut differ = |what: String| out.push((path.to_owned(), what));
        let (te, ta) = (types(expected), types(actual));
        if !te.is_empty() && te != ta {
            differ(format!("types {te:?}, not {ta:?}"));
        }
        if let Some(ve) = values(expected)
            && values(actual).as_ref() != Some(&ve)
        {
            differ("values".to_owned());
        }
        let described = annotations.then_some("description");
        for k in EXACT.into_iter().chain(described) {
            if let Some(e) = expected.get(k)
                && actual.get(k) != Some(e)
            {
                differ(format!("{k} {e}"));
            }
        }
        for k in ["required", "properties"] {
            if let Some(e) = names(expected, k)
                && names(actual, k).as_ref() != Some(&e)
            {
                differ(k.to_owned());
            }
        }
        let shared = names(expected, "properties").unwrap_or_default();
        for p in shared.intersection(&names(actual, "properties").unwrap_or_default()) {
            let (e, a) = (&expected["properties"][p], &actual["properties"][p]);
            differences(&format!("{path}/properties/{p}"), e, a, annotations, out);
        }
        for k in ["items", "if", "then", "else", "propertyNames", "anyOf"] {
            match (expected.get(k), actual.get(k)) {
                (None, _) => {}
                (Some(Value::Array(e)), Some(Value::Array(a))) if e.len() == a.len() => {
                    for (i, (e, a)) in e.iter().zip(a).enumerate() {
                        differences(&format!("{path}/{k}/{i}"), e, a, annotations, out);
                    }
                }
                (Some(e), Some(a)) if e.is_object() => {
                    differences(&format!("{path}/{k}"), e, a, annotations, out)
                }
                _ => out.push((path.to_owned(), k.to_owned())),
            }
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
}
