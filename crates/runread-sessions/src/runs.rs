//! Cutting a session's active branch into runs.
//!
//! The leaf is the last entry in file order; the active branch is the path from the leaf to the
//! root. A run starts at a user message on that path and holds everything up to the next one. Its
//! final answer is its last message when that is an assistant message that stopped (`stop`, or
//! `length`: flagged truncated) without a tool call.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use runread_core::redact::SECRET_MAX_BYTES;

use crate::pi::{EntryKind, EntrySummary, LineRef};

/// Bytes of text on each side of a served text that masking must see: one less than the longest
/// secret (a secret straddling the edge has at most that much on the other side).
pub const CONTEXT_TEXT_BYTES: usize = SECRET_MAX_BYTES - 1;
/// Most message lines recorded as masking context on one side of a run or an answer. Text-less
/// messages are not recorded, so this is reached only by many very short texts in a row; then the
/// context is flagged incomplete and what it would decide is masked conservatively.
pub const CONTEXT_LINES_MAX: usize = 64;

/// A message line with text, as masking context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextRef {
    pub line: LineRef,
    /// Length of the text a reader would be served of it (`EntrySummary::body_bytes`).
    pub body_bytes: u64,
    /// The event the line belongs to (`EntrySummary::group`): consecutive lines of one group are
    /// one text, joined by `\n`.
    #[serde(default)]
    pub group: Option<String>,
}

/// The message texts next to a run (or its answer) on the active branch, nearest last for the
/// text before and nearest first for the text after: what masking reads so that a secret split
/// across the edge is caught on both sides.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Context {
    /// In path order.
    pub lines: Vec<TextRef>,
    /// The lines reach the branch's edge: no text lies beyond them (before the first message,
    /// or after the last one so far).
    pub to_edge: bool,
}

impl Context {
    /// Whether the context holds all masking needs: enough text, or everything up to the edge.
    pub fn sufficient(&self) -> bool {
        self.to_edge || self.text_bytes() >= CONTEXT_TEXT_BYTES as u64
    }

    pub fn text_bytes(&self) -> u64 {
        self.lines.iter().map(|t| t.body_bytes).sum()
    }

    /// The context on one side of position `at` of `messages` (the branch's messages in path
    /// order): `before` takes the messages before `at`, else those from `at` on.
    pub(crate) fn around(messages: &[&EntrySummary], at: usize, before: bool) -> Context {
        let mut lines = Vec::new();
        let mut bytes = 0u64;
        let mut to_edge = true;
        let side: Box<dyn Iterator<Item = &&EntrySummary>> = if before {
            Box::new(messages.iter().take(at).rev())
        } else {
            Box::new(messages.iter().skip(at))
        };
        for e in side {
            if bytes >= CONTEXT_TEXT_BYTES as u64 || lines.len() >= CONTEXT_LINES_MAX {
                to_edge = false;
                break;
            }
            if e.body_bytes == 0 {
                continue;
            }
            let Some(line) = e.line_ref() else { continue };
            bytes += e.body_bytes;
            lines.push(TextRef {
                line,
                body_bytes: e.body_bytes,
                group: e.group.clone(),
            });
        }
        if before {
            lines.reverse();
        }
        Context { lines, to_edge }
    }
}

/// What the session file shows of a run's foreground.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Ended with a final assistant message.
    Completed,
    /// Ended with a provider or agent error.
    Failed,
    /// Ended because the user aborted it.
    Cancelled,
    /// Not ended in the file: a tool call is open, a tool result awaits its answer, or nothing
    /// has been answered yet.
    Running,
    /// The file cannot tell: a malformed or torn line touches the run.
    Unknown,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Running => "running",
            RunStatus::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        [
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Cancelled,
            RunStatus::Running,
            RunStatus::Unknown,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// One run on the active branch, with the evidence of its final answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// Entry id of the user message that starts the run.
    pub run_id: String,
    pub start_line: u64,
    pub end_line: u64,
    pub status: RunStatus,
    /// Why the status is `unknown`, for the owner's listing.
    pub unknown_reason: Option<String>,
    pub final_entry_id: Option<String>,
    pub final_message_sha256: Option<String>,
    /// Where the final answer's lines are (one for Pi; one per text block of the final response
    /// for Claude Code): the answer is read from there when served, their texts joined by `\n`.
    #[serde(default)]
    pub final_lines: Vec<LineRef>,
    /// Digest of the final answer as ingested ([`crate::model::answer_digest`] of its lines'
    /// texts; the text's SHA-256 when it is one line).
    #[serde(default)]
    pub final_text_sha256: Option<String>,
    pub final_bytes: u64,
    /// The final message stopped on the model's length limit.
    pub final_truncated: bool,
    /// Number of entries on the parent chain from the final message back to the run's start.
    pub chain_len: u64,
    /// SHA-256 over the ids of that chain, start first.
    pub chain_sha256: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// `provider/model` pairs the run's assistant messages report, in order of first use.
    pub run_models: Vec<String>,
    /// File lines of the run's message entries, in path order: its history events.
    #[serde(default)]
    pub message_lines: Vec<u64>,
    /// Sequence of the run's first event: the 1-based position of its first message among all
    /// messages on the session's active branch. Event `i` of the run has sequence `first_sequence + i`.
    #[serde(default)]
    pub first_sequence: u64,
    /// The last message is an assistant message with a tool call that has no result yet.
    #[serde(default)]
    pub waiting_on_tool: bool,
    /// Masking context before the run's first message (the previous runs' texts).
    #[serde(default)]
    pub context_before: Context,
    /// Masking context after the run's last message (the next run's texts, once there is one).
    #[serde(default)]
    pub context_after: Context,
    /// Masking context before the final answer (the run's earlier texts, then the previous runs').
    #[serde(default)]
    pub answer_before: Context,
    /// Where the run's prompt line is (what the session records about itself there — cwd, branch,
    /// agent version — is read back from it when served).
    #[serde(default)]
    pub prompt_line: Option<LineRef>,
}

/// The runs of a session and what the walk from the leaf found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    pub leaf_id: Option<String>,
    pub runs: Vec<Run>,
    /// The walk from the leaf reached the root (no missing parent, no cycle).
    pub complete: bool,
    /// Latest session name on the active branch (Pi `session_info`).
    pub session_name: Option<String>,
    /// Model of the latest `model_change` on the active branch: the session's saved model.
    pub saved_model: Option<String>,
}

/// Cuts `entries` (in file order) into the runs of the active branch.
///
/// `malformed_lines` are lines that could not be parsed: each taints the run that was open at
/// that point of the file, and stands for a parent the walk from the leaf cannot find (the walk
/// goes on from the entry before it).
/// `torn_tail` (an unfinished last line) taints the last run.
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
            run.first_sequence = before as u64 + 1;
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

    taint(&mut runs, malformed_lines, torn_tail);
    Branch {
        leaf_id: Some(leaf.id.clone()),
        runs,
        complete,
        session_name,
        saved_model,
    }
}

/// The active branch as [`walk_from_leaf`] found it.
pub(crate) struct Walk<'e> {
    /// From the leaf (the newest entry) back to where the walk ended.
    pub path: Vec<&'e EntrySummary>,
    /// The walk reached a root: no parent was missing, no link went round in a cycle.
    pub complete: bool,
}

/// The active branch, for every agent whose entries link to their parents (Pi, Claude Code): from
/// the newest of `entries` (in file order) back by parent links, until an entry without a parent
/// or a cycle.
///
/// A parent that is not among `entries` marks the walk incomplete. When a line that could not be
/// read lies before the entry (`unread_lines`: malformed, or over the line bound and skipped
/// unread), that line is taken for the missing parent — it holds the only id runread could not
/// see — and the walk goes on from the entry just before it in the file, the line it followed:
/// the runs before an unreadable line stay on the branch (the run the line lies in is tainted
/// `unknown` by [`taint`]) instead of vanishing with it. Without such a line, the walk ends.
pub(crate) fn walk_from_leaf<'e>(entries: &'e [EntrySummary], unread_lines: &[u64]) -> Walk<'e> {
    let by_id: HashMap<&str, &EntrySummary> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut path: Vec<&EntrySummary> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut cur = entries.last();
    let mut complete = true;
    while let Some(e) = cur {
        if !seen.insert(e.id.as_str()) {
            complete = false;
            break;
        }
        path.push(e);
        cur = match &e.parent_id {
            None => None,
            Some(p) => match by_id.get(p.as_str()) {
                Some(parent) => Some(*parent),
                None => {
                    complete = false;
                    entry_before_unread_line(entries, unread_lines, e.line)
                }
            },
        };
    }
    Walk { path, complete }
}

/// The entry just before the last unread line that comes before line `line` (`entries` and
/// `unread_lines` in file order); `None` when no unread line comes before it, or no entry before
/// that line.
fn entry_before_unread_line<'e>(
    entries: &'e [EntrySummary],
    unread_lines: &[u64],
    line: u64,
) -> Option<&'e EntrySummary> {
    let unread = unread_lines.iter().copied().filter(|l| *l < line).max()?;
    let before = entries.partition_point(|e| e.line < unread);
    before.checked_sub(1).and_then(|i| entries.get(i))
}

/// Taint, for every agent: a malformed line inside a run's span of the file, or after the last
/// run start, makes that run unknown; so does a torn last line for the last run.
pub(crate) fn taint(runs: &mut [Run], malformed_lines: &[u64], torn_tail: bool) {
    for &line in malformed_lines {
        if let Some(run) = runs.iter_mut().rev().find(|r| r.start_line < line) {
            mark_unknown(run, "malformed line");
        }
    }
    if torn_tail && let Some(run) = runs.last_mut() {
        mark_unknown(run, "unfinished last line");
    }
}

pub(crate) fn mark_unknown(run: &mut Run, reason: &str) {
    run.mark_unknown(reason);
}

impl Run {
    /// A run of `run_id` as its reader first sees it: running, no answer, no context yet. Each
    /// agent's reader fills in the lines and times it knows (struct update from this).
    pub fn running(run_id: String) -> Run {
        Run {
            run_id,
            start_line: 0,
            end_line: 0,
            status: RunStatus::Running,
            unknown_reason: None,
            final_entry_id: None,
            final_message_sha256: None,
            final_lines: Vec::new(),
            final_text_sha256: None,
            final_bytes: 0,
            final_truncated: false,
            chain_len: 0,
            chain_sha256: None,
            started_at: None,
            ended_at: None,
            run_models: Vec::new(),
            message_lines: Vec::new(),
            first_sequence: 0,
            waiting_on_tool: false,
            context_before: Context::default(),
            context_after: Context::default(),
            answer_before: Context::default(),
            prompt_line: None,
        }
    }

    /// The file cannot tell how this run stands (`reason` is for the owner's listing; the first
    /// reason given stays).
    pub fn mark_unknown(&mut self, reason: &str) {
        self.status = RunStatus::Unknown;
        self.unknown_reason.get_or_insert_with(|| reason.to_owned());
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
