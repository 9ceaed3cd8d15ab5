//! `runread runs`: a page of runs, newest first.

use crate::Res;
use crate::args::RunsArgs;
use crate::context::Context;
use runread_core::redact::MaskedView;
use runread_core::timefmt::now_ms;
use runread_store::Store;
use serde_json::json;

/// The listing's filter: an agent, and a workspace named by its name or path.
pub(crate) fn run_filter(
    store: &dyn Store,
    agent: Option<runread_core::Agent>,
    workspace: Option<String>,
    status: Option<String>,
) -> Result<runread_store::RunFilter, String> {
    let workspace_id = match workspace {
        None => None,
        Some(w) => {
            let all = store.workspaces().map_err(|e| e.to_string())?;
            let canonical = std::fs::canonicalize(&w)
                .ok()
                .map(|p| p.to_string_lossy().into_owned());
            let found = all
                .iter()
                .find(|x| x.name == w || Some(&x.path) == canonical.as_ref() || x.path == w)
                .ok_or_else(|| format!("no registered workspace is named {w:?} or lies at that path (see `runread workspace list`)"))?;
            Some(found.id.clone())
        }
    };
    Ok(runread_store::RunFilter {
        agent,
        workspace_id,
        status,
    })
}

/// `runread runs`: the filter from the flags, then the page.
pub(crate) fn runs_command(ctx: &Context, a: RunsArgs) -> Res {
    let store = ctx.store.clone();
    let filter = run_filter(&*store, a.agent, a.workspace, a.status)?;
    if let Some(words) = &a.search {
        return search(ctx, a.json, &filter, words);
    }
    runs(ctx, a.json, &filter, a.limit, a.offset)
}

/// `runread runs --search WORDS`: the runs whose prompt or answer holds every word.
fn search(ctx: &Context, as_json: bool, filter: &runread_store::RunFilter, words: &str) -> Res {
    let _store = ctx.store.clone();
    let service = ctx.owner()?;
    let found = service
        .search_runs(words, filter, now_ms())
        .map_err(|e| match e {
            runread_core::ErrorCode::InvalidArguments => format!(
                "--search takes 1 to {} words, at most {} bytes",
                runread_service::owner::SEARCH_WORDS_MAX,
                runread_service::owner::SEARCH_QUERY_MAX_BYTES
            ),
            other => format!("the search failed: {}", other.as_str()),
        })?;
    if as_json {
        return print_runs_json(&found.runs);
    }
    if !found.runs.is_empty() {
        print_runs_table(&found.runs);
    }
    outln!(
        "{} runs hold every word; {}",
        found.runs.len(),
        if found.complete {
            format!("every run searched ({})", found.examined)
        } else {
            format!(
                "{} of {} searched (the search's bounds)",
                found.examined, found.total
            )
        }
    );
    Ok(())
}

pub(crate) fn runs(
    ctx: &Context,
    as_json: bool,
    filter: &runread_store::RunFilter,
    limit: u32,
    offset: u64,
) -> Res {
    let store = ctx.store.clone();
    let service = ctx.owner()?;
    let page = store
        .runs_page(filter, limit, offset)
        .map_err(|e| e.to_string())?;
    // As the owner is shown every run: what the agent wrote masked, the prompt from its file.
    let list = service
        .shown_runs(page, now_ms())
        .map_err(|e| format!("cannot read the known secrets to mask the listing: {e}"))?;
    if as_json {
        return print_runs_json(&list);
    }
    let total = store.runs_count(filter).map_err(|e| e.to_string())?;
    if list.is_empty() {
        if total == 0 && *filter == runread_store::RunFilter::default() {
            outln!("no runs; register a workspace and run `runread ingest`");
        } else {
            outln!("no runs on this page ({total} in all)");
        }
        return Ok(());
    }
    print_runs_table(&list);
    let shown_to = offset + list.len() as u64;
    if offset > 0 || shown_to < total {
        outln!(
            "runs {}–{shown_to} of {total}, newest first{}",
            offset + 1,
            if shown_to < total {
                format!("; next page: --offset {shown_to}")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// The page as JSON: one object per run, what the owner is shown of it.
fn print_runs_json(list: &[MaskedView<runread_service::owner::shown::ShownRun>]) -> Res {
    let out: Vec<_> = list
        .iter()
        .map(|shown| {
            let r = &shown.record;
            json!({
                "target": r.target,
                "agent": r.agent,
                "status": r.run.status.as_str(),
                "answerState": shown.answer_state,
                "unknownReason": r.run.unknown_reason,
                "finalBytes": r.run.final_bytes,
                "prompt": shown.prompt.text(),
                "startedAt": r.run.started_at,
                "workspace": r.workspace_name,
                "waitingReaders": shown.waiting,
                "usage": runread_service::outputs::Usage::of(r.run.usage.as_ref()),
            })
        })
        .collect();
    outln!(
        "{}",
        serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// The page as a table: one row per run, each id cut to the shortest prefix that tells it apart.
fn print_runs_table(list: &[MaskedView<runread_service::owner::shown::ShownRun>]) {
    // Claude Code's and Codex's run ids are whole uuids (Codex's are time-ordered: turns minutes
    // apart share their first 8 characters): the listing shows the shortest prefix that tells
    // each apart from every other run listed, which `grant --run` takes as it is.
    let ids: Vec<&str> = list
        .iter()
        .map(|r| r.record.target.run_id.as_str())
        .collect();
    let shown = distinct_prefixes(&ids, RUN_PREFIX_MIN_CHARS);
    let width = shown
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(10);
    outln!(
        "{:<width$} {:<7} {:<10} {:<10} {:>15} {:<38} PROMPT",
        "RUN",
        "AGENT",
        "STATUS",
        "ANSWER",
        "TOKENS IN/OUT",
        "SESSION (generation)"
    );
    for (row, shown) in list.iter().zip(&shown) {
        let r = &row.record;
        let tokens = runread_service::outputs::Usage::of(r.run.usage.as_ref())
            .in_out()
            .map_or_else(
                || "-".to_owned(),
                |(i, o)| format!("{}/{}", compact(i), compact(o)),
            );
        outln!(
            "{:<width$} {:<7} {:<10} {:<10} {:>15} {:<38} {}",
            shown,
            r.agent.as_str(),
            r.run.status.as_str(),
            row.answer_state,
            tokens,
            format!("{} ({})", r.target.session_id, r.target.generation),
            row.prompt.shown()
        );
        if !row.waiting.is_empty() {
            outln!("{:<width$} waited on by {}", "", row.waiting_summary());
        }
    }
}

/// A count in a few characters, cut (never rounded up): `9999`, `12.3k`, `456k`, `7.8M`, `910M`.
pub(crate) fn compact(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=99_999 => format!("{}.{}k", n / 1_000, n / 100 % 10),
        100_000..=999_999 => format!("{}k", n / 1_000),
        1_000_000..=99_999_999 => format!("{}.{}M", n / 1_000_000, n / 100_000 % 10),
        _ => format!("{}M", n / 1_000_000),
    }
}

/// The fewest characters of a run id `runread runs` shows (Pi's ids are 8 characters whole).
pub(crate) const RUN_PREFIX_MIN_CHARS: usize = 8;

/// For each id, its shortest prefix of at least `min` characters that no other, different id
/// starts with (the same id in two sessions — a Claude Code fork — cannot be told apart by any
/// prefix: `grant` asks for `--session` there).
pub(crate) fn distinct_prefixes(ids: &[&str], min: usize) -> Vec<String> {
    ids.iter()
        .map(|id| {
            let chars: Vec<char> = id.chars().collect();
            let shared = ids
                .iter()
                .filter(|other| *other != id)
                .map(|other| {
                    other
                        .chars()
                        .zip(chars.iter())
                        .take_while(|(a, b)| a == *b)
                        .count()
                })
                .max()
                .unwrap_or(0);
            let take = (shared + 1).max(min).min(chars.len());
            chars.iter().take(take).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{compact, distinct_prefixes};

    #[test]
    fn counts_are_cut_at_each_unit_edge() {
        for (n, shown) in [
            (0, "0"),
            (9_999, "9999"),
            (10_000, "10.0k"),
            (99_999, "99.9k"),
            (100_000, "100k"),
            (999_999, "999k"),
            (1_000_000, "1.0M"),
            (99_999_999, "99.9M"),
            (100_000_000, "100M"),
        ] {
            assert_eq!(compact(n), shown, "{n}");
        }
    }

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
        // Every shown prefix is a prefix of its own id and of no other, different id.
        for (i, s) in shown.iter().enumerate() {
            for (j, id) in ids.iter().enumerate() {
                if ids[i] != *id {
                    assert!(!id.starts_with(s.as_str()), "{s} also starts {id} ({j})");
                }
            }
        }
        assert_eq!(distinct_prefixes(&["abc"], 8), ["abc"]);
    }
}
