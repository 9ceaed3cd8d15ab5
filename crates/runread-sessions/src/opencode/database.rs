//! OpenCode's database as evidence: its sessions named, listed and opened as [`RecordLog`]s.
//!
//! **Read-only, never blocking the agent.** A connection opened `SQLITE_OPEN_READONLY` (and
//! `query_only`) never writes the database and never checkpoints its WAL; in WAL mode it reads
//! the frames OpenCode committed without taking a lock OpenCode waits on, and it waits at most
//! [`DATABASE_BUSY_TIMEOUT_MS`] for one OpenCode holds (a checkpoint that truncates the WAL), then
//! refuses ([`ReadError::Io`]). It never copies the database anywhere: a database runread cannot
//! read in place (its `-shm` absent in a folder it cannot write, a lock held) is refused.
//!
//! **Link-safe.** SQLite opens the database and its `-wal` and `-shm` by name; before and after
//! the open, each of them that exists must be a regular file with one link, and the database the
//! same object (device, inode) on both sides; `SQLITE_OPEN_NOFOLLOW` refuses a link in the
//! database's own name.
//!
//! **A session is named** `<database>#<session id>` (one name per session, as a file's path is
//! for the other agents). Its evidence is its event log: the rows of `event` whose `aggregate_id`
//! is the session id, in `seq` order (0, 1, 2, …; appended, never updated), each the full object
//! after one change. Record `seq` is read as the line
//! `{"type":<the row's type>,"data":<the row's data, as stored>}`: its digest at ingest is checked
//! when served, so what a reader gets is exactly what OpenCode stored.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::file::{FileIdentity, ReadError, Record, RecordLog};

/// How long a read waits for a lock OpenCode holds on its database before it is refused.
pub const DATABASE_BUSY_TIMEOUT_MS: u64 = 250;

/// Most OpenCode databases (`opencode*.db`) read in one folder.
pub const DATABASES_PER_FOLDER_MAX: usize = 8;

/// Most sessions listed from one database in one pass (the newest kept when there are more).
pub const SESSIONS_PER_DATABASE_MAX: u32 = 100_000;

/// Most open connections kept for later passes (one per database).
pub const CONNECTIONS_KEPT_MAX: usize = 4;

/// The page cache of one connection, in KiB (SQLite's default is 2 MiB): a pass reads each
/// session's new records once, so a large cache would only hold memory while idle.
const PAGE_CACHE_KIB: i64 = 512;

/// What separates a database's path from a session id in a session's name.
const SESSION_MARK: char = '#';

/// The name of session `id` of the database at `db` (the name [`crate::open_session`] opens);
/// `None` for what is not a session id, or a database whose path holds the mark.
pub fn session_name_of(db: &Path, id: &str) -> Option<PathBuf> {
    let marked = db.as_os_str().to_string_lossy().contains(SESSION_MARK);
    (is_session_id(id) && !marked).then(|| session_name(db, id))
}

/// The name of session `id` of the database at `db`.
pub(crate) fn session_name(db: &Path, id: &str) -> PathBuf {
    let mut name = OsString::from(db.as_os_str());
    name.push(SESSION_MARK.to_string());
    name.push(id);
    PathBuf::from(name)
}

/// The database and the session id a session's name holds; `None` for any other path.
pub(crate) fn split_name(name: &Path) -> Option<(PathBuf, &str)> {
    let (db, id) = name.to_str()?.rsplit_once(SESSION_MARK)?;
    is_session_id(id).then(|| (PathBuf::from(db), id))
}

/// OpenCode's session ids: `ses_` and 26 letters and digits (up to 64 taken).
pub fn is_session_id(id: &str) -> bool {
    id.len() <= 64
        && id
            .strip_prefix("ses_")
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// OpenCode's databases in `dir`: `opencode.db`, and a channel's `opencode-<channel>.db`.
pub(crate) fn databases(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| {
                n.starts_with("opencode") && n.ends_with(".db") && !n.contains(SESSION_MARK)
            }) && e.file_type().is_ok_and(|t| t.is_file())
        })
        .map(|e| e.path())
        .take(DATABASES_PER_FOLDER_MAX)
        .collect();
    found.sort();
    found
}

/// The names of the top-level sessions (not a subagent's) of every OpenCode database in `dir`,
/// in name order. A database that cannot be read lists none.
pub(crate) fn session_names(dir: &Path) -> Vec<PathBuf> {
    let mut names = Vec::new();
    for db in databases(dir) {
        let Ok(open) = Database::shared(&db) else {
            continue;
        };
        let ids = open.top_level_sessions().unwrap_or_default();
        names.extend(ids.iter().map(|id| session_name(&db, id)));
    }
    names.sort();
    names
}

/// A read-only connection to an OpenCode database, opened link-safely.
#[derive(Debug)]
pub(crate) struct Database {
    connection: Mutex<Connection>,
    path: PathBuf,
    /// The database file's device and inode when opened.
    object: FileIdentity,
}

/// The connections kept open between reads, one per database: each read of a session (its
/// identity at every pass, its records when served) would otherwise open the database again.
/// A kept connection is used only while its database is still the same file object.
static KEPT: Mutex<Vec<Arc<Database>>> = Mutex::new(Vec::new());

impl Database {
    /// The kept connection to the database at `path`, or a new one (then kept, the oldest
    /// dropped beyond [`CONNECTIONS_KEPT_MAX`]).
    pub(crate) fn shared(path: &Path) -> Result<Arc<Database>, ReadError> {
        let now = companions_safe(path)?;
        let mut kept = KEPT.lock().map_err(|_| ReadError::Io)?;
        kept.retain(|d| d.path != path || d.object.same_object(&now));
        if let Some(found) = kept.iter().find(|d| d.path == path) {
            return Ok(found.clone());
        }
        let opened = Arc::new(Database::open(path)?);
        if kept.len() >= CONNECTIONS_KEPT_MAX {
            kept.remove(0);
        }
        kept.push(opened.clone());
        Ok(opened)
    }

    fn open(path: &Path) -> Result<Database, ReadError> {
        let before = companions_safe(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let connection = Connection::open_with_flags(path, flags).map_err(|_| ReadError::Io)?;
        connection
            .busy_timeout(Duration::from_millis(DATABASE_BUSY_TIMEOUT_MS))
            .map_err(|_| ReadError::Io)?;
        connection
            .pragma_update(None, "query_only", true)
            .map_err(|_| ReadError::Io)?;
        connection
            .pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
            .map_err(|_| ReadError::Io)?;
        let after = companions_safe(path)?;
        if !after.same_object(&before) {
            return Err(ReadError::ChangedDuringRead);
        }
        Ok(Database {
            connection: Mutex::new(connection),
            path: path.to_path_buf(),
            object: before,
        })
    }

    /// Runs `f` on the connection.
    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, ReadError> {
        let connection = self.connection.lock().map_err(|_| ReadError::Io)?;
        f(&connection).map_err(|_| ReadError::Io)
    }

    fn top_level_sessions(&self) -> Result<Vec<String>, ReadError> {
        self.with(|c| {
            let mut statement = c.prepare(
                "SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_created DESC LIMIT ?1",
            )?;
            let ids = statement
                .query_map(params![SESSIONS_PER_DATABASE_MAX], |row| row.get::<_, String>(0))?
                .filter_map(Result::ok)
                .filter(|id| is_session_id(id))
                .collect();
            Ok(ids)
        })
    }

    /// The identity session `id`'s log has now: the database object; the position past its
    /// last record as its size; when OpenCode last changed the session or one of its messages
    /// as its modification time (what the settle window waits on); no status-change time.
    fn identity_of(&self, id: &str) -> Result<FileIdentity, ReadError> {
        let now = companions_safe(&self.path)?;
        if !now.same_object(&self.object) {
            return Err(ReadError::ChangedDuringRead);
        }
        self.log_identity(id)
    }

    /// [`Database::identity_of`] right after [`Database::shared`] checked the files: the log's
    /// part only (a pass asks it of every session: the files are not looked at twice).
    fn log_identity(&self, id: &str) -> Result<FileIdentity, ReadError> {
        let (last_seq, session_ms, message_ms): (Option<i64>, Option<i64>, Option<i64>) = self
            .with(|c| {
                c.query_row(
                    "SELECT (SELECT max(seq) FROM event WHERE aggregate_id = ?1), \
                     (SELECT time_updated FROM session WHERE id = ?1), \
                     (SELECT max(time_updated) FROM message WHERE session_id = ?1)",
                    params![id],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
            })?;
        let size = last_seq
            .and_then(|seq| u64::try_from(seq).ok())
            .ok_or(ReadError::Missing)?
            .saturating_add(1);
        let changed_ms = session_ms.max(message_ms).unwrap_or(0);
        Ok(FileIdentity {
            dev: self.object.dev,
            ino: self.object.ino,
            nlink: 1,
            size,
            mtime_ns: changed_ms.saturating_mul(1_000_000),
            ctime_ns: 0,
        })
    }

    /// When session `id` was last changed (milliseconds since the epoch), if it is a child of
    /// session `parent`.
    pub(crate) fn child_updated_ms(&self, id: &str, parent: &str) -> Option<i64> {
        self.with(|c| {
            c.query_row(
                "SELECT time_updated FROM session WHERE id = ?1 AND parent_id = ?2",
                params![id, parent],
                |row| row.get(0),
            )
            .optional()
        })
        .ok()
        .flatten()
    }
}

/// The database file at `path` as a regular file with one link (its identity), and its `-wal`
/// and `-shm`, where they exist, as well.
fn companions_safe(path: &Path) -> Result<FileIdentity, ReadError> {
    let db = crate::file::identity(path)?;
    if db.nlink != 1 {
        return Err(ReadError::HardLinked);
    }
    for suffix in ["-wal", "-shm"] {
        let mut companion = OsString::from(path.as_os_str());
        companion.push(suffix);
        match crate::file::identity(Path::new(&companion)) {
            Ok(i) if i.nlink != 1 => return Err(ReadError::HardLinked),
            Ok(_) | Err(ReadError::Missing) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(db)
}

/// One session's event log in an open [`Database`].
#[derive(Debug)]
pub(crate) struct EventLog {
    database: Arc<Database>,
    session_id: String,
    opened: FileIdentity,
}

impl EventLog {
    /// The log of the session `name` names.
    pub(crate) fn open(name: &Path) -> Result<EventLog, ReadError> {
        let (db, id) = split_name(name).ok_or(ReadError::NotRegular)?;
        let database = Database::shared(&db)?;
        let opened = database.log_identity(id)?;
        Ok(EventLog {
            session_id: id.to_owned(),
            database,
            opened,
        })
    }
}

/// The identity of the session `name` names, now.
pub(crate) fn identity(name: &Path) -> Result<FileIdentity, ReadError> {
    let (db, id) = split_name(name).ok_or(ReadError::NotRegular)?;
    Database::shared(&db)?.log_identity(id)
}

/// `{"type":…,"data":…}`'s bytes around a type of `type_json_len` and data of `data_len`.
const LINE_FRAME_BYTES: u64 = r#"{"type":,"data":}"#.len() as u64;

impl RecordLog for EventLog {
    fn identity(&self) -> FileIdentity {
        self.opened
    }

    fn records(&self, from: u64, max_line: usize, batch: usize) -> Result<Vec<Record>, ReadError> {
        let end = i64::try_from(self.opened.size).map_err(|_| ReadError::Io)?;
        let from = i64::try_from(from).map_err(|_| ReadError::Truncated)?;
        let batch = i64::try_from(batch).unwrap_or(i64::MAX);
        let max_data = i64::try_from(max_line).unwrap_or(i64::MAX);
        // The data is fetched only when the line can be within the bound; its length always.
        let rows: Vec<(i64, String, i64, Option<String>)> = self.database.with(|c| {
            let mut statement = c.prepare_cached(
                "SELECT seq, type, octet_length(data), \
                 CASE WHEN octet_length(data) + octet_length(type) <= ?4 THEN data END \
                 FROM event WHERE aggregate_id = ?1 AND seq >= ?2 AND seq < ?3 \
                 ORDER BY seq LIMIT ?5",
            )?;
            let rows = statement
                .query_map(
                    params![self.session_id, from, end, max_data, batch],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })?;
        rows.into_iter()
            .map(|(seq, kind, data_len, data)| {
                let position = u64::try_from(seq).map_err(|_| ReadError::Io)?;
                Ok(Record {
                    position,
                    line: line_of(&kind, data_len, data.as_deref(), max_line),
                })
            })
            .collect()
    }

    fn current(&self) -> Result<FileIdentity, ReadError> {
        self.database.identity_of(&self.session_id)
    }
}

/// The line of one event (see the module's doc), or its length when over `max_line`.
fn line_of(kind: &str, data_len: i64, data: Option<&str>, max_line: usize) -> Result<Vec<u8>, u64> {
    let kind = serde_json::to_string(kind).unwrap_or_default();
    let len = LINE_FRAME_BYTES
        .saturating_add(kind.len() as u64)
        .saturating_add(u64::try_from(data_len).unwrap_or(u64::MAX));
    match data {
        Some(data) if len <= max_line as u64 => {
            let mut line = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
            line.extend_from_slice(br#"{"type":"#);
            line.extend_from_slice(kind.as_bytes());
            line.extend_from_slice(br#","data":"#);
            line.extend_from_slice(data.as_bytes());
            line.push(b'}');
            Ok(line)
        }
        _ => Err(len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Agent;
    use runread_core::limits::EVIDENCE_LINE_MAX_BYTES;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/opencode/1.18.33")
            .join(name)
            .join("sessions")
    }

    /// A copy of fixture `name`'s database files in a folder of its own (a read-only open makes
    /// the `-shm` beside the database).
    fn placed(name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        for f in std::fs::read_dir(fixture(name)).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
        }
        let db = dir.path().join("opencode.db");
        (dir, db)
    }

    fn companion(db: &Path, suffix: &str) -> PathBuf {
        let mut p = OsString::from(db.as_os_str());
        p.push(suffix);
        PathBuf::from(p)
    }

    fn digest(path: &Path) -> String {
        runread_core::sha256_hex(&std::fs::read(path).unwrap())
    }

    /// Every line of the session `name` names, as (position, type).
    fn lines_of(name: &Path) -> Vec<(u64, String)> {
        let file = crate::open_session(Agent::OpenCode, name, None).unwrap();
        let mut lines = file.lines(0, EVIDENCE_LINE_MAX_BYTES);
        let mut out = Vec::new();
        while let Some(line) = lines.next().unwrap() {
            let crate::file::Line::Complete { offset, bytes } = line else {
                panic!("oversize");
            };
            let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            assert!(v["data"].is_object(), "{v}");
            out.push((offset, v["type"].as_str().unwrap().to_owned()));
        }
        assert_eq!(lines.consumed(), file.identity().size);
        out
    }

    #[test]
    fn a_session_is_read_from_the_frames_committed_to_the_wal_and_nothing_is_written() {
        let (dir, db) = placed("tool-then-answer");
        let wal = companion(&db, "-wal");
        assert_eq!(
            std::fs::metadata(&db).unwrap().len(),
            4096,
            "the data is in the WAL"
        );
        let (db_before, wal_before) = (digest(&db), digest(&wal));
        let names = session_names(dir.path());
        assert_eq!(names.len(), 1, "{names:?}");
        let lines = lines_of(&names[0]);
        assert_eq!(lines[0], (0, "session.created.1".to_owned()));
        let positions: Vec<u64> = lines.iter().map(|l| l.0).collect();
        assert_eq!(positions, (0..lines.len() as u64).collect::<Vec<_>>());
        assert!(lines.iter().any(|l| l.1 == "message.part.updated.1"));
        assert_eq!(digest(&db), db_before);
        assert_eq!(digest(&wal), wal_before);
    }

    #[test]
    fn only_top_level_sessions_are_named_and_a_name_splits_back() {
        let (dir, db) = placed("subagent");
        let names = session_names(dir.path());
        assert_eq!(
            names.len(),
            1,
            "the subagent's session is a child: {names:?}"
        );
        let (back, id) = split_name(&names[0]).unwrap();
        assert_eq!(back, db);
        assert!(is_session_id(id));
        for not_a_name in [
            "/x/opencode.db",
            "/x/opencode.db#",
            "/x/opencode.db#ses_a/b",
        ] {
            assert_eq!(split_name(Path::new(not_a_name)), None, "{not_a_name}");
        }
    }

    #[test]
    fn a_session_that_grew_keeps_what_was_read_and_shows_its_new_size() {
        let (dir, db) = placed("continue-unicode");
        let name = session_names(dir.path()).remove(0);
        let (_, id) = split_name(&name).unwrap();
        let before = identity(&name).unwrap();
        let file = crate::open_session(Agent::OpenCode, &name, Some(&before)).unwrap();
        let writer = Connection::open(&db).unwrap();
        writer
            .execute(
                "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES ('evt_x', ?1, ?2, \
                 'session.updated.1', '{}')",
                params![id, i64::try_from(before.size).unwrap()],
            )
            .unwrap();
        let now = file.check_grown_only().unwrap();
        assert_eq!(now.size, before.size + 1);
        assert!(now.same_object(&before));
        assert_eq!(file.check_unchanged(), Err(ReadError::ChangedDuringRead));
        // What the open log reads ends where it ended when opened.
        let mut lines = file.lines(0, EVIDENCE_LINE_MAX_BYTES);
        let mut n = 0;
        while lines.next().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, before.size);
    }

    #[test]
    fn a_record_is_whole_at_the_bound_and_only_its_length_past_it() {
        let (dir, _db) = placed("length-cutoff");
        let name = session_names(dir.path()).remove(0);
        let log = EventLog::open(&name).unwrap();
        let whole = log
            .records(0, EVIDENCE_LINE_MAX_BYTES, 1)
            .unwrap()
            .remove(0);
        let bytes = whole.line.unwrap();
        let at_bound = log.records(0, bytes.len(), 1).unwrap().remove(0);
        assert_eq!(at_bound.line.as_deref(), Ok(&bytes[..]));
        let over = log.records(0, bytes.len() - 1, 1).unwrap().remove(0);
        assert_eq!(over.line, Err(bytes.len() as u64));
        let file = crate::open_session(Agent::OpenCode, &name, None).unwrap();
        assert_eq!(file.read_at(0, bytes.len()).unwrap(), bytes);
        assert_eq!(file.read_at(0, bytes.len() - 1), Err(ReadError::Truncated));
    }

    #[test]
    fn a_linked_database_or_companion_is_refused() {
        let (dir, db) = placed("length-cutoff");
        let name = session_names(dir.path()).remove(0);
        let (_, id) = split_name(&name).unwrap();
        let id = id.to_owned();
        let other = tempfile::tempdir().unwrap();
        let link = other.path().join("opencode.db");
        std::os::unix::fs::symlink(&db, &link).unwrap();
        assert!(session_names(other.path()).is_empty());
        let linked_name = session_name(&link, &id);
        assert_eq!(identity(&linked_name).unwrap_err(), ReadError::NotRegular);
        let wal = companion(&db, "-wal");
        std::fs::write(&wal, b"").unwrap();
        std::fs::hard_link(&wal, dir.path().join("elsewhere")).unwrap();
        let fresh = tempfile::tempdir().unwrap();
        let moved = fresh.path().join("opencode.db");
        std::fs::copy(&db, &moved).unwrap();
        std::fs::hard_link(&wal, companion(&moved, "-wal")).unwrap();
        assert_eq!(
            identity(&session_name(&moved, &id)).unwrap_err(),
            ReadError::HardLinked
        );
    }

    #[test]
    fn a_corrupt_or_locked_database_is_refused_with_a_fixed_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        std::fs::write(&db, b"not a database, secret sk-ant-api03-xyz").unwrap();
        assert!(session_names(dir.path()).is_empty());
        let name = session_name(&db, "ses_abc");
        let e = identity(&name).unwrap_err();
        assert_eq!(e, ReadError::Io);
        assert_eq!(e.to_string(), "could not be read");

        let (dir, db) = placed("length-cutoff");
        let name = session_names(dir.path()).remove(0);
        let locker = Connection::open(&db).unwrap();
        locker
            .pragma_update(None, "locking_mode", "EXCLUSIVE")
            .unwrap();
        locker
            .execute_batch("BEGIN EXCLUSIVE; UPDATE session SET title = title; COMMIT;")
            .unwrap();
        // The kept connection waits at most DATABASE_BUSY_TIMEOUT_MS, then refuses.
        let e = identity(&name).unwrap_err();
        assert_eq!(e, ReadError::Io);
        drop(locker);
        assert!(identity(&name).is_ok());
    }

    #[test]
    fn at_most_so_many_databases_are_read_in_a_folder() {
        for n in [DATABASES_PER_FOLDER_MAX, DATABASES_PER_FOLDER_MAX + 1] {
            let dir = tempfile::tempdir().unwrap();
            for i in 0..n {
                std::fs::write(dir.path().join(format!("opencode-{i}.db")), b"").unwrap();
            }
            std::fs::write(dir.path().join("other.db"), b"").unwrap();
            assert_eq!(databases(dir.path()).len(), n.min(DATABASES_PER_FOLDER_MAX));
        }
    }
}
