//! A test's runread, served: the service over an [`Env`], grants with a fresh key, the MCP
//! endpoint on a loopback port, and the small runtime helpers the suites share.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use runread_core::Feature;
use runread_mcp::guards::Allowed;
use runread_service::owner::{GrantRequest, NewGrant};
use runread_service::{Config, Service};

use crate::Env;

/// How long a test grant lives: longer than any test, short enough to be obviously a test's.
pub const TEST_GRANT_LIFETIME_MS: i64 = 600_000;

impl Env {
    /// The service over this home's store and sealing keys, with the default configuration.
    pub fn service(&self) -> Arc<Service> {
        Arc::new(Service::new(self.store.clone(), self.keys(), Config::default()).expect("service"))
    }

    /// Grants `features` of run `run_id` (any session) to a fresh key, live for
    /// [`TEST_GRANT_LIFETIME_MS`].
    pub fn grant(&self, run_id: &str, features: Vec<Feature>, label: &str) -> NewGrant {
        self.grant_in(run_id, None, features, label)
    }

    /// [`Env::grant`], for the run `run_id` of session `session_id` when ids may repeat.
    pub fn grant_in(
        &self,
        run_id: &str,
        session_id: Option<&str>,
        features: Vec<Feature>,
        label: &str,
    ) -> NewGrant {
        let now = runread_core::timefmt::now_ms();
        runread_service::owner::grant(
            &*self.store,
            &*self.keys(),
            GrantRequest {
                run_id,
                session_id,
                features,
                expires_at_ms: now + TEST_GRANT_LIFETIME_MS,
                label,
            },
            now,
        )
        .expect("grant")
    }

    /// Registers the known secret `value` as `name`.
    pub fn add_secret(&self, name: &str, value: &str) {
        runread_service::owner::add_secret(&*self.store, &*self.keys(), name, value, 1)
            .expect("add secret");
    }
}

/// An MCP endpoint serving on a loopback port until this is dropped.
pub struct Serving {
    pub addr: SocketAddr,
    /// `http://ADDR/mcp`.
    pub url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Serves `service` over MCP on `127.0.0.1` (a free port), as `runread serve` does.
pub async fn mcp(service: Arc<Service>) -> Serving {
    mcp_with(service, Allowed::default()).await
}

/// [`mcp`] with other protocol and transport allowances.
pub async fn mcp_with(service: Arc<Service>, allowed: Allowed) -> Serving {
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(runread_mcp::server::serve_with(
        service,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        allowed,
        move |addr| {
            let _ = bound_tx.send(addr);
        },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let addr = bound_rx.await.expect("the server binds");
    Serving {
        addr,
        url: format!("http://{addr}/mcp"),
        _stop: stop,
    }
}

/// Runs `f` to completion on a fresh multi-threaded runtime (for tests that are not async).
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(f)
}

/// A loopback port that was free a moment ago, for a child process to bind.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Fails the test unless `value` matches the output schema tool `tool` declares to clients.
pub fn assert_declared_output(tool: &str, value: &serde_json::Value) {
    let def = runread_service::tools::by_name(tool).expect("a catalog tool");
    let validator =
        jsonschema::validator_for(&def.declared_output_schema()).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{tool} output breaks its schema: {errors:?}\n{value}"
    );
}
