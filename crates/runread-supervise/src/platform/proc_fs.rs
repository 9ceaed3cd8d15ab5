//! The process table as Linux's `/proc` shows it: one `/proc/PID/stat` per process, read without
//! running anything.

use std::io::Read;

use runread_core::limits::PROCESS_SCAN_MAX;

use super::{Process, ProcessTable, Snapshot};

/// Where the kernel lists its processes, one folder per pid.
const PROC_ROOT: &str = "/proc";
/// Bytes read of one `/proc/PID/stat` (its fields up to `ppid` fit in far less).
const STAT_READ_MAX: u64 = 1_024;

/// The process table read from `/proc` (Linux, Android). Elsewhere there is no `/proc` (or not
/// the kernel's own) and its snapshot is empty and incomplete.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcFs;

/// `(state, ppid)` of one process, from `/proc/PID/stat`.
fn stat_of(pid: u32) -> Option<(char, u32)> {
    let mut buf = Vec::new();
    std::fs::File::open(format!("{PROC_ROOT}/{pid}/stat"))
        .ok()?
        .take(STAT_READ_MAX)
        .read_to_end(&mut buf)
        .ok()?;
    let text = String::from_utf8_lossy(&buf);
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses; it ends at the last ')'.
    let rest = text.get(text.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

impl ProcessTable for ProcFs {
    fn snapshot(&self) -> Snapshot {
        let Ok(dir) = std::fs::read_dir(PROC_ROOT) else {
            return Snapshot::default();
        };
        let mut snapshot = Snapshot {
            processes: Vec::new(),
            complete: true,
        };
        for (n, item) in dir.enumerate() {
            if n >= PROCESS_SCAN_MAX {
                snapshot.complete = false;
                break;
            }
            let Some(pid) = item
                .ok()
                .and_then(|i| i.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
            else {
                continue;
            };
            // A process that exits between listing and reading is simply gone.
            if let Some((state, ppid)) = stat_of(pid) {
                snapshot.processes.push(Process {
                    pid,
                    ppid,
                    zombie: state == 'Z',
                });
            }
        }
        snapshot
    }
}
