//! The supervision state machine for Claude Code: stream-json events in, the run of this
//! invocation, its phase and its candidate answer out. Pure (no I/O), so every transition is
//! tested on real recorded streams (`fixtures/claude/*/events-N.jsonl`).
//!
//! `claude -p` answers one prompt: its run starts with the process (`init`) and ends at `result`.
//! The prompt itself is not on the stream; the run's messages are, with the `uuid`s the session
//! file gives them, which is how the proof finds the run in the file. The candidate answer is
//! the run's last response (the trailing `assistant` events sharing one `message.id`, one per
//! content block): its text blocks, which must join to exactly what `result.result` reports.
//! `result` alone settles the run; an `assistant` event never does (the line may reach the
//! stream before the file).

use std::collections::BTreeMap;

use runread_store::{Phase, Proof};

use crate::claude::events::{Block, ClaudeEvent, Init, Outcome, UserKind};
use crate::refusal::Refusal;
use crate::stream::Step;

/// One line of a response, as the stream announced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseLine {
    pub uuid: String,
    pub message_id: Option<String>,
    /// Its text blocks joined by `\n` (empty: no text — thinking, a tool call).
    pub text: String,
    pub tool_use: bool,
    pub synthetic: bool,
}

/// The run of this invocation (one per `result`, in stream order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeTracked {
    /// The run's messages (main thread), in stream order: their uuids are the session file's.
    pub uuids: Vec<String>,
    /// The run's last response so far; emptied by any message after it.
    pub response: Vec<ResponseLine>,
    /// How Claude Code ended the run; `None` while it runs, and when it was interrupted while
    /// the model streamed (no `result` then).
    pub outcome: Option<Outcome>,
    /// An interruption marker was on the stream.
    pub interrupted: bool,
    /// A line of the stream inside this run could not be read: no proof can be built on it.
    pub faulted: bool,
    /// An event of a type runread does not know fell inside this run: no answer is taken.
    pub unknown_event: bool,
}

/// The answer a run announced: the lines of its last response that carry text, and their text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeCandidate {
    /// The uuids of the answer's lines, in order (the last is the run's final entry).
    pub answer_uuids: Vec<String>,
    /// SHA-256 of each answer line's text.
    pub line_text_sha256s: Vec<String>,
    /// The answer: the lines' texts joined by `\n`, equal to `result.result`.
    pub text: String,
    /// [`runread_sessions::answer_digest`] of the lines' digests: what ingest records as the
    /// run's `final_text_sha256`.
    pub text_digest: String,
    pub truncated: bool,
}

/// Why a run has no candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCandidate {
    /// Claude Code reported no answer (an error, an interruption, no `result`), or the run did
    /// not end in a model response without tool calls.
    NotAnswered,
    /// The last response's text is not what `result.result` reports.
    Differs,
}

impl ClaudeTracked {
    /// The final proof of a run that never settled, from how it ended.
    pub fn closing_proof(&self) -> Proof {
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
        let reason = match &self.outcome {
            _ if self.interrupted => "the run was interrupted",
            None => "the agent ended before reporting the run's result",
            Some(o) if o.aborted() => "the run was interrupted",
            Some(o) if o.is_error && o.terminal_reason.as_deref() == Some("api_error") => {
                "the provider failed"
            }
            Some(o) if o.is_error => "the agent reported an error",
            Some(_) => match self.candidate() {
                Err(NoCandidate::Differs) => {
                    return Proof::Refused {
                        reason: Refusal::Mismatch.as_str().into(),
                    };
                }
                _ => "the run did not end in an answer",
            },
        };
        Proof::NoAnswer {
            reason: reason.into(),
        }
    }

    /// The candidate answer of a run Claude Code reported as answered.
    pub fn candidate(&self) -> Result<ClaudeCandidate, NoCandidate> {
        let outcome = self.outcome.as_ref().ok_or(NoCandidate::NotAnswered)?;
        let result = outcome.result.as_ref().ok_or(NoCandidate::NotAnswered)?;
        if !outcome.answered() || self.interrupted {
            return Err(NoCandidate::NotAnswered);
        }
        let last = self.response.last().ok_or(NoCandidate::NotAnswered)?;
        if self.response.iter().any(|l| l.tool_use || l.synthetic) {
            return Err(NoCandidate::NotAnswered);
        }
        // As the session reader cuts it: the response's lines with text; a response without
        // text has its last line's (empty) text as the answer.
        let mut lines: Vec<&ResponseLine> = self
            .response
            .iter()
            .filter(|l| !l.text.is_empty())
            .collect();
        if lines.is_empty() {
            lines.push(last);
        }
        let text = lines
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if text != *result {
            return Err(NoCandidate::Differs);
        }
        let line_text_sha256s: Vec<String> = lines
            .iter()
            .map(|l| runread_core::sha256_hex(l.text.as_bytes()))
            .collect();
        Ok(ClaudeCandidate {
            answer_uuids: lines.iter().map(|l| l.uuid.clone()).collect(),
            text_digest: runread_sessions::answer_digest(
                line_text_sha256s.iter().map(String::as_str),
            ),
            line_text_sha256s,
            text,
            truncated: outcome.stop_reason.as_deref() == Some("max_tokens"),
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct ClaudeSupervision {
    pub init: Option<Init>,
    pub runs: Vec<ClaudeTracked>,
    phase: Option<Phase>,
    /// Tool calls of the main thread started and not answered, by id (name kept for the
    /// terminal).
    open_tools: BTreeMap<String, String>,
    retrying: bool,
    compacting: bool,
    /// Lines that were not events.
    pub faults: u64,
    /// Events of a type runread does not know.
    pub unknown_events: u64,
    /// A second `init`, or events before the first: the stream is not one Claude Code session.
    pub broken: bool,
}

impl ClaudeSupervision {
    pub fn new() -> ClaudeSupervision {
        ClaudeSupervision::default()
    }

    /// The phase of the current run, from the stream (`None` before `init`).
    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }

    pub fn open_tools(&self) -> usize {
        self.open_tools.len()
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

    /// The run the next message belongs to: the open one, or a new one after a `result`.
    fn open_run(&mut self) -> &mut ClaudeTracked {
        if self.runs.last().is_none_or(|r| r.outcome.is_some()) {
            self.runs.push(ClaudeTracked::default());
        }
        let n = self.runs.len() - 1;
        &mut self.runs[n]
    }

    fn current_phase(&self) -> Phase {
        if self.compacting {
            Phase::Compacting
        } else if self.retrying {
            Phase::Retrying
        } else if !self.open_tools.is_empty() {
            Phase::WaitingOnTool
        } else if self.runs.last().is_some_and(|r| r.outcome.is_some()) {
            Phase::Ended
        } else {
            Phase::Running
        }
    }

    pub fn apply(&mut self, event: &ClaudeEvent) -> Step {
        if self.init.is_none() && !matches!(event, ClaudeEvent::Init(_)) {
            self.broken = true;
            return Step::Nothing;
        }
        let before = (self.phase, self.runs.len());
        let step = match event {
            ClaudeEvent::Init(init) => {
                if self.init.is_some() {
                    self.broken = true;
                } else {
                    self.init = Some(init.clone());
                    // `claude -p` answers one prompt: its run starts now.
                    self.runs.push(ClaudeTracked::default());
                }
                Step::Changed
            }
            // A subagent's messages are its own transcript's.
            ClaudeEvent::Assistant {
                sidechain: true, ..
            }
            | ClaudeEvent::User {
                sidechain: true, ..
            } => Step::Nothing,
            ClaudeEvent::Assistant {
                uuid,
                message_id,
                synthetic,
                error,
                blocks,
                ..
            } => self.assistant(uuid, message_id, *synthetic || *error, blocks),
            ClaudeEvent::User { uuid, kind, .. } => self.user(uuid, kind),
            ClaudeEvent::Retry { .. } => {
                self.open_run();
                self.retrying = true;
                Step::Changed
            }
            ClaudeEvent::Status { compacting } => {
                self.compacting = *compacting;
                Step::Changed
            }
            ClaudeEvent::Result(outcome) => self.result(outcome),
            ClaudeEvent::TaskStarted { .. } | ClaudeEvent::Ignored => Step::Nothing,
            ClaudeEvent::Unknown => {
                self.unknown_events += 1;
                // Inside the run (before its `result`); after it, the run is told already.
                match self.runs.last_mut() {
                    Some(run) if run.outcome.is_none() => {
                        run.unknown_event = true;
                        Step::Changed
                    }
                    _ => Step::Nothing,
                }
            }
        };
        if !self.runs.is_empty() {
            self.phase = Some(self.current_phase());
        }
        match step {
            Step::Nothing if before != (self.phase, self.runs.len()) => Step::Changed,
            s => s,
        }
    }

    /// A main-thread assistant message: one line of the open run's response (a new response
    /// unless it shares the last line's `message.id`), its tool calls opened.
    fn assistant(
        &mut self,
        uuid: &str,
        message_id: &Option<String>,
        synthetic: bool,
        blocks: &[Block],
    ) -> Step {
        self.retrying = false;
        let mut opened = Vec::new();
        let run = self.open_run();
        run.uuids.push(uuid.to_owned());
        let same_response = message_id.is_some()
            && run
                .response
                .last()
                .is_some_and(|l| l.message_id == *message_id);
        if !same_response {
            run.response.clear();
        }
        let text = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        for b in blocks {
            if let Block::ToolUse { id, name, .. } = b {
                opened.push((id.clone(), name.clone()));
            }
        }
        run.response.push(ResponseLine {
            uuid: uuid.to_owned(),
            message_id: message_id.clone(),
            text,
            tool_use: !opened.is_empty(),
            synthetic,
        });
        self.open_tools.extend(opened);
        Step::Changed
    }

    /// A main-thread user message: it ends the response so far, answers tool calls, or
    /// interrupts the run.
    fn user(&mut self, uuid: &str, kind: &UserKind) -> Step {
        self.retrying = false;
        let run = self.open_run();
        run.uuids.push(uuid.to_owned());
        run.response.clear();
        match kind {
            UserKind::ToolResults(results) => {
                for (id, _) in results {
                    self.open_tools.remove(id);
                }
            }
            UserKind::Interrupt => {
                run.interrupted = true;
                self.open_tools.clear();
            }
            UserKind::Other => {}
        }
        Step::Changed
    }

    /// The `result` that ends the open run: it settles when it answered and nothing tainted it.
    fn result(&mut self, outcome: &Outcome) -> Step {
        self.retrying = false;
        self.compacting = false;
        self.open_tools.clear();
        let run = self.open_run();
        run.outcome = Some(outcome.clone());
        let settle = outcome.answered() && !run.faulted && !run.unknown_event && !run.interrupted;
        let n = self.runs.len() - 1;
        if settle {
            Step::Settle(n)
        } else {
            Step::Changed
        }
    }
}

/// The prompt (a `user` entry with the history role of a prompt) that the entry `uuid` chains
/// back to, parent by parent, in the store's index of a Claude Code session.
pub fn prompt_of(entries: &[runread_sessions::EntrySummary], uuid: &str) -> Option<String> {
    let by_id: std::collections::HashMap<&str, &runread_sessions::EntrySummary> =
        entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut cur = by_id.get(uuid).copied();
    for _ in 0..=entries.len() {
        let e = cur?;
        if e.role.as_deref() == Some(runread_sessions::claude::role::USER) {
            return Some(e.id.clone());
        }
        cur = e.parent_id.as_deref().and_then(|p| by_id.get(p).copied());
    }
    None
}

/// The one prompt written after the entry `leaf` (anywhere, for a new session), if there is
/// exactly one.
pub fn prompt_after(
    entries: &[runread_sessions::EntrySummary],
    leaf: Option<&str>,
) -> Option<String> {
    let after = match leaf {
        Some(leaf) => entries.iter().find(|e| e.id == leaf)?.line,
        None => 0,
    };
    let mut prompts = entries.iter().filter(|e| {
        e.line > after && e.role.as_deref() == Some(runread_sessions::claude::role::USER)
    });
    match (prompts.next(), prompts.next()) {
        (Some(one), None) => Some(one.id.clone()),
        _ => None,
    }
}
