//! The Audit page: every call a reader made in a window, filtered by reader, grant, run and
//! outcome, charted over the window and listed with its receipts; then the calls refused before
//! the gate and the counts of calls with no valid credential.

use maud::{Markup, html};

use runread_core::timefmt::rfc3339;

use super::layout::{enc, layout, short, short_time};
use crate::auth::SessionView;
use crate::views::{AUDIT_WINDOWS, AuditView, RefusedView};

pub(crate) fn audit(s: &SessionView, v: &AuditView) -> Markup {
    layout(
        Some(s),
        "Audit",
        "Audit",
        html! {
            h1 { "Audit" }
            p.note { "Every call a reader made: its start record (written before any byte left) and its receipts. Inputs are sealed and never shown." }
            (audit_filters(v))
            (audit_chart(v))
            @if v.more > 0 {
                p.warning { (v.more) (if v.more == 1 { " more call" } else { " more calls" }) " in this window beyond the newest " (crate::AUDIT_PAGE_MAX) " shown and charted. Choose a shorter window or a filter to see earlier ones, or page through them all with " code { "runread audit" } "." }
            }
            @if v.rows.is_empty() && v.refused.rows.is_empty() {
                p.empty { "No calls." }
            } @else if v.rows.is_empty() {
                p.empty { "No calls reached the gate." }
            } @else {
                (audit_table(v))
            }
            (refused_table(&v.refused))
        },
    )
}

/// The audit page's window tabs (each keeping the other filters) and its filter form.
fn audit_filters(v: &AuditView) -> Markup {
    let window = v.window.0;
    let filter_link = |w: &str| {
        let mut q = vec![format!("window={w}")];
        if let Some(r) = &v.reader {
            q.push(format!("reader={}", enc(r)));
        }
        if let Some(g) = &v.grant {
            q.push(format!("grant={}", enc(g)));
        }
        if let Some(r) = &v.run {
            q.push(format!("run={}", enc(r)));
        }
        if let Some(t) = &v.tool {
            q.push(format!("tool={}", enc(t)));
        }
        if let Some(o) = v.outcome {
            q.push(format!("outcome={}", o.as_str()));
        }
        format!("/audit?{}", q.join("&"))
    };
    html! {
        nav.tabs aria-label="Window" {
            @for (w, label, _, _) in AUDIT_WINDOWS {
                @if w == window { a href=(filter_link(w)) aria-current="page" { (label) } }
                @else { a href=(filter_link(w)) { (label) } }
            }
        }
        form.filters method="get" action="/audit" {
            input type="hidden" name="window" value=(window);
            label { "Reader "
                select name="reader" {
                    option value="" selected[v.reader.is_none()] { "all" }
                    @for r in &v.readers {
                        option value=(r.id) selected[v.reader.as_deref() == Some(r.id.as_str())] {
                            (r.name) @if r.removed_at_ms.is_some() { " (removed)" }
                        }
                    }
                }
            }
            label { "Grant "
                select name="grant" {
                    option value="" selected[v.grant.is_none()] { "all" }
                    @for g in &v.grants {
                        option value=(g.id) selected[v.grant.as_deref() == Some(g.id.as_str())] { (g.reader_name) " · " (short(&g.target.run_id, 13)) }
                    }
                }
            }
            label { "Run id " input type="text" name="run" value=(v.run.clone().unwrap_or_default()); }
            label { "Tool "
                select name="tool" {
                    option value="" selected[v.tool.is_none()] { "all" }
                    @for t in runread_service::tools::ALL.iter() {
                        option value=(t.name) selected[v.tool.as_deref() == Some(t.name)] { (t.name) }
                    }
                }
            }
            label { "Outcome "
                select name="outcome" {
                    option value="" selected[v.outcome.is_none()] { "all" }
                    @for o in runread_store::AuditOutcome::ALL {
                        option value=(o.as_str()) selected[v.outcome == Some(o)] { (o.as_str()) }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
    }
}

/// The audit page's chart: the window's calls counted into its bars, oldest first.
fn audit_chart(v: &AuditView) -> Markup {
    let (_, window_label, span, bars) = v.window;
    let bucket = (span / bars).max(1);
    let start = v.now_ms - span;
    let mut counts = vec![0u64; usize::try_from(bars).unwrap_or(0)];
    for call in &v.rows {
        let i = (call.meta.created_at_ms - start) / bucket;
        if let Some(c) = usize::try_from(i).ok().and_then(|i| counts.get_mut(i)) {
            *c += 1;
        }
    }
    let peak = counts.iter().copied().max().unwrap_or(0).max(1);
    html! {
        figure.chart {
            svg viewBox=(format!("0 0 {} 60", bars * 10)) preserveAspectRatio="none" role="img"
                aria-label=(format!("{} calls in the {window_label}", v.rows.len())) {
                @for (i, c) in counts.iter().enumerate() {
                    @let h = (*c as f64 / peak as f64 * 56.0).round();
                    rect x=(i * 10 + 1) y=(58.0 - h) width="8" height=(h) class="bar" {
                        title { (c) " calls from " (short_time(&rfc3339(start + bucket * i as i64))) }
                    }
                }
                line x1="0" y1="58.5" x2=(bars * 10) y2="58.5" class="axis" {}
            }
            figcaption {
                (v.rows.len()) " calls in the " (window_label) " (from " (short_time(&rfc3339(start))) " UTC, one bar per "
                (bucket_label(bucket)) "); the busiest bar holds " (peak) "."
            }
        }
    }
}

/// The audit page's table: one row per call, its receipts' outcomes, what each result carried
/// (its evidence and settled state, as its receipt records them) and bytes.
fn audit_table(v: &AuditView) -> Markup {
    html! {
        table.audit {
            thead { tr {
                th scope="col" { "At" } th scope="col" { "Who" } th scope="col" { "Tool" }
                th scope="col" { "Run" } th scope="col" { "Outcome" } th scope="col" { "Evidence, state" }
                th scope="col" { "Bytes" }
            } }
            tbody {
                @for call in &v.rows {
                    @let (m, receipts) = (&call.meta, &call.receipts);
                    tr {
                        td.time { (short_time(&rfc3339(m.created_at_ms))) }
                        td { (call.reader.as_ref().map_or("", |r| r.name.as_str())) }
                        td { code { (m.tool) } }
                        td { @if let Some(t) = &m.target { code { (short(&t.run_id, 13)) } } @else { "—" } }
                        td {
                            @if receipts.is_empty() {
                                span.outcome.outcome-interrupted { "no receipt (interrupted)" }
                            } @else {
                                @for r in receipts {
                                    span class=(if r.outcome == "ok" { "outcome outcome-ok" } else { "outcome outcome-refused" }) { (r.outcome) } " "
                                }
                            }
                        }
                        td.carried {
                            @for r in receipts {
                                @let carried: Vec<&str> = [r.evidence.as_deref(), r.state.as_deref()].into_iter().flatten().collect();
                                @if !carried.is_empty() { span { (carried.join(" · ")) } " " }
                            }
                        }
                        td { (receipts.iter().filter_map(|r| r.output_bytes).sum::<u64>()) }
                    }
                }
            }
        }
    }
}

/// The calls refused before the gate (one row each, with their fixed code), and the counts of
/// calls with no valid credential.
fn refused_table(v: &RefusedView) -> Markup {
    html! {
        @if !v.rows.is_empty() {
            h2 { "Refused before the gate" }
            p.note { "Calls admission refused after it knew the reader (not granted, expired, revoked, stale, bad arguments, busy): they never reached the gate, so no start record holds them." }
            table.audit.refused {
                thead { tr {
                    th scope="col" { "At" } th scope="col" { "Who" } th scope="col" { "Tool" }
                    th scope="col" { "Run" } th scope="col" { "Code" }
                } }
                tbody {
                    @for r in &v.rows {
                        @let f = &r.refusal;
                        tr {
                            td.time { (short_time(&rfc3339(f.created_at_ms))) }
                            td { (r.reader.as_ref().map_or(f.reader_id.as_str(), |r| r.name.as_str())) }
                            td { code { (f.tool) } }
                            td { @if let Some(t) = &f.target { code { (short(&t.run_id, 13)) } } @else { "—" } }
                            td { span.outcome.outcome-refused { (f.code) } }
                        }
                    }
                }
            }
            @if v.more > 0 {
                p.warning { (v.more) (if v.more == 1 { " more refused call" } else { " more refused calls" }) " in this window beyond the newest " (crate::AUDIT_PAGE_MAX) " shown." }
            }
        }
        @if !v.unadmitted.is_empty() {
            p.note.unadmitted {
                "Calls with no valid credential (counted per minute, not kept one by one): "
                @for (i, t) in v.unadmitted.iter().enumerate() {
                    @if i > 0 { ", " }
                    (t.calls) " " code { (t.code) }
                }
                "."
            }
        }
    }
}

/// A chart bar's span in words.
fn bucket_label(ms: i64) -> String {
    const MINUTE: i64 = 60_000;
    match ms {
        m if m % (24 * 60 * MINUTE) == 0 => format!("{} day(s)", m / (24 * 60 * MINUTE)),
        m if m % (60 * MINUTE) == 0 => format!("{} hour(s)", m / (60 * MINUTE)),
        m => format!("{} minutes", m / MINUTE),
    }
}
