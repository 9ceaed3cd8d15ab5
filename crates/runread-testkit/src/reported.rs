//! What the real agent reported for each step of a committed fixture, read with plain JSON from
//! the harness's `manifest.json` and the step's recorded stream (`events-N.jsonl`) — never with
//! runread's own parsers, so that it stays an oracle independent of the code under test.
//!
//! - Claude Code (`fixtures/claude`, stream-json): the step's last `result` event. None, or one
//!   of subtype `error_during_execution`, is an interrupted step; one with `is_error` a failed
//!   step (its `result` text is the message); otherwise the answer is its `result`.
//! - Gemini CLI (`fixtures/gemini/0.61.0`, stream-json): the step's `result` event; `success`
//!   answers with the assistant message deltas after the step's last tool event.
//! - Copilot CLI (`fixtures/copilot/1.0.102`, `--output-format json`): an `abort` (or no `result`
//!   line) is an interrupted step, a `session.error` a failed one, else the last main-agent `assistant.message`
//!   ([`copilot_steps`]).
//! - OpenCode (`fixtures/opencode/1.18.33`, `--format json`): an `error` event is a failed step
//!   (its message); else the text events of the message whose `step_finish` says `stop` or
//!   `length` (the step's last such) are its answer; neither is an interrupted step.
//! - Codex (`fixtures/codex`, `--json`): the step's last `turn.completed` or `turn.failed`.
//!   `turn.completed` answers with the text of the stream's last `agent_message` item;
//!   `turn.failed` is a failed step with its error's message; neither is an interrupted step.

use std::path::Path;

use serde_json::Value;

/// Every committed Claude Code recording (`fixtures/claude`).
pub const CLAUDE_FIXTURES: &[&str] = &[
    "tool-then-answer",
    "edit-file",
    "continue-unicode",
    "interrupted",
    "length-cutoff",
    "provider-error",
    "stream-failures",
    "resume-fork",
    "subagent",
    "retry-timeout",
    "secrets",
    // tool-then-answer's scenario played by Claude Code 2.1.332, the newest tested
    "tool-then-answer-2.1.332",
];

/// Every committed Codex recording (`fixtures/codex`).
pub const CODEX_FIXTURES: &[&str] = &[
    "tool-then-answer",
    "code-mode",
    "edit-file",
    "continue-unicode",
    "interrupted",
    "length-cutoff",
    "provider-error",
    "stream-failures",
    "resume-fork",
    "secrets",
];

/// Every committed Gemini CLI recording (`fixtures/gemini/0.61.0`).
pub const GEMINI_FIXTURES: &[&str] = &[
    "tool-then-answer",
    "continue-unicode",
    "interrupted",
    "length-cutoff",
    "provider-error",
    "stream-failures",
    "subagent",
    "secrets",
];

/// Every committed OpenCode recording (`fixtures/opencode/1.18.33`).
pub const OPENCODE_FIXTURES: &[&str] = &[
    "tool-then-answer",
    "continue-unicode",
    "interrupted",
    "interrupted-late",
    "length-cutoff",
    "provider-error",
    "stream-failures",
    "subagent",
    "secrets",
    "fork",
];

/// An agent whose runs are committed as recordings of its real CLI, with the stream it reported
/// each step on: what the suites over every recorded agent run on.
#[derive(Clone, Copy)]
pub struct RecordedAgent {
    pub agent: runread_core::Agent,
    /// Its committed recordings.
    pub fixtures: &'static [&'static str],
    /// What it reported for each step of a recording.
    pub steps: fn(&str) -> Vec<ReportedStep>,
    /// Places a recording's session files in a test's workspace (as `Env::place_claude`).
    pub place: fn(&crate::Env, &str, std::time::Duration) -> Vec<std::path::PathBuf>,
    /// Whether a fork's file repeats its parent's runs (Claude Code) or holds only its own
    /// turns (Codex): then every step is exactly one run.
    pub fork_repeats_parent: bool,
    /// Whether its session file records how a response ended (Claude Code's `stop_reason`,
    /// Codex's `task_complete`): then a run the agent answered is `completed` with that answer.
    /// Gemini CLI's does not: such a run is `unknown`, its candidate that answer, and a failed
    /// one `unknown` too.
    pub end_recorded: bool,
    /// Whether its records mark a run it was interrupted in (Claude Code's, Codex's, Copilot
    /// CLI's abort): then such a run is `cancelled`. OpenCode's do not (the process is killed):
    /// such a run is `running` while it is the session's last, else `unknown`.
    pub interrupt_recorded: bool,
}

/// Every agent with recordings: Claude Code, Codex, Gemini CLI and Copilot CLI (Pi's fixtures record no
/// reported stream per step; `fixtures/pi` has its own suite).
pub const RECORDED_AGENTS: [RecordedAgent; 5] = [
    RecordedAgent {
        agent: runread_core::Agent::Claude,
        fixtures: CLAUDE_FIXTURES,
        steps: claude_steps,
        place: crate::Env::place_claude,
        fork_repeats_parent: true,
        end_recorded: true,
        interrupt_recorded: true,
    },
    RecordedAgent {
        agent: runread_core::Agent::Codex,
        fixtures: CODEX_FIXTURES,
        steps: codex_steps,
        place: crate::Env::place_codex,
        fork_repeats_parent: false,
        end_recorded: true,
        interrupt_recorded: true,
    },
    RecordedAgent {
        agent: runread_core::Agent::Gemini,
        fixtures: GEMINI_FIXTURES,
        steps: gemini_steps,
        place: crate::Env::place_gemini,
        fork_repeats_parent: false,
        end_recorded: false,
        interrupt_recorded: false,
    },
    RecordedAgent {
        agent: runread_core::Agent::Copilot,
        fixtures: COPILOT_FIXTURES,
        steps: copilot_steps,
        place: crate::Env::place_copilot,
        fork_repeats_parent: false,
        end_recorded: true,
        interrupt_recorded: true,
    },
    RecordedAgent {
        agent: runread_core::Agent::OpenCode,
        fixtures: OPENCODE_FIXTURES,
        steps: opencode_steps,
        place: crate::Env::place_opencode,
        fork_repeats_parent: true,
        end_recorded: true,
        interrupt_recorded: false,
    },
];

/// What the agent reported for one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reported {
    /// The step ended normally with this final answer.
    Answer(String),
    /// The agent reported that the step failed, with this message.
    Failed(String),
    /// The step stopped without the agent reporting an end (an interrupt).
    Interrupted,
}

impl Reported {
    /// The answer, if the agent reported one.
    pub fn answer(&self) -> Option<&str> {
        match self {
            Reported::Answer(text) => Some(text),
            Reported::Failed(_) | Reported::Interrupted => None,
        }
    }
}

/// One step of a recording, as the harness and the agent recorded it.
#[derive(Debug, Clone)]
pub struct ReportedStep {
    /// The prompt the step sent.
    pub prompt: String,
    /// What the agent reported.
    pub reported: Reported,
    /// The agent's exit code.
    pub exit_code: i32,
    /// Whether the harness interrupted the agent (`interrupt_after_s` set).
    pub interrupted_by_harness: bool,
    /// The session (Claude Code) or thread (Codex) the step ran in.
    pub session_id: String,
    /// The step's stream, one event a line, as written.
    pub lines: Vec<String>,
    /// The stream shows a reply the agent streamed and did not keep (Copilot CLI: a model call of
    /// a turn that succeeded and left no `assistant.message` — a length cut-off it continued by
    /// itself): what it reported is not the whole answer, and its file cannot prove it is.
    pub cut_off: bool,
}

/// The steps of Claude Code fixture `fixture`, in order.
pub fn claude_steps(fixture: &str) -> Vec<ReportedStep> {
    steps(
        &crate::claude_fixtures_dir().join(fixture),
        |events| match events.iter().rfind(|v| v["type"] == "result") {
            None => Reported::Interrupted,
            Some(r) if r["subtype"] == "error_during_execution" => Reported::Interrupted,
            Some(r) if r["is_error"] == true => {
                Reported::Failed(r["result"].as_str().unwrap_or_default().to_owned())
            }
            Some(r) => Reported::Answer(
                r["result"]
                    .as_str()
                    .expect("a successful result has its text")
                    .to_owned(),
            ),
        },
    )
}

/// The steps of Codex fixture `fixture`, in order.
pub fn codex_steps(fixture: &str) -> Vec<ReportedStep> {
    steps(&crate::codex_fixtures_dir().join(fixture), |events| {
        let end = events
            .iter()
            .rfind(|v| v["type"] == "turn.completed" || v["type"] == "turn.failed");
        match end {
            None => Reported::Interrupted,
            Some(v) if v["type"] == "turn.failed" => Reported::Failed(
                v["error"]["message"]
                    .as_str()
                    .expect("a failed turn has a message")
                    .to_owned(),
            ),
            Some(_) => Reported::Answer(
                events
                    .iter()
                    .filter(|v| {
                        v["type"] == "item.completed" && v["item"]["type"] == "agent_message"
                    })
                    .filter_map(|v| v["item"]["text"].as_str())
                    .next_back()
                    .expect("an answered turn has a message")
                    .to_owned(),
            ),
        }
    })
}

/// The steps of Gemini CLI fixture `fixture`, in order: the step's `result` event — `success`
/// answers with the assistant `message` deltas after its last tool event, joined; `error` is a
/// failed step with its error's message; none is an interrupted step.
pub fn gemini_steps(fixture: &str) -> Vec<ReportedStep> {
    steps(
        &crate::gemini_fixtures_dir().join(fixture),
        |events| match events.iter().rfind(|v| v["type"] == "result") {
            None => Reported::Interrupted,
            Some(r) if r["status"] != "success" => Reported::Failed(
                r["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ),
            Some(_) => {
                let after_tools = events
                    .iter()
                    .rposition(|v| v["type"] == "tool_use" || v["type"] == "tool_result")
                    .map_or(0, |i| i + 1);
                Reported::Answer(
                    events
                        .iter()
                        .skip(after_tools)
                        .filter(|v| v["type"] == "message" && v["role"] == "assistant")
                        .filter_map(|v| v["content"].as_str())
                        .collect(),
                )
            }
        },
    )
}

/// Every committed Copilot CLI recording (`fixtures/copilot/1.0.102`).
pub const COPILOT_FIXTURES: &[&str] = &[
    "tool-then-answer",
    "continue-unicode",
    "interrupted",
    "length-cutoff",
    "provider-error",
    "stream-failures",
    "subagent",
    "secrets",
];

/// The steps of Copilot CLI fixture `fixture`, in order: an `abort`, or no `result` line, is an
/// interrupted step;
/// a `session.error` a failed step with its message; otherwise the answer is the `content` of
/// the stream's last main-agent `assistant.message` (no `parentToolCallId`). A main-agent turn
/// whose model call succeeded (`model.call_finished` `success`) and streamed a message it never
/// kept marks the step [`ReportedStep::cut_off`].
pub fn copilot_steps(fixture: &str) -> Vec<ReportedStep> {
    let main = |v: &&Value| v["data"]["parentToolCallId"].is_null() && v["agentId"].is_null();
    let mut steps = steps(&crate::copilot_fixtures_dir().join(fixture), |events| {
        // An interrupt while the model was still thinking writes a `result` line too.
        if !events.iter().any(|v| v["type"] == "result")
            || events.iter().any(|v| v["type"] == "abort")
        {
            return Reported::Interrupted;
        }
        if let Some(e) = events.iter().rfind(|v| v["type"] == "session.error") {
            return Reported::Failed(e["data"]["message"].as_str().unwrap_or_default().to_owned());
        }
        Reported::Answer(
            events
                .iter()
                .filter(main)
                .rfind(|v| v["type"] == "assistant.message" && v["ephemeral"].is_null())
                .and_then(|v| v["data"]["content"].as_str())
                .expect("an answered step has a message")
                .to_owned(),
        )
    });
    for step in &mut steps {
        let (mut streamed, mut kept, mut succeeded) = (false, false, false);
        for v in step
            .lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            if !main(&&v) {
                continue;
            }
            match v["type"].as_str() {
                Some("assistant.turn_start") => (streamed, kept, succeeded) = (false, false, false),
                Some("assistant.message_start") => streamed = true,
                Some("assistant.message") if v["ephemeral"].is_null() => kept = true,
                Some("model.call_finished") => succeeded = v["data"]["outcome"] == "success",
                Some("assistant.turn_end") if streamed && succeeded && !kept => {
                    step.cut_off = true;
                }
                _ => {}
            }
        }
    }
    steps
}

/// The steps of OpenCode fixture `fixture`, in order.
pub fn opencode_steps(fixture: &str) -> Vec<ReportedStep> {
    steps(&crate::opencode_fixtures_dir().join(fixture), |events| {
        if let Some(e) = events.iter().rfind(|v| v["type"] == "error") {
            let data = &e["error"]["data"]["message"];
            return Reported::Failed(data.as_str().unwrap_or_default().to_owned());
        }
        let Some(end) = events.iter().rfind(|v| {
            v["type"] == "step_finish"
                && (v["part"]["reason"] == "stop" || v["part"]["reason"] == "length")
        }) else {
            return Reported::Interrupted;
        };
        let message = &end["part"]["messageID"];
        let texts: Vec<&str> = events
            .iter()
            .filter(|v| v["type"] == "text" && v["part"]["messageID"] == *message)
            .filter_map(|v| v["part"]["text"].as_str())
            .collect();
        Reported::Answer(texts.join("\n"))
    })
}

/// The step of `steps` that sent `prompt` (the first, if several did).
pub fn step_for<'a>(steps: &'a [ReportedStep], prompt: &str) -> &'a ReportedStep {
    steps
        .iter()
        .find(|s| s.prompt == prompt)
        .unwrap_or_else(|| panic!("no step sent {prompt:?}"))
}

/// The steps of the fixture in `dir`: `manifest.json`'s steps, each with its stream read and
/// judged by `reported` (given the stream's lines that are JSON, in order).
fn steps(dir: &Path, reported: impl Fn(&[Value]) -> Reported) -> Vec<ReportedStep> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
    };
    let manifest: Value = serde_json::from_str(&read("manifest.json")).expect("manifest.json");
    manifest["steps"]
        .as_array()
        .expect("manifest steps")
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let events = step["events"]
                .as_str()
                .map_or_else(|| format!("events-{i}.jsonl"), str::to_owned);
            let lines: Vec<String> = read(&events).lines().map(str::to_owned).collect();
            let values: Vec<Value> = lines
                .iter()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            ReportedStep {
                prompt: step["prompt"].as_str().expect("prompt").to_owned(),
                reported: reported(&values),
                exit_code: i32::try_from(step["exit_code"].as_i64().expect("exit_code"))
                    .expect("exit code"),
                interrupted_by_harness: !step["interrupt_after_s"].is_null(),
                session_id: step["session_id"].as_str().expect("session_id").to_owned(),
                lines,
                cut_off: false,
            }
        })
        .collect()
}
