//! What the owner is shown of a run outside a tool call: the run list (`runread runs`, the
//! console's Runs page), a run page's facts, what `grant` and `demo` print.
//!
//! One rule for all of them, the same as for everything a reader is served: every string of the
//! view — the agent's and every other, those of a field added tomorrow included — is masked with
//! the known secrets of now (a secret added after ingest included), by the one type the console
//! and the CLI render ([`MaskedView`]: the whole view masked, not field by field); and every time
//! the agent wrote is shown only as the instant it names ([`agent_time`]). The prompt
//! preview is not in the store (it holds no text of a conversation): it is read back from the
//! session file when shown, checked against the digest its line had at ingest, masked whole and
//! only then cut, never inside a mask and never ending in the start of a secret.

use serde::{Deserialize, Serialize};

use runread_core::ErrorCode;
use runread_core::limits::PROMPT_PREVIEW_LINE_MAX_BYTES;

pub(crate) use crate::evidence::values::prompt_preview as preview;
use runread_core::redact::{MaskedView, Redactor};
use runread_core::timefmt::agent_time;
use runread_store::{Grant, Reader, Receipt, Refusal, RunRecord, StartMeta};

use crate::evidence::source::{Opened, Source};
use crate::owner::Owner;

/// A run's prompt as the owner's listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Prompt {
    /// Its first [`PROMPT_PREVIEW_MAX_CHARS`](runread_core::limits::PROMPT_PREVIEW_MAX_CHARS) characters on one line, masked (`…` when cut).
    Text(String),
    /// The prompt has no text (an image alone), or the run has no prompt line.
    Empty,
    /// The session file is there but no longer holds the prompt's line as it was indexed.
    FileChanged,
    /// The session file is not there to read the prompt from, and no copy sealed for sharing
    /// holds its line: what happened to the file ([`SessionFile`]) stands in for it.
    NotThere(SessionFile),
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
            Prompt::NotThere(file) => file.placeholder(),
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

/// Where a run's session file stands, as the owner is shown it: said rather than left to a
/// prompt reading "changed" when the agent's cleanup deleted the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionFile {
    /// There, the object ingest read (each line is still checked against its digest when read).
    There,
    /// There, but not the file ingest read, or no longer holding the run as indexed.
    Changed,
    /// Gone from this host's disk (the agent's cleanup, a move), and no copy of the run is kept:
    /// nothing of its text can be read any more.
    GoneNotKept,
    /// Gone, and the run is read from the copy sealed when it was shared (its snapshot), until
    /// its last grant ends.
    GoneSealedForSharing,
    /// Gone, and the run is read from the copy the owner kept (`runread keep`), until dropped.
    GoneKept,
    /// The session was ingested by another host sharing the store: its file is not visible
    /// from here (not gone); a copy sealed for sharing, if any, is read instead.
    OnAnotherHost,
}

impl SessionFile {
    /// The state's wire word (`--json`'s `sessionFile`).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionFile::There => "there",
            SessionFile::Changed => "changed",
            SessionFile::GoneNotKept => "gone_not_kept",
            SessionFile::GoneSealedForSharing => "gone_sealed_for_sharing",
            SessionFile::GoneKept => "gone_kept",
            SessionFile::OnAnotherHost => "on_another_host",
        }
    }

    /// What the owner is told of it, or `None` when there is nothing to tell (the file is there
    /// as ingested).
    pub fn says(self) -> Option<&'static str> {
        match self {
            SessionFile::There => None,
            SessionFile::Changed => Some("file changed since ingest"),
            SessionFile::GoneNotKept => Some("file gone, not kept"),
            SessionFile::GoneSealedForSharing => Some("file gone, sealed for sharing"),
            SessionFile::GoneKept => Some("file gone, kept"),
            SessionFile::OnAnotherHost => Some("file on another host"),
        }
    }

    /// What stands in a prompt's place when the file cannot give it.
    fn placeholder(self) -> &'static str {
        match self {
            SessionFile::There | SessionFile::Changed => "(session file changed since ingest)",
            SessionFile::GoneNotKept => "(file gone, not kept)",
            SessionFile::GoneSealedForSharing => "(file gone, sealed for sharing)",
            SessionFile::GoneKept => "(file gone, kept)",
            SessionFile::OnAnotherHost => "(file on another host)",
        }
    }

    /// The file is not there to read (gone, or on another host).
    fn not_there(self) -> bool {
        matches!(
            self,
            SessionFile::GoneNotKept
                | SessionFile::GoneSealedForSharing
                | SessionFile::GoneKept
                | SessionFile::OnAnotherHost
        )
    }
}

/// A run as the owner is shown it (always inside a [`MaskedView`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShownRun {
    /// The record, every time the agent wrote normalized (or `None`).
    pub record: RunRecord,
    pub prompt: Prompt,
    /// Where its session file stands now.
    pub file: SessionFile,
    /// What a reader would be told of its answer now ([`Owner::answer_state`]).
    pub answer_state: String,
    /// The owner kept it (`runread keep`): a sealed copy of its whole evidence is in the store.
    pub kept: bool,
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

impl Owner {
    /// The runs as the owner is shown them, in the order given. Fails closed: when the known
    /// secrets cannot be read, nothing is shown (`unavailable`).
    pub fn shown_runs(
        &self,
        runs: Vec<RunRecord>,
        now_ms: i64,
    ) -> Result<Vec<MaskedView<ShownRun>>, ErrorCode> {
        let redactor = self.reading.secrets.redactor()?;
        let waits = self
            .reading
            .store
            .live_waits(now_ms)
            .map_err(crate::evidence::unavailable)?;
        let names: std::collections::HashMap<String, String> = if waits.is_empty() {
            Default::default()
        } else {
            self.reading
                .store
                .readers()
                .map_err(crate::evidence::unavailable)?
                .into_iter()
                .map(|r| (r.id, r.name))
                .collect()
        };
        // Which runs are kept: one read for the listing, not one per run.
        let kept = self.kept_targets()?;
        // Runs of one session come together in a listing: its file is opened once for them.
        let mut open: Option<(String, Result<Opened, SessionFile>)> = None;
        let mut shown = Vec::with_capacity(runs.len());
        for run in runs {
            if open
                .as_ref()
                .is_none_or(|(path, _)| *path != run.session_path)
            {
                open = Some((run.session_path.clone(), self.open_file(&run)?));
            }
            let (prompt, file) = match open.as_ref().map(|(_, o)| o) {
                Some(Ok(opened)) => match prompt_of(&run, opened, &redactor) {
                    Prompt::FileChanged => (Prompt::FileChanged, SessionFile::Changed),
                    p => (p, SessionFile::There),
                },
                Some(Err(file)) => self.prompt_not_there(&run, *file, &redactor)?,
                None => (Prompt::FileChanged, SessionFile::Changed),
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
            let t = &run.target;
            let kept = kept.contains(&(t.session_id.clone(), t.generation, t.run_id.clone()));
            let view = ShownRun {
                waiting,
                file,
                kept,
                answer_state: self.answer_state(&run, now_ms).to_owned(),
                record: with_agent_times(run),
                prompt,
            };
            shown.push(masked(view, &redactor)?);
        }
        Ok(shown)
    }

    /// The runs the owner kept, by session, generation and run id.
    fn kept_targets(&self) -> Result<std::collections::HashSet<(String, u64, String)>, ErrorCode> {
        Ok(self
            .reading
            .store
            .kept_runs()
            .map_err(crate::evidence::unavailable)?
            .into_iter()
            .map(|k| (k.summary.session_id, k.summary.generation, k.summary.run_id))
            .collect())
    }

    /// `run`'s session file, opened; or, when it does not open, why: there but changed, gone,
    /// or on another host. A session is another host's when this host's index holds no session
    /// of its id at its path (on PostgreSQL sessions are per host; SQLite holds one host's).
    fn open_file(&self, run: &RunRecord) -> Result<Result<Opened, SessionFile>, ErrorCode> {
        if let Ok(opened) = Source::of(run).open() {
            return Ok(Ok(opened));
        }
        let ours = self
            .reading
            .store
            .session_by_path(&run.session_path)
            .map_err(crate::evidence::unavailable)?
            .is_some_and(|s| s.session_id == run.target.session_id);
        let path = std::path::Path::new(&run.session_path);
        Ok(Err(if !ours {
            SessionFile::OnAnotherHost
        } else if runread_sessions::session_identity(run.agent, path)
            == Err(runread_sessions::ReadError::Missing)
        {
            // Whether it is read from a share's snapshot is the run's own ([`Self::prompt_not_there`]).
            SessionFile::GoneNotKept
        } else {
            SessionFile::Changed
        }))
    }

    /// The prompt of `run`, whose file did not open (`file` says why), and where its file
    /// stands: a file gone or on another host is read from the run's snapshot when one holds
    /// the run as indexed, as a reader would be served.
    fn prompt_not_there(
        &self,
        run: &RunRecord,
        file: SessionFile,
        redactor: &Redactor,
    ) -> Result<(Prompt, SessionFile), ErrorCode> {
        if !file.not_there() {
            return Ok((Prompt::FileChanged, file));
        }
        let Some(snapshot) = crate::evidence::snapshot::kept(&self.reading, run)? else {
            return Ok((Prompt::NotThere(file), file));
        };
        let file = match file {
            SessionFile::OnAnotherHost => SessionFile::OnAnotherHost,
            _ if snapshot.is_kept() => SessionFile::GoneKept,
            _ => SessionFile::GoneSealedForSharing,
        };
        let prompt = match Source::of(run).or_snapshot(Some(snapshot)).open() {
            // A snapshot holds the prompt's line only when `metadata` was shared.
            Ok(opened) => match prompt_of(run, &opened, redactor) {
                Prompt::FileChanged => Prompt::NotThere(file),
                p => p,
            },
            Err(_) => Prompt::NotThere(file),
        };
        Ok((prompt, file))
    }

    /// One run as the owner is shown it (see [`Owner::shown_runs`]).
    pub fn shown_run(
        &self,
        run: RunRecord,
        now_ms: i64,
    ) -> Result<MaskedView<ShownRun>, ErrorCode> {
        self.shown_runs(vec![run], now_ms)?
            .pop()
            .ok_or(ErrorCode::Unavailable)
    }

    /// Grants as the owner is shown them.
    pub fn shown_grants(&self, grants: Vec<Grant>) -> Result<Vec<MaskedView<Grant>>, ErrorCode> {
        let redactor = self.reading.secrets.redactor()?;
        MaskedView::each(grants, &redactor).map_err(|_| ErrorCode::Unavailable)
    }

    /// The live readers as the owner is shown them (`runread reader list`, the console's Readers
    /// page), oldest first: each with its grants live at `now_ms` and those stale (newest
    /// first), and when its key last made a call.
    pub fn shown_readers(&self, now_ms: i64) -> Result<Vec<MaskedView<ShownReader>>, ErrorCode> {
        let store = &self.reading.store;
        let mut grants = Vec::new();
        for g in store.grants().map_err(crate::evidence::unavailable)? {
            let standing = crate::admission::grant_standing(&**store, &g, now_ms)?;
            if standing.is_live() || standing.stale.is_some() {
                grants.push((g, standing.is_live()));
            }
        }
        grants.reverse();
        let held = |reader: &Reader, live: bool| -> Vec<Grant> {
            grants
                .iter()
                .filter(|(g, l)| g.reader_id == reader.id && *l == live)
                .map(|(g, _)| g.clone())
                .collect()
        };
        let last_reads = store
            .reader_last_reads()
            .map_err(crate::evidence::unavailable)?;
        let readers: Vec<ShownReader> = store
            .readers()
            .map_err(crate::evidence::unavailable)?
            .into_iter()
            .filter(|r| r.removed_at_ms.is_none())
            .map(|reader| ShownReader {
                live: held(&reader, true),
                stale: held(&reader, false),
                last_read_ms: last_reads
                    .iter()
                    .find(|(id, _)| *id == reader.id)
                    .map(|(_, at)| *at),
                reader,
            })
            .collect();
        let redactor = self.reading.secrets.redactor()?;
        MaskedView::each(readers, &redactor).map_err(|_| ErrorCode::Unavailable)
    }

    /// Calls of the audit as the owner is shown them, in the order given, each with the reader
    /// that made it (removed ones included).
    pub fn shown_calls(
        &self,
        rows: Vec<(StartMeta, Vec<Receipt>)>,
    ) -> Result<Vec<MaskedView<ShownCall>>, ErrorCode> {
        let readers = self
            .reading
            .store
            .readers()
            .map_err(crate::evidence::unavailable)?;
        let calls = rows.into_iter().map(|(meta, receipts)| ShownCall {
            reader: meta
                .reader_id
                .as_deref()
                .and_then(|id| readers.iter().find(|r| r.id == id))
                .cloned(),
            meta,
            receipts,
        });
        let redactor = self.reading.secrets.redactor()?;
        MaskedView::each(calls, &redactor).map_err(|_| ErrorCode::Unavailable)
    }

    /// Calls refused before the gate as the owner is shown them, in the order given, each with
    /// the reader that made it (removed ones included).
    pub fn shown_refusals(
        &self,
        rows: Vec<Refusal>,
    ) -> Result<Vec<MaskedView<ShownRefusal>>, ErrorCode> {
        let readers = self
            .reading
            .store
            .readers()
            .map_err(crate::evidence::unavailable)?;
        let refusals = rows.into_iter().map(|refusal| ShownRefusal {
            reader: readers.iter().find(|r| r.id == refusal.reader_id).cloned(),
            refusal,
        });
        let redactor = self.reading.secrets.redactor()?;
        MaskedView::each(refusals, &redactor).map_err(|_| ErrorCode::Unavailable)
    }

    /// Any other view of the owner's, masked as every view is (snapshots, waits, a grant just
    /// made).
    pub fn shown<T: Serialize + serde::de::DeserializeOwned>(
        &self,
        view: T,
    ) -> Result<MaskedView<T>, ErrorCode> {
        let redactor = self.reading.secrets.redactor()?;
        masked(view, &redactor)
    }
}

/// `view` masked, or `unavailable` when it does not survive masking.
fn masked<T: Serialize + serde::de::DeserializeOwned>(
    view: T,
    redactor: &Redactor,
) -> Result<MaskedView<T>, ErrorCode> {
    MaskedView::new(view, redactor).map_err(|_| {
        tracing::warn!("a view of the owner's did not survive masking");
        ErrorCode::Unavailable
    })
}

/// One call of the audit: its start record, its receipts, and the reader that made it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShownCall {
    pub meta: StartMeta,
    pub receipts: Vec<Receipt>,
    pub reader: Option<Reader>,
}

/// A call refused before the gate, and the reader that made it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShownRefusal {
    pub refusal: Refusal,
    pub reader: Option<Reader>,
}

/// A live reader as the owner is shown it ([`Owner::shown_readers`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShownReader {
    pub reader: Reader,
    /// Its grants live now, newest first.
    pub live: Vec<Grant>,
    /// Its grants neither revoked nor expired that cannot be read (their run is not current),
    /// newest first.
    pub stale: Vec<Grant>,
    /// When its key last made a call.
    pub last_read_ms: Option<i64>,
}

/// `run` with the times its agent wrote shown only as the instants they name (or `None`).
fn with_agent_times(mut run: RunRecord) -> RunRecord {
    let r = &mut run.run;
    r.started_at = agent_time(r.started_at.as_deref());
    r.ended_at = agent_time(r.ended_at.as_deref());
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

#[cfg(test)]
mod tests {
    use super::*;
    use runread_core::limits::PROMPT_PREVIEW_MAX_CHARS;

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
