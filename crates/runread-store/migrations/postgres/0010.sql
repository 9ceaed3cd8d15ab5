-- As SQLite's migration 10: readers, each grant of before becoming one reader holding it (named
-- by its label, made unique with the grant's id after the first), grants naming their reader
-- instead of holding a key, and every call naming its reader (those recorded before given theirs
-- once, with the append-only trigger lifted for that one statement).
CREATE TABLE readers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    removed_at BIGINT
);
CREATE UNIQUE INDEX readers_by_live_name ON readers(name) WHERE removed_at IS NULL;
INSERT INTO readers (id, name, key_hash, created_at, removed_at)
SELECT 'r-' || id,
       CASE WHEN n = 1 THEN label ELSE label || ' (' || id || ')' END,
       key_hash, created_at, NULL
FROM (SELECT id, label, key_hash, created_at,
             ROW_NUMBER() OVER (PARTITION BY label ORDER BY created_at, id) AS n
      FROM grants) AS numbered;
ALTER TABLE grants ADD COLUMN reader_id TEXT REFERENCES readers(id);
UPDATE grants SET reader_id = 'r-' || id;
ALTER TABLE grants ALTER COLUMN reader_id SET NOT NULL;
ALTER TABLE grants DROP COLUMN key_hash;
ALTER TABLE grants DROP COLUMN label;
CREATE INDEX grants_of_reader ON grants(reader_id, created_at, id);
ALTER TABLE start_records ADD COLUMN reader_id TEXT;
ALTER TABLE start_records DISABLE TRIGGER start_records_append_only;
UPDATE start_records SET reader_id = CASE
    WHEN grant_id IN (SELECT id FROM grants) THEN 'r-' || grant_id
    WHEN key_hash_prefix != '' THEN (
        SELECT CASE WHEN count(*) = 1 THEN max(r.id) END FROM readers r
        WHERE substr(r.key_hash, 1, length(start_records.key_hash_prefix)) = start_records.key_hash_prefix)
    END;
ALTER TABLE start_records ENABLE TRIGGER start_records_append_only;
CREATE INDEX start_records_by_reader ON start_records(reader_id, created_at, start_id);
