//! `runread runs`: a page of runs, newest first.

use crate::Res;
use crate::args::RunsArgs;
use crate::context::Context;
use runread_core::redact::MaskedView;
use runread_core::timefmt::now_ms;
use runread_store::Store;
use serde_json::json;
use std::io::IsTerminal as _;

use crate::cmd::ingest::PROGRESS_BAR_AFTER;
use crate::human;

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

/// `runread runs --search WORDS`: the runs whose prompt or answer holds every word, searched
/// through every run (a page at a time, a bar on a terminal when it takes a while), and how much
/// was searched.
fn search(ctx: &Context, as_json: bool, filter: &runread_store::RunFilter, words: &str) -> Res {
    let service = ctx.owner()?;
    let terminal = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let found = service.search_every_run(words, filter, now_ms(), &mut |done, total| {
        if terminal && (bar.is_some() || started.elapsed() >= PROGRESS_BAR_AFTER) {
            bar.get_or_insert_with(|| search_bar(total))
                .set_position(done);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let found = found.map_err(|e| match e {
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
        print_runs_table(&service, &found.runs)?;
    }
    let held = human::count(found.runs.len() as u64, "run holds", "runs hold");
    let searched = format!(
        "searched {} in {}",
        human::count(found.examined, "run", "runs"),
        human::count(found.sessions, "session", "sessions")
    );
    if found.complete {
        outln!("{held} every word; {searched}");
    } else {
        outln!(
            "the first {held} every word, newest first; {searched} of {} (add words to find older ones)",
            found.total
        );
    }
    Ok(())
}

/// The bar shown while a long search reads `total` runs.
fn search_bar(total: u64) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(total);
    match indicatif::ProgressStyle::with_template("searching {wide_bar} {pos}/{len} runs") {
        Ok(style) => b.with_style(style),
        Err(_) => b,
    }
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
    print_runs_table(&service, &list)?;
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
    let out: Vec<_> = list.iter().map(|shown| run_json(shown)).collect();
    outln!(
        "{}",
        serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// One run as `runs --json` prints it (and `requests --json` its matching runs): what the owner
/// is shown of it.
pub(crate) fn run_json(shown: &runread_service::owner::shown::ShownRun) -> serde_json::Value {
    let r = &shown.record;
    json!({
        "target": r.target,
        "agent": r.agent,
        "status": r.run.status.as_str(),
        "answerState": shown.answer_state,
        "unknownReason": r.run.unknown_reason,
        "finalBytes": r.run.final_bytes,
        "prompt": shown.prompt.text(),
        "sessionFile": shown.file.as_str(),
        "kept": shown.kept,
        "startedAt": r.run.started_at,
        "workspace": r.workspace_name,
        "waitingReaders": shown.waiting,
        "usage": runread_service::outputs::Usage::of(r.run.usage.as_ref()),
    })
}

/// The page as a table: one row per run, each id cut to the shortest prefix that no other run
/// of the store starts with (`show`, `grant` and `artifact` take it back as it is).
fn print_runs_table(
    owner: &runread_service::Owner,
    list: &[MaskedView<runread_service::owner::shown::ShownRun>],
) -> Res {
    let ids: Vec<&str> = list
        .iter()
        .map(|r| r.record.target.run_id.as_str())
        .collect();
    let shown = owner
        .run_id_prefixes(&ids)
        .map_err(|e| format!("cannot list the runs: {e}"))?;
    let width = column_width(shown.iter().map(String::as_str), 10);
    let places = column_width(list.iter().map(|r| r.record.workspace_name.as_str()), 9);
    let now = now_ms();
    outln!(
        "{:<width$} {:<7} {:<16} {:<10} {:<10} {:<places$} {:>15} {:<38} PROMPT",
        "RUN",
        "AGENT",
        "STATUS",
        "ANSWER",
        "STARTED",
        "WORKSPACE",
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
        let started = human::started_ago(r.run.started_at.as_deref(), now);
        // A kept run says so in its status cell: `completed, kept`.
        let status = if row.kept {
            format!("{}, kept", r.run.status.as_str())
        } else {
            r.run.status.as_str().to_owned()
        };
        outln!(
            "{:<width$} {:<7} {:<16} {:<10} {:<10} {:<places$} {:>15} {:<38} {}",
            shown,
            r.agent.as_str(),
            status,
            row.answer_state,
            started,
            r.workspace_name,
            tokens,
            format!("{} ({})", r.target.session_id, r.target.generation),
            row.prompt.shown()
        );
        if !row.waiting.is_empty() {
            outln!("{:<width$} waited on by {}", "", row.waiting_summary());
        }
        // Said under the row unless the prompt's cell already says it.
        if let (Some(says), false) = (
            row.file.says(),
            matches!(
                row.prompt,
                runread_service::owner::shown::Prompt::NotThere(_)
                    | runread_service::owner::shown::Prompt::FileChanged
            ),
        ) {
            outln!("{:<width$} {says}", "");
        }
    }
    Ok(())
}

/// A column as wide as its widest cell, and at least `min` characters.
pub(crate) fn column_width<'a>(cells: impl Iterator<Item = &'a str>, min: usize) -> usize {
    cells.map(|s| s.chars().count()).max().unwrap_or(0).max(min)
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

#[cfg(test)]
mod tests {
    use super::compact;

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
}
