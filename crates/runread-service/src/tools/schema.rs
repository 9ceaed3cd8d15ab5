//! The JSON Schema every tool's definition is built from: each output's schema as schemars
//! derives it from the output's type, the transforms those types name for what a type alone
//! cannot say (the mark of a value the agent wrote, a listed target), the target and ids, the
//! label's fields, and the inputs several tools share.

use std::sync::LazyLock;

use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Value, json};

use runread_core::limits::TARGET_FIELD_MAX_BYTES;

/// The annotation keyword an output schema marks a property with when its value is written by an
/// agent (ids, names, models, tool names, texts, paths the agent chose), with the value
/// [`AGENT_SOURCE`]. Values runread derives itself carry no mark. JSON Schema ignores unknown
/// keywords, so validation is unchanged; the label (`ToolDef::trust`) follows from the marks.
pub const SOURCE_KEYWORD: &str = "x-runread-source";
/// [`SOURCE_KEYWORD`]'s one value.
pub const AGENT_SOURCE: &str = "agent";

/// The output schema of a tool whose output is a `T`: the one schemars derives from the type
/// (draft 2020-12, every subschema inline so a client needs no `$ref`, as the value
/// serializes). Each tool's `ToolDef::output_schema` is this for its output type, computed once.
pub(crate) fn output_schema<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.contract = Contract::Serialize;
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Marks a field's schema as a value an agent wrote (`#[schemars(transform = agent_wrote)]`).
pub(crate) fn agent_wrote(schema: &mut Schema) {
    schema.insert(SOURCE_KEYWORD.into(), AGENT_SOURCE.into());
}

/// Marks the `value` of a sourced field as the agent's: the same type carries runread's values
/// elsewhere, so the mark is the field's, not the type's.
pub(crate) fn agent_wrote_value(schema: &mut Schema) {
    if let Some(value) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("value"))
        .and_then(Value::as_object_mut)
    {
        value.insert(SOURCE_KEYWORD.into(), AGENT_SOURCE.into());
    }
}

/// An enum as its values alone (`#[schemars(transform = values_only)]`): for a type whose
/// variants' docs are written for runread's developers (where an agent keeps its files), not for
/// readers, who are shown the names only.
pub(crate) fn values_only(schema: &mut Schema) {
    let values: Option<Vec<Value>> = schema
        .get("oneOf")
        .and_then(Value::as_array)
        .and_then(|branches| branches.iter().map(|b| b.get("const").cloned()).collect());
    let Some(values) = values else { return };
    schema.remove("oneOf");
    if values.iter().all(Value::is_string) {
        schema.insert("type".into(), "string".into());
    }
    schema.insert("enum".into(), values.into());
}

/// Whether any property of `schema`, at any depth, is marked as the agent's (what a tool's label
/// is tested against).
#[cfg(test)]
pub(crate) fn carries_agent_data(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            m.get(SOURCE_KEYWORD).is_some_and(|v| v == AGENT_SOURCE)
                || m.values().any(carries_agent_data)
        }
        Value::Array(items) => items.iter().any(carries_agent_data),
        _ => false,
    }
}

/// The characters of a target's ids.
const ID_CHARS: &str = "A-Za-z0-9._:-";

pub(crate) fn id_schema() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": TARGET_FIELD_MAX_BYTES, "pattern": format!("^[{ID_CHARS}]+$")})
}

/// An id as `list_granted_targets` shows it: as it is, or with every known secret in it written
/// as the redactor's mask — a form no id has (the mask's brackets are not id characters), so a
/// masked id never names a run.
fn listed_id_schema() -> Value {
    let mask: String = runread_core::redact::MASK
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect();
    json!({"anyOf": [
        id_schema(),
        {"type": "string", "pattern": format!("^[{ID_CHARS}]*(?:{mask}[{ID_CHARS}]*)+$")}
    ]})
}

/// The target's ids the agent chose: the session's and the run's.
const AGENT_IDS: [&str; 2] = ["sessionId", "runId"];

/// A target as `list_granted_targets` lists it (`#[schemars(schema_with = "listed_target")]`):
/// the six-field target, each id as listed (any that holds a known secret masked), the session's
/// and run's ids the agent's own.
pub(crate) fn listed_target(_: &mut SchemaGenerator) -> Schema {
    let mut target = target_schema();
    let id = id_schema();
    if let Some(fields) = target.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, field) in fields.iter_mut() {
            if *field == id {
                *field = listed_id_schema();
            }
            if AGENT_IDS.contains(&name.as_str())
                && let Some(f) = field.as_object_mut()
            {
                f.insert(SOURCE_KEYWORD.into(), AGENT_SOURCE.into());
            }
        }
    }
    // `target_schema` is an object; were it not, nothing would validate rather than anything.
    Schema::try_from(target).unwrap_or_else(|_| Schema::from(false))
}

/// JSON Schema of the six-field target.
pub fn target_schema() -> Value {
    json!({
        "type": "object",
        "description": "The exact run: all six fields as list_granted_targets returns them.",
        "properties": {
            "instance": id_schema(),
            "revision": {"type": "integer", "minimum": 1},
            "workspaceId": id_schema(),
            "sessionId": id_schema(),
            "generation": {"type": "integer", "minimum": 1},
            "runId": id_schema()
        },
        "required": ["instance", "revision", "workspaceId", "sessionId", "generation", "runId"],
        "additionalProperties": false
    })
}

/// The label's fields (`runread_core::envelope::LABEL_KEYS`), first in every result.
fn trust_fields(tool: &str) -> Value {
    json!({"trust": {"const": "untrusted_data"}, "instructions": {"const": false},
           "tool": {"const": tool}})
}

pub(crate) fn with_trust(mut schema: Value, tool: &str) -> Value {
    if let (Some(props), Value::Object(trust)) = (
        schema.get_mut("properties").and_then(Value::as_object_mut),
        trust_fields(tool),
    ) {
        // The label's fields lead, as they do in every result.
        let rest = std::mem::take(props);
        props.extend(trust);
        props.extend(rest);
    }
    if let Some(req) = schema.get_mut("required").and_then(Value::as_array_mut) {
        for k in runread_core::envelope::LABEL_KEYS {
            req.push(k.into());
        }
    }
    schema
}

/// The input of a tool that takes nothing but its target.
pub(crate) static TARGET_ONLY_INPUT: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"target": target_schema()},
        "required": ["target"],
        "additionalProperties": false
    })
});

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The agent's ids in a listed target are marked; runread's own are not.
    #[test]
    fn a_listed_targets_session_and_run_ids_are_the_agents() {
        let listed = listed_target(&mut SchemaGenerator::default()).to_value();
        for (field, agents) in [
            ("instance", false),
            ("workspaceId", false),
            ("sessionId", true),
            ("runId", true),
            ("revision", false),
            ("generation", false),
        ] {
            assert_eq!(
                carries_agent_data(&listed["properties"][field]),
                agents,
                "{field}"
            );
        }
    }

    /// A listed id is an id, or one with masks in it; a mask alone is one too, anything else is
    /// neither.
    #[test]
    fn a_listed_id_is_an_id_or_a_masked_one() {
        let validator = jsonschema::validator_for(&listed_id_schema()).unwrap();
        let mask = runread_core::redact::MASK;
        for ok in [
            "turn-1".to_owned(),
            mask.to_owned(),
            format!("a{mask}b"),
            format!("{mask}-{mask}"),
        ] {
            assert!(validator.is_valid(&json!(ok)), "{ok}");
        }
        for bad in ["", "a b", "[redacted", "a]b", "[REDACTED]"] {
            assert!(!validator.is_valid(&json!(bad)), "{bad}");
        }
    }
}
