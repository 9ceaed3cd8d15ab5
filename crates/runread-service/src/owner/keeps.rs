//! Kept runs: the owner keeps the runs that matter past the agent's cleanup (`runread keep`).
//!
//! A kept run's whole evidence — every feature's lines, its registered artifacts, its subagents'
//! records — is sealed into the store as a share's snapshot is, under a data key of its own
//! ([`crate::evidence::snapshot::seal_kept`]), and read, checked and masked the same way when
//! the session file is gone. A keep rule keeps every run of a workspace as it settles (after
//! each ingest pass: `keep_pass`). Nothing is kept unless the owner asks; the kept copies
//! together stay within a bound the owner sets (`KEPT_STORE_MAX_BYTES_DEFAULT`), and a keep
//! beyond it is refused, never made room for.

use runread_core::limits::{
    KEEP_RULES_MAX, KEPT_STORE_LIMIT_MAX_BYTES, KEPT_STORE_LIMIT_MIN_BYTES,
    KEPT_STORE_MAX_BYTES_DEFAULT,
};
use runread_core::{Agent, ErrorCode};
use runread_keys::KeyProvider;
use runread_store::{KeepReason, KeepRule, KeptSummary, RunFilter, RunRecord, Store, Workspace};

use crate::evidence::snapshot::{self, Standing};

/// The setting holding the owner's bound on kept runs, in bytes.
const KEPT_LIMIT_SETTING: &str = "keep.max_bytes";

/// Why a keep was refused, or failed. Carries no path and no OS error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepError {
    /// No one registered workspace has that id, root or name (what the owner is told).
    NoWorkspace(String),
    /// The store holds [`KEEP_RULES_MAX`] keep rules already.
    TooManyRules,
    /// A bound outside [`KEPT_STORE_LIMIT_MIN_BYTES`]..=[`KEPT_STORE_LIMIT_MAX_BYTES`].
    LimitOutOfRange,
    /// The store could not be read or written.
    Unavailable,
}

impl KeepError {
    /// One line for the owner (the CLI and the console say the same).
    pub fn message(&self) -> String {
        match self {
            KeepError::NoWorkspace(why) => why.clone(),
            KeepError::TooManyRules => {
                format!("the store holds {KEEP_RULES_MAX} keep rules already: drop one first")
            }
            KeepError::LimitOutOfRange => format!(
                "the bound on kept runs must be from {} to {}",
                crate::owner::keeps::size(KEPT_STORE_LIMIT_MIN_BYTES),
                crate::owner::keeps::size(KEPT_STORE_LIMIT_MAX_BYTES)
            ),
            KeepError::Unavailable => "the store could not be read or written".to_owned(),
        }
    }
}

impl From<ErrorCode> for KeepError {
    fn from(_: ErrorCode) -> KeepError {
        KeepError::Unavailable
    }
}

fn unavailable(e: runread_store::StoreError) -> KeepError {
    tracing::error!("keeping runs: the store failed: {e}");
    KeepError::Unavailable
}

/// `bytes` as a person reads a size: `512 B`, `13.9 KiB`, `4.0 MiB`, `1.0 GiB` — the one
/// formatter the owner's views use (the CLI's `human::size` is this).
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

pub use crate::evidence::snapshot::Keeping;

impl Keeping {
    /// The run's copy is in the store, as indexed now.
    pub fn is_kept(&self) -> bool {
        matches!(self, Keeping::Kept { .. } | Keeping::AlreadyKept { .. })
    }

    /// One line for the owner (the CLI and the console say the same).
    pub fn describe(&self) -> String {
        match *self {
            Keeping::Kept {
                lines,
                bytes,
                again,
            } => format!(
                "{}: a sealed copy of its whole evidence ({lines} lines, {}) stays readable if the \
                 session file goes, until you drop it",
                if again { "kept again" } else { "kept" },
                size(bytes)
            ),
            Keeping::AlreadyKept { bytes } => {
                format!("already kept ({}), as it is indexed now", size(bytes))
            }
            Keeping::TooLarge { bytes } => format!(
                "not kept: its evidence ({}) is over the {} a run's copy may hold",
                size(bytes),
                size(runread_core::limits::SNAPSHOT_RUN_MAX_BYTES)
            ),
            Keeping::OverLimit { bytes, kept, limit } => format!(
                "not kept: with it ({}) the kept runs would pass their bound ({} kept of {}); \
                 drop a kept run (`runread keep drop`) or raise the bound (`runread keep limit`)",
                size(bytes),
                size(kept),
                size(limit)
            ),
            Keeping::Unreadable => "not kept: the session file does not hold the run as indexed \
                                    (gone, changed, or on another host)"
                .to_owned(),
        }
    }
}

/// What one pass of the keep rules did (`keep_pass`, after each ingest pass).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeptPass {
    /// Runs kept for the first time.
    pub kept: u64,
    /// Kept runs sealed again: they went on since.
    pub resealed: u64,
    /// Runs a rule would keep that were refused, each with why (over the bound, too large).
    pub refused: Vec<(RunRecord, Keeping)>,
}

/// A keep rule as the owner is shown it: its workspace by name and root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownKeepRule {
    pub rule: KeepRule,
    pub workspace_name: String,
    pub workspace_path: String,
}

/// What adding a keep rule did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepRuleAdded {
    pub workspace: Workspace,
    pub agent: Option<Agent>,
    /// `false`: the same rule was there already.
    pub new: bool,
    /// The workspace's settled runs kept now.
    pub pass: KeptPass,
}

/// A kept run as the owner is shown it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptRun {
    pub kept: KeptSummary,
    /// Whether it opens and holds its run as indexed now.
    pub standing: Standing,
    /// The run's agent, when the run is still indexed.
    pub agent: Option<Agent>,
    /// The run's workspace's name, when it is registered.
    pub workspace_name: Option<String>,
}

/// What dropping a workspace's keeps did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DroppedKeeps {
    /// Keep rules removed.
    pub rules: u64,
    /// Kept copies dropped (data key first, then row).
    pub runs: Vec<KeptSummary>,
}

/// The kept runs together, against their bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptTotals {
    pub runs: u64,
    pub bytes: u64,
    pub limit_bytes: u64,
    pub rules: u64,
}

/// The owner's bound on kept runs: the setting, else [`KEPT_STORE_MAX_BYTES_DEFAULT`].
pub(crate) fn limit(store: &dyn Store) -> Result<u64, KeepError> {
    Ok(store
        .setting(KEPT_LIMIT_SETTING)
        .map_err(unavailable)?
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|n| (KEPT_STORE_LIMIT_MIN_BYTES..=KEPT_STORE_LIMIT_MAX_BYTES).contains(n))
        .unwrap_or(KEPT_STORE_MAX_BYTES_DEFAULT))
}

pub(crate) fn set_limit(store: &dyn Store, bytes: u64) -> Result<(), KeepError> {
    if !(KEPT_STORE_LIMIT_MIN_BYTES..=KEPT_STORE_LIMIT_MAX_BYTES).contains(&bytes) {
        return Err(KeepError::LimitOutOfRange);
    }
    store
        .put_setting(KEPT_LIMIT_SETTING, &bytes.to_string())
        .map_err(unavailable)
}

pub(crate) fn totals(store: &dyn Store) -> Result<KeptTotals, KeepError> {
    let kept = store.kept_runs().map_err(unavailable)?;
    Ok(KeptTotals {
        runs: kept.len() as u64,
        bytes: store.kept_bytes().map_err(unavailable)?,
        limit_bytes: limit(store)?,
        rules: store.keep_rules().map_err(unavailable)?.len() as u64,
    })
}

/// Keeps `run` for `reason` within the owner's bound.
pub(crate) fn keep_run(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    run: &RunRecord,
    reason: KeepReason,
    now_ms: i64,
) -> Result<Keeping, KeepError> {
    let bounds = snapshot::Bounds {
        run_max_bytes: runread_core::limits::SNAPSHOT_RUN_MAX_BYTES,
        store_max_bytes: limit(store)?,
    };
    Ok(snapshot::seal_kept(
        store, keys, run, reason, now_ms, bounds,
    )?)
}

/// The registered workspace `which` names (its id, root or name).
fn workspace(store: &dyn Store, which: &str) -> Result<Workspace, KeepError> {
    crate::owner::workspaces::find(store, which).map_err(|e| match e {
        crate::owner::WorkspaceError::Store(_) => KeepError::Unavailable,
        e => KeepError::NoWorkspace(e.to_string()),
    })
}

/// Adds the rule keeping every run of the workspace `which` names (of `agent`, when named) as it
/// settles, and keeps its settled runs now.
pub(crate) fn add_rule(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    which: &str,
    agent: Option<Agent>,
    now_ms: i64,
) -> Result<KeepRuleAdded, KeepError> {
    let workspace = workspace(store, which)?;
    let rules = store.keep_rules().map_err(unavailable)?;
    let there = rules
        .iter()
        .any(|r| r.workspace_id == workspace.id && r.agent == agent);
    if !there {
        let rule = KeepRule {
            workspace_id: workspace.id.clone(),
            agent,
            created_at_ms: now_ms,
        };
        if !store
            .put_keep_rule(&rule, KEEP_RULES_MAX)
            .map_err(unavailable)?
        {
            return Err(KeepError::TooManyRules);
        }
    }
    let pass = keep_pass(store, keys, now_ms)?;
    Ok(KeepRuleAdded {
        workspace,
        agent,
        new: !there,
        pass,
    })
}

/// The keep rules, each with its workspace's name and root (a rule of a workspace removed since
/// is shown by its id).
pub(crate) fn rules(store: &dyn Store) -> Result<Vec<ShownKeepRule>, KeepError> {
    let workspaces = store.workspaces().map_err(unavailable)?;
    Ok(store
        .keep_rules()
        .map_err(unavailable)?
        .into_iter()
        .map(|rule| {
            let w = workspaces.iter().find(|w| w.id == rule.workspace_id);
            ShownKeepRule {
                workspace_name: w.map_or_else(|| rule.workspace_id.clone(), |w| w.name.clone()),
                workspace_path: w.map_or_else(String::new, |w| w.path.clone()),
                rule,
            }
        })
        .collect())
}

/// Every kept run, oldest kept first, with how it stands.
pub(crate) fn kept_runs(
    store: &dyn Store,
    keys: &dyn KeyProvider,
) -> Result<Vec<KeptRun>, KeepError> {
    let workspaces = store.workspaces().map_err(unavailable)?;
    let mut out = Vec::new();
    for kept in store.kept_runs().map_err(unavailable)? {
        let s = &kept.summary;
        let run = store
            .run(&s.session_id, s.generation, &s.run_id)
            .map_err(unavailable)?;
        out.push(KeptRun {
            standing: snapshot::kept_standing(store, keys, s)?,
            agent: run.map(|r| r.agent),
            workspace_name: workspaces
                .iter()
                .find(|w| w.id == s.workspace_id)
                .map(|w| w.name.clone()),
            kept,
        });
    }
    Ok(out)
}

/// Drops `run`'s kept copy (its data key first, then its row); whether there was one. A live
/// share's own snapshot of it stays until that share ends.
pub(crate) fn drop_run(store: &dyn Store, run: &RunRecord, now_ms: i64) -> Result<bool, KeepError> {
    let t = &run.target;
    let Some(kept) = store
        .kept_stamp(&t.session_id, t.generation, &t.run_id)
        .map_err(unavailable)?
    else {
        return Ok(false);
    };
    drop_kept(store, &kept, now_ms)
}

fn drop_kept(store: &dyn Store, kept: &KeptSummary, now_ms: i64) -> Result<bool, KeepError> {
    let s = &kept.summary;
    let dropped = store
        .drop_kept(&s.session_id, s.generation, &s.run_id)
        .map_err(unavailable)?;
    if dropped {
        snapshot::log(store, "kept dropped", s, now_ms);
    }
    Ok(dropped)
}

/// Removes the keep rules of the workspace `which` names (of `agent` only, when named) and drops
/// the kept copies of its runs (of that agent's runs, when named).
pub(crate) fn drop_workspace(
    store: &dyn Store,
    which: &str,
    agent: Option<Agent>,
    now_ms: i64,
) -> Result<DroppedKeeps, KeepError> {
    let workspace = workspace(store, which)?;
    let rules = store
        .remove_keep_rules(&workspace.id, agent)
        .map_err(unavailable)?;
    let mut runs = Vec::new();
    for kept in store.kept_runs().map_err(unavailable)? {
        let s = &kept.summary;
        if s.workspace_id != workspace.id {
            continue;
        }
        if let Some(a) = agent {
            let run = store
                .run(&s.session_id, s.generation, &s.run_id)
                .map_err(unavailable)?;
            if run.is_none_or(|r| r.agent != a) {
                continue;
            }
        }
        if drop_kept(store, &kept, now_ms)? {
            runs.push(kept);
        }
    }
    Ok(DroppedKeeps { rules, runs })
}

/// One pass of the keep rules, after an ingest pass: every settled run of a workspace a rule
/// names is kept if it is not yet, and every kept run that went on since is sealed again while
/// its file holds it. A run beyond the bound is refused and said, never made room for.
pub(crate) fn keep_pass(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    now_ms: i64,
) -> Result<KeptPass, KeepError> {
    let mut pass = KeptPass::default();
    let rules = store.keep_rules().map_err(unavailable)?;
    if rules.is_empty() {
        pass.resealed = reseal_moved(store, keys, now_ms)?;
        return Ok(pass);
    }
    let kept: std::collections::HashSet<(String, u64, String)> = store
        .kept_runs()
        .map_err(unavailable)?
        .into_iter()
        .map(|k| (k.summary.session_id, k.summary.generation, k.summary.run_id))
        .collect();
    for rule in rules {
        for run in settled_runs(store, &rule)? {
            let t = &run.target;
            if kept.contains(&(t.session_id.clone(), t.generation, t.run_id.clone())) {
                continue;
            }
            match keep_run(store, keys, &run, KeepReason::Workspace, now_ms)? {
                Keeping::Kept { again: false, .. } => pass.kept += 1,
                Keeping::Kept { again: true, .. } | Keeping::AlreadyKept { .. } => {}
                // A file gone or changed before it was kept: nothing to keep, nothing to say.
                Keeping::Unreadable => {}
                refused => pass.refused.push((run, refused)),
            }
        }
    }
    pass.resealed = reseal_moved(store, keys, now_ms)?;
    Ok(pass)
}

/// The current runs of the workspace (and agent) `rule` names that have settled, a page of the
/// store at a time.
fn settled_runs(store: &dyn Store, rule: &KeepRule) -> Result<Vec<RunRecord>, KeepError> {
    let filter = RunFilter {
        agent: rule.agent,
        workspace_id: Some(rule.workspace_id.clone()),
        status: None,
    };
    let mut runs = Vec::new();
    let mut offset = 0u64;
    loop {
        let page = store
            .runs_page(&filter, runread_store::RUNS_PAGE_MAX, offset)
            .map_err(unavailable)?;
        let got = page.len() as u64;
        runs.extend(
            page.into_iter()
                .filter(|r| r.run.status != runread_sessions::RunStatus::Running),
        );
        if got < u64::from(runread_store::RUNS_PAGE_MAX) {
            return Ok(runs);
        }
        offset += got;
    }
}

/// Seals again every kept run whose run went on since it was sealed, while its file holds it.
fn reseal_moved(store: &dyn Store, keys: &dyn KeyProvider, now_ms: i64) -> Result<u64, KeepError> {
    let mut resealed = 0;
    for kept in store.kept_runs().map_err(unavailable)? {
        let s = &kept.summary;
        let Some(run) = store
            .run(&s.session_id, s.generation, &s.run_id)
            .map_err(unavailable)?
        else {
            continue;
        };
        if !snapshot::is_behind(store, &run, s)? {
            continue;
        }
        if matches!(
            keep_run(store, keys, &run, kept.reason, now_ms)?,
            Keeping::Kept { .. }
        ) {
            resealed += 1;
        }
    }
    Ok(resealed)
}
