//! The page before a connector's client joins an existing reader: what that reader reads now,
//! and the one button that confirms.

use maud::{Markup, html};

use runread_core::timefmt::rfc3339;

use super::layout::{feature_boxes, layout, short, short_time};
use crate::auth::SessionView;

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
