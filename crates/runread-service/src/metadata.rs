//! `read_target_metadata`: the agent, names, models and what the session records about itself,
//! each with its source; unobserved values are null and named in `unknownFields`.
//!
//! The workspace comes from runread's registration; everything else the agent wrote. What a
//! session records on its lines (Claude Code: cwd, git branch, version on every line) is read
//! back from the run's prompt line when served, never kept in the store.

use serde_json::{Map, Value, json};

use runread_core::ErrorCode;
use runread_store::{RunRecord, SessionRecord};

use crate::source::Source;

/// The `metadata` feature's reader: the run (with its workspace registration), its session, and
/// the session file to read the prompt line back from.
pub(crate) struct Reader {
    pub run: RunRecord,
    pub session: SessionRecord,
    pub source: Source,
}

pub(crate) fn execute(r: &Reader) -> Result<Map<String, Value>, ErrorCode> {
    // What the prompt line records (nothing, when it no longer reads back as ingested).
    let recorded = r
        .run
        .run
        .prompt_line
        .as_ref()
        .and_then(|line| r.source.open().ok()?.view(line).ok());
    let line =
        |f: fn(&runread_sessions::MessageView) -> Option<String>| recorded.as_ref().and_then(f);
    let (cwd, cwd_source) = match line(|v| v.cwd.clone()) {
        Some(cwd) => (Some(cwd), "prompt_line"),
        None => (
            Some(r.session.header.cwd.clone()).filter(|c| !c.is_empty()),
            "session_header",
        ),
    };
    let saved_source = match r.run.agent.as_str() {
        "claude" => "model_attachment",
        _ => "model_change",
    };
    let fields: [(&str, Option<String>, &str); 8] = [
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
        ("savedModel", r.session.saved_model.clone(), saved_source),
        (
            "runModel",
            r.run.run.run_models.last().cloned(),
            "assistant_messages",
        ),
        ("cwd", cwd, cwd_source),
        ("gitBranch", line(|v| v.git_branch.clone()), "prompt_line"),
        (
            "agentVersion",
            line(|v| v.agent_version.clone()),
            "prompt_line",
        ),
    ];
    let mut m = Map::new();
    m.insert("agent".into(), json!(r.run.agent));
    let mut unknown = Vec::new();
    for (name, value, source) in fields {
        if value.is_none() {
            unknown.push(name);
        }
        m.insert(name.into(), json!({"value": value, "source": source}));
    }
    m.insert("runModels".into(), json!(r.run.run.run_models));
    m.insert("unknownFields".into(), json!(unknown));
    Ok(m)
}
