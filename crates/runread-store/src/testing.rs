//! Records the unit tests of both stores share (the testkit's are built against another copy
//! of this crate, so its types are not these).
#![cfg(test)]

use crate::{IngestCommit, SessionRecord};

/// A one-session ingest commit in workspace `ws`.
pub(crate) fn ingest_commit(ws: &str) -> IngestCommit {
    IngestCommit {
        session: SessionRecord {
            session_id: "s1".into(),
            agent: runread_core::Agent::Pi,
            path: "/sessions/s1.jsonl".into(),
            workspace_id: ws.into(),
            generation: 1,
            header: runread_sessions::Header {
                session_id: "s1".into(),
                version: 3,
                cwd: "/w".into(),
                timestamp: None,
                parent_session: None,
                line_sha256: "h".into(),
                line_bytes: 10,
                fork: None,
                agent_version: None,
            },
            identity: runread_sessions::FileIdentity {
                dev: 1,
                ino: 2,
                nlink: 1,
                size: 100,
                mtime_ns: 5,
                ctime_ns: 6,
            },
            consumed: 100,
            lines: 3,
            tail_sha256: None,
            malformed_lines: vec![],
            torn: false,
            branch_complete: true,
            session_name: None,
            saved_model: None,
            ingested_at_ms: 1,
            over_bounds: false,
            index_version: crate::INDEX_VERSION,
        },
        new_generation: true,
        new_entries: vec![],
        runs: vec![],
    }
}
