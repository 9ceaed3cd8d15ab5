//! `read_history`: the run's events on the active branch, paged by sequence, known secrets
//! masked across event and page boundaries, every gap and cut flagged.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use runread_core::cursor::{CursorKey, Purpose};
use runread_core::limits::{
    HISTORY_EVENT_MAX_BYTES, HISTORY_PAGE_DEFAULT, HISTORY_PAGE_MAX, HISTORY_PAGE_MAX_CHARS,
    HISTORY_RETAINED_EVENTS,
};
use runread_core::redact::{Redactor, SECRET_MAX_BYTES};
use runread_core::{ErrorCode, Target};
use runread_sessions::{EntrySummary, RunStatus};
use runread_store::{RunRecord, SessionRecord};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pub target: Target,
    pub cursor: Option<String>,
    pub limit: Option<u64>,
}

pub(crate) fn parse_args(args: &Value) -> Result<Args, ErrorCode> {
    let a: Args = serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)?;
    if !a.target.validate_shape()
        || a.cursor
            .as_ref()
            .is_some_and(|c| c.len() > runread_core::limits::CURSOR_MAX_BYTES)
        || a.limit
            .is_some_and(|l| l == 0 || l > HISTORY_PAGE_MAX as u64)
    {
        return Err(ErrorCode::InvalidArguments);
    }
    Ok(a)
}

/// The `history` feature's reader: one run's retained events and what the file showed of them.
pub(crate) struct Reader {
    pub run: RunRecord,
    /// The run's message entries, in order, at most [`HISTORY_RETAINED_EVENTS`] (the newest).
    pub events: Vec<EntrySummary>,
    /// Sequence of `events[0]`.
    pub first_sequence: u64,
    pub retention_cut: bool,
    pub session: SessionRecord,
    pub redactor: Arc<Redactor>,
    pub cursor_key: CursorKey,
}

impl Reader {
    pub(crate) fn new(
        run: RunRecord,
        entries: Vec<EntrySummary>,
        session: SessionRecord,
        redactor: Arc<Redactor>,
        cursor_key: CursorKey,
    ) -> Reader {
        let mut events: Vec<EntrySummary> = entries
            .into_iter()
            .filter(|e| run.run.message_lines.contains(&e.line))
            .collect();
        events.sort_by_key(|e| e.line);
        let cut = events.len().saturating_sub(HISTORY_RETAINED_EVENTS);
        let events = events.split_off(cut);
        Reader {
            first_sequence: run.run.first_sequence + cut as u64,
            retention_cut: cut > 0,
            run,
            events,
            session,
            redactor,
            cursor_key,
        }
    }

    /// No more events can join this run (it ended, or the file cannot tell).
    fn settled(&self) -> bool {
        !matches!(self.run.run.status, RunStatus::Running)
    }
}

fn cut_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

pub(crate) fn execute(input: &Value, r: &Reader) -> Result<Map<String, Value>, ErrorCode> {
    let args = parse_args(input)?;
    if args.target != r.run.target {
        return Err(ErrorCode::TargetChanged);
    }
    let limit = args.limit.map_or(HISTORY_PAGE_DEFAULT, |l| l as usize);
    let version = format!("g{}", r.run.target.generation);
    let start_seq = match &args.cursor {
        None => r.first_sequence,
        Some(c) => r
            .cursor_key
            .decode(c, Purpose::History, &args.target, &version)
            .ok_or(ErrorCode::InvalidCursor)?,
    };
    let start = usize::try_from(start_seq.saturating_sub(r.first_sequence))
        .map_err(|_| ErrorCode::InvalidCursor)?;
    if start_seq < r.first_sequence || start > r.events.len() {
        return Err(ErrorCode::InvalidCursor);
    }
    let page: &[EntrySummary] = r
        .events
        .get(start..(start + limit).min(r.events.len()))
        .unwrap_or(&[]);
    // Mask over the page and enough of what follows to see any secret that starts in the page
    // whole (a secret is at most SECRET_MAX_BYTES long): a secret split across events is masked.
    let mut bodies: Vec<&str> = page
        .iter()
        .map(|e| e.body.as_deref().unwrap_or(""))
        .collect();
    let mut ahead = 0usize;
    let mut next = start + page.len();
    while ahead < SECRET_MAX_BYTES {
        let Some(e) = r.events.get(next) else { break };
        let b = e.body.as_deref().unwrap_or("");
        bodies.push(b);
        ahead += b.len();
        next += 1;
    }
    let lookahead = r.events.get(start + page.len());
    let complete = next >= r.events.len() && r.settled();
    let masked = r.redactor.mask_segments(&bodies, complete);
    // Which page events lost bytes to a withheld tail.
    let mut pending_from = page.len();
    if masked.pending {
        let mut remaining = masked.withheld_bytes;
        for (i, b) in bodies.iter().enumerate().rev() {
            if remaining == 0 {
                break;
            }
            if i < page.len() {
                pending_from = i;
            }
            remaining = remaining.saturating_sub(b.len());
        }
    }
    let mut events = Vec::with_capacity(page.len());
    let mut any_truncated = false;
    let mut chars = 0usize;
    for (i, e) in page.iter().enumerate() {
        let seq = start_seq + i as u64;
        let pending = i >= pending_from;
        let unavailable = e.body_unavailable || e.body.is_none();
        let (text, truncated) = if pending || unavailable {
            (None, false)
        } else {
            let full = masked.segments.get(i).map(String::as_str).unwrap_or("");
            let cut = cut_utf8(full, HISTORY_EVENT_MAX_BYTES);
            (
                Some(cut.to_owned()),
                cut.len() < full.len()
                    || e.body_bytes > e.body.as_ref().map_or(0, |b| b.len() as u64),
            )
        };
        any_truncated |= truncated || e.upstream_truncated;
        chars += text.as_ref().map_or(0, |t| t.chars().count());
        events.push(json!({
            "sequence": seq,
            "role": e.role.clone().unwrap_or_default(),
            "toolName": e.tool_name,
            "toolCalls": e.tool_calls,
            "text": text,
            "readable": text.is_some(),
            "truncated": truncated,
            "upstreamTruncated": e.upstream_truncated,
            "bodyUnavailable": unavailable,
            "redactionPending": pending,
        }));
    }
    let mut page_readable = true;
    if chars > HISTORY_PAGE_MAX_CHARS {
        // Too much text for one page: none of it, flagged; the client asks for fewer events.
        for ev in &mut events {
            ev["text"] = Value::Null;
            ev["readable"] = json!(false);
        }
        page_readable = false;
        any_truncated = true;
    }
    let next_seq = start_seq + pending_from.min(page.len()) as u64;
    let eof = lookahead.is_none() && pending_from >= page.len() && r.settled();
    let more = start + pending_from.min(page.len()) < r.events.len()
        || !r.settled()
        || pending_from < page.len();
    let next_cursor = more.then(|| {
        r.cursor_key
            .encode(Purpose::History, &args.target, &version, next_seq)
    });
    let mut gaps = Vec::new();
    if r.retention_cut {
        gaps.push("retention");
    }
    let (lo, hi) = (r.run.run.start_line, r.run.run.end_line);
    if r.session
        .malformed_lines
        .iter()
        .any(|l| *l > lo && (*l <= hi || r.run.run.status == RunStatus::Unknown))
    {
        gaps.push("malformed");
    }
    if r.run.run.status == RunStatus::Unknown {
        gaps.push("tail_unknown");
    }
    if !r.session.branch_complete {
        gaps.push("branch_incomplete");
    }
    let mut m = Map::new();
    m.insert("events".into(), Value::Array(events));
    m.insert("nextCursor".into(), json!(next_cursor));
    let high = (!r.events.is_empty()).then(|| r.first_sequence + r.events.len() as u64 - 1);
    m.insert("highWaterSequence".into(), json!(high));
    m.insert("eof".into(), json!(eof));
    m.insert("gap".into(), json!(!gaps.is_empty()));
    m.insert("gapReasons".into(), json!(gaps));
    m.insert("truncated".into(), json!(any_truncated));
    m.insert("readable".into(), json!(page_readable));
    m.insert("redactionPending".into(), json!(pending_from < page.len()));
    m.insert("completionConfirmed".into(), json!(false));
    Ok(m)
}
