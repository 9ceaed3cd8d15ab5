//! The process table as `ps` prints it: the portable reader, for macOS and the BSDs, which have
//! no `/proc` of their own. Pure `std::process::Command`, so it builds (and is tested) everywhere.
//!
//! `ps -A -o pid= -o ppid= -o stat=` is read the same by procps (Linux) and BSD `ps` (macOS):
//! `-A` is every process, each `-o KEYWORD=` one column with an empty header (so no header line
//! is printed), and `stat`'s first letter is `Z` for a zombie in both. Its output is not trusted
//! to be well formed: it is read up to a bound and within a time, and anything that does not read
//! as three columns makes the snapshot incomplete instead of guessed at.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use runread_core::limits::PROCESS_SCAN_MAX;

use super::{Process, ProcessTable, Snapshot};

/// The program, found on runread's `PATH` (`/bin/ps` on macOS, `/usr/bin/ps` with procps).
const PS_PROGRAM: &str = "ps";
/// Every process; pid, parent pid and state, each column without a header.
const PS_ARGS: [&str; 7] = ["-A", "-o", "pid=", "-o", "ppid=", "-o", "stat="];
/// Room for one line in [`PS_OUTPUT_MAX_BYTES`]: two numbers of at most 10 digits, a state of a
/// few letters (`Ss+`, `S<Ll`) and the column padding fit in far less.
const PS_LINE_ROOM_BYTES: usize = 64;
/// Most bytes of `ps`'s output read: [`PROCESS_SCAN_MAX`] lines of `PS_LINE_ROOM_BYTES`. More
/// is cut (the snapshot is incomplete) and `ps`, its pipe closed, ends.
pub const PS_OUTPUT_MAX_BYTES: usize = PROCESS_SCAN_MAX * PS_LINE_ROOM_BYTES;
/// How long one `ps` may take, from its start to its exit; then it is killed and the snapshot is
/// empty and incomplete. A census runs at least every heartbeat; `ps` takes milliseconds.
pub const PS_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the exit of a `ps` whose output has ended is looked for.
const PS_WAIT_POLL: Duration = Duration::from_millis(5);

/// The process table read from `ps`'s output (the default where there is no `/proc`).
#[derive(Debug, Clone, Copy, Default)]
pub struct PsTable;

impl ProcessTable for PsTable {
    fn snapshot(&self) -> Snapshot {
        match run_ps() {
            Some((out, ps_pid, exited_ok)) => read(&out, ps_pid, exited_ok),
            None => Snapshot::default(),
        }
    }
}

/// The snapshot of what the `ps` of pid `ps_pid` printed, `exited_ok` if it exited 0.
fn read(out: &[u8], ps_pid: u32, exited_ok: bool) -> Snapshot {
    let mut snapshot = parse_ps(out, PS_OUTPUT_MAX_BYTES, PROCESS_SCAN_MAX);
    // Its output may be whole and its exit a failure (a process it could not read).
    snapshot.complete &= exited_ok;
    // `ps` lists itself, runread's child while it runs: not a process anyone left behind.
    snapshot.processes.retain(|p| p.pid != ps_pid);
    snapshot
}

/// Runs `ps`: its output (at most [`PS_OUTPUT_MAX_BYTES`] + 1 bytes, to tell a cut), its pid,
/// and whether it exited 0. `None` if it could not be run or did not finish in [`PS_TIMEOUT`].
fn run_ps() -> Option<(Vec<u8>, u32, bool)> {
    let deadline = Instant::now() + PS_TIMEOUT;
    let mut child = Command::new(PS_PROGRAM)
        .args(PS_ARGS)
        // Numbers and state letters in the one format both `ps` families print by default.
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let ps_pid = child.id();
    let Some(stdout) = child.stdout.take() else {
        end(&mut child);
        return None;
    };
    let limit = u64::try_from(PS_OUTPUT_MAX_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    // Read on a thread so that the wait for it has a deadline; the thread ends when the pipe
    // closes (at `ps`'s exit, or its kill below).
    let (tx, rx) = mpsc::sync_channel(1);
    let reader = std::thread::Builder::new()
        .name("runread-ps".into())
        .spawn(move || {
            let mut out = Vec::new();
            let read = stdout.take(limit).read_to_end(&mut out).map(|_| out);
            let _ = tx.send(read);
        });
    if reader.is_err() {
        end(&mut child);
        return None;
    }
    let Ok(Ok(out)) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) else {
        end(&mut child);
        return None;
    };
    let exited_ok = wait_until(&mut child, deadline).is_some_and(|s| s.success());
    Some((out, ps_pid, exited_ok))
}

/// The exit of `child` by `deadline`; past it, `child` is killed and `None`.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(PS_WAIT_POLL),
            Ok(None) | Err(_) => {
                end(child);
                return None;
            }
        }
    }
}

/// Kills and reaps `child` (never left a zombie of runread's own making).
fn end(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// One line of `ps`'s output: `PID PPID STAT`, padded with blanks. `None` for anything else.
fn parse_line(line: &[u8]) -> Option<Process> {
    let text = std::str::from_utf8(line).ok()?;
    let mut fields = text.split_ascii_whitespace();
    let pid = fields.next()?.parse().ok()?;
    let ppid = fields.next()?.parse().ok()?;
    let state = fields.next()?;
    if fields.next().is_some() {
        return None;
    }
    Some(Process {
        pid,
        ppid,
        zombie: state.starts_with('Z'),
    })
}

/// Reads `ps`'s output `out` into a snapshot of at most `max_lines` processes from at most
/// `max_bytes` bytes. Incomplete when `out` is longer (it was cut), when its last line has no
/// newline (cut, or `ps` died writing it), when there are more lines, when a line does not read,
/// and when it lists nothing (`ps` always lists itself).
pub fn parse_ps(out: &[u8], max_bytes: usize, max_lines: usize) -> Snapshot {
    let mut complete = out.len() <= max_bytes;
    let held = out.get(..max_bytes).unwrap_or(out);
    let whole = match held.iter().rposition(|b| *b == b'\n') {
        Some(end) => held.get(..=end).unwrap_or_default(),
        None => &[],
    };
    if whole.len() < held.len() {
        complete = false;
    }
    let mut processes = Vec::new();
    for (n, line) in whole.split_inclusive(|b| *b == b'\n').enumerate() {
        if n >= max_lines {
            complete = false;
            break;
        }
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        match parse_line(line) {
            Some(p) => processes.push(p),
            None => complete = false,
        }
    }
    if processes.is_empty() {
        complete = false;
    }
    Snapshot {
        processes,
        complete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, ppid: u32, zombie: bool) -> Process {
        Process { pid, ppid, zombie }
    }

    #[cfg(unix)]
    #[test]
    fn ps_runs_lists_itself_and_its_own_line_is_left_out() {
        let (out, ps_pid, exited_ok) = run_ps().unwrap();
        assert!(exited_ok);
        let raw = parse_ps(&out, PS_OUTPUT_MAX_BYTES, PROCESS_SCAN_MAX);
        assert!(raw.complete);
        assert!(
            raw.processes
                .contains(&p(ps_pid, std::process::id(), false)),
            "ps lists itself, a child of this process: {ps_pid}"
        );
        let snapshot = read(&out, ps_pid, exited_ok);
        assert!(snapshot.complete);
        assert!(!snapshot.processes.iter().any(|p| p.pid == ps_pid));
        assert_eq!(snapshot.processes.len() + 1, raw.processes.len());
        assert!(!read(&out, ps_pid, false).complete, "a failed exit");
    }

    #[test]
    fn procps_and_bsd_lines_read_alike() {
        // procps pads to the widest pid; macOS's ps right-aligns in fixed columns.
        let out = b"    1     0 S<Ll\n  812     1 Ss\n  813   812 Z+\n    0     0 Ss\n";
        let s = parse_ps(out, 1_000, 10);
        assert!(s.complete);
        assert_eq!(
            s.processes,
            vec![
                p(1, 0, false),
                p(812, 1, false),
                p(813, 812, true),
                p(0, 0, false)
            ]
        );
    }

    #[test]
    fn a_line_that_does_not_read_makes_it_incomplete_and_is_skipped() {
        for bad in [
            &b"  PID  PPID STAT\n"[..],
            b"12 1\n",
            b"12 1 S extra\n",
            b"-3 1 S\n",
            b"12 x S\n",
            b"99999999999 1 S\n",
            b"\n",
            b"12 1 \xff\n",
        ] {
            let mut out = b"7 1 S\n".to_vec();
            out.extend_from_slice(bad);
            out.extend_from_slice(b"8 7 R\n");
            let s = parse_ps(&out, 1_000, 10);
            assert!(!s.complete, "{bad:?}");
            assert_eq!(s.processes, vec![p(7, 1, false), p(8, 7, false)], "{bad:?}");
        }
    }

    #[test]
    fn an_output_without_its_last_newline_or_empty_is_incomplete() {
        let s = parse_ps(b"7 1 S\n8 7 R", 1_000, 10);
        assert!(!s.complete);
        assert_eq!(s.processes, vec![p(7, 1, false)]);
        assert_eq!(parse_ps(b"", 1_000, 10), Snapshot::default());
        assert_eq!(parse_ps(b"8 7", 1_000, 10), Snapshot::default());
    }

    #[test]
    fn the_line_bound_holds_n_and_cuts_n_plus_one() {
        let lines = |n: u32| -> Vec<u8> {
            (1..=n)
                .flat_map(|pid| format!("{pid} 1 S\n").into_bytes())
                .collect()
        };
        let at = parse_ps(&lines(5), 1_000, 5);
        assert!(at.complete);
        assert_eq!(at.processes.len(), 5);
        let over = parse_ps(&lines(6), 1_000, 5);
        assert!(!over.complete);
        assert_eq!(over.processes.len(), 5);
    }

    #[test]
    fn the_byte_bound_holds_n_and_cuts_n_plus_one() {
        // Lines of exactly `PS_LINE_ROOM_BYTES`, as many as the scan bound: exactly the output
        // bound, read whole.
        let line = |pid: usize| -> Vec<u8> {
            let l = format!("{pid:>width$} 1 S\n", width = PS_LINE_ROOM_BYTES - 5);
            assert_eq!(l.len(), PS_LINE_ROOM_BYTES);
            l.into_bytes()
        };
        let mut out: Vec<u8> = (1..=PROCESS_SCAN_MAX).flat_map(line).collect();
        assert_eq!(out.len(), PS_OUTPUT_MAX_BYTES);
        let at = parse_ps(&out, PS_OUTPUT_MAX_BYTES, PROCESS_SCAN_MAX);
        assert!(at.complete);
        assert_eq!(at.processes.len(), PROCESS_SCAN_MAX);
        // One byte more (as the reader keeps, to tell a cut): incomplete, the lines before it
        // still read.
        out.push(b'7');
        let over = parse_ps(&out, PS_OUTPUT_MAX_BYTES, PROCESS_SCAN_MAX);
        assert!(!over.complete);
        assert_eq!(over.processes.len(), PROCESS_SCAN_MAX);
        // A cut inside a line drops that line only.
        let cut = parse_ps(&out, PS_OUTPUT_MAX_BYTES - 1, PROCESS_SCAN_MAX);
        assert!(!cut.complete);
        assert_eq!(cut.processes.len(), PROCESS_SCAN_MAX - 1);
    }
}
