//! A real session of each agent with one line of a type runread does not know inserted inside a
//! run (as a newer release of the agent could write it, `runread_testkit::unrecognised`): the
//! run's answer is not served (`unknown`, never the answer before it or the inserted line's), and
//! nothing of that line reaches any tool's output or the log, whatever the reader is granted.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_service::{Config, Service, tools};
use runread_sessions::{Agent, RunStatus, UNRECOGNISED_LINE};
use runread_store::Store;
use runread_store::prelude::*;
use runread_testkit::unrecognised::{MARKER, insert_in_run};
use runread_testkit::{Env, block_on};

const SETTLED: Duration = Duration::from_secs(60);

/// Everything any thread of this test binary logs, from when the first test here asks.
fn log() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = Captured(buf.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        buf
    })
}

#[derive(Clone)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Per agent, the second run of a real multi-run session with a line of an unknown type inserted
/// right after its prompt: `read_final_answer` answers `unknown`, the other runs' answers are
/// served as before, and no tool of any feature shows anything of the inserted line.
#[test]
fn a_run_with_an_unrecognised_line_has_no_answer_and_nothing_of_the_line_leaks() {
    let log = log();
    for (agent, scenario) in [
        (Agent::Pi, "multi-run"),
        (Agent::Claude, "continue-unicode"),
        (Agent::Codex, "continue-unicode"),
        (Agent::Copilot, "continue-unicode"),
    ] {
        let env = Env::new();
        let path = match agent {
            Agent::Pi => env.place(scenario, SETTLED),
            Agent::Claude => env.place_claude(scenario, SETTLED).remove(0),
            Agent::Codex => env.place_codex(scenario, SETTLED).remove(0),
            Agent::Gemini => env.place_gemini(scenario, SETTLED).remove(0),
            Agent::Copilot => env.place_copilot(scenario, SETTLED).remove(0),
            Agent::OpenCode => panic!("{agent} keeps no session file to insert a line in"),
        };
        env.ingest();
        let mut runs = env.store.runs().unwrap();
        runs.sort_by_key(|r| r.run.start_line);
        let prompt = runs[1].run.prompt_line.as_ref().unwrap().line;
        insert_in_run(agent, &path, prompt, "turn_note");
        runread_testkit::set_age(&path, SETTLED);
        env.ingest();
        let mut after = env.store.runs().unwrap();
        after.sort_by_key(|r| r.run.start_line);
        assert_eq!(after.len(), runs.len(), "{agent}");
        let svc = Arc::new(
            Service::new(
                env.store.clone() as Arc<dyn Store>,
                env.keys(),
                Config::default(),
            )
            .unwrap(),
        );
        let mut outputs = String::new();
        for (n, run) in after.iter().enumerate() {
            let g = env.grant_in(
                &run.target.run_id,
                Some(&run.target.session_id),
                Feature::ALL.to_vec(),
                "all",
            );
            let ctx = Arc::new(svc.admit_key(&[g.key.as_bytes()]).unwrap());
            let answer = block_on(svc.call(
                ctx.clone(),
                tools::READ_FINAL_ANSWER,
                json!({"target": run.target}),
                None,
            ))
            .unwrap()
            .labeled
            .structured;
            if n == 1 {
                assert_eq!(run.run.status, RunStatus::Unknown, "{agent}");
                assert_eq!(
                    run.run.unknown_reason.as_deref(),
                    Some(UNRECOGNISED_LINE),
                    "{agent}"
                );
                assert_eq!(answer["state"], "unknown", "{agent}: {answer}");
            } else {
                assert_eq!(run.run.status, runs[n].run.status, "{agent} run {n}");
                assert_eq!(answer["state"], "available", "{agent} run {n}: {answer}");
            }
            outputs.push_str(&answer.to_string());
            for tool in [
                tools::GET_RUN,
                tools::READ_HISTORY,
                tools::READ_TARGET_METADATA,
                tools::READ_WORK_STATE,
            ] {
                let out =
                    block_on(svc.call(ctx.clone(), tool, json!({"target": run.target}), None));
                let shown: Value = match out {
                    Ok(out) => out.labeled.structured,
                    Err(code) => json!(code.as_str()),
                };
                outputs.push_str(&shown.to_string());
            }
        }
        assert!(outputs.contains("available"), "{agent}: the tools answered");
        for leaked in [MARKER, "turn_note"] {
            assert!(!outputs.contains(leaked), "{agent}: {leaked} in {outputs}");
        }
    }
    let logged = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("turn_note"),
        "the log names the type: {logged}"
    );
    assert!(!logged.contains(MARKER), "{logged}");
}
