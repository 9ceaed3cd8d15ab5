//! The page of a refusal: its fixed text and code, with no navigation (the request may have
//! come from no session at all).

use axum::response::Html;
use maud::html;

use super::layout::{html, layout};
use crate::Refusal;

pub(crate) fn refusal(r: Refusal) -> Html<String> {
    html(layout(
        None,
        "Refused",
        "",
        html! {
            h1 { "Refused" }
            p.refusal data-code=(r.code()) { (r.message()) }
            p.code { "code: " code { (r.code()) } }
        },
    ))
}
