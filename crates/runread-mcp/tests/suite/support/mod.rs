//! A served runread home for the agent suites: fixtures placed and ingested, one known secret
//! registered, the MCP server on a loopback port, and a client per run with every feature granted.

use runread_store::prelude::*;
use serde_json::{Value, json};

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

/// Every run `s` serves, read by its reader through every tool — the listing, the run, its work
/// state and metadata, its artifacts, its history at page sizes 1, 2, 3 and 50, its answer in
/// chunks of 7 and 64 bytes — holds no `window`-byte piece of `leak` anywhere in what the reader
/// receives (structured content and text). The shared body of "a secret in every field never
/// reaches a reader", whatever the agent whose fields held it.
pub async fn no_read_holds_a_piece_of(s: &Served, leak: &str, window: usize) {
    let runs = s.runs();
    assert!(!runs.is_empty(), "runs to read");
    for run in runs {
        let (c, target) = s.client(&run).await;
        let mut received: Vec<(String, String)> = Vec::new();
        for (tool, args) in [
            ("list_granted_targets", json!({})),
            ("get_run", json!({"target": target})),
            ("read_work_state", json!({"target": target})),
            ("read_target_metadata", json!({"target": target})),
            ("list_artifacts", json!({"target": target})),
        ] {
            let r = c.call(tool, args).await.unwrap();
            received.push((tool.to_owned(), r.structured.to_string()));
            received.push((tool.to_owned(), r.text));
        }
        for limit in [1u64, 2, 3, 50] {
            let events = c.read_history(&target, Some(limit)).await.unwrap();
            received.push((
                format!("history {limit}"),
                serde_json::to_string(&events).unwrap(),
            ));
        }
        for chunk in [7u64, 64] {
            let answer = c
                .read_final_answer(&target, Some(chunk), |_| {})
                .await
                .unwrap();
            received.push((format!("answer {chunk}"), answer.text.unwrap_or_default()));
        }
        for (what, got) in &received {
            for start in 0..=leak.len() - window {
                let piece = &leak[start..start + window];
                assert!(!got.contains(piece), "{what}: {got}");
            }
        }
    }
}

/// The `subagent` scenario's run ("Ask a helper …") has one child, its subagent, finished; every
/// other run has none; and every run's subagent coverage is complete. The shared body of "a
/// subagent is the run's child", whatever the agent recorded it.
pub async fn the_helper_run_has_one_finished_subagent(s: &Served) {
    for run in s.runs() {
        let (c, target) = s.client(&run).await;
        let w = c
            .call("read_work_state", json!({"target": target}))
            .await
            .unwrap()
            .structured;
        assert_eq!(w["coverage"]["subagents"]["state"], "complete", "{w}");
        if runread_testkit::prompt(&run)
            .unwrap()
            .starts_with("Ask a helper")
        {
            assert_eq!(
                w["aggregate"]["children"],
                json!([{"kind": "subagent", "index": 0, "state": "completed"}])
            );
        } else {
            assert_eq!(w["aggregate"]["children"], json!([]));
        }
    }
}

/// rmcp's client with the reader's `key` in runread's header, declaring `capabilities`, in
/// `lifecycle` (2026-07-28's `server/discover`, or a dated version's `initialize`).
pub async fn rmcp_client(
    url: &str,
    key: &str,
    capabilities: rmcp::model::ClientCapabilities,
    lifecycle: rmcp::ClientLifecycleMode,
) -> rmcp::service::RunningService<rmcp::service::RoleClient, rmcp::model::ClientConfig> {
    use rmcp::ClientServiceExt as _;
    let mut headers = std::collections::HashMap::new();
    headers.insert(
        http::HeaderName::from_static(runread_mcp::KEY_HEADER),
        http::HeaderValue::from_str(key).unwrap(),
    );
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_owned(),
        )
        .custom_headers(headers),
    );
    rmcp::model::ClientConfig::new(
        capabilities,
        rmcp::model::Implementation::new("runread-test", "1"),
    )
    .serve_with_lifecycle(transport, lifecycle)
    .await
    .unwrap()
}
