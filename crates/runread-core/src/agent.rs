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
    /// Pi (`@mariozechner/pi-coding-agent`), session files v1–v3.
    Pi,
    /// Claude Code, `projects/<escaped cwd>/<session id>.jsonl`.
    Claude,
    /// OpenAI's Codex CLI, `sessions/YYYY/MM/DD/rollout-…-<thread id>.jsonl`.
    Codex,
}

impl Agent {
    pub const ALL: [Agent; 3] = [Agent::Pi, Agent::Claude, Agent::Codex];

    /// The name stored with a session, written in the journal and shown to owners and readers
    /// (`pi`, `claude`, `codex`).
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Pi => "pi",
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }

    /// The agent's product name, for people (`Pi`, `Claude Code`, `Codex`).
    pub fn product(self) -> &'static str {
        match self {
            Agent::Pi => "Pi",
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
        }
    }

    /// The agent a stored name names; `None` for any other string.
    pub fn parse(s: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.as_str() == s)
    }
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
}
