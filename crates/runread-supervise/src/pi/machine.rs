//! The machine that follows one Pi invocation: its stream into [`Supervision`], its session file
//! in the directories it was told or its default one, its proof, and how it ended.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use runread_sessions::{EntrySummary, FileIdentity};
use runread_store::{Foreground, Phase, Proof};

use crate::exit::foreground_of;
use crate::machine::Machine;
use crate::pi::events::{self, Event};
use crate::pi::state::{Supervision, Tracked};
use crate::pi::{args, proof};
use crate::proof::{Pinned, Refusal, Verified};
use crate::stream::Step;
use crate::terminal::Terminal;

pub(crate) struct PiMachine {
    sup: Supervision,
    /// Where Pi keeps this invocation's session file.
    session_dirs: Vec<PathBuf>,
}

impl PiMachine {
    pub(crate) fn new(session_dirs: Vec<PathBuf>) -> PiMachine {
        PiMachine {
            sup: Supervision::new(),
            session_dirs,
        }
    }
}

/// Pi's events for the terminal: the model's text on stdout as it streams, everything else on
/// stderr.
fn show(terminal: &mut Terminal, event: &Event) {
    match event {
        Event::TextDelta(t) => terminal.stream_text(t),
        Event::AssistantMessage { .. } => terminal.end_text(),
        Event::ToolStart { name, detail, .. } => terminal.say(&format!("  ▸ {name}: {detail}")),
        Event::ToolEnd {
            name,
            is_error: true,
            ..
        } => terminal.say(&format!("  ▸ {name} failed")),
        Event::RetryStart {
            attempt,
            max,
            error,
        } => terminal.say(&format!(
            "  ⟳ provider error, retry {attempt}/{max}: {error}"
        )),
        Event::CompactionStart => terminal.say("  ⋯ compacting the context"),
        _ => {}
    }
}

impl Machine for PiMachine {
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
        show(terminal, &event);
        let persisted = matches!(
            event,
            Event::UserMessage { .. } | Event::AssistantMessage { .. } | Event::OtherMessageEnd
        );
        Some((self.sup.apply(&event), persisted))
    }

    fn phase(&self) -> Option<Phase> {
        self.sup.phase()
    }

    fn session(&self) -> Option<(String, Option<String>)> {
        self.sup
            .header
            .as_ref()
            .map(|h| (h.session_id.clone(), Some(h.cwd.clone())))
    }

    fn find_session_file(&self, session_id: &str, _cwd: &str) -> Option<PathBuf> {
        args::find_session_file(&self.session_dirs, session_id)
    }

    fn pin(&self, path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
        proof::current_leaf(path, pinned)
    }

    /// Each run by the whole-message hash of its user prompt.
    fn run_starts(&self, entries: &[EntrySummary], _leaf: Option<&str>) -> Vec<Option<String>> {
        self.sup
            .runs
            .iter()
            .map(|tracked| {
                entries
                    .iter()
                    .find(|e| {
                        e.role.as_deref() == Some("user")
                            && e.message_sha256.as_deref()
                                == Some(tracked.user_message_sha256.as_str())
                    })
                    .map(|e| e.id.clone())
            })
            .collect()
    }

    fn verify(&self, n: usize, path: &Path, pinned: &Pinned) -> Result<(Verified, bool), Refusal> {
        let tracked = self.sup.runs.get(n).ok_or(Refusal::NotFound)?;
        let candidate = tracked.candidate.as_ref().ok_or(Refusal::NotOnBranch)?;
        proof::verify(path, pinned, &tracked.user_message_sha256, candidate)
            .map(|v| (v, candidate.truncated))
    }

    fn located_by_proof(&self) -> bool {
        false
    }

    fn closing_proof(&self, n: usize, _interrupted: bool) -> Option<Proof> {
        self.sup.runs.get(n).map(Tracked::closing_proof)
    }

    /// Pi exits 0 after a run, also one whose provider failed (the run's proof says so).
    fn foreground(&self, status: ExitStatus, interrupted: bool) -> (Foreground, String, i32) {
        foreground_of(status, interrupted)
    }
}
