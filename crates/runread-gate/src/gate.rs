//! [`Gate::execute`]: the one way a tool call reaches an adapter.

use std::sync::Arc;

use serde_json::{Map, Value};

use runread_core::{ErrorCode, Target};
use runread_store::{GateLog, Receipt, StartMeta, StartOutcome, StartRecord};

use crate::registry::{
    Binding, ExecToken, FeatureReader, ReceiptFacts, Registry, Served, Validators,
};
use crate::seal::{self, Envelope, Sealed};
use runread_core::limits::{GATE_INPUT_MAX_BYTES, GATE_OUTPUT_MAX_BYTES, REPLAY_WINDOW_MS};
use runread_keys::KeyProvider;

const INPUT_DOMAIN: &[u8] = b"runread.input.v1\0";
const RESULT_DOMAIN: &[u8] = b"runread.result.v1\0";
const IDEMPOTENCY_DOMAIN: &[u8] = b"runread.idempotency.v1\0";
/// Hex characters of the key hash kept in a start record: enough to tell keys apart in an audit,
/// not enough to matter.
const KEY_HASH_PREFIX_LEN: usize = 12;

/// One admitted call.
#[derive(Debug, Clone)]
pub struct Call {
    pub tool: String,
    /// The transport's request id (JSON-RPC `id`), when it has one.
    pub request_id: Option<String>,
    /// The grant that admitted the call (empty when no grant applies, e.g. a listing).
    pub grant_id: String,
    /// The reader whose key made the call.
    pub reader_id: String,
    pub key_hash: String,
    pub target: Option<Target>,
    /// The admitted, exact input.
    pub input: Value,
    pub now_ms: i64,
    /// Since when a start record of the same call (same key, request id and input) is reused
    /// rather than another written: `None`, the last [`REPLAY_WINDOW_MS`]; a task's answer, from
    /// when the task was made (every poll of one task is one call).
    pub replay_since_ms: Option<i64>,
}

/// The normalized output of an executed call.
#[derive(Debug, Clone)]
pub struct GateOutput {
    pub start_id: String,
    pub output: Map<String, Value>,
    pub result_digest: String,
}

/// The gate. Cheap to clone: clones share one store, registry and key provider.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn GateLog>,
    registry: Registry,
    keys: Arc<dyn KeyProvider>,
}

/// What admission hands the gate: the admitted call, the reader of its tool's feature, and
/// whatever the re-check after the gate needs (`context`).
pub struct GateAdmission<T> {
    pub call: Call,
    pub reader: Arc<dyn FeatureReader>,
    pub context: T,
}

/// Where a gated call is, shared by its blocking thread and the caller waiting on the deadline.
/// Whoever moves it first decides: a call that timed out never delivers, and a call that finished
/// is never reported as timed out.
enum Phase {
    /// Admission and the start record: no adapter runs yet.
    Admitting,
    /// The adapter runs under this start record.
    Running { start_id: String },
    /// The adapter returned in time; its result is being normalized and delivered.
    Finished,
    /// The caller got `timeout`; whatever the thread still produces is discarded.
    TimedOut,
}

struct Deadline(std::sync::Mutex<Phase>);

impl Deadline {
    /// Moves the phase with `f`; a poisoned lock (a panicked adapter thread) still yields it.
    fn with<R>(&self, f: impl FnOnce(&mut Phase) -> R) -> R {
        let mut g = match self.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut g)
    }

    /// The adapter is about to run under `start_id`; false when the caller already gave up.
    fn start(&self, start_id: &str) -> bool {
        self.with(|p| match p {
            Phase::TimedOut => false,
            _ => {
                *p = Phase::Running {
                    start_id: start_id.to_owned(),
                };
                true
            }
        })
    }

    /// The adapter returned; false when it was too late (the caller already has `timeout`).
    fn finish(&self) -> bool {
        self.with(|p| match p {
            Phase::TimedOut => false,
            _ => {
                *p = Phase::Finished;
                true
            }
        })
    }

    /// The caller's deadline passed: what the call was doing then. A finished call keeps its
    /// phase (its result is on the way); any other is timed out from now on.
    fn expire(&self) -> Expired {
        self.with(|p| match std::mem::replace(p, Phase::TimedOut) {
            Phase::Running { start_id } => Expired::Running { start_id },
            Phase::Admitting | Phase::TimedOut => Expired::BeforeAdapter,
            Phase::Finished => {
                *p = Phase::Finished;
                Expired::Finished
            }
        })
    }
}

/// What a call was doing when its deadline passed.
enum Expired {
    /// No adapter ran: the blocking thread receipts the call if it has a start record.
    BeforeAdapter,
    /// The adapter is running under this start record: the caller receipts the timeout.
    Running { start_id: String },
    /// The adapter returned just in time: its result is on the way.
    Finished,
}

/// The admitted input as the gate seals and digests it: canonical (the same input gives the same
/// digest whatever order its keys came in) and at most [`GATE_INPUT_MAX_BYTES`].
struct ExactInput {
    bytes: Vec<u8>,
    digest: String,
}

impl ExactInput {
    fn of(input: &Value) -> Result<ExactInput, ErrorCode> {
        let bytes = runread_core::canonical::to_vec(input);
        if bytes.len() > GATE_INPUT_MAX_BYTES {
            return Err(ErrorCode::InvalidArguments);
        }
        let digest = digest(INPUT_DOMAIN, &[&bytes]);
        Ok(ExactInput { bytes, digest })
    }
}

/// An adapter's output that passed normalization: its schema, the size cap, and its digest for
/// the receipt.
struct Normalized {
    output: Map<String, Value>,
    bytes: u64,
    result_digest: String,
}

/// Runs `reader` under `binding`; a panicking reader is a refused call with its receipt, like any
/// other failure, and so is a reader admitted for another tool (it never runs).
fn run_reader(
    binding: &Binding,
    input: &Value,
    reader: &dyn FeatureReader,
) -> Result<Served, ErrorCode> {
    if reader.tool() != binding.tool {
        tracing::error!(
            tool = binding.tool,
            reader = reader.tool(),
            "a reader admitted for another tool"
        );
        return Err(ErrorCode::Unavailable);
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        reader.execute(&ExecToken::mint(), input)
    }))
    .unwrap_or(Err(ErrorCode::Unavailable))
}

/// Normalizes `output` of the call `start_id` of `tool`: `None` when it does not match the
/// tool's output schema or is over [`GATE_OUTPUT_MAX_BYTES`].
fn normalize(
    tool: &str,
    validators: &Validators,
    start_id: &str,
    output: Map<String, Value>,
) -> Option<Normalized> {
    let value = Value::Object(output);
    if !validators.output.is_valid(&value) {
        tracing::error!(tool = %tool, "adapter output does not match its schema");
        return None;
    }
    let bytes = runread_core::canonical::to_vec(&value);
    if bytes.len() > GATE_OUTPUT_MAX_BYTES {
        return None;
    }
    let result_digest = digest(RESULT_DOMAIN, &[start_id.as_bytes(), &bytes]);
    let Value::Object(output) = value else {
        return None;
    };
    Some(Normalized {
        output,
        bytes: bytes.len() as u64,
        result_digest,
    })
}

/// SHA-256 of `domain`, then each part prefixed with its length (so parts cannot run together).
fn digest(domain: &[u8], parts: &[&[u8]]) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(domain);
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    hex::encode(h.finalize())
}

fn random_id(prefix: &str) -> Result<String, ErrorCode> {
    let b = runread_core::random_bytes::<12>().map_err(|_| ErrorCode::Unavailable)?;
    Ok(format!("{prefix}{}", hex::encode(b)))
}

fn envelope(m: &StartMeta) -> Envelope {
    Envelope {
        start_id: m.start_id.clone(),
        key_id: m.sealed_key_id.clone(),
        grant_id: m.grant_id.clone(),
        tool: m.tool.clone(),
        binding_digest: m.binding_digest.clone(),
        target_digest: m
            .target
            .as_ref()
            .map(|t| hex::encode(t.digest()))
            .unwrap_or_default(),
        input_digest: m.input_digest.clone(),
        created_at_ms: m.created_at_ms,
    }
}

/// The adapter's output for `input`, if it runs: not once the caller gave up, and not handed on
/// if the caller gave up while it ran.
fn adapter_output(
    binding: &Binding,
    input: &Value,
    reader: &dyn FeatureReader,
    deadline: &Deadline,
    receipts: &CallReceipts<'_>,
) -> Result<Served, ErrorCode> {
    // The caller gave up while the start record was written: no adapter runs.
    if !deadline.start(&receipts.start_id) {
        receipts.once("timeout", None, None, ReceiptFacts::default())?;
        return Err(ErrorCode::Timeout);
    }
    let result = run_reader(binding, input, reader);
    // A late result goes nowhere: the caller already has `timeout`, and its receipt.
    if !deadline.finish() {
        return Err(ErrorCode::Timeout);
    }
    result.map_err(|code| receipts.refuse(code))
}

/// The receipts of one call, from its durable start record on: each outcome receipted once, a
/// replay's included.
struct CallReceipts<'a> {
    inner: &'a Inner,
    start_id: String,
    /// What earlier runs of the same start record already receipted.
    prior: Vec<Receipt>,
    now_ms: i64,
}

impl CallReceipts<'_> {
    /// Receipts `outcome` with what its result carried (`facts`), unless a receipt of the same
    /// outcome and result digest exists.
    fn once(
        &self,
        outcome: &str,
        digest: Option<String>,
        bytes: Option<u64>,
        facts: ReceiptFacts,
    ) -> Result<(), ErrorCode> {
        if self
            .prior
            .iter()
            .any(|r| r.outcome == outcome && r.result_digest == digest)
        {
            return Ok(());
        }
        self.inner
            .receipt(&self.start_id, (outcome, digest, bytes, facts), self.now_ms)
    }

    /// Receipts the refusal `code` (best effort: the caller gets `code` either way) and returns it.
    fn refuse(&self, code: ErrorCode) -> ErrorCode {
        let outcome = format!("refused:{}", code.as_str());
        let _ = self.once(&outcome, None, None, ReceiptFacts::default());
        code
    }
}

impl Gate {
    pub fn new(store: Arc<dyn GateLog>, registry: Registry, keys: Arc<dyn KeyProvider>) -> Gate {
        Gate {
            inner: Arc::new(Inner {
                store,
                registry,
                keys,
            }),
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Runs an already admitted `call` through the gate with `reader`, the read-only reader of
    /// the tool's feature.
    pub async fn execute(
        &self,
        call: Call,
        reader: Arc<dyn FeatureReader>,
    ) -> Result<GateOutput, ErrorCode> {
        let tool = call.tool.clone();
        self.execute_admitted(
            &tool,
            move || {
                Ok(GateAdmission {
                    call,
                    reader,
                    context: (),
                })
            },
            |()| Ok(()),
        )
        .await
    }

    /// Admission (`admit`), the gate, and the re-check (`recheck`: after the adapter and the
    /// output's normalization, before the receipt, so a call it refuses is receipted as refused),
    /// all on one blocking thread: a call crosses from the async threads once, whatever store work
    /// it does.
    ///
    /// The binding's deadline bounds the caller from the start of admission. A call still
    /// admitting at the deadline runs no adapter; one whose adapter is running gets a `timeout`
    /// receipt at once and its late result is discarded (a timeout does not cancel I/O).
    pub async fn execute_admitted<T: Send + 'static>(
        &self,
        tool: &str,
        admit: impl FnOnce() -> Result<GateAdmission<T>, ErrorCode> + Send + 'static,
        recheck: impl FnOnce(&T) -> Result<(), ErrorCode> + Send + 'static,
    ) -> Result<GateOutput, ErrorCode> {
        let limit = self
            .inner
            .registry
            .get(tool)
            .ok_or(ErrorCode::UnknownTool)?
            .timeout;
        let deadline = Arc::new(Deadline(std::sync::Mutex::new(Phase::Admitting)));
        let inner = self.inner.clone();
        let phase = deadline.clone();
        let mut task = tokio::task::spawn_blocking(move || {
            let admission = admit()?;
            let context = admission.context;
            inner.run(admission.call, admission.reader, &phase, || {
                recheck(&context)
            })
        });
        match tokio::time::timeout(limit, &mut task).await {
            Ok(joined) => joined.map_err(|_| ErrorCode::Unavailable)?,
            Err(_elapsed) => match deadline.expire() {
                Expired::Finished => task.await.map_err(|_| ErrorCode::Unavailable)?,
                Expired::BeforeAdapter => Err(ErrorCode::Timeout),
                Expired::Running { start_id } => {
                    let inner = self.inner.clone();
                    let _ = tokio::task::spawn_blocking(move || {
                        inner.receipt(
                            &start_id,
                            ("timeout", None, None, ReceiptFacts::default()),
                            0,
                        )
                    })
                    .await;
                    Err(ErrorCode::Timeout)
                }
            },
        }
    }
}

impl Inner {
    /// The gate proper, synchronous: start record, sealed input, adapter, normalized output,
    /// re-check, receipt. Each step below either hands the next its input or refuses the call;
    /// from the durable start record on, every refusal is receipted.
    fn run(
        &self,
        call: Call,
        reader: Arc<dyn FeatureReader>,
        deadline: &Deadline,
        recheck: impl FnOnce() -> Result<(), ErrorCode>,
    ) -> Result<GateOutput, ErrorCode> {
        let binding = self
            .registry
            .get(&call.tool)
            .ok_or(ErrorCode::UnknownTool)?;
        let input = ExactInput::of(&call.input)?;
        let record = self.sealed_start(&call, binding, &input)?;
        let since = call
            .replay_since_ms
            .unwrap_or(call.now_ms - REPLAY_WINDOW_MS);
        let stored = self.begin(&record, since)?;
        let receipts = self.receipts_of(&record, &stored, call.now_ms)?;
        let (input, validators) = self.stored_input(&call.tool, binding, &stored, &receipts)?;
        let served = adapter_output(binding, &input, &*reader, deadline, &receipts)?;
        let Some(normalized) = normalize(&call.tool, validators, &receipts.start_id, served.output)
        else {
            receipts.once("invalid_output", None, None, ReceiptFacts::default())?;
            return Err(ErrorCode::Unavailable);
        };
        // Admission step 7, after all the call's reads and before its receipt: a grant revoked or
        // a target moved meanwhile refuses the call, and its receipt says so (never `ok` for
        // output that did not leave).
        recheck().map_err(|code| receipts.refuse(code))?;
        receipts.once(
            "ok",
            Some(normalized.result_digest.clone()),
            Some(normalized.bytes),
            served.facts,
        )?;
        Ok(GateOutput {
            start_id: receipts.start_id,
            output: normalized.output,
            result_digest: normalized.result_digest,
        })
    }

    /// The receipts of the call whose start record the store holds as `stored` (`record` is the
    /// one this call wrote, which a replay finds already there).
    fn receipts_of(
        &self,
        record: &StartRecord,
        stored: &StartRecord,
        now_ms: i64,
    ) -> Result<CallReceipts<'_>, ErrorCode> {
        let start_id = stored.meta.start_id.clone();
        // A replayed call (a retry, a task polled again) gets no second receipt saying what one
        // already says: one start record and one receipt per outcome.
        let prior = match start_id == record.meta.start_id {
            true => Vec::new(),
            false => self
                .store
                .receipts(&start_id)
                .map_err(|_| ErrorCode::Unavailable)?,
        };
        Ok(CallReceipts {
            inner: self,
            start_id,
            prior,
            now_ms,
        })
    }

    /// The input the adapter may run on, with the tool's validators: what the store holds, not
    /// the caller's copy, and only if it matches the tool's input schema.
    fn stored_input<'b>(
        &self,
        tool: &str,
        binding: &'b Binding,
        stored: &StartRecord,
        receipts: &CallReceipts<'_>,
    ) -> Result<(Value, &'b Validators), ErrorCode> {
        let input = self.unseal(stored).map_err(|code| receipts.refuse(code))?;
        let Some(validators) = binding.validators() else {
            tracing::error!(tool = %tool, "a compiled-in schema does not compile");
            return Err(receipts.refuse(ErrorCode::Unavailable));
        };
        if !validators.input.is_valid(&input) {
            return Err(receipts.refuse(ErrorCode::InvalidArguments));
        }
        Ok((input, validators))
    }

    /// The call's start record with its input sealed under the current key; the key is dropped
    /// (zeroized) right after.
    fn sealed_start(
        &self,
        call: &Call,
        binding: &Binding,
        input: &ExactInput,
    ) -> Result<StartRecord, ErrorCode> {
        let idempotency_key = match &call.request_id {
            Some(rid) => digest(
                IDEMPOTENCY_DOMAIN,
                &[
                    call.key_hash.as_bytes(),
                    rid.as_bytes(),
                    call.tool.as_bytes(),
                    input.digest.as_bytes(),
                ],
            ),
            None => random_id("once-")?,
        };
        let start_id = random_id("st-")?;
        let (key_id, key) = self.keys.current().map_err(|_| ErrorCode::Unavailable)?;
        let meta = StartMeta {
            start_id,
            idempotency_key,
            grant_id: call.grant_id.clone(),
            key_hash_prefix: call
                .key_hash
                .get(..KEY_HASH_PREFIX_LEN)
                .unwrap_or("")
                .to_owned(),
            tool: call.tool.clone(),
            binding_digest: binding.definition_digest.clone(),
            target: call.target.clone(),
            input_digest: input.digest.clone(),
            sealed_key_id: key_id,
            created_at_ms: call.now_ms,
            reader_id: Some(call.reader_id.clone()),
        };
        let sealed =
            seal::seal(&key, &envelope(&meta), &input.bytes).map_err(|_| ErrorCode::Unavailable);
        drop(key);
        let sealed = sealed?;
        Ok(StartRecord {
            meta,
            sealed_nonce: sealed.nonce.to_vec(),
            sealed_ciphertext: sealed.ciphertext,
        })
    }

    /// Makes `record` durable before any adapter work (a replay of a record made at or after
    /// `since` finds that one) and returns the start record as the store holds it.
    fn begin(&self, record: &StartRecord, since: i64) -> Result<StartRecord, ErrorCode> {
        let outcome = self.store.begin_call(record, since).map_err(|e| {
            tracing::warn!(error = %e, "start record not written");
            ErrorCode::Unavailable
        })?;
        let start_id = match &outcome {
            StartOutcome::Created => &record.meta.start_id,
            StartOutcome::Existing(existing) => &existing.meta.start_id,
        };
        self.store
            .start_record(start_id)
            .map_err(|_| ErrorCode::Unavailable)?
            .ok_or_else(|| {
                tracing::warn!("start record missing after commit");
                ErrorCode::Unavailable
            })
    }

    fn unseal(&self, stored: &StartRecord) -> Result<Value, ErrorCode> {
        let key = self
            .keys
            .get(&stored.meta.sealed_key_id)
            .map_err(|_| ErrorCode::Unavailable)?;
        let nonce: [u8; seal::NONCE_BYTES] = stored
            .sealed_nonce
            .as_slice()
            .try_into()
            .map_err(|_| ErrorCode::Unavailable)?;
        let sealed = Sealed {
            nonce,
            ciphertext: stored.sealed_ciphertext.clone(),
        };
        let plain = seal::open(&key, &envelope(&stored.meta), &sealed);
        drop(key);
        let plain = plain.map_err(|_| {
            tracing::warn!("sealed input did not open");
            ErrorCode::Unavailable
        })?;
        if digest(INPUT_DOMAIN, &[&plain]) != stored.meta.input_digest {
            return Err(ErrorCode::Unavailable);
        }
        serde_json::from_slice(&plain).map_err(|_| ErrorCode::InvalidArguments)
    }

    /// Appends a receipt of (outcome, result digest, output bytes, what the result carried); a
    /// receipt that cannot be written fails the call (`unavailable`).
    fn receipt(
        &self,
        start_id: &str,
        (outcome, result_digest, output_bytes, facts): (
            &str,
            Option<String>,
            Option<u64>,
            ReceiptFacts,
        ),
        not_before_ms: i64,
    ) -> Result<(), ErrorCode> {
        let receipt = Receipt {
            receipt_id: random_id("rc-")?,
            start_id: start_id.to_owned(),
            outcome: outcome.to_owned(),
            result_digest,
            output_bytes,
            // Never before its start record, even if the clock stepped back.
            created_at_ms: not_before_ms.max(runread_core::timefmt::now_ms()),
            evidence: facts.evidence.map(str::to_owned),
            state: facts.state.map(str::to_owned),
        };
        self.store.append_receipt(&receipt).map_err(|e| {
            tracing::warn!(error = %e, "receipt not written");
            ErrorCode::Unavailable
        })
    }
}
