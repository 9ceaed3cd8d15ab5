//! `runread ingest` and `runread watch` (and the watcher `serve --watch` runs).

use crate::Res;
use crate::args::WatchArgs;
use crate::context::Context;
use runread_core::timefmt::now_ms;
use runread_service::Owner;
use runread_store::Store;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;
/// An ingest still running after this long shows a progress bar on a terminal (a quick pass
/// prints only its summary).
pub(crate) const PROGRESS_BAR_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The bar shown while a long pass reads `files` files of `agent`.
fn progress_bar(files: u64, agent: &'static str) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(files).with_message(agent);
    match indicatif::ProgressStyle::with_template("{msg:7} {wide_bar} {pos}/{len} files") {
        Ok(style) => b.with_style(style),
        Err(_) => b,
    }
}

/// One file's outcome, as a line (an unchanged file, or one that is not a workspace's session,
/// says nothing).
fn print_outcome(path: &std::path::Path, outcome: &runread_ingest::FileOutcome) {
    use runread_ingest::FileOutcome as F;
    match outcome {
        F::NewGeneration {
            generation,
            bytes,
            reason,
        } => {
            outln!(
                "read     {} (generation {generation}, {}, {reason})",
                path.display(),
                crate::human::size(*bytes)
            )
        }
        F::Appended { bytes } => outln!(
            "appended {} (+{})",
            path.display(),
            crate::human::size(*bytes)
        ),
        F::Unreadable(e) => outln!("skipped  {} (unreadable: {e})", path.display()),
        F::DuplicateSessionId => outln!(
            "skipped  {} (session id already ingested from another file)",
            path.display()
        ),
        F::Unchanged | F::OutsideWorkspaces | F::NotASession => {}
    }
}

/// How `ingest` prints what it did: a line per file that changed and a summary for a person, or
/// one JSON object.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum IngestOutput {
    Lines,
    Json,
}

pub(crate) fn ingest(
    store: &dyn Store,
    dirs: &[runread_ingest::AgentDir],
    output: IngestOutput,
) -> Res {
    if store.workspaces().map_err(|e| e.to_string())?.is_empty() {
        eprintln!(
            "note: no workspace is registered, so every session will be skipped; run `runread workspace add PATH` first"
        );
    }
    let terminal = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut report = runread_ingest::Report::default();
    let mut outcomes = Vec::new();
    for dir in dirs {
        let mut bar: Option<indicatif::ProgressBar> = None;
        let (r, o) = runread_ingest::ingest_dir(store, dir, now_ms(), |p| {
            if terminal && (bar.is_some() || started.elapsed() >= PROGRESS_BAR_AFTER) {
                bar.get_or_insert_with(|| progress_bar(p.files_total, dir.agent.as_str()))
                    .set_position(p.files_done);
            }
        })
        .map_err(|e| e.to_string())?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        report.add(&r);
        outcomes.extend(o);
    }
    if output == IngestOutput::Json {
        return print_report_json(&report);
    }
    for (path, outcome) in &outcomes {
        print_outcome(path, outcome);
    }
    outln!("{}", summary(&report));
    Ok(())
}

/// The summary line of a pass, for a person.
fn summary(r: &runread_ingest::Report) -> String {
    use crate::human::{count, size};
    format!(
        "{}: {} new or re-read, {} appended, {} unchanged, {} outside registered workspaces, {} not \
         sessions, {} unreadable; {} read; {}; {} in an unfinished line; {}",
        count(r.files, "file", "files"),
        r.new_generations,
        r.appended,
        r.unchanged,
        r.outside_workspaces,
        r.not_sessions,
        r.unreadable + r.duplicates,
        size(r.bytes_read),
        count(r.malformed_lines, "malformed line", "malformed lines"),
        count(r.torn_files, "file ends", "files end"),
        count(r.runs, "run", "runs"),
    )
}

/// `ingest --json`: the pass's counts, sizes in bytes.
fn print_report_json(r: &runread_ingest::Report) -> Res {
    let out = serde_json::json!({
        "files": r.files,
        "newOrReread": r.new_generations,
        "appended": r.appended,
        "unchanged": r.unchanged,
        "outsideWorkspaces": r.outside_workspaces,
        "notSessions": r.not_sessions,
        "unreadable": r.unreadable + r.duplicates,
        "bytesRead": r.bytes_read,
        "malformedLines": r.malformed_lines,
        "tornFiles": r.torn_files,
        "runs": r.runs,
    });
    outln!(
        "{}",
        serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// `runread ingest`: the folders named (remembered for `watch`, `serve --watch` and `status`),
/// else every agent's default place and the folders remembered.
pub(crate) fn ingest_command(ctx: &Context, dirs: crate::args::DirArgs, json: bool) -> Res {
    let named = dirs.named.clone();
    let remembered = crate::folders::remembered(ctx.home.dir());
    let output = if json {
        IngestOutput::Json
    } else {
        IngestOutput::Lines
    };
    ingest(&*ctx.store, &dirs.resolve(true, remembered)?, output)?;
    if named.is_empty() {
        return keep_snapshots(ctx);
    }
    if let Err(why) = crate::folders::remember(ctx.home.dir(), &named) {
        eprintln!("runread: {why}");
    }
    keep_snapshots(ctx)
}

/// After an ingest pass: snapshots no live grant holds are destroyed, and those whose run went on
/// are sealed again while the session file holds it ([`runread_service::evidence::snapshot::maintain`]).
pub(crate) fn keep_snapshots(ctx: &Context) -> Res {
    maintain_snapshots(&ctx.owner()?);
    Ok(())
}

/// [`keep_snapshots`] with the keys open, saying what it did on stderr.
pub(crate) fn maintain_snapshots(owner: &Owner) {
    match owner.maintain_snapshots(now_ms()) {
        Ok((m, kept)) => {
            say_kept(&kept);
            for s in &m.destroyed {
                eprintln!(
                    "runread: snapshot of run {} destroyed: no live grant holds it",
                    s.run_id
                );
            }
            if m.resealed > 0 {
                eprintln!(
                    "runread: {} shared run(s)' snapshots sealed again",
                    m.resealed
                );
            }
        }
        Err(e) => eprintln!("runread: snapshots not kept up: {}", e.as_str()),
    }
}

/// What the keep rules did after an ingest pass, on stderr: runs kept, and every run a rule
/// would keep that was refused (over the bound), with why.
fn say_kept(pass: &runread_service::owner::KeptPass) {
    if pass.kept > 0 {
        eprintln!("runread: {} run(s) kept by a keep rule", pass.kept);
    }
    if pass.resealed > 0 {
        eprintln!("runread: {} kept run(s) sealed again", pass.resealed);
    }
    for (run, why) in &pass.refused {
        eprintln!("runread: run {} {}", run.target.run_id, why.describe());
    }
}

/// A watcher on a background thread of its own (`runread serve --watch`).
pub(crate) struct Watcher {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Watcher {
    /// Asks the watcher to stop and waits for it: at most the ingest pass it is in.
    pub(crate) fn stop_and_join(self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.thread.join();
    }
}

/// What one pass of a watcher changed, as a line: `None` when it changed nothing (a watcher that
/// printed every pass would bury the passes that matter).
pub(crate) fn pass_line(r: &runread_ingest::Report) -> Option<String> {
    if r.new_generations + r.appended == 0 {
        tracing::debug!(target: WATCH_LOG_TARGET, "an ingest pass changed nothing");
        return None;
    }
    Some(format!(
        "ingested: {} new or re-read, {} grown; {} in them ({} read)",
        crate::human::count(r.new_generations, "session", "sessions"),
        r.appended,
        crate::human::count(r.runs, "run", "runs"),
        crate::human::size(r.bytes_read)
    ))
}

/// The log target of a watcher's passes (`RUNREAD_LOG=runread::watch=debug` shows those that
/// changed nothing too).
pub(crate) const WATCH_LOG_TARGET: &str = "runread::watch";

/// Says which folders a watcher follows, a line each.
fn say_watched(dirs: &[runread_ingest::AgentDir]) {
    for d in dirs {
        eprintln!("watching {} ({})", d.dir.display(), d.agent.as_str());
    }
}

/// Starts a watcher on `dirs` in a background thread, until [`Watcher::stop_and_join`]; each
/// pass that changed something is a line on stderr.
pub(crate) fn spawn_watcher(
    ctx: &Context,
    dirs: Vec<runread_ingest::AgentDir>,
) -> Result<Watcher, String> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_watching = stop.clone();
    let owner = ctx.owner()?;
    let store = ctx.store.clone();
    say_watched(&dirs);
    std::thread::Builder::new()
        .name("runread-watch".into())
        .spawn(move || {
            if let Err(e) = runread_ingest::watch::watch(
                store,
                &dirs,
                runread_ingest::watch::RESCAN_DEFAULT,
                stop_watching,
                |r| {
                    if let Some(line) = pass_line(r) {
                        eprintln!("{line}");
                        maintain_snapshots(&owner);
                    }
                },
            ) {
                eprintln!("runread: watcher stopped: {e}");
            }
        })
        .map(|thread| Watcher { stop, thread })
        .map_err(|e| e.to_string())
}

/// `runread watch`: follows the directories until Ctrl-C or SIGTERM, a line per pass that changed something.
pub(crate) fn watch(ctx: &Context, args: WatchArgs) -> Res {
    let dirs = args
        .dirs
        .resolve(false, crate::folders::remembered(ctx.home.dir()))?;
    let owner = ctx.owner()?;
    let store = ctx.store.clone();
    say_watched(&dirs);
    // Ctrl-C or SIGTERM ends the pass in progress, then the watcher; the store closes after it.
    let stop = crate::stop::stop_on_signal()?;
    eprintln!("(Ctrl-C to stop)");
    runread_ingest::watch::watch(
        store,
        &dirs,
        Duration::from_secs(args.rescan_secs.max(1)),
        stop,
        |r| {
            // Every pass: grants expire by time, and a snapshot goes with the last of them.
            maintain_snapshots(&owner);
            if let Some(line) = pass_line(r) {
                outln!("{line}");
            }
        },
    )
    .map_err(|e| e.to_string())
}
