
CREATE TABLE start_records (
    start_id TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL,
    grant_id TEXT NOT NULL,
    key_hash_prefix TEXT NOT NULL,
    tool TEXT NOT NULL,
    binding_digest TEXT NOT NULL,
    target_json TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    sealed_key_id TEXT NOT NULL,
    sealed_nonce BLOB NOT NULL,
    sealed_ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX start_records_by_idempotency ON start_records(idempotency_key, created_at);
CREATE INDEX start_records_by_time ON start_records(created_at);
CREATE TRIGGER start_records_append_only_update BEFORE UPDATE ON start_records
    BEGIN SELECT RAISE(ABORT, 'start records are append-only'); END;
CREATE TRIGGER start_records_append_only_delete BEFORE DELETE ON start_records
    BEGIN SELECT RAISE(ABORT, 'start records are append-only'); END;
CREATE TABLE receipts (
    receipt_id TEXT PRIMARY KEY,
    start_id TEXT NOT NULL REFERENCES start_records(start_id),
    outcome TEXT NOT NULL,
    result_digest TEXT,
    output_bytes INTEGER,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX receipts_by_start ON receipts(start_id);
CREATE TRIGGER receipts_append_only_update BEFORE UPDATE ON receipts
    BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
CREATE TRIGGER receipts_append_only_delete BEFORE DELETE ON receipts
    BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
