//! An agent's exit status read as its foreground: what every agent's rule (its `Machine`'s
//! `foreground`) is built from.

use std::process::ExitStatus;

use runread_store::Foreground;

/// Exit status of a process ended by SIGINT, by shell convention.
const EXIT_INTERRUPTED: i32 = 130;
/// The exit status of an agent that reported a failed run on its stream (and of some after an
/// interrupt).
pub const EXIT_REPORTED_FAILURE: i32 = 1;

/// The exit status alone: its foreground, its exit as recorded (`exit:N`, `signal:N`) and the
/// code runread passes on (128 + signal when a signal ended it).
pub fn foreground_of(status: ExitStatus, interrupted: bool) -> (Foreground, String, i32) {
    if let Some(code) = status.code() {
        let fg = match code {
            0 => Foreground::Completed,
            EXIT_INTERRUPTED => Foreground::Cancelled,
            _ if interrupted => Foreground::Cancelled,
            _ => Foreground::Failed,
        };
        return (fg, format!("exit:{code}"), code);
    }
    let sig = crate::platform::signal_of(status).unwrap_or(0);
    let fg = if interrupted {
        Foreground::Cancelled
    } else {
        Foreground::Killed
    };
    (fg, format!("signal:{sig}"), 128 + sig)
}

/// An exit read with the stream of an agent that reports each run's end: exit 0 with a run that
/// did not report its end is stopped, not done; exit [`EXIT_REPORTED_FAILURE`] once every run
/// reported its end and the last one a failure is the agent's normal end.
pub fn reported_foreground(
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
