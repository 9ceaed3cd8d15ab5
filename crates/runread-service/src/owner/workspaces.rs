//! The owner's workspaces: each with what it holds (runs, grants) for the listing, and removed
//! with every grant in it ended.

use runread_store::{Grant, RunFilter, Store, Workspace};

use crate::admission::grant_standing;

/// Why a workspace could not be found or removed. Owner-facing.
#[derive(Debug)]
pub enum WorkspaceError {
    /// No registered workspace has that id, root or name.
    NoSuchWorkspace(String),
    /// Several registered workspaces have that name: their ids.
    Ambiguous {
        name: String,
        ids: Vec<String>,
    },
    Store(String),
}

impl std::fmt::Display for WorkspaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkspaceError::NoSuchWorkspace(w) => {
                write!(f, "no workspace {w:?}; see `runread workspace list`")
            }
            WorkspaceError::Ambiguous { name, ids } => write!(
                f,
                "several workspaces are named {name:?} ({}); name one by its id or its path",
                ids.join(", ")
            ),
            WorkspaceError::Store(e) => write!(f, "store: {e}"),
        }
    }
}

/// A registered workspace as the owner's listing shows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ShownWorkspace {
    pub workspace: Workspace,
    /// Its current runs.
    pub runs: u64,
    /// Its grants that can be read now.
    pub live_grants: u64,
    /// Its grants neither revoked nor expired whose run is no longer current.
    pub stale_grants: u64,
}

/// A workspace removed, and the grants in it that removing it ended (revoked), by id.
#[derive(Debug, Clone)]
pub struct RemovedWorkspace {
    pub workspace: Workspace,
    pub ended: Vec<String>,
}

fn store_err(e: runread_store::StoreError) -> WorkspaceError {
    WorkspaceError::Store(e.to_string())
}

/// The registered (not removed) workspaces, oldest first.
pub(crate) fn registered(store: &dyn Store) -> Result<Vec<Workspace>, WorkspaceError> {
    let mut all = store.workspaces().map_err(store_err)?;
    all.retain(|w| w.enabled);
    Ok(all)
}

/// The registered workspace `which` names: its id, its root (canonical, as registered), or its
/// name when exactly one has it.
pub(crate) fn find(store: &dyn Store, which: &str) -> Result<Workspace, WorkspaceError> {
    let all = registered(store)?;
    if let Some(w) = all.iter().find(|w| w.id == which || w.path == which) {
        return Ok(w.clone());
    }
    let named: Vec<&Workspace> = all.iter().filter(|w| w.name == which).collect();
    match named.as_slice() {
        [] => Err(WorkspaceError::NoSuchWorkspace(which.to_owned())),
        [one] => Ok((*one).clone()),
        many => Err(WorkspaceError::Ambiguous {
            name: which.to_owned(),
            ids: many.iter().map(|w| w.id.clone()).collect(),
        }),
    }
}

/// Every registered workspace with its runs and its live and stale grants at `now_ms`.
pub(crate) fn shown(store: &dyn Store, now_ms: i64) -> Result<Vec<ShownWorkspace>, WorkspaceError> {
    let grants = store.grants().map_err(store_err)?;
    registered(store)?
        .into_iter()
        .map(|workspace| {
            let filter = RunFilter {
                workspace_id: Some(workspace.id.clone()),
                ..RunFilter::default()
            };
            let runs = store.runs_count(&filter).map_err(store_err)?;
            let (mut live_grants, mut stale_grants) = (0, 0);
            for g in grants
                .iter()
                .filter(|g| g.target.workspace_id == workspace.id)
            {
                let standing = grant_standing(store, g, now_ms)
                    .map_err(|e| WorkspaceError::Store(e.as_str().to_owned()))?;
                live_grants += u64::from(standing.is_live());
                stale_grants += u64::from(standing.stale.is_some());
            }
            Ok(ShownWorkspace {
                workspace,
                runs,
                live_grants,
                stale_grants,
            })
        })
        .collect()
}

/// Removes the workspace `which` names: disabled first (nothing of it is read or indexed from
/// then on), then each grant in it neither revoked nor expired revoked, its snapshots destroyed
/// as for any last grant.
pub(crate) fn remove(
    store: &dyn Store,
    which: &str,
    now_ms: i64,
) -> Result<RemovedWorkspace, WorkspaceError> {
    let found = find(store, which)?;
    let workspace = store
        .remove_workspace(&found.id, now_ms)
        .map_err(store_err)?
        .ok_or_else(|| WorkspaceError::NoSuchWorkspace(which.to_owned()))?;
    let grants = store.grants().map_err(store_err)?;
    let open: Vec<&str> = grants
        .iter()
        .filter(|g: &&Grant| g.target.workspace_id == workspace.id && g.is_live(now_ms))
        .map(|g| g.id.as_str())
        .collect();
    let ended = super::grants::revoke_grants(store, &open, now_ms)
        .map_err(WorkspaceError::Store)?
        .into_iter()
        .map(str::to_owned)
        .collect();
    Ok(RemovedWorkspace { workspace, ended })
}
