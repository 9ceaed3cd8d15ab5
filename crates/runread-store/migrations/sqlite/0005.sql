
CREATE TABLE supervised_runs (
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    supervisor_id TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
) STRICT;
