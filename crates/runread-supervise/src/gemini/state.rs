//! The supervision state machine for Gemini CLI: `stream-json` events in, the run of this
//! invocation, its phase and its candidate answer out. Pure (no I/O), so every transition is
//! tested on real recorded streams (`fixtures/gemini/0.61.0/*/events-N.jsonl`).
//!
//! `gemini -p` runs one prompt: its run starts at the `user` message and ends at `result`; an
//! interrupt stops the stream without one. The candidate answer is the assistant text streamed
//! after the run's last tool event, its deltas joined — what Gemini CLI writes to the chat file
//! as the run's last `gemini` message. Only a `result` of status `success` settles the run.

use std::collections::BTreeMap;

use runread_core::limits::ANSWER_CONTEXT_READ_MAX_BYTES;
use runread_store::{Phase, Proof};

use crate::gemini::events::GeminiEvent;
use crate::refusal::Refusal;
use crate::stream::Step;

/// How Gemini CLI ended a run on its stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// `result` with status `success` (also a response cut at the output limit: not marked).
    Success,
    /// `result` with another status, with Gemini CLI's message.
    Failed(String),
}

/// The run of this invocation (one per prompt, in stream order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GeminiTracked {
    /// The assistant text streamed since the run's last tool event.
    pub text: String,
    /// The text grew past what runread reads of an answer: no candidate.
    pub overflow: bool,
    /// How the run ended; `None` while it runs, and when the stream stopped (an interrupt).
    pub end: Option<RunEnd>,
    /// The last failure Gemini CLI reported on the stream during the run (`error`).
    pub last_error: Option<String>,
    /// A line of the stream inside this run could not be read: no proof can be built on it.
    pub faulted: bool,
    /// An event of a type runread does not know fell inside this run: no answer is taken.
    pub unknown_event: bool,
}

/// The answer a run reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiCandidate {
    pub text: String,
    /// SHA-256 of the text: what the chat file's last model message must hash to.
    pub text_sha256: String,
}

impl GeminiTracked {
    /// The candidate answer of a run Gemini CLI reported as a success with text.
    pub fn candidate(&self) -> Option<GeminiCandidate> {
        if self.end != Some(RunEnd::Success)
            || self.faulted
            || self.unknown_event
            || self.overflow
            || self.text.is_empty()
        {
            return None;
        }
        Some(GeminiCandidate {
            text_sha256: runread_core::sha256_hex(self.text.as_bytes()),
            text: self.text.clone(),
        })
    }

    /// A piece of the model's text, within what runread reads of an answer.
    fn add_text(&mut self, text: &str) {
        if self.overflow {
            return;
        }
        if self.text.len().saturating_add(text.len()) > ANSWER_CONTEXT_READ_MAX_BYTES {
            self.overflow = true;
            self.text = String::new();
        } else {
            self.text.push_str(text);
        }
    }

    /// The final proof of a run that never settled, from how it ended. `interrupted`: runread
    /// passed an interrupt on to the agent (the stream then just stops).
    pub fn closing_proof(&self, interrupted: bool) -> Proof {
        if self.faulted {
            return Proof::Refused {
                reason: Refusal::StreamFault.as_str().into(),
            };
        }
        if self.unknown_event {
            return Proof::Refused {
                reason: Refusal::UnknownEvent.as_str().into(),
            };
        }
        // Fixed texts: Gemini CLI's own message may quote the provider's body.
        let reason = match &self.end {
            Some(RunEnd::Failed(_)) => "the agent reported that the run failed",
            Some(RunEnd::Success) if self.overflow => {
                "the answer is larger than runread reads of one"
            }
            Some(RunEnd::Success) if self.text.is_empty() => "the run ended without an answer",
            Some(RunEnd::Success) => "the run did not end in an answer",
            None if interrupted => "the run was interrupted",
            None => "the agent ended before reporting the run's end",
        };
        Proof::NoAnswer {
            reason: reason.into(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct GeminiSupervision {
    /// The session id from `init`: the chat file's `sessionId`.
    pub session_id: Option<String>,
    pub runs: Vec<GeminiTracked>,
    phase: Option<Phase>,
    /// Tool calls started and not ended, by the stream's tool id (their names, for the terminal).
    open_tools: BTreeMap<String, String>,
    /// Lines that were not events.
    pub faults: u64,
    /// Events of a type runread does not know.
    pub unknown_events: u64,
    /// A second, different `init`, events before the first, or an end without a run: the stream
    /// is not one Gemini CLI invocation's.
    pub broken: bool,
}

impl GeminiSupervision {
    pub fn new() -> GeminiSupervision {
        GeminiSupervision::default()
    }

    /// The phase of the current run, from the stream (`None` before the first prompt).
    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }

    pub fn open_tools(&self) -> usize {
        self.open_tools.len()
    }

    /// `result`: the open run ends, and settles if that gave it a candidate answer.
    fn ended(&mut self, success: bool, message: &str) -> Step {
        self.open_tools.clear();
        let end = if success {
            RunEnd::Success
        } else {
            RunEnd::Failed(message.to_owned())
        };
        match self.open_run() {
            Some(run) => {
                run.end = Some(end);
                if run.candidate().is_some() {
                    Step::Settle(self.runs.len() - 1)
                } else {
                    Step::Changed
                }
            }
            // A result without a prompt: not one `gemini -p` stream.
            None => {
                self.broken = true;
                Step::Nothing
            }
        }
    }

    /// The name of an open tool call (for the terminal).
    pub fn tool_name(&self, id: &str) -> Option<&str> {
        self.open_tools.get(id).map(String::as_str)
    }

    /// A line that is not an event: it taints the run it falls in.
    pub fn fault(&mut self) {
        self.faults += 1;
        if let Some(run) = self.runs.last_mut() {
            run.faulted = true;
        }
    }

    /// The run still open (started, not ended), if any.
    fn open_run(&mut self) -> Option<&mut GeminiTracked> {
        self.runs.last_mut().filter(|r| r.end.is_none())
    }

    fn current_phase(&self) -> Phase {
        if !self.open_tools.is_empty() {
            Phase::WaitingOnTool
        } else if self.runs.last().is_some_and(|r| r.end.is_some()) {
            Phase::Ended
        } else {
            Phase::Running
        }
    }

    pub fn apply(&mut self, event: &GeminiEvent) -> Step {
        if self.session_id.is_none() && !matches!(event, GeminiEvent::Init { .. }) {
            self.broken = true;
            return Step::Nothing;
        }
        let before = (self.phase, self.runs.len());
        let step = self.transition(event);
        if !self.runs.is_empty() {
            self.phase = Some(self.current_phase());
        }
        match step {
            Step::Nothing if before != (self.phase, self.runs.len()) => Step::Changed,
            s => s,
        }
    }

    /// What `event` does to the session and its runs; the phase is derived from them after.
    fn transition(&mut self, event: &GeminiEvent) -> Step {
        match event {
            GeminiEvent::Init { session_id } => match &self.session_id {
                None => {
                    self.session_id = Some(session_id.clone());
                    Step::Changed
                }
                Some(s) if s == session_id => Step::Nothing,
                Some(_) => {
                    self.broken = true;
                    Step::Nothing
                }
            },
            GeminiEvent::User => {
                // A run still open never ended on the stream: it stays without an end.
                self.open_tools.clear();
                self.runs.push(GeminiTracked::default());
                Step::Changed
            }
            GeminiEvent::Assistant { text } => {
                if let Some(run) = self.open_run() {
                    run.add_text(text);
                }
                Step::Nothing
            }
            GeminiEvent::ToolUse { id, name } => {
                if let Some(run) = self.open_run() {
                    // The text before a tool call is not the answer.
                    run.text.clear();
                    run.overflow = false;
                    self.open_tools.insert(id.clone(), name.clone());
                }
                Step::Nothing
            }
            GeminiEvent::ToolResult { id, .. } => {
                self.open_tools.remove(id);
                if let Some(run) = self.open_run() {
                    run.text.clear();
                    run.overflow = false;
                }
                Step::Nothing
            }
            GeminiEvent::Error { message } => {
                if let Some(run) = self.open_run() {
                    run.last_error = Some(message.clone());
                }
                Step::Nothing
            }
            GeminiEvent::Result { success, message } => self.ended(*success, message),
            GeminiEvent::Unknown => {
                self.unknown_events += 1;
                if let Some(run) = self.open_run() {
                    run.unknown_event = true;
                }
                Step::Changed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init() -> GeminiEvent {
        GeminiEvent::Init {
            session_id: "a".into(),
        }
    }

    fn text(t: &str) -> GeminiEvent {
        GeminiEvent::Assistant { text: t.into() }
    }

    fn ok() -> GeminiEvent {
        GeminiEvent::Result {
            success: true,
            message: String::new(),
        }
    }

    #[test]
    fn the_answer_is_the_text_after_the_last_tool_and_only_a_success_settles_it() {
        let mut s = GeminiSupervision::new();
        s.apply(&init());
        s.apply(&GeminiEvent::User);
        s.apply(&text("Let me "));
        s.apply(&text("look."));
        s.apply(&GeminiEvent::ToolUse {
            id: "t".into(),
            name: "ls".into(),
        });
        assert_eq!(s.phase(), Some(Phase::WaitingOnTool));
        s.apply(&GeminiEvent::ToolResult {
            id: "t".into(),
            failed: false,
        });
        assert_eq!(s.phase(), Some(Phase::Running));
        s.apply(&text("Done"));
        s.apply(&text("."));
        assert_eq!(s.runs[0].candidate(), None, "no end yet");
        assert_eq!(s.apply(&ok()), Step::Settle(0));
        assert_eq!(s.runs[0].candidate().unwrap().text, "Done.");
        assert_eq!(s.phase(), Some(Phase::Ended));
    }

    #[test]
    fn a_failure_an_unknown_event_or_a_broken_stream_gives_no_candidate() {
        let mut s = GeminiSupervision::new();
        s.apply(&init());
        s.apply(&GeminiEvent::User);
        s.apply(&text("partial"));
        s.apply(&GeminiEvent::Result {
            success: false,
            message: "boom".into(),
        });
        assert_eq!(s.runs[0].candidate(), None);
        assert_eq!(
            s.runs[0].closing_proof(false),
            Proof::NoAnswer {
                reason: "the agent reported that the run failed".into()
            }
        );
        let mut s = GeminiSupervision::new();
        s.apply(&init());
        s.apply(&GeminiEvent::User);
        s.apply(&text("hi"));
        s.apply(&GeminiEvent::Unknown);
        assert_eq!(s.apply(&ok()), Step::Changed);
        assert_eq!(s.unknown_events, 1);
        assert_eq!(
            s.runs[0].closing_proof(false),
            Proof::Refused {
                reason: Refusal::UnknownEvent.as_str().into()
            }
        );
        let mut s = GeminiSupervision::new();
        s.apply(&GeminiEvent::User);
        assert!(s.broken, "events before init");
        let mut s = GeminiSupervision::new();
        s.apply(&init());
        s.apply(&ok());
        assert!(s.broken, "a result without a prompt");
        let mut s = GeminiSupervision::new();
        s.apply(&init());
        s.apply(&GeminiEvent::Init {
            session_id: "b".into(),
        });
        assert!(s.broken, "another session");
    }
}
