//! The Runs page: every run, newest first, filtered by agent, workspace and status or searched
//! by the words of its prompt or answer, and the table of rows the page refreshes in place.

use maud::{Markup, html};

use runread_core::Agent;
use runread_service::outputs::Usage;
use runread_service::owner::keeps::size;
use runread_service::owner::shown::ShownRun;

use super::layout::{enc, layout, run_href, short_time};
use crate::auth::SessionView;
use crate::views::{RunsPage, RunsQuery, STATUSES};
use crate::{RUNS_PAGE, RUNS_POLL_MS};

fn runs_query_string(q: &RunsQuery, offset: u64) -> String {
    let mut parts = Vec::new();
    for (k, v) in [
        ("agent", &q.agent),
        ("workspace", &q.workspace),
        ("status", &q.status),
    ] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            parts.push(format!("{k}={}", enc(v)));
        }
    }
    if offset > 0 {
        parts.push(format!("offset={offset}"));
    }
    parts.join("&")
}

fn select(name: &str, label: &str, current: Option<&str>, options: &[(String, String)]) -> Markup {
    html! {
        label {
            (label) " "
            select name=(name) {
                option value="" selected[current.is_none_or(str::is_empty)] { "all" }
                @for (value, text) in options {
                    option value=(value) selected[current == Some(value.as_str())] { (text) }
                }
            }
        }
    }
}

pub(crate) fn runs(s: &SessionView, p: &RunsPage) -> Markup {
    let agents: Vec<(String, String)> = Agent::ALL
        .iter()
        .map(|a| (a.to_string(), a.to_string()))
        .collect();
    let statuses: Vec<(String, String)> = STATUSES
        .iter()
        .map(|a| (a.to_string(), a.to_string()))
        .collect();
    let workspaces: Vec<(String, String)> = p
        .workspaces
        .iter()
        .map(|w| (w.id.clone(), w.name.clone()))
        .collect();
    let q = &p.query;
    layout(
        Some(s),
        "Runs",
        "Runs",
        html! {
            h1 { "Runs" }
            @if let Some(t) = p.kept_totals.filter(|t| t.runs > 0 || t.rules > 0) {
                p.note #kept-totals {
                    "Kept runs: " (t.runs) " (" (size(t.bytes)) " of " (size(t.limit_bytes)) ")"
                    @if t.rules > 0 { ", " (t.rules) " workspace keep rule" @if t.rules != 1 { "s" } }
                    "."
                }
            }
            form.filters method="get" action="/runs" {
                (select("agent", "Agent", q.agent.as_deref(), &agents))
                (select("workspace", "Workspace", q.workspace.as_deref(), &workspaces))
                (select("status", "Status", q.status.as_deref(), &statuses))
                label { "Words in the prompt or answer " input type="search" name="q" maxlength=(runread_service::owner::SEARCH_QUERY_MAX_BYTES) value=(q.q.as_deref().unwrap_or("")); }
                button type="submit" { "Filter" }
            }
            @if p.searched.is_some() {
                div id="search-results" { (runs_table(p)) }
            } @else {
                div id="runs" data-rows=(format!("/runs/rows?{}", runs_query_string(q, q.offset())))
                    data-poll-ms=(RUNS_POLL_MS) aria-live="polite" {
                    (runs_table(p))
                }
            }
        },
    )
}

/// The run table and its pager: the part the page refreshes in place.
pub(crate) fn runs_table(p: &RunsPage) -> Markup {
    let q = &p.query;
    let from = q.offset();
    let to = from + p.rows.len() as u64;
    html! {
        @if let (true, Some((examined, _))) = (p.rows.is_empty(), p.searched) {
            p.empty { "No run's prompt or answer holds every word of “" (q.q.as_deref().unwrap_or("")) "” (" (examined) " of " (p.total) " runs searched)." }
        } @else if p.rows.is_empty() {
            @if p.total == 0 {
                p.empty { "No runs yet. Register a workspace and run " code { "runread ingest" } " or " code { "runread watch" } "." }
            } @else {
                p.empty { "No runs on this page (" (p.total) " in all)." }
            }
        } @else {
            table.runs {
                @match p.searched {
                    Some((examined, complete)) => caption {
                        (p.rows.len()) " runs whose prompt or answer holds every word of “" (q.q.as_deref().unwrap_or("")) "”, newest first; "
                        @if complete { "every run searched (" (examined) ")" } @else { (examined) " of " (p.total) " searched (the search's bounds)" }
                    },
                    None => caption { "Runs " (from + 1) "–" (to) " of " (p.total) ", newest first" },
                }
                thead { tr {
                    th scope="col" { "Started" }
                    th scope="col" { "Prompt" }
                    th scope="col" { "Agent" }
                    th scope="col" { "Workspace" }
                    th scope="col" { "Status" }
                    th scope="col" { "Answer" }
                    th scope="col" { "Tokens" }
                } }
                tbody {
                    @for row in &p.rows { (run_row(row)) }
                }
            }
            @if p.searched.is_none() { nav.pager aria-label="Pages" {
                @if from > 0 {
                    a href=(format!("/runs?{}", runs_query_string(q, from.saturating_sub(u64::from(RUNS_PAGE))))) { "← Newer" }
                }
                @if to < p.total {
                    a href=(format!("/runs?{}", runs_query_string(q, to))) { "Older →" }
                }
            } }
        }
    }
}

/// One run of the table: when, its prompt (with where its file stands and whether it is kept),
/// who ran it where, its status, answer and tokens.
fn run_row(row: &ShownRun) -> Markup {
    html! {
        tr {
            td.time { (row.record.run.started_at.as_deref().map(short_time).unwrap_or_default()) }
            td.prompt {
                a href=(run_href(&row.record)) { (row.prompt.shown()) }
                // Said beside a prompt read from a copy; a placeholder says it already.
                @if let (Some(says), Some(_)) = (row.file.says(), row.prompt.text()) {
                    " " span.file { "(" (says) ")" }
                }
                // A word, not a colour: the owner kept a sealed copy of the run.
                @if row.kept {
                    " " span.kept-mark title="Kept: a sealed copy of its whole evidence stays readable until you drop it" { "kept" }
                }
            }
            td { (row.record.agent) }
            td { (row.record.workspace_name) }
            td { span class=(format!("status status-{}", row.record.run.status.as_str())) { (row.record.run.status.as_str()) } }
            td {
                (row.answer_state)
                @if !row.waiting.is_empty() {
                    " " span.waiting title=(format!("Waited on by {}", row.waiting_summary())) { "(waited on)" }
                }
            }
            td.tokens { (Usage::of(row.record.run.usage.as_ref()).shown()) }
        }
    }
}
