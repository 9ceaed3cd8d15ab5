//! The coding agents runread reads, as one typed value. Which agent wrote a session is decided
//! once, when its directory is configured or its session is stored, and is an [`Agent`] from then
//! on: the store keeps its name ([`Agent::as_str`]) and fails closed on any other. What an agent's
//! records hold, and how to read them, is `runread-sessions`' business, not this value's.

use serde::{Deserialize, Serialize};

/// The coding agents runread reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Agent {
    /// Pi (`@mariozechner/pi-coding-agent` to 0.73, `@earendil-works/pi-coding-agent` since
    /// 0.74), session files v1–v3.
    Pi,
    /// Claude Code, `projects/<escaped cwd>/<session id>.jsonl`.
    Claude,
    /// OpenAI's Codex CLI, `sessions/YYYY/MM/DD/rollout-…-<thread id>.jsonl`.
    Codex,
    /// Google's Gemini CLI, `tmp/<project>/chats/session-<minute>-<id8>.jsonl` (read passively).
    Gemini,
    /// GitHub Copilot CLI, `session-state/<session id>/events.jsonl` (read passively).
    Copilot,
    /// OpenCode (`opencode-ai`), every session in its SQLite database `opencode.db`.
    #[serde(rename = "opencode")]
    OpenCode,
}

impl Agent {
    pub const ALL: [Agent; 6] = [
        Agent::Pi,
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Copilot,
        Agent::OpenCode,
    ];

    /// The name stored with a session, written in the journal and shown to owners and readers
    /// (`pi`, `claude`, `codex`, `gemini`, `copilot`, `opencode`).
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Pi => "pi",
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Copilot => "copilot",
            Agent::OpenCode => "opencode",
        }
    }

    /// The agent's product name, for people (`Pi`, `Claude Code`, `Codex`, `Gemini CLI`,
    /// `Copilot CLI`, `OpenCode`).
    pub fn product(self) -> &'static str {
        match self {
            Agent::Pi => "Pi",
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Gemini => "Gemini CLI",
            Agent::Copilot => "Copilot CLI",
            Agent::OpenCode => "OpenCode",
        }
    }

    /// The oldest and the newest version of the agent runread's tests run for real (the range
    /// docs/agents.md states). Any version is read; one outside it says so (`versionTested`).
    pub fn tested_versions(self) -> (&'static str, &'static str) {
        match self {
            Agent::Pi => ("0.73.1", "1.6.0"),
            Agent::Claude => ("2.1.328", "2.1.332"),
            Agent::Codex => ("0.171.0", "0.171.0"),
            Agent::Gemini => ("0.61.0", "0.61.0"),
            Agent::Copilot => ("1.0.102", "1.0.102"),
            Agent::OpenCode => ("1.18.33", "1.18.33"),
        }
    }

    /// Whether `version` (`X.Y.Z`, anything after a `-` or `+` ignored) lies within
    /// [`Agent::tested_versions`]; `false` for what is not such a version: nothing untested is
    /// said to be tested.
    pub fn version_tested(self, version: &str) -> bool {
        let (oldest, newest) = self.tested_versions();
        match (
            version_numbers(version),
            version_numbers(oldest),
            version_numbers(newest),
        ) {
            (Some(v), Some(lo), Some(hi)) => lo <= v && v <= hi,
            _ => false,
        }
    }

    /// The agent a stored name names; `None` for any other string.
    pub fn parse(s: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// `event_type` when a log may name it: a short identifier (1 to
/// [`crate::limits::REPORTED_EVENT_TYPE_MAX_BYTES`] bytes of `[a-z0-9_./-]`), which can carry
/// nothing of what an agent wrote but the name of its event; `None` for anything else. The one
/// rule for what a log names of an agent's own records: an event's type, a session line's type,
/// and the agent version a session file records.
pub fn reportable_event_type(event_type: &str) -> Option<&str> {
    let ok = (1..=crate::limits::REPORTED_EVENT_TYPE_MAX_BYTES).contains(&event_type.len())
        && event_type
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'/' | b'-'));
    ok.then_some(event_type)
}

/// `X.Y.Z` as numbers, compared in order; `None` for anything else.
fn version_numbers(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            None
        } else {
            p.parse::<u64>().ok()
        }
    });
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_name_parses_back_to_its_agent_and_nothing_else_does() {
        for a in Agent::ALL {
            assert_eq!(Agent::parse(a.as_str()), Some(a));
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
        for other in ["", "Pi", "claude-code", "codex ", "PI"] {
            assert_eq!(Agent::parse(other), None, "{other:?}");
        }
    }

    #[test]
    fn an_event_type_is_reportable_only_as_a_short_identifier() {
        let max = crate::limits::REPORTED_EVENT_TYPE_MAX_BYTES;
        for ok in ["turn.started", "rate_limit_event", "a/b-c.d_9"] {
            assert_eq!(reportable_event_type(ok), Some(ok));
        }
        let at_bound = "a".repeat(max);
        assert_eq!(reportable_event_type(&at_bound), Some(at_bound.as_str()));
        assert_eq!(reportable_event_type(&"a".repeat(max + 1)), None);
        for not in ["", "Turn", "a b", "sk-ant-XYZ", "a\n", "é", "a\"b", "{}"] {
            assert_eq!(reportable_event_type(not), None, "{not:?}");
        }
    }

    #[test]
    fn a_version_is_tested_only_within_the_tested_range() {
        for a in Agent::ALL {
            let (oldest, newest) = a.tested_versions();
            assert!(a.version_tested(oldest), "{a} {oldest}");
            assert!(a.version_tested(newest), "{a} {newest}");
        }
        assert!(Agent::Pi.version_tested("0.73.5"));
        assert!(Agent::Pi.version_tested("1.0.0"));
        assert!(!Agent::Pi.version_tested("1.6.1"), "newer than the newest");
        assert!(!Agent::Pi.version_tested("0.73.0"), "older than the oldest");
        assert!(!Agent::Codex.version_tested("0.999.0"));
        assert!(!Agent::Codex.version_tested("0.171.1"));
        assert!(Agent::Codex.version_tested("0.171.0-linux-x64"));
        for not_a_version in ["", "1.6", "1.6.0.1", "v1.6.0", "1..0", "x.y.z"] {
            assert!(
                !Agent::Pi.version_tested(not_a_version),
                "{not_a_version:?}"
            );
        }
    }
}
