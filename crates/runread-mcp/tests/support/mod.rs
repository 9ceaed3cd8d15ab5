//! A served runread home for the agent suites: fixtures placed and ingested, one known secret
//! registered, the MCP server on a loopback port, and a client per run with every feature granted.

use std::sync::Arc;

use serde_json::Value;

use runread_core::Feature;
use runread_mcp::client::Client;
use runread_service::{Config, Service};
use runread_store::{RunRecord, Store};
use runread_testkit::Env;

pub struct Served {
    pub env: Env,
    pub url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Serves a home whose sessions `place` put there, with `secret` known.
pub async fn serve(place: impl FnOnce(&Env), secret: &str) -> Served {
    let env = Env::new();
    place(&env);
    env.ingest();
    let keys = env.keys();
    runread_service::owner::add_secret(&*env.store, &*keys, "agent-test", secret, 1).unwrap();
    let service = Arc::new(Service::new(env.store.clone(), keys, Config::default()).unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(runread_mcp::server::serve(
        service,
        "127.0.0.1:0".parse().unwrap(),
        move |a| {
            let _ = tx.send(a);
        },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let addr = rx.await.unwrap();
    Served {
        env,
        url: format!("http://{addr}/mcp"),
        _stop: stop,
    }
}

impl Served {
    /// Every run, by session then by place in the file.
    pub fn runs(&self) -> Vec<RunRecord> {
        let mut runs = self.env.store.runs().unwrap();
        runs.sort_by(|a, b| {
            (&a.target.session_id, a.run.start_line).cmp(&(&b.target.session_id, b.run.start_line))
        });
        runs
    }

    /// A client holding a grant of every feature on `run`, and the run's target as JSON.
    pub async fn client(&self, run: &RunRecord) -> (Client, Value) {
        let now = runread_core::timefmt::now_ms();
        let g = runread_service::owner::grant(
            &*self.env.store,
            &*self.env.keys(),
            runread_service::owner::GrantRequest {
                run_id: &run.target.run_id,
                session_id: Some(&run.target.session_id),
                features: Feature::ALL.to_vec(),
                expires_at_ms: now + 600_000,
                label: "agent-suite",
            },
            now,
        )
        .unwrap();
        (
            Client::connect(&self.url, &g.key).await.unwrap(),
            serde_json::to_value(&g.grant.target).unwrap(),
        )
    }
}

/// Every run of every fixture but `secrets` (served masked; each suite tests it apart), placed
/// alone by `place` and read over MCP, gives exactly what the agent reported for the step that
/// sent its prompt: the answer, or `missing` and no text.
pub async fn every_answer_is_what_the_agent_reported(
    fixtures: &[&str],
    steps_of: fn(&str) -> Vec<runread_testkit::ReportedStep>,
    place: fn(&Env, &str),
    secret: &str,
) {
    for fixture in fixtures.iter().copied().filter(|f| *f != "secrets") {
        let steps = steps_of(fixture);
        let s = serve(|env| place(env, fixture), secret).await;
        for run in s.runs() {
            let (c, target) = s.client(&run).await;
            let prompt = run.run.preview.clone().unwrap();
            let got = c.read_final_answer(&target, Some(7), |_| {}).await.unwrap();
            match runread_testkit::step_for(&steps, &prompt).reported.answer() {
                Some(text) => {
                    assert_eq!(got.state, "available", "{fixture}: {prompt}");
                    assert_eq!(got.text.as_deref(), Some(text), "{fixture}: {prompt}");
                }
                None => {
                    assert_eq!(got.state, "missing", "{fixture}: {prompt}");
                    assert_eq!(got.text, None);
                }
            }
        }
    }
}
