//! Reading an agent's session file as evidence: link-safe, bounded, and with the file's identity
//! checked before and after every read, so that a file replaced, linked or changed during the read
//! is never taken for the one that was meant.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// What identifies one version of a file: where it lives (device, inode), how many names it
/// has, and its size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub size: u64,
    pub mtime_ns: i64,
}

impl FileIdentity {
    fn of(meta: &std::fs::Metadata) -> Self {
        FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            nlink: meta.nlink(),
            size: meta.size(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
        }
    }

    /// Same file object (device and inode), whatever its content.
    pub fn same_object(&self, other: &FileIdentity) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// Why a file could not be read as evidence. Carries no path and no OS error text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// The file does not exist (any more).
    Missing,
    /// The path is a symbolic link, or the file is not a regular file.
    NotRegular,
    /// The file has more than one name (a hard link).
    HardLinked,
    /// The path pointed to another file object, or the file changed, during the read.
    ChangedDuringRead,
    /// The file is smaller than the offset asked for (truncated since the last read).
    Truncated,
    /// Any other I/O failure.
    Io,
}

/// Bytes read from `offset`, with the file's identity before and after the read.
#[derive(Debug, Clone)]
pub struct ReadChunk {
    pub identity: FileIdentity,
    pub offset: u64,
    pub bytes: Vec<u8>,
}

impl ReadChunk {
    /// Whether this chunk reaches the end of the file as it was when read.
    pub fn reaches_eof(&self) -> bool {
        self.offset + self.bytes.len() as u64 >= self.identity.size
    }
}

/// Current identity of the file at `path`, without following a symbolic link at the leaf.
pub fn identity(path: &Path) -> Result<FileIdentity, ReadError> {
    let meta = std::fs::symlink_metadata(path).map_err(io_kind)?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular);
    }
    Ok(FileIdentity::of(&meta))
}

/// Reads at most `max_bytes` from `offset` of the regular, singly-linked file at `path`.
///
/// The leaf is opened with `O_NOFOLLOW`; the open descriptor must be the object the path names
/// before and after the read, with unchanged size and modification time; otherwise
/// [`ReadError::ChangedDuringRead`]. `expect`, when given, must be the same file object.
pub fn read_from(
    path: &Path,
    offset: u64,
    max_bytes: u64,
    expect: Option<&FileIdentity>,
) -> Result<ReadChunk, ReadError> {
    let before_path = identity(path)?;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                ReadError::NotRegular
            } else {
                io_kind(e)
            }
        })?;
    let before = fd_identity(&file)?;
    if !before.same_object(&before_path) || before != before_path {
        return Err(ReadError::ChangedDuringRead);
    }
    if let Some(expect) = expect
        && !before.same_object(expect)
    {
        return Err(ReadError::ChangedDuringRead);
    }
    if before.nlink != 1 {
        return Err(ReadError::HardLinked);
    }
    if offset > before.size {
        return Err(ReadError::Truncated);
    }
    file.seek(SeekFrom::Start(offset)).map_err(io_kind)?;
    let want = max_bytes.min(before.size - offset);
    let mut bytes = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    (&mut file)
        .take(want)
        .read_to_end(&mut bytes)
        .map_err(io_kind)?;
    let after = fd_identity(&file)?;
    let after_path = identity(path)?;
    if after != before || after_path != before {
        return Err(ReadError::ChangedDuringRead);
    }
    Ok(ReadChunk {
        identity: before,
        offset,
        bytes,
    })
}

fn fd_identity(file: &File) -> Result<FileIdentity, ReadError> {
    let meta = file.metadata().map_err(io_kind)?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular);
    }
    Ok(FileIdentity::of(&meta))
}

fn io_kind(e: std::io::Error) -> ReadError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing,
        _ => ReadError::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_a_bounded_slice_with_identity() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"hello\nworld\n").unwrap();
        let c = read_from(&p, 6, 3, None).unwrap();
        assert_eq!(c.bytes, b"wor");
        assert!(!c.reaches_eof());
        let c = read_from(&p, 6, 100, None).unwrap();
        assert_eq!(c.bytes, b"world\n");
        assert!(c.reaches_eof());
    }

    #[test]
    fn refuses_symlink_hardlink_missing_and_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"x\n").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert_eq!(
            read_from(&link, 0, 10, None).unwrap_err(),
            ReadError::NotRegular
        );
        assert_eq!(
            read_from(&p, 5, 10, None).unwrap_err(),
            ReadError::Truncated
        );
        let hard = dir.path().join("hard.jsonl");
        std::fs::hard_link(&p, &hard).unwrap();
        assert_eq!(
            read_from(&p, 0, 10, None).unwrap_err(),
            ReadError::HardLinked
        );
        std::fs::remove_file(&hard).unwrap();
        assert!(read_from(&p, 0, 10, None).is_ok());
        assert_eq!(
            read_from(&dir.path().join("nope"), 0, 10, None).unwrap_err(),
            ReadError::Missing
        );
    }

    #[test]
    fn refuses_a_replaced_file_when_an_identity_is_expected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"one\n").unwrap();
        let first = read_from(&p, 0, 100, None).unwrap().identity;
        let tmp = dir.path().join("tmp");
        let mut f = std::fs::File::create(&tmp).unwrap();
        f.write_all(b"one\n").unwrap();
        drop(f);
        std::fs::rename(&tmp, &p).unwrap();
        assert_eq!(
            read_from(&p, 0, 100, Some(&first)).unwrap_err(),
            ReadError::ChangedDuringRead
        );
    }
}
