//! The page of one run: its facts and tokens, its final answer, history, work state, metadata
//! and artifacts as a reader would be served them, and the forms to share it and to register a
//! file of it, with the grants it has.

use maud::{Markup, html};
use serde_json::{Map, Value};

use runread_core::Feature;
use runread_core::timefmt::rfc3339;
use runread_service::outputs::thousands;
use runread_service::outputs::{self, Previewed};
use runread_service::outputs::{Usage, UsageSource};
use runread_store::RunRecord;

use super::layout::{enc, grants_table, layout, run_href, short, short_time};
use crate::auth::SessionView;
use crate::views::{EXPIRY_PRESETS, RunView};

fn json_block(v: &Map<String, Value>) -> Markup {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    html! { pre.json { (text) } }
}

fn unavailable(code: &str) -> Markup {
    html! { p.unavailable { "A reader would be refused: " code { (code) } } }
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
        UsageSource::UsageRecords => "from the session's usage records",
        UsageSource::NotRecorded => "none recorded",
    }
}

/// Whether a shared run outlives its session file: its copy sealed for sharing and until when
/// (the last live grant's end), or that it is readable only while the file is. Nothing for a run
/// not shared. Never called "kept": that is the owner's own keep ([`keep_section`]), which lasts
/// until dropped.
fn sealed(v: &RunView) -> Markup {
    let until = v
        .grants
        .iter()
        .filter(|g| g.standing.is_live())
        .map(|g| g.grant.expires_at_ms)
        .max();
    html! {
        @match (until, &v.sealed) {
            (Some(until), Some(k)) => {
                dt { "Sealed for sharing" }
                dd #sealed { "A sealed copy of its evidence (" (k.lines) " lines, " (k.bytes) " bytes) stays readable if the session file goes, until " (rfc3339(until)) ", when its last grant ends." }
            }
            (Some(_), None) => {
                dt { "Sealed for sharing" }
                dd #sealed { "No copy sealed: readable only while its session file is." }
            }
            (None, _) => {}
        }
    }
}

/// The run's session, and what happened to its file when it is not there as ingested (gone, not
/// kept or sealed for sharing; rewritten; on another host).
fn session(v: &RunView) -> Markup {
    let r = &v.run.record;
    html! {
        dt { "Session" } dd { code { (r.target.session_id) } " (generation " (r.target.generation) ")" }
        @if let Some(says) = v.run.file.says() {
            dt { "Session file" } dd #session-file { (says.trim_start_matches("file ")) }
        }
    }
}

/// The run's facts: who ran it where, when, its session file, tokens, and its copy sealed for
/// sharing.
fn facts(v: &RunView) -> Markup {
    let r = &v.run.record;
    html! {
        dl.facts {
            dt { "Agent" } dd { (r.agent) }
            dt { "Workspace" } dd { (r.workspace_name) " " span.path { (r.workspace_path) } }
            dt { "Status" } dd { span class=(format!("status status-{}", r.run.status.as_str())) { (r.run.status.as_str()) } }
            dt { "Started" } dd { (r.run.started_at.as_deref().map(short_time).unwrap_or_default()) }
            dt { "Ended" } dd { (r.run.ended_at.as_deref().map(short_time).unwrap_or_default()) }
            (session(v))
            dt { "Run id" } dd { code { (r.target.run_id) } }
            @if !v.run.waiting.is_empty() {
                dt { "Waited on by" } dd.waiting { (v.run.waiting_summary()) }
            }
            dt { "Tokens" } dd #tokens { (usage(&Usage::of(r.run.usage.as_ref()))) }
            (sealed(v))
        }
    }
}

pub(crate) fn run(s: &SessionView, v: &RunView) -> Markup {
    let r = &v.run.record;
    let title = v.run.prompt.text().unwrap_or(&r.target.run_id);
    let back = run_href(r);
    html! {
        (layout(Some(s), "Run", "Runs", html! {
            p.crumbs { a href="/runs" { "Runs" } " / " (r.target.run_id) }
            h1.prompt-title { (short(title, 160)) }
            @match &v.said {
                Some(Ok(msg)) => p.ok #keep-said role="status" { (sentence(msg)) },
                Some(Err(msg)) => p.error #keep-said role="alert" { (sentence(msg)) },
                None => {}
            }
            (facts(v))
            (keep_section(s, v))
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
                    (grants_table(s, &v.grants, &back))
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

/// `msg` (one of the service's lines for the owner, which start lower-case to follow a run's
/// name in the CLI) as a sentence on its own: its first letter upper-case.
fn sentence(msg: &str) -> String {
    let mut chars = msg.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// The run's kept copy (`runread keep`): since when, its size and why (by name or by its
/// workspace's keep rule), with the form to drop it; or the button to keep it. A kept run stays
/// readable after the agent's cleanup deletes its file, until the owner drops it.
fn keep_section(s: &SessionView, v: &RunView) -> Markup {
    let r = &v.run.record;
    let why = |k: &runread_store::KeptSummary| match k.reason {
        runread_store::KeepReason::Run => "kept by name",
        runread_store::KeepReason::Workspace => "by the workspace's keep rule",
    };
    html! {
        section aria-labelledby="keep-h" {
            h2 id="keep-h" { "Kept" }
            @if let Some(k) = &v.kept {
                p #kept-since {
                    "Kept since " time datetime=(rfc3339(k.kept_since_ms)) { (short_time(&rfc3339(k.kept_since_ms))) }
                    " (" (k.summary.bytes) " bytes, " (why(k)) "): a sealed copy of its whole evidence, readable if the session file goes, until you drop it."
                }
                form.keep method="post" action="/run/drop"
                    data-confirm="Drop the kept copy of this run? Its key is destroyed: once its session file is gone, nothing of it can be read." {
                    (run_fields(s, r))
                    button type="submit" { "Drop" }
                }
            } @else {
                p.note { "Not kept. Keeping seals a copy of its whole evidence into the store, readable after the agent's cleanup deletes the session file, until you drop it." }
                form.keep method="post" action="/run/keep" {
                    (run_fields(s, r))
                    button type="submit" { "Keep" }
                }
            }
        }
    }
}

/// The hidden fields of a form acting on the run `r`: the CSRF token and the run's identity.
fn run_fields(s: &SessionView, r: &RunRecord) -> Markup {
    html! {
        input type="hidden" name="csrf" value=(s.csrf);
        input type="hidden" name="session" value=(r.target.session_id);
        input type="hidden" name="generation" value=(r.target.generation);
        input type="hidden" name="run" value=(r.target.run_id);
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
