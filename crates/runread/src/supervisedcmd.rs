//! `runread run -- AGENT …`: a supervised run.

use super::*;

/// `runread run`: supervises the agent; returns its exit code.
pub(crate) fn supervised_run(
    home: Option<PathBuf>,
    spec: Option<&str>,
    workspace: Option<PathBuf>,
    quiet: bool,
    command: Vec<std::ffi::OsString>,
) -> Result<i32, String> {
    let (home, store) = open_home(home, None, spec)?;
    let cwd = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("current directory: {e}"))?;
    let cwd_s = cwd.to_str().ok_or("the current directory is not UTF-8")?;
    let mut workspaces = store.workspaces().map_err(|e| e.to_string())?;
    let ws = run_workspace(&*store, workspace, (&cwd, cwd_s), &workspaces)?;
    if !ws.contains(cwd_s) {
        return Err(format!(
            "the current directory is not inside the workspace {}; cd into it or pass --workspace",
            ws.path
        ));
    }
    if !workspaces.iter().any(|x| x.id == ws.id) {
        workspaces.push(ws.clone());
    }
    let opts = runread_supervise::Options {
        command,
        cwd,
        workspaces,
        journal_root: runread_supervise::journal_root(home.dir()),
        echo: !quiet,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let store: Arc<dyn Store> = store;
    let outcome = rt
        .block_on(runread_supervise::supervise(store, opts))
        .map_err(|e| e.to_string())?;
    report_outcome(&outcome);
    Ok(outcome.exit_code)
}

/// The workspace the run is in: `--workspace`'s (registered if it is not yet), or the one that
/// holds the current directory (the current directory registered if none does).
fn run_workspace(
    store: &dyn Store,
    workspace: Option<PathBuf>,
    (cwd, cwd_s): (&std::path::Path, &str),
    workspaces: &[runread_store::Workspace],
) -> Result<runread_store::Workspace, String> {
    Ok(match workspace {
        Some(w) => {
            let canon = std::fs::canonicalize(&w).map_err(|e| format!("{}: {e}", w.display()))?;
            let canon_s = canon
                .to_str()
                .ok_or("the workspace path is not UTF-8")?
                .to_owned();
            match workspaces.iter().find(|x| x.path == canon_s) {
                Some(x) => x.clone(),
                None => register_workspace(store, &canon)?,
            }
        }
        None => match runread_ingest::workspace_for(workspaces, cwd_s) {
            Some(x) => x.clone(),
            None => register_workspace(store, cwd)?,
        },
    })
}

/// What the supervisor found of each run and of the processes the agent left, on stderr.
fn report_outcome(outcome: &runread_supervise::Outcome) {
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
                if done {
                    eprintln!(
                        "         grant it: runread grant --run {id} --features final_answer,aggregate --expires 1h --to NAME"
                    );
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
