//! `runread-bench select-page --store F [--limit N] [--offset K] [--agent A] [--workspace NAME]
//! [--repeats R] [--summary]`: one page of runs, newest first, selected straight from a runread
//! SQLite store (`runs` joined with `sessions` and `workspaces`, in the order the store pages
//! runs: when each started, newest first, then session id, then the run's place in its session,
//! last first), each
//! row's `run_json` parsed, the page printed as JSON. The reference for `runread runs --json
//! --limit N`: the same rows without runread's CLI, service or answer states.
//!
//! Prints the page (pretty JSON, like `runread runs --json`), or with `--summary` only
//! `{"rows", "seconds": [...]}` (in process: open, query, serialize).

use std::time::Instant;

use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

pub struct Page<'a> {
    pub store: &'a str,
    pub limit: usize,
    pub offset: usize,
    pub agent: Option<&'a str>,
    pub workspace: Option<&'a str>,
}

fn select(p: &Page<'_>) -> Result<Vec<Value>, String> {
    let conn = Connection::open_with_flags(
        p.store,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("{}: {e}", p.store))?;
    let mut sql = String::from(
        "SELECT s.session_id, s.generation, s.workspace_id, w.revision, r.run_json, s.path, \
         s.agent, w.name FROM runs r \
         JOIN sessions s ON s.session_id = r.session_id AND s.generation = r.generation \
         JOIN workspaces w ON w.id = s.workspace_id WHERE 1 = 1",
    );
    let mut args: Vec<String> = Vec::new();
    if let Some(a) = p.agent {
        args.push(a.to_owned());
        sql.push_str(&format!(" AND s.agent = ?{}", args.len()));
    }
    if let Some(w) = p.workspace {
        args.push(w.to_owned());
        sql.push_str(&format!(" AND w.name = ?{}", args.len()));
    }
    sql.push_str(&format!(
        " ORDER BY r.started_ms DESC, r.session_id, r.ord DESC LIMIT {} OFFSET {}",
        p.limit, p.offset
    ));
    let mut stmt = conn.prepare(&sql).map_err(|e| e.to_string())?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
            ))
        })
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for row in rows {
        let (sid, generation, ws, rev, run_json, path, agent, ws_name) =
            row.map_err(|e| e.to_string())?;
        let run: Value = serde_json::from_str(&run_json).map_err(|e| e.to_string())?;
        out.push(
            json!({"sessionId": sid, "generation": generation, "workspaceId": ws,
                        "revision": rev, "run": run, "path": path, "agent": agent,
                        "workspace": ws_name}),
        );
    }
    Ok(out)
}

pub fn run(p: &Page<'_>, repeats: usize, summary: bool) -> Result<(), String> {
    let mut seconds = Vec::new();
    let mut page = Vec::new();
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        page = select(p)?;
        let text = serde_json::to_string_pretty(&page).map_err(|e| e.to_string())?;
        std::hint::black_box(&text);
        seconds.push(t.elapsed().as_secs_f64());
        if !summary {
            println!("{text}");
            return Ok(());
        }
    }
    println!("{}", json!({"rows": page.len(), "seconds": seconds}));
    Ok(())
}
