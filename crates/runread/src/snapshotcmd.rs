//! `runread snapshots`: the sealed copies of shared runs the store keeps, and until when.

use super::*;

pub(crate) fn snapshots(home: &crate::home::Home, store: Arc<dyn Store>, json: bool) -> Res {
    let now = now_ms();
    // What has no live grant any more is destroyed first: the list says what is kept now.
    let keys = crate::servecmd::gate_keys(home)?;
    crate::ingestcmd::maintain_snapshots(&keys, &*store);
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
            let standing = runread_service::snapshot::standing(&*store, &keys, s)
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
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
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
