//! The client configurations an owner pastes, one place for all of them: what `runread grant`
//! prints (and the README and docs/clients.md show, and `tests/agents/readers.py` hands to the real clients).

use serde_json::{Value, json};

use crate::KEY_HEADER;

/// Ready-to-paste configurations for one key on one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfigs {
    /// `{"mcpServers": …}`: Claude Code's `--mcp-config` / `.mcp.json`, Claude Desktop-style
    /// clients, Cursor, the Inspector's config file.
    pub mcp_servers: Value,
    /// `claude mcp add …` for Claude Code.
    pub claude_command: String,
    /// The `[mcp_servers.runread]` table of Codex's `config.toml`.
    pub codex_toml: String,
}

/// The configurations for `key` at `url` (the MCP endpoint, `http://…/mcp`).
pub fn for_key(url: &str, key: &str) -> ClientConfigs {
    ClientConfigs {
        mcp_servers: json!({"mcpServers": {"runread": {"type": "http", "url": url,
                                                       "headers": {KEY_HEADER: key}}}}),
        claude_command: format!(
            "claude mcp add --transport http runread {url} --header \"{KEY_HEADER}: {key}\""
        ),
        codex_toml: format!(
            "[mcp_servers.runread]\nurl = \"{url}\"\nhttp_headers = {{ \"{KEY_HEADER}\" = \"{key}\" }}\n"
        ),
    }
}

/// What an owner serving `--protocol modern` must add to Codex's config: Codex speaks a dated
/// protocol version unless told otherwise.
pub const CODEX_MODERN_NOTE: &str = "Codex speaks a dated protocol version by default, which \
`runread serve` answers; if you serve with `--protocol modern`, also put `[features]` \
`mcp_2026_07_28 = true` in Codex's config.toml.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_config_names_the_url_and_the_key_and_parses_as_its_client_does() {
        let c = for_key("http://127.0.0.1:7077/mcp", &"a".repeat(64));
        assert_eq!(
            c.mcp_servers["mcpServers"]["runread"]["headers"]["x-runread-key"],
            "a".repeat(64)
        );
        assert_eq!(
            c.claude_command,
            format!(
                "claude mcp add --transport http runread http://127.0.0.1:7077/mcp --header \"x-runread-key: {}\"",
                "a".repeat(64)
            )
        );
        assert!(
            c.codex_toml
                .starts_with("[mcp_servers.runread]\nurl = \"http://127.0.0.1:7077/mcp\"\n")
        );
        assert!(c.codex_toml.contains(&format!(
            "http_headers = {{ \"x-runread-key\" = \"{}\" }}",
            "a".repeat(64)
        )));
    }
}
