//! [`Gate::execute`]: the one way a tool call reaches an adapter.

use std::any::Any;
use std::sync::Arc;

use serde_json::{Map, Value};

use runread_core::{ErrorCode, Target};
use runread_store::{Receipt, StartMeta, StartOutcome, StartRecord, Store};

use crate::keys::KeyProvider;
use crate::registry::{ExecToken, Registry};
use crate::seal::{self, Envelope, Sealed};
use crate::{INPUT_MAX_BYTES, OUTPUT_MAX_BYTES, REPLAY_WINDOW_MS};

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
    pub key_hash: String,
    pub target: Option<Target>,
    /// The admitted, exact input.
    pub input: Value,
    pub now_ms: i64,
}

/// The normalized output of an executed call.
#[derive(Debug, Clone)]
pub struct GateOutput {
    pub start_id: String,
    pub output: Map<String, Value>,
    pub result_digest: String,
}

pub struct Gate {
    store: Arc<dyn Store>,
    registry: Registry,
    keys: Arc<dyn KeyProvider>,
}

fn digest(domain: &[u8], parts: &[&[u8]]) -> String {
    let mut bytes = domain.to_vec();
    for p in parts {
        bytes.extend_from_slice(&(p.len() as u64).to_be_bytes());
        bytes.extend_from_slice(p);
    }
    runread_core::sha256_hex(&bytes)
}

fn random_id(prefix: &str) -> Result<String, ErrorCode> {
    let b = runread_core::random_bytes::<12>().map_err(|_| ErrorCode::Unavailable)?;
    Ok(format!("{prefix}{}", hex::encode(b)))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ErrorCode> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| ErrorCode::Unavailable)
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

impl Gate {
    pub fn new(store: Arc<dyn Store>, registry: Registry, keys: Arc<dyn KeyProvider>) -> Gate {
        Gate {
            store,
            registry,
            keys,
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Runs `call` through the gate with `reader`, the read-only reader of the tool's feature.
    pub async fn execute(
        &self,
        call: Call,
        reader: Arc<dyn Any + Send + Sync>,
    ) -> Result<GateOutput, ErrorCode> {
        // Current binding.
        let binding = self
            .registry
            .get(&call.tool)
            .ok_or(ErrorCode::UnknownTool)?;
        let input_bytes = call.input.to_string().into_bytes();
        if input_bytes.len() > INPUT_MAX_BYTES {
            return Err(ErrorCode::InvalidArguments);
        }
        let input_digest = digest(INPUT_DOMAIN, &[&input_bytes]);
        let idempotency_key = match &call.request_id {
            Some(rid) => digest(
                IDEMPOTENCY_DOMAIN,
                &[
                    call.key_hash.as_bytes(),
                    rid.as_bytes(),
                    call.tool.as_bytes(),
                    input_digest.as_bytes(),
                ],
            ),
            None => random_id("once-")?,
        };
        let start_id = random_id("st-")?;

        // Sealed input, under the current key; the key is dropped (zeroized) right after.
        let (key_id, key) = self.keys.current().map_err(|_| ErrorCode::Unavailable)?;
        let meta = StartMeta {
            start_id: start_id.clone(),
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
            input_digest,
            sealed_key_id: key_id,
            created_at_ms: call.now_ms,
        };
        let sealed =
            seal::seal(&key, &envelope(&meta), &input_bytes).map_err(|_| ErrorCode::Unavailable);
        drop(key);
        let sealed = sealed?;
        let record = StartRecord {
            meta,
            sealed_nonce: sealed.nonce.to_vec(),
            sealed_ciphertext: sealed.ciphertext,
        };

        // Durable start record before any adapter work; a replay finds the existing one.
        let store = self.store.clone();
        let since = call.now_ms - REPLAY_WINDOW_MS;
        let outcome = blocking(move || store.begin_call(&record, since))
            .await?
            .map_err(|e| {
                tracing::warn!(error = %e, "start record not written");
                ErrorCode::Unavailable
            })?;
        let start_id = match outcome {
            StartOutcome::Created => start_id,
            StartOutcome::Existing(existing) => existing.meta.start_id.clone(),
        };
        // The adapter runs on what the store holds, not on the caller's copy.
        let store = self.store.clone();
        let sid = start_id.clone();
        let stored = blocking(move || store.start_record(&sid))
            .await?
            .map_err(|_| ErrorCode::Unavailable)?
            .ok_or_else(|| {
                tracing::warn!("start record missing after commit");
                ErrorCode::Unavailable
            })?;
        let input = self.unseal(&stored).inspect_err(|code| {
            self.receipt_later(&start_id, &format!("refused:{}", code.as_str()))
        })?;
        if !binding.input_validator.is_valid(&input) {
            self.receipt(&start_id, "refused:invalid_arguments", None, call.now_ms)
                .await?;
            return Err(ErrorCode::InvalidArguments);
        }

        // Execute with the binding's deadline. A late result is discarded; the blocking read
        // itself is not cancelled.
        let adapter = binding.adapter.clone();
        let task = tokio::task::spawn_blocking(move || {
            adapter.execute(&ExecToken::mint(), &input, &*reader)
        });
        let result = match tokio::time::timeout(binding.timeout, task).await {
            Err(_) => {
                self.receipt(&start_id, "timeout", None, call.now_ms)
                    .await?;
                return Err(ErrorCode::Timeout);
            }
            Ok(Err(_)) => {
                self.receipt(&start_id, "refused:unavailable", None, call.now_ms)
                    .await?;
                return Err(ErrorCode::Unavailable);
            }
            Ok(Ok(r)) => r,
        };
        let output = match result {
            Ok(o) => o,
            Err(code) => {
                self.receipt(
                    &start_id,
                    &format!("refused:{}", code.as_str()),
                    None,
                    call.now_ms,
                )
                .await?;
                return Err(code);
            }
        };

        // Normalize: schema, size cap, result digest into the receipt.
        let value = Value::Object(output);
        if !binding.output_validator.is_valid(&value) {
            tracing::error!(tool = %call.tool, "adapter output does not match its schema");
            self.receipt(&start_id, "invalid_output", None, call.now_ms)
                .await?;
            return Err(ErrorCode::Unavailable);
        }
        let bytes = value.to_string().into_bytes();
        if bytes.len() > OUTPUT_MAX_BYTES {
            self.receipt(&start_id, "invalid_output", None, call.now_ms)
                .await?;
            return Err(ErrorCode::Unavailable);
        }
        let result_digest = digest(RESULT_DOMAIN, &[start_id.as_bytes(), &bytes]);
        self.receipt_with(
            &start_id,
            "ok",
            Some(result_digest.clone()),
            Some(bytes.len() as u64),
            call.now_ms,
        )
        .await?;
        let Value::Object(output) = value else {
            return Err(ErrorCode::Unavailable);
        };
        Ok(GateOutput {
            start_id,
            output,
            result_digest,
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

    async fn receipt(
        &self,
        start_id: &str,
        outcome: &str,
        digest: Option<String>,
        now_ms: i64,
    ) -> Result<(), ErrorCode> {
        self.receipt_with(start_id, outcome, digest, None, now_ms)
            .await
    }

    async fn receipt_with(
        &self,
        start_id: &str,
        outcome: &str,
        result_digest: Option<String>,
        output_bytes: Option<u64>,
        now_ms: i64,
    ) -> Result<(), ErrorCode> {
        let receipt = Receipt {
            receipt_id: random_id("rc-")?,
            start_id: start_id.to_owned(),
            outcome: outcome.to_owned(),
            result_digest,
            output_bytes,
            created_at_ms: now_ms.max(runread_core::timefmt::now_ms()),
        };
        let store = self.store.clone();
        blocking(move || store.append_receipt(&receipt))
            .await?
            .map_err(|e| {
                tracing::warn!(error = %e, "receipt not written");
                ErrorCode::Unavailable
            })
    }

    /// Records a refusal from a synchronous path without waiting for it.
    fn receipt_later(&self, start_id: &str, outcome: &str) {
        let store = self.store.clone();
        let receipt = match random_id("rc-") {
            Ok(id) => Receipt {
                receipt_id: id,
                start_id: start_id.to_owned(),
                outcome: outcome.to_owned(),
                result_digest: None,
                output_bytes: None,
                created_at_ms: runread_core::timefmt::now_ms(),
            },
            Err(_) => return,
        };
        let _ = store.append_receipt(&receipt);
    }
}
