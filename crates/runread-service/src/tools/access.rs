//! `request_access` and `wait_for_access`: a reader asks the owner for runs and learns the
//! decision ([`crate::access`]). Neither names a run nor needs a grant; neither says anything of
//! any run until the owner approved: `request_access` answers `pending` whatever exists, and
//! `wait_for_access` answers a request that is not the caller's as one that expired.
//!
//! `request_access` is the one tool whose admission writes: it files the request (bounded, and
//! an identical request still waiting answers with its own id), then the gate records the call
//! like any other, its arguments sealed. `wait_for_access` waits before the gate, as
//! `wait_for_run` does ([`crate::tools::wait::wait_for_change`]), holding a wait slot.

use std::sync::{Arc, LazyLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use runread_core::envelope::Trust;
use runread_core::limits::{
    ACCESS_DURATION_DEFAULT_SECONDS, ACCESS_DURATION_MAX_SECONDS, ACCESS_DURATION_MIN_SECONDS,
    ACCESS_LATEST_MAX, ACCESS_REASON_MAX_BYTES, ACCESS_REQUEST_ID_MAX_BYTES,
    ACCESS_WORKSPACE_MAX_BYTES, WAIT_DEFAULT_SECONDS, WAIT_MAX_SECONDS,
};
use runread_core::timefmt::rfc3339;
use runread_core::{Agent, ErrorCode, Feature, Target};
use runread_gate::ReceiptFacts;

use runread_store::changes::Change;

use crate::access::{Asked, NewRequest, Standing};
use crate::admission::KeyContext;
use crate::evidence::Reading;
use crate::evidence::values::SEARCH_QUERY_MAX_BYTES;
use crate::tools::adapters::{AdmissionContext, ExactArgs, ToolAdmission, ToolDef, ToolRules};
use crate::tools::schema;

pub(crate) const REQUEST_NAME: &str = "request_access";
pub(crate) const WAIT_NAME: &str = "wait_for_access";

/// What a request asks for when it does not say: the answer and whether the run goes on.
const FEATURES_DEFAULT: [Feature; 2] = [Feature::FinalAnswer, Feature::Status];
/// How many of the newest matching runs a request asks for when it does not say.
const LATEST_DEFAULT: u32 = 1;

/// `request_access`' exact arguments.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RequestArgs {
    agent: Option<String>,
    workspace: Option<String>,
    words: Option<String>,
    latest: Option<u32>,
    features: Option<Vec<Feature>>,
    duration_seconds: Option<u64>,
    reason: Option<String>,
}

/// A text the owner is shown: not empty, within `max` bytes.
fn text_within(text: &Option<String>, max: usize) -> bool {
    text.as_ref()
        .is_none_or(|t| !t.trim().is_empty() && t.len() <= max)
}

impl ExactArgs for RequestArgs {
    /// Every field optional, each within its bound; `words` as the owner's search takes a query.
    fn parse(args: &Value) -> Result<RequestArgs, ErrorCode> {
        let a: RequestArgs = crate::tools::adapters::optional_fields(args)?;
        let features_ok = a.features.as_ref().is_none_or(|f| {
            let mut distinct = f.clone();
            distinct.sort();
            distinct.dedup();
            !f.is_empty() && distinct.len() == f.len()
        });
        let ok = a.agent.as_deref().is_none_or(|n| Agent::parse(n).is_some())
            && text_within(&a.workspace, ACCESS_WORKSPACE_MAX_BYTES)
            && a.workspace
                .as_deref()
                .is_none_or(|w| !w.chars().any(char::is_control))
            && text_within(&a.words, SEARCH_QUERY_MAX_BYTES)
            && a.words
                .as_deref()
                .is_none_or(|w| crate::evidence::values::words(w).is_ok())
            && a.latest
                .is_none_or(|l| (1..=ACCESS_LATEST_MAX).contains(&l))
            && features_ok
            && a.duration_seconds.is_none_or(|d| {
                (ACCESS_DURATION_MIN_SECONDS..=ACCESS_DURATION_MAX_SECONDS).contains(&d)
            })
            && text_within(&a.reason, ACCESS_REASON_MAX_BYTES);
        if !ok {
            return Err(ErrorCode::InvalidArguments);
        }
        Ok(a)
    }
}

impl RequestArgs {
    fn request(&self) -> NewRequest {
        NewRequest {
            asked: Asked {
                agent: self.agent.clone(),
                workspace: self.workspace.clone(),
                words: self.words.clone(),
                reason: self.reason.clone(),
            },
            latest: self.latest.unwrap_or(LATEST_DEFAULT),
            features: self
                .features
                .clone()
                .unwrap_or_else(|| FEATURES_DEFAULT.to_vec()),
            duration_s: self
                .duration_seconds
                .unwrap_or(ACCESS_DURATION_DEFAULT_SECONDS),
        }
    }
}

/// Where a request stands, as a reader is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AccessState {
    /// Waiting for the owner.
    Pending,
    /// The owner shared runs: `targets` names them.
    Approved,
    /// The owner declined.
    Denied,
    /// Nobody decided in time (or no such request of yours).
    Expired,
}

impl AccessState {
    pub fn as_str(self) -> &'static str {
        match self {
            AccessState::Pending => "pending",
            AccessState::Approved => "approved",
            AccessState::Denied => "denied",
            AccessState::Expired => "expired",
        }
    }
}

/// `request_access`' output.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct RequestOutput {
    /// Pass it to wait_for_access.
    #[schemars(regex(pattern = r"^q-[0-9a-f]+$"))]
    pub request_id: String,
    pub state: AccessState,
    /// When the request expires if the owner has not decided by then.
    pub expires_at: String,
}

pub(crate) struct RequestAccess;

impl ToolRules for RequestAccess {
    type Args = RequestArgs;
    type Reader = RequestOutputParts;
    type Output = RequestOutput;

    /// Absent arguments are the empty object the schema names.
    fn input(args: &Value) -> Value {
        crate::tools::adapters::absent_as_empty(args)
    }

    /// No run and no grant: the request is filed (or found, when an identical one waits).
    fn admit(
        at: &AdmissionContext<'_>,
        args: &RequestArgs,
    ) -> Result<ToolAdmission<RequestOutputParts>, ErrorCode> {
        let (request_id, expires_at_ms) = at.file_access_request(&args.request())?;
        Ok(ToolAdmission {
            target: None,
            grant: None,
            run: None,
            reader: RequestOutputParts {
                request_id,
                expires_at_ms,
            },
        })
    }

    fn execute(_: RequestArgs, reader: &RequestOutputParts) -> Result<RequestOutput, ErrorCode> {
        Ok(RequestOutput {
            request_id: reader.request_id.clone(),
            state: AccessState::Pending,
            expires_at: rfc3339(reader.expires_at_ms),
        })
    }

    fn receipt_facts(_: &RequestOutput) -> ReceiptFacts {
        ReceiptFacts {
            evidence: None,
            state: Some(AccessState::Pending.as_str()),
        }
    }
}

/// The request `request_access` filed (or found).
pub(crate) struct RequestOutputParts {
    request_id: String,
    expires_at_ms: i64,
}

pub(crate) static REQUEST_DEF: ToolDef = ToolDef {
    name: REQUEST_NAME,
    title: "Ask the owner for access to runs",
    description: "Asks the owner to share runs with you, when nothing you need is granted: say what you \
                  look for (agent, workspace, words in the prompt or answer, the latest N runs), the \
                  features and how long, and why (shown to the owner as your words). Returns at once with \
                  a requestId and state pending; nothing about any run. The owner approves or denies on \
                  their own machine. Then call wait_for_access with the requestId: approved names the exact \
                  targets shared with you, which you read like any grant.",
    feature: None,
    trust: Trust::Medium,
    version: 1,
    input_schema: &REQUEST_INPUT,
    output_schema: &REQUEST_OUTPUT_SCHEMA,
    rules: &RequestAccess,
    pinned: "deed719753965b65bf7ea043377c81c252e5ded900ac3b2a37ecbf6e8bd7d753",
};

static REQUEST_INPUT: LazyLock<Value> = LazyLock::new(|| {
    let features: Vec<&str> = Feature::ALL.iter().map(|f| f.as_str()).collect();
    let agents: Vec<&str> = Agent::ALL.iter().map(|a| a.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "agent": {
                "enum": agents,
                "description": "Only runs of this agent."
            },
            "workspace": {
                "type": "string", "minLength": 1, "maxLength": ACCESS_WORKSPACE_MAX_BYTES,
                "description": "Only runs in the workspace of this name (the project's folder name, \
                                unless the owner named it otherwise)."
            },
            "words": {
                "type": "string", "minLength": 1, "maxLength": SEARCH_QUERY_MAX_BYTES,
                "description": "Words the run's prompt or final answer holds (each of them, any case)."
            },
            "latest": {
                "type": "integer", "minimum": 1, "maximum": ACCESS_LATEST_MAX,
                "description": "How many of the newest matching runs (default 1)."
            },
            "features": {
                "type": "array", "items": {"enum": features}, "minItems": 1,
                "maxItems": Feature::ALL.len(), "uniqueItems": true,
                "description": "What to read of them (default final_answer and status)."
            },
            "durationSeconds": {
                "type": "integer", "minimum": ACCESS_DURATION_MIN_SECONDS,
                "maximum": ACCESS_DURATION_MAX_SECONDS,
                "description": "For how long (default 3600); the owner may shorten it."
            },
            "reason": {
                "type": "string", "minLength": 1, "maxLength": ACCESS_REASON_MAX_BYTES,
                "description": "Why you ask, shown to the owner as your words."
            }
        },
        "additionalProperties": false
    })
});

static REQUEST_OUTPUT_SCHEMA: LazyLock<Value> =
    LazyLock::new(schema::output_schema::<RequestOutput>);

/// `wait_for_access`' exact arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct WaitArgs {
    request_id: String,
    timeout_seconds: Option<u64>,
}

impl ExactArgs for WaitArgs {
    fn parse(args: &Value) -> Result<WaitArgs, ErrorCode> {
        let a: WaitArgs =
            serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)?;
        if !crate::access::is_request_id(&a.request_id)
            || a.timeout_seconds
                .is_some_and(|t| t == 0 || t > WAIT_MAX_SECONDS)
        {
            return Err(ErrorCode::InvalidArguments);
        }
        Ok(a)
    }
}

/// The request id of `wait_for_access` arguments, if they are exact.
pub(crate) fn request_id_of(args: &Value) -> Option<String> {
    WaitArgs::parse(args).ok().map(|a| a.request_id)
}

impl WaitArgs {
    fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_seconds.unwrap_or(WAIT_DEFAULT_SECONDS))
    }
}

/// One run an approval shared with the reader.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct SharedTarget {
    /// The exact run: pass it to the read tools as it is.
    #[schemars(schema_with = "target")]
    pub target: Target,
    pub features: Vec<Feature>,
    pub expires_at: String,
}

fn target(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::try_from(schema::target_schema())
        .unwrap_or_else(|_| schemars::Schema::from(false))
}

/// `wait_for_access`' output.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct WaitOutput {
    pub request_id: String,
    pub state: AccessState,
    /// When the request expires (or expired) undecided; absent when it expired or is not yours.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expires_at: Option<String>,
    /// approved: the runs shared with you for this request (still live), each with its
    /// features and expiry. A run whose ids hold a secret the owner masks is listed by
    /// list_granted_targets only. Empty otherwise.
    pub targets: Vec<SharedTarget>,
}

pub(crate) struct WaitForAccess;

/// What `wait_for_access` answers, read at admission: where the request stands and the live
/// grants an approval made.
pub(crate) struct WaitReader {
    state: AccessState,
    expires_at_ms: Option<i64>,
    targets: Vec<SharedTarget>,
}

impl ToolRules for WaitForAccess {
    type Args = WaitArgs;
    type Reader = WaitReader;
    type Output = WaitOutput;

    /// Never refused after its arguments: a request that is not the caller's is `expired`.
    fn admit(
        at: &AdmissionContext<'_>,
        args: &WaitArgs,
    ) -> Result<ToolAdmission<WaitReader>, ErrorCode> {
        let (state, expires_at_ms, targets) = match at.access_standing(&args.request_id)? {
            Standing::Pending { expires_at_ms } => {
                (AccessState::Pending, Some(expires_at_ms), vec![])
            }
            Standing::Denied { expires_at_ms } => {
                (AccessState::Denied, Some(expires_at_ms), vec![])
            }
            Standing::Expired => (AccessState::Expired, None, vec![]),
            Standing::Approved {
                expires_at_ms,
                grant_ids,
            } => {
                let redactor = at.redactor()?;
                let shared = at
                    .live_grants_now()?
                    .into_iter()
                    .filter(|g| grant_ids.contains(&g.id))
                    .filter(|g| {
                        let t = &g.target;
                        [&t.instance, &t.workspace_id, &t.session_id, &t.run_id]
                            .iter()
                            .all(|id| !redactor.contains_secret(id.as_bytes()))
                    })
                    .map(|g| SharedTarget {
                        expires_at: rfc3339(g.expires_at_ms),
                        target: g.target,
                        features: g.features,
                    })
                    .collect();
                (AccessState::Approved, Some(expires_at_ms), shared)
            }
        };
        Ok(ToolAdmission {
            target: None,
            grant: None,
            run: None,
            reader: WaitReader {
                state,
                expires_at_ms,
                targets,
            },
        })
    }

    fn execute(args: WaitArgs, reader: &WaitReader) -> Result<WaitOutput, ErrorCode> {
        Ok(WaitOutput {
            request_id: args.request_id,
            state: reader.state,
            expires_at: reader.expires_at_ms.map(rfc3339),
            targets: reader
                .targets
                .iter()
                .map(|t| SharedTarget {
                    target: t.target.clone(),
                    features: t.features.clone(),
                    expires_at: t.expires_at.clone(),
                })
                .collect(),
        })
    }

    fn receipt_facts(output: &WaitOutput) -> ReceiptFacts {
        ReceiptFacts {
            evidence: None,
            state: Some(output.state.as_str()),
        }
    }
}

pub(crate) static WAIT_DEF: ToolDef = ToolDef {
    name: WAIT_NAME,
    title: "Wait for the owner's decision on an access request",
    description: "Waits until the owner decides on your request_access (or it expires, 10 minutes after \
                  it was made), then returns its state: approved with the exact targets shared with you \
                  (read them with the other tools), denied, or expired. Returns anyway after \
                  timeoutSeconds (default 25, at most 50) with state pending: call again to keep \
                  waiting. A requestId that is not yours answers expired.",
    feature: None,
    trust: Trust::Medium,
    version: 1,
    input_schema: &WAIT_INPUT,
    output_schema: &WAIT_OUTPUT_SCHEMA,
    rules: &WaitForAccess,
    pinned: "0a44cf2abde8d53e2bbd18224794f3c213124feed74d0614b5696296d8f03c9e",
};

static WAIT_INPUT: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "requestId": {
                "type": "string", "minLength": 3, "maxLength": ACCESS_REQUEST_ID_MAX_BYTES,
                "pattern": "^q-[0-9a-f]+$",
                "description": "What request_access returned."
            },
            "timeoutSeconds": {
                "type": "integer", "minimum": 1, "maximum": WAIT_MAX_SECONDS,
                "description": "Seconds to wait at most (default 25)."
            }
        },
        "required": ["requestId"],
        "additionalProperties": false
    })
});

static WAIT_OUTPUT_SCHEMA: LazyLock<Value> = LazyLock::new(schema::output_schema::<WaitOutput>);

/// Before the gate, for `wait_for_access`: returns once the request named is no longer pending
/// for this reader (decided, expired, not its own), or the wait's time is up. Wakes on the
/// store's change feed or its own re-check ([`crate::evidence::Config::wait_recheck`]); holds a
/// wait slot, like `wait_for_run`, and no store connection while it waits. Arguments the gate
/// will refuse return at once.
pub(crate) async fn wait_for_decision(
    reading: &Arc<Reading>,
    ctx: &Arc<KeyContext>,
    args: &Value,
) -> Result<(), ErrorCode> {
    let Ok(parsed) = WaitArgs::parse(args) else {
        return Ok(());
    };
    let _slot = reading
        .waits
        .try_take(&ctx.reader.id)
        .ok_or(ErrorCode::Busy)?;
    let deadline = tokio::time::Instant::now() + parsed.timeout();
    let id: Arc<str> = parsed.request_id.into();
    let (svc, reader, q) = (reading.clone(), ctx.reader.id.clone(), id.clone());
    // Decided, expired, or the store could not say: the gated call answers (or refuses).
    let pending = move || {
        let now_ms = runread_core::timefmt::now_ms();
        crate::access::standing_now(&*svc.store, &reader, &q, now_ms).is_ok_and(|s| s.pending())
    };
    let concerns = |change: &Change| match change {
        Change::AccessRequest(q) => **q == *id,
        // A run's change decides no request.
        Change::Session(_) => false,
        Change::Unknown => true,
    };
    crate::tools::wait::wait_while(reading, deadline, concerns, pending).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<RequestArgs, ErrorCode> {
        RequestArgs::parse(&v)
    }

    #[test]
    fn a_request_is_bounded_in_every_field_at_n_and_n_plus_one() {
        assert!(parse(Value::Null).is_ok());
        assert!(parse(json!({})).is_ok());
        assert!(parse(json!({"agent": "codex"})).is_ok());
        assert!(parse(json!({"agent": "cursor"})).is_err());
        for (field, max) in [
            ("workspace", ACCESS_WORKSPACE_MAX_BYTES),
            ("reason", ACCESS_REASON_MAX_BYTES),
        ] {
            assert!(
                parse(json!({field: "x".repeat(max)})).is_ok(),
                "{field} at N"
            );
            assert!(
                parse(json!({field: "x".repeat(max + 1)})).is_err(),
                "{field} N+1"
            );
            assert!(parse(json!({field: "  "})).is_err(), "{field} blank");
        }
        let words = ["w"; 8].join(" ");
        assert!(parse(json!({"words": words})).is_ok());
        assert!(
            parse(json!({"words": format!("{words} w")})).is_err(),
            "9 words"
        );
        assert!(
            parse(json!({"words": "x".repeat(SEARCH_QUERY_MAX_BYTES + 1)})).is_err(),
            "N+1 bytes"
        );
        assert!(parse(json!({"latest": ACCESS_LATEST_MAX})).is_ok());
        assert!(parse(json!({"latest": ACCESS_LATEST_MAX + 1})).is_err());
        assert!(parse(json!({"latest": 0})).is_err());
        let d = |s: u64| parse(json!({"durationSeconds": s}));
        assert!(d(ACCESS_DURATION_MIN_SECONDS).is_ok() && d(ACCESS_DURATION_MAX_SECONDS).is_ok());
        assert!(d(ACCESS_DURATION_MIN_SECONDS - 1).is_err());
        assert!(d(ACCESS_DURATION_MAX_SECONDS + 1).is_err());
        assert!(parse(json!({"features": ["history"]})).is_ok());
        assert!(parse(json!({"features": []})).is_err(), "empty");
        assert!(
            parse(json!({"features": ["history", "history"]})).is_err(),
            "twice"
        );
        assert!(parse(json!({"features": ["secrets"]})).is_err(), "unknown");
        assert!(parse(json!({"path": "/etc"})).is_err(), "unknown field");
        assert!(
            parse(json!({"workspace": "a\u{1b}[31m"})).is_err(),
            "control"
        );
    }

    #[test]
    fn a_wait_names_one_request_id_and_a_timeout_within_its_bound() {
        let w = |v: Value| WaitArgs::parse(&v);
        assert!(w(json!({"requestId": "q-0123abcd"})).is_ok());
        assert!(w(json!({"requestId": "q-"})).is_err());
        assert!(w(json!({"requestId": "g-0123"})).is_err());
        assert!(w(json!({"requestId": "q-0123ABCD"})).is_err());
        let longest = format!("q-{}", "a".repeat(ACCESS_REQUEST_ID_MAX_BYTES - 2));
        assert!(w(json!({"requestId": longest})).is_ok());
        assert!(w(json!({"requestId": format!("{longest}a")})).is_err());
        assert!(w(json!({"requestId": "q-1", "timeoutSeconds": WAIT_MAX_SECONDS})).is_ok());
        assert!(w(json!({"requestId": "q-1", "timeoutSeconds": WAIT_MAX_SECONDS + 1})).is_err());
        assert!(w(json!({"requestId": "q-1", "timeoutSeconds": 0})).is_err());
        assert!(w(json!({})).is_err());
    }
}
