
CREATE TABLE supervised_runs (
    session_id TEXT NOT NULL,
    generation BIGINT NOT NULL,
    run_id TEXT NOT NULL,
    supervisor_id TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
);
