//! The page after a grant: what was shared with whom until when, and, for a new reader, its key
//! shown once with the client configs.

use maud::{Markup, html};

use runread_core::timefmt::rfc3339;

use super::layout::{key_and_configs, layout, run_href, short};
use crate::auth::SessionView;

pub(crate) fn granted(
    s: &SessionView,
    g: &runread_service::owner::NewGrant,
    shown: &runread_service::owner::shown::ShownRun,
    url: &str,
    configs: Option<&runread_mcp::configs::ClientConfigs>,
) -> Markup {
    let features: Vec<&str> = g.grant.features.iter().map(|f| f.as_str()).collect();
    layout(
        Some(s),
        "Granted",
        "Grants",
        html! {
            h1 { "Granted" }
            dl.facts {
                dt { "Shared with" } dd { (g.reader.name) }
                dt { "Run" } dd { a href=(run_href(&shown.record)) { (short(shown.prompt.text().unwrap_or(&shown.record.target.run_id), 120)) } }
                dt { "Features" } dd { (features.join(", ")) }
                dt { "Expires" } dd { (rfc3339(g.grant.expires_at_ms)) }
                dt { "Endpoint" } dd { code { (url) } }
                dt { "Grant" } dd { code id="grant-id" { (g.grant.id) } }
                dt { "Snapshot" } dd #snapshot { (g.snapshot.describe()) }
            }
            @match (&g.key, configs) {
                (Some(key), Some(configs)) => {
                    p { "“" (g.reader.name) "” is a new reader: configure its client once with the key below; every run you share with it later reaches it without a new key." }
                    (key_and_configs(key, configs))
                }
                _ => {
                    p id="shared-note" { "“" (g.reader.name) "” already has its key: its client's next call to " code { (url) } " sees this run while runread serves there (" code { "runread status" } " says whether it does). Nothing to configure." }
                }
            }
            p { a href="/grants" { "All grants" } " · " a href="/readers" { "Readers" } " · " a href=(run_href(&shown.record)) { "Back to the run" } }
        },
    )
}
