//! The CLI's platform module: the signals that stop its long-running commands and the desktop's
//! opener of a link. Every OS-specific call of the `runread` crate is here (the rest of the OS it
//! needs is `runread-platform`'s).

/// The program that opens a link in the desktop's browser: `open` on macOS, `explorer` on
/// Windows, `xdg-open` on Linux and the BSDs.
pub(crate) const BROWSER_OPENER: &str = if cfg!(target_os = "macos") {
    "open"
} else if cfg!(windows) {
    "explorer"
} else {
    "xdg-open"
};

/// The signals that stop runread's long-running commands: Ctrl-C (SIGINT), and SIGTERM, what
/// service managers (systemd, launchd) and supervisors send. Either ends the command gracefully,
/// and the store closes as the process ends: its last connection copies the write-ahead log back
/// and removes it, so the next start has no log to read back (a killed server leaves one, up to
/// `CHECKPOINT_INLINE_PAGES` long). Once registered, neither ends the process where it stands.
/// Elsewhere than Unix: Ctrl-C, and the console window closing or the system shutting down.
pub(crate) struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(windows)]
    close: tokio::signal::windows::CtrlClose,
    #[cfg(windows)]
    shutdown: tokio::signal::windows::CtrlShutdown,
}

impl StopSignals {
    /// Registers them; within a runtime.
    #[cfg(unix)]
    pub(crate) fn register() -> std::io::Result<StopSignals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Registers them; within a runtime.
    #[cfg(windows)]
    pub(crate) fn register() -> std::io::Result<StopSignals> {
        Ok(StopSignals {
            close: tokio::signal::windows::ctrl_close()?,
            shutdown: tokio::signal::windows::ctrl_shutdown()?,
        })
    }

    /// Resolves at the first of them.
    #[cfg(unix)]
    pub(crate) async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }

    /// Resolves at the first of them.
    #[cfg(windows)]
    pub(crate) async fn recv(&mut self) {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = self.close.recv() => {}
            _ = self.shutdown.recv() => {}
        }
    }
}
