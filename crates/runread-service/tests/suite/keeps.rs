//! Kept runs (`runread keep`): a run the owner kept outlives its session file. Its whole evidence
//! is sealed into the store under a data key of its own; once the file is gone the owner and a
//! reader granted afterwards read the same bytes from it (`evidence: kept`), masked with the
//! secrets known when they read; a damaged kept row reads `unknown`; the owner's bound holds at N
//! and N+1; a keep rule keeps a workspace's runs as ingest finds them settled; and dropping a
//! keep leaves neither its key nor its bytes in the store's files, while a live share's own
//! snapshot stays.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::snapshots::call;
use runread_core::limits::{KEPT_STORE_LIMIT_MAX_BYTES, KEPT_STORE_LIMIT_MIN_BYTES};
use runread_core::{Agent, Feature};
use runread_service::evidence::snapshot::{self, Bounds, Keeping};
use runread_service::owner::shown::SessionFile;
use runread_service::owner::{KeepError, NewReaderPolicy};
use runread_service::{KeyContext, Service, tools};
use runread_store::prelude::*;
use runread_store::{KeepReason, RunRecord};
use runread_testkit::Env;

const SETTLED: Duration = Duration::from_secs(60);

fn now() -> i64 {
    runread_core::timefmt::now_ms()
}

/// The whole answer, chunk by chunk, and the last chunk's fields.
fn read_answer(svc: &Arc<Service>, ctx: &KeyContext, run: &RunRecord) -> (String, Value) {
    super::snapshots::read_answer(svc, ctx, &run.target)
}

/// Every history page's events, and each page's evidence.
fn read_history(svc: &Arc<Service>, ctx: &KeyContext, run: &RunRecord) -> (Vec<Value>, Vec<Value>) {
    let (mut events, mut evidence) = (Vec::new(), Vec::new());
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"target": run.target, "limit": 2});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let out = call(svc, ctx, tools::READ_HISTORY, args).unwrap();
        events.extend(out["events"].as_array().unwrap().iter().cloned());
        evidence.push(out["evidence"].clone());
        match out["nextCursor"].as_str() {
            Some(c) if out["eof"] != true => cursor = Some(c.to_owned()),
            _ => return (events, evidence),
        }
    }
}

/// A real Claude Code session `fixture` (from the harness), ingested: its files and its newest
/// run with an answer.
fn claude_run(env: &Env, fixture: &str) -> (Vec<std::path::PathBuf>, RunRecord) {
    super::snapshots::claude_run_of(env, fixture)
}

/// A new reader holding `features` of `run` for ten minutes: its key, admitted.
fn reader(env: &Env, svc: &Arc<Service>, name: &str, run: &RunRecord) -> (KeyContext, String) {
    let g = env
        .owner()
        .grant_run(
            run.clone(),
            vec![
                Feature::FinalAnswer,
                Feature::History,
                Feature::Metadata,
                Feature::Aggregate,
            ],
            now() + 600_000,
            (name, NewReaderPolicy::Make),
            None,
            now(),
        )
        .unwrap();
    let key = g.key.clone().unwrap();
    (svc.admit_key(&[key.as_bytes()]).unwrap(), g.grant.id)
}

/// The agent's cleanup: the session's files (and a subagent's, beside it) deleted.
fn delete(files: &[std::path::PathBuf]) {
    for f in files {
        std::fs::remove_file(f).unwrap();
        let beside = f.with_extension("");
        if beside.is_dir() {
            std::fs::remove_dir_all(beside).unwrap();
        }
    }
}

/// Every byte of the store's files (the database, its log, its index of the log).
fn store_bytes(env: &Env) -> Vec<u8> {
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(env.dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("runread.db")
        {
            stored.extend(std::fs::read(&p).unwrap_or_default());
        }
    }
    stored
}

fn shown_file(env: &Env, run: &RunRecord) -> SessionFile {
    env.owner().shown_run(run.clone(), now()).unwrap().file
}

#[test]
fn a_kept_claude_run_reads_the_same_after_its_file_is_deleted_to_a_reader_granted_afterwards() {
    let env = Env::new();
    let (files, run) = claude_run(&env, "tool-then-answer");
    let svc = env.service();
    let (before_ctx, before_grant) = reader(&env, &svc, "before", &run);
    let (answer, last) = read_answer(&svc, &before_ctx, &run);
    assert_eq!(last["evidence"], "session_file");
    let (events, _) = read_history(&svc, &before_ctx, &run);
    let prompt = env
        .owner()
        .shown_run(run.clone(), now())
        .unwrap()
        .prompt
        .clone();
    // That reader's share ends: only the keep holds the run from here on.
    assert!(env.owner().revoke_grant(&before_grant, now()).unwrap());
    assert!(env.store.snapshots().unwrap().is_empty());

    let kept = env.owner().keep_run(&run, now()).unwrap();
    assert!(
        matches!(kept, Keeping::Kept { again: false, lines, .. } if lines > 0),
        "{kept:?}"
    );
    assert_eq!(
        env.owner().keep_run(&run, now()).unwrap(),
        Keeping::AlreadyKept {
            bytes: env.owner().kept(&run).unwrap().unwrap().summary.bytes
        }
    );
    assert!(env.owner().shown_run(run.clone(), now()).unwrap().kept);
    delete(&files);
    env.ingest();

    // The owner: the file is gone, the run kept, its prompt read from the kept copy.
    let shown = env.owner().shown_run(run.clone(), now()).unwrap();
    assert_eq!(shown.file, SessionFile::GoneKept);
    assert_eq!(shown.file.says(), Some("file gone, kept"));
    assert_eq!(shown.prompt, prompt);
    assert_eq!(shown.answer_state, "available");

    // A reader granted now, when the file is gone: its share is sealed from the kept copy, and
    // it reads the same bytes, from the kept copy.
    let (ctx, _) = reader(&env, &svc, "after", &run);
    assert_eq!(
        env.store.snapshots().unwrap().len(),
        1,
        "sealed from the kept copy"
    );
    let (after, last_after) = read_answer(&svc, &ctx, &run);
    assert_eq!(after, answer, "byte for byte");
    assert_eq!(last_after["sha256"], last["sha256"]);
    assert_eq!(last_after["state"], "available");
    assert_eq!(last_after["evidence"], "kept");
    let (events_after, evidence) = read_history(&svc, &ctx, &run);
    assert_eq!(events_after, events, "every event identical");
    assert!(evidence.iter().all(|e| e == "kept"), "{evidence:?}");

    // Dropping the keep leaves the live share's own snapshot: the reader still reads it.
    assert!(env.owner().drop_kept(&run, now()).unwrap());
    assert_eq!(shown_file(&env, &run), SessionFile::GoneSealedForSharing);
    let (shared, last_shared) = read_answer(&svc, &ctx, &run);
    assert_eq!(shared, answer);
    assert_eq!(last_shared["evidence"], "snapshot");
}

#[test]
fn a_kept_runs_subagent_records_are_read_from_its_copy_once_their_files_are_gone() {
    let env = Env::new();
    let (files, run) = claude_run(&env, "subagent");
    let svc = env.service();
    let (ctx, _) = reader(&env, &svc, "chat", &run);
    let state = |svc: &Arc<Service>| {
        call(
            svc,
            &ctx,
            tools::READ_WORK_STATE,
            json!({"target": run.target}),
        )
        .unwrap()
    };
    let before = state(&svc);
    let children = before["aggregate"]["children"].clone();
    assert!(
        children.as_array().is_some_and(|c| !c.is_empty()),
        "{before}"
    );
    assert!(env.owner().keep_run(&run, now()).unwrap().is_kept());
    // The session file and every subagent's record beside it deleted.
    delete(&files);
    let after = state(&svc);
    assert_eq!(after["aggregate"]["children"], children, "{after}");
    assert_eq!(
        after["coverage"]["subagents"], before["coverage"]["subagents"],
        "{after}"
    );
}

#[test]
fn a_secret_added_after_keeping_is_masked_and_the_store_holds_no_plaintext() {
    let env = Env::new();
    let (files, run) = claude_run(&env, "tool-then-answer");
    let svc = env.service();
    assert!(env.owner().keep_run(&run, now()).unwrap().is_kept());
    let (ctx, grant) = reader(&env, &svc, "chat", &run);
    let (answer, _) = read_answer(&svc, &ctx, &run);
    assert!(answer.len() >= 24, "{answer:?}");
    delete(&files);
    let stored = store_bytes(&env);
    for piece in answer.as_bytes().windows(8) {
        assert!(
            !stored.windows(8).any(|w| w == piece),
            "the store holds plaintext of the run: {:?}",
            String::from_utf8_lossy(piece)
        );
    }
    // Only the keep holds it now.
    assert!(env.owner().revoke_grant(&grant, now()).unwrap());
    let (ctx, _) = reader(&env, &svc, "later", &run);
    let secret = answer
        .char_indices()
        .map(|(i, _)| i)
        .find_map(|i| answer.get(i..i + 16))
        .unwrap()
        .to_owned();
    env.add_secret("later", &secret);
    let (masked, last) = read_answer(&svc, &ctx, &run);
    assert_eq!(last["evidence"], "kept");
    assert!(!masked.contains(&secret), "{masked:?}");
    assert_ne!(masked, answer);
    let shown = env.owner().shown_run(run.clone(), now()).unwrap();
    assert!(!format!("{:?}", *shown).contains(&secret));
}

#[test]
fn a_tampered_kept_row_reads_unknown_never_garbage() {
    let env = Env::new();
    let (files, run) = claude_run(&env, "tool-then-answer");
    let svc = env.service();
    assert!(env.owner().keep_run(&run, now()).unwrap().is_kept());
    let t = &run.target;
    let mut record = env
        .store
        .kept(&t.session_id, t.generation, &t.run_id)
        .unwrap()
        .unwrap();
    let last = record.sealed.len() - 1;
    record.sealed[last] ^= 1;
    assert!(
        env.store
            .put_kept(&record, KeepReason::Run, u64::MAX)
            .unwrap()
    );
    delete(&files);
    // The reader's grant is made on the file gone and a kept copy that does not open: it holds
    // no snapshot, and reads nothing.
    let (ctx, _) = reader(&env, &svc, "chat", &run);
    let out = call(
        &svc,
        &ctx,
        tools::READ_FINAL_ANSWER,
        json!({"target": run.target}),
    )
    .unwrap();
    assert_eq!(out["state"], "unknown", "{out}");
    assert_eq!(out["text"], Value::Null);
    assert_eq!(shown_file(&env, &run), SessionFile::GoneNotKept);
    let listed = env.owner().kept_runs().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].standing.as_str(), "unreadable");
    // A kept row put in a snapshot's place does not open as one either.
    let record = env
        .store
        .kept(&t.session_id, t.generation, &t.run_id)
        .unwrap()
        .unwrap();
    let mut intact = record.clone();
    intact.sealed[last] ^= 1;
    assert!(env.store.put_snapshot(&intact, u64::MAX).unwrap());
    let out = call(
        &svc,
        &ctx,
        tools::READ_FINAL_ANSWER,
        json!({"target": run.target}),
    )
    .unwrap();
    assert_eq!(out["state"], "unknown", "{out}");
}

#[test]
fn kept_runs_stay_within_the_owners_bound_at_n_and_n_plus_one_and_none_is_dropped_for_room() {
    let env = Env::new();
    env.place_claude("tool-then-answer", SETTLED);
    env.place_claude("continue-unicode", SETTLED);
    env.ingest();
    let runs: Vec<RunRecord> = env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .filter(|r| r.agent == Agent::Claude && !r.run.final_lines.is_empty())
        .collect();
    assert!(runs.len() >= 2);
    let (a, b) = (&runs[0], &runs[1]);
    let keys = env.keys();
    let keep = |run: &RunRecord, store_max_bytes: u64| {
        let bounds = Bounds {
            run_max_bytes: runread_core::limits::SNAPSHOT_RUN_MAX_BYTES,
            store_max_bytes,
        };
        snapshot::seal_kept(&*env.store, &*keys, run, KeepReason::Run, now(), bounds).unwrap()
    };
    let Keeping::Kept { bytes: bytes_a, .. } = keep(a, u64::MAX) else {
        panic!("a is kept")
    };
    // b fits with exactly its bytes to spare, and not with one byte less.
    let bytes_b = {
        let refused = keep(b, bytes_a);
        let Keeping::OverLimit { bytes, kept, limit } = refused else {
            panic!("{refused:?}")
        };
        assert_eq!((kept, limit), (bytes_a, bytes_a));
        assert!(
            refused.describe().contains("not kept"),
            "{}",
            refused.describe()
        );
        bytes
    };
    assert!(matches!(
        keep(b, bytes_a + bytes_b - 1),
        Keeping::OverLimit { .. }
    ));
    assert_eq!(
        env.store.kept_runs().unwrap().len(),
        1,
        "nothing dropped for room"
    );
    assert!(matches!(keep(b, bytes_a + bytes_b), Keeping::Kept { .. }));
    assert_eq!(env.owner().kept_totals().unwrap().bytes, bytes_a + bytes_b);
    // One run's copy: at most its bound, not one byte over.
    let per_run = |run_max_bytes| Bounds {
        run_max_bytes,
        store_max_bytes: u64::MAX,
    };
    assert!(env.owner().drop_kept(a, now()).unwrap());
    let seal =
        |max| snapshot::seal_kept(&*env.store, &*keys, a, KeepReason::Run, now(), per_run(max));
    assert_eq!(
        seal(bytes_a - 1).unwrap(),
        Keeping::TooLarge { bytes: bytes_a }
    );
    assert!(matches!(seal(bytes_a).unwrap(), Keeping::Kept { .. }));
    // The owner's bound itself, at its ends.
    let owner = env.owner();
    for ok in [KEPT_STORE_LIMIT_MIN_BYTES, KEPT_STORE_LIMIT_MAX_BYTES] {
        owner.set_keep_limit(ok).unwrap();
        assert_eq!(owner.kept_totals().unwrap().limit_bytes, ok);
    }
    for refused in [
        KEPT_STORE_LIMIT_MIN_BYTES - 1,
        KEPT_STORE_LIMIT_MAX_BYTES + 1,
    ] {
        assert_eq!(
            owner.set_keep_limit(refused),
            Err(KeepError::LimitOutOfRange)
        );
    }
}

#[test]
fn a_keep_rule_keeps_a_workspaces_runs_as_ingest_finds_them_and_drop_takes_rule_and_runs() {
    let env = Env::new();
    let owner = env.owner();
    let added = owner
        .add_keep_rule("test", Some(Agent::Claude), now())
        .unwrap();
    assert!(added.new);
    assert_eq!(added.pass.kept, 0, "nothing to keep yet");
    assert!(
        !owner
            .add_keep_rule("test", Some(Agent::Claude), now())
            .unwrap()
            .new
    );
    assert!(matches!(
        owner.add_keep_rule("no-such-workspace", None, now()),
        Err(KeepError::NoWorkspace(_))
    ));
    env.place("sample", SETTLED);
    let files = env.place_claude("tool-then-answer", SETTLED);
    env.ingest();
    let (_, pass) = owner.maintain_snapshots(now()).unwrap();
    let claude_runs = env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .filter(|r| r.agent == Agent::Claude)
        .count() as u64;
    assert_eq!(pass.kept, claude_runs, "{pass:?}");
    let kept = owner.kept_runs().unwrap();
    assert!(
        kept.iter().all(|k| k.agent == Some(Agent::Claude)),
        "only the rule's agent"
    );
    assert!(kept.iter().all(|k| k.kept.reason == KeepReason::Workspace));
    assert!(kept.iter().all(|k| k.standing.as_str() == "ok"));
    let (_, again) = owner.maintain_snapshots(now()).unwrap();
    assert_eq!((again.kept, again.resealed), (0, 0), "kept once");
    delete(&files);
    let run = env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .find(|r| r.agent == Agent::Claude)
        .unwrap();
    assert_eq!(shown_file(&env, &run), SessionFile::GoneKept);

    let dropped = owner.drop_workspace_keeps("test", None, now()).unwrap();
    assert_eq!(dropped.rules, 1);
    assert_eq!(dropped.runs.len() as u64, claude_runs);
    assert!(owner.keep_rules().unwrap().is_empty());
    assert_eq!(shown_file(&env, &run), SessionFile::GoneNotKept);
    let events: Vec<String> = env
        .store
        .snapshot_log(50)
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect();
    assert!(events.contains(&"kept".to_owned()) && events.contains(&"kept dropped".to_owned()));
}

#[test]
fn a_kept_run_that_goes_on_is_sealed_again_by_the_next_pass() {
    let env = Env::new();
    let (path, tail) = env.place_unfinished("sample");
    env.ingest();
    let owner = env.owner();
    let newest = |env: &Env| {
        env.store
            .runs()
            .unwrap()
            .into_iter()
            .max_by_key(|r| r.run.start_line)
            .unwrap()
    };
    let first = newest(&env);
    assert!(owner.keep_run(&first, now()).unwrap().is_kept());
    let before = owner.kept(&first).unwrap().unwrap();
    Env::append(&path, &tail);
    env.ingest();
    let (_, pass) = owner.maintain_snapshots(now()).unwrap();
    let run = newest(&env);
    assert_eq!(run.target, first.target, "the same run, gone on");
    assert_eq!(pass.resealed, 1, "{pass:?}");
    let after = owner.kept(&run).unwrap().unwrap();
    assert_ne!(after.summary.index_sha256, before.summary.index_sha256);
    assert_eq!(
        after.kept_since_ms, before.kept_since_ms,
        "kept since the first time"
    );
    assert_eq!(after.reason, KeepReason::Run);
}

#[test]
fn a_dropped_keeps_key_and_bytes_are_nowhere_in_the_store_files() {
    let env = Env::new();
    let (_files, run) = claude_run(&env, "tool-then-answer");
    assert!(env.owner().keep_run(&run, now()).unwrap().is_kept());
    let t = &run.target;
    let sealed = env
        .store
        .kept(&t.session_id, t.generation, &t.run_id)
        .unwrap()
        .unwrap();
    let present = |needle: &[u8]| store_bytes(&env).windows(needle.len()).any(|w| w == needle);
    assert!(present(&sealed.data_key), "the key is there while kept");
    assert!(env.owner().drop_kept(&run, now()).unwrap());
    assert!(!env.owner().drop_kept(&run, now()).unwrap(), "dropped once");
    assert!(!present(&sealed.data_key), "the wrapped key");
    let pieces = sealed.sealed.len() / 32;
    for i in (0..pieces)
        .step_by((pieces / 16).max(1))
        .chain([pieces - 1])
    {
        assert!(
            !present(&sealed.sealed[i * 32..i * 32 + 32]),
            "sealed bytes at {i}"
        );
    }
    assert!(env.store.kept_runs().unwrap().is_empty());
}

/// On a shared PostgreSQL store, a gateway that cannot see the agent's disk reads a run another
/// host kept.
#[test]
fn a_run_kept_on_one_postgres_host_is_read_by_a_gateway_on_another() {
    let db = runread_testkit::pg::PgDb::fresh();
    let env = Env::new();
    let laptop: Arc<dyn Store> = Arc::new(db.store_as("laptop"));
    laptop
        .add_workspace(env.workspace.to_str().unwrap(), "project", 1)
        .unwrap();
    let files = env.place_claude("tool-then-answer", SETTLED);
    let dir = runread_ingest::AgentDir::new(Agent::Claude, env.claude_projects.clone());
    runread_ingest::ingest_dir(&*laptop, &dir, now(), |_| {}).unwrap();
    let run = laptop
        .runs()
        .unwrap()
        .into_iter()
        .filter(|r| !r.run.final_lines.is_empty())
        .max_by_key(|r| r.run.start_line)
        .unwrap();
    let owner = runread_service::Owner::new(
        laptop.clone(),
        env.keys(),
        runread_service::Config::default(),
        Vec::new(),
    );
    let svc =
        Arc::new(Service::new(laptop, env.keys(), runread_service::Config::default()).unwrap());
    let g = owner
        .grant_run(
            run.clone(),
            vec![Feature::FinalAnswer],
            now() + 600_000,
            ("chat", NewReaderPolicy::Make),
            None,
            now(),
        )
        .unwrap();
    let key = g.key.unwrap();
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    let (answer, _) = read_answer(&svc, &ctx, &run);
    assert!(owner.keep_run(&run, now()).unwrap().is_kept());
    // Not on the gateway's disk.
    delete(&files);
    let gateway: Arc<dyn Store> = Arc::new(db.store_as("gateway"));
    let remote =
        Arc::new(Service::new(gateway, env.keys(), runread_service::Config::default()).unwrap());
    let ctx = remote.admit_key(&[key.as_bytes()]).unwrap();
    let (read, last) = read_answer(&remote, &ctx, &run);
    assert_eq!(read, answer);
    assert_eq!(
        last["evidence"], "kept",
        "the kept copy comes before the share's snapshot"
    );
}
