//! `runread workspace add|list`.

use crate::Res;
use crate::args::WorkspaceCmd;
use runread_core::timefmt::now_ms;
use runread_store::Store;
pub(crate) fn register_workspace(
    store: &dyn Store,
    path: &std::path::Path,
) -> Result<runread_store::Workspace, String> {
    let p = path.to_str().ok_or("the workspace path is not UTF-8")?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_owned());
    let ws = store
        .add_workspace(p, &name, now_ms())
        .map_err(|e| e.to_string())?;
    eprintln!("runread: registered workspace {} ({})", ws.name, ws.path);
    Ok(ws)
}

pub(crate) fn workspace(store: &dyn Store, cmd: WorkspaceCmd) -> Res {
    match cmd {
        WorkspaceCmd::Add { path, name } => {
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
            let ws = store
                .add_workspace(&canonical, &name, now_ms())
                .map_err(|e| e.to_string())?;
            outln!(
                "workspace {} ({}) at {} — revision {}",
                ws.id,
                ws.name,
                ws.path,
                ws.revision
            );
            if ws.revision > 1 {
                outln!(
                    "note: re-registering bumped the revision; grants made under revision {} no longer work",
                    ws.revision - 1
                );
            }
            Ok(())
        }
        WorkspaceCmd::List { json } => {
            let list = store.workspaces().map_err(|e| e.to_string())?;
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?
                );
            } else if list.is_empty() {
                outln!("no workspace registered; add one with `runread workspace add PATH`");
            } else {
                for w in list {
                    outln!("{}  rev {}  {}  {}", w.id, w.revision, w.name, w.path);
                }
            }
            Ok(())
        }
    }
}
