-- Calls refused before the gate. A call admission refuses after it knows the reader (not
-- granted, expired, revoked, stale, bad arguments, busy, ...) never reaches the gate, so no start
-- record holds it: it is kept here, one row each, with its reader, tool, target (when the
-- arguments named a well-formed one), fixed code and time. Bounded: each insert removes the rows
-- more than the bound older by `seq` (`REFUSALS_KEPT_MAX`).
CREATE TABLE refusals (
    seq INTEGER PRIMARY KEY,
    reader_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    code TEXT NOT NULL,
    target_json TEXT,
    run_id TEXT,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX refusals_by_time ON refusals(created_at, seq);
CREATE INDEX refusals_by_reader ON refusals(reader_id, created_at, seq);
-- Calls with no valid credential (no key, an unknown key, a bad token) name no reader: they are
-- counted per minute and code, not kept one by one, so a flood grows one row a minute per code.
-- Bounded: each count removes the minutes older than the bound (`UNADMITTED_MINUTES_KEPT`).
CREATE TABLE unadmitted_calls (
    minute_ms INTEGER NOT NULL,
    code TEXT NOT NULL,
    calls INTEGER NOT NULL,
    PRIMARY KEY (minute_ms, code)
) STRICT;
