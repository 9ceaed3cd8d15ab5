//! The driver: one invocation's event stream read into its agent's [`Machine`], the session
//! file pinned and ingested as the stream goes, each settled run proved, and each run's
//! supervised record kept current — until the agent and every process it left behind are gone.
//! It holds the small machines that do each part ([`SessionPin`], [`RunBook`], [`Watch`]) and
//! knows no agent.

use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::BufReader;

use runread_core::limits::{EVENT_LINE_MAX_BYTES, SUPERVISOR_HEARTBEAT_MS};
use runread_core::timefmt::now_ms;
use runread_journal::Journal;
use runread_store::{Background, CensusGap, Foreground, Index, Phase, Proof, SupervisedRun};

use crate::census;
use crate::locate::Located;
use crate::machine::Machine;
use crate::proof::Refusal;
use crate::run::book::RunBook;
use crate::run::pin::SessionPin;
use crate::run::process::{Signals, read_line_bounded};
use crate::run::prove::{self, Prover};
use crate::run::{Options, Outcome, RunReport, journal_proof};
use crate::stream::{FirstUnknown, Step};
use crate::terminal::Terminal;

/// How often the census looks for leftover processes once the agent has exited.
const BACKGROUND_POLL: Duration = Duration::from_millis(500);

/// What the agent left behind, as the census last saw it.
pub(crate) struct Watch {
    /// runread is the subreaper of what the agent leaves behind.
    census_ok: bool,
    agent_pid: Option<u32>,
    background: Background,
}

impl Watch {
    fn refresh(&mut self) {
        let c = census::descendants(std::process::id(), self.agent_pid);
        census::reap(&c.zombies);
        self.background = Background {
            census_complete: self.census_ok && c.complete,
            census_gap: if !self.census_ok {
                Some(CensusGap::NoSubreaper)
            } else if !c.complete {
                Some(CensusGap::TableIncomplete)
            } else {
                None
            },
            active: u32::try_from(c.live.len()).unwrap_or(u32::MAX),
            observed_at_ms: now_ms(),
        };
    }
}

/// How the invocation stands, for every run's record.
struct Status {
    supervisor_id: String,
    host: String,
    foreground: Foreground,
    exit: Option<String>,
    /// runread passed an interrupt (or a termination) on to the agent.
    interrupted: bool,
    supervising: bool,
}

pub(crate) struct Driver {
    store: Arc<dyn Index>,
    opts: Options,
    agent: Located,
    machine: Box<dyn Machine>,
    first_unknown: FirstUnknown,
    pin: SessionPin,
    book: RunBook,
    status: Status,
    pub(crate) watch: Watch,
    pub(crate) terminal: Terminal,
}

impl Driver {
    /// The driver of `agent`'s invocation followed by `machine`, before its first event.
    pub(crate) fn new(
        store: Arc<dyn Index>,
        opts: Options,
        agent: Located,
        machine: Box<dyn Machine>,
        (census_ok, agent_pid): (bool, Option<u32>),
    ) -> Driver {
        Driver {
            store,
            agent,
            machine,
            first_unknown: FirstUnknown::default(),
            pin: SessionPin::default(),
            book: RunBook::default(),
            status: Status {
                supervisor_id: uuid::Uuid::new_v4().to_string(),
                host: runread_store::local_host(),
                foreground: Foreground::Running,
                exit: None,
                interrupted: false,
                supervising: true,
            },
            watch: Watch {
                census_ok,
                agent_pid,
                background: Background {
                    census_complete: false,
                    census_gap: None,
                    active: 0,
                    observed_at_ms: now_ms(),
                },
            },
            terminal: Terminal::new(opts.echo),
            opts,
        }
    }

    /// Reads the agent's event stream to its end, passing signals on to the agent and keeping
    /// the record fresh (census and heartbeat) meanwhile.
    pub(crate) async fn follow_stream(
        &mut self,
        stdout: tokio::process::ChildStdout,
        signals: &mut Signals,
    ) {
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
                sig = signals.listener.recv() => signals.forward(sig),
                _ = heartbeat.tick() => { self.watch.refresh(); self.publish_all(); }
            }
        }
    }

    /// The agent exited with `status`: its foreground read with what its stream reported, the
    /// runs the file was not ready for verified once more, the rest closed from how they ended.
    /// Returns the exit code runread passes on.
    pub(crate) async fn conclude(&mut self, status: ExitStatus, interrupted: bool) -> i32 {
        let (foreground, exit, exit_code) = self.machine.foreground(status, interrupted);
        self.status.foreground = foreground;
        self.status.interrupted = interrupted;
        self.status.exit = Some(exit);
        self.pin.when_seen(self.machine.as_ref());
        self.ingest_and_locate();
        for n in std::mem::take(&mut self.book.retry_after_exit) {
            self.settle(n, true).await;
        }
        self.close_runs();
        self.watch.refresh();
        self.publish_all();
        exit_code
    }

    /// Watches the processes the agent left behind until they are gone or a signal stops the
    /// watch (not them), keeping the record fresh at the heartbeat.
    pub(crate) async fn watch_background(&mut self, signals: &mut Signals) {
        if self.watch.background.active == 0 {
            return;
        }
        self.terminal.say(&format!(
            "runread: the agent exited but left {} process(es) running; watching them (Ctrl-C stops watching, not them)",
            self.watch.background.active
        ));
        let mut poll = tokio::time::interval(BACKGROUND_POLL);
        let mut last_publish = now_ms();
        loop {
            tokio::select! {
                _ = poll.tick() => {
                    self.watch.refresh();
                    if self.watch.background.active == 0 { break; }
                    if now_ms() - last_publish >= SUPERVISOR_HEARTBEAT_MS as i64 {
                        self.publish_all();
                        last_publish = now_ms();
                    }
                }
                // Interrupt, termination or hang-up: the watch stops, not what it watches.
                _ = signals.listener.recv() => break,
            }
        }
    }

    /// Supervision stops: the records say so, and how the invocation ended is returned.
    pub(crate) fn finish(&mut self, exit_code: i32) -> Outcome {
        self.status.supervising = false;
        self.publish_all();
        let runs = (0..self.machine.run_count())
            .map(|n| {
                let located = self.book.located.get(n).cloned().flatten();
                RunReport {
                    run_id: located.as_ref().map(|(_, id)| id.clone()),
                    target: located.map(|(t, _)| t),
                    proof: self.book.proof(n),
                }
            })
            .collect();
        Outcome {
            exit_code,
            foreground: self.status.foreground,
            runs,
            background_left: self.watch.background.active as usize,
        }
    }

    /// One line of the stream (`None`: a line over the bound, skipped unread): a line that is
    /// not an event taints the run it falls in; an event is shown, applied, and when it announced
    /// the session, the session is pinned before anything else looks at the file.
    async fn on_line(&mut self, line: Option<&[u8]>) {
        let had_session = self.machine.session().is_some();
        let applied = line.and_then(|line| self.machine.apply_line(line, &mut self.terminal));
        let (Some((step, persisted)), Some(line)) = (applied, line) else {
            self.machine.fault();
            return;
        };
        self.first_unknown.after_line(
            self.machine.unknown_events(),
            self.agent.kind,
            &self.agent.version,
            line,
        );
        if !had_session && self.machine.session().is_some() {
            let cwd = self.opts.cwd.to_string_lossy().into_owned();
            self.pin.at_start(self.machine.as_ref(), &cwd).await;
        }
        if persisted {
            self.pin.when_seen(self.machine.as_ref());
            self.ingest_and_locate();
        }
        match step {
            Step::Settle(n) => self.settle(n, false).await,
            Step::Changed => self.publish_all(),
            Step::Nothing if persisted => self.publish_all(),
            Step::Nothing => {}
        }
    }

    /// Final proofs of runs that never settled, from how they ended.
    fn close_runs(&mut self) {
        self.book.grow(self.machine.run_count());
        for n in 0..self.machine.run_count() {
            if self.book.proof(n) != Proof::Pending {
                continue;
            }
            if let Some(proof) = self.machine.closing_proof(n, self.status.interrupted) {
                self.book.set_proof(n, proof);
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
        if let Some(pinned) = &self.pin.pinned {
            self.book.locate(
                self.store.as_ref(),
                self.machine.as_ref(),
                (&path, pinned),
                self.opts.on_pinned.as_ref(),
            );
        }
    }

    fn record(&self, n: usize, phase: Phase) -> Option<SupervisedRun> {
        let (target, run_id) = self.book.located.get(n)?.as_ref()?;
        Some(SupervisedRun {
            session_id: target.session_id.clone(),
            generation: target.generation,
            run_id: run_id.clone(),
            supervisor_id: self.status.supervisor_id.clone(),
            host: self.status.host.clone(),
            agent_version: self.agent.version.clone(),
            foreground: self.status.foreground,
            exit: self.status.exit.clone(),
            phase,
            proof: self.book.proof(n),
            background: self.watch.background.clone(),
            updated_at_ms: now_ms(),
            supervising: self.status.supervising,
        })
    }

    /// Rewrites the supervised record of every located run.
    fn publish_all(&mut self) {
        let runs = self.machine.run_count();
        self.book.grow(runs);
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

    /// Verifies run `n` against the session file, writes its proof to the journal, and has the
    /// store acknowledge it. `last_chance`: the agent has exited, the file will not change.
    async fn settle(&mut self, n: usize, last_chance: bool) {
        self.book.grow(self.machine.run_count());
        let proof = match self.prove(n).await {
            Ok(p) => p,
            Err(r) if r.transient() && !last_chance => {
                // The agent may still be writing: verified again once it has exited.
                if !self.book.retry_after_exit.contains(&n) {
                    self.book.retry_after_exit.push(n);
                }
                return;
            }
            Err(r) => Proof::Refused {
                reason: r.as_str().into(),
            },
        };
        self.book.set_proof(n, proof);
        self.publish_all();
    }

    /// Proves run `n`: verified against the session file, the same run in the store, then the
    /// proof in the journal. The caller records the proof in the store: that is the store's
    /// acknowledgement, and it comes only after the entry is durable and read back.
    async fn prove(&mut self, n: usize) -> Result<Proof, Refusal> {
        let checked = prove::verify(self.machine.as_ref(), &mut self.pin, n).await?;
        // The store takes the run (the same file, read again through ingest) …
        self.ingest_and_locate();
        if self.machine.located_by_proof() {
            self.book.locate_verified(
                self.store.as_ref(),
                n,
                (&checked.path, &checked.pinned),
                &checked.verified,
            )?;
        }
        let (target, run_id) = self
            .book
            .located
            .get(n)
            .cloned()
            .flatten()
            .ok_or(Refusal::NotOnBranch)?;
        let digests =
            prove::stored_as_verified(self.store.as_ref(), &target, &run_id, &checked.verified)?;
        // … then the proof goes to the journal, durably, and is read back.
        let journal = Journal::at(&self.opts.journal_root, self.store.instance_id());
        let prover = Prover {
            supervisor_id: &self.status.supervisor_id,
            agent: &self.agent,
        };
        let entry = prover.entry(&target, run_id, &checked, digests);
        journal_proof(&journal, &entry).map_err(|e| {
            tracing::warn!(error = %e, "journal write failed");
            Refusal::Journal
        })
    }
}
