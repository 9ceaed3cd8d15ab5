//! The console's routes: each reads its query or form, checks the session (and, when it changes
//! anything, the CSRF token), does its work on a blocking thread within [`PAGE_DEADLINE`], and
//! renders a page from [`crate::pages`]. The owner's acts are the library's, the same the CLI
//! calls (`runread_service::owner`, the store's revocation).

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{FromRequest, FromRequestParts, RawForm, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use maud::Markup;
use serde::Deserialize;
use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::Target;
use runread_core::limits::HISTORY_PAGE_MAX;
use runread_core::redact::MaskedView;
use runread_core::timefmt::now_ms;
use runread_service::outputs::{self, Previewed};
use runread_store::{Grant, GrantState};

use crate::auth::{COOKIE_NAME, SESSION_IDLE_TIMEOUT, SessionView, csrf_matches};
use crate::form::{Fields, PageQuery};
use crate::pages;
use crate::pages::ReaderChange;
use crate::views::{
    AUDIT_WINDOWS, Answer, AuditView, EXPIRY_PRESETS, ReadersView, RefusedView, RunView, RunsPage,
    RunsQuery,
};
use crate::{AUDIT_PAGE_MAX, BACK_PATH_MAX_BYTES, Console, PAGE_DEADLINE, RUNS_PAGE, Refusal};

type Shared = State<Arc<Console>>;

pub(crate) fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route("/", get(|| async { see_other("/runs") }))
        .route("/login", get(login))
        .route("/logout", post(logout))
        .route("/runs", get(runs))
        .route("/runs/rows", get(runs_rows))
        .route("/run", get(run))
        .route("/run/keep", post(keep))
        .route("/run/drop", post(drop_keep))
        .route("/grant", post(grant))
        .route("/grants", get(grants))
        .route("/grants/revoke", post(revoke))
        .route("/requests", get(requests))
        .route("/requests/approve", post(approve_request))
        .route("/requests/deny", post(deny_request))
        .route("/readers", get(readers))
        .route("/readers/add", post(add_reader))
        .route("/readers/rotate", post(rotate_reader))
        .route("/readers/remove", post(remove_reader))
        .route("/connections", get(connections))
        .route("/connections/join", get(join_connection))
        .route("/connections/approve", post(approve_connection))
        .route("/connections/deny", post(deny_connection))
        .route("/audit", get(audit))
        .route("/secrets", get(secrets).post(add_secret))
        .route("/artifacts", post(add_artifact))
        .route("/assets/console.css", get(css))
        .route("/assets/console.js", get(js))
        .fallback(|| async { Refusal::NotFound })
        .with_state(console)
}

fn see_other(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(v) => (StatusCode::SEE_OTHER, [(header::LOCATION, v)]).into_response(),
        Err(_) => Refusal::InvalidRequest.into_response(),
    }
}

/// Where a form's `back` may send the owner: `back` if it is a path on this console, else the
/// fixed page `fallback`. See [`is_console_path`].
fn back_or<'a>(back: Option<&'a str>, fallback: &'static str) -> &'a str {
    back.filter(|b| is_console_path(b)).unwrap_or(fallback)
}

/// A same-origin relative path: at most [`BACK_PATH_MAX_BYTES`] bytes of visible ASCII, starting
/// with exactly one `/` (so no scheme either), with no `\` anywhere. Browsers read `\` as `/`
/// and drop tabs and newlines from a URL, so `/\host`, `//host` and `/<TAB>/host` all name
/// another host: none passes. Percent escapes stay escapes: a browser never decodes them while
/// resolving, so `/%5Chost` is a path on this console (one it does not serve).
fn is_console_path(path: &str) -> bool {
    path.len() <= BACK_PATH_MAX_BYTES
        && path.starts_with('/')
        && !path.starts_with("//")
        && path.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
}

/// The value of the console's cookie, if exactly one is sent.
fn cookie(h: &HeaderMap) -> Option<&str> {
    let mut found = h
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

fn session_cookie(value: &str, max_age_secs: u64) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{COOKIE_NAME}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age_secs}"
    ))
    .ok()
}

/// A logged-in owner whose page menu is not counted yet: what a state-changing request starts
/// from (most of them count after their change, so that the menu says what the change left) and
/// the run list's refresh (rows, no menu). Only an [`Owner`] renders a page.
pub(crate) struct Session {
    session: SessionView,
    cookie: String,
}

impl FromRequestParts<Arc<Console>> for Session {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, c: &Arc<Console>) -> Result<Self, Refusal> {
        let cookie = cookie(&parts.headers)
            .ok_or(Refusal::NotLoggedIn)?
            .to_owned();
        let session = c.auth.session(Some(&cookie), Instant::now())?;
        Ok(Session { session, cookie })
    }
}

impl Session {
    /// The owner with the menu's count of pending access requests: one count in the store.
    /// A count the store could not make leaves the menu without a number (logged), never the
    /// page refused: the page's own reads say whether the store answers.
    pub(crate) async fn counted(self, c: &Arc<Console>) -> Owner {
        let c2 = c.clone();
        let counted = blocking(move || {
            c2.owner.pending_request_count(now_ms()).map_err(|e| {
                tracing::warn!(
                    error = e.as_str(),
                    "console: pending access requests not counted"
                );
                Refusal::Unavailable
            })
        })
        .await;
        let Session {
            mut session,
            cookie,
        } = self;
        session.pending_requests = counted.ok();
        Owner { session, cookie }
    }

    /// A part of a page (no menu), with the session cookie renewed.
    fn fragment(&self, body: Markup) -> Response {
        renewed(pages::html(body).into_response(), &self.cookie)
    }
}

/// The logged-in owner of a page request: the live session (renewed by this request), its cookie
/// and the menu's count. Without a session, the request is refused `not_logged_in` before its
/// handler runs.
pub(crate) struct Owner {
    pub session: SessionView,
    cookie: String,
}

impl FromRequestParts<Arc<Console>> for Owner {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, c: &Arc<Console>) -> Result<Self, Refusal> {
        Ok(Session::from_request_parts(parts, c)
            .await?
            .counted(c)
            .await)
    }
}

impl Owner {
    /// A page for this owner, with the session cookie renewed.
    fn page(&self, body: Markup) -> Response {
        renewed(pages::html(body).into_response(), &self.cookie)
    }
}

/// `r` with the session cookie `cookie` renewed for another idle period.
fn renewed(mut r: Response, cookie: &str) -> Response {
    if let Some(v) = session_cookie(cookie, SESSION_IDLE_TIMEOUT.as_secs()) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// A state-changing request: the owner's session (the menu not counted yet: [`Session::counted`]
/// after the change), then the url-encoded form (bounded by the router's body limit), whose
/// `csrf` field must be the session's CSRF token. The door has already required the console's
/// own `Origin`.
pub(crate) struct Change {
    pub owner: Session,
    pub form: Fields,
}

impl FromRequest<Arc<Console>> for Change {
    type Rejection = Refusal;

    async fn from_request(req: Request, c: &Arc<Console>) -> Result<Self, Refusal> {
        let (mut parts, body) = req.into_parts();
        let owner = Session::from_request_parts(&mut parts, c).await?;
        let RawForm(body) = RawForm::from_request(Request::from_parts(parts, body), c)
            .await
            .map_err(|_| Refusal::InvalidRequest)?;
        let form = Fields::parse(&body)?;
        if !csrf_matches(&owner.session, form.one("csrf")) {
            return Err(Refusal::CsrfRefused);
        }
        Ok(Change { owner, form })
    }
}

/// Runs `f` on a blocking thread within [`PAGE_DEADLINE`].
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Refusal> + Send + 'static,
) -> Result<T, Refusal> {
    match tokio::time::timeout(PAGE_DEADLINE, tokio::task::spawn_blocking(f)).await {
        Ok(Ok(r)) => r,
        _ => Err(Refusal::Unavailable),
    }
}

fn store_err(e: runread_store::StoreError) -> Refusal {
    tracing::warn!(error = %e, "console: store unavailable");
    Refusal::Unavailable
}

// ---- login ----

#[derive(Deserialize)]
struct LoginQuery {
    token: String,
}

async fn login(State(c): Shared, PageQuery(q): PageQuery<LoginQuery>) -> Result<Response, Refusal> {
    let cookie = c.auth.log_in(&q.token, Instant::now())?;
    let mut r = see_other("/runs");
    let v = session_cookie(&cookie, SESSION_IDLE_TIMEOUT.as_secs()).ok_or(Refusal::Unavailable)?;
    r.headers_mut().insert(header::SET_COOKIE, v);
    Ok(r)
}

async fn logout(State(c): Shared, Change { owner, .. }: Change) -> Response {
    c.auth.log_out(&owner.cookie);
    let mut r = pages::html(pages::logged_out()).into_response();
    if let Some(v) = session_cookie("", 0) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

// ---- runs ----

/// The Runs page's rows for `q`; with the kept totals when `header` (the whole page, not the
/// rows its refresh asks for every few seconds).
async fn load_runs(c: &Arc<Console>, q: RunsQuery, header: bool) -> Result<RunsPage, Refusal> {
    let filter = q.filter()?;
    let c = c.clone();
    blocking(move || {
        let now = now_ms();
        let workspaces = c.owner.store().workspaces().map_err(store_err)?;
        if let Some(words) = q.search() {
            let found = c
                .owner
                .search_runs(words, &filter, now)
                .map_err(|e| match e {
                    runread_core::ErrorCode::InvalidArguments => Refusal::InvalidRequest,
                    _ => Refusal::Unavailable,
                })?;
            return Ok(RunsPage {
                rows: found.runs,
                total: found.total,
                searched: Some((found.examined, found.complete)),
                query: q,
                workspaces,
                kept_totals: header.then(|| kept_totals(&c)).flatten(),
            });
        }
        let list = c
            .owner
            .store()
            .runs_page(&filter, RUNS_PAGE, q.offset())
            .map_err(store_err)?;
        let total = c.owner.store().runs_count(&filter).map_err(store_err)?;
        let rows = c
            .owner
            .shown_runs(list, now)
            .map_err(|_| Refusal::Unavailable)?;
        Ok(RunsPage {
            query: q,
            rows,
            total,
            workspaces,
            searched: None,
            kept_totals: header.then(|| kept_totals(&c)).flatten(),
        })
    })
    .await
}

/// The kept runs together, for the Runs page's header; `None` (logged) when the store did not
/// say: the list is worth showing without them.
fn kept_totals(c: &Console) -> Option<runread_service::owner::KeptTotals> {
    c.owner
        .kept_totals()
        .map_err(|e| tracing::warn!(error = e.message(), "console: kept totals not read"))
        .ok()
}

async fn runs(
    State(c): Shared,
    owner: Owner,
    PageQuery(q): PageQuery<RunsQuery>,
) -> Result<Response, Refusal> {
    let s = &owner.session;
    let p = load_runs(&c, q, true).await?;
    Ok(owner.page(pages::runs(s, &p)))
}

/// The list's rows alone, for the page's refresh while agents write.
async fn runs_rows(
    State(c): Shared,
    owner: Session,
    PageQuery(q): PageQuery<RunsQuery>,
) -> Result<Response, Refusal> {
    let p = load_runs(&c, q, false).await?;
    Ok(owner.fragment(pages::runs_table(&p)))
}

// ---- one run ----

#[derive(Deserialize)]
pub(crate) struct RunQuery {
    pub session: String,
    pub generation: u64,
    pub run: String,
    #[serde(default)]
    pub history: Option<String>,
}

fn read_answer(c: &Console, target: &Target, now: i64) -> Result<Answer, &'static str> {
    c.owner.preview_answer(target, now).map_err(|e| e.as_str())
}

async fn run(
    State(c): Shared,
    owner: Owner,
    PageQuery(q): PageQuery<RunQuery>,
) -> Result<Response, Refusal> {
    let s = &owner.session;
    if !runread_core::target::is_id(&q.session) || !runread_core::target::is_id(&q.run) {
        return Err(Refusal::InvalidRequest);
    }
    let c2 = c.clone();
    let view = blocking(move || run_view(&c2, find_run(&c2, &q)?, &q)).await?;
    Ok(owner.page(pages::run(s, &view)))
}

/// The run `q` names, as indexed; `not_found` when the index holds no such run.
fn find_run(c: &Console, q: &RunQuery) -> Result<runread_store::RunRecord, Refusal> {
    c.owner
        .store()
        .run(&q.session, q.generation, &q.run)
        .map_err(store_err)?
        .ok_or(Refusal::NotFound)
}

/// The run page's view: each part as a reader would be served it, apart, so that a part a reader
/// would be refused leaves the others shown; and what the owner has shared and kept of the run.
fn run_view(c: &Console, run: runread_store::RunRecord, q: &RunQuery) -> Result<RunView, Refusal> {
    let t = run.target.clone();
    let now = now_ms();
    let history = preview::<outputs::History>(c, &t, history_args(q.history.as_deref()), now);
    let history_cursor = history
        .as_ref()
        .ok()
        .and_then(|h| h.output.next_cursor.clone());
    let times = event_times(c, &t);
    let grants = run_grants(c, &t)?;
    let sealed = sealed_snapshot(c, &t)?;
    let kept = c.owner.kept(&run).map_err(keep_unavailable)?;
    let readers = live_reader_names(c)?;
    let run = c
        .owner
        .shown_run(run, now)
        .map_err(|_| Refusal::Unavailable)?;
    Ok(RunView {
        readers,
        answer: read_answer(c, &t, now),
        history,
        times,
        work_state: preview(c, &t, json!({}), now),
        metadata: preview(c, &t, json!({}), now),
        artifacts: preview(c, &t, json!({}), now),
        grants,
        sealed,
        kept,
        said: None,
        history_cursor,
        run,
    })
}

/// A tool's output for `t` as a reader would be served it now, or the code a reader would be
/// refused with (the page says so in that part's place).
fn preview<T: outputs::ToolOutput>(
    c: &Console,
    t: &Target,
    args: Value,
    now: i64,
) -> Result<Previewed<T>, &'static str> {
    c.owner
        .preview_as::<T>(t, args, now)
        .map_err(|e| e.as_str())
}

/// The history tool's arguments: the longest page a reader may ask for, from `cursor` when the
/// owner paged on.
fn history_args(cursor: Option<&str>) -> Value {
    let mut args = json!({"limit": HISTORY_PAGE_MAX});
    if let (Some(cur), Value::Object(m)) = (cursor, &mut args) {
        m.insert("cursor".into(), json!(cur));
    }
    args
}

/// When each event of `t` happened, for the events whose time is known. None when they cannot be
/// read: the timeline is still worth showing without them.
fn event_times(c: &Console, t: &Target) -> std::collections::HashMap<u64, String> {
    c.owner
        .event_times(t)
        .map(|v| {
            v.into_iter()
                .filter_map(|(seq, at)| Some((seq, at?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The grants of the run `t`, matched by session and run id alone (so in every generation of its
/// session), as the owner is shown them.
fn run_grants(c: &Console, t: &Target) -> Result<Vec<crate::views::GrantRow>, Refusal> {
    let grants = c
        .owner
        .store()
        .grants()
        .map_err(store_err)?
        .into_iter()
        .filter(|g| g.target.session_id == t.session_id && g.target.run_id == t.run_id)
        .collect();
    grant_rows(c, grants, now_ms())
}

/// The copy of `t`'s evidence sealed for sharing, if it has one, as the owner is shown it.
fn sealed_snapshot(
    c: &Console,
    t: &Target,
) -> Result<Option<MaskedView<runread_store::SnapshotSummary>>, Refusal> {
    c.owner
        .store()
        .snapshots()
        .map_err(store_err)?
        .into_iter()
        .find(|k| {
            k.session_id == t.session_id && k.generation == t.generation && k.run_id == t.run_id
        })
        .map(|k| c.owner.shown(k))
        .transpose()
        .map_err(|_| Refusal::Unavailable)
}

// ---- keeping a run ----

/// The store failed while keeping, reading or dropping a kept run: the console's failure, said as
/// any other (`unavailable`), never a half-done page.
fn keep_unavailable(e: runread_service::owner::KeepError) -> Refusal {
    tracing::warn!(error = e.message(), "console: kept runs unavailable");
    Refusal::Unavailable
}

/// The run a Keep or Drop form names (its session, generation and run id), checked as ids before
/// the store is asked.
fn run_form(form: &Fields) -> Result<RunQuery, Refusal> {
    let session = form.required("session")?.to_owned();
    let run = form.required("run")?.to_owned();
    let generation = form
        .required("generation")?
        .parse::<u64>()
        .map_err(|_| Refusal::InvalidRequest)?;
    if !runread_core::target::is_id(&session) || !runread_core::target::is_id(&run) {
        return Err(Refusal::InvalidRequest);
    }
    Ok(RunQuery {
        session,
        generation,
        run,
        history: None,
    })
}

/// The owner's Keep or Drop on a run: what it did, said in the owner's words (`Err`: refused).
type KeepAct = fn(&Console, &runread_store::RunRecord) -> Result<Result<String, String>, Refusal>;

/// The run page after the owner's Keep or Drop, saying what `act` did (its `Err`: refused, in the
/// owner's words; the store's failure is the console's). Rendered, not redirected: what a keep
/// did (its size, the bound it met) is said once, as `runread keep` says it.
async fn kept_page(
    c: Arc<Console>,
    owner: Session,
    form: &Fields,
    act: KeepAct,
) -> Result<Response, Refusal> {
    let q = run_form(form)?;
    let c2 = c.clone();
    let view = blocking(move || {
        let run = find_run(&c2, &q)?;
        let said = act(&c2, &run)?;
        let mut view = run_view(&c2, run, &q)?;
        view.said = Some(said);
        Ok(view)
    })
    .await?;
    let owner = owner.counted(&c).await;
    Ok(owner.page(pages::run(&owner.session, &view)))
}

/// Keeps the run by name (`runread keep RUN`): its whole evidence sealed into the store.
async fn keep(State(c): Shared, Change { owner, form }: Change) -> Result<Response, Refusal> {
    kept_page(c, owner, &form, |c, run| {
        let keeping = c.owner.keep_run(run, now_ms()).map_err(keep_unavailable)?;
        Ok(if keeping.is_kept() {
            Ok(keeping.describe())
        } else {
            Err(keeping.describe())
        })
    })
    .await
}

/// Drops the run's kept copy (`runread keep drop RUN`): its data key first, then its row.
async fn drop_keep(State(c): Shared, Change { owner, form }: Change) -> Result<Response, Refusal> {
    kept_page(c, owner, &form, |c, run| {
        let dropped = c.owner.drop_kept(run, now_ms()).map_err(keep_unavailable)?;
        Ok(if dropped {
            Ok(
                "dropped: its kept copy and the key it was sealed with are destroyed; a live \
                share's copy sealed for sharing stays until that share ends"
                    .to_owned(),
            )
        } else {
            Err("not kept: there was nothing to drop".to_owned())
        })
    })
    .await
}

// ---- grants ----

/// The run page's grant form, read and checked.
struct GrantForm {
    run_id: String,
    session_id: String,
    expires: String,
    label: String,
    features: Vec<Feature>,
    /// The owner confirmed that a name no reader has yet makes one (the "Make a new reader?"
    /// page); without it such a name is asked about first.
    new_reader: bool,
}

impl GrantForm {
    fn read(form: &Fields) -> Result<GrantForm, Refusal> {
        let expires = form.required("expires")?.to_owned();
        if !EXPIRY_PRESETS.iter().any(|(v, _)| *v == expires) {
            return Err(Refusal::InvalidRequest);
        }
        Ok(GrantForm {
            run_id: form.required("run")?.to_owned(),
            session_id: form.required("session")?.to_owned(),
            expires,
            label: form.required("label")?.trim().to_owned(),
            features: form
                .all("feature")
                .map(|f| Feature::parse(f).ok_or(Refusal::InvalidRequest))
                .collect::<Result<_, _>>()?,
            new_reader: form.optional("new_reader") == Some("yes"),
        })
    }
}

type MadeGrant = (
    runread_service::owner::NewGrant,
    runread_core::redact::MaskedView<runread_service::owner::shown::ShownRun>,
);

async fn grant(State(c): Shared, Change { owner, form }: Change) -> Result<Response, Refusal> {
    let asked = GrantForm::read(&form)?;
    if asked.features.is_empty() {
        let owner = owner.counted(&c).await;
        return Ok(owner.page(pages::owner_error(
            &owner.session,
            "Choose at least one feature to grant.",
        )));
    }
    let c2 = c.clone();
    let (made, asked) = blocking(move || {
        let made = make_grant(&c2, &asked)?;
        Ok((made, asked))
    })
    .await?;
    let owner = owner.counted(&c).await;
    let s = &owner.session;
    match made {
        Ok((g, shown)) => {
            let configs = g
                .key
                .as_deref()
                .map(|key| runread_mcp::configs::for_key(&c.mcp_url, key, &g.reader.name));
            Ok(owner.page(pages::granted(s, &g, &shown, &c.mcp_url, configs.as_ref())))
        }
        Err(runread_service::owner::GrantError::Reader(
            runread_service::owner::ReaderError::NotAReaderYet { name, close },
        )) => Ok(owner.page(pages::new_reader(
            s,
            &pages::AskedGrant {
                session_id: &asked.session_id,
                run_id: &asked.run_id,
                expires: &asked.expires,
                features: &asked.features,
                name: &name,
                close: &close,
            },
        ))),
        Err(e) => grant_refused(&owner, e),
    }
}

/// The grant the form asks for, and the run as the owner is shown it (the new key is a known
/// secret from then on: the redactor is asked after the grant is stored).
fn make_grant(
    c: &Console,
    asked: &GrantForm,
) -> Result<Result<MadeGrant, runread_service::owner::GrantError>, Refusal> {
    use runread_service::owner::NewReaderPolicy;
    let now = now_ms();
    let at =
        runread_service::owner::expiry(&asked.expires, now).map_err(|_| Refusal::InvalidRequest)?;
    let made = c.owner.grant(
        runread_service::owner::GrantRequest {
            run_id: &asked.run_id,
            session_id: Some(&asked.session_id),
            features: asked.features.clone(),
            expires_at_ms: at,
            reader: &asked.label,
            new_reader: if asked.new_reader {
                NewReaderPolicy::Make
            } else {
                NewReaderPolicy::Ask
            },
            label: None,
        },
        now,
    );
    match made {
        Ok(g) => {
            let shown = c
                .owner
                .shown_run(g.run.clone(), now)
                .map_err(|_| Refusal::Unavailable)?;
            Ok(Ok((g, shown)))
        }
        Err(e) => Ok(Err(e)),
    }
}

/// A grant not made: the store's failure is the console's, the owner's own mistake (an empty
/// name, a run that changed) is said in their words.
fn grant_refused(
    owner: &Owner,
    e: runread_service::owner::GrantError,
) -> Result<Response, Refusal> {
    use runread_service::owner::{GrantError, ReaderError};
    match e {
        GrantError::Store(e) => {
            tracing::warn!(error = %e, "console: grant not stored");
            Err(Refusal::Unavailable)
        }
        GrantError::Reader(ReaderError::Store(e)) => {
            tracing::warn!(error = %e, "console: reader not stored");
            Err(Refusal::Unavailable)
        }
        e => Ok(owner.page(pages::owner_error(&owner.session, &e.to_string()))),
    }
}

#[derive(Deserialize)]
struct GrantsQuery {
    #[serde(default)]
    state: Option<String>,
}

async fn grants(
    State(c): Shared,
    owner: Owner,
    PageQuery(q): PageQuery<GrantsQuery>,
) -> Result<Response, Refusal> {
    let s = &owner.session;
    let state = match q.state.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(v) => Some(
            GrantState::ALL
                .into_iter()
                .find(|g| g.as_str() == v)
                .ok_or(Refusal::InvalidRequest)?,
        ),
    };
    let c2 = c.clone();
    let list = blocking(move || {
        let mut all = c2.owner.store().grants().map_err(store_err)?;
        all.sort_by_key(|g| std::cmp::Reverse(g.created_at_ms));
        let mut rows = grant_rows(&c2, all, now_ms())?;
        rows.retain(|r| state.is_none_or(|s| r.standing.state == s));
        Ok(rows)
    })
    .await?;
    Ok(owner.page(pages::grants(s, &list, state)))
}

/// `grants` as the owner is shown them, each with where it stands at `now` (a stale one with why).
fn grant_rows(
    c: &Console,
    grants: Vec<Grant>,
    now: i64,
) -> Result<Vec<crate::views::GrantRow>, Refusal> {
    let standings = grants
        .iter()
        .map(|g| c.owner.grant_standing(g, now))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| Refusal::Unavailable)?;
    Ok(shown_grants(c, grants)?
        .into_iter()
        .zip(standings)
        .map(|(grant, standing)| crate::views::GrantRow { grant, standing })
        .collect())
}

/// The names of the live readers, oldest first.
fn live_reader_names(c: &Console) -> Result<Vec<String>, Refusal> {
    Ok(c.owner
        .store()
        .readers()
        .map_err(store_err)?
        .into_iter()
        .filter(|r| r.removed_at_ms.is_none())
        .map(|r| r.name)
        .collect())
}

/// Grants as the owner is shown them.
fn shown_grants(c: &Console, grants: Vec<Grant>) -> Result<Vec<MaskedView<Grant>>, Refusal> {
    c.owner
        .shown_grants(grants)
        .map_err(|_| Refusal::Unavailable)
}

async fn revoke(State(c): Shared, Change { form, .. }: Change) -> Result<Response, Refusal> {
    let id = form.required("grant")?.to_owned();
    if !runread_core::target::is_id(&id) {
        return Err(Refusal::InvalidRequest);
    }
    let c2 = c.clone();
    blocking(move || {
        c2.owner.revoke_grant(&id, now_ms()).map_err(|e| {
            tracing::error!("the store failed: {e}");
            Refusal::Unavailable
        })
    })
    .await?;
    // Back where the owner was (only the console's own pages).
    Ok(see_other(back_or(form.optional("back"), "/grants")))
}

// ---- readers ----

/// The Readers page as it stands now.
fn readers_view(c: &Console) -> Result<ReadersView, Refusal> {
    let readers = c
        .owner
        .shown_readers(now_ms())
        .map_err(|_| Refusal::Unavailable)?;
    Ok(ReadersView { readers })
}

async fn readers(State(c): Shared, owner: Owner) -> Result<Response, Refusal> {
    let c2 = c.clone();
    let view = blocking(move || readers_view(&c2)).await?;
    Ok(owner.page(pages::readers(&owner.session, &view, None)))
}

/// What an add, a rotation or a removal of a reader did, for the page.
type ReaderAct = Result<ReaderChange, runread_service::owner::ReaderError>;

/// Runs `act` on the reader the form names and shows the Readers page with what it did.
async fn reader_change(
    c: Arc<Console>,
    owner: Session,
    form: &Fields,
    act: impl FnOnce(&Console, &str) -> ReaderAct + Send + 'static,
) -> Result<Response, Refusal> {
    let name = form.required("name")?.trim().to_owned();
    let c2 = c.clone();
    let (done, view) = blocking(move || {
        let done = match act(&c2, &name) {
            Ok(change) => change,
            Err(runread_service::owner::ReaderError::Store(e)) => {
                tracing::warn!(error = %e, "console: reader not stored");
                return Err(Refusal::Unavailable);
            }
            Err(e) => ReaderChange::Error(e.to_string()),
        };
        Ok((done, readers_view(&c2)?))
    })
    .await?;
    let owner = owner.counted(&c).await;
    Ok(owner.page(pages::readers(&owner.session, &view, Some(done))))
}

async fn add_reader(State(c): Shared, Change { owner, form }: Change) -> Result<Response, Refusal> {
    reader_change(c, owner, &form, |c, name| {
        let made = c.owner.add_reader(name, now_ms())?;
        Ok(ReaderChange::key("added", &c.mcp_url, made))
    })
    .await
}

async fn rotate_reader(
    State(c): Shared,
    Change { owner, form }: Change,
) -> Result<Response, Refusal> {
    reader_change(c, owner, &form, |c, name| {
        let made = c.owner.rotate_reader(name, now_ms())?;
        Ok(ReaderChange::key("has a new key", &c.mcp_url, made))
    })
    .await
}

async fn remove_reader(
    State(c): Shared,
    Change { owner, form }: Change,
) -> Result<Response, Refusal> {
    reader_change(c, owner, &form, |c, name| {
        let removed = c.owner.remove_reader(name, now_ms())?;
        Ok(ReaderChange::Removed(removed.name))
    })
    .await
}

// ---- connections ----

/// The Connections page, with what the owner's last decision did.
async fn connections_page(
    c: Arc<Console>,
    owner: Owner,
    done: Option<Result<String, String>>,
) -> Result<Response, Refusal> {
    let c2 = c.clone();
    let view = blocking(move || connections_view(&c2)).await?;
    Ok(owner.page(pages::connections(&owner.session, &view, done, now_ms())))
}

/// The requests waiting, each with the name offered for its new reader and the live reader its
/// client's name looks like; the live readers a client could join instead.
fn connections_view(c: &Console) -> Result<crate::views::ConnectionsView, Refusal> {
    let store = c.owner.store();
    let pending = c
        .owner
        .pending_connections(now_ms())
        .map_err(|_| Refusal::Unavailable)?;
    let readers: Vec<(String, String)> = store
        .readers()
        .map_err(|_| Refusal::Unavailable)?
        .into_iter()
        .filter(|r| r.removed_at_ms.is_none())
        .map(|r| (r.id, r.name))
        .collect();
    let pending = pending
        .into_iter()
        .map(|request| {
            let suggested_name = c
                .owner
                .suggested_reader_name(&request.client_name)
                .map_err(|_| Refusal::Unavailable)?;
            let looks_like = readers
                .iter()
                .find(|(_, name)| runread_core::names::looks_like(name, &request.client_name))
                .map(|(_, name)| name.clone());
            Ok(crate::views::ConnectionView {
                request,
                suggested_name,
                looks_like,
            })
        })
        .collect::<Result<_, Refusal>>()?;
    Ok(crate::views::ConnectionsView { pending, readers })
}

async fn connections(State(c): Shared, owner: Owner) -> Result<Response, Refusal> {
    connections_page(c, owner, None).await
}

/// A request id as runread makes them: 64 lowercase hex characters.
fn request_id(form: &Fields) -> Result<String, Refusal> {
    let id = form.required("request")?;
    is_request_id(id)
        .then(|| id.to_owned())
        .ok_or(Refusal::InvalidRequest)
}

fn is_request_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[derive(Deserialize)]
struct JoinQuery {
    request: String,
    reader: String,
}

/// Before a client joins an existing reader: that reader's live grants, which the client would
/// read, and the one button that confirms.
async fn join_connection(
    State(c): Shared,
    owner: Owner,
    axum::extract::Query(q): axum::extract::Query<JoinQuery>,
) -> Result<Response, Refusal> {
    if !is_request_id(&q.request) || !runread_core::target::is_id(&q.reader) {
        return Err(Refusal::InvalidRequest);
    }
    let c2 = c.clone();
    let view = blocking(move || {
        let now = now_ms();

        let request = c2
            .owner
            .pending_connections(now)
            .map_err(|_| Refusal::Unavailable)?
            .into_iter()
            .find(|r| r.id == q.request)
            .ok_or(Refusal::NotFound)?;
        let (reader, live) = c2
            .owner
            .join_preview(&q.reader, now)
            .map_err(|_| Refusal::Unavailable)?
            .ok_or(Refusal::NotFound)?;
        let reader = c2.owner.shown(reader).map_err(|_| Refusal::Unavailable)?;
        let live = c2
            .owner
            .shown_grants(live)
            .map_err(|_| Refusal::Unavailable)?;
        Ok(crate::views::JoinView {
            request,
            reader,
            live,
        })
    })
    .await?;
    Ok(owner.page(pages::join_connection(&owner.session, &view)))
}

async fn approve_connection(
    State(c): Shared,
    Change { owner, form }: Change,
) -> Result<Response, Refusal> {
    let id = request_id(&form)?;
    // A new reader by the name the owner typed, or — from the join page only — the reader the
    // owner reviewed and confirmed.
    let join = form.optional("join").map(str::to_owned);
    let name = match &join {
        Some(_) => String::new(),
        None => form.required("name")?.trim().to_owned(),
    };
    if join
        .as_deref()
        .is_some_and(|r| !runread_core::target::is_id(r))
    {
        return Err(Refusal::InvalidRequest);
    }
    let features: Vec<Feature> = form
        .all("feature")
        .map(|f| Feature::parse(f).ok_or(Refusal::InvalidRequest))
        .collect::<Result<_, _>>()?;
    let run = form
        .optional("run")
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    let expires = form.required("expires")?.to_owned();
    if !EXPIRY_PRESETS.iter().any(|(v, _)| *v == expires) {
        return Err(Refusal::InvalidRequest);
    }
    let c2 = c.clone();
    let done = blocking(move || {
        use runread_service::owner::ReaderChoice;
        let now = now_ms();
        let choice = match &join {
            Some(reader_id) => ReaderChoice::Join { reader_id },
            None => ReaderChoice::New { name: &name },
        };
        let reader = match c2.owner.approve_connection(&id, choice, &features, now) {
            Ok(r) => r,
            Err(runread_service::owner::DecideError::Store(e)) => {
                tracing::warn!(error = %e, "console: connection not decided");
                return Err(Refusal::Unavailable);
            }
            Err(e) => return Ok(Err(e.to_string())),
        };
        let became = match join {
            Some(_) => format!("Approved: the client joined the reader “{}”", reader.name),
            None => format!("Approved: the client is the new reader “{}”", reader.name),
        };
        let Some(run) = run else {
            return Ok(Ok(format!(
                "{became}. Share runs with it from a run's page."
            )));
        };
        let at =
            runread_service::owner::expiry(&expires, now).map_err(|_| Refusal::InvalidRequest)?;
        let shared = c2.owner.grant(
            runread_service::owner::GrantRequest {
                run_id: &run,
                session_id: None,
                features: features.clone(),
                expires_at_ms: at,
                reader: &reader.name,
                new_reader: runread_service::owner::NewReaderPolicy::Make,
                label: None,
            },
            now,
        );
        Ok(Ok(match shared {
            Ok(g) => format!(
                "{became}, and run {} is shared with it.",
                g.run.target.run_id
            ),
            Err(e) => format!("{became}. The run was not shared: {e}"),
        }))
    })
    .await?;
    let owner = owner.counted(&c).await;
    connections_page(c, owner, Some(done)).await
}

async fn deny_connection(
    State(c): Shared,
    Change { owner, form }: Change,
) -> Result<Response, Refusal> {
    let id = request_id(&form)?;
    let c2 = c.clone();
    let done = blocking(move || {
        Ok(match c2.owner.deny_connection(&id, now_ms()) {
            Ok(()) => Ok("Denied: the client is sent back without access.".to_owned()),
            Err(e) => Err(e.to_string()),
        })
    })
    .await?;
    let owner = owner.counted(&c).await;
    connections_page(c, owner, Some(done)).await
}

// ---- access requests ----

/// What the Requests page says after a decision, by a fixed word: the redirect after an
/// approval or a denial carries it (so that a reload asks nothing twice), never a sentence.
#[derive(Deserialize)]
struct RequestsQuery {
    #[serde(default)]
    done: Option<String>,
    /// How many grants the approval made.
    #[serde(default)]
    grants: Option<u32>,
    /// The reader the approval shared with.
    #[serde(default)]
    reader: Option<String>,
}

impl RequestsQuery {
    /// The sentence `done` stands for; a word the console does not send is refused.
    fn said(&self) -> Result<Option<Result<String, String>>, Refusal> {
        match (self.done.as_deref().filter(|d| !d.is_empty()), self.grants) {
            (None, _) => Ok(None),
            (Some("approved"), Some(n)) => {
                let reader = self.reader.as_deref().unwrap_or_default();
                // The reader's name, as a reader's name may be: the page escapes it as any.
                if reader.len() > runread_core::limits::READER_NAME_MAX_BYTES
                    || !runread_core::names::is_shown_as_written(reader)
                {
                    return Err(Refusal::InvalidRequest);
                }
                let runs = if n == 1 {
                    "1 run".to_owned()
                } else {
                    format!("{n} runs")
                };
                Ok(Some(Ok(format!(
                    "Approved: {runs} shared with “{reader}”, one grant each; its next call sees them."
                ))))
            }
            (Some("denied"), None) => Ok(Some(Ok(
                "Denied: the reader is told so, and reads nothing of it.".to_owned(),
            ))),
            _ => Err(Refusal::InvalidRequest),
        }
    }
}

async fn requests(
    State(c): Shared,
    owner: Owner,
    PageQuery(q): PageQuery<RequestsQuery>,
) -> Result<Response, Refusal> {
    let done = q.said()?;
    requests_page(c, owner, done).await
}

/// The Requests page as it stands now, with what the owner's last decision did.
async fn requests_page(
    c: Arc<Console>,
    owner: Owner,
    done: Option<Result<String, String>>,
) -> Result<Response, Refusal> {
    let c2 = c.clone();
    let view = blocking(move || requests_view(&c2)).await?;
    Ok(owner.page(pages::requests(&owner.session, &view, done)))
}

/// The pending requests, each masked whole with the runs it matches (the Owner API's view).
fn requests_view(c: &Console) -> Result<crate::views::RequestsView, Refusal> {
    let now = now_ms();
    let pending = c.owner.access_requests(now).map_err(|e| {
        tracing::warn!(error = e.as_str(), "console: access requests not read");
        Refusal::Unavailable
    })?;
    Ok(crate::views::RequestsView {
        pending,
        now_ms: now,
    })
}

/// An access request's id as runread makes them, from the form's `request` field
/// ([`runread_service::access::is_request_id`]); anything else is refused before the store is
/// asked.
fn access_request_id(form: &Fields) -> Result<String, Refusal> {
    let id = form.required("request")?;
    runread_service::access::is_request_id(id)
        .then(|| id.to_owned())
        .ok_or(Refusal::InvalidRequest)
}

/// What the owner approves of a request: the checked runs (by id), the checked features and the
/// expiry (`None`: as asked).
struct Approval {
    id: String,
    runs: Vec<runread_service::owner::RunChoice>,
    features: Vec<Feature>,
    expires: Option<String>,
}

impl Approval {
    fn read(form: &Fields) -> Result<Approval, Refusal> {
        // Each run as the page offers it: its session's id, a space, its id.
        let runs = form
            .all("run")
            .map(|r| {
                r.split_once(' ')
                    .filter(|(session, run)| {
                        runread_core::target::is_id(session) && runread_core::target::is_id(run)
                    })
                    .map(|(session, run)| runread_service::owner::RunChoice {
                        run_id: run.to_owned(),
                        session_id: Some(session.to_owned()),
                    })
                    .ok_or(Refusal::InvalidRequest)
            })
            .collect::<Result<_, _>>()?;
        let features = form
            .all("feature")
            .map(|f| Feature::parse(f).ok_or(Refusal::InvalidRequest))
            .collect::<Result<_, _>>()?;
        let expires = match form.required("expires")? {
            v if v == crate::views::ASKED_EXPIRY => None,
            v if EXPIRY_PRESETS.iter().any(|(p, _)| *p == v) => Some(v.to_owned()),
            _ => return Err(Refusal::InvalidRequest),
        };
        Ok(Approval {
            id: access_request_id(form)?,
            runs,
            features,
            expires,
        })
    }

    /// Why the owner's choice cannot be approved as it stands, in their words.
    fn empty_choice(&self) -> Option<&'static str> {
        if self.runs.is_empty() {
            Some("Check at least one run to share, or deny the request.")
        } else if self.features.is_empty() {
            Some("Check at least one feature to share, or deny the request.")
        } else {
            None
        }
    }
}

/// A decision the Owner API refused: the store's failure is the console's, anything else (the
/// request expired or was decided, a choice wider than asked) is said on the page.
fn request_refused(e: runread_service::owner::RequestError) -> Result<String, Refusal> {
    use runread_service::owner::{GrantError, RequestError};
    match e {
        RequestError::Unavailable | RequestError::Grant(GrantError::Store(_)) => {
            tracing::warn!(error = %e, "console: access request not decided");
            Err(Refusal::Unavailable)
        }
        e => Ok(e.to_string()),
    }
}

async fn approve_request(
    State(c): Shared,
    Change { owner, form }: Change,
) -> Result<Response, Refusal> {
    let asked = Approval::read(&form)?;
    if let Some(why) = asked.empty_choice() {
        let owner = owner.counted(&c).await;
        return requests_page(c, owner, Some(Err(why.to_owned()))).await;
    }
    let c2 = c.clone();
    let approved = blocking(move || {
        let now = now_ms();
        let expires_at_ms = match &asked.expires {
            None => None,
            Some(v) => {
                Some(runread_service::owner::expiry(v, now).map_err(|_| Refusal::InvalidRequest)?)
            }
        };
        let approval = runread_service::owner::Approval {
            runs: Some(&asked.runs),
            features: Some(asked.features),
            expires_at_ms,
        };
        match c2.owner.approve_request(&asked.id, approval, now) {
            Ok(a) => Ok(Ok(a)),
            Err(e) => request_refused(e).map(Err),
        }
    })
    .await?;
    match approved {
        Ok(a) => Ok(see_other(&format!(
            "/requests?done=approved&grants={}&reader={}",
            a.grants.len(),
            pages::enc(&a.reader_name)
        ))),
        Err(msg) => {
            let owner = owner.counted(&c).await;
            requests_page(c, owner, Some(Err(msg))).await
        }
    }
}

async fn deny_request(
    State(c): Shared,
    Change { owner, form }: Change,
) -> Result<Response, Refusal> {
    let id = access_request_id(&form)?;
    let c2 = c.clone();
    let denied = blocking(move || match c2.owner.deny_request(&id, now_ms()) {
        Ok(()) => Ok(Ok(())),
        Err(e) => request_refused(e).map(Err),
    })
    .await?;
    match denied {
        Ok(()) => Ok(see_other("/requests?done=denied")),
        Err(msg) => {
            let owner = owner.counted(&c).await;
            requests_page(c, owner, Some(Err(msg))).await
        }
    }
}

// ---- audit ----

#[derive(Deserialize)]
struct AuditQuery {
    #[serde(default)]
    window: Option<String>,
    #[serde(default)]
    reader: Option<String>,
    #[serde(default)]
    grant: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
}

async fn audit(
    State(c): Shared,
    owner: Owner,
    PageQuery(q): PageQuery<AuditQuery>,
) -> Result<Response, Refusal> {
    let s = &owner.session;
    let window = audit_window(q.window.as_deref())?;
    let now = now_ms();
    let filter = audit_filter(q, now - window.2)?;
    let c2 = c.clone();
    let view = blocking(move || {
        let grants = c2.owner.store().grants().map_err(store_err)?;
        // Filtered in the store, so that a filter finds its calls however many others the
        // window holds.
        let readers = c2.owner.store().readers().map_err(store_err)?;
        let page = c2
            .owner
            .store()
            .audit_page(&filter, AUDIT_PAGE_MAX)
            .map_err(store_err)?;
        let grants = shown_grants(&c2, grants)?;
        let readers = readers
            .into_iter()
            .map(|r| c2.owner.shown(r))
            .collect::<Result<_, _>>()
            .map_err(|_| Refusal::Unavailable)?;
        let rows = c2
            .owner
            .shown_calls(page.rows)
            .map_err(|_| Refusal::Unavailable)?;
        let refused = refused_before_gate(&c2.owner, &filter)?;
        Ok(AuditView {
            window,
            reader: filter.reader_id,
            readers,
            grant: filter.grant_id,
            run: filter.run_id,
            tool: filter.tool,
            outcome: filter.outcome,
            rows,
            more: page.more,
            grants,
            refused,
            now_ms: now,
        })
    })
    .await?;
    Ok(owner.page(pages::audit(s, &view)))
}

/// The store's filter for the audit page's query, from `since_ms` on: ids well formed, a tool
/// of the catalog (or the name a refusal keeps of one runread does not have), a known outcome.
fn audit_filter(q: AuditQuery, since_ms: i64) -> Result<runread_store::AuditFilter, Refusal> {
    let reader = q.reader.filter(|r| !r.is_empty());
    let grant = q.grant.filter(|g| !g.is_empty());
    let run = q.run.filter(|r| !r.is_empty());
    let tool = q.tool.filter(|t| !t.is_empty());
    let known_tool = |t: &str| {
        runread_service::tools::by_name(t).is_some()
            || t == runread_service::refusals::UNKNOWN_TOOL_KEPT_AS
    };
    if !reader.as_deref().is_none_or(runread_core::target::is_id)
        || !grant.as_deref().is_none_or(runread_core::target::is_id)
        || !run.as_deref().is_none_or(runread_core::target::is_id)
        || !tool.as_deref().is_none_or(known_tool)
    {
        return Err(Refusal::InvalidRequest);
    }
    let outcome = match q.outcome.as_deref().filter(|o| !o.is_empty()) {
        None => None,
        Some(o) => Some(runread_store::AuditOutcome::parse(o).ok_or(Refusal::InvalidRequest)?),
    };
    Ok(runread_store::AuditFilter {
        since_ms: Some(since_ms),
        grant_id: grant,
        reader_id: reader,
        run_id: run,
        tool,
        outcome,
        before: None,
    })
}

/// The calls refused before the gate that the audit's `filter` lets through, and the counts of
/// calls with no valid credential when it holds them (as `runread audit` shows them).
fn refused_before_gate(
    owner: &runread_service::Owner,
    filter: &runread_store::AuditFilter,
) -> Result<RefusedView, Refusal> {
    let Some(of_refusals) = filter.refused_before_gate() else {
        return Ok(RefusedView::default());
    };
    let page = owner
        .store()
        .refusals_page(&of_refusals, AUDIT_PAGE_MAX)
        .map_err(store_err)?;
    let unadmitted = if filter.holds_unadmitted() {
        let since = filter.since_ms.unwrap_or(i64::MIN);
        owner.store().unadmitted_tallies(since).map_err(store_err)?
    } else {
        Vec::new()
    };
    Ok(RefusedView {
        rows: owner
            .shown_refusals(page.rows)
            .map_err(|_| Refusal::Unavailable)?,
        more: page.more,
        unadmitted,
    })
}

/// The audit window `?window=` names (the day when it names none).
fn audit_window(window: Option<&str>) -> Result<(&'static str, &'static str, i64, i64), Refusal> {
    Ok(match window.filter(|w| !w.is_empty()) {
        None => AUDIT_WINDOWS[1],
        Some(w) => *AUDIT_WINDOWS
            .iter()
            .find(|x| x.0 == w)
            .ok_or(Refusal::InvalidRequest)?,
    })
}

// ---- secrets and artifacts ----

async fn secrets(State(c): Shared, owner: Owner) -> Result<Response, Refusal> {
    let c2 = c.clone();
    let names = blocking(move || c2.owner.secret_names().map_err(|_| Refusal::Unavailable)).await?;
    Ok(owner.page(pages::secrets(&owner.session, &names, None)))
}

async fn add_secret(State(c): Shared, Change { owner, form }: Change) -> Result<Response, Refusal> {
    let name = form.required("name")?.trim().to_owned();
    let value = form.required("value")?.to_owned();
    let c2 = c.clone();
    let (added, names) = blocking(move || {
        let added = c2.owner.add_secret(&name, &value, now_ms());
        if let Err(runread_service::owner::SecretError::Store(e)) = &added {
            tracing::warn!(error = %e, "console: secret not stored");
            return Err(Refusal::Unavailable);
        }
        let names = c2.owner.secret_names().map_err(|_| Refusal::Unavailable)?;
        Ok((added.map(|()| name).map_err(|e| e.to_string()), names))
    })
    .await?;
    let owner = owner.counted(&c).await;
    Ok(owner.page(pages::secrets(&owner.session, &names, Some(added))))
}

async fn add_artifact(
    State(c): Shared,
    Change { owner, form }: Change,
) -> Result<Response, Refusal> {
    let run_id = form.required("run")?.to_owned();
    let session_id = form.required("session")?.to_owned();
    let path = form.required("path")?.trim().to_owned();
    let name = form.optional("name").map(str::to_owned);
    let mime = form.optional("mime").map(str::to_owned);
    let kind = form.optional("kind").unwrap_or("generated").to_owned();
    let c2 = c.clone();
    let done = blocking(move || {
        let out = c2.owner.add_artifact(
            &runread_service::owner::NewArtifact {
                run_id: &run_id,
                session_id: Some(&session_id),
                path: &path,
                name: name.as_deref(),
                mime: mime.as_deref(),
                kind: &kind,
            },
            now_ms(),
        );
        match out {
            Ok(_) => Ok(Ok(())),
            Err(runread_service::owner::ArtifactError::Store(e)) => {
                tracing::warn!(error = %e, "console: artifact not stored");
                Err(Refusal::Unavailable)
            }
            Err(e) => Ok(Err(e.to_string())),
        }
    })
    .await?;
    match done {
        Ok(()) => {
            // Back to the run page the form was on.
            let run_page = form.optional("back").filter(|b| b.starts_with("/run?"));
            Ok(see_other(back_or(run_page, "/runs")))
        }
        Err(msg) => {
            let owner = owner.counted(&c).await;
            Ok(owner.page(pages::owner_error(&owner.session, &msg)))
        }
    }
}

// ---- assets ----

async fn css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../assets/console.css"),
    )
        .into_response()
}

async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../assets/console.js"),
    )
        .into_response()
}
