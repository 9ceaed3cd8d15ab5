//! Usage per run: the tokens each run's model calls reported, from the numbers the index keeps
//! (never text), in the neutral form every agent's runs share.
//!
//! Where each agent records them:
//! - Pi: `usage` on each assistant message (`input`, `output`, `cacheRead`, `cacheWrite`, and
//!   from 1.x `reasoning`, within `output`).
//! - Claude Code: `message.usage` on each assistant line (`input_tokens`, `output_tokens`,
//!   `cache_read_input_tokens`, `cache_creation_input_tokens`); one response is written one line
//!   per content block, each with the response's usage so far: it is counted once, from its last
//!   line.
//! - Gemini CLI: `tokens` on each `gemini` message (`input`, `output`, `cached`, `thoughts`); a
//!   response written again (with its tool calls) is counted once, from the record's last line.
//! - OpenCode: `tokens` on each assistant message (`input`, `output`, `reasoning`, `cache.read`,
//!   `cache.write`), counted once, from the message's last record.
//! - Copilot CLI: a `session.usage_record` per model call (`inputTokens`, `outputTokens`,
//!   `cacheReadTokens`, `cacheWriteTokens`), its subagents' included: a run's usage is the
//!   records from its prompt to the next prompt.
//! - Codex: `token_count` events, whose `info.total_token_usage` is the session's running total
//!   (`input_tokens`, `cached_input_tokens`, `cache_write_input_tokens`, `output_tokens`,
//!   `reasoning_output_tokens`): a run's usage is the total at its last event less the total
//!   before the run.

use crate::model::{EntrySummary, Tokens};
use crate::profile::UsageKind;
use crate::runs::Run;

/// Pi's names for a usage object's counts (input, output, cache read, cache write, reasoning;
/// Pi 1.x records reasoning, within output).
pub const PI_NAMES: [Option<&str>; 5] = [
    Some("input"),
    Some("output"),
    Some("cacheRead"),
    Some("cacheWrite"),
    Some("reasoning"),
];
/// Claude Code's.
pub const CLAUDE_NAMES: [Option<&str>; 5] = [
    Some("input_tokens"),
    Some("output_tokens"),
    Some("cache_read_input_tokens"),
    Some("cache_creation_input_tokens"),
    None,
];
/// Codex's (`total_token_usage`).
pub const CODEX_NAMES: [Option<&str>; 5] = [
    Some("input_tokens"),
    Some("output_tokens"),
    Some("cached_input_tokens"),
    Some("cache_write_input_tokens"),
    Some("reasoning_output_tokens"),
];

/// Gemini CLI's (`tokens` on each `gemini` message: `input` counts cached input, `output` does
/// not count `thoughts`).
pub const GEMINI_NAMES: [Option<&str>; 5] = [
    Some("input"),
    Some("output"),
    Some("cached"),
    None,
    Some("thoughts"),
];

/// Copilot CLI's (`usage` of each `session.usage_record`: one model call's; whether
/// `inputTokens` counts cached input the recordings, with none cached, do not show).
pub const COPILOT_NAMES: [Option<&str>; 5] = [
    Some("inputTokens"),
    Some("outputTokens"),
    Some("cacheReadTokens"),
    Some("cacheWriteTokens"),
    None,
];

pub use crate::runs::{ModelUsage, RunUsage, UsageSource};

/// Sets each run's usage from `entries` (the session's, in file order), kept as `kind`. A run
/// none of whose calls reported usage (or indexed before usage was) has none.
pub fn attribute(kind: UsageKind, entries: &[EntrySummary], runs: &mut [Run]) {
    match kind {
        UsageKind::PerMessage { provider_in_model } => {
            per_message(provider_in_model, entries, runs)
        }
        UsageKind::RunningTotals => running_totals(entries, runs),
        UsageKind::PerCallRecords => per_call_records(entries, runs),
    }
}

/// Usage kept on each assistant message: the usage of the run's assistant messages, each
/// response once.
fn per_message(provider_in_model: bool, entries: &[EntrySummary], runs: &mut [Run]) {
    let by_line: std::collections::HashMap<u64, &EntrySummary> =
        entries.iter().map(|e| (e.line, e)).collect();
    for run in runs.iter_mut() {
        let mut usage = RunUsage::new(UsageSource::AssistantMessages);
        let mut lines = run
            .message_lines
            .iter()
            .filter_map(|l| by_line.get(l))
            .peekable();
        // The current event's last line that carries usage.
        let mut carrier: Option<&EntrySummary> = None;
        while let Some(e) = lines.next() {
            if e.usage.is_some() {
                carrier = Some(e);
            }
            // A response written as several lines (one group): counted once, from the last of
            // them with usage (Claude Code's each carry it; OpenCode's message record does, its
            // parts do not, and a part re-written later can follow the record).
            if e.group.is_some() && lines.peek().is_some_and(|n| n.group == e.group) {
                continue;
            }
            let Some(e) = carrier.take() else { continue };
            if let Some(tokens) = e.usage.filter(|_| !e.synthetic) {
                let model = match (&e.provider, &e.model) {
                    (Some(p), Some(m)) if provider_in_model => Some(format!("{p}/{m}")),
                    (_, m) => m.clone(),
                };
                usage.add(model, tokens);
            }
        }
        run.usage = (usage.calls > 0).then_some(usage);
    }
}

/// Usage kept in records of their own, one per model call: a run's share is each record from its
/// first line up to the next run's first line, counted once.
fn per_call_records(entries: &[EntrySummary], runs: &mut [Run]) {
    let mut starts: Vec<u64> = runs.iter().map(|r| r.start_line).collect();
    starts.sort_unstable();
    for run in runs.iter_mut() {
        let end = starts
            .iter()
            .find(|s| **s > run.start_line)
            .copied()
            .unwrap_or(u64::MAX);
        let mut usage = RunUsage::new(UsageSource::UsageRecords);
        for e in entries
            .iter()
            .filter(|e| (run.start_line..end).contains(&e.line))
        {
            if let Some(tokens) = e.usage {
                usage.add(e.model.clone(), tokens);
            }
        }
        run.usage = (usage.calls > 0).then_some(usage);
    }
}

/// Usage kept as running totals: each run's share of the session's running totals — the total at the run's last
/// `token_count` event less the total at the last one before the run (events after a run's
/// first line and before the next run's belong to it).
fn running_totals(entries: &[EntrySummary], runs: &mut [Run]) {
    let totals: Vec<(u64, Tokens)> = entries
        .iter()
        .filter_map(|e| Some((e.line, e.usage?)))
        .collect();
    let mut starts: Vec<u64> = runs.iter().map(|r| r.start_line).collect();
    starts.sort_unstable();
    for run in runs.iter_mut() {
        let end = starts
            .iter()
            .find(|s| **s > run.start_line)
            .copied()
            .unwrap_or(u64::MAX);
        let before = totals
            .iter()
            .rev()
            .find(|(l, _)| *l < run.start_line)
            .map_or(Tokens::default(), |(_, t)| *t);
        let within: Vec<Tokens> = totals
            .iter()
            .filter(|(l, _)| (run.start_line..end).contains(l))
            .map(|(_, t)| *t)
            .collect();
        run.usage = within.last().map(|last| {
            let mut usage = RunUsage::new(UsageSource::TokenCountEvents);
            usage.add(run.run_models.last().cloned(), last.since(before));
            usage.calls = within.len() as u64;
            usage
        });
    }
}
