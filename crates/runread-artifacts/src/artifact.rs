//! Registering an artifact (one whole, bounded read that fixes its version) and reading that
//! exact version back in bounded chunks.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

use crate::platform::{Ident, Opened, Resolve, compare};
use crate::{Refusal, check_mime, validate_path};

/// The largest artifact, in bytes. A file of exactly this size is accepted; one byte more is
/// [`Refusal::TooLarge`].
pub const ARTIFACT_MAX_BYTES: u64 = runread_core::limits::ARTIFACT_MAX_BYTES;

/// The largest chunk [`read_chunk`] returns, in bytes.
pub const TRANSFER_MAX_BYTES: usize = runread_core::limits::ARTIFACT_TRANSFER_MAX_BYTES;

/// The longest known secret, in bytes: the context [`read_window`] allows on each side of a chunk.
pub const SECRET_MAX_BYTES: usize = runread_core::limits::SECRET_MAX_BYTES;

/// The largest window [`read_window`] returns, in bytes: a chunk and a known secret's length on
/// either side.
pub const WINDOW_MAX_BYTES: usize = TRANSFER_MAX_BYTES + 2 * SECRET_MAX_BYTES;

/// Buffer for whole-file hashing.
const HASH_BUF_BYTES: usize = 64 * 1024;

/// One registered version of an artifact: where it is, what it contains (size, sha256 of the
/// whole content, lowercase hex) and which file object it was (device, inode, mtime and ctime in
/// nanoseconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ArtifactVersion {
    pub rel_path: String,
    pub size: u64,
    pub sha256: String,
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

/// Bytes of a registered version from `offset`; `eof` when they reach its end. `chunk_sha256` is
/// the sha256 of `bytes` (lowercase hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub offset: u64,
    pub eof: bool,
    pub chunk_sha256: String,
}

/// Registers the artifact at `rel` beneath the workspace `root` with MIME type `mime`.
///
/// For a trusted producer only (`runread artifact add`): never call this with a path that came
/// from a reader or from a model's answer. Checks the path rules and the MIME allowlist, opens
/// the file link-safely (regular, one name, at most [`ARTIFACT_MAX_BYTES`]), reads it whole
/// computing its sha256, and checks that descriptor and path show the same identity and stat
/// before and after the read.
pub fn register(root: &Path, rel: &str, mime: &str) -> Result<ArtifactVersion, Refusal> {
    let rel = validate_path(rel)?;
    check_mime(mime)?;
    let opened = Opened::open(root, &rel, Resolve::Openat2)?;
    if opened.ident.size > ARTIFACT_MAX_BYTES {
        return Err(Refusal::TooLarge);
    }
    let sha256 = hash_whole(&opened)?;
    opened.recheck()?;
    let id = opened.ident;
    Ok(ArtifactVersion {
        rel_path: rel.into_string(),
        size: id.size,
        sha256,
        dev: id.dev,
        ino: id.ino,
        mtime_ns: id.mtime_ns,
        ctime_ns: id.ctime_ns,
    })
}

/// Reads at most `limit` bytes of version `v` from `offset`.
///
/// `limit` must be `1..=TRANSFER_MAX_BYTES` and `offset` `0..=ARTIFACT_MAX_BYTES` and at most
/// `v.size` (reading at `v.size` answers an empty chunk with `eof`), else [`Refusal::Bounds`],
/// checked before any I/O. The file is opened link-safely again and must still be the version
/// registered: same device and inode ([`Refusal::Replaced`]), not grown past the limit
/// ([`Refusal::TooLarge`]), same size, mtime and ctime ([`Refusal::Modified`]), one name
/// ([`Refusal::Hardlink`]), no link ([`Refusal::Symlink`]), present ([`Refusal::Missing`]).
/// Descriptor and path are checked before and after the read.
///
/// Content rewritten with its size and timestamps restored is not visible to a stat; use
/// [`verify_version`] for that.
pub fn read_chunk(
    root: &Path,
    v: &ArtifactVersion,
    offset: u64,
    limit: usize,
) -> Result<Chunk, Refusal> {
    let bytes = read_range(root, v, offset, limit, TRANSFER_MAX_BYTES)?;
    let end = offset.saturating_add(u64::try_from(bytes.len()).map_err(|_| Refusal::Io)?);
    Ok(Chunk {
        chunk_sha256: hex::encode(Sha256::digest(&bytes)),
        eof: end == v.size,
        offset,
        bytes,
    })
}

/// Whether version `v`'s file is there to be read: [`Refusal::Missing`] when it (or a folder on
/// its way) is gone, [`Refusal::Io`] when it cannot be looked at, `Ok` otherwise. One `lstat`,
/// following no link, reading nothing: what a caller deciding between the file and another
/// copy needs. Whatever is there is still read only through [`read_chunk`]'s checks, which
/// refuse a link, a replaced or changed file.
pub fn present(root: &Path, v: &ArtifactVersion) -> Result<(), Refusal> {
    let rel = validate_path(&v.rel_path)?;
    match std::fs::symlink_metadata(root.join(rel.as_ref() as &str)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Refusal::Missing),
        Err(_) => Err(Refusal::Io),
    }
}

/// Reads at most `len` bytes of version `v` from `start`, with every check of [`read_chunk`]
/// (one open, one read), and no digest: a chunk with up to [`SECRET_MAX_BYTES`] of context on
/// either side, so that a caller looking for known secrets sees one that overlaps the chunk
/// whole. `len` must be `1..=WINDOW_MAX_BYTES`; fewer bytes come back only at the end of `v`.
pub fn read_window(
    root: &Path,
    v: &ArtifactVersion,
    start: u64,
    len: usize,
) -> Result<Vec<u8>, Refusal> {
    read_range(root, v, start, len, WINDOW_MAX_BYTES)
}

/// The read behind [`read_chunk`] and [`read_window`]: `limit` must be `1..=max`.
fn read_range(
    root: &Path,
    v: &ArtifactVersion,
    offset: u64,
    limit: usize,
    max: usize,
) -> Result<Vec<u8>, Refusal> {
    if limit == 0 || limit > max || offset > ARTIFACT_MAX_BYTES {
        return Err(Refusal::Bounds);
    }
    let rel = validate_path(&v.rel_path)?;
    if v.size > ARTIFACT_MAX_BYTES {
        return Err(Refusal::TooLarge);
    }
    if offset > v.size {
        return Err(Refusal::Bounds);
    }
    let opened = Opened::open(root, &rel, Resolve::Openat2)?;
    check_version(&opened.ident, v)?;
    let remaining = v.size - offset;
    let want = usize::try_from(remaining).map_or(limit, |r| r.min(limit));
    let mut bytes = vec![0u8; want];
    opened.read_exact_at(&mut bytes, offset)?;
    opened.recheck()?;
    Ok(bytes)
}

/// Re-reads the whole file and checks that it is still exactly version `v`.
///
/// Refuses as [`read_chunk`] does (missing, link, replaced, grown past the limit, changed during
/// the read) and, when the content's sha256 differs from `v.sha256`,
/// [`Refusal::VersionChanged`] — even if size and mtime were restored. A file whose content is
/// the same but whose stat changed (size, mtime or ctime, e.g. touched) is
/// [`Refusal::Modified`], since [`read_chunk`] would refuse it: `Ok(())` means every chunk of
/// `v` is readable now.
pub fn verify_version(root: &Path, v: &ArtifactVersion) -> Result<(), Refusal> {
    let rel = validate_path(&v.rel_path)?;
    if v.size > ARTIFACT_MAX_BYTES {
        return Err(Refusal::TooLarge);
    }
    let opened = Opened::open(root, &rel, Resolve::Openat2)?;
    if !same_object(&opened.ident, v) {
        return Err(Refusal::Replaced);
    }
    if opened.ident.size > ARTIFACT_MAX_BYTES {
        return Err(Refusal::TooLarge);
    }
    let sha256 = hash_whole(&opened)?;
    opened.recheck()?;
    if sha256 != v.sha256 {
        return Err(Refusal::VersionChanged);
    }
    check_version(&opened.ident, v)
}

fn same_object(id: &Ident, v: &ArtifactVersion) -> bool {
    id.dev == v.dev && id.ino == v.ino
}

/// The opened file is the registered object (`Replaced`), within the limit (`TooLarge`), with
/// the registered size and timestamps (`Modified`).
fn check_version(id: &Ident, v: &ArtifactVersion) -> Result<(), Refusal> {
    if !same_object(id, v) {
        return Err(Refusal::Replaced);
    }
    if id.size > ARTIFACT_MAX_BYTES {
        return Err(Refusal::TooLarge);
    }
    let registered = Ident {
        dev: v.dev,
        ino: v.ino,
        nlink: id.nlink,
        size: v.size,
        mtime_ns: v.mtime_ns,
        ctime_ns: v.ctime_ns,
    };
    compare(id, &registered)
}

/// sha256 (lowercase hex) of the whole opened file, whose size at open is `opened.ident.size`
/// (at most [`ARTIFACT_MAX_BYTES`]). Reads at most that size plus one byte: a file that ends
/// early or goes on past it changed during the read (`Modified`, or `TooLarge` past the limit).
fn hash_whole(opened: &Opened) -> Result<String, Refusal> {
    let size = opened.ident.size;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; HASH_BUF_BYTES];
    let mut done: u64 = 0;
    loop {
        // Ask for one byte past the expected end, to notice growth.
        let left = size.saturating_add(1).saturating_sub(done);
        let ask = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        let Some(window) = buf.get_mut(..ask) else {
            return Err(Refusal::Io);
        };
        let n = opened.read_at(window, done)?;
        if n == 0 {
            break;
        }
        let Some(read) = window.get(..n) else {
            return Err(Refusal::Io);
        };
        done = done.saturating_add(u64::try_from(n).map_err(|_| Refusal::Io)?);
        if done > size {
            return Err(if done > ARTIFACT_MAX_BYTES {
                Refusal::TooLarge
            } else {
                Refusal::Modified
            });
        }
        hasher.update(read);
    }
    if done != size {
        return Err(Refusal::Modified);
    }
    Ok(hex::encode(hasher.finalize()))
}
