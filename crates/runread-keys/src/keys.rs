//! Keys that seal inputs: a key file (0600, one `KEY_ID HEX` line per key, the last one
//! current), by default `gate-keys` in the runread home and created there on first use, or a
//! file given by path (a mounted secret, never created). Rotation appends a new id; old ids stay
//! readable. Key ids are unique across homes (a counter and random hex), so a key file made
//! elsewhere can be imported beside this one's keys, and a missing key is named by its id.
//! Every key handed out is an [`OwnedKey`] that zeroizes its bytes when dropped.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use zeroize::{Zeroize, Zeroizing};

use runread_platform::file::owner_only_file;

/// Name of the key file inside the runread home.
pub const KEY_FILE_NAME: &str = "gate-keys";
/// Longest key file read.
const KEY_FILE_MAX_BYTES: u64 = 64 * 1024;
/// Random bytes in a new key id, after its counter: ids made in different homes differ.
const KEY_ID_RANDOM_BYTES: usize = 6;

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
type FileStamp = runread_platform::file::Stat;

/// The file-backed key provider.
///
/// The parsed key file is kept in memory (zeroized when replaced or dropped) and read again only
/// when its stamp changes; every use still checks the file's type and permissions first, so a
/// file made readable by others is refused at once, and a rotation by another process is seen
/// on the next call.
pub struct FileKeys {
    path: PathBuf,
    follow: Follow,
    live: Arc<AtomicUsize>,
    cache: Mutex<Option<(FileStamp, Arc<Vec<KeyEntry>>)>>,
    /// Key ids asked for and not found, each logged once.
    missing_said: Mutex<HashSet<String>>,
}

/// Which key file a process uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyFile {
    /// [`KEY_FILE_NAME`] in this runread home (made on first use).
    InHome(PathBuf),
    /// A file named by the operator (`--gate-keys`): never made by opening it.
    Named(PathBuf),
}

impl KeyFile {
    fn resolve(&self) -> (PathBuf, Follow) {
        match self {
            KeyFile::InHome(home) => (home.join(KEY_FILE_NAME), Follow::No),
            KeyFile::Named(path) => (path.clone(), Follow::Yes),
        }
    }

    /// The key file's path.
    pub fn path(&self) -> PathBuf {
        self.resolve().0
    }

    /// Opens it: [`FileKeys::open`] or [`FileKeys::open_file`].
    pub fn open(&self) -> Result<FileKeys, KeyError> {
        match self {
            KeyFile::InHome(home) => FileKeys::open(home),
            KeyFile::Named(path) => FileKeys::open_file(path),
        }
    }
}

/// What [`FileKeys::import`] did: ids added to the key file, ids it already held, and the id
/// current after it.
#[derive(Debug, PartialEq, Eq)]
pub struct Imported {
    pub added: Vec<String>,
    pub present: Vec<String>,
    pub current: String,
}

impl FileKeys {
    fn at(path: PathBuf, follow: Follow) -> FileKeys {
        FileKeys {
            path,
            follow,
            live: Arc::new(AtomicUsize::new(0)),
            cache: Mutex::new(None),
            missing_said: Mutex::new(HashSet::new()),
        }
    }

    /// Opens the key file in `home`, creating it (0600) with a first key if it does not exist.
    pub fn open(home: &Path) -> Result<FileKeys, KeyError> {
        let keys = FileKeys::at(home.join(KEY_FILE_NAME), Follow::No);
        if !keys.path.exists() {
            keys.write_with_new_key(&[], Publish::IfAbsent)?;
        }
        keys.read_all()?;
        Ok(keys)
    }

    /// Opens the key file at `path` (a mounted secret, say), which must exist: it is never
    /// created, and refused, as the home's is, unless it is a regular file only its owner may
    /// read.
    pub fn open_file(path: &Path) -> Result<FileKeys, KeyError> {
        let keys = FileKeys::at(path.to_path_buf(), Follow::Yes);
        keys.read_all()?;
        Ok(keys)
    }

    /// The key file this provider reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every key id in the file, oldest first; the last is current. Never the bytes.
    pub fn ids(&self) -> Result<Vec<String>, KeyError> {
        Ok(self.read_all()?.iter().map(|(id, _)| id.clone()).collect())
    }

    /// Writes every key of this file to `dest`, a new file (0600; an existing one is not
    /// overwritten), for [`FileKeys::import`] in another home. Returns the ids written.
    pub fn export(&self, dest: &Path) -> Result<Vec<String>, String> {
        let all = self.read_all().map_err(|e| e.to_string())?;
        let text = key_file_text(&all);
        let failed = |e: std::io::Error| format!("{}: {e}", dest.display());
        let mut f = owner_only_file(std::fs::OpenOptions::new().write(true).create_new(true))
            .open(dest)
            .map_err(failed)?;
        if let Err(e) = f.write_all(text.as_bytes()).and_then(|()| f.sync_all()) {
            // Ours (create_new): a partial key file is no use to anyone.
            let _ = std::fs::remove_file(dest);
            return Err(failed(e));
        }
        Ok(all.iter().map(|(id, _)| id.clone()).collect())
    }

    /// Adds the keys of the exported file `src` to the key file `target` (made if absent),
    /// in `src`'s order after the keys already there, so `src`'s current key is current here
    /// too unless this file already held it. `src` must be private (0600) like any key file. An
    /// id present in both with different bytes is refused and nothing changes.
    pub fn import(target: &KeyFile, src: &Path) -> Result<Imported, String> {
        let (path, follow) = target.resolve();
        let key_file = path.as_path();
        let (_, src_text) =
            read_key_text(src, Follow::Yes).map_err(|e| format!("{}: {e}", src.display()))?;
        let incoming = parse_key_text(&src_text).map_err(|e| format!("{}: {e}", src.display()))?;
        let keys = FileKeys::at(path.clone(), follow);
        let existing: Vec<KeyEntry> = if keys.path.exists() {
            keys.read_all()
                .map_err(|e| format!("{}: {e}", key_file.display()))?
                .iter()
                .map(|(id, k)| (id.clone(), k.clone()))
                .collect()
        } else {
            Vec::new()
        };
        let (mut added, mut present) = (Vec::new(), Vec::new());
        let mut merged = existing.clone();
        for (id, k) in incoming {
            match existing.iter().find(|(have, _)| *have == id) {
                Some((_, mine)) if *mine == k => present.push(id),
                Some(_) => {
                    return Err(format!(
                        "{}: key {id} differs from the key {id} in {}; nothing was imported",
                        src.display(),
                        key_file.display()
                    ));
                }
                None => {
                    added.push(id.clone());
                    merged.push((id, k));
                }
            }
        }
        if !added.is_empty() {
            let publish = if existing.is_empty() {
                Publish::IfAbsent
            } else {
                Publish::Replace
            };
            keys.publish(&key_file_text(&merged), publish)
                .map_err(|e| format!("{}: {e}", key_file.display()))?;
        }
        let now = keys
            .ids()
            .map_err(|e| format!("{}: {e}", key_file.display()))?;
        // A first key file published by another process at the same moment wins the link.
        if let Some(lost) = added.iter().find(|id| !now.contains(id)) {
            return Err(format!(
                "{} was made by another process meanwhile and lacks {lost}: run the import again",
                key_file.display()
            ));
        }
        let current = now.last().cloned().unwrap_or_default();
        Ok(Imported {
            added,
            present,
            current,
        })
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
        let stamp = runread_platform::file::Stat::of(&checked_meta(&self.path, self.follow)?)
            .ok_or(KeyError::Unavailable)?;
        let mut cache = self.cache.lock().map_err(|_| KeyError::Unavailable)?;
        if let Some((cached, keys)) = cache.as_ref()
            && *cached == stamp
        {
            return Ok(keys.clone());
        }
        // Cached under the stamp of the file read: if the path named another file by then, the
        // next use sees a stamp that differs and reads again.
        let (read, text) = read_key_text(&self.path, self.follow)?;
        let keys = Arc::new(parse_key_text(&text)?);
        *cache = Some((read, keys.clone()));
        Ok(keys)
    }

    fn write_with_new_key(
        &self,
        existing: &[(String, Zeroizing<[u8; 32]>)],
        publish: Publish,
    ) -> Result<String, KeyError> {
        let bytes =
            Zeroizing::new(runread_core::random_bytes::<32>().map_err(|_| KeyError::Unavailable)?);
        let tag = runread_core::random_bytes::<KEY_ID_RANDOM_BYTES>()
            .map_err(|_| KeyError::Unavailable)?;
        let id = format!("k{}-{}", existing.len() + 1, hex::encode(tag));
        let mut entries: Vec<KeyEntry> = existing.to_vec();
        entries.push((id.clone(), bytes));
        self.publish(&key_file_text(&entries), publish)
            .map_err(|_| KeyError::Unavailable)?;
        Ok(id)
    }

    /// Writes `text` as the key file: to a private temporary file, then in place.
    fn publish(&self, text: &str, publish: Publish) -> std::io::Result<()> {
        // A temporary name of this writer's own: processes starting together (several gateways
        // on one home) never write into each other's file.
        let nonce = runread_core::random_bytes::<8>().map_err(std::io::Error::other)?;
        let tmp = self
            .path
            .with_extension(format!("{}.tmp", hex::encode(nonce)));
        let written = (|| {
            let mut f = owner_only_file(std::fs::OpenOptions::new().write(true).create_new(true))
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
        written?;
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(())
    }
}

/// The key file's text for `entries`, oldest first.
fn key_file_text(entries: &[KeyEntry]) -> Zeroizing<String> {
    let mut text = Zeroizing::new(String::new());
    for (id, k) in entries {
        text.push_str(id);
        text.push(' ');
        text.push_str(&hex::encode(**k));
        text.push('\n');
    }
    text
}

/// Whether a key file's path may be a symbolic link to it.
#[derive(Clone, Copy)]
enum Follow {
    /// The home's own file: never a link.
    No,
    /// A file named by the operator: orchestrators mount secrets as links into a directory
    /// they swap atomically, so the link is followed to the file, which is checked.
    Yes,
}

/// The metadata of a key file that may be used, looked up by path: see [`usable`].
fn checked_meta(path: &Path, follow: Follow) -> Result<std::fs::Metadata, KeyError> {
    let meta = match follow {
        Follow::No => std::fs::symlink_metadata(path),
        Follow::Yes => std::fs::metadata(path),
    }
    .map_err(|_| KeyError::Unavailable)?;
    usable(&meta)?;
    Ok(meta)
}

/// Whether `meta` is a key file that may be used: a regular file only its owner may read, within
/// [`KEY_FILE_MAX_BYTES`].
fn usable(meta: &std::fs::Metadata) -> Result<(), KeyError> {
    if !meta.file_type().is_file()
        || !runread_platform::file::is_owner_only(meta)
        || meta.len() > KEY_FILE_MAX_BYTES
    {
        return Err(KeyError::Unavailable);
    }
    Ok(())
}

/// A key file's text and the stamp of the file it was read from.
///
/// The file is opened once and checked through that descriptor ([`usable`]): a file swapped in
/// after a check by path is never the one read. The home's own file is opened without following
/// a link, and every open is non-blocking, so a FIFO put in the file's place cannot hold it.
fn read_key_text(path: &Path, follow: Follow) -> Result<(FileStamp, Zeroizing<String>), KeyError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    match follow {
        Follow::No => runread_platform::file::link_safe(&mut opts),
        Follow::Yes => runread_platform::file::never_blocking(&mut opts),
    };
    let file = opts.open(path).map_err(|_| KeyError::Unavailable)?;
    let meta = file.metadata().map_err(|_| KeyError::Unavailable)?;
    usable(&meta)?;
    let mut bytes = Zeroizing::new(Vec::new());
    let within = runread_core::read_at_most(&file, KEY_FILE_MAX_BYTES, &mut bytes)
        .map_err(|_| KeyError::Unavailable)?;
    // Grown since the check: not a key file any more.
    if !within {
        return Err(KeyError::Unavailable);
    }
    // The bytes move into the string (no copy); text that is not UTF-8 is zeroized on the way out.
    let text = String::from_utf8(std::mem::take(&mut *bytes)).map_err(|e| {
        drop(Zeroizing::new(e.into_bytes()));
        KeyError::Unavailable
    })?;
    let stamp = runread_platform::file::Stat::of(&meta).ok_or(KeyError::Unavailable)?;
    Ok((stamp, Zeroizing::new(text)))
}

/// `KEY_ID HEX` lines; at least one, ids unique.
fn parse_key_text(text: &str) -> Result<Vec<KeyEntry>, KeyError> {
    let mut out: Vec<KeyEntry> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (id, hex_key) = line.split_once(' ').ok_or(KeyError::Unavailable)?;
        let mut bytes = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(hex_key.trim(), &mut *bytes).map_err(|_| KeyError::Unavailable)?;
        if id.is_empty() || out.iter().any(|(have, _)| have == id) {
            return Err(KeyError::Unavailable);
        }
        out.push((id.to_owned(), bytes));
    }
    if out.is_empty() {
        return Err(KeyError::Unavailable);
    }
    Ok(out)
}

impl KeyProvider for FileKeys {
    fn current(&self) -> Result<(String, OwnedKey), KeyError> {
        let all = self.read_all()?;
        let (id, k) = all.last().ok_or(KeyError::Unavailable)?;
        Ok((id.clone(), OwnedKey::new(**k, Some(self.live.clone()))))
    }

    fn get(&self, key_id: &str) -> Result<OwnedKey, KeyError> {
        let all = self.read_all()?;
        let Some((_, k)) = all.iter().find(|(id, _)| id == key_id) else {
            // The caller refuses with a fixed code (`unavailable`); which key is missing is for
            // the operator only, once per id.
            let first = self
                .missing_said
                .lock()
                .map(|mut said| said.insert(key_id.to_owned()))
                .unwrap_or(false);
            if first {
                tracing::warn!(
                    key_id = %key_id,
                    key_file = %self.path.display(),
                    "the sealing key {key_id} is not in this gateway's key file: material sealed under it cannot be opened here (import the key file it was made with: runread keys import)"
                );
            }
            return Err(KeyError::Unknown);
        };
        Ok(OwnedKey::new(**k, Some(self.live.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A private file holding one valid key line, padded with newlines to `len` bytes.
    fn key_file_of(dir: &Path, name: &str, len: usize) -> PathBuf {
        let mut text = format!("k1-00 {}\n", "ab".repeat(32));
        assert!(text.len() <= len);
        text.extend(std::iter::repeat_n('\n', len - text.len()));
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    }

    #[test]
    fn a_key_file_is_read_up_to_its_bound_and_refused_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let at = key_file_of(dir.path(), "at", KEY_FILE_MAX_BYTES as usize);
        let over = key_file_of(dir.path(), "over", KEY_FILE_MAX_BYTES as usize + 1);
        let (_, text) = read_key_text(&at, Follow::No).unwrap();
        assert_eq!(parse_key_text(&text).unwrap().len(), 1);
        assert_eq!(
            read_key_text(&over, Follow::No).err(),
            Some(KeyError::Unavailable)
        );
    }

    #[test]
    fn the_homes_key_file_is_never_read_through_a_link_a_named_one_may_be() {
        let dir = tempfile::tempdir().unwrap();
        let real = key_file_of(dir.path(), "real", 100);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(
            read_key_text(&link, Follow::No).err(),
            Some(KeyError::Unavailable)
        );
        let (stamp, _) = read_key_text(&link, Follow::Yes).unwrap();
        // The stamp is the file read, not the link.
        let (real_stamp, _) = read_key_text(&real, Follow::No).unwrap();
        assert!(stamp == real_stamp);
    }

    #[test]
    fn a_fifo_in_the_key_files_place_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A blocking open would wait for a writer forever: the answer must come back at once.
        let (tx, rx) = std::sync::mpsc::channel();
        for follow in [Follow::No, Follow::Yes] {
            let (tx, fifo) = (tx.clone(), fifo.clone());
            std::thread::spawn(move || {
                let _ = tx.send(read_key_text(&fifo, follow).err());
            });
        }
        for _ in 0..2 {
            let refused = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("the open did not block");
            assert_eq!(refused, Some(KeyError::Unavailable));
        }
    }

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

    #[test]
    fn key_ids_differ_between_homes() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let ia = FileKeys::open(a.path()).unwrap().ids().unwrap();
        let ib = FileKeys::open(b.path()).unwrap().ids().unwrap();
        assert_eq!((ia.len(), ib.len()), (1, 1));
        assert_ne!(ia, ib);
        assert!(ia[0].starts_with("k1-"), "{ia:?}");
    }

    #[test]
    fn a_named_key_file_is_never_made_must_be_private_and_may_be_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent");
        assert_eq!(
            FileKeys::open_file(&missing).err(),
            Some(KeyError::Unavailable)
        );
        assert!(!missing.exists());

        let home = FileKeys::open(dir.path()).unwrap();
        let secret = dir.path().join("secret");
        let ids = home.export(&secret).unwrap();
        assert_eq!(ids, home.ids().unwrap());
        // Orchestrators mount a secret as a link into a directory they swap.
        let link = dir.path().join("mounted");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let named = FileKeys::open_file(&link).unwrap();
        assert_eq!(named.ids().unwrap(), ids);
        assert_eq!(
            *named.get(&ids[0]).unwrap().bytes(),
            *home.get(&ids[0]).unwrap().bytes()
        );
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(named.ids().unwrap_err(), KeyError::Unavailable);
        assert_eq!(
            FileKeys::open_file(&link).err(),
            Some(KeyError::Unavailable)
        );
        // The export never overwrites.
        assert!(home.export(&secret).is_err());
    }

    #[test]
    fn import_adds_keys_after_the_homes_own_and_refuses_a_different_key_under_one_id() {
        let (owner, gateway) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let owner_keys = FileKeys::open(owner.path()).unwrap();
        owner_keys.rotate().unwrap();
        let exported = owner.path().join("export");
        let owner_ids = owner_keys.export(&exported).unwrap();

        // Into a home without keys: the file as it is, nothing of the home's own.
        let fresh = tempfile::tempdir().unwrap();
        let done =
            FileKeys::import(&KeyFile::InHome(fresh.path().to_path_buf()), &exported).unwrap();
        assert_eq!(done.added, owner_ids);
        assert_eq!(
            FileKeys::open(fresh.path()).unwrap().ids().unwrap(),
            owner_ids
        );

        // Into a home with a key of its own: kept, the imported ones after it, current.
        let own = FileKeys::open(gateway.path()).unwrap().ids().unwrap();
        let target = KeyFile::InHome(gateway.path().to_path_buf());
        let done = FileKeys::import(&target, &exported).unwrap();
        assert_eq!(done.added, owner_ids);
        assert_eq!(done.current, owner_ids[1]);
        let gw = FileKeys::open(gateway.path()).unwrap();
        assert_eq!(gw.ids().unwrap(), [own.clone(), owner_ids.clone()].concat());
        assert_eq!(gw.current().unwrap().0, owner_ids[1]);
        // Again: nothing added.
        let again = FileKeys::import(&target, &exported).unwrap();
        assert!(again.added.is_empty());
        assert_eq!(again.present, owner_ids);

        // The same id with other bytes: refused, the file unchanged.
        let forged = owner.path().join("forged");
        std::fs::write(&forged, format!("{} {}\n", owner_ids[0], "ab".repeat(32))).unwrap();
        std::fs::set_permissions(&forged, std::fs::Permissions::from_mode(0o600)).unwrap();
        let before = std::fs::read(gateway.path().join(KEY_FILE_NAME)).unwrap();
        assert!(FileKeys::import(&target, &forged).is_err());
        assert_eq!(
            std::fs::read(gateway.path().join(KEY_FILE_NAME)).unwrap(),
            before
        );

        // An export others may read is refused.
        std::fs::set_permissions(&exported, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(FileKeys::import(&target, &exported).is_err());
    }
}
