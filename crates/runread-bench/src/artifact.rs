//! `runread-bench artifact`: one artifact read end to end through `read_artifact` chunks, every
//! chunk's sha256, the offsets and the whole version's sha256 verified, against a plain HTTP GET
//! of the same file from a static server on loopback (its sha256 verified too).
//!
//! Three paths, alternating in each round:
//! - A: runread's own client, `runread_mcp::client::Client::read_artifact` (what `runread read
//!   artifact` runs): kept connections, up to the server's cap of chunk calls in flight.
//! - A′: the same calls and checks (labels via `runread_mcp::client::verify_label`) one at a
//!   time over one keep-alive connection: each chunk's whole round trip.
//! - B: plain HTTP GET.
//! - C (with `--echo-url`): runread's own client, as A, against the durable echo (`runread-bench
//!   durable-echo-server` answering the results `artifact-record` took from runread, with a
//!   durable start record and receipt per call): the chunk rate durability allows.
//!
//! Prints JSON.
//!
//! `runread-bench artifact-record`: the exact results runread returns for the calls A makes
//! (`list_granted_targets`, `list_artifacts`, each `read_artifact` chunk), written as one JSON
//! object for the durable echo (`--results`).

use std::collections::HashMap;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ContentBlock, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

type Pooled = RunningService<RoleClient, ClientConfig>;

async fn pooled_client(url: &str, key: &str) -> Pooled {
    let mut headers = HashMap::new();
    headers.insert(
        http::HeaderName::from_static(runread_mcp::KEY_HEADER),
        http::HeaderValue::from_str(key).expect("key header"),
    );
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    ClientConfig::default()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("connect (pooled)")
}

/// The result of one call, as it came: refused is a failed measurement.
async fn raw_call(c: &Pooled, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        unreachable!()
    };
    let r = c
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .expect("call");
    assert_ne!(r.is_error, Some(true), "{tool} refused");
    r
}

/// One call's structured result, its label checked as runread's client checks it.
async fn call(c: &Pooled, tool: &str, args: Value) -> Value {
    let r = raw_call(c, tool, args).await;
    let text = r
        .content
        .iter()
        .find_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let structured = r.structured_content.unwrap_or(Value::Null);
    runread_mcp::client::verify_label(tool, &structured, &text).expect("label");
    structured
}

/// `Client::read_artifact`'s checks, over the pooled client.
async fn read_pooled(c: &Pooled, target: &Value) -> Vec<u8> {
    use base64::Engine as _;
    let list = call(c, "list_artifacts", json!({"target": target})).await;
    let meta = list["artifacts"][0].clone();
    let size = meta["size"].as_u64().expect("size");
    let mut bytes = Vec::with_capacity(size as usize);
    let mut offset = 0u64;
    loop {
        let r = call(
            c,
            "read_artifact",
            json!({"target": target, "artifactId": meta["artifactId"], "version": meta["version"], "offset": offset}),
        )
        .await;
        assert_eq!(r["offset"].as_u64(), Some(offset), "offset");
        let data = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap_or(""))
            .expect("base64");
        assert_eq!(
            r["chunkSha256"].as_str(),
            Some(runread_core::sha256_hex(&data).as_str()),
            "chunk sha256"
        );
        bytes.extend_from_slice(&data);
        offset += data.len() as u64;
        if r["eof"] == json!(true) {
            break;
        }
        assert!(
            !data.is_empty() && bytes.len() as u64 <= size,
            "artifact ended early"
        );
    }
    assert_eq!(
        runread_core::sha256_hex(&bytes),
        meta["sha256"].as_str().unwrap_or(""),
        "whole sha256"
    );
    bytes
}

/// Writes to `out` the result of every call `Client::read_artifact` makes of `url` for the first
/// granted target's only artifact, keyed as [`crate::echo::Results::ByCall`] finds them.
pub fn record(url: &str, key: &str, out: &str) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let c = pooled_client(url, key).await;
        let mut all = serde_json::Map::new();
        let limit = runread_core::limits::GRANTED_TARGETS_PAGE_MAX;
        let targets = raw_call(&c, "list_granted_targets", json!({"limit": limit})).await;
        let target = targets.structured_content.as_ref().expect("structured")["targets"][0]
            ["target"]
            .clone();
        all.insert("list_granted_targets".into(), json!(targets));
        let list = raw_call(&c, "list_artifacts", json!({"target": target})).await;
        let meta = list.structured_content.as_ref().expect("structured")["artifacts"][0].clone();
        all.insert("list_artifacts".into(), json!(list));
        let size = meta["size"].as_u64().expect("size");
        let chunk = runread_core::limits::ARTIFACT_TRANSFER_MAX_BYTES as u64;
        let mut offset = 0;
        while offset < size {
            let limit = chunk.min(size - offset);
            let r = raw_call(
                &c,
                "read_artifact",
                json!({"target": target, "artifactId": meta["artifactId"], "version": meta["version"], "offset": offset, "limit": limit}),
            )
            .await;
            all.insert(format!("read_artifact@{offset}"), json!(r));
            offset += limit;
        }
        let _ = c.cancel().await;
        std::fs::write(out, serde_json::to_vec(&all).expect("json")).expect("write results");
        println!("{}", json!({"calls": all.len()}));
    });
}

/// Seconds `Client::read_artifact` takes to read `url`'s artifact, checked against `sha256`.
async fn read_with_client(
    client: &runread_mcp::client::Client,
    target: &Value,
    sha256: &str,
) -> (f64, usize) {
    let t = Instant::now();
    let (meta, bytes) = client
        .read_artifact(target, None)
        .await
        .expect("read_artifact");
    let dt = t.elapsed().as_secs_f64();
    assert_eq!(meta["sha256"].as_str(), Some(sha256), "artifact sha256");
    assert_eq!(runread_core::sha256_hex(&bytes), sha256);
    (dt, bytes.len())
}

pub fn run(
    url: &str,
    key: &str,
    static_url: &str,
    sha256: &str,
    rounds: usize,
    echo_url: Option<&str>,
) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let client = runread_mcp::client::Client::connect(url, key)
            .await
            .expect("connect");
        let targets = client.granted_targets().await.expect("targets");
        let target = targets[0]["target"].clone();
        let pooled = pooled_client(url, key).await;
        let echo = match echo_url {
            Some(u) => Some(
                runread_mcp::client::Client::connect(u, key)
                    .await
                    .expect("connect (durable echo)"),
            ),
            None => None,
        };
        let http = reqwest::Client::new();
        let (mut a, mut a2, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut size = 0usize;
        // One warm-up of each, then the rounds.
        for round in 0..=rounds {
            let (dt_a, n) = read_with_client(&client, &target, sha256).await;
            size = n;
            if let Some(echo) = &echo {
                let (dt_c, _) = read_with_client(echo, &target, sha256).await;
                if round > 0 {
                    c.push(dt_c);
                }
            }

            let t = Instant::now();
            let bytes = read_pooled(&pooled, &target).await;
            let dt_a2 = t.elapsed().as_secs_f64();
            assert_eq!(runread_core::sha256_hex(&bytes), sha256);

            let t = Instant::now();
            let body = http
                .get(static_url)
                .send()
                .await
                .expect("GET")
                .error_for_status()
                .expect("status")
                .bytes()
                .await
                .expect("body");
            let got = runread_core::sha256_hex(&body);
            let dt_b = t.elapsed().as_secs_f64();
            assert_eq!(got, sha256, "download sha256");
            if round > 0 {
                a.push(dt_a);
                a2.push(dt_a2);
                b.push(dt_b);
            }
        }
        client.close().await;
        if let Some(echo) = echo {
            echo.close().await;
        }
        let _ = pooled.cancel().await;
        println!(
            "{}",
            json!({"bytes": size, "chunks": (size as u64).div_ceil(32 * 1024),
                   "in_flight": runread_mcp::client::ARTIFACT_CALLS_IN_FLIGHT, "runread_s": a,
                   "runread_pooled_s": a2, "http_s": b, "durable_echo_s": c})
        );
    });
}
