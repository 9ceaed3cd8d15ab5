//! Known-secret masking: every occurrence of a known list of secrets is replaced by [`MASK`].
//!
//! This is exact matching of secrets the owner named — **not** general secret detection. A
//! string that looks like a key but is not on the list passes through unchanged.
//!
//! One Aho-Corasick automaton holds every secret. Occurrences are found with an overlapping
//! search and their byte ranges are united: overlapping **or adjacent** occurrences become one
//! masked range, written as a single [`MASK`].
//!
//! # Streaming
//!
//! [`Redactor::mask_segments`] masks consecutive pieces of one text (the bodies of consecutive
//! history events, the chunks of a pager). Matches are found over their concatenation, so a
//! secret split across pieces is masked; each piece's part of a masked range becomes one
//! [`MASK`] in that piece (a piece never loses text without a marker).
//!
//! When more text may follow (`complete == false`), the end of the text is held back so that a
//! caller which releases the output and resumes from `given − withheld_bytes` gets, over all its
//! calls, exactly what one call over the whole text would give — see [`Redactor::mask_segments`]
//! for the rule and why it holds.
//!
//! # Limits of the guarantee
//!
//! Every occurrence of a secret **in the input** is removed. The output is not scanned again: a
//! secret that contains part of the text of [`MASK`] itself (say `"cted]1234"`) could be formed
//! by a mask next to ordinary text.

use std::fmt;
use std::ops::Range;

use aho_corasick::{AhoCorasick, MatchKind};

pub use crate::limits::{SECRET_MAX_BYTES, SECRET_MIN_BYTES, SECRETS_MAX};
/// What a masked range is replaced with.
pub const MASK: &str = "[redacted]";

/// Why a list of secrets was refused. Fixed codes: never the secret, its length or its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum RedactError {
    /// A secret is shorter than [`SECRET_MIN_BYTES`].
    #[error("secret_too_short")]
    SecretTooShort,
    /// A secret is longer than [`SECRET_MAX_BYTES`].
    #[error("secret_too_long")]
    SecretTooLong,
    /// More than [`SECRETS_MAX`] secrets were given.
    #[error("too_many_secrets")]
    TooManySecrets,
    /// The automaton could not be built (not expected within the bounds above).
    #[error("automaton_failed")]
    Automaton,
}

/// The result of [`Redactor::mask_segments`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masked {
    /// One masked output per input segment, in order. Segments whose text was withheld in whole
    /// or in part are shorter or empty.
    pub segments: Vec<String>,
    /// Bytes of the **original** text removed from the end (they may span several trailing
    /// segments). A caller resumes its cursor this many bytes before the end of what it gave.
    /// Always 0 when `complete` was true.
    pub withheld_bytes: usize,
    /// True when something was withheld (`withheld_bytes > 0`): more text may mask it.
    pub pending: bool,
}

/// Masks a fixed list of known secrets. Built once, then used for any number of texts.
///
/// `Debug` prints only the number of secrets.
#[derive(Clone)]
pub struct Redactor {
    /// `None` when there are no secrets (masks nothing).
    automaton: Option<AhoCorasick>,
    /// The distinct secrets, sorted bytewise: the proper-prefix test is a binary search.
    sorted: Vec<Box<[u8]>>,
    /// Each secret's bytes reversed, sorted: the proper-suffix test is the same search.
    reversed: Vec<Box<[u8]>>,
    /// `first_byte[b]`: some secret starts with byte `b`.
    first_byte: [bool; 256],
    /// Length in bytes of the longest secret (0 when none).
    max_len: usize,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.sorted.len())
            .finish_non_exhaustive()
    }
}

impl Redactor {
    /// Builds the automaton for `secrets`. Each must be `SECRET_MIN_BYTES..=SECRET_MAX_BYTES`
    /// bytes long, and there may be at most [`SECRETS_MAX`] of them (duplicates count). An empty
    /// list is accepted and masks nothing.
    pub fn new(
        secrets: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Redactor, RedactError> {
        let mut sorted: Vec<Box<[u8]>> = Vec::new();
        for (index, secret) in secrets.into_iter().enumerate() {
            if index >= SECRETS_MAX {
                return Err(RedactError::TooManySecrets);
            }
            let bytes = secret.as_ref().as_bytes();
            if bytes.len() < SECRET_MIN_BYTES {
                return Err(RedactError::SecretTooShort);
            }
            if bytes.len() > SECRET_MAX_BYTES {
                return Err(RedactError::SecretTooLong);
            }
            sorted.push(bytes.into());
        }
        sorted.sort_unstable();
        sorted.dedup();

        let mut first_byte = [false; 256];
        let mut max_len = 0;
        for secret in &sorted {
            if let Some(&b) = secret.first() {
                first_byte[usize::from(b)] = true;
            }
            max_len = max_len.max(secret.len());
        }
        let mut reversed: Vec<Box<[u8]>> = sorted
            .iter()
            .map(|s| s.iter().rev().copied().collect())
            .collect();
        reversed.sort_unstable();
        let automaton = if sorted.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    // Standard semantics: the only kind that supports overlapping search.
                    .match_kind(MatchKind::Standard)
                    .build(&sorted)
                    .map_err(|_| RedactError::Automaton)?,
            )
        };
        Ok(Redactor {
            automaton,
            sorted,
            reversed,
            first_byte,
            max_len,
        })
    }

    /// Number of distinct secrets.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// True when there are no secrets: every method returns its input unchanged.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// `text` with every occurrence of every secret replaced; overlapping or adjacent
    /// occurrences become a single [`MASK`].
    pub fn mask(&self, text: &str) -> String {
        let ranges = self.masked_ranges(text);
        let mut out = String::with_capacity(text.len());
        render(text, 0..text.len(), &ranges, &mut out);
        out
    }

    /// Masks every string in `value`, object keys included, in place: the one rule for
    /// structured output (a tool's whole result, an owner's view).
    pub fn mask_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if self.contains_secret(s.as_bytes()) {
                    *s = self.mask(s);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.mask_json(i)),
            Value::Object(map) => {
                if map.keys().any(|k| self.contains_secret(k.as_bytes())) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.mask(&k), v);
                    }
                }
                map.values_mut().for_each(|v| self.mask_json(v));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// True when `bytes` (any bytes, not necessarily UTF-8) contain a secret.
    ///
    /// Fails closed: if the search cannot run, the answer is `true`.
    pub fn contains_secret(&self, bytes: &[u8]) -> bool {
        match &self.automaton {
            None => false,
            Some(ac) => !matches!(ac.try_find(bytes), Ok(None)),
        }
    }

    /// Masks `segments`, consecutive pieces of one text, as one text: a secret split across
    /// pieces is masked, and each piece's part of a masked range becomes one [`MASK`] in that
    /// piece.
    ///
    /// With `complete == true` nothing is withheld. With `complete == false` more text may follow,
    /// and the output ends at a **cut** `c` (`withheld_bytes = len − c`), the latest position that
    /// is safe whatever text follows:
    ///
    /// 1. `p` is the start of the longest suffix of the text that is a non-empty *proper* prefix
    ///    of some secret (`p = len` when there is none): an occurrence might start there and be
    ///    completed by what follows, so nothing from `p` on is released.
    /// 2. If a masked range contains `p` or ends exactly at `p` (in particular, a masked range at
    ///    the very end of the text), the cut moves back to that range's start: text that follows
    ///    could extend the range (an occurrence overlapping it, or one adjacent to it, which
    ///    merges into the same single [`MASK`]), and releasing part of it would either reveal the
    ///    rest of an overlapping secret later or print two masks where the whole text has one.
    ///
    /// No occurrence of a secret in any continuation of the text straddles the cut, and no masked
    /// range touches it, so masking the rest from the cut on gives exactly what masking the whole
    /// text gives there: for a caller that releases the output and resumes at
    /// `given − withheld_bytes`, the released outputs concatenate to the masked whole text,
    /// however the text was split into calls.
    ///
    /// `withheld_bytes` is at most `SECRET_MAX_BYTES − 1`, except when rule 2 applies: then it also
    /// covers the trailing masked range, which overlapping or back-to-back secrets can make long.
    /// A pager that gets nothing released must offer more text (or `complete = true`) to progress.
    ///
    /// The cut always falls on a UTF-8 character boundary.
    pub fn mask_segments(&self, segments: &[&str], complete: bool) -> Masked {
        let text = segments.concat();
        let ranges = self.masked_ranges(&text);
        let cut = if complete {
            text.len()
        } else {
            self.safe_cut(&text, &ranges)
        };

        let mut out = Vec::with_capacity(segments.len());
        let mut start = 0usize;
        for segment in segments {
            let end = start.saturating_add(segment.len());
            let mut masked = String::with_capacity(segment.len());
            render(&text, start.min(cut)..end.min(cut), &ranges, &mut masked);
            out.push(masked);
            start = end;
        }
        let withheld_bytes = text.len().saturating_sub(cut);
        Masked {
            segments: out,
            withheld_bytes,
            pending: withheld_bytes > 0,
        }
    }

    /// Masked `text` cut to at most `max` bytes for release: on a character boundary, never
    /// inside a [`MASK`], and never ending with a non-empty proper prefix of a known secret (the
    /// reader would hold the start of a secret whose rest was cut off). A text of at most `max`
    /// bytes is returned whole: its end is not a cut.
    pub fn cut_for_release<'a>(&self, masked: &'a str, max: usize) -> &'a str {
        if masked.len() <= max {
            return masked;
        }
        let mut end = max;
        while end > 0 && !masked.is_char_boundary(end) {
            end -= 1;
        }
        loop {
            let Some(head) = masked.get(..end) else {
                return "";
            };
            // A mask the cut went through (or a literal one: dropping its start costs nothing).
            let mask_part = (1..MASK.len())
                .rev()
                .find(|&k| head.ends_with(MASK.get(..k).unwrap_or(MASK)))
                .unwrap_or(0);
            let secret_part = self
                .pending_prefix_start(head.as_bytes())
                .map_or(0, |p| end - p);
            let drop = mask_part.max(secret_part);
            if drop == 0 {
                return head;
            }
            end -= drop;
            while end > 0 && !masked.is_char_boundary(end) {
                end -= 1;
            }
        }
    }

    /// `text` with its leading part masked when it could be the end of a known secret that began
    /// before it: for the first text of a page whose preceding text could not be read. Masks the
    /// longest prefix of `text` that is a non-empty proper suffix of some secret.
    pub fn mask_unknown_before(&self, text: &str) -> String {
        let bytes = text.as_bytes();
        let longest = self.max_len.saturating_sub(1).min(bytes.len());
        let cut = (1..=longest).rev().find(|&k| {
            text.is_char_boundary(k)
                && bytes.get(..k).is_some_and(|head| {
                    let q: Vec<u8> = head.iter().rev().copied().collect();
                    is_proper_prefix_in(&self.reversed, &q)
                })
        });
        match cut {
            Some(k) => format!("{MASK}{}", text.get(k..).unwrap_or("")),
            None => text.to_owned(),
        }
    }

    /// `text` with its trailing part masked when it could be the start of a known secret that
    /// continues after it: for the last text of something served whose following text could not
    /// be read. Masks the longest suffix of `text` that is a non-empty proper prefix of a secret.
    pub fn mask_unknown_after(&self, text: &str) -> String {
        match self.pending_prefix_start(text.as_bytes()) {
            Some(p) => format!("{}{MASK}", text.get(..p).unwrap_or("")),
            None => text.to_owned(),
        }
    }

    /// The masked ranges of `text`: sorted, disjoint and never adjacent (at least one unmasked
    /// byte between two ranges). Every bound is a UTF-8 character boundary: secrets are valid
    /// UTF-8, so an occurrence starts at a leading byte and ends after a whole character.
    ///
    /// Fails closed: if the search cannot run, the whole text is one masked range.
    fn masked_ranges(&self, text: &str) -> Vec<Range<usize>> {
        let Some(ac) = &self.automaton else {
            return Vec::new();
        };
        let Ok(matches) = ac.try_find_overlapping_iter(text) else {
            return std::iter::once(0..text.len())
                .filter(|r| !r.is_empty())
                .collect();
        };
        let mut ranges: Vec<Range<usize>> = Vec::new();
        // Overlapping search reports matches in order of their end; a match may start before
        // ranges already closed (a longer secret ending later), so merge backwards.
        for m in matches {
            let mut start = m.start();
            let mut end = m.end();
            while let Some(last) = ranges.last() {
                if last.end < start {
                    break;
                }
                start = start.min(last.start);
                end = end.max(last.end);
                ranges.pop();
            }
            ranges.push(start..end);
        }
        ranges
    }

    /// The cut of [`Redactor::mask_segments`] for text that may continue (rules 1 and 2 there).
    fn safe_cut(&self, text: &str, ranges: &[Range<usize>]) -> usize {
        let len = text.len();
        let p = self.pending_prefix_start(text.as_bytes()).unwrap_or(len);
        // First range whose end is at or after p; it matters if it also starts before p.
        let index = ranges.partition_point(|r| r.end < p);
        let mut cut = match ranges.get(index) {
            Some(r) if r.start < p => r.start,
            _ => p,
        };
        // Both candidates are character boundaries already (see `masked_ranges` and
        // `pending_prefix_start`); stepping back further only withholds more.
        while cut > 0 && !text.is_char_boundary(cut) {
            cut -= 1;
        }
        cut
    }

    /// Start of the longest suffix of `text` that is a non-empty proper prefix of some secret.
    ///
    /// At most `max_len − 1` candidate starts, each a binary search over the sorted secrets:
    /// `O(max_len² · log n)` byte comparisons in the worst case, independent of the text's length
    /// and nearly of the number of secrets. A suffix equal to some secret's prefix starts with
    /// that secret's first byte, a UTF-8 leading byte, so the start is a character boundary.
    fn pending_prefix_start(&self, text: &[u8]) -> Option<usize> {
        let len = text.len();
        let longest = self.max_len.saturating_sub(1).min(len);
        let first = len - longest;
        (first..len).find(|&p| {
            let starts_a_secret = text
                .get(p)
                .is_some_and(|&b| self.first_byte[usize::from(b)]);
            starts_a_secret
                && text
                    .get(p..)
                    .is_some_and(|suffix| self.is_proper_prefix(suffix))
        })
    }

    /// True when `q` is a proper prefix of some secret. The secrets that start with `q` are
    /// contiguous in sorted order, beginning at the first secret `>= q`; at most one of them
    /// (the first) equals `q`, so looking at two suffices.
    fn is_proper_prefix(&self, q: &[u8]) -> bool {
        is_proper_prefix_in(&self.sorted, q)
    }
}

/// True when `q` is a proper prefix of some member of `sorted` (see
/// [`Redactor::is_proper_prefix`]).
fn is_proper_prefix_in(sorted: &[Box<[u8]>], q: &[u8]) -> bool {
    let first = sorted.partition_point(|s| s.as_ref() < q);
    sorted
        .iter()
        .skip(first)
        .take(2)
        .any(|s| s.len() > q.len() && s.starts_with(q))
}

/// Appends `text[window]` to `out`, with each masked range's part inside the window written as
/// one [`MASK`]. Fails closed: a slice that is not on a character boundary (never expected) is
/// written as [`MASK`] too.
fn render(text: &str, window: Range<usize>, ranges: &[Range<usize>], out: &mut String) {
    let push = |range: Range<usize>, out: &mut String| match text.get(range) {
        Some(s) => out.push_str(s),
        None => out.push_str(MASK),
    };
    let mut pos = window.start;
    let first = ranges.partition_point(|r| r.end <= window.start);
    for r in ranges.iter().skip(first) {
        if r.start >= window.end {
            break;
        }
        let start = r.start.max(window.start);
        let end = r.end.min(window.end);
        if pos < start {
            push(pos..start, out);
        }
        out.push_str(MASK);
        pos = end;
    }
    if pos < window.end {
        push(pos..window.end, out);
    }
}

/// A view of the owner's in which every string — every field's, those added tomorrow included
/// — went through the redactor ([`Redactor::mask_json`] over the whole value). The console's
/// pages and the CLI's outputs render only these: a view cannot reach them unmasked, whatever
/// strings of an agent's it holds. Made only by [`MaskedView::new`]; read through `Deref`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskedView<T>(T);

/// A view that did not survive masking (its masked form does not read back as the view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmaskable;

impl<T: serde::Serialize + serde::de::DeserializeOwned> MaskedView<T> {
    /// `view` with every string masked.
    pub fn new(view: T, redactor: &Redactor) -> Result<MaskedView<T>, Unmaskable> {
        if redactor.is_empty() {
            return Ok(MaskedView(view));
        }
        let mut value = serde_json::to_value(&view).map_err(|_| Unmaskable)?;
        redactor.mask_json(&mut value);
        serde_json::from_value(value)
            .map(MaskedView)
            .map_err(|_| Unmaskable)
    }

    /// Each of `views`, masked.
    pub fn each(
        views: impl IntoIterator<Item = T>,
        redactor: &Redactor,
    ) -> Result<Vec<MaskedView<T>>, Unmaskable> {
        views
            .into_iter()
            .map(|v| MaskedView::new(v, redactor))
            .collect()
    }
}

impl<T> MaskedView<T> {
    /// The masked view itself.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for MaskedView<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: serde::Serialize> serde::Serialize for MaskedView<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::sample::Index;

    fn redactor(secrets: &[&str]) -> Redactor {
        Redactor::new(secrets).unwrap()
    }

    // ---- construction bounds ----

    #[test]
    fn secret_length_bounds_are_exact() {
        assert!(Redactor::new(["a".repeat(SECRET_MIN_BYTES)]).is_ok());
        assert_eq!(
            Redactor::new(["a".repeat(SECRET_MIN_BYTES - 1)]).unwrap_err(),
            RedactError::SecretTooShort
        );
        assert!(Redactor::new(["a".repeat(SECRET_MAX_BYTES)]).is_ok());
        assert_eq!(
            Redactor::new(["a".repeat(SECRET_MAX_BYTES + 1)]).unwrap_err(),
            RedactError::SecretTooLong
        );
        // Bytes, not characters: four 2-byte characters are 8 bytes, three are 6.
        assert!(Redactor::new(["éééé"]).is_ok());
        assert_eq!(
            Redactor::new(["ééé"]).unwrap_err(),
            RedactError::SecretTooShort
        );
        assert_eq!(
            Redactor::new([""]).unwrap_err(),
            RedactError::SecretTooShort
        );
    }

    #[test]
    fn secret_count_bound_is_exact() {
        let secrets: Vec<String> = (0..SECRETS_MAX).map(|i| format!("secret-{i:08}")).collect();
        let r = Redactor::new(&secrets).unwrap();
        assert_eq!(r.len(), SECRETS_MAX);
        assert_eq!(r.mask("x secret-00004095 y"), "x [redacted] y");

        let more: Vec<String> = (0..=SECRETS_MAX)
            .map(|i| format!("secret-{i:08}"))
            .collect();
        assert_eq!(
            Redactor::new(&more).unwrap_err(),
            RedactError::TooManySecrets
        );
        // Duplicates count towards the bound.
        let dup = vec!["same-secret"; SECRETS_MAX + 1];
        assert_eq!(
            Redactor::new(&dup).unwrap_err(),
            RedactError::TooManySecrets
        );
    }

    #[test]
    fn empty_list_masks_nothing() {
        let r = Redactor::new(Vec::<String>::new()).unwrap();
        assert!(r.is_empty());
        assert_eq!(r.mask("anything at all"), "anything at all");
        assert!(!r.contains_secret(b"anything"));
        let m = r.mask_segments(&["abc", "def"], false);
        assert_eq!(
            m,
            Masked {
                segments: vec!["abc".into(), "def".into()],
                withheld_bytes: 0,
                pending: false
            }
        );
    }

    // ---- release at the edges: cuts and unknown neighbours ----

    #[test]
    fn a_cut_never_splits_a_mask_or_ends_in_the_start_of_a_secret() {
        let r = redactor(&["sk-live-0123456789"]);
        // Whole when it fits: the end of a text is not a cut.
        assert_eq!(r.cut_for_release("ends with sk-li", 100), "ends with sk-li");
        // A cut inside a mask drops the mask's start.
        let masked = r.mask("0123456 sk-live-0123456789 tail");
        assert_eq!(masked, "0123456 [redacted] tail");
        for max in 9..18 {
            assert_eq!(r.cut_for_release(&masked, max), "0123456 ", "{max}");
        }
        assert_eq!(r.cut_for_release(&masked, 18), "0123456 [redacted]");
        // A cut after the start of a secret (not the secret itself) drops that start.
        assert_eq!(r.cut_for_release("abc sk-live-01 and more", 14), "abc ");
        assert_eq!(
            r.cut_for_release("abc sk-live-01 and more", 15),
            "abc sk-live-01 "
        );
        // Both at once: the start of a secret right after a mask's start.
        assert_eq!(r.cut_for_release("x [redact", 8), "x ");
        // Never inside a character.
        assert_eq!(r.cut_for_release("日本語", 4), "日");
    }

    #[test]
    fn unknown_neighbours_mask_what_could_belong_to_a_secret_at_the_edge() {
        let r = redactor(&["sk-live-0123456789", "ghp_TOKEN_abcdef"]);
        // Could end a secret begun before: masked. Only proper suffixes count.
        assert_eq!(r.mask_unknown_before("0123456789 rest"), "[redacted] rest");
        assert_eq!(r.mask_unknown_before("9 rest"), "[redacted] rest");
        assert_eq!(r.mask_unknown_before("abcdef!"), "[redacted]!");
        assert_eq!(r.mask_unknown_before("plain start"), "plain start");
        // Could begin a secret continued after: masked.
        assert_eq!(r.mask_unknown_after("see sk-live-0"), "see [redacted]");
        assert_eq!(r.mask_unknown_after("the end: s"), "the end: [redacted]");
        assert_eq!(r.mask_unknown_after("the end."), "the end.");
        let empty = Redactor::new(Vec::<String>::new()).unwrap();
        assert_eq!(empty.mask_unknown_before("abc"), "abc");
        assert_eq!(empty.mask_unknown_after("abc"), "abc");
    }

    #[test]
    fn errors_and_debug_never_show_secrets() {
        let r = redactor(&["hunter2-password", "sk-live-0123456789"]);
        let debug = format!("{r:?}");
        assert_eq!(debug, "Redactor { secrets: 2, .. }");
        for e in [
            RedactError::SecretTooShort,
            RedactError::SecretTooLong,
            RedactError::TooManySecrets,
            RedactError::Automaton,
        ] {
            assert!(!e.to_string().is_empty());
        }
        let e = Redactor::new(["ok-secret-1", "zq9x"]).unwrap_err();
        assert_eq!(e, RedactError::SecretTooShort);
        assert!(!format!("{e} {e:?}").contains("zq9x"));
        let e = Redactor::new(["ok-secret-1".repeat(30)]).unwrap_err();
        assert!(!format!("{e} {e:?}").contains("ok-secret"));
    }

    // ---- masking ----

    #[test]
    fn masks_every_occurrence() {
        let r = redactor(&["sk-12345678", "password!"]);
        assert_eq!(
            r.mask("a sk-12345678 b password! c sk-12345678"),
            "a [redacted] b [redacted] c [redacted]"
        );
        assert_eq!(r.mask("no secrets here"), "no secrets here");
        assert_eq!(r.mask(""), "");
        // Exact and case-sensitive: not secret detection.
        assert_eq!(r.mask("SK-12345678 sk-1234567"), "SK-12345678 sk-1234567");
    }

    #[test]
    fn overlapping_and_adjacent_occurrences_merge() {
        let r = redactor(&["abcdefgh", "efghijkl", "zzzzzzzz"]);
        // Overlapping occurrences of two secrets: one range.
        assert_eq!(r.mask("<abcdefghijkl>"), "<[redacted]>");
        // Adjacent occurrences: one range.
        assert_eq!(r.mask("<abcdefghabcdefgh>"), "<[redacted]>");
        // Self-overlapping occurrences of one secret.
        assert_eq!(r.mask("<zzzzzzzzzzz>"), "<[redacted]>");
        // One byte apart: two ranges.
        assert_eq!(r.mask("abcdefgh-abcdefgh"), "[redacted]-[redacted]");
        // A secret inside a longer one.
        let r = redactor(&["0123456789", "23456789"]);
        assert_eq!(r.mask("x0123456789y"), "x[redacted]y");
        assert_eq!(r.mask("x23456789y"), "x[redacted]y");
    }

    #[test]
    fn non_ascii_secrets_and_text() {
        let r = redactor(&["密码🦀秘密", "ключ-секрет"]);
        assert_eq!(r.mask("é密码🦀秘密é"), "é[redacted]é");
        assert_eq!(r.mask("🦀ключ-секрет🦀密码🦀秘"), "🦀[redacted]🦀密码🦀秘");
        // Withholding an incomplete multibyte prefix cuts on a character boundary.
        let m = r.mask_segments(&["é密码🦀"], false);
        assert_eq!(m.segments, vec!["é".to_string()]);
        assert_eq!(m.withheld_bytes, "密码🦀".len());
    }

    #[test]
    fn contains_secret_on_binary() {
        let r = redactor(&["sk-12345678", "ключ-секрет"]);
        let mut bytes = vec![0u8, 0xff, 0xfe, 0x80, 0xc3];
        assert!(!r.contains_secret(&bytes));
        bytes.extend_from_slice(b"sk-12345678");
        bytes.extend_from_slice(&[0xff, 0x00]);
        assert!(r.contains_secret(&bytes));
        let mut utf = vec![0xffu8, 0xc0];
        utf.extend_from_slice("ключ-секрет".as_bytes());
        assert!(r.contains_secret(&utf));
        assert!(!r.contains_secret(b"sk-1234567"));
        assert!(!r.contains_secret(b""));
    }

    // ---- segments and withholding ----

    #[test]
    fn secret_split_across_segments_is_masked_in_each() {
        let r = redactor(&["sk-12345678"]);
        let m = r.mask_segments(&["key: sk-12", "345", "678 done"], true);
        assert_eq!(
            m.segments,
            vec!["key: [redacted]", "[redacted]", "[redacted] done"]
        );
        assert_eq!((m.withheld_bytes, m.pending), (0, false));
        // Empty segments stay empty.
        let m = r.mask_segments(&["", "sk-12345678", ""], true);
        assert_eq!(m.segments, vec!["", "[redacted]", ""]);
    }

    #[test]
    fn incomplete_text_withholds_the_longest_pending_prefix() {
        let r = redactor(&["sk-12345678", "k-abcdefgh"]);
        let m = r.mask_segments(&["abc sk-12"], false);
        assert_eq!(m.segments, vec!["abc "]);
        assert_eq!((m.withheld_bytes, m.pending), (5, true));
        // Spanning several trailing segments, which become shorter or empty.
        let m = r.mask_segments(&["abc s", "k", "-12"], false);
        assert_eq!(m.segments, vec!["abc ", "", ""]);
        assert_eq!(m.withheld_bytes, 5);
        // Nothing pending: nothing withheld.
        let m = r.mask_segments(&["abc sk-1x"], false);
        assert_eq!((m.segments[0].as_str(), m.withheld_bytes), ("abc sk-1x", 0));
        // Complete: the prefix is released as is.
        let m = r.mask_segments(&["abc sk-12"], true);
        assert_eq!((m.segments[0].as_str(), m.withheld_bytes), ("abc sk-12", 0));
        // A full secret is not a *proper* prefix of itself...
        let r2 = redactor(&["abcdefgh"]);
        let m = r2.mask_segments(&["x abcdefgh y"], false);
        assert_eq!(
            (m.segments[0].as_str(), m.withheld_bytes),
            ("x [redacted] y", 0)
        );
    }

    #[test]
    fn proper_prefix_test() {
        let r = redactor(&["abcdefgh", "abcdefghij", "abzzzzzz"]);
        assert!(r.is_proper_prefix(b"a"));
        assert!(r.is_proper_prefix(b"abcdefg"));
        // Equal to one secret, a proper prefix of another.
        assert!(r.is_proper_prefix(b"abcdefgh"));
        assert!(!r.is_proper_prefix(b"abcdefghij"));
        assert!(!r.is_proper_prefix(b"abzzzzzz"));
        assert!(r.is_proper_prefix(b"abz"));
        assert!(!r.is_proper_prefix(b"b"));
        assert_eq!(r.pending_prefix_start(b"xxabcdefgh"), Some(2));
        assert_eq!(r.pending_prefix_start(b"xxabcdefghij"), None);
        assert_eq!(r.pending_prefix_start(b"xxab"), Some(2));
        assert_eq!(r.pending_prefix_start(b""), None);
    }

    #[test]
    fn masked_range_at_the_end_is_withheld_whole() {
        // An adjacent secret may follow: it must merge into the same single mask.
        let r = redactor(&["abcdefgh"]);
        let m = r.mask_segments(&["x abcdefgh"], false);
        assert_eq!((m.segments[0].as_str(), m.withheld_bytes), ("x ", 8));
        // A pending prefix that starts inside a masked range: withhold from the range's start,
        // or the rest of the overlapping secret ("ijkl") would be revealed by the next page.
        let r = redactor(&["abcdefgh", "efghijkl"]);
        let m = r.mask_segments(&["x abcdefgh"], false);
        assert_eq!((m.segments[0].as_str(), m.withheld_bytes), ("x ", 8));
        let rest = r.mask_segments(&["abcdefghijkl."], true);
        assert_eq!(format!("x {}", rest.segments[0]), r.mask("x abcdefghijkl."));
        // A masked range that ends before a non-pending byte is released.
        let m = r.mask_segments(&["x abcdefgh."], false);
        assert_eq!(
            (m.segments[0].as_str(), m.withheld_bytes),
            ("x [redacted].", 0)
        );
    }

    #[test]
    fn many_long_secrets_stay_fast() {
        // 4,096 secrets of 256 bytes sharing long prefixes, and 64 KiB of text ending in a
        // pending prefix: the withholding search is bounded by the longest secret.
        let secrets: Vec<String> = (0..SECRETS_MAX)
            .map(|i| format!("{}{i:08}", "p".repeat(SECRET_MAX_BYTES - 8)))
            .collect();
        let r = Redactor::new(&secrets).unwrap();
        let mut text = "q".repeat(64 * 1024);
        text.push_str(&secrets[17]);
        text.push('.');
        text.push_str(&"p".repeat(SECRET_MAX_BYTES - 8));
        text.push_str("0000001");
        let started = std::time::Instant::now();
        let m = r.mask_segments(&[&text], false);
        assert_eq!(m.withheld_bytes, SECRET_MAX_BYTES - 1);
        assert!(m.segments[0].ends_with("[redacted]."));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    // ---- properties ----

    /// Secrets from a small alphabet (so that prefixes and overlaps happen often) with multibyte
    /// characters, none of which occurs in `MASK`; plus secrets derived from others (a prefix or
    /// a suffix of one, continued), which overlap them or share their prefixes.
    fn secrets_strategy() -> impl Strategy<Value = Vec<String>> {
        let secret = "[fgé日🦀]{8,14}";
        let derived = (
            any::<Index>(),
            any::<Index>(),
            "[fgé日🦀]{1,8}",
            any::<bool>(),
        );
        (
            prop::collection::vec(secret, 1..5),
            prop::collection::vec(derived, 0..4),
        )
            .prop_map(|(mut secrets, derived)| {
                for (which, at, tail, from_suffix) in derived {
                    let base = which.get(&secrets).clone();
                    let bounds: Vec<usize> = base.char_indices().map(|(i, _)| i).collect();
                    let k = *at.get(&bounds);
                    let new = if from_suffix {
                        format!("{}{tail}", &base[k..])
                    } else {
                        format!("{}{tail}", &base[..k])
                    };
                    if (SECRET_MIN_BYTES..=SECRET_MAX_BYTES).contains(&new.len()) {
                        secrets.push(new);
                    }
                }
                secrets
            })
    }

    /// Pieces of a text: filler (sharing the secrets' alphabet, plus `MASK`'s characters), whole
    /// secrets, or prefixes of secrets.
    fn pieces_strategy() -> impl Strategy<Value = Vec<(u8, Index, Index, String)>> {
        prop::collection::vec(
            (
                0u8..3,
                any::<Index>(),
                any::<Index>(),
                "[fgé日🦀xy r\\[\\]]{0,5}",
            ),
            0..14,
        )
    }

    fn build_text(secrets: &[String], pieces: &[(u8, Index, Index, String)]) -> String {
        let mut text = String::new();
        for (kind, which, at, filler) in pieces {
            let secret = which.get(secrets);
            match kind {
                0 => text.push_str(filler),
                1 => text.push_str(secret),
                _ => {
                    let bounds: Vec<usize> = secret.char_indices().map(|(i, _)| i).collect();
                    text.push_str(&secret[..*at.get(&bounds)]);
                }
            }
        }
        text
    }

    /// Sorted distinct character boundaries of `text` picked by `picks`, always ending at its end.
    fn boundaries(text: &str, picks: &[Index]) -> Vec<usize> {
        let all: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        let mut out: Vec<usize> = picks.iter().map(|p| *p.get(&all)).collect();
        out.push(text.len());
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Brute force: which bytes of `text` lie in some occurrence of some secret.
    fn covered(secrets: &[String], text: &str) -> Vec<bool> {
        let bytes = text.as_bytes();
        let mut cov = vec![false; bytes.len()];
        for s in secrets {
            let s = s.as_bytes();
            for i in 0..(bytes.len() + 1).saturating_sub(s.len()) {
                if &bytes[i..i + s.len()] == s {
                    cov[i..i + s.len()].fill(true);
                }
            }
        }
        cov
    }

    /// Brute-force reference of `mask_segments(segments, true)`.
    fn reference(secrets: &[String], segments: &[&str]) -> Vec<String> {
        let cov = covered(secrets, &segments.concat());
        let mut offset = 0;
        let mut out = Vec::new();
        for segment in segments {
            let mut o = String::new();
            let mut in_mask = false;
            for (i, ch) in segment.char_indices() {
                if cov[offset + i] {
                    if !in_mask {
                        o.push_str(MASK);
                    }
                    in_mask = true;
                } else {
                    in_mask = false;
                    o.push(ch);
                }
            }
            offset += segment.len();
            out.push(o);
        }
        out
    }

    fn split<'a>(text: &'a str, ends: &[usize]) -> Vec<&'a str> {
        let mut start = 0;
        ends.iter()
            .map(|&end| {
                let s = &text[start..end];
                start = end;
                s
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// A released cut of a masked text holds no secret and no start of one at its end, is a
        /// prefix of the masked text, and is within the bound.
        #[test]
        fn released_cuts_end_clean(
            secrets in proptest::collection::vec("[ab]{8,12}", 1..4),
            text in "[ab ]{0,80}",
            max in 0usize..90,
        ) {
            let r = Redactor::new(&secrets).unwrap();
            let masked = r.mask(&text);
            let cut = r.cut_for_release(&masked, max);
            prop_assert!(masked.starts_with(cut));
            if masked.len() > max {
                prop_assert!(cut.len() <= max);
                for s in &secrets {
                    for n in 1..s.len() {
                        prop_assert!(!cut.ends_with(&s[..n]), "{cut:?} ends with {:?}", &s[..n]);
                    }
                }
                for n in 1..MASK.len() {
                    prop_assert!(!cut.ends_with(&MASK[..n]));
                }
            } else {
                prop_assert_eq!(cut, masked.as_str());
            }
        }

        /// Whatever preceded a text, masking it as "unknown before" leaves no piece of a secret
        /// split across that edge: for every secret split at every point, the part after the
        /// split never survives at the start.
        #[test]
        fn an_unknown_start_never_shows_the_rest_of_a_split_secret(
            secret in "[a-c]{8,16}",
            k in 1usize..16,
            rest in "[a-c ]{0,20}",
        ) {
            let k = 1 + k % (secret.len() - 1);
            let r = Redactor::new([&secret]).unwrap();
            let text = format!("{}{rest}", &secret[k..]);
            let out = r.mask_unknown_before(&r.mask(&text));
            prop_assert!(!out.starts_with(&secret[k..]), "{out:?}");
            let text = format!("{rest}{}", &secret[..k]);
            let out = r.mask_unknown_after(&r.mask(&text));
            prop_assert!(!out.ends_with(&secret[..k]), "{out:?}");
        }

        /// Property 1: the masked text contains no secret, and matches the brute-force reference.
        #[test]
        fn mask_leaves_no_secret(secrets in secrets_strategy(), pieces in pieces_strategy()) {
            let r = Redactor::new(&secrets).unwrap();
            let text = build_text(&secrets, &pieces);
            let masked = r.mask(&text);
            for s in &secrets {
                prop_assert!(!masked.contains(s.as_str()));
            }
            prop_assert!(!r.contains_secret(masked.as_bytes()));
            prop_assert_eq!(r.contains_secret(text.as_bytes()), masked != text);
            prop_assert_eq!(&masked, &reference(&secrets, &[&text])[0]);
        }

        /// Property 2, the paging property: a pager that gives all unreleased text up to each page
        /// end (`complete` only on the last page) and resumes at `given − withheld_bytes` never
        /// releases a secret, never releases a prefix of a secret that the unreleased text
        /// completes, and releases exactly `mask(whole text)` however the text is paged.
        #[test]
        fn paging_never_reveals_and_is_independent_of_pages(
            secrets in secrets_strategy(),
            pieces in pieces_strategy(),
            picks in prop::collection::vec(any::<Index>(), 0..8),
        ) {
            let r = Redactor::new(&secrets).unwrap();
            let text = build_text(&secrets, &pieces);
            let ends = boundaries(&text, &picks);
            let mut cursor = 0usize;
            let mut released = String::new();
            for (k, &end) in ends.iter().enumerate() {
                let last = k + 1 == ends.len();
                let given = &text[cursor..end];
                let m = r.mask_segments(&[given], last);
                prop_assert_eq!(m.segments.len(), 1);
                prop_assert!(m.withheld_bytes <= given.len());
                prop_assert_eq!(m.pending, m.withheld_bytes > 0);
                if last {
                    prop_assert_eq!(m.withheld_bytes, 0);
                }
                released.push_str(&m.segments[0]);
                cursor += given.len() - m.withheld_bytes;
                prop_assert!(text.is_char_boundary(cursor));
                let unreleased = &text[cursor..];
                for s in &secrets {
                    prop_assert!(!released.contains(s.as_str()), "released a secret");
                    for (i, _) in s.char_indices().skip(1) {
                        prop_assert!(
                            !(released.ends_with(&s[..i]) && unreleased.starts_with(&s[i..])),
                            "released a prefix of a secret that the next text completes"
                        );
                    }
                }
            }
            prop_assert_eq!(cursor, text.len());
            prop_assert_eq!(released, r.mask(&text));
        }

        /// Property 2 for segmented text (history events): pages cut across events, each call
        /// gets the pieces of the events from the cursor to the page end, and each event's
        /// released pieces join to what one complete call over all events gives it.
        #[test]
        fn paging_events_is_independent_of_pages(
            secrets in secrets_strategy(),
            pieces in pieces_strategy(),
            event_picks in prop::collection::vec(any::<Index>(), 0..6),
            page_picks in prop::collection::vec(any::<Index>(), 0..8),
        ) {
            let r = Redactor::new(&secrets).unwrap();
            let text = build_text(&secrets, &pieces);
            let event_ends = boundaries(&text, &event_picks);
            let events = split(&text, &event_ends);
            let event_starts: Vec<usize> =
                std::iter::once(0).chain(event_ends.iter().copied()).collect();
            let ends = boundaries(&text, &page_picks);
            let mut out = vec![String::new(); events.len()];
            let mut cursor = 0usize;
            for (k, &end) in ends.iter().enumerate() {
                let last = k + 1 == ends.len();
                let mut which = Vec::new();
                let mut given = Vec::new();
                for (e, &ev_end) in event_ends.iter().enumerate() {
                    let (a, b) = (event_starts[e].max(cursor), ev_end.min(end));
                    if a < b {
                        which.push(e);
                        given.push(&text[a..b]);
                    }
                }
                let m = r.mask_segments(&given, last);
                prop_assert_eq!(m.segments.len(), given.len());
                for (e, s) in which.iter().zip(&m.segments) {
                    out[*e].push_str(s);
                }
                cursor = end - m.withheld_bytes;
            }
            prop_assert_eq!(cursor, text.len());
            let whole = r.mask_segments(&events, true);
            prop_assert_eq!(&out, &whole.segments);
            prop_assert_eq!(&whole.segments, &reference(&secrets, &events));
        }

        /// Property 3: segmenting does not change what is masked. Each segment's output is the
        /// brute-force reference (one `MASK` per segment part of a masked range); joined, it is
        /// `mask(concat)` whenever no masked range crosses a segment boundary, and in any case
        /// it contains no secret.
        #[test]
        fn segments_mask_like_the_whole(
            secrets in secrets_strategy(),
            pieces in pieces_strategy(),
            picks in prop::collection::vec(any::<Index>(), 0..6),
        ) {
            let r = Redactor::new(&secrets).unwrap();
            let text = build_text(&secrets, &pieces);
            let ends = boundaries(&text, &picks);
            let segments = split(&text, &ends);
            let m = r.mask_segments(&segments, true);
            prop_assert_eq!((m.withheld_bytes, m.pending), (0, false));
            prop_assert_eq!(&m.segments, &reference(&secrets, &segments));
            let joined = m.segments.concat();
            for s in &secrets {
                prop_assert!(!joined.contains(s.as_str()));
            }
            let cov = covered(&secrets, &text);
            let crosses = ends.iter().any(|&b| b > 0 && b < text.len() && cov[b - 1] && cov[b]);
            if !crosses {
                prop_assert_eq!(joined, r.mask(&text));
            }
            // Boundaries only where no range is crossed: exactly the statement of property 3.
            let safe: Vec<usize> = ends
                .iter()
                .copied()
                .filter(|&b| b == 0 || b == text.len() || !(cov[b - 1] && cov[b]))
                .collect();
            let safe_segments = split(&text, &safe);
            prop_assert_eq!(r.mask_segments(&safe_segments, true).segments.concat(), r.mask(&text));
        }

        /// Arbitrary text and secrets (any Unicode): no panic, output has no secret that the input
        /// had, contains_secret agrees with mask.
        #[test]
        fn arbitrary_inputs(secrets in prop::collection::vec("\\PC{2,12}", 0..4), text in "\\PC{0,60}", complete: bool) {
            let secrets: Vec<String> =
                secrets.into_iter().filter(|s| (SECRET_MIN_BYTES..=SECRET_MAX_BYTES).contains(&s.len())).collect();
            let r = Redactor::new(&secrets).unwrap();
            let masked = r.mask(&text);
            prop_assert_eq!(&masked, &reference(&secrets, &[&text])[0]);
            let m = r.mask_segments(&[&text], complete);
            prop_assert!(m.withheld_bytes <= text.len());
            prop_assert!(text.is_char_boundary(text.len() - m.withheld_bytes));
        }
    }
}
