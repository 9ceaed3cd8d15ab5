//! runread-supervise's integration tests, one binary (one link) for all of them: each module is one
//! behavior's tests, as its own doc says.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

/// `fn feed(lines) -> (supervision, settled)`: feeds a recorded stream to a new `$supervision`,
/// each line parsed by `$parse` (a line that does not parse is a fault); returns the supervision
/// and the (line, run) pairs that settled. One per agent's state machine.
#[macro_export]
macro_rules! feeder {
    ($supervision:ty, $parse:path) => {
        fn feed(lines: &[String]) -> ($supervision, Vec<(usize, usize)>) {
            let mut sup = <$supervision>::new();
            let mut settled = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                match $parse(line.as_bytes()) {
                    Ok(e) => {
                        if let runread_supervise::stream::Step::Settle(n) = sup.apply(&e) {
                            settled.push((i, n));
                        }
                    }
                    Err(_) => sup.fault(),
                }
            }
            (sup, settled)
        }
    };
}

mod claude_recorded;
mod codex_recorded;
mod copilot_recorded;
mod gemini_recorded;
mod journal_crash;
mod opencode_recorded;
mod recorded;
mod recorded_agents;
