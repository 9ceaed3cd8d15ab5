//! The supervision state machine for OpenCode: `--format json` events in, the run of this
//! invocation, its phase and its candidate answer out. Pure (no I/O), tested on the recorded
//! streams (`fixtures/opencode/1.18.33/*/events-N.jsonl`).
//!
//! `opencode run` sends one prompt: its run starts at the stream's first event (which names the
//! session). Each model call is a message (`step_start` … `step_finish`); the run ends at a
//! `step_finish` of reason `stop` or `length` (`length`: the answer was cut at the model's
//! output limit, and OpenCode does not continue it), its answer the text parts of that message,
//! joined by `\n`. An `error` event fails the run. Anything else — `tool-calls`, `unknown` (a
//! broken stream OpenCode asks again after) — goes on. An interrupt kills OpenCode: its stream
//! just stops.

use runread_core::limits::ANSWER_CONTEXT_READ_MAX_BYTES;
use runread_store::{Phase, Proof};

use crate::opencode::events::{OpenCodeEvent, OpenCodeKind};
use crate::refusal::Refusal;
use crate::stream::Step;

/// How the message that ended a run ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The message's id (the database's).
    pub message_id: String,
    /// Its text parts, in stream order: their ids and texts.
    pub texts: Vec<(String, String)>,
    /// `length`: cut at the model's output limit.
    pub truncated: bool,
}

/// The run of this invocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenCodeTracked {
    /// The model messages of the run, in stream order (the database's ids).
    pub messages: Vec<String>,
    /// The text parts of the message being streamed: its id, and each part's id and text.
    current: Option<(String, Vec<(String, String)>)>,
    /// The `step_finish` of reason `stop` or `length` that ended the run.
    pub ended: Option<Ended>,
    /// The `error` that failed the run.
    pub error: Option<String>,
    pub faulted: bool,
    pub unknown_event: bool,
    /// An event after the run's end, or of another session: not one `opencode run`.
    pub broken: bool,
}

/// The answer a run reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCodeCandidate {
    /// The message that ended the run.
    pub message_id: String,
    /// Its last text part's id (the answer's last record in the database).
    pub entry_id: String,
    /// The text parts joined by `\n`.
    pub text: String,
    /// The answer's digest as the session reader computes it from its parts
    /// ([`runread_sessions::answer_digest`] over each part's SHA-256).
    pub text_sha256: String,
    pub truncated: bool,
}

impl OpenCodeTracked {
    /// The candidate answer of a run OpenCode reported ended (`stop` or `length`) with text.
    pub fn candidate(&self) -> Option<OpenCodeCandidate> {
        if self.error.is_some() || self.faulted || self.unknown_event || self.broken {
            return None;
        }
        let ended = self.ended.as_ref()?;
        let texts: Vec<&(String, String)> =
            ended.texts.iter().filter(|(_, t)| !t.is_empty()).collect();
        let (entry_id, _) = texts.last()?;
        let text = texts
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if text.len() > ANSWER_CONTEXT_READ_MAX_BYTES {
            return None;
        }
        let digests: Vec<String> = texts
            .iter()
            .map(|(_, t)| runread_core::sha256_hex(t.as_bytes()))
            .collect();
        Some(OpenCodeCandidate {
            message_id: ended.message_id.clone(),
            entry_id: entry_id.clone(),
            text_sha256: runread_sessions::answer_digest(digests.iter().map(String::as_str)),
            text,
            truncated: ended.truncated,
        })
    }

    /// Whether the stream reported the run's end: an answer or a failure.
    pub fn reported(&self) -> bool {
        self.ended.is_some() || self.error.is_some()
    }

    /// The final proof of a run that never settled, from how it ended.
    pub fn closing_proof(&self, interrupted: bool) -> Proof {
        if self.faulted || self.broken {
            return Proof::Refused {
                reason: Refusal::StreamFault.as_str().into(),
            };
        }
        if self.unknown_event {
            return Proof::Refused {
                reason: Refusal::UnknownEvent.as_str().into(),
            };
        }
        let reason = if self.error.is_some() {
            "the agent reported that the run failed"
        } else if self.ended.is_none() && interrupted {
            "the run was interrupted"
        } else if self.ended.is_none() {
            "the agent ended before reporting the run's end"
        } else if self.ended.as_ref().is_some_and(|e| {
            e.texts.iter().map(|(_, t)| t.len()).sum::<usize>() > ANSWER_CONTEXT_READ_MAX_BYTES
        }) {
            "the answer is larger than runread reads of one"
        } else {
            "the run ended without an answer"
        };
        Proof::NoAnswer {
            reason: reason.into(),
        }
    }

    /// A part of message `message_id`: the message becomes the one streamed.
    fn in_message(&mut self, message_id: &str) -> &mut Vec<(String, String)> {
        if self.current.as_ref().is_some_and(|(m, _)| m != message_id) {
            self.current = None;
        }
        if self.current.is_none() && !self.messages.iter().any(|m| m == message_id) {
            self.messages.push(message_id.to_owned());
        }
        let (_, texts) = self
            .current
            .get_or_insert_with(|| (message_id.to_owned(), Vec::new()));
        texts
    }
}

#[derive(Debug, Clone, Default)]
pub struct OpenCodeSupervision {
    /// The session id the stream's first event named.
    pub session_id: Option<String>,
    /// The run of this invocation (one at most: `opencode run` sends one prompt).
    pub runs: Vec<OpenCodeTracked>,
    phase: Option<Phase>,
    /// A tool call is running (between a `tool-calls` step and the next step).
    waiting_on_tool: bool,
    pub faults: u64,
    pub unknown_events: u64,
}

impl OpenCodeSupervision {
    pub fn new() -> OpenCodeSupervision {
        OpenCodeSupervision::default()
    }

    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }

    pub fn fault(&mut self) {
        self.faults += 1;
        if let Some(run) = self.runs.last_mut() {
            run.faulted = true;
        }
    }

    fn current_phase(&self) -> Phase {
        match self.runs.last() {
            Some(r) if r.reported() => Phase::Ended,
            _ if self.waiting_on_tool => Phase::WaitingOnTool,
            _ => Phase::Running,
        }
    }

    pub fn apply(&mut self, event: &OpenCodeEvent) -> Step {
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

    /// The run `event` falls in: the first event names the session and opens the run; an event
    /// of another session, or after the run's end, breaks it.
    fn run_of(&mut self, event: &OpenCodeEvent) -> Option<&mut OpenCodeTracked> {
        if self.session_id.is_none()
            && let Some(s) = &event.session_id
        {
            self.session_id = Some(s.clone());
            self.runs.push(OpenCodeTracked::default());
        }
        let other = event.session_id.is_some() && event.session_id != self.session_id;
        let run = self.runs.last_mut()?;
        if other || run.reported() {
            run.broken = true;
        }
        Some(run)
    }

    fn transition(&mut self, event: &OpenCodeEvent) -> Step {
        let Some(run) = self.run_of(event) else {
            if event.kind == OpenCodeKind::Unknown {
                self.unknown_events += 1;
            }
            return Step::Nothing;
        };
        let mut tool = None;
        match &event.kind {
            OpenCodeKind::StepStart { message_id } => {
                run.in_message(message_id);
                tool = Some(false);
            }
            OpenCodeKind::Text {
                message_id,
                part_id,
                text,
            } => run
                .in_message(message_id)
                .push((part_id.clone(), text.clone())),
            OpenCodeKind::Tool { message_id, .. } => {
                run.in_message(message_id);
            }
            OpenCodeKind::StepFinish { message_id, reason } => {
                let texts = std::mem::take(run.in_message(message_id));
                if matches!(reason.as_str(), "stop" | "length") && !run.reported() {
                    run.ended = Some(Ended {
                        message_id: message_id.clone(),
                        texts,
                        truncated: reason == "length",
                    });
                }
                tool = Some(reason == "tool-calls");
            }
            OpenCodeKind::Error { message } => run.error = Some(message.clone()),
            OpenCodeKind::Other => {}
            OpenCodeKind::Unknown => run.unknown_event = true,
        }
        let settles =
            matches!(event.kind, OpenCodeKind::StepFinish { .. }) && run.candidate().is_some();
        if event.kind == OpenCodeKind::Unknown {
            self.unknown_events += 1;
        }
        if let Some(t) = tool {
            self.waiting_on_tool = t;
        }
        match &event.kind {
            _ if settles => Step::Settle(self.runs.len() - 1),
            OpenCodeKind::StepFinish { .. }
            | OpenCodeKind::Error { .. }
            | OpenCodeKind::Unknown => Step::Changed,
            _ => Step::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "ses_db3da50c7ffeuRkymmfPn0Jvzc";

    fn ev(kind: OpenCodeKind) -> OpenCodeEvent {
        OpenCodeEvent {
            session_id: Some(S.into()),
            kind,
        }
    }
    fn start(m: &str) -> OpenCodeEvent {
        ev(OpenCodeKind::StepStart {
            message_id: m.into(),
        })
    }
    fn text(m: &str, p: &str, t: &str) -> OpenCodeEvent {
        ev(OpenCodeKind::Text {
            message_id: m.into(),
            part_id: p.into(),
            text: t.into(),
        })
    }
    fn finish(m: &str, reason: &str) -> OpenCodeEvent {
        ev(OpenCodeKind::StepFinish {
            message_id: m.into(),
            reason: reason.into(),
        })
    }

    #[test]
    fn the_answer_is_the_text_of_the_message_that_stopped() {
        let mut s = OpenCodeSupervision::new();
        s.apply(&start("m1"));
        assert_eq!(s.session_id.as_deref(), Some(S));
        s.apply(&text("m1", "p1", "Looking."));
        s.apply(&finish("m1", "tool-calls"));
        assert_eq!(s.phase(), Some(Phase::WaitingOnTool));
        assert_eq!(s.apply(&start("m2")), Step::Changed);
        assert_eq!(s.phase(), Some(Phase::Running));
        s.apply(&text("m2", "p2", "Done"));
        s.apply(&text("m2", "p3", "really."));
        assert_eq!(s.runs[0].candidate(), None, "no end yet");
        assert_eq!(s.apply(&finish("m2", "stop")), Step::Settle(0));
        let c = s.runs[0].candidate().unwrap();
        assert_eq!(
            (c.message_id.as_str(), c.entry_id.as_str(), c.text.as_str()),
            ("m2", "p3", "Done\nreally.")
        );
        let one = |t: &str| runread_core::sha256_hex(t.as_bytes());
        assert_eq!(
            c.text_sha256,
            runread_core::sha256_hex(format!("{}\n{}", one("Done"), one("really.")).as_bytes())
        );
        assert!(!c.truncated);
        assert_eq!(s.runs[0].messages, vec!["m1".to_owned(), "m2".to_owned()]);
        assert_eq!(s.phase(), Some(Phase::Ended));
        // One text: its own digest.
        let mut s = OpenCodeSupervision::new();
        s.apply(&text("m", "p", "cut"));
        assert_eq!(s.apply(&finish("m", "length")), Step::Settle(0));
        let c = s.runs[0].candidate().unwrap();
        assert!(c.truncated);
        assert_eq!(c.text_sha256, runread_core::sha256_hex(b"cut"));
    }

    #[test]
    fn a_failure_a_broken_stream_or_an_unknown_event_gives_no_candidate() {
        let mut s = OpenCodeSupervision::new();
        s.apply(&ev(OpenCodeKind::Error {
            message: "boom".into(),
        }));
        assert_eq!(
            s.runs[0].closing_proof(false),
            Proof::NoAnswer {
                reason: "the agent reported that the run failed".into()
            }
        );
        // A stream cut without a finish reason: OpenCode asks again; only the next stop ends it.
        let mut s = OpenCodeSupervision::new();
        s.apply(&text("m1", "p1", "partial"));
        assert_eq!(s.apply(&finish("m1", "unknown")), Step::Changed);
        assert_eq!(s.runs[0].candidate(), None);
        assert_eq!(
            s.runs[0].closing_proof(true),
            Proof::NoAnswer {
                reason: "the run was interrupted".into()
            }
        );
        s.apply(&text("m2", "p2", "whole"));
        assert_eq!(s.apply(&finish("m2", "stop")), Step::Settle(0));
        assert_eq!(s.runs[0].candidate().unwrap().text, "whole");
        // Anything after the end breaks the run.
        s.apply(&text("m3", "p3", "more"));
        assert_eq!(s.runs[0].candidate(), None);
        let mut s = OpenCodeSupervision::new();
        s.apply(&text("m", "p", "hi"));
        s.apply(&ev(OpenCodeKind::Unknown));
        assert_eq!(s.apply(&finish("m", "stop")), Step::Changed);
        assert_eq!(s.unknown_events, 1);
        assert_eq!(
            s.runs[0].closing_proof(false),
            Proof::Refused {
                reason: Refusal::UnknownEvent.as_str().into()
            }
        );
        // Another session's event.
        let mut s = OpenCodeSupervision::new();
        s.apply(&text("m", "p", "hi"));
        s.apply(&OpenCodeEvent {
            session_id: Some("ses_other".into()),
            kind: OpenCodeKind::Other,
        });
        assert_eq!(s.apply(&finish("m", "stop")), Step::Changed);
        assert!(s.runs[0].broken);
        // A stop with no text: no answer.
        let mut s = OpenCodeSupervision::new();
        s.apply(&start("m"));
        assert_eq!(s.apply(&finish("m", "stop")), Step::Changed);
        assert_eq!(
            s.runs[0].closing_proof(false),
            Proof::NoAnswer {
                reason: "the run ended without an answer".into()
            }
        );
    }
}
