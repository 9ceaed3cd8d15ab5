//! `read_final_answer`: the run's final answer, chunked on UTF-8 boundaries, hash-verified.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use runread_core::chunk::chunk_range;
use runread_core::cursor::{CursorKey, Purpose};
use runread_core::limits::{
    FINAL_ANSWER_CHUNK_DEFAULT, FINAL_ANSWER_CHUNK_MAX, FINAL_ANSWER_CHUNK_MIN,
    FINAL_ANSWER_MAX_BYTES,
};
use runread_core::{ErrorCode, Target};
use runread_sessions::{FileIdentity, RunStatus, file};
use runread_store::RunRecord;

use std::sync::Arc;

use runread_core::redact::Redactor;

use crate::Service;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pub target: Target,
    pub cursor: Option<String>,
    pub limit: Option<u64>,
}

/// Admission step 4 for this tool: the exact arguments, with every bound checked.
pub(crate) fn parse_args(args: &Value) -> Result<Args, ErrorCode> {
    let args: Args =
        serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)?;
    if !args.target.validate_shape()
        || args
            .cursor
            .as_ref()
            .is_some_and(|c| c.len() > runread_core::limits::CURSOR_MAX_BYTES)
    {
        return Err(ErrorCode::InvalidArguments);
    }
    if let Some(n) = args.limit
        && !(FINAL_ANSWER_CHUNK_MIN as u64..=FINAL_ANSWER_CHUNK_MAX as u64).contains(&n)
    {
        return Err(ErrorCode::InvalidArguments);
    }
    Ok(args)
}

/// Whether and how the answer can be read.
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

/// What the publication rule looks at: the run as ingested and its session file as it is now.
pub(crate) struct Evidence {
    pub run: RunRecord,
    /// The answer as published: known secrets masked over the whole text, before any chunking.
    pub published: Option<String>,
    /// The session file's identity observed now (`None`: gone, not a regular file, unreadable).
    pub file_now: Option<FileIdentity>,
    pub settle_quiet_ms: i64,
}

impl Evidence {
    pub(crate) fn observe(svc: &Service, run: &RunRecord, redactor: Option<&Redactor>) -> Evidence {
        Evidence {
            run: run.clone(),
            published: match (redactor, &run.run.final_text) {
                (Some(r), Some(t)) => Some(r.mask(t)),
                (None, Some(t)) => Some(t.clone()),
                _ => None,
            },
            file_now: file::identity(std::path::Path::new(&run.session_path)).ok(),
            settle_quiet_ms: i64::try_from(svc.config.settle_quiet.as_millis()).unwrap_or(i64::MAX),
        }
    }
}

/// The publication rule for passive evidence: a completed run whose session file has not changed
/// since it was ingested and has been quiet for the settle window.
pub(crate) fn judge(e: &Evidence, now_ms: i64) -> State {
    let run = &e.run;
    match run.run.status {
        RunStatus::Completed => {}
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Running => return State::Missing,
        RunStatus::Unknown => return State::Unknown,
    }
    if run.run.final_bytes > FINAL_ANSWER_MAX_BYTES as u64 {
        return State::TooLarge;
    }
    let (Some(text), Some(published)) = (&run.run.final_text, &e.published) else {
        return State::Unknown;
    };
    if text.len() as u64 != run.run.final_bytes {
        return State::Unknown;
    }
    if published.len() > FINAL_ANSWER_MAX_BYTES {
        return State::TooLarge;
    }
    // The file moved on since ingest (or is gone): what the store holds may no longer be on the
    // active branch. Re-ingest decides; until then the answer is not vouched for.
    if e.file_now != Some(run.identity) {
        return State::Unknown;
    }
    let mtime_ms = run.identity.mtime_ns / 1_000_000;
    if now_ms.saturating_sub(mtime_ms) < e.settle_quiet_ms {
        return State::Saving;
    }
    State::Available
}

/// The `final_answer` feature's reader: the evidence of one run, and the cursor key.
pub(crate) struct Reader {
    evidence: Evidence,
    cursor_key: CursorKey,
    now_ms: i64,
}

impl Reader {
    pub(crate) fn new(
        svc: &Service,
        run: &RunRecord,
        redactor: Arc<Redactor>,
        now_ms: i64,
    ) -> Reader {
        Reader {
            evidence: Evidence::observe(svc, run, Some(&redactor)),
            cursor_key: svc.store.cursor_key().clone(),
            now_ms,
        }
    }
}

fn answer_version(run: &RunRecord, text: &str) -> Option<String> {
    let sha = runread_core::sha256_hex(text.as_bytes());
    Some(format!("g{}-{}", run.target.generation, sha.get(..16)?))
}

/// The adapter: runs on the unsealed, re-validated input.
pub(crate) fn execute(input: &Value, reader: &Reader) -> Result<Map<String, Value>, ErrorCode> {
    let args = parse_args(input)?;
    let run = &reader.evidence.run;
    if args.target != run.target {
        return Err(ErrorCode::TargetChanged);
    }
    let limit = args
        .limit
        .map_or(FINAL_ANSWER_CHUNK_DEFAULT, |n| n as usize);
    let state = judge(&reader.evidence, reader.now_ms);
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
    let text = match (state, reader.evidence.published.as_deref()) {
        (State::Available, Some(t)) => Some(t),
        _ => None,
    };
    let Some(text) = text else {
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
        return Ok(fields);
    };
    let version = answer_version(run, text).ok_or(ErrorCode::Unavailable)?;
    let key = &reader.cursor_key;
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
    Ok(fields)
}
