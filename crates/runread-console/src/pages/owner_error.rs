//! The "Not done" page: the owner's own mistake in a form (a run that changed, an empty name),
//! in their words.

use maud::{Markup, html};

use super::layout::layout;
use crate::auth::SessionView;

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
