//! The Readers page: each live reader with its live grants and last read, rotate and remove, a
//! form to add one, and what the last change did (a new key shown once, a removal, a mistake).

use maud::{Markup, html};

use runread_core::redact::MaskedView;
use runread_core::timefmt::rfc3339;
use runread_service::owner::shown::ShownReader;

use super::layout::{enc, key_and_configs, layout, short, short_time};
use crate::auth::SessionView;

/// What a change on the Readers page did, shown above it.
pub(crate) enum ReaderChange {
    /// Added or rotated: its key, shown once, and the configs for it.
    Key {
        what: &'static str,
        reader: runread_store::Reader,
        key: String,
        configs: Box<runread_mcp::configs::ClientConfigs>,
    },
    Removed(String),
    /// The owner's own mistake (a name taken, a reader gone): their words.
    Error(String),
}

impl ReaderChange {
    /// A reader's new key (`what` befell it: added, rotated), with the configs for `mcp_url`.
    pub(crate) fn key(
        what: &'static str,
        mcp_url: &str,
        made: runread_service::owner::NewReader,
    ) -> ReaderChange {
        ReaderChange::Key {
            what,
            configs: Box::new(runread_mcp::configs::for_key(
                mcp_url,
                &made.key,
                &made.reader.name,
            )),
            reader: made.reader,
            key: made.key,
        }
    }
}

/// The Readers page: each live reader, its live grants and last read, rotate and remove; a form
/// to add one; and, after an add or a rotation, its key shown once with the client configs.
pub(crate) fn readers(
    s: &SessionView,
    v: &crate::views::ReadersView,
    change: Option<ReaderChange>,
) -> Markup {
    layout(
        Some(s),
        "Readers",
        "Readers",
        html! {
            h1 { "Readers" }
            p.note { "A reader is a client you configure once with its own key (Claude Code, Codex, a CI job, an orchestrating agent). Share runs with it from a run's page; it sees each one at its next call, with no new key." }
            (change_shown(change))
            @if v.readers.is_empty() {
                p.empty { "No readers yet." }
            } @else {
                (readers_table(s, &v.readers))
            }
            form.reader method="post" action="/readers/add" autocomplete="off" {
                input type="hidden" name="csrf" value=(s.csrf);
                label { "Name " input type="text" name="name" required maxlength=(runread_core::limits::READER_NAME_MAX_BYTES) placeholder="claude-code"; }
                button type="submit" { "Add reader and show its key" }
            }
        },
    )
}

/// What the owner's last change did, above the list (nothing on a plain visit): a key is in it
/// only here, the one time it is shown.
fn change_shown(change: Option<ReaderChange>) -> Markup {
    html! {
        @match change {
            Some(ReaderChange::Key { what, reader, key, configs }) => {
                section.key-shown aria-labelledby="key-h" {
                    h2 id="key-h" { "“" (reader.name) "” " (what) }
                    (key_and_configs(&key, &configs))
                }
            }
            Some(ReaderChange::Removed(name)) => p.ok role="status" { "Removed “" (name) "”: its key is refused and its grants are revoked." },
            Some(ReaderChange::Error(msg)) => p.error role="alert" { (msg) },
            None => {},
        }
    }
}

/// The live readers, one row each.
fn readers_table(s: &SessionView, readers: &[MaskedView<ShownReader>]) -> Markup {
    html! {
        table.readers {
            thead { tr {
                th scope="col" { "Reader" } th scope="col" { "Live grants" }
                th scope="col" { "Last read" } th scope="col" { "Added" } th scope="col" { "" }
            } }
            tbody {
                @for r in readers {
                    tr data-reader=(r.reader.name) {
                        td { (r.reader.name) }
                        td {
                            @if r.live.is_empty() { "none" }
                            @for g in &r.live {
                                a href=(format!("/run?session={}&generation={}&run={}", enc(&g.target.session_id), g.target.generation, enc(&g.target.run_id))) { code { (short(&g.target.run_id, 13)) } }
                                " (" (g.features.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")) ") "
                            }
                            @if !r.stale.is_empty() {
                                " " a.stale href="/grants?state=stale" { (r.stale.len()) " stale (cannot be read)" }
                            }
                        }
                        td.time { (r.last_read_ms.map(|t| short_time(&rfc3339(t))).unwrap_or_else(|| "never".into())) }
                        td.time { (short_time(&rfc3339(r.reader.created_at_ms))) }
                        td { (reader_actions(s, r)) }
                    }
                }
            }
        }
    }
}

/// A reader's row's actions: each change asks the owner first what it costs the reader's client.
fn reader_actions(s: &SessionView, r: &MaskedView<ShownReader>) -> Markup {
    html! {
        form.inline method="post" action="/readers/rotate"
            data-confirm=(format!("Give “{}” a new key? Its client is refused until you configure the new one; its grants stay.", r.reader.name)) {
            input type="hidden" name="csrf" value=(s.csrf);
            input type="hidden" name="name" value=(r.reader.name);
            button type="submit" { "Rotate key" }
        }
        " "
        form.inline method="post" action="/readers/remove"
            data-confirm=(format!("Remove “{}”? Its key is refused and every grant of it revoked.", r.reader.name)) {
            input type="hidden" name="csrf" value=(s.csrf);
            input type="hidden" name="name" value=(r.reader.name);
            button type="submit" { "Remove" }
        }
        " " a href=(format!("/audit?reader={}", enc(&r.reader.id))) { "reads" }
    }
}
