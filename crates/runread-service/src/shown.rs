//! What the owner is shown of a run outside a tool call: the run list (`runread runs`, the
//! console's Runs page), a run page's facts, what `grant` and `demo` print.
//!
//! One rule for all of them, the same as for everything a reader is served: every string the
//! agent wrote is masked with the known secrets of now (a secret added after ingest included),
//! and every time it wrote is shown only as the instant it names ([`agent_time`]). The prompt
//! preview is not in the store (it holds no text of a conversation): it is read back from the
//! session file when shown, checked against the digest its line had at ingest, masked whole and
//! only then cut, never inside a mask and never ending in the start of a secret.

use runread_core::limits::{PROMPT_PREVIEW_LINE_MAX_BYTES, PROMPT_PREVIEW_MAX_CHARS};
use runread_core::redact::Redactor;
use runread_core::timefmt::agent_time;
use runread_core::{ErrorCode, Target};
use runread_store::{Grant, Reader, RunRecord};

use crate::Service;
use crate::source::{Opened, Source};

/// A run's prompt as the owner's listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// Its first [`PROMPT_PREVIEW_MAX_CHARS`] characters on one line, masked (`…` when cut).
    Text(String),
    /// The prompt has no text (an image alone), or the run has no prompt line.
    Empty,
    /// The session file no longer holds the prompt's line as it was indexed.
    FileChanged,
    /// The prompt's line is over [`PROMPT_PREVIEW_LINE_MAX_BYTES`].
    TooLong,
}

impl Prompt {
    /// The preview's text, or what stands in for it, for a table cell.
    pub fn shown(&self) -> &str {
        match self {
            Prompt::Text(t) => t,
            Prompt::Empty => "(no prompt text)",
            Prompt::FileChanged => "(session file changed since ingest)",
            Prompt::TooLong => "(prompt too long to preview)",
        }
    }

    /// The preview's text, if there is one (`--json`'s `prompt`).
    pub fn text(&self) -> Option<&str> {
        match self {
            Prompt::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// A run as the owner is shown it.
#[derive(Debug, Clone)]
pub struct ShownRun {
    /// The record with every string the agent wrote masked and every time it wrote normalized
    /// (or `None`): render this, never the record from the store.
    pub record: RunRecord,
    pub prompt: Prompt,
    /// What a reader would be told of its answer now ([`Service::answer_state`]).
    pub answer_state: &'static str,
    /// The readers (their names) whose calls wait for this run now (`wait_for_run`), from any
    /// process on this store; a reader waiting twice is named twice.
    pub waiting: Vec<String>,
}

impl ShownRun {
    /// The readers waiting on the run, each named once, with how many of its calls wait when
    /// more than one: `alice, ci-bot (×3)`. Empty when nobody waits.
    pub fn waiting_summary(&self) -> String {
        let mut counted: Vec<(&str, usize)> = Vec::new();
        for n in &self.waiting {
            match counted.iter_mut().find(|(m, _)| *m == n.as_str()) {
                Some((_, c)) => *c += 1,
                None => counted.push((n, 1)),
            }
        }
        counted
            .iter()
            .map(|(n, c)| match c {
                1 => (*n).to_owned(),
                c => format!("{n} (×{c})"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Service {
    /// The runs as the owner is shown them, in the order given. Fails closed: when the known
    /// secrets cannot be read, nothing is shown (`unavailable`).
    pub fn shown_runs(
        &self,
        runs: Vec<RunRecord>,
        now_ms: i64,
    ) -> Result<Vec<ShownRun>, ErrorCode> {
        let redactor = self.secrets.redactor()?;
        let waits = self
            .store
            .live_waits(now_ms)
            .map_err(Service::unavailable)?;
        let names: std::collections::HashMap<String, String> = if waits.is_empty() {
            Default::default()
        } else {
            self.store
                .readers()
                .map_err(Service::unavailable)?
                .into_iter()
                .map(|r| (r.id, r.name))
                .collect()
        };
        // Runs of one session come together in a listing: its file is opened once for them.
        let mut open: Option<(String, Result<Opened, ()>)> = None;
        let mut shown = Vec::with_capacity(runs.len());
        for run in runs {
            if open
                .as_ref()
                .is_none_or(|(path, _)| *path != run.session_path)
            {
                let opened = Source::of(&run).open().map_err(|_| ());
                open = Some((run.session_path.clone(), opened));
            }
            let prompt = match open.as_ref().map(|(_, o)| o) {
                Some(Ok(opened)) => prompt_of(&run, opened, &redactor),
                _ => Prompt::FileChanged,
            };
            let waiting = waits
                .iter()
                .filter(|w| {
                    w.session_id == run.target.session_id
                        && w.generation == run.target.generation
                        && w.run_id == run.target.run_id
                })
                .filter_map(|w| names.get(&w.reader_id).cloned())
                .collect();
            shown.push(ShownRun {
                waiting,
                answer_state: self.answer_state(&run, now_ms),
                record: masked_record(run, &redactor),
                prompt,
            });
        }
        Ok(shown)
    }

    /// One run as the owner is shown it (see [`Service::shown_runs`]).
    pub fn shown_run(&self, run: RunRecord, now_ms: i64) -> Result<ShownRun, ErrorCode> {
        self.shown_runs(vec![run], now_ms)?
            .pop()
            .ok_or(ErrorCode::Unavailable)
    }

    /// Grants as the owner is shown them: the target ids their agent wrote masked.
    pub fn shown_grants(&self, mut grants: Vec<Grant>) -> Result<Vec<Grant>, ErrorCode> {
        self.mask_targets(grants.iter_mut().map(|g| &mut g.target))?;
        Ok(grants)
    }

    /// The live readers as the owner is shown them (`runread reader list`, the console's Readers
    /// page), oldest first: each with its grants live at `now_ms` (newest first, their targets
    /// masked) and when its key last made a call.
    pub fn shown_readers(&self, now_ms: i64) -> Result<Vec<ShownReader>, ErrorCode> {
        let store = &self.store;
        let mut grants = store.grants().map_err(Service::unavailable)?;
        grants.retain(|g| g.is_live(now_ms));
        grants.reverse();
        let grants = self.shown_grants(grants)?;
        let last_reads = store.reader_last_reads().map_err(Service::unavailable)?;
        Ok(store
            .readers()
            .map_err(Service::unavailable)?
            .into_iter()
            .filter(|r| r.removed_at_ms.is_none())
            .map(|reader| ShownReader {
                live: grants
                    .iter()
                    .filter(|g| g.reader_id == reader.id)
                    .cloned()
                    .collect(),
                last_read_ms: last_reads
                    .iter()
                    .find(|(id, _)| *id == reader.id)
                    .map(|(_, at)| *at),
                reader,
            })
            .collect())
    }

    /// Targets as the owner is shown them (a page of start records' in the audit), masked in
    /// place with one redactor for the whole page.
    pub fn mask_targets<'a>(
        &self,
        targets: impl IntoIterator<Item = &'a mut Target>,
    ) -> Result<(), ErrorCode> {
        let redactor = self.secrets.redactor()?;
        for t in targets {
            mask_target(t, &redactor);
        }
        Ok(())
    }
}

/// A live reader as the owner is shown it ([`Service::shown_readers`]).
pub struct ShownReader {
    pub reader: Reader,
    /// Its grants live now, newest first, their targets masked.
    pub live: Vec<Grant>,
    /// When its key last made a call.
    pub last_read_ms: Option<i64>,
}

/// The ids in `target` its agent chose (the session's and the run's), masked.
fn mask_target(target: &mut Target, redactor: &Redactor) {
    target.session_id = redactor.mask(&target.session_id);
    target.run_id = redactor.mask(&target.run_id);
}

/// `run` with the strings its agent wrote masked and its agent-written times normalized.
fn masked_record(mut run: RunRecord, redactor: &Redactor) -> RunRecord {
    mask_target(&mut run.target, redactor);
    let r = &mut run.run;
    r.run_id = redactor.mask(&r.run_id);
    r.final_entry_id = r.final_entry_id.as_deref().map(|s| redactor.mask(s));
    r.run_models = r.run_models.iter().map(|m| redactor.mask(m)).collect();
    r.started_at = agent_time(r.started_at.as_deref());
    r.ended_at = agent_time(r.ended_at.as_deref());
    run.session_path = redactor.mask(&run.session_path);
    run
}

/// The run's prompt read back from its open session file.
fn prompt_of(run: &RunRecord, opened: &Opened, redactor: &Redactor) -> Prompt {
    let Some(line) = &run.run.prompt_line else {
        return Prompt::Empty;
    };
    if line.bytes > PROMPT_PREVIEW_LINE_MAX_BYTES {
        return Prompt::TooLong;
    }
    match opened.view(line) {
        Ok(view) if view.body.trim().is_empty() => Prompt::Empty,
        Ok(view) => Prompt::Text(preview(&view.body, redactor)),
        Err(_) => Prompt::FileChanged,
    }
}

/// The first [`PROMPT_PREVIEW_MAX_CHARS`] characters of `text` on one line. Masked whole before
/// it is cut, so a secret the cut would split is already a mask; the cut never falls inside a
/// mask and never leaves the start of a secret at the end.
pub(crate) fn preview(text: &str, redactor: &Redactor) -> String {
    let folded = redactor
        .mask(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // Folding whitespace can join a secret that had whitespace in it: mask the folded text too.
    let one_line = redactor.mask(&folded);
    match one_line.char_indices().nth(PROMPT_PREVIEW_MAX_CHARS) {
        None => one_line,
        Some((cut, _)) => format!("{}…", redactor.cut_for_release(&one_line, cut)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "tok-0123456789abcdef0123456789ab";

    fn redactor() -> Redactor {
        Redactor::new([SECRET]).unwrap()
    }

    #[test]
    fn a_secret_anywhere_in_the_prompt_is_masked_before_the_cut() {
        let r = redactor();
        assert_eq!(
            preview(&format!("deploy with token {SECRET} please"), &r),
            "deploy with token [redacted] please"
        );
        // The secret straddles the 80th character: none of it shows, not its first bytes.
        let pad = "x".repeat(PROMPT_PREVIEW_MAX_CHARS - 19);
        let p = preview(&format!("{pad} {SECRET} and more text after it"), &r);
        assert!(!p.contains("tok-"), "{p}");
        assert!(p.ends_with('…'), "{p}");
    }

    #[test]
    fn the_cut_never_leaves_the_start_of_a_secret_or_half_a_mask() {
        let r = redactor();
        for at in 0..PROMPT_PREVIEW_MAX_CHARS + 4 {
            // A whole secret at every position around the cut: never any of it.
            let masked = preview(
                &format!("{}{SECRET}{}", "y".repeat(at), " z".repeat(60)),
                &r,
            );
            assert!(!masked.contains("tok-"), "at {at}: {masked}");
            assert!(
                !masked.trim_end_matches('…').ends_with("[redac"),
                "at {at}: a mask is whole or absent: {masked}"
            );
            // The start of a secret (text that might go on to be one) never ends a cut preview.
            let cut = preview(&format!("{}{} and on", "y".repeat(at), &SECRET[..12]), &r);
            if let Some(head) = cut.strip_suffix('…') {
                for k in 1..SECRET.len() {
                    assert!(!head.ends_with(&SECRET[..k]), "at {at}: {cut}");
                }
            }
        }
    }

    #[test]
    fn the_preview_is_at_most_its_bound_on_one_line() {
        let r = redactor();
        let exact = "a".repeat(PROMPT_PREVIEW_MAX_CHARS);
        assert_eq!(preview(&exact, &r), exact, "N characters: whole");
        let over = "a".repeat(PROMPT_PREVIEW_MAX_CHARS + 1);
        assert_eq!(preview(&over, &r), format!("{exact}…"), "N+1: cut");
        assert_eq!(preview("two\n\nlines\there", &r), "two lines here");
    }
}
