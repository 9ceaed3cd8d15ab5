//! Every agent recorded with its reported stream (Claude Code, Codex, Gemini CLI, Copilot CLI:
//! `RECORDED_AGENTS`), one
//! suite, through MCP with a real client: each run's answer is exactly what the agent reported
//! for the step that sent its prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::time::Duration;

use runread_testkit::RECORDED_AGENTS;

use crate::support;

/// A known secret none of these recordings holds.
const SECRET: &str = "sk-recorded-TEST-0123456789abcdef";

/// Every run of every recording but `secrets` (served masked; each agent's suite tests it
/// apart), placed alone and read over MCP, is the answer the agent reported, or `missing` and no
/// text; for an agent whose file does not record how a response ended (Gemini CLI), and a step
/// cut off (Copilot CLI's length cut-offs), `unknown` and no text, whatever the agent reported.
/// Every answer says whether its truncation is known: for the agents whose files record how a
/// response ended, and only for them.
#[tokio::test]
async fn every_answer_read_over_mcp_is_what_its_agent_reported() {
    for recorded in RECORDED_AGENTS {
        for fixture in recorded
            .fixtures
            .iter()
            .copied()
            .filter(|f| *f != "secrets")
        {
            let at = format!("{} {fixture}", recorded.agent);
            let steps = (recorded.steps)(fixture);
            let s = support::serve(
                |env| drop((recorded.place)(env, fixture, Duration::from_secs(60))),
                SECRET,
            )
            .await;
            for run in s.runs() {
                let (c, target) = s.client(&run).await;
                let prompt = runread_testkit::prompt(&run).unwrap();
                let got = c.read_final_answer(&target, Some(7), |_| {}).await.unwrap();
                // Whether `truncated` can be believed: the agent's records say how an answer ended.
                assert_eq!(
                    got.first["truncationKnown"],
                    serde_json::json!(recorded.end_recorded),
                    "{at}: {prompt}"
                );
                let step = runread_testkit::step_for(&steps, &prompt);
                match step.reported.answer() {
                    _ if !recorded.end_recorded || step.cut_off => {
                        assert_eq!(got.state, "unknown", "{at}: {prompt}");
                        assert_eq!(got.text, None, "{at}: {prompt}");
                    }
                    Some(text) => {
                        assert_eq!(got.state, "available", "{at}: {prompt}");
                        assert_eq!(got.text.as_deref(), Some(text), "{at}: {prompt}");
                    }
                    // An interrupt the records do not mark leaves the run unknown (or running,
                    // as the session's last).
                    None if !recorded.interrupt_recorded
                        && step.reported == runread_testkit::Reported::Interrupted =>
                    {
                        assert_ne!(got.state, "available", "{at}: {prompt}");
                        assert_eq!(got.text, None, "{at}: {prompt}");
                    }
                    None => {
                        assert_eq!(got.state, "missing", "{at}: {prompt}");
                        assert_eq!(got.text, None, "{at}: {prompt}");
                    }
                }
            }
        }
    }
}
