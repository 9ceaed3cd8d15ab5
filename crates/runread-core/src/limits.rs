//! Every bound a reader (or an owner) can meet, in one place. Each is tested at its edge: `N`
//! allowed, `N + 1` refused or truncated; the relations between them that other code relies on
//! are checked at compile time at the end of this file.

/// Largest final answer runread will return, in UTF-8 bytes. Larger: state `too_large`, no text.
pub const FINAL_ANSWER_MAX_BYTES: usize = 65_536;
/// Default size of one `read_final_answer` chunk, in bytes.
pub const FINAL_ANSWER_CHUNK_DEFAULT_BYTES: usize = 4_096;
/// Largest `limit` a reader may ask for in one `read_final_answer` chunk.
pub const FINAL_ANSWER_CHUNK_MAX_BYTES: usize = 8_192;
/// Smallest `limit`: one UTF-8 code point is at most 4 bytes, so any smaller limit could be
/// unable to make progress without splitting a code point.
pub const FINAL_ANSWER_CHUNK_MIN_BYTES: usize = 4;

/// Longest line of a session file runread parses. A session file of any size is read line by
/// line, holding one line at a time: this bounds the memory a read takes. A longer line is
/// skipped without being held and counts as malformed (the run it touches is `unknown`).
pub const EVIDENCE_LINE_MAX_BYTES: usize = 8 * 1024 * 1024;
/// Most lines runread reads from one session file. The lines after it are not read: the session
/// is flagged and its last run is `unknown`. Bounds the index kept while cutting runs.
pub const EVIDENCE_FILE_MAX_LINES: u64 = 100_000;

/// Longest event type runread's log names when an agent's stream or session file holds a type it
/// does not know (for the owner to report); the bound of the agent version a session file records,
/// named there too. A longer one, or one not of `[a-z0-9_./-]`, is not named.
pub const REPORTED_EVENT_TYPE_MAX_BYTES: usize = 64;

/// Largest HTTP request body.
pub const HTTP_BODY_MAX_BYTES: usize = 32 * 1024;
/// Most HTTP requests served at once; more are refused at once, never queued.
pub const HTTP_IN_FLIGHT_MAX: usize = 4;
/// Time a request body has to arrive completely, in seconds.
pub const HTTP_BODY_DEADLINE_SECS: u64 = 5;
/// Time a connection has to deliver a request line and headers, in seconds: from accept, and on
/// a kept-alive connection from the end of the previous response. Later: closed, no response.
pub const HTTP_HEADER_DEADLINE_SECS: u64 = 5;
/// Largest request line plus headers, in bytes (also hyper's read buffer). Larger: 431, closed.
pub const HTTP_HEADER_MAX_BYTES: usize = 16 * 1024;
/// Most HTTP connections open at once. At the cap runread stops accepting: further connections
/// wait in the kernel's accept queue and are accepted in order as open ones close.
pub const HTTP_CONNECTIONS_MAX: usize = 256;

/// Length of a read key in lowercase hex characters (256 bits).
pub const READ_KEY_HEX_LEN: usize = 64;
/// Longest string accepted in any target field.
pub const TARGET_FIELD_MAX_BYTES: usize = 128;
/// Longest cursor string accepted.
pub const CURSOR_MAX_BYTES: usize = 512;
/// Longest reader name (`runread reader add NAME`, `grant --to NAME`): the client a reader key is
/// for. A grant made before readers existed became a reader named by its label, which had the
/// same bound.
pub const READER_NAME_MAX_BYTES: usize = 128;
/// Longest grant lifetime an owner may give (`--expires`), in seconds: 30 days.
pub const GRANT_MAX_LIFETIME_SECS: u64 = 30 * 24 * 3600;

/// Default time a session file must be quiet before a passive run counts as settled, in ms.
pub const SETTLE_QUIET_DEFAULT_MS: u64 = 2_000;

/// Longest text of one history event, in bytes; longer: truncated on a UTF-8 boundary and flagged.
pub const HISTORY_EVENT_MAX_BYTES: usize = 8_192;
/// Most bytes of session-file lines one `read_history` page reads back (its events, and the
/// neighbours it masks across). A page ends early rather than read more; it always holds at least
/// one event (one line is at most [`EVIDENCE_LINE_MAX_BYTES`]).
pub const HISTORY_PAGE_READ_MAX_BYTES: usize = 16 * 1024 * 1024;
/// Most bytes of session-file lines read as masking context around one final answer (the texts
/// before and after it). Context that does not fit is treated as unknown: the answer's edge is
/// masked conservatively instead.
pub const ANSWER_CONTEXT_READ_MAX_BYTES: usize = 16 * 1024 * 1024;
/// Longest prompt preview the owner's run listing shows, in characters (cut after masking).
pub const PROMPT_PREVIEW_MAX_CHARS: usize = 80;
/// Longest prompt line read back for the owner's listing: a longer prompt (a pasted file) is
/// listed as too long to preview rather than read and hashed whole for 80 characters.
pub const PROMPT_PREVIEW_LINE_MAX_BYTES: u64 = 256 * 1024;
/// Default and largest number of grants in one `list_granted_targets` page (newest first).
pub const GRANTED_TARGETS_PAGE_DEFAULT: usize = 50;
pub const GRANTED_TARGETS_PAGE_MAX: usize = 100;
/// Default and largest number of events in one `read_history` page.
pub const HISTORY_PAGE_DEFAULT: usize = 50;
pub const HISTORY_PAGE_MAX: usize = 100;
/// Most events of one run that are retained; older ones are cut at the front (flagged as a gap).
pub const HISTORY_RETAINED_EVENTS: usize = 5_000;
/// A page whose selected text exceeds this many characters returns no text (`readable:false`).
pub const HISTORY_PAGE_MAX_CHARS: usize = 512 * 1024;
/// A work-state projection older than this is `unknown`.
pub const WORK_STATE_FRESH_MS: i64 = 30_000;

/// Largest artifact file, in bytes (the same bound `runread-artifacts` enforces).
pub const ARTIFACT_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// Largest `offset` of a `read_artifact` call.
pub const ARTIFACT_OFFSET_MAX: u64 = ARTIFACT_MAX_BYTES;
/// Largest `limit` of one `read_artifact` transfer, in bytes.
pub const ARTIFACT_TRANSFER_MAX_BYTES: usize = 32_768;
/// Largest `offset` of a `list_artifacts` call.
pub const ARTIFACT_LIST_OFFSET_MAX: u64 = 1_024;
/// Largest `limit` of a `list_artifacts` call.
pub const ARTIFACT_LIST_LIMIT_MAX: u64 = 100;

/// Journal entries kept per runread instance; older ones are pruned after each write.
pub const JOURNAL_RETENTION_RUNS: usize = 256;
/// Largest journal entry read back or accepted (an entry is a proof, not the answer).
pub const JOURNAL_ENTRY_MAX_BYTES: u64 = 16 * 1024;
/// Directory entries looked at when pruning the journal (the rest waits for the next prune).
pub const JOURNAL_SCAN_MAX: usize = 4 * JOURNAL_RETENTION_RUNS;
/// Largest line of an agent's JSON event stream; a longer line is skipped and taints its run.
pub const EVENT_LINE_MAX_BYTES: usize = 32 * 1024 * 1024;
/// How often a supervisor rewrites its live record while nothing else happens (well inside
/// the work-state freshness window).
pub const SUPERVISOR_HEARTBEAT_MS: u64 = 5_000;
/// Processes looked at by one census of the process table (`/proc` on Linux, `ps` elsewhere).
pub const PROCESS_SCAN_MAX: usize = 65_536;

/// Shortest secret accepted, in UTF-8 bytes. Shorter strings would mask ordinary words.
pub const SECRET_MIN_BYTES: usize = 8;
/// Longest secret accepted, in UTF-8 bytes. Bounds how much text streaming must hold back.
pub const SECRET_MAX_BYTES: usize = 256;
/// Most secrets one [`Redactor`](crate::redact::Redactor) accepts.
pub const SECRETS_MAX: usize = 4096;

/// A call's input larger than this, serialized, is refused by the gate.
pub const GATE_INPUT_MAX_BYTES: usize = 64 * 1024;
/// A call's output larger than this, serialized, is refused by the gate (`invalid_output`).
pub const GATE_OUTPUT_MAX_BYTES: usize = 256 * 1024;
/// The longest deadline any binding may have; a binding may only tighten it.
pub const ADAPTER_DEADLINE_MAX: std::time::Duration = std::time::Duration::from_secs(5);
/// A repeated request (same key, same request id, same input) within this window reuses its
/// start record instead of writing another.
pub const REPLAY_WINDOW_MS: i64 = 60_000;
/// A call whose target moved while it was read (an ingest of a run still being written landed
/// between admission and the re-check) is read again from admission, as a replay of the same
/// call, up to this many reads in all; only then is it refused `target_changed`.
pub const TARGET_MOVED_READS_MAX: u32 = 3;

// The relations the comments above (and the code that uses these bounds) rely on.
const _: () = {
    // A reader can always make progress, and the default chunk is one a reader may ask for.
    assert!(FINAL_ANSWER_CHUNK_MIN_BYTES <= FINAL_ANSWER_CHUNK_DEFAULT_BYTES);
    assert!(FINAL_ANSWER_CHUNK_DEFAULT_BYTES <= FINAL_ANSWER_CHUNK_MAX_BYTES);
    assert!(FINAL_ANSWER_CHUNK_MAX_BYTES <= FINAL_ANSWER_MAX_BYTES);
    assert!(HISTORY_PAGE_DEFAULT <= HISTORY_PAGE_MAX);
    assert!(GRANTED_TARGETS_PAGE_DEFAULT <= GRANTED_TARGETS_PAGE_MAX);
    assert!(HISTORY_PAGE_MAX <= HISTORY_RETAINED_EVENTS);
    // A history page always holds at least one event: one line fits its read budget.
    assert!(EVIDENCE_LINE_MAX_BYTES <= HISTORY_PAGE_READ_MAX_BYTES);
    // A live supervisor's heartbeat lands well inside the work-state freshness window.
    assert!((SUPERVISOR_HEARTBEAT_MS as i64) * 2 <= WORK_STATE_FRESH_MS);
    // Pruning looks at more entries than it keeps.
    assert!(JOURNAL_SCAN_MAX >= JOURNAL_RETENTION_RUNS);
    // An artifact transfer is a part of an artifact; a secret fits in an event's text.
    assert!(ARTIFACT_TRANSFER_MAX_BYTES as u64 <= ARTIFACT_MAX_BYTES);
    assert!(SECRET_MIN_BYTES <= SECRET_MAX_BYTES);
    assert!(SECRET_MAX_BYTES <= HISTORY_EVENT_MAX_BYTES);
    // A gated call's input holds any cursor and target a reader may send, and more than the
    // HTTP body a call arrives in.
    assert!(CURSOR_MAX_BYTES + 6 * TARGET_FIELD_MAX_BYTES <= GATE_INPUT_MAX_BYTES);
    assert!(HTTP_BODY_MAX_BYTES <= GATE_INPUT_MAX_BYTES);
};

// Connectors (`serve --public-url`): runread as its own OAuth 2.1 authorization server.
/// Seconds an access token is good for; a client refreshes after that.
pub const OAUTH_ACCESS_TOKEN_SECS: i64 = 15 * 60;
/// Seconds a refresh token is good for (each use rotates it).
pub const OAUTH_REFRESH_TOKEN_SECS: i64 = 30 * 24 * 3600;
/// Seconds an authorization code is good for, once.
pub const OAUTH_CODE_SECS: i64 = 60;
/// Seconds an authorization request waits for the owner's decision on the console.
pub const OAUTH_REQUEST_SECS: i64 = 10 * 60;
/// Most authorization requests waiting for the owner at once, of clients that hold no token (a
/// client the owner approved before is not counted: a flood of unknown clients never keeps it
/// out).
pub const OAUTH_PENDING_REQUESTS_MAX: u64 = 16;
/// Most authorization requests of one client waiting for the owner at once: one client holds at
/// most a quarter of [`OAUTH_PENDING_REQUESTS_MAX`].
pub const OAUTH_PENDING_REQUESTS_PER_CLIENT_MAX: u64 = 4;
/// Most dynamically registered clients in all.
pub const OAUTH_CLIENTS_MAX: u64 = 64;
/// Most dynamically registered clients the owner never approved (purged after
/// [`OAUTH_UNAPPROVED_CLIENT_SECS`]).
pub const OAUTH_UNAPPROVED_CLIENTS_MAX: u64 = 16;
/// Most dynamically registered clients never approved of one registrant (the host of the first
/// redirect URI; for a loopback one, the client's name): one registrant holds at most a quarter of
/// [`OAUTH_UNAPPROVED_CLIENTS_MAX`].
pub const OAUTH_UNAPPROVED_CLIENTS_PER_REGISTRANT_MAX: u64 = 4;
/// Seconds a registered client the owner never approved is kept.
pub const OAUTH_UNAPPROVED_CLIENT_SECS: i64 = 3600;
/// Most bytes of a registration, token or revocation request body.
pub const OAUTH_BODY_MAX_BYTES: usize = 8 * 1024;
/// Most redirect URIs a client registers.
pub const OAUTH_REDIRECT_URIS_MAX: usize = 4;
/// Most bytes of a URI runread takes from a client (redirect URI, client id, resource).
pub const OAUTH_URI_MAX_BYTES: usize = 512;
/// Most bytes of the `state` a client sends (echoed back, never read).
pub const OAUTH_STATE_MAX_BYTES: usize = 512;
/// Most bytes of a client's name (shown to the owner, never trusted).
pub const OAUTH_CLIENT_NAME_MAX_BYTES: usize = 128;
/// Most bytes of a Client ID Metadata Document runread fetches.
pub const CIMD_MAX_BYTES: usize = 16 * 1024;
/// Seconds a Client ID Metadata Document fetch may take, connecting included.
pub const CIMD_DEADLINE_SECS: u64 = 5;

// Waiting for a run (`wait_for_run`).
/// Seconds a `wait_for_run` waits when the caller names no timeout.
pub const WAIT_DEFAULT_SECONDS: u64 = 25;
/// Most seconds a `wait_for_run` may wait: below the tool-call timeouts common clients keep
/// (Codex's 60 s default), so the answer arrives before the client gives up on it.
pub const WAIT_MAX_SECONDS: u64 = 50;
/// Most waits one reader holds at once; one more is refused `busy`.
pub const WAITS_PER_READER_MAX: usize = 16;
/// Most waits one runread holds at once, every reader together; one more is refused `busy`.
/// Below [`HTTP_CONNECTIONS_MAX`]: each wait holds its connection, and other calls need some.
pub const WAITS_MAX: usize = 224;
/// Milliseconds between a wait's re-checks when no change arrives: what a missed change
/// notification (a `NOTIFY` lost with its connection, an SQLite store whose commit watcher could
/// not start) costs at most, and how soon a passive run's quiet window is seen to have passed.
pub const WAIT_RECHECK_MS: u64 = 1_000;
/// Most bytes of a grant's label ([`crate::label`]): a short line to tell a shared run apart.
pub const GRANT_LABEL_MAX_BYTES: usize = 128;
/// How far from now, before or after, a `wait_for_run`'s `sharedAfter` may be, in milliseconds
/// (7 days): a reader passes back an instant runread gave it minutes or hours before; an instant
/// further off is a mistake, refused rather than read as "every share since" or "none yet".
pub const WAIT_SHARED_AFTER_SPAN_MS: i64 = 7 * 24 * 3_600_000;
/// Milliseconds between two looks at an SQLite store's `data_version` while a wait listens: how
/// late a wait hears a commit another process made to the same file (`runread run` beside
/// `runread serve`), at most. Each look is one pragma on a connection of its own.
pub const SQLITE_COMMIT_POLL_MS: u64 = 20;
/// The same while no wait listens: the thread only checks whether one does.
pub const SQLITE_COMMIT_IDLE_POLL_MS: u64 = 500;
/// Changes held for waits that have not yet looked at them; one that falls further behind
/// re-checks as if everything changed.
pub const CHANGE_FEED_CAPACITY: usize = 1_024;

/// Seconds a task handle (the Tasks extension, for `read_final_answer` on a run that has not
/// settled) may be polled; then `invalid_task`, and the client calls the tool again.
pub const TASK_TTL_SECS: i64 = 3_600;
/// The polling interval a task suggests (`pollIntervalMs`).
pub const TASK_POLL_INTERVAL_MS: u64 = 2_000;
/// Most bytes of a task handle runread issues or reads (it carries the call's exact arguments).
pub const TASK_HANDLE_MAX_BYTES: usize = 4_096;

const _: () = {
    assert!(OAUTH_PENDING_REQUESTS_PER_CLIENT_MAX <= OAUTH_PENDING_REQUESTS_MAX);
    assert!(OAUTH_UNAPPROVED_CLIENTS_PER_REGISTRANT_MAX <= OAUTH_UNAPPROVED_CLIENTS_MAX);
    assert!(OAUTH_UNAPPROVED_CLIENTS_MAX <= OAUTH_CLIENTS_MAX);
};

const _: () = {
    assert!(WAIT_DEFAULT_SECONDS <= WAIT_MAX_SECONDS);
    // A task handle carries any arguments a call's input may hold, encoded.
    assert!(TASK_HANDLE_MAX_BYTES >= 2 * (CURSOR_MAX_BYTES + 6 * TARGET_FIELD_MAX_BYTES));
    assert!(WAITS_PER_READER_MAX <= WAITS_MAX);
    // Waiting calls never take every connection: other calls still get in.
    assert!(WAITS_MAX + 2 * WAITS_PER_READER_MAX <= HTTP_CONNECTIONS_MAX);
    // A wait re-checks at least once before its shortest timeout ends.
    assert!(WAIT_RECHECK_MS < 1_000 * WAIT_DEFAULT_SECONDS);
};

// Access requests (`request_access` / `wait_for_access`).
/// Most requests one reader has waiting for the owner at once; one more is refused
/// `requests_pending` (an identical request still waiting is answered with its own id instead).
pub const ACCESS_REQUESTS_PENDING_PER_READER_MAX: u64 = 4;
/// Most requests waiting for the owner at once, every reader together; one more is refused
/// `requests_pending`: a reader (or several) cannot bury the owner's Requests page.
pub const ACCESS_REQUESTS_PENDING_MAX: u64 = 32;
/// How long a request waits for the owner's decision (10 minutes); then it is `expired`.
pub const ACCESS_REQUEST_TTL_MS: i64 = 10 * 60 * 1_000;
/// The shortest and longest wait the owner may set instead (`serve --request-expiry-seconds`).
pub const ACCESS_REQUEST_TTL_MIN_SECONDS: u64 = 5;
pub const ACCESS_REQUEST_TTL_MAX_SECONDS: u64 = 3_600;
/// How long a decided or expired request is kept, so that a reader's `wait_for_access` still
/// finds its decision (a day); then it is purged and answers `expired`.
pub const ACCESS_REQUEST_KEPT_MS: i64 = 24 * 3_600 * 1_000;
/// Most bytes of an access request id a reader or the owner may send back (runread makes `q-`
/// and 16 hex digits).
pub const ACCESS_REQUEST_ID_MAX_BYTES: usize = 64;
/// Most bytes of a request's `reason`: the reader's own text, shown to the owner quoted.
pub const ACCESS_REASON_MAX_BYTES: usize = 512;
/// Most bytes of a request's `workspace` (a workspace's name).
pub const ACCESS_WORKSPACE_MAX_BYTES: usize = 128;
/// Most of the newest matching runs a request may ask for (`latest`).
pub const ACCESS_LATEST_MAX: u32 = 5;
/// Least and most seconds of access a request may ask for (then capped by the owner's grant
/// lifetime), and what it asks without saying.
pub const ACCESS_DURATION_MIN_SECONDS: u64 = 60;
pub const ACCESS_DURATION_MAX_SECONDS: u64 = 7 * 24 * 3_600;
pub const ACCESS_DURATION_DEFAULT_SECONDS: u64 = 3_600;
const _: () = {
    assert!(ACCESS_REQUESTS_PENDING_PER_READER_MAX <= ACCESS_REQUESTS_PENDING_MAX);
    assert!(ACCESS_REQUEST_TTL_MS < ACCESS_REQUEST_KEPT_MS);
    assert!(ACCESS_REQUEST_TTL_MAX_SECONDS as i64 * 1_000 < ACCESS_REQUEST_KEPT_MS);
    assert!(ACCESS_REQUEST_TTL_MIN_SECONDS as i64 * 1_000 <= ACCESS_REQUEST_TTL_MS);
    assert!(ACCESS_REQUEST_TTL_MS <= ACCESS_REQUEST_TTL_MAX_SECONDS as i64 * 1_000);
    assert!(ACCESS_DURATION_MIN_SECONDS <= ACCESS_DURATION_DEFAULT_SECONDS);
    assert!(ACCESS_DURATION_DEFAULT_SECONDS <= ACCESS_DURATION_MAX_SECONDS);
    assert!(ACCESS_DURATION_MAX_SECONDS <= GRANT_MAX_LIFETIME_SECS);
};

/// Most bytes of lines one run's snapshot holds (the sealed copy of a shared run's evidence): a
/// run whose granted features would need more is granted without one, and says so.
pub const SNAPSHOT_RUN_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Most bytes of lines every snapshot of one store holds together: a grant that would pass it is
/// made without a snapshot, and says so.
pub const SNAPSHOT_STORE_MAX_BYTES: u64 = 1024 * 1024 * 1024;
const _: () = assert!(SNAPSHOT_RUN_MAX_BYTES <= SNAPSHOT_STORE_MAX_BYTES);

/// Most bytes every kept run of one store holds together (`runread keep`), unless the owner set
/// another bound (`runread keep limit`): a keep that would pass it is refused and says so; no kept
/// run is ever dropped to make room.
pub const KEPT_STORE_MAX_BYTES_DEFAULT: u64 = 2 * 1024 * 1024 * 1024;
/// Least and most the owner may set the kept runs' bound to.
pub const KEPT_STORE_LIMIT_MIN_BYTES: u64 = 1024 * 1024;
pub const KEPT_STORE_LIMIT_MAX_BYTES: u64 = 1024 * 1024 * 1024 * 1024;
/// Most keep rules (`runread keep --workspace`) one store holds.
pub const KEEP_RULES_MAX: u64 = 64;
const _: () = {
    assert!(KEPT_STORE_LIMIT_MIN_BYTES <= KEPT_STORE_MAX_BYTES_DEFAULT);
    assert!(KEPT_STORE_MAX_BYTES_DEFAULT <= KEPT_STORE_LIMIT_MAX_BYTES);
    assert!(SNAPSHOT_RUN_MAX_BYTES <= KEPT_STORE_MAX_BYTES_DEFAULT);
};

// The gate's log over time (`runread_gate::log`): retention, seals, prunes.
/// Days start records and receipts are kept by default (`runread audit retention --days`).
pub const AUDIT_RETENTION_DAYS_DEFAULT: u32 = 90;
/// The shortest and longest retention period the owner may set, in days.
pub const AUDIT_RETENTION_DAYS_MIN: u32 = 1;
pub const AUDIT_RETENTION_DAYS_MAX: u32 = 3_650;
/// Start records kept at most by default, whatever their age (`--calls`): the oldest sealed
/// ones beyond it are removed. About 1.4 GB of store at the measured bytes per call
/// (docs/store.md).
pub const AUDIT_RETENTION_CALLS_DEFAULT: u64 = 1_000_000;
/// The least and most start records the owner may set to keep.
pub const AUDIT_RETENTION_CALLS_MIN: u64 = 100_000;
pub const AUDIT_RETENTION_CALLS_MAX: u64 = 1_000_000_000;
/// Start records one seal covers (and those made in its last millisecond besides).
pub const AUDIT_SEAL_RECORDS_MAX: u64 = 10_000;
/// Most start records made in one millisecond that a seal reads past its bound: more is refused
/// (the bound on calls per reader makes it unreachable).
pub const AUDIT_SEAL_TIES_MAX: u64 = 10_000;
/// A start record is sealed once it is this old: no receipt comes later (a call ends within its
/// deadline; a task's answer reuses its start record for at most [`TASK_TTL_SECS`]).
pub const AUDIT_SEAL_AFTER_MS: i64 = 2 * TASK_TTL_SECS * 1_000;
/// Seals and prunes one maintenance pass makes at most; the next pass goes on.
pub const AUDIT_PASS_CHECKPOINTS_MAX: usize = 200;
/// Gated calls one reader may make per minute (sustained; as many at once): one more is refused
/// `busy`. Bounds how fast one key grows the store (`serve --calls-per-minute`).
pub const READER_CALLS_PER_MINUTE_MAX: u32 = 1_200;

const _: () = {
    assert!(AUDIT_RETENTION_DAYS_MIN <= AUDIT_RETENTION_DAYS_DEFAULT);
    assert!(AUDIT_RETENTION_DAYS_DEFAULT <= AUDIT_RETENTION_DAYS_MAX);
    assert!(AUDIT_RETENTION_CALLS_MIN <= AUDIT_RETENTION_CALLS_DEFAULT);
    assert!(AUDIT_RETENTION_CALLS_DEFAULT <= AUDIT_RETENTION_CALLS_MAX);
    // The unsealed tail a pass cannot prune stays well below the bound.
    assert!(AUDIT_SEAL_RECORDS_MAX < AUDIT_RETENTION_CALLS_MIN);
    assert!(AUDIT_SEAL_AFTER_MS > TASK_TTL_SECS * 1_000);
};
