//! The platform's calls against real processes: both process tables (the `ps` one everywhere,
//! `/proc` on Linux) find what this test starts, agree on it and see its zombies; a signal to a
//! group reaches all of it and is read back from the exit status.
#![cfg(test)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::*;
use crate::census::descendants_in;

/// Tries of a condition that waits on another process (a zombie appearing, a kill arriving).
const TRIES: usize = 400;
const TRY_PAUSE: Duration = Duration::from_millis(10);

/// Every process table this OS can read: `ps` everywhere, `/proc` on Linux.
fn tables() -> Vec<(&'static str, Box<dyn ProcessTable>)> {
    #[allow(unused_mut)] // only Linux adds `/proc`
    let mut tables: Vec<(&'static str, Box<dyn ProcessTable>)> = vec![("ps", Box::new(PsTable))];
    #[cfg(target_os = "linux")]
    tables.push(("procfs", Box::new(ProcFs)));
    tables
}

/// `sh` in a process group of its own with `n` background `sleep`s: the child and its
/// grandchildren, all forked before their pids are read. Dropped: the whole group is killed.
struct Tree {
    child: Child,
    grandchildren: Vec<u32>,
}

impl Tree {
    fn spawn(n: usize) -> Tree {
        let script = format!("{} wait", "sleep 30 & echo $!; ".repeat(n));
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let grandchildren = (0..n)
            .map(|_| {
                let mut line = String::new();
                out.read_line(&mut line).unwrap();
                line.trim().parse().unwrap()
            })
            .collect();
        Tree {
            child,
            grandchildren,
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Not reaped yet: the group id is still the child's.
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

#[test]
fn each_table_finds_a_child_and_its_grandchild_as_descendants() {
    let tree = Tree::spawn(1);
    let (child, grandchild) = (tree.child.id(), tree.grandchildren[0]);
    for (name, table) in tables() {
        let snapshot = table.snapshot();
        assert!(snapshot.complete, "{name}");
        let of_test = descendants_in(&snapshot, std::process::id(), None);
        assert!(of_test.live.contains(&child), "{name}: {of_test:?}");
        assert!(of_test.live.contains(&grandchild), "{name}: {of_test:?}");
        let of_child = descendants_in(&snapshot, child, None);
        assert_eq!(of_child.live, vec![grandchild], "{name}");
        // The agent excluded: its own descendants still count, it does not.
        let without = descendants_in(&snapshot, std::process::id(), Some(child));
        assert!(!without.live.contains(&child), "{name}");
        assert!(without.live.contains(&grandchild), "{name}");
    }
}

#[test]
fn a_zombie_child_is_reported_as_a_zombie_by_each_table() {
    let mut child = Command::new("sh")
        .args(["-c", "exit 0"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    for (name, table) in tables() {
        let mut seen = None;
        for _ in 0..TRIES {
            let snapshot = table.snapshot();
            if snapshot.processes.iter().any(|p| p.pid == pid && p.zombie) {
                seen = Some(snapshot);
                break;
            }
            std::thread::sleep(TRY_PAUSE);
        }
        let snapshot = seen.unwrap_or_else(|| panic!("{name}: {pid} never a zombie"));
        let census = descendants_in(&snapshot, std::process::id(), None);
        assert!(census.zombies.contains(&pid), "{name}: {census:?}");
        assert!(!census.live.contains(&pid), "{name}");
    }
    child.wait().unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn the_proc_and_ps_tables_agree_on_the_descendants_of_a_tree() {
    // The tree of this test only: other tests start and end processes of this test process
    // meanwhile, so its descendants as a whole are not still between two snapshots.
    let tree = Tree::spawn(3);
    let child = tree.child.id();
    let from_proc = descendants_in(&ProcFs.snapshot(), child, None);
    let from_ps = descendants_in(&PsTable.snapshot(), child, None);
    let mut grandchildren = tree.grandchildren.clone();
    grandchildren.sort_unstable();
    assert_eq!(from_proc.live, grandchildren);
    assert_eq!(from_proc, from_ps);
}

#[test]
fn kill_group_ends_the_child_and_its_grandchild() {
    let mut tree = Tree::spawn(1);
    let (child, grandchild) = (tree.child.id(), tree.grandchildren[0]);
    kill_group(child);
    let status = tree.child.wait().unwrap();
    assert_eq!(signal_of(status), Some(9));
    // The grandchild, re-parented, is gone (or a zombie its new parent has yet to reap).
    let ended = (0..TRIES).any(|_| {
        let s = PsTable.snapshot();
        let alive = s.processes.iter().any(|p| p.pid == grandchild && !p.zombie);
        if alive {
            std::thread::sleep(TRY_PAUSE);
        }
        !alive
    });
    assert!(ended, "{grandchild} still running");
}

#[test]
fn each_forwarded_signal_reaches_the_group_and_is_read_from_the_exit() {
    for (sig, number) in [
        (Forwarded::Interrupt, 2),
        (Forwarded::Terminate, 15),
        (Forwarded::Hangup, 1),
    ] {
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        signal_group(child.id(), sig);
        // Bounded: a signal this test process was started ignoring (a `nohup`, a background job
        // of a shell without job control) is ignored by `sleep` too, and must fail, not hang.
        let status = (0..TRIES * 5)
            .find_map(|_| {
                let s = child.try_wait().unwrap();
                if s.is_none() {
                    std::thread::sleep(TRY_PAUSE);
                }
                s
            })
            .unwrap_or_else(|| {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{sig:?} did not end `sleep` (ignored since this test started?)")
            });
        assert_eq!(signal_of(status), Some(number), "{sig:?}");
        assert_eq!(status.code(), None);
    }
    let exited = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
    assert_eq!(signal_of(exited), None);
}

#[test]
fn reaping_a_zombie_child_removes_it() {
    let child = Command::new("sh")
        .args(["-c", "exit 0"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Left to the census, as an orphan re-parented to runread is: std's handle never waits.
    drop(child);
    let zombie = (0..TRIES).any(|_| {
        let z = descendants_in(&process_table().snapshot(), std::process::id(), None)
            .zombies
            .contains(&pid);
        if !z {
            std::thread::sleep(TRY_PAUSE);
        }
        z
    });
    assert!(zombie, "{pid} never a zombie");
    reap(&[pid]);
    let s = process_table().snapshot();
    assert!(!s.processes.iter().any(|p| p.pid == pid));
}
