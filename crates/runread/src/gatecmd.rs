//! `runread audit`, `runread recover inspect`: the owner's view of the execution gate.

use serde_json::json;

use runread_core::target::is_id;
use runread_core::timefmt::{now_ms, parse_duration_ms, parse_rfc3339, rfc3339};
use runread_store::{
    AuditCursor, AuditFilter, AuditOutcome, AuditPage, Reader, Receipt, StartMeta, Store,
};

use crate::args::{AUDIT_PAGE_DEFAULT, AuditArgs};

/// One page of the audit, newest first, filtered in the store; its last line (or `more` and
/// `nextBefore` in JSON) says how many calls are left and where the next page starts.
pub fn audit(
    home: &crate::home::Home,
    store: std::sync::Arc<dyn Store>,
    args: &AuditArgs,
) -> Result<(), String> {
    let filter = audit_filter(&*store, args)?;
    let readers = store.readers().map_err(|e| e.to_string())?;
    let who = |m: &StartMeta| reader_of(&readers, m);
    let mut page = store
        .audit_page(&filter, args.limit)
        .map_err(|e| e.to_string())?;
    // The target ids an agent wrote are shown masked, as everything an agent wrote is.
    let service = crate::servecmd::service(home, store, runread_service::Config::default())?;
    service
        .mask_targets(page.rows.iter_mut().filter_map(|(m, _)| m.target.as_mut()))
        .map_err(|e| format!("cannot read the known secrets to mask the audit: {e}"))?;
    if args.json {
        let rows: Vec<_> = page
            .rows
            .iter()
            .map(|(m, r)| row_json(m, r, who(m)))
            .collect();
        let next = page.next().map(|c| c.start_id);
        let out = json!({"rows": rows, "more": page.more, "nextBefore": next});
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    if page.rows.is_empty() {
        outln!("no calls");
        return Ok(());
    }
    print_rows(&page, who);
    outln!("{}", last_line(&page, args, &filter));
    Ok(())
}

/// The store's filter for the command's flags: `--since` as a time, `--before` as the start
/// record it names.
fn audit_filter(store: &dyn Store, args: &AuditArgs) -> Result<AuditFilter, String> {
    let since_ms = args.since.as_deref().map(since_ms).transpose()?;
    for (flag, id) in [
        ("--grant", &args.grant),
        ("--run", &args.run),
        ("--before", &args.before),
    ] {
        match id {
            Some(id) if !is_id(id) => return Err(format!("{flag} {id:?} is not an id")),
            _ => {}
        }
    }
    let reader_id = match &args.reader {
        None => None,
        Some(name) => Some(reader_named(store, name)?.id),
    };
    let before = match &args.before {
        None => None,
        Some(id) => {
            let meta = store
                .start_meta(id)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("--before {id:?}: no start record has this id"))?;
            Some(AuditCursor::after(&meta))
        }
    };
    let outcome = match args.outcome.as_deref() {
        None => None,
        Some(o) => Some(AuditOutcome::parse(o).ok_or_else(|| format!("--outcome {o:?}"))?),
    };
    Ok(AuditFilter {
        since_ms,
        grant_id: args.grant.clone(),
        reader_id,
        run_id: args.run.clone(),
        outcome,
        before,
    })
}

/// The reader `--reader NAME` names: the live one of that name, else the one removed last.
fn reader_named(store: &dyn Store, name: &str) -> Result<Reader, String> {
    let mut named: Vec<Reader> = store
        .readers()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|r| r.name == name)
        .collect();
    named.sort_by_key(|r| (r.removed_at_ms.is_none(), r.removed_at_ms));
    named.pop().ok_or_else(|| {
        format!("--reader {name:?}: no reader has this name; see `runread reader list`")
    })
}

/// The reader whose key made a call.
fn reader_of<'a>(readers: &'a [Reader], m: &StartMeta) -> Option<&'a Reader> {
    let id = m.reader_id.as_deref()?;
    readers.iter().find(|r| r.id == id)
}

fn since_ms(s: &str) -> Result<i64, String> {
    match parse_duration_ms(s) {
        Some(d) => Ok(now_ms() - d),
        None => parse_rfc3339(s).ok_or_else(|| {
            format!("--since {s:?}: use a duration (15m, 2h, 7d) or an RFC 3339 time")
        }),
    }
}

fn row_json(m: &StartMeta, receipts: &[Receipt], reader: Option<&Reader>) -> serde_json::Value {
    json!({
        "startId": m.start_id, "at": rfc3339(m.created_at_ms), "tool": m.tool, "grantId": m.grant_id,
        "readerId": reader.map(|r| &r.id), "reader": reader.map(|r| &r.name),
        "keyHashPrefix": m.key_hash_prefix, "target": m.target, "inputDigest": m.input_digest,
        "bindingDigest": m.binding_digest,
        "receipts": receipts.iter().map(|r| json!({"outcome": r.outcome, "at": rfc3339(r.created_at_ms),
            "resultDigest": r.result_digest, "outputBytes": r.output_bytes})).collect::<Vec<_>>(),
    })
}

fn print_rows<'a>(page: &AuditPage, who: impl Fn(&StartMeta) -> Option<&'a Reader>) {
    outln!(
        "{:<24} {:<27} {:<20} {:<16} {:<10} OUTCOME",
        "AT",
        "START",
        "TOOL",
        "READER",
        "RUN"
    );
    for (m, receipts) in &page.rows {
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
            "{:<24} {:<27} {:<20} {:<16} {:<10} {}",
            rfc3339(m.created_at_ms),
            m.start_id,
            m.tool,
            who(m).map_or("-", |r| r.name.as_str()),
            m.target.as_ref().map_or("-", |t| t.run_id.as_str()),
            outcome
        );
    }
}

/// How many calls the page shows and how many more match, with the command for the next page:
/// the same filters (`--since` as the time it stood for, so the next page reads the same
/// window) continuing `--before` this page's last row.
fn last_line(page: &AuditPage, args: &AuditArgs, filter: &AuditFilter) -> String {
    let shown = page.rows.len();
    let shown = format!(
        "{shown} call{}, newest first",
        if shown == 1 { "" } else { "s" }
    );
    let Some(next) = page.next() else {
        return format!("{shown}; no more");
    };
    let mut command = format!("runread audit --before {}", next.start_id);
    if let Some(ms) = filter.since_ms {
        command.push_str(&format!(" --since {}", rfc3339(ms)));
    }
    if args.limit != AUDIT_PAGE_DEFAULT {
        command.push_str(&format!(" --limit {}", args.limit));
    }
    for (flag, value) in [
        ("--grant", args.grant.as_deref()),
        ("--reader", args.reader.as_deref()),
        ("--run", args.run.as_deref()),
        ("--outcome", filter.outcome.map(AuditOutcome::as_str)),
    ] {
        if let Some(v) = value {
            command.push_str(&format!(" {flag} {v}"));
        }
    }
    format!("{shown}; {} more; next page: {command}", page.more)
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
        runread_service::definitions(),
        &runread_service::pinned_bindings(),
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
