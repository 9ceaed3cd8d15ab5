
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    key_id TEXT NOT NULL,
    nonce BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
