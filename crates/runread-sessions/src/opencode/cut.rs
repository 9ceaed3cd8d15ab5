//! OpenCode's runs, cut over the whole generation by replaying its records (see the module's doc
//! in `opencode/mod.rs`).

use std::collections::HashMap;

use super::role;
use super::{ABORTED_ERROR, NO_END, ROLE_UNCLEAR};
use crate::model::{EntryKind, EntrySummary, answer_digest};
use crate::runs::{Branch, FIRST_SEQUENCE, Run, RunStatus, in_order_branch, set_contexts};

/// Whether `e` is a message's record (its own event's group), not one of its parts.
fn is_message(e: &EntrySummary) -> bool {
    e.group.as_deref() == Some(e.id.as_str())
}

/// One run's records, each as last written.
struct RunRecords<'e> {
    /// The prompt's first line (where the run starts) and its last.
    first: &'e EntrySummary,
    user: &'e EntrySummary,
    /// The prompt's parts a reader is served, in id order.
    prompt: Vec<&'e EntrySummary>,
    /// The run's assistant messages in id order, each with its served parts in id order.
    assistants: Vec<(&'e EntrySummary, Vec<&'e EntrySummary>)>,
    /// The last line of any of its records.
    end_line: u64,
}

/// The runs of `entries` (in file order), each message and part as its last line says.
fn gather(entries: &[EntrySummary]) -> Vec<RunRecords<'_>> {
    let mut first: HashMap<&str, &EntrySummary> = HashMap::new();
    let mut last: HashMap<&str, &EntrySummary> = HashMap::new();
    for e in entries {
        first.entry(e.id.as_str()).or_insert(e);
        last.insert(e.id.as_str(), e);
    }
    let mut parts_of: HashMap<&str, Vec<&EntrySummary>> = HashMap::new();
    let mut assistants_of: HashMap<&str, Vec<&EntrySummary>> = HashMap::new();
    let mut users: Vec<&EntrySummary> = Vec::new();
    for e in last.values().copied() {
        if e.kind != EntryKind::Message {
            continue;
        }
        match (is_message(e), e.role.as_deref(), e.parent_id.as_deref()) {
            (true, Some(role::USER), _) => users.push(e),
            (true, Some(role::ASSISTANT), Some(p)) => assistants_of.entry(p).or_default().push(e),
            (false, _, Some(m)) => parts_of.entry(m).or_default().push(e),
            _ => {}
        }
    }
    for list in parts_of.values_mut().chain(assistants_of.values_mut()) {
        list.sort_by(|a, b| a.id.cmp(&b.id));
    }
    users.sort_by(|a, b| a.id.cmp(&b.id));
    let parts = |id: &str| parts_of.get(id).cloned().unwrap_or_default();
    users
        .into_iter()
        .map(|user| {
            let id = user.id.as_str();
            let assistants: Vec<(&EntrySummary, Vec<&EntrySummary>)> = assistants_of
                .get(id)
                .into_iter()
                .flatten()
                .map(|a| (*a, parts(&a.id)))
                .collect();
            let prompt = parts(id);
            let end_line = std::iter::once(user)
                .chain(prompt.iter().copied())
                .chain(
                    assistants
                        .iter()
                        .flat_map(|(a, p)| std::iter::once(*a).chain(p.iter().copied())),
                )
                .map(|e| e.line)
                .max()
                .unwrap_or(user.line);
            RunRecords {
                first: first.get(id).copied().unwrap_or(user),
                user,
                prompt,
                assistants,
                end_line,
            }
        })
        .collect()
}

/// A run's events as history serves them: its served records' last lines in file order (each
/// message's lines one event, by their group).
fn events_of<'e>(r: &RunRecords<'e>) -> Vec<&'e EntrySummary> {
    let mut events: Vec<&EntrySummary> = r.prompt.clone();
    for (a, parts) in &r.assistants {
        events.extend(parts.iter().copied());
        events.push(a);
    }
    events.sort_by_key(|e| e.line);
    events
}

/// Events `messages` make: consecutive lines of one group are one event.
fn events_in(messages: &[&EntrySummary]) -> u64 {
    let mut n = 0u64;
    let mut prev: Option<&str> = None;
    for e in messages {
        let g = e.group.as_deref();
        if g.is_none() || g != prev {
            n += 1;
        }
        prev = g;
    }
    n
}

/// Cuts `entries` (in file order) into runs, one per prompt in id order; each run's events are
/// its records' last lines.
///
/// `malformed_lines` taint the run open at that point of the log; `torn_tail` taints the last
/// (a log has none); a record of a type runread does not know makes the run it falls in `unknown`.
pub fn cut_runs(entries: &[EntrySummary], malformed_lines: &[u64], torn_tail: bool) -> Branch {
    let records = gather(entries);
    let events: Vec<Vec<&EntrySummary>> = records.iter().map(events_of).collect();
    let messages: Vec<&EntrySummary> = events.iter().flatten().copied().collect();
    let count = records.len();
    let mut runs = Vec::with_capacity(count);
    let mut why_unknown = Vec::with_capacity(count);
    let mut before = 0usize;
    for (n, (r, ev)) in records.iter().zip(&events).enumerate() {
        let (mut run, why) = run_of(r, ev, n + 1 == count);
        why_unknown.push(why);
        run.first_sequence = events_in(messages.get(..before).unwrap_or(&[])) + FIRST_SEQUENCE;
        set_contexts(&mut run, &messages, before, ev.len());
        before += ev.len();
        runs.push(run);
    }
    in_order_branch(entries, runs, why_unknown, malformed_lines, torn_tail)
}

/// One run of `r`, whose events are `events`; `last_run`: no run follows. With it, why the log
/// cannot say how the run stands (`None`: it says), for [`cut_runs`] to mark once a bad line's
/// reason is given.
fn run_of(
    r: &RunRecords<'_>,
    events: &[&EntrySummary],
    last_run: bool,
) -> (Run, Option<&'static str>) {
    let mut run = Run {
        start_line: r.first.line,
        end_line: r.end_line,
        started_at: r.first.timestamp.clone(),
        message_lines: events.iter().map(|e| e.line).collect(),
        prompt_line: r.prompt.first().and_then(|p| p.line_ref()),
        ..Run::running(r.user.id.clone())
    };
    for (a, _) in &r.assistants {
        if let Some(m) = &a.model
            && !run.run_models.contains(m)
        {
            run.run_models.push(m.clone());
        }
    }
    let roles_agree = r
        .prompt
        .iter()
        .all(|p| p.role.as_deref() == Some(role::USER))
        && r.assistants
            .iter()
            .flat_map(|(_, parts)| parts)
            .all(|p| p.role.as_deref() == Some(role::ASSISTANT));
    if !roles_agree {
        return (run, Some(ROLE_UNCLEAR));
    }
    let Some((last, parts)) = r.assistants.last() else {
        return (run, (!last_run).then_some(NO_END));
    };
    if last.api_error {
        run.status = if last.stop_reason.as_deref() == Some(ABORTED_ERROR) {
            RunStatus::Cancelled
        } else {
            RunStatus::Failed
        };
        run.ended_at = last.timestamp.clone();
        return (run, None);
    }
    match last.stop_reason.as_deref() {
        Some(end @ ("stop" | "length")) => {
            answered(&mut run, events, last, parts, end == "length");
            (run, None)
        }
        _ if last_run => {
            run.waiting_on_tool = parts.iter().any(|p| {
                p.has_tool_call && !matches!(p.stop_reason.as_deref(), Some("completed" | "error"))
            });
            (run, None)
        }
        _ => (run, Some(NO_END)),
    }
}

/// The run answered by `last` (its assistant message that ended on `stop` or `length`), whose
/// served parts are `parts`: its answer is their text, else the message's own empty answer.
fn answered(
    run: &mut Run,
    events: &[&EntrySummary],
    last: &EntrySummary,
    parts: &[&EntrySummary],
    truncated: bool,
) {
    run.status = RunStatus::Completed;
    run.ended_at = last.timestamp.clone();
    run.final_truncated = truncated;
    let texts: Vec<&EntrySummary> = parts
        .iter()
        .copied()
        .filter(|p| !p.has_tool_call && p.text_bytes > 0)
        .collect();
    let lines = if texts.is_empty() { vec![last] } else { texts };
    run.final_lines = lines.iter().filter_map(|e| e.line_ref()).collect();
    run.final_bytes =
        lines.iter().map(|e| e.text_bytes).sum::<u64>() + lines.len().saturating_sub(1) as u64;
    let digests: Option<Vec<&str>> = lines.iter().map(|e| e.text_sha256.as_deref()).collect();
    run.final_text_sha256 = digests.map(answer_digest);
    let final_entry = lines.last().copied().unwrap_or(last);
    run.final_entry_id = Some(final_entry.id.clone());
    run.final_message_sha256 = last.message_sha256.clone();
    let upto: Vec<&str> = events
        .iter()
        .take_while(|e| e.line <= final_entry.line)
        .map(|e| e.id.as_str())
        .collect();
    run.chain_len = upto.len() as u64;
    run.chain_sha256 = Some(runread_core::sha256_hex(upto.join("\n").as_bytes()));
}
