//! The client configurations an owner pastes, one place for all of them: what `runread grant`,
//! `runread reader add` and the console print (and the README and docs/clients.md show, and
//! `tests/agents/readers.py` hands to the real clients).
//!
//! Each config reads the key from the environment variable [`KEY_ENV`] where the client can, so
//! that no config file, command line or shell history holds it: the key itself lives in one file
//! only the owner can read ([`ClientConfigs::store_key`]), and the shell that starts the client
//! exports it ([`ClientConfigs::export_key`]).

use serde_json::{Value, json};

use crate::KEY_HEADER;

/// The environment variable every printed config reads the key from.
pub const KEY_ENV: &str = "RUNREAD_KEY";

/// Ready-to-paste configurations for one key on one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfigs {
    /// `{"mcpServers": …}` with the header's value `${RUNREAD_KEY}`: Claude Code's
    /// `--mcp-config` / `.mcp.json` (it expands the variable from its environment when it
    /// connects), and other clients that expand `${VAR}` in header values.
    pub mcp_servers: Value,
    /// The same `mcpServers` JSON with the key itself in the header, for a client that takes
    /// only literal header values.
    pub mcp_servers_literal: Value,
    /// `claude mcp add-json runread '…'` for Claude Code: single quotes, so the shell leaves
    /// `${RUNREAD_KEY}` to Claude Code, which stores it as written and expands it at each start.
    pub claude_command: String,
    /// The `[mcp_servers.runread]` table of Codex's `config.toml`: `env_http_headers` names the
    /// variable Codex reads the header's value from.
    pub codex_toml: String,
    /// Pi's `~/.pi/agent/mcp.json` (Pi expands `${RUNREAD_KEY}` when it connects; `"exposure":
    /// "direct"` declares runread's tools to Pi's model like its built-in tools).
    pub pi_json: Value,
    /// `pi mcp add …`, which writes the same entry into Pi's `mcp.json`.
    pub pi_command: String,
    /// Where [`Self::store_key`] writes the key: `~/.config/runread/<reader>.key`.
    pub key_file: String,
    /// The one shell line that stores the key in [`Self::key_file`], readable by the owner only.
    pub store_key: String,
    /// The shell line that puts the stored key into [`KEY_ENV`] for the client started from it.
    pub export_key: String,
}

/// Longest file name (without `.key`) a reader's name becomes in [`key_file_for`].
pub const KEY_FILE_NAME_MAX_CHARS: usize = 64;

/// `~/.config/runread/<name>.key` for the reader `reader`: its name with every character a shell
/// or a path would read specially (anything but ASCII letters, digits, `-`, `_`, `.`) as `-`,
/// at most [`KEY_FILE_NAME_MAX_CHARS`] characters; `reader` when nothing of it is left or it
/// would be a hidden file.
pub fn key_file_for(reader: &str) -> String {
    let safe: String = reader
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(KEY_FILE_NAME_MAX_CHARS)
        .collect();
    let name = if safe.is_empty() || safe.starts_with('.') || safe.chars().all(|c| c == '-') {
        "reader"
    } else {
        safe.as_str()
    };
    format!("~/.config/runread/{name}.key")
}

/// The configurations for `key` of the reader named `reader` at `url` (the MCP endpoint,
/// `http://…/mcp`). `key` appears only in [`ClientConfigs::store_key`] and
/// [`ClientConfigs::mcp_servers_literal`].
pub fn for_key(url: &str, key: &str, reader: &str) -> ClientConfigs {
    let var = format!("${{{KEY_ENV}}}");
    let key_file = key_file_for(reader);
    let url_json = Value::from(url);
    ClientConfigs {
        mcp_servers: json!({"mcpServers": {"runread": {"type": "http", "url": url,
                                                       "headers": {KEY_HEADER: var}}}}),
        mcp_servers_literal: json!({"mcpServers": {"runread": {"type": "http", "url": url,
                                                               "headers": {KEY_HEADER: key}}}}),
        // Written out, not serialized, to keep Claude Code's own key order (type, url, headers).
        // The URL is the server's own (`--url`, a `http://` address runread printed): no `'`.
        claude_command: format!(
            "claude mcp add-json runread '{{\"type\":\"http\",\"url\":{url_json},\"headers\":{{\"{KEY_HEADER}\":\"{var}\"}}}}'"
        ),
        codex_toml: format!(
            "[mcp_servers.runread]\nurl = \"{url}\"\nenv_http_headers = {{ \"{KEY_HEADER}\" = \"{KEY_ENV}\" }}\n"
        ),
        pi_json: json!({"mcpServers": {"runread": {"url": url, "headers": {KEY_HEADER: var},
                                                   "exposure": "direct"}}}),
        pi_command: format!(
            "pi mcp add runread --url {url} --header '{KEY_HEADER}={var}' --exposure direct"
        ),
        // A subshell, so the owner's shell keeps its umask; the key is hex, safe in '…'.
        store_key: format!(
            "(umask 077; mkdir -p ~/.config/runread && printf '%s\\n' '{key}' > {key_file})"
        ),
        export_key: export_line(&key_file),
        key_file,
    }
}

/// `export RUNREAD_KEY="$(cat WORD)"`: `word` as the shell reads it (`~/…` unquoted, so that the
/// shell expands it).
fn export_line(word: &str) -> String {
    format!("export {KEY_ENV}=\"$(cat {word})\"")
}

/// The `export` line for a key runread wrote to `path` (`--key-file`): the path single-quoted
/// unless every character of it is one the shell reads as itself.
pub fn export_from(path: &str) -> String {
    let plain = !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+' | ','));
    if plain {
        export_line(path)
    } else {
        export_line(&format!("'{}'", path.replace('\'', r"'\''")))
    }
}

/// What an owner serving `--protocol modern` must add to Codex's config: Codex speaks a dated
/// protocol version unless told otherwise.
pub const CODEX_MODERN_NOTE: &str = "Codex speaks a dated protocol version by default, which \
`runread serve` answers; if you serve with `--protocol modern`, also put `[features]` \
`mcp_2026_07_28 = true` in Codex's config.toml.";

/// Claude Code started once without the variable: it sends the text `${RUNREAD_KEY}`, is refused,
/// and remembers the server as needing authentication, leaving it out of its sessions for a while
/// (seen with Claude Code 2.1.328; `tests/agents/readers.py` checks it).
pub const CLAUDE_UNSET_NOTE: &str = "Start Claude Code from a shell that exports RUNREAD_KEY; if it once started without it, delete ~/.claude/mcp-needs-auth-cache.json (in CLAUDE_CONFIG_DIR when set) after exporting the key.";

/// For a client that cannot read a header's value from the environment or a file.
pub const LITERAL_NOTE: &str = "A client that takes only literal header values cannot read the \
key from the environment: give it the key itself as the x-runread-key header (the mcpServers \
JSON with the key in place, `--json`'s clientConfigLiteral), in a config file only you can read.";

/// What runread answers a client that sends the key as `Authorization: Bearer …`.
pub const AUTHORIZATION_NOTE: &str = "Send the key as the x-runread-key header: runread refuses \
an Authorization header on this endpoint (Codex's bearer_token_env_var sends one).";

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:7077/mcp";

    #[test]
    fn only_the_store_line_and_the_literal_json_hold_the_key() {
        let key = "a".repeat(64);
        let c = for_key(URL, &key, "claude-code");
        assert_eq!(
            c.mcp_servers["mcpServers"]["runread"]["headers"]["x-runread-key"],
            "${RUNREAD_KEY}"
        );
        assert_eq!(
            c.mcp_servers_literal["mcpServers"]["runread"]["headers"]["x-runread-key"],
            key.as_str()
        );
        assert_eq!(
            c.claude_command,
            "claude mcp add-json runread '{\"type\":\"http\",\"url\":\"http://127.0.0.1:7077/mcp\",\
             \"headers\":{\"x-runread-key\":\"${RUNREAD_KEY}\"}}'"
        );
        assert_eq!(
            c.codex_toml,
            "[mcp_servers.runread]\nurl = \"http://127.0.0.1:7077/mcp\"\n\
             env_http_headers = { \"x-runread-key\" = \"RUNREAD_KEY\" }\n"
        );
        assert_eq!(
            c.pi_command,
            "pi mcp add runread --url http://127.0.0.1:7077/mcp --header \
             'x-runread-key=${RUNREAD_KEY}' --exposure direct"
        );
        assert_eq!(
            c.store_key,
            format!(
                "(umask 077; mkdir -p ~/.config/runread && printf '%s\\n' '{key}' > \
                 ~/.config/runread/claude-code.key)"
            )
        );
        assert_eq!(
            c.export_key,
            "export RUNREAD_KEY=\"$(cat ~/.config/runread/claude-code.key)\""
        );
        for text in [
            c.mcp_servers.to_string(),
            c.claude_command,
            c.codex_toml,
            c.pi_json.to_string(),
            c.pi_command,
            c.export_key,
        ] {
            assert!(!text.contains(&key), "{text}");
        }
    }

    #[test]
    fn a_written_key_file_is_quoted_only_when_the_shell_needs_it() {
        assert_eq!(
            export_from("/home/me/.config/runread/ci.key"),
            "export RUNREAD_KEY=\"$(cat /home/me/.config/runread/ci.key)\""
        );
        assert_eq!(
            export_from("/home/my keys/it's.key"),
            "export RUNREAD_KEY=\"$(cat '/home/my keys/it'\\''s.key')\""
        );
    }

    #[test]
    fn a_reader_name_becomes_a_plain_file_name() {
        assert_eq!(key_file_for("codex"), "~/.config/runread/codex.key");
        assert_eq!(
            key_file_for("my bot's $(x)/y"),
            "~/.config/runread/my-bot-s---x--y.key"
        );
        assert_eq!(key_file_for(".."), "~/.config/runread/reader.key");
        assert_eq!(key_file_for("éé"), "~/.config/runread/reader.key");
        let at = "a".repeat(KEY_FILE_NAME_MAX_CHARS);
        assert_eq!(key_file_for(&at), format!("~/.config/runread/{at}.key"));
        assert_eq!(
            key_file_for(&format!("{at}b")),
            format!("~/.config/runread/{at}.key")
        );
    }
}
