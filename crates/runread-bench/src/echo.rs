//! `runread-bench echo-server`: a stock rmcp 3.11 Streamable HTTP server with one tool, `echo`,
//! that returns a fixed `CallToolResult` held in memory (the bytes runread's `read_final_answer`
//! returned for the same request). Stateless, JSON responses (rmcp's cheapest correct mode for
//! MCP 2026-07-28), served by `axum::serve` with TCP_NODELAY: the protocol stack's own ceiling,
//! without runread's guards, key admission, gate, store or labels.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};

#[derive(Clone)]
struct Echo {
    result: Arc<CallToolResult>,
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
        _request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::clone(&self.result).into())
    }
}

pub fn run(listen: SocketAddr, result_file: &str) {
    let raw = std::fs::read(result_file).expect("read result file");
    let result: CallToolResult =
        serde_json::from_slice(&raw).expect("result file is a CallToolResult");
    let echo = Echo {
        result: Arc::new(result),
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
