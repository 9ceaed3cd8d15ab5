//! Snapshots: a shared run outlives its session file. The grant seals the run's evidence into the
//! store; once the file is gone the reader reads the same bytes from the snapshot (and is told
//! so), masked with the secrets known when it reads; a file that is there but changed stays
//! `unknown`; a damaged snapshot reads `unknown`, never garbage; the bounds hold at N and N+1; and
//! the snapshot is destroyed, leaving nothing, when the last grant on its run ends.

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::limits::SNAPSHOT_STORE_MAX_BYTES;
use runread_core::{ErrorCode, Feature};
use runread_service::evidence::snapshot::{self, Bounds, Sealing};
use runread_service::{KeyContext, Service, tools};

use runread_testkit::{Env, block_on};

const SETTLED: Duration = Duration::from_secs(60);

pub(super) fn call(
    svc: &Arc<Service>,
    ctx: &KeyContext,
    tool: &str,
    args: Value,
) -> Result<Value, ErrorCode> {
    let out = block_on(svc.call(Arc::new(ctx.clone()), tool, args, None))?;
    runread_testkit::serve::assert_declared_output(tool, &out.labeled.structured);
    Ok(out.labeled.structured)
}

/// The answer's first chunk, with its state and evidence.
fn first_chunk(svc: &Arc<Service>, ctx: &KeyContext, target: &runread_core::Target) -> Value {
    call(
        svc,
        ctx,
        tools::READ_FINAL_ANSWER,
        json!({"target": target}),
    )
    .unwrap()
}

/// The agent's cleanup: the session's files deleted.
fn delete(files: &[std::path::PathBuf]) {
    for f in files {
        std::fs::remove_file(f).unwrap();
    }
}

/// The whole answer, chunk by chunk, and the last chunk's fields.
pub(super) fn read_answer(
    svc: &Arc<Service>,
    ctx: &KeyContext,
    target: &runread_core::Target,
) -> (String, Value) {
    let mut text = String::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"target": target});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let out = call(svc, ctx, tools::READ_FINAL_ANSWER, args).unwrap();
        text.push_str(out["text"].as_str().unwrap_or(""));
        match out["nextCursor"].as_str() {
            Some(c) if out["eof"] == false => cursor = Some(c.to_owned()),
            _ => return (text, out),
        }
    }
}

/// Every history page, two events at a time (so that paging is exercised).
fn read_pages(svc: &Arc<Service>, ctx: &KeyContext, target: &runread_core::Target) -> Vec<Value> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"target": target, "limit": 2});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let out = call(svc, ctx, tools::READ_HISTORY, args).unwrap();
        let next = out["nextCursor"].as_str().map(str::to_owned);
        let eof = out["eof"] == true;
        pages.push(out);
        match next {
            Some(c) if !eof => cursor = Some(c),
            _ => return pages,
        }
    }
}

/// A Claude Code session (real, from the harness), ingested; its run with an answer.
fn claude_run(env: &Env) -> (Vec<std::path::PathBuf>, runread_store::RunRecord) {
    claude_run_of(env, "tool-then-answer")
}

/// The Claude Code session `fixture` (real, from the harness), ingested: its files and its
/// newest run with an answer.
pub(super) fn claude_run_of(
    env: &Env,
    fixture: &str,
) -> (Vec<std::path::PathBuf>, runread_store::RunRecord) {
    let files = env.place_claude(fixture, SETTLED);
    env.ingest();
    let run = env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .filter(|r| !r.run.final_lines.is_empty())
        .max_by_key(|r| r.run.start_line)
        .expect("a run with an answer");
    (files, run)
}

fn share(
    env: &Env,
    run: &runread_store::RunRecord,
    expires_in_ms: i64,
) -> (runread_service::owner::NewGrant, String) {
    let now = runread_core::timefmt::now_ms();
    let g = env
        .owner()
        .grant_run(
            run.clone(),
            vec![Feature::FinalAnswer, Feature::History, Feature::Metadata],
            now + expires_in_ms,
            ("assistant", runread_service::owner::NewReaderPolicy::Make),
            None,
            now,
        )
        .unwrap();
    let key = g.key.clone().unwrap();
    (g, key)
}

#[test]
fn a_shared_claude_run_reads_the_same_after_its_file_is_deleted_until_its_grant_ends() {
    let env = Env::new();
    let (files, run) = claude_run(&env);
    let svc = env.service();
    let lifetime_ms = 4_000;
    let (g, key) = share(&env, &run, lifetime_ms);
    assert!(
        matches!(g.snapshot, Sealing::Kept { lines, .. } if lines > 0),
        "{:?}",
        g.snapshot
    );
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    let (before, last) = read_answer(&svc, &ctx, &run.target);
    assert_eq!(last["state"], "available");
    assert_eq!(last["evidence"], "session_file");
    let pages_before = read_pages(&svc, &ctx, &run.target);
    assert!(pages_before.iter().all(|p| p["evidence"] == "session_file"));
    let metadata = |svc: &Arc<Service>| {
        call(
            svc,
            &ctx,
            tools::READ_TARGET_METADATA,
            json!({"target": run.target}),
        )
        .unwrap()
    };
    let metadata_before = metadata(&svc);

    // Claude Code's cleanup: the transcript is deleted. An ingest pass after it keeps the run
    // (and so the grant) current.
    delete(&files);
    env.ingest();
    let now_run = env
        .store
        .run(
            &run.target.session_id,
            run.target.generation,
            &run.target.run_id,
        )
        .unwrap()
        .expect("the run is still indexed");
    assert_eq!(now_run.target, run.target, "the target is still current");

    let (after, last_after) = read_answer(&svc, &ctx, &run.target);
    assert_eq!(after, before, "the same bytes");
    assert_eq!(last_after["sha256"], last["sha256"]);
    assert_eq!(last_after["state"], "available");
    assert_eq!(last_after["evidence"], "snapshot");
    let pages_after = read_pages(&svc, &ctx, &run.target);
    assert_eq!(pages_after.len(), pages_before.len());
    for (a, b) in pages_after.iter().zip(&pages_before) {
        assert_eq!(a["events"], b["events"], "every page identical");
        assert_eq!(a["gap"], b["gap"]);
        assert_eq!(a["evidence"], "snapshot");
    }
    assert_eq!(
        metadata(&svc),
        metadata_before,
        "the prompt and header lines, from the snapshot"
    );

    // The grant ends by time: the next sweep destroys the snapshot, and nothing of it is left.
    std::thread::sleep(Duration::from_millis(lifetime_ms as u64 + 200));
    let m = snapshot::maintain(&*env.store, &*env.keys(), runread_core::timefmt::now_ms()).unwrap();
    assert_eq!(m.destroyed.len(), 1);
    assert!(env.store.snapshots().unwrap().is_empty());
    // The audit of snapshots says it: sealed at the grant, destroyed when the grant ended.
    let log: Vec<(String, String)> = env
        .store
        .snapshot_log(10)
        .unwrap()
        .into_iter()
        .map(|e| (e.event, e.run_id))
        .collect();
    assert_eq!(
        log,
        [
            ("destroyed".to_owned(), run.target.run_id.clone()),
            ("sealed".to_owned(), run.target.run_id.clone())
        ]
    );
    assert!(
        env.store
            .snapshot(
                &run.target.session_id,
                run.target.generation,
                &run.target.run_id
            )
            .unwrap()
            .is_none()
    );
    assert_eq!(
        call(
            &svc,
            &ctx,
            tools::READ_FINAL_ANSWER,
            json!({"target": run.target})
        )
        .unwrap_err(),
        ErrorCode::GrantExpired
    );
}

#[test]
fn revoking_the_last_grant_destroys_the_snapshot_and_another_grant_keeps_it() {
    let env = Env::new();
    let (_files, run) = claude_run(&env);
    let (first, _) = share(&env, &run, 600_000);
    let second = env.grant(&run.target.run_id, vec![Feature::Status], "second");
    let now = runread_core::timefmt::now_ms();
    assert!(env.owner().revoke_grant(&first.grant.id, now).unwrap());
    assert_eq!(
        env.store.snapshots().unwrap().len(),
        1,
        "the second grant still holds it"
    );
    assert!(env.owner().revoke_grant(&second.grant.id, now).unwrap());
    assert!(
        env.store.snapshots().unwrap().is_empty(),
        "the last grant took it"
    );
}

#[test]
fn a_secret_added_after_the_grant_is_masked_in_snapshot_reads_and_the_store_holds_no_plaintext() {
    let env = Env::new();
    let (files, run) = claude_run(&env);
    let svc = env.service();
    let (_, key) = share(&env, &run, 600_000);
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    let (answer, _) = read_answer(&svc, &ctx, &run.target);
    assert!(
        answer.len() >= 24,
        "an answer long enough to hold a secret: {answer:?}"
    );
    delete(&files);
    // No 8-byte piece of the answer is anywhere in the store's files (the database and its log).
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(env.dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("runread.db")
        {
            stored.extend(std::fs::read(&p).unwrap());
        }
    }
    let bytes = answer.as_bytes();
    for piece in bytes.windows(8) {
        assert!(
            !stored.windows(8).any(|w| w == piece),
            "the store holds plaintext of the run: {:?}",
            String::from_utf8_lossy(piece)
        );
    }
    // A secret added now, a piece of the sealed answer, is masked in what the snapshot serves.
    let secret = answer
        .char_indices()
        .map(|(i, _)| i)
        .find_map(|i| answer.get(i..i + 16))
        .unwrap()
        .to_owned();
    env.add_secret("later", &secret);
    let (masked, last) = read_answer(&svc, &ctx, &run.target);
    assert_eq!(last["evidence"], "snapshot");
    assert!(!masked.contains(&secret), "{masked:?}");
    assert_ne!(masked, answer);
}

#[test]
fn a_file_that_is_there_but_changed_stays_unknown_and_is_not_served_from_the_snapshot() {
    let env = Env::new();
    let (files, run) = claude_run(&env);
    let svc = env.service();
    let (_, key) = share(&env, &run, 600_000);
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    let original = std::fs::read(&files[0]).unwrap();
    let mut changed = original.clone();
    if let Some(b) = changed.iter_mut().find(|b| b.is_ascii_lowercase()) {
        *b = b.to_ascii_uppercase();
    }
    std::fs::write(&files[0], &changed).unwrap();
    let out = first_chunk(&svc, &ctx, &run.target);
    assert_eq!(out["state"], "unknown");
    assert_eq!(out["evidence"], "session_file");
    assert_eq!(out["text"], Value::Null);
}

#[test]
fn a_damaged_snapshot_reads_unknown_never_garbage() {
    let env = Env::new();
    let (files, run) = claude_run(&env);
    let svc = env.service();
    let (_, key) = share(&env, &run, 600_000);
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    let t = &run.target;
    let mut record = env
        .store
        .snapshot(&t.session_id, t.generation, &t.run_id)
        .unwrap()
        .unwrap();
    let last = record.sealed.len() - 1;
    record.sealed[last] ^= 1;
    assert!(
        env.store
            .put_snapshot(&record, SNAPSHOT_STORE_MAX_BYTES)
            .unwrap()
    );
    delete(&files);
    let out = first_chunk(&svc, &ctx, &run.target);
    assert_eq!(out["state"], "unknown");
    assert_eq!(out["text"], Value::Null);
    let page = call(
        &svc,
        &ctx,
        tools::READ_HISTORY,
        json!({"target": run.target}),
    )
    .unwrap();
    assert_eq!(page["readable"], false);
    assert!(
        page["gapReasons"]
            .as_array()
            .unwrap()
            .contains(&json!("source_changed"))
    );
    assert!(
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["text"].is_null())
    );
}

#[test]
fn a_run_is_kept_at_the_bound_per_run_and_not_one_byte_over() {
    let env = Env::new();
    let (_files, run) = claude_run(&env);
    let (g, _) = share(&env, &run, 600_000);
    let Sealing::Kept { bytes, .. } = g.snapshot else {
        panic!("{:?}", g.snapshot)
    };
    let now = runread_core::timefmt::now_ms();
    let at = |run_max_bytes| Bounds {
        run_max_bytes,
        store_max_bytes: SNAPSHOT_STORE_MAX_BYTES,
    };
    assert!(snapshot::fits_run(at(bytes), bytes));
    assert!(!snapshot::fits_run(at(bytes), bytes + 1));
    assert!(matches!(
        snapshot::seal_within(&*env.store, &*env.keys(), &run, now, at(bytes)).unwrap(),
        Sealing::Kept { .. }
    ));
    assert_eq!(
        snapshot::seal_within(&*env.store, &*env.keys(), &run, now, at(bytes - 1)).unwrap(),
        Sealing::TooLarge { bytes }
    );
    assert!(snapshot::fits_run(
        Bounds::default(),
        runread_core::limits::SNAPSHOT_RUN_MAX_BYTES
    ));
    assert!(!snapshot::fits_run(
        Bounds::default(),
        runread_core::limits::SNAPSHOT_RUN_MAX_BYTES + 1
    ));
}

#[test]
fn a_store_at_its_snapshot_bound_still_grants_and_says_it_keeps_no_snapshot() {
    let env = Env::new();
    let (files, run) = claude_run(&env);
    // Another run's snapshot fills the store to its bound.
    let full = runread_store::SnapshotRecord {
        summary: runread_store::SnapshotSummary {
            session_id: "elsewhere".into(),
            generation: 1,
            run_id: "other-run".into(),
            workspace_id: env.ws.id.clone(),
            features: vec![Feature::FinalAnswer],
            index_sha256: "00".repeat(32),
            lines: 0,
            bytes: SNAPSHOT_STORE_MAX_BYTES,
            created_at_ms: 1,
        },
        key_id: "k".into(),
        data_key: vec![0; 60],
        nonce: vec![0; 12],
        sealed: vec![0; 16],
    };
    assert!(
        env.store
            .put_snapshot(&full, SNAPSHOT_STORE_MAX_BYTES)
            .unwrap()
    );
    let (g, key) = share(&env, &run, 600_000);
    assert!(
        matches!(g.snapshot, Sealing::StoreFull { .. }),
        "{:?}",
        g.snapshot
    );
    assert!(g.snapshot.describe().starts_with("no snapshot"));
    // The grant is made: the run reads while its file is there, and is unknown once it is gone.
    let svc = env.service();
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    assert_eq!(read_answer(&svc, &ctx, &run.target).1["state"], "available");
    delete(&files);
    assert_eq!(read_answer(&svc, &ctx, &run.target).1["state"], "unknown");
}

/// Registers `rel` (written into the workspace with `content`) for `run`; its id and sha256.
fn register(
    env: &Env,
    run: &runread_store::RunRecord,
    rel: &str,
    content: &[u8],
) -> (String, String) {
    std::fs::write(env.workspace.join(rel), content).unwrap();
    let (id, v) = env
        .owner()
        .add_artifact(
            &runread_service::owner::NewArtifact {
                run_id: &run.target.run_id,
                session_id: Some(&run.target.session_id),
                path: rel,
                name: None,
                mime: None,
                kind: "generated",
            },
            1,
        )
        .unwrap();
    (id, v.sha256)
}

/// Every chunk of an artifact, decoded.
fn read_artifact(
    svc: &Arc<Service>,
    ctx: &KeyContext,
    run: &runread_store::RunRecord,
    id: &str,
    version: &str,
) -> Result<Vec<u8>, ErrorCode> {
    use base64::Engine;
    let mut out = Vec::new();
    loop {
        let chunk = call(
            svc,
            ctx,
            tools::READ_ARTIFACT,
            json!({"target": run.target, "artifactId": id, "version": version, "offset": out.len(), "limit": 1024}),
        )?;
        out.extend(
            base64::engine::general_purpose::STANDARD
                .decode(chunk["data"].as_str().unwrap())
                .unwrap(),
        );
        if chunk["eof"] == true {
            return Ok(out);
        }
    }
}

/// A shared run's registered artifacts are sealed with it when `artifacts` is granted (and one
/// registered after the grant too): once their files are gone they read the same, checked against
/// the registered sha256; a file that is there but changed is still refused.
#[test]
fn a_shared_runs_artifacts_read_the_same_after_their_files_are_gone() {
    let env = Env::new();
    let (_files, run) = claude_run(&env);
    let report: Vec<u8> = (0..3_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let (before_id, before_sha) = register(&env, &run, "report.bin", &report);
    let now = runread_core::timefmt::now_ms();
    let g = env
        .owner()
        .grant_run(
            run.clone(),
            vec![Feature::Artifacts],
            now + 600_000,
            ("assistant", runread_service::owner::NewReaderPolicy::Make),
            None,
            now,
        )
        .unwrap();
    assert!(matches!(g.snapshot, Sealing::Kept { bytes, .. } if bytes >= report.len() as u64));
    let (after_id, after_sha) = register(&env, &run, "notes.txt", b"registered after the grant\n");
    let svc = env.service();
    let ctx = svc.admit_key(&[g.key.unwrap().as_bytes()]).unwrap();
    // A file there but changed: refused, not served from the snapshot.
    std::fs::write(
        env.workspace.join("notes.txt"),
        b"REGISTERED after the grant\n",
    )
    .unwrap();
    assert_eq!(
        read_artifact(&svc, &ctx, &run, &after_id, &after_sha).unwrap_err(),
        ErrorCode::ArtifactChanged
    );
    std::fs::remove_file(env.workspace.join("report.bin")).unwrap();
    std::fs::remove_file(env.workspace.join("notes.txt")).unwrap();
    assert_eq!(
        read_artifact(&svc, &ctx, &run, &before_id, &before_sha).unwrap(),
        report
    );
    assert_eq!(
        read_artifact(&svc, &ctx, &run, &after_id, &after_sha).unwrap(),
        b"registered after the grant\n"
    );
}

/// A snapshot read once is kept opened in memory for the next calls, but only while the store
/// still holds it as it was: destroyed, it is never served from memory.
#[test]
fn a_destroyed_snapshot_is_not_served_from_memory() {
    let env = Env::new();
    let (files, run) = claude_run(&env);
    let svc = env.service();
    let (_, key) = share(&env, &run, 600_000);
    let ctx = svc.admit_key(&[key.as_bytes()]).unwrap();
    delete(&files);
    let first = first_chunk(&svc, &ctx, &run.target);
    assert_eq!(
        (first["state"].as_str(), first["evidence"].as_str()),
        (Some("available"), Some("snapshot"))
    );
    // Its receipt records the evidence it was read from.
    assert_eq!(
        runread_testkit::records::last_receipt_facts(&*env.store, tools::READ_FINAL_ANSWER),
        (Some("snapshot".into()), Some("available".into()))
    );
    assert_eq!(
        first_chunk(&svc, &ctx, &run.target)["text"],
        first["text"],
        "again, from memory"
    );
    let t = &run.target;
    assert!(
        env.store
            .destroy_snapshot(&t.session_id, t.generation, &t.run_id)
            .unwrap()
    );
    let after = first_chunk(&svc, &ctx, &run.target);
    assert_eq!(after["state"], "unknown", "{after}");
    assert_eq!(after["text"], Value::Null);
}

/// Every byte of the store's files (the database, its log, its index of the log), read while
/// the store is open: what someone who copies a serving home's files gets.
fn store_files(env: &Env) -> Vec<(String, Vec<u8>)> {
    std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("runread.db")
        })
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read(&p).unwrap_or_default(),
            )
        })
        .collect()
}

/// Issue 46, finding 3: once the last grant on a shared run ends (revoked, expired, its reader
/// removed), neither its wrapped data key nor any piece of its sealed bytes is left in the
/// database's free pages or in older frames of its log, while the store stays open (a serving
/// home), so the home's gate keys decrypt nothing of it.
#[test]
fn a_destroyed_snapshots_key_and_bytes_are_nowhere_in_the_store_files() {
    for how in ["revoke", "expire", "remove the reader"] {
        let env = Env::new();
        let (_files, run) = claude_run(&env);
        let lifetime_ms = if how == "expire" { 1_500 } else { 600_000 };
        let (g, _) = share(&env, &run, lifetime_ms);
        let t = &run.target;
        let sealed = env
            .store
            .snapshot(&t.session_id, t.generation, &t.run_id)
            .unwrap()
            .expect("sealed at the grant");
        let key = sealed.data_key.clone();
        assert!(key.len() >= 32 && sealed.sealed.len() >= 64, "{how}");
        let present = |needle: &[u8]| {
            store_files(&env)
                .into_iter()
                .filter(|(_, bytes)| bytes.windows(needle.len()).any(|w| w == needle))
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
        };
        assert!(
            !present(&key).is_empty(),
            "{how}: the key is in the files while shared"
        );
        let now = runread_core::timefmt::now_ms();
        match how {
            "revoke" => {
                assert!(env.owner().revoke_grant(&g.grant.id, now).unwrap());
            }
            "expire" => {
                std::thread::sleep(Duration::from_millis(1_600));
                let m = snapshot::maintain(&*env.store, &*env.keys(), now + 1_600).unwrap();
                assert_eq!(m.destroyed.len(), 1, "{how}");
            }
            _ => {
                env.owner().remove_reader("assistant", now).unwrap();
            }
        }
        assert!(env.store.snapshots().unwrap().is_empty(), "{how}");
        assert_eq!(
            present(&key),
            Vec::<String>::new(),
            "{how}: the wrapped key"
        );
        // Pieces from every part of the sealed bytes: its start, its end and between.
        let pieces = sealed.sealed.len() / 32;
        for i in (0..pieces)
            .step_by((pieces / 16).max(1))
            .chain([pieces - 1])
        {
            let piece = &sealed.sealed[i * 32..i * 32 + 32];
            assert_eq!(
                present(piece),
                Vec::<String>::new(),
                "{how}: sealed bytes at {i}"
            );
        }
        assert!(env.store.checkpoint_stats().scrubs >= 1, "{how}");
    }
}
