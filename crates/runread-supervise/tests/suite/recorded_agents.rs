//! Every supervised agent recorded with its reported stream (Claude Code, Codex, Gemini CLI,
//! Copilot CLI, OpenCode: `RECORDED_AGENTS` but those read only passively), one suite: how each step's
//! foreground ended, judged by runread's supervision from the stream and the exit code, is how
//! the agent itself ended it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use runread_core::Agent;
use runread_store::Foreground;
use runread_testkit::{RECORDED_AGENTS, Reported, ReportedStep};

/// The exit status of a process that exited with `code`.
pub(crate) fn exited(code: i32) -> ExitStatus {
    ExitStatus::from_raw(code << 8)
}

/// The exit status a manifest records as `code`: the process exited with it, or, negative, the
/// signal that ended it.
pub(crate) fn status_of(code: i32) -> ExitStatus {
    if code < 0 {
        ExitStatus::from_raw(-code)
    } else {
        exited(code)
    }
}

/// How runread records exit `code` of a manifest, and the code it passes on (128 + a signal).
fn recorded_exit(code: i32) -> (String, i32) {
    if code < 0 {
        (format!("signal:{}", -code), 128 - code)
    } else {
        (format!("exit:{code}"), code)
    }
}

/// How supervision judges a step: its foreground, how it exited, its exit code.
type Judge = fn(&ReportedStep) -> (Foreground, String, i32);

/// How supervision judges a step of `agent`; `None`: `runread run` does not supervise it.
fn judge(agent: Agent) -> Option<Judge> {
    match agent {
        Agent::Claude => Some(crate::claude_recorded::foreground),
        Agent::Codex => Some(crate::codex_recorded::foreground),
        Agent::Gemini => Some(crate::gemini_recorded::foreground),
        Agent::Copilot => Some(crate::copilot_recorded::foreground),
        Agent::Pi => panic!("Pi's fixtures record no reported stream per step"),
        Agent::OpenCode => Some(crate::opencode_recorded::foreground),
    }
}

#[test]
fn every_recorded_steps_foreground_ends_as_its_agent_ended_it() {
    for recorded in RECORDED_AGENTS {
        let Some(judge) = judge(recorded.agent) else {
            assert!(runread_supervise::agents::supervised(recorded.agent).is_none());
            continue;
        };
        for fixture in recorded.fixtures {
            for (i, step) in (recorded.steps)(fixture).iter().enumerate() {
                let at = format!("{} {fixture} step {i}", recorded.agent);
                let (fg, exit, code) = judge(step);
                assert_eq!((exit, code), recorded_exit(step.exit_code), "{at}");
                let want = match step.reported {
                    // A failure the agent reported (exit 1) is its normal end: the run is failed,
                    // its proof says so; the foreground is neither "failed" nor "killed".
                    Reported::Answer(_) | Reported::Failed(_) => Foreground::Completed,
                    Reported::Interrupted => Foreground::Cancelled,
                };
                assert_eq!(fg, want, "{at}");
            }
        }
    }
}
