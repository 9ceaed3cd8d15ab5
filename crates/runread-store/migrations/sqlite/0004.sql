
CREATE TABLE artifacts (
    artifact_id TEXT PRIMARY KEY,
    instance TEXT NOT NULL,
    revision INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    name TEXT NOT NULL,
    mime TEXT NOT NULL,
    kind TEXT NOT NULL,
    version_json TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX artifacts_by_run ON artifacts(session_id, generation, run_id, created_at);
