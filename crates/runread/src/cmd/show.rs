//! `runread show RUN`: one run as the console's run page shows it, in the terminal — the owner
//! reading their own records through the same preview (admission, adapters, masking), no key, no
//! gate.

use crate::Res;
use crate::args::ShowArgs;
use crate::context::Context;
use crate::human;
use runread_core::redact::MaskedView;
use runread_core::timefmt::{now_ms, rfc3339};
use serde_json::json;

use runread_service::admission::GrantStanding;
use runread_service::outputs::{self, Usage};

/// A state's wire name (`available`, `session_file`, …).
macro_rules! word {
    ($v:expr) => {
        serde_json::to_value(&$v)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
}

/// What `show` shows of one run, read once for the lines and the JSON alike.
struct Shown {
    /// The shortest prefix of its id that picks it, as listings show it.
    picked_by: String,
    run: MaskedView<runread_service::owner::shown::ShownRun>,
    answer: Result<runread_service::owner::PreviewedAnswer, runread_core::ErrorCode>,
    work: Result<outputs::Previewed<outputs::WorkState>, runread_core::ErrorCode>,
    usage: Usage,
    /// The run's grants, each with where it stands now (a stale one with why).
    grants: Vec<(MaskedView<runread_store::Grant>, GrantStanding)>,
    /// A share's snapshot of it ("sealed for sharing"), until its last grant ends.
    sealed: Option<MaskedView<runread_store::SnapshotSummary>>,
    /// The copy the owner kept (`runread keep`), until dropped.
    kept: Option<runread_store::KeptSummary>,
    /// The agent's version (a supervised run's: what it answered `runread run`) and whether the
    /// tests cover it; `None` when not known.
    version: Option<(String, Option<bool>)>,
}

pub(crate) fn show(ctx: &Context, a: ShowArgs) -> Res {
    let store = ctx.store.clone();
    let service = ctx.owner()?;
    let run = service
        .resolve_run(&a.run, a.session.as_deref())
        .map_err(|e| e.to_string())?;
    let now = now_ms();
    let target = run.target.clone();
    if a.history {
        return history(&service, &target, &a, now);
    }
    let masked = |e: runread_core::ErrorCode| format!("cannot show the run: {}", e.as_str());
    let kept = service.kept(&run).map_err(|e| e.message())?;
    let shown = service.shown_run(run, now).map_err(masked)?;
    let answer = service.preview_answer(&target, now);
    let work = service.preview_as::<outputs::WorkState>(&target, json!({}), now);
    let usage = Usage::of(shown.record.run.usage.as_ref());
    let version = agent_version(&service, &target, now);
    // Found by their raw ids, then masked: a masked id would match nothing.
    let grants: Vec<_> = store
        .grants()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|g| g.target.session_id == target.session_id && g.target.run_id == target.run_id)
        .collect();
    let standings = grants
        .iter()
        .map(|g| service.grant_standing(g, now))
        .collect::<Result<Vec<_>, _>>()
        .map_err(masked)?;
    let grants = service
        .shown_grants(grants)
        .map_err(masked)?
        .into_iter()
        .zip(standings)
        .collect();
    let sealed = store
        .snapshots()
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|k| {
            k.session_id == target.session_id
                && k.generation == target.generation
                && k.run_id == target.run_id
        })
        .map(|k| service.shown(k))
        .transpose()
        .map_err(masked)?;
    let picked_by = service
        .run_id_prefixes(&[shown.record.target.run_id.as_str()])
        .map_err(masked)?
        .pop()
        .unwrap_or_default();
    let s = Shown {
        picked_by,
        run: shown,
        answer,
        work,
        usage,
        grants,
        sealed,
        kept,
        version,
    };
    if a.json {
        print_json(&s)
    } else {
        print_lines(&s)
    }
}

fn print_json(s: &Shown) -> Res {
    let (shown, answer, work, usage, grants, sealed) =
        (&s.run, &s.answer, &s.work, &s.usage, &s.grants, &s.sealed);
    let kept = s.kept.as_ref();
    {
        let out = json!({
            "target": shown.record.target,
            "runPrefix": s.picked_by,
            "agent": shown.record.agent,
            "workspace": shown.record.workspace_name,
            "status": shown.record.run.status.as_str(),
            "prompt": shown.prompt.text(),
            "sessionFile": shown.file.as_str(),
            "startedAt": shown.record.run.started_at,
            "endedAt": shown.record.run.ended_at,
            "answer": answer.as_ref().map(|p| &p.first.json).map_err(|e| e.as_str()).ok(),
            "answerText": answer.as_ref().ok().and_then(|p| p.text.clone()),
            "workState": work.as_ref().map(|p| &p.json).ok(),
            "usage": usage,
            "grants": grants.iter().map(|(g, st)| json!({"grantId": g.id, "to": g.reader_name, "features": g.features,
                "expiresAt": rfc3339(g.expires_at_ms), "state": st.state.as_str(),
                "staleReason": st.stale.map(|why| why.as_str())})).collect::<Vec<_>>(),
            "sealedForSharing": sealed.as_ref().map(|k| json!({"lines": k.lines, "bytes": k.bytes})),
            "kept": kept.is_some(),
            "keptSince": kept.map(|k| rfc3339(k.kept_since_ms)),
            "keptBytes": kept.map(|k| k.summary.bytes),
            "keptReason": kept.map(|k| k.reason.as_str()),
            "agentVersion": s.version.as_ref().map(|(v, _)| v),
            "versionTested": s.version.as_ref().and_then(|(_, t)| *t),
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        Ok(())
    }
}

fn print_lines(s: &Shown) -> Res {
    print_run(&s.run, &s.picked_by);
    print_version(s.version.as_ref(), s.run.record.agent);
    print_answer_state(&s.answer);
    print_usage(&s.usage);
    match &s.work {
        Ok(w) => outln!(
            "work     foreground {} · aggregate {} · evidence {}",
            word!(&w.output.foreground.state),
            word!(&w.output.aggregate.state),
            word!(&w.output.evidence)
        ),
        Err(e) => outln!("work     not shown: {}", e.as_str()),
    }
    print_grants(&s.grants);
    if let Some(k) = &s.kept {
        outln!(
            "kept     since {}, {} bytes ({})",
            human::when(k.kept_since_ms),
            k.summary.bytes,
            match k.reason {
                runread_store::KeepReason::Run => "kept by name",
                runread_store::KeepReason::Workspace => "kept by its workspace's keep rule",
            }
        );
    }
    if let Some(k) = &s.sealed {
        outln!(
            "sealed   for sharing: a copy of its evidence ({} lines, {} bytes), until its last grant ends",
            k.lines,
            k.bytes
        );
    }
    if let Ok(p) = &s.answer
        && let Some(text) = &p.text
    {
        outln!();
        outln!("{text}");
    }
    Ok(())
}

/// The run's agent version and whether runread's tests cover it, as `read_target_metadata` says
/// (a supervised run's: what it answered `runread run`); `None` when not known.
fn agent_version(
    service: &runread_service::owner::Owner,
    target: &runread_core::Target,
    now: i64,
) -> Option<(String, Option<bool>)> {
    let m = service
        .preview_as::<outputs::Metadata>(target, json!({}), now)
        .ok()?;
    let tested = m.output.version_tested;
    m.output.agent_version.value.map(|v| (v, tested))
}

/// The agent's version and whether runread's tests cover it. The agent wrote it: shown only
/// when it is a version's characters (nothing for the terminal to act on).
fn print_version(version: Option<&(String, Option<bool>)>, agent: runread_core::Agent) {
    let Some((v, tested)) = version else {
        outln!("version  not recorded");
        return;
    };
    if v.is_empty()
        || !v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
    {
        outln!("version  not a version");
        return;
    }
    let (oldest, newest) = agent.tested_versions();
    match tested {
        Some(true) => outln!("version  {v} (tested: {oldest} to {newest})"),
        _ => outln!(
            "version  {v} (not tested: runread's tests cover {oldest} to {newest}; read as usual)"
        ),
    }
}

/// The run: its id, prompt, agent, workspace, session and status.
fn print_run(shown: &runread_service::owner::shown::ShownRun, picked_by: &str) {
    let r = &shown.record;
    if picked_by == r.target.run_id {
        outln!("run      {picked_by}");
    } else {
        outln!("run      {picked_by} ({})", r.target.run_id);
    }
    outln!("prompt   {}", shown.prompt.shown());
    outln!(
        "agent    {} · workspace {} ({})",
        r.agent,
        r.workspace_name,
        r.workspace_path
    );
    outln!(
        "session  {} (generation {})",
        r.target.session_id,
        r.target.generation
    );
    if let Some(says) = shown.file.says() {
        outln!("file     {}", says.trim_start_matches("file "));
    }
    let now = now_ms();
    let at = |t: Option<&str>| match t.and_then(runread_core::timefmt::parse_rfc3339) {
        Some(ms) => format!("{} ({})", human::when(ms), human::ago(ms, now)),
        None => "-".to_owned(),
    };
    outln!(
        "status   {} · started {} · ended {}",
        r.run.status.as_str(),
        at(r.run.started_at.as_deref()),
        at(r.run.ended_at.as_deref())
    );
}

/// The final answer's state, evidence, size and digest, as a reader would be told them.
fn print_answer_state(
    answer: &Result<runread_service::owner::PreviewedAnswer, runread_core::ErrorCode>,
) {
    match answer {
        Ok(p) => {
            let c = &p.first.output;
            outln!(
                "answer   {} · evidence {}{}{}",
                word!(&c.claim.state),
                word!(&c.claim.evidence),
                c.chunk
                    .total_bytes
                    .map(|n| format!(" · {n} bytes"))
                    .unwrap_or_default(),
                c.chunk
                    .sha256
                    .as_deref()
                    .map(|s| format!(" · sha256 {s}"))
                    .unwrap_or_default()
            );
        }
        Err(e) => outln!("answer   not shown: {}", e.as_str()),
    }
}

/// The run's tokens, by model when there are several.
fn print_usage(usage: &Usage) {
    outln!("tokens   {}", usage.shown());
    for m in usage.by_model.iter().filter(|_| usage.by_model.len() > 1) {
        outln!(
            "         {}: in {} · out {}",
            m.model,
            outputs::thousands(m.tokens.input),
            outputs::thousands(m.tokens.output)
        );
    }
}

/// The grants of the run, each with where it stands (a stale one with why).
fn print_grants(grants: &[(MaskedView<runread_store::Grant>, GrantStanding)]) {
    if grants.is_empty() {
        outln!("grants   none");
    }
    for (g, standing) in grants {
        let features: Vec<&str> = g.features.iter().map(|f| f.as_str()).collect();
        outln!(
            "grant    {} to {} ({}) until {} · {}",
            g.id,
            g.reader_name,
            features.join(","),
            rfc3339(g.expires_at_ms),
            standing.says()
        );
    }
}

/// `show --history`: one page of the run's timeline, as a reader granted `history` would get it.
fn history(
    service: &runread_service::Owner,
    target: &runread_core::Target,
    a: &ShowArgs,
    now: i64,
) -> Res {
    let mut args = json!({"limit": a.limit});
    if let (Some(c), Some(m)) = (&a.cursor, args.as_object_mut()) {
        m.insert("cursor".into(), json!(c));
    }
    let page = service
        .preview_as::<outputs::History>(target, args, now)
        .map_err(|e| format!("cannot show the history: {}", e.as_str()))?;
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&page.json).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    let h = &page.output;
    for ev in &h.events {
        let who = match &ev.tool_name {
            Some(tool) => format!("{} ({tool})", ev.role),
            None => ev.role.clone(),
        };
        outln!("#{} {who}", ev.sequence);
        if !ev.tool_calls.is_empty() {
            outln!("    calls {}", ev.tool_calls.join(", "));
        }
        match &ev.text {
            Some(t) => t.lines().for_each(|l| outln!("    {l}")),
            None if !ev.readable => outln!("    (text withheld)"),
            None => {}
        }
    }
    if h.gap {
        let reasons: Vec<String> = h.gap_reasons.iter().map(|g| word!(g)).collect();
        outln!("(gaps: {})", reasons.join(", "));
    }
    match &h.next_cursor {
        Some(c) => outln!(
            "next page: runread show {} --session {} --history --cursor {c}",
            target.run_id,
            target.session_id
        ),
        None => outln!("(end of the history)"),
    }
    Ok(())
}
