//! `get_run`: a low-sensitivity status projection. Nothing else — no request ids, paths,
//! arguments, errors or process ids — ever appears in its output.

use serde_json::{Map, Value, json};

use runread_core::{ErrorCode, Target};
use runread_store::RunRecord;

use crate::adapters::{AdmissionContext, ToolAdmission, ToolRules};

pub(crate) struct GetRun;

/// The `status` feature's reader: the admitted run, or nothing.
pub(crate) struct Reader {
    pub run: Option<RunRecord>,
}

impl ToolRules for GetRun {
    type Args = Target;
    type Reader = Reader;

    /// Never refused after its arguments: missing, elsewhere, not granted, expired, stale are
    /// all the same `{found:false}`.
    fn admit(
        at: &AdmissionContext<'_>,
        target: &Target,
    ) -> Result<ToolAdmission<Reader>, ErrorCode> {
        Ok(match at.run(target) {
            Ok(g) => {
                let reader = Reader {
                    run: Some(g.run.clone()),
                };
                g.with(reader)
            }
            Err(_) => ToolAdmission {
                target: Some(target.clone()),
                grant: None,
                run: None,
                reader: Reader { run: None },
            },
        })
    }

    fn execute(_target: Target, reader: &Reader) -> Result<Map<String, Value>, ErrorCode> {
        Ok(status(reader))
    }
}

fn status(reader: &Reader) -> Map<String, Value> {
    let mut m = Map::new();
    let Some(r) = &reader.run else {
        m.insert("found".into(), json!(false));
        return m;
    };
    m.insert("found".into(), json!(true));
    m.insert("status".into(), json!(r.run.status.as_str()));
    m.insert(
        "revision".into(),
        json!({"instance": r.target.instance, "revision": r.target.revision, "generation": r.target.generation}),
    );
    // The same numbering as `read_history`: the sequence of the run's last event.
    let events = r.run.message_lines.len() as u64;
    m.insert(
        "eventSequence".into(),
        json!(r.run.first_sequence + events.saturating_sub(1)),
    );
    // The agent wrote these: what leaves is runread's own rendering of the instant they name (or
    // null), never the agent's string, so this projection stays runread's.
    let started = runread_core::timefmt::agent_time(r.run.started_at.as_deref());
    m.insert("createdAt".into(), json!(started));
    m.insert("startedAt".into(), json!(started));
    m.insert(
        "finishedAt".into(),
        json!(runread_core::timefmt::agent_time(r.run.ended_at.as_deref())),
    );
    m.insert("origin".into(), json!("passive"));
    m
}
