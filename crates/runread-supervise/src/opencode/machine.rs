//! The machine that follows one OpenCode invocation: its stream into [`OpenCodeSupervision`],
//! its session in OpenCode's database, its proof, and how it ended.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use runread_sessions::{EntrySummary, FileIdentity};
use runread_store::{Foreground, Phase, Proof};

use crate::exit::reported_foreground;
use crate::machine::Machine;
use crate::opencode::events::{self, OpenCodeKind};
use crate::opencode::state::{OpenCodeSupervision, OpenCodeTracked};
use crate::opencode::{args, proof};
use crate::proof::{Pinned, Refusal, Verified};
use crate::stream::Step;
use crate::terminal::Terminal;

pub(crate) struct OpenCodeMachine {
    sup: OpenCodeSupervision,
    /// OpenCode's database for this invocation (`None`: it cannot be named, or it keeps its
    /// sessions in memory).
    database: Option<PathBuf>,
}

impl OpenCodeMachine {
    pub(crate) fn new(database: Option<PathBuf>) -> OpenCodeMachine {
        OpenCodeMachine {
            sup: OpenCodeSupervision::new(),
            database,
        }
    }
}

/// OpenCode's events for the terminal: the model's text on stdout (each part whole, as its
/// `text` event carries it), everything else on stderr.
fn show(terminal: &mut Terminal, kind: &OpenCodeKind) {
    match kind {
        OpenCodeKind::Text { text, .. } if !text.is_empty() => {
            terminal.stream_text(text);
            terminal.end_text();
        }
        OpenCodeKind::Tool {
            name, failed: true, ..
        } => terminal.say(&format!("  ▸ {name} failed")),
        OpenCodeKind::Tool { name, .. } => terminal.say(&format!("  ▸ {name}")),
        OpenCodeKind::Error { message } if !message.is_empty() => terminal.failure(message),
        _ => {}
    }
}

/// OpenCode's exit read with what it reported on its stream. It exits 0 after an answer, 1 after
/// a failure it reported (an `error` event: its normal end — the run itself is failed, and its
/// proof says so). An interrupt kills it (SIGINT, no handler): stopped, not done; an exit 0
/// without a reported end is stopped too.
pub fn foreground(
    status: ExitStatus,
    interrupted: bool,
    runs: &[OpenCodeTracked],
) -> (Foreground, String, i32) {
    let all_reported = !runs.is_empty() && runs.iter().all(OpenCodeTracked::reported);
    let last_failed = runs.last().is_some_and(|r| r.error.is_some());
    reported_foreground(status, interrupted, all_reported, last_failed)
}

impl Machine for OpenCodeMachine {
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
        show(terminal, &event.kind);
        // OpenCode streams a part once it saved it: every known event is in the database.
        let persisted = !matches!(event.kind, OpenCodeKind::Other | OpenCodeKind::Unknown);
        Some((self.sup.apply(&event), persisted))
    }

    fn phase(&self) -> Option<Phase> {
        self.sup.phase()
    }

    /// Named by the stream's first event; the cwd is the supervised one, which the session's
    /// directory must be.
    fn session(&self) -> Option<(String, Option<String>)> {
        self.sup.session_id.clone().map(|s| (s, None))
    }

    fn find_session_file(&self, session_id: &str, _cwd: &str) -> Option<PathBuf> {
        args::find_session(self.database.as_deref()?, session_id)
    }

    fn pin(&self, path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
        proof::pin(path, pinned)
    }

    /// The stream carries the database's message ids: each run is the prompt its messages
    /// answer. A run whose stream reported only an `error` names no message: it is the session's
    /// last run, once OpenCode marked that failed.
    fn run_starts(&self, entries: &[EntrySummary], _leaf: Option<&str>) -> Vec<Option<String>> {
        self.sup
            .runs
            .iter()
            .map(|r| {
                proof::run_of_messages(entries, &r.messages).or_else(|| {
                    (r.messages.is_empty() && r.error.is_some())
                        .then(|| proof::last_failed_run(entries))
                        .flatten()
                })
            })
            .collect()
    }

    /// The database marks a cut at the length limit (`finish: length`), as the stream does.
    fn verify(&self, n: usize, path: &Path, pinned: &Pinned) -> Result<(Verified, bool), Refusal> {
        let tracked = self.sup.runs.get(n).ok_or(Refusal::NotFound)?;
        let candidate = tracked.candidate().ok_or(Refusal::NotOnBranch)?;
        proof::verify(path, pinned, &candidate)
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
