//! A grant's label: a short line the owner chose for a shared run (`runread run --share …
//! --label TEXT`, `runread grant --label`), so that a reader tells the run apart and can wait
//! for "the run labelled X" before it is shared. One rule for every place that takes one.

use crate::limits::GRANT_LABEL_MAX_BYTES;

/// Whether `label` may label a grant: 1 to [`GRANT_LABEL_MAX_BYTES`] bytes, one line of text
/// (no control character), not blank. Exact: it is matched byte for byte, never trimmed.
pub fn is_valid(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= GRANT_LABEL_MAX_BYTES
        && !label.chars().any(char::is_control)
        && !label.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_one_line_of_at_most_the_bound() {
        assert!(is_valid("review of PR 42"));
        assert!(is_valid("déjà vu ✓"));
        assert!(is_valid(&"x".repeat(GRANT_LABEL_MAX_BYTES)));
        assert!(!is_valid(&"x".repeat(GRANT_LABEL_MAX_BYTES + 1)));
        assert!(!is_valid(""));
        assert!(!is_valid("   "));
        assert!(!is_valid("two\nlines"));
        assert!(!is_valid("a\u{1b}[31m"));
    }
}
