//! Which processes the agent left behind.
//!
//! `runread run` makes itself the child subreaper, so every process the agent starts — also one
//! that detaches with `setsid` or double-forks — stays its descendant, and after the agent exits
//! its leftovers are re-parented to runread instead of to init. A census walks `/proc` and counts
//! the live descendants; zombies among runread's own children are reaped here (never the agent:
//! its status belongs to the driver).

use std::collections::HashMap;
use std::io::Read;

use runread_core::limits::PROCESS_SCAN_MAX;

/// Bytes read of one `/proc/PID/stat` (its fields up to `ppid` fit in far less).
const STAT_READ_MAX: u64 = 1_024;

/// One census of the descendants of `root`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Census {
    /// Live (non-zombie) descendants of `root`, `exclude` left out.
    pub live: Vec<u32>,
    /// Zombie children of `root`, `exclude` left out: to be reaped.
    pub zombies: Vec<u32>,
    /// Every process could be looked at.
    pub complete: bool,
}

/// `(state, ppid)` of one process, from `/proc/PID/stat`.
fn stat_of(pid: u32) -> Option<(char, u32)> {
    let mut buf = Vec::new();
    std::fs::File::open(format!("/proc/{pid}/stat"))
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

/// The descendants of `root` now.
pub fn descendants(root: u32, exclude: Option<u32>) -> Census {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Census::default();
    };
    let mut complete = true;
    let mut children: HashMap<u32, Vec<(u32, char)>> = HashMap::new();
    for (n, item) in dir.enumerate() {
        if n >= PROCESS_SCAN_MAX {
            complete = false;
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
            children.entry(ppid).or_default().push((pid, state));
        }
    }
    let mut census = Census {
        complete,
        ..Census::default()
    };
    let mut stack = vec![root];
    let mut visited = 0usize;
    while let Some(parent) = stack.pop() {
        visited += 1;
        if visited > PROCESS_SCAN_MAX {
            census.complete = false;
            break;
        }
        for &(pid, state) in children.get(&parent).map(Vec::as_slice).unwrap_or(&[]) {
            if Some(pid) == exclude {
                // The agent's own children still count: recurse, but do not list the agent.
                stack.push(pid);
                continue;
            }
            if state == 'Z' {
                if parent == root {
                    census.zombies.push(pid);
                }
                continue;
            }
            census.live.push(pid);
            stack.push(pid);
        }
    }
    census.live.sort_unstable();
    census
}

/// Makes this process the subreaper of its descendants. `false` if the kernel refused.
pub fn become_subreaper() -> bool {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok()
}

/// Reaps the zombie children a census found (orphans re-parented to us), never blocking.
pub fn reap(zombies: &[u32]) {
    for &pid in zombies {
        if let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
        }
    }
}
