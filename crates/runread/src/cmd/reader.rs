//! `runread reader add`, `list`, `rotate`, `remove`: the clients the owner shares runs with.

use crate::Res;
use crate::context::Context;
use crate::keyfile::{self, KeyOut};
use runread_core::timefmt::{now_ms, rfc3339};
use serde_json::json;

use runread_service::owner::NewReader;

use crate::args::ReaderCmd;

pub(crate) fn reader(ctx: &Context, cmd: ReaderCmd) -> Res {
    let owner = ctx.owner()?;
    match cmd {
        ReaderCmd::Add {
            name,
            url,
            key_file,
            json,
        } => {
            let key_file = key_file.as_deref().map(keyfile::check).transpose()?;
            let made = owner
                .add_reader(&name, now_ms())
                .map_err(|e| e.to_string())?;
            let out = keyfile::keep(key_file, &made.key);
            print_key(&made, "added", &url, json, &out)
        }
        ReaderCmd::Rotate {
            name,
            url,
            key_file,
            json,
        } => {
            let key_file = key_file.as_deref().map(keyfile::check).transpose()?;
            let made = owner
                .rotate_reader(&name, now_ms())
                .map_err(|e| e.to_string())?;
            let out = keyfile::keep(key_file, &made.key);
            print_key(&made, "rotated", &url, json, &out)
        }
        ReaderCmd::Remove { name, json } => {
            let removed = owner
                .remove_reader(&name, now_ms())
                .map_err(|e| e.to_string())?;
            if json {
                let out = json!({"removed": true, "readerId": removed.id, "name": removed.name});
                outln!("{out}");
                return Ok(());
            }
            outln!(
                "removed reader {:?} ({}): its key is refused from its next call and its grants are revoked",
                removed.name,
                removed.id
            );
            Ok(())
        }
        ReaderCmd::List { json } => list(&owner, json),
    }
}

/// A reader's key, shown once (or where `--key-file` wrote it), with every ready-to-paste client
/// configuration (or, `--json`, one object: the reader, the key and the configs).
pub(crate) fn print_key(
    made: &NewReader,
    what: &str,
    url: &str,
    as_json: bool,
    out_key: &KeyOut,
) -> Res {
    let configs = runread_mcp::configs::for_key(url, &made.key, &made.reader.name);
    if as_json {
        let mut out = json!({
            "readerId": made.reader.id,
            "reader": made.reader.name,
            "url": url,
        });
        crate::cmd::grant::insert_key_json(&mut out, &made.key, &configs, out_key);
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    outln!("reader {:?} {what} ({})", made.reader.name, made.reader.id);
    outln!();
    crate::cmd::grant::print_key_and_configs(&made.key, &configs, url, out_key)?;
    outln!();
    outln!(
        "Configure the client once; share runs with it with `runread grant --run RUN --to {:?} --features … --expires …`.",
        made.reader.name
    );
    Ok(())
}

/// Every live reader: its grants live now, and when its key last read.
fn list(owner: &runread_service::Owner, as_json: bool) -> Res {
    let shown = owner
        .shown_readers(now_ms())
        .map_err(|e| format!("cannot list the readers: {}", e.as_str()))?;
    let rows: Vec<ReaderRow<'_>> = shown
        .iter()
        .map(|r| ReaderRow {
            reader_id: &r.reader.id,
            name: &r.reader.name,
            created_at: rfc3339(r.reader.created_at_ms),
            live_grants: r.live.len(),
            stale_grants: r.stale.len(),
            last_read: r.last_read_ms.map(rfc3339),
        })
        .collect();
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    if rows.is_empty() {
        outln!("no readers; add one with `runread reader add NAME`");
        return Ok(());
    }
    use crate::human::WHEN_CHARS;
    let now = now_ms();
    outln!(
        "{:<20} {:<WHEN_CHARS$} {:<11} {:<12} {:<12} NAME",
        "ID",
        "CREATED",
        "LIVE GRANTS",
        "STALE GRANTS",
        "LAST READ"
    );
    for (r, s) in rows.iter().zip(&shown) {
        outln!(
            "{:<20} {:<WHEN_CHARS$} {:<11} {:<12} {:<12} {}",
            r.reader_id,
            crate::human::when(s.reader.created_at_ms),
            r.live_grants,
            r.stale_grants,
            s.last_read_ms
                .map_or_else(|| "never".to_owned(), |ms| crate::human::ago(ms, now)),
            r.name
        );
    }
    if rows.iter().any(|r| r.stale_grants > 0) {
        outln!(
            "a stale grant cannot be read (its run changed or its workspace was removed); see `runread grant list`"
        );
    }
    Ok(())
}

/// A live reader as `runread reader list` shows it (and `--json` prints it).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ReaderRow<'a> {
    reader_id: &'a str,
    name: &'a str,
    created_at: String,
    /// Only grants that can be read now.
    live_grants: usize,
    /// Grants neither revoked nor expired whose run is no longer current: they cannot be read.
    stale_grants: usize,
    last_read: Option<String>,
}
