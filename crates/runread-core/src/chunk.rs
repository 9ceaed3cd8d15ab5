//! Splitting text into byte-bounded chunks that never cut a UTF-8 code point.

/// The byte range of the chunk that starts at `offset` and holds at most `limit` bytes,
/// ending on a code point boundary. `None` when `offset` is past the end or not on a boundary.
///
/// Progress is guaranteed when `limit >= 4` (the longest UTF-8 encoding); with a smaller limit a
/// wide code point yields an empty range, which callers prevent by bounding `limit` from below.
pub fn chunk_range(text: &str, offset: usize, limit: usize) -> Option<std::ops::Range<usize>> {
    if offset > text.len() || !text.is_char_boundary(offset) {
        return None;
    }
    let mut end = offset.saturating_add(limit).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(offset..end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split_all(text: &str, limit: usize) -> Vec<&str> {
        let mut out = Vec::new();
        let mut offset = 0;
        while offset < text.len() {
            let r = chunk_range(text, offset, limit).unwrap();
            assert!(r.end > r.start, "no progress at {offset}");
            assert!(r.len() <= limit);
            out.push(&text[r.clone()]);
            offset = r.end;
        }
        out
    }

    #[test]
    fn chunk_never_splits_a_four_byte_code_point() {
        let text = "a🦀b";
        assert_eq!(chunk_range(text, 0, 4), Some(0..1));
        assert_eq!(chunk_range(text, 1, 4), Some(1..5));
        assert_eq!(chunk_range(text, 2, 4), None);
        assert_eq!(chunk_range(text, 6, 4), Some(6..6));
        assert_eq!(chunk_range(text, 7, 4), None);
    }

    proptest! {
        #[test]
        fn any_text_and_chunk_size_reassembles_byte_exact(text in any::<String>(), limit in 4usize..64) {
            let parts = split_all(&text, limit);
            prop_assert_eq!(parts.concat(), text);
        }

        #[test]
        fn chunks_of_multibyte_text_end_on_boundaries(
            text in "[a-zé日🦀]{0,200}", limit in 4usize..40
        ) {
            for part in split_all(&text, limit) {
                prop_assert!(std::str::from_utf8(part.as_bytes()).is_ok());
            }
        }
    }
}
