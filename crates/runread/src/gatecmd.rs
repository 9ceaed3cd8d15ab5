//! `runread audit`, `runread recover inspect`: the owner's view of the execution gate.

use serde_json::json;

use runread_core::timefmt::{now_ms, parse_duration_ms, parse_rfc3339, rfc3339};
use runread_store::Store;

/// Most calls `runread audit` prints.
const AUDIT_MAX_ROWS: u32 = 10_000;

pub fn audit(store: &dyn Store, since: Option<&str>, as_json: bool) -> Result<(), String> {
    let since_ms = match since {
        None => 0,
        Some(s) => match parse_duration_ms(s) {
            Some(d) => now_ms() - d,
            None => parse_rfc3339(s).ok_or_else(|| {
                format!("--since {s:?}: use a duration (15m, 2h, 7d) or an RFC 3339 time")
            })?,
        },
    };
    let rows = store
        .audit(since_ms, AUDIT_MAX_ROWS)
        .map_err(|e| e.to_string())?;
    if as_json {
        let out: Vec<_> = rows
            .iter()
            .map(|(m, r)| {
                json!({
                    "startId": m.start_id, "at": rfc3339(m.created_at_ms), "tool": m.tool, "grantId": m.grant_id,
                    "keyHashPrefix": m.key_hash_prefix, "target": m.target, "inputDigest": m.input_digest,
                    "bindingDigest": m.binding_digest,
                    "receipts": r.iter().map(|r| json!({"outcome": r.outcome, "at": rfc3339(r.created_at_ms),
                        "resultDigest": r.result_digest, "outputBytes": r.output_bytes})).collect::<Vec<_>>(),
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    if rows.is_empty() {
        outln!("no calls");
        return Ok(());
    }
    outln!(
        "{:<24} {:<27} {:<20} {:<14} {:<10} OUTCOME",
        "AT",
        "START",
        "TOOL",
        "KEY",
        "RUN"
    );
    for (m, receipts) in &rows {
        let outcome = if receipts.is_empty() {
            "(no receipt: interrupted)".to_owned()
        } else {
            receipts
                .iter()
                .map(|r| r.outcome.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        outln!(
            "{:<24} {:<27} {:<20} {:<14} {:<10} {}",
            rfc3339(m.created_at_ms),
            m.start_id,
            m.tool,
            m.key_hash_prefix,
            m.target.as_ref().map_or("-", |t| t.run_id.as_str()),
            outcome
        );
    }
    Ok(())
}

pub fn inspect(store: &dyn Store, start_id: &str, as_json: bool) -> Result<(), String> {
    // Only the start record's metadata (no sealed input) and the compiled-in registry; no key
    // provider is opened and no adapter is called.
    let meta = store
        .start_meta(start_id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no start record {start_id:?}"))?;
    let receipts = store.receipts(start_id).map_err(|e| e.to_string())?;
    let registry = runread_gate::Registry::build(
        runread_service::adapters(),
        runread_service::PINNED_BINDINGS,
    )
    .map_err(|e| e.to_string())?;
    let i = runread_gate::recovery::inspect(&meta, receipts, &registry);
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&i).map_err(|e| e.to_string())?
        );
    } else {
        outln!("start      {}", i.start_id);
        outln!(
            "tool       {} (binding {})",
            i.tool,
            if i.binding_current {
                "current"
            } else {
                "changed since"
            }
        );
        outln!("state      {} ({} receipts)", i.state, i.receipts.len());
        outln!("effect     {}", i.effect);
        outln!("verdict    {}", i.verdict);
    }
    Ok(())
}
