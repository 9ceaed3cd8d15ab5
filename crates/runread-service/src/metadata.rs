//! `read_target_metadata`: the agent, names, models and what the session records about itself,
//! each with its source; unobserved values are null and named in `unknownFields`.
//!
//! The workspace comes from runread's registration; everything else the agent wrote. What a
//! session records on its lines (Claude Code: cwd, git branch, version on every line; Codex: cwd,
//! CLI version and provider on its `session_meta`) is read back from the run's prompt line or the
//! session's first line when served, never kept in the store.

use serde_json::{Map, Value, json};

use runread_core::{ErrorCode, Target};
use runread_sessions::Records;
use runread_store::{RunRecord, SessionRecord};

use crate::Service;
use crate::adapters::{AdmissionContext, ToolAdmission, ToolRules};
use crate::source::Source;

pub(crate) struct ReadTargetMetadata;

impl ToolRules for ReadTargetMetadata {
    type Args = Target;
    type Reader = Reader;

    fn admit(
        at: &AdmissionContext<'_>,
        target: &Target,
    ) -> Result<ToolAdmission<Reader>, ErrorCode> {
        let g = at.run(target)?;
        let session = at.session(target)?;
        let reader = Reader {
            source: Source::of(&g.run),
            fork: crate::fork::of(&*at.svc.store, &session).map_err(Service::unavailable)?,
            run: g.run.clone(),
            session,
        };
        Ok(g.with(reader))
    }

    fn execute(_target: Target, reader: &Reader) -> Result<Map<String, Value>, ErrorCode> {
        Ok(metadata(reader))
    }
}

/// The `metadata` feature's reader: the run (with its workspace registration), its session, and
/// the session file to read the prompt line and the header line back from.
pub(crate) struct Reader {
    pub run: RunRecord,
    pub session: SessionRecord,
    pub source: Source,
    /// The session's parent, when it is a fork that names where its history is.
    pub fork: Option<crate::fork::Fork>,
}

fn metadata(r: &Reader) -> Map<String, Value> {
    let records = Records::of(r.run.agent);
    let src = records.metadata;
    // What the prompt line and the header line record (nothing, when a line no longer reads
    // back as ingested).
    let opened = r.source.open().ok();
    let view =
        |line: Option<&runread_sessions::LineRef>| opened.as_ref().and_then(|o| o.view(line?).ok());
    let prompt = view(r.run.run.prompt_line.as_ref());
    let header = view(Some(&r.session.header.line_ref()));
    type Field = fn(&runread_sessions::MessageView) -> Option<String>;
    // A recorded value: the prompt line's, else the header line's.
    let recorded = |f: Field| -> (Option<String>, &'static str) {
        match (prompt.as_ref().and_then(f), header.as_ref().and_then(f)) {
            (Some(v), _) => (Some(v), "prompt_line"),
            (None, Some(v)) => (Some(v), src.header_line),
            (None, None) => (None, "prompt_line"),
        }
    };
    let (cwd, cwd_source) = match recorded(|v| v.cwd.clone()) {
        (Some(cwd), source) => (Some(cwd), source),
        (None, _) => (
            Some(r.session.header.cwd.clone()).filter(|c| !c.is_empty()),
            "session_header",
        ),
    };
    let (version, version_source) = recorded(|v| v.agent_version.clone());
    let (branch, branch_source) = recorded(|v| v.git_branch.clone());
    let run_model = r.run.run.run_models.last().cloned();
    let (provider, provider_source) = match recorded(|v| v.provider.clone()) {
        (Some(p), source) => (Some(p), source),
        // An agent that names the provider with the model on each response (`provider/model`).
        (None, source) => match &run_model {
            Some(pm) if records.provider_in_run_model => {
                (pm.split_once('/').map(|(p, _)| p.to_owned()), src.run_model)
            }
            _ => (None, source),
        },
    };
    let fields: [(&str, Option<String>, &str); 11] = [
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
        ("savedModel", r.session.saved_model.clone(), src.saved_model),
        ("runModel", run_model, src.run_model),
        ("modelProvider", provider, provider_source),
        ("cwd", cwd, cwd_source),
        ("gitBranch", branch, branch_source),
        ("agentVersion", version, version_source),
        (
            "parentSession",
            r.session.header.parent_session.clone(),
            src.header_line,
        ),
        (
            "inheritedHistory",
            r.fork.as_ref().map(|f| f.inherited.as_str().to_owned()),
            "parent_file",
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
    m
}
