
ALTER TABLE runs ADD COLUMN started_ms INTEGER;
CREATE INDEX runs_by_start ON runs(started_ms DESC, session_id, ord DESC);
