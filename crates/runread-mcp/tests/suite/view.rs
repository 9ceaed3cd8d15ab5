//! The MCP Apps view (`io.modelcontextprotocol/ui`), with rmcp's client on 2026-07-28 announcing
//! the extension (or not) on every request: an announcing host sees `read_final_answer` and
//! `read_history` link `ui://runread/run` and reads the page, when its reader holds a grant the
//! view renders; a client that does not announce it sees the tools it always saw and no
//! resources method (as before the view); a key without such a grant is refused exactly as an unknown resource is.

use serde_json::{Value, json};

use rmcp::ClientLifecycleMode;
use rmcp::model::{ClientCapabilities, ClientConfig, ReadResourceRequestParams, ResourceContents};
use rmcp::service::{RoleClient, RunningService};

use runread_core::Feature;
use runread_mcp::view::{EXTENSION_ID, VIEW_HTML, VIEW_MIME_TYPE, VIEW_URI};

use runread_testkit::Env;

type Client = RunningService<RoleClient, ClientConfig>;

/// rmcp's client on 2026-07-28, announcing the MCP Apps extension (or not) on every request.
async fn connect(url: &str, key: &str, announce: bool) -> Client {
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    connect_in(url, key, announce, lifecycle).await
}

/// rmcp's client in `lifecycle`, announcing the MCP Apps extension (or not).
async fn connect_in(
    url: &str,
    key: &str,
    announce: bool,
    lifecycle: ClientLifecycleMode,
) -> Client {
    let capabilities: ClientCapabilities = match announce {
        true => serde_json::from_value(
            json!({"extensions": {EXTENSION_ID: {"mimeTypes": [VIEW_MIME_TYPE]}}}),
        )
        .unwrap(),
        false => ClientCapabilities::default(),
    };
    crate::support::rmcp_client(url, key, capabilities, lifecycle).await
}

/// Every tool the client is listed, as JSON, by name.
async fn tools(client: &Client) -> Vec<(String, Value)> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| (t.name.to_string(), serde_json::to_value(&t).unwrap()))
        .collect()
}

/// What reading `uri` gives: the page's contents, or the JSON-RPC error's code and message.
async fn read(client: &Client, uri: &str) -> Result<ResourceContents, (i32, String)> {
    match client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
    {
        Ok(r) => {
            assert_eq!(r.contents.len(), 1, "exactly one content");
            Ok(r.contents.into_iter().next().unwrap())
        }
        Err(rmcp::ServiceError::McpError(e)) => Err((e.code.0, e.message.to_string())),
        Err(other) => panic!("not a JSON-RPC error: {other}"),
    }
}

/// The Pi sample, ingested, with a reader holding `features` of its run: the server and the
/// reader's key.
async fn serving(features: Vec<Feature>) -> (Env, runread_testkit::serve::Serving, String) {
    let env = Env::new();
    env.place("sample", std::time::Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let g = env.grant(&run.target.run_id, features, "chat");
    let serving = runread_testkit::serve::mcp(env.service()).await;
    (env, serving, g.key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announcing_host_sees_the_view_linked_and_reads_the_page() {
    let (_env, serving, key) = serving(vec![Feature::FinalAnswer, Feature::History]).await;
    let host = connect(&serving.url, &key, true).await;
    for (name, tool) in tools(&host).await {
        let linked = ["read_final_answer", "read_history"].contains(&name.as_str());
        match linked {
            true => {
                assert_eq!(tool["_meta"]["ui"]["resourceUri"], VIEW_URI, "{name}");
                assert_eq!(tool["_meta"]["ui/resourceUri"], VIEW_URI, "{name}");
            }
            false => assert!(tool.get("_meta").is_none(), "{name}: {tool}"),
        }
    }
    let listed = host.list_all_resources().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].uri, VIEW_URI);
    let page = serde_json::to_value(read(&host, VIEW_URI).await.unwrap()).unwrap();
    assert_eq!(page["uri"], VIEW_URI);
    assert_eq!(page["mimeType"], VIEW_MIME_TYPE);
    assert_eq!(page["text"], VIEW_HTML);
    // No remote domain: a host's policy for the page loads nothing from outside.
    assert_eq!(
        page["_meta"]["ui"]["csp"],
        json!({"connectDomains": [], "resourceDomains": []})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_announce_it_sees_todays_tools_and_no_resource() {
    let (_env, serving, key) = serving(vec![Feature::FinalAnswer, Feature::History]).await;
    let plain = connect(&serving.url, &key, false).await;
    let host = connect(&serving.url, &key, true).await;
    let (plain_tools, mut host_tools) = (tools(&plain).await, tools(&host).await);
    for (_, tool) in &mut host_tools {
        if let Some(t) = tool.as_object_mut() {
            t.remove("_meta");
        }
    }
    assert_eq!(plain_tools, host_tools, "the same tools, without the link");
    assert!(plain_tools.iter().all(|(_, t)| t.get("_meta").is_none()));
    // As before the view existed: runread serves no resources to it.
    assert!(plain.list_all_resources().await.is_err());
    let refused = read(&plain, VIEW_URI).await.unwrap_err();
    assert_eq!(refused.0, -32601, "{refused:?}");
    assert_eq!(
        refused,
        read(&plain, "ui://runread/nope").await.unwrap_err()
    );
    assert_eq!(
        read(&host, "ui://runread/nope").await.unwrap_err().0,
        -32602
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_without_a_grant_the_view_renders_is_refused_as_an_unknown_resource() {
    for features in [vec![], vec![Feature::Status, Feature::Metadata]] {
        let env = Env::new();
        env.place("sample", std::time::Duration::from_secs(60));
        env.ingest();
        let key = match features.is_empty() {
            true => env.add_reader("no grants").key,
            false => {
                let run = env.longest_answer_run();
                env.grant(&run.target.run_id, features.clone(), "status only")
                    .key
            }
        };
        let serving = runread_testkit::serve::mcp(env.service()).await;
        let host = connect(&serving.url, &key, true).await;
        let unknown = read(&host, "ui://runread/nope").await.unwrap_err();
        assert_eq!(
            read(&host, VIEW_URI).await.unwrap_err(),
            unknown,
            "{features:?}"
        );
        assert!(host.list_all_resources().await.unwrap().is_empty());
    }
}

/// The dated versions are served without sessions: what a client announced at `initialize` does
/// not reach its later calls, so it sees the tools it always saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dated_era_client_announcing_it_at_initialize_sees_no_view() {
    let (_env, serving, key) = serving(vec![Feature::FinalAnswer]).await;
    let dated = connect_in(&serving.url, &key, true, ClientLifecycleMode::Initialize).await;
    let listed = tools(&dated).await;
    assert!(!listed.is_empty());
    assert!(listed.iter().all(|(_, t)| t.get("_meta").is_none()));
    assert_eq!(read(&dated, VIEW_URI).await.unwrap_err().0, -32601);
}
