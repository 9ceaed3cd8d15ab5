//! The Secrets page: the names of the known secrets (never their values) and a form to add one.

use maud::{Markup, html};

use super::layout::layout;
use crate::auth::SessionView;

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
