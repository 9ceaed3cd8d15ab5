//! `runread requests`, `requests approve`, `requests deny`: the access requests readers filed
//! (`request_access`) that wait for the owner.
//!
//! A request's reason, words and workspace are the reader's own text, already masked by the
//! owner's handle: a person sees them quoted and inert ([`human::quoted`]), so they can neither
//! recolour the terminal nor pass for runread's own lines; `--json` carries them as JSON strings.
//! The matching runs are shown as `runread runs` shows runs (masked prompts, id prefixes that
//! `--run` takes back).

use runread_core::Feature;
use runread_core::redact::MaskedView;
use runread_core::timefmt::{now_ms, rfc3339};
use runread_service::Owner;
use runread_service::owner::shown::ShownRun;
use runread_service::owner::{Approval, RunChoice, ShownRequest};
use serde_json::json;

use crate::Res;
use crate::args::{RequestsArgs, RequestsCmd};
use crate::context::Context;
use crate::human;

pub(crate) fn requests(ctx: &Context, args: RequestsArgs) -> Res {
    let owner = ctx.owner()?;
    match args.action {
        None => list(&owner, args.json),
        Some(RequestsCmd::Approve {
            id,
            runs,
            features,
            expires,
            json,
        }) => approve(&owner, &id, &runs, &features, expires.as_deref(), json),
        Some(RequestsCmd::Deny { id, json }) => deny(&owner, &id, json),
    }
}

/// Why a request could not be read or decided: its fixed message, and where to look.
fn refused(e: impl std::fmt::Display) -> String {
    format!("{e}; see `runread requests`")
}

/// The pending requests, oldest first, each with its matching runs (masked, as the owner is
/// shown runs).
fn pending(owner: &Owner, now: i64) -> Result<Vec<MaskedView<ShownRequest>>, String> {
    owner
        .access_requests(now)
        .map_err(|e| format!("cannot show the access requests: {}", e.as_str()))
}

/// `runread requests`: the pending requests, oldest first.
fn list(owner: &Owner, as_json: bool) -> Res {
    let now = now_ms();
    let listed = pending(owner, now)?;
    if as_json {
        let out: Vec<_> = listed.iter().map(request_json).collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    if listed.is_empty() {
        outln!("no access requests wait for you (a reader asks with `request_access`)");
        return Ok(());
    }
    for (n, r) in listed.iter().enumerate() {
        if n > 0 {
            outln!();
        }
        print_request(owner, r, now)?;
    }
    outln!();
    outln!(
        "approve: runread requests approve ID (the matching runs; --run, --features, --expires \
         to narrow) · deny: runread requests deny ID"
    );
    Ok(())
}

/// A request as `requests --json` prints it.
fn request_json(r: &MaskedView<ShownRequest>) -> serde_json::Value {
    json!({
        "requestId": r.id,
        "reader": r.reader_name,
        "createdAt": rfc3339(r.created_at_ms),
        "expiresAt": rfc3339(r.expires_at_ms),
        "agent": r.agent,
        "workspace": r.workspace,
        "words": r.words,
        "latest": r.latest,
        "features": r.features,
        "durationSeconds": r.duration_s,
        "reason": r.reason,
        "matches": r.matches.iter().map(crate::cmd::runs::run_json).collect::<Vec<_>>(),
    })
}

/// A request for a person: who asks and when, what, why, and the runs it matches.
fn print_request(owner: &Owner, r: &ShownRequest, now: i64) -> Res {
    outln!(
        "request  {} from reader {}, {} (expires {})",
        r.id,
        human::quoted(&r.reader_name),
        human::ago(r.created_at_ms, now),
        human::ago(r.expires_at_ms, now)
    );
    let features: Vec<&str> = r.features.iter().map(|f| f.as_str()).collect();
    outln!(
        "asks     {} for {}, the newest {}",
        features.join(","),
        human::span(r.duration_s),
        human::count(u64::from(r.latest), "matching run", "matching runs")
    );
    let hints = [
        ("agent", r.agent.as_deref()),
        ("workspace", r.workspace.as_deref()),
        ("words", r.words.as_deref()),
    ];
    let hints: Vec<String> = hints
        .iter()
        .filter_map(|(what, v)| v.map(|v| format!("{what} {}", human::quoted(v))))
        .collect();
    if !hints.is_empty() {
        outln!("hints    {}", hints.join(" · "));
    }
    match &r.reason {
        Some(reason) => outln!("reason   {} (the reader's words)", human::quoted(reason)),
        None => outln!("reason   none given"),
    }
    if r.matches.is_empty() {
        outln!("matches  no run now (approve with --run RUN to grant others)");
        return Ok(());
    }
    print_matches(owner, &r.matches, now)
}

/// The matching runs: a line each, its id cut to the prefix `--run` takes.
fn print_matches(owner: &Owner, runs: &[ShownRun], now: i64) -> Res {
    let ids: Vec<&str> = runs
        .iter()
        .map(|r| r.record.target.run_id.as_str())
        .collect();
    let prefixes = owner
        .run_id_prefixes(&ids)
        .map_err(|e| format!("cannot list the runs: {e}"))?;
    let width = crate::cmd::runs::column_width(prefixes.iter().map(String::as_str), 3);
    let places =
        crate::cmd::runs::column_width(runs.iter().map(|r| r.record.workspace_name.as_str()), 9);
    outln!(
        "matches  {:<width$} {:<8} {:<10} {:<10} {:<places$} PROMPT",
        "RUN",
        "AGENT",
        "STATUS",
        "STARTED",
        "WORKSPACE"
    );
    for (row, prefix) in runs.iter().zip(&prefixes) {
        let r = &row.record;
        let started = human::started_ago(r.run.started_at.as_deref(), now);
        outln!(
            "         {:<width$} {:<8} {:<10} {:<10} {:<places$} {}",
            prefix,
            r.agent.as_str(),
            r.run.status.as_str(),
            started,
            human::inert(&r.workspace_name),
            human::inert(row.prompt.shown())
        );
    }
    Ok(())
}

/// `runread requests approve ID`: the grants it makes, each as `runread grant` prints one.
fn approve(
    owner: &Owner,
    id: &str,
    runs: &[String],
    features: &[String],
    expires: Option<&str>,
    as_json: bool,
) -> Res {
    let now = now_ms();
    let features = match features {
        [] => None,
        some => Some(Feature::parse_list(&some.join(","))?),
    };
    let expires_at = expires
        .map(|spec| runread_service::owner::expiry(spec, now))
        .transpose()
        .map_err(|e| e.to_string())?;
    let runs = choices(runs);
    let approval = Approval {
        runs: (!runs.is_empty()).then_some(&runs),
        features,
        expires_at_ms: expires_at,
    };
    let approved = owner.approve_request(id, approval, now).map_err(refused)?;
    let mut shown = Vec::with_capacity(approved.grants.len());
    for g in &approved.grants {
        let run = owner.shown_run(g.run.clone(), now).map_err(|e| {
            format!(
                "cannot read the known secrets to mask the run: {}",
                e.as_str()
            )
        })?;
        crate::cmd::grant::warn_if_no_answer(&g.grant.features, &run.answer_state);
        shown.push(run);
    }
    if as_json {
        let grants: Vec<_> = approved
            .grants
            .iter()
            .zip(&shown)
            .map(|(g, s)| crate::cmd::grant::grant_json(g, s, None))
            .collect();
        let out = json!({
            "approved": true,
            "requestId": id,
            "to": approved.reader_name,
            "grants": grants,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    outln!(
        "approved {id}: {} to reader {:?} (its `wait_for_access` answers with them)",
        human::count(approved.grants.len() as u64, "grant", "grants"),
        approved.reader_name
    );
    for (g, s) in approved.grants.iter().zip(&shown) {
        outln!();
        crate::cmd::grant::print_grant_lines(g, s)?;
    }
    Ok(())
}

/// `runread requests deny ID`.
fn deny(owner: &Owner, id: &str, as_json: bool) -> Res {
    owner.deny_request(id, now_ms()).map_err(refused)?;
    if as_json {
        outln!("{}", json!({"denied": true, "requestId": id}));
    } else {
        outln!("denied {id}");
    }
    Ok(())
}

/// The runs `--run` names: ids or prefixes, as `runread runs` shows them (the owner's handle
/// resolves them, and refuses one that names runs in several sessions).
fn choices(runs: &[String]) -> Vec<RunChoice> {
    runs.iter()
        .map(|run| RunChoice {
            run_id: run.clone(),
            session_id: None,
        })
        .collect()
}
