//! Every call of this crate that differs between operating systems, side by side behind `cfg`:
//! the rest of the crate (the driver, the census, the probes) names no OS and no system crate.
//!
//! What lives here:
//!
//! - **The child subreaper** ([`become_subreaper`]). On Linux (and Android) `prctl
//!   (PR_SET_CHILD_SUBREAPER)`, on FreeBSD and DragonFly `procctl(PROC_REAP_ACQUIRE)`: every
//!   process the agent starts — also one that detaches with `setsid` or double-forks — stays
//!   runread's descendant, and is re-parented to runread instead of to init when its parent exits.
//!   **macOS has no subreaper**: a process that detaches from the agent is re-parented to
//!   `launchd`, out of runread's tree, so the census cannot follow it. There (and on any other
//!   OS) [`become_subreaper`] says `false`, which the driver records as a census that is not
//!   complete and why (`CensusGap::NoSubreaper`): background coverage is `incomplete` ("this
//!   system has no child subreaper") for every supervised run, whatever the census counts, and
//!   the terminal names why ([`SUBREAPER_SUPPORTED`]).
//! - **The process table** ([`ProcessTable`]): one [`Snapshot`] of every process's pid, parent
//!   and whether it is a zombie, which the OS-neutral census (`crate::census`) walks. Two
//!   readers, both compiled everywhere so both are tested on Linux: [`ProcFs`] reads
//!   `/proc/PID/stat` (Linux, Android), [`PsTable`] runs `ps -A -o pid= -o ppid= -o stat=`
//!   (POSIX and BSD `ps` alike: macOS, the BSDs, procps on Linux). [`process_table`] is `ProcFs`
//!   where `/proc` is the kernel's own table and `PsTable` elsewhere. Either says `complete:
//!   false` rather than guess: a bound reached, a line that does not read, `ps` missing, failing
//!   or too slow.
//! - **Reaping** the zombies a census found ([`reap`]): `waitpid(WNOHANG)` on Unix.
//! - **Process groups and signals**: the agent (and a version probe) starts in its own process
//!   group ([`own_process_group`]) so that a signal reaches everything it runs
//!   ([`signal_group`], [`kill_group`]); runread takes over interrupt, termination and hang-up
//!   while it supervises ([`Listener`]), named by the OS-neutral [`Forwarded`].
//! - **Exit statuses**: the signal that ended a process ([`signal_of`]).
//!
//! Elsewhere than Unix (Windows) the fallback is honest rather than absent: no subreaper, the
//! `ps` table (which fails there, so every census is incomplete), no process groups (a signal is
//! not passed on), Ctrl-C the only signal taken over, and no exit signal.

mod proc_fs;
mod ps;

use std::process::ExitStatus;

pub use proc_fs::ProcFs;
pub use ps::{PS_OUTPUT_MAX_BYTES, PS_TIMEOUT, PsTable, parse_ps};

/// One process in a [`Snapshot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    /// Exited and not yet reaped (state `Z` in `/proc/PID/stat` and in `ps`'s `stat` alike).
    pub zombie: bool,
}

/// Every process the OS listed at one moment, as far as it could be read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    pub processes: Vec<Process>,
    /// Every process could be looked at: no bound reached, nothing that failed to read.
    pub complete: bool,
}

/// A way to list the processes of this machine.
pub trait ProcessTable {
    /// The processes now, at most `runread_core::limits::PROCESS_SCAN_MAX` of them (more:
    /// `complete: false`).
    fn snapshot(&self) -> Snapshot;
}

/// The process table of this OS: the kernel's `/proc` where it has one.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn process_table() -> ProcFs {
    ProcFs
}

/// The process table of this OS: `ps`, as macOS and the BSDs have no `/proc` of their own.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn process_table() -> PsTable {
    PsTable
}

/// Whether this OS lets a process become the subreaper of its descendants at all (so that a
/// `false` from [`become_subreaper`] means the kernel refused, not that the OS has none).
pub const SUBREAPER_SUPPORTED: bool = cfg!(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "dragonfly"
));

/// Makes this process the subreaper of its descendants. `false` if the kernel refused.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn become_subreaper() -> bool {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok()
}

/// Makes this process the reaper of its descendants. `false` if the kernel refused.
#[cfg(any(target_os = "freebsd", target_os = "dragonfly"))]
pub fn become_subreaper() -> bool {
    rustix::process::set_reaper_status(true).is_ok()
}

/// No subreaper on this OS (macOS among them): what detaches from the agent leaves runread's
/// tree, so the census is never complete.
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "dragonfly"
)))]
pub fn become_subreaper() -> bool {
    false
}

/// `pid` as the kernel's type, if it is one (not 0, within `i32`).
#[cfg(unix)]
fn unix_pid(pid: u32) -> Option<rustix::process::Pid> {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
}

/// Reaps the zombie children a census found (orphans re-parented to us), never blocking.
#[cfg(unix)]
pub fn reap(zombies: &[u32]) {
    for pid in zombies.iter().copied().filter_map(unix_pid) {
        let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
    }
}

/// Nothing to reap where no census sees a zombie.
#[cfg(not(unix))]
pub fn reap(_zombies: &[u32]) {}

/// Starts `cmd` in a process group of its own (its pid is the group's id): a signal to the group
/// reaches everything it runs, and a Ctrl-C at the terminal reaches only runread, which decides.
#[cfg(unix)]
pub fn own_process_group(cmd: &mut tokio::process::Command) -> &mut tokio::process::Command {
    cmd.process_group(0)
}

/// No process groups here: the command starts as it is.
#[cfg(not(unix))]
pub fn own_process_group(cmd: &mut tokio::process::Command) -> &mut tokio::process::Command {
    cmd
}

/// A signal runread takes over while it supervises, and passes on to the agent's group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarded {
    /// `SIGINT` (Ctrl-C).
    Interrupt,
    /// `SIGTERM`.
    Terminate,
    /// `SIGHUP` (the terminal closed).
    Hangup,
}

/// Sends `sig` to the process group whose id is `pgid` (a child started with
/// [`own_process_group`]). A group that is gone is not an error: there is nothing left to tell.
#[cfg(unix)]
pub fn signal_group(pgid: u32, sig: Forwarded) {
    use rustix::process::Signal;
    let sig = match sig {
        Forwarded::Interrupt => Signal::INT,
        Forwarded::Terminate => Signal::TERM,
        Forwarded::Hangup => Signal::HUP,
    };
    if let Some(pid) = unix_pid(pgid) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// No process groups here: nothing is passed on (the console delivers Ctrl-C to the agent too).
#[cfg(not(unix))]
pub fn signal_group(_pgid: u32, _sig: Forwarded) {}

/// Ends the process group whose id is `pgid` at once (`SIGKILL`). Only for a child not yet reaped,
/// so that the id cannot have been reused.
#[cfg(unix)]
pub fn kill_group(pgid: u32) {
    if let Some(pid) = unix_pid(pgid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// No process groups here: the caller's `kill_on_drop` ends the child itself.
#[cfg(not(unix))]
pub fn kill_group(_pgid: u32) {}

/// The signals runread takes over while it supervises.
#[cfg(unix)]
pub struct Listener {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Listener {
    /// Takes interrupt, termination and hang-up over from their default (ending runread).
    pub fn install() -> std::io::Result<Listener> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Listener {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal taken over (cancel-safe: one that arrives is never lost to a `select!`).
    pub async fn recv(&mut self) -> Forwarded {
        tokio::select! {
            _ = self.interrupt.recv() => Forwarded::Interrupt,
            _ = self.terminate.recv() => Forwarded::Terminate,
            _ = self.hangup.recv() => Forwarded::Hangup,
        }
    }
}

/// The signals runread takes over while it supervises: Ctrl-C only, as this OS has no other.
#[cfg(not(unix))]
pub struct Listener;

#[cfg(not(unix))]
impl Listener {
    /// Nothing to take over until the first wait: Ctrl-C is listened for then.
    pub fn install() -> std::io::Result<Listener> {
        Ok(Listener)
    }

    /// The next Ctrl-C; never, if it cannot be listened for.
    pub async fn recv(&mut self) -> Forwarded {
        match tokio::signal::ctrl_c().await {
            Ok(()) => Forwarded::Interrupt,
            Err(_) => std::future::pending().await,
        }
    }
}

/// The number of the signal that ended a process, if a signal did.
#[cfg(unix)]
pub fn signal_of(status: ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

/// No signals end a process here: it always has an exit code.
#[cfg(not(unix))]
pub fn signal_of(_status: ExitStatus) -> Option<i32> {
    None
}

#[cfg(all(test, unix))]
mod tests;
