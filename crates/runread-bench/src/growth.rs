//! `runread-bench growth [--calls N]`: what each gated call adds to the store, measured, and
//! what that makes of a reader that polls and of the default retention.
//!
//! N calls (`get_run` and `read_final_answer` in turn, as a polling reader makes them) through
//! the whole service into a durable SQLite store; the store's live bytes (pages in use, after a
//! checkpoint that empties the log) before and after; the difference over N. Then N more, after
//! a retention pass has removed the first N (sealed, then pruned): the file does not grow for
//! them — a pruned store's free pages are what later calls are written into.

use runread_core::limits::{AUDIT_RETENTION_CALLS_DEFAULT, AUDIT_RETENTION_DAYS_DEFAULT};
use runread_service::tools;
use serde_json::json;

use crate::Setup;

/// (pages in use × page size, the file's size), after a checkpoint that empties the log.
fn sizes(s: &Setup) -> (u64, u64) {
    s.store.scrub();
    let path = s.store.path().expect("a file store");
    let conn = rusqlite::Connection::open(path).expect("open");
    let pragma = |name: &str| -> u64 {
        conn.pragma_query_value(None, name, |r| r.get::<_, i64>(0))
            .expect("pragma") as u64
    };
    let (pages, free, size) = (
        pragma("page_count"),
        pragma("freelist_count"),
        pragma("page_size"),
    );
    ((pages - free) * size, pages * size)
}

fn calls(s: &Setup, n: usize) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        for i in 0..n {
            let tool = if i % 2 == 0 {
                tools::GET_RUN
            } else {
                tools::READ_FINAL_ANSWER
            };
            s.svc
                .call(s.ctx.clone(), tool, json!({"target": s.target}), None)
                .await
                .expect("call");
        }
    });
}

pub(crate) fn run(s: &Setup, n: usize) {
    let (live0, _) = sizes(s);
    calls(s, n);
    let (live1, file1) = sizes(s);
    let per_call = (live1 - live0) as f64 / n as f64;
    // The first N removed: sealed and pruned as the retention would, long after.
    let later = runread_core::timefmt::now_ms() + 400 * 86_400_000;
    let retention =
        runread_gate::log::Retention::new(1, runread_core::limits::AUDIT_RETENTION_CALLS_MIN)
            .expect("retention");
    let m = runread_gate::log::maintain(&*s.store, retention, later).expect("pass");
    assert_eq!(m.pruned as usize, n, "the first calls pruned");
    calls(s, n);
    let (live2, file2) = sizes(s);
    let polling_day = 86_400.0 / 2.0;
    let mib = |b: f64| b / 1_048_576.0;
    println!("store growth per gated call ({n} calls: get_run and read_final_answer in turn)");
    println!("| measure | value |");
    println!("|---|---|");
    println!("| bytes per call (start record, receipt, their indexes) | {per_call:.0} |");
    println!(
        "| a reader polling every 2 s: calls a day, growth a day | {polling_day:.0}, {:.1} MiB |",
        mib(per_call * polling_day)
    );
    let period = per_call * polling_day * f64::from(AUDIT_RETENTION_DAYS_DEFAULT);
    let bound = per_call * AUDIT_RETENTION_CALLS_DEFAULT as f64;
    println!(
        "| the bound on calls kept ({AUDIT_RETENTION_CALLS_DEFAULT}): the most the log holds | {:.0} MiB |",
        mib(bound)
    );
    println!(
        "| that reader, the default retention ({AUDIT_RETENTION_DAYS_DEFAULT} days, or the bound first: after {:.0} days): steady size | {:.0} MiB |",
        AUDIT_RETENTION_CALLS_DEFAULT as f64 / polling_day,
        mib(period.min(bound))
    );
    println!(
        "| after {n} calls, their pruning and {n} more: file size before, after | {:.1} MiB, {:.1} MiB |",
        mib(file1 as f64),
        mib(file2 as f64)
    );
    println!(
        "| pages in use after the second {n} (same as after the first) | {:.1} MiB (was {:.1}) |",
        mib(live2 as f64),
        mib(live1 as f64)
    );
}
