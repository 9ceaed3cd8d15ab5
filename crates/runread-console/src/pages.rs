//! The console's pages, rendered on the server with maud (every value escaped). No inline
//! script or style: the Content-Security-Policy allows only `/assets/console.{js,css}`.

use axum::response::Html;
use maud::{DOCTYPE, Markup, html};
use serde_json::{Map, Value};

use runread_core::redact::MaskedView;
use runread_core::timefmt::rfc3339;
use runread_core::{Agent, Feature};
use runread_service::outputs::thousands;
use runread_service::outputs::{self, Previewed};
use runread_service::outputs::{Usage, UsageSource};
use runread_store::{Grant, GrantState, RunRecord};

use crate::auth::SessionView;
use crate::views::{
    AUDIT_WINDOWS, AuditView, EXPIRY_PRESETS, RunView, RunsPage, RunsQuery, STATUSES,
};
use crate::{RUNS_PAGE, RUNS_POLL_MS, Refusal};

pub(crate) fn html(body: Markup) -> Html<String> {
    Html(body.into_string())
}

/// Percent-encodes a query value (ids are already of a safe alphabet; this keeps it so).
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) fn run_href(r: &RunRecord) -> String {
    format!(
        "/run?session={}&generation={}&run={}",
        enc(&r.target.session_id),
        r.target.generation,
        enc(&r.target.run_id)
    )
}

/// A time as runread renders it (an agent's only through `agent_time`), shortened for a table.
fn short_time(t: &str) -> String {
    let t = t.replace('T', " ");
    t.chars().take(19).collect()
}

fn layout(s: Option<&SessionView>, title: &str, active: &str, content: Markup) -> Markup {
    let nav = [
        ("/runs", "Runs"),
        ("/readers", "Readers"),
        ("/connections", "Connections"),
        ("/grants", "Grants"),
        ("/audit", "Audit"),
        ("/secrets", "Secrets"),
    ];
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · runread" }
                link rel="stylesheet" href="/assets/console.css";
                script src="/assets/console.js" defer {}
            }
            body {
                header.top {
                    span.brand { "runread" }
                    @if let Some(s) = s {
                        nav aria-label="Main" {
                            @for (href, label) in nav {
                                @if label == active {
                                    a href=(href) aria-current="page" { (label) }
                                } @else {
                                    a href=(href) { (label) }
                                }
                            }
                        }
                        form.logout method="post" action="/logout" {
                            input type="hidden" name="csrf" value=(s.csrf);
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main id="main" { (content) }
            }
        }
    }
}

pub(crate) fn refusal(r: Refusal) -> Html<String> {
    html(layout(
        None,
        "Refused",
        "",
        html! {
            h1 { "Refused" }
            p.refusal data-code=(r.code()) { (r.message()) }
            p.code { "code: " code { (r.code()) } }
        },
    ))
}

pub(crate) fn logged_out() -> Markup {
    layout(
        None,
        "Logged out",
        "",
        html! {
            h1 { "Logged out" }
            p { "Start " code { "runread console" } " again for a new login link." }
        },
    )
}

pub(crate) fn owner_error(s: &SessionView, msg: &str) -> Markup {
    layout(
        Some(s),
        "Not done",
        "",
        html! {
            h1 { "Not done" }
            p.error role="alert" { (msg) }
            p { a href="/runs" { "Back to the runs" } }
        },
    )
}

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
                    @for row in &p.rows {
                        tr {
                            td.time { (row.record.run.started_at.as_deref().map(short_time).unwrap_or_default()) }
                            td.prompt { a href=(run_href(&row.record)) { (row.prompt.shown()) } }
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

fn json_block(v: &Map<String, Value>) -> Markup {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    html! { pre.json { (text) } }
}

fn unavailable(code: &str) -> Markup {
    html! { p.unavailable { "A reader would be refused: " code { (code) } } }
}

fn grant_state_label(g: &Grant, now: i64) -> Markup {
    let st = g.state(now).as_str();
    html! { span class=(format!("grant grant-{st}")) { (st) } }
}

fn revoke_form(s: &SessionView, g: &Grant, back: &str) -> Markup {
    html! {
        form.revoke method="post" action="/grants/revoke"
            data-confirm=(format!("Revoke the grant to “{}”? This run is refused to it from its next call on; its other grants stay.", g.reader_name)) {
            input type="hidden" name="csrf" value=(s.csrf);
            input type="hidden" name="grant" value=(g.id);
            input type="hidden" name="back" value=(back);
            button type="submit" { "Revoke" }
        }
    }
}

/// A run's tokens: in and out, then per model when there are several, and where they were read.
fn usage(u: &Usage) -> Markup {
    html! {
        (u.shown())
        @if u.by_model.len() > 1 {
            ul.models {
                @for m in &u.by_model {
                    li { (m.model) ": in " (thousands(m.tokens.input)) " · out " (thousands(m.tokens.output)) }
                }
            }
        }
        @if u.total.is_some() {
            " " span.note { "(" (u.calls) " model calls; " (source_said(u)) ")" }
        }
    }
}

fn source_said(u: &Usage) -> &'static str {
    match u.source {
        UsageSource::AssistantMessages => "from the assistant messages",
        UsageSource::TokenCountEvents => "from the session's token counts",
        UsageSource::NotRecorded => "none recorded",
    }
}

/// Whether a shared run outlives its session file: its snapshot and until when (the last live
/// grant's end), or that it is readable only while the file is. Nothing for a run not shared.
fn kept(v: &RunView, now: i64) -> Markup {
    let until = v
        .grants
        .iter()
        .filter(|g| g.is_live(now))
        .map(|g| g.expires_at_ms)
        .max();
    html! {
        @match (until, &v.kept) {
            (Some(until), Some(k)) => {
                dt { "Kept" }
                dd #kept { "A sealed copy of its evidence (" (k.lines) " lines, " (k.bytes) " bytes) stays readable if the session file goes, until " (rfc3339(until)) ", when its last grant ends." }
            }
            (Some(_), None) => {
                dt { "Kept" }
                dd #kept { "Not kept: readable only while its session file is." }
            }
            (None, _) => {}
        }
    }
}

pub(crate) fn run(s: &SessionView, v: &RunView, now: i64) -> Markup {
    let r = &v.run.record;
    let title = v.run.prompt.text().unwrap_or(&r.target.run_id);
    let back = run_href(r);
    html! {
        (layout(Some(s), "Run", "Runs", html! {
            p.crumbs { a href="/runs" { "Runs" } " / " (r.target.run_id) }
            h1.prompt-title { (short(title, 160)) }
            dl.facts {
                dt { "Agent" } dd { (r.agent) }
                dt { "Workspace" } dd { (r.workspace_name) " " span.path { (r.workspace_path) } }
                dt { "Status" } dd { span class=(format!("status status-{}", r.run.status.as_str())) { (r.run.status.as_str()) } }
                dt { "Started" } dd { (r.run.started_at.as_deref().map(short_time).unwrap_or_default()) }
                dt { "Ended" } dd { (r.run.ended_at.as_deref().map(short_time).unwrap_or_default()) }
                dt { "Session" } dd { code { (r.target.session_id) } " (generation " (r.target.generation) ")" }
                dt { "Run id" } dd { code { (r.target.run_id) } }
                @if !v.run.waiting.is_empty() {
                    dt { "Waited on by" } dd.waiting { (v.run.waiting_summary()) }
                }
                dt { "Tokens" } dd #tokens { (usage(&Usage::of(r.run.usage.as_ref()))) }
                (kept(v, now))
            }

            (answer_section(v))

            section aria-labelledby="history-h" {
                h2 id="history-h" { "History" }
                @match &v.history {
                    Ok(h) => (timeline(&h.output, &v.times)),
                    Err(code) => (unavailable(code)),
                }
                @if let Some(c) = &v.history_cursor {
                    p { a href=(format!("{back}&history={}", enc(c))) { "Next events →" } }
                }
            }

            section aria-labelledby="grant-h" {
                h2 id="grant-h" { "Share this run" }
                (grant_form(s, r, &v.readers))
            }

            section aria-labelledby="grants-h" {
                h2 id="grants-h" { "Grants of this run" }
                @if v.grants.is_empty() {
                    p.empty { "None yet." }
                } @else {
                    (grants_table(s, &v.grants, now, &back))
                }
                p { a href=(format!("/audit?run={}", enc(&r.target.run_id))) { "Who read this run →" } }
            }

            section aria-labelledby="work-h" {
                h2 id="work-h" { "Work state" }
                @match &v.work_state { Ok(w) => (work_state(w)), Err(code) => (unavailable(code)) }
            }
            section aria-labelledby="meta-h" {
                h2 id="meta-h" { "Metadata" }
                @match &v.metadata { Ok(m) => (metadata(m)), Err(code) => (unavailable(code)) }
            }
            section aria-labelledby="artifacts-h" {
                h2 id="artifacts-h" { "Artifacts" }
                @match &v.artifacts {
                    Ok(a) => (artifacts_table(&a.output)),
                    Err(code) => (unavailable(code)),
                }
                (artifact_form(s, r, &back))
            }
        }))
    }
}

/// The run page's final answer, as a reader granted `final_answer` gets it now.
fn answer_section(v: &RunView) -> Markup {
    html! {
        section aria-labelledby="answer-h" {
            h2 id="answer-h" { "Final answer" }
            p.note { "As a reader granted " code { "final_answer" } " gets it now: masked, with its state and evidence." }
            @match &v.answer {
                Ok(a) => {
                    @let first = &a.first.output;
                    @let state = wire(&first.claim.state);
                    dl.facts {
                        dt { "State" } dd { span class=(format!("answer-state answer-{state}")) { (state) } }
                        dt { "Evidence" } dd { (wire(&first.claim.evidence)) }
                        @if let Some(n) = first.chunk.total_bytes { dt { "Bytes" } dd { (n) } }
                        @if let Some(h) = &first.chunk.sha256 { dt { "sha256" } dd { code { (h) } } }
                    }
                    @if let Some(t) = &a.text {
                        div.answer-rendered id="final-answer-rendered" { (crate::markdown::render(t)) }
                        details.exact {
                            summary { "The exact text (masked), as a reader gets it" }
                            pre.answer id="final-answer" { (t) }
                        }
                    } @else {
                        p.unavailable { "No answer text to read (state " (state) ")." }
                    }
                    details { summary { "What the first chunk says (JSON)" } (json_block(&a.first.json)) }
                }
                Err(code) => (unavailable(code)),
            }
        }
    }
}

/// A JSON value as one line of text (strings without their quotes).
fn plain(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "—".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// An output's value as it is on the wire (an enum's name, a number's digits).
fn wire<T: serde::Serialize>(v: &T) -> String {
    plain(serde_json::to_value(v).ok().as_ref())
}

fn work_state(w: &Previewed<outputs::WorkState>) -> Markup {
    let o = &w.output;
    html! {
        dl.facts {
            dt { "This run" } dd { (wire(&o.foreground.state)) " (from the " (wire(&o.foreground.source)) ")" }
            dt { "With its child agents" } dd { (wire(&o.aggregate.state)) }
            dt { "Completion confirmed" } dd { (o.completion_confirmed) }
            dt { "Observed" } dd { (o.observed_at) (if o.fresh { " (fresh)" } else { "" }) }
        }
        table.coverage {
            thead { tr { th scope="col" { "What runread could see" } th scope="col" { "Coverage" } th scope="col" { "Why" } } }
            tbody { @for (k, c) in o.coverage.kinds() { tr { td { (k) } td { (wire(&c.state)) } td { (c.reason) } } } }
        }
        details { summary { "As a reader gets it (JSON)" } (json_block(&w.json)) }
    }
}

fn metadata(m: &Previewed<outputs::Metadata>) -> Markup {
    let o = &m.output;
    html! {
        table.metadata {
            thead { tr { th scope="col" { "Field" } th scope="col" { "Value" } th scope="col" { "From" } } }
            tbody {
                tr { td { "agent" } td { (o.agent) } td { "" } }
                @for (k, v) in o.sourced() {
                    tr { td { (k) } td { (v.value.as_deref().unwrap_or("—")) } td { (v.source) } }
                }
                tr { td { "runModels" } td { (wire(&o.run_models)) } td { "" } }
            }
        }
        details { summary { "As a reader gets it (JSON)" } (json_block(&m.json)) }
    }
}

fn short(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max_chars).collect();
        t.push('…');
        t
    }
}

/// Characters of an event's text the timeline shows (the whole text is one click away).
const TIMELINE_TEXT_CHARS: usize = 280;

fn timeline(h: &outputs::History, times: &std::collections::HashMap<u64, String>) -> Markup {
    html! {
        @if h.gap {
            p.warning { "Gaps: " (wire(&h.gap_reasons)) }
        }
        @if h.events.is_empty() {
            p.empty { "No events." }
        } @else {
            ol.timeline {
                @for e in &h.events {
                    @let seq = e.sequence;
                    @let role = e.role.as_str();
                    @let text = e.text.as_deref().unwrap_or("");
                    @let tools = &e.tool_calls[..];
                    @let tool_name = e.tool_name.as_deref();
                    li class=(format!("event role-{}", role.replace(|c: char| !c.is_ascii_alphanumeric(), "-"))) {
                        div.event-head {
                            span.seq { "#" (seq) }
                            span.role { (role) }
                            @if let Some(t) = tool_name { span.tool { (t) } }
                            @for t in tools { span.tool { "→ " (t) } }
                            @if let Some(at) = times.get(&seq) { time datetime=(at) { (short_time(at)) } }
                        }
                        @if !text.is_empty() {
                            @if text.chars().count() > TIMELINE_TEXT_CHARS {
                                details { summary { (short(text, TIMELINE_TEXT_CHARS)) } pre.text { (text) } }
                            } @else {
                                pre.text { (text) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn grant_form(s: &SessionView, r: &RunRecord, readers: &[String]) -> Markup {
    html! {
        form.grant method="post" action="/grant" {
            input type="hidden" name="csrf" value=(s.csrf);
            input type="hidden" name="session" value=(r.target.session_id);
            input type="hidden" name="run" value=(r.target.run_id);
            fieldset {
                legend { "Features" }
                @for f in Feature::ALL {
                    div.feature {
                        label {
                            input type="checkbox" name="feature" value=(f.as_str())
                                checked[f == Feature::FinalAnswer || f == Feature::Status];
                            " " code { (f.as_str()) } " — " (f.exposes())
                        }
                    }
                }
            }
            label { "Expires in "
                select name="expires" {
                    @for (value, text) in EXPIRY_PRESETS {
                        option value=(value) selected[value == "1h"] { (text) }
                    }
                }
            }
            label { "Share with (a reader: a client you configured once, or a new name) "
                input type="text" name="label" required list="reader-names" maxlength=(runread_core::limits::READER_NAME_MAX_BYTES) placeholder="claude-code";
            }
            datalist id="reader-names" {
                @for name in readers { option value=(name) {} }
            }
            button type="submit" { "Share" }
        }
    }
}

fn copy_block(id: &str, label: &str, text: &str) -> Markup {
    html! {
        div.copy {
            div.copy-head {
                span { (label) }
                button type="button" data-copy=(id) { "Copy" }
            }
            pre id=(id) { (text) }
        }
    }
}

pub(crate) fn granted(
    s: &SessionView,
    g: &runread_service::owner::NewGrant,
    shown: &runread_service::owner::shown::ShownRun,
    url: &str,
    configs: Option<&runread_mcp::configs::ClientConfigs>,
) -> Markup {
    let features: Vec<&str> = g.grant.features.iter().map(|f| f.as_str()).collect();
    layout(
        Some(s),
        "Granted",
        "Grants",
        html! {
            h1 { "Granted" }
            dl.facts {
                dt { "Shared with" } dd { (g.reader.name) }
                dt { "Run" } dd { a href=(run_href(&shown.record)) { (short(shown.prompt.text().unwrap_or(&shown.record.target.run_id), 120)) } }
                dt { "Features" } dd { (features.join(", ")) }
                dt { "Expires" } dd { (rfc3339(g.grant.expires_at_ms)) }
                dt { "Endpoint" } dd { code { (url) } }
                dt { "Grant" } dd { code id="grant-id" { (g.grant.id) } }
                dt { "Snapshot" } dd #snapshot { (g.snapshot.describe()) }
            }
            @match (&g.key, configs) {
                (Some(key), Some(configs)) => {
                    p { "“" (g.reader.name) "” is a new reader: configure its client once with the key below; every run you share with it later reaches it without a new key." }
                    (key_and_configs(key, configs))
                }
                _ => {
                    p id="shared-note" { "“" (g.reader.name) "” already has its key: its client's next call sees this run. Nothing to configure." }
                }
            }
            p { a href="/grants" { "All grants" } " · " a href="/readers" { "Readers" } " · " a href=(run_href(&shown.record)) { "Back to the run" } }
        },
    )
}

/// A reader's key, shown once, and every ready-to-paste client configuration for it.
pub(crate) fn key_and_configs(key: &str, configs: &runread_mcp::configs::ClientConfigs) -> Markup {
    let mcp_json = serde_json::to_string_pretty(&configs.mcp_servers).unwrap_or_default();
    let stdio_cmd = format!(
        "umask 077 && printf '%s' '{key}' > runread.key\nrunread serve --stdio --key-file runread.key"
    );
    html! {
        p.warning role="alert" { "The key is shown once: only its hash is stored. Copy what your client needs now." }
        (copy_block("read-key", "Read key", key))
        (copy_block("claude-command", "Claude Code: run in your project", &configs.claude_command))
        (copy_block("codex-toml", "Codex: add to ~/.codex/config.toml", configs.codex_toml.trim_end()))
        p.note { (runread_mcp::configs::CODEX_MODERN_NOTE) }
        (copy_block("mcp-json", "mcpServers JSON (Claude Code --mcp-config, Cursor, Claude Desktop)", &mcp_json))
        (copy_block("stdio", "A client that launches runread (stdio): the key in a file", &stdio_cmd))
    }
}

fn grants_table(s: &SessionView, list: &[MaskedView<Grant>], now: i64, back: &str) -> Markup {
    html! {
        table.grants {
            thead { tr {
                th scope="col" { "For" }
                th scope="col" { "State" }
                th scope="col" { "Features" }
                th scope="col" { "Run" }
                th scope="col" { "Expires" }
                th scope="col" { "" }
            } }
            tbody {
                @for g in list {
                    tr data-grant=(g.id) {
                        td { a href="/readers" { (g.reader_name) } }
                        td { (grant_state_label(g, now)) }
                        td { (g.features.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")) }
                        td { a href=(format!("/run?session={}&generation={}&run={}", enc(&g.target.session_id), g.target.generation, enc(&g.target.run_id))) { code { (short(&g.target.run_id, 13)) } } }
                        td.time { (short_time(&rfc3339(g.expires_at_ms))) }
                        td {
                            @if g.state(now) == GrantState::Live { (revoke_form(s, g, back)) }
                            " " a href=(format!("/audit?grant={}", enc(&g.id))) { "reads" }
                        }
                    }
                }
            }
        }
    }
}

pub(crate) fn grants(
    s: &SessionView,
    list: &[MaskedView<Grant>],
    state: Option<GrantState>,
    now: i64,
) -> Markup {
    let back = match state {
        Some(st) => format!("/grants?state={}", st.as_str()),
        None => "/grants".to_owned(),
    };
    layout(
        Some(s),
        "Grants",
        "Grants",
        html! {
            h1 { "Grants" }
            nav.tabs aria-label="Grant state" {
                @if state.is_none() { a href="/grants" aria-current="page" { "all" } } @else { a href="/grants" { "all" } }
                @for st in GrantState::ALL {
                    @if state == Some(st) {
                        a href=(format!("/grants?state={}", st.as_str())) aria-current="page" { (st.as_str()) }
                    } @else {
                        a href=(format!("/grants?state={}", st.as_str())) { (st.as_str()) }
                    }
                }
            }
            @if list.is_empty() {
                p.empty { "No grants here. Grant a run from its page." }
            } @else {
                (grants_table(s, list, now, &back))
            }
        },
    )
}

fn artifacts_table(list: &outputs::ArtifactList) -> Markup {
    html! {
        @if list.artifacts.is_empty() {
            p.empty { "No artifacts registered." }
        } @else {
            table.artifacts {
                thead { tr { th scope="col" { "Name" } th scope="col" { "Kind" } th scope="col" { "Type" } th scope="col" { "Bytes" } th scope="col" { "sha256" } } }
                tbody {
                    @for a in &list.artifacts {
                        tr {
                            td { (a.name) }
                            td { (wire(&a.kind)) }
                            td { (a.mime) }
                            td { (a.size) }
                            td { code { (short(&a.sha256, 16)) } }
                        }
                    }
                }
            }
        }
    }
}

fn artifact_form(s: &SessionView, r: &RunRecord, back: &str) -> Markup {
    html! {
        details.register {
            summary { "Register a file of this run" }
            form method="post" action="/artifacts" {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="session" value=(r.target.session_id);
                input type="hidden" name="run" value=(r.target.run_id);
                input type="hidden" name="back" value=(back);
                label { "Path (in " (r.workspace_path) ") " input type="text" name="path" required; }
                label { "Name " input type="text" name="name" placeholder="(the file's name)"; }
                label { "Type " input type="text" name="mime" placeholder="(guessed)"; }
                label { "Kind "
                    select name="kind" {
                        option value="generated" selected { "generated (the agent wrote it)" }
                        option value="attached" { "attached (given to the run)" }
                    }
                }
                button type="submit" { "Register" }
            }
        }
    }
}

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
            @if v.rows.is_empty() {
                p.empty { "No calls." }
            } @else {
                (audit_table(v))
            }
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

/// The audit page's table: one row per call, its receipts' outcomes and bytes.
fn audit_table(v: &AuditView) -> Markup {
    html! {
        table.audit {
            thead { tr {
                th scope="col" { "At" } th scope="col" { "Who" } th scope="col" { "Tool" }
                th scope="col" { "Run" } th scope="col" { "Outcome" } th scope="col" { "Bytes" }
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
                        td { (receipts.iter().filter_map(|r| r.output_bytes).sum::<u64>()) }
                    }
                }
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

/// What a change on the Readers page did, shown above it.
pub(crate) enum ReaderChange {
    /// Added or rotated: its key, shown once, and the configs for it.
    Key {
        what: &'static str,
        reader: runread_store::Reader,
        key: String,
        configs: Box<runread_mcp::configs::ClientConfigs>,
    },
    Removed(String),
    /// The owner's own mistake (a name taken, a reader gone): their words.
    Error(String),
}

impl ReaderChange {
    /// A reader's new key (`what` befell it: added, rotated), with the configs for `mcp_url`.
    pub(crate) fn key(
        what: &'static str,
        mcp_url: &str,
        made: runread_service::owner::NewReader,
    ) -> ReaderChange {
        ReaderChange::Key {
            what,
            configs: Box::new(runread_mcp::configs::for_key(mcp_url, &made.key)),
            reader: made.reader,
            key: made.key,
        }
    }
}

/// The Readers page: each live reader, its live grants and last read, rotate and remove; a form
/// to add one; and, after an add or a rotation, its key shown once with the client configs.
pub(crate) fn readers(
    s: &SessionView,
    v: &crate::views::ReadersView,
    change: Option<ReaderChange>,
) -> Markup {
    layout(
        Some(s),
        "Readers",
        "Readers",
        html! {
            h1 { "Readers" }
            p.note { "A reader is a client you configure once with its own key (Claude Code, Codex, a CI job, an orchestrating agent). Share runs with it from a run's page; it sees each one at its next call, with no new key." }
            @match change {
                Some(ReaderChange::Key { what, reader, key, configs }) => {
                    section.key-shown aria-labelledby="key-h" {
                        h2 id="key-h" { "“" (reader.name) "” " (what) }
                        (key_and_configs(&key, &configs))
                    }
                }
                Some(ReaderChange::Removed(name)) => p.ok role="status" { "Removed “" (name) "”: its key is refused and its grants are revoked." },
                Some(ReaderChange::Error(msg)) => p.error role="alert" { (msg) },
                None => {},
            }
            @if v.readers.is_empty() {
                p.empty { "No readers yet." }
            } @else {
                table.readers {
                    thead { tr {
                        th scope="col" { "Reader" } th scope="col" { "Live grants" }
                        th scope="col" { "Last read" } th scope="col" { "Added" } th scope="col" { "" }
                    } }
                    tbody {
                        @for r in &v.readers {
                            tr data-reader=(r.reader.name) {
                                td { (r.reader.name) }
                                td {
                                    @if r.live.is_empty() { "none" }
                                    @for g in &r.live {
                                        a href=(format!("/run?session={}&generation={}&run={}", enc(&g.target.session_id), g.target.generation, enc(&g.target.run_id))) { code { (short(&g.target.run_id, 13)) } }
                                        " (" (g.features.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")) ") "
                                    }
                                }
                                td.time { (r.last_read_ms.map(|t| short_time(&rfc3339(t))).unwrap_or_else(|| "never".into())) }
                                td.time { (short_time(&rfc3339(r.reader.created_at_ms))) }
                                td {
                                    form.inline method="post" action="/readers/rotate"
                                        data-confirm=(format!("Give “{}” a new key? Its client is refused until you configure the new one; its grants stay.", r.reader.name)) {
                                        input type="hidden" name="csrf" value=(s.csrf);
                                        input type="hidden" name="name" value=(r.reader.name);
                                        button type="submit" { "Rotate key" }
                                    }
                                    " "
                                    form.inline method="post" action="/readers/remove"
                                        data-confirm=(format!("Remove “{}”? Its key is refused and every grant of it revoked.", r.reader.name)) {
                                        input type="hidden" name="csrf" value=(s.csrf);
                                        input type="hidden" name="name" value=(r.reader.name);
                                        button type="submit" { "Remove" }
                                    }
                                    " " a href=(format!("/audit?reader={}", enc(&r.reader.id))) { "reads" }
                                }
                            }
                        }
                    }
                }
            }
            form.reader method="post" action="/readers/add" autocomplete="off" {
                input type="hidden" name="csrf" value=(s.csrf);
                label { "Name " input type="text" name="name" required maxlength=(runread_core::limits::READER_NAME_MAX_BYTES) placeholder="claude-code"; }
                button type="submit" { "Add reader and show its key" }
            }
        },
    )
}

pub(crate) fn secrets(
    s: &SessionView,
    names: &[String],
    added: Option<Result<String, String>>,
) -> Markup {
    layout(
        Some(s),
        "Secrets",
        "Secrets",
        html! {
            h1 { "Known secrets" }
            p.note { "Exact values masked in everything a reader is served. Values are stored sealed and never shown again; only names are listed." }
            @match &added {
                Some(Ok(name)) => p.ok role="status" { "Added " code { (name) } "." },
                Some(Err(msg)) => p.error role="alert" { (msg) },
                None => {},
            }
            @if names.is_empty() {
                p.empty { "None stored." }
            } @else {
                ul.secrets { @for n in names { li { code { (n) } } } }
            }
            form.secret method="post" action="/secrets" autocomplete="off" {
                input type="hidden" name="csrf" value=(s.csrf);
                label { "Name " input type="text" name="name" required placeholder="openai-key"; }
                label { "Value " input type="password" name="value" required autocomplete="off"; }
                button type="submit" { "Add" }
            }
        },
    )
}

/// The Connections page: connection requests of chat assistants' connectors (OAuth clients at
/// the public URL) waiting for the owner, each with the code its public page shows; approve one
/// as a new reader (optionally sharing a run at once), join it to an existing reader after
/// reviewing what that reader reads, or deny it.
pub(crate) fn connections(
    s: &SessionView,
    view: &crate::views::ConnectionsView,
    done: Option<Result<String, String>>,
    now: i64,
) -> Markup {
    layout(
        Some(s),
        "Connections",
        "Connections",
        html! {
            h1 { "Connections" }
            p.note { "A chat assistant's connector (ChatGPT, Claude) asks to connect at your public URL. Its page shows a code: approve only the request with the same code. The client becomes a new reader; it reads only the runs you share with it." }
            @match done {
                Some(Ok(msg)) => p.ok role="status" { (msg) },
                Some(Err(msg)) => p.error role="alert" { (msg) },
                None => {},
            }
            @if view.pending.is_empty() {
                p.empty { "No connection request is waiting." }
            }
            @for c in &view.pending {
                (connection(s, c, &view.readers, now))
            }
        },
    )
}

fn connection(
    s: &SessionView,
    c: &crate::views::ConnectionView,
    readers: &[(String, String)],
    now: i64,
) -> Markup {
    let r = &c.request;
    html! {
        section.connection data-code=(r.user_code) aria-label=(format!("Request {}", r.user_code)) {
            h2 { "Code " code { (r.user_code) } }
            dl {
                dt { "Client says it is" } dd { (r.client_name) }
                dt { "Client id" } dd { code { (r.client_id) } }
                dt { "Sends you back to" } dd { code { (r.redirect_uri) } }
                dt { "Expires" } dd { (format!("in {} min", ((r.expires_at_ms - now) / 60_000).max(0) + 1)) }
            }
            @if let Some(like) = &c.looks_like {
                p.warning role="note" data-looks-like=(like) { "This client calls itself by a name like your reader “" (like) "”. A client chooses its own name: it is not that reader, and approving it here does not make it one." }
            }
            form.approve method="post" action="/connections/approve" autocomplete="off" {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="request" value=(r.id);
                label { "New reader named " input type="text" name="name" required maxlength=(runread_core::limits::READER_NAME_MAX_BYTES) value=(c.suggested_name); }
                (feature_boxes(&r.scope))
                label { "Share a run now (its id, optional) " input type="text" name="run" maxlength="128"; }
                label { "for " select name="expires" {
                    @for (v, label) in crate::views::EXPIRY_PRESETS { option value=(v) selected[v == "1d"] { (label) } }
                } }
                button type="submit" { "Approve as a new reader" }
            }
            @if !readers.is_empty() {
                form.inline.join method="get" action="/connections/join" {
                    input type="hidden" name="request" value=(r.id);
                    label { "Or join an existing reader instead: " select name="reader" {
                        @for (id, name) in readers { option value=(id) { (name) } }
                    } }
                    button type="submit" { "Review joining…" }
                }
            }
            form.inline method="post" action="/connections/deny" {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="request" value=(r.id);
                button type="submit" { "Deny" }
            }
        }
    }
}

/// The features a request asks for, each a box checked by default: the owner allows at most
/// these.
fn feature_boxes(scope: &str) -> Markup {
    html! {
        fieldset {
            legend { "Allow at most" }
            @for f in runread_service::oauth::scope_features(Some(scope)).unwrap_or_default() {
                label { input type="checkbox" name="feature" value=(f.as_str()) checked; " " (f.as_str()) }
            }
        }
    }
}

/// Joining a client to an existing reader: what that reader reads now, said before the owner
/// confirms — the client will read every run shared with it, these and any shared later.
pub(crate) fn join_connection(s: &SessionView, v: &crate::views::JoinView) -> Markup {
    let r = &v.request;
    let name = &v.reader.name;
    layout(
        Some(s),
        "Join a reader",
        "Connections",
        html! {
            h1 { "Join “" (name) "”?" }
            p.warning role="note" {
                "Approving request " code { (r.user_code) } " (the client says it is “" (r.client_name) "”) this way makes that client the reader “" (name) "”. It will read everything shared with “" (name) "”: "
                @match v.live.len() { 0 => "no run now, and every run shared with it later.", 1 => "the run below, and every run shared with it later.", n => (format!("the {n} runs below, and every run shared with it later.")) }
            }
            @if !v.live.is_empty() {
                table.grants {
                    thead { tr { th scope="col" { "Run" } th scope="col" { "Features" } th scope="col" { "Expires" } } }
                    tbody {
                        @for g in &v.live {
                            tr data-grant=(g.id) {
                                td { code { (short(&g.target.run_id, 13)) } }
                                td { (g.features.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")) }
                                td.time { (short_time(&rfc3339(g.expires_at_ms))) }
                            }
                        }
                    }
                }
            }
            form.approve method="post" action="/connections/approve" autocomplete="off" {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="request" value=(r.id);
                input type="hidden" name="join" value=(v.reader.id);
                (feature_boxes(&r.scope))
                input type="hidden" name="expires" value="1d";
                button type="submit" { "Approve and join “" (name) "”" }
            }
            p { a href="/connections" { "Back to Connections" } " — to approve it as a new reader instead." }
        },
    )
}
