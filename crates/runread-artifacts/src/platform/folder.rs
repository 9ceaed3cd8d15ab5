//! A folder beneath a trusted root, opened and read by an artifact's rules: for a caller that
//! lists a folder nobody registered and reads the small files in it (Claude Code's subagent
//! records beside a session file) without a link-safe opener of its own.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use crate::Refusal;
use crate::path::component;
use crate::platform::{Opened, Resolve, check_links, list_names, open_root, path_ident, walk_dirs};

/// A directory opened beneath a trusted root without following a link on any component below it
/// (each one `O_DIRECTORY|O_NOFOLLOW` from the one before, as an artifact's ancestors are). Its
/// entries are named, opened and looked at from that descriptor, so a link put in the folder's
/// place afterwards changes nothing; each file is opened as an artifact is (no link, a regular
/// file with one name, descriptor and name agreeing before and after the read).
pub struct Folder {
    dir: OwnedFd,
}

impl Folder {
    /// Opens `names`, one component each, beneath `root` (opened as given, following links in
    /// it: trusted, as a workspace root is). A name that is empty, `.`, `..`, or holds a `/` or a
    /// control character is refused before any I/O; a link or a file on the way is
    /// [`Refusal::Symlink`] or [`Refusal::NotRegular`].
    pub fn open(root: &Path, names: &[&str]) -> Result<Folder, Refusal> {
        for name in names {
            component(name)?;
        }
        let root_fd = open_root(root)?;
        let dir = match walk_dirs(root_fd.as_fd(), names.iter().copied())? {
            Some(dir) => dir,
            None => root_fd,
        };
        Ok(Folder { dir })
    }

    /// The UTF-8 names among the first `max` entries the directory lists (`.` and `..` not
    /// counted); what each entry is, is not looked at.
    pub fn names(&self, max: usize) -> Result<Vec<String>, Refusal> {
        list_names(&self.dir, max)
    }

    /// The whole content of the file `name` in the folder, opened as an artifact is; one of more
    /// than `max_bytes` is [`Refusal::TooLarge`], refused before anything is read.
    pub fn read(&self, name: &str, max_bytes: u64) -> Result<Vec<u8>, Refusal> {
        let rel = component(name)?;
        let dir = self.dir.try_clone().map_err(|_| Refusal::Io)?;
        let opened = Opened::open_beneath(dir, &rel, Resolve::Openat2)?;
        if opened.ident.size > max_bytes {
            return Err(Refusal::TooLarge);
        }
        let len = usize::try_from(opened.ident.size).map_err(|_| Refusal::TooLarge)?;
        let mut bytes = vec![0u8; len];
        opened.read_exact_at(&mut bytes, 0)?;
        opened.recheck()?;
        Ok(bytes)
    }

    /// When the file `name` in the folder was last modified (nanoseconds since the epoch),
    /// looked at without following a link: it must be a regular file with one name.
    pub fn modified_ns(&self, name: &str) -> Result<i64, Refusal> {
        let rel = component(name)?;
        let id = path_ident(self.dir.as_fd(), &rel)?;
        check_links(&id)?;
        Ok(id.mtime_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// `root/a/b` holding `f` (`len` bytes), and `root/outside` holding `f` too.
    fn tree(len: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("a/b/f"), vec![b'x'; len]).unwrap();
        std::fs::write(dir.path().join("outside/f"), b"elsewhere").unwrap();
        dir
    }

    #[test]
    fn a_folder_reads_its_files_whole_up_to_the_bound_and_refuses_one_byte_more() {
        let dir = tree(10);
        let folder = Folder::open(dir.path(), &["a", "b"]).unwrap();
        assert_eq!(folder.names(10).unwrap(), ["f"]);
        assert_eq!(folder.read("f", 10).unwrap(), vec![b'x'; 10]);
        assert_eq!(folder.read("f", 9).unwrap_err(), Refusal::TooLarge);
        assert!(folder.modified_ns("f").is_ok());
        assert_eq!(folder.read("nope", 10).unwrap_err(), Refusal::Missing);
    }

    #[test]
    fn a_link_on_the_way_or_at_the_leaf_is_refused_and_no_name_walks_further() {
        let dir = tree(1);
        symlink(dir.path().join("outside"), dir.path().join("a/via")).unwrap();
        assert_eq!(
            Folder::open(dir.path(), &["a", "via"]).err(),
            Some(Refusal::Symlink)
        );
        assert_eq!(
            Folder::open(dir.path(), &["a", "b", "f"]).err(),
            Some(Refusal::NotRegular)
        );
        for (name, refusal) in [
            ("..", Refusal::Traversal),
            ("b/..", Refusal::Traversal),
            ("", Refusal::EmptyComponent),
            (".", Refusal::EmptyComponent),
        ] {
            assert_eq!(Folder::open(dir.path(), &["a", name]).err(), Some(refusal));
        }
        let folder = Folder::open(dir.path(), &["a", "b"]).unwrap();
        symlink(dir.path().join("outside/f"), dir.path().join("a/b/l")).unwrap();
        assert_eq!(folder.read("l", 100).unwrap_err(), Refusal::Symlink);
        assert_eq!(folder.modified_ns("l").unwrap_err(), Refusal::Symlink);
        assert_eq!(
            folder.read("../../outside/f", 100).unwrap_err(),
            Refusal::Traversal
        );
        std::fs::hard_link(dir.path().join("a/b/f"), dir.path().join("a/b/h")).unwrap();
        assert_eq!(folder.read("h", 100).unwrap_err(), Refusal::Hardlink);
        assert_eq!(folder.modified_ns("f").unwrap_err(), Refusal::Hardlink);
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_it_was_opened_is_still_the_one_opened() {
        let dir = tree(3);
        let folder = Folder::open(dir.path(), &["a", "b"]).unwrap();
        std::fs::rename(dir.path().join("a/b"), dir.path().join("a/old")).unwrap();
        symlink(dir.path().join("outside"), dir.path().join("a/b")).unwrap();
        assert_eq!(folder.read("f", 100).unwrap(), b"xxx");
    }

    #[test]
    fn names_look_at_most_at_the_bound() {
        let dir = tree(1);
        for n in 0..4 {
            std::fs::write(dir.path().join(format!("a/b/g{n}")), b"").unwrap();
        }
        let folder = Folder::open(dir.path(), &["a", "b"]).unwrap();
        assert_eq!(folder.names(5).unwrap().len(), 5);
        assert_eq!(folder.names(4).unwrap().len(), 4);
        assert_eq!(folder.names(100).unwrap().len(), 5);
    }
}
