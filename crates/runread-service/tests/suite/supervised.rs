//! The publication rule for supervised evidence, case by case, on a real Pi session and real
//! journal entries: what the supervisor recorded decides the state; a missing or wrong proof
//! never yields text; a stale record is not a claim.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_journal::{Entry, FORMAT, FileStamp, Journal, Namespace};
use runread_service::{Config, KeyContext, Service, tools};
use runread_store::{
    Background, CensusGap, Foreground, Phase, Proof, RunRecord, Store, SupervisedRun,
};
use runread_testkit::Env;

const SETTLED: Duration = Duration::from_secs(60);

struct Case {
    env: Env,
    run: RunRecord,
    svc: Arc<Service>,
    ctx: KeyContext,
}

fn journal_root(env: &Env) -> std::path::PathBuf {
    env.dir.path().join("journal")
}

/// Which agent's real session a case supervises.
#[derive(Clone, Copy)]
enum Agent {
    Pi,
    /// A Claude Code run that started a subagent (`fixtures/claude/subagent`).
    ClaudeWithSubagent,
    Codex,
    /// A Gemini CLI run (`fixtures/gemini/0.61.0/tool-then-answer`): its file records no end of a
    /// response, so its run is `unknown` with its last model message as a candidate.
    Gemini,
}

fn case(journal: bool) -> Case {
    case_of(journal, Agent::Pi)
}

fn case_of(journal: bool, agent: Agent) -> Case {
    let env = Env::new();
    match agent {
        Agent::Pi => drop(env.place("sample", SETTLED)),
        Agent::ClaudeWithSubagent => drop(env.place_claude("subagent", SETTLED)),
        Agent::Codex => drop(env.place_codex("tool-then-answer", SETTLED)),
        Agent::Gemini => drop(env.place_gemini("tool-then-answer", SETTLED)),
    }
    env.ingest();
    let mut runs = env.store.runs().unwrap();
    runs.sort_by_key(|r| r.run.start_line);
    let run = runs.remove(0);
    let config = Config {
        journal_root: journal.then(|| journal_root(&env)),
        ..Config::default()
    };
    let svc =
        Arc::new(Service::new(env.store.clone() as Arc<dyn Store>, env.keys(), config).unwrap());
    let g = env.grant_in(
        &run.target.run_id,
        Some(&run.target.session_id),
        vec![Feature::FinalAnswer, Feature::Aggregate, Feature::Metadata],
        "t",
    );
    let ctx = svc.admit_key(&[g.key.as_bytes()]).unwrap();
    Case { env, run, svc, ctx }
}

impl Case {
    fn call(&self, tool: &str) -> Value {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(self.svc.call(
            Arc::new(self.ctx.clone()),
            tool,
            json!({"target": self.run.target}),
            None,
        ))
        .unwrap()
        .labeled
        .structured
    }

    fn entry(&self) -> Entry {
        let t = &self.run.target;
        let r = &self.run.run;
        let text = runread_testkit::answer(&self.run).unwrap();
        Entry {
            format: FORMAT.into(),
            namespace: Namespace {
                instance: t.instance.clone(),
                workspace_id: t.workspace_id.clone(),
                session_id: t.session_id.clone(),
                generation: t.generation,
                run_id: t.run_id.clone(),
            },
            supervisor_id: "s".into(),
            agent: self.run.agent,
            agent_version: "0.73.1".into(),
            session_file: self.run.session_path.clone(),
            session_stamp: FileStamp {
                dev: 0,
                ino: 0,
                size: 0,
                mtime_ns: 0,
            },
            pinned_leaf: None,
            start_entry_id: t.run_id.clone(),
            user_message_sha256: "u".into(),
            final_entry_id: r.final_entry_id.clone().unwrap(),
            message_sha256: r.final_message_sha256.clone().unwrap(),
            text_sha256: runread_core::sha256_hex(text.as_bytes()),
            text_bytes: text.len() as u64,
            truncated: false,
            chain_len: r.chain_len,
            verified_at_ms: 1,
        }
    }

    fn journal(&self) -> Journal {
        Journal::at(&journal_root(&self.env), &self.run.target.instance)
    }

    /// Journals the run's true proof; returns it as the store would hold it.
    fn journaled(&self) -> Proof {
        runread_supervise::journal_proof(&self.journal(), &self.entry()).unwrap()
    }

    fn record(
        &self,
        foreground: Foreground,
        proof: Proof,
        age_ms: i64,
        supervising: bool,
        active: u32,
    ) {
        self.record_at("0.73.1", foreground, proof, age_ms, supervising, active);
    }

    /// [`Case::record`] of an agent that answered `--version` with `version`.
    fn record_at(
        &self,
        version: &str,
        foreground: Foreground,
        proof: Proof,
        age_ms: i64,
        supervising: bool,
        active: u32,
    ) {
        let census = Background {
            census_complete: true,
            census_gap: None,
            active,
            observed_at_ms: runread_core::timefmt::now_ms() - age_ms,
        };
        self.record_census(version, foreground, proof, supervising, census);
    }

    /// A finished record whose census of the agent's leftovers is `census`.
    fn record_census(
        &self,
        version: &str,
        foreground: Foreground,
        proof: Proof,
        supervising: bool,
        census: Background,
    ) {
        let t = &self.run.target;
        self.env
            .store
            .put_supervised(&SupervisedRun {
                session_id: t.session_id.clone(),
                generation: t.generation,
                run_id: t.run_id.clone(),
                supervisor_id: "s".into(),
                host: "h".into(),
                agent_version: version.into(),
                foreground,
                exit: (foreground != Foreground::Running).then(|| "exit:0".into()),
                phase: if foreground == Foreground::Running {
                    Phase::WaitingOnTool
                } else {
                    Phase::Ended
                },
                proof,
                updated_at_ms: census.observed_at_ms,
                background: census,
                supervising,
            })
            .unwrap();
    }
}

fn assert_no_text(v: &Value, state: &str) {
    assert_eq!(v["state"], state, "{v}");
    assert_eq!(v["readable"], false);
    assert_eq!(v["text"], Value::Null);
    assert_eq!(v["foregroundFinalConfirmed"], false);
}

#[test]
fn a_journaled_proof_with_a_completed_foreground_publishes() {
    let c = case(true);
    c.record(Foreground::Completed, c.journaled(), 0, false, 0);
    let v = c.call(tools::READ_FINAL_ANSWER);
    assert_eq!(
        (v["state"].as_str(), v["evidence"].as_str()),
        (Some("available"), Some("supervised")),
        "{v}"
    );
    // Its receipt records the evidence it was read from.
    assert_eq!(
        runread_testkit::records::last_receipt_facts(&*c.env.store, tools::READ_FINAL_ANSWER),
        (Some("supervised".into()), Some("available".into()))
    );
    assert_eq!(v["foregroundFinalConfirmed"], true);
    // Pi records how each answer ended: `truncated` false means it was not cut off.
    assert_eq!(v["truncationKnown"], true);
    let whole = runread_testkit::answer(&c.run).unwrap();
    assert!(
        whole.starts_with(v["text"].as_str().unwrap()),
        "the first chunk of the answer"
    );
    assert_eq!(v["sha256"], runread_core::sha256_hex(whole.as_bytes()));
}

/// Gemini CLI records no end of a response: passively its run's last model message is only a
/// candidate (`unknown`, no text). A supervisor's proof of exactly that message after exit 0 makes
/// it the answer, served supervised — with `truncationKnown` false: a cut-off at the output limit
/// is marked neither in its file nor in its stream. A proof of another text, or a foreground that
/// did not complete, publishes nothing.
#[test]
fn a_supervised_gemini_cli_answer_is_its_proven_candidate_its_truncation_not_known() {
    let c = case_of(true, Agent::Gemini);
    assert_eq!(c.run.run.status, runread_sessions::RunStatus::Unknown);
    let v = c.call(tools::READ_FINAL_ANSWER);
    assert_no_text(&v, "unknown");
    assert_eq!(v["truncationKnown"], false);

    // A proof of another text: not this candidate.
    let other = Entry {
        text_sha256: runread_core::sha256_hex(b"not what the file holds"),
        ..c.entry()
    };
    let wrong = runread_supervise::journal_proof(&c.journal(), &other).unwrap();
    c.record(Foreground::Completed, wrong, 0, false, 0);
    assert_no_text(&c.call(tools::READ_FINAL_ANSWER), "unknown");

    // The true proof, but the foreground failed or was interrupted: no text.
    for (fg, state) in [
        (Foreground::Failed, "unknown"),
        (Foreground::Cancelled, "missing"),
    ] {
        c.record(fg, c.journaled(), 0, false, 0);
        assert_no_text(&c.call(tools::READ_FINAL_ANSWER), state);
    }

    c.record(Foreground::Completed, c.journaled(), 0, false, 0);
    let v = c.call(tools::READ_FINAL_ANSWER);
    assert_eq!(
        (v["state"].as_str(), v["evidence"].as_str()),
        (Some("available"), Some("supervised")),
        "{v}"
    );
    assert_eq!(v["foregroundFinalConfirmed"], true);
    assert_eq!(v["truncated"], false);
    assert_eq!(v["truncationKnown"], false);
    let whole = runread_testkit::answer(&c.run).unwrap();
    assert_eq!(
        whole,
        "This is **demo**, a tiny Rust project with one binary (`src/main.rs`) that prints `hi`.\n\nFiles: README.md, src/main.rs."
    );
    assert_eq!(v["text"].as_str(), Some(whole.as_str()));
    assert_eq!(v["sha256"], runread_core::sha256_hex(whole.as_bytes()));
}

/// Pi records no version in its session file: a supervised run's is the one it answered `runread
/// run`, and whether the tests cover it is said, a newer one `false`.
#[test]
fn a_supervised_runs_version_is_the_one_it_answered_and_says_whether_it_is_tested() {
    let c = case(true);
    let m = c.call(tools::READ_TARGET_METADATA);
    assert_eq!(m["agentVersion"]["value"], Value::Null, "passive Pi: none");
    assert_eq!(m["versionTested"], Value::Null);
    for (version, tested) in [
        ("0.73.1", true),
        ("1.6.0", true),
        ("1.6.1", false),
        ("0.72.0", false),
    ] {
        c.record_at(version, Foreground::Completed, c.journaled(), 0, false, 0);
        let m = c.call(tools::READ_TARGET_METADATA);
        assert_eq!(
            m["agentVersion"],
            json!({"value": version, "source": "supervisor"}),
            "{m}"
        );
        assert_eq!(m["versionTested"], tested, "{version}");
        let v = c.call(tools::READ_FINAL_ANSWER);
        assert_eq!(
            v["state"], "available",
            "an untested version reads as usual: {v}"
        );
    }
}

#[test]
fn while_the_agent_runs_the_answer_is_saving_and_the_state_live() {
    let c = case(true);
    c.record(Foreground::Running, Proof::Pending, 0, true, 0);
    let v = c.call(tools::READ_FINAL_ANSWER);
    assert_no_text(&v, "saving");
    assert_eq!(
        (v["snapshotLive"].as_bool(), v["overallState"].as_str()),
        (Some(true), Some("running"))
    );
    let w = c.call(tools::READ_WORK_STATE);
    assert_eq!(w["foreground"]["state"], "waiting", "{w}");
    assert_eq!(
        (w["fresh"].as_bool(), w["live"].as_bool()),
        (Some(true), Some(true))
    );
}

#[test]
fn a_record_older_than_the_freshness_window_is_unknown() {
    let window = runread_core::limits::WORK_STATE_FRESH_MS;
    let c = case(true);
    // At the window: still current.
    c.record(Foreground::Running, Proof::Pending, window - 1_000, true, 0);
    assert_eq!(c.call(tools::READ_FINAL_ANSWER)["state"], "saving");
    // Past it: the supervisor is gone; nothing it said is a claim.
    c.record(Foreground::Running, Proof::Pending, window + 1_000, true, 2);
    let v = c.call(tools::READ_FINAL_ANSWER);
    assert_no_text(&v, "unknown");
    assert_eq!(v["snapshotLive"], false);
    assert_eq!(
        v["relatedChildrenActive"],
        Value::Null,
        "not observed any more"
    );
    let w = c.call(tools::READ_WORK_STATE);
    assert_eq!(w["foreground"]["state"], "unknown", "{w}");
    assert_eq!(w["aggregate"]["state"], "unknown");
    assert_eq!(w["fresh"], false);
}

#[test]
fn a_completed_foreground_without_a_verifying_proof_has_no_text() {
    let c = case(true);
    for (proof, state) in [
        (Proof::Pending, "unknown"),
        (Proof::Refused { reason: "r".into() }, "unknown"),
        (Proof::NoAnswer { reason: "r".into() }, "missing"),
    ] {
        c.record(Foreground::Completed, proof, 0, false, 0);
        assert_no_text(&c.call(tools::READ_FINAL_ANSWER), state);
    }
    // A journaled proof whose entry was tampered with.
    let proof = c.journaled();
    let name = match &proof {
        Proof::Journaled { journal_name, .. } => journal_name.clone(),
        _ => unreachable!(),
    };
    let path = c.journal().dir().join(name);
    let tampered = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"chainLen\":", "\"chainLen\":1");
    std::fs::write(&path, tampered).unwrap();
    c.record(Foreground::Completed, proof, 0, false, 0);
    assert_no_text(&c.call(tools::READ_FINAL_ANSWER), "unknown");
}

#[test]
fn a_proof_of_another_message_has_no_text() {
    let c = case(true);
    let mut entry = c.entry();
    entry.message_sha256 = "0".repeat(64);
    let proof = runread_supervise::journal_proof(&c.journal(), &entry).unwrap();
    c.record(Foreground::Completed, proof, 0, false, 0);
    assert_no_text(&c.call(tools::READ_FINAL_ANSWER), "unknown");
}

#[test]
fn foreground_endings_decide_the_state() {
    let c = case(true);
    for (fg, state) in [
        (Foreground::Cancelled, "missing"),
        (Foreground::Failed, "unknown"),
        (Foreground::Killed, "unknown"),
    ] {
        c.record(fg, c.journaled(), 0, false, 0);
        assert_no_text(&c.call(tools::READ_FINAL_ANSWER), state);
    }
}

#[test]
fn without_a_journal_to_check_a_journaled_proof_is_not_a_proof() {
    let c = case(false);
    // Written to a journal this service does not know about.
    c.record(Foreground::Completed, c.journaled(), 0, false, 0);
    assert_no_text(&c.call(tools::READ_FINAL_ANSWER), "unknown");
}

#[test]
fn a_pruned_journal_entry_falls_back_to_passive_evidence() {
    let c = case(true);
    let proof = c.journaled();
    for name in c.journal().names() {
        std::fs::remove_file(c.journal().dir().join(name)).unwrap();
    }
    c.record(Foreground::Completed, proof, 0, false, 0);
    let v = c.call(tools::READ_FINAL_ANSWER);
    assert_eq!(v["evidence"], "session_file", "{v}");
    assert_eq!(
        v["state"], "available",
        "the session file's own evidence stands"
    );
    assert_eq!(v["foregroundFinalConfirmed"], false);
}

#[test]
fn a_process_left_behind_keeps_the_aggregate_running() {
    let c = case(true);
    c.record(Foreground::Completed, c.journaled(), 0, true, 2);
    let v = c.call(tools::READ_FINAL_ANSWER);
    assert_eq!(v["state"], "available");
    assert_eq!(
        (
            v["relatedChildrenActive"].as_bool(),
            v["overallState"].as_str()
        ),
        (Some(true), Some("running"))
    );
    let w = c.call(tools::READ_WORK_STATE);
    assert_eq!(w["aggregate"]["state"], "running", "{w}");
    assert_eq!(w["aggregate"]["runningChildren"], 2);
    assert_eq!(w["completionConfirmed"], false);
    // The supervisor stopped watching with them still alive: no longer covered.
    c.record(Foreground::Completed, c.journaled(), 0, false, 2);
    let w = c.call(tools::READ_WORK_STATE);
    assert_eq!(w["coverage"]["background"]["state"], "incomplete", "{w}");
    assert_ne!(w["aggregate"]["state"], "completed");
}

/// Where the census cannot see every process the agent left (no child subreaper, as on macOS; a
/// process table not read whole), background coverage is incomplete, says which, and completion
/// is not confirmed; a record from before the reason was kept still says the census was incomplete.
#[test]
fn an_incomplete_census_says_why_and_confirms_nothing() {
    for (gap, why) in [
        (
            Some(CensusGap::NoSubreaper),
            "this system has no child subreaper (macOS)",
        ),
        (
            Some(CensusGap::TableIncomplete),
            "the process census was incomplete",
        ),
        (None, "the process census was incomplete"),
    ] {
        let c = case(true);
        let census = Background {
            census_complete: false,
            census_gap: gap,
            active: 0,
            observed_at_ms: runread_core::timefmt::now_ms(),
        };
        c.record_census(
            "0.73.1",
            Foreground::Completed,
            c.journaled(),
            false,
            census,
        );
        let w = c.call(tools::READ_WORK_STATE);
        let background = &w["coverage"]["background"];
        assert_eq!(background["state"], "incomplete", "{w}");
        assert!(
            background["reason"].as_str().unwrap().starts_with(why),
            "{gap:?}: {background}"
        );
        assert_eq!(w["completionConfirmed"], false, "{w}");
        assert_ne!(w["aggregate"]["state"], "completed", "{w}");
    }
}

#[test]
fn a_supervised_claude_code_run_shows_its_subagents_and_can_confirm_completion() {
    let c = case_of(true, Agent::ClaudeWithSubagent);
    // What the session's records show of the run's subagents, read passively first.
    let passive = c.call(tools::READ_WORK_STATE);
    let children = passive["aggregate"]["children"].clone();
    assert!(
        children.as_array().is_some_and(|a| !a.is_empty()),
        "{passive}"
    );
    c.record(Foreground::Completed, c.journaled(), 0, false, 0);
    let w = c.call(tools::READ_WORK_STATE);
    assert_eq!(w["evidence"], "supervised", "{w}");
    // Supervision adds the stream and the census; it does not lose the subagents.
    assert_eq!(w["aggregate"]["children"], children, "{w}");
    assert_eq!(w["coverage"]["subagents"]["state"], "complete", "{w}");
    assert_eq!(w["aggregate"]["state"], "completed", "{w}");
    // Every kind of work covered and done: the one case completion is confirmed.
    assert_eq!(w["completionConfirmed"], true, "{w}");
    // A process left behind keeps it from being confirmed.
    c.record(Foreground::Completed, c.journaled(), 0, true, 1);
    let w = c.call(tools::READ_WORK_STATE);
    assert_eq!(w["aggregate"]["state"], "running", "{w}");
    assert_eq!(w["completionConfirmed"], false, "{w}");
}

#[test]
fn a_supervised_run_names_why_its_agents_subagents_are_not_covered() {
    for (agent, reason) in [
        (Agent::Pi, "inside Pi's own process"),
        (
            Agent::Codex,
            "Codex's event stream and rollout file do not show child agents",
        ),
    ] {
        let c = case_of(true, agent);
        c.record(Foreground::Completed, c.journaled(), 0, false, 0);
        let w = c.call(tools::READ_WORK_STATE);
        let sub = &w["coverage"]["subagents"];
        assert_eq!(sub["state"], "incomplete", "{w}");
        assert!(
            sub["reason"].as_str().is_some_and(|r| r.contains(reason)),
            "{w}"
        );
        assert_eq!(w["aggregate"]["children"], json!([]), "{w}");
        assert_eq!(w["completionConfirmed"], false, "{w}");
    }
}

/// A supervised Codex run, shared (its snapshot sealed at the grant), read where its session
/// file is not: on its own host after the file is gone (the journal still proves the answer),
/// and through a gateway of another home (no journal, no file) — the same bytes, on the
/// snapshot's evidence, either way.
#[test]
fn a_shared_supervised_codex_run_is_read_from_its_snapshot_without_its_file_or_its_journal() {
    let c = case_of(true, Agent::Codex);
    c.record(Foreground::Completed, c.journaled(), 0, false, 0);
    let whole = runread_testkit::answer(&c.run).unwrap();
    let on_file = c.call(tools::READ_FINAL_ANSWER);
    assert_eq!(on_file["evidence"], "supervised", "{on_file}");
    std::fs::remove_file(&c.run.session_path).unwrap();
    let here = c.call(tools::READ_FINAL_ANSWER);
    assert_eq!(
        (here["state"].as_str(), here["evidence"].as_str()),
        (Some("available"), Some("snapshot")),
        "{here}"
    );
    assert_eq!(
        here["foregroundFinalConfirmed"], true,
        "the journal still proves it here"
    );
    assert_eq!(here["sha256"], runread_core::sha256_hex(whole.as_bytes()));
    // Another home's gateway: its own journal (empty), the same store and gate keys.
    let elsewhere = Config {
        journal_root: Some(c.env.dir.path().join("another-home-journal")),
        ..Config::default()
    };
    let svc = Arc::new(
        Service::new(
            c.env.store.clone() as Arc<dyn Store>,
            c.env.keys(),
            elsewhere,
        )
        .unwrap(),
    );
    let gateway = Case {
        svc,
        ctx: c.ctx.clone(),
        run: c.run.clone(),
        env: Env::new(),
    };
    let there = gateway.call(tools::READ_FINAL_ANSWER);
    assert_eq!(
        (there["state"].as_str(), there["evidence"].as_str()),
        (Some("available"), Some("snapshot")),
        "{there}"
    );
    assert_eq!(there["sha256"], here["sha256"]);
    assert_eq!(there["text"], here["text"]);
}
