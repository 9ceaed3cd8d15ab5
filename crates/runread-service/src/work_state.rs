//! `read_work_state`: the run's foreground state kept apart from the aggregate over its explicit
//! children, with per-kind coverage and freshness. Passive evidence says honestly what a session
//! file cannot show.

use serde_json::{Map, Value, json};

use runread_core::ErrorCode;
use runread_core::limits::WORK_STATE_FRESH_MS;
use runread_core::timefmt::rfc3339;
use runread_sessions::RunStatus;
use runread_store::{RunRecord, SessionRecord};

/// The `aggregate` feature's reader: the run, its session record, the time of the read.
pub(crate) struct Reader {
    pub run: RunRecord,
    pub session: SessionRecord,
    pub now_ms: i64,
}

fn coverage(complete: bool, reason: &str) -> Value {
    json!({"state": if complete { "complete" } else { "incomplete" }, "reason": reason})
}

pub(crate) fn execute(r: &Reader) -> Result<Map<String, Value>, ErrorCode> {
    let observed = r.session.ingested_at_ms;
    let fresh = r.now_ms.saturating_sub(observed) <= WORK_STATE_FRESH_MS;
    let seen = match r.run.run.status {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        RunStatus::Cancelled => "cancelled",
        RunStatus::Running if r.run.run.waiting_on_tool => "waiting",
        RunStatus::Running => "running",
        RunStatus::Unknown => "unknown",
    };
    // Older than the freshness window: what was seen is no longer a claim.
    let foreground = if fresh { seen } else { "unknown" };
    let session_complete =
        r.session.branch_complete && r.session.malformed_lines.is_empty() && !r.session.torn;
    let session_reason = if session_complete {
        "the session file was read to its end without malformed or torn lines"
    } else {
        "malformed or torn lines, or a broken parent chain, in the session file"
    };
    let mut m = Map::new();
    m.insert(
        "foreground".into(),
        json!({"state": foreground, "source": "session_file"}),
    );
    // Passive evidence observes no children; an aggregate over unobserved kinds is not known.
    m.insert(
        "aggregate".into(),
        json!({"state": "unknown", "children": [], "failedChildren": 0, "cancelledChildren": 0,
               "unknownChildren": 0, "runningChildren": 0}),
    );
    m.insert(
        "coverage".into(),
        json!({
            "session": coverage(session_complete, session_reason),
            "subagents": coverage(false, "a session file does not show child agents"),
            "supervisor": coverage(false, "not a supervised run"),
            "queue": coverage(false, "a session file does not show queued prompts"),
            "background": coverage(false, "a session file does not show processes"),
        }),
    );
    m.insert("observedAt".into(), json!(rfc3339(observed)));
    m.insert("fresh".into(), json!(fresh));
    m.insert("completionConfirmed".into(), json!(false));
    m.insert("wholeMachineIdleConfirmed".into(), json!(false));
    m.insert("evidence".into(), json!("session_file"));
    Ok(m)
}
