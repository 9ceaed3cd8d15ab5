-- As SQLite's migration 9: the audit newest first, filtered and paged in the store
-- (`audit_page`), one index per way it is read, each in the page's order (time, then start id).
-- The run index is on the expression `audit_page` filters by (`RUN_ID_OF_START`).
DROP INDEX start_records_by_time;
CREATE INDEX start_records_by_time_and_id ON start_records(created_at, start_id);
CREATE INDEX start_records_by_grant ON start_records(grant_id, created_at, start_id);
CREATE INDEX start_records_by_run
    ON start_records(((target_json::jsonb) ->> 'runId'), created_at, start_id);
