//! Names a person reads to decide whom they trust: readers (`runread reader add NAME`, the
//! console's "Share with") and the names OAuth clients give themselves. Two rules, in one place:
//!
//! - **What a name may hold.** No control characters and no characters that change how the rest
//!   is shown without being seen themselves: bidirectional overrides and isolates (which can show
//!   `edoc-edualc` as `claude-code`), zero-width characters, and every other default-ignorable
//!   code point ([`is_shown_as_written`]).
//! - **Which names look alike.** Two names are confusable when their UTS #39 skeletons agree after
//!   case folding ([`looks_like`]): `claude-code`, `CLAUDE-CODE` and `cIaude-code` (a capital I)
//!   all look like one another, so a name that looks like an existing one is not made silently.
//! - **Which names are a typo of another.** A name that looks like an existing one, or is a
//!   small edit away from it, or is its start with the rest missing ([`is_probable_typo_of`]):
//!   `claude-cod` and `claude` for `claude-code`. Names that differ only in their digits
//!   (`reader-1`, `reader-2`, `reader-10`) are numbered on purpose, not mistyped.

use unicode_general_category::{GeneralCategory, get_general_category};

/// Whether every character of `name` is shown as itself: no control, format (bidi controls,
/// zero-width joiners and spaces, tags), line or paragraph separator, and no other
/// default-ignorable code point (variation selectors, Hangul fillers, the combining grapheme
/// joiner, Khmer and Mongolian invisible marks).
pub fn is_shown_as_written(name: &str) -> bool {
    name.chars().all(|c| {
        !matches!(
            get_general_category(c),
            GeneralCategory::Control
                | GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
                | GeneralCategory::Unassigned
                | GeneralCategory::PrivateUse
                | GeneralCategory::Surrogate
        ) && !is_invisible_mark(c)
    })
}

/// Default-ignorable code points that are not of the format category (Unicode's
/// `Default_Ignorable_Code_Point` minus `Cf`): shown as nothing, or as a blank where nothing seems
/// to be.
fn is_invisible_mark(c: char) -> bool {
    matches!(
        u32::from(c),
        0x034F
            | 0x115F
            | 0x1160
            | 0x17B4
            | 0x17B5
            | 0x180B..=0x180F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFFA0
            | 0xE0100..=0xE01EF
    )
}

/// What `name` looks like: its UTS #39 skeleton, case-folded, and the skeleton of that (so that
/// names differing only in case or in look-alike characters, a capital I for an l included, have
/// the same key).
pub fn look(name: &str) -> String {
    use unicode_security::confusable_detection::skeleton;
    let folded: String = skeleton(name).flat_map(char::to_lowercase).collect();
    skeleton(&folded).collect()
}

/// Whether `a` and `b` look alike to a person (see [`look`]); equal names do too.
pub fn looks_like(a: &str, b: &str) -> bool {
    look(a) == look(b)
}

/// The most single-character edits (insertions, deletions, substitutions, after [`look`]) that
/// still make a name a typo of another; fewer for short names, where every name is that close.
pub const TYPO_EDITS_MAX: usize = 2;

/// A name shorter than this (in characters) is a typo of another only at one edit.
pub const TYPO_TWO_EDITS_MIN_CHARS: usize = 8;

/// A name shorter than this (in characters) is nobody's typo by an edit: every two-letter
/// name is one edit from many others.
pub const TYPO_EDIT_MIN_CHARS: usize = 3;

/// The fewest characters a typed name has for it to be an existing name's start with the rest
/// missing (`claude` of `claude-code`).
pub const TYPO_PART_MIN_CHARS: usize = 4;

/// Whether a person typing `typed` most likely meant `existing` (see the module doc): equal names
/// are not typos of each other.
pub fn is_probable_typo_of(typed: &str, existing: &str) -> bool {
    if typed == existing || differ_only_in_digits(typed, existing) {
        return false;
    }
    let (a, b) = (look(typed), look(existing));
    if a == b {
        return true;
    }
    let (a_chars, b_chars) = (a.chars().count(), b.chars().count());
    if a_chars >= TYPO_PART_MIN_CHARS && b.starts_with(&a) {
        return true;
    }
    let (short, long) = (a_chars.min(b_chars), a_chars.max(b_chars));
    let allowed = if long >= TYPO_TWO_EDITS_MIN_CHARS {
        TYPO_EDITS_MAX
    } else {
        1
    };
    short >= TYPO_EDIT_MIN_CHARS && strsim::levenshtein(&a, &b) <= allowed
}

/// Whether `a` and `b` are one name numbered differently: equal without their digits, and
/// each has some.
fn differ_only_in_digits(a: &str, b: &str) -> bool {
    let letters = |s: &str| -> String { s.chars().filter(|c| !c.is_ascii_digit()).collect() };
    let numbered = |s: &str| s.chars().any(|c| c.is_ascii_digit());
    numbered(a) && numbered(b) && letters(a) == letters(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_an_edit_or_a_missing_part_away_is_a_typo_and_numbered_names_are_not() {
        for (typed, existing) in [
            ("claude-cod", "claude-code"),
            ("claude-coed", "claude-code"),
            ("Claude-Code", "claude-code"),
            ("claude", "claude-code"),
            ("codx", "codex"),
            ("claude-cdoe", "claude-code"),
        ] {
            assert!(
                is_probable_typo_of(typed, existing),
                "{typed} for {existing}"
            );
        }
        for (typed, existing) in [
            ("claude-code", "claude-code"),
            ("reader-2", "reader-1"),
            ("reader-10", "reader-9"),
            ("code", "claude-code"),
            ("test-pi-run1", "test"),
            ("ci-bot", "claude-code"),
            ("cod", "codex"),
            ("ab", "ac"),
            ("gemini", "codex"),
            ("cursor", "claude-code"),
        ] {
            assert!(
                !is_probable_typo_of(typed, existing),
                "{typed} for {existing}"
            );
        }
    }

    #[test]
    fn two_edits_are_a_typo_only_from_the_bound_on() {
        // 8 characters: two edits still a typo; 7: only one.
        assert_eq!("abcdefgh".len(), TYPO_TWO_EDITS_MIN_CHARS);
        assert!(is_probable_typo_of("abcdefXY", "abcdefgh"));
        assert!(!is_probable_typo_of("abcdeXY", "abcdefg"));
        assert!(is_probable_typo_of("abcdeXg", "abcdefg"));
        assert!(!is_probable_typo_of("abcdXYZh", "abcdefgh"));
    }

    #[test]
    fn an_edit_makes_a_typo_only_of_names_from_the_bound_on() {
        assert!(is_probable_typo_of("abd", "abc"));
        assert!(!is_probable_typo_of("ab", "ac"));
    }

    #[test]
    fn a_missing_part_is_a_typo_from_its_bound_on() {
        assert!(is_probable_typo_of("abcd", "abcd-wxyz-long"));
        assert!(!is_probable_typo_of("abc", "abc-wxyz-long"));
    }

    #[test]
    fn bidi_controls_zero_width_and_invisible_marks_are_refused() {
        for bad in [
            "claude\u{202E}edoc",  // right-to-left override
            "claude\u{2067}code",  // right-to-left isolate
            "claude\u{200F}code",  // right-to-left mark
            "claude\u{200B}code",  // zero-width space
            "claude\u{200D}code",  // zero-width joiner
            "claude\u{2060}code",  // word joiner
            "claude\u{FEFF}code",  // zero-width no-break space
            "claude\u{00AD}code",  // soft hyphen
            "claude\u{034F}code",  // combining grapheme joiner
            "claude\u{FE0F}code",  // variation selector
            "claude\u{3164}code",  // Hangul filler
            "claude\u{E0041}code", // tag
            "claude\ncode",
            "claude\u{2028}code",
            "claude\u{E000}code", // private use
        ] {
            assert!(!is_shown_as_written(bad), "{bad:?}");
        }
        for ok in [
            "claude-code",
            "Claude Code (connector)",
            "codex",
            "ci bot 2",
            "Лена",
            "日本語のリーダー",
            "naïve",
        ] {
            assert!(is_shown_as_written(ok), "{ok:?}");
        }
    }

    #[test]
    fn names_that_differ_in_case_or_look_alike_characters_look_alike() {
        assert!(looks_like("claude-code", "claude-code"));
        assert!(looks_like("claude-code", "CLAUDE-CODE"));
        assert!(looks_like("claude-code", "cIaude-code"), "capital I for l");
        // Cyrillic а (U+0430) for Latin a.
        assert!(looks_like("claude-code", "cl\u{0430}ude-code"));
        assert!(looks_like("codex", "c\u{043E}dex"), "Cyrillic o");
        assert!(looks_like("rn-bot", "m-bot"), "rn looks like m");
        assert!(!looks_like("claude-code", "claude-cod"));
        assert!(!looks_like("codex", "pi"));
    }
}
