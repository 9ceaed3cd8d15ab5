//! The Grants page: every grant, or those in one state, each with its reader, features, run and
//! end, a stale one with why it cannot be read, and revoke for those neither revoked nor expired.

use maud::{Markup, html};

use runread_store::GrantState;

use super::layout::{grants_table, layout};
use crate::auth::SessionView;
use crate::views::GrantRow;

pub(crate) fn grants(s: &SessionView, list: &[GrantRow], state: Option<GrantState>) -> Markup {
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
                (grants_table(s, list, &back))
            }
        },
    )
}
