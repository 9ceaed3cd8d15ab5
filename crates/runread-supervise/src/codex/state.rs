//! The supervision state machine for Codex: `--json` events in, the run of this invocation, its
//! phase and its candidate answer out. Pure (no I/O), so every transition is tested on real
//! recorded streams (`fixtures/codex/*/events-N.jsonl`).
//!
//! `codex exec` runs one turn: its run starts at `turn.started` and ends at `turn.completed` or
//! `turn.failed`; an interrupt stops the stream with neither. The candidate answer is the text of
//! the last `agent_message` item completed in the turn — what Codex writes to the rollout file as
//! the turn's `task_complete.last_agent_message`. Only `turn.completed` settles the run; an
//! `agent_message` never does (the turn may go on, and the line may reach the stream before the
//! file).
//!
//! The stream names no turn id: the run is found in the rollout file as a turn that started
//! after the point pinned at start, or was open then ([`turns_after`]) — for the live record,
//! and for the proof, which also needs the turn's reported answer to be the candidate.

use std::collections::BTreeMap;

use runread_sessions::{EntryKind, EntrySummary};
use runread_store::{Phase, Proof};

use crate::codex::events::{CodexEvent, ItemKind};
use crate::refusal::Refusal;
use crate::stream::Step;

/// How Codex ended a turn on its stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// `turn.completed`.
    Completed,
    /// `turn.failed`, with Codex's message.
    Failed(String),
}

/// The run of this invocation (one per `turn.started`, in stream order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexTracked {
    /// The text of the last `agent_message` completed in the turn.
    pub last_message: Option<String>,
    /// How the turn ended; `None` while it runs, and when the stream stopped (an interrupt).
    pub end: Option<TurnEnd>,
    /// The last failure Codex reported on the stream during the turn (`error`).
    pub last_error: Option<String>,
    /// A line of the stream inside this run could not be read: no proof can be built on it.
    pub faulted: bool,
    /// An event of a type runread does not know fell inside this run: no answer is taken.
    pub unknown_event: bool,
}

/// The answer a turn announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexCandidate {
    pub text: String,
    /// SHA-256 of the text: what the rollout's `last_agent_message` and the turn's last assistant
    /// message must hash to.
    pub text_sha256: String,
}

impl CodexTracked {
    /// The candidate answer of a turn Codex reported as completed with a message.
    pub fn candidate(&self) -> Option<CodexCandidate> {
        if self.end != Some(TurnEnd::Completed) || self.faulted || self.unknown_event {
            return None;
        }
        let text = self.last_message.clone()?;
        Some(CodexCandidate {
            text_sha256: runread_core::sha256_hex(text.as_bytes()),
            text,
        })
    }

    /// The final proof of a run that never settled, from how it ended. `interrupted`: runread
    /// passed an interrupt on to the agent (Codex's stream then just stops).
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
        // Fixed texts: Codex's own message may quote the provider's body.
        let reason = match &self.end {
            Some(TurnEnd::Failed(_)) => "the agent reported that the turn failed",
            Some(TurnEnd::Completed) if self.last_message.is_none() => {
                "the turn ended without an answer"
            }
            Some(TurnEnd::Completed) => "the run did not end in an answer",
            None if interrupted => "the run was interrupted",
            None => "the agent ended before reporting the turn's end",
        };
        Proof::NoAnswer {
            reason: reason.into(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct CodexSupervision {
    /// The thread id from `thread.started`: the session, and the rollout file's name.
    pub thread_id: Option<String>,
    pub runs: Vec<CodexTracked>,
    phase: Option<Phase>,
    /// Tool items started and not completed, by the stream's item id (a label kept for the
    /// terminal).
    open_items: BTreeMap<String, String>,
    /// Lines that were not events.
    pub faults: u64,
    /// Events of a type runread does not know.
    pub unknown_events: u64,
    /// A second, different `thread.started`, or events before the first: the stream is not one
    /// Codex thread.
    pub broken: bool,
}

impl CodexSupervision {
    pub fn new() -> CodexSupervision {
        CodexSupervision::default()
    }

    /// The phase of the current run, from the stream (`None` before the first turn).
    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }

    pub fn open_tools(&self) -> usize {
        self.open_items.len()
    }

    /// A line that is not an event: it taints the run it falls in.
    pub fn fault(&mut self) {
        self.faults += 1;
        if let Some(run) = self.runs.last_mut() {
            run.faulted = true;
        }
    }

    /// The run still open (started, not ended), if any.
    fn open_run(&mut self) -> Option<&mut CodexTracked> {
        self.runs.last_mut().filter(|r| r.end.is_none())
    }

    fn current_phase(&self) -> Phase {
        if !self.open_items.is_empty() {
            Phase::WaitingOnTool
        } else if self.runs.last().is_some_and(|r| r.end.is_some()) {
            Phase::Ended
        } else {
            Phase::Running
        }
    }

    pub fn apply(&mut self, event: &CodexEvent) -> Step {
        if self.thread_id.is_none() && !matches!(event, CodexEvent::ThreadStarted { .. }) {
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

    /// What `event` does to the thread and its runs; the phase is derived from them after.
    fn transition(&mut self, event: &CodexEvent) -> Step {
        match event {
            CodexEvent::ThreadStarted { thread_id } => self.thread_started(thread_id),
            CodexEvent::TurnStarted => {
                // A turn still open never ended on the stream: it stays without an end.
                self.open_items.clear();
                self.runs.push(CodexTracked::default());
                Step::Changed
            }
            CodexEvent::ItemStarted(item) | CodexEvent::ItemUpdated(item) => {
                if self.open_run().is_some() && item.kind.is_tool() {
                    self.open_items.insert(item.id.clone(), label(&item.kind));
                }
                Step::Nothing
            }
            CodexEvent::ItemCompleted(item) => {
                self.open_items.remove(&item.id);
                if let (Some(run), ItemKind::AgentMessage { text }) = (self.open_run(), &item.kind)
                {
                    run.last_message = Some(text.clone());
                }
                Step::Nothing
            }
            CodexEvent::Error { message } => {
                if let Some(run) = self.open_run() {
                    run.last_error = Some(message.clone());
                }
                Step::Nothing
            }
            CodexEvent::TurnCompleted => self.turn_ended(TurnEnd::Completed),
            CodexEvent::TurnFailed { message } => self.turn_ended(TurnEnd::Failed(message.clone())),
            CodexEvent::Unknown => {
                self.unknown_events += 1;
                if let Some(run) = self.open_run() {
                    run.unknown_event = true;
                }
                Step::Changed
            }
        }
    }

    /// `thread.started`: the stream's thread, named once; another one breaks the stream.
    fn thread_started(&mut self, thread_id: &str) -> Step {
        match &self.thread_id {
            None => {
                self.thread_id = Some(thread_id.to_owned());
                Step::Changed
            }
            Some(t) if t == thread_id => Step::Nothing,
            Some(_) => {
                self.broken = true;
                Step::Nothing
            }
        }
    }

    /// `turn.completed` or `turn.failed`: the open run ends as `end`, and settles if that gave it
    /// a candidate answer.
    fn turn_ended(&mut self, end: TurnEnd) -> Step {
        self.open_items.clear();
        match self.open_run() {
            Some(run) => {
                run.end = Some(end);
                let settle = run.candidate().is_some();
                let n = self.runs.len() - 1;
                if settle {
                    Step::Settle(n)
                } else {
                    Step::Changed
                }
            }
            // An end without a turn: not one `codex exec` stream.
            None => {
                self.broken = true;
                Step::Nothing
            }
        }
    }

    /// The label of an open tool item (for the terminal).
    pub fn tool_label(&self, id: &str) -> Option<&str> {
        self.open_items.get(id).map(String::as_str)
    }
}

fn label(kind: &ItemKind) -> String {
    match kind {
        ItemKind::CommandExecution { command, .. } => command.clone(),
        ItemKind::FileChange { .. } => "file change".into(),
        ItemKind::McpToolCall { server, tool, .. } => format!("{server}.{tool}"),
        ItemKind::WebSearch { query } => format!("web search: {query}"),
        _ => "tool".into(),
    }
}

/// The line number a Codex entry id names (entries of a rollout are named by their line).
pub fn entry_line(id: &str) -> Option<u64> {
    id.parse().ok()
}

/// The turns of a rollout file that may be this invocation's, given the point pinned at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PinnedTurns {
    /// The last turn started at or before the pinned entry that had not ended by then: Codex
    /// writes `task_started` before it announces the turn, so the pin may come after it — or a
    /// turn an earlier invocation left unended.
    pub open_at_pin: Option<String>,
    /// The turns whose `task_started` comes after the pinned entry, in file order.
    pub started_after: Vec<String>,
}

impl PinnedTurns {
    /// Every turn that may be this invocation's, in file order. A turn that ended before the pin
    /// is never among them.
    pub fn all(&self) -> Vec<String> {
        self.open_at_pin
            .iter()
            .chain(&self.started_after)
            .cloned()
            .collect()
    }

    /// The turns of this invocation's runs, in order, for its live record: those started after
    /// the pin, else the one open at the pin (a turn left unended by an earlier invocation is
    /// more likely than two invocations at once).
    pub fn for_runs(&self) -> Vec<String> {
        if self.started_after.is_empty() {
            self.open_at_pin.iter().cloned().collect()
        } else {
            self.started_after.clone()
        }
    }
}

/// The turns of a rollout file (its index `entries`, in file order) that may be this
/// invocation's, given `leaf`: the id of the last entry the file held when supervision pinned it
/// (`None`: the file did not exist yet, or held no turn — every turn may be). `None`: the leaf is
/// not an entry of the file (the file is not the one pinned).
pub fn turns_after(entries: &[EntrySummary], leaf: Option<&str>) -> Option<PinnedTurns> {
    let mut starts = entries.iter().filter(|e| e.kind == EntryKind::TurnStart);
    let Some(leaf) = leaf else {
        return Some(PinnedTurns {
            open_at_pin: None,
            started_after: starts.filter_map(|e| e.turn.clone()).collect(),
        });
    };
    let at = entry_line(leaf)?;
    entries.iter().find(|e| e.line == at)?;
    let started_after = starts
        .clone()
        .filter(|e| e.line > at)
        .filter_map(|e| e.turn.clone())
        .collect();
    let open_at_pin = starts
        .rfind(|e| e.line <= at)
        .and_then(|e| e.turn.as_deref())
        .filter(|turn| {
            !entries.iter().any(|e| {
                e.line <= at
                    && e.turn.as_deref() == Some(*turn)
                    && matches!(e.kind, EntryKind::TurnEnd | EntryKind::TurnAborted)
            })
        })
        .map(str::to_owned);
    Some(PinnedTurns {
        open_at_pin,
        started_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::events::Item;

    fn entry(line: u64, kind: EntryKind, turn: &str) -> EntrySummary {
        EntrySummary {
            kind,
            turn: Some(turn.into()),
            ..EntrySummary::at(line, 0, 0, line.to_string())
        }
    }

    #[test]
    fn the_turn_after_the_pin_is_found_whether_the_pin_came_before_or_after_its_start() {
        let entries = vec![
            entry(2, EntryKind::TurnStart, "t1"),
            entry(5, EntryKind::TurnEnd, "t1"),
            entry(7, EntryKind::TurnStart, "t2"),
            entry(9, EntryKind::Message, "t2"),
            entry(12, EntryKind::TurnEnd, "t2"),
        ];
        let all = |leaf| turns_after(&entries, leaf).unwrap().all();
        let live = |leaf| turns_after(&entries, leaf).unwrap().for_runs();
        assert_eq!(all(None), vec!["t1", "t2"]);
        assert_eq!(all(Some("5")), vec!["t2"]);
        // Pinned after t2's start (Codex wrote it before announcing the turn): t2, still open.
        assert_eq!(all(Some("7")), vec!["t2"]);
        assert_eq!(all(Some("9")), vec!["t2"]);
        assert_eq!(live(Some("9")), vec!["t2"]);
        // Pinned while t1 was open: t1 may be this invocation's, or left by an earlier one; the
        // live record takes the turn that started after the pin.
        assert_eq!(all(Some("2")), vec!["t1", "t2"]);
        assert_eq!(live(Some("2")), vec!["t2"]);
        // Pinned after t2 ended: nothing of this invocation yet.
        assert!(all(Some("12")).is_empty());
        // A leaf the file does not hold: not the file pinned.
        assert_eq!(turns_after(&entries, Some("6")), None);
        assert_eq!(turns_after(&entries, Some("x")), None);
    }

    fn msg(text: &str) -> CodexEvent {
        CodexEvent::ItemCompleted(Item {
            id: "item_9".into(),
            kind: ItemKind::AgentMessage { text: text.into() },
        })
    }

    #[test]
    fn an_end_without_a_turn_or_a_second_thread_breaks_the_stream() {
        let thread = |id: &str| CodexEvent::ThreadStarted {
            thread_id: id.into(),
        };
        let mut s = CodexSupervision::new();
        assert_eq!(s.apply(&CodexEvent::TurnStarted), Step::Nothing);
        assert!(s.broken, "events before thread.started");
        let mut s = CodexSupervision::new();
        s.apply(&thread("a"));
        assert_eq!(s.apply(&CodexEvent::TurnCompleted), Step::Nothing);
        assert!(s.broken, "turn.completed without turn.started");
        let mut s = CodexSupervision::new();
        s.apply(&thread("a"));
        s.apply(&thread("a"));
        assert!(!s.broken, "the same thread again");
        s.apply(&thread("b"));
        assert!(s.broken, "another thread");
        // Messages outside a turn are no run's.
        let mut s = CodexSupervision::new();
        s.apply(&thread("a"));
        s.apply(&msg("stray"));
        assert!(s.runs.is_empty());
    }
}
