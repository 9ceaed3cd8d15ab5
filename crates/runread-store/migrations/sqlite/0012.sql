-- Waits (`wait_for_run`): one row while a reader's call waits for a run, so that the owner sees
-- which runs readers are waiting on (`runread runs`, the console), from any process. Written when
-- the wait starts and deleted when it ends; a row whose process died is shown until `until_at`
-- and purged after. Nothing here holds a conversation or a key.
CREATE TABLE waits (
    id TEXT PRIMARY KEY,
    reader_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    until_at INTEGER NOT NULL
);
CREATE INDEX waits_by_until ON waits(until_at);
