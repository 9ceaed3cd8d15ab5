//! Run ids as the owner reads and types them, the way git names objects: every listing shows the
//! shortest prefix (at least [`RUN_PREFIX_MIN_CHARS`]) that no other current run's id starts
//! with, and every command that takes a run id takes any prefix that names one run — with a
//! prefix of its session id when the same run id is in several sessions (a Claude Code fork).
//! The one resolver: `show`, `grant`, `artifact` and the console all go through `resolve`
//! (`Owner::resolve_run`).

use std::collections::BTreeSet;

use runread_store::{RunRecord, Store, StoreError};

/// The fewest characters of a run id a listing shows (Pi's ids are 8 characters whole; Codex's
/// time-ordered uuids share their first 8 for turns a minute apart, and are shown longer).
pub const RUN_PREFIX_MIN_CHARS: usize = 8;

/// Most runs one prefix is resolved among: a prefix that more start with is refused as too
/// short, and a listing probes with a longer one.
pub const RUN_CANDIDATES_MAX: u32 = 16;

/// Fewest characters of a prefix taken as one: a shorter one is taken only as a whole id (as
/// git asks for 4), since it names too many runs to be a deliberate choice.
pub const RUN_PREFIX_TYPED_MIN_CHARS: usize = 4;

/// Most run ids a listing reads to tell its runs apart (ids only): beyond it, each run's id is
/// probed on its own.
pub const RUN_NEIGHBOURS_MAX: u32 = 10_000;

/// How many characters longer a listing's next probe is when too many runs share a prefix.
const PROBE_STEP_CHARS: usize = 4;

/// One run an ambiguous prefix names, with what picks it: its run id prefix, and its session id
/// prefix when the run id alone does not (the same id in several sessions, or `--session` given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub run_id: String,
    pub session_id: String,
    pub run_prefix: String,
    pub session_prefix: Option<String>,
}

/// Why a typed run id names no one run. Owner-facing: the messages name runs and sessions.
#[derive(Debug)]
pub enum Unresolved {
    /// No current run's id starts with it (in a session starting with `session`, if given).
    NoSuchRun {
        run: String,
        session: Option<String>,
    },
    /// Several runs, each listed once with what picks it.
    Ambiguous {
        run: String,
        candidates: Vec<Candidate>,
    },
    /// More than [`RUN_CANDIDATES_MAX`] runs: too short a prefix to list them.
    TooMany {
        run: String,
    },
    Store(String),
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unresolved::NoSuchRun { run, session: None } => {
                write!(f, "no current run {run:?}; see `runread runs`")
            }
            Unresolved::NoSuchRun {
                run,
                session: Some(s),
            } => write!(
                f,
                "no current run {run:?} in a session {s:?}; see `runread runs`"
            ),
            Unresolved::Ambiguous { run, candidates } => {
                write!(
                    f,
                    "{run:?} names {} runs; give one of these instead:",
                    candidates.len()
                )?;
                for c in candidates {
                    write!(f, "\n  {}", c.run_prefix)?;
                    if let Some(s) = &c.session_prefix {
                        write!(f, " --session {s}")?;
                    }
                    write!(f, "    (run {}, session {})", c.run_id, c.session_id)?;
                }
                Ok(())
            }
            Unresolved::TooMany { run } => write!(
                f,
                "more than {RUN_CANDIDATES_MAX} runs start with {run:?}; give more of the run id"
            ),
            Unresolved::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// The one current run that `run` (a run id or a prefix of one) names, in a session whose id is
/// or starts with `session`. An exact id wins over longer ids it is a prefix of, and a prefix
/// shorter than [`RUN_PREFIX_TYPED_MIN_CHARS`] is taken only as a whole id.
pub(crate) fn resolve(
    store: &dyn Store,
    run: &str,
    session: Option<&str>,
) -> Result<RunRecord, Unresolved> {
    let none = || Unresolved::NoSuchRun {
        run: run.to_owned(),
        session: session.map(str::to_owned),
    };
    if run.is_empty() || session.is_some_and(str::is_empty) {
        return Err(none());
    }
    let store_err = |e: StoreError| Unresolved::Store(e.to_string());
    let mut found = store.runs_by_id(run).map_err(store_err)?;
    if let Some(s) = session {
        found.retain(|r| r.target.session_id.starts_with(s));
    }
    if found.is_empty() && run.chars().count() >= RUN_PREFIX_TYPED_MIN_CHARS {
        found = store
            .runs_with_id_prefix(run, session, RUN_CANDIDATES_MAX)
            .map_err(store_err)?;
        if found.len() > RUN_CANDIDATES_MAX as usize {
            return Err(Unresolved::TooMany {
                run: run.to_owned(),
            });
        }
    }
    if let Some(s) = session
        && (s.chars().count() < RUN_PREFIX_TYPED_MIN_CHARS
            || found.iter().any(|r| r.target.session_id == s))
    {
        found.retain(|r| r.target.session_id == s);
    }
    found.sort_by(|a, b| {
        (&a.target.run_id, &a.target.session_id).cmp(&(&b.target.run_id, &b.target.session_id))
    });
    found.dedup_by(|a, b| {
        a.target.run_id == b.target.run_id && a.target.session_id == b.target.session_id
    });
    match found.len() {
        0 => Err(none()),
        1 => Ok(found.remove(0)),
        _ => Err(Unresolved::Ambiguous {
            run: run.to_owned(),
            candidates: candidates(&found, run, session),
        }),
    }
}

/// What picks each of `found` (every current run `run` names, deduplicated): a run id prefix
/// extending `run`, and a session prefix extending `session` where the run id does not suffice.
fn candidates(found: &[RunRecord], run: &str, session: Option<&str>) -> Vec<Candidate> {
    let ids: Vec<&str> = found.iter().map(|r| r.target.run_id.as_str()).collect();
    let run_min = RUN_PREFIX_MIN_CHARS.max(run.chars().count());
    let session_min = RUN_PREFIX_MIN_CHARS.max(session.map_or(0, |s| s.chars().count()));
    let run_prefixes = distinct_prefixes(&ids, run_min);
    found
        .iter()
        .zip(run_prefixes)
        .map(|(r, run_prefix)| {
            let sessions: Vec<&str> = found
                .iter()
                .filter(|o| o.target.run_id == r.target.run_id)
                .map(|o| o.target.session_id.as_str())
                .collect();
            let session_prefix = (sessions.len() > 1 || session.is_some()).then(|| {
                let others: Vec<&str> = sessions
                    .iter()
                    .copied()
                    .filter(|s| *s != r.target.session_id)
                    .collect();
                distinct_prefix(&r.target.session_id, &others, session_min)
            });
            Candidate {
                run_id: r.target.run_id.clone(),
                session_id: r.target.session_id.clone(),
                run_prefix,
                session_prefix,
            }
        })
        .collect()
}

/// For each of `ids`, the shortest prefix of at least [`RUN_PREFIX_MIN_CHARS`] that no other
/// current run's id (in the whole store, not only among `ids`) starts with: what a listing
/// shows, and what [`resolve`] takes back. The same id in two sessions is shown alike. One
/// statement finds every id sharing a listed id's first characters; only when more than
/// [`RUN_NEIGHBOURS_MAX`] do is each id probed on its own.
pub(crate) fn shortest_prefixes(
    store: &dyn Store,
    ids: &[&str],
) -> Result<Vec<String>, StoreError> {
    shortest_prefixes_within(store, ids, RUN_NEIGHBOURS_MAX)
}

/// What a listing shows of each of `ids` (see `shortest_prefixes`), reading at most
/// `neighbours_max` ids at once (then each run by its own probes).
pub fn shortest_prefixes_within(
    store: &dyn Store,
    ids: &[&str],
    neighbours_max: u32,
) -> Result<Vec<String>, StoreError> {
    let head = |id: &str| -> String { id.chars().take(RUN_PREFIX_MIN_CHARS).collect() };
    let heads: BTreeSet<String> = ids.iter().map(|id| head(id)).collect();
    let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
    let near = store.run_ids_with_heads(&heads, RUN_PREFIX_MIN_CHARS as u32, neighbours_max)?;
    if near.len() > neighbours_max as usize {
        return ids.iter().map(|id| shortest_prefix(store, id)).collect();
    }
    Ok(ids
        .iter()
        .map(|id| {
            let mine = head(id);
            let others: Vec<&str> = near
                .iter()
                .map(String::as_str)
                .filter(|o| *o != *id && o.starts_with(mine.as_str()))
                .collect();
            distinct_prefix(id, &others, RUN_PREFIX_MIN_CHARS)
        })
        .collect())
}

/// [`shortest_prefixes`] of one id: the runs sharing its first characters, probed with a longer
/// prefix while more than [`RUN_CANDIDATES_MAX`] share them.
fn shortest_prefix(store: &dyn Store, id: &str) -> Result<String, StoreError> {
    let len = id.chars().count();
    let mut probe = RUN_PREFIX_MIN_CHARS.min(len);
    loop {
        let head: String = id.chars().take(probe).collect();
        let near = store.runs_with_id_prefix(&head, None, RUN_CANDIDATES_MAX)?;
        if near.len() <= RUN_CANDIDATES_MAX as usize || probe >= len {
            let others: BTreeSet<&str> = near
                .iter()
                .map(|r| r.target.run_id.as_str())
                .filter(|o| *o != id)
                .collect();
            let others: Vec<&str> = others.into_iter().collect();
            return Ok(distinct_prefix(id, &others, RUN_PREFIX_MIN_CHARS));
        }
        probe = (probe + PROBE_STEP_CHARS).min(len);
    }
}

/// For each id, its shortest prefix of at least `min` characters that no other, different id of
/// `ids` starts with (the same id twice is told apart from the others only).
pub fn distinct_prefixes(ids: &[&str], min: usize) -> Vec<String> {
    ids.iter()
        .map(|id| {
            let others: Vec<&str> = ids.iter().copied().filter(|o| o != id).collect();
            distinct_prefix(id, &others, min)
        })
        .collect()
}

/// `id`'s shortest prefix of at least `min` characters (or the whole id) that none of `others`
/// starts with.
fn distinct_prefix(id: &str, others: &[&str], min: usize) -> String {
    let shared = others
        .iter()
        .map(|other| {
            other
                .chars()
                .zip(id.chars())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap_or(0);
    id.chars().take((shared + 1).max(min)).collect()
}

#[cfg(test)]
mod tests {
    use super::distinct_prefixes;

    #[test]
    fn each_run_is_shown_by_the_shortest_prefix_that_tells_it_apart() {
        let ids = [
            "01a23217-07b3-7e00-a115-247c921b5416",
            "01a23217-0b35-7e53-b1a5-d667ec759219",
            "8783a1c2-aaaa",
            "b7e2c1d0",
            "01a23217-07b3-7e00-a115-247c921b5416",
        ];
        let shown = distinct_prefixes(&ids, 8);
        assert_eq!(
            shown,
            [
                // The same id twice (two sessions): told apart from the others only.
                "01a23217-07",
                "01a23217-0b",
                "8783a1c2",
                "b7e2c1d0",
                "01a23217-07",
            ]
        );
        for (i, s) in shown.iter().enumerate() {
            for id in &ids {
                if ids[i] != *id {
                    assert!(!id.starts_with(s.as_str()), "{s} also starts {id}");
                }
            }
        }
        assert_eq!(distinct_prefixes(&["abc"], 8), ["abc"]);
        // An id that is a prefix of another is shown whole.
        assert_eq!(
            distinct_prefixes(&["b7e2c1d0", "b7e2c1d0ff"], 8),
            ["b7e2c1d0", "b7e2c1d0f"]
        );
    }
}
