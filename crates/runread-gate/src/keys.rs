//! Keys that seal inputs: a key file in the runread home (0600, one `KEY_ID HEX` line per key,
//! the last one current), created on first use, rotated by appending a new id. Old ids stay
//! readable. Every key handed out is an [`OwnedKey`] that zeroizes its bytes when dropped.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use zeroize::{Zeroize, Zeroizing};

/// Name of the key file inside the runread home.
pub const KEY_FILE_NAME: &str = "gate-keys";
/// Longest key file read.
const KEY_FILE_MAX_BYTES: u64 = 64 * 1024;

/// A 256-bit sealing key, zeroized on drop. Counts itself in `live` while alive, so tests can
/// observe that every path dropped (and so zeroized) its key.
pub struct OwnedKey {
    bytes: [u8; 32],
    live: Option<Arc<AtomicUsize>>,
}

impl OwnedKey {
    pub fn new(bytes: [u8; 32], live: Option<Arc<AtomicUsize>>) -> Self {
        if let Some(l) = &live {
            l.fetch_add(1, Ordering::SeqCst);
        }
        OwnedKey { bytes, live }
    }

    pub fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }
}

impl Drop for OwnedKey {
    fn drop(&mut self) {
        self.bytes.zeroize();
        if let Some(l) = &self.live {
            l.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl std::fmt::Debug for OwnedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OwnedKey(..)")
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum KeyError {
    /// No key with this id.
    Unknown,
    /// The key file is unreadable, malformed, or has loose permissions.
    Unavailable,
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyError::Unknown => "no sealing key with that id in gate-keys",
            KeyError::Unavailable => {
                "gate-keys is unreadable, malformed, or readable by others (it must be a 0600 file)"
            }
        })
    }
}

/// Where sealing keys come from.
pub trait KeyProvider: Send + Sync {
    /// The id and bytes of the key new inputs are sealed with.
    fn current(&self) -> Result<(String, OwnedKey), KeyError>;
    /// The key with `key_id`, current or older.
    fn get(&self, key_id: &str) -> Result<OwnedKey, KeyError>;
}

/// One key of the key file: its id and bytes.
type KeyEntry = (String, Zeroizing<[u8; 32]>);

/// How a written key file takes its place.
#[derive(Clone, Copy)]
enum Publish {
    /// Only if there is no key file yet.
    IfAbsent,
    /// Over the existing one (rotation).
    Replace,
}

/// What identifies one version of the key file: a rotation (a rename), an edit or a `chmod`
/// changes it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileStamp {
    fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }
}

/// The file-backed key provider.
///
/// The parsed key file is kept in memory (zeroized when replaced or dropped) and read again only
/// when its stamp changes; every use still checks the file's type and permissions first, so a
/// file made readable by others is refused at once, and a rotation by another process is seen
/// on the next call.
pub struct FileKeys {
    path: PathBuf,
    live: Arc<AtomicUsize>,
    cache: std::sync::Mutex<Option<(FileStamp, Arc<Vec<KeyEntry>>)>>,
}

impl FileKeys {
    /// Opens the key file in `home`, creating it (0600) with a first key if it does not exist.
    pub fn open(home: &Path) -> Result<FileKeys, KeyError> {
        let keys = FileKeys {
            path: home.join(KEY_FILE_NAME),
            live: Arc::new(AtomicUsize::new(0)),
            cache: std::sync::Mutex::new(None),
        };
        if !keys.path.exists() {
            keys.write_with_new_key(&[], Publish::IfAbsent)?;
        }
        keys.read_all()?;
        Ok(keys)
    }

    /// How many keys handed out by this provider are still alive (not yet zeroized).
    pub fn live_keys(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Adds a new key and makes it current. Returns its id. Older ids stay readable.
    pub fn rotate(&self) -> Result<String, KeyError> {
        let existing = self.read_all()?;
        self.write_with_new_key(&existing, Publish::Replace)
    }

    /// Every (id, key) in the file, oldest first: from memory while the file's stamp is
    /// unchanged.
    fn read_all(&self) -> Result<Arc<Vec<KeyEntry>>, KeyError> {
        let meta = std::fs::symlink_metadata(&self.path).map_err(|_| KeyError::Unavailable)?;
        if !meta.file_type().is_file()
            || !runread_core::is_owner_only(meta.permissions().mode())
            || meta.len() > KEY_FILE_MAX_BYTES
        {
            return Err(KeyError::Unavailable);
        }
        let stamp = FileStamp::of(&meta);
        let mut cache = self.cache.lock().map_err(|_| KeyError::Unavailable)?;
        if let Some((cached, keys)) = cache.as_ref()
            && *cached == stamp
        {
            return Ok(keys.clone());
        }
        let keys = Arc::new(self.parse_file()?);
        *cache = Some((stamp, keys.clone()));
        Ok(keys)
    }

    fn parse_file(&self) -> Result<Vec<KeyEntry>, KeyError> {
        let text =
            Zeroizing::new(std::fs::read_to_string(&self.path).map_err(|_| KeyError::Unavailable)?);
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (id, hex_key) = line.split_once(' ').ok_or(KeyError::Unavailable)?;
            let mut bytes = Zeroizing::new([0u8; 32]);
            hex::decode_to_slice(hex_key.trim(), &mut *bytes).map_err(|_| KeyError::Unavailable)?;
            out.push((id.to_owned(), bytes));
        }
        if out.is_empty() {
            return Err(KeyError::Unavailable);
        }
        Ok(out)
    }

    fn write_with_new_key(
        &self,
        existing: &[(String, Zeroizing<[u8; 32]>)],
        publish: Publish,
    ) -> Result<String, KeyError> {
        let bytes =
            Zeroizing::new(runread_core::random_bytes::<32>().map_err(|_| KeyError::Unavailable)?);
        let id = format!("k{}", existing.len() + 1);
        let mut text = Zeroizing::new(String::new());
        for (kid, k) in existing {
            text.push_str(&format!("{kid} {}\n", hex::encode(**k)));
        }
        text.push_str(&format!("{id} {}\n", hex::encode(*bytes)));
        // A temporary name of this writer's own: processes starting together (several gateways
        // on one home) never write into each other's file.
        let nonce = runread_core::random_bytes::<8>().map_err(|_| KeyError::Unavailable)?;
        let tmp = self
            .path
            .with_extension(format!("{}.tmp", hex::encode(nonce)));
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            match publish {
                Publish::Replace => std::fs::rename(&tmp, &self.path),
                // The first key file is published with a link, which fails if another process
                // published one first: then that one is the key file, and ours is dropped.
                Publish::IfAbsent => match std::fs::hard_link(&tmp, &self.path) {
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                    other => other,
                },
            }
        })();
        let _ = std::fs::remove_file(&tmp);
        written.map_err(|_| KeyError::Unavailable)?;
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(id)
    }
}

impl KeyProvider for FileKeys {
    fn current(&self) -> Result<(String, OwnedKey), KeyError> {
        let all = self.read_all()?;
        let (id, k) = all.last().ok_or(KeyError::Unavailable)?;
        Ok((id.clone(), OwnedKey::new(**k, Some(self.live.clone()))))
    }

    fn get(&self, key_id: &str) -> Result<OwnedKey, KeyError> {
        let all = self.read_all()?;
        let (_, k) = all
            .iter()
            .find(|(id, _)| id == key_id)
            .ok_or(KeyError::Unknown)?;
        Ok(OwnedKey::new(**k, Some(self.live.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_is_created_private_and_rotation_keeps_old_ids() {
        let dir = tempfile::tempdir().unwrap();
        let keys = FileKeys::open(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE_NAME))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (id1, k1) = keys.current().unwrap();
        let first = *k1.bytes();
        drop(k1);
        let id2 = keys.rotate().unwrap();
        assert_ne!(id1, id2);
        let (cur, k2) = keys.current().unwrap();
        assert_eq!(cur, id2);
        assert_ne!(*k2.bytes(), first);
        assert_eq!(*keys.get(&id1).unwrap().bytes(), first);
        assert_eq!(keys.get("nope").unwrap_err(), KeyError::Unknown);
        drop(k2);
        assert_eq!(keys.live_keys(), 0);
    }

    #[test]
    fn processes_opening_a_new_home_together_agree_on_one_key() {
        const OPENERS: usize = 8;
        let dir = tempfile::tempdir().unwrap();
        let barrier = Arc::new(std::sync::Barrier::new(OPENERS));
        let handles: Vec<_> = (0..OPENERS)
            .map(|_| {
                let (home, barrier) = (dir.path().to_path_buf(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let keys = FileKeys::open(&home).unwrap();
                    // What this opener would seal with right after opening.
                    let (id, k) = keys.current().unwrap();
                    (id, *k.bytes())
                })
            })
            .collect();
        let seen: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(
            seen.iter().all(|s| *s == seen[0]),
            "every opener uses the one key"
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n != KEY_FILE_NAME)
            .collect();
        assert!(
            leftovers.is_empty(),
            "no temporary files left: {leftovers:?}"
        );
    }

    #[test]
    fn a_rotation_by_another_process_is_seen_on_the_next_call() {
        let dir = tempfile::tempdir().unwrap();
        let server = FileKeys::open(dir.path()).unwrap();
        let (first, _) = server.current().unwrap();
        // Another process (the owner's CLI) rotates; the server holds the old file in memory.
        let cli = FileKeys::open(dir.path()).unwrap();
        let rotated = cli.rotate().unwrap();
        assert_ne!(first, rotated);
        let (now_current, k) = server.current().unwrap();
        assert_eq!(now_current, rotated);
        assert_eq!(*k.bytes(), *cli.get(&rotated).unwrap().bytes());
        assert!(server.get(&first).is_ok(), "old ids stay readable");
    }

    #[test]
    fn a_key_file_readable_by_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let keys = FileKeys::open(dir.path()).unwrap();
        std::fs::set_permissions(
            dir.path().join(KEY_FILE_NAME),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        assert_eq!(keys.current().unwrap_err(), KeyError::Unavailable);
    }
}
