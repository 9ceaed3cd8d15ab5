//! `read_work_state`: the run's foreground state kept apart from the aggregate over its explicit
//! children, with per-kind coverage and freshness. Passive evidence says honestly what a session
//! file cannot show.

use serde_json::{Map, Value, json};

use runread_core::ErrorCode;
use runread_core::limits::WORK_STATE_FRESH_MS;
use runread_core::timefmt::rfc3339;
use runread_sessions::RunStatus;
use runread_store::{Foreground, Phase, RunRecord, SessionRecord};

use crate::supervised::Supervised;

/// The `aggregate` feature's reader: the run, its session record, the time of the read.
pub(crate) struct Reader {
    pub run: RunRecord,
    pub session: SessionRecord,
    pub now_ms: i64,
    /// The supervisor's record, when `runread run` supervised the run.
    pub supervised: Option<Supervised>,
}

fn coverage(complete: bool, reason: &str) -> Value {
    json!({"state": if complete { "complete" } else { "incomplete" }, "reason": reason})
}

pub(crate) fn execute(r: &Reader) -> Result<Map<String, Value>, ErrorCode> {
    if let Some(s) = &r.supervised {
        return Ok(execute_supervised(r, s));
    }
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

/// Work state from a supervisor's record: the foreground from the event stream and the agent's
/// exit, the aggregate from the census of the processes it left, freshness from the record's
/// time. A supervisor that stopped writing while it still supervised is gone: `unknown`.
fn execute_supervised(r: &Reader, s: &Supervised) -> Map<String, Value> {
    let rec = &s.record;
    let current = s.current(r.now_ms);
    let live = s.live(r.now_ms);
    let foreground = match (rec.foreground, current) {
        (Foreground::Running, false) => "unknown",
        (Foreground::Running, true) => match rec.phase {
            Phase::Running => "running",
            Phase::WaitingOnTool => "waiting",
            Phase::Retrying => "retrying",
            Phase::Compacting => "compacting",
            // The run ended in the stream; the process has not exited yet.
            Phase::Ended => "finishing",
        },
        (Foreground::Completed, _) => match r.run.run.status {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Running | RunStatus::Unknown => "unknown",
        },
        (Foreground::Failed, _) => "failed",
        (Foreground::Cancelled, _) => "cancelled",
        (Foreground::Killed, _) => "unknown",
    };
    let bg = &rec.background;
    // Background coverage holds while the census is complete and either current (the supervisor
    // is watching) or final with nothing left alive.
    let background_complete = bg.census_complete && current && (live || bg.active == 0);
    let children_running = if current { bg.active } else { 0 };
    let aggregate = if current && (rec.foreground == Foreground::Running || bg.active > 0) {
        "running"
    } else if foreground == "completed" && background_complete && bg.active == 0 {
        "completed"
    } else {
        "unknown"
    };
    let session_complete =
        r.session.branch_complete && r.session.malformed_lines.is_empty() && !r.session.torn;
    let mut m = Map::new();
    m.insert(
        "foreground".into(),
        json!({"state": foreground, "source": "supervisor", "exit": rec.exit}),
    );
    m.insert(
        "aggregate".into(),
        json!({"state": aggregate, "children": [], "failedChildren": 0, "cancelledChildren": 0,
               "unknownChildren": if background_complete { 0 } else { 1 },
               "runningChildren": children_running,
               "backgroundProcesses": if current { Some(bg.active) } else { None }}),
    );
    m.insert(
        "coverage".into(),
        json!({
            "session": coverage(session_complete, if session_complete {
                "the session file was read to its end without malformed or torn lines"
            } else {
                "malformed or torn lines, or a broken parent chain, in the session file"
            }),
            "subagents": coverage(false, "extensions can run agents inside Pi's own process; runread cannot see them"),
            "supervisor": coverage(current, if current {
                "runread run supervised the agent and its record is current"
            } else {
                "the supervisor stopped reporting while the agent ran"
            }),
            "queue": coverage(current, "queued prompts come from the agent's event stream"),
            "background": coverage(background_complete, if background_complete {
                "every process the agent started is counted (runread is their subreaper)"
            } else if !bg.census_complete {
                "the process census was incomplete"
            } else {
                "processes the agent left are no longer watched"
            }),
        }),
    );
    m.insert("observedAt".into(), json!(rfc3339(rec.updated_at_ms)));
    m.insert("fresh".into(), json!(current));
    m.insert("live".into(), json!(live));
    // Subagent coverage is never complete, so neither is the confirmation of all work.
    m.insert("completionConfirmed".into(), json!(false));
    m.insert("wholeMachineIdleConfirmed".into(), json!(false));
    m.insert("evidence".into(), json!("supervised"));
    m
}
