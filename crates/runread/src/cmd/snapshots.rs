//! `runread snapshots`: the copies of shared runs the store holds sealed for sharing, and until
//! when (a run the owner kept with `runread keep` is listed by `runread keep list`).

use serde::{Deserialize, Serialize};
use serde_json::json;

use runread_core::Feature;
use runread_core::timefmt::{now_ms, parse_rfc3339, rfc3339};
use runread_service::Owner;
use runread_store::{Grant, SnapshotSummary};

use crate::Res;
use crate::context::Context;
use crate::human;

/// Most events of the snapshot log `runread snapshots` shows (newest first).
pub(crate) const SNAPSHOT_LOG_SHOWN: u32 = 20;

/// One snapshot as `runread snapshots` shows it (and `--json` prints it).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotRow {
    run_id: String,
    session_id: String,
    generation: u64,
    features: Vec<Feature>,
    lines: u64,
    bytes: u64,
    sealed_at: String,
    /// The live grants holding it.
    grants: Vec<Holder>,
    /// When the last of them ends.
    until: Option<String>,
    /// Whether it still holds its run as indexed (`runread_service::evidence::snapshot::Standing`).
    standing: String,
}

/// A grant neither revoked nor expired holding a snapshot.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Holder {
    grant_id: String,
    to: String,
    /// `live`, or `stale` when it cannot be read (its run is no longer current).
    state: String,
    /// Why a stale grant cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stale_reason: Option<String>,
}

/// One event of the snapshot log.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogRow {
    at: String,
    event: String,
    run_id: String,
    session_id: String,
    lines: u64,
    bytes: u64,
}

/// An RFC 3339 time (as the rows keep it, for `--json`) as a person reads it.
fn shown_time(rfc3339: &str) -> String {
    parse_rfc3339(rfc3339).map_or_else(|| rfc3339.to_owned(), human::when)
}

/// The snapshot log's newest events, oldest of them first.
fn print_log(log: &[LogRow], prefixes: &[String]) {
    if log.is_empty() {
        return;
    }
    outln!("recently:");
    for (e, run) in log.iter().zip(prefixes).rev() {
        outln!(
            "  {}  {:<9} run {} ({})",
            shown_time(&e.at),
            e.event,
            run,
            human::size(e.bytes)
        );
    }
}

/// `s` as listed, with the live grants (of `grants`) holding it at `now`.
fn row(owner: &Owner, s: &SnapshotSummary, grants: &[Grant], now: i64) -> SnapshotRow {
    let holding: Vec<&Grant> = grants
        .iter()
        .filter(|g| {
            g.is_live(now)
                && g.target.session_id == s.session_id
                && g.target.generation == s.generation
                && g.target.run_id == s.run_id
        })
        .collect();
    SnapshotRow {
        run_id: s.run_id.clone(),
        session_id: s.session_id.clone(),
        generation: s.generation,
        features: s.features.clone(),
        lines: s.lines,
        bytes: s.bytes,
        sealed_at: rfc3339(s.created_at_ms),
        grants: holding
            .iter()
            .map(|g| {
                let standing = owner.grant_standing(g, now);
                Holder {
                    grant_id: g.id.clone(),
                    to: g.reader_name.clone(),
                    state: standing
                        .map(|st| st.state.as_str())
                        .unwrap_or("unavailable")
                        .to_owned(),
                    stale_reason: standing
                        .ok()
                        .and_then(|st| st.stale)
                        .map(|why| why.as_str().to_owned()),
                }
            })
            .collect(),
        until: holding.iter().map(|g| g.expires_at_ms).max().map(rfc3339),
        standing: owner
            .snapshot_standing(s)
            .map(|st| st.as_str())
            .unwrap_or("unavailable")
            .to_owned(),
    }
}

/// `runread snapshots`: what is sealed for sharing, held by which grants until when, and the log's newest
/// events, masked as every view of the owner's is (the ids an agent chose).
pub(crate) fn snapshots(ctx: &Context, json: bool) -> Res {
    let (store, now, owner) = (&ctx.store, now_ms(), ctx.owner()?);
    // What has no live grant any more is destroyed first: the list says what is kept now.
    crate::cmd::ingest::maintain_snapshots(&owner);
    let kept = store.snapshots().map_err(|e| e.to_string())?;
    let grants = store.grants().map_err(|e| e.to_string())?;
    let rows: Vec<SnapshotRow> = kept.iter().map(|s| row(&owner, s, &grants, now)).collect();
    let log: Vec<LogRow> = store
        .snapshot_log(SNAPSHOT_LOG_SHOWN)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|e| LogRow {
            at: rfc3339(e.at_ms),
            event: e.event,
            run_id: e.run_id,
            session_id: e.session_id,
            lines: e.lines,
            bytes: e.bytes,
        })
        .collect();
    let unmasked = |e: runread_core::ErrorCode| {
        format!("cannot read the known secrets to mask the snapshots: {e}")
    };
    let rows = owner.shown(rows).map_err(unmasked)?.into_inner();
    let log = owner.shown(log).map_err(unmasked)?.into_inner();
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({"snapshots": rows, "log": log}))
                .map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    let prefixes = |ids: Vec<&str>| {
        owner
            .run_id_prefixes(&ids)
            .map_err(|e| format!("cannot list the snapshots: {e}"))
    };
    print_log(
        &log,
        &prefixes(log.iter().map(|e| e.run_id.as_str()).collect())?,
    );
    let kept_prefixes = prefixes(rows.iter().map(|r| r.run_id.as_str()).collect())?;
    print_rows(&rows, &kept_prefixes, kept.iter().map(|s| s.bytes).sum());
    Ok(())
}

/// The snapshots as lines, and their total against the store's bound.
fn print_rows(rows: &[SnapshotRow], prefixes: &[String], total: u64) {
    if rows.is_empty() {
        outln!("no snapshots: no shared run's evidence is sealed for sharing in the store");
        return;
    }
    let now = now_ms();
    for (r, run) in rows.iter().zip(prefixes) {
        let to: Vec<String> = r
            .grants
            .iter()
            .map(|g| match &g.stale_reason {
                Some(why) => format!("{} ({}: {why})", g.to, g.state),
                None if g.state != "live" => format!("{} ({})", g.to, g.state),
                None => g.to.clone(),
            })
            .collect();
        let features: Vec<&str> = r.features.iter().map(|f| f.as_str()).collect();
        let sealed = parse_rfc3339(&r.sealed_at).map(|ms| human::ago(ms, now));
        outln!(
            "run {}  {}  {}, {}  {}  sealed {}  until {}  held by {}",
            run,
            r.standing,
            human::size(r.bytes),
            human::count(r.lines, "line", "lines"),
            features.join(","),
            sealed.as_deref().unwrap_or("at an unknown time"),
            r.until
                .as_deref()
                .map_or("(no live grant)".to_owned(), shown_time),
            to.join(", ")
        );
    }
    outln!(
        "{}, {} of {} allowed",
        human::count(rows.len() as u64, "snapshot", "snapshots"),
        human::size(total),
        human::size(runread_core::limits::SNAPSHOT_STORE_MAX_BYTES)
    );
}
