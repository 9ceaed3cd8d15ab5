//! `runread keep`: the runs the owner keeps past the agent's own cleanup — one run by name, or a
//! workspace's runs as they settle (a keep rule) — and `keep list`, `keep drop`, `keep limit`.
//!
//! A kept copy is not a share's snapshot: the words stay apart ("kept" here, "sealed for sharing"
//! for a share's), and dropping a keep leaves a live share's own snapshot until that share ends.
//! What the service says of a keep ([`runread_service::owner::Keeping::describe`], [`runread_service::owner::KeepError::message`]) is said as it
//! is: it names no path and no OS error. Ids and names are shown masked, as every view of the
//! owner's is.

use serde::{Deserialize, Serialize};
use serde_json::json;

use runread_core::Agent;
use runread_core::timefmt::{now_ms, rfc3339};
use runread_service::Owner;
use runread_service::owner::{KeepError, KeptTotals};
use runread_store::RunRecord;

use crate::Res;
use crate::args::{KeepArgs, KeepCmd};
use crate::context::Context;
use crate::human;

pub(crate) fn keep(ctx: &Context, args: KeepArgs) -> Res {
    let owner = ctx.owner()?;
    match args.action {
        Some(KeepCmd::List { json }) => list(&owner, json),
        Some(KeepCmd::Drop {
            run,
            session,
            workspace,
            agent,
        }) => match (run, workspace) {
            (Some(run), None) => drop_run(&owner, &run, session.as_deref()),
            (None, Some(w)) => drop_workspace(&owner, &w, agent),
            _ => Err(name_one("keep drop")),
        },
        Some(KeepCmd::Limit { size }) => limit(&owner, size.as_deref()),
        None => match (args.run, args.workspace) {
            (Some(run), None) => keep_run(&owner, &run, args.session.as_deref()),
            (None, Some(w)) => keep_workspace(&owner, &w, args.agent),
            _ => Err(name_one("keep")),
        },
    }
}

/// Why `runread {command}` did nothing: it names neither a run nor a workspace.
fn name_one(command: &str) -> String {
    format!(
        "name a run (`runread {command} RUN`) or a workspace (`runread {command} --workspace \
         NAME`); see `runread keep list`"
    )
}

/// A keep's failure as the owner is told it: the service's fixed line.
fn failed(e: KeepError) -> String {
    e.message()
}

/// The run `run` (and `session`) names, as `runread show` resolves it.
fn resolve(owner: &Owner, run: &str, session: Option<&str>) -> Result<RunRecord, String> {
    owner.resolve_run(run, session).map_err(|e| e.to_string())
}

/// `ids`, masked, each cut to the shortest prefix `runread show` takes back.
fn prefixes(owner: &Owner, ids: Vec<String>) -> Result<Vec<String>, String> {
    let masked = owner
        .shown(ids)
        .map_err(|e| format!("cannot read the known secrets to mask the runs: {e}"))?
        .into_inner();
    let ids: Vec<&str> = masked.iter().map(String::as_str).collect();
    owner
        .run_id_prefixes(&ids)
        .map_err(|e| format!("cannot list the runs: {e}"))
}

/// `runread keep RUN`: keeps it, or says why not and fails (nothing is dropped to make room).
fn keep_run(owner: &Owner, run: &str, session: Option<&str>) -> Res {
    let run = resolve(owner, run, session)?;
    let keeping = owner.keep_run(&run, now_ms()).map_err(failed)?;
    if !keeping.is_kept() {
        return Err(keeping.describe());
    }
    outln!("{}", keeping.describe());
    Ok(())
}

/// `runread keep --workspace W`: the rule, the runs it kept now, and each it refused with why.
fn keep_workspace(owner: &Owner, which: &str, agent: Option<Agent>) -> Res {
    let added = owner
        .add_keep_rule(which, agent, now_ms())
        .map_err(failed)?;
    let w = owner
        .shown((added.workspace.name.clone(), added.workspace.path.clone()))
        .map_err(|e| format!("cannot read the known secrets to mask the workspace: {e}"))?
        .into_inner();
    let whose = agent.map_or_else(String::new, |a| format!("{a}'s "));
    outln!(
        "{} every {whose}run of workspace {} ({}) as it settles",
        if added.new {
            "keeping"
        } else {
            "already keeping"
        },
        human::inert(&w.0),
        human::inert(&w.1)
    );
    let pass = &added.pass;
    outln!(
        "kept {} now{}",
        human::count(pass.kept, "run", "runs"),
        if pass.resealed > 0 {
            format!(
                ", {} sealed again",
                human::count(pass.resealed, "kept run", "kept runs")
            )
        } else {
            String::new()
        }
    );
    let ids = pass
        .refused
        .iter()
        .map(|(r, _)| r.target.run_id.clone())
        .collect();
    for ((_, why), run) in pass.refused.iter().zip(prefixes(owner, ids)?) {
        outln!("run {run}: {}", why.describe());
    }
    Ok(())
}

/// One kept run as `keep list` shows it (and `--json` prints it).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeptRow {
    run_id: String,
    session_id: String,
    generation: u64,
    agent: Option<String>,
    workspace: Option<String>,
    lines: u64,
    bytes: u64,
    kept_since: String,
    #[serde(skip)]
    kept_since_ms: i64,
    sealed_at: String,
    /// `run` (kept by name) or `workspace` (by a keep rule).
    reason: String,
    /// `ok`, `stale` or `unreadable`.
    standing: String,
}

/// One keep rule as `keep list` shows it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleRow {
    workspace: String,
    workspace_path: String,
    workspace_id: String,
    /// Only this agent's runs; `None`: every agent's.
    agent: Option<String>,
    since: String,
    #[serde(skip)]
    since_ms: i64,
}

/// What `keep list` shows, read once for the lines and the JSON alike.
#[derive(Serialize, Deserialize)]
struct Listed {
    rules: Vec<RuleRow>,
    runs: Vec<KeptRow>,
}

/// The rules and the kept runs, masked.
fn listed(owner: &Owner) -> Result<Listed, String> {
    let rules = owner
        .keep_rules()
        .map_err(failed)?
        .into_iter()
        .map(|r| RuleRow {
            workspace: r.workspace_name,
            workspace_path: r.workspace_path,
            workspace_id: r.rule.workspace_id,
            agent: r.rule.agent.map(|a| a.as_str().to_owned()),
            since: rfc3339(r.rule.created_at_ms),
            since_ms: r.rule.created_at_ms,
        })
        .collect();
    let runs = owner
        .kept_runs()
        .map_err(failed)?
        .into_iter()
        .map(|k| {
            let s = k.kept.summary;
            KeptRow {
                run_id: s.run_id,
                session_id: s.session_id,
                generation: s.generation,
                agent: k.agent.map(|a| a.as_str().to_owned()),
                workspace: k.workspace_name,
                lines: s.lines,
                bytes: s.bytes,
                kept_since: rfc3339(k.kept.kept_since_ms),
                kept_since_ms: k.kept.kept_since_ms,
                sealed_at: rfc3339(s.created_at_ms),
                reason: k.kept.reason.as_str().to_owned(),
                standing: k.standing.as_str().to_owned(),
            }
        })
        .collect();
    // Masking goes through JSON, which drops the skipped times: they are put back after.
    let raw = Listed { rules, runs };
    let times: (Vec<i64>, Vec<i64>) = (
        raw.rules.iter().map(|r| r.since_ms).collect(),
        raw.runs.iter().map(|r| r.kept_since_ms).collect(),
    );
    let mut shown = owner
        .shown(raw)
        .map_err(|e| format!("cannot read the known secrets to mask the kept runs: {e}"))?
        .into_inner();
    shown
        .rules
        .iter_mut()
        .zip(times.0)
        .for_each(|(r, t)| r.since_ms = t);
    shown
        .runs
        .iter_mut()
        .zip(times.1)
        .for_each(|(r, t)| r.kept_since_ms = t);
    Ok(shown)
}

/// `runread keep list`: the rules, every kept run, and the total against the bound.
fn list(owner: &Owner, as_json: bool) -> Res {
    let shown = listed(owner)?;
    let totals = owner.kept_totals().map_err(failed)?;
    if as_json {
        let out = json!({
            "rules": shown.rules,
            "runs": shown.runs,
            "total": totals_json(&totals),
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    let now = now_ms();
    if shown.rules.is_empty() && shown.runs.is_empty() {
        outln!(
            "nothing is kept: keep a run with `runread keep RUN`, a workspace's runs with \
             `runread keep --workspace NAME`"
        );
    }
    for r in &shown.rules {
        let whose = r.agent.as_deref().map_or("every agent's runs", |a| a);
        outln!(
            "rule  workspace {} ({}), {whose}, since {}",
            human::inert(&r.workspace),
            human::inert(&r.workspace_path),
            human::ago(r.since_ms, now)
        );
    }
    print_runs(owner, &shown.runs, now)?;
    outln!("{}", totals_line(&totals));
    Ok(())
}

/// The kept runs as lines, each id cut to the prefix `keep drop` takes back.
fn print_runs(owner: &Owner, runs: &[KeptRow], now: i64) -> Res {
    let ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
    let shown = owner
        .run_id_prefixes(&ids)
        .map_err(|e| format!("cannot list the kept runs: {e}"))?;
    let width = crate::cmd::runs::column_width(shown.iter().map(String::as_str), 3);
    let places = crate::cmd::runs::column_width(
        runs.iter().map(|r| r.workspace.as_deref().unwrap_or("-")),
        9,
    );
    if !runs.is_empty() {
        outln!(
            "{:<width$} {:<8} {:<places$} {:>10} {:<12} {:<9} STANDING",
            "RUN",
            "AGENT",
            "WORKSPACE",
            "SIZE",
            "KEPT SINCE",
            "WHY"
        );
    }
    for (r, prefix) in runs.iter().zip(&shown) {
        outln!(
            "{:<width$} {:<8} {:<places$} {:>10} {:<12} {:<9} {}",
            prefix,
            r.agent.as_deref().unwrap_or("-"),
            human::inert(r.workspace.as_deref().unwrap_or("-")),
            human::size(r.bytes),
            human::ago(r.kept_since_ms, now),
            r.reason,
            r.standing
        );
    }
    Ok(())
}

/// `N runs kept, X of Y`.
pub(crate) fn totals_line(t: &KeptTotals) -> String {
    format!(
        "{} kept, {} of {}",
        human::count(t.runs, "run", "runs"),
        human::size(t.bytes),
        human::size(t.limit_bytes)
    )
}

/// The totals as `--json` prints them (sizes in bytes).
pub(crate) fn totals_json(t: &KeptTotals) -> serde_json::Value {
    json!({"runs": t.runs, "bytes": t.bytes, "limitBytes": t.limit_bytes, "rules": t.rules})
}

/// `runread keep drop RUN`: its kept copy gone (the data key first), or why not.
fn drop_run(owner: &Owner, run: &str, session: Option<&str>) -> Res {
    let record = resolve(owner, run, session)?;
    let shown = prefixes(owner, vec![record.target.run_id.clone()])?
        .pop()
        .unwrap_or_default();
    if !owner.drop_kept(&record, now_ms()).map_err(failed)? {
        return Err(format!("run {shown} is not kept (see `runread keep list`)"));
    }
    outln!(
        "dropped the kept copy of run {shown} (its data key destroyed, then its rows); a live \
         share's own snapshot of it stays until that share ends"
    );
    Ok(())
}

/// `runread keep drop --workspace W`: its rules removed and its kept runs dropped.
fn drop_workspace(owner: &Owner, which: &str, agent: Option<Agent>) -> Res {
    let dropped = owner
        .drop_workspace_keeps(which, agent, now_ms())
        .map_err(failed)?;
    outln!(
        "removed {}; dropped {} (their data keys destroyed, then their rows); a live share's own \
         snapshot of a run stays until that share ends",
        human::count(dropped.rules, "keep rule", "keep rules"),
        human::count(dropped.runs.len() as u64, "kept run", "kept runs")
    );
    Ok(())
}

/// What `keep limit` says of a SIZE it cannot read.
const SIZE_REFUSED: &str =
    "SIZE is a whole number of bytes, or of KiB, MiB, GiB or TiB: 1073741824, 500MiB, 2GiB";

/// `2GiB`, `500 MiB`, `1073741824` (bytes; a `B` may follow) as bytes; `None` for anything else.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        "TiB" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// `runread keep limit [SIZE]`: the bound, and what is kept against it; set first when given.
fn limit(owner: &Owner, new: Option<&str>) -> Res {
    if let Some(text) = new {
        let bytes = parse_size(text).ok_or(SIZE_REFUSED)?;
        owner.set_keep_limit(bytes).map_err(failed)?;
    }
    let t = owner.kept_totals().map_err(failed)?;
    outln!(
        "kept runs {} bounded to {} ({})",
        if new.is_some() { "are now" } else { "are" },
        human::size(t.limit_bytes),
        totals_line(&t)
    );
    if t.bytes > t.limit_bytes {
        outln!(
            "what is kept is over the bound already: nothing kept is dropped, but no run is kept \
             until enough are dropped (`runread keep drop`)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_are_bytes_or_whole_binary_units_and_nothing_else() {
        for (text, bytes) in [
            ("1073741824", Some(1 << 30)),
            ("2GiB", Some(2 << 30)),
            ("500MiB", Some(500 << 20)),
            ("500 MiB", Some(500 << 20)),
            ("1TiB", Some(1 << 40)),
            ("12B", Some(12)),
            ("", None),
            ("GiB", None),
            ("1.5GiB", None),
            ("2GB", None),
            ("-1", None),
            ("99999999999999999999", None),
            ("18446744073709551615TiB", None),
        ] {
            assert_eq!(parse_size(text), bytes, "{text:?}");
        }
    }
}
