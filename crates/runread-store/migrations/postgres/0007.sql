
ALTER TABLE runs ADD COLUMN started_ms BIGINT;
CREATE INDEX runs_by_start ON runs(started_ms DESC NULLS LAST, session_id, ord DESC);
