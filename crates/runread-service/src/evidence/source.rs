//! Reading back what a tool serves from the session file it was indexed from.
//!
//! The store keeps where each line is and what it hashed to at ingest, never the text. A tool
//! that serves text (an answer, a history event's body, tool names) reads the line again through
//! a [`Source`]: the file is opened without following links, must be the object ingest read
//! (device and inode) with one link, and every line read must hash to the digest taken at ingest.
//! Anything else is [`SourceError`] and nothing of it is served.
//!
//! A `Source` is the only file access an adapter gets: one file, read-only, lines named by the
//! index. When admission found the file not there (deleted by the agent's cleanup, or on another
//! host) and the run's snapshot kept, the `Source` serves the snapshot's lines instead, checked
//! against the same digests ([`crate::evidence::snapshot`]).

use std::path::PathBuf;
use std::sync::Arc;

use runread_core::limits::EVIDENCE_LINE_MAX_BYTES;
use runread_sessions::runs::CONTEXT_TEXT_BYTES;
use runread_sessions::{Agent, EvidenceFile, FileIdentity, LineRef, MessageView, TextRef};

/// Why a line could not be served. Carries no path, no OS error and no content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceError {
    /// The file is gone, replaced, linked, or no longer holds the line as ingested.
    Changed,
    /// The line is not a message of the agent that wrote the file.
    NotAMessage,
}

/// A run's snapshot, opened ([`crate::evidence::snapshot`]): the lines a [`Source`] serves when the session
/// file is not there, and the artifacts `read_artifact` serves when theirs are not.
#[derive(Debug)]
pub(crate) struct SnapshotEvidence {
    by_offset: std::collections::BTreeMap<u64, Vec<u8>>,
    artifacts: std::collections::BTreeMap<String, Vec<u8>>,
    /// The copy the owner kept (`runread keep`), not a share's snapshot.
    kept: bool,
    /// A kept copy's records of the subagents the run started (`None`: the agent keeps none, or
    /// a share's snapshot, which holds none).
    children: Option<Vec<Option<runread_sessions::ChildRecord>>>,
}

impl SnapshotEvidence {
    pub(crate) fn new(
        by_offset: std::collections::BTreeMap<u64, Vec<u8>>,
        artifacts: std::collections::BTreeMap<String, Vec<u8>>,
    ) -> SnapshotEvidence {
        SnapshotEvidence {
            by_offset,
            artifacts,
            kept: false,
            children: None,
        }
    }

    /// The same, as the owner's kept copy holding `children`.
    pub(crate) fn with_kept(
        mut self,
        kept: bool,
        children: Option<Vec<Option<runread_sessions::ChildRecord>>>,
    ) -> SnapshotEvidence {
        self.kept = kept;
        self.children = children;
        self
    }

    /// It is the copy the owner kept, not a share's snapshot.
    pub(crate) fn is_kept(&self) -> bool {
        self.kept
    }

    /// A kept copy's subagents' records, as sealed.
    pub(crate) fn children(&self) -> Option<&[Option<runread_sessions::ChildRecord>]> {
        self.children.as_deref()
    }

    /// The content held for the artifact `id`, if it is the version whose sha256 is `sha256`
    /// (checked again here: never bytes of another version).
    pub(crate) fn artifact(&self, id: &str, sha256: &str) -> Option<&[u8]> {
        self.artifacts
            .get(id)
            .filter(|b| runread_core::sha256_hex(b) == sha256)
            .map(Vec::as_slice)
    }

    /// The bytes held for the line `r` names (the caller checks them against its digest).
    pub(crate) fn line(&self, r: &LineRef) -> Option<&[u8]> {
        self.by_offset
            .get(&r.offset)
            .filter(|b| b.len() as u64 == r.bytes)
            .map(Vec::as_slice)
    }
}

/// One session file as ingest saw it.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub path: PathBuf,
    /// The identity at ingest: the file read back must be the same object.
    pub identity: FileIdentity,
    pub agent: Agent,
    /// The run's snapshot, when admission found the file gone and a snapshot kept.
    pub snapshot: Option<Arc<SnapshotEvidence>>,
}

impl Source {
    /// The session file `run` was ingested from.
    pub(crate) fn of(run: &runread_store::RunRecord) -> Source {
        Source {
            path: run.session_path.clone().into(),
            identity: run.identity,
            agent: run.agent,
            snapshot: None,
        }
    }

    /// The same source, served from `snapshot` when the file cannot be opened.
    pub(crate) fn or_snapshot(mut self, snapshot: Option<Arc<SnapshotEvidence>>) -> Source {
        self.snapshot = snapshot;
        self
    }

    /// Opens the file for a series of line reads (or the snapshot, when admission found the file
    /// gone and handed one).
    pub(crate) fn open(&self) -> Result<Opened, SourceError> {
        let backing = match (
            runread_sessions::open_session(self.agent, &self.path, Some(&self.identity)),
            &self.snapshot,
        ) {
            (Ok(file), _) => Backing::File(file),
            (Err(_), Some(lines)) => Backing::Snapshot(lines.clone(), self.identity),
            (Err(_), None) => return Err(SourceError::Changed),
        };
        Ok(Opened {
            backing,
            agent: self.agent,
        })
    }
}

/// Where an [`Opened`]'s lines come from.
enum Backing {
    File(EvidenceFile),
    /// The snapshot's lines, and the identity of the file they were indexed from.
    Snapshot(Arc<SnapshotEvidence>, FileIdentity),
}

/// An open session file, or its snapshot (see [`Source::open`]).
pub(crate) struct Opened {
    backing: Backing,
    agent: Agent,
}

impl Opened {
    /// The file's identity when it was opened (a snapshot's: the file's as indexed).
    pub(crate) fn identity(&self) -> FileIdentity {
        match &self.backing {
            Backing::File(file) => file.identity(),
            Backing::Snapshot(_, identity) => *identity,
        }
    }

    /// The sealed copy the lines come from, when they do not come from the session file.
    pub(crate) fn sealed_copy(&self) -> Option<&SnapshotEvidence> {
        match &self.backing {
            Backing::Snapshot(copy, _) => Some(copy),
            Backing::File(_) => None,
        }
    }

    /// The exact bytes of the line `r` names, checked against its digest.
    pub(crate) fn line(&self, r: &LineRef) -> Result<Vec<u8>, SourceError> {
        let len = usize::try_from(r.bytes)
            .ok()
            .filter(|n| *n <= EVIDENCE_LINE_MAX_BYTES)
            .ok_or(SourceError::Changed)?;
        let bytes = match &self.backing {
            Backing::File(file) => file
                .read_at(r.offset, len)
                .map_err(|_| SourceError::Changed)?,
            Backing::Snapshot(lines, _) => lines.line(r).ok_or(SourceError::Changed)?.to_vec(),
        };
        if runread_core::sha256_hex(&bytes) != r.sha256 {
            return Err(SourceError::Changed);
        }
        Ok(bytes)
    }

    /// What a reader may be shown of the message line `r` names.
    pub(crate) fn view(&self, r: &LineRef) -> Result<MessageView, SourceError> {
        let bytes = self.line(r)?;
        runread_sessions::message_view(self.agent, &bytes).ok_or(SourceError::NotAMessage)
    }

    /// The file is still exactly as it was when opened.
    pub(crate) fn check_unchanged(&self) -> Result<(), SourceError> {
        match &self.backing {
            Backing::File(file) => file.check_unchanged().map_err(|_| SourceError::Changed),
            // Sealed: it cannot change.
            Backing::Snapshot(..) => Ok(()),
        }
    }
}

/// The texts on one side of what is served, as far as masking needs them.
pub(crate) struct Side {
    /// In the order read (nearest first), with the event group of each line.
    texts: Vec<(Option<String>, String)>,
    /// Masking can decide at this edge: enough text was read, or everything up to the edge.
    pub known: bool,
    /// Everything up to the branch's edge was read: no text lies beyond.
    pub at_edge: bool,
}

impl Side {
    /// The texts in file order (for the side before, which is read nearest first), one per
    /// event (the lines of one group joined).
    pub(crate) fn in_file_order(mut self) -> Vec<String> {
        self.texts.reverse();
        runread_sessions::join_groups(self.texts)
    }

    /// The texts of the side after (read in file order), one per event.
    pub(crate) fn texts(self) -> Vec<String> {
        runread_sessions::join_groups(self.texts)
    }
}

/// Reads the texts of `refs` (nearest first) until masking has [`CONTEXT_TEXT_BYTES`] of them,
/// the refs run out, or `budget` (bytes of lines) would be exceeded. `edge`: nothing lies beyond
/// the last ref.
pub(crate) fn read_side(
    opened: &Opened,
    refs: impl Iterator<Item = TextRef>,
    edge: bool,
    budget: &mut u64,
) -> Result<Side, SourceError> {
    let mut texts = Vec::new();
    let mut bytes = 0usize;
    for r in refs {
        if bytes >= CONTEXT_TEXT_BYTES {
            return Ok(Side {
                texts,
                known: true,
                at_edge: false,
            });
        }
        if r.line.bytes > *budget {
            return Ok(Side {
                texts,
                known: false,
                at_edge: false,
            });
        }
        *budget -= r.line.bytes;
        let view = opened.view(&r.line)?;
        // The index and the line agree on what there is to read.
        if view.body.len() as u64 != r.body_bytes {
            return Err(SourceError::Changed);
        }
        bytes += view.body.len();
        texts.push((r.group, view.body));
    }
    Ok(Side {
        texts,
        known: bytes >= CONTEXT_TEXT_BYTES || edge,
        at_edge: edge,
    })
}
