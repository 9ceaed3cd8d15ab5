//! runread's own MCP client: connects with `server/discover` (2026-07-28) — or, for tests of the
//! dated era, with the `initialize` handshake of a dated version —, sends the key header, and reads
//! whole answers by following cursors, checking every label, offset and hash.

use std::collections::HashMap;

use rmcp::model::{CallToolRequestParams, ClientConfig, ContentBlock, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Map, Value, json};

use futures::StreamExt as _;
use runread_core::limits::ARTIFACT_TRANSFER_MAX_BYTES;

use runread_service::outputs;

use crate::KEY_HEADER;

/// Most history pages followed in one read: every retained event at one event per page, plus slack.
pub const MAX_HISTORY_PAGES: usize = runread_core::limits::HISTORY_RETAINED_EVENTS + 16;
/// Most chunks followed for one answer: the answer limit divided by the smallest chunk, plus one.
pub const MAX_CHUNKS: usize = runread_core::limits::FINAL_ANSWER_MAX_BYTES
    / runread_core::limits::FINAL_ANSWER_CHUNK_MIN_BYTES
    + 1;

/// Largest artifact this client reads: the largest the server registers.
pub const ARTIFACT_READ_MAX_BYTES: u64 = runread_core::limits::ARTIFACT_MAX_BYTES;
/// `read_artifact` calls one artifact read keeps in flight: the server's cap on requests in
/// flight (one more is answered 503 at once).
pub const ARTIFACT_CALLS_IN_FLIGHT: usize = runread_core::limits::HTTP_IN_FLIGHT_MAX;

#[derive(Debug)]
pub enum ClientError {
    /// Could not connect or the protocol failed.
    Transport(String),
    /// The server refused the call with a fixed code.
    Refused { code: String, message: String },
    /// The server's answer broke the contract (label, offsets, hash).
    Verification(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Transport(m) => write!(f, "transport: {m}"),
            ClientError::Refused { code, message } => write!(f, "refused: {code} ({message})"),
            ClientError::Verification(m) => write!(f, "verification failed: {m}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Most pages of `list_granted_targets` [`Client::granted_targets`] reads before it gives up.
pub const GRANTED_TARGETS_PAGES_MAX: usize = 1_000;

/// A successful tool result: the structured content and the labeled text block.
#[derive(Debug, Clone)]
pub struct ToolResult {
    pub structured: Value,
    pub text: String,
}

/// A whole answer, reassembled and verified.
#[derive(Debug, Clone)]
pub struct FinalAnswer {
    pub state: String,
    pub text: Option<String>,
    pub sha256: Option<String>,
    pub total_bytes: Option<u64>,
    pub chunks: usize,
    /// The first chunk's structured content (state, evidence, flags).
    pub first: Value,
}

pub struct Client {
    inner: RunningService<RoleClient, ClientConfig>,
}

/// The HTTP client under rmcp's transport: keep-alive connections, reused from call to call, and
/// no redirect followed (runread's server never redirects, and a redirect would carry the key).
///
/// rmcp's default client keeps no idle connection, so every call paid a TCP connection of its
/// own, on both sides: its stated reason, a delayed-ACK stall when a pooled connection is reused
/// before the last response was read whole, does not arise here, where every response is one
/// JSON body that rmcp reads to its end.
fn http_client() -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|_| ClientError::Transport("could not build the HTTP client".into()))
}

impl Client {
    /// Connects to `url` (e.g. `http://127.0.0.1:7077/mcp`) with `key`, using `server/discover`.
    pub async fn connect(url: &str, key: &str) -> Result<Client, ClientError> {
        Client::connect_speaking(url, key, ProtocolVersion::V_2026_07_28).await
    }

    /// [`Client::connect`] speaking `version`: 2026-07-28 with `server/discover`, a dated version
    /// with the `initialize` handshake (rmcp's client, as dated-era clients connect).
    pub async fn connect_speaking(
        url: &str,
        key: &str,
        version: ProtocolVersion,
    ) -> Result<Client, ClientError> {
        let mut headers = HashMap::new();
        let name = http::HeaderName::from_static(KEY_HEADER);
        let value = http::HeaderValue::from_str(key)
            .map_err(|_| ClientError::Transport("key is not a valid header value".into()))?;
        headers.insert(name, value);
        let config =
            StreamableHttpClientTransportConfig::with_uri(url.to_owned()).custom_headers(headers);
        let transport = StreamableHttpClientTransport::with_client(http_client()?, config);
        let (config, lifecycle) = if version.has_initialize() {
            (
                ClientConfig::default().with_protocol_version(version),
                ClientLifecycleMode::Initialize,
            )
        } else {
            (
                ClientConfig::default(),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![version],
                },
            )
        };
        let inner = config
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        Ok(Client { inner })
    }

    /// The protocol version the server agreed to, as the handshake reported it.
    pub fn protocol_version(&self) -> Option<String> {
        self.inner
            .peer_info()
            .map(|info| info.protocol_version.as_str().to_owned())
    }

    /// Names of the tools this key sees.
    pub async fn tool_names(&self) -> Result<Vec<String>, ClientError> {
        let tools = self
            .inner
            .list_all_tools()
            .await
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        Ok(tools.into_iter().map(|t| t.name.to_string()).collect())
    }

    /// Calls `tool`, returning its labeled result or the server's fixed refusal.
    pub async fn call(&self, tool: &str, args: Value) -> Result<ToolResult, ClientError> {
        let Value::Object(args) = args else {
            return Err(ClientError::Transport("arguments must be an object".into()));
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let result = self
            .inner
            .call_tool(params)
            .await
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        let text = result
            .content
            .iter()
            .find_map(|c| match c {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        if result.is_error == Some(true) {
            let r: Refusal = serde_json::from_str(&text).unwrap_or_default();
            return Err(ClientError::Refused {
                code: r.code.unwrap_or_else(|| "unknown".to_owned()),
                message: r.message,
            });
        }
        let structured = result.structured_content.unwrap_or(Value::Null);
        verify_label(tool, &structured, &text)?;
        Ok(ToolResult { structured, text })
    }

    /// The live targets this key's reader may read, newest first, every page of them (at most
    /// [`GRANTED_TARGETS_PAGES_MAX`] pages).
    pub async fn granted_targets(&self) -> Result<Vec<Value>, ClientError> {
        self.targets().await?.iter().map(as_value).collect()
    }

    /// [`Client::granted_targets`], typed: each as `list_granted_targets` lists it.
    pub async fn targets(&self) -> Result<Vec<outputs::GrantedTarget>, ClientError> {
        let mut all = Vec::new();
        let mut args = json!({"limit": runread_core::limits::GRANTED_TARGETS_PAGE_MAX});
        for _ in 0..GRANTED_TARGETS_PAGES_MAX {
            let r = self.call("list_granted_targets", args.clone()).await?;
            let page: outputs::GrantedTargets = typed("list_granted_targets", &r.structured)?;
            all.extend(page.targets);
            match page.next_cursor {
                Some(next) => args["cursor"] = json!(next),
                None => return Ok(all),
            }
        }
        Err(ClientError::Transport(
            "list_granted_targets did not end within its page bound".into(),
        ))
    }

    /// Reads the whole final answer of `target`, `limit` bytes per chunk, verifying every chunk.
    /// `on_chunk` sees each chunk's structured content as it arrives.
    pub async fn read_final_answer(
        &self,
        target: &Value,
        limit: Option<u64>,
        mut on_chunk: impl FnMut(&Value),
    ) -> Result<FinalAnswer, ClientError> {
        let mut assembled = String::new();
        let mut cursor: Option<String> = None;
        let mut first: Option<(Value, outputs::AnswerChunk)> = None;
        for chunks in 1..=MAX_CHUNKS {
            let mut args = Map::new();
            args.insert("target".into(), target.clone());
            if let Some(c) = &cursor {
                args.insert("cursor".into(), json!(c));
            }
            if let Some(l) = limit {
                args.insert("limit".into(), json!(l));
            }
            let r = self
                .call("read_final_answer", Value::Object(args))
                .await?
                .structured;
            on_chunk(&r);
            let out: outputs::FinalAnswer = typed("read_final_answer", &r)?;
            let state = out.claim.state.as_str().to_owned();
            let (head_json, head) = first
                .get_or_insert_with(|| (r.clone(), out.chunk.clone()))
                .clone();
            let chunk = out.chunk;
            let done = |text: Option<String>, sha256: Option<String>| FinalAnswer {
                state: state.clone(),
                text,
                sha256,
                total_bytes: chunk.total_bytes,
                chunks,
                first: head_json.clone(),
            };
            if !chunk.readable {
                return Ok(done(None, None));
            }
            assembled.push_str(next_answer_chunk(&chunk, &head, assembled.len())?);
            if chunk.eof {
                let sha = whole_answer(&chunk, &assembled)?;
                return Ok(done(Some(std::mem::take(&mut assembled)), Some(sha)));
            }
            cursor = Some(
                chunk
                    .next_cursor
                    .clone()
                    .ok_or_else(|| ClientError::Verification("no nextCursor before eof".into()))?,
            );
        }
        Err(ClientError::Verification("too many chunks".into()))
    }

    /// Reads the whole history of `target`, `limit` events per page, upserting by sequence.
    /// Pages flagged `redactionPending` are re-read from the held cursor on the next call.
    pub async fn read_history(
        &self,
        target: &Value,
        limit: Option<u64>,
    ) -> Result<Vec<Value>, ClientError> {
        let mut by_seq: std::collections::BTreeMap<u64, Value> = std::collections::BTreeMap::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_HISTORY_PAGES {
            let mut args = Map::new();
            args.insert("target".into(), target.clone());
            if let Some(c) = &cursor {
                args.insert("cursor".into(), json!(c));
            }
            if let Some(l) = limit {
                args.insert("limit".into(), json!(l));
            }
            let r = self
                .call("read_history", Value::Object(args))
                .await?
                .structured;
            let page: outputs::History = typed("read_history", &r)?;
            for e in &page.events {
                // A withheld event is not final: keep what we have until it comes back readable.
                if e.redaction_pending && by_seq.contains_key(&e.sequence) {
                    continue;
                }
                by_seq.insert(e.sequence, as_value(e)?);
            }
            match page.next_cursor {
                Some(c) if !page.eof => {
                    if cursor.as_deref() == Some(c.as_str()) && !page.redaction_pending {
                        break; // no progress and nothing pending: the run is still being written
                    }
                    cursor = Some(c);
                }
                _ => break,
            }
        }
        Ok(by_seq.into_values().collect())
    }

    /// Reads one artifact of `target` (by id, or the only one), verifying every chunk's sha256,
    /// the offsets and the whole version's sha256. Returns its listing entry and its bytes.
    pub async fn read_artifact(
        &self,
        target: &Value,
        id: Option<&str>,
    ) -> Result<(Value, Vec<u8>), ClientError> {
        let list = self
            .call("list_artifacts", json!({"target": target}))
            .await?
            .structured;
        let meta = pick_artifact(&list, id)?;
        let size = meta.size;
        if size > ARTIFACT_READ_MAX_BYTES {
            return Err(ClientError::Verification(format!(
                "artifact of {size} bytes is over this client's {ARTIFACT_READ_MAX_BYTES}"
            )));
        }
        // Every chunk is its own gated call (start record, checks, receipt): up to the server's
        // cap of them in flight at once, each asked for exactly its range, reassembled in order.
        let chunk = ARTIFACT_TRANSFER_MAX_BYTES as u64;
        let ranges: Vec<(u64, u64)> = (0..size.div_ceil(chunk).max(1))
            .map(|i| (i * chunk, chunk.min(size - (i * chunk).min(size)).max(1)))
            .collect();
        let last = ranges.len() - 1;
        let (artifact_id, version) = (meta.artifact_id.clone(), meta.version.clone());
        let mut chunks = futures::stream::iter(ranges.into_iter().enumerate())
            .map(|(i, (offset, limit))| {
                let args = json!({"target": target, "artifactId": &artifact_id, "version": &version, "offset": offset, "limit": limit});
                async move { (i, offset, self.call("read_artifact", args).await) }
            })
            .buffered(ARTIFACT_CALLS_IN_FLIGHT);
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        while let Some((i, offset, r)) = chunks.next().await {
            if bytes.len() as u64 != offset {
                return Err(ClientError::Verification(
                    "chunk offset does not follow".into(),
                ));
            }
            let expected = ChunkAt {
                offset,
                bytes: chunk.min(size - offset),
                last: i == last,
            };
            let r: outputs::ArtifactChunk = typed("read_artifact", &r?.structured)?;
            bytes.extend_from_slice(&checked_chunk(&r, expected)?);
        }
        if runread_core::sha256_hex(&bytes) != meta.sha256 || bytes.len() as u64 != size {
            return Err(ClientError::Verification(
                "sha256 of the whole artifact does not match".into(),
            ));
        }
        Ok((as_value(&meta)?, bytes))
    }

    pub async fn close(self) {
        let _ = self.inner.cancel().await;
    }
}

/// Checks a success's envelope: trust fields present, one text block that wraps exactly the
/// structured content in the tool's tag.
pub fn verify_label(tool: &str, structured: &Value, text: &str) -> Result<(), ClientError> {
    if structured["trust"] != json!("untrusted_data") || structured["instructions"] != json!(false)
    {
        return Err(ClientError::Verification("missing trust fields".into()));
    }
    let prefix = format!("<tool_result tool=\"{tool}\" trust=\"");
    let body = text
        .strip_prefix(&prefix)
        .and_then(|rest| rest.split_once("\">\n"))
        .and_then(|(_, rest)| rest.strip_suffix("\n</tool_result>"))
        .ok_or_else(|| ClientError::Verification("text block is not a tool_result label".into()))?;
    if body.contains('<') {
        return Err(ClientError::Verification(
            "label body contains a raw '<'".into(),
        ));
    }
    let decoded: Value = serde_json::from_str(body)
        .map_err(|_| ClientError::Verification("label body is not JSON".into()))?;
    if &decoded != structured {
        return Err(ClientError::Verification(
            "label body differs from structuredContent".into(),
        ));
    }
    Ok(())
}

/// The text of a readable `read_final_answer` chunk, checked to continue the answer read so far
/// (`assembled` bytes of it, begun by `head`): the same version and digest, the next offset, and
/// as many bytes as it says.
fn next_answer_chunk<'r>(
    r: &'r outputs::AnswerChunk,
    head: &outputs::AnswerChunk,
    assembled: usize,
) -> Result<&'r str, ClientError> {
    if r.version != head.version || r.sha256 != head.sha256 {
        return Err(ClientError::Verification(
            "the answer changed between chunks".into(),
        ));
    }
    if r.byte_offset != assembled {
        return Err(ClientError::Verification(
            "chunk offset does not follow the previous chunk".into(),
        ));
    }
    let text = r
        .text
        .as_deref()
        .ok_or_else(|| ClientError::Verification("readable chunk without text".into()))?;
    if r.bytes != text.len() {
        return Err(ClientError::Verification(
            "chunk byte count mismatch".into(),
        ));
    }
    Ok(text)
}

/// The digest of the whole answer read (`assembled`), checked against what its last chunk says
/// of the whole: its sha256 and its length.
fn whole_answer(last: &outputs::AnswerChunk, assembled: &str) -> Result<String, ClientError> {
    let sha = runread_core::sha256_hex(assembled.as_bytes());
    if last.sha256.as_deref() != Some(sha.as_str()) {
        return Err(ClientError::Verification(
            "sha256 of the whole answer does not match".into(),
        ));
    }
    if last.total_bytes != Some(assembled.len() as u64) {
        return Err(ClientError::Verification(
            "totalBytes does not match".into(),
        ));
    }
    Ok(sha)
}

/// A result's structured content read as `tool`'s output type (the service's own: the schema
/// `tools/list` declares is derived from it); anything else is not the tool's answer.
fn typed<T: serde::de::DeserializeOwned>(tool: &str, structured: &Value) -> Result<T, ClientError> {
    T::deserialize(structured)
        .map_err(|_| ClientError::Verification(format!("the result is not {tool}'s output")))
}

/// A typed output's part back as JSON, as the server sent it.
fn as_value(part: &impl serde::Serialize) -> Result<Value, ClientError> {
    serde_json::to_value(part)
        .map_err(|_| ClientError::Verification("a result did not serialize".into()))
}

/// A refusal's text: its fixed code and message (`ErrorCode::to_json`).
#[derive(Default, serde::Deserialize)]
struct Refusal {
    code: Option<String>,
    #[serde(default)]
    message: String,
}

/// The artifact `id` names in a `list_artifacts` result, or its one artifact when `id` is `None`.
fn pick_artifact(list: &Value, id: Option<&str>) -> Result<outputs::ListedArtifact, ClientError> {
    let items = typed::<outputs::ArtifactList>("list_artifacts", list)?.artifacts;
    match id {
        Some(id) => items.into_iter().find(|a| a.artifact_id == id),
        None if items.len() == 1 => items.into_iter().next(),
        None => {
            return Err(ClientError::Verification(format!(
                "{} artifacts: pass an id",
                items.len()
            )));
        }
    }
    .ok_or_else(|| ClientError::Verification("no such artifact".into()))
}

/// Where a chunk of an artifact must be: its offset, its whole length, whether it is the last.
struct ChunkAt {
    offset: u64,
    bytes: u64,
    last: bool,
}

/// The bytes of one `read_artifact` result, checked: at `at.offset`, base64 that decodes, its
/// digest as announced, whole (the server cuts only at the end of the file), and the end exactly
/// when it is the last chunk.
fn checked_chunk(r: &outputs::ArtifactChunk, at: ChunkAt) -> Result<Vec<u8>, ClientError> {
    use base64::Engine as _;
    if r.offset != at.offset {
        return Err(ClientError::Verification(
            "chunk offset does not follow".into(),
        ));
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(&r.data)
        .map_err(|_| ClientError::Verification("chunk is not base64".into()))?;
    if r.chunk_sha256 != runread_core::sha256_hex(&data) {
        return Err(ClientError::Verification("chunk sha256 mismatch".into()));
    }
    if data.len() as u64 != at.bytes || r.eof != at.last {
        return Err(ClientError::Verification(
            "artifact did not end where announced".into(),
        ));
    }
    Ok(data)
}
