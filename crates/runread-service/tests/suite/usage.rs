//! Usage per run: the tokens each run's model calls reported, from the real sessions the agents
//! wrote against the harness's scripted model servers, equal to what those files record — read
//! here on their own, straight from the JSON — for Pi (per assistant message), Claude Code (per
//! response, once however many lines it spans) and Codex (the running totals of `token_count`
//! events).

use runread_store::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use runread_core::Feature;
use runread_service::{KeyContext, Service, tools};
use runread_store::RunRecord;
use runread_testkit::{Env, block_on, pi_versions};

const SETTLED: Duration = Duration::from_secs(60);

/// The counts a usage object holds under the agent's names (absent: 0).
fn counts(u: &Value, names: [&str; 5]) -> [u64; 5] {
    names.map(|n| u.get(n).and_then(Value::as_u64).unwrap_or(0))
}

fn add(a: [u64; 5], b: [u64; 5]) -> [u64; 5] {
    [
        a[0] + b[0],
        a[1] + b[1],
        a[2] + b[2],
        a[3] + b[3],
        a[4] + b[4],
    ]
}

/// A file's lines as JSON, by 1-based line number.
fn lines(path: &Path) -> Vec<(u64, Value)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .filter_map(|(i, l)| Some((i as u64 + 1, serde_json::from_str(l).ok()?)))
        .collect()
}

/// Each run of the store's, in file order, with the line the next one starts at.
fn runs_in_order(env: &Env) -> Vec<(RunRecord, u64)> {
    let mut runs = env.store.runs().unwrap();
    runs.sort_by_key(|r| r.run.start_line);
    let starts: Vec<u64> = runs.iter().map(|r| r.run.start_line).collect();
    runs.into_iter()
        .enumerate()
        .map(|(i, r)| (r, starts.get(i + 1).copied().unwrap_or(u64::MAX)))
        .collect()
}

/// What `read_target_metadata` says of `run`'s usage, as the five counts.
fn served(svc: &Arc<Service>, env: &Env, run: &RunRecord) -> (Value, Option<[u64; 5]>) {
    let g = env.grant_in(
        &run.target.run_id,
        Some(&run.target.session_id),
        vec![Feature::Metadata],
        "usage",
    );
    let ctx: KeyContext = svc.admit_key(&[g.key.as_bytes()]).unwrap();
    let out = block_on(svc.call(
        Arc::new(ctx),
        tools::READ_TARGET_METADATA,
        json!({"target": run.target}),
        None,
    ))
    .unwrap();
    runread_testkit::serve::assert_declared_output(
        tools::READ_TARGET_METADATA,
        &out.labeled.structured,
    );
    let usage = out.labeled.structured["usage"].clone();
    let total = (!usage["total"].is_null()).then(|| {
        counts(
            &usage["total"],
            ["input", "output", "cacheRead", "cacheWrite", "reasoning"],
        )
    });
    (usage, total)
}

pi_versions! {
#[test]
fn pi_runs_count_each_assistant_messages_usage(v) {
    let env = Env::new();
    let path = env.place(&v.fixture("multi-run"), SETTLED);
    env.ingest();
    let svc = env.service();
    let file = lines(&path);
    let mut seen = 0;
    for (run, next) in runs_in_order(&env) {
        let mut want = [0; 5];
        for (_, v) in file
            .iter()
            .filter(|(l, _)| (run.run.start_line..next).contains(l))
        {
            if v["type"] == "message" && v["message"]["role"] == "assistant" {
                let u = &v["message"]["usage"];
                want = add(
                    want,
                    counts(u, ["input", "output", "cacheRead", "cacheWrite", "reasoning"]),
                );
            }
        }
        let (usage, total) = served(&svc, &env, &run);
        assert_eq!(total, Some(want), "run {}: {usage}", run.target.run_id);
        assert_eq!(usage["source"], "assistant_messages");
        assert!(
            want[0] > 0 && want[1] > 0,
            "the model server reported usage"
        );
        seen += 1;
    }
    assert!(seen >= 2, "every run of a session with several");
}
}

#[test]
fn claude_code_runs_count_each_response_once_however_many_lines_it_spans() {
    let env = Env::new();
    let files = env.place_claude("tool-then-answer", SETTLED);
    env.ingest();
    let svc = env.service();
    let file = lines(&files[0]);
    for (run, next) in runs_in_order(&env) {
        // The last line of each response (`message.id`) holds its usage.
        let mut last: Vec<(String, Value)> = Vec::new();
        for (_, v) in file
            .iter()
            .filter(|(l, _)| (run.run.start_line..next).contains(l))
        {
            if v["type"] == "assistant" && v["message"]["model"] != "<synthetic>" {
                let id = v["message"]["id"].as_str().unwrap().to_owned();
                last.retain(|(i, _)| *i != id);
                last.push((id, v["message"]["usage"].clone()));
            }
        }
        let responses = last.len();
        assert!(
            file.iter()
                .filter(|(_, v)| v["type"] == "assistant")
                .count()
                > responses,
            "a response spans several lines"
        );
        let want = last.iter().fold([0; 5], |acc, (_, u)| {
            add(
                acc,
                counts(
                    u,
                    [
                        "input_tokens",
                        "output_tokens",
                        "cache_read_input_tokens",
                        "cache_creation_input_tokens",
                        "-",
                    ],
                ),
            )
        });
        let (usage, total) = served(&svc, &env, &run);
        assert_eq!(total, Some(want), "{usage}");
        assert_eq!(usage["calls"], responses as u64);
        assert_eq!(usage["byModel"][0]["model"], run.run.run_models[0].as_str());
        assert!(want[0] > 0 && want[1] > 0);
    }
}

#[test]
fn codex_runs_count_their_share_of_the_sessions_running_totals() {
    let env = Env::new();
    let files = env.place_codex("continue-unicode", SETTLED);
    env.ingest();
    let svc = env.service();
    let file = lines(&files[0]);
    let totals: Vec<(u64, [u64; 5])> = file
        .iter()
        .filter(|(_, v)| v["payload"]["type"] == "token_count")
        .filter_map(|(l, v)| {
            let t = v["payload"]["info"].get("total_token_usage")?;
            Some((
                *l,
                counts(
                    t,
                    [
                        "input_tokens",
                        "output_tokens",
                        "cached_input_tokens",
                        "cache_write_input_tokens",
                        "reasoning_output_tokens",
                    ],
                ),
            ))
        })
        .collect();
    let runs = runs_in_order(&env);
    assert!(runs.len() >= 2, "a session with several turns");
    let mut sum = [0; 5];
    for (run, next) in runs {
        let before = totals
            .iter()
            .rev()
            .find(|(l, _)| *l < run.run.start_line)
            .map_or([0; 5], |(_, t)| *t);
        let at_end = totals
            .iter()
            .rev()
            .find(|(l, _)| (run.run.start_line..next).contains(l))
            .map(|(_, t)| *t)
            .unwrap();
        let want: [u64; 5] = std::array::from_fn(|i| at_end[i] - before[i]);
        let (usage, total) = served(&svc, &env, &run);
        assert_eq!(total, Some(want), "{usage}");
        assert_eq!(usage["source"], "token_count_events");
        assert!(want[0] > 0 && want[1] > 0);
        sum = add(sum, want);
    }
    // The runs' shares add up to the session's last total.
    assert_eq!(Some(sum), totals.last().map(|(_, t)| *t));
}

pi_versions! {
/// Issue 46, finding 5: a model name an agent wrote that holds a known secret reaches the owner
/// masked, in every model of the per-model usage (the one string of a record the old field-by-field
/// masking missed): the owner's view of a run is masked whole.
#[test]
fn a_known_secret_in_a_model_name_is_masked_in_the_owners_view(v) {
    let env = Env::new();
    env.place(&v.fixture("sample"), SETTLED);
    env.ingest();
    let mut run = env.longest_answer_run();
    let secret = "sk-model-name-0123456789abcdef";
    let mut usage = run.run.usage.clone().expect("the sample reports usage");
    let first = usage.by_model[0].clone();
    usage.by_model = vec![
        runread_sessions::runs::ModelUsage {
            model: format!("provider/{secret}"),
            ..first.clone()
        },
        runread_sessions::runs::ModelUsage {
            model: "provider/other-model".into(),
            ..first
        },
    ];
    run.run.usage = Some(usage);
    env.add_secret("model", secret);
    let shown = env
        .owner()
        .shown_run(run, runread_core::timefmt::now_ms())
        .unwrap();
    let models: Vec<&str> = shown
        .record
        .run
        .usage
        .as_ref()
        .unwrap()
        .by_model
        .iter()
        .map(|m| m.model.as_str())
        .collect();
    assert_eq!(models, ["provider/[redacted]", "provider/other-model"]);
}
}
