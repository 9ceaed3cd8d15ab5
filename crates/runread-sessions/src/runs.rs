//! What every agent's run cutter produces and shares: runs, their status, the active branch, the
//! masking context around a text, and the walk from a session's leaf to its root (each agent's
//! cutter is in its folder: `pi::cut_runs`, `claude::cut_runs`, `codex::cut_runs`).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use runread_core::redact::SECRET_MAX_BYTES;

use crate::model::{EntrySummary, LineRef};

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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// The sequence of a session's first message: events are numbered from it, on the active branch,
/// in `read_history` and `get_run` alike.
pub const FIRST_SEQUENCE: u64 = 1;

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
    /// Sequence of the run's first event: the position of its first message among all messages
    /// on the session's active branch, counted from [`FIRST_SEQUENCE`]. Event `i` of the run has
    /// sequence `first_sequence + i`.
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
    /// The tokens the run's model calls reported (`None`: none reported, or the run was indexed
    /// before usage was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<RunUsage>,
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

/// Why a run is `unknown` when a line of a type runread does not know falls in it
/// ([`crate::model::EntryKind::Unrecognised`]): such a line could hold the run's answer, or end it,
/// so none is taken.
pub const UNRECOGNISED_LINE: &str = "unrecognised line";

/// Taint, for the agents whose runs are spans of their active branch (Pi, Claude Code): each line
/// of a type runread does not know among `branch` (the active branch's entries, in file order)
/// makes the run it falls in unknown — the last run started before it (a line before the first
/// run changes nothing); then [`taint`] for `malformed_lines` and `torn_tail`.
pub(crate) fn taint_branch<'e>(
    runs: &mut [Run],
    branch: impl IntoIterator<Item = &'e EntrySummary>,
    malformed_lines: &[u64],
    torn_tail: bool,
) {
    let unrecognised = branch
        .into_iter()
        .filter(|e| e.kind == crate::model::EntryKind::Unrecognised);
    for e in unrecognised {
        if let Some(run) = runs.iter_mut().rev().find(|r| r.start_line < e.line) {
            mark_unknown(run, UNRECOGNISED_LINE);
        }
    }
    taint(runs, malformed_lines, torn_tail);
}

/// Sets `run`'s masking contexts from `messages` (the session's, in order), where its `len` events
/// start at position `at`: before them, after them, and before its answer's first line.
pub(crate) fn set_contexts(run: &mut Run, messages: &[&EntrySummary], at: usize, len: usize) {
    run.context_before = Context::around(messages, at, true);
    run.context_after = Context::around(messages, at + len, false);
    if let Some(candidate) = run.final_lines.first()
        && let Some(answer_at) = messages.iter().position(|e| e.line == candidate.line)
    {
        run.answer_before = Context::around(messages, answer_at, true);
    }
}

/// The branch of `runs`, cut over every one of `entries` in order (an agent whose lines do not link
/// to a parent: Gemini CLI, Copilot CLI, OpenCode), each marked `unknown` for a bad line in it (its
/// reason first: it says more), then for why its records cannot say how it stands (`why_unknown`,
/// one per run; `None`: they say).
pub(crate) fn in_order_branch(
    entries: &[EntrySummary],
    mut runs: Vec<Run>,
    why_unknown: Vec<Option<&'static str>>,
    malformed_lines: &[u64],
    torn_tail: bool,
) -> Branch {
    taint_branch(&mut runs, entries.iter(), malformed_lines, torn_tail);
    for (run, why) in runs.iter_mut().zip(why_unknown) {
        if let Some(why) = why {
            run.mark_unknown(why);
        }
    }
    Branch {
        leaf_id: entries.last().map(|e| e.id.clone()),
        runs,
        complete: true,
        session_name: None,
        saved_model: None,
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
            usage: None,
        }
    }

    /// The file cannot tell how this run stands (`reason` is for the owner's listing; the first
    /// reason given stays).
    pub fn mark_unknown(&mut self, reason: &str) {
        self.status = RunStatus::Unknown;
        self.unknown_reason.get_or_insert_with(|| reason.to_owned());
    }
}

// ---- usage per run (attributed by `crate::usage`) ----

/// Where a run's usage was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// The usage each assistant message carries (Pi, Claude Code).
    AssistantMessages,
    /// The running totals of the session's `token_count` events (Codex).
    TokenCountEvents,
    /// The records of each model call (Copilot CLI's `session.usage_record`).
    UsageRecords,
}

impl UsageSource {
    pub fn as_str(self) -> &'static str {
        match self {
            UsageSource::AssistantMessages => "assistant_messages",
            UsageSource::TokenCountEvents => "token_count_events",
            UsageSource::UsageRecords => "usage_records",
        }
    }
}

/// One model's share of a run's usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelUsage {
    pub model: String,
    pub tokens: crate::model::Tokens,
}

/// A run's usage: in all and per model, how many model calls reported it, and where it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunUsage {
    pub total: crate::model::Tokens,
    /// In order of first use.
    pub by_model: Vec<ModelUsage>,
    /// Model calls (responses, or `token_count` events) counted.
    pub calls: u64,
    pub source: UsageSource,
}

impl RunUsage {
    pub(crate) fn new(source: UsageSource) -> RunUsage {
        RunUsage {
            total: crate::model::Tokens::default(),
            by_model: Vec::new(),
            calls: 0,
            source,
        }
    }

    pub(crate) fn add(&mut self, model: Option<String>, tokens: crate::model::Tokens) {
        self.total = self.total.plus(tokens);
        self.calls += 1;
        let model = model.unwrap_or_else(|| "unknown".to_owned());
        match self.by_model.iter_mut().find(|m| m.model == model) {
            Some(m) => m.tokens = m.tokens.plus(tokens),
            None => self.by_model.push(ModelUsage { model, tokens }),
        }
    }
}
