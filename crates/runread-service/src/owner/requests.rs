//! The owner's side of access requests ([`crate::access`]): the requests waiting, each with what
//! its reader wrote (opened, masked) and the runs its hints match now; an approval makes
//! ordinary exact grants, one run each, never more than the request asked (features, duration,
//! how many runs) and never anything standing; a denial makes nothing.

use serde::{Deserialize, Serialize};

use runread_core::limits::GRANT_MAX_LIFETIME_SECS;
use runread_core::redact::MaskedView;
use runread_core::{Agent, ErrorCode, Feature};
use runread_store::{AccessRequestRecord, RunFilter, RunRecord};

use crate::owner::grants::{self, GrantError, NewGrant};
use crate::owner::readers::NewReaderPolicy;
use crate::owner::search::Bounds;
use crate::owner::shown::ShownRun;
use crate::owner::{Owner, run_ids, workspaces};

/// A request waiting for the owner, as the console and `runread requests` show it (always inside
/// a [`MaskedView`]: every string masked, the runs' included).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShownRequest {
    pub id: String,
    /// The reader asking (its name, as the owner named it: never the client's own word).
    pub reader_name: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    /// What the reader wrote: untrusted text, shown quoted.
    pub agent: Option<String>,
    pub workspace: Option<String>,
    pub words: Option<String>,
    pub reason: Option<String>,
    /// How many of the newest matching runs it asks for.
    pub latest: u32,
    pub features: Vec<Feature>,
    pub duration_s: u64,
    /// The runs its hints match now, newest first, at most `latest`.
    pub matches: Vec<ShownRun>,
}

/// Why the owner's decision was not made. Owner-facing: these messages may name runs.
#[derive(Debug)]
pub enum RequestError {
    /// No request waits under that id (never made, decided, expired, or its reader removed).
    NoSuchRequest,
    /// Approved without naming runs, and its hints match none now.
    NoMatchingRun,
    /// More runs than the request asked for.
    TooManyRuns {
        asked: u32,
    },
    /// A feature the request did not ask for.
    FeatureNotAsked(Feature),
    /// Longer than the request asked for, or not in the future.
    BadExpiry(String),
    /// A named run that is no one current run.
    Run(run_ids::Unresolved),
    Grant(GrantError),
    Unavailable,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::NoSuchRequest => f.write_str(
                "no access request waits with that id (decided, expired, or never made)",
            ),
            RequestError::NoMatchingRun => f.write_str(
                "the request matches no run now: name the runs to share with --run, or deny it",
            ),
            RequestError::TooManyRuns { asked } => {
                write!(f, "the request asked for at most {asked} run(s)")
            }
            RequestError::FeatureNotAsked(feature) => write!(
                f,
                "the request did not ask for {}: an approval may only narrow it",
                feature.as_str()
            ),
            RequestError::BadExpiry(m) => f.write_str(m),
            RequestError::Run(e) => write!(f, "{e}"),
            RequestError::Grant(e) => write!(f, "{e}"),
            RequestError::Unavailable => f.write_str("the store cannot answer now"),
        }
    }
}

/// What an approval made: ordinary grants to the request's reader.
pub struct Approved {
    pub reader_name: String,
    pub grants: Vec<NewGrant>,
}

/// A run the owner names to share: its id (or a unique prefix), and its session (or a prefix)
/// when the same id names runs in several (a fork and its parent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunChoice {
    pub run_id: String,
    pub session_id: Option<String>,
}

/// How the owner narrows a request when approving it; each `None` keeps what it asked.
#[derive(Debug, Clone, Default)]
pub struct Approval<'a> {
    /// The runs to share; `None`: the runs it matches now.
    pub runs: Option<&'a [RunChoice]>,
    pub features: Option<Vec<Feature>>,
    pub expires_at_ms: Option<i64>,
}

fn unavailable(e: runread_store::StoreError) -> RequestError {
    crate::evidence::unavailable(e);
    RequestError::Unavailable
}

impl Owner {
    /// The access requests waiting at `now_ms`, oldest first, with the runs each matches. Fails
    /// closed: a request whose text cannot be opened or masked is not shown, and said so in the
    /// log (its reader is told nothing).
    pub fn access_requests(&self, now_ms: i64) -> Result<Vec<MaskedView<ShownRequest>>, ErrorCode> {
        let store = self.store();
        let pending = store
            .access_requests_pending(now_ms)
            .map_err(crate::evidence::unavailable)?;
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        let redactor = self.reading.secrets.redactor()?;
        let names: std::collections::HashMap<String, String> = store
            .readers()
            .map_err(crate::evidence::unavailable)?
            .into_iter()
            .filter(|r| r.removed_at_ms.is_none())
            .map(|r| (r.id, r.name))
            .collect();
        let mut shown = Vec::with_capacity(pending.len());
        for q in pending {
            let Some(reader_name) = names.get(&q.reader_id).cloned() else {
                continue;
            };
            let asked = match crate::access::open_asked(self.keys(), &q) {
                Ok(asked) => asked,
                Err(_) => {
                    tracing::warn!(request = q.id, "an access request's text does not open");
                    continue;
                }
            };
            let matches = self.matching_runs(&q, &asked, now_ms)?;
            let view = ShownRequest {
                id: q.id,
                reader_name,
                created_at_ms: q.created_at_ms,
                expires_at_ms: q.expires_at_ms,
                agent: asked.agent,
                workspace: asked.workspace,
                words: asked.words,
                reason: asked.reason,
                latest: q.latest,
                features: q.features,
                duration_s: q.duration_s,
                matches,
            };
            shown.push(MaskedView::new(view, &redactor).map_err(|_| ErrorCode::Unavailable)?);
        }
        Ok(shown)
    }

    /// How many access requests wait at `now_ms` (the console's menu, `runread status`).
    pub fn pending_request_count(&self, now_ms: i64) -> Result<u64, ErrorCode> {
        self.store()
            .access_requests_pending_count(now_ms)
            .map_err(crate::evidence::unavailable)
    }

    /// The runs `q`'s hints match now, newest first, at most `q.latest`: its agent, its
    /// workspace (by name; one no registered workspace has matches nothing), and its words as the
    /// owner's search matches them (bounded as a search is).
    fn matching_runs(
        &self,
        q: &AccessRequestRecord,
        asked: &crate::access::Asked,
        now_ms: i64,
    ) -> Result<Vec<ShownRun>, ErrorCode> {
        let mut filter = RunFilter {
            agent: asked.agent.as_deref().and_then(Agent::parse),
            ..RunFilter::default()
        };
        if let Some(name) = &asked.workspace {
            match workspaces::find(&**self.store(), name) {
                Ok(w) => filter.workspace_id = Some(w.id),
                Err(workspaces::WorkspaceError::Store(_)) => return Err(ErrorCode::Unavailable),
                Err(_) => return Ok(Vec::new()),
            }
        }
        let latest = usize::try_from(q.latest).unwrap_or(usize::MAX);
        let runs = match &asked.words {
            Some(words) => {
                let bounds = Bounds {
                    results_max: latest,
                    ..Bounds::default()
                };
                self.search_runs_within(words, &filter, now_ms, bounds)?
                    .runs
            }
            None => {
                let page = self
                    .store()
                    .runs_page(&filter, q.latest, 0)
                    .map_err(crate::evidence::unavailable)?;
                self.shown_runs(page, now_ms)?
            }
        };
        Ok(runs.into_iter().map(MaskedView::into_inner).collect())
    }

    /// Approves the waiting request `id`: one grant per run (`approval.runs`, or the runs it
    /// matches now) to its reader, for the features and until the time it asked or narrower.
    pub fn approve_request(
        &self,
        id: &str,
        approval: Approval<'_>,
        now_ms: i64,
    ) -> Result<Approved, RequestError> {
        let store = self.store();
        let q = self.pending_request(id, now_ms)?;
        let (reader, _) = store
            .reader_of_id(&q.reader_id, now_ms)
            .map_err(unavailable)?
            .ok_or(RequestError::NoSuchRequest)?;
        let (features, expires_at_ms) = narrowed(&q, &approval, now_ms)?;
        let runs = self.runs_to_share(&q, approval.runs, now_ms)?;
        // Decided first: a request decided meanwhile (another console, another gateway) grants
        // nothing here. Its reader is told `pending` until the grants are recorded.
        if !store
            .decide_access_request(&q.id, true, now_ms)
            .map_err(unavailable)?
        {
            return Err(RequestError::NoSuchRequest);
        }
        let mut made = Vec::with_capacity(runs.len());
        let mut failed = None;
        for run in runs {
            let to = (reader.name.as_str(), NewReaderPolicy::Ask);
            let features = features.clone();
            match grants::grant_run(
                &**store,
                self.keys(),
                run,
                features,
                expires_at_ms,
                to,
                None,
                now_ms,
            ) {
                Ok(g) => made.push(g),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // What was made is the reader's, even when a grant after it failed.
        let ids: Vec<String> = made.iter().map(|g| g.grant.id.clone()).collect();
        store
            .record_access_grants(&q.id, &ids)
            .map_err(unavailable)?;
        tracing::info!(
            request = q.id,
            reader = reader.name,
            grants = ids.len(),
            "access request approved"
        );
        match failed {
            Some(e) => Err(RequestError::Grant(e)),
            None => Ok(Approved {
                reader_name: reader.name,
                grants: made,
            }),
        }
    }

    /// The runs an approval of `q` shares: those named (each one current run, no more than it
    /// asked for), or those it matches now (at least one).
    fn runs_to_share(
        &self,
        q: &AccessRequestRecord,
        named: Option<&[RunChoice]>,
        now_ms: i64,
    ) -> Result<Vec<RunRecord>, RequestError> {
        if let Some(ids) = named {
            if ids.len() > usize::try_from(q.latest).unwrap_or(usize::MAX) {
                return Err(RequestError::TooManyRuns { asked: q.latest });
            }
            return ids
                .iter()
                .map(|run| {
                    run_ids::resolve(&**self.store(), &run.run_id, run.session_id.as_deref())
                        .map_err(RequestError::Run)
                })
                .collect();
        }
        let asked =
            crate::access::open_asked(self.keys(), q).map_err(|_| RequestError::Unavailable)?;
        let matched = self
            .matching_runs(q, &asked, now_ms)
            .map_err(|_| RequestError::Unavailable)?;
        if matched.is_empty() {
            return Err(RequestError::NoMatchingRun);
        }
        Ok(matched.into_iter().map(|r| r.record).collect())
    }

    /// Denies the waiting request `id`: nothing is granted; its reader is told `denied`.
    pub fn deny_request(&self, id: &str, now_ms: i64) -> Result<(), RequestError> {
        let q = self.pending_request(id, now_ms)?;
        if !self
            .store()
            .decide_access_request(&q.id, false, now_ms)
            .map_err(unavailable)?
        {
            return Err(RequestError::NoSuchRequest);
        }
        tracing::info!(request = q.id, "access request denied");
        Ok(())
    }

    /// The request `id` if it waits at `now_ms` and its reader is live.
    fn pending_request(&self, id: &str, now_ms: i64) -> Result<AccessRequestRecord, RequestError> {
        self.store()
            .access_request(id)
            .map_err(unavailable)?
            .filter(|q| q.decided_at_ms.is_none() && q.expires_at_ms > now_ms)
            .ok_or(RequestError::NoSuchRequest)
    }
}

/// The features and expiry an approval of `q` grants: what it asked, or narrower.
fn narrowed(
    q: &AccessRequestRecord,
    approval: &Approval<'_>,
    now_ms: i64,
) -> Result<(Vec<Feature>, i64), RequestError> {
    let features = match &approval.features {
        None => q.features.clone(),
        Some(narrowed) => {
            if let Some(f) = narrowed.iter().find(|f| !q.features.contains(f)) {
                return Err(RequestError::FeatureNotAsked(*f));
            }
            narrowed.clone()
        }
    };
    let asked_s = q.duration_s.min(GRANT_MAX_LIFETIME_SECS);
    let longest = now_ms.saturating_add(i64::try_from(asked_s).unwrap_or(i64::MAX) * 1_000);
    let expires_at_ms = match approval.expires_at_ms {
        None => longest,
        Some(at) if at <= now_ms => {
            return Err(RequestError::BadExpiry("the expiry is in the past".into()));
        }
        Some(at) if at > longest => {
            return Err(RequestError::BadExpiry(format!(
                "the request asked for {asked_s} s of access: an approval may only shorten it"
            )));
        }
        Some(at) => at,
    };
    Ok((features, expires_at_ms))
}
