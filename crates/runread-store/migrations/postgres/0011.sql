-- As SQLite's migration 11.
-- Connectors (`serve --public-url`): runread is its own OAuth 2.1 authorization server, and an
-- OAuth client the owner approved is a reader. Clients registered dynamically (RFC 7591; a Client
-- ID Metadata Document client is fetched, never stored), authorization requests waiting for the
-- owner's consent (and the code each approved one was answered with), and tokens, kept only as
-- hashes. Nothing here holds a run or a conversation.
CREATE TABLE oauth_clients (
    client_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    -- JSON array of the exact redirect URIs registered.
    redirect_uris TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    -- When the owner first approved a request of this client; never approved ones are purged.
    approved_at BIGINT
);
CREATE INDEX oauth_clients_unapproved ON oauth_clients(created_at) WHERE approved_at IS NULL;
CREATE TABLE oauth_requests (
    id TEXT PRIMARY KEY,
    user_code TEXT NOT NULL,
    client_id TEXT NOT NULL,
    client_name TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    state TEXT,
    code_challenge TEXT NOT NULL,
    resource TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    -- Decided: approved with a reader, or denied (no reader).
    decided_at BIGINT,
    reader_id TEXT REFERENCES readers(id),
    granted_scope TEXT,
    code_hash TEXT UNIQUE,
    code_expires_at BIGINT,
    code_used_at BIGINT
);
CREATE INDEX oauth_requests_by_expiry ON oauth_requests(expires_at);
CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    reader_id TEXT NOT NULL REFERENCES readers(id),
    client_id TEXT NOT NULL,
    -- Every token descending from one authorization: a replayed refresh token or a reused code
    -- revokes them all.
    family TEXT NOT NULL,
    resource TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX oauth_tokens_by_family ON oauth_tokens(family);
CREATE INDEX oauth_tokens_by_expiry ON oauth_tokens(expires_at);
