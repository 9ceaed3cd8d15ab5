//! `runread-bench echo-server`: a stock rmcp 3.11 Streamable HTTP server that answers every tool
//! call with a fixed `CallToolResult` held in memory (the bytes runread returned for the same
//! request). Stateless, JSON responses (rmcp's cheapest correct mode for MCP 2026-07-28), served
//! by `axum::serve` with TCP_NODELAY: the protocol stack's own ceiling, without runread's guards,
//! key admission, gate, store or labels.
//!
//! `runread-bench durable-echo-server` is the same server plus, per call, exactly the durable work
//! runread's gate does ([`crate::durable`]), on one blocking thread as runread's gate does it:
//! the limit durability sets, which runread can approach but not pass.
//!
//! The results are one for every call (`--result FILE`: a `CallToolResult`), or one per call
//! (`--results FILE`: a JSON object from `tool` or `read_artifact@OFFSET` to a `CallToolResult`,
//! as `runread-bench artifact-record` writes them), so runread's own client can read an artifact
//! from the echo with every check it makes of runread.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};

use crate::durable::Durable;

/// What the echo answers.
pub enum Results {
    /// The same result for every call.
    One(CallToolResult),
    /// By `tool`, or `read_artifact@OFFSET` for an artifact's chunks.
    ByCall(HashMap<String, CallToolResult>),
}

impl Results {
    pub fn one(file: &str) -> Results {
        let raw = std::fs::read(file).expect("read result file");
        Results::One(serde_json::from_slice(&raw).expect("result file is a CallToolResult"))
    }

    pub fn by_call(file: &str) -> Results {
        let raw = std::fs::read(file).expect("read results file");
        Results::ByCall(serde_json::from_slice(&raw).expect("results file maps calls to results"))
    }

    fn of(&self, request: &CallToolRequestParams) -> Option<&CallToolResult> {
        match self {
            Results::One(r) => Some(r),
            Results::ByCall(map) => {
                let offset = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("offset"))
                    .and_then(|o| o.as_u64());
                match offset {
                    Some(o) => map.get(&format!("{}@{o}", request.name)),
                    None => map.get(request.name.as_ref()),
                }
            }
        }
    }
}

#[derive(Clone)]
struct Echo {
    results: Arc<Results>,
    durable: Option<Arc<Durable>>,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-echo", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), "object".into());
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Returns a fixed result from memory.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(durable) = &self.durable {
            let durable = durable.clone();
            let tool = request.name.to_string();
            tokio::task::spawn_blocking(move || durable.record(&tool))
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
                .map_err(|e| ErrorData::internal_error(e, None))?;
        }
        match self.results.of(&request) {
            Some(r) => Ok(r.clone().into()),
            None => Err(ErrorData::invalid_params(
                "no result recorded for this call",
                None,
            )),
        }
    }
}

/// Serves `results` on `listen`, with `durable`'s writes per call if given.
pub fn run(listen: SocketAddr, results: Results, durable: Option<Durable>) {
    let echo = Echo {
        results: Arc::new(results),
        durable: durable.map(Arc::new),
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async move {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None);
        let svc = StreamableHttpService::new(
            move || Ok(echo.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let app = axum::Router::new().nest_service("/mcp", svc);
        let listener = tokio::net::TcpListener::bind(listen).await.expect("bind");
        println!("listening {}", listener.local_addr().expect("addr"));
        use axum::serve::ListenerExt as _;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await.expect("serve");
    });
}

/// `durable-echo-server`'s store: `store` (a copy of runread's home store), falling back to
/// `tool`'s records for the echo's own tool.
pub fn durable(store: &str, tool: &str) -> Durable {
    let d = Durable::open(Path::new(store), tool).expect("durable echo store");
    eprintln!("durable echo: records of {:?}", d.tools());
    d
}
