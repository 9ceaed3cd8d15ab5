//! Store records as ingest would commit them, for store tests (values arbitrary but fixed).

use runread_sessions::{FileIdentity, Header, Run, RunStatus};
use runread_store::SessionRecord;

/// A session record as ingest would commit it.
pub fn session_at(id: &str, path: &str, ws: &str, generation: u64) -> SessionRecord {
    SessionRecord {
        session_id: id.into(),
        agent: runread_core::Agent::Pi,
        path: path.into(),
        workspace_id: ws.into(),
        generation,
        header: Header {
            session_id: id.into(),
            version: 3,
            cwd: "/w".into(),
            timestamp: None,
            parent_session: None,
            line_sha256: "h".into(),
            line_bytes: 10,
            fork: None,
            agent_version: None,
        },
        identity: FileIdentity {
            dev: 1,
            ino: 2,
            nlink: 1,
            size: 100,
            mtime_ns: 5,
            ctime_ns: 6,
        },
        consumed: 100,
        lines: 3,
        tail_sha256: Some("t".into()),
        malformed_lines: vec![7],
        torn: false,
        branch_complete: true,
        session_name: Some("name".into()),
        saved_model: None,
        ingested_at_ms: 1,
        over_bounds: false,
        index_version: runread_store::INDEX_VERSION,
    }
}

/// A completed run with a short non-ASCII answer.
pub fn run(id: &str) -> Run {
    Run {
        run_id: id.into(),
        start_line: 2,
        end_line: 3,
        status: RunStatus::Completed,
        unknown_reason: None,
        final_entry_id: Some("a".into()),
        final_message_sha256: Some("m".into()),
        final_lines: vec![runread_sessions::LineRef {
            line: 3,
            offset: 40,
            bytes: 60,
            sha256: "l".into(),
        }],
        final_text_sha256: Some(runread_core::sha256_hex("answer é".as_bytes())),
        final_bytes: 9,
        final_truncated: false,
        chain_len: 2,
        chain_sha256: Some("c".into()),
        started_at: None,
        ended_at: None,
        run_models: vec![],
        message_lines: vec![2, 3],
        first_sequence: 1,
        waiting_on_tool: false,
        context_before: Default::default(),
        context_after: Default::default(),
        answer_before: Default::default(),
        prompt_line: None,
        usage: None,
    }
}

/// A start record as the gate writes it, for call `id` under grant `grant_id` at `at_ms`,
/// naming `target` (`None`: a call without one, as `list_granted_targets` is).
pub fn start(
    id: &str,
    grant_id: &str,
    target: Option<runread_core::Target>,
    at_ms: i64,
) -> runread_store::StartRecord {
    runread_store::StartRecord {
        meta: runread_store::StartMeta {
            start_id: id.into(),
            idempotency_key: format!("once-{id}"),
            grant_id: grant_id.into(),
            key_hash_prefix: "abcd".into(),
            tool: "read_final_answer".into(),
            binding_digest: "b".into(),
            target,
            input_digest: "in".into(),
            sealed_key_id: "k1".into(),
            created_at_ms: at_ms,
            reader_id: Some("r-test".into()),
        },
        sealed_nonce: vec![0; 12],
        sealed_ciphertext: vec![0; 16],
    }
}

/// A receipt for start record `start_id` with `outcome`, written at `at_ms`.
pub fn receipt(start_id: &str, outcome: &str, at_ms: i64) -> runread_store::Receipt {
    runread_store::Receipt {
        receipt_id: format!("rc-{start_id}"),
        start_id: start_id.into(),
        outcome: outcome.into(),
        result_digest: None,
        output_bytes: None,
        created_at_ms: at_ms,
        evidence: None,
        state: None,
    }
}

/// What the newest receipt of a call of `tool` in `store` records of its result: its evidence
/// and settled state.
pub fn last_receipt_facts(
    store: &dyn runread_store::Store,
    tool: &str,
) -> (Option<String>, Option<String>) {
    let rows = store.audit(i64::MIN, 10_000).expect("the audit reads");
    let (_, receipts) = rows
        .iter()
        .rev()
        .find(|(m, r)| m.tool == tool && !r.is_empty())
        .expect("a receipted call of the tool");
    let r = receipts.last().expect("a receipt");
    (r.evidence.clone(), r.state.clone())
}
