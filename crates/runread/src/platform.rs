//! The CLI's platform module: the signals that stop its long-running commands, the desktop's
//! opener of a link and its notifier. Every OS-specific call of the `runread` crate is here (the rest of the OS it
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

/// The program that shows a desktop notification: `osascript` on macOS, `notify-send`
/// (libnotify) on Linux and the BSDs; none on Windows.
const NOTIFIER: Option<&str> = if cfg!(target_os = "macos") {
    Some("osascript")
} else if cfg!(windows) {
    None
} else {
    Some("notify-send")
};

/// The command that shows the desktop notification `title` / `body`, and its program's name;
/// `None` where there is no notifier. Every part is one argument of its own: no shell reads
/// them. On macOS the texts go into AppleScript string literals ([`applescript_string`]); for
/// `notify-send` the body is escaped as markup ([`markup_escaped`], notification servers read
/// the body as a subset of HTML) and `--` ends the options, so a body that starts with `-` is
/// still the body.
pub(crate) fn notification(
    title: &str,
    body: &str,
) -> Option<(&'static str, std::process::Command)> {
    let program = NOTIFIER?;
    let mut command = std::process::Command::new(program);
    if cfg!(target_os = "macos") {
        command.arg("-e").arg(format!(
            "display notification {} with title {}",
            applescript_string(body),
            applescript_string(title)
        ));
    } else {
        command.arg("--").arg(title).arg(markup_escaped(body));
    }
    Some((program, command))
}

/// `text` as an AppleScript string literal: between double quotes, its `\` and `"` escaped, and
/// any control character (which would end the statement or the line) written as a space.
fn applescript_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` with the characters a notification server would read as markup (`&`, `<`, `>`)
/// written as their entities.
fn markup_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_applescript_literal_cannot_end_early_or_run_on() {
        assert_eq!(applescript_string("plain"), r#""plain""#);
        assert_eq!(
            applescript_string(r#"a" & (do shell script "x") & "\"#),
            r#""a\" & (do shell script \"x\") & \"\\""#
        );
        assert_eq!(applescript_string("two\nlines\r\u{1b}"), r#""two lines  ""#);
    }

    #[test]
    fn markup_is_written_as_entities() {
        assert_eq!(
            markup_escaped("<b>x</b> & y"),
            "&lt;b&gt;x&lt;/b&gt; &amp; y"
        );
    }
}
