//! The supervision state machine for Copilot CLI: `--output-format json` events in, the run of
//! this invocation, its phase and its candidate answer out. Pure (no I/O), tested on the
//! recorded streams (`fixtures/copilot/1.0.102/*/events-N.jsonl`).
//!
//! `copilot -p` runs one prompt: its run starts at the main agent's `user.message` and the
//! invocation ends at `result` (which names the session and the exit code). The candidate answer
//! is the main agent's last `assistant.message`, when it calls no tool. Only a `result` of exit
//! code 0, with no `abort` nor `session.error` in the run, settles it — and no turn that
//! streamed a reply Copilot CLI never kept (a length cut-off it continued by itself: what it
//! reported last is the rest of an answer, not all of it).

use std::collections::BTreeMap;

use runread_core::limits::ANSWER_CONTEXT_READ_MAX_BYTES;
use runread_store::{Phase, Proof};

use crate::copilot::events::CopilotEvent;
use crate::refusal::Refusal;
use crate::stream::Step;

/// The run of this invocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopilotTracked {
    /// The prompt's event id (the file's `user.message` id).
    pub prompt_id: String,
    /// The main agent's last response: its event id, its text, whether it called tools.
    pub last: Option<(String, String, bool)>,
    /// The exit code `result` reported; `None` while it runs or when the stream stopped.
    pub exit_code: Option<i64>,
    /// `abort`: interrupted.
    pub aborted: bool,
    /// The last `session.error` of the run.
    pub error: Option<String>,
    pub faulted: bool,
    pub unknown_event: bool,
    /// A turn whose model call succeeded and streamed a reply Copilot CLI never kept as a
    /// message: a cut-off at the length limit it continued by itself. What it reports last is not
    /// the whole answer.
    pub cut_off: bool,
    /// The current turn: it streamed text, kept a message, its model call succeeded.
    turn: (bool, bool, bool),
}

/// The answer a run reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopilotCandidate {
    /// The `assistant.message` event id (the file's).
    pub entry_id: String,
    pub text: String,
    pub text_sha256: String,
}

impl CopilotTracked {
    /// The candidate answer of a run Copilot CLI reported done (exit code 0) with text.
    pub fn candidate(&self) -> Option<CopilotCandidate> {
        if self.exit_code != Some(0)
            || self.aborted
            || self.error.is_some()
            || self.faulted
            || self.unknown_event
            || self.cut_off
        {
            return None;
        }
        let (id, text, tools) = self.last.as_ref()?;
        if *tools || text.is_empty() || text.len() > ANSWER_CONTEXT_READ_MAX_BYTES {
            return None;
        }
        Some(CopilotCandidate {
            entry_id: id.clone(),
            text: text.clone(),
            text_sha256: runread_core::sha256_hex(text.as_bytes()),
        })
    }

    /// A turn's event: whether the turn streamed text, kept a message, and its model call
    /// succeeded — a turn that streamed, succeeded and kept nothing is a cut-off.
    fn turn_event(&mut self, event: &CopilotEvent) {
        match event {
            CopilotEvent::TurnStart => self.turn = (false, false, false),
            CopilotEvent::Delta { text } => self.turn.0 |= !text.is_empty(),
            CopilotEvent::CallFinished { success } => self.turn.2 = *success,
            CopilotEvent::TurnEnd if self.turn == (true, false, true) => self.cut_off = true,
            _ => {}
        }
    }

    /// The final proof of a run that never settled, from how it ended.
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
        let reason = if self.aborted || (interrupted && self.exit_code.is_none()) {
            "the run was interrupted"
        } else if self.error.is_some() || self.exit_code.is_some_and(|c| c != 0) {
            "the agent reported that the run failed"
        } else if self.exit_code.is_none() {
            "the agent ended before reporting the run's end"
        } else if self.cut_off {
            "the answer was cut at the model's length limit and continued"
        } else if self
            .last
            .as_ref()
            .is_some_and(|(_, t, _)| t.len() > ANSWER_CONTEXT_READ_MAX_BYTES)
        {
            "the answer is larger than runread reads of one"
        } else {
            "the run ended without an answer"
        };
        Proof::NoAnswer {
            reason: reason.into(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct CopilotSupervision {
    /// The session id from `result`.
    pub session_id: Option<String>,
    pub runs: Vec<CopilotTracked>,
    phase: Option<Phase>,
    open_tools: BTreeMap<String, String>,
    pub faults: u64,
    pub unknown_events: u64,
    /// A `result` without a prompt, or a second `result`: not one `copilot -p` stream.
    pub broken: bool,
}

impl CopilotSupervision {
    pub fn new() -> CopilotSupervision {
        CopilotSupervision::default()
    }

    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }

    pub fn tool_name(&self, id: &str) -> Option<&str> {
        self.open_tools.get(id).map(String::as_str)
    }

    pub fn fault(&mut self) {
        self.faults += 1;
        if let Some(run) = self.runs.last_mut() {
            run.faulted = true;
        }
    }

    fn open_run(&mut self) -> Option<&mut CopilotTracked> {
        self.runs.last_mut().filter(|r| r.exit_code.is_none())
    }

    fn current_phase(&self) -> Phase {
        if !self.open_tools.is_empty() {
            Phase::WaitingOnTool
        } else if self
            .runs
            .last()
            .is_some_and(|r| r.exit_code.is_some() || r.aborted)
        {
            Phase::Ended
        } else {
            Phase::Running
        }
    }

    /// `result`: the invocation's end names the session; the open run ends, and settles if that
    /// gave it a candidate answer.
    fn ended(&mut self, session_id: &str, exit_code: i64) -> Step {
        self.open_tools.clear();
        if self.session_id.is_some() {
            self.broken = true;
            return Step::Nothing;
        }
        self.session_id = Some(session_id.to_owned());
        let n = self.runs.len();
        match self.open_run() {
            Some(run) => {
                run.exit_code = Some(exit_code);
                if run.candidate().is_some() {
                    Step::Settle(n - 1)
                } else {
                    Step::Changed
                }
            }
            None => {
                self.broken = true;
                Step::Changed
            }
        }
    }

    pub fn apply(&mut self, event: &CopilotEvent) -> Step {
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

    fn transition(&mut self, event: &CopilotEvent) -> Step {
        match event {
            CopilotEvent::User { id } => {
                self.open_tools.clear();
                self.runs.push(CopilotTracked {
                    prompt_id: id.clone(),
                    ..CopilotTracked::default()
                });
                Step::Changed
            }
            CopilotEvent::Message { id, text, tools } => {
                if let Some(run) = self.open_run() {
                    run.last = Some((id.clone(), text.clone(), *tools));
                    run.turn.1 = true;
                }
                Step::Changed
            }
            CopilotEvent::ToolStart { id, name } => {
                if self.open_run().is_some() {
                    self.open_tools.insert(id.clone(), name.clone());
                }
                Step::Nothing
            }
            CopilotEvent::ToolEnd { id, .. } => {
                self.open_tools.remove(id);
                Step::Nothing
            }
            CopilotEvent::Error { message } => {
                if let Some(run) = self.open_run() {
                    run.error = Some(message.clone());
                }
                Step::Changed
            }
            CopilotEvent::Abort => {
                self.open_tools.clear();
                if let Some(run) = self.open_run() {
                    run.aborted = true;
                }
                Step::Changed
            }
            CopilotEvent::Result {
                session_id,
                exit_code,
            } => self.ended(session_id, *exit_code),
            CopilotEvent::TurnStart
            | CopilotEvent::Delta { .. }
            | CopilotEvent::CallFinished { .. }
            | CopilotEvent::TurnEnd => {
                if let Some(run) = self.open_run() {
                    run.turn_event(event);
                }
                Step::Nothing
            }
            CopilotEvent::Other => Step::Nothing,
            CopilotEvent::Unknown => {
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

    fn msg(id: &str, t: &str, tools: bool) -> CopilotEvent {
        CopilotEvent::Message {
            id: id.into(),
            text: t.into(),
            tools,
        }
    }

    fn result(code: i64) -> CopilotEvent {
        CopilotEvent::Result {
            session_id: "s".into(),
            exit_code: code,
        }
    }

    #[test]
    fn the_answer_is_the_last_message_without_tools_and_only_exit_0_settles_it() {
        let mut s = CopilotSupervision::new();
        s.apply(&CopilotEvent::User { id: "u".into() });
        s.apply(&msg("m1", "Looking.", true));
        s.apply(&CopilotEvent::ToolStart {
            id: "c".into(),
            name: "bash".into(),
        });
        assert_eq!(s.phase(), Some(Phase::WaitingOnTool));
        s.apply(&CopilotEvent::ToolEnd {
            id: "c".into(),
            failed: false,
        });
        assert_eq!(s.phase(), Some(Phase::Running));
        s.apply(&msg("m2", "Done.", false));
        assert_eq!(s.runs[0].candidate(), None, "no end yet");
        assert_eq!(s.apply(&result(0)), Step::Settle(0));
        let c = s.runs[0].candidate().unwrap();
        assert_eq!((c.entry_id.as_str(), c.text.as_str()), ("m2", "Done."));
        assert_eq!(s.session_id.as_deref(), Some("s"));
        assert_eq!(s.phase(), Some(Phase::Ended));
    }

    #[test]
    fn a_failure_an_abort_or_an_unknown_event_gives_no_candidate() {
        let mut s = CopilotSupervision::new();
        s.apply(&CopilotEvent::User { id: "u".into() });
        s.apply(&CopilotEvent::Error {
            message: "boom".into(),
        });
        assert_eq!(s.apply(&result(1)), Step::Changed);
        assert_eq!(
            s.runs[0].closing_proof(false),
            Proof::NoAnswer {
                reason: "the agent reported that the run failed".into()
            }
        );
        let mut s = CopilotSupervision::new();
        s.apply(&CopilotEvent::User { id: "u".into() });
        s.apply(&msg("m", "partial", false));
        s.apply(&CopilotEvent::Abort);
        assert_eq!(s.apply(&result(0)), Step::Changed);
        assert_eq!(
            s.runs[0].closing_proof(true),
            Proof::NoAnswer {
                reason: "the run was interrupted".into()
            }
        );
        let mut s = CopilotSupervision::new();
        s.apply(&CopilotEvent::User { id: "u".into() });
        s.apply(&msg("m", "hi", false));
        s.apply(&CopilotEvent::Unknown);
        assert_eq!(s.apply(&result(0)), Step::Changed);
        assert_eq!(
            s.runs[0].closing_proof(false),
            Proof::Refused {
                reason: Refusal::UnknownEvent.as_str().into()
            }
        );
        let mut s = CopilotSupervision::new();
        s.apply(&result(0));
        assert!(s.broken, "a result without a prompt");
        // A turn that streamed a reply it never kept (a length cut-off Copilot CLI continued):
        // the last message is not the whole answer.
        let mut s = CopilotSupervision::new();
        s.apply(&CopilotEvent::User { id: "u".into() });
        s.apply(&CopilotEvent::TurnStart);
        s.apply(&CopilotEvent::Delta { text: "cut".into() });
        s.apply(&CopilotEvent::CallFinished { success: true });
        s.apply(&CopilotEvent::TurnEnd);
        s.apply(&CopilotEvent::TurnStart);
        s.apply(&msg("m", "the rest", false));
        s.apply(&CopilotEvent::CallFinished { success: true });
        s.apply(&CopilotEvent::TurnEnd);
        assert_eq!(s.apply(&result(0)), Step::Changed);
        assert!(s.runs[0].cut_off);
        assert_eq!(
            s.runs[0].closing_proof(false),
            Proof::NoAnswer {
                reason: "the answer was cut at the model's length limit and continued".into()
            }
        );
    }
}
