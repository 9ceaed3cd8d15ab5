//! What every page shares: the page frame with its navigation, escaping and shortening of what
//! a page shows, links to a run, and the parts two pages show alike (the grants table, a
//! reader's key with its client configs, the features a connection asks for).

use axum::response::Html;
use maud::{DOCTYPE, Markup, html};

use runread_core::timefmt::rfc3339;
use runread_store::{Grant, GrantState, RunRecord};

use crate::auth::SessionView;
use crate::views::GrantRow;

pub(crate) fn html(body: Markup) -> Html<String> {
    Html(body.into_string())
}

/// Percent-encodes a query value (ids are already of a safe alphabet; this keeps it so).
pub(crate) fn enc(s: &str) -> String {
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
pub(super) fn short_time(t: &str) -> String {
    let t = t.replace('T', " ");
    t.chars().take(19).collect()
}

pub(super) fn layout(
    s: Option<&SessionView>,
    title: &str,
    active: &str,
    content: Markup,
) -> Markup {
    let nav = [
        ("/runs", "Runs"),
        ("/requests", "Requests"),
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
                                @let shown = nav_label(label, s.pending_requests);
                                @if label == active {
                                    a href=(href) aria-current="page" { (shown) }
                                } @else {
                                    a href=(href) { (shown) }
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

/// A menu entry's text: the Requests entry says how many access requests wait (`Requests (2)`),
/// and nothing more when none does or when they could not be counted.
fn nav_label(label: &str, pending_requests: Option<u64>) -> String {
    match pending_requests {
        Some(n) if n > 0 && label == "Requests" => format!("{label} ({n})"),
        _ => label.to_owned(),
    }
}

pub(super) fn short(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max_chars).collect();
        t.push('…');
        t
    }
}

pub(super) fn grants_table(s: &SessionView, list: &[GrantRow], back: &str) -> Markup {
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
                @for row in list {
                    @let g = &row.grant;
                    tr data-grant=(g.id) {
                        td { a href="/readers" { (g.reader_name) } }
                        td { (grant_state_label(row)) }
                        td { (g.features.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")) }
                        td { a href=(format!("/run?session={}&generation={}&run={}", enc(&g.target.session_id), g.target.generation, enc(&g.target.run_id))) { code { (short(&g.target.run_id, 13)) } } }
                        td.time { (short_time(&rfc3339(g.expires_at_ms))) }
                        td {
                            // A stale grant can still be revoked: it would read again if its
                            // run came back.
                            @if matches!(row.standing.state, GrantState::Live | GrantState::Stale) { (revoke_form(s, g, back)) }
                            " " a href=(format!("/audit?grant={}", enc(&g.id))) { "reads" }
                        }
                    }
                }
            }
        }
    }
}

/// A grant's state; a stale one with why it cannot be read.
fn grant_state_label(row: &GrantRow) -> Markup {
    let st = row.standing.state.as_str();
    html! {
        span class=(format!("grant grant-{st}")) { (st) }
        @if let Some(why) = row.standing.stale {
            " " small.stale-reason data-reason=(why.as_str()) { (why.says()) }
        }
    }
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

/// A reader's key, shown once, the lines that keep it in a file and the environment, and every
/// ready-to-paste client configuration for it (each reading the key from `$RUNREAD_KEY` where the
/// client can: `runread_mcp::configs`).
pub(crate) fn key_and_configs(key: &str, configs: &runread_mcp::configs::ClientConfigs) -> Markup {
    use runread_mcp::configs::{
        AUTHORIZATION_NOTE, CLAUDE_UNSET_NOTE, CODEX_MODERN_NOTE, KEY_ENV, LITERAL_NOTE,
    };
    let mcp_json = serde_json::to_string_pretty(&configs.mcp_servers).unwrap_or_default();
    let pi_json = serde_json::to_string_pretty(&configs.pi_json).unwrap_or_default();
    let literal = serde_json::to_string_pretty(&configs.mcp_servers_literal).unwrap_or_default();
    let keep = format!("{}\n{}", configs.store_key, configs.export_key);
    let stdio_cmd = format!(
        "umask 077 && printf '%s' '{key}' > runread.key\nrunread serve --stdio --key-file runread.key"
    );
    html! {
        p.warning role="alert" { "The key is shown once: only its hash is stored. Copy what your client needs now." }
        (copy_block("read-key", "Read key", key))
        (copy_block("keep-key", &format!("Keep it in a file only you can read, and in ${KEY_ENV} of the shell that starts the client"), &keep))
        p.note { "The configs below read the key from $" (KEY_ENV) "; none of them holds it." }
        (copy_block("claude-command", "Claude Code: run in your project", &configs.claude_command))
        p.note { (CLAUDE_UNSET_NOTE) }
        (copy_block("codex-toml", "Codex: add to ~/.codex/config.toml", configs.codex_toml.trim_end()))
        p.note { (CODEX_MODERN_NOTE) }
        (copy_block("pi-json", "Pi: ~/.pi/agent/mcp.json", &pi_json))
        (copy_block("pi-command", "Pi: or run", &configs.pi_command))
        (copy_block("mcp-json", "mcpServers JSON (Claude Code --mcp-config or .mcp.json; clients that expand ${VAR})", &mcp_json))
        p.note { (LITERAL_NOTE) }
        (copy_block("mcp-json-literal", "mcpServers JSON with the key in place (only for a client that cannot read it from the environment)", &literal))
        p.note { (AUTHORIZATION_NOTE) }
        (copy_block("stdio", "A client that launches runread (stdio): the key in a file", &stdio_cmd))
    }
}

/// The features a request asks for, each a box checked by default: the owner allows at most
/// these.
pub(super) fn feature_boxes(scope: &str) -> Markup {
    html! {
        fieldset {
            legend { "Allow at most" }
            @for f in runread_service::oauth::scope_features(Some(scope)).unwrap_or_default() {
                label { input type="checkbox" name="feature" value=(f.as_str()) checked; " " (f.as_str()) }
            }
        }
    }
}
