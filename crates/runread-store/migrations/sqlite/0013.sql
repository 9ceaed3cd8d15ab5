-- Snapshots: a sealed copy of the evidence of one shared run (the lines its granted features can
-- serve), so that a grant outlives the agent's cleanup of its session file and a gateway on
-- another host can serve it. One row per run; `sealed` is AES-256-GCM under a data key of the
-- snapshot's own, and `data_key` is that key sealed under the gate key `key_id`. Nothing here is
-- plaintext of the run. Destroyed when the last live grant on the run ends: the data key first
-- (set to NULL), then the row.
CREATE TABLE snapshots (
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    features TEXT NOT NULL,
    index_sha256 TEXT NOT NULL,
    lines INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    key_id TEXT NOT NULL,
    data_key BLOB,
    nonce BLOB NOT NULL,
    sealed BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
) STRICT;
-- What happened to snapshots, for the audit: each one sealed (again) and each one destroyed, with
-- its run and size. Append-only, as start records are.
CREATE TABLE snapshot_log (
    id TEXT PRIMARY KEY,
    at INTEGER NOT NULL,
    event TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    lines INTEGER NOT NULL,
    bytes INTEGER NOT NULL
) STRICT;
CREATE INDEX snapshot_log_by_time ON snapshot_log(at, id);
CREATE TRIGGER snapshot_log_append_only_update BEFORE UPDATE ON snapshot_log
    BEGIN SELECT RAISE(ABORT, 'the snapshot log is append-only'); END;
CREATE TRIGGER snapshot_log_append_only_delete BEFORE DELETE ON snapshot_log
    BEGIN SELECT RAISE(ABORT, 'the snapshot log is append-only'); END;
