//! Snapshots: a sealed copy of the evidence of one shared run, so that a grant outlives the
//! agent's cleanup of its session file, and a gateway that cannot see the agent's disk (another
//! host on a shared PostgreSQL store) serves it.
//!
//! The store indexes every run and copies none, except this: when the owner shares a run, the
//! lines its granted features can serve (and the neighbouring texts masking reads across their
//! edges) are read back from the session file, each checked against the digest the index holds,
//! and sealed into the store — AES-256-GCM under a data key of the snapshot's own, that key sealed
//! under the gate's current key. Served only when the file is not there to read (gone, or not
//! visible from this host); a file that is there but changed stays `unknown`. Every line served
//! from a snapshot is checked against the index's digest again, and masked when served, so a
//! secret added after the grant is masked too. Destroyed — its data key first, then its row —
//! when the last live grant on the run ends ([`maintain`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use runread_artifacts::ArtifactVersion;
use runread_core::limits::{
    ARTIFACT_MAX_BYTES, EVIDENCE_LINE_MAX_BYTES, SNAPSHOT_RUN_MAX_BYTES, SNAPSHOT_STORE_MAX_BYTES,
};
use runread_core::{ErrorCode, Feature};
use runread_keys::seal::{self, NONCE_BYTES, Sealed};
use runread_keys::{KeyProvider, OwnedKey};
use runread_sessions::{ChildRecord, LineRef};
use runread_store::{KeepReason, RunRecord, SnapshotRecord, SnapshotSummary, Store};

use crate::evidence::source::{SnapshotEvidence, Source};

const DATA_KEY_AAD_DOMAIN: &[u8] = b"runread.snapshot-key.v1\0";
const LINES_AAD_DOMAIN: &[u8] = b"runread.snapshot.v1\0";
/// A kept run's parts are bound to other domains: a kept row put in place of a snapshot (or
/// the other way round) does not open.
const KEPT_DATA_KEY_AAD_DOMAIN: &[u8] = b"runread.kept-key.v1\0";
const KEPT_LINES_AAD_DOMAIN: &[u8] = b"runread.kept.v1\0";
/// Most subagent records a kept copy holds (one per subagent a run started); a row claiming more
/// is damaged.
const KEPT_CHILDREN_MAX: u64 = 100_000;
/// Most bytes a snapshot's payload may hold beyond its lines' and artifacts' own: their offsets,
/// ids and lengths (24 bytes a line at most, so room for far more lines than a session file may
/// have). A row claiming more is damaged, and is not opened.
const FRAMING_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Longest artifact id a snapshot holds (runread makes them: `a-` and 16 hex digits).
const ARTIFACT_ID_MAX_BYTES: usize = 64;
/// AES-GCM's tag.
const TAG_BYTES: u64 = 16;

/// The bounds a snapshot is sealed within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// [`SNAPSHOT_RUN_MAX_BYTES`] unless a test says otherwise.
    pub run_max_bytes: u64,
    /// [`SNAPSHOT_STORE_MAX_BYTES`] unless a test says otherwise.
    pub store_max_bytes: u64,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            run_max_bytes: SNAPSHOT_RUN_MAX_BYTES,
            store_max_bytes: SNAPSHOT_STORE_MAX_BYTES,
        }
    }
}

/// Whether a run's snapshot of `bytes` of lines may be kept: at most [`Bounds::run_max_bytes`].
pub fn fits_run(bounds: Bounds, bytes: u64) -> bool {
    bytes <= bounds.run_max_bytes
}

/// What sealing a shared run's snapshot did. A grant is made whatever this says; anything but
/// `Kept` means the run is readable only while its session file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sealing {
    /// Sealed: this many lines, this many bytes of them.
    Kept { lines: u64, bytes: u64 },
    /// The lines the grants need are more than [`Bounds::run_max_bytes`].
    TooLarge { bytes: u64 },
    /// The store's snapshots would hold more than [`Bounds::store_max_bytes`] with this one.
    StoreFull { bytes: u64 },
    /// The session file does not hold the lines as indexed (gone, changed, or not on this host).
    Unreadable,
    /// The store or the gate's keys failed while sealing.
    Failed,
}

impl Sealing {
    /// One line for the owner (the CLI and the console say the same).
    pub fn describe(&self) -> String {
        match self {
            Sealing::Kept { lines, bytes } => format!(
                "sealed for sharing: a copy of its evidence ({lines} lines, {bytes} bytes) stays \
                 readable if the session file goes, until the last grant on it ends"
            ),
            Sealing::TooLarge { bytes } => format!(
                "no snapshot: its evidence ({bytes} bytes) is over the {SNAPSHOT_RUN_MAX_BYTES}-byte \
                 bound per run; it is readable only while its session file is"
            ),
            Sealing::StoreFull { bytes } => format!(
                "no snapshot: the store's snapshots would pass their {SNAPSHOT_STORE_MAX_BYTES}-byte \
                 bound with this one ({bytes} bytes); it is readable only while its session file is"
            ),
            Sealing::Unreadable => {
                "no snapshot: the session file does not hold the run as indexed; \
                                    it is readable only while its session file is"
                    .to_owned()
            }
            Sealing::Failed => "no snapshot: sealing it failed (see the log); it is readable only \
                                while its session file is"
                .to_owned(),
        }
    }
}

/// What a snapshot of a run holds for some features: the lines they can serve (by offset), the
/// registered artifacts (`artifacts`), and the digest naming exactly that set.
struct Wanted {
    lines: BTreeMap<u64, LineRef>,
    artifacts: Vec<(String, ArtifactVersion)>,
    index_sha256: String,
}

impl Wanted {
    /// Bytes of everything it holds: what the bounds count.
    fn bytes(&self) -> u64 {
        let lines: u64 = self.lines.values().map(|l| l.bytes).sum();
        let artifacts: u64 = self.artifacts.iter().map(|(_, v)| v.size).sum();
        lines.saturating_add(artifacts)
    }
}

/// What the features can serve of `run`, and the digest naming that set. `lines`: whether to
/// read the run's message lines from the index (sealing needs them; the digest does not — see
/// [`Wanted::index_sha256`]).
fn wanted(
    store: &dyn Store,
    run: &RunRecord,
    features: &[Feature],
    lines_too: Lines,
) -> Result<Wanted, ErrorCode> {
    let wants = |f: Feature| features.contains(&f);
    let messages = wants(Feature::History) || wants(Feature::Aggregate);
    let mut lines = named_lines(store, run, features)?;
    let artifacts = if wants(Feature::Artifacts) {
        artifact_versions(store, run)?
    } else {
        Vec::new()
    };
    let index_sha256 = index_digest(run, features, &lines, messages, &artifacts);
    if messages && lines_too == Lines::Read {
        let message_lines: std::collections::HashSet<u64> =
            run.run.message_lines.iter().copied().collect();
        store
            .entries(&run.target.session_id, run.target.generation)
            .map_err(crate::evidence::unavailable)?
            .iter()
            .filter(|e| message_lines.contains(&e.line))
            .filter_map(|e| e.line_ref())
            .for_each(|l| {
                lines.insert(l.offset, l);
            });
    }
    Ok(Wanted {
        index_sha256,
        lines,
        artifacts,
    })
}

/// The lines the run's record names that `features` serve (the answer and its context, the
/// prompt and the session's header), by offset.
fn named_lines(
    store: &dyn Store,
    run: &RunRecord,
    features: &[Feature],
) -> Result<BTreeMap<u64, LineRef>, ErrorCode> {
    let mut lines: BTreeMap<u64, LineRef> = BTreeMap::new();
    let r = &run.run;
    let mut add = |l: &LineRef| {
        lines.insert(l.offset, l.clone());
    };
    let wants = |f: Feature| features.contains(&f);
    if wants(Feature::FinalAnswer) {
        r.final_lines.iter().for_each(&mut add);
        r.answer_before.lines.iter().for_each(|t| add(&t.line));
        r.context_after.lines.iter().for_each(|t| add(&t.line));
    }
    if wants(Feature::History) || wants(Feature::Aggregate) {
        r.context_before.lines.iter().for_each(|t| add(&t.line));
        r.context_after.lines.iter().for_each(|t| add(&t.line));
    }
    if wants(Feature::Metadata) {
        if let Some(l) = &r.prompt_line {
            add(l);
        }
        let session = store
            .session(&run.target.session_id)
            .map_err(crate::evidence::unavailable)?
            .filter(|s| s.generation == run.target.generation)
            .ok_or(ErrorCode::TargetStale)?;
        add(&session.header.line_ref());
    }
    Ok(lines)
}

/// The run's registered artifacts and their versions.
fn artifact_versions(
    store: &dyn Store,
    run: &RunRecord,
) -> Result<Vec<(String, ArtifactVersion)>, ErrorCode> {
    let mut artifacts = Vec::new();
    for a in store
        .artifacts(&run.target)
        .map_err(crate::evidence::unavailable)?
    {
        let v: ArtifactVersion =
            serde_json::from_str(&a.version_json).map_err(|_| ErrorCode::Unavailable)?;
        artifacts.push((a.artifact_id, v));
    }
    Ok(artifacts)
}

/// The digest naming what `features` serve of `run`: the features, the lines the run's record
/// names (with their digests), the run's message lines by number, the artifacts' versions. A
/// message line's number names its bytes within a generation (the index only appends to one; a
/// rewritten file is a new generation), so the digest needs no read of the index's entries —
/// what a check before each read costs.
fn index_digest(
    run: &RunRecord,
    features: &[Feature],
    lines: &BTreeMap<u64, LineRef>,
    messages: bool,
    artifacts: &[(String, ArtifactVersion)],
) -> String {
    let mut named = features
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(",");
    for l in lines.values() {
        named.push_str(&format!("\n{} {} {}", l.offset, l.bytes, l.sha256));
    }
    if messages {
        named.push_str(&format!("\nmessages {:?}", run.run.message_lines));
    }
    for (id, v) in artifacts {
        named.push_str(&format!("\nartifact {id} {} {}", v.size, v.sha256));
    }
    runread_core::sha256_hex(named.as_bytes())
}

/// Whether [`wanted`] reads the message lines from the index, or only names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lines {
    Read,
    DigestOnly,
}

/// The features of the live grants on `run`, in the catalog's order.
fn shared_features(grants: &[runread_store::Grant], run: &RunRecord, now_ms: i64) -> Vec<Feature> {
    let t = &run.target;
    Feature::ALL
        .iter()
        .copied()
        .filter(|f| {
            grants.iter().any(|g| {
                g.is_live(now_ms)
                    && g.target.session_id == t.session_id
                    && g.target.generation == t.generation
                    && g.target.run_id == t.run_id
                    && g.features.contains(f)
            })
        })
        .collect()
}

/// Seals (again) the snapshot of `run` for the features its live grants hold now, within the
/// default [`Bounds`].
pub fn seal(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    run: &RunRecord,
    now_ms: i64,
) -> Result<Sealing, ErrorCode> {
    seal_within(store, keys, run, now_ms, Bounds::default())
}

/// [`seal()`] within `bounds`.
pub fn seal_within(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    run: &RunRecord,
    now_ms: i64,
    bounds: Bounds,
) -> Result<Sealing, ErrorCode> {
    let grants = store.grants().map_err(crate::evidence::unavailable)?;
    let features = shared_features(&grants, run, now_ms);
    let w = wanted(store, run, &features, Lines::Read)?;
    let bytes = w.bytes();
    if !fits_run(bounds, bytes) {
        return Ok(Sealing::TooLarge { bytes });
    }
    // A run whose file is gone is shared from its kept copy, when the owner kept it.
    let Some(payload) = read_evidence(run, &w, kept_copy(store, keys, run)?) else {
        return Ok(Sealing::Unreadable);
    };
    let t = &run.target;
    let summary = SnapshotSummary {
        session_id: t.session_id.clone(),
        generation: t.generation,
        run_id: t.run_id.clone(),
        workspace_id: t.workspace_id.clone(),
        features,
        index_sha256: w.index_sha256,
        lines: w.lines.len() as u64,
        bytes,
        created_at_ms: now_ms,
    };
    let record = seal_payload(keys, summary, &payload, SNAPSHOT_DOMAINS)?;
    if store
        .put_snapshot(&record, bounds.store_max_bytes)
        .map_err(crate::evidence::unavailable)?
    {
        log(store, "sealed", &record.summary, now_ms);
        Ok(Sealing::Kept {
            lines: record.summary.lines,
            bytes,
        })
    } else {
        Ok(Sealing::StoreFull { bytes })
    }
}

/// Everything `w` names, read back and checked: each line against its digest (from the session
/// file), each artifact against its registered sha256 (from the workspace). Framed: the count of
/// lines, then each line's offset, length and bytes; the count of artifacts, then each one's id
/// (length, bytes), length and bytes — every number a big-endian u64. `None`: something does not
/// read back as indexed or registered.
fn read_evidence(
    run: &RunRecord,
    w: &Wanted,
    from_kept: Option<Arc<SnapshotEvidence>>,
) -> Option<Vec<u8>> {
    let opened = Source::of(run).or_snapshot(from_kept.clone()).open().ok()?;
    let mut out = Vec::new();
    let put = |n: u64, out: &mut Vec<u8>| out.extend_from_slice(&n.to_be_bytes());
    put(w.lines.len() as u64, &mut out);
    for l in w.lines.values() {
        let bytes = opened.line(l).ok()?;
        put(l.offset, &mut out);
        put(bytes.len() as u64, &mut out);
        out.extend_from_slice(&bytes);
    }
    put(w.artifacts.len() as u64, &mut out);
    let root = std::path::Path::new(&run.workspace_path);
    for (id, v) in &w.artifacts {
        let bytes = match read_artifact(root, v) {
            Some(bytes) => bytes,
            None => from_kept.as_ref()?.artifact(id, &v.sha256)?.to_vec(),
        };
        put(id.len() as u64, &mut out);
        out.extend_from_slice(id.as_bytes());
        put(bytes.len() as u64, &mut out);
        out.extend_from_slice(&bytes);
    }
    Some(out)
}

/// A registered artifact's whole content, read chunk by chunk with every check the reads make,
/// and its sha256 checked against the registered one.
fn read_artifact(root: &std::path::Path, v: &ArtifactVersion) -> Option<Vec<u8>> {
    let mut data = Vec::with_capacity(usize::try_from(v.size).ok()?);
    while (data.len() as u64) < v.size {
        let c = runread_artifacts::read_chunk(
            root,
            v,
            data.len() as u64,
            runread_artifacts::TRANSFER_MAX_BYTES,
        )
        .ok()?;
        if c.bytes.is_empty() {
            return None;
        }
        data.extend_from_slice(&c.bytes);
    }
    (runread_core::sha256_hex(&data) == v.sha256).then_some(data)
}

/// What a snapshot's sealed parts are bound to: the run, and the set of lines it holds.
fn aad(domain: &[u8], s: &SnapshotSummary) -> Vec<u8> {
    let mut a = domain.to_vec();
    for part in [
        s.session_id.as_str(),
        &s.generation.to_string(),
        &s.run_id,
        &s.index_sha256,
    ] {
        a.extend_from_slice(part.as_bytes());
        a.push(0);
    }
    a
}

/// The two domains a sealed copy's parts are bound to: a share's snapshot's, or a kept run's.
#[derive(Debug, Clone, Copy)]
struct Domains {
    data_key: &'static [u8],
    lines: &'static [u8],
}

const SNAPSHOT_DOMAINS: Domains = Domains {
    data_key: DATA_KEY_AAD_DOMAIN,
    lines: LINES_AAD_DOMAIN,
};
const KEPT_DOMAINS: Domains = Domains {
    data_key: KEPT_DATA_KEY_AAD_DOMAIN,
    lines: KEPT_LINES_AAD_DOMAIN,
};

fn seal_payload(
    keys: &dyn KeyProvider,
    summary: SnapshotSummary,
    payload: &[u8],
    domains: Domains,
) -> Result<SnapshotRecord, ErrorCode> {
    let (key_id, gate_key) = keys.current().map_err(|_| ErrorCode::Unavailable)?;
    let data_key = OwnedKey::new(
        runread_core::random_bytes::<32>().map_err(|_| ErrorCode::Unavailable)?,
        None,
    );
    let wrapped = seal::seal_bytes(
        &gate_key,
        &aad(domains.data_key, &summary),
        data_key.bytes(),
    )
    .map_err(|_| ErrorCode::Unavailable)?;
    let sealed = seal::seal_bytes(&data_key, &aad(domains.lines, &summary), payload)
        .map_err(|_| ErrorCode::Unavailable)?;
    let mut data_key_sealed = wrapped.nonce.to_vec();
    data_key_sealed.extend_from_slice(&wrapped.ciphertext);
    Ok(SnapshotRecord {
        summary,
        key_id,
        data_key: data_key_sealed,
        nonce: sealed.nonce.to_vec(),
        sealed: sealed.ciphertext,
    })
}

/// Most bytes of opened snapshots a service keeps in memory, all together: a reader pages
/// through a run in many calls, each would otherwise read and decrypt the whole snapshot again.
/// A snapshot larger than this is opened on every call.
pub const SNAPSHOTS_CACHED_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Snapshots recently opened, each under the stamp (its summary: run, digest, size, when sealed)
/// it was opened with; a snapshot sealed again has another stamp and is opened again.
#[derive(Default)]
pub(crate) struct OpenedSnapshots {
    entries: std::sync::Mutex<std::collections::VecDeque<(SnapshotSummary, Arc<SnapshotEvidence>)>>,
}

impl OpenedSnapshots {
    fn get(&self, stamp: &SnapshotSummary) -> Option<Arc<SnapshotEvidence>> {
        let entries = self.entries.lock().ok()?;
        entries
            .iter()
            .find(|(s, _)| s == stamp)
            .map(|(_, e)| e.clone())
    }

    fn put(&self, stamp: SnapshotSummary, opened: Arc<SnapshotEvidence>) {
        if stamp.bytes > SNAPSHOTS_CACHED_MAX_BYTES {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|(s, _)| {
                (&s.session_id, s.generation, &s.run_id)
                    != (&stamp.session_id, stamp.generation, &stamp.run_id)
            });
            while entries.iter().map(|(s, _)| s.bytes).sum::<u64>() + stamp.bytes
                > SNAPSHOTS_CACHED_MAX_BYTES
            {
                if entries.pop_front().is_none() {
                    break;
                }
            }
            entries.push_back((stamp, opened));
        }
    }
}

/// What a gateway that cannot see a run's session file has to read it from.
pub(crate) enum Kept {
    /// The run's snapshot, opened: it holds the run as indexed now.
    Serves(Arc<SnapshotEvidence>),
    /// A snapshot is kept for the run but does not hold it as indexed now: sealed before the
    /// index's last change, or sealed again while it was being read. The gateway that sees the
    /// file seals it again after its commit (in a transaction of its own), so what is judged
    /// without it now is not what will be served once it has.
    Behind,
    /// None kept, or one that does not open (a damaged row, a gate key this home lacks): never
    /// a guess.
    Nothing,
}

/// The snapshot of `run`, opened, when it is there and holds the run as indexed now; `None`
/// otherwise ([`look`] says why).
pub(crate) fn kept(
    svc: &crate::evidence::Reading,
    run: &RunRecord,
) -> Result<Option<Arc<SnapshotEvidence>>, ErrorCode> {
    Ok(match look(svc, run)? {
        Kept::Serves(opened) => Some(opened),
        Kept::Behind | Kept::Nothing => None,
    })
}

/// What `run`'s sealed copies can serve now: its kept copy (`runread keep`, every feature),
/// else its share's snapshot. Each stamp is read from the store on every call (a dropped,
/// destroyed or resealed copy is never served from memory); its lines from memory when the same
/// stamp was opened lately.
pub(crate) fn look(svc: &crate::evidence::Reading, run: &RunRecord) -> Result<Kept, ErrorCode> {
    let kept = look_copy(svc, run, Copy::Kept)?;
    if matches!(kept, Kept::Serves(_)) {
        return Ok(kept);
    }
    Ok(match (look_copy(svc, run, Copy::Shared)?, kept) {
        (Kept::Serves(opened), _) => Kept::Serves(opened),
        (Kept::Behind, _) | (_, Kept::Behind) => Kept::Behind,
        _ => Kept::Nothing,
    })
}

/// Which of a run's sealed copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Copy {
    /// The snapshot of its shares.
    Shared,
    /// The copy the owner kept.
    Kept,
}

impl Copy {
    fn stamp(
        self,
        store: &dyn Store,
        t: &runread_core::Target,
    ) -> Result<Option<SnapshotSummary>, ErrorCode> {
        match self {
            Copy::Shared => store.snapshot_stamp(&t.session_id, t.generation, &t.run_id),
            Copy::Kept => store
                .kept_stamp(&t.session_id, t.generation, &t.run_id)
                .map(|k| k.map(|k| k.summary)),
        }
        .map_err(crate::evidence::unavailable)
    }

    fn record(
        self,
        store: &dyn Store,
        t: &runread_core::Target,
    ) -> Result<Option<SnapshotRecord>, ErrorCode> {
        match self {
            Copy::Shared => store.snapshot(&t.session_id, t.generation, &t.run_id),
            Copy::Kept => store.kept(&t.session_id, t.generation, &t.run_id),
        }
        .map_err(crate::evidence::unavailable)
    }

    fn domains(self) -> Domains {
        match self {
            Copy::Shared => SNAPSHOT_DOMAINS,
            Copy::Kept => KEPT_DOMAINS,
        }
    }

    fn cache(self, svc: &crate::evidence::Reading) -> &OpenedSnapshots {
        match self {
            Copy::Shared => &svc.opened_snapshots,
            Copy::Kept => &svc.opened_kept,
        }
    }
}

/// What one of `run`'s sealed copies can serve now.
fn look_copy(
    svc: &crate::evidence::Reading,
    run: &RunRecord,
    copy: Copy,
) -> Result<Kept, ErrorCode> {
    let (store, t) = (&*svc.store, &run.target);
    let Some(stamp) = copy.stamp(store, t)? else {
        return Ok(Kept::Nothing);
    };
    let indexed = wanted(store, run, &stamp.features, Lines::DigestOnly)?.index_sha256;
    if indexed != stamp.index_sha256 {
        return Ok(Kept::Behind);
    }
    if let Some(hit) = copy.cache(svc).get(&stamp) {
        return Ok(Kept::Serves(hit));
    }
    let Some(record) = copy.record(store, t)? else {
        // Destroyed (or dropped) since its stamp was read.
        return Ok(Kept::Nothing);
    };
    // Sealed again since its stamp was read: served only if it still holds what the stamp
    // named, else it is still moving.
    if (&record.summary.features, &record.summary.index_sha256) != (&stamp.features, &indexed) {
        return Ok(Kept::Behind);
    }
    let Some(opened) = open_sealed(&*svc.keys, &record, copy.domains()).map(Arc::new) else {
        tracing::warn!(
            session = %t.session_id,
            run = %t.run_id,
            kept = copy == Copy::Kept,
            "a sealed copy of a run does not open: it is not served"
        );
        return Ok(Kept::Nothing);
    };
    copy.cache(svc).put(record.summary, opened.clone());
    Ok(Kept::Serves(opened))
}

/// `run`'s kept copy, opened, when it holds the run as indexed now (sharing a run whose file is
/// gone seals the share's snapshot from it).
fn kept_copy(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    run: &RunRecord,
) -> Result<Option<Arc<SnapshotEvidence>>, ErrorCode> {
    let t = &run.target;
    let Some(record) = store
        .kept(&t.session_id, t.generation, &t.run_id)
        .map_err(crate::evidence::unavailable)?
    else {
        return Ok(None);
    };
    let indexed = wanted(store, run, &record.summary.features, Lines::DigestOnly)?.index_sha256;
    Ok((indexed == record.summary.index_sha256)
        .then(|| open_sealed(keys, &record, KEPT_DOMAINS).map(Arc::new))
        .flatten())
}

/// What keeping one run did ([`seal_kept`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeping {
    /// Sealed: this many lines, this many bytes of lines and artifacts. `again`: it was kept
    /// already, and is sealed again as it is indexed now.
    Kept { lines: u64, bytes: u64, again: bool },
    /// Kept already, as it is indexed now: nothing to do.
    AlreadyKept { bytes: u64 },
    /// Its evidence is more than one run's copy may hold ([`Bounds::run_max_bytes`]).
    TooLarge { bytes: u64 },
    /// Every kept run together would pass the bound with it: refused (nothing else is dropped).
    OverLimit { bytes: u64, kept: u64, limit: u64 },
    /// The session file does not hold the run as indexed (gone, changed, or not on this host).
    Unreadable,
}

/// Keeps `run`: seals its whole evidence — every feature's lines, its artifacts, its subagents'
/// records — read back from its session file and checked, into its kept copy (replacing the one
/// it had), within `bounds` (`store_max_bytes`: the owner's bound on every kept run together).
pub fn seal_kept(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    run: &RunRecord,
    reason: KeepReason,
    now_ms: i64,
    bounds: Bounds,
) -> Result<Keeping, ErrorCode> {
    let t = &run.target;
    let before = store
        .kept_stamp(&t.session_id, t.generation, &t.run_id)
        .map_err(crate::evidence::unavailable)?;
    let w = match wanted(store, run, &Feature::ALL, Lines::Read) {
        Ok(w) => w,
        Err(ErrorCode::TargetStale) => return Ok(Keeping::Unreadable),
        Err(e) => return Err(e),
    };
    let bytes = w.bytes();
    if let Some(b) = &before
        && b.summary.index_sha256 == w.index_sha256
    {
        return Ok(Keeping::AlreadyKept { bytes });
    }
    if !fits_run(bounds, bytes) {
        return Ok(Keeping::TooLarge { bytes });
    }
    let Some(mut payload) = read_evidence(run, &w, None) else {
        return Ok(Keeping::Unreadable);
    };
    let Some(children) = child_records(store, run) else {
        return Ok(Keeping::Unreadable);
    };
    put_children(children.as_deref(), &mut payload);
    let summary = SnapshotSummary {
        session_id: t.session_id.clone(),
        generation: t.generation,
        run_id: t.run_id.clone(),
        workspace_id: t.workspace_id.clone(),
        features: Feature::ALL.to_vec(),
        index_sha256: w.index_sha256,
        lines: w.lines.len() as u64,
        bytes,
        created_at_ms: now_ms,
    };
    let record = seal_payload(keys, summary, &payload, KEPT_DOMAINS)?;
    // A run kept by name stays so when a rule keeps it again.
    let reason = before.as_ref().map_or(reason, |b| b.reason);
    if !store
        .put_kept(&record, reason, bounds.store_max_bytes)
        .map_err(crate::evidence::unavailable)?
    {
        return Ok(Keeping::OverLimit {
            bytes,
            kept: store.kept_bytes().map_err(crate::evidence::unavailable)?,
            limit: bounds.store_max_bytes,
        });
    }
    let again = before.is_some();
    log(
        store,
        if again { "kept again" } else { "kept" },
        &record.summary,
        now_ms,
    );
    Ok(Keeping::Kept {
        lines: record.summary.lines,
        bytes,
        again,
    })
}

/// The records the run's agent keeps of the subagents it started, read as a reader's work state
/// reads them: `Some(None)` when the agent keeps none, `None` when the run's lines do not read
/// back as indexed.
fn child_records(store: &dyn Store, run: &RunRecord) -> Option<Option<Vec<Option<ChildRecord>>>> {
    if !runread_sessions::Records::of(run.agent).child_records {
        return Some(None);
    }
    let message_lines: std::collections::HashSet<u64> =
        run.run.message_lines.iter().copied().collect();
    let entries = store
        .entries(&run.target.session_id, run.target.generation)
        .ok()?;
    let opened = Source::of(run).open().ok()?;
    let mut bytes = Vec::new();
    for line in entries
        .iter()
        .filter(|e| e.has_tool_call && message_lines.contains(&e.line))
        .filter_map(|e| e.line_ref())
    {
        bytes.push(opened.line(&line).ok()?);
    }
    let path = std::path::Path::new(&run.session_path);
    Some(runread_sessions::agents::children(
        run.agent,
        path,
        &run.target.session_id,
        &bytes,
    ))
}

/// The sealed copy (kept or shared) `s` names does not hold its run as indexed now: the run
/// went on since.
pub(crate) fn is_behind(
    store: &dyn Store,
    run: &RunRecord,
    s: &SnapshotSummary,
) -> Result<bool, ErrorCode> {
    Ok(wanted(store, run, &s.features, Lines::DigestOnly)?.index_sha256 != s.index_sha256)
}

/// Opens the kept copy `s` names, as a read would, and says how it stands.
pub fn kept_standing(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    s: &SnapshotSummary,
) -> Result<Standing, ErrorCode> {
    standing_of(store, keys, s, Copy::Kept)
}

/// Opens the sealed copy of `s`'s run, as a read would, and says how it stands.
fn standing_of(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    s: &SnapshotSummary,
    copy: Copy,
) -> Result<Standing, ErrorCode> {
    let Some(run) = store
        .run(&s.session_id, s.generation, &s.run_id)
        .map_err(crate::evidence::unavailable)?
    else {
        return Ok(Standing::Unreadable);
    };
    let Some(record) = copy.record(store, &run.target)? else {
        return Ok(Standing::Unreadable);
    };
    Ok(if is_behind(store, &run, &record.summary)? {
        Standing::Stale
    } else if open_sealed(keys, &record, copy.domains()).is_some() {
        Standing::Ok
    } else {
        Standing::Unreadable
    })
}

/// Opens a sealed copy bound to `domains`: a kept run's holds its subagents' records after its
/// lines and artifacts.
fn open_sealed(
    keys: &dyn KeyProvider,
    record: &SnapshotRecord,
    domains: Domains,
) -> Option<SnapshotEvidence> {
    let s = &record.summary;
    // Bounded before anything is opened: a row claiming more than a snapshot may hold is damaged.
    if s.bytes > SNAPSHOT_RUN_MAX_BYTES
        || record.sealed.len() as u64 > s.bytes.checked_add(FRAMING_MAX_BYTES + TAG_BYTES)?
    {
        return None;
    }
    let gate_key = keys.get(&record.key_id).ok()?;
    let (nonce, wrapped) = record.data_key.split_at_checked(NONCE_BYTES)?;
    let data_key = seal::open_bytes(
        &gate_key,
        &aad(domains.data_key, s),
        &Sealed {
            nonce: nonce.try_into().ok()?,
            ciphertext: wrapped.to_vec(),
        },
    )
    .ok()?;
    let data_key = OwnedKey::new(data_key.as_slice().try_into().ok()?, None);
    let payload = zeroize::Zeroizing::new(
        seal::open_bytes(
            &data_key,
            &aad(domains.lines, s),
            &Sealed {
                nonce: record.nonce.as_slice().try_into().ok()?,
                ciphertext: record.sealed.clone(),
            },
        )
        .ok()?,
    );
    let mut rest: &[u8] = &payload;
    let mut lines = BTreeMap::new();
    for _ in 0..take_u64(&mut rest)? {
        let offset = take_u64(&mut rest)?;
        let line = take_bytes(&mut rest, EVIDENCE_LINE_MAX_BYTES)?;
        lines.insert(offset, line.to_vec());
    }
    let mut artifacts = BTreeMap::new();
    for _ in 0..take_u64(&mut rest)? {
        let id = std::str::from_utf8(take_bytes(&mut rest, ARTIFACT_ID_MAX_BYTES)?).ok()?;
        let bytes = take_bytes(&mut rest, ARTIFACT_MAX_BYTES as usize)?;
        artifacts.insert(id.to_owned(), bytes.to_vec());
    }
    let kept = domains.lines == KEPT_LINES_AAD_DOMAIN;
    let children = if kept {
        take_children(&mut rest)?
    } else {
        None
    };
    (rest.is_empty() && lines.len() as u64 == s.lines)
        .then(|| SnapshotEvidence::new(lines, artifacts).with_kept(kept, children))
}

/// A kept copy's subagents' records: a flag (0: the agent keeps none), then their count, then
/// each one's flags (bit 0: it has a record, bit 1: it finished, bit 2: its transcript's time is
/// known) and that time.
fn take_children(rest: &mut &[u8]) -> Option<Option<Vec<Option<ChildRecord>>>> {
    if take_u64(rest)? == 0 {
        return Some(None);
    }
    let n = take_u64(rest)?;
    if n > KEPT_CHILDREN_MAX {
        return None;
    }
    let mut children = Vec::new();
    for _ in 0..n {
        let flags = take_u64(rest)?;
        let modified = take_u64(rest)?;
        children.push((flags & 1 == 1).then_some(ChildRecord {
            finished: flags & 2 == 2,
            transcript_modified_ns: (flags & 4 == 4).then_some(modified as i64),
        }));
    }
    Some(Some(children))
}

/// The framing [`take_children`] reads.
fn put_children(children: Option<&[Option<ChildRecord>]>, out: &mut Vec<u8>) {
    let put = |n: u64, out: &mut Vec<u8>| out.extend_from_slice(&n.to_be_bytes());
    let Some(children) = children else {
        put(0, out);
        return;
    };
    put(1, out);
    put(children.len() as u64, out);
    for c in children {
        let (flags, modified) = match c {
            None => (0, 0),
            Some(c) => (
                1 | (u64::from(c.finished) << 1)
                    | (u64::from(c.transcript_modified_ns.is_some()) << 2),
                c.transcript_modified_ns.unwrap_or(0) as u64,
            ),
        };
        put(flags, out);
        put(modified, out);
    }
}

/// The next big-endian u64 of `rest`.
fn take_u64(rest: &mut &[u8]) -> Option<u64> {
    let (n, after) = rest.split_first_chunk::<8>()?;
    *rest = after;
    Some(u64::from_be_bytes(*n))
}

/// The next length-prefixed bytes of `rest`, at most `max` of them.
fn take_bytes<'a>(rest: &mut &'a [u8], max: usize) -> Option<&'a [u8]> {
    let len = usize::try_from(take_u64(rest)?)
        .ok()
        .filter(|n| *n <= max)?;
    let (bytes, after) = rest.split_at_checked(len)?;
    *rest = after;
    Some(bytes)
}

/// How a kept snapshot stands (`runread snapshots`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// It opens and holds its run as indexed now: served whenever the file is not there.
    Ok,
    /// Its run went on since it was sealed (or its grants changed): sealed again by the next
    /// `maintain` while the file holds the run; until then not served.
    Stale,
    /// It does not open (a damaged row, a gate key this home lacks), or its run is no longer
    /// indexed: never served.
    Unreadable,
}

impl Standing {
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Ok => "ok",
            Standing::Stale => "stale",
            Standing::Unreadable => "unreadable",
        }
    }
}

/// Opens the snapshot `s` names, as a read would, and says how it stands.
pub fn standing(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    s: &SnapshotSummary,
) -> Result<Standing, ErrorCode> {
    standing_of(store, keys, s, Copy::Shared)
}

/// What [`maintain`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintained {
    /// Snapshots destroyed: no live grant held them any more.
    pub destroyed: Vec<SnapshotSummary>,
    /// Snapshots sealed again: their run went on (or its grants changed) since.
    pub resealed: u64,
}

/// Destroys every snapshot no live grant holds (its data key first, then its row; the audit log
/// says so), and seals again those whose run's index or grants moved since, while the session
/// file still holds them. Run after every ingest pass, every revocation and reader removal, and
/// periodically by `serve` (grants expire by time).
pub fn maintain(
    store: &dyn Store,
    keys: &dyn KeyProvider,
    now_ms: i64,
) -> Result<Maintained, ErrorCode> {
    let mut out = Maintained {
        destroyed: destroy_unshared(store, now_ms)?,
        resealed: 0,
    };
    let grants = store.grants().map_err(crate::evidence::unavailable)?;
    for s in store.snapshots().map_err(crate::evidence::unavailable)? {
        let Some(run) = store
            .run(&s.session_id, s.generation, &s.run_id)
            .map_err(crate::evidence::unavailable)?
        else {
            continue;
        };
        let features = shared_features(&grants, &run, now_ms);
        if wanted(store, &run, &features, Lines::DigestOnly)?.index_sha256 != s.index_sha256
            && matches!(seal(store, keys, &run, now_ms)?, Sealing::Kept { .. })
        {
            out.resealed += 1;
        }
    }
    Ok(out)
}

/// Destroys every snapshot no live grant holds.
pub fn destroy_unshared(store: &dyn Store, now_ms: i64) -> Result<Vec<SnapshotSummary>, ErrorCode> {
    let unshared = store
        .snapshots_unshared(now_ms)
        .map_err(crate::evidence::unavailable)?;
    let mut destroyed = Vec::with_capacity(unshared.len());
    for s in unshared {
        if store
            .destroy_snapshot(&s.session_id, s.generation, &s.run_id)
            .map_err(crate::evidence::unavailable)?
        {
            tracing::info!(
                session = %s.session_id,
                run = %s.run_id,
                bytes = s.bytes,
                "snapshot destroyed: no live grant holds it"
            );
            log(store, "destroyed", &s, now_ms);
            destroyed.push(s);
        }
    }
    Ok(destroyed)
}

/// Appends what happened to the snapshot log (the audit of snapshots and kept runs). What it
/// records has happened already; a log that cannot be written is said in the process's log.
pub(crate) fn log(store: &dyn Store, event: &str, s: &SnapshotSummary, now_ms: i64) {
    let written = crate::evidence::values::random_id("sl-").and_then(|id| {
        store
            .log_snapshot(&runread_store::SnapshotEvent {
                id,
                at_ms: now_ms,
                event: event.to_owned(),
                session_id: s.session_id.clone(),
                generation: s.generation,
                run_id: s.run_id.clone(),
                lines: s.lines,
                bytes: s.bytes,
            })
            .map_err(|e| e.to_string())
    });
    if let Err(e) = written {
        tracing::error!(event, run = %s.run_id, "the snapshot log was not written: {e}");
    }
}
