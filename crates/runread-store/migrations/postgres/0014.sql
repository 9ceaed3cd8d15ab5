-- As SQLite's migration 14 (connectors, round two: `state` kept as its SHA-256, shares of the
-- bounds per client and per registrant).
DELETE FROM oauth_requests WHERE code_hash IS NULL;
ALTER TABLE oauth_requests RENAME COLUMN state TO state_sha256;
UPDATE oauth_requests SET state_sha256 = NULL;
CREATE INDEX oauth_requests_by_client ON oauth_requests(client_id, expires_at);
ALTER TABLE oauth_clients ADD COLUMN registrant TEXT NOT NULL DEFAULT '';
CREATE INDEX oauth_clients_by_registrant ON oauth_clients(registrant) WHERE approved_at IS NULL;
CREATE INDEX oauth_tokens_by_client ON oauth_tokens(client_id);
CREATE INDEX oauth_tokens_by_reader ON oauth_tokens(reader_id);
