//! Admission steps 1–3 answered at once (`Service::admit_key_at_once`, what the HTTP key layer
//! tries before hopping to a blocking thread) admit exactly as `Service::admit_key`: the same
//! reader and grants for a live key; a key refused is left to `Service::admit_key` (which counts
//! the refusal, a write), with its fixed code.

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use runread_core::{ErrorCode, Feature};
use runread_service::{Config, Service};

use runread_testkit::Env;

#[test]
fn a_key_admitted_at_once_is_admitted_as_it_is_otherwise() {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.store.runs().unwrap().remove(0);
    let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "at-once");
    let now = runread_core::timefmt::now_ms();
    let svc = Arc::new(Service::new(env.store.clone(), env.keys(), Config::default()).unwrap());
    let key = g.key.clone();
    let other = format!("{}x", &key[..key.len() - 1]);
    let presented: [Vec<&[u8]>; 5] = [
        vec![key.as_bytes()],
        vec![],
        vec![key.as_bytes(), key.as_bytes()],
        vec![b"not a key".as_slice()],
        vec![other.as_bytes()],
    ];
    // The first lookup opens the store's read connections; from then on one is free at once.
    let waited = svc.admit_key(&presented[0]).unwrap();
    let at_once = svc
        .admit_key_at_once(&presented[0])
        .expect("answered at once")
        .unwrap();
    assert_eq!(at_once.reader, waited.reader);
    assert_eq!(at_once.live_grants, waited.live_grants);
    assert_eq!(at_once.key_hash, waited.key_hash);
    // A key refused is not answered at once: its refusal is counted, a write that may wait.
    for p in &presented[1..] {
        assert!(svc.admit_key_at_once(p).is_none());
    }
    let waited: Vec<ErrorCode> = presented[1..]
        .iter()
        .map(|p| svc.admit_key(p).err().unwrap())
        .collect();
    assert_eq!(
        waited,
        [
            ErrorCode::MissingKey,
            ErrorCode::DuplicateKey,
            ErrorCode::InvalidKey,
            ErrorCode::InvalidKey
        ]
    );
    // Removed: refused, not at once, as otherwise.
    assert!(env.store.remove_reader(&g.reader.id, now).unwrap());
    assert!(svc.admit_key_at_once(&presented[0]).is_none());
    assert_eq!(
        svc.admit_key(&presented[0]).err(),
        Some(ErrorCode::InvalidKey)
    );
}
