//! The results-read suite over MCP with a real client, on a real Pi session with thinking, tool
//! calls, known secrets in a tool result and in the answer, and non-ASCII text at page edges —
//! each test once per Pi version with fixtures (0.73.1 and 1.6.0).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::limits::{ARTIFACT_TRANSFER_MAX_BYTES, SECRET_MAX_BYTES};
use runread_mcp::client::ARTIFACT_CALLS_IN_FLIGHT;
use runread_mcp::client::{Client, ClientError};

use runread_testkit::{Env, pi_versions};

const SECRET_1: &str = "sk-runread-TEST-0123456789abcdef";
const SECRET_2: &str = "ghp_RUNREADtestTOKEN000000000000";

struct Suite {
    env: Env,
    url: String,
    _serving: runread_testkit::Serving,
}

impl Suite {
    async fn start(fixture: &str) -> Suite {
        let env = Env::new();
        env.place(fixture, Duration::from_secs(60));
        env.ingest();
        for (name, value) in [("test-openai", SECRET_1), ("test-github", SECRET_2)] {
            env.add_secret(name, value);
        }
        let serving = runread_testkit::serve::mcp(env.service_unthrottled()).await;
        Suite {
            env,
            url: serving.url.clone(),
            _serving: serving,
        }
    }

    /// Grants `features` of run `index` (file order) to a fresh key; returns (client, target).
    async fn grant(&self, index: usize, features: Vec<Feature>) -> (Client, Value, String) {
        let mut runs = self.env.store.runs().unwrap();
        runs.sort_by_key(|r| r.run.start_line);
        let g = self
            .env
            .grant(&runs[index].target.run_id, features, "suite");
        let c = Client::connect(&self.url, &g.key).await.unwrap();
        (c, serde_json::to_value(&g.grant.target).unwrap(), g.key)
    }
}

/// Every proper prefix of a secret that is long enough to mean something (4+ bytes).
fn assert_no_secret_or_prefix_at_end(text: &str) {
    for s in [SECRET_1, SECRET_2] {
        assert!(!text.contains(s), "secret leaked: {text}");
        for n in 4..s.len() {
            assert!(
                !text.ends_with(&s[..n]),
                "secret prefix at the end of a page: {}",
                &text[text.len().saturating_sub(60)..]
            );
        }
    }
}

pi_versions! {
#[tokio::test]
async fn history_pages_carry_no_thinking_arguments_or_secrets_and_upsert_to_the_same_result(v) {
    let s = Suite::start(&v.fixture("secrets-history")).await;
    let (client, target, _) = s.grant(0, vec![Feature::History]).await;
    let mut results = Vec::new();
    for limit in [1u64, 2, 3, 7, 50, 100] {
        let events = client.read_history(&target, Some(limit)).await.unwrap();
        for e in &events {
            let t = e["text"].as_str().unwrap_or("");
            assert_no_secret_or_prefix_at_end(t);
            assert!(
                !t.contains("The user wants a configuration check"),
                "thinking leaked"
            );
            assert!(
                !t.contains("cat config/settings.env"),
                "tool arguments leaked"
            );
            assert_eq!(e["readable"], true, "{e}");
        }
        let seqs: Vec<u64> = events
            .iter()
            .map(|e| e["sequence"].as_u64().unwrap())
            .collect();
        assert!(
            seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "contiguous sequences: {seqs:?}"
        );
        results.push(events);
    }
    for r in &results[1..] {
        assert_eq!(
            r, &results[0],
            "upserting by sequence gives the same history whatever the page size"
        );
    }
    let events = &results[0];
    assert_eq!(
        events.len(),
        6,
        "run 1: user, assistant, tool result, assistant, tool result, answer"
    );
    let roles: Vec<&str> = events.iter().map(|e| e["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    assert_eq!(events[1]["toolCalls"], json!(["bash"]));
    assert_eq!(events[2]["toolName"], "bash");
    assert!(
        events[2]["text"].as_str().unwrap().contains("[redacted]"),
        "the secret in the tool output is masked"
    );
    assert!(events[5]["text"].as_str().unwrap().contains("[redacted]"));
}
}

pi_versions! {
#[tokio::test]
async fn a_secret_at_the_end_of_one_event_is_masked_however_run_two_is_paged(v) {
    let s = Suite::start(&v.fixture("secrets-history")).await;
    let (client, target, _) = s.grant(1, vec![Feature::History]).await;
    let base = client.read_history(&target, Some(100)).await.unwrap();
    assert!(base.len() >= 10);
    for limit in 1..=base.len() as u64 {
        let events = client.read_history(&target, Some(limit)).await.unwrap();
        assert_eq!(events, base, "limit {limit}");
    }
    let masked: Vec<&Value> = base
        .iter()
        .filter(|e| e["text"].as_str().unwrap_or("").contains("[redacted]"))
        .collect();
    assert_eq!(masked.len(), 1, "the tool output that ends with the secret");
    assert!(masked[0]["text"].as_str().unwrap().ends_with("[redacted]"));
}
}

pi_versions! {
#[tokio::test]
async fn final_answer_masks_known_secrets_before_chunking(v) {
    let s = Suite::start(&v.fixture("secrets-history")).await;
    let (client, target, _) = s.grant(0, vec![Feature::FinalAnswer]).await;
    for limit in [4u64, 100, 4096] {
        let a = client
            .read_final_answer(&target, Some(limit), |c| {
                assert_no_secret_or_prefix_at_end(c["text"].as_str().unwrap_or(""));
            })
            .await
            .unwrap();
        let text = a.text.unwrap();
        assert!(!text.contains(SECRET_1) && !text.contains(SECRET_2));
        assert_eq!(text.matches("[redacted]").count(), 2);
    }
}
}

pi_versions! {
#[tokio::test]
async fn work_state_and_metadata_say_what_a_session_file_can_and_cannot_show(v) {
    let s = Suite::start(&v.fixture("secrets-history")).await;
    let (client, target, _) = s
        .grant(0, vec![Feature::Aggregate, Feature::Metadata])
        .await;
    assert_eq!(
        client.tool_names().await.unwrap(),
        crate::support::every_read_tool()
    );
    let w = client
        .call("read_work_state", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    assert_eq!(w["completionConfirmed"], false);
    assert_eq!(w["wholeMachineIdleConfirmed"], false);
    assert_eq!(w["coverage"]["subagents"]["state"], "incomplete");
    assert_eq!(w["coverage"]["background"]["state"], "incomplete");
    assert_eq!(w["coverage"]["session"]["state"], "complete");
    assert_eq!(w["aggregate"]["state"], "unknown");
    // Just ingested: fresh, and the foreground state is what the file shows.
    assert_eq!(w["fresh"], true);
    assert_eq!(w["foreground"]["state"], "completed");
    let m = client
        .call("read_target_metadata", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    assert_eq!(
        m["workspacePath"]["value"],
        s.env.workspace.to_str().unwrap()
    );
    assert_eq!(m["workspacePath"]["source"], "registration");
    assert_eq!(m["savedModel"]["value"], "mock/mock-1");
    assert_eq!(m["runModel"]["value"], "mock/mock-1");
    assert_eq!(m["sessionName"]["value"], Value::Null);
    assert_eq!(m["agent"], "pi");
    // Pi records its cwd in the session header, the provider with the model; no branch, agent
    // version or parent (the session is not a fork).
    assert_eq!(m["cwd"]["source"], "session_header");
    // No version recorded: whether it is tested is not known either.
    assert_eq!(m["versionTested"], Value::Null);
    assert_eq!(
        m["modelProvider"],
        json!({"value": "mock", "source": "assistant_messages"})
    );
    assert_eq!(
        m["unknownFields"],
        json!([
            "sessionName",
            "gitBranch",
            "agentVersion",
            "parentSession",
            "inheritedHistory"
        ])
    );
}
}

pi_versions! {
#[tokio::test]
async fn read_keys_are_known_secrets(v) {
    let s = Suite::start(&v.fixture("sample")).await;
    let (_c1, _t1, key1) = s.grant(0, vec![Feature::FinalAnswer]).await;
    // A later session quotes the first key in its answer (say, the user pasted it to the agent).
    let header = json!({"type":"session","version":3,"id":"quotes-key","cwd": s.env.workspace});
    let user =
        json!({"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"q"}});
    let answer = json!({"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant",
        "content":[{"type":"text","text": format!("the key is {key1}.")}],"stopReason":"stop"}});
    let p = s.env.sessions.join("quotes.jsonl");
    std::fs::write(&p, format!("{header}\n{user}\n{answer}\n")).unwrap();
    runread_testkit::set_age(&p, Duration::from_secs(60));
    s.env.ingest();
    let run = s
        .env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .find(|r| r.target.session_id == "quotes-key")
        .unwrap();
    let g = s
        .env
        .grant_in("u1", Some("quotes-key"), vec![Feature::FinalAnswer], "t");
    let c = Client::connect(&s.url, &g.key).await.unwrap();
    let a = c
        .read_final_answer(&serde_json::to_value(&run.target).unwrap(), None, |_| {})
        .await
        .unwrap();
    assert_eq!(a.text.as_deref(), Some("the key is [redacted]."));
}
}

fn write_random(path: &std::path::Path, n: usize) -> Vec<u8> {
    let mut data = vec![0u8; n];
    let mut x: u64 = 0x1234_5678_9abc_def1;
    for b in &mut data {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write(path, &data).unwrap();
    data
}

pi_versions! {
#[tokio::test]
async fn an_8_mib_binary_artifact_comes_back_byte_exact(v) {
    let s = Suite::start(&v.fixture("sample")).await;
    let data = write_random(&s.env.workspace.join("build.bin"), 8 * 1024 * 1024);
    let (id, v) = register(&s, "build.bin");
    assert_eq!(v.size, data.len() as u64);
    let (client, target, _) = s.grant(0, vec![Feature::Artifacts]).await;
    let (meta, bytes) = client.read_artifact(&target, Some(&id)).await.unwrap();
    assert_eq!(meta["mime"], "application/octet-stream");
    assert!(bytes == data, "byte-exact");
    // Bounds at N and N+1.
    for (args, ok) in [
        (json!({"offset": 8 * 1024 * 1024, "limit": 32_768}), true),
        (json!({"offset": 8 * 1024 * 1024 + 1}), false),
        (json!({"limit": 32_768}), true),
        (json!({"limit": 32_769}), false),
        (json!({"limit": 0}), false),
    ] {
        let mut a = json!({"target": target, "artifactId": id, "version": v.sha256});
        for (k, val) in args.as_object().unwrap() {
            a[k] = val.clone();
        }
        let r = client.call("read_artifact", a).await;
        assert_eq!(r.is_ok(), ok, "{args}: {r:?}");
    }
    // Modified in place after registration: refused with its code, no bytes.
    std::fs::write(s.env.workspace.join("build.bin"), b"changed").unwrap();
    match client
        .call(
            "read_artifact",
            json!({"target": target, "artifactId": id, "version": v.sha256}),
        )
        .await
    {
        Err(ClientError::Refused { code, .. }) => assert_eq!(code, "artifact_changed"),
        other => panic!("{other:?}"),
    }
}
}

/// Registers `rel` (already written in the workspace) for the first run; returns its id and
/// version.
fn register(s: &Suite, rel: &str) -> (String, runread_artifacts::ArtifactVersion) {
    let mut runs = s.env.store.runs().unwrap();
    runs.sort_by_key(|r| r.run.start_line);
    s.env
        .owner()
        .add_artifact(
            &runread_service::owner::NewArtifact {
                run_id: &runs[0].target.run_id,
                session_id: None,
                path: rel,
                name: None,
                mime: None,
                kind: "generated",
            },
            1,
        )
        .unwrap()
}

/// A TCP relay to `upstream` on another loopback port; counts the connections it accepts.
async fn counting_relay(upstream: std::net::SocketAddr) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (url, accepted)
}

pi_versions! {
#[tokio::test]
async fn the_client_reads_an_artifact_over_kept_connections_not_one_per_chunk(v) {
    let s = Suite::start(&v.fixture("sample")).await;
    let chunks = 12;
    let data = write_random(
        &s.env.workspace.join("kept.bin"),
        chunks * ARTIFACT_TRANSFER_MAX_BYTES,
    );
    let (id, _) = register(&s, "kept.bin");
    let mut runs = s.env.store.runs().unwrap();
    runs.sort_by_key(|r| r.run.start_line);
    let g = s
        .env
        .grant(&runs[0].target.run_id, vec![Feature::Artifacts], "suite");
    let (url, accepted) = counting_relay(s._serving.addr).await;
    let client = Client::connect(&url, &g.key).await.unwrap();
    let target = serde_json::to_value(&g.grant.target).unwrap();
    let (_, bytes) = client.read_artifact(&target, Some(&id)).await.unwrap();
    assert!(bytes == data, "byte-exact");
    // server/discover, list_artifacts and 12 chunk calls, at most the in-flight cap at once: as
    // many connections as calls were ever in flight together, not one per call.
    let connections = accepted.load(Ordering::SeqCst);
    assert!(
        (1..=ARTIFACT_CALLS_IN_FLIGHT).contains(&connections),
        "{connections} connections for {} calls",
        chunks + 2
    );
}
}

pi_versions! {
#[tokio::test]
async fn a_secret_known_after_registration_refuses_every_chunk_whose_window_holds_it(v) {
    let s = Suite::start(&v.fixture("sample")).await;
    const CHUNK: usize = ARTIFACT_TRANSFER_MAX_BYTES;
    let later = "sk-runread-LATER-0123456789abcdef";
    // Across the edge of chunks 0 and 1; chunks 2 and 3 are clean, chunk 3 starts more than a
    // secret's length after it.
    let mut data = vec![b'.'; 4 * CHUNK];
    let at = CHUNK - 10;
    data[at..at + later.len()].copy_from_slice(later.as_bytes());
    std::fs::write(s.env.workspace.join("late.txt"), &data).unwrap();
    let (id, v) = register(&s, "late.txt");
    let (client, target, _) = s.grant(0, vec![Feature::Artifacts]).await;
    let read = |offset: usize| {
        client.call(
            "read_artifact",
            json!({"target": target, "artifactId": id, "version": v.sha256, "offset": offset}),
        )
    };
    // Not yet a known secret: every chunk reads.
    for i in 0..4 {
        assert!(read(i * CHUNK).await.is_ok(), "chunk {i} before");
    }
    s.env.add_secret("test-later", later);
    for i in 0..4 {
        match (i, read(i * CHUNK).await) {
            (0 | 1, Err(ClientError::Refused { code, message })) => {
                assert_eq!(code, "artifact_contains_secret");
                assert!(!message.contains(later) && !message.contains("late.txt"));
            }
            (2 | 3, Ok(r)) => assert_eq!(r.structured["offset"], i * CHUNK),
            (i, other) => panic!("chunk {i}: {other:?}"),
        }
    }
    // The window is the chunk and a secret's length either side: a secret wholly inside it
    // refuses the chunk, at N and N+1 on both sides.
    let call = |offset: usize, limit: usize| {
        client.call(
            "read_artifact",
            json!({"target": target, "artifactId": id, "version": v.sha256, "offset": offset, "limit": limit}),
        )
    };
    let end = at + later.len();
    assert!(
        call(0, end - SECRET_MAX_BYTES).await.is_err(),
        "ends in the window"
    );
    assert!(
        call(0, end - SECRET_MAX_BYTES - 1).await.is_ok(),
        "its last byte outside"
    );
    assert!(
        call(at + SECRET_MAX_BYTES, 16).await.is_err(),
        "begins in the window"
    );
    assert!(
        call(at + SECRET_MAX_BYTES + 1, 16).await.is_ok(),
        "its first byte outside"
    );
}
}

pi_versions! {
#[tokio::test]
async fn artifacts_with_a_known_secret_or_a_refused_path_are_not_registered(v) {
    let s = Suite::start(&v.fixture("sample")).await;
    let run_id = s.env.store.runs().unwrap()[0].target.run_id.clone();
    std::fs::write(
        s.env.workspace.join("notes.txt"),
        format!("token: {SECRET_1}\n"),
    )
    .unwrap();
    let e = s
        .env
        .owner()
        .add_artifact(
            &runread_service::owner::NewArtifact {
                run_id: &run_id,
                session_id: None,
                path: "notes.txt",
                name: None,
                mime: None,
                kind: "generated",
            },
            1,
        )
        .unwrap_err();
    assert!(
        matches!(e, runread_service::owner::ArtifactError::ContainsSecret),
        "{e}"
    );
    std::fs::write(s.env.workspace.join(".env"), "x=1").unwrap();
    for path in [
        "../etc/passwd",
        "/etc/passwd",
        ".env",
        ".git/config",
        "http://x/y",
        "a:stream",
        "runread.db",
    ] {
        let e = s
            .env
            .owner()
            .add_artifact(
                &runread_service::owner::NewArtifact {
                    run_id: &run_id,
                    session_id: None,
                    path,
                    name: None,
                    mime: None,
                    kind: "generated",
                },
                1,
            )
            .unwrap_err();
        assert!(
            matches!(e, runread_service::owner::ArtifactError::Refused(_)),
            "{path}: {e}"
        );
    }
    let e = s
        .env
        .owner()
        .add_artifact(
            &runread_service::owner::NewArtifact {
                run_id: &run_id,
                session_id: None,
                path: "notes.txt",
                name: None,
                mime: Some("text/html"),
                kind: "generated",
            },
            1,
        )
        .unwrap_err();
    assert!(
        matches!(e, runread_service::owner::ArtifactError::Refused(r) if r.as_str() == "mime_refused"),
        "{e}"
    );
}
}

/// The sum of `usage.input`/`usage.output` over the assistant messages of run `index` (file
/// order) of the placed session at `path`, read with plain JSON.
fn agent_usage(path: &std::path::Path, index: usize) -> (u64, u64) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        match v["message"]["role"].as_str() {
            Some("user") if v["type"] == "message" => runs.push((0, 0)),
            Some("assistant") => {
                let u = &v["message"]["usage"];
                let last = runs.last_mut().unwrap();
                last.0 += u["input"].as_u64().unwrap();
                last.1 += u["output"].as_u64().unwrap();
            }
            _ => {}
        }
    }
    runs[index]
}

pi_versions! {
#[tokio::test]
async fn get_run_wait_for_run_and_usage_say_what_the_file_records(v) {
    let s = Suite::start(&v.fixture("secrets-history")).await;
    let mut runs = s.env.store.runs().unwrap();
    runs.sort_by_key(|r| r.run.start_line);
    assert_eq!(runs.len(), 2);
    for (index, record) in runs.iter().enumerate() {
        let (client, target, _) = s
            .grant(index, vec![Feature::Status, Feature::Metadata])
            .await;
        let run = client
            .call("get_run", json!({"target": target}))
            .await
            .unwrap()
            .structured;
        assert_eq!(run["found"], true, "{run}");
        assert_eq!(run["status"], "completed");
        assert_eq!(run["origin"], "passive");
        // A settled run: the wait answers at once, with the same status.
        let waited = client
            .call("wait_for_run", json!({"target": target, "timeoutSeconds": 1}))
            .await
            .unwrap()
            .structured;
        assert_eq!(waited["status"], "completed", "{waited}");
        let m = client
            .call("read_target_metadata", json!({"target": target}))
            .await
            .unwrap()
            .structured;
        let (input, output) = agent_usage(std::path::Path::new(&record.session_path), index);
        assert!(input > 0 && output > 0, "the model server reported usage");
        assert_eq!(m["usage"]["total"]["input"], input, "{}", m["usage"]);
        assert_eq!(m["usage"]["total"]["output"], output, "{}", m["usage"]);
        assert_eq!(m["usage"]["source"], "assistant_messages");
    }
}
}

/// A Pi 1.x fork (`pi --fork`) over MCP: its runs are read like any, and its metadata names the
/// parent session file as the fork's header does.
#[tokio::test]
async fn a_forked_pi_session_names_its_parent_in_metadata() {
    let name = runread_testkit::PI_1_6_0.fixture("fork");
    let env = Env::new();
    let placed = env.place_all(&name, Duration::from_secs(60));
    env.ingest();
    let serving = runread_testkit::serve::mcp(env.service_unthrottled()).await;
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&placed[1])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let fork_id = header["id"].as_str().unwrap();
    let mut runs: Vec<_> = env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .filter(|r| r.target.session_id == fork_id)
        .collect();
    runs.sort_by_key(|r| r.run.start_line);
    assert_eq!(runs.len(), 3);
    let forked = &runs[1];
    let g = env.grant_in(
        &forked.target.run_id,
        Some(fork_id),
        vec![Feature::FinalAnswer, Feature::Metadata],
        "fork",
    );
    let c = Client::connect(&serving.url, &g.key).await.unwrap();
    let target = serde_json::to_value(&g.grant.target).unwrap();
    let m = c
        .call("read_target_metadata", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    assert_eq!(
        m["parentSession"]["value"], header["parentSession"],
        "{}",
        m["parentSession"]
    );
    assert_eq!(m["parentSession"]["source"], "session_header");
    let a = c.read_final_answer(&target, None, |_| {}).await.unwrap();
    assert_eq!(a.text, runread_testkit::answer(forked));
}

/// Pi 1.x's compactions over MCP: a `compaction` entry inside run 1 (between its tool result and
/// its answer) and after each answer is no event of the history, and each run's answer reads as
/// Pi wrote it.
#[tokio::test]
async fn compactions_are_no_history_events_and_leave_the_answers_readable() {
    let s = Suite::start(&runread_testkit::PI_1_6_0.fixture("compaction")).await;
    let mut runs = s.env.store.runs().unwrap();
    runs.sort_by_key(|r| r.run.start_line);
    assert_eq!(runs.len(), 2);
    let (client, target, _) = s
        .grant(0, vec![Feature::History, Feature::FinalAnswer])
        .await;
    let events = client.read_history(&target, Some(100)).await.unwrap();
    let roles: Vec<&str> = events.iter().map(|e| e["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert!(events.iter().all(|e| e["readable"] == true));
    let a = client
        .read_final_answer(&target, None, |_| {})
        .await
        .unwrap();
    assert_eq!(a.text, runread_testkit::answer(&runs[0]));
    assert!(a.text.unwrap().contains("ζῆτα"));
}
