-- As SQLite's migration 13.
-- Snapshots: a sealed copy of the evidence of one shared run (the lines its granted features can
-- serve), so that a grant outlives the agent's cleanup of its session file and a gateway on
-- another host can serve it. One row per run; `sealed` is AES-256-GCM under a data key of the
-- snapshot's own, and `data_key` is that key sealed under the gate key `key_id`. Nothing here is
-- plaintext of the run. Destroyed when the last live grant on the run ends: the data key first
-- (set to NULL), then the row.
CREATE TABLE snapshots (
    session_id TEXT NOT NULL,
    generation BIGINT NOT NULL,
    run_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    features TEXT NOT NULL,
    index_sha256 TEXT NOT NULL,
    lines BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    key_id TEXT NOT NULL,
    data_key BYTEA,
    nonce BYTEA NOT NULL,
    sealed BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
);
-- What happened to snapshots, for the audit: each one sealed (again) and each one destroyed, with
-- its run and size. Append-only, as start records are.
CREATE TABLE snapshot_log (
    id TEXT PRIMARY KEY,
    at BIGINT NOT NULL,
    event TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation BIGINT NOT NULL,
    run_id TEXT NOT NULL,
    lines BIGINT NOT NULL,
    bytes BIGINT NOT NULL
);
CREATE INDEX snapshot_log_by_time ON snapshot_log(at, id);
CREATE TRIGGER snapshot_log_append_only BEFORE UPDATE OR DELETE ON snapshot_log
    FOR EACH ROW EXECUTE FUNCTION runread_append_only();
CREATE TRIGGER snapshot_log_no_truncate BEFORE TRUNCATE ON snapshot_log
    FOR EACH STATEMENT EXECUTE FUNCTION runread_append_only();
