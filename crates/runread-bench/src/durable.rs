//! The durable echo's durable part: exactly the store work runread's gate does per tool call —
//! a start record, then a receipt, each committed durably (SQLite WAL, `synchronous=FULL`) through
//! runread's own [`SqliteStore`] write path (the same schema, statements and group commit) — and
//! nothing else: no admission, no sealing, no reading, no masking, no labels.
//!
//! The records are runread's own: for each tool, the newest start record with an `ok` receipt in
//! the store it writes to (a copy of the home `runread serve` answered from, so the tables, their
//! indexes and their sizes are the ones runread writes into). Each call writes a copy with fresh
//! ids of the same lengths and the current time, so every byte written has the size runread's
//! would, and the replay check (by idempotency key, inside the commit) finds nothing, as runread's
//! finds nothing for a new request.

use runread_store::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use runread_core::limits::REPLAY_WINDOW_MS;
use runread_store::sqlite::SqliteStore;
use runread_store::{Receipt, StartOutcome, StartRecord};

/// One tool's start record and receipt, as runread wrote them.
struct Template {
    start: StartRecord,
    receipt: Receipt,
}

pub struct Durable {
    store: SqliteStore,
    templates: HashMap<String, Arc<Template>>,
    /// The template for a tool runread does not have (the echo's `echo`).
    fallback: Arc<Template>,
    next: AtomicU64,
    /// Keeps this process's ids apart from those of an earlier run on the same copy.
    seed: u64,
}

impl Durable {
    /// Opens the store at `path` (a copy of runread's home store) and takes its templates; a call
    /// to a tool it lacks writes `fallback_tool`'s.
    pub fn open(path: &Path, fallback_tool: &str) -> Result<Durable, String> {
        let store = SqliteStore::open(path).map_err(|e| e.to_string())?;
        let templates = templates(path, &store)?;
        let fallback = templates
            .get(fallback_tool)
            .cloned()
            .ok_or_else(|| format!("no {fallback_tool} call with an ok receipt in {path:?}"))?;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_nanos() as u64;
        Ok(Durable {
            store,
            templates,
            fallback,
            next: AtomicU64::new(0),
            seed,
        })
    }

    /// The tools it holds runread's records of.
    pub fn tools(&self) -> Vec<&str> {
        self.templates.keys().map(String::as_str).collect()
    }

    /// A call's durable work: its start record, then its receipt, each committed before returning
    /// (blocking: call it on a blocking thread, as runread's gate does).
    pub fn record(&self, tool: &str) -> Result<(), String> {
        let t = self.templates.get(tool).unwrap_or(&self.fallback);
        let n = self.next.fetch_add(1, Ordering::Relaxed) ^ self.seed;
        let now = runread_core::timefmt::now_ms();
        let mut start = t.start.clone();
        start.meta.start_id = same_length(&start.meta.start_id, n);
        start.meta.idempotency_key = same_length(&start.meta.idempotency_key, n);
        start.meta.created_at_ms = now;
        match self
            .store
            .begin_call(&start, now - REPLAY_WINDOW_MS)
            .map_err(|e| e.to_string())?
        {
            StartOutcome::Created => {}
            StartOutcome::Existing(_) => return Err("an id repeated".into()),
        }
        let mut receipt = t.receipt.clone();
        receipt.receipt_id = same_length(&receipt.receipt_id, n);
        receipt.start_id = start.meta.start_id;
        receipt.created_at_ms = now;
        self.store
            .append_receipt(&receipt)
            .map_err(|e| e.to_string())
    }
}

/// `id` with its last 16 characters replaced by `n` in hex: a fresh id of the same length.
fn same_length(id: &str, n: u64) -> String {
    let keep = id.len().saturating_sub(16);
    let head = id.get(..keep).unwrap_or("");
    let tail = format!("{n:016x}");
    format!("{head}{}", &tail[16 - (id.len() - keep)..])
}

/// For each tool, the newest start record that has an `ok` receipt, with that receipt: the ids
/// found by one grouped query on `path` (SQLite returns a group's other columns from its `max`
/// row), the records read through `store`.
fn templates(path: &Path, store: &SqliteStore) -> Result<HashMap<String, Arc<Template>>, String> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| e.to_string())?;
    let mut stmt = conn
        .prepare(
            "SELECT s.tool, s.start_id, max(s.created_at) FROM start_records s \
             JOIN receipts r ON r.start_id = s.start_id WHERE r.outcome = 'ok' GROUP BY s.tool",
        )
        .map_err(|e| e.to_string())?;
    let rows: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(|e| e.to_string())?
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let mut out = HashMap::new();
    for (tool, start_id) in rows {
        let start = store
            .start_record(&start_id)
            .map_err(|e| e.to_string())?
            .ok_or("start record vanished")?;
        let receipt = store
            .receipts(&start_id)
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|r| r.outcome == "ok")
            .ok_or("receipt vanished")?;
        out.insert(tool, Arc::new(Template { start, receipt }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::same_length;

    #[test]
    fn a_fresh_id_keeps_the_length_and_differs() {
        let id = "st_0123456789abcdef0123456789abcdef";
        let a = same_length(id, 1);
        let b = same_length(id, 2);
        assert_eq!(a.len(), id.len());
        assert_ne!(a, b);
        assert!(a.starts_with("st_0123456789abcdef"));
        assert_eq!(same_length("abc", 0x1f).len(), 3);
    }
}
