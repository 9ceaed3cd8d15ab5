//! What `runread run` shows on the terminal while the agent works: the model's text on stdout,
//! tools, retries and failures on stderr — the agent's own terminal output is replaced by its
//! event stream, so this is what the user sees of it. Which event shows as what is each agent's
//! (its `Machine`); this is where it goes.

use std::io::Write as _;

/// Longest failure text shown on the terminal (in characters).
pub const FAILURE_SHOWN_MAX_CHARS: usize = 200;

pub struct Terminal {
    /// Render the event stream (`Options::echo`); off, nothing is shown.
    echo: bool,
    /// Streamed text ended without a newline yet.
    printed_text: bool,
}

impl Terminal {
    pub(crate) fn new(echo: bool) -> Terminal {
        Terminal {
            echo,
            printed_text: false,
        }
    }

    /// A line about the run (a tool, a retry, a failure) on stderr.
    pub fn say(&self, line: &str) {
        if self.echo {
            eprintln!("{line}");
        }
    }

    /// A failure's text, on one line and bounded, on stderr.
    pub fn failure(&self, text: &str) {
        self.say(&format!(
            "  ✗ {}",
            crate::stream::one_line(text, FAILURE_SHOWN_MAX_CHARS)
        ));
    }

    /// A piece of the model's text as it streams, on stdout.
    pub fn stream_text(&mut self, text: &str) {
        if !self.echo {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.printed_text = true;
    }

    /// The streamed text's message ended: its line too.
    pub fn end_text(&mut self) {
        if self.echo && self.printed_text {
            println!();
            self.printed_text = false;
        }
    }

    /// A whole message of the model's text, on stdout.
    pub fn text(&self, text: &str) {
        if !self.echo {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}
