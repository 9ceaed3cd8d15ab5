//! The audit shows refusals (issue 48, surprise 4): three reads refused before the gate (an
//! expired grant, a run not granted, a revoked grant) were once nowhere — `runread audit
//! --outcome refused` said "no calls". Now it lists each with its reader, tool, time and code,
//! its other filters hold for them, and calls with no valid credential show as per-minute counts.

use crate::support::{ok, runread};
use std::time::Duration;

use serde_json::Value;

use runread_core::ErrorCode;

#[test]
fn three_refused_reads_are_listed_by_audit_outcome_refused_with_their_codes_and_readers() {
    let env = runread_testkit::Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let svc = env.service();
    let (codes, _) = env.three_refused_reads(&svc);
    assert_eq!(
        codes,
        [
            ErrorCode::GrantExpired,
            ErrorCode::NotGranted,
            ErrorCode::GrantRevoked
        ]
    );
    for _ in 0..25 {
        let key = runread_core::key::generate().unwrap();
        assert!(svc.admit_key(&[key.as_bytes()]).is_err());
    }
    let home = env.dir.path();

    let table = ok(runread(home, &["audit", "--outcome", "refused"]));
    assert!(!table.starts_with("no calls\n"), "{table}");
    let refused: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("read_final_answer"))
        .collect();
    assert_eq!(refused.len(), 3, "{table}");
    // Newest first, each with its reader and code, and when (a local time, how long ago).
    for (line, (reader, code)) in refused.iter().zip([
        ("revoked", "grant_revoked"),
        ("ungranted", "not_granted"),
        ("raw ", "grant_expired"),
    ]) {
        assert!(line.contains(reader) && line.ends_with(code), "{line}");
        assert!(
            line.contains("just now") || line.contains("min ago"),
            "{line}"
        );
    }
    assert!(table.contains("3 refused calls; no more"), "{table}");
    assert!(table.contains("25 invalid_key"), "{table}");

    // The reader filter holds for them; counts of calls that named no reader are not shown.
    let one = ok(runread(home, &["audit", "--reader", "revoked"]));
    assert!(one.contains("grant_revoked"), "{one}");
    assert!(
        !one.contains("not_granted") && !one.contains("invalid_key"),
        "{one}"
    );
    // So does the tool filter.
    let of_tool = ok(runread(home, &["audit", "--tool", "read_final_answer"]));
    assert!(of_tool.contains("3 refused calls; no more"), "{of_tool}");
    let other_tool = ok(runread(home, &["audit", "--tool", "get_run"]));
    assert!(!other_tool.contains("read_final_answer"), "{other_tool}");
    let of_grant = ok(runread(home, &["audit", "--grant", "g-nope"]));
    assert_eq!(of_grant, "no calls\n");
    // Another outcome, or a grant, holds none of them.
    assert_eq!(
        ok(runread(home, &["audit", "--outcome", "ok"])),
        "no calls\n"
    );

    let json: Value = serde_json::from_str(&ok(runread(
        home,
        &["audit", "--outcome", "refused", "--json"],
    )))
    .unwrap();
    let rows = json["refusedBeforeGate"]["rows"].as_array().unwrap();
    let codes: Vec<&str> = rows.iter().map(|r| r["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["grant_revoked", "not_granted", "grant_expired"]);
    assert!(
        rows.iter()
            .all(|r| r["at"].as_str().unwrap().ends_with('Z'))
    );
    assert_eq!(rows[0]["reader"], "revoked");
    assert_eq!(rows[0]["tool"], "read_final_answer");
    assert_eq!(json["unadmitted"][0]["code"], "invalid_key");
    assert_eq!(json["unadmitted"][0]["calls"], 25);
    assert_eq!(
        json["rows"].as_array().map(Vec::len),
        Some(0),
        "none reached the gate"
    );
}

/// An answered read's row in `runread audit` (text and `--json`) shows what its result carried:
/// the evidence it was read from and its settled state, as the receipt records them.
#[test]
fn an_answered_reads_row_shows_the_evidence_and_settled_state_of_its_result() {
    let env = runread_testkit::Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let svc = env.service();
    let g = env.grant(
        &run.target.run_id,
        vec![runread_core::Feature::FinalAnswer],
        "reviewer",
    );
    let ctx = std::sync::Arc::new(svc.admit_key(&[g.key.as_bytes()]).unwrap());
    let answer = runread_testkit::block_on(svc.call(
        ctx,
        runread_service::tools::READ_FINAL_ANSWER,
        serde_json::json!({"target": run.target}),
        None,
    ))
    .unwrap()
    .labeled
    .structured;
    let state = answer["state"].as_str().unwrap();
    let home = env.dir.path();

    let table = ok(runread(home, &["audit", "--tool", "read_final_answer"]));
    let row = table
        .lines()
        .find(|l| l.contains("read_final_answer"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.ends_with(&format!("ok (session_file, {state})")),
        "{row}"
    );

    let json: Value = serde_json::from_str(&ok(runread(
        home,
        &["audit", "--tool", "read_final_answer", "--json"],
    )))
    .unwrap();
    let receipt = &json["rows"][0]["receipts"][0];
    assert_eq!(receipt["outcome"], "ok", "{json}");
    assert_eq!(receipt["evidence"], "session_file", "{json}");
    assert_eq!(receipt["state"], state, "{json}");
}
