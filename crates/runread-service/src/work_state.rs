//! `read_work_state`: the run's foreground state kept apart from the aggregate over its explicit
//! children, with per-kind coverage and freshness. Passive evidence says honestly what a session
//! file cannot show.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use runread_core::limits::WORK_STATE_FRESH_MS;
use runread_core::timefmt::rfc3339;
use runread_core::{ErrorCode, Target};
use runread_sessions::RunStatus;
use runread_store::{Foreground, Phase, RunRecord, SessionRecord};

use runread_sessions::records::CHILDREN_UNOBSERVED_PASSIVE;
use runread_sessions::{Agent, ChildRecord, LineRef, Records};

use crate::Service;
use crate::adapters::{AdmissionContext, ToolAdmission, ToolRules};
use crate::source::Source;
use crate::supervised::Supervised;

pub(crate) struct ReadWorkState;

impl ToolRules for ReadWorkState {
    type Args = Target;
    type Reader = Reader;

    fn admit(
        at: &AdmissionContext<'_>,
        target: &Target,
    ) -> Result<ToolAdmission<Reader>, ErrorCode> {
        let g = at.run(target)?;
        let run = &g.run;
        let reader = Reader {
            supervised: Supervised::observe(at.svc, run).map_err(Service::unavailable)?,
            children: child_evidence(at, run)?,
            run: run.clone(),
            session: at.session(target)?,
            now_ms: at.now_ms,
        };
        Ok(g.with(reader))
    }

    fn execute(_target: Target, reader: &Reader) -> Result<Map<String, Value>, ErrorCode> {
        Ok(match &reader.supervised {
            Some(s) => execute_supervised(reader, s),
            None => execute_passive(reader),
        })
    }
}

/// The `aggregate` feature's reader: the run, its session record, the time of the read.
pub(crate) struct Reader {
    pub run: RunRecord,
    pub session: SessionRecord,
    pub now_ms: i64,
    /// The supervisor's record, when `runread run` supervised the run.
    pub supervised: Option<Supervised>,
    pub children: ChildEvidence,
}

/// What the agent's records showed at admission of the run's explicit child agents.
pub(crate) enum ChildEvidence {
    /// The agent keeps no records of child agents (see `Records::child_records`).
    NotKept,
    /// The run's own lines no longer read back as ingested: its children are not known.
    SourceChanged,
    /// One per child the run started, in order, with its record (`None`: it has none).
    Records(Vec<Option<ChildRecord>>),
}

/// Admission's read of the run's children, for an agent whose child agents leave records: the
/// run's lines that call tools, read back from the session file as ingested, and the records the
/// agent keeps beside it.
fn child_evidence(at: &AdmissionContext<'_>, run: &RunRecord) -> Result<ChildEvidence, ErrorCode> {
    if !Records::of(run.agent).child_records {
        return Ok(ChildEvidence::NotKept);
    }
    let lines: HashSet<u64> = run.run.message_lines.iter().copied().collect();
    let tool_call_lines: Vec<LineRef> = at
        .svc
        .store
        .entries(&run.target.session_id, run.target.generation)
        .map_err(Service::unavailable)?
        .into_iter()
        .filter(|e| e.has_tool_call && lines.contains(&e.line))
        .filter_map(|e| e.line_ref())
        .collect();
    let source = Source::of(run);
    let read = source.open().and_then(|opened| {
        tool_call_lines
            .iter()
            .map(|line| opened.line(line))
            .collect::<Result<Vec<_>, _>>()
    });
    let Ok(bytes) = read else {
        return Ok(ChildEvidence::SourceChanged);
    };
    let path = std::path::Path::new(&run.session_path);
    Ok(
        match runread_sessions::records::children(run.agent, path, &run.target.session_id, &bytes) {
            Some(records) => ChildEvidence::Records(records),
            None => ChildEvidence::NotKept,
        },
    )
}

/// What the session's records show of the run's explicit child agents. `None`: the agent keeps
/// no such records (Pi): child agents are not observed.
struct Children {
    /// One per child: `completed`, `running` or `unknown`.
    states: Vec<&'static str>,
    /// Every child the run started has its record.
    complete: bool,
    reason: &'static str,
}

/// The run's explicit children as far as its agent's records show them: each child that says it
/// finished is completed; one that does not is running while its transcript was written within
/// the freshness window, else unknown. `None` for an agent that keeps no such records.
fn children_of(r: &Reader) -> Option<Children> {
    let records = match &r.children {
        ChildEvidence::NotKept => return None,
        ChildEvidence::SourceChanged => {
            return Some(Children {
                states: vec![],
                complete: false,
                reason: "the session file no longer reads back as ingested",
            });
        }
        ChildEvidence::Records(records) => records,
    };
    let states: Vec<&'static str> = records
        .iter()
        .map(|rec| match rec {
            Some(rec) if rec.finished => "completed",
            Some(rec) => {
                // Its transcript written lately: the child still works.
                let recent = rec.transcript_modified_ns.is_some_and(|ns| {
                    r.now_ms.saturating_sub(ns / 1_000_000) <= WORK_STATE_FRESH_MS
                });
                if recent { "running" } else { "unknown" }
            }
            None => "unknown",
        })
        .collect();
    let all_recorded = records.iter().all(Option::is_some);
    Some(Children {
        states,
        complete: all_recorded,
        reason: if all_recorded {
            "every subagent the run started has its record beside the session file"
        } else {
            "a subagent the run started has no record beside the session file"
        },
    })
}

impl Children {
    fn count(&self, state: &str) -> usize {
        self.states.iter().filter(|x| **x == state).count()
    }

    fn listed(&self) -> Vec<Value> {
        self.states
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"kind": "subagent", "index": i, "state": s}))
            .collect()
    }

    /// Every child is accounted for and none is still working or unknown.
    fn all_done(&self) -> bool {
        self.complete && self.count("running") == 0 && self.count("unknown") == 0
    }
}

/// Why an agent's child agents are not covered, when its records show none.
fn unobserved_children(agent: Agent, supervised: bool) -> &'static str {
    if supervised {
        Records::of(agent).children_unobserved_supervised
    } else {
        CHILDREN_UNOBSERVED_PASSIVE
    }
}

/// Whether the session file was read whole, and its coverage saying so.
fn session_coverage(r: &Reader) -> (bool, Value) {
    let complete =
        r.session.branch_complete && r.session.malformed_lines.is_empty() && !r.session.torn;
    let reason = if complete {
        "the session file was read to its end without malformed or torn lines"
    } else {
        "malformed or torn lines, or a broken parent chain, in the session file"
    };
    (complete, coverage(complete, reason))
}

fn coverage(complete: bool, reason: &str) -> Value {
    json!({"state": if complete { "complete" } else { "incomplete" }, "reason": reason})
}

/// Work state from the session file alone.
fn execute_passive(r: &Reader) -> Map<String, Value> {
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
    let children = children_of(r);
    let mut m = Map::new();
    m.insert(
        "foreground".into(),
        json!({"state": foreground, "source": "session_file"}),
    );
    let (aggregate, subagents) = match &children {
        // Passive evidence of an agent that keeps no child records observes no children; an
        // aggregate over unobserved kinds is not known.
        None => (
            json!({"state": "unknown", "children": [], "failedChildren": 0, "cancelledChildren": 0,
                   "unknownChildren": 0, "runningChildren": 0}),
            coverage(false, unobserved_children(r.run.agent, false)),
        ),
        Some(c) => {
            let running = c.count("running");
            let unknown = c.count("unknown");
            // The aggregate over what the records show: children still working keep it running.
            // Processes and queued prompts stay unobserved (their coverage says so).
            let state = if !fresh {
                "unknown"
            } else if running > 0 || matches!(foreground, "running" | "waiting") {
                "running"
            } else if unknown > 0 || !c.complete {
                "unknown"
            } else {
                foreground
            };
            (
                json!({"state": state, "children": c.listed(), "failedChildren": 0,
                       "cancelledChildren": 0, "unknownChildren": unknown,
                       "runningChildren": running}),
                coverage(c.complete, c.reason),
            )
        }
    };
    m.insert("aggregate".into(), aggregate);
    m.insert(
        "coverage".into(),
        json!({
            "session": session_coverage(r).1,
            "subagents": subagents,
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
    m
}

/// Work state from a supervisor's record: the foreground from the event stream and the agent's
/// exit, the aggregate from the census of the processes it left, freshness from the record's
/// time. A supervisor that stopped writing while it still supervised is gone: `unknown`.
fn execute_supervised(r: &Reader, s: &Supervised) -> Map<String, Value> {
    let rec = &s.record;
    let current = s.current(r.now_ms);
    let live = s.live(r.now_ms);
    let foreground = supervised_foreground(rec, current, r.run.run.status);
    let bg = &rec.background;
    // Background coverage holds while the census is complete and either current (the supervisor
    // is watching) or final with nothing left alive.
    let background_complete = bg.census_complete && current && (live || bg.active == 0);
    let children = children_of(r);
    let subagents_running = children.as_ref().map_or(0, |c| c.count("running"));
    let subagents_unknown = children.as_ref().map_or(0, |c| c.count("unknown"));
    let subagents_done = children.as_ref().is_some_and(Children::all_done);
    let children_running =
        u64::from(if current { bg.active } else { 0 }) + subagents_running as u64;
    let aggregate = if current
        && (rec.foreground == Foreground::Running || bg.active > 0 || subagents_running > 0)
    {
        "running"
    } else if foreground == "completed"
        && background_complete
        && bg.active == 0
        && (children.is_none() || subagents_done)
    {
        // An agent whose records show no children: what is unobserved is in coverage.
        "completed"
    } else {
        "unknown"
    };
    let (session_complete, session) = session_coverage(r);
    let mut m = Map::new();
    m.insert(
        "foreground".into(),
        json!({"state": foreground, "source": "supervisor", "exit": rec.exit}),
    );
    m.insert(
        "aggregate".into(),
        json!({"state": aggregate,
               "children": children.as_ref().map(Children::listed).unwrap_or_default(),
               "failedChildren": 0, "cancelledChildren": 0,
               "unknownChildren": usize::from(!background_complete) + subagents_unknown,
               "runningChildren": children_running,
               "backgroundProcesses": if current { Some(bg.active) } else { None }}),
    );
    let subagents = match &children {
        Some(c) => coverage(c.complete, c.reason),
        None => coverage(false, unobserved_children(r.run.agent, true)),
    };
    m.insert(
        "coverage".into(),
        supervised_coverage(
            session,
            subagents,
            current,
            background_complete,
            bg.census_complete,
        ),
    );
    m.insert("observedAt".into(), json!(rfc3339(rec.updated_at_ms)));
    m.insert("fresh".into(), json!(current));
    m.insert("live".into(), json!(live));
    // All work is confirmed done only when every kind of it is covered and done: Pi's and Codex's
    // subagents are never covered, Claude Code's are when each has its finished record.
    let confirmed = aggregate == "completed"
        && subagents_done
        && background_complete
        && session_complete
        && current;
    m.insert("completionConfirmed".into(), json!(confirmed));
    m.insert("wholeMachineIdleConfirmed".into(), json!(false));
    m.insert("evidence".into(), json!("supervised"));
    m
}

/// The foreground state a supervisor's record shows: the stream's phase while the record is
/// current and the agent runs, the agent's exit (and the session's status) once it has exited.
fn supervised_foreground(
    rec: &runread_store::SupervisedRun,
    current: bool,
    status: RunStatus,
) -> &'static str {
    match (rec.foreground, current) {
        (Foreground::Running, false) => "unknown",
        (Foreground::Running, true) => match rec.phase {
            Phase::Running => "running",
            Phase::WaitingOnTool => "waiting",
            Phase::Retrying => "retrying",
            Phase::Compacting => "compacting",
            // The run ended in the stream; the process has not exited yet.
            Phase::Ended => "finishing",
        },
        (Foreground::Completed, _) => match status {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Running | RunStatus::Unknown => "unknown",
        },
        (Foreground::Failed, _) => "failed",
        (Foreground::Cancelled, _) => "cancelled",
        (Foreground::Killed, _) => "unknown",
    }
}

/// The coverage of a supervised run's work state: what each kind of work's evidence covers.
fn supervised_coverage(
    session: Value,
    subagents: Value,
    current: bool,
    background_complete: bool,
    census_complete: bool,
) -> Value {
    json!({
        "session": session,
        "subagents": subagents,
        "supervisor": coverage(current, if current {
            "runread run supervised the agent and its record is current"
        } else {
            "the supervisor stopped reporting while the agent ran"
        }),
        "queue": coverage(current, "queued prompts come from the agent's event stream"),
        "background": coverage(background_complete, if background_complete {
            "every process the agent started is counted (runread is their subreaper)"
        } else if !census_complete {
            "the process census was incomplete"
        } else {
            "processes the agent left are no longer watched"
        }),
    })
}
