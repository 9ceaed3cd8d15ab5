-- Access requests (`request_access`): a reader asks for runs, the owner decides on the loopback
-- side. What the reader wrote (its hints and reason) is sealed under the gate key (`sealed`:
-- base64 of nonce, ciphertext and tag, under `key_id`), never stored in clear; `fingerprint` is
-- a keyed digest of the whole request, to answer an identical request still waiting with its own
-- id. `decision` (`approved`, `denied`) is NULL until decided; an approval's grants are named in
-- `grant_ids` (space-separated) once made.
-- A row is purged a day after it was made.
CREATE TABLE access_requests (
    id TEXT PRIMARY KEY,
    reader_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    key_id TEXT NOT NULL,
    sealed TEXT NOT NULL,
    latest INTEGER NOT NULL,
    features TEXT NOT NULL,
    duration_s INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    decided_at INTEGER,
    decision TEXT,
    grant_ids TEXT
);
CREATE INDEX access_requests_by_reader ON access_requests(reader_id, decided_at, expires_at);
CREATE INDEX access_requests_by_expiry ON access_requests(expires_at);
