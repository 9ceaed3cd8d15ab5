//! The Requests page: the access requests readers filed (`request_access`) that wait for the
//! owner, each with what it asks, the reader's reason as its own quoted words, the runs it
//! matches now, and one Approve (narrowed as the owner likes) and one Deny.

use maud::{Markup, html};

use runread_core::timefmt::{parse_duration_ms, rfc3339};
use runread_service::owner::ShownRequest;

use super::layout::{layout, run_href, short, short_time};
use crate::auth::SessionView;
use crate::views::{ASKED_EXPIRY, EXPIRY_PRESETS, RequestsView};

/// Characters of a run id a row shows (the whole id is the checkbox's value).
const RUN_ID_SHOWN_CHARS: usize = 13;

/// The Requests page: every pending request, oldest first, or the empty state; `done` is what
/// the owner's last decision did (or why it was not done).
pub(crate) fn requests(
    s: &SessionView,
    view: &RequestsView,
    done: Option<Result<String, String>>,
) -> Markup {
    layout(
        Some(s),
        "Requests",
        "Requests",
        html! {
            h1 { "Access requests" }
            p.note { "A reader asks to read runs (" code { "request_access" } "). Approving shares each checked run with that reader alone, with the checked features, until the expiry: ordinary grants, revocable on the Grants page. You may narrow what it asks, never widen it. A request not decided before its expiry is refused to its reader." }
            @match done {
                Some(Ok(msg)) => p.ok role="status" { (msg) " " a href="/grants?state=live" { "Live grants" } },
                Some(Err(msg)) => p.error role="alert" { (msg) },
                None => {},
            }
            @if view.pending.is_empty() {
                p.empty { "No access request is waiting." }
            }
            @for r in &view.pending {
                (request(s, r, view.now_ms))
            }
        },
    )
}

fn request(s: &SessionView, r: &ShownRequest, now: i64) -> Markup {
    let heading = format!("request-{}", r.id);
    html! {
        section.request data-request=(r.id) aria-labelledby=(heading) {
            h2 id=(heading) { "From " (r.reader_name) }
            dl.facts {
                dt { "Asked" } dd { (short_time(&rfc3339(r.created_at_ms))) }
                dt { "Expires" } dd { (format!("in {} min", ((r.expires_at_ms - now) / 60_000).max(0) + 1)) }
                dt { "Asks for" } dd { (asks_for(r.latest, r.agent.as_deref(), r.workspace.as_deref(), r.words.as_deref())) }
                dt { "Features" } dd { (r.features.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")) }
                dt { "For" } dd { (duration_words(r.duration_s)) }
            }
            @if let Some(reason) = &r.reason {
                figure.reason {
                    figcaption { "The reader's reason, in its own words (not checked by runread; not an instruction):" }
                    blockquote.reader-text { "“" (visible(reason)) "”" }
                }
            }
            form.approve method="post" action="/requests/approve" autocomplete="off" {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="request" value=(r.id);
                (matching_runs(r))
                fieldset {
                    legend { "Features (at most those asked)" }
                    @for f in &r.features {
                        label.feature { input type="checkbox" name="feature" value=(f.as_str()) checked; " " (f.as_str()) }
                    }
                }
                label { "Until " select name="expires" {
                    option value=(ASKED_EXPIRY) selected { "as asked: " (duration_words(r.duration_s)) }
                    @for (value, label) in EXPIRY_PRESETS {
                        @if parse_duration_ms(value).is_some_and(|ms| ms < duration_ms(r.duration_s)) {
                            option value=(value) { (label) }
                        }
                    }
                } }
                button type="submit" disabled[r.matches.is_empty()] { "Approve" }
            }
            form.inline.deny method="post" action="/requests/deny" {
                input type="hidden" name="csrf" value=(s.csrf);
                input type="hidden" name="request" value=(r.id);
                button type="submit" { "Deny" }
            }
        }
    }
}

/// The runs the request matches now, newest first, each a checkbox (checked: approving shares
/// it), with its prompt line (masked), agent, workspace, start and status.
fn matching_runs(r: &ShownRequest) -> Markup {
    html! {
        @if r.matches.is_empty() {
            p.empty { "No run matches what it asks now: there is nothing to approve. Deny it, or let it expire." }
        } @else {
            table.runs.matches {
                caption { "Runs it matches now, newest first: each checked one is shared" }
                thead { tr {
                    th scope="col" { "Share" }
                    th scope="col" { "Prompt" }
                    th scope="col" { "Agent" }
                    th scope="col" { "Workspace" }
                    th scope="col" { "Started" }
                    th scope="col" { "Status" }
                } }
                tbody {
                    @for run in &r.matches {
                        @let id = &run.record.target.run_id;
                        // The session too: a run id may name runs in several (a fork and its parent).
                        @let choice = format!("{} {id}", run.record.target.session_id);
                        tr data-run=(id) {
                            td { input type="checkbox" name="run" value=(choice) checked aria-label=(format!("Share run {}", short(id, RUN_ID_SHOWN_CHARS))); }
                            td.prompt { a href=(run_href(&run.record)) { (run.prompt.shown()) } }
                            td { (run.record.agent) }
                            td { (run.record.workspace_name) }
                            td.time { (run.record.run.started_at.as_deref().map(short_time).unwrap_or_default()) }
                            td { span class=(format!("status status-{}", run.record.run.status.as_str())) { (run.record.run.status.as_str()) } }
                        }
                    }
                }
            }
        }
    }
}

/// What a request asks for, in words: "the newest run of agent codex in workspace demo whose
/// prompt or answer holds “…”".
fn asks_for(
    latest: u32,
    agent: Option<&str>,
    workspace: Option<&str>,
    words: Option<&str>,
) -> Markup {
    html! {
        @if latest == 1 { "the newest run" } @else { "the " (latest) " newest runs" }
        @if let Some(a) = agent { " of agent " code { (a) } }
        @if let Some(w) = workspace { " in workspace " code { (visible(w)) } }
        @if let Some(w) = words { " whose prompt or answer holds “" (visible(w)) "”" }
    }
}

/// `secs` in the largest whole unit that says it exactly: `1 hour`, `90 minutes`, `2 days`.
fn duration_words(secs: u64) -> String {
    let (n, unit) = match secs {
        s if s >= 86_400 && s % 86_400 == 0 => (s / 86_400, "day"),
        s if s >= 3_600 && s % 3_600 == 0 => (s / 3_600, "hour"),
        s if s >= 60 && s % 60 == 0 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

fn duration_ms(secs: u64) -> i64 {
    i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX)
}

/// A reader's text as the page shows it: every character that would not be seen as itself — a
/// control, a bidirectional override, a zero-width or other invisible one
/// ([`runread_core::names::is_shown_as_written`]) — is written as its code point (`\u{202e}`),
/// so that the text cannot hide part of itself or reorder what follows; a line break stays one.
/// HTML is escaped by the template, as everywhere.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut buf = [0u8; 4];
    for c in text.chars() {
        if c == '\n' || runread_core::names::is_shown_as_written(c.encode_utf8(&mut buf)) {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_is_said_in_its_largest_exact_unit() {
        assert_eq!(duration_words(3600), "1 hour");
        assert_eq!(duration_words(5400), "90 minutes");
        assert_eq!(duration_words(172_800), "2 days");
        assert_eq!(duration_words(61), "61 seconds");
    }

    #[test]
    fn a_readers_text_shows_its_invisible_characters_as_code_points() {
        assert_eq!(
            visible("a\u{202e}b\u{1b}[0m\nc"),
            "a\\u{202e}b\\u{001b}[0m\nc"
        );
        assert_eq!(
            visible("<b>plain</b>"),
            "<b>plain</b>",
            "HTML is the template's to escape"
        );
    }
}
