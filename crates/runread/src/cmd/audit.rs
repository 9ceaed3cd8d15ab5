//! `runread audit`, `runread recover inspect`: the owner's view of the execution gate.

use crate::context::Context;
use serde_json::json;

use runread_core::redact::MaskedView;
use runread_core::target::is_id;
use runread_core::timefmt::{now_ms, parse_duration_ms, parse_rfc3339, rfc3339};
use runread_gate::log::{self, Retention};
use runread_service::Owner;
use runread_service::owner::shown::{ShownCall, ShownRefusal};
use runread_store::{AuditCursor, AuditFilter, AuditOutcome, Reader, Store, UnadmittedTally};

use crate::human;

use crate::args::{AUDIT_PAGE_DEFAULT, AuditArgs, AuditCmd};

/// One page of the audit, newest first, filtered in the store; its last line (or `more` and
/// `nextBefore` in JSON) says how many calls are left and where the next page starts.
pub fn audit(ctx: &Context, args: &AuditArgs) -> Result<(), String> {
    let store = ctx.store.clone();
    match &args.cmd {
        None => {}
        Some(AuditCmd::Retention { days, calls, json }) => {
            return retention(&*store, *days, *calls, *json);
        }
        Some(AuditCmd::Prune { json }) => return prune(&*store, *json),
        Some(AuditCmd::Verify { json }) => return verify(&*store, *json),
    }
    let filter = audit_filter(&*store, args)?;
    let mut page = store
        .audit_page(&filter, args.limit)
        .map_err(|e| e.to_string())?;
    let next = page.next();
    // Shown as every view of the owner's is: masked whole.
    let service = ctx.owner()?;
    let calls = service
        .shown_calls(std::mem::take(&mut page.rows))
        .map_err(|e| format!("cannot read the known secrets to mask the audit: {e}"))?;
    let refused = RefusedBeforeGate::read(&*store, &service, args.limit, &filter)?;
    if args.json {
        let rows: Vec<_> = calls.iter().map(|c| row_json(c)).collect();
        let next = next.as_ref().map(|c| c.start_id.clone());
        let mut out = json!({"rows": rows, "more": page.more, "nextBefore": next});
        refused.add_json(&mut out);
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    if calls.is_empty() && refused.is_empty() {
        outln!("no calls");
        return Ok(());
    }
    if calls.is_empty() {
        outln!("no calls reached the gate");
    } else {
        print_rows(&calls);
        outln!(
            "{}",
            last_line(calls.len(), next.as_ref(), page.more, args, &filter)
        );
    }
    refused.print(args.limit);
    Ok(())
}

/// The calls refused before the gate that the command's filters let through (they have no
/// grant, no receipt and no start id: none with `--grant`, `--before` or an outcome other than
/// `refused`), and the counts of calls with no valid credential (which name no reader or run:
/// none with `--reader` or `--run`).
struct RefusedBeforeGate {
    rows: Vec<MaskedView<ShownRefusal>>,
    more: u64,
    unadmitted: Vec<UnadmittedTally>,
}

impl RefusedBeforeGate {
    fn read(
        store: &dyn Store,
        owner: &Owner,
        limit: u32,
        filter: &AuditFilter,
    ) -> Result<RefusedBeforeGate, String> {
        let mut refused = RefusedBeforeGate {
            rows: Vec::new(),
            more: 0,
            unadmitted: Vec::new(),
        };
        let Some(of_refusals) = filter.refused_before_gate() else {
            return Ok(refused);
        };
        let page = store
            .refusals_page(&of_refusals, limit)
            .map_err(|e| e.to_string())?;
        refused.more = page.more;
        refused.rows = owner
            .shown_refusals(page.rows)
            .map_err(|e| format!("cannot read the known secrets to mask the audit: {e}"))?;
        if filter.holds_unadmitted() {
            refused.unadmitted = store
                .unadmitted_tallies(filter.since_ms.unwrap_or(i64::MIN))
                .map_err(|e| e.to_string())?;
        }
        Ok(refused)
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.unadmitted.is_empty()
    }

    /// `refusedBeforeGate` (`rows`, `more`) and `unadmitted` (per code) in `out`.
    fn add_json(&self, out: &mut serde_json::Value) {
        let rows: Vec<_> = self
            .rows
            .iter()
            .map(|r| {
                let (f, reader) = (&r.refusal, r.reader.as_ref());
                json!({
                    "at": rfc3339(f.created_at_ms), "tool": f.tool, "code": f.code,
                    "readerId": f.reader_id, "reader": reader.map(|r| &r.name), "target": f.target,
                })
            })
            .collect();
        let unadmitted: Vec<_> = self
            .unadmitted
            .iter()
            .map(|t| {
                json!({"code": t.code, "calls": t.calls,
                    "firstMinute": rfc3339(t.first_minute_ms), "lastMinute": rfc3339(t.last_minute_ms)})
            })
            .collect();
        out["refusedBeforeGate"] = json!({"rows": rows, "more": self.more});
        out["unadmitted"] = json!(unadmitted);
    }

    fn print(&self, limit: u32) {
        let now = now_ms();
        if !self.rows.is_empty() {
            outln!();
            outln!("refused before the gate (no start record holds them), newest first:");
            outln!(
                "{:<36} {:<16} {:<20} {:<10} CODE",
                "AT",
                "READER",
                "TOOL",
                "RUN"
            );
            for r in &self.rows {
                let f = &r.refusal;
                let at = format!(
                    "{} ({})",
                    human::when(f.created_at_ms),
                    human::ago(f.created_at_ms, now)
                );
                outln!(
                    "{:<36} {:<16} {:<20} {:<10} {}",
                    at,
                    r.reader
                        .as_ref()
                        .map_or(f.reader_id.as_str(), |r| r.name.as_str()),
                    f.tool,
                    f.target.as_ref().map_or("-", |t| t.run_id.as_str()),
                    f.code
                );
            }
            let shown = human::count(self.rows.len() as u64, "refused call", "refused calls");
            match self.more {
                0 => outln!("{shown}; no more"),
                more => outln!(
                    "{shown}; {more} more (narrow with --since or --reader, or raise --limit {limit})"
                ),
            }
        }
        if !self.unadmitted.is_empty() {
            outln!();
            outln!("{}", unadmitted_line(&self.unadmitted));
        }
    }
}

/// One line for the calls with no valid credential: how many per code, and over which minutes.
fn unadmitted_line(tallies: &[UnadmittedTally]) -> String {
    let per_code: Vec<String> = tallies
        .iter()
        .map(|t| format!("{} {}", t.calls, t.code))
        .collect();
    let first = tallies.iter().map(|t| t.first_minute_ms).min().unwrap_or(0);
    let last = tallies.iter().map(|t| t.last_minute_ms).max().unwrap_or(0);
    let minutes = if first == last {
        format!("in the minute of {}", human::when(first))
    } else {
        format!("from {} to {}", human::when(first), human::when(last))
    };
    format!(
        "calls with no valid credential (counted per minute, not kept one by one): {} {minutes}",
        per_code.join(", ")
    )
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
        tool: args.tool.clone(),
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

fn since_ms(s: &str) -> Result<i64, String> {
    match parse_duration_ms(s) {
        Some(d) => Ok(now_ms() - d),
        None => parse_rfc3339(s).ok_or_else(|| {
            format!("--since {s:?}: use a duration (15m, 2h, 7d) or an RFC 3339 time")
        }),
    }
}

fn row_json(c: &ShownCall) -> serde_json::Value {
    let (m, receipts, reader) = (&c.meta, &c.receipts, c.reader.as_ref());
    json!({
        "startId": m.start_id, "at": rfc3339(m.created_at_ms), "tool": m.tool, "grantId": m.grant_id,
        "readerId": reader.map(|r| &r.id), "reader": reader.map(|r| &r.name),
        "keyHashPrefix": m.key_hash_prefix, "target": m.target, "inputDigest": m.input_digest,
        "bindingDigest": m.binding_digest,
        "receipts": receipts.iter().map(|r| json!({"outcome": r.outcome, "at": rfc3339(r.created_at_ms),
            "resultDigest": r.result_digest, "outputBytes": r.output_bytes,
            "evidence": r.evidence, "state": r.state})).collect::<Vec<_>>(),
    })
}

fn print_rows(calls: &[MaskedView<ShownCall>]) {
    use crate::human::WHEN_CHARS;
    outln!(
        "{:<WHEN_CHARS$} {:<27} {:<20} {:<16} {:<10} OUTCOME",
        "AT",
        "START",
        "TOOL",
        "READER",
        "RUN"
    );
    for c in calls {
        let (m, receipts) = (&c.meta, &c.receipts);
        let outcome = if receipts.is_empty() {
            "(no receipt: interrupted)".to_owned()
        } else {
            receipts
                .iter()
                .map(receipt_text)
                .collect::<Vec<_>>()
                .join(", ")
        };
        outln!(
            "{:<WHEN_CHARS$} {:<27} {:<20} {:<16} {:<10} {}",
            human::when(m.created_at_ms),
            m.start_id,
            m.tool,
            c.reader.as_ref().map_or("-", |r| r.name.as_str()),
            m.target.as_ref().map_or("-", |t| t.run_id.as_str()),
            outcome
        );
    }
}

/// A receipt as the listing shows it: its outcome, then what the result carried, if recorded
/// (`ok (session_file, settled)`).
fn receipt_text(r: &runread_store::Receipt) -> String {
    let carried: Vec<&str> = [r.evidence.as_deref(), r.state.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    match carried.is_empty() {
        true => r.outcome.clone(),
        false => format!("{} ({})", r.outcome, carried.join(", ")),
    }
}

/// How many calls the page shows and how many more match, with the command for the next page:
/// the same filters (`--since` as the time it stood for, so the next page reads the same
/// window) continuing `--before` this page's last row.
fn last_line(
    shown: usize,
    next: Option<&AuditCursor>,
    more: u64,
    args: &AuditArgs,
    filter: &AuditFilter,
) -> String {
    let shown = format!(
        "{shown} call{}, newest first",
        if shown == 1 { "" } else { "s" }
    );
    let Some(next) = next else {
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
        ("--tool", args.tool.as_deref()),
        ("--outcome", filter.outcome.map(AuditOutcome::as_str)),
    ] {
        if let Some(v) = value {
            command.push_str(&format!(" {flag} {v}"));
        }
    }
    format!("{shown}; {more} more; next page: {command}")
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

/// `runread audit retention`: shows the retention, after setting what is given.
fn retention(
    store: &dyn Store,
    days: Option<u32>,
    calls: Option<u64>,
    as_json: bool,
) -> Result<(), String> {
    let mut r = Retention::of(store).map_err(|e| e.to_string())?;
    if days.is_some() || calls.is_some() {
        r = Retention::new(days.unwrap_or(r.days), calls.unwrap_or(r.calls))
            .map_err(|e| e.to_string())?;
        r.save(store).map_err(|e| e.to_string())?;
    }
    let kept = store
        .audit_count_after(log::LOG_START_MS)
        .map_err(|e| e.to_string())?;
    if as_json {
        let out = json!({"days": r.days, "calls": r.calls, "kept": kept});
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    outln!(
        "calls are kept {} days, and at most {} of them (the oldest go first); {} kept now",
        r.days,
        r.calls,
        kept
    );
    Ok(())
}

/// `runread audit prune`: one maintenance pass now.
fn prune(store: &dyn Store, as_json: bool) -> Result<(), String> {
    let r = Retention::of(store).map_err(|e| e.to_string())?;
    let m = log::maintain(store, r, now_ms()).map_err(|e| e.to_string())?;
    if as_json {
        let out = json!({
            "seals": m.seals, "sealed": m.sealed, "prunes": m.prunes, "pruned": m.pruned,
            "mismatchAt": m.mismatch, "brokenChainAt": m.broken_chain,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
    } else {
        outln!(
            "sealed {} calls in {} checkpoints; removed {} calls in {}",
            m.sealed,
            m.seals,
            m.pruned,
            m.prunes
        );
    }
    match (m.mismatch, m.broken_chain) {
        (None, None) => Ok(()),
        _ => Err(
            "the audit log does not verify: nothing of it was removed; see `runread audit verify`"
                .into(),
        ),
    }
}

/// `runread audit verify`: the log that remains is whole, or what does not hold (exit 1).
fn verify(store: &dyn Store, as_json: bool) -> Result<(), String> {
    let v = log::verify(store).map_err(|e| e.to_string())?;
    if as_json {
        let out = json!({
            "whole": v.problem.is_none(),
            "problem": v.problem.as_ref().map(ToString::to_string),
            "checkpoints": v.checkpoints,
            "sealsChecked": v.seals_checked,
            "callsChecked": v.records_checked,
            "callsPruned": v.records_pruned,
            "prunedUpTo": v.pruned_upto_ms.map(rfc3339),
            "callsNotSealedYet": v.unsealed,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
    } else if v.problem.is_none() {
        outln!(
            "the audit log is whole: {} calls checked against {} seals; {} removed by the retention{}; {} newer calls not sealed yet",
            v.records_checked,
            v.seals_checked,
            v.records_pruned,
            v.pruned_upto_ms
                .map(|t| format!(" (up to {})", human::when(t)))
                .unwrap_or_default(),
            v.unsealed
        );
    }
    match v.problem {
        None => Ok(()),
        Some(p) => Err(format!("the audit log is NOT whole: {p}")),
    }
}
