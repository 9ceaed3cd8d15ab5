//! `read_work_state`: the run's foreground state kept apart from the aggregate over its explicit
//! children, with per-kind coverage and freshness. Passive evidence says honestly what a session
//! file cannot show.

use std::sync::LazyLock;

use serde_json::Value;

use runread_core::Feature;
use runread_core::envelope::Trust;

use crate::tools::adapters::ToolDef;
use crate::tools::schema::{self};

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use runread_core::limits::WORK_STATE_FRESH_MS;
use runread_core::timefmt::rfc3339;
use runread_core::{ErrorCode, Target};
use runread_sessions::RunStatus;
use runread_store::{CensusGap, Foreground, Phase, RunRecord, SessionRecord};

use runread_sessions::records::CHILDREN_UNOBSERVED_PASSIVE;
use runread_sessions::{Agent, ChildRecord, LineRef, Records};

use crate::evidence::publication::Basis;
use crate::evidence::supervised::Supervised;
use crate::evidence::values::Coverage;
use crate::tools::adapters::{AdmissionContext, ToolAdmission, ToolRules};
use runread_gate::ReceiptFacts;

pub(crate) struct ReadWorkState;

impl ToolRules for ReadWorkState {
    type Args = Target;
    type Reader = Reader;
    type Output = Output;

    fn admit(
        at: &AdmissionContext<'_>,
        target: &Target,
    ) -> Result<ToolAdmission<Reader>, ErrorCode> {
        let g = at.run(target)?;
        let run = &g.run;
        let reader = Reader {
            supervised: at.supervised(run)?,
            children: child_evidence(at, run)?,
            run: run.clone(),
            session: at.session(target)?,
            now_ms: at.now_ms,
        };
        Ok(g.with(reader))
    }

    fn execute(_target: Target, reader: &Reader) -> Result<Output, ErrorCode> {
        Ok(match &reader.supervised {
            Some(s) => execute_supervised(reader, s),
            None => execute_passive(reader),
        })
    }

    /// The evidence the state was read from, and whether the run's whole work is confirmed done.
    fn receipt_facts(output: &Output) -> ReceiptFacts {
        ReceiptFacts {
            evidence: Some(output.evidence.as_str()),
            state: Some(match output.completion_confirmed {
                true => "completion_confirmed",
                false => "completion_not_confirmed",
            }),
        }
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
        .entries(&run.target)?
        .into_iter()
        .filter(|e| e.has_tool_call && lines.contains(&e.line))
        .filter_map(|e| e.line_ref())
        .collect();
    let source = at.source(run)?;
    let Ok(opened) = source.open() else {
        return Ok(ChildEvidence::SourceChanged);
    };
    // A run read from the owner's kept copy: its subagents' records as they were kept.
    if let Some(copy) = opened.sealed_copy().filter(|c| c.is_kept()) {
        return Ok(match copy.children() {
            Some(records) => ChildEvidence::Records(records.to_vec()),
            None => ChildEvidence::NotKept,
        });
    }
    let read = tool_call_lines
        .iter()
        .map(|line| opened.line(line))
        .collect::<Result<Vec<_>, _>>();
    let Ok(bytes) = read else {
        return Ok(ChildEvidence::SourceChanged);
    };
    let path = std::path::Path::new(&run.session_path);
    Ok(
        match runread_sessions::agents::children(run.agent, path, &run.target.session_id, &bytes) {
            Some(records) => ChildEvidence::Records(records),
            None => ChildEvidence::NotKept,
        },
    )
}

/// `read_work_state`'s output. The fields only a supervisor's record gives (`foreground.exit`,
/// `aggregate.backgroundProcesses`, `live`) are absent from passive evidence, and may be null in
/// a supervised one: hence `Option<Option<_>>` there.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Output {
    pub foreground: ForegroundState,
    pub aggregate: Aggregate,
    pub coverage: Coverages,
    pub observed_at: String,
    pub fresh: bool,
    /// Absent from passive evidence; never null.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub live: Option<bool>,
    pub completion_confirmed: bool,
    /// runread never claims the whole machine idle: always false.
    #[schemars(extend("const" = false))]
    pub whole_machine_idle_confirmed: bool,
    pub evidence: Basis,
}

/// A state of work: the foreground's, the aggregate's or one child's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkState {
    Running,
    Waiting,
    Retrying,
    Compacting,
    Finishing,
    Completed,
    Failed,
    Cancelled,
    Unknown,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ForegroundState {
    pub state: WorkState,
    pub source: ForegroundSource,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<Option<String>>,
}

/// Where the foreground's state was read.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForegroundSource {
    SessionFile,
    Supervisor,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Aggregate {
    pub state: WorkState,
    /// Each child as runread observed it: its kind, its place and its state.
    pub children: Vec<Child>,
    pub failed_children: u64,
    pub cancelled_children: u64,
    pub unknown_children: u64,
    pub running_children: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_processes: Option<Option<u32>>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Child {
    pub kind: ChildKind,
    pub index: usize,
    pub state: WorkState,
}

/// The kinds of explicit child runread observes.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChildKind {
    Subagent,
}

/// One kind of work's coverage and why.
#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Covered {
    pub state: Coverage,
    pub reason: String,
}

/// What each kind of work's evidence covers.
#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Coverages {
    pub session: Covered,
    pub subagents: Covered,
    pub supervisor: Covered,
    pub queue: Covered,
    pub background: Covered,
}

impl Coverages {
    /// Each kind of work by its name on the wire, in the output's order.
    pub fn kinds(&self) -> [(&'static str, &Covered); 5] {
        [
            ("session", &self.session),
            ("subagents", &self.subagents),
            ("supervisor", &self.supervisor),
            ("queue", &self.queue),
            ("background", &self.background),
        ]
    }
}

/// What the session's records show of the run's explicit child agents. `None`: the agent keeps
/// no such records (Pi): child agents are not observed.
struct Children {
    /// One per child: completed, running or unknown.
    states: Vec<WorkState>,
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
    let states = records
        .iter()
        .map(|rec| match rec {
            Some(rec) if rec.finished => WorkState::Completed,
            Some(rec) => {
                // Its transcript written lately: the child still works.
                let recent = rec.transcript_modified_ns.is_some_and(|ns| {
                    r.now_ms.saturating_sub(ns / 1_000_000) <= WORK_STATE_FRESH_MS
                });
                if recent {
                    WorkState::Running
                } else {
                    WorkState::Unknown
                }
            }
            None => WorkState::Unknown,
        })
        .collect();
    let all_recorded = records.iter().all(Option::is_some);
    Some(Children {
        states,
        complete: all_recorded,
        reason: if all_recorded {
            "every subagent the run started left a record of its own (beside the session file, or in the agent's database)"
        } else {
            "a subagent the run started left no record of its own"
        },
    })
}

impl Children {
    fn count(&self, state: WorkState) -> u64 {
        self.states.iter().filter(|x| **x == state).count() as u64
    }

    fn listed(&self) -> Vec<Child> {
        self.states
            .iter()
            .enumerate()
            .map(|(index, &state)| Child {
                kind: ChildKind::Subagent,
                index,
                state,
            })
            .collect()
    }

    /// Every child is accounted for and none is still working or unknown.
    fn all_done(&self) -> bool {
        self.complete && self.count(WorkState::Running) == 0 && self.count(WorkState::Unknown) == 0
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
fn session_coverage(r: &Reader) -> (bool, Covered) {
    let complete =
        r.session.branch_complete && r.session.malformed_lines.is_empty() && !r.session.torn;
    let reason = if complete {
        "the session file was read to its end without malformed or torn lines"
    } else {
        "malformed or torn lines, or a broken parent chain, in the session file"
    };
    (complete, coverage(complete, reason))
}

fn coverage(complete: bool, reason: &'static str) -> Covered {
    Covered {
        state: if complete {
            Coverage::Complete
        } else {
            Coverage::Incomplete
        },
        reason: reason.to_owned(),
    }
}

/// The aggregate over the run's children as its records show them, and the coverage of
/// subagents: `foreground` is the run's own state, `fresh` whether what was seen is recent enough
/// to be a claim.
fn passive_aggregate(r: &Reader, foreground: WorkState, fresh: bool) -> (Aggregate, Covered) {
    let Some(c) = children_of(r) else {
        // Passive evidence of an agent that keeps no child records observes no children; an
        // aggregate over unobserved kinds is not known.
        return (
            Aggregate {
                state: WorkState::Unknown,
                children: vec![],
                failed_children: 0,
                cancelled_children: 0,
                unknown_children: 0,
                running_children: 0,
                background_processes: None,
            },
            coverage(false, unobserved_children(r.run.agent, false)),
        );
    };
    let running = c.count(WorkState::Running);
    let unknown = c.count(WorkState::Unknown);
    // The aggregate over what the records show: children still working keep it running.
    // Processes and queued prompts stay unobserved (their coverage says so).
    let state = if !fresh {
        WorkState::Unknown
    } else if running > 0 || matches!(foreground, WorkState::Running | WorkState::Waiting) {
        WorkState::Running
    } else if unknown > 0 || !c.complete {
        WorkState::Unknown
    } else {
        foreground
    };
    (
        Aggregate {
            state,
            children: c.listed(),
            failed_children: 0,
            cancelled_children: 0,
            unknown_children: unknown,
            running_children: running,
            background_processes: None,
        },
        coverage(c.complete, c.reason),
    )
}

/// Work state from the session file alone.
fn execute_passive(r: &Reader) -> Output {
    let observed = r.session.ingested_at_ms;
    let fresh = r.now_ms.saturating_sub(observed) <= WORK_STATE_FRESH_MS;
    let seen = match r.run.run.status {
        RunStatus::Completed => WorkState::Completed,
        RunStatus::Failed => WorkState::Failed,
        RunStatus::Cancelled => WorkState::Cancelled,
        RunStatus::Running if r.run.run.waiting_on_tool => WorkState::Waiting,
        RunStatus::Running => WorkState::Running,
        RunStatus::Unknown => WorkState::Unknown,
    };
    // Older than the freshness window: what was seen is no longer a claim.
    let foreground = if fresh { seen } else { WorkState::Unknown };
    let (aggregate, subagents) = passive_aggregate(r, foreground, fresh);
    Output {
        foreground: ForegroundState {
            state: foreground,
            source: ForegroundSource::SessionFile,
            exit: None,
        },
        aggregate,
        coverage: Coverages {
            session: session_coverage(r).1,
            subagents,
            supervisor: coverage(false, "not a supervised run"),
            queue: coverage(false, "a session file does not show queued prompts"),
            background: coverage(false, "a session file does not show processes"),
        },
        observed_at: rfc3339(observed),
        fresh,
        live: None,
        completion_confirmed: false,
        whole_machine_idle_confirmed: false,
        evidence: Basis::SessionFile,
    }
}

/// Work state from a supervisor's record: the foreground from the event stream and the agent's
/// exit, the aggregate from the census of the processes it left, freshness from the record's
/// time. A supervisor that stopped writing while it still supervised is gone: `unknown`.
fn execute_supervised(r: &Reader, s: &Supervised) -> Output {
    let rec = &s.record;
    let current = s.current(r.now_ms);
    let live = s.live(r.now_ms);
    let status = supervised_status(&r.run, &rec.proof);
    let foreground = supervised_foreground(rec, current, status);
    let bg = &rec.background;
    // Background coverage holds while the census is complete and either current (the supervisor
    // is watching) or final with nothing left alive.
    let background_complete = bg.census_complete && current && (live || bg.active == 0);
    let children = children_of(r);
    let subagents_running = children.as_ref().map_or(0, |c| c.count(WorkState::Running));
    let subagents_unknown = children.as_ref().map_or(0, |c| c.count(WorkState::Unknown));
    let subagents_done = children.as_ref().is_some_and(Children::all_done);
    let aggregate = if current
        && (rec.foreground == Foreground::Running || bg.active > 0 || subagents_running > 0)
    {
        WorkState::Running
    } else if foreground == WorkState::Completed
        && background_complete
        && bg.active == 0
        && (children.is_none() || subagents_done)
    {
        // An agent whose records show no children: what is unobserved is in coverage.
        WorkState::Completed
    } else {
        WorkState::Unknown
    };
    let (session_complete, session) = session_coverage(r);
    let subagents = match &children {
        Some(c) => coverage(c.complete, c.reason),
        None => coverage(false, unobserved_children(r.run.agent, true)),
    };
    // All work is confirmed done only when every kind of it is covered and done: Pi's and Codex's
    // subagents are never covered, Claude Code's are when each has its finished record.
    let confirmed = aggregate == WorkState::Completed
        && subagents_done
        && background_complete
        && session_complete
        && current;
    Output {
        foreground: ForegroundState {
            state: foreground,
            source: ForegroundSource::Supervisor,
            exit: Some(rec.exit.clone()),
        },
        aggregate: Aggregate {
            state: aggregate,
            children: children.as_ref().map(Children::listed).unwrap_or_default(),
            failed_children: 0,
            cancelled_children: 0,
            unknown_children: u64::from(!background_complete) + subagents_unknown,
            running_children: u64::from(if current { bg.active } else { 0 }) + subagents_running,
            background_processes: Some(current.then_some(bg.active)),
        },
        coverage: supervised_coverage(
            session,
            subagents,
            current,
            background_complete,
            (bg.census_complete, bg.census_gap),
        ),
        observed_at: rfc3339(rec.updated_at_ms),
        fresh: current,
        live: Some(live),
        completion_confirmed: confirmed,
        whole_machine_idle_confirmed: false,
        evidence: Basis::Supervised,
    }
}

/// The run's status for a supervisor's record: the session file's, but for an agent that records
/// no end of a response, whose run is `unknown` with its last model message as a candidate: the
/// supervisor's journaled proof of that candidate says the run answered.
fn supervised_status(run: &RunRecord, proof: &runread_store::Proof) -> RunStatus {
    let proven_candidate = matches!(proof, runread_store::Proof::Journaled { .. })
        && Records::of(run.agent)
            .unrecorded_end
            .is_some_and(|why| run.run.unknown_reason.as_deref() == Some(why));
    match run.run.status {
        RunStatus::Unknown if proven_candidate => RunStatus::Completed,
        other => other,
    }
}

/// The foreground state a supervisor's record shows: the stream's phase while the record is
/// current and the agent runs, the agent's exit (and the session's status) once it has exited.
fn supervised_foreground(
    rec: &runread_store::SupervisedRun,
    current: bool,
    status: RunStatus,
) -> WorkState {
    match (rec.foreground, current) {
        (Foreground::Running, false) => WorkState::Unknown,
        (Foreground::Running, true) => match rec.phase {
            Phase::Running => WorkState::Running,
            Phase::WaitingOnTool => WorkState::Waiting,
            Phase::Retrying => WorkState::Retrying,
            Phase::Compacting => WorkState::Compacting,
            // The run ended in the stream; the process has not exited yet.
            Phase::Ended => WorkState::Finishing,
        },
        (Foreground::Completed, _) => match status {
            RunStatus::Completed => WorkState::Completed,
            RunStatus::Failed => WorkState::Failed,
            RunStatus::Cancelled => WorkState::Cancelled,
            RunStatus::Running | RunStatus::Unknown => WorkState::Unknown,
        },
        (Foreground::Failed, _) => WorkState::Failed,
        (Foreground::Cancelled, _) => WorkState::Cancelled,
        (Foreground::Killed, _) => WorkState::Unknown,
    }
}

/// The coverage of a supervised run's work state: what each kind of work's evidence covers.
fn supervised_coverage(
    session: Covered,
    subagents: Covered,
    current: bool,
    background_complete: bool,
    (census_complete, census_gap): (bool, Option<CensusGap>),
) -> Coverages {
    Coverages {
        session,
        subagents,
        supervisor: coverage(
            current,
            if current {
                "runread run supervised the agent and its record is current"
            } else {
                "the supervisor stopped reporting while the agent ran"
            },
        ),
        queue: coverage(current, "queued prompts come from the agent's event stream"),
        background: coverage(
            background_complete,
            if background_complete {
                "every process the agent started is counted (runread is their subreaper)"
            } else if census_gap == Some(CensusGap::NoSubreaper) {
                "this system has no child subreaper (macOS): a process that detaches from the agent \
                 cannot be followed"
            } else if !census_complete {
                "the process census was incomplete"
            } else {
                "processes the agent left are no longer watched"
            },
        ),
    }
}

pub(crate) const NAME: &str = "read_work_state";

/// `read_work_state`: its definition, its rules and its pinned digest.
pub(crate) static DEF: ToolDef = ToolDef {
    name: NAME,
    title: "Read a run's work state",
    description: "The run's foreground state kept apart from the aggregate over its explicit children, with \
                  coverage per kind and freshness. A run started with `runread run` is live: running, waiting \
                  on a tool, retrying or compacting, and processes it left behind keep the aggregate running. \
                  Claude Code's subagents are children with their state, from the records Claude Code keeps \
                  beside the session. completionConfirmed only with full, fresh coverage; whole machine \
                  idleness is never claimed.",
    feature: Some(Feature::Aggregate),
    trust: Trust::Medium,
    version: 5,
    input_schema: &schema::TARGET_ONLY_INPUT,
    output_schema: &OUTPUT_SCHEMA,
    rules: &ReadWorkState,
    pinned: "2d2298c02b41463787eb690e238fa87ef3ccc908051e761c39bdde4a07a2ead9",
};

static OUTPUT_SCHEMA: LazyLock<Value> = LazyLock::new(schema::output_schema::<Output>);

#[cfg(test)]
mod tests {
    use super::*;

    /// `kinds()` names each kind as it serializes, in order: the console's rows are the wire's.
    #[test]
    fn coverage_kinds_are_named_as_they_serialize() {
        let c = Coverages {
            session: coverage(true, "a"),
            subagents: coverage(false, "b"),
            supervisor: coverage(true, "c"),
            queue: coverage(false, "d"),
            background: coverage(true, "e"),
        };
        let json = serde_json::to_value(&c).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let named: Vec<&str> = c.kinds().iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, named);
        for (k, covered) in c.kinds() {
            assert_eq!(json[k]["reason"], covered.reason.as_str());
        }
    }
}
