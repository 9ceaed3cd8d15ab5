//! What every agent's event stream shares: a line that is not an event, reading a field, showing a
//! text on one line, and what an event asks of the driver.

use runread_core::Agent;
use serde_json::Value;

/// A line that is not an event (of any agent's stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault;

pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `text` on one line, at most `max` characters (an ellipsis marks a cut): what the terminal
/// shows of a tool call, a failure, an agent's version.
pub fn one_line(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        out.push('…');
    }
    out
}

/// What an event asks of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Nothing,
    /// The phase or the runs changed: refresh the live record.
    Changed,
    /// Run `n` settled with a candidate: verify it against the session file now.
    Settle(usize),
}

/// The first event of a type runread does not know in one invocation, logged once (a warning)
/// with the agent and its version, for the owner to report: the run it fell in is left without
/// an answer already ([`crate::refusal::Refusal::UnknownEvent`]); this says which agent release
/// sent what. Nothing of the line is logged but its `type`, and that only when it is a short
/// identifier ([`runread_core::agent::reportable_event_type`]).
#[derive(Debug, Default)]
pub struct FirstUnknown {
    reported: bool,
}

impl FirstUnknown {
    /// After a line was applied, with the machine's count of unknown events so far: logs the
    /// first one. Whether it logged.
    pub fn after_line(
        &mut self,
        unknown_events: u64,
        agent: Agent,
        version: &str,
        line: &[u8],
    ) -> bool {
        if self.reported || unknown_events == 0 {
            return false;
        }
        self.reported = true;
        let v: Option<Value> = serde_json::from_slice(line).ok();
        let event_type = v
            .as_ref()
            .and_then(|v| str_of(v, "type"))
            .and_then(runread_core::agent::reportable_event_type)
            .unwrap_or("(not shown)");
        tracing::warn!(
            agent = agent.as_str(),
            version,
            event_type,
            "{} {version} sent an event of a type runread does not know; the run it fell in has no \
             answer. Please report the agent and version to runread.",
            agent.product()
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What a log subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    fn logged(f: impl FnOnce()) -> String {
        let out = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(out.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    const SECRET: &str = "sk-ant-api03-4711-secret";

    #[test]
    fn the_first_unknown_event_is_logged_once_with_the_agent_its_version_and_type() {
        let mut first = FirstUnknown::default();
        let line = format!(r#"{{"type":"turn_summary","text":"{SECRET}","more":[1,2]}}"#);
        let log = logged(|| {
            assert!(!first.after_line(0, Agent::Claude, "2.1.332", br#"{"type":"user"}"#));
            assert!(first.after_line(1, Agent::Claude, "2.1.332", line.as_bytes()));
            assert!(!first.after_line(2, Agent::Claude, "2.1.332", line.as_bytes()));
        });
        assert_eq!(log.lines().count(), 1, "{log}");
        assert!(log.contains("WARN"), "{log}");
        for wanted in ["claude", "Claude Code 2.1.332", "turn_summary"] {
            assert!(log.contains(wanted), "{wanted} not in {log}");
        }
        for leaked in [SECRET, "text", "more"] {
            assert!(!log.contains(leaked), "{leaked} in {log}");
        }
    }

    #[test]
    fn a_type_that_is_not_a_short_identifier_is_not_named() {
        let long = "a".repeat(runread_core::limits::REPORTED_EVENT_TYPE_MAX_BYTES + 1);
        for line in [
            format!(r#"{{"type":"{SECRET} Turn"}}"#),
            format!(r#"{{"type":"{long}"}}"#),
            format!(r#"{{"type":7,"text":"{SECRET}"}}"#),
        ] {
            let mut first = FirstUnknown::default();
            let log = logged(|| {
                assert!(first.after_line(1, Agent::Codex, "0.171.0", line.as_bytes()));
            });
            assert!(log.contains("(not shown)"), "{log}");
            assert!(!log.contains(SECRET) && !log.contains(&long), "{log}");
        }
    }
}
