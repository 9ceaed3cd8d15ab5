-- The audit's retention. Start records and receipts stay append-only, but for one way out: a
-- maintenance pass removes the oldest, from the old end only, after sealing them. A seal is a
-- checkpoint over the start records of a time range (`after_ms`, `upto_ms`] and their receipts:
-- how many, and the digest of them all in order. A prune removes what seals cover up to its
-- `upto_ms`. Checkpoints are append-only and chained (each `chain` is the digest of the previous
-- one's and its own fields), so `runread audit verify` shows that the log that remains is whole:
-- every sealed range still digests to its seal, and the chain says what was pruned. The triggers
-- refuse any other delete: a row no prune covers cannot go.
CREATE TABLE audit_checkpoints (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('seal', 'prune')),
    after_ms INTEGER NOT NULL,
    upto_ms INTEGER NOT NULL,
    records INTEGER NOT NULL,
    receipts INTEGER NOT NULL,
    digest TEXT NOT NULL,
    chain TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE TRIGGER audit_checkpoints_append_only_update BEFORE UPDATE ON audit_checkpoints
    BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END;
CREATE TRIGGER audit_checkpoints_append_only_delete BEFORE DELETE ON audit_checkpoints
    BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END;
DROP TRIGGER start_records_append_only_delete;
CREATE TRIGGER start_records_append_only_delete BEFORE DELETE ON start_records
    WHEN OLD.created_at > COALESCE(
        (SELECT max(upto_ms) FROM audit_checkpoints WHERE kind = 'prune'), -9223372036854775808)
    BEGIN SELECT RAISE(ABORT, 'start records are append-only'); END;
DROP TRIGGER receipts_append_only_delete;
CREATE TRIGGER receipts_append_only_delete BEFORE DELETE ON receipts
    WHEN COALESCE((SELECT created_at FROM start_records WHERE start_id = OLD.start_id),
                  9223372036854775807) > COALESCE(
        (SELECT max(upto_ms) FROM audit_checkpoints WHERE kind = 'prune'), -9223372036854775808)
    BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
-- The owner's settings (`runread audit retention`): a name and its value.
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
