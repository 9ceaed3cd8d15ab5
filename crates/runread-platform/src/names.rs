//! How path names compare on this system.
//!
//! macOS formats its volumes case-insensitive by default (APFS, as HFS+ before it), and so is
//! Windows' NTFS: there `~/Projects/App` and `~/projects/app` are one folder, and a session an
//! agent started in either belongs to a workspace registered as the other. Linux file systems are
//! case-sensitive. The comparison is by whole `/`-separated components, on the strings runread
//! keeps (it never asks the file system, so it costs nothing and follows no link); a volume
//! formatted against its system's default (a case-sensitive APFS volume) is compared by the
//! default. Unicode normalization is not folded: the paths compared come from the file system
//! itself (`getcwd`, `realpath`), which spells one name one way.

/// Whether this system's volumes name one file by spellings that differ only in case.
pub const NAMES_FOLD_CASE: bool = cfg!(any(target_os = "macos", target_os = "ios", windows));

/// Whether `path` is `root` or lies beneath it (whole components), as this system compares names.
/// An empty `root` contains every path.
pub fn within(root: &str, path: &str) -> bool {
    within_folding(root, path, NAMES_FOLD_CASE)
}

/// Whether `a` and `b` name the same path, as this system compares names.
pub fn same(a: &str, b: &str) -> bool {
    same_folding(a, b, NAMES_FOLD_CASE)
}

/// [`within`], folding case or not: both ways are tested on every system.
pub fn within_folding(root: &str, path: &str, fold_case: bool) -> bool {
    let root = root.trim_end_matches('/');
    if root.is_empty() {
        return true;
    }
    let (root, path) = folded(root, path, fold_case);
    path == root
        || path
            .strip_prefix(root.as_ref())
            .is_some_and(|rest| rest.starts_with('/'))
}

/// [`same`], folding case or not.
pub fn same_folding(a: &str, b: &str, fold_case: bool) -> bool {
    let (a, b) = folded(a, b, fold_case);
    a == b
}

fn folded<'a>(
    a: &'a str,
    b: &'a str,
    fold_case: bool,
) -> (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>) {
    if fold_case {
        (a.to_lowercase().into(), b.to_lowercase().into())
    } else {
        (a.into(), b.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_a_case_insensitive_volume_a_name_differing_only_by_case_is_the_same_file() {
        assert!(same_folding(
            "/Users/a/Projects/App/Notes.jsonl",
            "/users/a/projects/app/notes.JSONL",
            true
        ));
        assert!(within_folding(
            "/Users/a/Projects/App",
            "/users/a/projects/app/src",
            true
        ));
        assert!(within_folding(
            "/Users/a/Projects/App/",
            "/USERS/A/PROJECTS/APP",
            true
        ));
        // Beyond ASCII too: APFS folds Unicode case.
        assert!(same_folding(
            "/Users/a/Ärger/Été",
            "/users/a/ärger/été",
            true
        ));
        // Folding never joins different names or crosses a component.
        assert!(!same_folding("/Users/a/App", "/Users/a/Apps", true));
        assert!(!within_folding(
            "/Users/a/App",
            "/users/a/application",
            true
        ));
    }

    #[test]
    fn on_a_case_sensitive_volume_case_names_another_file() {
        assert!(!same_folding("/home/a/App/x", "/home/a/app/x", false));
        assert!(!within_folding("/home/a/App", "/home/a/app/src", false));
        assert!(within_folding("/home/a/App", "/home/a/App/src", false));
        assert!(within_folding("/home/a/App", "/home/a/App", false));
        assert!(!within_folding("/home/a/App", "/home/a/Apple", false));
        assert!(within_folding("", "/anything", false));
        assert!(within_folding("/", "/anything", false));
    }

    #[test]
    fn this_system_folds_case_where_its_volumes_do() {
        assert_eq!(
            NAMES_FOLD_CASE,
            cfg!(any(target_os = "macos", target_os = "ios", windows))
        );
        assert_eq!(same("/a/B", "/a/b"), NAMES_FOLD_CASE);
        assert_eq!(within("/a/B", "/a/b/c"), NAMES_FOLD_CASE);
    }
}
