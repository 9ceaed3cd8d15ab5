//! The path rules for an artifact: a plain relative path beneath the workspace root, made of
//! ordinary names.

use crate::Refusal;

/// The longest artifact path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// The longest path component accepted, in bytes.
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Name prefixes of runread's own files (the store and its WAL/SHM companions, the sealing key
/// file and its temporaries). A component starting with one of these, in any case, is refused.
pub const RUNREAD_OWN_FILE_PREFIXES: [&str; 2] = ["runread.db", "gate-keys"];

/// Exact names (any case) of environment files that hold credentials; `.env.<anything>` too.
const CREDENTIAL_ENV_NAME: &str = ".env";

/// Name endings (any case) of key and certificate stores.
const CREDENTIAL_SUFFIXES: [&str; 4] = [".pem", ".key", ".pfx", ".p12"];

/// Words (any case) that make any component credential-like.
const CREDENTIAL_WORDS: [&str; 4] = ["auth", "credential", "secret", "token"];

/// A path that passed [`validate_path`]: relative, `/`-separated, made of ordinary names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelPath(String);

impl RelPath {
    /// The path as given (it is never rewritten).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path's components, in order (never empty, never `.` or `..`).
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The last component.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The path as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl AsRef<str> for RelPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Checks an artifact path, relative to the workspace root, against every path rule.
///
/// The path is taken exactly as given: nothing is normalized, trimmed or decoded. Rules, in the
/// order they are checked (the first that matches is the refusal):
/// empty ([`Refusal::EmptyComponent`]), too long ([`Refusal::PathTooLong`]), NUL or control
/// character, `..` component (split on `/` and `\`), UNC (`\\…`, `//…`), URL (`scheme://`,
/// `file:`), absolute (`/…`, `\…`), drive letter (`C:`), backslash; then, per `/`-separated
/// component: empty or `.`, too long, `:` (alternate data stream), `.git`, runread's own files,
/// credential-like names.
pub fn validate_path(rel: &str) -> Result<RelPath, Refusal> {
    if rel.is_empty() {
        return Err(Refusal::EmptyComponent);
    }
    if rel.len() > MAX_PATH_BYTES {
        return Err(Refusal::PathTooLong);
    }
    if rel.chars().any(char::is_control) {
        return Err(Refusal::ControlChar);
    }
    if rel.split(['/', '\\']).any(|c| c == "..") {
        return Err(Refusal::Traversal);
    }
    let bytes = rel.as_bytes();
    let is_sep = |b: u8| b == b'/' || b == b'\\';
    if let [a, b, ..] = bytes
        && is_sep(*a)
        && is_sep(*b)
    {
        return Err(Refusal::Unc);
    }
    if rel.contains("://") || starts_with_ignore_case(rel, "file:") {
        return Err(Refusal::Url);
    }
    if let [a, ..] = bytes
        && is_sep(*a)
    {
        return Err(Refusal::Absolute);
    }
    if let [a, b':', ..] = bytes
        && a.is_ascii_alphabetic()
    {
        return Err(Refusal::DriveLetter);
    }
    if rel.contains('\\') {
        return Err(Refusal::Backslash);
    }
    for component in rel.split('/') {
        check_component(component)?;
    }
    Ok(RelPath(rel.to_owned()))
}

/// One name inside a folder opened link-safely ([`crate::Folder`]): not empty, not `.` or `..`,
/// no `/` (which would walk more than one component), no control character, not too long. None
/// of an artifact's other rules (credential-like names, runread's own files) apply: the caller
/// chose the folder, not a reader.
pub(crate) fn component(name: &str) -> Result<RelPath, Refusal> {
    if name.is_empty() || name == "." {
        return Err(Refusal::EmptyComponent);
    }
    if name == ".." || name.contains('/') {
        return Err(Refusal::Traversal);
    }
    if name.chars().any(char::is_control) {
        return Err(Refusal::ControlChar);
    }
    if name.len() > MAX_COMPONENT_BYTES {
        return Err(Refusal::PathTooLong);
    }
    Ok(RelPath(name.to_owned()))
}

fn check_component(c: &str) -> Result<(), Refusal> {
    if c.is_empty() || c == "." {
        return Err(Refusal::EmptyComponent);
    }
    if c.len() > MAX_COMPONENT_BYTES {
        return Err(Refusal::PathTooLong);
    }
    if c.contains(':') {
        return Err(Refusal::AlternateDataStream);
    }
    let lower = c.to_ascii_lowercase();
    if lower == ".git" {
        return Err(Refusal::GitDir);
    }
    if RUNREAD_OWN_FILE_PREFIXES
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return Err(Refusal::RunreadFile);
    }
    if is_credential_like(&lower) {
        return Err(Refusal::CredentialLikeName);
    }
    Ok(())
}

/// `lower` is one component, already ASCII-lowercased.
fn is_credential_like(lower: &str) -> bool {
    lower == CREDENTIAL_ENV_NAME
        || lower
            .strip_prefix(CREDENTIAL_ENV_NAME)
            .is_some_and(|rest| rest.starts_with('.'))
        || CREDENTIAL_SUFFIXES.iter().any(|s| lower.ends_with(s))
        || CREDENTIAL_WORDS.iter().any(|w| lower.contains(w))
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_paths_pass_unchanged() {
        for p in [
            "out.txt",
            "reports/2026/summary.md",
            "a/b/c/d.json",
            "data.v2.csv",
            ".gitignore",
            ".github/workflows/ci.yml",
            "environment.txt",
            ".envrc-notes.md",
            "keynote.pdf",
            "image.PNG",
            "résumé.pdf",
        ] {
            let r = validate_path(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(r.as_str(), p);
        }
        let r = validate_path("a/b/c.txt").unwrap();
        assert_eq!(r.file_name(), "c.txt");
        assert_eq!(r.components().collect::<Vec<_>>(), ["a", "b", "c.txt"]);
    }

    #[test]
    fn empty_and_dot_components_are_refused() {
        for p in ["", "a//b", "a/", "./a", "a/./b", "."] {
            assert_eq!(validate_path(p), Err(Refusal::EmptyComponent), "{p}");
        }
    }

    #[test]
    fn backslash_is_refused() {
        assert_eq!(validate_path("a\\b.txt"), Err(Refusal::Backslash));
    }
}
