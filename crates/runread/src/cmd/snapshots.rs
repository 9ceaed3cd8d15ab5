//! `runread snapshots`: the sealed copies of shared runs the store keeps, and until when.

use crate::Res;
use crate::context::Context;
use runread_core::timefmt::{now_ms, rfc3339};
use serde_json::json;
/// Most events of the snapshot log `runread snapshots` shows (newest first).
pub(crate) const SNAPSHOT_LOG_SHOWN: u32 = 20;

/// The snapshot log's newest events, oldest of them first.
fn print_log(log: &[serde_json::Value]) {
    if log.is_empty() {
        return;
    }
    outln!("recently:");
    for e in log.iter().rev() {
        outln!(
            "  {}  {:<9} run {} ({} bytes)",
            e["at"].as_str().unwrap_or(""),
            e["event"].as_str().unwrap_or(""),
            e["runId"].as_str().unwrap_or(""),
            e["bytes"]
        );
    }
}

pub(crate) fn snapshots(ctx: &Context, json: bool) -> Res {
    let store = ctx.store.clone();
    let now = now_ms();
    // What has no live grant any more is destroyed first: the list says what is kept now.
    let owner = ctx.owner()?;
    crate::cmd::ingest::maintain_snapshots(&owner);
    let kept = store.snapshots().map_err(|e| e.to_string())?;
    let grants = store.grants().map_err(|e| e.to_string())?;
    let rows: Vec<_> = kept
        .iter()
        .map(|s| {
            let holding: Vec<_> = grants
                .iter()
                .filter(|g| {
                    g.is_live(now)
                        && g.target.session_id == s.session_id
                        && g.target.generation == s.generation
                        && g.target.run_id == s.run_id
                })
                .collect();
            let until = holding.iter().map(|g| g.expires_at_ms).max();
            let standing = owner
                .snapshot_standing(s)
                .map(|st| st.as_str())
                .unwrap_or("unavailable");
            json!({
                "runId": s.run_id,
                "sessionId": s.session_id,
                "generation": s.generation,
                "features": s.features,
                "lines": s.lines,
                "bytes": s.bytes,
                "sealedAt": rfc3339(s.created_at_ms),
                "grants": holding.iter().map(|g| json!({"grantId": g.id, "to": g.reader_name})).collect::<Vec<_>>(),
                "until": until.map(rfc3339),
                "standing": standing,
            })
        })
        .collect();
    let log: Vec<_> = store
        .snapshot_log(SNAPSHOT_LOG_SHOWN)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|e| {
            json!({"at": rfc3339(e.at_ms), "event": e.event, "runId": e.run_id,
                   "sessionId": e.session_id, "lines": e.lines, "bytes": e.bytes})
        })
        .collect();
    // The ids an agent chose are shown as every view of the owner's is: masked.
    let service = ctx.owner()?;
    let masked = |v: Vec<serde_json::Value>| {
        service
            .shown(v)
            .map(|m| m.into_inner())
            .map_err(|e| format!("cannot read the known secrets to mask the snapshots: {e}"))
    };
    let (rows, log) = (masked(rows)?, masked(log)?);
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({"snapshots": rows, "log": log}))
                .map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    print_log(&log);
    if rows.is_empty() {
        outln!("no snapshots: no shared run's evidence is kept in the store");
        return Ok(());
    }
    let total: u64 = kept.iter().map(|s| s.bytes).sum();
    for r in &rows {
        let to: Vec<&str> = r["grants"]
            .as_array()
            .map(|g| g.iter().filter_map(|g| g["to"].as_str()).collect())
            .unwrap_or_default();
        outln!(
            "run {}  {}  {} bytes, {} lines  {}  until {}  held by {}",
            r["runId"].as_str().unwrap_or(""),
            r["standing"].as_str().unwrap_or(""),
            r["bytes"],
            r["lines"],
            r["features"],
            r["until"].as_str().unwrap_or("(no live grant)"),
            to.join(", ")
        );
    }
    outln!(
        "{} snapshots, {total} bytes of {} allowed",
        rows.len(),
        runread_core::limits::SNAPSHOT_STORE_MAX_BYTES
    );
    Ok(())
}
