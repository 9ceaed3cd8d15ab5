//! What the owner is told of a run whose session file is not as ingested: a file the agent's
//! cleanup deleted is said `file gone, not kept` (or, when the run was shared, read from the copy
//! sealed for sharing and said so), never "changed"; a file that is there but rewritten stays
//! "(session file changed since ingest)".

use std::time::Duration;

use runread_core::Feature;
use runread_service::owner::shown::{Prompt, SessionFile, ShownRun};
use runread_store::prelude::*;
use runread_testkit::Env;

const SETTLED: Duration = Duration::from_secs(60);

/// Every current run as the owner is shown it, with the session file it was read from.
fn shown(env: &Env) -> Vec<ShownRun> {
    let now = runread_core::timefmt::now_ms();
    env.owner()
        .shown_runs(env.store.runs().unwrap(), now)
        .unwrap()
        .into_iter()
        .map(|v| (*v).clone())
        .collect()
}

/// A file rewritten in place to the same size: every `e` made `E`.
fn rewrite(path: &std::path::Path) {
    let bytes: Vec<u8> = std::fs::read(path)
        .unwrap()
        .into_iter()
        .map(|b| if b == b'e' { b'E' } else { b })
        .collect();
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn a_deleted_file_is_said_gone_not_kept_and_a_rewritten_one_changed() {
    let env = Env::new();
    let pi = env.place("sample", SETTLED);
    let claude = env.place_claude("tool-then-answer", SETTLED);
    let truncated = env.place("multi-run", SETTLED);
    env.ingest();
    let before = shown(&env);
    assert!(before.iter().all(|r| r.file == SessionFile::There));
    assert!(before.iter().any(|r| r.prompt.text().is_some()));

    std::fs::remove_file(&pi).unwrap();
    for f in &claude {
        rewrite(f);
    }
    std::fs::File::create(&truncated).unwrap();
    let after = shown(&env);
    let (mut gone, mut changed) = (0, 0);
    for r in &after {
        match r.record.session_path == pi.to_string_lossy() {
            true => {
                assert_eq!(r.file, SessionFile::GoneNotKept);
                assert_eq!(r.prompt, Prompt::NotThere(SessionFile::GoneNotKept));
                assert_eq!(r.prompt.shown(), "(file gone, not kept)");
                assert_eq!(r.file.says(), Some("file gone, not kept"));
                assert_eq!(r.file.as_str(), "gone_not_kept");
                gone += 1;
            }
            _ => {
                assert_eq!(r.file, SessionFile::Changed, "{:?}", r.prompt);
                assert_eq!(r.prompt, Prompt::FileChanged);
                assert_eq!(r.prompt.shown(), "(session file changed since ingest)");
                changed += 1;
            }
        }
    }
    assert!(gone > 0 && changed > 0, "{gone} gone, {changed} changed");
}

#[test]
fn a_shared_run_whose_file_is_deleted_is_read_from_its_copy_sealed_for_sharing() {
    let env = Env::new();
    let files = env.place_claude("tool-then-answer", SETTLED);
    env.ingest();
    let run = env
        .store
        .runs()
        .unwrap()
        .into_iter()
        .find(|r| !r.run.final_lines.is_empty())
        .unwrap();
    let prompt = shown(&env)
        .into_iter()
        .find(|r| r.record.target == run.target)
        .unwrap()
        .prompt;
    let now = runread_core::timefmt::now_ms();
    env.owner()
        .grant_run(
            run.clone(),
            vec![Feature::FinalAnswer, Feature::Metadata],
            now + 600_000,
            ("assistant", runread_service::owner::NewReaderPolicy::Make),
            None,
            now,
        )
        .unwrap();
    for f in &files {
        std::fs::remove_file(f).unwrap();
    }
    for r in shown(&env) {
        if r.record.target == run.target {
            assert_eq!(r.file, SessionFile::GoneSealedForSharing);
            assert_eq!(r.file.says(), Some("file gone, sealed for sharing"));
            // `metadata` was shared: the copy holds the prompt's line, read and masked as before.
            assert_eq!(r.prompt, prompt);
            assert_eq!(r.answer_state, "available");
        } else {
            assert_eq!(r.file, SessionFile::GoneNotKept, "not shared, not kept");
        }
    }
}

#[test]
fn a_session_of_another_host_is_said_on_another_host_never_gone() {
    let env = Env::new();
    let pi = env.place("sample", SETTLED);
    env.ingest();
    // A gateway on a shared store: the agent's file is not on its disk.
    std::fs::remove_file(&pi).unwrap();
    let mut store = runread_testkit::hooked::Hooked::new(env.store.clone());
    store.on_another_host = true;
    let owner = runread_service::Owner::new(
        std::sync::Arc::new(store),
        env.keys(),
        runread_service::Config::default(),
        Vec::new(),
    );
    let now = runread_core::timefmt::now_ms();
    let runs = owner.shown_runs(env.store.runs().unwrap(), now).unwrap();
    assert!(!runs.is_empty());
    for r in &runs {
        assert_eq!(r.file, SessionFile::OnAnotherHost);
        assert_eq!(r.prompt.shown(), "(file on another host)");
    }
}
