//! The owner's search of their runs by words in the prompt and the final answer: over the
//! session files through the index (the store keeps no text to search), newest first, bounded in
//! runs examined, bytes read and results, and always on the masked text — a known secret's value
//! finds nothing, so a search cannot tell which runs hold it.

use runread_core::ErrorCode;
use runread_core::redact::{MaskedView, Redactor};
use runread_store::{RunFilter, RunRecord};

use crate::evidence::source::{Opened, Source};
use crate::owner::Owner;
use crate::owner::shown::ShownRun;

pub use crate::evidence::values::{SEARCH_QUERY_MAX_BYTES, SEARCH_WORDS_MAX, words};
/// Most runs one search examines, newest first; the rest are left unsearched, and said so
/// ([`Owner::search_every_run`] examines them all).
pub const SEARCH_RUNS_MAX: u64 = 2_000;
/// Most bytes of session lines one search reads back (prompts and answers).
pub const SEARCH_READ_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Most runs one search returns.
pub const SEARCH_RESULTS_MAX: usize = 50;
/// Runs read from the store at a time: what a search holds in memory besides its results.
pub const SEARCH_PAGE: u32 = 200;

/// The bounds a search runs within ([`SEARCH_RUNS_MAX`], [`SEARCH_READ_MAX_BYTES`],
/// [`SEARCH_RESULTS_MAX`] unless a test says otherwise).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub runs_max: u64,
    pub read_max_bytes: u64,
    pub results_max: usize,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            runs_max: SEARCH_RUNS_MAX,
            read_max_bytes: SEARCH_READ_MAX_BYTES,
            results_max: SEARCH_RESULTS_MAX,
        }
    }
}

/// What a search found, and how far it looked.
#[derive(Debug, Clone)]
pub struct Found {
    /// The runs whose prompt or answer holds every word, newest first, as the owner is shown them.
    pub runs: Vec<MaskedView<ShownRun>>,
    /// Runs examined.
    pub examined: u64,
    /// Sessions the runs examined belong to.
    pub sessions: u64,
    /// Runs the filter names in all.
    pub total: u64,
    /// Every run the filter names was examined (no bound cut the search short).
    pub complete: bool,
}

impl Owner {
    /// The runs `filter` names whose prompt or final answer, masked with the known secrets of
    /// now, holds every word of `query` (case-insensitive), newest first; see the bounds above.
    pub fn search_runs(
        &self,
        query: &str,
        filter: &RunFilter,
        now_ms: i64,
    ) -> Result<Found, ErrorCode> {
        self.search_runs_within(query, filter, now_ms, Bounds::default())
    }

    /// [`Owner::search_runs`] within `bounds`.
    pub fn search_runs_within(
        &self,
        query: &str,
        filter: &RunFilter,
        now_ms: i64,
        bounds: Bounds,
    ) -> Result<Found, ErrorCode> {
        self.search(query, filter, now_ms, bounds, &mut |_, _| {})
    }

    /// [`Owner::search_runs`] over every run `filter` names, however many (the owner asked at a
    /// terminal and may wait), read [`SEARCH_PAGE`] runs at a time: bounded only in results.
    /// `progress` hears (runs examined, runs in all) after each page.
    pub fn search_every_run(
        &self,
        query: &str,
        filter: &RunFilter,
        now_ms: i64,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Found, ErrorCode> {
        let bounds = Bounds {
            runs_max: u64::MAX,
            read_max_bytes: u64::MAX,
            results_max: SEARCH_RESULTS_MAX,
        };
        self.search(query, filter, now_ms, bounds, progress)
    }

    fn search(
        &self,
        query: &str,
        filter: &RunFilter,
        now_ms: i64,
        bounds: Bounds,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Found, ErrorCode> {
        let words = words(query)?;
        let redactor = self.reading.secrets.redactor()?;
        let store = &self.reading.store;
        let total = store
            .runs_count(filter)
            .map_err(crate::evidence::unavailable)?;
        let mut budget = bounds.read_max_bytes;
        let (mut examined, mut hits, mut cut) = (0u64, Vec::new(), false);
        let mut sessions = std::collections::HashSet::new();
        // Runs of one session come together newest first more often than not: its file is
        // opened once for them.
        let mut open: Option<(String, Option<Opened>)> = None;
        'pages: while examined < total.min(bounds.runs_max) {
            let page = store
                .runs_page(filter, SEARCH_PAGE, examined)
                .map_err(crate::evidence::unavailable)?;
            if page.is_empty() {
                break;
            }
            for run in page {
                if examined >= bounds.runs_max || hits.len() >= bounds.results_max {
                    cut = true;
                    break 'pages;
                }
                if open
                    .as_ref()
                    .is_none_or(|(path, _)| *path != run.session_path)
                {
                    open = Some((run.session_path.clone(), Source::of(&run).open().ok()));
                }
                // A file gone (or on another host): the run's own sealed copy, kept or shared.
                let sealed = match open.as_ref().and_then(|(_, o)| o.as_ref()) {
                    Some(_) => None,
                    None => crate::evidence::snapshot::kept(&self.reading, &run)?
                        .and_then(|copy| Source::of(&run).or_snapshot(Some(copy)).open().ok()),
                };
                let opened = sealed
                    .as_ref()
                    .or_else(|| open.as_ref().and_then(|(_, o)| o.as_ref()));
                let Some(text) = searchable(&run, opened, &redactor, &mut budget) else {
                    cut = true;
                    break 'pages;
                };
                examined += 1;
                sessions.insert(run.target.session_id.clone());
                if words.iter().all(|w| text.contains(w.as_str())) {
                    hits.push(run);
                }
            }
            progress(examined, total);
        }
        Ok(Found {
            runs: self.shown_runs(hits, now_ms)?,
            complete: !cut && examined >= total,
            examined,
            sessions: sessions.len() as u64,
            total,
        })
    }
}

/// The run's prompt and answer from its open session file, masked and lowercased, read within
/// `budget` bytes of lines (`None`: the budget is spent). A line that does not read back as
/// indexed, or a file that did not open, is left out.
fn searchable(
    run: &RunRecord,
    opened: Option<&Opened>,
    redactor: &Redactor,
    budget: &mut u64,
) -> Option<String> {
    let r = &run.run;
    let lines: Vec<_> = r.prompt_line.iter().chain(r.final_lines.iter()).collect();
    let bytes: u64 = lines.iter().map(|l| l.bytes).sum();
    *budget = budget.checked_sub(bytes)?;
    let Some(opened) = opened else {
        return Some(String::new());
    };
    let text: Vec<String> = lines.iter().filter_map(|l| texts(opened, l)).collect();
    Some(redactor.mask(&text.join("\n")).to_lowercase())
}

/// What a line holds that a search may look at: its body (a prompt) and its answer text.
fn texts(opened: &Opened, line: &runread_sessions::LineRef) -> Option<String> {
    let view = opened.view(line).ok()?;
    Some(match view.answer {
        Some(answer) => format!("{}\n{answer}", view.body),
        None => view.body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_bounded_in_bytes_and_words() {
        assert_eq!(words("Crash  SUMMARIZE").unwrap(), ["crash", "summarize"]);
        assert!(words("   ").is_err());
        let at = ["w"; SEARCH_WORDS_MAX].join(" ");
        assert_eq!(words(&at).unwrap().len(), SEARCH_WORDS_MAX);
        assert!(words(&format!("{at} w")).is_err(), "one word more");
        let long = "x".repeat(SEARCH_QUERY_MAX_BYTES);
        assert!(words(&long).is_ok());
        assert!(words(&format!("{long}x")).is_err(), "one byte more");
    }
}
