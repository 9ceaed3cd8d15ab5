//! The machine that follows one Gemini CLI invocation: its stream into [`GeminiSupervision`],
//! its chat file under `tmp/`, its proof, and how it ended.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use runread_core::Agent;
use runread_sessions::{EntrySummary, FileIdentity};
use runread_store::{Foreground, Phase, Proof};

use crate::exit::foreground_of;
use crate::gemini::events::{self, GeminiEvent};
use crate::gemini::state::{GeminiSupervision, GeminiTracked, RunEnd};
use crate::gemini::{args, proof};
use crate::machine::Machine;
use crate::proof::{Pinned, Refusal, Verified};
use crate::stream::Step;
use crate::terminal::Terminal;

pub(crate) struct GeminiMachine {
    sup: GeminiSupervision,
    /// The model's text since the last other event, shown whole when it ends (a line runread
    /// prints between two deltas would cut the answer on stdout).
    pending: String,
    /// Gemini CLI's `tmp` directory (`None`: it cannot be named — no `GEMINI_CLI_HOME`, no
    /// `HOME`).
    tmp: Option<PathBuf>,
}

impl GeminiMachine {
    pub(crate) fn new(tmp: Option<PathBuf>) -> GeminiMachine {
        GeminiMachine {
            sup: GeminiSupervision::new(),
            pending: String::new(),
            tmp,
        }
    }
}

/// Gemini CLI's events for the terminal: the model's text on stdout, everything else on stderr.
/// Called before the event is applied (an open tool's name is still known).
fn show(terminal: &Terminal, event: &GeminiEvent, sup: &GeminiSupervision) {
    match event {
        GeminiEvent::ToolUse { name, .. } => terminal.say(&format!("  ▸ {name}")),
        GeminiEvent::ToolResult { id, failed: true } => {
            terminal.say(&format!(
                "  ▸ {} failed",
                sup.tool_name(id).unwrap_or("tool")
            ));
        }
        GeminiEvent::Error { message } => terminal.failure(message),
        GeminiEvent::Result {
            success: false,
            message,
        } if !message.is_empty() => terminal.failure(message),
        _ => {}
    }
}

/// Most text held back for the terminal before it is shown anyway.
const PENDING_MAX_BYTES: usize = 1024 * 1024;

/// Gemini CLI's exit read with what it reported on its stream. It exits 0 after a `result`,
/// whether a success or a failure of its own (a stream without a finish reason), and with the
/// provider's HTTP status modulo 256 after a failed request (500 → 244, 429 → 173): once its
/// stream reported the run's end, a failure so reported is its normal end — the run itself is
/// failed, and its proof says so. An interrupt exits 0 without a `result`: stopped, not done.
pub fn foreground(
    status: ExitStatus,
    interrupted: bool,
    runs: &[GeminiTracked],
) -> (Foreground, String, i32) {
    let (fg, exit, code) = foreground_of(status, interrupted);
    let all_reported = !runs.is_empty() && runs.iter().all(|r| r.end.is_some());
    let last_failed = runs
        .last()
        .is_some_and(|r| matches!(r.end, Some(RunEnd::Failed(_))));
    let fg = match (status.code(), fg) {
        (Some(0), Foreground::Completed) if !all_reported => Foreground::Cancelled,
        (Some(c), Foreground::Failed | Foreground::Cancelled)
            if c != 0 && all_reported && last_failed =>
        {
            Foreground::Completed
        }
        (_, fg) => fg,
    };
    (fg, exit, code)
}

impl Machine for GeminiMachine {
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
        match &event {
            GeminiEvent::Assistant { text } => {
                self.pending.push_str(text);
                if self.pending.len() > PENDING_MAX_BYTES {
                    terminal.stream_text(&std::mem::take(&mut self.pending));
                }
            }
            _ => {
                if !self.pending.is_empty() {
                    terminal.stream_text(&std::mem::take(&mut self.pending));
                }
                terminal.end_text();
            }
        }
        show(terminal, &event, &self.sup);
        // Gemini CLI writes the prompt as it announces it, and each record before or as it
        // streams on: everything after `init` is worth a look at the file.
        let persisted = !matches!(event, GeminiEvent::Init { .. } | GeminiEvent::Unknown);
        Some((self.sup.apply(&event), persisted))
    }

    fn phase(&self) -> Option<Phase> {
        self.sup.phase()
    }

    /// The stream does not name the cwd: the session is the supervised cwd's, which its chat
    /// file's project root must then be.
    fn session(&self) -> Option<(String, Option<String>)> {
        self.sup.session_id.clone().map(|s| (s, None))
    }

    fn find_session_file(&self, session_id: &str, _cwd: &str) -> Option<PathBuf> {
        args::find_session(self.tmp.as_deref()?, session_id)
    }

    fn pin(&self, path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
        proof::pin(path, pinned)
    }

    /// This invocation's runs, in file order, one per tracked run: those after the pinned leaf.
    fn run_starts(&self, entries: &[EntrySummary], leaf: Option<&str>) -> Vec<Option<String>> {
        let branch = runread_sessions::cut_runs(Agent::Gemini, entries, &[], false);
        let mine: Vec<String> = proof::runs_after(entries, &branch.runs, leaf)
            .map(|runs| runs.into_iter().map(|r| r.run_id.clone()).collect())
            .unwrap_or_default();
        (0..self.sup.runs.len())
            .map(|n| mine.get(n).cloned())
            .collect()
    }

    /// Gemini CLI marks no cut-off, not even on its stream: a candidate is never known to be
    /// truncated (the answer served says its truncation is not known).
    fn verify(&self, n: usize, path: &Path, pinned: &Pinned) -> Result<(Verified, bool), Refusal> {
        let tracked = self.sup.runs.get(n).ok_or(Refusal::NotFound)?;
        let candidate = tracked.candidate().ok_or(Refusal::NotOnBranch)?;
        proof::verify(path, pinned, &candidate).map(|v| (v, false))
    }

    /// The stream never names the prompt's record: the run is the one the file proved.
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
