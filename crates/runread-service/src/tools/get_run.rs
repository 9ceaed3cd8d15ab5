//! `get_run`: a low-sensitivity status projection. Nothing else — no request ids, paths,
//! arguments, errors or process ids — ever appears in its output.

use std::sync::LazyLock;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::envelope::{LABEL_KEYS, Trust};

use crate::tools::adapters::ToolDef;
use crate::tools::schema::{self};
use runread_gate::ReceiptFacts;

use schemars::{JsonSchema, Schema};
use serde::Serialize;

use runread_core::{ErrorCode, Target};
use runread_store::RunRecord;

use crate::tools::adapters::{AdmissionContext, ToolAdmission, ToolRules};

pub(crate) struct GetRun;

/// The `status` feature's reader: the admitted run and whether a supervisor recorded it, or
/// nothing.
pub(crate) struct Reader {
    pub run: Option<(RunRecord, bool)>,
}

impl ToolRules for GetRun {
    type Args = Target;
    type Reader = Reader;
    type Output = Output;

    /// Never refused after its arguments: missing, elsewhere, not granted, expired, stale are
    /// all the same `{found:false}`.
    fn admit(
        at: &AdmissionContext<'_>,
        target: &Target,
    ) -> Result<ToolAdmission<Reader>, ErrorCode> {
        Ok(match at.run(target) {
            Ok(g) => {
                let supervised = at.supervised(&g.run)?.is_some();
                let reader = Reader {
                    run: Some((g.run.clone(), supervised)),
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

    fn execute(_target: Target, reader: &Reader) -> Result<Output, ErrorCode> {
        Ok(status(reader))
    }

    /// The run's origin and status, or `not_found`.
    fn receipt_facts(output: &Output) -> ReceiptFacts {
        match &output.run {
            Some(s) => s.receipt_facts(Some(s.status.as_str())),
            None => ReceiptFacts {
                evidence: None,
                state: Some(NOT_FOUND),
            },
        }
    }
}

/// The state a receipt records of a call that found no run it may read.
pub(crate) const NOT_FOUND: &str = "not_found";

/// `get_run`'s output: `{found:false}`, or the run's status.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, transform = found_carries_status)]
pub(crate) struct Output {
    found: bool,
    #[serde(flatten)]
    run: Option<Status>,
}

/// A found run's status, as `get_run` and `wait_for_run` report it.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(crate) struct Status {
    status: runread_sessions::RunStatus,
    revision: Revision,
    event_sequence: u64,
    created_at: Option<String>,
    started_at: Option<String>,
    finished_at: Option<String>,
    origin: Origin,
}

impl Status {
    /// What a receipt records of a result carrying this status: its origin as the evidence, and
    /// `state`.
    pub(crate) fn receipt_facts(&self, state: Option<&'static str>) -> ReceiptFacts {
        ReceiptFacts {
            evidence: Some(self.origin.as_str()),
            state,
        }
    }
}

/// Where a run's evidence comes from: its session file alone (`passive`), or also a supervisor
/// that started it (`runread run`) — the same word `read_final_answer`'s `evidence` says.
#[derive(Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Origin {
    Passive,
    Supervised,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::Passive => "passive",
            Origin::Supervised => "supervised",
        }
    }
}

/// The revision identity of a run's target.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Revision {
    instance: String,
    revision: u64,
    generation: u64,
}

fn status(reader: &Reader) -> Output {
    Output {
        found: reader.run.is_some(),
        run: reader.run.as_ref().map(|(r, s)| projection(r, *s)),
    }
}

/// The sequence of a run's last event: the same numbering as `read_history`.
pub(crate) fn event_sequence(r: &RunRecord) -> u64 {
    let events = r.run.message_lines.len() as u64;
    r.run.first_sequence + events.saturating_sub(1)
}

/// The low-sensitivity projection of a found run; `supervised`: a supervisor recorded it.
pub(crate) fn projection(r: &RunRecord, supervised: bool) -> Status {
    // The same numbering as `read_history`: the sequence of the run's last event.
    // The agent wrote these: what leaves is runread's own rendering of the instant they name (or
    // null), never the agent's string, so this projection stays runread's.
    let started = runread_core::timefmt::agent_time(r.run.started_at.as_deref());
    Status {
        status: r.run.status,
        revision: Revision {
            instance: r.target.instance.clone(),
            revision: r.target.revision,
            generation: r.target.generation,
        },
        event_sequence: event_sequence(r),
        created_at: started.clone(),
        started_at: started,
        finished_at: runread_core::timefmt::agent_time(r.run.ended_at.as_deref()),
        origin: if supervised {
            Origin::Supervised
        } else {
            Origin::Passive
        },
    }
}

pub(crate) const NAME: &str = "get_run";

/// `get_run`: its definition, its rules and its pinned digest.
pub(crate) static DEF: ToolDef = ToolDef {
    name: NAME,
    title: "Get a run's status",
    description: "Low-sensitivity status of one granted run: whether it is found, its status, revision \
                  identity, event sequence, times and origin. A run that is missing, elsewhere or not granted \
                  gives the same {found:false}.",
    feature: Some(Feature::Status),
    trust: Trust::Medium,
    version: 2,
    input_schema: &schema::TARGET_ONLY_INPUT,
    output_schema: &OUTPUT_SCHEMA,
    rules: &GetRun,
    pinned: "000e9738161445580aef991fa7c38ef0d654623059d9ee5632b51a2d3b90eca5",
};

static OUTPUT_SCHEMA: LazyLock<Value> = LazyLock::new(schema::output_schema::<Output>);

/// What `found` says of the output it is in (`get_run`'s and `wait_for_run`'s, which flatten an
/// optional [`Status`]): a found run carries every field of its status; a run not found carries
/// none of them, only the output's own fields and the label's.
pub(crate) fn found_carries_status(output: &mut Schema) {
    let names = |s: &Value| -> Vec<String> {
        s.get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    };
    let status = names(&schema::output_schema::<Status>());
    let mut own: Vec<String> = names(output.as_value())
        .into_iter()
        .filter(|n| !status.contains(n))
        .collect();
    own.extend(LABEL_KEYS.map(str::to_owned));
    output.insert(
        "if".into(),
        json!({"properties": {"found": {"const": true}}}),
    );
    output.insert("then".into(), json!({ "required": status }));
    output.insert("else".into(), json!({"propertyNames": {"enum": own}}));
}
