
CREATE TABLE meta (key TEXT PRIMARY KEY, value BYTEA NOT NULL);
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    revision BIGINT NOT NULL,
    enabled BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (host, path)
);
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    agent TEXT NOT NULL,
    path TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    generation BIGINT NOT NULL,
    header_json TEXT NOT NULL,
    dev BIGINT NOT NULL, ino BIGINT NOT NULL, nlink BIGINT NOT NULL,
    size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL,
    consumed BIGINT NOT NULL,
    lines BIGINT NOT NULL,
    tail_sha256 TEXT,
    malformed_json TEXT NOT NULL,
    torn BOOLEAN NOT NULL,
    branch_complete BOOLEAN NOT NULL,
    session_name TEXT,
    saved_model TEXT,
    ingested_at BIGINT NOT NULL,
    UNIQUE (host, path)
);
CREATE TABLE entries (
    session_id TEXT NOT NULL,
    generation BIGINT NOT NULL,
    line BIGINT NOT NULL,
    summary_json TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, line)
);
CREATE TABLE runs (
    session_id TEXT NOT NULL,
    generation BIGINT NOT NULL,
    run_id TEXT NOT NULL,
    ord BIGINT NOT NULL,
    status TEXT NOT NULL,
    run_json TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
);
CREATE INDEX runs_by_run_id ON runs(run_id);
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    instance TEXT NOT NULL,
    revision BIGINT NOT NULL,
    workspace_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation BIGINT NOT NULL,
    run_id TEXT NOT NULL,
    features TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT
);
