//! The bound on calls per reader (issue 46): a reader makes
//! [`READER_CALLS_PER_MINUTE_MAX`] gated calls at once, and the next is refused `busy` before the
//! gate, writing nothing to the gate's log; another reader is not held up; the owner's bound
//! (`serve --calls-per-minute`) replaces the default.

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use runread_core::limits::READER_CALLS_PER_MINUTE_MAX;
use runread_core::{ErrorCode, Feature};
use runread_service::{Config, tools};

use runread_testkit::{Env, block_on};

#[test]
fn a_reader_makes_its_bound_of_calls_and_the_next_is_busy_writing_nothing() {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let svc = env.service();
    let target = json!({"target": run.target});
    let first = env.grant(&run.target.run_id, vec![Feature::Status], "busy");
    let second = env.grant(&run.target.run_id, vec![Feature::Status], "calm");
    let ctx = Arc::new(svc.admit_key(&[first.key.as_bytes()]).unwrap());
    let call = |ctx: &Arc<runread_service::KeyContext>| {
        block_on(svc.call(ctx.clone(), tools::GET_RUN, target.clone(), None))
    };
    // Calls take time, and the bound refills meanwhile (N a minute): the first refusal comes
    // after N calls and at most the refill of the time they took.
    let started = std::time::Instant::now();
    let mut made = 0u64;
    let refused = loop {
        match call(&ctx) {
            Ok(_) => made += 1,
            Err(code) => break code,
        }
        assert!(
            made <= 2 * u64::from(READER_CALLS_PER_MINUTE_MAX),
            "never refused"
        );
    };
    let refill =
        started.elapsed().as_millis() as u64 * u64::from(READER_CALLS_PER_MINUTE_MAX) / 60_000 + 1;
    assert_eq!(refused, ErrorCode::Busy);
    let bound = u64::from(READER_CALLS_PER_MINUTE_MAX);
    assert!(
        made >= bound && made <= bound + refill,
        "{made} calls before busy"
    );
    assert_eq!(
        env.store.audit(0, 10_000).unwrap().len() as u64,
        made,
        "a call refused busy writes nothing to the gate's log"
    );
    let other = Arc::new(svc.admit_key(&[second.key.as_bytes()]).unwrap());
    assert!(call(&other).is_ok(), "another reader has its own bound");
}

#[test]
fn the_owners_bound_replaces_the_default() {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let svc = env.service_with(Config {
        calls_per_minute: 3,
        ..Config::default()
    });
    let g = env.grant(&run.target.run_id, vec![Feature::Status], "three");
    let ctx = Arc::new(svc.admit_key(&[g.key.as_bytes()]).unwrap());
    let call = || {
        block_on(svc.call(
            ctx.clone(),
            tools::GET_RUN,
            json!({"target": run.target}),
            None,
        ))
    };
    // Three a minute: one more every 20 s, which these calls never take.
    for _ in 0..3 {
        assert!(call().is_ok());
    }
    assert_eq!(call().unwrap_err(), ErrorCode::Busy);
}
