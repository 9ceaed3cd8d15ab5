//! `runread grant`, `grant list`, `grant revoke`.

use crate::Res;
use crate::args::GrantArgs;
use crate::args::GrantCmd;
use crate::context::Context;
use crate::keyfile::{self, KeyOut};
use crate::probe::Serving;
use runread_core::Feature;
use runread_core::timefmt::{now_ms, rfc3339};
use runread_service::Owner;
use runread_service::owner::NewReaderPolicy;
use serde_json::json;
pub(crate) fn grant(ctx: &Context, mut args: GrantArgs) -> Res {
    let owner = ctx.owner()?;
    match args.action.take() {
        Some(GrantCmd::List { json }) => list_grants(&owner, json),
        Some(GrantCmd::Revoke { id, json }) => {
            if !owner.revoke_grant(&id, now_ms())? {
                return Err(format!("no live grant {id:?}; see `runread grant list`"));
            }
            if json {
                outln!("{}", json!({"revoked": true, "grantId": id}));
            } else {
                outln!("revoked {id}");
            }
            Ok(())
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
    #[serde(skip)]
    expires_at_ms: i64,
    state: &'static str,
    /// Why a stale grant cannot be read (`runread_service::admission::Staleness`).
    #[serde(skip_serializing_if = "Option::is_none")]
    stale_reason: Option<&'static str>,
    /// The state in words, with a stale grant's cause.
    #[serde(skip)]
    says: String,
}

/// `runread grant list`: every grant, what the owner is shown of it, and its state now.
fn list_grants(owner: &Owner, json: bool) -> Res {
    let now = now_ms();
    let grants = owner.store().grants().map_err(|e| e.to_string())?;
    let grants = owner
        .shown_grants(grants)
        .map_err(|e| format!("cannot read the known secrets to mask the grants: {e}"))?;
    let mut rows: Vec<GrantRow<'_>> = Vec::with_capacity(grants.len());
    for g in &grants {
        let standing = owner
            .grant_standing(g, now)
            .map_err(|e| format!("cannot tell where the grants stand: {e}"))?;
        rows.push(GrantRow {
            grant_id: &g.id,
            to: &g.reader_name,
            reader_id: &g.reader_id,
            target: &g.target,
            features: &g.features,
            expires_at: rfc3339(g.expires_at_ms),
            expires_at_ms: g.expires_at_ms,
            state: standing.state.as_str(),
            stale_reason: standing.stale.map(|why| why.as_str()),
            says: standing.says(),
        });
    }
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
        );
    } else if rows.is_empty() {
        outln!("no grants; share a run with `runread grant --run RUN --to READER`");
    }
    if json || rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.target.run_id.as_str()).collect();
    let prefixes = owner
        .run_id_prefixes(&ids)
        .map_err(|e| format!("cannot list the grants: {e}"))?;
    print_grant_table(&rows, &prefixes);
    Ok(())
}

/// `grant list` for a person: a header, then a line per grant, its expiry in local time.
fn print_grant_table(rows: &[GrantRow<'_>], run_prefixes: &[String]) {
    use crate::human::WHEN_CHARS;
    let width = |f: &dyn Fn(&GrantRow<'_>) -> usize, title: &str| {
        rows.iter().map(f).max().unwrap_or(0).max(title.len())
    };
    let id_w = width(&|r| r.grant_id.len(), "GRANT");
    let run_w = run_prefixes
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max(3);
    let to_w = width(&|r| r.to.chars().count(), "TO");
    let features: Vec<String> = rows
        .iter()
        .map(|r| {
            r.features
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let f_w = features.iter().map(String::len).max().unwrap_or(0).max(8);
    outln!(
        "{:<id_w$}  {:<run_w$}  {:<to_w$}  {:<f_w$}  {:<WHEN_CHARS$}  STATE",
        "GRANT",
        "RUN",
        "TO",
        "FEATURES",
        "EXPIRES"
    );
    for ((r, run), features) in rows.iter().zip(run_prefixes).zip(&features) {
        outln!(
            "{:<id_w$}  {:<run_w$}  {:<to_w$}  {:<f_w$}  {:<WHEN_CHARS$}  {}",
            r.grant_id,
            run,
            r.to,
            features,
            crate::human::when(r.expires_at_ms),
            r.says
        );
    }
}

/// `runread grant --run … --to …`: a new grant and its key, shown once.
fn new_grant(owner: &Owner, args: GrantArgs) -> Res {
    let (run, to) = match (args.run, args.to) {
        (Some(run), Some(to)) => (run, to),
        (run, to) => {
            let missing: Vec<&str> = [
                run.is_none().then_some("--run RUN_ID (see `runread runs`)"),
                to.is_none()
                    .then_some("--to READER (see `runread reader list`)"),
            ]
            .into_iter()
            .flatten()
            .collect();
            return Err(format!("grant needs {}", missing.join(" and ")));
        }
    };
    let features = Feature::parse_list(&args.features.join(","))?;
    // Checked before the grant: a new reader's key must have somewhere to go.
    let key_file = args
        .key_file
        .as_deref()
        .map(crate::keyfile::check)
        .transpose()?;
    let now = now_ms();
    let at = runread_service::owner::expiry(&args.expires, now).map_err(|e| e.to_string())?;
    let new_reader = if args.new_reader {
        NewReaderPolicy::Make
    } else {
        NewReaderPolicy::MakeUnlessTypo
    };
    let g = owner
        .grant(
            runread_service::owner::GrantRequest {
                run_id: &run,
                session_id: args.session.as_deref(),
                features,
                expires_at_ms: at,
                reader: &to,
                new_reader,
                label: args.label.as_deref(),
            },
            now,
        )
        .map_err(|e| e.to_string())?;
    let shown = owner
        .shown_run(g.run.clone(), now)
        .map_err(|e| format!("cannot read the known secrets to mask the run: {e}"))?;
    warn_if_no_answer(&g.grant.features, &shown.answer_state);
    let out_key = match (&g.key, key_file) {
        (Some(key), file) => keyfile::keep(file, key),
        (None, Some(file)) => {
            eprintln!(
                "runread: {:?} already has its key: no new key, nothing written to {}",
                g.reader.name,
                file.display()
            );
            KeyOut::Shown
        }
        (None, None) => KeyOut::Shown,
    };
    print_grant(&g, &shown, &args.url, args.json, &out_key)
}

/// Answer states a reader can read an answer in (now, or once the agent has written it).
const READABLE_ANSWER_STATES: [&str; 2] = ["available", "saving"];

/// A warning on stderr when the grant shares the final answer of a run that has none a reader
/// could read (a failed or cut-off run): the grant stands, the owner is told.
pub(crate) fn warn_if_no_answer(features: &[Feature], answer_state: &str) {
    if features.contains(&Feature::FinalAnswer) && !READABLE_ANSWER_STATES.contains(&answer_state) {
        eprintln!(
            "runread: warning: this run has no readable final answer (its state is \
             {answer_state}); the reader will be told so"
        );
    }
}

pub(crate) fn print_grant(
    g: &runread_service::owner::NewGrant,
    shown: &runread_core::redact::MaskedView<runread_service::owner::shown::ShownRun>,
    url: &str,
    as_json: bool,
    out_key: &KeyOut,
) -> Res {
    let configs = g
        .key
        .as_deref()
        .map(|key| runread_mcp::configs::for_key(url, key, &g.reader.name));
    if as_json {
        return print_grant_json(g, shown, url, configs.as_ref(), out_key);
    }
    print_grant_lines(g, shown)?;
    print_who_sees_it(g, configs.as_ref(), url, out_key)
}

/// What a grant made is, for a person: its id, reader and expiry, its run, features, target and
/// snapshot (`grant`, and each grant `requests approve` makes).
pub(crate) fn print_grant_lines(
    g: &runread_service::owner::NewGrant,
    shown: &runread_core::redact::MaskedView<runread_service::owner::shown::ShownRun>,
) -> Res {
    outln!(
        "grant {} to reader {:?}, until {}",
        g.grant.id,
        g.reader.name,
        crate::human::when(g.grant.expires_at_ms)
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
    Ok(())
}

/// How the reader's client comes to see the run: a new reader's key and configs; for one that
/// has its key, whether anything serves it the run now.
fn print_who_sees_it(
    g: &runread_service::owner::NewGrant,
    configs: Option<&runread_mcp::configs::ClientConfigs>,
    url: &str,
    out_key: &KeyOut,
) -> Res {
    let serving = crate::probe::probe_url(url);
    match (&g.key, configs) {
        (Some(key), Some(configs)) => {
            outln!();
            outln!(
                "{:?} is a new reader: configure its client once; later grants to it need no new key.",
                g.reader.name
            );
            print_key_and_configs(key, configs, url, out_key)?;
            if let Serving::No(_) = serving {
                outln!();
                outln!("{}", nothing_serves(url));
            }
            Ok(())
        }
        _ => {
            let name = &g.reader.name;
            match serving {
                Serving::Yes(_) => outln!(
                    "shared with the reader {name:?}: its client's next call sees this run (no new key)."
                ),
                Serving::No(_) => outln!(
                    "shared with the reader {name:?} (no new key). {}",
                    nothing_serves(url)
                ),
                Serving::Unknown => outln!(
                    "shared with the reader {name:?} (no new key): its client sees this run at {url} \
                     while runread serves there."
                ),
            }
            Ok(())
        }
    }
}

/// What a grant says when nothing answers at its reader's URL: no client sees the run until
/// runread serves, and how to start it.
fn nothing_serves(url: &str) -> String {
    format!(
        "Nothing serves {url} yet: no client can read this run until you start `runread serve` \
         (`runread serve --watch` also follows the agents' folders; `runread status` checks)."
    )
}

/// A new grant as `grant --json` prints it: one object, with the key and its configs only when
/// this grant made the reader (shown once).
fn print_grant_json(
    g: &runread_service::owner::NewGrant,
    shown: &runread_core::redact::MaskedView<runread_service::owner::shown::ShownRun>,
    url: &str,
    configs: Option<&runread_mcp::configs::ClientConfigs>,
    out_key: &KeyOut,
) -> Res {
    let mut out = grant_json(g, shown, Some(url));
    if let (Some(key), Some(configs)) = (&g.key, configs) {
        insert_key_json(&mut out, key, configs, out_key);
    }
    outln!(
        "{}",
        serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// A grant made, as `--json` prints it (`grant`, and each grant of `requests approve`): its id,
/// reader, target, features, the `url` its client reads at (when one is named), expiry and
/// snapshot.
pub(crate) fn grant_json(
    g: &runread_service::owner::NewGrant,
    shown: &runread_core::redact::MaskedView<runread_service::owner::shown::ShownRun>,
    url: Option<&str>,
) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    out.insert("grantId".into(), json!(g.grant.id));
    out.insert("readerId".into(), json!(g.reader.id));
    out.insert("to".into(), json!(g.reader.name));
    out.insert("newReader".into(), json!(g.key.is_some()));
    out.insert("target".into(), json!(shown.record.target));
    out.insert("features".into(), json!(g.grant.features));
    if let Some(url) = url {
        out.insert("url".into(), json!(url));
    }
    out.insert("expiresAt".into(), json!(rfc3339(g.grant.expires_at_ms)));
    out.insert("snapshot".into(), snapshot_json(g.snapshot));
    serde_json::Value::Object(out)
}

/// What sealing a grant's snapshot did, as `--json` prints it.
pub(crate) fn snapshot_json(s: runread_service::evidence::snapshot::Sealing) -> serde_json::Value {
    use runread_service::evidence::snapshot::Sealing;
    // `sealed`, not `kept`: a share's snapshot is not a run the owner kept (`runread keep`).
    let (sealed, reason, lines, bytes) = match s {
        Sealing::Kept { lines, bytes } => (true, None, Some(lines), Some(bytes)),
        Sealing::TooLarge { bytes } => (false, Some("too_large"), None, Some(bytes)),
        Sealing::StoreFull { bytes } => (false, Some("store_full"), None, Some(bytes)),
        Sealing::Unreadable => (false, Some("source_unreadable"), None, None),
        Sealing::Failed => (false, Some("failed"), None, None),
    };
    json!({"sealed": sealed, "reason": reason, "lines": lines, "bytes": bytes, "says": s.describe()})
}

/// A key, shown once, and every client configuration for it, as `--json` prints them: added to
/// the object `out`. The configs read the key from `$RUNREAD_KEY` (`keyEnv`); `storeKeyLine`
/// stores it in `keyFile`, `exportKeyLine` exports it; `clientConfigLiteral` holds the key itself
/// for a client that takes only literal header values. When `--key-file` wrote the key, `keyFile`
/// is that file and nothing holds the key (no `key`, `storeKeyLine`, `clientConfigLiteral`).
pub(crate) fn insert_key_json(
    out: &mut serde_json::Value,
    key: &str,
    configs: &runread_mcp::configs::ClientConfigs,
    out_key: &KeyOut,
) {
    if let Some(m) = out.as_object_mut() {
        m.insert("keyEnv".into(), json!(runread_mcp::configs::KEY_ENV));
        match out_key {
            KeyOut::Shown => {
                m.insert("key".into(), json!(key));
                m.insert("keyFile".into(), json!(configs.key_file));
                m.insert("storeKeyLine".into(), json!(configs.store_key));
                m.insert("exportKeyLine".into(), json!(configs.export_key));
                m.insert(
                    "clientConfigLiteral".into(),
                    configs.mcp_servers_literal.clone(),
                );
            }
            KeyOut::Written(path) => {
                let path = path.display().to_string();
                m.insert(
                    "exportKeyLine".into(),
                    json!(runread_mcp::configs::export_from(&path)),
                );
                m.insert("keyFile".into(), json!(path));
            }
        }
        m.insert("clientConfig".into(), configs.mcp_servers.clone());
        m.insert("claudeCommand".into(), json!(configs.claude_command));
        m.insert("codexToml".into(), json!(configs.codex_toml));
        m.insert("piConfig".into(), configs.pi_json.clone());
        m.insert("piCommand".into(), json!(configs.pi_command));
    }
}

/// A key, shown once, the lines that keep it in a file and the environment, and every
/// ready-to-paste client configuration, each reading it from `$RUNREAD_KEY` where the client can.
pub(crate) fn print_key_and_configs(
    key: &str,
    configs: &runread_mcp::configs::ClientConfigs,
    url: &str,
    out_key: &KeyOut,
) -> Res {
    use runread_mcp::configs::{
        AUTHORIZATION_NOTE, CLAUDE_UNSET_NOTE, CODEX_MODERN_NOTE, KEY_ENV, LITERAL_NOTE,
    };
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).map_err(|e| e.to_string());
    outln!("url      {url}");
    outln!();
    match out_key {
        KeyOut::Shown => {
            outln!("read key (shown once; only its hash is stored):");
            outln!("{key}");
            outln!();
            outln!(
                "Keep it in a file only you can read, and in ${KEY_ENV} of the shell (or profile) that starts the client:"
            );
            outln!("{}", configs.store_key);
            outln!("{}", configs.export_key);
        }
        KeyOut::Written(path) => {
            let path = path.display().to_string();
            outln!("read key written to {path} (mode 0600; not shown; only its hash is stored).");
            outln!("Put it in ${KEY_ENV} of the shell (or profile) that starts the client:");
            outln!("{}", runread_mcp::configs::export_from(&path));
        }
    }
    outln!();
    outln!("The configs below read the key from ${KEY_ENV}; none of them holds it.");
    outln!();
    outln!("Claude Code (it expands ${{{KEY_ENV}}} when it connects):");
    outln!("{}", configs.claude_command);
    outln!("# {CLAUDE_UNSET_NOTE}");
    outln!();
    outln!("Codex (~/.codex/config.toml; env_http_headers names the variable):");
    outln!("{}", configs.codex_toml.trim_end_matches('\n'));
    outln!("# {CODEX_MODERN_NOTE}");
    outln!();
    outln!("Pi (~/.pi/agent/mcp.json):");
    outln!("{}", pretty(&configs.pi_json)?);
    outln!("or: {}", configs.pi_command);
    outln!();
    outln!(
        "mcpServers JSON (Claude Code --mcp-config or .mcp.json; clients that expand ${{VAR}}):"
    );
    outln!("{}", pretty(&configs.mcp_servers)?);
    outln!();
    outln!("{LITERAL_NOTE}");
    outln!("{AUTHORIZATION_NOTE}");
    Ok(())
}
