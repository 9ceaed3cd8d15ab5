//! The supervision state machine: Pi's events in, the runs of this invocation and their phase
//! out. Pure (no I/O), so every transition is tested on real recorded streams.
//!
//! A run starts at a user message (as in the session file). Its candidate final answer is the
//! last assistant `message_end` that could be one. The run is ready to verify ("settles") at
//! `agent_end` whose last assistant message stopped normally, or at `agent_settled` where Pi
//! emits it, once: Pi 1.x sends `agent_settled` right after the `agent_end` that settled the run,
//! and only a reopening event (another message, loop or retry) lets it settle again.
//! `message_end` alone never settles anything: the line reaches the stream before it reaches the
//! session file.

use std::collections::BTreeMap;

use runread_store::{Phase, Proof};

use crate::proof::Refusal;

use crate::pi::events::{Candidate, Event, StreamHeader};
pub use crate::stream::Step;

/// One run of this invocation, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracked {
    pub user_message_sha256: String,
    pub candidate: Option<Candidate>,
    /// Stop reason of the run's last assistant message.
    pub last_stop: Option<String>,
    /// The agent ended this run and nothing (retry, compaction retry) reopened it.
    pub ended: bool,
    /// This run settled and nothing reopened it since: Pi 1.x follows the `agent_end` that
    /// settles a run with `agent_settled`, which must not verify and record the same answer again.
    pub settled: bool,
    /// A line of the stream inside this run could not be read: no proof can be built on it.
    pub faulted: bool,
    /// An event of a type runread does not know fell inside this run: no answer is taken.
    pub unknown_event: bool,
}

impl Tracked {
    /// How a Pi run that never settled ended.
    pub fn closing_proof(&self) -> Proof {
        let run = self;
        if run.faulted {
            return Proof::Refused {
                reason: Refusal::StreamFault.as_str().into(),
            };
        }
        if run.unknown_event {
            return Proof::Refused {
                reason: Refusal::UnknownEvent.as_str().into(),
            };
        }
        let reason = match run.last_stop.as_deref() {
            Some("error") => "the provider failed (after retries)",
            Some("aborted") => "the run was aborted",
            Some("toolUse") => "the run ended with a tool call open",
            None => "no assistant message",
            Some(_) if !run.ended => "the agent ended before the run did",
            Some(_) => "the run did not settle with an answer",
        };
        Proof::NoAnswer {
            reason: reason.into(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Supervision {
    pub header: Option<StreamHeader>,
    pub runs: Vec<Tracked>,
    phase: Option<Phase>,
    /// Tool calls started and not ended, by id (name kept for the terminal).
    open_tools: BTreeMap<String, String>,
    retrying: bool,
    compacting: bool,
    /// Steering and follow-up prompts queued in the agent.
    pub queued: usize,
    /// Lines that were not events.
    pub faults: u64,
    /// Events of a type runread does not know.
    pub unknown_events: u64,
    /// A second header, or events before the first: the stream is not one Pi session.
    pub broken: bool,
}

impl Supervision {
    pub fn new() -> Supervision {
        Supervision::default()
    }

    /// The phase of the current run, from the stream (`None` before any run started).
    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }

    pub fn open_tools(&self) -> usize {
        self.open_tools.len()
    }

    /// A line that is not an event: it taints the run it falls in.
    pub fn fault(&mut self) {
        self.faults += 1;
        if let Some(run) = self.runs.last_mut() {
            run.faulted = true;
        }
    }

    fn settle_step(&mut self, n: usize) -> Step {
        match self.runs.get_mut(n) {
            Some(run)
                if run.ended
                    && !run.settled
                    && run.candidate.is_some()
                    && !run.faulted
                    && !run.unknown_event =>
            {
                run.settled = true;
                Step::Settle(n)
            }
            _ => Step::Changed,
        }
    }

    fn current_phase(&self) -> Phase {
        if self.compacting {
            Phase::Compacting
        } else if self.retrying {
            Phase::Retrying
        } else if !self.open_tools.is_empty() {
            Phase::WaitingOnTool
        } else if self.runs.last().is_some_and(|r| r.ended) {
            Phase::Ended
        } else {
            Phase::Running
        }
    }

    pub fn apply(&mut self, event: &Event) -> Step {
        if self.header.is_none() && !matches!(event, Event::Header(_)) {
            self.broken = true;
            return Step::Nothing;
        }
        let before = (self.phase, self.runs.len(), self.queued);
        let step = self.transition(event);
        if !self.runs.is_empty() {
            self.phase = Some(self.current_phase());
        }
        match step {
            Step::Nothing if before != (self.phase, self.runs.len(), self.queued) => Step::Changed,
            s => s,
        }
    }

    /// What `event` does to the session and its runs; the phase is derived from them after.
    fn transition(&mut self, event: &Event) -> Step {
        match event {
            Event::Header(h) => self.header_seen(h),
            Event::UserMessage { message_sha256 } => self.start_run(message_sha256),
            Event::AssistantMessage { stop, candidate } => {
                if let Some(run) = self.runs.last_mut() {
                    run.last_stop = stop.clone();
                    // A later message supersedes an earlier candidate, also with `None`.
                    run.candidate = candidate.clone();
                }
                self.reopen()
            }
            Event::AgentStart => self.reopen(),
            // Pi goes on with this prompt: the run has not ended.
            Event::AgentEnd {
                will_retry: true, ..
            } => self.reopen(),
            Event::AgentEnd { .. } => self.agent_end(),
            Event::AgentSettled => match self.runs.len().checked_sub(1) {
                Some(n) => self.settle_step(n),
                None => Step::Nothing,
            },
            Event::ToolStart { id, name, .. } => {
                self.open_tools.insert(id.clone(), name.clone());
                Step::Changed
            }
            Event::ToolEnd { id, .. } => {
                self.open_tools.remove(id);
                Step::Changed
            }
            Event::RetryStart { .. } => {
                self.retrying = true;
                self.reopen()
            }
            Event::RetryEnd { .. } => {
                self.retrying = false;
                Step::Changed
            }
            Event::CompactionStart => {
                self.compacting = true;
                Step::Changed
            }
            Event::CompactionEnd { will_retry } => self.compaction_end(*will_retry),
            Event::Queue { pending } => {
                self.queued = *pending;
                Step::Changed
            }
            Event::OtherMessageEnd | Event::TextDelta(_) | Event::Ignored => Step::Nothing,
            Event::Unknown => {
                self.unknown_events += 1;
                if let Some(run) = self.runs.last_mut() {
                    run.unknown_event = true;
                }
                Step::Changed
            }
        }
    }

    /// The stream's header: the session, named once; a second one breaks the stream.
    fn header_seen(&mut self, h: &StreamHeader) -> Step {
        if self.header.is_some() {
            self.broken = true;
        } else {
            self.header = Some(h.clone());
        }
        Step::Changed
    }

    /// The agent goes on with the last run (another message, loop, or retry): it has not ended,
    /// whatever an earlier `agent_end` said.
    fn reopen(&mut self) -> Step {
        if let Some(run) = self.runs.last_mut() {
            run.ended = false;
            run.settled = false;
        }
        Step::Changed
    }

    /// Compaction is over; a compaction that retries the prompt reopens the last run.
    fn compaction_end(&mut self, will_retry: bool) -> Step {
        self.compacting = false;
        if will_retry {
            return self.reopen();
        }
        Step::Changed
    }

    /// A prompt: a run of its own starts.
    fn start_run(&mut self, message_sha256: &str) -> Step {
        self.runs.push(Tracked {
            user_message_sha256: message_sha256.to_owned(),
            candidate: None,
            last_stop: None,
            ended: false,
            settled: false,
            faulted: false,
            unknown_event: false,
        });
        self.retrying = false;
        Step::Changed
    }

    /// The agent ended its loop: the open run ends, and may settle.
    fn agent_end(&mut self) -> Step {
        self.open_tools.clear();
        match self.runs.last_mut() {
            Some(run) => {
                run.ended = true;
                let n = self.runs.len() - 1;
                self.settle_step(n)
            }
            None => Step::Changed,
        }
    }
}
