//! What the door's layers hand each other and the client: the admitted key a request carries,
//! and the one refusal response before MCP dispatch.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;

use runread_core::ErrorCode;
use runread_service::KeyContext;

/// The key's admission, put into the request by the key layer (`server::key_layer`) and read by the body guard (to
/// bound body readers per key) and the handler.
#[derive(Clone)]
pub(crate) struct AdmittedKey(pub(crate) Arc<KeyContext>);

/// An HTTP refusal before MCP dispatch: a JSON-RPC error (id null) carrying the fixed code. The
/// connection is closed after it (`Connection: close`): a client refused at the door holds a
/// connection slot for one request at most, and must queue again behind the others to retry.
pub fn refusal(code: ErrorCode) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32001, "message": code.message(), "data": {"code": code.as_str()}}
    });
    Response::builder()
        .status(code.http_status())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CONNECTION, "close")
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}
