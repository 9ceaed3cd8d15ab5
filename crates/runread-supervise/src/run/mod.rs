//! The driver of `runread run`: identifies the agent ([`crate::locate`]), starts it with its
//! event stream (`process`), follows the invocation with the agent's machine (`driver`) —
//! pinning the session file (`pin`), locating each run in the store (`book`), proving each
//! settled one (`prove`) — and reads its exit with the agent's rule.

mod book;
mod driver;
mod pin;
mod process;
mod prove;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use runread_core::Target;
use runread_journal::{Entry, Journal};
use runread_store::{Foreground, Index, Proof, Workspace};

use crate::agents::supervised;
use crate::locate;
use driver::Driver;
use process::{Signals, Started};

pub struct Options {
    /// The agent's command: program then arguments.
    pub command: Vec<OsString>,
    pub cwd: PathBuf,
    /// Registered workspaces (the run's cwd must lie in one).
    pub workspaces: Vec<Workspace>,
    /// `<home>/journal`.
    pub journal_root: PathBuf,
    /// Render the event stream on the terminal.
    pub echo: bool,
    /// Called once for each run of this invocation, as soon as its exact target is pinned (its
    /// prompt ingested): what the caller does with it (`runread run --share` grants it) is the
    /// caller's, never the supervisor's.
    pub on_pinned: Option<OnPinned>,
}

/// [`Options::on_pinned`]: called with a run's exact target.
pub type OnPinned = Box<dyn Fn(&runread_core::Target) + Send + Sync>;

/// What became of one run of this invocation.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub run_id: Option<String>,
    pub target: Option<Target>,
    pub proof: Proof,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    /// The agent's exit code (128 + signal when a signal ended it).
    pub exit_code: i32,
    pub foreground: Foreground,
    pub runs: Vec<RunReport>,
    /// Processes the agent left that were still alive when supervision stopped.
    pub background_left: usize,
}

/// A failure to start supervising (nothing was run).
#[derive(Debug)]
pub enum StartError {
    Unsupported(locate::Unsupported),
    Spawn(std::io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Unsupported(u) => u.fmt(f),
            StartError::Spawn(e) => write!(f, "cannot start the agent: {e}"),
        }
    }
}

/// Writes `entry` to `journal` (atomically, durably, read back and hash-checked) and returns the
/// proof that names it, for the store to acknowledge. Nothing names an entry before this returns.
pub fn journal_proof(
    journal: &Journal,
    entry: &Entry,
) -> Result<Proof, runread_journal::JournalError> {
    let written = journal.write(entry)?;
    Ok(Proof::Journaled {
        journal_name: written.name,
        journal_sha256: written.sha256,
        final_entry_id: entry.final_entry_id.clone(),
        message_sha256: entry.message_sha256.clone(),
        text_sha256: entry.text_sha256.clone(),
        text_bytes: entry.text_bytes,
        truncated: entry.truncated,
    })
}

/// Supervises one agent invocation to its end (and the end of what it left behind, unless
/// interrupted). Returns how it ended.
pub async fn supervise(store: Arc<dyn Index>, opts: Options) -> Result<Outcome, StartError> {
    let agent = locate::identify(&opts.command, &opts.cwd)
        .await
        .map_err(StartError::Unsupported)?;
    supervise_located(store, opts, agent).await
}

/// [`supervise`] of an agent already identified ([`locate::identify`]): a caller that must know
/// the command starts an agent before it acts on it (registers a workspace) asks only once.
pub async fn supervise_located(
    store: Arc<dyn Index>,
    opts: Options,
    agent: locate::Located,
) -> Result<Outcome, StartError> {
    let supervised = supervised(agent.kind).ok_or_else(|| {
        StartError::Unsupported(locate::Unsupported::Arguments(format!(
            "{} is read only passively",
            agent.kind.product()
        )))
    })?;
    // Taken over before the agent starts: a Ctrl-C in between would end runread and leave the
    // agent, in its own process group, running unsupervised.
    let mut signals = Signals::install().map_err(StartError::Spawn)?;
    let Started {
        mut child,
        stdout,
        args,
        census_ok,
    } = process::start(supervised, &opts)?;
    let agent_pid = child.id();
    signals.agent_pid = agent_pid;
    let machine = supervised.machine(&args, &opts.cwd);
    let mut d = Driver::new(store, opts, agent, machine, (census_ok, agent_pid));
    if !census_ok {
        d.terminal.say(if crate::platform::SUBREAPER_SUPPORTED {
            "runread: cannot become the subreaper of the agent's processes; background coverage stays incomplete"
        } else {
            // macOS: what detaches from the agent is re-parented to launchd, out of sight.
            "runread: this OS has no child subreaper, so a process that detaches from the agent cannot be followed; background coverage stays incomplete"
        });
    }
    d.follow_stream(stdout, &mut signals).await;
    let status = process::wait_for_exit(&mut child, &mut signals)
        .await
        .map_err(StartError::Spawn)?;
    let exit_code = d.conclude(status, signals.interrupted).await;
    // What the agent left behind keeps the run from counting as done: keep watching (and the
    // record fresh) until it is gone, or until the user stops watching.
    d.watch_background(&mut signals).await;
    Ok(d.finish(exit_code))
}

/// `<home>/journal`: where a runread home keeps its journal.
pub fn journal_root(home: &Path) -> PathBuf {
    home.join("journal")
}
