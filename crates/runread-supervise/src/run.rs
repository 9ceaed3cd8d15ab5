//! The driver: identifies the agent (Pi, Claude Code or Codex), starts it with its event
//! stream, reads the stream, renders it for the terminal, pins and verifies the session file,
//! writes proofs to the journal, and keeps each run's supervised record in the store current —
//! until the agent and every process it left behind are gone.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::signal::unix::{Signal, SignalKind, signal};

use runread_core::Target;
use runread_core::limits::{EVENT_LINE_MAX_BYTES, SUPERVISOR_HEARTBEAT_MS};
use runread_core::timefmt::now_ms;
use runread_journal::{Entry, FORMAT, FileStamp, Journal, Namespace};
use runread_sessions::EntrySummary;
use runread_store::{Background, Foreground, Phase, Proof, Store, SupervisedRun, Workspace};

use crate::census;
use crate::claude::events::{self as claude_events, ClaudeEvent};
use crate::claude::state::{
    self as claude_state, ClaudeCandidate, ClaudeSupervision, ClaudeTracked, NoCandidate,
};
use crate::codex::events::{self as codex_events, CodexEvent};
use crate::codex::state::{
    self as codex_state, CodexCandidate, CodexSupervision, CodexTracked, TurnEnd,
};
use crate::locate::{self, Agent, Located};
use crate::pi::events::{self, Candidate, Event};
use crate::pi::state::{Supervision, Tracked};
use crate::proof::{self, Pinned, Refusal, Verified};
use crate::stream::Step;
use crate::terminal::Terminal;

/// Verification attempts at settle (the final line may still be on its way to the disk); a run
/// still not verifiable is verified once more after the agent exited.
const SETTLE_ATTEMPTS: u32 = 3;
const SETTLE_RETRY_DELAY: Duration = Duration::from_millis(100);
/// How often the census looks for leftover processes once the agent has exited.
const BACKGROUND_POLL: Duration = Duration::from_millis(500);
/// Exit status of a process ended by SIGINT, by shell convention (Pi uses it too).
const EXIT_INTERRUPTED: i32 = 130;
/// Claude Code's and Codex's exit status after they reported a failed run on their stream (and
/// Codex's after an interrupt).
const EXIT_REPORTED_FAILURE: i32 = 1;

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

/// Reads one line of at most `max` bytes (newline excluded). `Ok(None)` at end of stream;
/// `Ok(Some(false))` for a line that was longer (its bytes are discarded).
async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut overlong = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() && !overlong {
                None
            } else {
                Some(!overlong)
            });
        }
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !overlong {
            if buf.len() + part.len() > max {
                overlong = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(!overlong));
        }
    }
}

/// Where the agent keeps its session files.
enum Finder {
    /// Pi's session directories.
    Pi(Vec<PathBuf>),
    /// Claude Code's `projects` directory (`None`: it cannot be named — no `HOME`).
    Claude(Option<PathBuf>),
    /// Codex's `sessions` directory (`None`: it cannot be named — no `CODEX_HOME`, no `HOME`).
    Codex(Option<PathBuf>),
}

impl Finder {
    fn find(&self, session_id: &str, cwd: &str) -> Option<PathBuf> {
        match self {
            Finder::Pi(dirs) => locate::find_session_file(dirs, session_id),
            Finder::Claude(projects) => {
                locate::find_claude_session(projects.as_deref()?, cwd, session_id)
            }
            Finder::Codex(sessions) => locate::find_codex_rollout(sessions.as_deref()?, session_id),
        }
    }
}

/// Where the session file is, once known, and what was pinned.
struct SessionPin {
    finder: Finder,
    path: Option<PathBuf>,
    pinned: Option<Pinned>,
    /// Pinning failed (a link, several links): no proof can be built.
    refused: Option<Refusal>,
}

/// The stream of the agent being supervised and its state machine.
enum Machine {
    Pi(Supervision),
    Claude(ClaudeSupervision),
    Codex(CodexSupervision),
}

impl Machine {
    fn run_count(&self) -> usize {
        match self {
            Machine::Pi(s) => s.runs.len(),
            Machine::Claude(s) => s.runs.len(),
            Machine::Codex(s) => s.runs.len(),
        }
    }

    /// A line that is not an event: it taints the run it falls in.
    fn fault(&mut self) {
        match self {
            Machine::Pi(s) => s.fault(),
            Machine::Claude(s) => s.fault(),
            Machine::Codex(s) => s.fault(),
        }
    }

    /// The run id of tracked run `n` in the session's index `entries`: Pi's by the
    /// whole-message hash of its user prompt, Claude Code's by the prompt its first announced
    /// message chains back to, Codex's as the turn that started after the pinned `leaf` (one of
    /// `codex_turns`, in order).
    fn run_start(
        &self,
        n: usize,
        entries: &[EntrySummary],
        leaf: Option<&str>,
        codex_turns: &[String],
    ) -> Option<String> {
        match self {
            Machine::Pi(sup) => {
                let tracked = sup.runs.get(n)?;
                entries
                    .iter()
                    .find(|e| {
                        e.role.as_deref() == Some("user")
                            && e.message_sha256.as_deref()
                                == Some(tracked.user_message_sha256.as_str())
                    })
                    .map(|e| e.id.clone())
            }
            Machine::Claude(sup) => match sup.runs.get(n)?.uuids.first() {
                Some(first) => claude_state::prompt_of(entries, first),
                // Nothing announced yet (a retry before the first response): the one prompt
                // written after the leaf pinned at start, if there is exactly one.
                None if n + 1 == sup.runs.len() => claude_state::prompt_after(entries, leaf),
                None => None,
            },
            Machine::Codex(_) => codex_turns.get(n).cloned(),
        }
    }

    /// What the stream says run `n` answered: `not_on_branch` while it has no answer, `mismatch`
    /// when Claude Code's stream contradicts itself.
    fn claim(&self, n: usize) -> Result<Claim<'_>, Refusal> {
        match self {
            Machine::Pi(sup) => {
                let tracked = sup.runs.get(n).ok_or(Refusal::NotFound)?;
                Ok(Claim::Pi {
                    user_message_sha256: &tracked.user_message_sha256,
                    candidate: tracked.candidate.as_ref().ok_or(Refusal::NotOnBranch)?,
                })
            }
            Machine::Claude(sup) => {
                let tracked = sup.runs.get(n).ok_or(Refusal::NotFound)?;
                let candidate = tracked.candidate().map_err(|e| match e {
                    NoCandidate::NotAnswered => Refusal::NotOnBranch,
                    NoCandidate::Differs => Refusal::Mismatch,
                })?;
                Ok(Claim::Claude {
                    uuids: &tracked.uuids,
                    candidate,
                })
            }
            Machine::Codex(sup) => {
                let tracked = sup.runs.get(n).ok_or(Refusal::NotFound)?;
                let candidate = tracked.candidate().ok_or(Refusal::NotOnBranch)?;
                Ok(Claim::Codex { candidate })
            }
        }
    }

    fn phase(&self) -> Option<Phase> {
        match self {
            Machine::Pi(s) => s.phase(),
            Machine::Claude(s) => s.phase(),
            Machine::Codex(s) => s.phase(),
        }
    }

    /// The session id the stream announced, and its cwd when the stream names it (Codex's does
    /// not: its session is the supervised cwd's, which its rollout file must then say).
    fn session(&self) -> Option<(String, Option<String>)> {
        match self {
            Machine::Pi(s) => s
                .header
                .as_ref()
                .map(|h| (h.session_id.clone(), Some(h.cwd.clone()))),
            Machine::Claude(s) => s
                .init
                .as_ref()
                .map(|i| (i.session_id.clone(), Some(i.cwd.clone()))),
            Machine::Codex(s) => s.thread_id.clone().map(|t| (t, None)),
        }
    }
}

/// What the stream says run `n` answered, for the session file to show.
enum Claim<'a> {
    Pi {
        user_message_sha256: &'a str,
        candidate: &'a Candidate,
    },
    Claude {
        uuids: &'a [String],
        candidate: ClaudeCandidate,
    },
    Codex {
        candidate: CodexCandidate,
    },
}

impl Claim<'_> {
    /// Verifies the claim against the session file at `path`, as `pinned`; and whether the
    /// answer was cut off.
    fn verify(&self, path: &Path, pinned: &Pinned) -> Result<(Verified, bool), Refusal> {
        match self {
            Claim::Pi {
                user_message_sha256,
                candidate,
            } => proof::verify(path, pinned, user_message_sha256, candidate)
                .map(|v| (v, candidate.truncated)),
            Claim::Claude { uuids, candidate } => {
                proof::verify_claude(path, pinned, uuids, candidate)
                    .map(|v| (v, candidate.truncated))
            }
            // Codex reports a cut-off answer as a failed turn: a candidate is never truncated.
            Claim::Codex { candidate } => {
                proof::verify_codex(path, pinned, candidate).map(|v| (v, false))
            }
        }
    }
}

/// Runs `read` up to [`SETTLE_ATTEMPTS`] times, [`SETTLE_RETRY_DELAY`] apart, while it refuses
/// for a reason `retry` accepts (the file may still be on its way to the disk).
async fn settling<T>(
    mut read: impl FnMut() -> Result<T, Refusal>,
    retry: impl Fn(Refusal) -> bool,
) -> Result<T, Refusal> {
    let mut attempt = 1;
    loop {
        match read() {
            Err(r) if retry(r) && attempt < SETTLE_ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(SETTLE_RETRY_DELAY).await;
            }
            other => return other,
        }
    }
}

/// A run verified against the session file at `path`, as pinned.
struct Checked {
    verified: Verified,
    path: PathBuf,
    pinned: Pinned,
    /// The answer was cut off (the agent's own stop reason).
    truncated: bool,
}

/// The digests of a verified run's final message and of its text.
struct FinalDigests {
    message_sha256: String,
    text_sha256: String,
}

struct Driver {
    store: Arc<dyn Store>,
    opts: Options,
    agent: Located,
    supervisor_id: String,
    host: String,
    machine: Machine,
    pin: SessionPin,
    /// One per tracked run: its run id and generation once the session file shows it.
    located: Vec<Option<(Target, String)>>,
    proofs: Vec<Proof>,
    /// Runs whose verification met a file still being written: verified again once the agent
    /// has exited.
    retry_after_exit: Vec<usize>,
    foreground: Foreground,
    exit: Option<String>,
    /// runread passed an interrupt (or a termination) on to the agent.
    interrupted: bool,
    background: Background,
    supervising: bool,
    census_ok: bool,
    agent_pid: Option<u32>,
    terminal: Terminal,
}

impl Driver {
    /// The driver of `agent`, started with `args`, before its first event.
    fn new(
        store: Arc<dyn Store>,
        opts: Options,
        agent: Located,
        args: &[OsString],
        census_ok: bool,
        agent_pid: Option<u32>,
    ) -> Driver {
        let (finder, machine) = match agent.kind {
            Agent::Pi => (
                Finder::Pi(locate::session_dirs(args, &opts.cwd)),
                Machine::Pi(Supervision::new()),
            ),
            Agent::Claude => (
                Finder::Claude(locate::claude_projects_dir()),
                Machine::Claude(ClaudeSupervision::new()),
            ),
            Agent::Codex => (
                Finder::Codex(locate::codex_sessions_dir()),
                Machine::Codex(CodexSupervision::new()),
            ),
        };
        Driver {
            store,
            agent,
            supervisor_id: uuid::Uuid::new_v4().to_string(),
            host: runread_store::local_host(),
            machine,
            pin: SessionPin {
                finder,
                path: None,
                pinned: None,
                refused: None,
            },
            located: Vec::new(),
            proofs: Vec::new(),
            retry_after_exit: Vec::new(),
            foreground: Foreground::Running,
            exit: None,
            interrupted: false,
            background: Background {
                census_complete: false,
                active: 0,
                observed_at_ms: now_ms(),
            },
            supervising: true,
            census_ok,
            agent_pid,
            terminal: Terminal::new(opts.echo),
            opts,
        }
    }

    /// Reads the agent's event stream to its end, passing signals on to the agent and keeping
    /// the record fresh (census and heartbeat) meanwhile.
    async fn follow_stream(&mut self, stdout: tokio::process::ChildStdout, signals: &mut Signals) {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        let mut heartbeat = tokio::time::interval(Duration::from_millis(SUPERVISOR_HEARTBEAT_MS));
        loop {
            tokio::select! {
                read = read_line_bounded(&mut reader, &mut line, EVENT_LINE_MAX_BYTES) => match read {
                    Ok(Some(true)) => self.on_line(Some(&line)).await,
                    Ok(Some(false)) => self.on_line(None).await,
                    Ok(None) | Err(_) => break,
                },
                _ = signals.interrupt.recv() => signals.forward(rustix::process::Signal::INT),
                _ = signals.terminate.recv() => signals.forward(rustix::process::Signal::TERM),
                _ = signals.hangup.recv() => signals.forward(rustix::process::Signal::HUP),
                _ = heartbeat.tick() => { self.refresh_census(); self.publish_all(); }
            }
        }
    }

    /// The agent exited with `status`: its foreground read with what its stream reported, the
    /// runs the file was not ready for verified once more, the rest closed from how they ended.
    /// Returns the exit code runread passes on.
    async fn conclude(&mut self, status: ExitStatus, interrupted: bool) -> i32 {
        let (foreground, exit, exit_code) = match &self.machine {
            Machine::Pi(_) => foreground_of(status, interrupted),
            Machine::Claude(sup) => claude_foreground(status, interrupted, &sup.runs),
            Machine::Codex(sup) => codex_foreground(status, interrupted, &sup.runs),
        };
        self.foreground = foreground;
        self.interrupted = interrupted;
        self.exit = Some(exit);
        self.pin_file_when_seen();
        self.ingest_and_locate();
        self.settle_leftovers().await;
        self.close_runs();
        self.refresh_census();
        self.publish_all();
        exit_code
    }

    /// Watches the processes the agent left behind until they are gone or a signal stops the
    /// watch (not them), keeping the record fresh at the heartbeat.
    async fn watch_background(&mut self, signals: &mut Signals) {
        if self.background.active == 0 {
            return;
        }
        self.terminal.say(&format!(
            "runread: the agent exited but left {} process(es) running; watching them (Ctrl-C stops watching, not them)",
            self.background.active
        ));
        let mut poll = tokio::time::interval(BACKGROUND_POLL);
        let mut last_publish = now_ms();
        loop {
            tokio::select! {
                _ = poll.tick() => {
                    self.refresh_census();
                    if self.background.active == 0 { break; }
                    if now_ms() - last_publish >= SUPERVISOR_HEARTBEAT_MS as i64 {
                        self.publish_all();
                        last_publish = now_ms();
                    }
                }
                _ = signals.interrupt.recv() => break,
                _ = signals.terminate.recv() => break,
                _ = signals.hangup.recv() => break,
            }
        }
    }

    /// How the invocation ended, once supervision stopped.
    fn outcome(&self, exit_code: i32) -> Outcome {
        let runs = (0..self.machine.run_count())
            .map(|n| {
                let located = self.located.get(n).cloned().flatten();
                RunReport {
                    run_id: located.as_ref().map(|(_, id)| id.clone()),
                    target: located.map(|(t, _)| t),
                    proof: self.proofs.get(n).cloned().unwrap_or(Proof::Pending),
                }
            })
            .collect();
        Outcome {
            exit_code,
            foreground: self.foreground,
            runs,
            background_left: self.background.active as usize,
        }
    }

    /// Pins the session at the stream's header: its id and cwd, and — when the file already
    /// exists (a continued session) — its identity and active leaf (Codex: its newest entry).
    async fn pin_at_start(&mut self) {
        let cwd = self.opts.cwd.to_string_lossy().into_owned();
        let Some((session_id, session_cwd)) = self.machine.session() else {
            return;
        };
        let session_cwd = session_cwd.unwrap_or_else(|| cwd.clone());
        let mut pinned = Pinned {
            session_id: session_id.clone(),
            cwd: session_cwd.clone(),
            identity: None,
            leaf: None,
        };
        if session_cwd != cwd {
            self.pin.refused = Some(Refusal::OtherSession);
        }
        if let Some(path) = self.pin.finder.find(&session_id, &session_cwd) {
            let kind = self.agent.kind;
            let read = settling(
                || match kind {
                    Agent::Pi => proof::current_leaf(&path, &pinned),
                    Agent::Claude => proof::pin_claude(&path, &pinned),
                    Agent::Codex => proof::pin_codex(&path, &pinned),
                },
                |r| r == Refusal::Busy,
            )
            .await;
            match read {
                Ok((identity, leaf)) if identity.nlink == 1 => {
                    pinned.identity = Some(identity);
                    pinned.leaf = leaf;
                }
                Ok(_) => self.pin.refused = Some(Refusal::HardLinked),
                Err(r) => self.pin.refused = Some(r),
            }
            self.pin.path = Some(path);
        }
        self.pin.pinned = Some(pinned);
    }

    /// A new session's file appears after the first message: pin it when first seen.
    fn pin_file_when_seen(&mut self) {
        let Some(pinned) = self.pin.pinned.as_mut() else {
            return;
        };
        if self.pin.path.is_none() {
            self.pin.path = self.pin.finder.find(&pinned.session_id, &pinned.cwd);
        }
        if let (Some(path), None) = (&self.pin.path, &pinned.identity) {
            match proof::pin_identity(path) {
                Ok(id) => pinned.identity = Some(id),
                Err(Refusal::NotFound) => {}
                Err(r) => self.pin.refused = Some(r),
            }
        }
    }

    /// Brings the store up to date with the session file and finds the run id of every tracked
    /// run.
    fn ingest_and_locate(&mut self) {
        let Some(path) = self.pin.path.clone() else {
            return;
        };
        let mut report = runread_ingest::Report::default();
        if let Err(e) = runread_ingest::ingest_file(
            self.store.as_ref(),
            &self.opts.workspaces,
            self.agent.kind,
            &path,
            now_ms(),
            &mut report,
        ) {
            tracing::warn!(error = %e, "ingest during supervision failed");
            return;
        }
        self.locate_runs(&path);
    }

    /// Finds the run id of every tracked run not located yet in the store's index of the pinned
    /// session at `path` (see [`Machine::run_start`]).
    fn locate_runs(&mut self, path: &Path) {
        let runs = self.machine.run_count();
        if self.located.len() == runs && self.located.iter().all(Option::is_some) {
            return;
        }
        let Some(pinned) = &self.pin.pinned else {
            return;
        };
        let store = self.store.as_ref();
        let Ok(Some(session)) = store.session_by_path(&path.to_string_lossy()) else {
            return;
        };
        if session.session_id != pinned.session_id {
            return;
        }
        let Ok(entries) = store.entries(&session.session_id, session.generation) else {
            return;
        };
        self.located.resize(runs, None);
        // Codex: this invocation's turns, in file order, one per tracked run.
        let codex_turns = match &self.machine {
            Machine::Codex(_) => codex_state::turns_after(&entries, pinned.leaf.as_deref())
                .map(|t| t.for_runs())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        for n in 0..runs {
            if self.located.get(n).is_some_and(Option::is_some) {
                continue;
            }
            let Some(start) =
                self.machine
                    .run_start(n, &entries, pinned.leaf.as_deref(), &codex_turns)
            else {
                continue;
            };
            if let Ok(Some(run)) = store.run(&session.session_id, session.generation, &start)
                && let Some(slot) = self.located.get_mut(n)
            {
                if let Some(pinned) = &self.opts.on_pinned {
                    pinned(&run.target);
                }
                *slot = Some((run.target.clone(), start));
            }
        }
    }

    fn record(&self, n: usize, phase: Phase) -> Option<SupervisedRun> {
        let (target, run_id) = self.located.get(n)?.as_ref()?;
        Some(SupervisedRun {
            session_id: target.session_id.clone(),
            generation: target.generation,
            run_id: run_id.clone(),
            supervisor_id: self.supervisor_id.clone(),
            host: self.host.clone(),
            agent_version: self.agent.version.clone(),
            foreground: self.foreground,
            exit: self.exit.clone(),
            phase,
            proof: self.proofs.get(n).cloned().unwrap_or(Proof::Pending),
            background: self.background.clone(),
            updated_at_ms: now_ms(),
            supervising: self.supervising,
        })
    }

    /// Rewrites the supervised record of every located run.
    fn publish_all(&mut self) {
        let runs = self.machine.run_count();
        self.proofs.resize(runs, Proof::Pending);
        let last = runs.saturating_sub(1);
        for n in 0..runs {
            // Earlier runs of this invocation are over; the phase belongs to the last one.
            let phase = if n == last {
                self.machine.phase().unwrap_or(Phase::Running)
            } else {
                Phase::Ended
            };
            if let Some(rec) = self.record(n, phase)
                && let Err(e) = self.store.put_supervised(&rec)
            {
                tracing::warn!(error = %e, "could not record the supervised run");
            }
        }
    }

    fn refresh_census(&mut self) {
        let me = std::process::id();
        let c = census::descendants(me, self.agent_pid);
        census::reap(&c.zombies);
        self.background = Background {
            census_complete: self.census_ok && c.complete,
            active: u32::try_from(c.live.len()).unwrap_or(u32::MAX),
            observed_at_ms: now_ms(),
        };
    }

    /// Verifies run `n` against the session file, writes its proof to the journal, and has the
    /// store acknowledge it. `last_chance`: the agent has exited, the file will not change.
    async fn settle(&mut self, n: usize, last_chance: bool) {
        self.proofs.resize(self.machine.run_count(), Proof::Pending);
        let proof = match self.prove(n).await {
            Ok(p) => p,
            Err(r) if r.transient() && !last_chance => {
                // The agent may still be writing: verified again once it has exited.
                if !self.retry_after_exit.contains(&n) {
                    self.retry_after_exit.push(n);
                }
                return;
            }
            Err(r) => Proof::Refused {
                reason: r.as_str().into(),
            },
        };
        if let Some(slot) = self.proofs.get_mut(n) {
            *slot = proof;
        }
        self.publish_all();
    }

    /// Verifies run `n` with the agent's rule, retrying a file still being written.
    async fn verify(&mut self, n: usize) -> Result<Checked, Refusal> {
        if let Some(r) = self.pin.refused {
            return Err(r);
        }
        self.pin_file_when_seen();
        if let Some(r) = self.pin.refused {
            return Err(r);
        }
        let path = self.pin.path.clone().ok_or(Refusal::NotFound)?;
        let pinned = self.pin.pinned.clone().ok_or(Refusal::NotFound)?;
        let claim = self.machine.claim(n)?;
        let (verified, truncated) =
            settling(|| claim.verify(&path, &pinned), Refusal::transient).await?;
        Ok(Checked {
            verified,
            path,
            pinned,
            truncated,
        })
    }

    /// Proves run `n`: verified against the session file, the same run in the store, then the
    /// proof in the journal. The caller records the proof in the store: that is the store's
    /// acknowledgement, and it comes only after the entry is durable and read back.
    async fn prove(&mut self, n: usize) -> Result<Proof, Refusal> {
        let checked = self.verify(n).await?;
        // The store takes the run (the same file, read again through ingest) …
        self.ingest_and_locate();
        if matches!(self.agent.kind, Agent::Claude | Agent::Codex) {
            // Claude Code's and Codex's run is the one the file proved (the stream never names
            // its prompt, nor Codex's its turn).
            self.locate_verified(n, &checked)?;
        }
        let (target, run_id) = self
            .located
            .get(n)
            .cloned()
            .flatten()
            .ok_or(Refusal::NotOnBranch)?;
        let digests = self.stored_as_verified(&target, &run_id, &checked.verified)?;
        // … then the proof goes to the journal, durably, and is read back.
        let journal = Journal::at(&self.opts.journal_root, self.store.instance_id());
        let entry = self.journal_entry(&target, run_id, &checked, digests);
        journal_proof(&journal, &entry).map_err(|e| {
            tracing::warn!(error = %e, "journal write failed");
            Refusal::Journal
        })
    }

    /// Locates run `n` as the run `verified` in the store's index of the pinned session.
    fn locate_verified(&mut self, n: usize, checked: &Checked) -> Result<(), Refusal> {
        let verified = &checked.verified;
        let session = self
            .store
            .session_by_path(&checked.path.to_string_lossy())
            .ok()
            .flatten()
            .filter(|s| s.session_id == checked.pinned.session_id)
            .ok_or(Refusal::NotOnBranch)?;
        let run = self
            .store
            .run(
                &session.session_id,
                session.generation,
                &verified.run.run_id,
            )
            .ok()
            .flatten()
            .ok_or(Refusal::NotOnBranch)?;
        self.located.resize(self.machine.run_count(), None);
        if let Some(slot) = self.located.get_mut(n) {
            *slot = Some((run.target.clone(), verified.run.run_id.clone()));
        }
        Ok(())
    }

    /// What the store ingested as `run_id` is what was verified: the same run, the same final
    /// message, the same text. Returns the final message's and its text's digests.
    fn stored_as_verified(
        &self,
        target: &Target,
        run_id: &str,
        verified: &Verified,
    ) -> Result<FinalDigests, Refusal> {
        let stored = self
            .store
            .run(&target.session_id, target.generation, run_id)
            .ok()
            .flatten()
            .ok_or(Refusal::NotOnBranch)?;
        let message_sha256 = verified
            .run
            .final_message_sha256
            .clone()
            .ok_or(Refusal::NotOnBranch)?;
        let text_sha256 = verified
            .run
            .final_text_sha256
            .clone()
            .ok_or(Refusal::NotOnBranch)?;
        if run_id != verified.run.run_id
            || stored.run.final_entry_id.as_deref() != Some(verified.final_entry_id.as_str())
            || stored.run.final_message_sha256.as_deref() != Some(message_sha256.as_str())
            || stored.run.final_text_sha256.as_deref() != Some(text_sha256.as_str())
        {
            return Err(Refusal::Mismatch);
        }
        Ok(FinalDigests {
            message_sha256,
            text_sha256,
        })
    }

    /// The journal entry proving run `run_id` of `target`, as `checked` in the session file.
    fn journal_entry(
        &self,
        target: &Target,
        run_id: String,
        checked: &Checked,
        digests: FinalDigests,
    ) -> Entry {
        let verified = &checked.verified;
        Entry {
            format: FORMAT.into(),
            namespace: Namespace {
                instance: target.instance.clone(),
                workspace_id: target.workspace_id.clone(),
                session_id: target.session_id.clone(),
                generation: target.generation,
                run_id: run_id.clone(),
            },
            supervisor_id: self.supervisor_id.clone(),
            agent: self.agent.kind,
            agent_version: self.agent.version.clone(),
            session_file: checked.path.to_string_lossy().into_owned(),
            session_stamp: FileStamp {
                dev: verified.identity.dev,
                ino: verified.identity.ino,
                size: verified.identity.size,
                mtime_ns: verified.identity.mtime_ns,
            },
            pinned_leaf: checked.pinned.leaf.clone(),
            start_entry_id: run_id,
            user_message_sha256: verified.user_message_sha256.clone(),
            final_entry_id: verified.final_entry_id.clone(),
            message_sha256: digests.message_sha256,
            text_sha256: digests.text_sha256,
            text_bytes: verified.text_bytes,
            truncated: checked.truncated,
            chain_len: verified.run.chain_len,
            verified_at_ms: now_ms(),
        }
    }

    /// One line of the stream (`None`: a line over the bound, skipped unread): a line that is
    /// not an event taints the run it falls in; an event is shown, applied, and when it announced
    /// the session, the session is pinned before anything else looks at the file.
    async fn on_line(&mut self, line: Option<&[u8]>) {
        let had_session = self.machine.session().is_some();
        let Some((step, persisted)) = line.and_then(|line| self.apply_line(line)) else {
            self.machine.fault();
            return;
        };
        if !had_session && self.machine.session().is_some() {
            self.pin_at_start().await;
        }
        self.after_step(step, persisted).await;
    }

    /// Parses `line` as the agent's event, shows it (before applying it: a failed tool's name is
    /// still known) and applies it. Returns the step, and whether the event is one the session
    /// file holds or is about to (worth a look at the file); `None` for a line that is not an
    /// event.
    fn apply_line(&mut self, line: &[u8]) -> Option<(Step, bool)> {
        match &mut self.machine {
            Machine::Pi(sup) => {
                let event = events::parse(line).ok()?;
                self.terminal.pi(&event);
                let persisted = matches!(
                    event,
                    Event::UserMessage { .. }
                        | Event::AssistantMessage { .. }
                        | Event::OtherMessageEnd
                );
                Some((sup.apply(&event), persisted))
            }
            Machine::Claude(sup) => {
                let event = claude_events::parse(line).ok()?;
                self.terminal.claude(&event, sup);
                // Messages of the run are in the file (or about to be); a retry before the first
                // one is worth a look for the prompt, to show the run as retrying.
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
                Some((sup.apply(&event), persisted))
            }
            Machine::Codex(sup) => {
                let event = codex_events::parse(line).ok()?;
                self.terminal.codex(&event, sup);
                // Codex writes the turn's start before it announces it, and each item before or
                // as it announces it: everything from `turn.started` on is worth a look at the
                // file.
                let persisted = !matches!(
                    event,
                    CodexEvent::ThreadStarted { .. } | CodexEvent::Ignored
                );
                Some((sup.apply(&event), persisted))
            }
        }
    }

    async fn after_step(&mut self, step: Step, persisted: bool) {
        if persisted {
            self.pin_file_when_seen();
            self.ingest_and_locate();
        }
        match step {
            Step::Settle(n) => self.settle(n, false).await,
            Step::Changed => self.publish_all(),
            Step::Nothing if persisted => self.publish_all(),
            Step::Nothing => {}
        }
    }

    /// After the agent exited: verifies again the runs the file was not ready for.
    async fn settle_leftovers(&mut self) {
        for n in std::mem::take(&mut self.retry_after_exit) {
            self.settle(n, true).await;
        }
    }

    /// Final proofs of runs that never settled, from how they ended.
    fn close_runs(&mut self) {
        let runs = self.machine.run_count();
        self.proofs.resize(runs, Proof::Pending);
        for n in 0..runs {
            if self.proofs.get(n).is_some_and(|p| *p != Proof::Pending) {
                continue;
            }
            let closed = match &self.machine {
                Machine::Pi(sup) => sup.runs.get(n).map(pi_close),
                Machine::Claude(sup) => sup.runs.get(n).map(ClaudeTracked::closing_proof),
                Machine::Codex(sup) => sup.runs.get(n).map(|r| r.closing_proof(self.interrupted)),
            };
            if let (Some(proof), Some(slot)) = (closed, self.proofs.get_mut(n)) {
                *slot = proof;
            }
        }
    }
}

/// How a Pi run that never settled ended.
fn pi_close(run: &Tracked) -> Proof {
    if run.faulted {
        return Proof::Refused {
            reason: Refusal::StreamFault.as_str().into(),
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

fn foreground_of(status: ExitStatus, interrupted: bool) -> (Foreground, String, i32) {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        let fg = match code {
            0 => Foreground::Completed,
            EXIT_INTERRUPTED => Foreground::Cancelled,
            _ if interrupted => Foreground::Cancelled,
            _ => Foreground::Failed,
        };
        return (fg, format!("exit:{code}"), code);
    }
    let sig = status.signal().unwrap_or(0);
    let fg = if interrupted {
        Foreground::Cancelled
    } else {
        Foreground::Killed
    };
    (fg, format!("signal:{sig}"), 128 + sig)
}

/// Claude Code's exit read with what it reported on its stream. It exits 0 after an answer and
/// also when interrupted (then with no `result`, or an aborted one); it exits 1 after reporting
/// a failed run (`is_error`): that is its normal end for a failure, as Pi's exit 0 after a
/// provider error is — the run itself is failed, and its proof says so.
pub fn claude_foreground(
    status: ExitStatus,
    interrupted: bool,
    runs: &[ClaudeTracked],
) -> (Foreground, String, i32) {
    let reported = |o: &claude_events::Outcome| !o.aborted() && (o.answered() || o.is_error);
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

/// Codex's exit read with what it reported on its stream. It exits 0 after `turn.completed`, and
/// 1 after `turn.failed` — its normal end for a failure, as Claude Code's: the run itself is
/// failed, and its proof says so — and 1 when interrupted (the stream then just stops).
pub fn codex_foreground(
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

/// An exit read with the stream of an agent that reports each run's end (Claude Code, Codex):
/// exit 0 with a run that did not report its end is stopped, not done; exit
/// [`EXIT_REPORTED_FAILURE`] once every run reported its end and the last one a failure is the
/// agent's normal end.
fn reported_foreground(
    status: ExitStatus,
    interrupted: bool,
    all_reported: bool,
    last_failed: bool,
) -> (Foreground, String, i32) {
    let (fg, exit, code) = foreground_of(status, interrupted);
    let fg = match (status.code(), fg) {
        (Some(0), Foreground::Completed) if !all_reported => Foreground::Cancelled,
        (Some(EXIT_REPORTED_FAILURE), Foreground::Failed | Foreground::Cancelled)
            if all_reported && last_failed =>
        {
            Foreground::Completed
        }
        (_, fg) => fg,
    };
    (fg, exit, code)
}

/// Supervises one agent invocation to its end (and the end of what it left behind, unless
/// interrupted). Returns how it ended.
pub async fn supervise(store: Arc<dyn Store>, opts: Options) -> Result<Outcome, StartError> {
    let agent = locate::identify(&opts.command, &opts.cwd)
        .await
        .map_err(StartError::Unsupported)?;
    // Taken over before the agent starts: a Ctrl-C in between would end runread and leave the
    // agent, in its own process group, running unsupervised.
    let mut signals = Signals::install().map_err(StartError::Spawn)?;
    let Started {
        mut child,
        stdout,
        args,
        census_ok,
    } = start(&agent, &opts)?;
    let agent_pid = child.id();
    signals.agent_pid = agent_pid;
    let mut d = Driver::new(store, opts, agent, &args, census_ok, agent_pid);
    if !census_ok {
        d.terminal.say("runread: cannot become the subreaper of the agent's processes; background coverage stays incomplete");
    }
    d.follow_stream(stdout, &mut signals).await;
    let status = wait_for_exit(&mut child, &mut signals)
        .await
        .map_err(StartError::Spawn)?;
    let exit_code = d.conclude(status, signals.interrupted).await;
    // What the agent left behind keeps the run from counting as done: keep watching (and the
    // record fresh) until it is gone, or until the user stops watching.
    d.watch_background(&mut signals).await;
    d.supervising = false;
    d.publish_all();
    Ok(d.outcome(exit_code))
}

/// The agent, started with its event stream.
struct Started {
    child: tokio::process::Child,
    stdout: tokio::process::ChildStdout,
    /// What it was started with: its own arguments and the event stream's.
    args: Vec<OsString>,
    /// runread is the subreaper of what the agent leaves behind.
    census_ok: bool,
}

/// Starts the agent with its event stream on a pipe, in its own process group (so that a signal
/// reaches everything it runs), once runread has tried to become the subreaper of its processes.
fn start(agent: &Located, opts: &Options) -> Result<Started, StartError> {
    let (program, rest) = opts
        .command
        .split_first()
        .ok_or(StartError::Unsupported(locate::Unsupported::NoCommand))?;
    let args = locate::with_event_stream(agent.kind, rest).map_err(StartError::Unsupported)?;
    let census_ok = census::become_subreaper();
    let mut child = tokio::process::Command::new(program)
        .args(&args)
        .current_dir(&opts.cwd)
        .stdin(std::process::Stdio::inherit())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(StartError::Spawn)?;
    let Some(stdout) = child.stdout.take() else {
        // Never leave an agent running that runread cannot follow.
        let _ = child.start_kill();
        return Err(StartError::Spawn(std::io::Error::other("no stdout")));
    };
    Ok(Started {
        child,
        stdout,
        args,
        census_ok,
    })
}

/// The signals runread takes over while it supervises: while the agent runs they are passed on
/// to its process group; once it has exited they stop the watch of what it left behind.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
    agent_pid: Option<u32>,
    /// runread passed an interrupt (or a termination) on to the agent.
    interrupted: bool,
}

impl Signals {
    /// Takes the signals over; [`Signals::agent_pid`] is set once the agent has started.
    fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
            agent_pid: None,
            interrupted: false,
        })
    }

    /// Passes `sig` on to the agent's process group.
    fn forward(&mut self, sig: rustix::process::Signal) {
        self.interrupted = true;
        if let Some(pid) = self
            .agent_pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, sig);
        }
    }
}

/// Waits for the agent to exit, passing interrupts and terminations on meanwhile.
async fn wait_for_exit(
    child: &mut tokio::process::Child,
    signals: &mut Signals,
) -> std::io::Result<ExitStatus> {
    loop {
        tokio::select! {
            s = child.wait() => return s,
            _ = signals.interrupt.recv() => signals.forward(rustix::process::Signal::INT),
            _ = signals.terminate.recv() => signals.forward(rustix::process::Signal::TERM),
            // As while its output runs: a hang-up between the end of its output and its exit is
            // the agent's, not a request to stop watching what it leaves behind.
            _ = signals.hangup.recv() => signals.forward(rustix::process::Signal::HUP),
        }
    }
}

/// `<home>/journal`: where a runread home keeps its journal.
pub fn journal_root(home: &Path) -> PathBuf {
    home.join("journal")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<Option<Vec<u8>>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut reader = input;
            let mut buf = Vec::new();
            let mut out = Vec::new();
            while let Some(whole) = read_line_bounded(&mut reader, &mut buf, max).await.unwrap() {
                out.push(whole.then(|| buf.clone()));
            }
            out
        })
    }

    #[test]
    fn an_event_line_of_the_limit_is_read_and_one_byte_more_is_skipped() {
        let max = 8;
        let at = b"12345678\n";
        assert_eq!(lines(at, max), vec![Some(b"12345678".to_vec())]);
        let over = b"123456789\nnext\n";
        assert_eq!(
            lines(over, max),
            vec![None, Some(b"next".to_vec())],
            "skipped, then in step again"
        );
        assert_eq!(
            lines(b"tail-no-newline", 64),
            vec![Some(b"tail-no-newline".to_vec())]
        );
    }
}
