//! Every artifact rule, each its own test, through the public API only.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use runread_artifacts::{
    ARTIFACT_MAX_BYTES, ArtifactVersion, MAX_COMPONENT_BYTES, MAX_PATH_BYTES, MIME_ALLOWED,
    Refusal, SECRET_MAX_BYTES, TRANSFER_MAX_BYTES, WINDOW_MAX_BYTES, check_mime, guess_mime,
    present, read_chunk, read_window, register, validate_path, verify_version,
};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

const MAX: usize = ARTIFACT_MAX_BYTES as usize;

fn ws() -> TempDir {
    tempfile::tempdir().unwrap()
}

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(p, bytes).unwrap();
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn registered(root: &Path, rel: &str, bytes: &[u8]) -> ArtifactVersion {
    put(root, rel, bytes);
    register(root, rel, "text/plain").unwrap()
}

/// Each path is refused by `validate_path` with `want`, by `register` with the same refusal,
/// and the refusal's text never contains the path.
fn refused(paths: &[&str], want: Refusal) {
    let dir = ws();
    for p in paths {
        assert_eq!(validate_path(p), Err(want), "{p:?}");
        assert_eq!(register(dir.path(), p, "text/plain"), Err(want), "{p:?}");
        assert!(want.is_path_rule());
        let shown = format!("{want} {want:?}");
        assert!(p.is_empty() || !shown.contains(*p), "{shown} carries {p:?}");
    }
}

// ---------------------------------------------------------------- path rules

#[test]
fn path_traversal_is_refused() {
    refused(
        &[
            "..",
            "../x.txt",
            "a/../b.txt",
            "a/..",
            "..\\x.txt",
            "a\\..\\b",
        ],
        Refusal::Traversal,
    );
}

#[test]
fn absolute_path_is_refused() {
    refused(
        &["/etc/passwd", "/", "/tmp/x.txt", "\\windows\\x.txt"],
        Refusal::Absolute,
    );
}

#[test]
fn unc_path_is_refused() {
    refused(
        &[
            "\\\\server\\share\\x.txt",
            "//server/share/x.txt",
            "//server",
            "\\\\?\\C:\\x.txt",
            "/\\server\\share",
        ],
        Refusal::Unc,
    );
}

#[test]
fn url_is_refused() {
    refused(
        &[
            "https://example.com/x.txt",
            "file:///etc/passwd",
            "file:x.txt",
            "FILE:x.txt",
            "s3://bucket/key.txt",
            "a/http://x",
        ],
        Refusal::Url,
    );
}

#[test]
fn alternate_data_stream_is_refused() {
    refused(
        &[
            "a.txt:stream",
            "dir/a.txt:$DATA",
            "a.txt::$DATA",
            "dir:x/a.txt",
        ],
        Refusal::AlternateDataStream,
    );
}

#[test]
fn drive_letter_is_refused() {
    refused(
        &["C:", "C:\\x.txt", "c:/x.txt", "C:x.txt", "z:"],
        Refusal::DriveLetter,
    );
}

#[test]
fn backslash_is_refused() {
    refused(&["a\\b.txt", "dir/a\\b.txt"], Refusal::Backslash);
}

#[test]
fn nul_and_control_chars_are_refused() {
    refused(
        &[
            "a\0b.txt",
            "a\nb.txt",
            "a\tb.txt",
            "a\rb.txt",
            "a\u{7f}.txt",
            "a\u{85}.txt",
        ],
        Refusal::ControlChar,
    );
}

#[test]
fn empty_components_are_refused() {
    refused(
        &["", "a//b.txt", "a/", "./a.txt", "a/./b.txt"],
        Refusal::EmptyComponent,
    );
}

#[test]
fn credential_like_dotenv_is_refused() {
    refused(
        &[
            ".env",
            ".ENV",
            "config/.env",
            ".env.local",
            ".Env.production",
            "a/.env.x/y.txt",
        ],
        Refusal::CredentialLikeName,
    );
    assert!(validate_path(".envrc.txt").is_ok());
    assert!(validate_path("env.txt").is_ok());
}

#[test]
fn credential_like_pem_is_refused() {
    refused(
        &["cert.pem", "tls/chain.PEM", "keys.pem/x.txt"],
        Refusal::CredentialLikeName,
    );
}

#[test]
fn credential_like_key_is_refused() {
    refused(&["server.key", "ssh/id.KEY"], Refusal::CredentialLikeName);
    assert!(validate_path("keynote.pdf").is_ok());
    assert!(validate_path("monkey.txt").is_ok());
}

#[test]
fn credential_like_pfx_is_refused() {
    refused(&["store.pfx", "a/b.PFX"], Refusal::CredentialLikeName);
}

#[test]
fn credential_like_p12_is_refused() {
    refused(&["store.p12", "a/b.P12"], Refusal::CredentialLikeName);
}

#[test]
fn credential_like_auth_is_refused() {
    refused(
        &["auth.json", "OAuth/x.txt", "x/AUTH_config.md"],
        Refusal::CredentialLikeName,
    );
}

#[test]
fn credential_like_credential_is_refused() {
    refused(
        &["credentials.csv", "aws/Credential.txt"],
        Refusal::CredentialLikeName,
    );
}

#[test]
fn credential_like_secret_is_refused() {
    refused(
        &["my_SECRET.md", "secrets/list.txt", "client_secret.json"],
        Refusal::CredentialLikeName,
    );
}

#[test]
fn credential_like_token_is_refused() {
    refused(
        &["token", "GitHubToken.txt", "tokens/list.txt"],
        Refusal::CredentialLikeName,
    );
}

#[test]
fn git_dir_is_refused() {
    refused(
        &[
            ".git",
            ".git/config",
            "sub/.git/HEAD",
            ".GIT/config",
            ".Git/x.txt",
        ],
        Refusal::GitDir,
    );
    assert!(validate_path(".gitignore").is_ok());
    assert!(validate_path(".github/workflows/ci.yml").is_ok());
}

#[test]
fn runread_own_files_are_refused() {
    refused(
        &[
            "runread.db",
            "runread.db-wal",
            "runread.db-shm",
            "home/runread.db",
            "RUNREAD.DB",
            "gate-keys",
            "gate-keys.tmp",
            "home/Gate-Keys",
        ],
        Refusal::RunreadFile,
    );
}

#[test]
fn over_long_path_is_refused_at_n_plus_one() {
    // Components of at most MAX_COMPONENT_BYTES, joined to exactly MAX_PATH_BYTES.
    // 16 components of 254 bytes and one of 16, with 16 slashes: 4064 + 16 + 16 = 4096.
    let mut parts = vec!["a".repeat(MAX_COMPONENT_BYTES - 1); 16];
    parts.push("b".repeat(16));
    let at_n = parts.join("/");
    assert_eq!(at_n.len(), MAX_PATH_BYTES);
    assert!(validate_path(&at_n).is_ok());
    let over = format!("{at_n}b");
    refused(&[over.as_str()], Refusal::PathTooLong);
}

#[test]
fn over_long_component_is_refused_at_n_plus_one() {
    let at_n = "c".repeat(MAX_COMPONENT_BYTES);
    assert!(validate_path(&at_n).is_ok());
    assert!(validate_path(&format!("d/{at_n}")).is_ok());
    let over = "c".repeat(MAX_COMPONENT_BYTES + 1);
    refused(
        &[over.as_str(), format!("d/{over}/e").as_str()],
        Refusal::PathTooLong,
    );
}

#[test]
fn a_tampered_version_path_is_refused_before_any_io() {
    let dir = ws();
    let mut v = registered(dir.path(), "ok.txt", b"hello");
    v.rel_path = "../ok.txt".into();
    assert_eq!(read_chunk(dir.path(), &v, 0, 10), Err(Refusal::Traversal));
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::Traversal));
    v.rel_path = ".env".into();
    assert_eq!(
        read_chunk(dir.path(), &v, 0, 10),
        Err(Refusal::CredentialLikeName)
    );
}

// ---------------------------------------------------------------- MIME

#[test]
fn mime_outside_the_list_is_refused() {
    let dir = ws();
    put(dir.path(), "page.html", b"<p>x</p>");
    for m in [
        "text/html",
        "application/javascript",
        "image/svg+xml",
        "TEXT/PLAIN",
        "text/plain; charset=utf-8",
        " text/plain",
        "",
    ] {
        assert_eq!(check_mime(m), Err(Refusal::MimeRefused), "{m:?}");
        assert_eq!(
            register(dir.path(), "page.html", m),
            Err(Refusal::MimeRefused),
            "{m:?}"
        );
    }
    for m in MIME_ALLOWED {
        assert_eq!(check_mime(m), Ok(()));
        assert!(register(dir.path(), "page.html", m).is_ok(), "{m}");
    }
    assert_eq!(
        guess_mime(&validate_path("page.html").unwrap()),
        "application/octet-stream"
    );
    assert_eq!(
        guess_mime(&validate_path("r/notes.MD").unwrap()),
        "text/markdown"
    );
}

// ---------------------------------------------------------------- registration

#[test]
fn register_records_size_hash_and_identity() {
    let dir = ws();
    put(dir.path(), "out/report.json", b"{\"ok\":true}\n");
    let v = register(dir.path(), "out/report.json", "application/json").unwrap();
    let meta = fs::symlink_metadata(dir.path().join("out/report.json")).unwrap();
    assert_eq!(v.rel_path, "out/report.json");
    assert_eq!(v.size, 12);
    assert_eq!(v.sha256, sha(b"{\"ok\":true}\n"));
    assert_eq!((v.dev, v.ino), (meta.dev(), meta.ino()));
    assert_eq!(v.mtime_ns, meta.mtime() * 1_000_000_000 + meta.mtime_nsec());
    assert_eq!(v.ctime_ns, meta.ctime() * 1_000_000_000 + meta.ctime_nsec());
    let json = serde_json::to_string(&v).unwrap();
    let back: ArtifactVersion = serde_json::from_str(&json).unwrap();
    assert_eq!(back, v);
    assert_eq!(verify_version(dir.path(), &v), Ok(()));
}

#[test]
fn an_empty_file_registers_and_reads_as_one_empty_eof_chunk() {
    let dir = ws();
    let v = registered(dir.path(), "empty.txt", b"");
    assert_eq!(v.sha256, sha(b""));
    let c = read_chunk(dir.path(), &v, 0, 1).unwrap();
    assert!(c.bytes.is_empty() && c.eof);
    assert_eq!(c.chunk_sha256, sha(b""));
}

#[test]
fn symlinked_leaf_is_refused() {
    let dir = ws();
    put(dir.path(), "real.txt", b"data");
    symlink("real.txt", dir.path().join("link.txt")).unwrap();
    assert_eq!(
        register(dir.path(), "link.txt", "text/plain"),
        Err(Refusal::Symlink)
    );
    // A link pointing outside the root, and a dangling one.
    let outside = ws();
    put(outside.path(), "x.txt", b"outside");
    symlink(outside.path().join("x.txt"), dir.path().join("out.txt")).unwrap();
    assert_eq!(
        register(dir.path(), "out.txt", "text/plain"),
        Err(Refusal::Symlink)
    );
    symlink("nowhere.txt", dir.path().join("dangling.txt")).unwrap();
    assert_eq!(
        register(dir.path(), "dangling.txt", "text/plain"),
        Err(Refusal::Symlink)
    );
    // Registered, then swapped for a link to a file with the same content.
    let v = registered(dir.path(), "swap.txt", b"data");
    fs::remove_file(dir.path().join("swap.txt")).unwrap();
    symlink("real.txt", dir.path().join("swap.txt")).unwrap();
    assert_eq!(read_chunk(dir.path(), &v, 0, 4), Err(Refusal::Symlink));
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::Symlink));
}

#[test]
fn symlinked_ancestor_is_refused() {
    let dir = ws();
    put(dir.path(), "real/sub/f.txt", b"data");
    symlink("real", dir.path().join("via")).unwrap();
    assert_eq!(
        register(dir.path(), "via/sub/f.txt", "text/plain"),
        Err(Refusal::Symlink)
    );
    symlink("sub", dir.path().join("real/deep")).unwrap();
    assert_eq!(
        register(dir.path(), "real/deep/f.txt", "text/plain"),
        Err(Refusal::Symlink)
    );
    // An ancestor pointing outside the root.
    let outside = ws();
    put(outside.path(), "f.txt", b"outside");
    symlink(outside.path(), dir.path().join("escape")).unwrap();
    assert_eq!(
        register(dir.path(), "escape/f.txt", "text/plain"),
        Err(Refusal::Symlink)
    );
    // Registered through a real directory that is then swapped for a link to an identical tree.
    let v = registered(dir.path(), "d/f.txt", b"data");
    fs::rename(dir.path().join("d"), dir.path().join("d-old")).unwrap();
    symlink("d-old", dir.path().join("d")).unwrap();
    assert_eq!(read_chunk(dir.path(), &v, 0, 4), Err(Refusal::Symlink));
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::Symlink));
}

#[test]
fn hardlink_is_refused() {
    let dir = ws();
    put(dir.path(), "a.txt", b"data");
    fs::hard_link(dir.path().join("a.txt"), dir.path().join("b.txt")).unwrap();
    assert_eq!(
        register(dir.path(), "a.txt", "text/plain"),
        Err(Refusal::Hardlink)
    );
    assert_eq!(
        register(dir.path(), "b.txt", "text/plain"),
        Err(Refusal::Hardlink)
    );
    // A link made after registration.
    let v = registered(dir.path(), "c.txt", b"data");
    let outside = ws();
    fs::hard_link(dir.path().join("c.txt"), outside.path().join("c2.txt")).unwrap();
    assert_eq!(read_chunk(dir.path(), &v, 0, 4), Err(Refusal::Hardlink));
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::Hardlink));
}

#[test]
fn non_regular_file_is_refused() {
    let dir = ws();
    fs::create_dir(dir.path().join("d.txt")).unwrap();
    assert_eq!(
        register(dir.path(), "d.txt", "text/plain"),
        Err(Refusal::NotRegular)
    );
    let _sock = std::os::unix::net::UnixListener::bind(dir.path().join("s.txt")).unwrap();
    assert_eq!(
        register(dir.path(), "s.txt", "text/plain"),
        Err(Refusal::NotRegular)
    );
    put(dir.path(), "file.txt", b"x");
    assert_eq!(
        register(dir.path(), "file.txt/x.txt", "text/plain"),
        Err(Refusal::NotRegular)
    );
}

#[test]
fn missing_file_is_refused() {
    let dir = ws();
    assert_eq!(
        register(dir.path(), "nope.txt", "text/plain"),
        Err(Refusal::Missing)
    );
    assert_eq!(
        register(dir.path(), "no/dir.txt", "text/plain"),
        Err(Refusal::Missing)
    );
    let gone = dir.path().join("gone");
    assert_eq!(
        register(&gone, "x.txt", "text/plain"),
        Err(Refusal::Missing)
    );
}

// ---------------------------------------------------------------- reading a version

#[test]
fn deleted_file_is_refused() {
    let dir = ws();
    let v = registered(dir.path(), "a.txt", b"data");
    fs::remove_file(dir.path().join("a.txt")).unwrap();
    assert_eq!(read_chunk(dir.path(), &v, 0, 4), Err(Refusal::Missing));
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::Missing));
}

#[test]
fn replaced_by_rename_over_is_refused() {
    let dir = ws();
    let v = registered(dir.path(), "a.txt", b"data");
    // Same content, same mtime even: another file object.
    put(dir.path(), "tmp.txt", b"data");
    let f = File::options()
        .write(true)
        .open(dir.path().join("tmp.txt"))
        .unwrap();
    f.set_modified(UNIX_EPOCH + Duration::from_nanos(v.mtime_ns as u64))
        .unwrap();
    drop(f);
    fs::rename(dir.path().join("tmp.txt"), dir.path().join("a.txt")).unwrap();
    assert_eq!(read_chunk(dir.path(), &v, 0, 4), Err(Refusal::Replaced));
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::Replaced));
}

#[test]
fn modified_in_place_is_refused() {
    let dir = ws();
    // Appended.
    let v = registered(dir.path(), "grow.txt", b"data");
    OpenOptions::new()
        .append(true)
        .open(dir.path().join("grow.txt"))
        .unwrap()
        .write_all(b"+")
        .unwrap();
    assert_eq!(read_chunk(dir.path(), &v, 0, 4), Err(Refusal::Modified));
    // Truncated.
    let v = registered(dir.path(), "shrink.txt", b"data");
    fs::write(dir.path().join("shrink.txt"), b"da").unwrap();
    assert_eq!(read_chunk(dir.path(), &v, 0, 2), Err(Refusal::Modified));
    // Same size, rewritten in place, mtime moved.
    let v = registered(dir.path(), "same.txt", b"data");
    let f = OpenOptions::new()
        .write(true)
        .open(dir.path().join("same.txt"))
        .unwrap();
    (&f).write_all(b"DATA").unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    drop(f);
    assert_eq!(read_chunk(dir.path(), &v, 0, 4), Err(Refusal::Modified));
    // Same content, only touched: still not the registered stat.
    let v = registered(dir.path(), "touched.txt", b"data");
    let f = File::options()
        .write(true)
        .open(dir.path().join("touched.txt"))
        .unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    drop(f);
    assert_eq!(read_chunk(dir.path(), &v, 0, 4), Err(Refusal::Modified));
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::Modified));
}

#[test]
fn exactly_the_max_registers_and_one_byte_more_is_refused() {
    let dir = ws();
    put(dir.path(), "n.bin", &vec![7u8; MAX]);
    let v = register(dir.path(), "n.bin", "application/octet-stream").unwrap();
    assert_eq!(v.size, ARTIFACT_MAX_BYTES);
    put(dir.path(), "n1.bin", &vec![7u8; MAX + 1]);
    assert_eq!(
        register(dir.path(), "n1.bin", "application/octet-stream"),
        Err(Refusal::TooLarge)
    );
}

#[test]
fn grown_past_the_max_after_registration_is_refused() {
    let dir = ws();
    put(dir.path(), "n.bin", &vec![1u8; MAX]);
    let v = register(dir.path(), "n.bin", "application/octet-stream").unwrap();
    assert!(read_chunk(dir.path(), &v, 0, TRANSFER_MAX_BYTES).is_ok());
    OpenOptions::new()
        .append(true)
        .open(dir.path().join("n.bin"))
        .unwrap()
        .write_all(b"!")
        .unwrap();
    assert_eq!(
        read_chunk(dir.path(), &v, 0, TRANSFER_MAX_BYTES),
        Err(Refusal::TooLarge)
    );
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::TooLarge));
}

#[test]
fn version_mismatch_with_size_and_mtime_restored_is_refused() {
    let dir = ws();
    let v = registered(dir.path(), "a.txt", b"original content");
    let f = OpenOptions::new()
        .write(true)
        .open(dir.path().join("a.txt"))
        .unwrap();
    (&f).write_all(b"tampered content").unwrap();
    f.set_modified(UNIX_EPOCH + Duration::from_nanos(v.mtime_ns as u64))
        .unwrap();
    drop(f);
    let meta = fs::metadata(dir.path().join("a.txt")).unwrap();
    assert_eq!(meta.len(), v.size);
    assert_eq!(meta.mtime() * 1_000_000_000 + meta.mtime_nsec(), v.mtime_ns);
    assert_eq!(verify_version(dir.path(), &v), Err(Refusal::VersionChanged));
}

#[test]
fn limit_bounds_at_n_and_n_plus_one() {
    let dir = ws();
    let data = vec![3u8; TRANSFER_MAX_BYTES + 10];
    let v = registered(dir.path(), "a.bin", &data);
    assert_eq!(read_chunk(dir.path(), &v, 0, 0), Err(Refusal::Bounds));
    let c = read_chunk(dir.path(), &v, 0, 1).unwrap();
    assert_eq!(c.bytes, [3u8]);
    let c = read_chunk(dir.path(), &v, 0, TRANSFER_MAX_BYTES).unwrap();
    assert_eq!(c.bytes.len(), TRANSFER_MAX_BYTES);
    assert!(!c.eof);
    assert_eq!(
        read_chunk(dir.path(), &v, 0, TRANSFER_MAX_BYTES + 1),
        Err(Refusal::Bounds)
    );
    assert_eq!(
        read_chunk(dir.path(), &v, 0, usize::MAX),
        Err(Refusal::Bounds)
    );
}

#[test]
fn a_window_is_a_chunk_with_a_secrets_length_either_side_at_n_and_n_plus_one() {
    assert_eq!(WINDOW_MAX_BYTES, TRANSFER_MAX_BYTES + 2 * SECRET_MAX_BYTES);
    let dir = ws();
    let data: Vec<u8> = (0..WINDOW_MAX_BYTES + 10)
        .map(|i| (i % 251) as u8)
        .collect();
    let v = registered(dir.path(), "w.bin", &data);
    assert_eq!(read_window(dir.path(), &v, 0, 0), Err(Refusal::Bounds));
    assert_eq!(
        read_window(dir.path(), &v, 3, WINDOW_MAX_BYTES).unwrap(),
        &data[3..3 + WINDOW_MAX_BYTES]
    );
    assert_eq!(
        read_window(dir.path(), &v, 0, WINDOW_MAX_BYTES + 1),
        Err(Refusal::Bounds)
    );
    // Short only at the end of the version; past it is out of bounds, as for a chunk.
    assert_eq!(
        read_window(dir.path(), &v, 20, WINDOW_MAX_BYTES).unwrap(),
        &data[20..]
    );
    let size = data.len() as u64;
    assert!(read_window(dir.path(), &v, size, 1).unwrap().is_empty());
    assert_eq!(
        read_window(dir.path(), &v, size + 1, 1),
        Err(Refusal::Bounds)
    );
}

#[test]
fn a_window_refuses_what_a_chunk_refuses() {
    let dir = ws();
    let v = registered(dir.path(), "a.txt", b"data");
    OpenOptions::new()
        .append(true)
        .open(dir.path().join("a.txt"))
        .unwrap()
        .write_all(b"+")
        .unwrap();
    assert_eq!(read_window(dir.path(), &v, 0, 4), Err(Refusal::Modified));
    fs::remove_file(dir.path().join("a.txt")).unwrap();
    assert_eq!(read_window(dir.path(), &v, 0, 4), Err(Refusal::Missing));
    let v = registered(dir.path(), "b.txt", b"data");
    fs::hard_link(dir.path().join("b.txt"), dir.path().join("c.txt")).unwrap();
    assert_eq!(read_window(dir.path(), &v, 0, 4), Err(Refusal::Hardlink));
}

#[test]
fn offset_bounds_at_n_and_n_plus_one() {
    let dir = ws();
    // Within the file: offset = size answers an empty eof chunk, size + 1 is out of bounds.
    let v = registered(dir.path(), "small.txt", b"hello");
    let c = read_chunk(dir.path(), &v, 5, 10).unwrap();
    assert!(c.bytes.is_empty() && c.eof);
    let c = read_chunk(dir.path(), &v, 4, 10).unwrap();
    assert_eq!((c.bytes.as_slice(), c.eof, c.offset), (&b"o"[..], true, 4));
    assert_eq!(read_chunk(dir.path(), &v, 6, 10), Err(Refusal::Bounds));
    // At the artifact limit.
    put(dir.path(), "max.bin", &vec![9u8; MAX]);
    let v = register(dir.path(), "max.bin", "application/octet-stream").unwrap();
    let c = read_chunk(dir.path(), &v, ARTIFACT_MAX_BYTES, TRANSFER_MAX_BYTES).unwrap();
    assert!(c.bytes.is_empty() && c.eof);
    let c = read_chunk(dir.path(), &v, ARTIFACT_MAX_BYTES - 1, TRANSFER_MAX_BYTES).unwrap();
    assert_eq!((c.bytes.as_slice(), c.eof), (&[9u8][..], true));
    assert_eq!(
        read_chunk(dir.path(), &v, ARTIFACT_MAX_BYTES + 1, TRANSFER_MAX_BYTES),
        Err(Refusal::Bounds)
    );
    assert_eq!(
        read_chunk(dir.path(), &v, u64::MAX, 1),
        Err(Refusal::Bounds)
    );
}

#[test]
fn eight_mib_random_binary_reads_back_byte_exact_in_32k_chunks() {
    let dir = ws();
    let mut data = vec![0u8; MAX];
    getrandom::fill(&mut data).unwrap();
    put(dir.path(), "blob/random.bin", &data);
    let v = register(dir.path(), "blob/random.bin", "application/octet-stream").unwrap();
    assert_eq!(v.size, ARTIFACT_MAX_BYTES);
    assert_eq!(v.sha256, sha(&data));

    let mut back = Vec::with_capacity(MAX);
    let mut whole = Sha256::new();
    let mut offset = 0u64;
    let mut chunks = 0usize;
    loop {
        let c = read_chunk(dir.path(), &v, offset, TRANSFER_MAX_BYTES).unwrap();
        assert_eq!(c.offset, offset);
        assert_eq!(c.chunk_sha256, sha(&c.bytes), "chunk at {offset}");
        let start = offset as usize;
        assert_eq!(c.bytes.as_slice(), &data[start..start + c.bytes.len()]);
        whole.update(&c.bytes);
        back.extend_from_slice(&c.bytes);
        offset += c.bytes.len() as u64;
        chunks += 1;
        if c.eof {
            assert_eq!(c.bytes.len(), TRANSFER_MAX_BYTES);
            break;
        }
        assert_eq!(c.bytes.len(), TRANSFER_MAX_BYTES);
    }
    assert_eq!(chunks, MAX / TRANSFER_MAX_BYTES);
    assert_eq!(offset, ARTIFACT_MAX_BYTES);
    assert!(back == data, "bytes read back differ");
    assert_eq!(hex::encode(whole.finalize()), v.sha256);
    assert_eq!(verify_version(dir.path(), &v), Ok(()));
}

#[test]
fn refusals_never_carry_a_path_and_codes_are_fixed() {
    let want = [
        (Refusal::Traversal, "path_traversal"),
        (Refusal::Absolute, "path_absolute"),
        (Refusal::Unc, "path_unc"),
        (Refusal::Url, "path_url"),
        (Refusal::AlternateDataStream, "path_alternate_data_stream"),
        (Refusal::DriveLetter, "path_drive_letter"),
        (Refusal::Backslash, "path_backslash"),
        (Refusal::ControlChar, "path_control_char"),
        (Refusal::EmptyComponent, "path_empty_component"),
        (Refusal::CredentialLikeName, "credential_like_name"),
        (Refusal::GitDir, "path_git_dir"),
        (Refusal::RunreadFile, "path_runread_file"),
        (Refusal::PathTooLong, "path_too_long"),
        (Refusal::Symlink, "symlink"),
        (Refusal::Hardlink, "hardlink"),
        (Refusal::NotRegular, "not_regular"),
        (Refusal::Missing, "missing"),
        (Refusal::Replaced, "replaced"),
        (Refusal::Modified, "modified"),
        (Refusal::TooLarge, "too_large"),
        (Refusal::VersionChanged, "version_changed"),
        (Refusal::MimeRefused, "mime_refused"),
        (Refusal::Bounds, "bounds"),
        (Refusal::Io, "io"),
    ];
    assert_eq!(want.len(), Refusal::ALL.len());
    for (r, code) in want {
        assert_eq!(r.as_str(), code);
        assert_eq!(r.to_string(), code);
    }
    // The Debug form of a file-system refusal names no path either.
    let dir = ws();
    let e = register(dir.path(), "very-distinctive-name.txt", "text/plain").unwrap_err();
    assert_eq!(e, Refusal::Missing);
    assert!(!format!("{e:?}").contains("distinctive"));
}

// ---------------------------------------------------------------- present

#[test]
fn present_says_missing_only_when_the_file_or_its_folder_is_gone() {
    let dir = ws();
    let v = registered(dir.path(), "out/a.txt", b"hello");
    assert_eq!(present(dir.path(), &v), Ok(()));
    fs::remove_file(dir.path().join("out/a.txt")).unwrap();
    assert_eq!(present(dir.path(), &v), Err(Refusal::Missing));
    fs::remove_dir(dir.path().join("out")).unwrap();
    assert_eq!(present(dir.path(), &v), Err(Refusal::Missing));
}

#[test]
fn present_is_not_a_read_a_link_or_a_changed_file_is_there_and_still_refused_when_read() {
    let dir = ws();
    let v = registered(dir.path(), "a.txt", b"hello");
    // Changed: there (so no other copy is served), and the read refuses it.
    put(dir.path(), "a.txt", b"HELLO, longer");
    assert_eq!(present(dir.path(), &v), Ok(()));
    assert!(read_chunk(dir.path(), &v, 0, 5).is_err());
    // Replaced by a link: there, not followed, and the read refuses the link.
    fs::remove_file(dir.path().join("a.txt")).unwrap();
    put(dir.path(), "elsewhere.txt", b"hello");
    symlink(dir.path().join("elsewhere.txt"), dir.path().join("a.txt")).unwrap();
    assert_eq!(present(dir.path(), &v), Ok(()));
    assert!(read_chunk(dir.path(), &v, 0, 5).is_err());
    // A dangling link is there too: `present` does not follow it.
    fs::remove_file(dir.path().join("elsewhere.txt")).unwrap();
    assert_eq!(present(dir.path(), &v), Ok(()));
}

#[test]
fn present_keeps_the_path_rules() {
    let dir = ws();
    let mut v = registered(dir.path(), "a.txt", b"hello");
    v.rel_path = "../a.txt".into();
    assert_eq!(present(dir.path(), &v), Err(Refusal::Traversal));
}
