//! `runread run -- AGENT …`: a supervised run.

use crate::cmd::workspace::register_workspace;
use crate::context::Context;
use runread_core::Feature;
use runread_core::timefmt::now_ms;
use runread_service::Owner;
use runread_store::Store;
use std::path::PathBuf;
use std::sync::Arc;
/// `runread run`'s arguments.
pub(crate) struct RunArgs {
    pub(crate) workspace: Option<PathBuf>,
    pub(crate) workspace_here: bool,
    pub(crate) quiet: bool,
    pub(crate) share: Vec<String>,
    pub(crate) label: Option<String>,
    pub(crate) command: Vec<std::ffi::OsString>,
}

/// One `--share READER:FEATURES:DURATION`.
struct Share {
    reader: String,
    features: Vec<Feature>,
    lifetime_ms: i64,
}

impl Share {
    /// Parsed from the right (a reader's name may hold a colon); the reader must exist now.
    fn parse(owner: &Owner, spec: &str) -> Result<Share, String> {
        let bad = || {
            format!(
                "--share {spec:?}: use READER:FEATURES:DURATION, e.g. claude-code:final_answer,history:2h"
            )
        };
        let mut parts = spec.rsplitn(3, ':');
        let (Some(duration), Some(features), Some(reader)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let features =
            Feature::parse_list(features).map_err(|e| format!("--share {spec:?}: {e}"))?;
        let lifetime_ms = runread_core::timefmt::parse_duration_ms(duration).ok_or_else(bad)?;
        // The same bound as `grant --expires`.
        runread_service::owner::expiry(duration, 0)
            .map_err(|e| format!("--share {spec:?}: {e}"))?;
        if owner
            .live_reader(reader)
            .map_err(|e| e.to_string())?
            .is_none()
        {
            return Err(format!(
                "--share {spec:?}: no reader {reader:?}; add it first with `runread reader add {reader:?}` and configure its client"
            ));
        }
        Ok(Share {
            reader: reader.to_owned(),
            features,
            lifetime_ms,
        })
    }
}

/// The runs `--share` shared, and with whom: what the end of the run reports.
type SharedRuns = Arc<std::sync::Mutex<Vec<(runread_core::Target, String)>>>;

/// What `--share` does as each run's target is pinned: grants it to each reader named, and notes
/// it in `shared`.
fn share_on_pin(
    owner: &Owner,
    shares: Vec<Share>,
    label: Option<String>,
    shared: SharedRuns,
) -> Result<Option<runread_supervise::OnPinned>, String> {
    if shares.is_empty() {
        return Ok(None);
    }
    let owner = owner.clone();
    let store = owner.store().clone();
    Ok(Some(Box::new(move |target: &runread_core::Target| {
        let now = now_ms();
        let run = match store.run(&target.session_id, target.generation, &target.run_id) {
            Ok(Some(run)) => run,
            _ => {
                eprintln!(
                    "runread: run {}: not shared (the store did not answer)",
                    target.run_id
                );
                return;
            }
        };
        let mut readers = Vec::new();
        for s in &shares {
            match owner.grant_run(
                run.clone(),
                s.features.clone(),
                now.saturating_add(s.lifetime_ms),
                (
                    &s.reader,
                    runread_service::owner::NewReaderPolicy::MakeUnlessTypo,
                ),
                label.as_deref(),
                now,
            ) {
                // The run has only begun: its snapshot is sealed as it goes on, and its size said
                // at the end.
                Ok(g) => {
                    eprintln!(
                        "runread: run {} shared with {:?} (grant {}, until {})",
                        target.run_id,
                        s.reader,
                        g.grant.id,
                        crate::human::when(g.grant.expires_at_ms),
                    );
                    shared
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((target.clone(), s.reader.clone()));
                    readers.push(s.reader.as_str());
                }
                Err(e) => eprintln!(
                    "runread: run {}: not shared with {:?}: {e}",
                    target.run_id, s.reader
                ),
            }
        }
        if !readers.is_empty() {
            // On stdout, for whoever started the run (an orchestrating agent reads its tool's
            // output): the exact target to read, as one JSON line.
            // Written whole under the lock (the agent's output goes there too); an error here
            // must not end the supervision, so it is not `outln!`.
            use std::io::Write as _;
            let line = serde_json::json!({"runread": "shared", "label": label,
                                          "readers": readers, "target": target});
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        }
    })))
}

/// `runread run`: supervises the agent; returns its exit code.
pub(crate) fn supervised_run(
    home: Option<PathBuf>,
    gate_keys: Option<PathBuf>,
    spec: Option<&str>,
    args: RunArgs,
) -> Result<i32, String> {
    let ctx = Context::open(home, gate_keys, spec)?;
    let (owner, store) = (ctx.owner()?, ctx.store.clone());
    let sharing = !args.share.is_empty();
    if args
        .label
        .as_deref()
        .is_some_and(|l| !runread_core::label::is_valid(l))
    {
        return Err(runread_service::owner::GrantError::BadLabel.to_string());
    }
    let shared: SharedRuns = Arc::default();
    let shares = args
        .share
        .iter()
        .map(|s| Share::parse(&owner, s))
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("current directory: {e}"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // Known before anything is registered: a command that is no agent leaves no trace.
    let agent = rt
        .block_on(runread_supervise::locate::identify(&args.command, &cwd))
        .map_err(|e| e.to_string())?;
    let workspaces = run_workspaces(&*store, &args, &cwd)?;
    let opts = runread_supervise::Options {
        command: args.command,
        cwd,
        workspaces,
        journal_root: ctx.journal_root(),
        echo: !args.quiet,
        on_pinned: share_on_pin(&owner, shares, args.label, shared.clone())?,
    };
    let store: Arc<dyn Store> = store;
    let outcome = rt
        .block_on(runread_supervise::supervise_located(
            store.clone(),
            opts,
            agent,
        ))
        .map_err(|e| e.to_string())?;
    let shared = std::mem::take(
        &mut *shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    report_outcome(&outcome, &shared);
    if sharing {
        // The shared runs' snapshots were sealed as their targets were pinned, before their
        // answers: sealed again now that the session holds them.
        if let Err(e) = owner.maintain_snapshots(now_ms()) {
            eprintln!("runread: snapshots not sealed again: {}", e.as_str());
        }
        report_snapshots(&*store, &shared);
    }
    Ok(outcome.exit_code)
}

/// Each shared run's snapshot as it stands at the end: what a reader can still read once the
/// session file is gone.
fn report_snapshots(store: &dyn Store, shared: &[(runread_core::Target, String)]) {
    let Ok(snapshots) = store.snapshots() else {
        eprintln!("runread: the shared runs' snapshots could not be listed");
        return;
    };
    let mut said = std::collections::BTreeSet::new();
    for (t, _) in shared {
        if !said.insert((&t.session_id, t.generation, &t.run_id)) {
            continue;
        }
        match snapshots.iter().find(|s| {
            s.session_id == t.session_id && s.generation == t.generation && s.run_id == t.run_id
        }) {
            Some(s) => eprintln!(
                "runread: run {}: sealed for sharing ({} lines, {})",
                t.run_id,
                s.lines,
                crate::human::size(s.bytes)
            ),
            None => eprintln!("runread: run {}: not sealed for sharing", t.run_id),
        }
    }
}

/// The registered workspaces the supervisor files the run under, the run's own registered first
/// if it was not.
fn run_workspaces(
    store: &dyn Store,
    args: &RunArgs,
    cwd: &std::path::Path,
) -> Result<Vec<runread_store::Workspace>, String> {
    let cwd_s = cwd.to_str().ok_or("the current directory is not UTF-8")?;
    let mut workspaces = store.workspaces().map_err(|e| e.to_string())?;
    // A removed workspace files nothing.
    workspaces.retain(|w| w.enabled);
    let ws = run_workspace(store, args, (cwd, cwd_s), &workspaces)?;
    if !ws.contains(cwd_s) {
        return Err(format!(
            "the current directory is not inside the workspace {}; cd into it or pass --workspace",
            ws.path
        ));
    }
    if !workspaces.iter().any(|x| x.id == ws.id) {
        workspaces.push(ws);
    }
    Ok(workspaces)
}

/// The workspace the run is in: `--workspace`'s (registered if it is not yet), or the one that
/// holds the current directory (the current directory registered if none does).
fn run_workspace(
    store: &dyn Store,
    args: &RunArgs,
    (cwd, cwd_s): (&std::path::Path, &str),
    workspaces: &[runread_store::Workspace],
) -> Result<runread_store::Workspace, String> {
    let (root, root_s) = match &args.workspace {
        Some(w) => {
            let canon = std::fs::canonicalize(w).map_err(|e| format!("{}: {e}", w.display()))?;
            let canon_s = canon
                .to_str()
                .ok_or("the workspace path is not UTF-8")?
                .to_owned();
            if let Some(x) = workspaces.iter().find(|x| x.path == canon_s) {
                return Ok(x.clone());
            }
            (canon, canon_s)
        }
        None => {
            if let Some(x) = runread_ingest::workspace_for(workspaces, cwd_s) {
                return Ok(x.clone());
            }
            (cwd.to_path_buf(), cwd_s.to_owned())
        }
    };
    if let Some(wide) = too_wide(&root_s).filter(|_| !args.workspace_here) {
        return Err(format!(
            "{root_s} is {wide}: runread registers no workspace that wide on its own (every \
             session under it would become listable). Run from a project's directory, register \
             one with `runread workspace add PATH`, or pass --workspace-here to register {root_s}"
        ));
    }
    register_workspace(store, &root)
}

/// What makes the canonical directory `root` too wide to register without being asked: the root
/// of the filesystem, or the user's home directory.
fn too_wide(root: &str) -> Option<&'static str> {
    if root == "/" {
        return Some("the root of the filesystem");
    }
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok())?;
    (home.as_os_str() == root).then_some("your home directory")
}

/// What the supervisor found of each run and of the processes the agent left, on stderr; a run
/// `--share` already shared gets no hint to grant it.
fn report_outcome(outcome: &runread_supervise::Outcome, shared: &[(runread_core::Target, String)]) {
    for r in &outcome.runs {
        let id = r.run_id.as_deref().unwrap_or("(not in the session file)");
        match &r.proof {
            runread_store::Proof::Journaled { .. } => {
                let done = outcome.foreground == runread_store::Foreground::Completed;
                eprintln!(
                    "runread: run {id}: answer verified against the session file and journaled{}",
                    if done {
                        " (supervised evidence)"
                    } else {
                        ", but the agent did not complete: not readable"
                    }
                );
                let readers: Vec<&str> = shared
                    .iter()
                    .filter(|(t, _)| r.run_id.as_deref() == Some(t.run_id.as_str()))
                    .map(|(_, reader)| reader.as_str())
                    .collect();
                if done && readers.is_empty() {
                    eprintln!(
                        "         grant it: runread grant --run {id} --features final_answer,aggregate --expires 1h --to NAME"
                    );
                } else if done {
                    eprintln!("         shared with {}", readers.join(", "));
                }
            }
            runread_store::Proof::NoAnswer { reason } => {
                eprintln!("runread: run {id}: no answer: {reason}")
            }
            runread_store::Proof::Refused { reason } => {
                eprintln!("runread: run {id}: not verified: {reason}")
            }
            runread_store::Proof::Pending => eprintln!("runread: run {id}: not verified"),
        }
    }
    if outcome.background_left > 0 {
        eprintln!(
            "runread: stopped watching {} process(es) the agent left running; the run's work state is no longer live",
            outcome.background_left
        );
    }
}
