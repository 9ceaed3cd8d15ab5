-- Kept runs (`runread keep`): a sealed copy of a run's whole evidence (every feature's lines, its
-- artifacts, its subagents' records) the owner chose to keep past the agent's cleanup of its
-- session file. As a snapshot's row: `sealed` is AES-256-GCM under a data key of the copy's own,
-- `data_key` that key sealed under the gate key `key_id`; nothing here is plaintext of the run.
-- Apart from snapshots: a keep lasts until the owner drops it, a share's snapshot until its last
-- grant ends. `reason` (`run`, `workspace`) says why it is kept, `kept_since` since when;
-- `created_at` is when it was last sealed. Dropped: the data key first (set to NULL), then the row.
CREATE TABLE kept_runs (
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    features TEXT NOT NULL,
    index_sha256 TEXT NOT NULL,
    lines INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    key_id TEXT NOT NULL,
    data_key BLOB,
    nonce BLOB NOT NULL,
    sealed BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    reason TEXT NOT NULL,
    kept_since INTEGER NOT NULL,
    PRIMARY KEY (session_id, generation, run_id)
) STRICT;
-- Keep rules (`runread keep --workspace NAME [--agent A]`): every run of the workspace (of the
-- agent, when one is named; '' for every agent) is kept as it settles.
CREATE TABLE keep_rules (
    workspace_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, agent)
) STRICT;
