-- As SQLite's migration 15 (the audit's retention: seals and prunes, chained; a start record or
-- receipt may be deleted only once a prune covers it; the owner's settings).
CREATE TABLE audit_checkpoints (
    seq BIGINT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('seal', 'prune')),
    after_ms BIGINT NOT NULL,
    upto_ms BIGINT NOT NULL,
    records BIGINT NOT NULL,
    receipts BIGINT NOT NULL,
    digest TEXT NOT NULL,
    chain TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TRIGGER audit_checkpoints_append_only BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION runread_append_only();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION runread_append_only();
CREATE FUNCTION runread_pruned_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    made BIGINT;
    pruned BIGINT;
BEGIN
    IF TG_OP <> 'DELETE' THEN
        RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
    END IF;
    IF TG_TABLE_NAME = 'receipts' THEN
        SELECT created_at INTO made FROM start_records WHERE start_id = OLD.start_id;
    ELSE
        made := OLD.created_at;
    END IF;
    SELECT max(upto_ms) INTO pruned FROM audit_checkpoints WHERE kind = 'prune';
    IF pruned IS NULL OR made IS NULL OR made > pruned THEN
        RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
    END IF;
    RETURN OLD;
END
$fn$;
DROP TRIGGER start_records_append_only ON start_records;
CREATE TRIGGER start_records_append_only BEFORE UPDATE OR DELETE ON start_records
    FOR EACH ROW EXECUTE FUNCTION runread_pruned_only();
DROP TRIGGER receipts_append_only ON receipts;
CREATE TRIGGER receipts_append_only BEFORE UPDATE OR DELETE ON receipts
    FOR EACH ROW EXECUTE FUNCTION runread_pruned_only();
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
