-- Readers: a named client identity with one key, holding grants, so that a client is configured
-- once and the owner shares runs with it one by one. Until now every grant had a key of its own:
-- each grant becomes one reader holding it, named by its label (a label several grants share is
-- made unique with the grant's id after the first), with the grant's key, so that every key reads
-- exactly what it read before.
CREATE TABLE readers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    removed_at INTEGER
) STRICT;
-- One live reader per name; a removed reader's name may be given again.
CREATE UNIQUE INDEX readers_by_live_name ON readers(name) WHERE removed_at IS NULL;
INSERT INTO readers (id, name, key_hash, created_at, removed_at)
SELECT 'r-' || id,
       CASE WHEN n = 1 THEN label ELSE label || ' (' || id || ')' END,
       key_hash, created_at, NULL
FROM (SELECT id, label, key_hash, created_at,
             ROW_NUMBER() OVER (PARTITION BY label ORDER BY created_at, id) AS n
      FROM grants);
-- Grants name their reader instead of holding a key (the reader's); SQLite rebuilds the table to
-- drop the key's unique column.
CREATE TABLE grants_by_reader (
    id TEXT PRIMARY KEY,
    reader_id TEXT NOT NULL REFERENCES readers(id),
    instance TEXT NOT NULL,
    revision INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    features TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;
INSERT INTO grants_by_reader
SELECT id, 'r-' || id, instance, revision, workspace_id, session_id, generation, run_id,
       features, created_at, expires_at, revoked_at
FROM grants;
DROP TABLE grants;
ALTER TABLE grants_by_reader RENAME TO grants;
-- A reader's grants newest first (`list_granted_targets`, `reader list`).
CREATE INDEX grants_of_reader ON grants(reader_id, created_at, id);
-- Every call names the reader whose key made it. Calls recorded before are given theirs once,
-- here: the reader of their grant, or (a call under no grant: `list_granted_targets`) the one
-- reader whose key hash begins with the prefix the call recorded. Nothing else of a start
-- record changes; the append-only trigger is lifted for this one statement and put back as
-- migration 2 made it.
ALTER TABLE start_records ADD COLUMN reader_id TEXT;
DROP TRIGGER start_records_append_only_update;
UPDATE start_records SET reader_id = CASE
    WHEN grant_id IN (SELECT id FROM grants) THEN 'r-' || grant_id
    WHEN key_hash_prefix != '' THEN (
        SELECT CASE WHEN count(*) = 1 THEN max(r.id) END FROM readers r
        WHERE substr(r.key_hash, 1, length(start_records.key_hash_prefix)) = start_records.key_hash_prefix)
    END;
CREATE TRIGGER start_records_append_only_update BEFORE UPDATE ON start_records
    BEGIN SELECT RAISE(ABORT, 'start records are append-only'); END;
CREATE INDEX start_records_by_reader ON start_records(reader_id, created_at, start_id);
