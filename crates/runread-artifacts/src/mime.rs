//! The MIME types an artifact may be registered with.

use crate::{Refusal, RelPath};

/// Every MIME type an artifact may have. Matched exactly: lowercase, no parameters.
pub const MIME_ALLOWED: [&str; 9] = [
    "text/plain",
    "text/markdown",
    "text/csv",
    "application/json",
    "application/octet-stream",
    "application/pdf",
    "image/png",
    "image/jpeg",
    "image/webp",
];

/// The type [`guess_mime`] answers for an unknown or missing extension.
pub const MIME_FALLBACK: &str = "application/octet-stream";

/// Refuses ([`Refusal::MimeRefused`]) any type not exactly in [`MIME_ALLOWED`]: no case
/// folding, no whitespace, no parameters (`text/plain; charset=utf-8` is refused).
pub fn check_mime(m: &str) -> Result<(), Refusal> {
    if MIME_ALLOWED.contains(&m) {
        Ok(())
    } else {
        Err(Refusal::MimeRefused)
    }
}

/// The allowed MIME type for the path's extension (any case), else [`MIME_FALLBACK`]. Never
/// looks at the content.
pub fn guess_mime(rel: &RelPath) -> &'static str {
    let name = rel.file_name();
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return MIME_FALLBACK;
    };
    if stem.is_empty() {
        // A dot file such as `.txt` has no extension.
        return MIME_FALLBACK;
    }
    match ext.to_ascii_lowercase().as_str() {
        "txt" | "text" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        _ => MIME_FALLBACK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate_path;

    #[test]
    fn every_guess_is_allowed() {
        for (p, want) in [
            ("a.txt", "text/plain"),
            ("run.LOG", "text/plain"),
            ("notes/README.md", "text/markdown"),
            ("t.csv", "text/csv"),
            ("r.json", "application/json"),
            ("doc.pdf", "application/pdf"),
            ("i.png", "image/png"),
            ("i.JPG", "image/jpeg"),
            ("i.jpeg", "image/jpeg"),
            ("i.webp", "image/webp"),
            ("bin.exe", MIME_FALLBACK),
            ("Makefile", MIME_FALLBACK),
            (".txt", MIME_FALLBACK),
            ("dir.md/file", MIME_FALLBACK),
        ] {
            let rel = validate_path(p).unwrap();
            let got = guess_mime(&rel);
            assert_eq!(got, want, "{p}");
            assert_eq!(check_mime(got), Ok(()));
        }
    }
}
