//! The machine that follows one Claude Code invocation: its stream into [`ClaudeSupervision`],
//! its session file under `projects/`, its proof, and how it ended.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use runread_sessions::{EntrySummary, FileIdentity};
use runread_store::{Foreground, Phase, Proof};

use crate::claude::events::{self, Block, ClaudeEvent, UserKind};
use crate::claude::state::{self, ClaudeSupervision, ClaudeTracked, NoCandidate};
use crate::claude::{args, proof};
use crate::exit::reported_foreground;
use crate::machine::Machine;
use crate::proof::{Pinned, Refusal, Verified};
use crate::stream::Step;
use crate::terminal::Terminal;

pub(crate) struct ClaudeMachine {
    sup: ClaudeSupervision,
    /// Claude Code's `projects` directory (`None`: it cannot be named — no `HOME`).
    projects: Option<PathBuf>,
}

impl ClaudeMachine {
    pub(crate) fn new(projects: Option<PathBuf>) -> ClaudeMachine {
        ClaudeMachine {
            sup: ClaudeSupervision::new(),
            projects,
        }
    }
}

/// The blocks of an assistant message for the terminal: text on stdout, a synthetic or error
/// text as a failure, tool calls on stderr (a subagent's indented).
fn show_blocks(terminal: &Terminal, blocks: &[Block], failed: bool, sidechain: bool) {
    for b in blocks {
        match b {
            Block::Text(t) if failed && !sidechain => terminal.failure(t),
            Block::Text(_) if failed || sidechain => {}
            Block::Text(t) => terminal.text(t),
            Block::ToolUse { name, detail, .. } if sidechain => {
                terminal.say(&format!("    ↳ {name}: {detail}"))
            }
            Block::ToolUse { name, detail, .. } => terminal.say(&format!("  ▸ {name}: {detail}")),
            _ => {}
        }
    }
}

/// Claude Code's events for the terminal: the model's text on stdout, everything else on
/// stderr. Called before the event is applied (a failed tool's name is still known).
fn show(terminal: &Terminal, event: &ClaudeEvent, sup: &ClaudeSupervision) {
    match event {
        ClaudeEvent::Assistant {
            blocks,
            synthetic,
            error,
            sidechain,
            ..
        } => show_blocks(terminal, blocks, *synthetic || *error, *sidechain),
        ClaudeEvent::User {
            kind: UserKind::ToolResults(results),
            sidechain: false,
            ..
        } => {
            for (id, _) in results.iter().filter(|(_, is_error)| *is_error) {
                terminal.say(&format!(
                    "  ▸ {} failed",
                    sup.tool_name(id).unwrap_or("tool")
                ));
            }
        }
        ClaudeEvent::User {
            kind: UserKind::Interrupt,
            sidechain: false,
            ..
        } => terminal.say("  ⨯ interrupted"),
        ClaudeEvent::Retry {
            attempt,
            max,
            error,
        } => terminal.say(&format!(
            "  ⟳ provider error, retry {attempt}/{max}: {error}"
        )),
        ClaudeEvent::Status { compacting: true } => terminal.say("  ⋯ compacting the context"),
        ClaudeEvent::TaskStarted { description } => {
            terminal.say(&format!("  ↳ subagent: {description}"))
        }
        _ => {}
    }
}

/// Claude Code's exit read with what it reported on its stream. It exits 0 after an answer and
/// also when interrupted (then with no `result`, or an aborted one); it exits 1 after reporting
/// a failed run (`is_error`): that is its normal end for a failure, as Pi's exit 0 after a
/// provider error is — the run itself is failed, and its proof says so.
pub fn foreground(
    status: ExitStatus,
    interrupted: bool,
    runs: &[ClaudeTracked],
) -> (Foreground, String, i32) {
    let reported = |o: &events::Outcome| !o.aborted() && (o.answered() || o.is_error);
    let all_reported = !runs.is_empty()
        && runs
            .iter()
            .all(|r| !r.interrupted && r.outcome.as_ref().is_some_and(reported));
    let last_failed = runs
        .last()
        .and_then(|r| r.outcome.as_ref())
        .is_some_and(|o| o.is_error);
    reported_foreground(status, interrupted, all_reported, last_failed)
}

impl Machine for ClaudeMachine {
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
        // Messages of the run are in the file (or about to be); a retry before the first one is
        // worth a look for the prompt, to show the run as retrying.
        let persisted = matches!(
            event,
            ClaudeEvent::Assistant {
                sidechain: false,
                ..
            } | ClaudeEvent::User {
                sidechain: false,
                ..
            } | ClaudeEvent::Retry { .. }
                | ClaudeEvent::Result(_)
        );
        Some((self.sup.apply(&event), persisted))
    }

    fn phase(&self) -> Option<Phase> {
        self.sup.phase()
    }

    fn session(&self) -> Option<(String, Option<String>)> {
        self.sup
            .init
            .as_ref()
            .map(|i| (i.session_id.clone(), Some(i.cwd.clone())))
    }

    fn find_session_file(&self, session_id: &str, cwd: &str) -> Option<PathBuf> {
        args::find_session(self.projects.as_deref()?, cwd, session_id)
    }

    fn pin(&self, path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal> {
        proof::pin(path, pinned)
    }

    /// Each run by the prompt its first announced message chains back to.
    fn run_starts(&self, entries: &[EntrySummary], leaf: Option<&str>) -> Vec<Option<String>> {
        let last = self.sup.runs.len().saturating_sub(1);
        self.sup
            .runs
            .iter()
            .enumerate()
            .map(|(n, run)| match run.uuids.first() {
                Some(first) => state::prompt_of(entries, first),
                // Nothing announced yet (a retry before the first response): the one prompt
                // written after the leaf pinned at start, if there is exactly one.
                None if n == last => state::prompt_after(entries, leaf),
                None => None,
            })
            .collect()
    }

    fn verify(&self, n: usize, path: &Path, pinned: &Pinned) -> Result<(Verified, bool), Refusal> {
        let tracked = self.sup.runs.get(n).ok_or(Refusal::NotFound)?;
        let candidate = tracked.candidate().map_err(|e| match e {
            NoCandidate::NotAnswered => Refusal::NotOnBranch,
            NoCandidate::Differs => Refusal::Mismatch,
        })?;
        proof::verify(path, pinned, &tracked.uuids, &candidate).map(|v| (v, candidate.truncated))
    }

    /// The stream never names the run's prompt: the run is the one the file proved.
    fn located_by_proof(&self) -> bool {
        true
    }

    fn closing_proof(&self, n: usize, _interrupted: bool) -> Option<Proof> {
        self.sup.runs.get(n).map(ClaudeTracked::closing_proof)
    }

    fn foreground(&self, status: ExitStatus, interrupted: bool) -> (Foreground, String, i32) {
        foreground(status, interrupted, &self.sup.runs)
    }
}
