//! `read_final_answer`: the run's final answer, chunked on UTF-8 boundaries, hash-verified.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use runread_core::chunk::chunk_range;
use runread_core::cursor::Purpose;
use runread_core::envelope::{Labeled, Trust, label};
use runread_core::limits::{
    FINAL_ANSWER_CHUNK_DEFAULT, FINAL_ANSWER_CHUNK_MAX, FINAL_ANSWER_CHUNK_MIN,
    FINAL_ANSWER_MAX_BYTES,
};
use runread_core::{ErrorCode, Feature, Target};
use runread_sessions::RunStatus;
use runread_sessions::file;
use runread_store::RunRecord;

use crate::grants::{current_run, grant_for, recheck};
use crate::{KeyContext, Service, tools};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    target: Target,
    cursor: Option<String>,
    limit: Option<u64>,
}

/// Whether and how the answer can be read, judged from the run and its session file now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Available,
    Saving,
    Missing,
    Unknown,
    TooLarge,
}

impl State {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Available => "available",
            State::Saving => "saving",
            State::Missing => "missing",
            State::Unknown => "unknown",
            State::TooLarge => "too_large",
        }
    }
}

/// The publication rule for passive evidence: a completed run whose session file has not changed
/// since it was ingested and has been quiet for the settle window.
pub(crate) fn judge(svc: &Service, run: &RunRecord, now_ms: i64) -> State {
    match run.run.status {
        RunStatus::Completed => {}
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Running => return State::Missing,
        RunStatus::Unknown => return State::Unknown,
    }
    if run.run.final_bytes > FINAL_ANSWER_MAX_BYTES as u64 {
        return State::TooLarge;
    }
    let Some(text) = &run.run.final_text else {
        return State::Unknown;
    };
    if text.len() as u64 != run.run.final_bytes {
        return State::Unknown;
    }
    match file::identity(std::path::Path::new(&run.session_path)) {
        Ok(now) if now == run.identity => {}
        // The file moved on since ingest (or is gone): what the store holds may no longer be on
        // the active branch. Re-ingest decides; until then the answer is not vouched for.
        _ => return State::Unknown,
    }
    let quiet_ms = i64::try_from(svc.config.settle_quiet.as_millis()).unwrap_or(i64::MAX);
    let mtime_ms = run.identity.mtime_ns / 1_000_000;
    if now_ms.saturating_sub(mtime_ms) < quiet_ms {
        return State::Saving;
    }
    State::Available
}

fn answer_version(run: &RunRecord) -> Option<String> {
    let sha = run
        .run
        .final_text
        .as_deref()
        .map(|t| runread_core::sha256_hex(t.as_bytes()))?;
    Some(format!("g{}-{}", run.target.generation, sha.get(..16)?))
}

pub(crate) fn read(
    svc: &Service,
    ctx: &KeyContext,
    args: &Value,
    now_ms: i64,
) -> Result<Labeled, ErrorCode> {
    // Step 4: exact arguments.
    let args: Args =
        serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)?;
    if !args.target.validate_shape() || args.target.revision == 0 || args.target.generation == 0 {
        return Err(ErrorCode::InvalidArguments);
    }
    let limit = match args.limit {
        None => FINAL_ANSWER_CHUNK_DEFAULT,
        Some(n) if (FINAL_ANSWER_CHUNK_MIN as u64..=FINAL_ANSWER_CHUNK_MAX as u64).contains(&n) => {
            n as usize
        }
        Some(_) => return Err(ErrorCode::InvalidArguments),
    };
    // Step 5: grant and currency.
    let grant = grant_for(ctx, &args.target, Feature::FinalAnswer, now_ms)?;
    let run = current_run(svc, &args.target)?;
    // Step 6: the adapter's reads and judgment.
    let state = judge(svc, &run, now_ms);
    let mut fields = Map::new();
    fields.insert("state".into(), json!(state.as_str()));
    fields.insert("evidence".into(), json!("session_file"));
    fields.insert("foregroundFinalConfirmed".into(), json!(false));
    fields.insert(
        "truncated".into(),
        json!(run.run.final_truncated && state == State::Available),
    );
    fields.insert("aggregateCompletionConfirmed".into(), json!(false));
    fields.insert("aggregateCoverage".into(), json!("incomplete"));
    fields.insert("relatedChildrenActive".into(), Value::Null);
    fields.insert("overallState".into(), json!("unknown"));
    fields.insert("snapshotLive".into(), json!(false));
    let text = match (state, run.run.final_text.as_deref()) {
        (State::Available, Some(t)) => Some(t),
        _ => None,
    };
    match text {
        None => {
            if args.cursor.is_some() {
                // A cursor only ever pages through readable text.
                return Err(ErrorCode::InvalidCursor);
            }
            fields.insert("readable".into(), json!(false));
            fields.insert("text".into(), Value::Null);
            fields.insert("byteOffset".into(), json!(0));
            fields.insert("bytes".into(), json!(0));
            let total = (state == State::TooLarge).then_some(run.run.final_bytes);
            fields.insert("totalBytes".into(), json!(total));
            fields.insert("sha256".into(), Value::Null);
            fields.insert("version".into(), Value::Null);
            fields.insert("nextCursor".into(), Value::Null);
            fields.insert("eof".into(), json!(true));
        }
        Some(text) => {
            let version = answer_version(&run).ok_or(ErrorCode::Unavailable)?;
            let key = svc.store.cursor_key();
            let offset = match &args.cursor {
                None => 0,
                Some(c) => key
                    .decode(c, Purpose::FinalAnswer, &args.target, &version)
                    .ok_or(ErrorCode::InvalidCursor)?,
            };
            let offset = usize::try_from(offset).map_err(|_| ErrorCode::InvalidCursor)?;
            let range = chunk_range(text, offset, limit).ok_or(ErrorCode::InvalidCursor)?;
            let chunk = text.get(range.clone()).ok_or(ErrorCode::InvalidCursor)?;
            let eof = range.end == text.len();
            let next = (!eof).then(|| {
                key.encode(
                    Purpose::FinalAnswer,
                    &args.target,
                    &version,
                    range.end as u64,
                )
            });
            fields.insert("readable".into(), json!(true));
            fields.insert("text".into(), json!(chunk));
            fields.insert("byteOffset".into(), json!(range.start));
            fields.insert("bytes".into(), json!(range.len()));
            fields.insert("totalBytes".into(), json!(text.len()));
            fields.insert(
                "sha256".into(),
                json!(runread_core::sha256_hex(text.as_bytes())),
            );
            fields.insert("version".into(), json!(version));
            fields.insert("nextCursor".into(), json!(next));
            fields.insert("eof".into(), json!(eof));
        }
    }
    // Step 7: nothing leaves if the grant or the target moved while we read.
    recheck(
        svc,
        ctx,
        grant,
        &run,
        runread_core::timefmt::now_ms().max(now_ms),
    )?;
    // Step 8: label.
    Ok(label(tools::READ_FINAL_ANSWER, Trust::Untrusted, fields))
}
