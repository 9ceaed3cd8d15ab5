//! The page before a grant makes a reader: the name the owner typed is no reader's yet, so the
//! console asks — make that reader (its key shown once), or share with a reader of a close name.

use maud::{Markup, html};

use runread_core::Feature;

use super::layout::layout;
use crate::auth::SessionView;

/// What the grant form asked, carried into the confirmation's hidden fields.
pub(crate) struct AskedGrant<'a> {
    pub session_id: &'a str,
    pub run_id: &'a str,
    pub expires: &'a str,
    pub features: &'a [Feature],
    /// The name typed: no live reader's.
    pub name: &'a str,
    /// Live readers whose names it is a probable typo of.
    pub close: &'a [String],
}

/// "Make a new reader?": one form to make `asked.name`, one per close reader to share with it.
pub(crate) fn new_reader(s: &SessionView, asked: &AskedGrant<'_>) -> Markup {
    layout(
        Some(s),
        "Make a new reader?",
        "Runs",
        html! {
            h1 { "Make the new reader “" (asked.name) "”?" }
            p role="note" {
                "No reader is named “" (asked.name) "”. Sharing with it makes a new reader: a client you configure once with the key shown next."
            }
            @if !asked.close.is_empty() {
                p.warning role="alert" { "Did you mean one of these readers? Sharing with one needs no new key." }
                @for name in asked.close {
                    (grant_form(s, asked, name, false, &format!("Share with “{name}”")))
                }
            }
            (grant_form(s, asked, asked.name, true, &format!("Make “{}” and share", asked.name)))
            p { a href="/runs" { "Back to the runs" } }
        },
    )
}

fn grant_form(
    s: &SessionView,
    asked: &AskedGrant<'_>,
    name: &str,
    make: bool,
    button: &str,
) -> Markup {
    html! {
        form.grant method="post" action="/grant" {
            input type="hidden" name="csrf" value=(s.csrf);
            input type="hidden" name="session" value=(asked.session_id);
            input type="hidden" name="run" value=(asked.run_id);
            input type="hidden" name="expires" value=(asked.expires);
            input type="hidden" name="label" value=(name);
            @for f in asked.features {
                input type="hidden" name="feature" value=(f.as_str());
            }
            @if make {
                input type="hidden" name="new_reader" value="yes";
            }
            button type="submit" { (button) }
        }
    }
}
