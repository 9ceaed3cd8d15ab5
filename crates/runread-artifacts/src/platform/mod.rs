//! The artifacts crate's platform module: opening a file beneath the workspace root without
//! following any link, the identity (device, inode, link count, size, mtime, ctime) of what was
//! opened, and a folder opened that way ([`folder`]). Every system call of the crate is here.
//!
//! Linux and macOS side by side: Linux resolves the whole path in one `openat2` call; macOS (and
//! every other Unix) has no `openat2` and takes the per-component walk below, which is just as
//! strict. On macOS's APFS, names are case-insensitive by default: `SRC/Main.rs` opens
//! `src/main.rs` — the same file object, so the identity checks hold — and the path rules
//! ([`crate::validate_path`]) already compare `.git`, runread's own files and credential-like
//! names without regard to case. Unix only: a native Windows port would need its own walk
//! (`FILE_FLAG_OPEN_REPARSE_POINT` per component); see docs/architecture.md.
//!
//! Why `rustix` and not `cap-std`: the rule here is "no symbolic link on any component", not
//! "stay inside the root". `cap-std`'s `Dir::open` follows symbolic links that resolve inside
//! its root on ancestor components (only the leaf can be `nofollow`), so refusing a symlinked
//! ancestor would need our own per-component walk on top of it anyway, plus a dozen crates
//! (cap-primitives, io-lifetimes, ambient-authority, fs-set-times, …). `rustix` gives exactly the
//! two system calls needed, safely, with only its `fs` API enabled, and it is already in the
//! lockfile (through `tempfile`).
//!
//! How: on Linux, `openat2(root, rel, O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC,
//! RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: the kernel refuses a link on
//! any component and any escape from `root` in one call. Where `openat2` does not exist
//! (`ENOSYS`: kernels before 5.6, other Unixes) or is filtered (`EPERM`: older container seccomp
//! profiles), a walk opens every ancestor with `openat(dir, name, O_DIRECTORY|O_NOFOLLOW)` from
//! the previous descriptor and the leaf with `openat(parent, leaf, O_NOFOLLOW)`; a component
//! that is a link fails the open. The same walk, ending in `fstatat(parent, leaf,
//! AT_SYMLINK_NOFOLLOW)`, gives the *path's* identity, checked against the descriptor's `fstat`
//! before and after every read.
//!
//! The workspace root itself is trusted configuration and is opened as given (following links
//! in it); everything beneath it is link-safe.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use crate::{Refusal, RelPath};

pub(crate) mod folder;

/// Flags for the leaf: read only; never follow a link; never block on a FIFO or device (it is
/// refused right after, by `fstat`); never become a controlling terminal.
const LEAF_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

/// Flags for each ancestor directory in the walk.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

/// `openat2` answers `EAGAIN` when a rename or mount raced the lookup; retry a few times.
#[cfg(any(target_os = "linux", target_os = "android"))]
const OPENAT2_ATTEMPTS: usize = 8;

/// What identifies one version of a file: runread's one file identity, taken here from the
/// descriptor or the walk rather than from `std`'s metadata.
pub(crate) type Ident = runread_platform::file::Stat;

/// How the leaf is opened. `Walk` is the fallback, also used directly by tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolve {
    Openat2,
    #[cfg_attr(
        any(target_os = "linux", target_os = "android"),
        allow(
            dead_code,
            reason = "used by tests; the fallback calls the walk directly"
        )
    )]
    Walk,
}

/// An artifact opened link-safely, with the identity its descriptor and its path agreed on.
pub(crate) struct Opened {
    root: OwnedFd,
    rel: RelPath,
    file: File,
    pub ident: Ident,
}

impl Opened {
    /// Opens `rel` beneath `root`: the path's identity (by a no-follow walk) is taken first, so a
    /// link, a non-regular file or a missing file is refused before anything is opened; then the
    /// leaf is opened link-safely, and its descriptor must be the same object with the same
    /// stat, and have a single name.
    pub fn open(root: &Path, rel: &RelPath, how: Resolve) -> Result<Opened, Refusal> {
        Opened::open_beneath(open_root(root)?, rel, how)
    }

    /// [`Opened::open`] beneath a directory already opened (`root_fd`), which the opened file
    /// keeps for its [`Opened::recheck`].
    pub(crate) fn open_beneath(
        root_fd: OwnedFd,
        rel: &RelPath,
        how: Resolve,
    ) -> Result<Opened, Refusal> {
        let path_before = path_ident(root_fd.as_fd(), rel)?;
        let fd = open_leaf(root_fd.as_fd(), rel, how)?;
        let fd_before = fd_ident(fd.as_fd())?;
        compare(&fd_before, &path_before)?;
        check_links(&fd_before)?;
        Ok(Opened {
            root: root_fd,
            rel: rel.clone(),
            file: File::from(fd),
            ident: fd_before,
        })
    }

    /// After a read: the descriptor and a fresh no-follow walk of the path must both still show
    /// the identity seen at open, and the file must still have exactly one name.
    pub fn recheck(&self) -> Result<(), Refusal> {
        let fd_after = fd_ident(self.file.as_fd())?;
        check_links(&fd_after)?;
        compare(&fd_after, &self.ident)?;
        let path_after = path_ident(self.root.as_fd(), &self.rel)?;
        compare(&path_after, &self.ident)?;
        check_links(&path_after)
    }

    /// Reads exactly `buf.len()` bytes at `offset`; a file that ends before is `Modified`.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), Refusal> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => Refusal::Modified,
                _ => Refusal::Io,
            })
    }

    /// Reads at most `buf.len()` bytes at `offset` (0 at end of file).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize, Refusal> {
        loop {
            match self.file.read_at(buf, offset) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Err(Refusal::Io),
            }
        }
    }
}

/// Same object (else `Replaced`) with the same size, mtime and ctime (else `Modified`).
pub(crate) fn compare(now: &Ident, then: &Ident) -> Result<(), Refusal> {
    if !now.same_object(then) {
        return Err(Refusal::Replaced);
    }
    if now.size != then.size || now.mtime_ns != then.mtime_ns || now.ctime_ns != then.ctime_ns {
        return Err(Refusal::Modified);
    }
    Ok(())
}

pub(crate) fn check_links(id: &Ident) -> Result<(), Refusal> {
    match id.nlink {
        0 => Err(Refusal::Missing),
        1 => Ok(()),
        _ => Err(Refusal::Hardlink),
    }
}

pub(crate) fn open_root(root: &Path) -> Result<OwnedFd, Refusal> {
    rustix::fs::open(root, DIR_FLAGS.difference(OFlags::NOFOLLOW), Mode::empty()).map_err(|e| {
        match e {
            Errno::NOENT => Refusal::Missing,
            _ => Refusal::Io,
        }
    })
}

/// Opens the leaf without following a link on any component.
pub(crate) fn open_leaf(
    root: BorrowedFd<'_>,
    rel: &RelPath,
    how: Resolve,
) -> Result<OwnedFd, Refusal> {
    match how {
        Resolve::Openat2 => open_leaf_openat2(root, rel),
        Resolve::Walk => open_leaf_walk(root, rel),
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_leaf_openat2(root: BorrowedFd<'_>, rel: &RelPath) -> Result<OwnedFd, Refusal> {
    use rustix::fs::ResolveFlags;
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..OPENAT2_ATTEMPTS {
        match rustix::fs::openat2(root, rel.as_str(), LEAF_FLAGS, Mode::empty(), resolve) {
            Ok(fd) => return Ok(fd),
            Err(Errno::AGAIN | Errno::INTR) => continue,
            // No openat2 (before Linux 5.6), or a seccomp filter that refuses it: the walk is
            // just as strict, one component at a time.
            Err(Errno::NOSYS | Errno::PERM) => return open_leaf_walk(root, rel),
            Err(e) => return Err(map_errno(e)),
        }
    }
    Err(Refusal::Io)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_leaf_openat2(root: BorrowedFd<'_>, rel: &RelPath) -> Result<OwnedFd, Refusal> {
    open_leaf_walk(root, rel)
}

fn open_leaf_walk(root: BorrowedFd<'_>, rel: &RelPath) -> Result<OwnedFd, Refusal> {
    let (parent, leaf) = walk_parent(root, rel)?;
    let dir = parent.as_ref().map_or(root, AsFd::as_fd);
    rustix::fs::openat(dir, leaf, LEAF_FLAGS, Mode::empty()).map_err(|e| classify_at(dir, leaf, e))
}

/// The identity of the regular file the path names now, by a walk that follows no link
/// (`fstatat(…, AT_SYMLINK_NOFOLLOW)` on the leaf).
pub(crate) fn path_ident(root: BorrowedFd<'_>, rel: &RelPath) -> Result<Ident, Refusal> {
    let (parent, leaf) = walk_parent(root, rel)?;
    let dir = parent.as_ref().map_or(root, AsFd::as_fd);
    let st = rustix::fs::statat(dir, leaf, AtFlags::SYMLINK_NOFOLLOW).map_err(map_errno)?;
    regular_ident(&st)
}

/// The descriptor's identity; it must be a regular file.
pub(crate) fn fd_ident(fd: BorrowedFd<'_>) -> Result<Ident, Refusal> {
    let st = rustix::fs::fstat(fd).map_err(map_errno)?;
    regular_ident(&st)
}

/// Opens every ancestor directory of `rel` in turn, each from the previous descriptor, with
/// `O_DIRECTORY|O_NOFOLLOW`. Returns the parent (`None`: the root) and the leaf name.
fn walk_parent<'r>(
    root: BorrowedFd<'_>,
    rel: &'r RelPath,
) -> Result<(Option<OwnedFd>, &'r str), Refusal> {
    let Some((dirs, leaf)) = rel.as_str().rsplit_once('/') else {
        return Ok((None, rel.as_str()));
    };
    Ok((walk_dirs(root, dirs.split('/'))?, leaf))
}

/// Opens each of `names` in turn, each from the previous descriptor (the first from `root`),
/// with `O_DIRECTORY|O_NOFOLLOW`: a link or anything but a directory on the way is refused.
/// Returns the last (`None`: no names, the root itself). The caller has checked that each name
/// is one ordinary component (no `/`, never `.` or `..`).
pub(crate) fn walk_dirs<'n>(
    root: BorrowedFd<'_>,
    names: impl IntoIterator<Item = &'n str>,
) -> Result<Option<OwnedFd>, Refusal> {
    let mut cur: Option<OwnedFd> = None;
    for name in names {
        let dir = cur.as_ref().map_or(root, AsFd::as_fd);
        let next = rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())
            .map_err(|e| classify_at(dir, name, e))?;
        // O_DIRECTORY already ensures this; checked again so a surprise is never followed.
        let st = rustix::fs::fstat(&next).map_err(map_errno)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return Err(Refusal::NotRegular);
        }
        cur = Some(next);
    }
    Ok(cur)
}

/// The UTF-8 names among the first `max` entries `dir` lists (`.` and `..` not counted); what each
/// entry is, is not looked at.
pub(crate) fn list_names(dir: &OwnedFd, max: usize) -> Result<Vec<String>, Refusal> {
    let listing = rustix::fs::Dir::read_from(dir).map_err(|_| Refusal::Io)?;
    let mut out = Vec::new();
    let mut looked_at = 0usize;
    for entry in listing {
        let entry = entry.map_err(|_| Refusal::Io)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if looked_at == max {
            break;
        }
        looked_at += 1;
        if let Ok(name) = std::str::from_utf8(name) {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

/// Why opening `name` in `dir` failed: a link, something that is not what was expected, gone.
fn classify_at(dir: BorrowedFd<'_>, name: &str, e: Errno) -> Refusal {
    match e {
        // ELOOP (Linux, macOS), EMLINK (FreeBSD) for O_NOFOLLOW on a link; ENOTDIR for O_DIRECTORY on
        // a link or a file. Look without following to tell which.
        Errno::LOOP | Errno::MLINK | Errno::NOTDIR => {
            match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    Refusal::Symlink
                }
                Ok(_) => Refusal::NotRegular,
                Err(e) => map_errno(e),
            }
        }
        _ => map_errno(e),
    }
}

fn map_errno(e: Errno) -> Refusal {
    match e {
        Errno::NOENT => Refusal::Missing,
        // With RESOLVE_NO_SYMLINKS / O_NOFOLLOW, ELOOP means a link on the way.
        Errno::LOOP => Refusal::Symlink,
        Errno::NOTDIR => Refusal::NotRegular,
        // RESOLVE_BENEATH: the lookup would have left the root.
        Errno::XDEV => Refusal::Traversal,
        _ => Refusal::Io,
    }
}

fn regular_ident(st: &Stat) -> Result<Ident, Refusal> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => ident_of(st),
        FileType::Symlink => Err(Refusal::Symlink),
        _ => Err(Refusal::NotRegular),
    }
}

// `struct stat` field types differ by architecture and OS (`c_ulong`, `u64`, `u32`, `i64`):
// every field goes through `i128`, which holds them all, then to the type `Ident` uses.
fn ident_of(st: &Stat) -> Result<Ident, Refusal> {
    let ns = |sec: i64, nsec: i64| sec.saturating_mul(1_000_000_000).saturating_add(nsec);
    let to_u64 = |v: i128| u64::try_from(v).map_err(|_| Refusal::Io);
    let to_i64 = |v: i128| i64::try_from(v).map_err(|_| Refusal::Io);
    Ok(Ident {
        dev: to_u64(i128::from(st.st_dev))?,
        ino: to_u64(i128::from(st.st_ino))?,
        nlink: to_u64(i128::from(st.st_nlink))?,
        size: to_u64(i128::from(st.st_size))?,
        mtime_ns: ns(
            to_i64(i128::from(st.st_mtime))?,
            to_i64(i128::from(st.st_mtime_nsec))?,
        ),
        ctime_ns: ns(
            to_i64(i128::from(st.st_ctime))?,
            to_i64(i128::from(st.st_ctime_nsec))?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate_path;
    use std::os::unix::fs::symlink;

    fn modes() -> [Resolve; 2] {
        [Resolve::Openat2, Resolve::Walk]
    }

    fn root_fd(dir: &Path) -> OwnedFd {
        open_root(dir).unwrap()
    }

    #[test]
    fn both_modes_open_a_plain_nested_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/f.txt"), b"x").unwrap();
        let root = root_fd(dir.path());
        let rel = validate_path("a/b/f.txt").unwrap();
        for how in modes() {
            let fd = open_leaf(root.as_fd(), &rel, how).unwrap();
            let id = fd_ident(fd.as_fd()).unwrap();
            assert_eq!(id, path_ident(root.as_fd(), &rel).unwrap(), "{how:?}");
        }
    }

    #[test]
    fn both_modes_refuse_a_symlinked_leaf() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real.txt"), b"x").unwrap();
        symlink("real.txt", dir.path().join("link.txt")).unwrap();
        let root = root_fd(dir.path());
        let rel = validate_path("link.txt").unwrap();
        for how in modes() {
            assert_eq!(
                open_leaf(root.as_fd(), &rel, how).unwrap_err(),
                Refusal::Symlink,
                "{how:?}"
            );
        }
        assert_eq!(
            path_ident(root.as_fd(), &rel).unwrap_err(),
            Refusal::Symlink
        );
    }

    #[test]
    fn both_modes_refuse_a_symlinked_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("real/sub")).unwrap();
        std::fs::write(dir.path().join("real/sub/f.txt"), b"x").unwrap();
        symlink("real", dir.path().join("via")).unwrap();
        let root = root_fd(dir.path());
        for p in ["via/sub/f.txt", "real/sub/../sub/f.txt"] {
            let Ok(rel) = validate_path(p) else { continue };
            for how in modes() {
                assert_eq!(
                    open_leaf(root.as_fd(), &rel, how).unwrap_err(),
                    Refusal::Symlink,
                    "{how:?}"
                );
            }
            assert_eq!(
                path_ident(root.as_fd(), &rel).unwrap_err(),
                Refusal::Symlink
            );
        }
        // A link deeper down, pointing inside the root, is refused too.
        symlink("sub", dir.path().join("real/deeper")).unwrap();
        let rel = validate_path("real/deeper/f.txt").unwrap();
        for how in modes() {
            assert_eq!(
                open_leaf(root.as_fd(), &rel, how).unwrap_err(),
                Refusal::Symlink,
                "{how:?}"
            );
        }
    }

    #[test]
    fn both_modes_refuse_missing_and_file_as_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), b"x").unwrap();
        let root = root_fd(dir.path());
        for how in modes() {
            let rel = validate_path("nope/f.txt").unwrap();
            assert_eq!(
                open_leaf(root.as_fd(), &rel, how).unwrap_err(),
                Refusal::Missing
            );
            let rel = validate_path("nope.txt").unwrap();
            assert_eq!(
                open_leaf(root.as_fd(), &rel, how).unwrap_err(),
                Refusal::Missing
            );
            let rel = validate_path("f.txt/inner").unwrap();
            assert_eq!(
                open_leaf(root.as_fd(), &rel, how).unwrap_err(),
                Refusal::NotRegular
            );
        }
    }

    #[test]
    fn a_socket_or_directory_is_not_regular() {
        let dir = tempfile::tempdir().unwrap();
        let _l = std::os::unix::net::UnixListener::bind(dir.path().join("s.sock")).unwrap();
        std::fs::create_dir(dir.path().join("d.txt")).unwrap();
        let root = root_fd(dir.path());
        for p in ["s.sock", "d.txt"] {
            let rel = validate_path(p).unwrap();
            assert_eq!(
                path_ident(root.as_fd(), &rel).unwrap_err(),
                Refusal::NotRegular,
                "{p}"
            );
            assert_eq!(
                Opened::open(dir.path(), &rel, Resolve::Openat2).err(),
                Some(Refusal::NotRegular)
            );
        }
    }
}
