//! A test's runread, served: the service over an [`Env`], grants to a fresh reader (and so a fresh
//! key) or to a named one, the MCP endpoint on a loopback port, and the small runtime helpers the
//! suites share.

use runread_store::prelude::*;
use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use runread_core::Feature;
use runread_mcp::guards::Allowed;
use runread_service::owner::{GrantRequest, NewGrant, NewReader};
use runread_service::{Config, Service};
use runread_store::{Grant, Reader, RunRecord};

use crate::Env;

/// How long a test grant lives: longer than any test, short enough to be obviously a test's.
pub const TEST_GRANT_LIFETIME_MS: i64 = 600_000;

impl Env {
    /// The service over this home's store and sealing keys, with the default configuration.
    pub fn service(&self) -> Arc<Service> {
        self.service_with(Config::default())
    }

    /// The service with `config`.
    pub fn service_with(&self, config: Config) -> Arc<Service> {
        Arc::new(Service::new(self.store.clone(), self.keys(), config).expect("service"))
    }

    /// The service with the bound on calls per reader lifted: for tests of other behaviour that
    /// make more calls in a minute than a reader may (an answer read 4 bytes a call, a soak).
    pub fn service_unthrottled(&self) -> Arc<Service> {
        self.service_with(Config {
            calls_per_minute: u32::MAX,
            ..Config::default()
        })
    }

    /// The service with no settle window: a passive run's answer is available as soon as its
    /// file says the run ended (for tests that end a run and read it at once).
    pub fn service_settling_at_once(&self) -> Arc<Service> {
        self.service_with(Config {
            settle_quiet: std::time::Duration::ZERO,
            ..Config::default()
        })
    }

    /// Grants `features` of run `run_id` (any session) to a fresh reader — named `label`, or
    /// `label` and a number when a reader has that name already — and so to a fresh key, live for
    /// [`TEST_GRANT_LIFETIME_MS`].
    pub fn grant(&self, run_id: &str, features: Vec<Feature>, label: &str) -> TestGrant {
        self.grant_in(run_id, None, features, label)
    }

    /// [`Env::grant`], for the run `run_id` of session `session_id` when ids may repeat.
    pub fn grant_in(
        &self,
        run_id: &str,
        session_id: Option<&str>,
        features: Vec<Feature>,
        label: &str,
    ) -> TestGrant {
        let fresh = (1..)
            .map(|n| match n {
                1 => label.to_owned(),
                n => format!("{label} {n}"),
            })
            .find(|name| self.store.reader_by_name(name).expect("readers").is_none())
            .expect("a free name");
        let made = self.grant_to(&fresh, run_id, session_id, features);
        TestGrant {
            grant: made.grant,
            run: made.run,
            reader: made.reader,
            key: made.key.expect("a fresh reader's key"),
        }
    }

    /// A reader of its own holding one grant of `features` on `target`, written straight to the
    /// store (made a thousand seconds ago, expiring `expires_in_ms` from now: negative for one
    /// that has expired), and its key.
    pub fn raw_grant(
        &self,
        target: &runread_core::Target,
        features: Vec<Feature>,
        expires_in_ms: i64,
    ) -> (Grant, String) {
        let key = runread_core::key::generate().expect("key");
        let now = runread_core::timefmt::now_ms();
        let reader = Reader {
            id: format!("r-{}", &key[..16]),
            name: format!("raw {}", &key[..16]),
            key_hash: runread_core::key::hash(&key),
            created_at_ms: now - 1_000_000,
            removed_at_ms: None,
        };
        self.store.insert_reader(&reader).expect("reader");
        let grant = Grant {
            id: format!("g-{}", &key[..16]),
            reader_id: reader.id.clone(),
            reader_name: reader.name.clone(),
            target: target.clone(),
            features,
            created_at_ms: now - 1_000_000,
            expires_at_ms: now + expires_in_ms,
            revoked_at_ms: None,
            label: None,
        };
        self.store.insert_grant(&grant).expect("grant");
        (grant, key)
    }

    /// The owner's handle over this environment's store and keys.
    pub fn owner(&self) -> runread_service::Owner {
        runread_service::Owner::new(
            self.store.clone(),
            self.keys(),
            Config::default(),
            Vec::new(),
        )
    }

    /// Adds the reader `name` (its key returned once).
    pub fn add_reader(&self, name: &str) -> NewReader {
        self.owner()
            .add_reader(name, runread_core::timefmt::now_ms())
            .expect("add reader")
    }

    /// Grants `features` of run `run_id` to the reader `reader`, as `runread grant --to` does: no
    /// new key when it is a reader already; otherwise it is made, and its key returned.
    pub fn grant_to(
        &self,
        reader: &str,
        run_id: &str,
        session_id: Option<&str>,
        features: Vec<Feature>,
    ) -> NewGrant {
        let now = runread_core::timefmt::now_ms();
        self.owner()
            .grant(
                GrantRequest {
                    run_id,
                    session_id,
                    features,
                    expires_at_ms: now + TEST_GRANT_LIFETIME_MS,
                    reader,
                    new_reader: runread_service::owner::NewReaderPolicy::Make,
                    label: None,
                },
                now,
            )
            .expect("grant")
    }

    /// Registers the known secret `value` as `name`.
    pub fn add_secret(&self, name: &str, value: &str) {
        self.owner().add_secret(name, value, 1).expect("add secret");
    }
}

impl Env {
    /// Three reads of the longest answer's run refused before the gate, each by a reader of
    /// its own: under an expired grant, of a run not granted, under a revoked grant. Their
    /// answers, in that order, and the readers' ids.
    pub fn three_refused_reads(
        &self,
        svc: &Arc<Service>,
    ) -> (Vec<runread_core::ErrorCode>, Vec<String>) {
        let run = self.longest_answer_run();
        let (expired, expired_key) =
            self.raw_grant(&run.target, vec![Feature::FinalAnswer], -1_000);
        let other = runread_core::Target {
            run_id: "not-a-granted-run".into(),
            ..run.target.clone()
        };
        let ungranted = self.grant(&run.target.run_id, vec![Feature::FinalAnswer], "ungranted");
        let revoked = self.grant(&run.target.run_id, vec![Feature::FinalAnswer], "revoked");
        let now = runread_core::timefmt::now_ms();
        assert!(
            self.store
                .revoke_grant(&revoked.grant.id, now)
                .expect("revoke")
        );
        let calls = [
            (&expired_key, &run.target),
            (&ungranted.key, &other),
            (&revoked.key, &run.target),
        ];
        let codes = calls
            .iter()
            .map(|(key, target)| {
                let ctx = Arc::new(svc.admit_key(&[key.as_bytes()]).expect("a reader's key"));
                let args = serde_json::json!({ "target": target });
                let read = svc.call(ctx, runread_service::tools::READ_FINAL_ANSWER, args, None);
                block_on(read).expect_err("refused")
            })
            .collect();
        let readers = vec![expired.reader_id, ungranted.reader.id, revoked.reader.id];
        (codes, readers)
    }
}

/// A grant to a fresh reader ([`Env::grant`]), with that reader's key.
pub struct TestGrant {
    pub grant: Grant,
    pub run: RunRecord,
    pub reader: Reader,
    pub key: String,
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
