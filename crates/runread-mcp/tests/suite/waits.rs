//! `wait_for_run` over HTTP: waiting calls give their processing slot back while they wait, so
//! `WAITS_MAX` of them (every reader at its own bound) leave other calls served; one wait more is
//! refused `busy` with nothing of the run in it; the run's end wakes every one of them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use runread_core::Feature;
use runread_core::limits::{WAIT_MAX_SECONDS, WAITS_MAX, WAITS_PER_READER_MAX};
use runread_mcp::client::{Client, ClientError};
use runread_store::prelude::*;
use runread_testkit::Env;

/// Hang guard on the whole test; the waits' own timeout is longer than any step needs.
const GUARD: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_up_to_the_bound_leave_other_calls_served_and_wake_on_the_runs_end() {
    let env = Env::new();
    let (path, tail) = env.place_unfinished("sample");
    env.ingest();
    let run = env.running_run();
    let svc = env.service_settling_at_once();
    let serving = runread_testkit::serve::mcp(svc.clone()).await;
    let target = serde_json::to_value(&run.target).unwrap();
    let readers = WAITS_MAX / WAITS_PER_READER_MAX;
    assert_eq!(readers * WAITS_PER_READER_MAX, WAITS_MAX);
    let mut clients = Vec::new();
    for i in 0..=readers {
        let g = env.grant(&run.target.run_id, vec![Feature::Status], &format!("r{i}"));
        clients.push((
            Arc::new(Client::connect(&serving.url, &g.key).await.unwrap()),
            g,
        ));
    }
    let (spare, spare_grant) = clients.pop().unwrap();
    let seen = spare
        .call("get_run", json!({"target": target}))
        .await
        .unwrap()
        .structured;
    let args = json!({"target": target, "afterSequence": seen["eventSequence"],
                      "timeoutSeconds": WAIT_MAX_SECONDS});

    // One after another: a burst of more requests than processing slots is refused `busy` at
    // the door whatever they are (tested in `transport`); what is shown here is that a waiting
    // call holds none.
    let mut waiting = Vec::new();
    for (client, _) in &clients {
        for _ in 0..WAITS_PER_READER_MAX {
            let (client, args) = (client.clone(), args.clone());
            let held = svc.waits_held();
            waiting.push(tokio::spawn(async move {
                client.call("wait_for_run", args).await
            }));
            tokio::time::timeout(GUARD, async {
                while svc.waits_held() == held {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            })
            .await
            .expect("the wait is held");
        }
    }
    assert_eq!(svc.waits_held(), WAITS_MAX);

    // One wait more, from a reader holding none: the runread is at its bound.
    let refused = spare.call("wait_for_run", args.clone()).await;

    let Err(ClientError::Refused { code, message }) = refused else {
        panic!("one wait beyond the bound is refused: {refused:?}");
    };
    assert_eq!(code, "busy");
    for leak in [&run.target.run_id, &run.target.session_id, &spare_grant.key] {
        assert!(!message.contains(leak.as_str()), "{message}");
    }
    // Other calls are served meanwhile: as many at once as there are processing slots, which
    // would be refused `busy` if a waiting call held one.
    let reads: Vec<_> = (0..runread_core::limits::HTTP_IN_FLIGHT_MAX)
        .map(|_| {
            let (spare, target) = (spare.clone(), target.clone());
            tokio::spawn(async move { spare.call("get_run", json!({"target": target})).await })
        })
        .collect();
    for r in reads {
        let r = tokio::time::timeout(GUARD, r)
            .await
            .expect("a read is answered while the waits wait")
            .unwrap()
            .unwrap();
        assert_eq!(r.structured["found"], true);
    }
    assert_eq!(svc.waits_held(), WAITS_MAX, "still waiting");

    Env::append(&path, &tail);
    env.ingest();
    for w in waiting {
        let answer = tokio::time::timeout(GUARD, w)
            .await
            .expect("the run's end wakes every wait")
            .unwrap()
            .unwrap()
            .structured;
        assert_eq!(answer["changed"], true, "{answer}");
        assert_eq!(answer["settled"], true, "{answer}");
    }
    assert_eq!(svc.waits_held(), 0);
}

/// Over MCP with runread's rmcp client: a reader that holds no grant waits for the next run shared
/// with it; a run shared with another reader does not answer it, the run shared with it does,
/// with the instant the wait used and when the run was shared. `next:false` is refused with the
/// fixed code, and nothing of the call in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_the_next_share_answers_when_a_run_is_shared_with_this_reader() {
    let env = Env::new();
    env.place("multi-run", Duration::from_secs(60));
    env.ingest();
    let runs = env.store.runs().unwrap();
    let svc = env.service_settling_at_once();
    let serving = runread_testkit::serve::mcp(svc.clone()).await;
    let orchestrator = env.add_reader("orchestrator");
    env.add_reader("bystander");
    let client = Arc::new(
        Client::connect(&serving.url, &orchestrator.key)
            .await
            .unwrap(),
    );

    let refused = client.call("wait_for_run", json!({"next": false})).await;
    let Err(ClientError::Refused { code, message }) = refused else {
        panic!("next:false is refused: {refused:?}");
    };
    assert_eq!(code, "invalid_arguments");
    assert!(!message.contains("next"), "{message}");

    let waiting = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .call(
                    "wait_for_run",
                    json!({"next": true, "timeoutSeconds": WAIT_MAX_SECONDS}),
                )
                .await
        }
    });
    tokio::time::timeout(GUARD, async {
        while svc.waits_held() == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the wait is held");
    let share = |run: &runread_store::RunRecord, reader: &str| {
        let now = runread_core::timefmt::now_ms();
        env.owner()
            .grant_run(
                run.clone(),
                vec![Feature::Status],
                now + 600_000,
                (reader, runread_service::owner::NewReaderPolicy::Make),
                None,
                now,
            )
            .unwrap()
            .grant
            .created_at_ms
    };
    share(&runs[0], "bystander");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        !waiting.is_finished(),
        "woken by a share with another reader"
    );
    let shared_at = share(&runs[1], "orchestrator");
    let answer = tokio::time::timeout(GUARD, waiting)
        .await
        .expect("the share answers the wait")
        .unwrap()
        .unwrap()
        .structured;
    assert_eq!(answer["found"], true, "{answer}");
    assert_eq!(answer["revision"]["generation"], runs[1].target.generation);
    assert_eq!(
        answer["sharedAt"],
        runread_core::timefmt::rfc3339(shared_at),
        "{answer}"
    );
    let after = answer["sharedAfter"].as_str().unwrap();
    assert!(runread_core::timefmt::parse_exact(after).is_some_and(|a| a < shared_at));
    assert_eq!(svc.waits_held(), 0);
}
