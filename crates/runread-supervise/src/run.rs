//! The driver: starts Pi, reads its event stream, renders it for the terminal, pins and verifies
//! the session file, writes proofs to the journal, and keeps each run's supervised record in
//! the store current — until the agent and every process it left behind are gone.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::signal::unix::{SignalKind, signal};

use runread_core::Target;
use runread_core::limits::{EVENT_LINE_MAX_BYTES, SUPERVISOR_HEARTBEAT_MS};
use runread_core::timefmt::now_ms;
use runread_journal::{Entry, FORMAT, FileStamp, Journal, Namespace};
use runread_store::{Background, Foreground, Phase, Proof, Store, SupervisedRun, Workspace};

use crate::census;
use crate::events::{self, Event};
use crate::locate::{self, Agent};
use crate::proof::{self, Pinned, Refusal};
use crate::state::{Step, Supervision, Tracked};

/// Verification attempts at settle (the final line may still be on its way to the disk).
const SETTLE_ATTEMPTS: u32 = 3;
const SETTLE_RETRY_DELAY: Duration = Duration::from_millis(100);
/// How often the census looks for leftover processes once the agent has exited.
const BACKGROUND_POLL: Duration = Duration::from_millis(500);
/// Exit status of a process ended by SIGINT, by shell convention (Pi uses it too).
const EXIT_INTERRUPTED: i32 = 130;

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
}

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

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().chars().take(255).collect())
        .filter(|h: &String| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
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

/// Where the session file is, once known, and what was pinned.
struct SessionPin {
    dirs: Vec<PathBuf>,
    path: Option<PathBuf>,
    pinned: Option<Pinned>,
    /// Pinning failed (a link, several links): no proof can be built.
    refused: Option<Refusal>,
}

struct Driver {
    store: Arc<dyn Store>,
    opts: Options,
    agent: Agent,
    supervisor_id: String,
    host: String,
    sup: Supervision,
    pin: SessionPin,
    /// One per tracked run: its run id and generation once the session file shows it.
    located: Vec<Option<(Target, String)>>,
    proofs: Vec<Proof>,
    foreground: Foreground,
    exit: Option<String>,
    background: Background,
    supervising: bool,
    census_ok: bool,
    agent_pid: Option<u32>,
    printed_text: bool,
}

impl Driver {
    fn say(&self, line: &str) {
        if self.opts.echo {
            eprintln!("{line}");
        }
    }

    fn render(&mut self, event: &Event) {
        if !self.opts.echo {
            return;
        }
        match event {
            Event::TextDelta(t) => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(t.as_bytes());
                let _ = out.flush();
                self.printed_text = true;
            }
            Event::AssistantMessage { .. } if self.printed_text => {
                println!();
                self.printed_text = false;
            }
            Event::ToolStart { name, detail, .. } => eprintln!("  ▸ {name}: {detail}"),
            Event::ToolEnd {
                name,
                is_error: true,
                ..
            } => eprintln!("  ▸ {name} failed"),
            Event::RetryStart {
                attempt,
                max,
                error,
            } => {
                eprintln!("  ⟳ provider error, retry {attempt}/{max}: {error}")
            }
            Event::CompactionStart => eprintln!("  ⋯ compacting the context"),
            _ => {}
        }
    }

    /// Pins the session at the stream's header: its id and cwd, and — when the file already
    /// exists (a continued session) — its identity and active leaf.
    fn pin_at_start(&mut self) {
        let Some(h) = self.sup.header.clone() else {
            return;
        };
        let cwd = self.opts.cwd.to_string_lossy().into_owned();
        let mut pinned = Pinned {
            session_id: h.session_id.clone(),
            cwd: h.cwd.clone(),
            identity: None,
            leaf: None,
        };
        if h.cwd != cwd {
            self.pin.refused = Some(Refusal::OtherSession);
        }
        if let Some(path) = locate::find_session_file(&self.pin.dirs, &h.session_id) {
            match proof::current_leaf(&path, &pinned) {
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

    /// A new session's file appears after the first assistant message: pin it when first seen.
    fn pin_file_when_seen(&mut self) {
        let Some(pinned) = self.pin.pinned.as_mut() else {
            return;
        };
        if self.pin.path.is_none() {
            self.pin.path = locate::find_session_file(&self.pin.dirs, &pinned.session_id);
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
    /// run (by the whole-message hash of its user prompt).
    fn ingest_and_locate(&mut self) {
        let Some(path) = self.pin.path.clone() else {
            return;
        };
        let mut report = runread_ingest::Report::default();
        let store = self.store.as_ref();
        if let Err(e) = runread_ingest::ingest_file(
            store,
            &self.opts.workspaces,
            runread_sessions::Agent::Pi,
            &path,
            now_ms(),
            &mut report,
        ) {
            tracing::warn!(error = %e, "ingest during supervision failed");
            return;
        }
        if self.located.iter().all(Option::is_some) && self.located.len() == self.sup.runs.len() {
            return;
        }
        let Some(pinned) = &self.pin.pinned else {
            return;
        };
        let Ok(Some(session)) = store.session_by_path(&path.to_string_lossy()) else {
            return;
        };
        let Ok(entries) = store.entries(&session.session_id, session.generation) else {
            return;
        };
        if session.session_id != pinned.session_id {
            return;
        }
        self.located.resize(self.sup.runs.len(), None);
        for (n, tracked) in self.sup.runs.iter().enumerate() {
            if self.located.get(n).is_some_and(Option::is_some) {
                continue;
            }
            let Some(start) = entries.iter().find(|e| {
                e.role.as_deref() == Some("user")
                    && e.message_sha256.as_deref() == Some(tracked.user_message_sha256.as_str())
            }) else {
                continue;
            };
            if let Ok(Some(run)) = store.run(&session.session_id, session.generation, &start.id) {
                let shown = run.target.clone();
                self.located[n] = Some((shown, start.id.clone()));
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
        self.proofs.resize(self.sup.runs.len(), Proof::Pending);
        let last = self.sup.runs.len().saturating_sub(1);
        for n in 0..self.sup.runs.len() {
            // Earlier runs of this invocation are over; the phase belongs to the last one.
            let phase = if n == last {
                self.sup.phase().unwrap_or(Phase::Running)
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
    /// store acknowledge it.
    async fn settle(&mut self, n: usize) {
        self.proofs.resize(self.sup.runs.len(), Proof::Pending);
        let Some(tracked) = self.sup.runs.get(n).cloned() else {
            return;
        };
        let proof = match self.prove(n, &tracked).await {
            Ok(p) => p,
            Err(r) => Proof::Refused {
                reason: r.as_str().into(),
            },
        };
        if let Some(slot) = self.proofs.get_mut(n) {
            *slot = proof;
        }
        self.publish_all();
    }

    async fn prove(&mut self, n: usize, tracked: &Tracked) -> Result<Proof, Refusal> {
        if let Some(r) = self.pin.refused {
            return Err(r);
        }
        let candidate = tracked.candidate.clone().ok_or(Refusal::NotOnBranch)?;
        self.pin_file_when_seen();
        if let Some(r) = self.pin.refused {
            return Err(r);
        }
        let path = self.pin.path.clone().ok_or(Refusal::NotFound)?;
        let pinned = self.pin.pinned.clone().ok_or(Refusal::NotFound)?;
        let mut attempt = 0;
        let verified = loop {
            attempt += 1;
            match proof::verify(&path, &pinned, &tracked.user_message_sha256, &candidate) {
                Ok(v) => break v,
                Err(Refusal::NotOnBranch | Refusal::Incomplete) if attempt < SETTLE_ATTEMPTS => {
                    tokio::time::sleep(SETTLE_RETRY_DELAY).await;
                }
                Err(r) => return Err(r),
            }
        };
        // The store takes the run (the same file, read again through ingest) …
        self.ingest_and_locate();
        let (target, run_id) = self
            .located
            .get(n)
            .cloned()
            .flatten()
            .ok_or(Refusal::NotOnBranch)?;
        let stored = self
            .store
            .run(&target.session_id, target.generation, &run_id)
            .ok()
            .flatten()
            .ok_or(Refusal::NotOnBranch)?;
        if run_id != verified.run.run_id
            || stored.run.final_entry_id.as_deref() != Some(verified.final_entry_id.as_str())
            || stored.run.final_message_sha256.as_deref() != Some(candidate.message_sha256.as_str())
        {
            return Err(Refusal::Mismatch);
        }
        // … then the proof goes to the journal, durably, and is read back.
        let journal = Journal::at(&self.opts.journal_root, self.store.instance_id());
        let entry = Entry {
            format: FORMAT.into(),
            namespace: Namespace {
                instance: target.instance.clone(),
                workspace_id: target.workspace_id.clone(),
                session_id: target.session_id.clone(),
                generation: target.generation,
                run_id: run_id.clone(),
            },
            supervisor_id: self.supervisor_id.clone(),
            agent: "pi".into(),
            agent_version: self.agent.version.clone(),
            session_file: path.to_string_lossy().into_owned(),
            session_stamp: FileStamp {
                dev: verified.identity.dev,
                ino: verified.identity.ino,
                size: verified.identity.size,
                mtime_ns: verified.identity.mtime_ns,
            },
            pinned_leaf: pinned.leaf.clone(),
            start_entry_id: run_id.clone(),
            user_message_sha256: tracked.user_message_sha256.clone(),
            final_entry_id: verified.final_entry_id.clone(),
            message_sha256: candidate.message_sha256.clone(),
            text_sha256: candidate.text_sha256.clone(),
            text_bytes: verified.text_bytes,
            truncated: candidate.truncated,
            chain_len: verified.run.chain_len,
            verified_at_ms: now_ms(),
        };
        journal_proof(&journal, &entry).map_err(|e| {
            tracing::warn!(error = %e, "journal write failed");
            Refusal::Journal
        })
        // The caller records the proof in the store: that is the store's acknowledgement, and
        // it comes only after the entry is durable and read back.
    }

    async fn on_line(&mut self, line: Option<&[u8]>) {
        let event = match line.map(events::parse) {
            Some(Ok(e)) => e,
            _ => {
                self.sup.fault();
                return;
            }
        };
        self.render(&event);
        let had_header = self.sup.header.is_some();
        let step = self.sup.apply(&event);
        if !had_header && self.sup.header.is_some() {
            self.pin_at_start();
        }
        let persisted = matches!(
            event,
            Event::UserMessage { .. } | Event::AssistantMessage { .. } | Event::OtherMessageEnd
        );
        if persisted {
            self.pin_file_when_seen();
            self.ingest_and_locate();
        }
        match step {
            Step::Settle(n) => self.settle(n).await,
            Step::Changed => self.publish_all(),
            Step::Nothing if persisted => self.publish_all(),
            Step::Nothing => {}
        }
    }

    /// Final proofs of runs that never settled, from how they ended.
    fn close_runs(&mut self) {
        self.proofs.resize(self.sup.runs.len(), Proof::Pending);
        for (n, run) in self.sup.runs.iter().enumerate() {
            let Some(slot) = self.proofs.get_mut(n) else {
                continue;
            };
            if *slot != Proof::Pending {
                continue;
            }
            let reason = if run.faulted {
                *slot = Proof::Refused {
                    reason: Refusal::StreamFault.as_str().into(),
                };
                continue;
            } else {
                match run.last_stop.as_deref() {
                    Some("error") => "the provider failed (after retries)",
                    Some("aborted") => "the run was aborted",
                    Some("toolUse") => "the run ended with a tool call open",
                    None => "no assistant message",
                    Some(_) if !run.ended => "the agent ended before the run did",
                    Some(_) => "the run did not settle with an answer",
                }
            };
            *slot = Proof::NoAnswer {
                reason: reason.into(),
            };
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

/// Supervises one agent invocation to its end (and the end of what it left behind, unless
/// interrupted). Returns how it ended.
pub async fn supervise(store: Arc<dyn Store>, opts: Options) -> Result<Outcome, StartError> {
    let agent = locate::agent_of(&opts.command).map_err(StartError::Unsupported)?;
    let (program, rest) = opts
        .command
        .split_first()
        .ok_or(StartError::Unsupported(locate::Unsupported::NoCommand))?;
    let args = locate::with_json_mode(rest).map_err(StartError::Unsupported)?;
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
    let agent_pid = child.id();
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| StartError::Spawn(std::io::Error::other("no stdout")))?;
    let dirs = locate::session_dirs(&args, &opts.cwd);
    let mut d = Driver {
        store,
        agent,
        supervisor_id: uuid::Uuid::new_v4().to_string(),
        host: host_name(),
        sup: Supervision::new(),
        pin: SessionPin {
            dirs,
            path: None,
            pinned: None,
            refused: None,
        },
        located: Vec::new(),
        proofs: Vec::new(),
        foreground: Foreground::Running,
        exit: None,
        background: Background {
            census_complete: false,
            active: 0,
            observed_at_ms: now_ms(),
        },
        supervising: true,
        census_ok,
        agent_pid,
        printed_text: false,
        opts,
    };
    if !census_ok {
        d.say("runread: cannot become the subreaper of the agent's processes; background coverage stays incomplete");
    }
    let mut interrupt = signal(SignalKind::interrupt()).map_err(StartError::Spawn)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(StartError::Spawn)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(StartError::Spawn)?;
    let mut interrupted = false;
    let forward = |sig: rustix::process::Signal| {
        if let Some(pid) = agent_pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, sig);
        }
    };
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut heartbeat = tokio::time::interval(Duration::from_millis(SUPERVISOR_HEARTBEAT_MS));
    loop {
        tokio::select! {
            read = read_line_bounded(&mut reader, &mut line, EVENT_LINE_MAX_BYTES) => match read {
                Ok(Some(true)) => d.on_line(Some(&line)).await,
                Ok(Some(false)) => d.on_line(None).await,
                Ok(None) | Err(_) => break,
            },
            _ = interrupt.recv() => { interrupted = true; forward(rustix::process::Signal::INT); }
            _ = terminate.recv() => { interrupted = true; forward(rustix::process::Signal::TERM); }
            _ = hangup.recv() => { interrupted = true; forward(rustix::process::Signal::HUP); }
            _ = heartbeat.tick() => { d.refresh_census(); d.publish_all(); }
        }
    }
    let status = loop {
        tokio::select! {
            s = child.wait() => break s.map_err(StartError::Spawn)?,
            _ = interrupt.recv() => { interrupted = true; forward(rustix::process::Signal::INT); }
            _ = terminate.recv() => { interrupted = true; forward(rustix::process::Signal::TERM); }
        }
    };
    let (foreground, exit, exit_code) = foreground_of(status, interrupted);
    d.foreground = foreground;
    d.exit = Some(exit);
    d.pin_file_when_seen();
    d.ingest_and_locate();
    d.close_runs();
    d.refresh_census();
    d.publish_all();
    // What the agent left behind keeps the run from counting as done: keep watching (and the
    // record fresh) until it is gone, or until the user stops watching.
    if d.background.active > 0 {
        d.say(&format!(
            "runread: the agent exited but left {} process(es) running; watching them (Ctrl-C stops watching, not them)",
            d.background.active
        ));
        let mut poll = tokio::time::interval(BACKGROUND_POLL);
        let mut last_publish = now_ms();
        loop {
            tokio::select! {
                _ = poll.tick() => {
                    d.refresh_census();
                    if d.background.active == 0 { break; }
                    if now_ms() - last_publish >= SUPERVISOR_HEARTBEAT_MS as i64 {
                        d.publish_all();
                        last_publish = now_ms();
                    }
                }
                _ = interrupt.recv() => break,
                _ = terminate.recv() => break,
                _ = hangup.recv() => break,
            }
        }
    }
    d.supervising = false;
    d.publish_all();
    let runs = (0..d.sup.runs.len())
        .map(|n| {
            let located = d.located.get(n).cloned().flatten();
            RunReport {
                run_id: located.as_ref().map(|(_, id)| id.clone()),
                target: located.map(|(t, _)| t),
                proof: d.proofs.get(n).cloned().unwrap_or(Proof::Pending),
            }
        })
        .collect();
    Ok(Outcome {
        exit_code,
        foreground,
        runs,
        background_left: d.background.active as usize,
    })
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
