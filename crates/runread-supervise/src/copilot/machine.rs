//! The machine that follows one Copilot CLI invocation: its stream into
//! [`CopilotSupervision`], its session file under `session-state/`, its proof, and how it ended.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use runread_sessions::{EntrySummary, FileIdentity};
use runread_store::{Foreground, Phase, Proof};

use crate::copilot::events::{self, CopilotEvent};
use crate::copilot::state::{CopilotSupervision, CopilotTracked};
use crate::copilot::{args, proof};
use crate::exit::foreground_of;
use crate::machine::Machine;
use crate::proof::{Pinned, Refusal, Verified};
use crate::stream::Step;
use crate::terminal::Terminal;

pub(crate) struct CopilotMachine {
    sup: CopilotSupervision,
    /// Copilot CLI's `session-state` directory for this invocation (`None`: it cannot be named).
    state: Option<PathBuf>,
}

impl CopilotMachine {
    pub(crate) fn new(state: Option<PathBuf>) -> CopilotMachine {
        CopilotMachine {
            sup: CopilotSupervision::new(),
            state,
        }
    }
}

/// Copilot CLI's events for the terminal: the model's text on stdout (each response whole, as
/// its `assistant.message` carries it), everything else on stderr.
fn show(terminal: &mut Terminal, event: &CopilotEvent, sup: &CopilotSupervision) {
    match event {
        CopilotEvent::Message { text, .. } if !text.is_empty() => {
            terminal.stream_text(text);
            terminal.end_text();
        }
        CopilotEvent::ToolStart { name, .. } => terminal.say(&format!("  ▸ {name}")),
        CopilotEvent::ToolEnd { id, failed: true } => {
            terminal.say(&format!(
                "  ▸ {} failed",
                sup.tool_name(id).unwrap_or("tool")
            ));
        }
        CopilotEvent::Error { message } if !message.is_empty() => terminal.failure(message),
        _ => {}
    }
}

/// Copilot CLI's exit read with what it reported on its stream. It exits with the code its
/// `result` names (1 after a failure it reported: its normal end — the run itself is failed, and
/// its proof says so). An interrupt exits 0, with an `abort` on the stream (and a `result` when
/// the model was still thinking) or with no `result` at all: stopped, not done.
pub fn foreground(
    status: ExitStatus,
    interrupted: bool,
    runs: &[CopilotTracked],
) -> (Foreground, String, i32) {
    let (fg, exit, code) = foreground_of(status, interrupted);
    let reported = runs.last().and_then(|r| r.exit_code);
    let stopped = runs.is_empty() || runs.iter().any(|r| r.aborted || r.exit_code.is_none());
    let fg = match (status.code(), fg) {
        (Some(0), Foreground::Completed) if stopped => Foreground::Cancelled,
        (Some(c), Foreground::Failed | Foreground::Cancelled)
            if c != 0 && !stopped && reported == Some(i64::from(c)) =>
        {
            Foreground::Completed
        }
        (_, fg) => fg,
    };
    (fg, exit, code)
}

impl Machine for CopilotMachine {
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
        // The session file holds every event but the ephemeral ones (deltas, tool output); its
        // name is known at `result`.
        let persisted = !matches!(
            event,
            CopilotEvent::Delta { .. } | CopilotEvent::Other | CopilotEvent::Unknown
        );
        Some((self.sup.apply(&event), persisted))
    }

    fn phase(&self) -> Option<Phase> {
        self.sup.phase()
    }

    /// Named by `result`, at the invocation's end; the cwd is the supervised one, which the
    /// file's `session.start` must name.
    fn session(&self) -> Option<(String, Option<String>)> {
        self.sup.session_id.clone().map(|s| (s, None))
    }

    fn find_session_file(&self, session_id: &str, _cwd: &str) -> Option<PathBuf> {
        args::find_session(self.state.as_deref()?, session_id)
    }

    fn pin(&self, path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
        proof::pin(path, pinned)
    }

    /// The stream carries the file's own ids: each run is its prompt's event.
    fn run_starts(&self, entries: &[EntrySummary], _leaf: Option<&str>) -> Vec<Option<String>> {
        self.sup
            .runs
            .iter()
            .map(|r| {
                entries
                    .iter()
                    .any(|e| e.id == r.prompt_id)
                    .then(|| r.prompt_id.clone())
            })
            .collect()
    }

    fn verify(&self, n: usize, path: &Path, pinned: &Pinned) -> Result<(Verified, bool), Refusal> {
        let tracked = self.sup.runs.get(n).ok_or(Refusal::NotFound)?;
        let candidate = tracked.candidate().ok_or(Refusal::NotOnBranch)?;
        proof::verify(path, pinned, &tracked.prompt_id, &candidate)
    }

    fn located_by_proof(&self) -> bool {
        false
    }

    fn closing_proof(&self, n: usize, interrupted: bool) -> Option<Proof> {
        self.sup.runs.get(n).map(|r| r.closing_proof(interrupted))
    }

    fn foreground(&self, status: ExitStatus, interrupted: bool) -> (Foreground, String, i32) {
        foreground(status, interrupted, &self.sup.runs)
    }
}
