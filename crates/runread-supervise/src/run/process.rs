//! The agent as a process: started with its event stream on a pipe, in its own process group,
//! its stream read line by bounded line, and the signals runread takes over meanwhile.

use std::ffi::OsString;
use std::process::ExitStatus;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::locate::Unsupported;
use crate::machine::SupervisedAgent;
use crate::platform::{self, Forwarded, Listener};
use crate::run::{Options, StartError};

/// Reads one line of at most `max` bytes (newline excluded). `Ok(None)` at end of stream;
/// `Ok(Some(false))` for a line that was longer (its bytes are discarded).
pub(crate) async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut overlong = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() && !overlong {
                None
            } else {
                Some(!overlong)
            });
        }
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !overlong {
            if buf.len() + part.len() > max {
                overlong = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(!overlong));
        }
    }
}

/// The agent, started with its event stream.
pub(crate) struct Started {
    pub(crate) child: tokio::process::Child,
    pub(crate) stdout: tokio::process::ChildStdout,
    /// What it was started with: its own arguments and the event stream's.
    pub(crate) args: Vec<OsString>,
    /// runread is the subreaper of what the agent leaves behind.
    pub(crate) census_ok: bool,
}

/// Starts the agent with its event stream on a pipe, in its own process group (so that a signal
/// reaches everything it runs), once runread has tried to become the subreaper of its processes.
pub(crate) fn start(agent: &dyn SupervisedAgent, opts: &Options) -> Result<Started, StartError> {
    let (program, rest) = opts
        .command
        .split_first()
        .ok_or(StartError::Unsupported(Unsupported::NoCommand))?;
    let args = agent
        .with_event_stream(rest)
        .map_err(|why| StartError::Unsupported(Unsupported::Arguments(why)))?;
    let census_ok = platform::become_subreaper();
    let mut child = platform::own_process_group(&mut tokio::process::Command::new(program))
        .args(&args)
        .current_dir(&opts.cwd)
        .stdin(std::process::Stdio::inherit())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map_err(StartError::Spawn)?;
    let Some(stdout) = child.stdout.take() else {
        // Never leave an agent running that runread cannot follow.
        let _ = child.start_kill();
        return Err(StartError::Spawn(std::io::Error::other("no stdout")));
    };
    Ok(Started {
        child,
        stdout,
        args,
        census_ok,
    })
}

/// The signals runread takes over while it supervises: while the agent runs they are passed on
/// to its process group; once it has exited they stop the watch of what it left behind.
pub(crate) struct Signals {
    pub(crate) listener: Listener,
    pub(crate) agent_pid: Option<u32>,
    /// runread passed an interrupt (or a termination) on to the agent.
    pub(crate) interrupted: bool,
}

impl Signals {
    /// Takes the signals over; [`Signals::agent_pid`] is set once the agent has started.
    pub(crate) fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            listener: Listener::install()?,
            agent_pid: None,
            interrupted: false,
        })
    }

    /// Passes `sig` on to the agent's process group.
    pub(crate) fn forward(&mut self, sig: Forwarded) {
        self.interrupted = true;
        if let Some(pid) = self.agent_pid {
            platform::signal_group(pid, sig);
        }
    }
}

/// Waits for the agent to exit, passing interrupts and terminations on meanwhile.
pub(crate) async fn wait_for_exit(
    child: &mut tokio::process::Child,
    signals: &mut Signals,
) -> std::io::Result<ExitStatus> {
    loop {
        tokio::select! {
            s = child.wait() => return s,
            // Each passed on, a hang-up too: as while its output runs, a hang-up between the end
            // of its output and its exit is the agent's, not a request to stop watching what it
            // leaves behind.
            sig = signals.listener.recv() => signals.forward(sig),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<Option<Vec<u8>>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut reader = input;
            let mut buf = Vec::new();
            let mut out = Vec::new();
            while let Some(whole) = read_line_bounded(&mut reader, &mut buf, max).await.unwrap() {
                out.push(whole.then(|| buf.clone()));
            }
            out
        })
    }

    #[test]
    fn an_event_line_of_the_limit_is_read_and_one_byte_more_is_skipped() {
        let max = 8;
        let at = b"12345678\n";
        assert_eq!(lines(at, max), vec![Some(b"12345678".to_vec())]);
        let over = b"123456789\nnext\n";
        assert_eq!(
            lines(over, max),
            vec![None, Some(b"next".to_vec())],
            "skipped, then in step again"
        );
        assert_eq!(
            lines(b"tail-no-newline", 64),
            vec![Some(b"tail-no-newline".to_vec())]
        );
    }
}
