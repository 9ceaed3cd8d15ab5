//! `get_run`: a low-sensitivity status projection. Nothing else — no request ids, paths,
//! arguments, errors or process ids — ever appears in its output.

use serde_json::{Map, Value, json};

use runread_core::ErrorCode;
use runread_store::RunRecord;

/// The `status` feature's reader: the admitted run, or nothing.
pub(crate) struct Reader {
    pub run: Option<RunRecord>,
}

pub(crate) fn execute(reader: &Reader) -> Result<Map<String, Value>, ErrorCode> {
    let mut m = Map::new();
    let Some(r) = &reader.run else {
        m.insert("found".into(), json!(false));
        return Ok(m);
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
    let started = own_time(r.run.started_at.as_deref());
    m.insert("createdAt".into(), json!(started));
    m.insert("startedAt".into(), json!(started));
    m.insert(
        "finishedAt".into(),
        json!(own_time(r.run.ended_at.as_deref())),
    );
    m.insert("origin".into(), json!("passive"));
    Ok(m)
}

/// An agent's RFC 3339 timestamp re-rendered by runread (UTC, milliseconds); `None` when it is
/// absent or not a timestamp.
fn own_time(agent_written: Option<&str>) -> Option<String> {
    agent_written
        .and_then(runread_core::timefmt::parse_rfc3339)
        .map(runread_core::timefmt::rfc3339)
}
