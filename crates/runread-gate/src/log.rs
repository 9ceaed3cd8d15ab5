//! The gate's log over time: start records and receipts are kept for a retention period (and
//! under a bound on their number), then removed from the old end only, in a way that
//! `runread audit verify` can still check.
//!
//! - **Seals.** A maintenance pass ([`maintain`]) seals the start records made in a time range
//!   (`after`, `upto`] that are old enough to get no more receipts ([`AUDIT_SEAL_AFTER_MS`]):
//!   a checkpoint holding how many records and receipts the range has and the digest of them all
//!   in order ([`seal_digest`]). Each seal starts where the last one ended and covers at most
//!   [`AUDIT_SEAL_RECORDS_MAX`] records (and the others made in its last millisecond).
//! - **Prunes.** Once a sealed range is past the retention period, or the log holds more than
//!   its bound on calls, the pass checks the range against its seal once more and removes it: a
//!   prune checkpoint, and the range's records and receipts deleted in the same transaction (the
//!   store's triggers refuse any other delete). A range that no longer matches its seal is kept
//!   and reported, never pruned.
//! - **The chain.** Every checkpoint (seals and prunes, numbered without gaps) carries the digest
//!   of the previous one's chain value and its own fields ([`chain`]): cutting or changing a
//!   checkpoint breaks every later link.
//! - **Verification** ([`verify`]): the chain links, seals contiguous, prunes in order and only
//!   of sealed ranges, every range still sealed and not pruned digests to its seal, nothing older
//!   than the last prune remains — so the log that remains is whole and nothing was cut out of
//!   its middle. The records newer than the last seal are counted, not checked (a start record
//!   is sealed once it is [`AUDIT_SEAL_AFTER_MS`] old).

use sha2::Digest;

use runread_core::limits::{
    AUDIT_PASS_CHECKPOINTS_MAX, AUDIT_RETENTION_CALLS_DEFAULT, AUDIT_RETENTION_CALLS_MAX,
    AUDIT_RETENTION_CALLS_MIN, AUDIT_RETENTION_DAYS_DEFAULT, AUDIT_RETENTION_DAYS_MAX,
    AUDIT_RETENTION_DAYS_MIN, AUDIT_SEAL_AFTER_MS, AUDIT_SEAL_RECORDS_MAX, AUDIT_SEAL_TIES_MAX,
};
use runread_store::{
    AuditCheckpoint, CheckpointKind, GateLog, Receipt, Settings, StartMeta, StoreError,
};

const SEAL_DOMAIN: &[u8] = b"runread.audit.seal.v1\0";
const CHAIN_DOMAIN: &[u8] = b"runread.audit.chain.v1\0";
/// The `after` of the first seal: before any start record.
pub const LOG_START_MS: i64 = i64::MIN;

/// The settings' names in the store.
const RETENTION_DAYS_SETTING: &str = "audit.retention_days";
const RETENTION_CALLS_SETTING: &str = "audit.retention_calls";

/// How long, and how much, of the gate's log is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Start records older than this many days are removed (with their receipts).
    pub days: u32,
    /// Beyond this many start records, the oldest are removed whatever their age.
    pub calls: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            days: AUDIT_RETENTION_DAYS_DEFAULT,
            calls: AUDIT_RETENTION_CALLS_DEFAULT,
        }
    }
}

/// A retention the owner asked for that is out of its bounds. Owner-facing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionOutOfBounds(pub String);

impl std::fmt::Display for RetentionOutOfBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Retention {
    /// `days` and `calls` within their bounds, or what is out of them.
    pub fn new(days: u32, calls: u64) -> Result<Retention, RetentionOutOfBounds> {
        if !(AUDIT_RETENTION_DAYS_MIN..=AUDIT_RETENTION_DAYS_MAX).contains(&days) {
            return Err(RetentionOutOfBounds(format!(
                "the retention period must be {AUDIT_RETENTION_DAYS_MIN}..={AUDIT_RETENTION_DAYS_MAX} days"
            )));
        }
        if !(AUDIT_RETENTION_CALLS_MIN..=AUDIT_RETENTION_CALLS_MAX).contains(&calls) {
            return Err(RetentionOutOfBounds(format!(
                "the bound on calls kept must be {AUDIT_RETENTION_CALLS_MIN}..={AUDIT_RETENTION_CALLS_MAX}"
            )));
        }
        Ok(Retention { days, calls })
    }

    /// The retention the store's settings say (the defaults where they say nothing). A stored
    /// value out of bounds is `corrupt`, never clamped.
    pub fn of(store: &dyn Settings) -> Result<Retention, StoreError> {
        let read = |key: &str, default: u64| -> Result<u64, StoreError> {
            match store.setting(key)? {
                None => Ok(default),
                Some(v) => v
                    .parse()
                    .map_err(|_| StoreError::Corrupt(format!("setting {key}"))),
            }
        };
        let days = read(
            RETENTION_DAYS_SETTING,
            u64::from(AUDIT_RETENTION_DAYS_DEFAULT),
        )?;
        let calls = read(RETENTION_CALLS_SETTING, AUDIT_RETENTION_CALLS_DEFAULT)?;
        let days = u32::try_from(days).map_err(|_| StoreError::Corrupt("retention days".into()))?;
        Retention::new(days, calls).map_err(|e| StoreError::Corrupt(e.0))
    }

    /// Stores this retention; the next pass applies it.
    pub fn save(&self, store: &dyn Settings) -> Result<(), StoreError> {
        store.put_setting(RETENTION_DAYS_SETTING, &self.days.to_string())?;
        store.put_setting(RETENTION_CALLS_SETTING, &self.calls.to_string())
    }
}

fn part(h: &mut sha2::Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_be_bytes());
    h.update(bytes);
}

fn number(h: &mut sha2::Sha256, n: i64) {
    h.update(n.to_be_bytes());
}

/// Written in the place of a receipt's first length, before the receipt, when it records what
/// its result carried (`evidence`, `state`): no part is that long, so a receipt digested with them
/// never reads as one digested without, and a receipt with neither — every one written before
/// runread recorded them — digests exactly as it did when its range was sealed.
const WITH_FACTS: u64 = u64::MAX;

/// An optional text: whether it is there, then the text (so `None` and `Some("")` differ).
fn optional(h: &mut sha2::Sha256, text: Option<&str>) {
    match text {
        None => number(h, 0),
        Some(t) => {
            number(h, 1);
            part(h, t.as_bytes());
        }
    }
}

/// The digest of start records (in the order given: made, then id) and each one's receipts (in
/// order): every field of each, length-prefixed under one domain; a receipt's evidence and state
/// after a marker no length can be (`WITH_FACTS`) when it has either.
pub fn seal_digest(rows: &[(StartMeta, Vec<Receipt>)]) -> String {
    let mut h = sha2::Sha256::new();
    h.update(SEAL_DOMAIN);
    for (m, receipts) in rows {
        for field in [
            &m.start_id,
            &m.idempotency_key,
            &m.grant_id,
            &m.key_hash_prefix,
            m.reader_id.as_deref().unwrap_or(""),
            &m.tool,
            &m.binding_digest,
            &m.input_digest,
            &m.sealed_key_id,
        ] {
            part(&mut h, field.as_bytes());
        }
        match &m.target {
            Some(t) => part(&mut h, &t.digest()),
            None => part(&mut h, b""),
        }
        number(&mut h, m.created_at_ms);
        number(&mut h, receipts.len() as i64);
        for r in receipts {
            if r.evidence.is_some() || r.state.is_some() {
                h.update(WITH_FACTS.to_be_bytes());
                optional(&mut h, r.evidence.as_deref());
                optional(&mut h, r.state.as_deref());
            }
            for field in [
                &r.receipt_id,
                &r.start_id,
                &r.outcome,
                r.result_digest.as_deref().unwrap_or(""),
            ] {
                part(&mut h, field.as_bytes());
            }
            number(
                &mut h,
                r.output_bytes
                    .map_or(-1, |b| i64::try_from(b).unwrap_or(i64::MAX)),
            );
            number(&mut h, r.created_at_ms);
        }
    }
    hex::encode(h.finalize())
}

/// The chain value of a checkpoint: the digest of the previous checkpoint's chain value (empty
/// for the first) and every field of this one but its chain value.
pub fn chain(previous: &str, c: &AuditCheckpoint) -> String {
    let mut h = sha2::Sha256::new();
    h.update(CHAIN_DOMAIN);
    part(&mut h, previous.as_bytes());
    number(&mut h, i64::try_from(c.seq).unwrap_or(i64::MAX));
    part(&mut h, c.kind.as_str().as_bytes());
    number(&mut h, c.after_ms);
    number(&mut h, c.upto_ms);
    number(&mut h, i64::try_from(c.records).unwrap_or(i64::MAX));
    number(&mut h, i64::try_from(c.receipts).unwrap_or(i64::MAX));
    part(&mut h, c.digest.as_bytes());
    number(&mut h, c.created_at_ms);
    hex::encode(h.finalize())
}

/// What a maintenance pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintained {
    /// Seals made, and the start records they cover.
    pub seals: u64,
    pub sealed: u64,
    /// Prunes made, and the start records they removed.
    pub prunes: u64,
    pub pruned: u64,
    /// A sealed range that no longer matches its seal (kept, not pruned): its seal's number.
    pub mismatch: Option<u64>,
    /// The chain of checkpoints is broken at this one: the pass did nothing (nothing sealed onto
    /// a broken chain, nothing pruned).
    pub broken_chain: Option<u64>,
}

/// Why a pass or a verification could not run. Owner-facing: the log.
#[derive(Debug)]
pub enum LogError {
    Store(StoreError),
    /// More start records made in one millisecond than a seal reads.
    TooManyAtOnce(i64),
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogError::Store(e) => write!(f, "{e}"),
            LogError::TooManyAtOnce(at) => write!(
                f,
                "more than {AUDIT_SEAL_TIES_MAX} calls were recorded in the millisecond {at}"
            ),
        }
    }
}

impl From<StoreError> for LogError {
    fn from(e: StoreError) -> Self {
        LogError::Store(e)
    }
}

/// Most rows read for one seal: its records and those made in its last millisecond.
fn seal_read_max() -> u32 {
    u32::try_from(AUDIT_SEAL_RECORDS_MAX + AUDIT_SEAL_TIES_MAX).unwrap_or(u32::MAX)
}

/// The records of a range, or [`LogError::TooManyAtOnce`] when it holds more than a seal reads.
fn range(store: &dyn GateLog, after: i64, upto: i64) -> Result<runread_store::AuditRows, LogError> {
    let rows = store.audit_range(after, upto, seal_read_max())?;
    if rows.len() as u64 >= u64::from(seal_read_max()) {
        return Err(LogError::TooManyAtOnce(upto));
    }
    Ok(rows)
}

/// The chain's tail: the last checkpoint's number and chain value, and where sealing and
/// pruning stand.
struct Tail {
    seq: u64,
    chain: String,
    sealed_upto: i64,
    pruned_upto: i64,
}

impl Tail {
    fn of(checkpoints: &[AuditCheckpoint]) -> Tail {
        let last = |kind| {
            checkpoints
                .iter()
                .rev()
                .find(|c| c.kind == kind)
                .map_or(LOG_START_MS, |c| c.upto_ms)
        };
        Tail {
            seq: checkpoints.last().map_or(0, |c| c.seq),
            chain: checkpoints
                .last()
                .map_or_else(String::new, |c| c.chain.clone()),
            sealed_upto: last(CheckpointKind::Seal),
            pruned_upto: last(CheckpointKind::Prune),
        }
    }

    /// The next checkpoint of the chain.
    fn next(&self, kind: CheckpointKind, fields: Fields) -> AuditCheckpoint {
        let mut c = AuditCheckpoint {
            seq: self.seq + 1,
            kind,
            after_ms: fields.after_ms,
            upto_ms: fields.upto_ms,
            records: fields.records,
            receipts: fields.receipts,
            digest: fields.digest,
            chain: String::new(),
            created_at_ms: fields.now_ms,
        };
        c.chain = chain(&self.chain, &c);
        c
    }
}

struct Fields {
    after_ms: i64,
    upto_ms: i64,
    records: u64,
    receipts: u64,
    digest: String,
    now_ms: i64,
}

fn receipts_of(rows: &runread_store::AuditRows) -> u64 {
    rows.iter().map(|(_, r)| r.len() as u64).sum()
}

/// One maintenance pass at `now_ms`: seals what is old enough, then prunes what `retention`
/// says is over, at most [`AUDIT_PASS_CHECKPOINTS_MAX`] checkpoints in all (the next pass goes
/// on). Another pass at the same time (another process, another host) makes it stop early,
/// never append twice.
pub fn maintain(
    store: &dyn GateLog,
    retention: Retention,
    now_ms: i64,
) -> Result<Maintained, LogError> {
    let mut done = Maintained::default();
    if let Some(seq) = broken_link(&store.audit_checkpoints()?) {
        tracing::warn!(
            seq,
            "the chain of the gate's log is broken; nothing sealed or pruned"
        );
        done.broken_chain = Some(seq);
        return Ok(done);
    }
    let mut budget = AUDIT_PASS_CHECKPOINTS_MAX;
    seal_pass(store, now_ms, &mut budget, &mut done)?;
    prune_pass(store, retention, now_ms, &mut budget, &mut done)?;
    Ok(done)
}

fn seal_pass(
    store: &dyn GateLog,
    now_ms: i64,
    budget: &mut usize,
    done: &mut Maintained,
) -> Result<(), LogError> {
    let horizon = now_ms.saturating_sub(AUDIT_SEAL_AFTER_MS);
    while *budget > 0 {
        let tail = Tail::of(&store.audit_checkpoints()?);
        let after = tail.sealed_upto;
        if after >= horizon {
            return Ok(());
        }
        // At most the bound (and the rest of its last millisecond); fewer: up to the last one
        // made, so that a seal ends where its records do.
        let upto = store
            .audit_nth_time(after, horizon, AUDIT_SEAL_RECORDS_MAX - 1)?
            .unwrap_or(horizon);
        let rows = range(store, after, upto)?;
        let Some(upto) = rows.last().map(|(m, _)| m.created_at_ms) else {
            return Ok(());
        };
        let seal = tail.next(
            CheckpointKind::Seal,
            Fields {
                after_ms: after,
                upto_ms: upto,
                records: rows.len() as u64,
                receipts: receipts_of(&rows),
                digest: seal_digest(&rows),
                now_ms,
            },
        );
        if !store.append_audit_checkpoint(&seal)? {
            return Ok(());
        }
        *budget -= 1;
        done.seals += 1;
        done.sealed += seal.records;
    }
    Ok(())
}

fn prune_pass(
    store: &dyn GateLog,
    retention: Retention,
    now_ms: i64,
    budget: &mut usize,
    done: &mut Maintained,
) -> Result<(), LogError> {
    let period_ms = i64::from(retention.days).saturating_mul(86_400_000);
    let too_old = now_ms.saturating_sub(period_ms);
    let mut count = store.audit_count_after(LOG_START_MS)?;
    while *budget > 0 {
        let checkpoints = store.audit_checkpoints()?;
        let tail = Tail::of(&checkpoints);
        let Some(seal) = checkpoints
            .iter()
            .find(|c| c.kind == CheckpointKind::Seal && c.upto_ms > tail.pruned_upto)
        else {
            return Ok(());
        };
        if seal.upto_ms > too_old && count <= retention.calls {
            return Ok(());
        }
        // Checked once more before it goes: a range that no longer matches its seal is kept.
        let rows = range(store, seal.after_ms, seal.upto_ms)?;
        if seal_digest(&rows) != seal.digest || rows.len() as u64 != seal.records {
            tracing::warn!(
                seal = seal.seq,
                "the gate's log does not match its seal; kept, not pruned"
            );
            done.mismatch = Some(seal.seq);
            return Ok(());
        }
        let prune = tail.next(
            CheckpointKind::Prune,
            Fields {
                after_ms: tail.pruned_upto,
                upto_ms: seal.upto_ms,
                records: seal.records,
                receipts: seal.receipts,
                digest: seal.chain.clone(),
                now_ms,
            },
        );
        let Some(deleted) = store.prune_audit(&prune)? else {
            return Ok(());
        };
        *budget -= 1;
        done.prunes += 1;
        done.pruned += deleted;
        count = count.saturating_sub(deleted);
    }
    Ok(())
}

/// What verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub checkpoints: u64,
    /// Seals whose range is still here, each checked against its records.
    pub seals_checked: u64,
    pub records_checked: u64,
    /// Start records removed by prunes (as the prunes say), and up to when.
    pub records_pruned: u64,
    pub pruned_upto_ms: Option<i64>,
    /// Start records newer than the last seal: counted, not checked.
    pub unsealed: u64,
    /// The first thing that does not hold, if any: the log is whole exactly when this is `None`.
    pub problem: Option<Problem>,
}

/// What does not hold in the log. Owner-facing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Checkpoint `seq` is not where the chain says (numbering, link, kind or range).
    Chain { seq: u64 },
    /// The records of seal `seq`'s range do not digest to it (one was changed, removed or added).
    Seal { seq: u64 },
    /// Records older than the last prune are still here (a prune that did not remove them).
    PrunedRemain { count: u64 },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Chain { seq } => write!(
                f,
                "checkpoint {seq} does not follow from the one before: the chain of checkpoints was changed or cut"
            ),
            Problem::Seal { seq } => write!(
                f,
                "the calls sealed by checkpoint {seq} are not what it sealed: a call or receipt in its range was changed, removed or added"
            ),
            Problem::PrunedRemain { count } => write!(
                f,
                "{count} calls older than the last prune are still in the log"
            ),
        }
    }
}

/// Checks the whole log (see the module's documentation).
pub fn verify(store: &dyn GateLog) -> Result<Verified, LogError> {
    let checkpoints = store.audit_checkpoints()?;
    let mut v = Verified {
        checkpoints: checkpoints.len() as u64,
        seals_checked: 0,
        records_checked: 0,
        records_pruned: 0,
        pruned_upto_ms: None,
        unsealed: 0,
        problem: None,
    };
    if let Some(seq) = broken_link(&checkpoints) {
        v.problem = Some(Problem::Chain { seq });
        return Ok(v);
    }
    let tail = Tail::of(&checkpoints);
    v.pruned_upto_ms = (tail.pruned_upto != LOG_START_MS).then_some(tail.pruned_upto);
    for c in &checkpoints {
        match c.kind {
            CheckpointKind::Prune => v.records_pruned += c.records,
            CheckpointKind::Seal if c.upto_ms > tail.pruned_upto => {
                let rows = range(store, c.after_ms, c.upto_ms)?;
                if rows.len() as u64 != c.records
                    || receipts_of(&rows) != c.receipts
                    || seal_digest(&rows) != c.digest
                {
                    v.problem = Some(Problem::Seal { seq: c.seq });
                    return Ok(v);
                }
                v.seals_checked += 1;
                v.records_checked += c.records;
            }
            CheckpointKind::Seal => {}
        }
    }
    let remaining = store.audit_count_after(LOG_START_MS)?;
    let older = remaining
        .saturating_sub(v.records_checked)
        .saturating_sub(count_after(store, tail.sealed_upto)?);
    if older > 0 {
        v.problem = Some(Problem::PrunedRemain { count: older });
        return Ok(v);
    }
    v.unsealed = count_after(store, tail.sealed_upto)?;
    Ok(v)
}

/// Start records made after `after_ms`.
fn count_after(store: &dyn GateLog, after_ms: i64) -> Result<u64, LogError> {
    Ok(store.audit_count_after(after_ms)?)
}

/// The first checkpoint that does not follow from the one before: its number out of sequence,
/// its chain value not the digest of its predecessor's and its fields, a seal that does not start
/// where the last one ended or ends before it starts, a prune that does not end where a seal
/// ended, after the last prune, or that does not carry that seal's chain value.
fn broken_link(checkpoints: &[AuditCheckpoint]) -> Option<u64> {
    let mut previous = String::new();
    let mut sealed_upto = LOG_START_MS;
    let mut pruned_upto = LOG_START_MS;
    let mut seals: Vec<&AuditCheckpoint> = Vec::new();
    for (i, c) in checkpoints.iter().enumerate() {
        let in_order = c.seq == i as u64 + 1 && chain(&previous, c) == c.chain;
        let fits = match c.kind {
            CheckpointKind::Seal => c.after_ms == sealed_upto && c.upto_ms > c.after_ms,
            CheckpointKind::Prune => {
                c.after_ms == pruned_upto
                    && c.upto_ms > pruned_upto
                    && seals.iter().any(|s| {
                        s.upto_ms == c.upto_ms
                            && s.chain == c.digest
                            && s.records == c.records
                            && s.receipts == c.receipts
                    })
            }
        };
        if !in_order || !fits {
            return Some(c.seq);
        }
        match c.kind {
            CheckpointKind::Seal => {
                sealed_upto = c.upto_ms;
                seals.push(c);
            }
            CheckpointKind::Prune => pruned_upto = c.upto_ms,
        }
        previous.clone_from(&c.chain);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(evidence: Option<&str>, state: Option<&str>) -> (StartMeta, Vec<Receipt>) {
        let meta = StartMeta {
            start_id: "st-1".into(),
            idempotency_key: "once-st-1".into(),
            grant_id: "g-1".into(),
            key_hash_prefix: "0123456789ab".into(),
            reader_id: Some("r-1".into()),
            tool: "get_run".into(),
            binding_digest: "b".into(),
            target: None,
            input_digest: "i".into(),
            sealed_key_id: "k".into(),
            created_at_ms: 100,
        };
        let receipt = Receipt {
            receipt_id: "rc-1".into(),
            start_id: "st-1".into(),
            outcome: "ok".into(),
            result_digest: Some("d".into()),
            output_bytes: Some(700),
            created_at_ms: 101,
            evidence: evidence.map(str::to_owned),
            state: state.map(str::to_owned),
        };
        (meta, vec![receipt])
    }

    /// A receipt without evidence or state digests as every receipt did before runread recorded
    /// them (the digest pinned here was computed apart from this code, from the encoding
    /// `seal_digest` documents), so the seals of ranges written before still verify.
    #[test]
    fn a_receipt_without_facts_digests_as_before() {
        assert_eq!(
            seal_digest(&[row(None, None)]),
            "c1a20b39e0a84a6935a536a65d4d00c7b5dcbf0f763894c4e40f571c757fcc47"
        );
    }

    /// Each of a receipt's facts is in its digest: added, removed, changed or moved from one to
    /// the other, the digest differs.
    #[test]
    fn a_receipts_evidence_and_state_are_each_in_its_digest() {
        let digests = [
            seal_digest(&[row(None, None)]),
            seal_digest(&[row(Some("session_file"), Some("settled"))]),
            seal_digest(&[row(Some("snapshot"), Some("settled"))]),
            seal_digest(&[row(Some("session_file"), Some("not_settled"))]),
            seal_digest(&[row(Some("session_file"), None)]),
            seal_digest(&[row(None, Some("session_file"))]),
            seal_digest(&[row(Some(""), None)]),
            seal_digest(&[row(None, Some(""))]),
        ];
        let distinct: std::collections::BTreeSet<_> = digests.iter().collect();
        assert_eq!(distinct.len(), digests.len(), "{digests:#?}");
    }
}
