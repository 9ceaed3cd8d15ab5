//! The run in the chat: the MCP Apps view (`io.modelcontextprotocol/ui`, stable 2026-01-26).
//!
//! A host that announces the extension in the request's client capabilities sees
//! `read_final_answer` and `read_history` link one static view, `ui://runread/run`, and may read
//! it; a client that does not announce it sees exactly the tools it saw before and no resource.
//! The view is a page runread ships (`view/run.html`): it holds no run data — what it shows
//! reaches it only as the tool result the host hands it — inserts agent text only as text, and
//! asks the host for the rest of an answer through the reader's own read tools, which admission
//! judges as any other call. Its resource declares no remote domain (`_meta.ui.csp` empty), so a
//! host's policy for it loads nothing from outside.
//!
//! On 2026-07-28 every request carries its client's capabilities. The dated versions are served
//! without sessions here: what a client announced at `initialize` does not reach a later call,
//! so such a client sees no view.

use rmcp::model::{ClientCapabilities, MetaObject, ResourceContents, Tool};
use serde_json::{Value, json};

use runread_core::Feature;
use runread_service::KeyContext;

/// The extension's identifier in capabilities.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The view's one resource.
pub const VIEW_URI: &str = "ui://runread/run";
/// The MIME type of an MCP Apps view.
pub const VIEW_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The tools that link the view: what it renders.
pub const VIEW_TOOLS: &[&str] = &[
    runread_service::tools::READ_FINAL_ANSWER,
    runread_service::tools::READ_HISTORY,
];
/// The page itself: static, inline script and style only, no data.
pub const VIEW_HTML: &str = include_str!("view/run.html");

/// Whether `caps` announce the extension with the view's MIME type.
pub fn announced(caps: Option<&ClientCapabilities>) -> bool {
    caps.and_then(|c| c.extensions.as_ref())
        .and_then(|e| e.get(EXTENSION_ID))
        .and_then(|settings| settings.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(VIEW_MIME_TYPE)))
}

/// `tool`, linking the view when it renders it: the canonical `_meta.ui.resourceUri`, and the
/// flat key hosts of the first releases read.
pub fn linked(tool: Tool) -> Tool {
    if !VIEW_TOOLS.contains(&tool.name.as_ref()) {
        return tool;
    }
    let mut meta = serde_json::Map::new();
    meta.insert("ui".into(), json!({ "resourceUri": VIEW_URI }));
    meta.insert("ui/resourceUri".into(), Value::String(VIEW_URI.into()));
    tool.with_meta(MetaObject(meta))
}

/// Whether the reader `key` admits may read the view: it holds a live grant of a feature the
/// view renders. Missing and not granted are refused alike by the caller.
pub fn may_read(key: &KeyContext, now_ms: i64) -> bool {
    key.live_features(now_ms)
        .iter()
        .any(|f| matches!(f, Feature::FinalAnswer | Feature::History))
}

/// The view's contents for `resources/read`: one HTML document whose policy allows no remote
/// domain.
pub fn contents() -> ResourceContents {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "ui".into(),
        json!({
            "csp": { "connectDomains": [], "resourceDomains": [] },
            "prefersBorder": true,
        }),
    );
    ResourceContents::text(VIEW_HTML, VIEW_URI)
        .with_mime_type(VIEW_MIME_TYPE)
        .with_meta(MetaObject(meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap_or_default()
    }

    #[test]
    fn only_the_extension_with_the_views_mime_type_is_announcing_it() {
        assert!(announced(Some(&caps(
            json!({"extensions": {EXTENSION_ID: {"mimeTypes": [VIEW_MIME_TYPE]}}})
        ))));
        for not in [
            json!({}),
            json!({"extensions": {}}),
            json!({"extensions": {EXTENSION_ID: {}}}),
            json!({"extensions": {EXTENSION_ID: {"mimeTypes": ["text/html"]}}}),
            json!({"extensions": {"io.modelcontextprotocol/tasks": {"mimeTypes": [VIEW_MIME_TYPE]}}}),
            json!({"experimental": {EXTENSION_ID: {"mimeTypes": [VIEW_MIME_TYPE]}}}),
        ] {
            assert!(!announced(Some(&caps(not.clone()))), "{not}");
        }
        assert!(!announced(None));
    }

    #[test]
    fn the_page_holds_no_remote_reference() {
        let lower = VIEW_HTML.to_ascii_lowercase();
        for remote in ["http://", "https://", "//cdn", "src=\"//", "@import"] {
            assert!(!lower.contains(remote), "{remote}");
        }
    }
}
