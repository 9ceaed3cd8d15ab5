//! What a page shows: the views the routes build and the pages render, and the choices a page
//! offers (statuses, expiry presets, audit windows).

use serde::Deserialize;

use runread_core::Agent;
use runread_core::redact::MaskedView;
use runread_service::outputs::{self, Previewed};
use runread_service::owner::shown::ShownRun;
use runread_store::RunFilter;

use crate::Refusal;

/// The run statuses the list filters by.
pub(crate) const STATUSES: [&str; 5] = ["completed", "failed", "cancelled", "running", "unknown"];
/// Expiry presets of the grant form: (value for `owner::expiry`, label).
pub(crate) const EXPIRY_PRESETS: [(&str, &str); 5] = [
    ("15m", "15 minutes"),
    ("1h", "1 hour"),
    ("8h", "8 hours"),
    ("1d", "1 day"),
    ("7d", "7 days"),
];
/// The Requests page's expiry choice that keeps what the reader asked for (its duration from the
/// approval): the Owner API's own default, so that "as asked" is never a few milliseconds wider.
pub(crate) const ASKED_EXPIRY: &str = "asked";
/// Audit windows: (value, label, length in ms, number of chart bars).
pub(crate) const AUDIT_WINDOWS: [(&str, &str, i64, i64); 4] = [
    ("1h", "last hour", 3_600_000, 12),
    ("24h", "last 24 hours", 86_400_000, 24),
    ("7d", "last 7 days", 7 * 86_400_000, 28),
    ("30d", "last 30 days", 30 * 86_400_000, 30),
];

/// Largest offset into the run list the console pages to.
pub(crate) const RUNS_OFFSET_MAX: u64 = 10_000_000;

#[derive(Deserialize, Default, Clone)]
pub(crate) struct RunsQuery {
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub workspace: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub offset: Option<u64>,
    /// Words to search the prompts and answers for (`runread_service::search`).
    #[serde(default)]
    pub q: Option<String>,
}

impl RunsQuery {
    pub(crate) fn filter(&self) -> Result<RunFilter, Refusal> {
        let nonempty = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        let agent = nonempty(&self.agent);
        let f = RunFilter {
            agent: agent.as_deref().and_then(Agent::parse),
            workspace_id: nonempty(&self.workspace),
            status: nonempty(&self.status),
        };
        let agent_ok = agent.is_none() || f.agent.is_some();
        let status_ok = f.status.as_deref().is_none_or(|s| STATUSES.contains(&s));
        let workspace_ok = f
            .workspace_id
            .as_deref()
            .is_none_or(runread_core::target::is_id);
        if !(agent_ok && status_ok && workspace_ok && self.offset() <= RUNS_OFFSET_MAX) {
            return Err(Refusal::InvalidRequest);
        }
        Ok(f)
    }

    pub(crate) fn offset(&self) -> u64 {
        self.offset.unwrap_or(0)
    }

    /// The search's words as typed, when there are any.
    pub(crate) fn search(&self) -> Option<&str> {
        self.q.as_deref().filter(|q| !q.trim().is_empty())
    }
}

pub(crate) struct RunsPage {
    pub query: RunsQuery,
    /// As the owner is shown them: masked, the prompt read back from its file.
    pub rows: Vec<MaskedView<ShownRun>>,
    pub total: u64,
    pub workspaces: Vec<runread_store::Workspace>,
    /// A search's reach: runs examined, and whether every run was (`None`: not a search).
    pub searched: Option<(u64, bool)>,
    /// The kept runs together against their bound, so the owner sees what keeping costs before
    /// a keep is refused (`None`: the store did not say; the list is worth showing without it).
    pub kept_totals: Option<runread_service::owner::KeptTotals>,
}

/// What the run page shows, all as a reader granted every feature would be served it.
pub(crate) struct RunView {
    pub run: MaskedView<ShownRun>,
    pub answer: Result<Answer, &'static str>,
    pub history: Result<Previewed<outputs::History>, &'static str>,
    pub times: std::collections::HashMap<u64, String>,
    pub work_state: Result<Previewed<outputs::WorkState>, &'static str>,
    pub metadata: Result<Previewed<outputs::Metadata>, &'static str>,
    pub artifacts: Result<Previewed<outputs::ArtifactList>, &'static str>,
    pub grants: Vec<GrantRow>,
    /// The run's snapshot sealed for sharing, when it has one (a shared run's sealed evidence,
    /// gone with its last grant): never called "kept", which is the owner's own keep.
    pub sealed: Option<MaskedView<runread_store::SnapshotSummary>>,
    /// The run's kept copy (`runread keep`), when the owner kept it: it lasts until dropped.
    pub kept: Option<runread_store::KeptSummary>,
    /// What the owner's last Keep or Drop on this page did (`Err`: it was refused), said once.
    pub said: Option<Result<String, String>>,
    /// The live readers' names, to share the run with one.
    pub readers: Vec<String>,
    pub history_cursor: Option<String>,
}

/// A grant as a listing shows it: what the owner is shown of it, and where it stands now (live,
/// stale and why, expired, revoked).
pub(crate) struct GrantRow {
    pub grant: MaskedView<runread_store::Grant>,
    pub standing: runread_service::admission::GrantStanding,
}

/// The Readers page: each live reader with its live grants and its last read.
pub(crate) struct ReadersView {
    pub readers: Vec<MaskedView<runread_service::owner::shown::ShownReader>>,
}

/// The final answer, read chunk by chunk as a reader would.
pub(crate) type Answer = runread_service::owner::PreviewedAnswer;

/// The audit page's rows: each call's start record, its receipts, and its grant's label.
pub(crate) struct AuditView {
    pub window: (&'static str, &'static str, i64, i64),
    pub reader: Option<String>,
    pub grant: Option<String>,
    pub run: Option<String>,
    pub tool: Option<String>,
    pub outcome: Option<runread_store::AuditOutcome>,
    pub rows: Vec<MaskedView<runread_service::owner::shown::ShownCall>>,
    /// Calls in the window the filters let through beyond the page's [`AUDIT_PAGE_MAX`].
    pub more: u64,
    /// Every reader, removed ones included (their calls stay in the audit).
    pub readers: Vec<MaskedView<runread_store::Reader>>,
    pub grants: Vec<MaskedView<runread_store::Grant>>,
    /// The calls refused before the gate the filters let through.
    pub refused: RefusedView,
    pub now_ms: i64,
}

/// Calls refused before the gate (no start record holds them), newest first, how many more,
/// and the per-minute counts of calls with no valid credential, per code.
#[derive(Default)]
pub(crate) struct RefusedView {
    pub rows: Vec<MaskedView<runread_service::owner::shown::ShownRefusal>>,
    pub more: u64,
    pub unadmitted: Vec<runread_store::UnadmittedTally>,
}

/// A connection request as the Connections page shows it: the request, the name offered for the
/// new reader it would become, and the live reader its client's name looks like (a client names
/// itself; that name picks nothing).
pub(crate) struct ConnectionView {
    pub request: runread_service::oauth::OAuthRequest,
    pub suggested_name: String,
    pub looks_like: Option<String>,
}

/// The Connections page: the requests waiting, and the live readers a client could be joined to
/// (id, name).
pub(crate) struct ConnectionsView {
    pub pending: Vec<ConnectionView>,
    pub readers: Vec<(String, String)>,
}

/// Joining a client to an existing reader, before the owner confirms: the request, the reader,
/// and that reader's live grants (their targets masked), which the client would read.
pub(crate) struct JoinView {
    pub request: runread_service::oauth::OAuthRequest,
    pub reader: MaskedView<runread_store::Reader>,
    pub live: Vec<MaskedView<runread_store::Grant>>,
}

/// The Requests page: the pending access requests, oldest first, each masked whole as the Owner
/// API hands it over (the reader's name, its hints, its reason, and the runs it matches with their
/// prompt lines), and the time they were read at.
pub(crate) struct RequestsView {
    pub pending: Vec<MaskedView<runread_service::owner::ShownRequest>>,
    pub now_ms: i64,
}
