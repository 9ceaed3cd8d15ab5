//! `runread workspace add|list|remove`.

use serde_json::json;

use crate::Res;
use crate::args::WorkspaceCmd;
use crate::context::Context;
use crate::human;
use runread_core::timefmt::now_ms;
use runread_service::Owner;
use runread_store::{Store, Workspace};

/// Registers the canonical directory `path` under `name` and says what that did, in words.
fn register(store: &dyn Store, path: &str, name: &str) -> Result<(Workspace, String), String> {
    let before = store
        .workspaces()
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|w| w.path == path);
    let ws = store
        .add_workspace(path, name, now_ms())
        .map_err(|e| e.to_string())?;
    let said = match before {
        None => format!(
            "registered workspace {} at {} ({}, revision {})",
            ws.name, ws.path, ws.id, ws.revision
        ),
        Some(b) if !b.enabled => format!(
            "registered workspace {} at {} again ({}, revision {}); the grants it had before its removal stay ended",
            ws.name, ws.path, ws.id, ws.revision
        ),
        Some(b) if b.name != ws.name => format!(
            "workspace at {} renamed {} → {} ({}, revision {}); its grants keep working",
            ws.path, b.name, ws.name, ws.id, ws.revision
        ),
        Some(_) => format!(
            "workspace {} at {} is already registered ({}, revision {}); nothing changed",
            ws.name, ws.path, ws.id, ws.revision
        ),
    };
    Ok((ws, said))
}

/// Registers `path` (canonical) for `runread run`, saying so on stderr.
pub(crate) fn register_workspace(
    store: &dyn Store,
    path: &std::path::Path,
) -> Result<Workspace, String> {
    let p = path.to_str().ok_or("the workspace path is not UTF-8")?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_owned());
    let (ws, said) = register(store, p, &name)?;
    eprintln!("runread: {said}");
    Ok(ws)
}

pub(crate) fn workspace(ctx: &Context, cmd: WorkspaceCmd) -> Res {
    match cmd {
        WorkspaceCmd::Add { path, name, json } => {
            let canonical =
                std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if !canonical.is_dir() {
                return Err(format!("{} is not a directory", canonical.display()));
            }
            let canonical = canonical
                .to_str()
                .ok_or("workspace path is not UTF-8")?
                .to_owned();
            let name = name.unwrap_or_else(|| {
                std::path::Path::new(&canonical)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("workspace")
                    .to_owned()
            });
            let (ws, said) = register(&*ctx.store, &canonical, &name)?;
            if json {
                let out = json!({"workspaceId": ws.id, "name": ws.name, "path": ws.path,
                    "revision": ws.revision, "says": said});
                outln!("{out}");
            } else {
                outln!("{said}");
            }
            Ok(())
        }
        WorkspaceCmd::List { json } => list(&ctx.owner()?, json),
        WorkspaceCmd::Remove { workspace, json } => remove(&ctx.owner()?, &workspace, json),
    }
}

/// `runread workspace list`: each registered workspace, what it holds, and its grants.
fn list(owner: &Owner, json: bool) -> Res {
    let shown = owner
        .shown_workspaces(now_ms())
        .map_err(|e| e.to_string())?;
    if json {
        let rows: Vec<serde_json::Value> = shown
            .iter()
            .map(|s| {
                json!({
                    "workspaceId": s.workspace.id,
                    "name": s.workspace.name,
                    "path": s.workspace.path,
                    "revision": s.workspace.revision,
                    "runs": s.runs,
                    "liveGrants": s.live_grants,
                    "staleGrants": s.stale_grants,
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    if shown.is_empty() {
        outln!("no workspace registered; add one with `runread workspace add PATH`");
    }
    for s in &shown {
        let stale = match s.stale_grants {
            0 => String::new(),
            n => format!(
                ", {} (cannot be read)",
                human::count(n, "stale grant", "stale grants")
            ),
        };
        outln!(
            "{}  {}  {}  {}, {}{stale}",
            s.workspace.name,
            s.workspace.path,
            s.workspace.id,
            human::count(s.runs, "run", "runs"),
            human::count(s.live_grants, "live grant", "live grants"),
        );
    }
    Ok(())
}

/// `runread workspace remove`: the workspace named by its id, root or name, and its grants ended.
fn remove(owner: &Owner, which: &str, json: bool) -> Res {
    // A path is matched as registered: canonical.
    let canonical = std::fs::canonicalize(which)
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned));
    let named = match (owner.find_workspace(which), canonical) {
        (Err(runread_service::owner::WorkspaceError::NoSuchWorkspace(_)), Some(c)) => c,
        _ => which.to_owned(),
    };
    let removed = owner
        .remove_workspace(&named, now_ms())
        .map_err(|e| e.to_string())?;
    let ws = &removed.workspace;
    if json {
        let out = json!({
            "workspaceId": ws.id,
            "name": ws.name,
            "path": ws.path,
            "endedGrants": removed.ended,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    outln!(
        "removed workspace {} at {} ({}): nothing in it is indexed or read any more",
        ws.name,
        ws.path,
        ws.id
    );
    if removed.ended.is_empty() {
        outln!("no grant in it was live");
    } else {
        outln!(
            "ended {}: {}",
            human::count(removed.ended.len() as u64, "grant", "grants"),
            removed.ended.join(", ")
        );
    }
    Ok(())
}
