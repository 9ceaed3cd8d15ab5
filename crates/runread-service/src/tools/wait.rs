//! `wait_for_run`: `get_run`'s projection, answered once the run moved past what the caller saw
//! or settled, or when the wait's time is up: a reader learns a run's result without polling.
//!
//! The wait happens before the gate ([`wait_for_change`]): it holds a wait slot
//! ([`WAITS_PER_READER_MAX`](runread_core::limits::WAITS_PER_READER_MAX) per reader, [`WAITS_MAX`](runread_core::limits::WAITS_MAX) in all, `busy` beyond), no store connection
//! and no blocking thread, and wakes on the store's change feed or its own re-check every
//! [`runread_core::limits::WAIT_RECHECK_MS`] (`Config::wait_recheck`). Each check reads the run through admission (the reader's grant, read
//! again from the store, and the run's currency); nothing it reads leaves. Then the call goes
//! through the gate like any other: one start record, one receipt, the projection read afresh.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use runread_core::envelope::Trust;
use runread_core::limits::{WAIT_DEFAULT_SECONDS, WAIT_MAX_SECONDS, WAIT_SHARED_AFTER_SPAN_MS};
use runread_core::{ErrorCode, Feature, Target};
use runread_gate::ReceiptFacts;
use runread_sessions::RunStatus;
use runread_store::changes::Change;
use runread_store::{RunRecord, WaitRecord};

use crate::admission;
use crate::admission::KeyContext;
use crate::evidence::Reading;
use crate::evidence::publication::{self, State};
use crate::tools::adapters::{AdmissionContext, ExactArgs, ToolAdmission, ToolDef, ToolRules};
use crate::tools::get_run::{self, Status};
use crate::tools::schema;

pub(crate) const NAME: &str = "wait_for_run";

/// `wait_for_run`'s exact arguments.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct WaitArgs {
    /// The exact run to wait on; or, instead,
    pub target: Option<Target>,
    /// the label of a run the owner shares (or will share) with this reader (`runread run
    /// --share … --label`): the wait answers once a run so labelled is shared with it and moves
    /// or settles — what an orchestrator knows before its delegate's run exists; or, instead,
    pub label: Option<String>,
    /// `true`: the next run shared with this reader, after `shared_after` — what an orchestrator
    /// knows when it does not even know the label its delegate's run will carry.
    pub next: Option<bool>,
    /// With `next`: the instant (RFC 3339, as runread writes it) the share must come after, at
    /// most [`WAIT_SHARED_AFTER_SPAN_MS`] from now; absent, the instant the call began.
    pub shared_after: Option<String>,
    /// The `eventSequence` the caller last saw: the wait answers once the run's differs.
    pub after_sequence: Option<u64>,
    /// How long to wait, 1 to [`WAIT_MAX_SECONDS`] (default [`WAIT_DEFAULT_SECONDS`]).
    pub timeout_seconds: Option<u64>,
    /// `shared_after` as milliseconds since the epoch, once parsed.
    #[serde(skip)]
    shared_after_ms: Option<i64>,
}

impl ExactArgs for WaitArgs {
    fn parse(args: &Value) -> Result<WaitArgs, ErrorCode> {
        let mut a: WaitArgs =
            serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)?;
        let what = match (&a.target, &a.label, a.next, &a.shared_after) {
            (Some(t), None, None, None) => t.validate_shape(),
            (None, Some(l), None, None) => runread_core::label::is_valid(l),
            (None, None, Some(true), None) => true,
            (None, None, Some(true), Some(after)) => {
                a.shared_after_ms = shared_after_ms(after, runread_core::timefmt::now_ms());
                a.shared_after_ms.is_some()
            }
            _ => false,
        };
        if !what
            || a.timeout_seconds
                .is_some_and(|t| t == 0 || t > WAIT_MAX_SECONDS)
            || a.after_sequence.is_some_and(|s| i64::try_from(s).is_err())
        {
            return Err(ErrorCode::InvalidArguments);
        }
        Ok(a)
    }
}

/// `sharedAfter` as an instant: written as runread writes times, and at most
/// [`WAIT_SHARED_AFTER_SPAN_MS`] before or after `now_ms`.
fn shared_after_ms(written: &str, now_ms: i64) -> Option<i64> {
    runread_core::timefmt::parse_exact(written)
        .filter(|at| at.abs_diff(now_ms) <= WAIT_SHARED_AFTER_SPAN_MS.unsigned_abs())
}

impl WaitArgs {
    fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_seconds.unwrap_or(WAIT_DEFAULT_SECONDS))
    }

    /// Whether the run moved past what the caller saw.
    fn changed(&self, run: &RunRecord) -> bool {
        self.after_sequence
            .is_some_and(|seen| get_run::event_sequence(run) != seen)
    }

    /// For a wait for the next share: the instant a share must come after — the one given, or
    /// `began_ms`, when the call began.
    fn shared_after_or(&self, began_ms: i64) -> Option<i64> {
        (self.next == Some(true)).then(|| self.shared_after_ms.unwrap_or(began_ms))
    }
}

/// Whether a run has settled: it ended (its supervisor's foreground process, or the session
/// file's own account), and its answer's state is final, so `read_final_answer` now returns what
/// it always will — on this gateway too: an `unknown` judged on a snapshot sealed before the
/// run's end (the gateway that saw the end seals it again right after) is not final.
fn settled(run: &RunRecord, answer: State, snapshot_behind: bool) -> bool {
    let ended = !matches!(run.run.status, RunStatus::Running | RunStatus::Unknown);
    ended && answer != State::Saving && !(answer == State::Unknown && snapshot_behind)
}

pub(crate) struct WaitForRun;

/// The `status` feature's reader for a wait: the admitted run, and whether it has settled.
pub(crate) struct Reader {
    /// The run, whether it has settled, whether a supervisor recorded it.
    run: Option<(RunRecord, bool, bool)>,
    /// For a wait for the next share: the instant it waited for shares after, and the creation
    /// of the grant it found, if any.
    shared: Option<(i64, Option<i64>)>,
}

impl ToolRules for WaitForRun {
    type Args = WaitArgs;
    type Reader = Reader;
    type Output = Output;

    /// Like `get_run`: never refused after its arguments; a run the reader may not see is
    /// `{found:false}`.
    fn admit(
        at: &AdmissionContext<'_>,
        args: &WaitArgs,
    ) -> Result<ToolAdmission<Reader>, ErrorCode> {
        let mut shared = args.shared_after_or(at.now_ms).map(|after| (after, None));
        let run = match (&args.target, &args.label, &mut shared) {
            (Some(target), _, _) => at.run(target),
            (None, Some(label), _) => match at.labelled(label)? {
                Some(grant) => at.run_of(grant),
                None => Err(ErrorCode::NotGranted),
            },
            (None, None, Some((after, at_ms))) => match at.next_shared(*after)? {
                Some(grant) => {
                    *at_ms = Some(grant.created_at_ms);
                    at.run_of(grant)
                }
                None => Err(ErrorCode::NotGranted),
            },
            (None, None, None) => Err(ErrorCode::InvalidArguments),
        };
        let admitted = run.and_then(|g| {
            let evidence = at.answer_evidence(&g.run)?;
            let (state, _) = publication::judge(&evidence, at.now_ms);
            let supervised = evidence.supervised.is_some();
            Ok((
                settled(&g.run, state, evidence.snapshot_behind),
                supervised,
                g,
            ))
        });
        Ok(match admitted {
            Ok((settled, supervised, g)) => {
                let reader = Reader {
                    run: Some((g.run.clone(), settled, supervised)),
                    shared,
                };
                g.with(reader)
            }
            Err(_) => ToolAdmission {
                target: args.target.clone(),
                grant: None,
                run: None,
                // A share found whose run can no longer be read (no longer current) still says
                // when it was made, so that the next call moves past it instead of finding it again.
                reader: Reader { run: None, shared },
            },
        })
    }

    fn execute(args: WaitArgs, reader: &Reader) -> Result<Output, ErrorCode> {
        let shared_after = reader
            .shared
            .map(|(after, _)| runread_core::timefmt::rfc3339(after));
        let shared_at = reader
            .shared
            .and_then(|(_, at)| at)
            .map(runread_core::timefmt::rfc3339);
        Ok(match &reader.run {
            None => Output {
                found: false,
                changed: false,
                settled: false,
                shared_after,
                shared_at,
                run: None,
            },
            Some((run, settled, supervised)) => Output {
                found: true,
                changed: args.changed(run),
                settled: *settled,
                shared_after,
                shared_at,
                run: Some(get_run::projection(run, *supervised)),
            },
        })
    }

    /// The run's origin and whether it has settled, or `not_found`.
    fn receipt_facts(output: &Output) -> ReceiptFacts {
        match &output.run {
            Some(s) => s.receipt_facts(Some(match output.settled {
                true => "settled",
                false => "not_settled",
            })),
            None => ReceiptFacts {
                evidence: None,
                state: Some(get_run::NOT_FOUND),
            },
        }
    }
}

/// `wait_for_run`'s output: `get_run`'s, with whether the run moved past the caller's sequence
/// and whether it has settled.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields, transform = get_run::found_carries_status)]
pub(crate) struct Output {
    found: bool,
    changed: bool,
    settled: bool,
    /// A wait for the next share: the instant it waited for shares after. Call again with it
    /// after a timeout, so that no share made meanwhile is missed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    shared_after: Option<String>,
    /// A wait for the next share that found one: when that run was shared with you (also when
    /// the run can no longer be read: found false). Call again with it as sharedAfter for the
    /// share after this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    shared_at: Option<String>,
    #[serde(flatten)]
    run: Option<Status>,
}

/// `wait_for_run`: its definition, its rules and its pinned digest.
pub(crate) static DEF: ToolDef = ToolDef {
    name: NAME,
    title: "Wait for a run to change or settle",
    description: "Waits until one granted run moves past afterSequence (the eventSequence you last saw) or \
                  settles, then returns get_run's status with changed and settled. settled: the run ended and \
                  read_final_answer now returns what it always will. Returns anyway after timeoutSeconds \
                  (default 25, at most 50): call again to keep waiting. A run that is missing, elsewhere or \
                  not granted gives {found:false} at once. Instead of a target, a label waits for a run the \
                  owner shares with you under that label, before it is shared: {found:false} only if none \
                  is shared by the timeout. Or next:true waits for the next run shared with you after \
                  sharedAfter (default: when the call began); every answer says the sharedAfter it used \
                  (call again with it after a timeout), and a run found says its sharedAt (call again \
                  with it as sharedAfter for the share after).",
    feature: Some(Feature::Status),
    trust: Trust::Medium,
    version: 4,
    input_schema: &WAIT_INPUT,
    output_schema: &OUTPUT_SCHEMA,
    rules: &WaitForRun,
    pinned: "be897188d78c76af244c852d4f342bce987c2849fed4b1821fd6eb31169b55a4",
};

static WAIT_INPUT: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "target": schema::target_schema(),
            "label": {
                "type": "string", "minLength": 1, "maxLength": runread_core::limits::GRANT_LABEL_MAX_BYTES,
                "description": "Instead of target: the label of a run shared (or to be shared) with you \
                                (runread run --share … --label). Answers once a run so labelled is shared \
                                with you and settles; list_granted_targets then shows its target by that label."
            },
            "next": {
                "const": true,
                "description": "Instead of target or label: the next run shared with you after \
                                sharedAfter. Answers once one is shared and settles (or moves past \
                                afterSequence)."
            },
            "sharedAfter": {
                "type": "string", "format": "date-time",
                "description": "With next: an instant as runread writes it (e.g. a sharedAfter or \
                                sharedAt it answered); only runs shared after it count. At most 7 days \
                                from now. Default: when the call began."
            },
            "afterSequence": {
                "type": "integer", "minimum": 0, "maximum": i64::MAX,
                "description": "The eventSequence you last saw; omit to wait for the run to settle."
            },
            "timeoutSeconds": {
                "type": "integer", "minimum": 1, "maximum": WAIT_MAX_SECONDS,
                "description": "Seconds to wait at most (default 25)."
            }
        },
        "oneOf": [{"required": ["target"]}, {"required": ["label"]}, {"required": ["next"]}],
        "dependentRequired": {"sharedAfter": ["next"]},
        "additionalProperties": false
    })
});

static OUTPUT_SCHEMA: LazyLock<Value> = LazyLock::new(schema::output_schema::<Output>);

/// What one check of a waiting call found.
enum Check {
    /// Answer now: the run moved, settled, or can no longer be read by this reader.
    Answer,
    /// Keep waiting.
    Wait,
}

/// Where a run stands for a caller waiting on it, read through admission.
pub(crate) enum Readiness {
    /// The caller may not read the run (not granted, no longer current): answer now, and the
    /// call says why.
    Unreadable,
    /// The store could not answer now; it may on the next check.
    Unknown,
    /// Granted and current, not settled.
    Unsettled(Box<RunRecord>),
    /// Granted, current and settled.
    Settled,
}

/// Where `target` stands for `ctx` through the grant of `feature`: the grant read again from the
/// store (so a grant revoked or a key rotated meanwhile is seen), the run's currency, whether it
/// settled. On a blocking thread.
pub(crate) fn readiness(
    svc: &Reading,
    ctx: &KeyContext,
    target: &Target,
    feature: Feature,
    now_ms: i64,
) -> Readiness {
    let run = admission::grant_for(svc, ctx, target, feature, now_ms)
        .and_then(|grant| admission::grant_holds(svc, ctx, &grant, now_ms))
        .and_then(|()| admission::current_run(svc, target));
    let run = match run {
        Ok(run) => run,
        Err(ErrorCode::Unavailable) => return Readiness::Unknown,
        Err(_) => return Readiness::Unreadable,
    };
    match publication::Evidence::observe(svc, &run) {
        Ok(e) if settled(&run, publication::judge(&e, now_ms).0, e.snapshot_behind) => {
            Readiness::Settled
        }
        Ok(_) => Readiness::Unsettled(Box::new(run)),
        Err(_) => Readiness::Unknown,
    }
}

/// One check of a waiting call: answer once the run moved past the caller's sequence, settled,
/// or can no longer be read by this reader.
fn check(svc: &Reading, ctx: &KeyContext, args: &WaitArgs) -> Check {
    let now_ms = runread_core::timefmt::now_ms();
    let (target, admitted);
    let awaited = match (&args.target, &args.label, args.shared_after_or(now_ms)) {
        (Some(_), _, _) => None,
        (None, Some(label), _) => Some(admission::labelled_grant(
            svc,
            ctx,
            label,
            Feature::Status,
            now_ms,
        )),
        (None, None, Some(after)) => Some(admission::next_shared_grant(
            svc,
            ctx,
            after,
            Feature::Status,
            now_ms,
        )),
        (None, None, None) => return Check::Answer,
    };
    let (ctx, target) = match (awaited, &args.target) {
        (None, Some(t)) => (ctx, t),
        // Admitted as the grant it names: shared after the call began, it is not among the
        // grants the key was admitted with.
        (Some(Ok(Some(grant))), _) => {
            target = grant.target.clone();
            admitted = KeyContext {
                live_grants: vec![grant],
                ..ctx.clone()
            };
            (&admitted, &target)
        }
        (Some(Ok(None) | Err(_)), _) => return Check::Wait,
        (None, None) => return Check::Answer,
    };
    match readiness(svc, ctx, target, Feature::Status, now_ms) {
        Readiness::Unknown => Check::Wait,
        Readiness::Unsettled(run) if !args.changed(&run) => Check::Wait,
        Readiness::Unreadable | Readiness::Unsettled(_) | Readiness::Settled => Check::Answer,
    }
}

/// Whether a call of `name` may wait before it is answered (`wait_for_run`, `wait_for_access`:
/// [`wait_for_change`]).
pub fn waits(name: &str) -> bool {
    name == NAME || name == crate::tools::access::WAIT_NAME
}

/// Admission before the gate for a tool that waits (`wait_for_run`; `wait_for_access`, whose
/// wait is its own module's, `tools::access::wait_for_decision`): returns once the call should be
/// answered, with the arguments to call it with — `args`, but a wait for the next share
/// that names no `sharedAfter` is given the instant it began, so that its answer (and the input
/// the gate seals) says the instant it used. Other tools, and arguments the gate will refuse,
/// return at once. `busy` when the reader, or this runread, holds all its wait slots.
pub async fn wait_for_change(
    reading: &Arc<Reading>,
    ctx: &Arc<KeyContext>,
    tool: &str,
    args: &Value,
) -> Result<Value, ErrorCode> {
    if tool == crate::tools::access::WAIT_NAME {
        crate::tools::access::wait_for_decision(reading, ctx, args).await?;
        return Ok(args.clone());
    }
    if !waits(tool) {
        return Ok(args.clone());
    }
    let Ok(mut parsed) = WaitArgs::parse(args) else {
        return Ok(args.clone());
    };
    let mut args = args.clone();
    if parsed.next == Some(true) && parsed.shared_after.is_none() {
        let began = runread_core::timefmt::now_ms();
        let written = runread_core::timefmt::rfc3339(began);
        if let Value::Object(fields) = &mut args {
            fields.insert("sharedAfter".into(), Value::String(written.clone()));
        }
        parsed.shared_after = Some(written);
        parsed.shared_after_ms = Some(began);
    }
    let _slot = reading
        .waits
        .try_take(&ctx.reader.id)
        .ok_or(ErrorCode::Busy)?;
    let deadline = tokio::time::Instant::now() + parsed.timeout();
    // A wait on a run is shown to the owner on that run; one by label or for the next share
    // names no run yet.
    let _shown = match &parsed.target {
        Some(target) => Some(record_wait(reading, ctx, target, &parsed).await?),
        None => None,
    };
    // Any session's change may be the awaited run's (it may not be shared yet).
    let session = parsed.target.as_ref().map(|t| t.session_id.clone());
    let concerns = |change: &Change| match change {
        Change::Session(s) => session.as_ref().is_none_or(|own| own == s),
        // A request filed or decided moves no run.
        Change::AccessRequest(_) => false,
        Change::Unknown => true,
    };
    let (svc, key, a) = (reading.clone(), ctx.clone(), Arc::new(parsed));
    let waiting = move || matches!(check(&svc, &key, &a), Check::Wait);
    wait_while(reading, deadline, concerns, waiting).await;
    Ok(args)
}

/// The wait every tool that waits before the gate runs once it holds its slot: `waiting` (a
/// check through admission, on a blocking thread) until it says the call should be answered,
/// again on each change of the store's feed that `concerns` the call (a lag, changes missed,
/// always does) and on the re-check ([`crate::evidence::Config::wait_recheck`]), until
/// `deadline`. Subscribed before the first check: a change between a check and the wait is heard.
pub(crate) async fn wait_while(
    reading: &Reading,
    deadline: tokio::time::Instant,
    concerns: impl Fn(&Change) -> bool,
    waiting: impl Fn() -> bool + Clone + Send + 'static,
) {
    let mut changes = reading.store.changes().subscribe();
    loop {
        let check = waiting.clone();
        if !matches!(tokio::task::spawn_blocking(check).await, Ok(true)) {
            return;
        }
        let recheck = tokio::time::Instant::now() + reading.config.wait_recheck;
        let woken = tokio::time::timeout_at(recheck.min(deadline), async {
            loop {
                match changes.recv().await {
                    Ok(change) if !concerns(&change) => continue,
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                    // The store is gone: only the re-check is left.
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await;
                    }
                }
            }
        })
        .await;
        if woken.is_err() && tokio::time::Instant::now() >= deadline {
            return;
        }
    }
}

/// Records the wait in the store, for the owner's view from any process; the record is
/// forgotten when the returned guard is dropped (the wait answered, or its caller left).
async fn record_wait(
    reading: &Arc<Reading>,
    ctx: &KeyContext,
    target: &Target,
    args: &WaitArgs,
) -> Result<RecordedWait, ErrorCode> {
    let now = runread_core::timefmt::now_ms();
    let timeout_ms = i64::try_from(args.timeout().as_millis()).unwrap_or(i64::MAX);
    let record = WaitRecord {
        id: crate::evidence::values::random_id("w-").map_err(|_| ErrorCode::Unavailable)?,
        reader_id: ctx.reader.id.clone(),
        session_id: target.session_id.clone(),
        generation: target.generation,
        run_id: target.run_id.clone(),
        started_at_ms: now,
        until_ms: now.saturating_add(timeout_ms),
    };
    let store = reading.store.clone();
    let id = record.id.clone();
    tokio::task::spawn_blocking(move || store.begin_wait(&record))
        .await
        .map_err(|_| ErrorCode::Unavailable)?
        .map_err(crate::evidence::unavailable)?;
    Ok(RecordedWait {
        store: reading.store.clone(),
        id,
    })
}

/// A wait recorded in the store; forgotten there when dropped.
struct RecordedWait {
    store: Arc<dyn runread_store::Store>,
    id: String,
}

impl Drop for RecordedWait {
    fn drop(&mut self) {
        let (store, id) = (self.store.clone(), std::mem::take(&mut self.id));
        let forget = move || {
            if let Err(e) = store.end_wait(&id) {
                // Shown until its time is up, then purged.
                tracing::debug!(error = %e, "a wait's record outlives it");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(forget)),
            Err(_) => forget(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runread_core::limits::{WAITS_MAX, WAITS_PER_READER_MAX};

    #[test]
    fn waits_are_bounded_per_reader_and_in_all_at_n_and_n_plus_one() {
        let waits = crate::evidence::wait_slots();
        let per_reader: Vec<_> = (0..WAITS_PER_READER_MAX)
            .map(|_| waits.try_take("r0").unwrap())
            .collect();
        assert!(waits.try_take("r0").is_none());
        let rest: Vec<_> = (WAITS_PER_READER_MAX..WAITS_MAX)
            .map(|i| {
                waits
                    .try_take(&format!("r{}", i / WAITS_PER_READER_MAX))
                    .unwrap()
            })
            .collect();
        assert_eq!(waits.held(), WAITS_MAX);
        assert!(waits.try_take("fresh").is_none());
        drop((per_reader, rest));
        assert!(waits.try_take("fresh").is_some());
    }

    #[test]
    fn shared_after_is_taken_within_its_span_of_now_at_n_and_n_plus_one() {
        let now = 1_796_000_763_380;
        let span = WAIT_SHARED_AFTER_SPAN_MS;
        let at = runread_core::timefmt::rfc3339;
        for n in [now - span, now + span, now] {
            assert_eq!(shared_after_ms(&at(n), now), Some(n));
        }
        for beyond in [now - span - 1, now + span + 1] {
            assert_eq!(shared_after_ms(&at(beyond), now), None);
        }
        assert_eq!(shared_after_ms("2026-11-30T01:06:03Z", now), None);
    }

    #[test]
    fn a_wait_names_exactly_one_of_target_label_and_next() {
        let target = json!({"instance": "i", "revision": 1, "workspaceId": "w", "sessionId": "s",
                            "generation": 1, "runId": "r"});
        let now = runread_core::timefmt::rfc3339(runread_core::timefmt::now_ms());
        for accepted in [
            json!({"target": target}),
            json!({"label": "review"}),
            json!({"next": true}),
            json!({"next": true, "sharedAfter": now}),
        ] {
            assert!(WaitArgs::parse(&accepted).is_ok(), "{accepted}");
        }
        for refused in [
            json!({}),
            json!({"next": false}),
            json!({"next": null}),
            json!({"next": true, "target": target}),
            json!({"next": true, "label": "review"}),
            json!({"label": "review", "target": target}),
            json!({"sharedAfter": now}),
            json!({"label": "review", "sharedAfter": now}),
            json!({"next": true, "sharedAfter": "now"}),
        ] {
            assert_eq!(
                WaitArgs::parse(&refused).err(),
                Some(ErrorCode::InvalidArguments),
                "{refused}"
            );
        }
        let a = WaitArgs::parse(&json!({"next": true, "sharedAfter": now})).unwrap();
        assert_eq!(
            a.shared_after_or(0),
            runread_core::timefmt::parse_exact(&now)
        );
        let a = WaitArgs::parse(&json!({"next": true})).unwrap();
        assert_eq!(a.shared_after_or(7), Some(7), "the call's start, absent");
        let a = WaitArgs::parse(&json!({"label": "review"})).unwrap();
        assert_eq!(a.shared_after_or(7), None);
    }

    #[test]
    fn a_timeout_is_taken_from_one_second_to_the_most() {
        let target = json!({"instance": "i", "revision": 1, "workspaceId": "w", "sessionId": "s",
                            "generation": 1, "runId": "r"});
        let with = |t: Value| json!({"target": target, "timeoutSeconds": t});
        assert!(WaitArgs::parse(&with(json!(WAIT_MAX_SECONDS))).is_ok());
        assert!(WaitArgs::parse(&with(json!(1))).is_ok());
        for refused in [json!(WAIT_MAX_SECONDS + 1), json!(0), json!(-1), json!(1.5)] {
            assert_eq!(
                WaitArgs::parse(&with(refused.clone())).err(),
                Some(ErrorCode::InvalidArguments),
                "{refused}"
            );
        }
        let a = WaitArgs::parse(&json!({"target": target})).unwrap();
        assert_eq!(a.timeout(), Duration::from_secs(WAIT_DEFAULT_SECONDS));
        assert!(
            WaitArgs::parse(&json!({"target": target, "after": 1})).is_err(),
            "an unknown argument is refused"
        );
    }
}
