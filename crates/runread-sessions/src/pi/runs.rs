//! Pi's run cutter: a session's active branch, from the leaf (the last entry in file order) to
//! the root, cut into runs. A run starts at a user message on that path and holds everything up
//! to the next one. Its final answer is its last message when that is an assistant message that
//! stopped (`stop`, or `length`: flagged truncated) without a tool call.

use crate::model::{EntryKind, EntrySummary};
use crate::runs::{
    Branch, Context, FIRST_SEQUENCE, Run, RunStatus, Walk, taint_branch, walk_from_leaf,
};

/// Cuts `entries` (in file order) into the runs of the active branch.
///
/// `malformed_lines` are lines that could not be parsed: each taints the run that was open at
/// that point of the file, and stands for a parent the walk from the leaf cannot find (the walk
/// goes on from the entry before it).
/// `torn_tail` (an unfinished last line) taints the last run. An entry of a type runread does not
/// know on the branch makes the run it falls in `unknown` ([`crate::runs::UNRECOGNISED_LINE`]).
pub fn cut_runs(entries: &[EntrySummary], malformed_lines: &[u64], torn_tail: bool) -> Branch {
    let Some(leaf) = entries.last() else {
        return Branch {
            leaf_id: None,
            runs: vec![],
            complete: true,
            session_name: None,
            saved_model: None,
        };
    };
    let Walk { mut path, complete } = walk_from_leaf(entries, malformed_lines);
    path.reverse();

    let session_name = path.iter().rev().find_map(|e| e.session_name.clone());
    let saved_model = path
        .iter()
        .rev()
        .find(|e| e.kind == EntryKind::ModelChange)
        .and_then(|e| {
            Some(format!(
                "{}/{}",
                e.provider.as_deref()?,
                e.model.as_deref()?
            ))
        });

    // Runs: slices of the path that start at a user message.
    let mut runs = Vec::new();
    let starts: Vec<usize> = path
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EntryKind::Message && e.role.as_deref() == Some("user"))
        .map(|(i, _)| i)
        .collect();
    let messages: Vec<&EntrySummary> = path
        .iter()
        .copied()
        .filter(|e| e.kind == EntryKind::Message)
        .collect();
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(path.len());
        if let Some(mut run) = path.get(start..end).and_then(run_of) {
            let before = path
                .iter()
                .take(start)
                .filter(|e| e.kind == EntryKind::Message)
                .count();
            run.first_sequence = before as u64 + FIRST_SEQUENCE;
            let count = run.message_lines.len();
            run.context_before = Context::around(&messages, before, true);
            run.context_after = Context::around(&messages, before + count, false);
            if !run.final_lines.is_empty() {
                // The final answer is the run's last message.
                run.answer_before =
                    Context::around(&messages, (before + count).saturating_sub(1), true);
            }
            runs.push(run);
        }
    }

    taint_branch(&mut runs, path.iter().copied(), malformed_lines, torn_tail);
    Branch {
        leaf_id: Some(leaf.id.clone()),
        runs,
        complete,
        session_name,
        saved_model,
    }
}

fn run_of(slice: &[&EntrySummary]) -> Option<Run> {
    let first = *slice.first()?;
    let last_msg = slice.iter().rev().find(|e| e.kind == EntryKind::Message);
    let mut run_models: Vec<String> = Vec::new();
    for e in slice
        .iter()
        .filter(|e| e.role.as_deref() == Some("assistant"))
    {
        if let (Some(p), Some(m)) = (&e.provider, &e.model) {
            let pm = format!("{p}/{m}");
            if !run_models.contains(&pm) {
                run_models.push(pm);
            }
        }
    }
    let mut run = Run {
        start_line: first.line,
        end_line: slice.iter().map(|e| e.line).max().unwrap_or(first.line),
        started_at: first.timestamp.clone(),
        run_models,
        message_lines: slice
            .iter()
            .filter(|e| e.kind == EntryKind::Message)
            .map(|e| e.line)
            .collect(),
        prompt_line: first.line_ref(),
        ..Run::running(first.id.clone())
    };
    let Some(last) = last_msg else {
        return Some(run);
    };
    run.waiting_on_tool = last.role.as_deref() == Some("assistant") && last.has_tool_call;
    if last.role.as_deref() != Some("assistant") {
        return Some(run); // a user prompt or a tool result still waits for the agent
    }
    run.status = match (last.stop_reason.as_deref(), last.has_tool_call) {
        (Some("stop" | "length"), false) => RunStatus::Completed,
        (Some("error"), _) => RunStatus::Failed,
        (Some("aborted"), _) => RunStatus::Cancelled,
        _ => RunStatus::Running,
    };
    if run.status != RunStatus::Running {
        run.ended_at = last.timestamp.clone();
    }
    if run.status == RunStatus::Completed {
        // The slice is a parent chain by construction (it was walked by parentId); record it.
        let upto = slice
            .iter()
            .position(|e| e.id == last.id)
            .map_or(slice.len(), |i| i + 1);
        let chain: Vec<&str> = slice.iter().take(upto).map(|e| e.id.as_str()).collect();
        run.chain_len = chain.len() as u64;
        run.chain_sha256 = Some(runread_core::sha256_hex(chain.join("\n").as_bytes()));
        run.final_entry_id = Some(last.id.clone());
        run.final_message_sha256 = last.message_sha256.clone();
        run.final_lines = last.line_ref().into_iter().collect();
        run.final_text_sha256 = last.text_sha256.clone();
        run.final_bytes = last.text_bytes;
        run.final_truncated = last.stop_reason.as_deref() == Some("length");
    }
    Some(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pi::{LineOutcome, PiParser, parse_header};
    use crate::runs::{CONTEXT_LINES_MAX, CONTEXT_TEXT_BYTES, RunStatus};

    fn parse(text: &str) -> (Vec<EntrySummary>, Vec<u64>) {
        let mut lines = text.lines();
        let header = parse_header(lines.next().unwrap().as_bytes()).unwrap();
        let mut p = PiParser::resume(&header, None);
        let (mut entries, mut bad) = (vec![], vec![]);
        for (i, l) in lines.enumerate() {
            match p.parse_line(l.as_bytes(), i as u64 + 2, 0) {
                LineOutcome::Entry(e) => entries.push(*e),
                LineOutcome::Malformed => bad.push(i as u64 + 2),
                _ => {}
            }
        }
        (entries, bad)
    }

    const H: &str = r#"{"type":"session","version":3,"id":"s1","cwd":"/w"}"#;

    fn msg(id: &str, parent: Option<&str>, role: &str, extra: &str) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"message":{{"role":"{role}"{extra}}}}}"#
        )
    }

    /// A linear session: one prompt, then `n` short assistant texts (each `text` long), then a
    /// final answer; then a second prompt. Returns its two runs.
    fn chatty(n: usize, text: &str) -> Vec<Run> {
        let mut lines = vec![H.to_string(), msg("u1", None, "user", r#","content":"q""#)];
        let mut parent = "u1".to_string();
        for i in 0..n {
            let id = format!("a{i}");
            lines.push(msg(
                &id,
                Some(&parent),
                "assistant",
                &format!(
                    r#","content":[{{"type":"text","text":"{text}"}},{{"type":"toolCall","name":"bash"}}],"stopReason":"toolUse""#
                ),
            ));
            parent = id;
        }
        lines.push(msg(
            "fin",
            Some(&parent),
            "assistant",
            r#","content":[{"type":"text","text":"done"}],"stopReason":"stop""#,
        ));
        lines.push(msg("u2", Some("fin"), "user", r#","content":"next""#));
        let (entries, bad) = parse(&lines.join("\n"));
        cut_runs(&entries, &bad, false).runs
    }

    #[test]
    fn masking_context_takes_enough_text_or_reaches_the_edge() {
        // Long texts: the nearest ones that make up the bytes masking needs, not more.
        let long = "x".repeat(100);
        let runs = chatty(10, &long);
        let ctx = &runs[0].answer_before;
        assert_eq!(ctx.lines.len(), 3, "300 bytes ≥ {CONTEXT_TEXT_BYTES}");
        assert!(ctx.sufficient() && !ctx.to_edge);
        // The first run's start is the branch's start.
        assert!(runs[0].context_before.lines.is_empty() && runs[0].context_before.to_edge);
        // After the first run: the next run's prompt, then the branch's end.
        assert_eq!(runs[0].context_after.lines.len(), 1);
        assert!(runs[0].context_after.to_edge);
        assert_eq!(
            runs[1].context_before.lines.last().unwrap().body_bytes,
            4,
            "\"done\""
        );
    }

    #[test]
    fn masking_context_is_bounded_in_lines_at_n_and_flags_n_plus_one() {
        // One-byte texts: the line bound comes first. The prompt "q" is one more text before.
        for (texts, to_edge) in [(CONTEXT_LINES_MAX - 1, true), (CONTEXT_LINES_MAX, false)] {
            let runs = chatty(texts, "t");
            let ctx = &runs[0].answer_before;
            assert_eq!(ctx.lines.len(), (texts + 1).min(CONTEXT_LINES_MAX));
            assert_eq!(ctx.to_edge, to_edge, "{texts} texts");
            assert_eq!(ctx.sufficient(), to_edge);
        }
    }

    #[test]
    fn a_branch_abandoned_by_the_leaf_is_not_a_run() {
        let text = [
            H.to_string(),
            msg("u1", None, "user", r#","content":"first""#),
            msg(
                "a1",
                Some("u1"),
                "assistant",
                r#","content":[{"type":"text","text":"old"}],"stopReason":"stop""#,
            ),
            // the user went back to u1's parent and asked again: a new branch
            msg("u2", None, "user", r#","content":"second""#),
            msg(
                "a2",
                Some("u2"),
                "assistant",
                r#","content":[{"type":"text","text":"new"}],"stopReason":"stop""#,
            ),
        ]
        .join("\n");
        let (entries, bad) = parse(&text);
        let b = cut_runs(&entries, &bad, false);
        assert_eq!(b.runs.len(), 1);
        assert_eq!(b.runs[0].run_id, "u2");
        assert_eq!(
            b.runs[0].final_text_sha256,
            Some(runread_core::sha256_hex(b"new"))
        );
        assert!(b.complete);
    }

    #[test]
    fn missing_parent_marks_the_walk_incomplete() {
        let text = [
            H.to_string(),
            msg("u1", Some("gone"), "user", r#","content":"q""#),
            msg(
                "a1",
                Some("u1"),
                "assistant",
                r#","content":[{"type":"text","text":"x"}],"stopReason":"stop""#,
            ),
        ]
        .join("\n");
        let (entries, bad) = parse(&text);
        let b = cut_runs(&entries, &bad, false);
        assert!(!b.complete);
        assert_eq!(b.runs.len(), 1);
    }

    #[test]
    fn a_line_of_the_branch_that_cannot_be_read_leaves_the_runs_before_it_on_the_branch() {
        let answer = r#","content":[{"type":"text","text":"x"}],"stopReason":"stop""#;
        // The second run's answer line is unreadable: the next prompt names it as its parent.
        let text = [
            H.to_string(),
            msg("u1", None, "user", r#","content":"q1""#),
            msg("a1", Some("u1"), "assistant", answer),
            msg("u2", Some("a1"), "user", r#","content":"q2""#),
            "{broken".to_string(),
            msg("u3", Some("a2"), "user", r#","content":"q3""#),
            msg("a3", Some("u3"), "assistant", answer),
        ]
        .join("\n");
        let (entries, bad) = parse(&text);
        assert_eq!(bad, [5]);
        let b = cut_runs(&entries, &bad, false);
        let runs: Vec<(&str, RunStatus)> = b
            .runs
            .iter()
            .map(|r| (r.run_id.as_str(), r.status))
            .collect();
        assert_eq!(
            runs,
            [
                ("u1", RunStatus::Completed),
                ("u2", RunStatus::Unknown),
                ("u3", RunStatus::Completed)
            ]
        );
        assert!(!b.complete, "the walk went over a line it could not read");
        // No unreadable line before the missing parent: the walk ends there.
        let b = cut_runs(&entries, &[], false);
        assert_eq!(b.runs.len(), 1);
        assert!(!b.complete);
    }

    #[test]
    fn a_parent_cycle_ends_the_walk() {
        let text = [
            H.to_string(),
            msg("u1", Some("a1"), "user", r#","content":"q""#),
            msg(
                "a1",
                Some("u1"),
                "assistant",
                r#","content":[{"type":"text","text":"x"}],"stopReason":"stop""#,
            ),
        ]
        .join("\n");
        let (entries, bad) = parse(&text);
        let b = cut_runs(&entries, &bad, false);
        assert!(!b.complete);
    }

    #[test]
    fn statuses_follow_the_last_message() {
        for (extra, status) in [
            (
                r#","content":[{"type":"text","text":"x"}],"stopReason":"stop""#,
                RunStatus::Completed,
            ),
            (
                r#","content":[{"type":"text","text":"x"}],"stopReason":"length""#,
                RunStatus::Completed,
            ),
            (r#","content":[],"stopReason":"error""#, RunStatus::Failed),
            (
                r#","content":[],"stopReason":"aborted""#,
                RunStatus::Cancelled,
            ),
            (
                r#","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{}}],"stopReason":"toolUse""#,
                RunStatus::Running,
            ),
        ] {
            let text = [
                H.to_string(),
                msg("u1", None, "user", r#","content":"q""#),
                msg("a1", Some("u1"), "assistant", extra),
            ]
            .join("\n");
            let (entries, bad) = parse(&text);
            assert_eq!(
                cut_runs(&entries, &bad, false).runs[0].status,
                status,
                "{extra}"
            );
        }
    }

    #[test]
    fn torn_tail_and_malformed_lines_make_the_touched_run_unknown() {
        let text = [
            H.to_string(),
            msg("u1", None, "user", r#","content":"q""#),
            msg(
                "a1",
                Some("u1"),
                "assistant",
                r#","content":[{"type":"text","text":"x"}],"stopReason":"stop""#,
            ),
            msg("u2", Some("a1"), "user", r#","content":"q2""#),
            "{broken".to_string(),
            msg(
                "a2",
                Some("u2"),
                "assistant",
                r#","content":[{"type":"text","text":"y"}],"stopReason":"stop""#,
            ),
        ]
        .join("\n");
        let (entries, bad) = parse(&text);
        let b = cut_runs(&entries, &bad, false);
        assert_eq!(b.runs[0].status, RunStatus::Completed);
        assert_eq!(b.runs[1].status, RunStatus::Unknown);
        let b = cut_runs(&entries, &[], true);
        assert_eq!(b.runs[0].status, RunStatus::Completed);
        assert_eq!(b.runs[1].status, RunStatus::Unknown);
    }
}
