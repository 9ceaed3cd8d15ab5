//! What the audit keeps of calls refused before the gate, which no start record holds: a call
//! of a known reader one by one (its reader, tool, target, code and time), a call with no valid
//! credential only counted per minute and code. Recording never changes an answer: it tells
//! the caller nothing, and a failure to record is logged locally and the refusal stands.

use runread_core::{ErrorCode, Target};
use runread_store::{REFUSALS_KEPT_MAX, Refusal, Store};

/// Longest tool name a refusal keeps as the caller sent it; a longer one, or one that is not a
/// plain name, is kept as [`UNKNOWN_TOOL_KEPT_AS`].
pub const TOOL_NAME_KEPT_MAX_BYTES: usize = 64;

/// What a refusal keeps of a tool name runread has no tool of and that is not a plain name.
pub const UNKNOWN_TOOL_KEPT_AS: &str = "?";

/// Records that admission refused `reader_id`'s call of `tool` with `code`, naming the target
/// `args` named when it is a well-formed one. Returns `code`, whatever became of the record. A
/// store that could not answer (`unavailable`) refused nobody: nothing is recorded.
pub(crate) fn refused(
    store: &dyn Store,
    reader_id: &str,
    tool: &str,
    args: &serde_json::Value,
    code: ErrorCode,
    now_ms: i64,
) -> ErrorCode {
    if code == ErrorCode::Unavailable {
        return code;
    }
    let refusal = Refusal {
        reader_id: reader_id.to_owned(),
        tool: tool_kept(tool),
        target: target_named(args),
        code: code.as_str().to_owned(),
        created_at_ms: now_ms,
    };
    if let Err(e) = store.record_refusal(&refusal, REFUSALS_KEPT_MAX) {
        tracing::warn!(error = %e, code = code.as_str(), "a refused call was not recorded");
    }
    code
}

/// [`refused`] for `reader_id`'s call of `tool` with `args`, once its code is known.
pub(crate) fn recorder<'a>(
    store: &'a dyn Store,
    reader_id: &'a str,
    tool: &'a str,
    args: &'a serde_json::Value,
    now_ms: i64,
) -> impl FnOnce(ErrorCode) -> ErrorCode + 'a {
    move |code| refused(store, reader_id, tool, args, code, now_ms)
}

/// Counts a call refused with `code` before its credential named a reader. Returns `code`,
/// whatever became of the count. A store that could not answer (`unavailable`) refused nobody.
pub(crate) fn unadmitted(store: &dyn Store, code: ErrorCode, now_ms: i64) -> ErrorCode {
    if code == ErrorCode::Unavailable {
        return code;
    }
    if let Err(e) = store.count_unadmitted(now_ms, code.as_str()) {
        tracing::warn!(error = %e, code = code.as_str(), "a refused call was not counted");
    }
    code
}

/// The target the arguments name, when it is well formed (what admission would have read).
fn target_named(args: &serde_json::Value) -> Option<Target> {
    let target: Target = serde_json::from_value(args.get("target")?.clone()).ok()?;
    target.validate_shape().then_some(target)
}

/// `tool` when it is a plain name of at most [`TOOL_NAME_KEPT_MAX_BYTES`], else
/// [`UNKNOWN_TOOL_KEPT_AS`]: a caller's text is kept only as a name the owner can read.
fn tool_kept(tool: &str) -> String {
    let plain = !tool.is_empty()
        && tool.len() <= TOOL_NAME_KEPT_MAX_BYTES
        && tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if plain { tool } else { UNKNOWN_TOOL_KEPT_AS }.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_name_is_kept_up_to_its_bound_and_only_when_plain() {
        let at = "a".repeat(TOOL_NAME_KEPT_MAX_BYTES);
        assert_eq!(tool_kept(&at), at);
        let over = "a".repeat(TOOL_NAME_KEPT_MAX_BYTES + 1);
        assert_eq!(tool_kept(&over), UNKNOWN_TOOL_KEPT_AS);
        assert_eq!(tool_kept("read_history"), "read_history");
        assert_eq!(tool_kept("rm -rf /"), UNKNOWN_TOOL_KEPT_AS);
        assert_eq!(tool_kept(""), UNKNOWN_TOOL_KEPT_AS);
    }
}
