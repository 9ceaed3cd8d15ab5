//! Values more than one tool's output (or module) speaks: the coverage of a kind of work and the
//! reasons a history has a gap.

use runread_core::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a kind of work's evidence is covered whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    Complete,
    Incomplete,
}

/// Why a run's history has a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GapReason {
    /// Retention removed events from its start.
    Retention,
    /// A malformed line touches the run.
    Malformed,
    /// The file cannot tell how the run ends.
    TailUnknown,
    /// The session's parent chain is broken.
    BranchIncomplete,
    /// A line no longer reads back as ingested.
    SourceChanged,
    /// The fork's parent, whose history it inherits, is not granted.
    ForkParentNotGranted,
    /// The fork's parent changed where the fork's history begins.
    ForkParentChanged,
}

/// A new id of runread's own records: `prefix` (`r-` a reader, `g-` a grant, `a-` an artifact,
/// `w-` a wait, `sl-` a line of the snapshot log) and 64 random bits in lowercase hex.
pub(crate) fn random_id(prefix: &str) -> Result<String, String> {
    let bytes = runread_core::random_bytes::<8>().map_err(|e| e.to_string())?;
    Ok(bytes.iter().fold(prefix.to_owned(), |mut id, b| {
        id.push_str(&format!("{b:02x}"));
        id
    }))
}

/// The first [`PROMPT_PREVIEW_MAX_CHARS`](runread_core::limits::PROMPT_PREVIEW_MAX_CHARS) characters of `text` on one line. Masked whole before
/// it is cut, so a secret the cut would split is already a mask; the cut never falls inside a
/// mask and never leaves the start of a secret at the end.
pub(crate) fn prompt_preview(text: &str, redactor: &runread_core::redact::Redactor) -> String {
    let folded = redactor
        .mask(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // Folding whitespace can join a secret that had whitespace in it: mask the folded text too.
    let one_line = redactor.mask(&folded);
    match one_line
        .char_indices()
        .nth(runread_core::limits::PROMPT_PREVIEW_MAX_CHARS)
    {
        None => one_line,
        Some((cut, _)) => format!("{}…", redactor.cut_for_release(&one_line, cut)),
    }
}

// The owner's search's words (`owner::search`): also the rule a reader's `request_access`
// words are taken by, so that what a reader may ask is what the owner's search can match.

/// Longest query, in bytes.
pub const SEARCH_QUERY_MAX_BYTES: usize = 256;
/// Most words in a query (each must be found).
pub const SEARCH_WORDS_MAX: usize = 8;

/// The query's words, lowercased: at most [`SEARCH_WORDS_MAX`], the query at most
/// [`SEARCH_QUERY_MAX_BYTES`]; an empty query, or one over a bound, is `invalid_arguments`.
pub fn words(query: &str) -> Result<Vec<String>, ErrorCode> {
    if query.len() > SEARCH_QUERY_MAX_BYTES {
        return Err(ErrorCode::InvalidArguments);
    }
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    if words.is_empty() || words.len() > SEARCH_WORDS_MAX {
        return Err(ErrorCode::InvalidArguments);
    }
    Ok(words)
}
