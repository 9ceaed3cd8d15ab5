
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    key_id TEXT NOT NULL,
    nonce BYTEA NOT NULL,
    ciphertext BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
