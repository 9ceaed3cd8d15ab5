//! The page after logging out: how to get a new login link.

use maud::{Markup, html};

use super::layout::layout;

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
