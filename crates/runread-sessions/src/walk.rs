//! The walk of a sessions folder: the `*.jsonl` files under it, listed in path order without
//! following links, within bounds. Each agent's profile picks its own files from it.

use std::path::{Path, PathBuf};

/// Deepest directory level searched under a sessions directory.
pub const SCAN_DEPTH_MAX: usize = 3;
/// Most session files considered in one scan.
pub const SCAN_FILES_MAX: usize = 100_000;

/// Session files (`*.jsonl`) under `dir`, at most [`SCAN_DEPTH_MAX`] levels down, sorted.
/// Directories are walked without following links; a `*.jsonl` that is not a regular file (a
/// symbolic link, a FIFO) is listed too, so that ingest reports it as unreadable instead of
/// passing over it in silence (it is never opened).
pub fn session_files(dir: &Path) -> Vec<PathBuf> {
    jsonl_files(dir, |_, _| true)
}

/// [`session_files`], keeping only those whose depth (0: directly in `dir`) and name `keep`
/// accepts. The first [`SCAN_FILES_MAX`] `*.jsonl` files met count, kept or not.
pub fn jsonl_files(dir: &Path, keep: impl Fn(usize, &std::ffi::OsStr) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut met = 0usize;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if depth < SCAN_DEPTH_MAX {
                    stack.push((entry.path(), depth + 1));
                }
                continue;
            }
            let name = entry.file_name();
            if Path::new(&name).extension().is_some_and(|e| e == "jsonl") && met < SCAN_FILES_MAX {
                met += 1;
                if keep(depth, &name) {
                    out.push(entry.path());
                }
            }
        }
    }
    sort_paths(&mut out);
    out
}

/// Sorts `paths` in [`Path`]'s order (component by component) without parsing components in
/// every comparison: each path's bytes with every `/` made `0`, compared as bytes. That is the
/// same order for the paths [`session_files`] lists — one directory's, joined with names that
/// hold no `/` and no `0` byte and are never empty, `.` or `..` — because a separator then
/// sorts before any byte a name can hold, as a shorter component sorts before a longer one
/// that starts with it.
pub fn sort_paths(paths: &mut [PathBuf]) {
    paths.sort_by_cached_key(|p| {
        p.as_os_str()
            .as_encoded_bytes()
            .iter()
            .map(|&b| if b == b'/' { 0 } else { b })
            .collect::<Vec<u8>>()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte order with separators made `0` is `Path`'s order, on names that differ where a
    /// separator meets a byte below and above it.
    #[test]
    fn paths_sort_as_path_orders_them() {
        let names = [
            "a", "a-b", "a.b", "a b", "a0", "a/b", "a/b/c", "a/b-c", "a/b.c", "a-/b", "ab", "a\\b",
            "é", "é/a", "z", "Z", "~", "a/~", "a/ ", "a./b", "-", "--/a",
        ];
        for dir in ["/d", "/d/", "d", "/d//e", "/"] {
            let mut paths: Vec<PathBuf> = names.iter().map(|n| Path::new(dir).join(n)).collect();
            let mut expected = paths.clone();
            expected.sort();
            paths.reverse();
            sort_paths(&mut paths);
            assert_eq!(paths, expected, "under {dir:?}");
        }
    }

    #[test]
    fn session_files_are_listed_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            "a/x.jsonl",
            "a-b/x.jsonl",
            "a.jsonl",
            "a/b/y.jsonl",
            "ab.jsonl",
            "a0/z.jsonl",
        ] {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
        }
        let listed = session_files(dir.path());
        let mut expected = listed.clone();
        expected.sort();
        assert_eq!(listed, expected);
        assert_eq!(listed.len(), 6);
    }
}
