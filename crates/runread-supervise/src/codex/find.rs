//! Where Codex keeps a thread's rollout file: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local
//! time>-<thread id>.jsonl`, found by a bounded walk.

use std::path::{Path, PathBuf};

use runread_core::Agent;

/// Codex's `sessions` directory: `$CODEX_HOME/sessions`, else `~/.codex/sessions`.
pub fn sessions_dir() -> Option<PathBuf> {
    runread_ingest::AgentDir::default_for(Agent::Codex).map(|d| d.dir)
}

/// Most directories [`find_rollout`] lists (the sessions directory, then year, month and
/// day folders, newest first): about three years of daily use.
pub const FIND_MAX_DIRS: usize = 1200;
/// Most directory entries [`find_rollout`] looks at, in all.
pub const FIND_MAX_ENTRIES: usize = 200_000;

/// What a bounded walk may still do.
struct Budget {
    dirs: usize,
    entries: usize,
}

/// The walk's budget is spent: it stops, having found nothing.
struct Spent;

impl Budget {
    /// The entries of `dir`, counted against the budget (an unreadable folder has none).
    fn list(&mut self, dir: &Path) -> Result<Vec<std::fs::DirEntry>, Spent> {
        self.dirs = self.dirs.checked_sub(1).ok_or(Spent)?;
        let Ok(read) = std::fs::read_dir(dir) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in read.flatten() {
            self.entries = self.entries.checked_sub(1).ok_or(Spent)?;
            out.push(entry);
        }
        Ok(out)
    }
}

/// The sub-directories of `dir` named by `digits` ASCII digits (a date folder), newest first.
/// Links are never followed: a linked folder is not walked.
fn date_dirs(budget: &mut Budget, dir: &Path, digits: usize) -> Result<Vec<PathBuf>, Spent> {
    let mut out: Vec<(String, PathBuf)> = budget
        .list(dir)?
        .into_iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            (name.len() == digits && name.bytes().all(|b| b.is_ascii_digit()))
                .then(|| (name, e.path()))
        })
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(out.into_iter().map(|(_, p)| p).collect())
}

/// Codex's rollout file of `thread_id` under `sessions`: `YYYY/MM/DD/rollout-<local time>-<thread
/// id>.jsonl`. The folders are local time, so the date is not computed: the tree is walked,
/// newest folders first, within [`FIND_MAX_DIRS`] and [`FIND_MAX_ENTRIES`], by the
/// file name's suffix (the thread id from the stream, never a folder's name). Linked folders are
/// not walked; a linked file is returned, for the proof to refuse it. Two files of one thread in
/// the first folder that holds one: neither is taken.
pub fn find_rollout(sessions: &Path, thread_id: &str) -> Option<PathBuf> {
    find_rollout_within(sessions, thread_id, FIND_MAX_DIRS, FIND_MAX_ENTRIES)
}

/// [`find_rollout`] within given bounds.
pub fn find_rollout_within(
    sessions: &Path,
    thread_id: &str,
    max_dirs: usize,
    max_entries: usize,
) -> Option<PathBuf> {
    if !runread_core::target::is_id(thread_id) {
        return None;
    }
    let suffix = format!("-{thread_id}.jsonl");
    let mut budget = Budget {
        dirs: max_dirs,
        entries: max_entries,
    };
    walk_for_rollout(&mut budget, sessions, &suffix)
        .ok()
        .flatten()
}

fn walk_for_rollout(
    budget: &mut Budget,
    sessions: &Path,
    suffix: &str,
) -> Result<Option<PathBuf>, Spent> {
    for year in date_dirs(budget, sessions, 4)? {
        for month in date_dirs(budget, &year, 2)? {
            for day in date_dirs(budget, &month, 2)? {
                let found: Vec<PathBuf> = budget
                    .list(&day)?
                    .into_iter()
                    .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
                    .filter(|e| {
                        e.file_name().to_str().is_some_and(|n| {
                            n.starts_with(runread_sessions::codex::ROLLOUT_PREFIX)
                                && n.ends_with(suffix)
                        })
                    })
                    .map(|e| e.path())
                    .collect();
                match found.as_slice() {
                    [] => continue,
                    [one] => return Ok(Some(one.clone())),
                    _ => return Ok(None),
                }
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREAD: &str = "01a231e0-7813-7fd3-9f9d-8764034a71d5";
    const OTHER: &str = "01a231e0-40bf-7983-82b9-ca9d0b69bab2";

    fn rollout(sessions: &Path, day: &str, thread: &str) -> PathBuf {
        let dir = sessions.join(day);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("rollout-2026-12-01T13-52-04-{thread}.jsonl"));
        std::fs::write(&p, "{}\n").unwrap();
        p
    }

    #[test]
    fn the_rollout_is_found_by_its_thread_suffix_newest_folders_first() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        rollout(s, "2026/12/02", OTHER);
        let want = rollout(s, "2026/11/30", THREAD);
        // Not Codex's name, another thread, a longer id, not a date folder: none is taken.
        std::fs::write(s.join("2026/12/02").join(format!("{THREAD}.jsonl")), "").unwrap();
        std::fs::write(
            s.join("2026/12/02")
                .join(format!("rollout-x-{THREAD}.jsonl.bak")),
            "",
        )
        .unwrap();
        std::fs::write(
            s.join("2026/12/02")
                .join(format!("rollout-x-0{THREAD}.jsonl")),
            "",
        )
        .unwrap();
        rollout(s, "tmp/12/01", THREAD);
        assert_eq!(find_rollout(s, THREAD), Some(want.clone()));
        assert_eq!(find_rollout(s, "../x"), None, "only a plain id");
        assert_eq!(find_rollout(&s.join("missing"), THREAD), None);
        // A second file of the thread in the same folder: neither.
        std::fs::write(
            want.with_file_name(format!("rollout-2026-11-30T00-00-00-{THREAD}.jsonl")),
            "",
        )
        .unwrap();
        assert_eq!(find_rollout(s, THREAD), None);
    }

    #[test]
    fn a_linked_folder_is_not_walked_and_a_linked_file_is_refused_by_the_proof() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().join("sessions");
        let elsewhere = d.path().join("elsewhere");
        let real = rollout(&elsewhere, "01", THREAD);
        std::fs::create_dir_all(s.join("2026/12")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("01"), s.join("2026/12/01")).unwrap();
        assert_eq!(find_rollout(&s, THREAD), None, "a linked day folder");
        std::fs::remove_file(s.join("2026/12/01")).unwrap();
        std::fs::create_dir_all(s.join("2026/12/01")).unwrap();
        let link = s.join("2026/12/01").join(real.file_name().unwrap());
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(find_rollout(&s, THREAD), Some(link.clone()));
        assert_eq!(
            crate::proof::pin_identity(&link),
            Err(crate::proof::Refusal::NotRegular)
        );
    }

    /// `days` day folders under one month; the thread's file in the oldest. Listing it takes
    /// `3 + days` directories (sessions, year, month, then every day newest first) and
    /// `2 + 2 * days` entries (one year, one month, the days, one file in each).
    fn walk_layout(days: usize) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for day in 1..=days {
            let thread = if day == 1 { THREAD } else { OTHER };
            rollout(d.path(), &format!("2026/12/{day:02}"), thread);
        }
        d
    }

    #[test]
    fn the_walk_finds_the_file_within_its_directory_bound_and_not_one_past_it() {
        let days = 5;
        let d = walk_layout(days);
        let dirs = 3 + days;
        assert!(find_rollout_within(d.path(), THREAD, dirs, FIND_MAX_ENTRIES).is_some());
        assert!(
            find_rollout_within(d.path(), THREAD, dirs - 1, FIND_MAX_ENTRIES).is_none(),
            "one directory more than the bound"
        );
    }

    #[test]
    fn the_walk_finds_the_file_within_its_entry_bound_and_not_one_past_it() {
        let days = 5;
        let d = walk_layout(days);
        let entries = 2 + 2 * days;
        assert!(find_rollout_within(d.path(), THREAD, FIND_MAX_DIRS, entries).is_some());
        assert!(
            find_rollout_within(d.path(), THREAD, FIND_MAX_DIRS, entries - 1).is_none(),
            "one entry more than the bound"
        );
    }
}
