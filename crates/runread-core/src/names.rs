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

#[cfg(test)]
mod tests {
    use super::*;

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
