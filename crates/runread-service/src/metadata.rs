//! `read_target_metadata`: names and models, each with its source; unobserved values are null
//! and named in `unknownFields`.

use serde_json::{Map, Value, json};

use runread_core::ErrorCode;
use runread_store::{RunRecord, SessionRecord};

/// The `metadata` feature's reader: the run (with its workspace registration) and its session.
pub(crate) struct Reader {
    pub run: RunRecord,
    pub session: SessionRecord,
    /// Known secrets are masked in metadata too (a session name or path may carry one).
    pub redactor: std::sync::Arc<runread_core::redact::Redactor>,
}

pub(crate) fn execute(r: &Reader) -> Result<Map<String, Value>, ErrorCode> {
    let fields: [(&str, Option<String>, &str); 5] = [
        (
            "workspaceName",
            Some(r.run.workspace_name.clone()),
            "registration",
        ),
        (
            "workspacePath",
            Some(r.run.workspace_path.clone()),
            "registration",
        ),
        (
            "sessionName",
            r.session.session_name.clone(),
            "session_info",
        ),
        ("savedModel", r.session.saved_model.clone(), "model_change"),
        (
            "runModel",
            r.run.run.run_models.last().cloned(),
            "assistant_messages",
        ),
    ];
    let mut m = Map::new();
    let mut unknown = Vec::new();
    for (name, value, source) in fields {
        let value = value.map(|v| r.redactor.mask(&v));
        if value.is_none() {
            unknown.push(name);
        }
        m.insert(name.into(), json!({"value": value, "source": source}));
    }
    let models: Vec<String> = r
        .run
        .run
        .run_models
        .iter()
        .map(|m| r.redactor.mask(m))
        .collect();
    m.insert("runModels".into(), json!(models));
    m.insert("unknownFields".into(), json!(unknown));
    Ok(m)
}
