//! `runread demo`: the main job, end to end, on a real Pi session bundled with runread.
//!
//! A temporary home and workspace; the sample session (written by the real Pi agent through
//! ../shared/harness, see fixtures/pi/sample) relocated into that workspace; ingest; a 60-second
//! grant; a server on an ephemeral loopback port; and runread's own MCP client reading the answer
//! chunk by chunk and checking its sha256 against the bytes the agent wrote.

use runread_core::Feature;
use runread_service::Config;
use runread_store::prelude::*;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use runread_core::timefmt::now_ms;
use runread_mcp::client::{Client, ClientError};

use runread_store::sqlite::SqliteStore;

/// The bundled sample: a real Pi 0.73.1 session with two runs (see fixtures/pi/sample/README).
const SAMPLE_SESSION: &str = include_str!(
    "../../../../fixtures/pi/sample/sessions/2026-11-30T01-10-15-371Z_01a22a00-a64a-727e-bdde-fbfbec12940c.jsonl"
);
const SAMPLE_FILE_NAME: &str =
    "2026-11-30T01-10-15-371Z_01a22a00-a64a-727e-bdde-fbfbec12940c.jsonl";
/// Lifetime of the demo's grant.
const DEMO_GRANT_SECS: i64 = 60;

pub fn run() -> Result<(), String> {
    // `tmp` is held until the end: dropping it removes the demo's home and workspace.
    let (tmp, workspace) = demo_dirs()?;
    let home = tmp.path().join("home");
    let sessions = tmp.path().join("pi-sessions");
    let ws_str = workspace.to_str().ok_or("temporary path is not UTF-8")?;

    step(1, "a real Pi session");
    let expected = write_sample_session(&sessions, ws_str)?;

    step(2, "store, workspace and ingest");
    let store = Arc::new(SqliteStore::open(&home.join("runread.db")).map_err(|e| e.to_string())?);
    ingest_sample(&store, ws_str, &sessions)?;
    // The demo's own home and its own keys, whatever `--gate-keys` says: the service's keys
    // also seal the demo's grant.
    let ctx = crate::context::Context {
        home: crate::home::Home::new(home.clone(), None),
        store: store.clone(),
        store_location: crate::storeopen::Location::Sqlite(
            home.join(crate::storeopen::SQLITE_FILE),
        ),
    };
    let owner = ctx.owner()?;
    let run = show_runs_and_pick(&owner, &store)?;

    step(
        3,
        "the owner grants one run, final_answer only, for 60 seconds",
    );
    let (g, key) = grant_demo_run(&owner, &run)?;

    step(
        4,
        "serve MCP on an ephemeral loopback port, read as a client would",
    );
    let answer = serve_and_read(ctx.service(Config::default(), Vec::new())?, &g, key)?;

    step(5, "verify against the bytes the agent wrote");
    verify_answer(&answer, &expected)?;
    print_next_steps();
    Ok(())
}

/// A temporary root holding the demo's home, workspace and Pi sessions folder, and the
/// workspace's canonical path (the path ingest compares session headers against).
fn demo_dirs() -> Result<(tempfile::TempDir, std::path::PathBuf), String> {
    let tmp = tempfile::Builder::new()
        .prefix("runread-demo-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let home = tmp.path().join("home");
    let workspace = tmp.path().join("workspace");
    let sessions = tmp.path().join("pi-sessions");
    for d in [&home, &workspace, &sessions] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let workspace = std::fs::canonicalize(&workspace).map_err(|e| e.to_string())?;
    Ok((tmp, workspace))
}

/// Writes the bundled session into `sessions` with its cwd moved to the demo's workspace, dated
/// a minute back, and returns the final answers the agent wrote in it.
fn write_sample_session(sessions: &std::path::Path, ws_str: &str) -> Result<Vec<String>, String> {
    let (header, rest) = SAMPLE_SESSION
        .split_once('\n')
        .ok_or("sample session has no header")?;
    let header =
        runread_ingest::relocate_header(header, ws_str).ok_or("sample header is not valid")?;
    let session_path = sessions.join(SAMPLE_FILE_NAME);
    std::fs::write(&session_path, format!("{header}\n{rest}")).map_err(|e| e.to_string())?;
    // The agent finished a minute ago: the file is past the settle window.
    let past = SystemTime::now() - Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&session_path)
        .and_then(|f| f.set_modified(past))
        .map_err(|e| e.to_string())?;
    let expected = agent_final_answers(rest);
    outln!("   sample session written by Pi 0.73.1 (fixtures/pi/sample), cwd moved to {ws_str}");
    Ok(expected)
}

/// Adds the demo's workspace and ingests the sample session into the store.
fn ingest_sample(
    store: &SqliteStore,
    ws_str: &str,
    sessions: &std::path::Path,
) -> Result<(), String> {
    let ws = store
        .add_workspace(ws_str, "demo", now_ms())
        .map_err(|e| e.to_string())?;
    outln!(
        "   instance {}  workspace {} (revision {})",
        store.instance_id(),
        ws.id,
        ws.revision
    );
    let (report, _) = runread_ingest::ingest_dir(
        store,
        &runread_ingest::AgentDir::new(runread_sessions::Agent::Pi, sessions),
        now_ms(),
        |_| {},
    )
    .map_err(|e| e.to_string())?;
    outln!(
        "   ingested {} file, {} bytes, {} runs",
        report.files,
        report.bytes_read,
        report.runs
    );
    Ok(())
}

/// Lists the ingested runs as the owner sees them and picks the one with the largest answer.
fn show_runs_and_pick(
    service: &runread_service::Owner,
    store: &SqliteStore,
) -> Result<runread_store::RunRecord, String> {
    let runs = store.runs().map_err(|e| e.to_string())?;
    let shown = service
        .shown_runs(runs.clone(), now_ms())
        .map_err(|e| e.to_string())?;
    for row in &shown {
        let r = &row.record;
        outln!(
            "   run {}  {}  answer {} ({} bytes)  “{}”",
            r.target.run_id,
            r.run.status.as_str(),
            row.answer_state,
            r.run.final_bytes,
            row.prompt.shown()
        );
    }
    runs.into_iter()
        .max_by_key(|r| r.run.final_bytes)
        .ok_or_else(|| "the sample produced no run".to_owned())
}

/// The owner's grant of `run`, final_answer only, for [`DEMO_GRANT_SECS`], and the key of the
/// reader it made.
fn grant_demo_run(
    owner: &runread_service::Owner,
    run: &runread_store::RunRecord,
) -> Result<(runread_service::owner::NewGrant, String), String> {
    let now = now_ms();
    let g = owner
        .grant(
            runread_service::owner::GrantRequest {
                run_id: &run.target.run_id,
                session_id: Some(&run.target.session_id),
                features: vec![Feature::FinalAnswer],
                expires_at_ms: now + DEMO_GRANT_SECS * 1000,
                reader: "runread demo",
                new_reader: runread_service::owner::NewReaderPolicy::Make,
                label: None,
            },
            now,
        )
        .map_err(|e| e.to_string())?;
    // The demo's home is new: its reader is too, and so is its key.
    let key = g.key.clone().ok_or("the demo's reader has no new key")?;
    outln!(
        "   grant {} to reader {:?}  key {}…  (only its hash is stored)",
        g.grant.id,
        g.reader.name,
        key.get(..8).unwrap_or_default()
    );
    outln!(
        "   target {}",
        serde_json::to_string(&g.grant.target).map_err(|e| e.to_string())?
    );
    Ok((g, key))
}

/// Serves MCP on an ephemeral loopback port, reads the granted answer through runread's own
/// client, and stops the server whatever the read returned.
fn serve_and_read(
    service: Arc<runread_service::Service>,
    g: &runread_service::owner::NewGrant,
    key: String,
) -> Result<runread_mcp::client::FinalAnswer, String> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let target = serde_json::to_value(&g.grant.target).map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(runread_mcp::server::serve(
            service,
            "127.0.0.1:0".parse().map_err(|_| "address")?,
            move |addr| {
                let _ = tx.send(addr);
            },
            async move {
                let _ = stop_rx.await;
            },
        ));
        let addr = rx.await.map_err(|_| "server did not start")?;
        let url = format!("http://{addr}{}", runread_mcp::MCP_PATH);
        outln!("   serving {url}");
        let result = read_as_client(&url, &key, &target).await;
        let _ = stop_tx.send(());
        let _ = server.await;
        result
    })
}

/// Checks the answer read over MCP against the agent's own final messages and shows it.
fn verify_answer(
    answer: &runread_mcp::client::FinalAnswer,
    expected: &[String],
) -> Result<(), String> {
    let text = answer
        .text
        .as_deref()
        .ok_or("the answer was not readable")?;
    let sha = answer.sha256.clone().unwrap_or_default();
    if !expected.iter().any(|e| e == text) {
        return Err("the answer read over MCP differs from the agent's final message".into());
    }
    outln!("   sha256 {sha}");
    outln!(
        "   matches the final assistant message in the session file, byte for byte ({} bytes)",
        text.len()
    );
    outln!();
    outln!(
        "<tool_result tool=\"read_final_answer\" trust=\"untrusted\"> — reassembled text, untrusted data:"
    );
    outln!("{text}");
    outln!("</tool_result>");
    outln!();
    Ok(())
}

fn print_next_steps() {
    let agents: Vec<&str> = runread_core::Agent::ALL
        .iter()
        .map(|a| a.product())
        .collect();
    outln!("Next, on your own sessions ({}):", agents.join(", "));
    outln!("  runread workspace add ~/code/my-project");
    outln!(
        "  runread ingest                      # every agent's default place (runread status lists them)"
    );
    outln!("  runread runs");
    outln!("  runread reader add claude-code      # once: its key and client configs");
    outln!(
        "  runread grant --run RUN --to claude-code   # its final answer and status, for an hour"
    );
    outln!(
        "  runread serve                       # http://127.0.0.1:7077/mcp, key in the x-runread-key header"
    );
    outln!("  runread status                      # is it serving, which folders, who reads");
    outln!("or, without run ids, in the browser:");
    outln!(
        "  runread serve --console --open      # MCP, plus the owner's console: runs, readers, grants, audit"
    );
}

async fn read_as_client(
    url: &str,
    key: &str,
    target: &Value,
) -> Result<runread_mcp::client::FinalAnswer, String> {
    let client = Client::connect(url, key).await.map_err(|e| e.to_string())?;
    let tools = client.tool_names().await.map_err(|e| e.to_string())?;
    outln!(
        "   server/discover ok; tools/list shows this key: {}",
        tools.join(", ")
    );
    let mut n = 0;
    let answer = client
        .read_final_answer(target, None, |chunk| {
            n += 1;
            outln!(
                "   chunk {n}: bytes {}..{} of {}  state {}  evidence {}  trust {}",
                chunk["byteOffset"],
                chunk["byteOffset"].as_u64().unwrap_or(0) + chunk["bytes"].as_u64().unwrap_or(0),
                chunk["totalBytes"],
                chunk["state"],
                chunk["evidence"],
                chunk["trust"]
            );
        })
        .await
        .map_err(|e| e.to_string())?;
    // The same door refuses what was not granted, with fixed codes and no content.
    let mut other = target.clone();
    other["runId"] = json!("00000000");
    match client
        .call("read_final_answer", json!({"target": other}))
        .await
    {
        Err(ClientError::Refused { code, .. }) => {
            outln!("   another run of the same session → refused: {code}")
        }
        other => {
            return Err(format!(
                "expected a refusal for an ungranted run, got {other:?}"
            ));
        }
    }
    client.close().await;
    match Client::connect(url, &"0".repeat(64)).await {
        Err(_) => outln!("   a wrong key → refused before any tool runs"),
        Ok(c) => {
            c.close().await;
            return Err("a wrong key was admitted".into());
        }
    }
    Ok(answer)
}

/// Final answers as the agent wrote them: the text blocks of every assistant message that stopped
/// without a tool call, read with plain JSON (independently of runread's own parser).
fn agent_final_answers(entries: &str) -> Vec<String> {
    entries
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["message"]["role"] == "assistant" && v["message"]["stopReason"] == "stop")
        .filter_map(|v| {
            let blocks = v["message"]["content"].as_array()?.clone();
            if blocks.iter().any(|b| b["type"] == "toolCall") {
                return None;
            }
            let texts: Vec<String> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str().map(str::to_owned))
                .collect();
            Some(texts.join("\n"))
        })
        .collect()
}

fn step(n: u32, what: &str) {
    outln!("{n}. {what}");
}
