//! The machine that follows one Codex invocation: its stream into [`CodexSupervision`], its
//! rollout file under `sessions/`, its proof, and how it ended.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use runread_sessions::{EntrySummary, FileIdentity};
use runread_store::{Foreground, Phase, Proof};

use crate::codex::events::{self, CodexEvent, Item, ItemKind};
use crate::codex::state::{self, CodexSupervision, CodexTracked, TurnEnd};
use crate::codex::{find, proof};
use crate::exit::reported_foreground;
use crate::machine::Machine;
use crate::proof::{Pinned, Refusal, Verified};
use crate::stream::Step;
use crate::terminal::Terminal;

pub(crate) struct CodexMachine {
    sup: CodexSupervision,
    /// Codex's `sessions` directory (`None`: it cannot be named — no `CODEX_HOME`, no `HOME`).
    sessions: Option<PathBuf>,
}

impl CodexMachine {
    pub(crate) fn new(sessions: Option<PathBuf>) -> CodexMachine {
        CodexMachine {
            sup: CodexSupervision::new(),
            sessions,
        }
    }
}

/// A completed item for the terminal: the model's message on stdout, file changes and failures
/// on stderr.
fn show_completed(terminal: &Terminal, item: &Item, sup: &CodexSupervision) {
    match &item.kind {
        ItemKind::AgentMessage { text } => terminal.text(text),
        ItemKind::FileChange { changes, .. } => {
            for (path, kind) in changes {
                terminal.say(&format!("  ▸ {kind}: {path}"));
            }
            if item.kind.failed() {
                terminal.say("  ▸ file change failed");
            }
        }
        ItemKind::CommandExecution { exit_code, .. } if item.kind.failed() => {
            let label = sup.tool_label(&item.id).unwrap_or("command");
            match exit_code {
                Some(code) => terminal.say(&format!("  ▸ {label} failed (exit {code})")),
                None => terminal.say(&format!("  ▸ {label} failed")),
            }
        }
        ItemKind::McpToolCall { .. } if item.kind.failed() => terminal.say(&format!(
            "  ▸ {} failed",
            sup.tool_label(&item.id).unwrap_or("tool")
        )),
        ItemKind::Error { message } => terminal.say(&format!("  ! {message}")),
        _ => {}
    }
}

/// Codex's events for the terminal: the model's messages on stdout, everything else on stderr.
/// Called before the event is applied (an open tool's label is still known).
fn show(terminal: &Terminal, event: &CodexEvent, sup: &CodexSupervision) {
    match event {
        CodexEvent::ItemCompleted(item) => show_completed(terminal, item, sup),
        CodexEvent::ItemStarted(item) if sup.tool_label(&item.id).is_none() => match &item.kind {
            ItemKind::CommandExecution { command, .. } => terminal.say(&format!("  ▸ {command}")),
            ItemKind::McpToolCall { server, tool, .. } => {
                terminal.say(&format!("  ▸ {server}.{tool}"))
            }
            ItemKind::WebSearch { query } => terminal.say(&format!("  ▸ web search: {query}")),
            _ => {}
        },
        CodexEvent::Error { message } => terminal.say(&format!("  ✗ {message}")),
        // Codex reports the failure as an `error` first: shown once.
        CodexEvent::TurnFailed { message }
            if sup
                .runs
                .last()
                .and_then(|r| r.last_error.as_ref())
                .is_none_or(|e| e != message) =>
        {
            terminal.say(&format!("  ✗ {message}"))
        }
        _ => {}
    }
}

/// Codex's exit read with what it reported on its stream. It exits 0 after `turn.completed`, and
/// 1 after `turn.failed` — its normal end for a failure, as Claude Code's: the run itself is
/// failed, and its proof says so — and 1 when interrupted (the stream then just stops).
pub fn foreground(
    status: ExitStatus,
    interrupted: bool,
    runs: &[CodexTracked],
) -> (Foreground, String, i32) {
    let all_reported = !runs.is_empty() && runs.iter().all(|r| r.end.is_some());
    let last_failed = runs
        .last()
        .is_some_and(|r| matches!(r.end, Some(TurnEnd::Failed(_))));
    reported_foreground(status, interrupted, all_reported, last_failed)
}

impl Machine for CodexMachine {
    fn run_count(&self) -> usize {
        self.sup.runs.len()
    }

    fn unknown_events(&self) -> u64 {
        self.sup.unknown_events
    }

    fn fault(&mut self) {
        self.sup.fault();
    }

    fn apply_line(&mut self, line: &[u8], terminal: &mut Terminal) -> Option<(Step, bool)> {
        let event = events::parse(line).ok()?;
        show(terminal, &event, &self.sup);
        // Codex writes the turn's start before it announces it, and each item before or as it
        // announces it: everything from `turn.started` on is worth a look at the file.
        let persisted = !matches!(
            event,
            CodexEvent::ThreadStarted { .. } | CodexEvent::Unknown
        );
        Some((self.sup.apply(&event), persisted))
    }

    fn phase(&self) -> Option<Phase> {
        self.sup.phase()
    }

    /// The stream does not name the cwd: the session is the supervised cwd's, which its rollout
    /// file must then say.
    fn session(&self) -> Option<(String, Option<String>)> {
        self.sup.thread_id.clone().map(|t| (t, None))
    }

    fn find_session_file(&self, session_id: &str, _cwd: &str) -> Option<PathBuf> {
        find::find_rollout(self.sessions.as_deref()?, session_id)
    }

    fn pin(&self, path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
        proof::pin(path, pinned)
    }

    /// This invocation's turns, in file order, one per tracked run: those after the pinned leaf.
    fn run_starts(&self, entries: &[EntrySummary], leaf: Option<&str>) -> Vec<Option<String>> {
        let turns = state::turns_after(entries, leaf)
            .map(|t| t.for_runs())
            .unwrap_or_default();
        (0..self.sup.runs.len())
            .map(|n| turns.get(n).cloned())
            .collect()
    }

    /// Codex reports a cut-off answer as a failed turn: a candidate is never truncated.
    fn verify(&self, n: usize, path: &Path, pinned: &Pinned) -> Result<(Verified, bool), Refusal> {
        let tracked = self.sup.runs.get(n).ok_or(Refusal::NotFound)?;
        let candidate = tracked.candidate().ok_or(Refusal::NotOnBranch)?;
        proof::verify(path, pinned, &candidate).map(|v| (v, false))
    }

    /// The stream never names the turn: the run is the one the file proved.
    fn located_by_proof(&self) -> bool {
        true
    }

    fn closing_proof(&self, n: usize, interrupted: bool) -> Option<Proof> {
        self.sup.runs.get(n).map(|r| r.closing_proof(interrupted))
    }

    fn foreground(&self, status: ExitStatus, interrupted: bool) -> (Foreground, String, i32) {
        foreground(status, interrupted, &self.sup.runs)
    }
}
