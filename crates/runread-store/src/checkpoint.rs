//! Checkpoints of the SQLite store's write-ahead log, off the writer's path.
//!
//! SQLite's own auto-checkpoint runs inside the commit that crossed 1,000 log pages, on the
//! connection that committed: that writer waits while the log is synced, copied back into the
//! database file and the file synced. A home's first ingest made about 200 of them
//! (bench/PROFILES.md). Here the writer only asks (its WAL hook, `Checkpointer::on_commit`):
//! a thread of its own, with a connection of its own, copies the log back while the writer goes
//! on. The log stays bounded all the same: past [`CHECKPOINT_INLINE_PAGES`], or when the thread is
//! not there (not started, could not start, stopped, failed), the writer checkpoints itself,
//! exactly as SQLite would have. The rule is [`after_commit`].
//!
//! Only where the copying happens changes, never what is durable: a commit is durable when its
//! log frames are synced, before any checkpoint; a checkpoint syncs the log again before it copies
//! and the file before the log may be reused.

use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use rusqlite::hooks::Wal;
use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, ErrorCode, MAIN_DB};

/// Log pages not yet copied back at which a commit asks the checkpointer to copy them: SQLite's
/// own auto-checkpoint threshold (about 4 MiB of 4 KiB pages). Counted from what the last
/// checkpoint copied, not from the log's start, so that a log that cannot start again while
/// commits keep coming is copied in steps of this size, not once per commit.
pub const CHECKPOINT_AFTER_PAGES: c_int = 1_000;

/// Log pages at which the committing writer checkpoints itself, as SQLite would have: the bound
/// on the log when the checkpointer falls behind. It does when commits never pause: a log is only
/// reused from its start once a checkpoint has copied all of it, and a checkpoint running beside
/// the writer never catches the last commit. A checkpoint by the writer, which no commit can
/// overtake, copies the rest (little, the thread has copied the bulk) and lets the next commit
/// start the log again. When the thread is mid-checkpoint the writer waits for it to finish
/// rather than be turned away busy (SQLite allows one checkpoint at a time per log, and a passive
/// one does not wait): turned away, it would let the log grow past this bound by a commit for
/// every checkpoint the thread is still running. About 32 MiB of 4 KiB pages.
pub const CHECKPOINT_INLINE_PAGES: c_int = 8_000;

/// What a commit that leaves `pages` in the log, `copied` of them already copied back, does
/// about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterCommit {
    /// Nothing: the log is short.
    Nothing,
    /// Asks the checkpointer thread (or, when there is none, checkpoints as [`Self::Inline`]).
    Ask,
    /// Checkpoints on the committing connection, before the commit returns.
    Inline,
}

/// The rule, in one place: see [`CHECKPOINT_AFTER_PAGES`] and [`CHECKPOINT_INLINE_PAGES`].
pub fn after_commit(pages: c_int, copied: c_int) -> AfterCommit {
    if pages >= CHECKPOINT_INLINE_PAGES {
        AfterCommit::Inline
    } else if pages.saturating_sub(copied) >= CHECKPOINT_AFTER_PAGES {
        AfterCommit::Ask
    } else {
        AfterCommit::Nothing
    }
}

/// Checkpoints made so far, by whom, and the longest log a commit left (for tests and
/// measurement).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Checkpoints the checkpointer thread ran.
    pub background: u64,
    /// Checkpoints a committing writer ran itself.
    pub inline: u64,
    /// The most log pages any commit left behind it.
    pub largest_log_pages: i64,
    /// The log pages the last commit left behind it.
    pub last_log_pages: i64,
    /// Logs emptied after a deletion ([`crate::sqlite::SqliteStore::scrub`]).
    pub scrubs: u64,
}

#[derive(Default)]
enum Thread {
    #[default]
    NotStarted,
    Running(JoinHandle<()>),
    /// Could not start, failed, or stopped: commits past the threshold checkpoint inline.
    Gone,
}

#[derive(Default)]
struct State {
    thread: Thread,
    /// A commit asked for a checkpoint the thread has not yet begun.
    wanted: bool,
    stop: bool,
}

/// Most scrubs the thread attempts for one request before leaving it to the next commit.
const SCRUB_ATTEMPTS: u32 = 5;
/// Pause between the thread's scrub attempts, in milliseconds.
const SCRUB_RETRY_MS: u64 = 200;

/// The store's checkpointer: started by the first commit that asks for it, stopped and joined
/// when the store is dropped.
pub(crate) struct Checkpointer {
    path: PathBuf,
    state: Mutex<State>,
    wake: Condvar,
    background: AtomicU64,
    inline: AtomicU64,
    largest_log_pages: AtomicI64,
    last_log_pages: AtomicI64,
    /// Log frames the last checkpoint (by either) had copied back.
    copied: AtomicI32,
    /// Held by whichever of this store's connections is checkpointing: the writer at the bound
    /// waits here for the thread instead of being refused by SQLite's checkpoint lock.
    checkpointing: Mutex<()>,
    /// A deletion wants the log emptied (a TRUNCATE checkpoint) and it has not been yet.
    scrub_wanted: std::sync::atomic::AtomicBool,
    /// Logs emptied so far (for tests and measurement).
    scrubs: AtomicU64,
}

impl Checkpointer {
    pub(crate) fn new(path: PathBuf) -> Arc<Self> {
        Arc::new(Checkpointer {
            path,
            state: Mutex::default(),
            wake: Condvar::new(),
            background: AtomicU64::new(0),
            inline: AtomicU64::new(0),
            largest_log_pages: AtomicI64::new(0),
            last_log_pages: AtomicI64::new(0),
            copied: AtomicI32::new(0),
            checkpointing: Mutex::new(()),
            scrub_wanted: std::sync::atomic::AtomicBool::new(false),
            scrubs: AtomicU64::new(0),
        })
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// A deletion wants the log emptied.
    pub(crate) fn want_scrub(&self) {
        self.scrub_wanted.store(true, Ordering::Release);
    }

    /// Logs emptied so far.
    pub(crate) fn scrubs(&self) -> u64 {
        self.scrubs.load(Ordering::Relaxed)
    }

    /// Empties the log on `conn` if a deletion wants it: a TRUNCATE checkpoint (the log copied
    /// into the database, then cut to nothing), which waits for readers within `conn`'s busy
    /// timeout. True when nothing is wanted any more.
    pub(crate) fn scrub_on(&self, conn: &Connection) -> bool {
        if !self.scrub_wanted.swap(false, Ordering::AcqRel) {
            return true;
        }
        let _one_at_a_time = self.hold_checkpoint();
        match conn.wal_checkpoint_v2(Some(MAIN_DB), CheckpointMode::TRUNCATE) {
            Ok((log, copied)) if log == 0 || (log >= 0 && copied == log) => {
                self.copied.store(0, Ordering::Relaxed);
                self.scrubs.fetch_add(1, Ordering::Relaxed);
                true
            }
            Ok(_) | Err(_) => {
                self.scrub_wanted.store(true, Ordering::Release);
                false
            }
        }
    }

    /// Makes `this` the writer's WAL hook, in place of SQLite's auto-checkpoint.
    pub(crate) fn install(this: &Arc<Self>, writer: &mut Connection) -> rusqlite::Result<()> {
        let this = Arc::clone(this);
        writer.wal_hook(Some(move |wal: &mut Wal, pages: c_int| {
            this.on_commit(wal, pages);
            // Never an error: SQLite would report it as the commit's, and the commit is done.
            Ok(())
        }))
    }

    pub(crate) fn stats(&self) -> CheckpointStats {
        CheckpointStats {
            background: self.background.load(Ordering::Relaxed),
            inline: self.inline.load(Ordering::Relaxed),
            largest_log_pages: self.largest_log_pages.load(Ordering::Relaxed),
            last_log_pages: self.last_log_pages.load(Ordering::Relaxed),
            scrubs: self.scrubs(),
        }
    }

    /// The WAL hook: runs on the writer, after each commit, with the log's length in pages.
    fn on_commit(self: &Arc<Self>, wal: &mut Wal, pages: c_int) {
        self.largest_log_pages
            .fetch_max(i64::from(pages), Ordering::Relaxed);
        self.last_log_pages
            .store(i64::from(pages), Ordering::Relaxed);
        let mut copied = self.copied.load(Ordering::Relaxed);
        if copied > pages {
            // The log started again since: nothing of it is copied yet.
            copied = 0;
            self.copied.store(0, Ordering::Relaxed);
        }
        let wanted = if self.scrub_wanted.load(Ordering::Acquire) {
            AfterCommit::Ask
        } else {
            after_commit(pages, copied)
        };
        let asked = match wanted {
            AfterCommit::Nothing => return,
            AfterCommit::Ask => self.ask(),
            AfterCommit::Inline => false,
        };
        if !asked {
            self.inline.fetch_add(1, Ordering::Relaxed);
            let _one_at_a_time = self.hold_checkpoint();
            match wal.checkpoint_v2(CheckpointMode::PASSIVE) {
                Ok((_, copied)) => self.copied.store(copied, Ordering::Relaxed),
                // A connection of another process (another runread) is checkpointing.
                Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {}
                Err(e) => tracing::warn!(error = %e, "WAL checkpoint on the writer failed"),
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is three plain fields, each written whole: still consistent after a panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn hold_checkpoint(&self) -> MutexGuard<'_, ()> {
        // Guards no data: a panic while held leaves nothing inconsistent.
        self.checkpointing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks the thread for a checkpoint, starting it first if need be. `false` when there is no
    /// thread to ask: the caller checkpoints itself.
    fn ask(self: &Arc<Self>) -> bool {
        let mut state = self.lock();
        if state.stop {
            return false;
        }
        if matches!(state.thread, Thread::NotStarted) {
            let this = Arc::clone(self);
            state.thread = match std::thread::Builder::new()
                .name("runread-checkpoint".into())
                .spawn(move || this.run())
            {
                Ok(handle) => Thread::Running(handle),
                Err(e) => {
                    tracing::warn!(error = %e, "checkpoint thread not started; the writer checkpoints");
                    Thread::Gone
                }
            };
        }
        if !matches!(state.thread, Thread::Running(_)) {
            return false;
        }
        state.wanted = true;
        self.wake.notify_one();
        true
    }

    /// The thread: one PASSIVE checkpoint per wake-up (it neither waits for nor blocks the writer
    /// or a reader; frames a reader still needs are left for a later one).
    fn run(&self) {
        let conn = match self.open() {
            Ok(conn) => conn,
            Err(e) => return self.gone(&e),
        };
        loop {
            {
                let mut state = self.lock();
                while !state.wanted && !state.stop {
                    state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                if state.stop {
                    return;
                }
                state.wanted = false;
            }
            if self.scrub_wanted.load(Ordering::Acquire) {
                for _ in 0..SCRUB_ATTEMPTS {
                    if self.scrub_on(&conn) {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(SCRUB_RETRY_MS));
                }
                continue;
            }
            let checkpoint = {
                let _one_at_a_time = self.hold_checkpoint();
                conn.wal_checkpoint_v2(Some(MAIN_DB), CheckpointMode::PASSIVE)
            };
            match checkpoint {
                Ok((log, copied)) if log >= 0 => {
                    self.copied.store(copied, Ordering::Relaxed);
                    self.background.fetch_add(1, Ordering::Relaxed);
                }
                // The connection sees no log to copy: the writer does it, as SQLite would.
                Ok(_) => return self.gone(&"no write-ahead log on the checkpoint's connection"),
                Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {}
                // The writer takes over: SQLite's own behavior, whatever went wrong here.
                Err(e) => return self.gone(&e),
            }
        }
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let conn = open_existing(&self.path)?;
        // A connection opens the log with its first read transaction; until then a checkpoint
        // on it finds no log and copies nothing, successfully.
        let _: i64 = conn.pragma_query_value(None, "schema_version", |r| r.get(0))?;
        Ok(conn)
    }

    fn gone(&self, why: &dyn std::fmt::Display) {
        tracing::warn!(error = %why, "checkpoint thread stopped; the writer checkpoints");
        // Dropping the handle detaches this thread, which is ending.
        self.lock().thread = Thread::Gone;
    }

    /// Stops the thread and waits for it (at most the one checkpoint it may be running).
    pub(crate) fn stop(&self) {
        let handle = {
            let mut state = self.lock();
            state.stop = true;
            self.wake.notify_one();
            match std::mem::replace(&mut state.thread, Thread::Gone) {
                Thread::Running(handle) => Some(handle),
                _ => None,
            }
        };
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

/// A further connection to the store's file (a reader, the checkpointer). Never creates: a store
/// file that vanished is an error, not a new empty store.
pub(crate) fn open_existing(path: &std::path::Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_URI
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_log_is_left_alone() {
        assert_eq!(after_commit(0, 0), AfterCommit::Nothing);
        assert_eq!(
            after_commit(CHECKPOINT_AFTER_PAGES - 1, 0),
            AfterCommit::Nothing
        );
    }

    #[test]
    fn a_log_at_the_threshold_is_handed_to_the_thread() {
        assert_eq!(after_commit(CHECKPOINT_AFTER_PAGES, 0), AfterCommit::Ask);
        assert_eq!(
            after_commit(CHECKPOINT_INLINE_PAGES - 1, 0),
            AfterCommit::Ask
        );
    }

    #[test]
    fn what_is_copied_already_does_not_count_towards_the_threshold() {
        let copied = 3 * CHECKPOINT_AFTER_PAGES;
        assert_eq!(
            after_commit(copied + CHECKPOINT_AFTER_PAGES - 1, copied),
            AfterCommit::Nothing
        );
        assert_eq!(
            after_commit(copied + CHECKPOINT_AFTER_PAGES, copied),
            AfterCommit::Ask
        );
    }

    #[test]
    fn the_writer_checkpoints_itself_at_the_bound() {
        assert_eq!(
            after_commit(CHECKPOINT_INLINE_PAGES, 0),
            AfterCommit::Inline
        );
        assert_eq!(
            after_commit(CHECKPOINT_INLINE_PAGES, CHECKPOINT_INLINE_PAGES),
            AfterCommit::Inline
        );
        assert_eq!(after_commit(c_int::MAX, 0), AfterCommit::Inline);
    }
}
