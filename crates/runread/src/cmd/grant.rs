//! `runread grant`, `grant list`, `grant revoke`.

use crate::Res;
use crate::args::GrantArgs;
use crate::args::GrantCmd;
use crate::context::Context;
use runread_core::Feature;
use runread_core::timefmt::{now_ms, rfc3339};
use runread_service::Owner;
use serde_json::json;
pub(crate) fn grant(ctx: &Context, mut args: GrantArgs) -> Res {
    let owner = ctx.owner()?;
    match args.action.take() {
        Some(GrantCmd::List { json }) => list_grants(&owner, json),
        Some(GrantCmd::Revoke { id }) => {
            if owner.revoke_grant(&id, now_ms())? {
                outln!("revoked {id}");
                Ok(())
            } else {
                Err(format!("no live grant {id:?}"))
            }
        }
        None => new_grant(&owner, args),
    }
}

/// A grant as `runread grant list` shows it (and `--json` prints it).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct GrantRow<'a> {
    grant_id: &'a str,
    to: &'a str,
    reader_id: &'a str,
    target: &'a runread_core::Target,
    features: &'a [Feature],
    expires_at: String,
    state: &'static str,
}

/// `runread grant list`: every grant, what the owner is shown of it, and its state now.
fn list_grants(owner: &Owner, json: bool) -> Res {
    let now = now_ms();
    let grants = owner.store().grants().map_err(|e| e.to_string())?;
    let grants = owner
        .shown_grants(grants)
        .map_err(|e| format!("cannot read the known secrets to mask the grants: {e}"))?;
    let rows: Vec<GrantRow<'_>> = grants
        .iter()
        .map(|g| GrantRow {
            grant_id: &g.id,
            to: &g.reader_name,
            reader_id: &g.reader_id,
            target: &g.target,
            features: &g.features,
            expires_at: rfc3339(g.expires_at_ms),
            state: g.state(now).as_str(),
        })
        .collect();
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
        );
    } else if rows.is_empty() {
        outln!("no grants");
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.target.run_id.as_str()).collect();
    let prefixes = owner
        .run_id_prefixes(&ids)
        .map_err(|e| format!("cannot list the grants: {e}"))?;
    for (r, run) in rows.iter().zip(&prefixes).filter(|_| !json) {
        let features: Vec<&str> = r.features.iter().map(|f| f.as_str()).collect();
        outln!(
            "{}  {:<8} {:?}  run {}  expires {}  to {}",
            r.grant_id,
            r.state,
            features,
            run,
            r.expires_at,
            r.to
        );
    }
    Ok(())
}

/// `runread grant --run …`: a new grant and its key, shown once.
fn new_grant(owner: &Owner, args: GrantArgs) -> Res {
    let run = args
        .run
        .ok_or("--run RUN_ID is required (see `runread runs`)")?;
    let features = Feature::parse_list(
        args.features
            .as_deref()
            .ok_or("--features is required, e.g. final_answer")?,
    )?;
    let expires = args.expires.ok_or("--expires is required, e.g. 15m")?;
    let to = args.to.ok_or(
        "--to READER is required (the reader to share the run with; see `runread reader list`)",
    )?;
    let now = now_ms();
    let at = runread_service::owner::expiry(&expires, now).map_err(|e| e.to_string())?;
    let g = owner
        .grant(
            runread_service::owner::GrantRequest {
                run_id: &run,
                session_id: args.session.as_deref(),
                features,
                expires_at_ms: at,
                reader: &to,
            },
            now,
        )
        .map_err(|e| e.to_string())?;
    let shown = owner
        .shown_run(g.run.clone(), now)
        .map_err(|e| format!("cannot read the known secrets to mask the run: {e}"))?;
    print_grant(&g, &shown, &args.url, args.json)
}

pub(crate) fn print_grant(
    g: &runread_service::owner::NewGrant,
    shown: &runread_core::redact::MaskedView<runread_service::owner::shown::ShownRun>,
    url: &str,
    as_json: bool,
) -> Res {
    let configs = g
        .key
        .as_deref()
        .map(|key| runread_mcp::configs::for_key(url, key));
    if as_json {
        return print_grant_json(g, shown, url, configs.as_ref());
    }
    outln!(
        "grant {} to reader {:?}, until {}",
        g.grant.id,
        g.reader.name,
        rfc3339(g.grant.expires_at_ms)
    );
    outln!(
        "run      {} — {}",
        shown.record.target.run_id,
        shown.prompt.shown()
    );
    outln!(
        "features {}",
        g.grant
            .features
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    outln!(
        "target   {}",
        serde_json::to_string(&shown.record.target).map_err(|e| e.to_string())?
    );
    outln!("snapshot {}", g.snapshot.describe());
    match (&g.key, &configs) {
        (Some(key), Some(configs)) => {
            outln!();
            outln!(
                "{:?} is a new reader: configure its client once; later grants to it need no new key.",
                g.reader.name
            );
            print_key_and_configs(key, configs, url)
        }
        _ => {
            outln!(
                "shared with the reader {:?}: its client's next call sees this run (no new key).",
                g.reader.name
            );
            Ok(())
        }
    }
}

/// A new grant as `grant --json` prints it: one object, with the key and its configs only when
/// this grant made the reader (shown once).
fn print_grant_json(
    g: &runread_service::owner::NewGrant,
    shown: &runread_core::redact::MaskedView<runread_service::owner::shown::ShownRun>,
    url: &str,
    configs: Option<&runread_mcp::configs::ClientConfigs>,
) -> Res {
    let mut out = json!({
        "grantId": g.grant.id,
        "readerId": g.reader.id,
        "to": g.reader.name,
        "newReader": g.key.is_some(),
        "target": shown.record.target,
        "features": g.grant.features,
        "url": url,
        "expiresAt": rfc3339(g.grant.expires_at_ms),
        "snapshot": snapshot_json(g.snapshot),
    });
    if let (Some(key), Some(configs)) = (&g.key, configs) {
        insert_key_json(&mut out, key, configs);
    }
    outln!(
        "{}",
        serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// What sealing a grant's snapshot did, as `--json` prints it.
pub(crate) fn snapshot_json(s: runread_service::evidence::snapshot::Sealing) -> serde_json::Value {
    use runread_service::evidence::snapshot::Sealing;
    let (kept, reason, lines, bytes) = match s {
        Sealing::Kept { lines, bytes } => (true, None, Some(lines), Some(bytes)),
        Sealing::TooLarge { bytes } => (false, Some("too_large"), None, Some(bytes)),
        Sealing::StoreFull { bytes } => (false, Some("store_full"), None, Some(bytes)),
        Sealing::Unreadable => (false, Some("source_unreadable"), None, None),
        Sealing::Failed => (false, Some("failed"), None, None),
    };
    json!({"kept": kept, "reason": reason, "lines": lines, "bytes": bytes, "says": s.describe()})
}

/// A key, shown once, and every client configuration for it, as `--json` prints them: added to
/// the object `out`.
pub(crate) fn insert_key_json(
    out: &mut serde_json::Value,
    key: &str,
    configs: &runread_mcp::configs::ClientConfigs,
) {
    if let Some(m) = out.as_object_mut() {
        m.insert("key".into(), json!(key));
        m.insert("clientConfig".into(), configs.mcp_servers.clone());
        m.insert("claudeCommand".into(), json!(configs.claude_command));
        m.insert("codexToml".into(), json!(configs.codex_toml));
    }
}

/// A key, shown once, and every ready-to-paste client configuration for it.
pub(crate) fn print_key_and_configs(
    key: &str,
    configs: &runread_mcp::configs::ClientConfigs,
    url: &str,
) -> Res {
    outln!("url      {url}");
    outln!();
    outln!("read key (shown once; only its hash is stored):");
    outln!("{key}");
    outln!();
    outln!("client config (mcpServers JSON: Claude Code --mcp-config, Cursor, Claude Desktop):");
    outln!(
        "{}",
        serde_json::to_string_pretty(&configs.mcp_servers).map_err(|e| e.to_string())?
    );
    outln!();
    outln!("Claude Code:");
    outln!("{}", configs.claude_command);
    outln!();
    outln!("Codex (~/.codex/config.toml):");
    outln!("{}", configs.codex_toml.trim_end_matches('\n'));
    outln!("# {}", runread_mcp::configs::CODEX_MODERN_NOTE);
    Ok(())
}
