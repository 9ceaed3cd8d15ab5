//! Artifacts: files a trusted producer registered for a run, read back by a reader in bounded
//! chunks.
//!
//! This crate owns:
//! - the **path rules** for an artifact path ([`validate_path`]): relative to the workspace root,
//!   no traversal, absolute, UNC, URL, Windows stream or drive path, no credential-like name, no
//!   `.git` and none of runread's own files, bounded length;
//! - the **MIME allowlist** ([`MIME_ALLOWED`], [`check_mime`], [`guess_mime`]);
//! - **link-safe opening** beneath the workspace root: no symbolic link is followed on any
//!   component, and the leaf must be a regular file with a single name; [`Folder`] opens a
//!   folder the same way for a caller that reads small files nobody registered (Claude Code's
//!   subagent records), so that there is one link-safe opener;
//! - **registration** ([`register`]): one whole, bounded read that fixes an [`ArtifactVersion`]
//!   (size, sha256, device, inode, mtime, ctime);
//! - **reading** ([`read_chunk`], [`read_window`], [`verify_version`], [`present`]): bounded chunks of exactly that version,
//!   refused when the file is missing, replaced, modified, grown past the limit or linked.
//!   Descriptor and path identity and stat are checked before and after every read.
//!
//! It may not: decide who registers (only a trusted producer calls [`register`] — never a reader
//! and never text in a model's answer; that is the caller's policy), store anything, know about
//! grants, MCP or the store, write, create, rename or delete any file, or follow a link. A
//! [`Refusal`] never carries a path or OS error text.
//!
//! Not an OS sandbox: a process running as the same user can change a file; this crate detects
//! the change at the next read (or, for content rewritten with its size and timestamps restored,
//! at [`verify_version`]), it cannot prevent it.
#![forbid(unsafe_code)]

mod artifact;
mod mime;
mod path;
mod platform;

pub use artifact::{
    ARTIFACT_MAX_BYTES, ArtifactVersion, Chunk, SECRET_MAX_BYTES, TRANSFER_MAX_BYTES,
    WINDOW_MAX_BYTES, present, read_chunk, read_window, register, verify_version,
};
pub use mime::{MIME_ALLOWED, MIME_FALLBACK, check_mime, guess_mime};
pub use path::{
    MAX_COMPONENT_BYTES, MAX_PATH_BYTES, RUNREAD_OWN_FILE_PREFIXES, RelPath, validate_path,
};
pub use platform::folder::Folder;

/// Why an artifact path, registration or read was refused.
///
/// Each variant has a fixed code ([`Refusal::as_str`]). A refusal never carries a path, a file
/// name or OS error text, so it can be shown to a reader as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// A `..` component.
    Traversal,
    /// An absolute path (`/…`).
    Absolute,
    /// A UNC path (`\\server\share`, `//server/share`).
    Unc,
    /// A URL (`scheme://…`, `file:…`).
    Url,
    /// A Windows alternate data stream (`name:stream`), or any other `:` in a component.
    AlternateDataStream,
    /// A Windows drive letter (`C:`, `C:\…`, `C:/…`).
    DriveLetter,
    /// A backslash anywhere in the path.
    Backslash,
    /// NUL or another control character.
    ControlChar,
    /// An empty path, an empty component (`a//b`, trailing `/`) or a `.` component.
    EmptyComponent,
    /// A credential-like name: `.env`, `.env.*`, `*.pem`, `*.key`, `*.pfx`, `*.p12`, or a
    /// component containing `auth`, `credential`, `secret` or `token` (any case).
    CredentialLikeName,
    /// A `.git` component (any case).
    GitDir,
    /// One of runread's own files ([`RUNREAD_OWN_FILE_PREFIXES`]).
    RunreadFile,
    /// Longer than [`MAX_PATH_BYTES`], or a component longer than [`MAX_COMPONENT_BYTES`].
    PathTooLong,
    /// A symbolic link at the leaf or on any ancestor directory.
    Symlink,
    /// The file has more than one name (hard link).
    Hardlink,
    /// Not a regular file (directory, device, FIFO, socket), or an ancestor is not a directory.
    NotRegular,
    /// The file (or an ancestor directory) does not exist.
    Missing,
    /// The path names another file object (device, inode) than the one registered or opened.
    Replaced,
    /// The file's size, mtime or ctime changed (since registration, or during the read).
    Modified,
    /// The file is larger than [`ARTIFACT_MAX_BYTES`].
    TooLarge,
    /// The content's sha256 differs from the registered version.
    VersionChanged,
    /// The MIME type is not in [`MIME_ALLOWED`].
    MimeRefused,
    /// Offset or limit outside the allowed range.
    Bounds,
    /// Any other I/O failure (permission, the workspace root itself, …).
    Io,
}

impl Refusal {
    /// Every refusal, in declaration order.
    pub const ALL: [Refusal; 24] = [
        Refusal::Traversal,
        Refusal::Absolute,
        Refusal::Unc,
        Refusal::Url,
        Refusal::AlternateDataStream,
        Refusal::DriveLetter,
        Refusal::Backslash,
        Refusal::ControlChar,
        Refusal::EmptyComponent,
        Refusal::CredentialLikeName,
        Refusal::GitDir,
        Refusal::RunreadFile,
        Refusal::PathTooLong,
        Refusal::Symlink,
        Refusal::Hardlink,
        Refusal::NotRegular,
        Refusal::Missing,
        Refusal::Replaced,
        Refusal::Modified,
        Refusal::TooLarge,
        Refusal::VersionChanged,
        Refusal::MimeRefused,
        Refusal::Bounds,
        Refusal::Io,
    ];

    /// The fixed, stable code of this refusal.
    pub fn as_str(&self) -> &'static str {
        match self {
            Refusal::Traversal => "path_traversal",
            Refusal::Absolute => "path_absolute",
            Refusal::Unc => "path_unc",
            Refusal::Url => "path_url",
            Refusal::AlternateDataStream => "path_alternate_data_stream",
            Refusal::DriveLetter => "path_drive_letter",
            Refusal::Backslash => "path_backslash",
            Refusal::ControlChar => "path_control_char",
            Refusal::EmptyComponent => "path_empty_component",
            Refusal::CredentialLikeName => "credential_like_name",
            Refusal::GitDir => "path_git_dir",
            Refusal::RunreadFile => "path_runread_file",
            Refusal::PathTooLong => "path_too_long",
            Refusal::Symlink => "symlink",
            Refusal::Hardlink => "hardlink",
            Refusal::NotRegular => "not_regular",
            Refusal::Missing => "missing",
            Refusal::Replaced => "replaced",
            Refusal::Modified => "modified",
            Refusal::TooLarge => "too_large",
            Refusal::VersionChanged => "version_changed",
            Refusal::MimeRefused => "mime_refused",
            Refusal::Bounds => "bounds",
            Refusal::Io => "io",
        }
    }

    /// Whether this refusal comes from the path rules ([`validate_path`]) rather than from the
    /// file system, the MIME allowlist or the bounds. A caller that wants one coarse code for
    /// every path rule can use `path_refused` when this is true.
    pub fn is_path_rule(&self) -> bool {
        matches!(
            self,
            Refusal::Traversal
                | Refusal::Absolute
                | Refusal::Unc
                | Refusal::Url
                | Refusal::AlternateDataStream
                | Refusal::DriveLetter
                | Refusal::Backslash
                | Refusal::ControlChar
                | Refusal::EmptyComponent
                | Refusal::CredentialLikeName
                | Refusal::GitDir
                | Refusal::RunreadFile
                | Refusal::PathTooLong
        )
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for Refusal {}

#[cfg(test)]
mod tests {
    use super::Refusal;
    use std::collections::HashSet;

    #[test]
    fn refusal_codes_are_unique_and_snake_case() {
        let codes: HashSet<&str> = Refusal::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(codes.len(), Refusal::ALL.len());
        for c in codes {
            assert!(
                c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{c}"
            );
        }
    }
}
