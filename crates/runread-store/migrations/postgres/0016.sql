-- As SQLite's migration 16 (calls refused before the gate, one row each and bounded; calls with
-- no valid credential, counted per minute and code).
CREATE TABLE refusals (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reader_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    code TEXT NOT NULL,
    target_json TEXT,
    run_id TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX refusals_by_time ON refusals(created_at, seq);
CREATE INDEX refusals_by_reader ON refusals(reader_id, created_at, seq);
CREATE TABLE unadmitted_calls (
    minute_ms BIGINT NOT NULL,
    code TEXT NOT NULL,
    calls BIGINT NOT NULL,
    PRIMARY KEY (minute_ms, code)
);
