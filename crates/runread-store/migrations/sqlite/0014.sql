-- Connectors, round two. A request's `state` is the client's, echoed back and never read: only its
-- SHA-256 is kept, and the browser carries the value itself back through the waiting page (a
-- request waiting at this migration starts again; one with its code issued needs no state any
-- more). Bounds get shares: requests waiting are counted per client, registrations never
-- approved per registrant (the host of the first redirect URI; for a loopback one, the name the
-- client gave), and a client that holds tokens is not counted against the total.
DELETE FROM oauth_requests WHERE code_hash IS NULL;
ALTER TABLE oauth_requests RENAME COLUMN state TO state_sha256;
UPDATE oauth_requests SET state_sha256 = NULL;
CREATE INDEX oauth_requests_by_client ON oauth_requests(client_id, expires_at);
ALTER TABLE oauth_clients ADD COLUMN registrant TEXT NOT NULL DEFAULT '';
CREATE INDEX oauth_clients_by_registrant ON oauth_clients(registrant) WHERE approved_at IS NULL;
CREATE INDEX oauth_tokens_by_client ON oauth_tokens(client_id);
CREATE INDEX oauth_tokens_by_reader ON oauth_tokens(reader_id);
