//! Opening and recognising files: link-safe, never blocking, owner-only, read at an offset.
//!
//! On Unix (Linux, macOS, the BSDs) these are POSIX calls through std's Unix extensions. Elsewhere
//! each fails closed: [`Stat::of`] has no identity to give, [`is_owner_only`] is never true and
//! [`refused_link`] cannot tell a link apart, so a caller that checks what it opened (every
//! caller in runread does) refuses the file.

use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::path::Path;

/// What identifies one version of a file: where it lives (device, inode), how many names it has,
/// its size, and its modification and status-change times in nanoseconds. The status-change time
/// is what an in-place rewrite cannot hide: a write, `chmod` or time change sets it to now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

impl Stat {
    /// The stat of `meta`; `None` where the system gives a file no device-and-inode identity.
    #[cfg(unix)]
    pub fn of(meta: &Metadata) -> Option<Stat> {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Some(Stat {
            dev: meta.dev(),
            ino: meta.ino(),
            nlink: meta.nlink(),
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        })
    }

    /// No identity here: a native Windows port would take the volume serial number and file
    /// index (`GetFileInformationByHandle`).
    #[cfg(not(unix))]
    pub fn of(_meta: &Metadata) -> Option<Stat> {
        None
    }

    /// Same file object (device and inode), whatever its content or name: on a case-insensitive
    /// volume, `Notes.jsonl` and `notes.jsonl` are one object.
    pub fn same_object(&self, other: &Stat) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// Opens without following a link at the leaf, without blocking on a FIFO or device put in a
/// file's place, and closed on `exec`: the flags of every evidence and secret read. The caller
/// still checks what it opened (type, links, identity).
pub fn link_safe(opts: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
    }
    #[cfg(not(unix))]
    {
        opts
    }
}

/// Opens following links (a file an operator named, which orchestrators mount as a link), but
/// never blocking and closed on `exec`.
pub fn never_blocking(opts: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK)
    }
    #[cfg(not(unix))]
    {
        opts
    }
}

/// A file this call creates is its owner's alone (mode 0600) from its first byte.
pub fn owner_only_file(opts: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600)
    }
    #[cfg(not(unix))]
    {
        opts
    }
}

/// A folder this builder creates is its owner's alone (mode 0700).
pub fn owner_only_dir(builder: &mut DirBuilder) -> &mut DirBuilder {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700)
    }
    #[cfg(not(unix))]
    {
        builder
    }
}

/// Makes the file at `path` its owner's alone (mode 0600).
pub fn restrict_to_owner(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// Whether `meta`'s permissions keep the file to its owner: nothing for group or others. The one
/// rule for every file runread keeps secret (sealing keys, journal entries, key files, the home).
/// Never true where permissions are not mode bits: an unverifiable file is not private.
pub fn is_owner_only(meta: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        mode_is_owner_only(meta.permissions().mode())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Whether permission bits (`st_mode`) give group and others nothing.
pub fn mode_is_owner_only(mode: u32) -> bool {
    mode & 0o077 == 0
}

/// Whether `e` is an open refused because the leaf is a link ([`link_safe`]). Linux and macOS
/// answer `ELOOP`; FreeBSD and DragonFly `EMLINK`; NetBSD `EFTYPE`.
pub fn refused_link(e: &std::io::Error) -> bool {
    #[cfg(any(target_os = "freebsd", target_os = "dragonfly"))]
    let code = libc::EMLINK;
    #[cfg(target_os = "netbsd")]
    let code = libc::EFTYPE;
    #[cfg(all(
        unix,
        not(any(target_os = "freebsd", target_os = "dragonfly", target_os = "netbsd"))
    ))]
    let code = libc::ELOOP;
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(code)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Reads into `buf` from `offset` without moving the file's position (`pread`): concurrent readers
/// of one descriptor do not disturb each other.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_at(buf, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        file.seek_read(buf, offset)
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (file, buf, offset);
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// Fills `buf` from `offset` ([`read_at`] until full); `UnexpectedEof` when the file ends first.
pub fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = buf.get_mut(n..).unwrap_or_default();
                offset = offset.saturating_add(n as u64);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_link_at_the_leaf_is_refused_and_said_to_be_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, b"x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = link_safe(OpenOptions::new().read(true))
            .open(&link)
            .unwrap_err();
        assert!(refused_link(&e), "{e:?}");
        assert!(link_safe(OpenOptions::new().read(true)).open(&real).is_ok());
        // A missing file is not a link.
        let missing = link_safe(OpenOptions::new().read(true))
            .open(dir.path().join("none"))
            .unwrap_err();
        assert!(!refused_link(&missing));
        // Following is the operator's choice.
        assert!(
            never_blocking(OpenOptions::new().read(true))
                .open(&link)
                .is_ok()
        );
    }

    #[test]
    fn a_fifo_in_a_files_place_does_not_block_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        // Returns at once (no writer): a blocking open would hang this test.
        let f = link_safe(OpenOptions::new().read(true))
            .open(&fifo)
            .unwrap();
        assert!(!f.metadata().unwrap().is_file());
    }

    #[test]
    fn created_files_and_folders_are_the_owners_alone() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("secret");
        owner_only_file(OpenOptions::new().write(true).create_new(true))
            .open(&f)
            .unwrap();
        assert!(is_owner_only(&std::fs::metadata(&f).unwrap()));
        let d = dir.path().join("a/b");
        owner_only_dir(DirBuilder::new().recursive(true))
            .create(&d)
            .unwrap();
        assert!(is_owner_only(&std::fs::metadata(&d).unwrap()));
        let open = dir.path().join("open");
        std::fs::write(&open, b"x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(!is_owner_only(&std::fs::metadata(&open).unwrap()));
        restrict_to_owner(&open).unwrap();
        assert!(is_owner_only(&std::fs::metadata(&open).unwrap()));
    }

    #[test]
    fn owner_only_is_no_bit_for_group_or_others() {
        assert!(mode_is_owner_only(0o600) && mode_is_owner_only(0o700));
        for bad in [0o601, 0o602, 0o604, 0o610, 0o620, 0o640, 0o644] {
            assert!(!mode_is_owner_only(bad), "{bad:o}");
        }
    }

    #[test]
    fn stat_knows_one_object_by_every_name_and_sees_a_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, b"one").unwrap();
        let b = dir.path().join("b");
        std::fs::hard_link(&a, &b).unwrap();
        let sa = Stat::of(&std::fs::metadata(&a).unwrap()).unwrap();
        let sb = Stat::of(&std::fs::metadata(&b).unwrap()).unwrap();
        assert!(sa.same_object(&sb));
        assert_eq!((sa.nlink, sa.size), (2, 3));
        let c = dir.path().join("c");
        std::fs::write(&c, b"one").unwrap();
        assert!(!sa.same_object(&Stat::of(&std::fs::metadata(&c).unwrap()).unwrap()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&a)
            .unwrap()
            .write_all(b"!")
            .unwrap();
        let after = Stat::of(&std::fs::metadata(&a).unwrap()).unwrap();
        assert!(after.same_object(&sa) && after != sa && after.ctime_ns > sa.ctime_ns);
    }

    #[test]
    fn positioned_reads_read_exactly_there_and_stop_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let f = File::open(&p).unwrap();
        let mut buf = [0u8; 4];
        read_exact_at(&f, &mut buf, 3).unwrap();
        assert_eq!(&buf, b"3456");
        let mut buf = [0u8; 4];
        assert_eq!(
            read_exact_at(&f, &mut buf, 8).unwrap_err().kind(),
            std::io::ErrorKind::UnexpectedEof
        );
        assert_eq!(read_at(&f, &mut buf, 10).unwrap(), 0);
    }
}
