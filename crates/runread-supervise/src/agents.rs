//! The agents `runread run` supervises: what it knows of each one, as one [`SupervisedAgent`] in
//! that agent's folder (`pi/`, `claude/`, `codex/`, `gemini/`, `copilot/`,
//! `opencode/`), and the one place each is registered
//! ([`supervised`], [`SUPERVISED`]). Nothing outside the agents' folders and this registry names
//! an agent (enforced by `crates/runread/tests/suite/architecture.rs`): the driver asks the
//! [`Machine`](crate::machine::Machine) an agent's folder made for the invocation.
//!
//! A new agent here is a folder with its event stream (`events`), its state machine (`state`),
//! its command line (`args`), its proof (`proof`), and its `Machine` over them — and a line in
//! [`supervised`] and [`SUPERVISED`]. An agent read only passively would have no folder here:
//! [`supervised`] would answer `None` for it, and `runread run` would never recognise it.

use runread_core::Agent;

use crate::machine::SupervisedAgent;

/// Every supervised agent, in the order `runread run`'s help names them.
pub const SUPERVISED: [&dyn SupervisedAgent; 6] = [
    &crate::pi::Pi,
    &crate::claude::ClaudeCode,
    &crate::codex::Codex,
    &crate::gemini::GeminiCli,
    &crate::copilot::CopilotCli,
    &crate::opencode::OpenCode,
];

/// What `runread run` knows of `agent`: the one registration of each agent in this crate.
/// `None`: runread reads the agent only passively, from its session files.
pub fn supervised(agent: Agent) -> Option<&'static dyn SupervisedAgent> {
    match agent {
        Agent::Pi => Some(&crate::pi::Pi),
        Agent::Claude => Some(&crate::claude::ClaudeCode),
        Agent::Codex => Some(&crate::codex::Codex),
        Agent::Gemini => Some(&crate::gemini::GeminiCli),
        Agent::Copilot => Some(&crate::copilot::CopilotCli),
        Agent::OpenCode => Some(&crate::opencode::OpenCode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::VersionAnswer;

    #[test]
    fn every_agent_is_supervised_once_and_answers_in_a_form_of_its_own() {
        let supervised_agents: Vec<Agent> = Agent::ALL
            .into_iter()
            .filter(|a| supervised(*a).is_some())
            .collect();
        assert_eq!(SUPERVISED.len(), supervised_agents.len());
        for (a, s) in supervised_agents.into_iter().zip(SUPERVISED) {
            assert_eq!(s.agent(), a);
            assert_eq!(supervised(a).map(|s| s.agent()), Some(a));
            assert!(!s.npm_packages().is_empty());
            // A bare answer is told by the program's name: only the agent answering so has one.
            assert_eq!(
                s.program_names().is_empty(),
                s.version_answer() != VersionAnswer::Bare
            );
        }
        // A bare answer is told by the package, else by the program's name: no two agents
        // answering bare go by one name.
        let bare: Vec<&str> = SUPERVISED
            .iter()
            .filter(|s| s.version_answer() == VersionAnswer::Bare)
            .flat_map(|s| s.program_names().iter().copied())
            .collect();
        let distinct: std::collections::HashSet<&str> = bare.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            bare.len(),
            "two agents answering a bare version by one name cannot be told apart"
        );
    }
}
