//! The owner's console: a web page on loopback where the owner sees what ran, grants one run to a
//! fresh read key, revokes grants, reads the audit of who read what, and manages known secrets
//! and artifacts — what the CLI does, without copying run ids.
//!
//! It is a second door beside MCP, never the same one: its own listener (loopback only), its own
//! credential (a one-time login URL printed on the terminal, exchanged for a session cookie),
//! and CSRF tokens on every state-changing request. A read key never opens it (the `guard` module), and
//! its cookie never opens MCP (the MCP door refuses every `Cookie`).
//!
//! Pages are rendered on the server (the `pages` module); a little plain JavaScript (embedded, no build
//! step) refreshes the run list while agents write, copies configs and confirms revocations.
//! Everything the console shows of a run goes through the service as a reader's read would
//! ([`runread_service::Owner::preview`]): masked, with its state and evidence.
#![forbid(unsafe_code)]

pub mod auth;
pub mod form;
mod guard;
mod markdown;
mod pages;
mod routes;
mod views;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::StatusCode;

use runread_service::Owner as OwnerHandle;

/// Where `runread console` listens unless told otherwise (MCP's default is 7077).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7078";
/// Largest form the console accepts (a grant, a secret, an artifact registration).
pub const FORM_MAX_BYTES: usize = 64 * 1024;
/// Longest path a form's `back` may send the owner to (the console's own links are far shorter);
/// a longer one sends the owner to the form's fixed page instead.
pub const BACK_PATH_MAX_BYTES: usize = 2048;
/// Runs one page of the console's list shows.
pub const RUNS_PAGE: u32 = 50;
/// Audit rows one page shows (newest first).
pub const AUDIT_PAGE_MAX: u32 = 500;
/// How often the run list asks for fresh rows while open, in milliseconds.
pub const RUNS_POLL_MS: u32 = 2_000;
/// Time allowed for waiting on the store or a session file for one page.
pub const PAGE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);
/// Grace for open connections at shutdown.
const GRACEFUL_SHUTDOWN_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// A console refusal: one fixed code, one fixed text, nothing of the request, the store or the
/// system in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    ForbiddenHost,
    ForbiddenHeader,
    ForbiddenOrigin,
    MethodNotAllowed,
    LoginRefused,
    NotLoggedIn,
    CsrfRefused,
    NotFound,
    InvalidRequest,
    Unavailable,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::ForbiddenHost => "forbidden_host",
            Refusal::ForbiddenHeader => "forbidden_header",
            Refusal::ForbiddenOrigin => "forbidden_origin",
            Refusal::MethodNotAllowed => "method_not_allowed",
            Refusal::LoginRefused => "login_refused",
            Refusal::NotLoggedIn => "not_logged_in",
            Refusal::CsrfRefused => "csrf_refused",
            Refusal::NotFound => "not_found",
            Refusal::InvalidRequest => "invalid_request",
            Refusal::Unavailable => "unavailable",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Refusal::ForbiddenHost
            | Refusal::ForbiddenOrigin
            | Refusal::LoginRefused
            | Refusal::CsrfRefused => StatusCode::FORBIDDEN,
            Refusal::ForbiddenHeader | Refusal::InvalidRequest => StatusCode::BAD_REQUEST,
            Refusal::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Refusal::NotLoggedIn => StatusCode::UNAUTHORIZED,
            Refusal::NotFound => StatusCode::NOT_FOUND,
            Refusal::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// What the owner is told, the same every time.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::ForbiddenHost => {
                "The console answers only on this machine's loopback address."
            }
            Refusal::ForbiddenHeader => {
                "The console takes no read key, authorization or proxy headers."
            }
            Refusal::ForbiddenOrigin => "This request did not come from the console's own pages.",
            Refusal::MethodNotAllowed => "The console answers GET and POST only.",
            Refusal::LoginRefused => {
                "This login link is wrong, used or expired. Start `runread console` again for a new one."
            }
            Refusal::NotLoggedIn => {
                "Not logged in, or the session ended. Open the login link `runread console` printed (each link works once); start it again for a new one."
            }
            Refusal::CsrfRefused => {
                "This form is stale or did not come from the console. Reload the page and try again."
            }
            Refusal::NotFound => "Nothing here.",
            Refusal::InvalidRequest => "The request was malformed.",
            Refusal::Unavailable => "The store could not be read just now. Try again.",
        }
    }
}

impl From<auth::AuthRefusal> for Refusal {
    fn from(a: auth::AuthRefusal) -> Refusal {
        match a {
            auth::AuthRefusal::LoginRefused => Refusal::LoginRefused,
            auth::AuthRefusal::NotLoggedIn => Refusal::NotLoggedIn,
            auth::AuthRefusal::CsrfRefused => Refusal::CsrfRefused,
            auth::AuthRefusal::Unavailable => Refusal::Unavailable,
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut r = (self.status(), pages::refusal(self)).into_response();
        r.headers_mut().insert(
            "x-runread-refusal",
            http::HeaderValue::from_static(self.code()),
        );
        r
    }
}

/// What the console works with: the owner's handle (every act and view of the owner, with no
/// gate: the console answers no reader), the MCP URL its configs name, and its logins.
pub struct Console {
    owner: OwnerHandle,
    mcp_url: String,
    auth: auth::Auth,
}

impl Console {
    pub fn new(owner: OwnerHandle, mcp_url: String) -> Arc<Console> {
        Arc::new(Console {
            owner,
            mcp_url,
            auth: auth::Auth::new(),
        })
    }

    /// A fresh one-time login URL for the console at `bound`.
    pub fn login_url(&self, bound: SocketAddr) -> Result<String, Refusal> {
        let token = self.auth.issue_login(std::time::Instant::now())?;
        Ok(format!("http://{bound}/login?token={token}"))
    }
}

/// The console's routes behind its door.
pub fn router(console: Arc<Console>) -> axum::Router {
    routes::router(console)
        .layer(axum::extract::DefaultBodyLimit::max(FORM_MAX_BYTES))
        .layer(axum::middleware::from_fn(guard::door))
}

/// Binds `listen` (a loopback address: anything else is refused before binding), hands the bound
/// address to `on_bound`, and serves until `shutdown` resolves, on the same bounded accept loop
/// as MCP.
pub async fn serve(
    console: Arc<Console>,
    listen: SocketAddr,
    on_bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if !listen.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the console listens on loopback only",
        ));
    }
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let bound = listener.local_addr()?;
    on_bound(bound);
    let app = router(console).into_service::<axum::body::Body>();
    runread_mcp::accept::run(listener, app, shutdown, GRACEFUL_SHUTDOWN_MAX).await;
    Ok(())
}
