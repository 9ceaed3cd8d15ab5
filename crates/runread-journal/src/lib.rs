//! runread's private journal of supervised-run proofs.
//!
//! When `runread run` has verified a run's final answer against the agent's persisted session
//! file, the proof goes here — not into the history. One owner-only (0600) file per run, in an
//! owner-only directory per runread instance, named by a hash of the run's namespace
//! (instance / workspace / session / generation / run) and carrying that namespace inside.
//!
//! Writing is atomic: a fresh temporary file (`O_EXCL`, no-follow), write, `fsync`, `rename`,
//! `fsync` of the directory; then the entry is read back and its SHA-256 compared with the digest
//! kept in memory. Only that digest, stored with the run in the store, makes the entry count:
//! a reader accepts an entry only when its bytes hash to the stored digest and its namespace is
//! the run's. An interrupted writer leaves at most a temporary file, never a named entry that is
//! half-written.
//!
//! Retention: at most [`JOURNAL_RETENTION_RUNS`] entries per instance; the oldest are pruned
//! before each write. The journal is never searched to guess a run: it is only read by name.
#![forbid(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use runread_platform::file::{is_owner_only, link_safe, owner_only_dir, owner_only_file};

use runread_core::limits::{JOURNAL_ENTRY_MAX_BYTES, JOURNAL_RETENTION_RUNS, JOURNAL_SCAN_MAX};
use runread_core::sha256_hex;

/// The format tag of every entry; a reader refuses any other.
pub const FORMAT: &str = "runread-journal/1";
/// A temporary file older than this is a crashed writer's leftover and is removed by pruning.
const STALE_TEMP_SECS: u64 = 60;

/// The run an entry belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Namespace {
    pub instance: String,
    pub workspace_id: String,
    pub session_id: String,
    pub generation: u64,
    pub run_id: String,
}

impl Namespace {
    /// The entry's file name: a domain-separated hash of the namespace, so that no field can
    /// smuggle a path and two runs never share a name.
    pub fn file_name(&self) -> String {
        let mut material = Vec::new();
        for field in [
            FORMAT,
            &self.instance,
            &self.workspace_id,
            &self.session_id,
            &self.generation.to_string(),
            &self.run_id,
        ] {
            material.extend_from_slice(&(field.len() as u64).to_be_bytes());
            material.extend_from_slice(field.as_bytes());
        }
        let h = sha256_hex(&material);
        format!("{}.json", h.get(..40).unwrap_or(&h))
    }
}

/// The identity of the session file the proof was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
}

/// One proof: that the run's final answer, as the agent announced it, is the message the agent
/// persisted at the end of an unbroken parent chain to the leaf pinned at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    pub format: String,
    pub namespace: Namespace,
    pub supervisor_id: String,
    pub agent: runread_core::Agent,
    pub agent_version: String,
    pub session_file: String,
    pub session_stamp: FileStamp,
    /// The active leaf when supervision started (`None`: a new session, chain to the root).
    pub pinned_leaf: Option<String>,
    /// Entry id of the user message that starts the run (the run id).
    pub start_entry_id: String,
    pub user_message_sha256: String,
    pub final_entry_id: String,
    pub message_sha256: String,
    pub text_sha256: String,
    pub text_bytes: u64,
    pub truncated: bool,
    /// Entries on the parent chain from the final message back to the run's start.
    pub chain_len: u64,
    pub verified_at_ms: i64,
}

/// Where an entry went and the digest that makes it count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub name: String,
    pub sha256: String,
}

/// A journal failure. Carries no path or OS text: callers report a fixed state; detail goes to
/// the local log through `Display` of the kind only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalError {
    /// No entry by that name.
    Missing,
    /// The entry is not a plain, owner-only, singly-linked file within the size bound.
    NotPrivate,
    /// The bytes do not hash to the expected digest, or do not parse, or name another run.
    Mismatch,
    /// An I/O error.
    Io(std::io::ErrorKind),
}

impl std::fmt::Display for JournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalError::Missing => f.write_str("journal entry missing"),
            JournalError::NotPrivate => f.write_str("journal entry is not a private regular file"),
            JournalError::Mismatch => f.write_str("journal entry does not verify"),
            JournalError::Io(k) => write!(f, "journal i/o: {k}"),
        }
    }
}

impl std::error::Error for JournalError {}

fn io(e: std::io::Error) -> JournalError {
    if e.kind() == std::io::ErrorKind::NotFound {
        JournalError::Missing
    } else if runread_platform::file::refused_link(&e) {
        JournalError::NotPrivate
    } else {
        JournalError::Io(e.kind())
    }
}

/// The journal of one runread instance.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

impl Journal {
    /// The journal directory of `instance` under `root` (`<home>/journal`), not created.
    pub fn at(root: &Path, instance: &str) -> Journal {
        // The instance id is a UUID the store made; keep only its safe characters anyway.
        let safe: String = instance
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        Journal {
            dir: root.join(safe),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the directory (and `root`) owner-only if missing; refuses one others can read.
    pub fn create(&self) -> Result<(), JournalError> {
        owner_only_dir(std::fs::DirBuilder::new().recursive(true))
            .create(&self.dir)
            .map_err(io)?;
        let meta = std::fs::symlink_metadata(&self.dir).map_err(io)?;
        if !meta.is_dir() || !is_owner_only(&meta) {
            return Err(JournalError::NotPrivate);
        }
        Ok(())
    }

    /// Writes `entry` atomically and durably, reads it back, and checks it hashes to what was
    /// written. Older entries are pruned first, so the journal never holds more than the
    /// retention bound, whenever the writer stops.
    pub fn write(&self, entry: &Entry) -> Result<Written, JournalError> {
        if entry.format != FORMAT {
            return Err(JournalError::Mismatch);
        }
        let bytes = serde_json::to_vec(entry).map_err(|_| JournalError::Mismatch)?;
        if bytes.len() as u64 > JOURNAL_ENTRY_MAX_BYTES {
            return Err(JournalError::Mismatch);
        }
        // The seal kept in memory: the digest of exactly the bytes handed to the file system.
        let sealed = sha256_hex(&bytes);
        let name = entry.namespace.file_name();
        self.create()?;
        let nonce = runread_core::random_bytes::<8>()
            .map_err(|_| JournalError::Io(std::io::ErrorKind::Other))?;
        let temp = self.dir.join(format!(".{name}.{}.tmp", hex::encode(nonce)));
        let result = (|| {
            let mut f = link_safe(owner_only_file(
                OpenOptions::new().write(true).create_new(true),
            ))
            .open(&temp)
            .map_err(io)?;
            f.write_all(&bytes).map_err(io)?;
            f.sync_all().map_err(io)?;
            drop(f);
            // Room first, then the entry: a crash at any point leaves at most the retention
            // bound of entries.
            self.prune(Some(&name));
            std::fs::rename(&temp, self.dir.join(&name)).map_err(io)?;
            File::open(&self.dir).and_then(|d| d.sync_all()).map_err(io)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result?;
        let back = self.read_bytes(&name)?;
        if sha256_hex(&back) != sealed {
            return Err(JournalError::Mismatch);
        }
        Ok(Written {
            name,
            sha256: sealed,
        })
    }

    /// The entry named `name`, accepted only when its bytes hash to `sha256` and it belongs to
    /// `namespace`.
    pub fn read_verified(
        &self,
        name: &str,
        sha256: &str,
        namespace: &Namespace,
    ) -> Result<Entry, JournalError> {
        if name != namespace.file_name() {
            return Err(JournalError::Mismatch);
        }
        let bytes = self.read_bytes(name)?;
        if sha256_hex(&bytes) != sha256 {
            return Err(JournalError::Mismatch);
        }
        let entry: Entry = serde_json::from_slice(&bytes).map_err(|_| JournalError::Mismatch)?;
        if entry.format != FORMAT || entry.namespace != *namespace {
            return Err(JournalError::Mismatch);
        }
        Ok(entry)
    }

    /// Reads a named entry: no link followed, a private regular file with one link, bounded.
    fn read_bytes(&self, name: &str) -> Result<Vec<u8>, JournalError> {
        if name.contains('/') || name.starts_with('.') {
            return Err(JournalError::Mismatch);
        }
        let f = link_safe(OpenOptions::new().read(true))
            .open(self.dir.join(name))
            .map_err(io)?;
        let meta = f.metadata().map_err(io)?;
        if !meta.is_file()
            || runread_platform::file::Stat::of(&meta).is_none_or(|s| s.nlink != 1)
            || !is_owner_only(&meta)
            || meta.len() > JOURNAL_ENTRY_MAX_BYTES
        {
            return Err(JournalError::NotPrivate);
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        f.take(JOURNAL_ENTRY_MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > JOURNAL_ENTRY_MAX_BYTES {
            return Err(JournalError::NotPrivate);
        }
        Ok(bytes)
    }

    /// Keeps the newest [`JOURNAL_RETENTION_RUNS`] entries, counting `keep` (the entry about to
    /// be written, whether or not it exists yet) among them and never removing it, and removes
    /// crashed writers' temporary files. Best effort: a failure here never fails a write.
    pub fn prune(&self, keep: Option<&str>) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = std::time::SystemTime::now();
        let mut entries: Vec<(std::time::SystemTime, String)> = Vec::new();
        for item in dir.take(JOURNAL_SCAN_MAX).flatten() {
            let Ok(name) = item.file_name().into_string() else {
                continue;
            };
            let Ok(meta) = item.metadata() else {
                continue;
            };
            let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            if name.starts_with('.') && name.ends_with(".tmp") {
                let stale = now
                    .duration_since(modified)
                    .is_ok_and(|age| age.as_secs() >= STALE_TEMP_SECS);
                if stale {
                    let _ = std::fs::remove_file(item.path());
                }
            } else if name.ends_with(".json") && meta.is_file() && Some(name.as_str()) != keep {
                entries.push((modified, name));
            }
        }
        // `keep` is one of the retained entries.
        let room = JOURNAL_RETENTION_RUNS - usize::from(keep.is_some());
        if entries.len() <= room {
            return;
        }
        entries.sort();
        let excess = entries.len() - room;
        for (_, name) in entries.into_iter().take(excess) {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
    }

    /// Names of the entries present (for tests and the owner's inspection), bounded.
    pub fn names(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return vec![];
        };
        let mut names: Vec<String> = dir
            .take(JOURNAL_SCAN_MAX)
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
            .collect();
        names.sort();
        names
    }
}
