//! What every agent's event stream shares: a line that is not an event, reading a field, showing a
//! text on one line, and what an event asks of the driver.

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
