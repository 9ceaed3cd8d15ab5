
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL) STRICT;
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    path TEXT NOT NULL UNIQUE,
    revision INTEGER NOT NULL,
    enabled INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    path TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    generation INTEGER NOT NULL,
    header_json TEXT NOT NULL,
    dev INTEGER NOT NULL, ino INTEGER NOT NULL, nlink INTEGER NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    consumed INTEGER NOT NULL,
    lines INTEGER NOT NULL,
    tail_sha256 TEXT,
    malformed_json TEXT NOT NULL,
    torn INTEGER NOT NULL,
    branch_complete INTEGER NOT NULL,
    session_name TEXT,
    saved_model TEXT,
    ingested_at INTEGER NOT NULL
) STRICT;
CREATE TABLE entries (
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    line INTEGER NOT NULL,
    summary_json TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, line)
) STRICT;
CREATE TABLE runs (
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    ord INTEGER NOT NULL,
    status TEXT NOT NULL,
    run_json TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
) STRICT;
CREATE INDEX runs_by_run_id ON runs(run_id);
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    instance TEXT NOT NULL,
    revision INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    features TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;
