//! The binding registry: built once at startup from the compiled-in definitions, checked against
//! their pinned definition digests, then frozen. There is no API to add a binding afterwards.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value, json};

use runread_core::{ErrorCode, Feature};

use crate::REGISTRY_MAX_BINDINGS;
use runread_core::limits::ADAPTER_DEADLINE_MAX;

/// Proof that the gate is the caller. Only this crate can make one, so no code outside the gate
/// can run a [`FeatureReader`].
pub struct ExecToken(());

impl ExecToken {
    pub(crate) fn mint() -> ExecToken {
        ExecToken(())
    }
}

/// What a tool is: its name, version, description, feature, schemas and deadline.
#[derive(Debug, Clone)]
pub struct Definition {
    pub name: &'static str,
    pub version: u32,
    pub description: &'static str,
    /// The feature a grant must name; `None` for tools every granted key may call.
    pub feature: Option<Feature>,
    pub input_schema: Value,
    pub output_schema: Value,
    /// The adapter's deadline: at most [`ADAPTER_DEADLINE_MAX`] (a binding may only tighten it).
    pub timeout: Duration,
}

impl Definition {
    /// SHA-256 over the definition's canonical JSON: any change to name, version, description,
    /// feature, schemas or deadline changes it.
    pub fn digest(&self) -> String {
        let canonical = json!({
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "feature": self.feature.map(Feature::as_str),
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "timeoutMs": self.timeout.as_millis() as u64,
        });
        let mut bytes = b"runread.binding.v1\0".to_vec();
        bytes.extend_from_slice(&runread_core::canonical::to_vec(&canonical));
        runread_core::sha256_hex(&bytes)
    }
}

/// What a result carried that its receipt records, in its tool's own words: the evidence it was
/// read from and its settled state. The gate records them and never reads them (it knows no
/// tool's semantics); they are words fixed in the code, so nothing an agent wrote can reach the
/// audit through them. `None`: the tool's result has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiptFacts {
    pub evidence: Option<&'static str>,
    pub state: Option<&'static str>,
}

/// What a reader served: its output, and what the call's receipt records of it.
#[derive(Debug, Clone)]
pub struct Served {
    pub output: Map<String, Value>,
    pub facts: ReceiptFacts,
}

/// What admission made for one call of one tool: the read-only reader of the tool's own feature,
/// typed by whoever admitted it, and the call's only authority. Running it through this trait
/// takes an [`ExecToken`], which only the gate holds; the gate runs it only under the binding
/// of [`FeatureReader::tool`].
pub trait FeatureReader: Send + Sync {
    /// The tool this reader was admitted for.
    fn tool(&self) -> &'static str;
    /// Serves `input` (the unsealed, re-validated copy) from what admission read.
    fn execute(&self, token: &ExecToken, input: &Value) -> Result<Served, ErrorCode>;
}

/// The effect a binding may have. runread's adapters only read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Read,
}

/// Where a binding executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionClass {
    BuiltinInProcess,
}

/// One tool's definition bound, frozen.
pub struct Binding {
    pub tool: &'static str,
    pub version: u32,
    pub definition_digest: String,
    pub effect: Effect,
    pub class: ExecutionClass,
    pub timeout: Duration,
    pub feature: Option<Feature>,
    input_schema: Value,
    output_schema: Value,
    /// Compiled from the schemas on first use (see [`Binding::validators`]).
    validators: OnceLock<Option<Validators>>,
}

/// A binding's compiled input and output schemas.
pub(crate) struct Validators {
    pub input: jsonschema::Validator,
    pub output: jsonschema::Validator,
}

impl Binding {
    /// The binding's compiled schemas, compiled on its first call rather than at startup: the
    /// schemas are compiled in and pinned by digest (checked at startup), and compiling all of
    /// them was a third of the time from spawn to the first answered request. `None` if they do
    /// not compile, which fails every call of the tool (`unavailable`); a test compiles every
    /// compiled-in schema.
    pub(crate) fn validators(&self) -> Option<&Validators> {
        self.validators
            .get_or_init(|| {
                Some(Validators {
                    input: jsonschema::validator_for(&self.input_schema).ok()?,
                    output: jsonschema::validator_for(&self.output_schema).ok()?,
                })
            })
            .as_ref()
    }

    /// Whether the binding's schemas compile (compiling them now if no call has yet).
    pub fn schemas_compile(&self) -> bool {
        self.validators().is_some()
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// A tool's definition no longer matches the digest pinned for it.
    DigestDrift {
        tool: &'static str,
        expected: String,
        actual: String,
    },
    /// A definition without a pinned digest, or a pinned digest without a definition.
    Unpinned(&'static str),
    Duplicate(&'static str),
    TooMany,
    /// A deadline longer than the gate allows.
    Deadline(&'static str),
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistryError::DigestDrift {
                tool,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "binding {tool}: definition digest {actual} does not match the pinned {expected}"
                )
            }
            RegistryError::Unpinned(t) => {
                write!(f, "binding {t}: no pinned digest (or no definition)")
            }
            RegistryError::Duplicate(t) => write!(f, "binding {t}: defined twice"),
            RegistryError::TooMany => write!(f, "more than {REGISTRY_MAX_BINDINGS} bindings"),
            RegistryError::Deadline(t) => write!(
                f,
                "binding {t}: deadline longer than {ADAPTER_DEADLINE_MAX:?}"
            ),
        }
    }
}

/// The frozen set of bindings.
pub struct Registry {
    bindings: BTreeMap<&'static str, Binding>,
}

impl Registry {
    /// Builds the registry from the compiled-in `definitions`, each checked against `pinned`
    /// (tool → digest).
    pub fn build(
        definitions: Vec<Definition>,
        pinned: &[(&'static str, &'static str)],
    ) -> Result<Registry, RegistryError> {
        if definitions.len() > REGISTRY_MAX_BINDINGS {
            return Err(RegistryError::TooMany);
        }
        let mut bindings = BTreeMap::new();
        for def in definitions {
            let expected = pinned
                .iter()
                .find(|(t, _)| *t == def.name)
                .map(|(_, d)| *d)
                .ok_or(RegistryError::Unpinned(def.name))?;
            let actual = def.digest();
            if actual != expected {
                return Err(RegistryError::DigestDrift {
                    tool: def.name,
                    expected: expected.to_owned(),
                    actual,
                });
            }
            if def.timeout > ADAPTER_DEADLINE_MAX {
                return Err(RegistryError::Deadline(def.name));
            }
            let binding = Binding {
                tool: def.name,
                version: def.version,
                definition_digest: actual,
                effect: Effect::Read,
                class: ExecutionClass::BuiltinInProcess,
                timeout: def.timeout,
                feature: def.feature,
                input_schema: def.input_schema,
                output_schema: def.output_schema,
                validators: OnceLock::new(),
            };
            if bindings.insert(def.name, binding).is_some() {
                return Err(RegistryError::Duplicate(def.name));
            }
        }
        if let Some((t, _)) = pinned.iter().find(|(t, _)| !bindings.contains_key(t)) {
            return Err(RegistryError::Unpinned(t));
        }
        Ok(Registry { bindings })
    }

    pub fn get(&self, tool: &str) -> Option<&Binding> {
        self.bindings.get(tool)
    }

    pub fn tools(&self) -> impl Iterator<Item = &Binding> {
        self.bindings.values()
    }
}
