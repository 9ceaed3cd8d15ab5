//! `runread-bench snapshot [--calls N] [--rounds R]`: a read served from a shared run's snapshot
//! (its session file gone) beside the same read served from the file, through the whole service
//! (admission, gate, adapter, label) on one SQLite home: `read_final_answer` (the Pi sample's
//! 9,554-byte answer, one chunk of the largest size) and `read_history`'s first page. Rounds
//! alternate file and snapshot; medians of the rounds' microseconds per call, and their ratio.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use runread_core::Feature;
use runread_core::limits::FINAL_ANSWER_CHUNK_MAX_BYTES;
use runread_service::{KeyContext, Service, tools};
use runread_store::Store;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Microseconds per call of `tool` with `args`, over `calls` calls; each must succeed on `evidence`.
fn per_call(
    rt: &tokio::runtime::Runtime,
    svc: &Arc<Service>,
    ctx: &Arc<KeyContext>,
    (tool, args): (&str, &Value),
    calls: usize,
    evidence: &str,
) -> Result<f64, String> {
    let start = Instant::now();
    for _ in 0..calls {
        let out = rt
            .block_on(svc.call(ctx.clone(), tool, args.clone(), None))
            .map_err(|e| format!("{tool}: {}", e.as_str()))?;
        if out.labeled.structured["evidence"] != evidence {
            return Err(format!(
                "{tool}: evidence {} (want {evidence})",
                out.labeled.structured["evidence"]
            ));
        }
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / calls as f64)
}

pub(crate) fn run(calls: usize, rounds: usize) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = dir.path().join("workspace");
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&ws).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&sessions).map_err(|e| e.to_string())?;
    let ws = std::fs::canonicalize(ws).map_err(|e| e.to_string())?;
    let store: Arc<dyn Store> = Arc::new(
        runread_store::sqlite::SqliteStore::open(&dir.path().join("runread.db"))
            .map_err(|e| e.to_string())?,
    );
    store
        .add_workspace(ws.to_str().unwrap_or_default(), "bench", 1)
        .map_err(|e| e.to_string())?;
    let path = sessions.join("sample.jsonl");
    std::fs::write(
        &path,
        runread_testkit::relocated(
            &std::fs::read(runread_testkit::fixture_session("sample"))
                .map_err(|e| e.to_string())?,
            ws.to_str().unwrap_or_default(),
        ),
    )
    .map_err(|e| e.to_string())?;
    runread_testkit::set_age(&path, Duration::from_secs(60));
    let dirs = [runread_ingest::AgentDir {
        agent: runread_core::Agent::Pi,
        dir: sessions.clone(),
    }];
    for d in &dirs {
        runread_ingest::ingest_dir(&*store, d, runread_core::timefmt::now_ms(), |_| {})
            .map_err(|e| e.to_string())?;
    }
    let run = store
        .runs()
        .map_err(|e| e.to_string())?
        .into_iter()
        .max_by_key(|r| r.run.final_bytes)
        .ok_or("no run")?;
    let keys = Arc::new(runread_keys::FileKeys::open(dir.path()).map_err(|e| e.to_string())?);
    let now = runread_core::timefmt::now_ms();
    let owner =
        runread_service::Owner::new(store.clone(), keys.clone(), crate::measuring(), Vec::new());
    let g = owner
        .grant_run(
            run.clone(),
            vec![Feature::FinalAnswer, Feature::History],
            now + 3_600_000,
            ("bench", runread_service::owner::NewReaderPolicy::Make),
            None,
            now,
        )
        .map_err(|e| e.to_string())?;
    let svc =
        Arc::new(Service::new(store.clone(), keys, crate::measuring()).map_err(|e| e.to_string())?);
    let ctx = Arc::new(
        svc.admit_key(&[g.key.unwrap_or_default().as_bytes()])
            .map_err(|e| e.as_str().to_owned())?,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let answer = json!({"target": run.target, "limit": FINAL_ANSWER_CHUNK_MAX_BYTES});
    let page = json!({"target": run.target});
    let gone = dir.path().join("gone.jsonl");
    let mut rows: Vec<[Vec<f64>; 2]> = vec![[vec![], vec![]], [vec![], vec![]]];
    for round in 0..=rounds {
        for (i, read) in [
            (tools::READ_FINAL_ANSWER, &answer),
            (tools::READ_HISTORY, &page),
        ]
        .into_iter()
        .enumerate()
        {
            let file = per_call(&rt, &svc, &ctx, (read.0, read.1), calls, "session_file")?;
            std::fs::rename(&path, &gone).map_err(|e| e.to_string())?;
            let kept = per_call(&rt, &svc, &ctx, (read.0, read.1), calls, "snapshot");
            std::fs::rename(&gone, &path).map_err(|e| e.to_string())?;
            if round > 0 {
                rows[i][0].push(file);
                rows[i][1].push(kept?);
            }
        }
    }
    for (i, name) in ["read_final_answer", "read_history"].iter().enumerate() {
        let [file, kept] = &rows[i];
        let (f, k) = (median(file.clone()), median(kept.clone()));
        println!(
            "{}",
            json!({"tool": name, "file_us": f.round(), "snapshot_us": k.round(),
                   "snapshot_over_file": (k / f * 100.0).round() / 100.0, "calls": calls, "rounds": rounds})
        );
    }
    Ok(())
}
