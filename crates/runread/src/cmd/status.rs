//! `runread status`: the self-check. Is runread serving where readers' clients look; which
//! agents' session folders it follows, and what the store holds of each; who reads; which shared
//! runs an agent will delete soon on its own; where the store is.

use std::net::SocketAddr;
use std::path::Path;

use runread_core::Agent;
use runread_core::timefmt::{now_ms, rfc3339};
use runread_ingest::AgentDir;
use runread_store::{RunFilter, Store};
use serde::Serialize;

use crate::Res;
use crate::args::StatusArgs;
use crate::context::Context;
use crate::human;
use crate::probe::{Serving, probe};
use crate::storeopen::Location;

/// Most sessions of one folder counted: a folder with more is said to hold "more than" this.
pub(crate) const FOLDER_SESSIONS_COUNTED_MAX: u32 = 10_000;
/// How far ahead `status` looks for session files an agent will delete on its own.
pub(crate) const CLEANUP_LOOKAHEAD_DAYS: i64 = 7;
const DAY_MS: i64 = 86_400_000;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    serving: ServingStatus,
    agents: Vec<AgentStatus>,
    readers: Vec<ReaderStatus>,
    access_requests: AccessRequestsStatus,
    /// The runs the owner kept (`runread keep`) against their bound; `None` when the store or the
    /// keys could not say.
    kept: Option<KeptStatus>,
    store: StoreStatus,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KeptStatus {
    runs: u64,
    bytes: u64,
    limit_bytes: u64,
    rules: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AccessRequestsStatus {
    /// Requests readers filed (`request_access`) that wait for the owner's decision now.
    pending: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServingStatus {
    /// Whether something accepts connections at `address`.
    answering: bool,
    address: SocketAddr,
    url: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentStatus {
    agent: &'static str,
    folders: Vec<FolderStatus>,
    /// Its current runs in the store.
    runs: u64,
    /// How it deletes its own session files; `None`: it keeps them.
    cleanup: Option<CleanupStatus>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FolderStatus {
    path: String,
    /// Named to `ingest` once (else: the agent's default place).
    remembered: bool,
    exists: bool,
    /// Its sessions in the store, at most [`FOLDER_SESSIONS_COUNTED_MAX`].
    sessions: u64,
    /// It holds more than `sessions`.
    more_sessions: bool,
    /// Of `sessions`, those whose file the agent deletes on its own within
    /// [`CLEANUP_LOOKAHEAD_DAYS`] (shared or not); `None`: it keeps its files.
    deleted_within_week: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CleanupStatus {
    after_days: u32,
    /// The settings file that sets `after_days`; `None`: the agent's default.
    set_in: Option<String>,
    /// Shared runs (a live grant holds them) whose session file goes within
    /// [`CLEANUP_LOOKAHEAD_DAYS`].
    shared_at_risk: Vec<AtRisk>,
    /// Current runs whose session file goes within [`CLEANUP_LOOKAHEAD_DAYS`] and that are not
    /// kept (`runread keep`): gone for good then, unless a share's snapshot holds them.
    not_kept_deleted_within_week: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AtRisk {
    run_id: String,
    session_id: String,
    reader: String,
    /// From when the agent deletes the session file (at its next start).
    deleted_from: String,
    #[serde(skip)]
    deleted_from_ms: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReaderStatus {
    name: String,
    live_grants: u64,
    last_read: Option<String>,
    #[serde(skip)]
    last_read_ms: Option<i64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StoreStatus {
    kind: &'static str,
    /// The SQLite file, or the PostgreSQL URL without its password.
    location: String,
    /// Bytes on disk (the SQLite file and its write-ahead log); `None` for PostgreSQL.
    bytes: Option<u64>,
    schema_version: usize,
}

/// `runread status`.
pub(crate) fn status(ctx: &Context, args: StatusArgs) -> Res {
    let now = now_ms();
    let store = &*ctx.store;
    let remembered = crate::folders::remembered(ctx.home.dir());
    let status = Status {
        serving: serving(args.listen),
        agents: Agent::ALL
            .into_iter()
            .map(|agent| agent_status(store, &remembered, agent, now))
            .collect::<Result<_, _>>()?,
        readers: readers(store, now)?,
        access_requests: AccessRequestsStatus {
            pending: store
                .access_requests_pending_count(now)
                .map_err(unanswered)?,
        },
        kept: kept_status(ctx),
        store: store_status(&ctx.store_location),
    };
    if args.json {
        let text = serde_json::to_string_pretty(&status).map_err(|e| e.to_string())?;
        outln!("{text}");
        return Ok(());
    }
    print_serving(&status.serving);
    for a in &status.agents {
        print_agent(a, now);
    }
    print_readers(&status.readers, now);
    print_access_requests(&status.access_requests);
    print_kept(status.kept.as_ref());
    print_store(&status.store);
    Ok(())
}

fn serving(listen: SocketAddr) -> ServingStatus {
    ServingStatus {
        answering: matches!(probe(listen), Serving::Yes(_)),
        address: listen,
        url: format!("http://{listen}{}", runread_mcp::MCP_PATH),
    }
}

/// Why the store could not answer, for the owner.
fn unanswered(e: runread_store::StoreError) -> String {
    format!("the store did not answer: {e}")
}

fn agent_status(
    store: &dyn Store,
    remembered: &[AgentDir],
    agent: Agent,
    now: i64,
) -> Result<AgentStatus, String> {
    let default: Vec<AgentDir> = AgentDir::default_for(agent).into_iter().collect();
    let remembered: Vec<AgentDir> = remembered
        .iter()
        .filter(|d| d.agent == agent)
        .cloned()
        .collect();
    let dirs = crate::folders::with_remembered(default.clone(), remembered);
    let cleanup = runread_sessions::profile(agent).cleanup();
    let folders = dirs
        .iter()
        .map(|d| folder_status(store, d, !default.contains(d), cleanup.as_ref(), now))
        .collect::<Result<_, _>>()?;
    let filter = RunFilter {
        agent: Some(agent),
        ..RunFilter::default()
    };
    let cleanup = match cleanup {
        Some(c) => Some(cleanup_status(store, agent, c, &dirs, now)?),
        None => None,
    };
    Ok(AgentStatus {
        agent: agent.as_str(),
        folders,
        runs: store.runs_count(&filter).map_err(unanswered)?,
        cleanup,
    })
}

/// When `cleanup` deletes a file last written at `written_ms`, if that is within
/// [`CLEANUP_LOOKAHEAD_DAYS`] of `now` (or past).
fn deleted_soon(cleanup: &runread_sessions::Cleanup, written_ms: i64, now: i64) -> Option<i64> {
    let kept_ms = i64::from(cleanup.after_days).saturating_mul(DAY_MS);
    let deleted_from = written_ms.saturating_add(kept_ms);
    (deleted_from <= now.saturating_add(CLEANUP_LOOKAHEAD_DAYS * DAY_MS)).then_some(deleted_from)
}

fn folder_status(
    store: &dyn Store,
    d: &AgentDir,
    remembered: bool,
    cleanup: Option<&runread_sessions::Cleanup>,
    now: i64,
) -> Result<FolderStatus, String> {
    let path = d.dir.display().to_string();
    // A folder's own sessions, not a sibling's whose name it begins (`projects-old`).
    let prefix = format!("{}/", path.trim_end_matches('/'));
    let found = store
        .session_stamps_with_path_prefix(&prefix, FOLDER_SESSIONS_COUNTED_MAX)
        .map_err(unanswered)?;
    let (sessions, more_sessions) = counted(found.len(), FOLDER_SESSIONS_COUNTED_MAX);
    let deleted_within_week = cleanup.map(|c| {
        found
            .iter()
            .take(FOLDER_SESSIONS_COUNTED_MAX as usize)
            .filter_map(|s| modified_ms(Path::new(&s.path)))
            .filter(|&written| deleted_soon(c, written, now).is_some())
            .count() as u64
    });
    Ok(FolderStatus {
        deleted_within_week,
        exists: d.dir.is_dir(),
        path,
        remembered,
        sessions,
        more_sessions,
    })
}

/// `found` answers of a query asked for at most `max` (and answering one more when there are
/// more): how many to say, and whether there are more.
fn counted(found: usize, max: u32) -> (u64, bool) {
    let found = found as u64;
    (found.min(u64::from(max)), found > u64::from(max))
}

/// The runs a live grant holds whose session file `agent` deletes within
/// [`CLEANUP_LOOKAHEAD_DAYS`]: it deletes a file not written to for `after_days` days.
fn cleanup_status(
    store: &dyn Store,
    agent: Agent,
    cleanup: runread_sessions::Cleanup,
    dirs: &[AgentDir],
    now: i64,
) -> Result<CleanupStatus, String> {
    let not_kept_deleted_within_week = not_kept_going(store, agent, &cleanup, dirs, now)?;
    let mut shared_at_risk = Vec::new();
    for g in store.grants().map_err(unanswered)? {
        if !g.is_live(now) {
            continue;
        }
        let Some(session) = store.session(&g.target.session_id).map_err(unanswered)? else {
            continue;
        };
        if session.agent != agent {
            continue;
        }
        let Some(written_ms) = modified_ms(Path::new(&session.path)) else {
            continue;
        };
        if let Some(deleted_from_ms) = deleted_soon(&cleanup, written_ms, now) {
            shared_at_risk.push(AtRisk {
                run_id: g.target.run_id.clone(),
                session_id: g.target.session_id.clone(),
                reader: g.reader_name.clone(),
                deleted_from: rfc3339(deleted_from_ms),
                deleted_from_ms,
            });
        }
    }
    Ok(CleanupStatus {
        after_days: cleanup.after_days,
        set_in: cleanup.set_in.map(|p| p.display().to_string()),
        shared_at_risk,
        not_kept_deleted_within_week,
    })
}

/// How many current runs of `agent` in `dirs` have a session file `cleanup` deletes within
/// [`CLEANUP_LOOKAHEAD_DAYS`] and no kept copy: the runs its cleanup takes for good.
fn not_kept_going(
    store: &dyn Store,
    agent: Agent,
    cleanup: &runread_sessions::Cleanup,
    dirs: &[AgentDir],
    now: i64,
) -> Result<u64, String> {
    let mut going = std::collections::HashSet::new();
    for d in dirs {
        let prefix = format!("{}/", d.dir.display().to_string().trim_end_matches('/'));
        for s in store
            .sessions_with_path_prefix(&prefix, FOLDER_SESSIONS_COUNTED_MAX)
            .map_err(unanswered)?
        {
            if modified_ms(Path::new(&s.path))
                .is_some_and(|w| deleted_soon(cleanup, w, now).is_some())
            {
                going.insert(s.session_id);
            }
        }
    }
    if going.is_empty() {
        return Ok(0);
    }
    let kept: std::collections::HashSet<(String, u64, String)> = store
        .kept_runs()
        .map_err(unanswered)?
        .into_iter()
        .map(|k| (k.summary.session_id, k.summary.generation, k.summary.run_id))
        .collect();
    let filter = RunFilter {
        agent: Some(agent),
        ..RunFilter::default()
    };
    let (mut count, mut offset) = (0u64, 0u64);
    loop {
        let page = store
            .runs_page(&filter, runread_store::RUNS_PAGE_MAX, offset)
            .map_err(unanswered)?;
        let got = page.len() as u64;
        count += page
            .iter()
            .map(|r| &r.target)
            .filter(|t| going.contains(&t.session_id))
            .filter(|t| !kept.contains(&(t.session_id.clone(), t.generation, t.run_id.clone())))
            .count() as u64;
        if got < u64::from(runread_store::RUNS_PAGE_MAX) {
            return Ok(count);
        }
        offset += got;
    }
}

/// The kept runs' total against their bound; `None` (said as unknown) when the keys or the store
/// could not say: the rest of `status` still shows.
fn kept_status(ctx: &Context) -> Option<KeptStatus> {
    let t = ctx.owner().ok()?.kept_totals().ok()?;
    Some(KeptStatus {
        runs: t.runs,
        bytes: t.bytes,
        limit_bytes: t.limit_bytes,
        rules: t.rules,
    })
}

/// When the file at `path` was last written, in ms since the epoch; `None` when it is gone.
fn modified_ms(path: &Path) -> Option<i64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

fn readers(store: &dyn Store, now: i64) -> Result<Vec<ReaderStatus>, String> {
    let grants = store.grants().map_err(unanswered)?;
    let last_reads = store.reader_last_reads().map_err(unanswered)?;
    Ok(store
        .readers()
        .map_err(unanswered)?
        .into_iter()
        .filter(|r| r.removed_at_ms.is_none())
        .map(|r| {
            let last_read_ms = last_reads
                .iter()
                .find(|(id, _)| *id == r.id)
                .map(|(_, ms)| *ms);
            ReaderStatus {
                live_grants: grants
                    .iter()
                    .filter(|g| g.reader_id == r.id && g.is_live(now))
                    .count() as u64,
                last_read: last_read_ms.map(rfc3339),
                last_read_ms,
                name: r.name,
            }
        })
        .collect())
}

fn store_status(location: &Location) -> StoreStatus {
    match location {
        Location::Sqlite(path) => StoreStatus {
            kind: "sqlite",
            // Absolute, whatever `--home` was relative to.
            location: std::fs::canonicalize(path)
                .as_deref()
                .unwrap_or(path)
                .display()
                .to_string(),
            bytes: Some(sqlite_bytes(path)),
            schema_version: runread_store::SCHEMA_VERSION,
        },
        Location::Postgres(url) => StoreStatus {
            kind: "postgres",
            location: url.clone(),
            bytes: None,
            schema_version: runread_store::SCHEMA_VERSION,
        },
    }
}

/// The SQLite file's bytes with its write-ahead log and shared-memory index beside it.
fn sqlite_bytes(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .into_iter()
        .filter_map(|suffix| {
            let mut name = db.as_os_str().to_owned();
            name.push(suffix);
            std::fs::metadata(name).ok().map(|m| m.len())
        })
        .sum()
}

fn print_serving(s: &ServingStatus) {
    if s.answering {
        outln!("serving      yes: something answers at {}", s.url);
    } else {
        outln!(
            "serving      no: nothing answers at {}; start it with `runread serve` \
             (`--watch` also follows the folders below)",
            s.address
        );
    }
}

fn print_agent(a: &AgentStatus, now: i64) {
    let product = Agent::parse(a.agent).map_or(a.agent, Agent::product);
    outln!(
        "{product:<12} {} in the store",
        human::count(a.runs, "run", "runs")
    );
    for f in &a.folders {
        let sessions = human::count(f.sessions, "session", "sessions");
        let more = if f.more_sessions { "more than " } else { "" };
        let found = if f.exists { "" } else { ", not there" };
        let whose = if f.remembered {
            "remembered"
        } else {
            "default"
        };
        let going = match f.deleted_within_week {
            Some(n) if n > 0 => format!(", {n} of them deleted by {product} within a week"),
            _ => String::new(),
        };
        outln!(
            "  folder     {} ({whose}{found}): {more}{sessions}{going}",
            f.path
        );
    }
    let Some(c) = &a.cleanup else { return };
    let set = c
        .set_in
        .as_deref()
        .map_or_else(|| "its default".to_owned(), |p| format!("set in {p}"));
    outln!(
        "  cleanup    deletes session files not written to for {} ({set})",
        human::count(u64::from(c.after_days), "day", "days")
    );
    if c.not_kept_deleted_within_week > 0 {
        outln!(
            "  not kept   {} deleted by {product} within a week and not kept: keep them with \
             `runread keep --workspace NAME` or `runread keep RUN`",
            human::count(c.not_kept_deleted_within_week, "run", "runs")
        );
    }
    for r in &c.shared_at_risk {
        outln!(
            "  at risk    run {} shared with {:?}: its session file goes at {product}'s first start \
             after {} ({})",
            r.run_id,
            r.reader,
            human::when(r.deleted_from_ms),
            human::ago(r.deleted_from_ms, now)
        );
    }
}

/// `kept runs: N, X of Y bound; K keep rules`.
fn print_kept(k: Option<&KeptStatus>) {
    let Some(k) = k else {
        outln!("kept runs: unknown (the store or the keys could not say)");
        return;
    };
    outln!(
        "kept runs: {}, {} of {} bound; {}",
        k.runs,
        human::size(k.bytes),
        human::size(k.limit_bytes),
        human::count(k.rules, "keep rule", "keep rules")
    );
}

fn print_readers(readers: &[ReaderStatus], now: i64) {
    if readers.is_empty() {
        outln!("readers      none; add one with `runread reader add NAME`");
        return;
    }
    outln!("readers      {}", readers.len());
    for r in readers {
        let last = r.last_read_ms.map_or_else(
            || "never read".to_owned(),
            |ms| format!("last read {}", human::ago(ms, now)),
        );
        outln!(
            "  {:<10} {}, {last}",
            r.name,
            human::count(r.live_grants, "live grant", "live grants")
        );
    }
}

/// `access requests: N pending`, and where to decide them when there are any.
fn print_access_requests(r: &AccessRequestsStatus) {
    if r.pending == 0 {
        outln!("access requests: 0 pending");
    } else {
        outln!(
            "access requests: {} pending; decide with `runread requests` or on the console",
            r.pending
        );
    }
}

fn print_store(s: &StoreStatus) {
    let size = s
        .bytes
        .map_or_else(String::new, |b| format!(", {}", human::size(b)));
    outln!(
        "store        {} {}{size}, schema version {}",
        s.kind,
        s.location,
        s.schema_version
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_deleted_at_the_end_of_the_lookahead_is_soon_and_a_ms_later_is_not() {
        let now = 1_000_000_000_000;
        let cleanup = runread_sessions::Cleanup {
            after_days: 30,
            set_in: None,
        };
        let at_edge = now + (CLEANUP_LOOKAHEAD_DAYS - 30) * DAY_MS;
        assert_eq!(
            deleted_soon(&cleanup, at_edge, now),
            Some(now + CLEANUP_LOOKAHEAD_DAYS * DAY_MS)
        );
        assert_eq!(deleted_soon(&cleanup, at_edge + 1, now), None);
        assert!(deleted_soon(&cleanup, i64::MIN, now).is_some(), "long gone");
        assert_eq!(deleted_soon(&cleanup, i64::MAX, now), None);
    }

    #[test]
    fn a_folder_of_max_sessions_is_counted_and_one_more_is_more() {
        let max = FOLDER_SESSIONS_COUNTED_MAX;
        assert_eq!(counted(max as usize, max), (u64::from(max), false));
        assert_eq!(counted(max as usize + 1, max), (u64::from(max), true));
    }
}
