//! Which processes the agent left behind.
//!
//! `runread run` makes itself the child subreaper where the OS has one (Linux, the FreeBSD
//! family: [`platform::become_subreaper`]), so every process the agent starts — also one that
//! detaches with `setsid` or double-forks — stays its descendant, and after the agent exits its
//! leftovers are re-parented to runread instead of to init. A census walks one snapshot of the
//! process table (the kernel's own on Linux, `ps` elsewhere: [`platform::process_table`]) and
//! counts the live descendants; zombies among runread's own children are reaped here (never the
//! agent: its status belongs to the driver). The walk itself knows no OS ([`descendants_in`]).

use std::collections::{HashMap, HashSet};

use runread_core::limits::PROCESS_SCAN_MAX;

use crate::platform::{self, ProcessTable, Snapshot};

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

/// The descendants of `root` now, from this OS's process table.
pub fn descendants(root: u32, exclude: Option<u32>) -> Census {
    descendants_in(&platform::process_table().snapshot(), root, exclude)
}

/// The descendants of `root` in `snapshot`: complete only if the snapshot is and the walk stayed
/// within [`PROCESS_SCAN_MAX`] parents.
pub fn descendants_in(snapshot: &Snapshot, root: u32, exclude: Option<u32>) -> Census {
    let mut children: HashMap<u32, Vec<(u32, bool)>> = HashMap::new();
    for p in &snapshot.processes {
        children.entry(p.ppid).or_default().push((p.pid, p.zombie));
    }
    let mut census = Census {
        complete: snapshot.complete,
        ..Census::default()
    };
    let mut stack = vec![root];
    // A snapshot is not taken at one instant (pids are read one by one, and reused): a process
    // met twice, or a parent loop, is walked once.
    let mut seen = HashSet::from([root]);
    let mut visited = 0usize;
    while let Some(parent) = stack.pop() {
        visited += 1;
        if visited > PROCESS_SCAN_MAX {
            census.complete = false;
            break;
        }
        for &(pid, zombie) in children.get(&parent).map(Vec::as_slice).unwrap_or(&[]) {
            if !seen.insert(pid) {
                continue;
            }
            if Some(pid) == exclude {
                // The agent's own children still count: recurse, but do not list the agent.
                stack.push(pid);
                continue;
            }
            if zombie {
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

/// Reaps the zombie children a census found (orphans re-parented to us), never blocking.
pub fn reap(zombies: &[u32]) {
    platform::reap(zombies);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Process;

    fn snapshot(processes: &[(u32, u32, bool)]) -> Snapshot {
        Snapshot {
            processes: processes
                .iter()
                .map(|&(pid, ppid, zombie)| Process { pid, ppid, zombie })
                .collect(),
            complete: true,
        }
    }

    #[test]
    fn a_hand_built_tree_is_walked_the_agent_left_out_and_zombies_of_the_root_only() {
        // 10 is runread, 20 the agent; 30 its child, 40 a grandchild; 21 a zombie of the
        // agent's (its own to reap), 11 a zombie of runread's, 99 another tree.
        let s = snapshot(&[
            (10, 1, false),
            (20, 10, false),
            (30, 20, false),
            (40, 30, false),
            (21, 20, true),
            (11, 10, true),
            (99, 1, false),
        ]);
        let c = descendants_in(&s, 10, Some(20));
        assert_eq!(
            c,
            Census {
                live: vec![30, 40],
                zombies: vec![11],
                complete: true,
            }
        );
        assert_eq!(descendants_in(&s, 10, None).live, vec![20, 30, 40]);
        assert_eq!(
            descendants_in(&s, 77, None),
            Census {
                complete: true,
                ..Census::default()
            }
        );
    }

    #[test]
    fn an_incomplete_snapshot_makes_an_incomplete_census() {
        let mut s = snapshot(&[(20, 10, false)]);
        s.complete = false;
        let c = descendants_in(&s, 10, None);
        assert_eq!(c.live, vec![20]);
        assert!(!c.complete);
    }

    #[test]
    fn a_parent_loop_or_a_process_listed_twice_is_walked_once() {
        // Read one pid at a time, a snapshot can hold what never existed at once.
        let s = snapshot(&[
            (20, 10, false),
            (30, 20, false),
            (20, 30, false),
            (30, 20, false),
        ]);
        let c = descendants_in(&s, 10, None);
        assert_eq!(c.live, vec![20, 30]);
        assert!(c.complete);
        let self_parent = snapshot(&[(0, 0, false), (5, 0, false)]);
        assert_eq!(descendants_in(&self_parent, 0, None).live, vec![5]);
    }
}
