//! The Connections page: connectors' requests waiting for the owner, each to approve as a new
//! reader, to join to an existing reader, or to deny.

use maud::{Markup, html};

use super::layout::{feature_boxes, layout};
use crate::auth::SessionView;

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
