//! A served runread home for the agent suites: fixtures placed and ingested, one known secret
//! registered, the MCP server on a loopback port, and a client per run with every feature granted.

use runread_store::prelude::*;
use serde_json::Value;

use runread_core::Feature;
use runread_mcp::client::Client;
use runread_store::RunRecord;
use runread_testkit::Env;

pub struct Served {
    pub env: Env,
    pub url: String,
    _serving: runread_testkit::Serving,
}

/// Serves a home whose sessions `place` put there, with `secret` known.
/// [`serve`] of `fixtures`, each placed by `place` (as `Env::place_claude`), a minute old.
pub async fn serve_fixtures(
    place: fn(&Env, &str, std::time::Duration) -> Vec<std::path::PathBuf>,
    fixtures: &[&str],
    secret: &str,
) -> Served {
    serve(
        |env| {
            for f in fixtures {
                place(env, f, std::time::Duration::from_secs(60));
            }
        },
        secret,
    )
    .await
}

pub async fn serve(place: impl FnOnce(&Env), secret: &str) -> Served {
    let env = Env::new();
    place(&env);
    env.ingest();
    env.add_secret("agent-test", secret);
    let serving = runread_testkit::serve::mcp(env.service_unthrottled()).await;
    Served {
        env,
        url: serving.url.clone(),
        _serving: serving,
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
        let g = self.env.grant_in(
            &run.target.run_id,
            Some(&run.target.session_id),
            Feature::ALL.to_vec(),
            "agent-suite",
        );
        (
            Client::connect(&self.url, &g.key).await.unwrap(),
            serde_json::to_value(&g.grant.target).unwrap(),
        )
    }
}

/// Every read tool's name, in the catalog's order: what `tools/list` shows a valid key whatever
/// it holds (a connector's token sees those of its allowed features).
pub fn every_read_tool() -> Vec<&'static str> {
    runread_service::tools::ALL.iter().map(|t| t.name).collect()
}
