//! The operating-system calls several of runread's crates share, in one place.
//!
//! runread reads other programs' files as evidence and keeps secrets of its own, so how a file is
//! opened and recognised is policy, not plumbing: a link at the leaf is never followed, a file is
//! known by its device and inode (and its size and times, for "changed since"), and a file that
//! holds a secret must be its owner's alone. This crate is where those calls meet the operating
//! system:
//!
//! - [`file`](mod@file): link-safe and never-blocking opening, a file's [`file::Stat`], owner-only files and
//!   folders, positioned reads;
//! - [`host`]: this machine's name, from `uname` (Linux and macOS alike; no `/proc` or
//!   `/etc/hostname`, which a Mac has neither of);
//! - [`names`]: how two path names compare on this system (a case-insensitive volume, as macOS's
//!   APFS is by default, names one file by several spellings).
//!
//! Linux and macOS share one Unix implementation (POSIX `O_NOFOLLOW`, `st_dev`/`st_ino`, mode
//! bits, `pread`, `uname`); where they differ (the error a refused link gives, whether names fold
//! case) both branches sit side by side behind `cfg`. Elsewhere (native Windows, which runread
//! does not support yet: see docs/architecture.md) every call still compiles and fails closed:
//! no identity, never owner-only, link-safe opening refused — so nothing is read as evidence
//! and no secret is trusted to a file whose protection cannot be checked.
//!
//! What each crate needs of the OS beyond this (the supervisor's process census and signals, the
//! artifacts' `openat` walk, the CLI's shutdown signals) lives in that crate's own `platform`
//! module. The architecture test fails on an OS-specific call anywhere else
//! (`no_os_specific_call_outside_a_platform_module`).
#![forbid(unsafe_code)]

pub mod file;
pub mod host;
pub mod names;
