
CREATE FUNCTION runread_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END
$fn$;
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
    sealed_nonce BYTEA NOT NULL,
    sealed_ciphertext BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX start_records_by_idempotency ON start_records(idempotency_key, created_at);
CREATE INDEX start_records_by_time ON start_records(created_at);
CREATE TRIGGER start_records_append_only BEFORE UPDATE OR DELETE ON start_records
    FOR EACH ROW EXECUTE FUNCTION runread_append_only();
CREATE TRIGGER start_records_no_truncate BEFORE TRUNCATE ON start_records
    FOR EACH STATEMENT EXECUTE FUNCTION runread_append_only();
CREATE TABLE receipts (
    receipt_id TEXT PRIMARY KEY,
    start_id TEXT NOT NULL REFERENCES start_records(start_id),
    outcome TEXT NOT NULL,
    result_digest TEXT,
    output_bytes BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX receipts_by_start ON receipts(start_id);
CREATE TRIGGER receipts_append_only BEFORE UPDATE OR DELETE ON receipts
    FOR EACH ROW EXECUTE FUNCTION runread_append_only();
CREATE TRIGGER receipts_no_truncate BEFORE TRUNCATE ON receipts
    FOR EACH STATEMENT EXECUTE FUNCTION runread_append_only();
