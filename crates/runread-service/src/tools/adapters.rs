//! The compiled-in adapters, their pinned definition digests, and admission up to the gate.
//!
//! Each tool's rules live in its own module, as one [`ToolRules`] implementation: its exact
//! arguments ([`ExactArgs`]), what admission reads for it, and its execution. This module runs
//! them the same way for every tool ([`admit`], then the gate or the preview runs the typed
//! reader the tool's admission made); [`tools::Tool::rules`] is the table from
//! the catalog to them. A new tool is its module, its catalog entry (in `tools`) and its pinned
//! digest here.
//!
//! Each adapter receives only the reader of its own feature, built at admission from what
//! admission already read: a snapshot of one run, the session file's identity observed now, or
//! the key's live grants. No adapter gets the store, the filesystem, the network or a process.

use std::sync::Arc;

use serde_json::{Map, Value};

use runread_core::redact::Redactor;
use runread_core::{ErrorCode, Feature, Target};
use runread_gate::{Definition, ExecToken, FeatureReader, ReceiptFacts, Served};
use std::sync::LazyLock;

use runread_core::cursor::CursorKey;
use runread_core::envelope::Trust;
use runread_sessions::EntrySummary;
use runread_store::{ArtifactRecord, Grant, RunRecord, SessionRecord};

use crate::admission;
use crate::admission::KeyContext;
use crate::evidence::Reading;
use crate::evidence::fork::Fork;
use crate::evidence::publication::{Evidence as AnswerEvidence, PublishedCache};
use crate::evidence::source::Source;
use crate::evidence::supervised::Supervised;

/// The adapter's deadline (the gate's maximum).
const DEADLINE: std::time::Duration = runread_core::limits::ADAPTER_DEADLINE_MAX;

/// One tool, as its own module defines it: what clients are shown, the feature a grant must
/// name, its label, its schemas, its rules and its pinned digest.
pub struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// `None`: available to any key with a live grant.
    pub feature: Option<Feature>,
    /// The text label: the lowest trust of any field the output can carry. `Untrusted` exactly
    /// when the output schema marks a field as the agent's (`SOURCE_KEYWORD`); `Medium` only
    /// for output that is all runread's own (enums, flags, counts, digests, runread's ids and
    /// times it rendered itself).
    pub trust: Trust,
    /// Version of the tool's definition; bump it with any change of meaning.
    pub version: u32,
    pub input_schema: &'static LazyLock<Value>,
    /// Schema of what the adapter produces: the one schemars derives from the output type of the
    /// tool's rules (`schema::output_schema`), computed once; the declared schema adds the trust
    /// fields.
    pub output_schema: &'static LazyLock<Value>,
    /// The tool's rules: how it is admitted and what it serves.
    pub(crate) rules: &'static dyn Rules,
    /// The digest of [`ToolDef::definition`], pinned: the service refuses to start while they
    /// differ.
    pub pinned: &'static str,
}

impl ToolDef {
    /// The `outputSchema` clients see: the adapter's schema plus the trust fields every result carries.
    pub fn declared_output_schema(&self) -> Value {
        crate::tools::schema::with_trust((**self.output_schema).clone(), self.name)
    }

    /// The definition the gate binds and pins.
    pub fn definition(&self) -> Definition {
        Definition {
            name: self.name,
            version: self.version,
            description: self.description,
            feature: self.feature,
            input_schema: (**self.input_schema).clone(),
            output_schema: (**self.output_schema).clone(),
            timeout: DEADLINE,
        }
    }
}

/// One tool's rules, implemented once in the tool's own module: its exact arguments (admission
/// step 4), the grant and currency it needs and the reader it gets (step 5), and what it serves
/// from that reader. Its name, schemas and feature are its [`ToolDef`], beside it.
pub(crate) trait ToolRules: Sync + 'static {
    /// The tool's exact arguments.
    type Args: ExactArgs;
    /// Everything the tool's execution may read, built at admission.
    type Reader: Send + Sync + 'static;
    /// What the tool serves, as one type: its fields are the output's, its enums the states an
    /// output can hold, and its schema (bounds, marks and conditions included, as its attributes
    /// say) is the tool's output schema (`every_tool_serves_its_output_types_schema`).
    type Output: serde::Serialize + schemars::JsonSchema;

    /// The input the gate seals for `args` (which [`ExactArgs::parse`] accepted): the arguments
    /// as given, unless the tool accepts an absent argument object.
    fn input(args: &Value) -> Value {
        args.clone()
    }

    /// Admission step 5 for `args` (through [`AdmissionContext`]), and the reader built from what it
    /// read.
    fn admit(
        at: &AdmissionContext<'_>,
        args: &Self::Args,
    ) -> Result<ToolAdmission<Self::Reader>, ErrorCode>;

    /// The adapter: serves `args` (the unsealed input, parsed again) from `reader`. Every string
    /// of its output is masked afterwards, whatever it masked itself.
    fn execute(args: Self::Args, reader: &Self::Reader) -> Result<Self::Output, ErrorCode>;

    /// What the receipt of a call records of its `output`: the evidence it was read from and its
    /// settled state, in the words the output says them with (the gate records them without
    /// reading them). None, for a tool whose output reads no run's evidence.
    fn receipt_facts(_output: &Self::Output) -> ReceiptFacts {
        ReceiptFacts::default()
    }
}

/// What admission knows while step 5 runs for one call, and the only way a tool's admission
/// reads: the capabilities below (its grant and run, its session, its entries, the redactor, …),
/// never the service itself.
pub(crate) struct AdmissionContext<'a> {
    svc: &'a Reading,
    ctx: &'a KeyContext,
    /// The called tool's catalog entry: its feature is the one a grant must allow.
    def: &'static ToolDef,
    /// Every tool (what a grant's features let its key call).
    catalog: &'static [&'static ToolDef],
    pub now_ms: i64,
    /// The redactor, read once per call: the tool's own masking and the mask over its whole
    /// output use the same known secrets (and ask the store for them once).
    redactor: std::cell::OnceCell<Arc<Redactor>>,
}

/// What step 5 admitted for a call, and the reader its tool executes with.
pub(crate) struct ToolAdmission<R> {
    pub target: Option<Target>,
    pub grant: Option<Grant>,
    pub run: Option<RunRecord>,
    pub reader: R,
}

/// Step 5 passed for a tool that names a run: the key's grant for it and the run, current.
pub(crate) struct CurrentRunGrant {
    pub target: Target,
    pub grant: Grant,
    pub run: RunRecord,
}

impl CurrentRunGrant {
    /// The admission, with the tool's `reader` built on it.
    pub(crate) fn with<R>(self, reader: R) -> ToolAdmission<R> {
        ToolAdmission {
            target: Some(self.target),
            grant: Some(self.grant),
            run: Some(self.run),
            reader,
        }
    }
}

impl AdmissionContext<'_> {
    /// Admission step 5 for a tool that names a run: the key's grant for exactly `target` that
    /// allows the tool's feature (the catalog's, so what a key is shown and what it is admitted
    /// to are one rule), and the run, current in instance, revision and generation.
    pub(crate) fn run(&self, target: &Target) -> Result<CurrentRunGrant, ErrorCode> {
        // Every tool that names a run has a feature; one without cannot be granted a run.
        let feature: Feature = self.def.feature.ok_or(ErrorCode::NotGranted)?;
        let grant = admission::grant_for(self.svc, self.ctx, target, feature, self.now_ms)?;
        let run = admission::current_run(self.svc, target)?;
        Ok(CurrentRunGrant {
            target: target.clone(),
            grant,
            run,
        })
    }

    /// The reader's newest live grant labelled `label` for this tool's feature, read afresh
    /// ([`admission::labelled_grant`]).
    pub(crate) fn labelled(&self, label: &str) -> Result<Option<Grant>, ErrorCode> {
        let feature: Feature = self.def.feature.ok_or(ErrorCode::NotGranted)?;
        admission::labelled_grant(self.svc, self.ctx, label, feature, self.now_ms)
    }

    /// The reader's earliest live grant for this tool's feature shared after `after_ms`, read
    /// afresh ([`admission::next_shared_grant`]).
    pub(crate) fn next_shared(&self, after_ms: i64) -> Result<Option<Grant>, ErrorCode> {
        let feature: Feature = self.def.feature.ok_or(ErrorCode::NotGranted)?;
        admission::next_shared_grant(self.svc, self.ctx, after_ms, feature, self.now_ms)
    }

    /// Admission step 5 through `grant` (the reader's own, read afresh): the run it names,
    /// current.
    pub(crate) fn run_of(&self, grant: Grant) -> Result<CurrentRunGrant, ErrorCode> {
        let run = admission::current_run(self.svc, &grant.target)?;
        Ok(CurrentRunGrant {
            target: grant.target.clone(),
            grant,
            run,
        })
    }

    /// The session record of `target` (its branch, malformed lines, name, saved model).
    pub(crate) fn session(&self, target: &Target) -> Result<SessionRecord, ErrorCode> {
        self.svc
            .store
            .session(&target.session_id)
            .map_err(crate::evidence::unavailable)?
            .ok_or(ErrorCode::TargetStale)
    }

    /// The reader's grants live now, newest first (`list_granted_targets` is admitted on them,
    /// not on a run).
    pub(crate) fn live_grants(&self) -> impl Iterator<Item = &Grant> {
        self.ctx
            .live_grants
            .iter()
            .filter(|g| g.is_live(self.now_ms))
    }

    /// The refusal of a reader with no live grant, for a tool admitted on its grants: `not_granted`
    /// when it never held one, `grant_revoked` when every one it held was revoked, else
    /// `grant_expired`.
    pub(crate) fn no_live_grant(&self) -> ErrorCode {
        match self.svc.store.reader_grant_tally(&self.ctx.reader.id) {
            Err(e) => crate::evidence::unavailable(e),
            Ok((0, _)) => ErrorCode::NotGranted,
            Ok((all, revoked)) if revoked == all => ErrorCode::GrantRevoked,
            Ok(_) => ErrorCode::GrantExpired,
        }
    }

    /// The run `target` names if it is current (`None`: no longer current, so the other tools
    /// would refuse it as stale).
    pub(crate) fn current_run(&self, target: &Target) -> Result<Option<RunRecord>, ErrorCode> {
        match admission::current_run(self.svc, target) {
            Ok(run) => Ok(Some(run)),
            Err(ErrorCode::Unavailable) => Err(ErrorCode::Unavailable),
            Err(_) => Ok(None),
        }
    }

    /// The id of the reader whose key made the call.
    pub(crate) fn reader_id(&self) -> &str {
        &self.ctx.reader.id
    }

    /// Every tool of the catalog.
    pub(crate) fn catalog(&self) -> &'static [&'static ToolDef] {
        self.catalog
    }

    /// The known secrets, as the one redactor every output is masked with.
    pub(crate) fn redactor(&self) -> Result<Arc<Redactor>, ErrorCode> {
        if let Some(r) = self.redactor.get() {
            return Ok(r.clone());
        }
        let r = self.svc.secrets.redactor()?;
        Ok(self.redactor.get_or_init(|| r).clone())
    }

    /// The index entries of `target`'s session generation.
    pub(crate) fn entries(&self, target: &Target) -> Result<Vec<EntrySummary>, ErrorCode> {
        self.svc
            .store
            .entries(&target.session_id, target.generation)
            .map_err(crate::evidence::unavailable)
    }

    /// `session`'s parent and what it inherits from it, when it is a fork.
    pub(crate) fn fork(&self, session: &SessionRecord) -> Result<Option<Fork>, ErrorCode> {
        crate::evidence::fork::of(&*self.svc.store, session).map_err(crate::evidence::unavailable)
    }

    /// The store's cursor key (a cursor names its target, tool and version).
    pub(crate) fn cursor_key(&self) -> CursorKey {
        self.svc.store.cursor_key().clone()
    }

    /// The supervised evidence of `run`, if a supervisor recorded it.
    pub(crate) fn supervised(&self, run: &RunRecord) -> Result<Option<Supervised>, ErrorCode> {
        Supervised::observe(self.svc, run).map_err(crate::evidence::unavailable)
    }

    /// The run's final answer evidence: supervised or passive, and the file's identity now.
    pub(crate) fn answer_evidence(&self, run: &RunRecord) -> Result<AnswerEvidence, ErrorCode> {
        AnswerEvidence::observe(self.svc, run)
    }

    /// Where `run`'s lines are read back from: its session file, or — when the file is not there
    /// (gone, or not on this host) — its snapshot, if one is kept for the run as indexed.
    pub(crate) fn source(&self, run: &RunRecord) -> Result<Source, ErrorCode> {
        let source = Source::of(run);
        if runread_sessions::session_identity(run.agent, std::path::Path::new(&run.session_path))
            .is_ok()
        {
            return Ok(source);
        }
        Ok(source.or_snapshot(self.snapshot(run)?))
    }

    /// `run`'s snapshot, opened, if one is kept for the run as indexed now.
    pub(crate) fn snapshot(
        &self,
        run: &RunRecord,
    ) -> Result<Option<Arc<crate::evidence::source::SnapshotEvidence>>, ErrorCode> {
        crate::evidence::snapshot::kept(self.svc, run)
    }

    /// The answers already published under the current known secrets.
    pub(crate) fn published_answers(&self) -> Arc<PublishedCache> {
        self.svc.published.clone()
    }

    /// Files the access request `new` of the calling reader ([`crate::access::file`]): its id
    /// and expiry. The one write an admission makes.
    pub(crate) fn file_access_request(
        &self,
        new: &crate::access::NewRequest,
    ) -> Result<(String, i64), ErrorCode> {
        crate::access::file(self.svc, &self.ctx.reader.id, new, self.now_ms)
    }

    /// The reader's grants live now, read afresh from the store (a grant made after its key
    /// was admitted included: an approval's).
    pub(crate) fn live_grants_now(&self) -> Result<Vec<Grant>, ErrorCode> {
        let found = self
            .svc
            .store
            .reader_of_id(&self.ctx.reader.id, self.now_ms)
            .map_err(crate::evidence::unavailable)?;
        Ok(found
            .map(|(_, grants)| grants)
            .unwrap_or_default()
            .into_iter()
            .filter(|g| g.is_live(self.now_ms))
            .collect())
    }

    /// Where the access request `id` stands for the calling reader, read afresh.
    pub(crate) fn access_standing(&self, id: &str) -> Result<crate::access::Standing, ErrorCode> {
        crate::access::standing_now(&*self.svc.store, &self.ctx.reader.id, id, self.now_ms)
            .map_err(crate::evidence::unavailable)
    }

    /// The artifacts registered for `target`.
    pub(crate) fn artifacts(&self, target: &Target) -> Result<Vec<ArtifactRecord>, ErrorCode> {
        self.svc
            .store
            .artifacts(target)
            .map_err(crate::evidence::unavailable)
    }
}

/// A tool's exact arguments.
pub(crate) trait ExactArgs: Sized {
    /// Admission step 4: the arguments, every bound checked; anything else (an unknown field
    /// included) is `invalid_arguments`.
    fn parse(args: &Value) -> Result<Self, ErrorCode>;
}

/// Arguments of a tool whose every field is optional: none at all (`null`) is the default, an
/// object is parsed exactly (unknown fields refused), anything else is `invalid_arguments`.
pub(crate) fn optional_fields<T: serde::de::DeserializeOwned + Default>(
    args: &Value,
) -> Result<T, ErrorCode> {
    match args {
        Value::Null => Ok(T::default()),
        Value::Object(_) => {
            serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)
        }
        _ => Err(ErrorCode::InvalidArguments),
    }
}

/// The input the gate seals for such a tool: absent arguments are the empty object its schema
/// names.
pub(crate) fn absent_as_empty(args: &Value) -> Value {
    match args {
        Value::Null => Value::Object(Map::new()),
        other => other.clone(),
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetOnly {
    target: Target,
}

/// Arguments that are exactly `{"target": …}`: those of the tools that take nothing else.
impl ExactArgs for Target {
    fn parse(args: &Value) -> Result<Target, ErrorCode> {
        let TargetOnly { target } =
            serde_json::from_value(args.clone()).map_err(|_| ErrorCode::InvalidArguments)?;
        if !target.validate_shape() {
            return Err(ErrorCode::InvalidArguments);
        }
        Ok(target)
    }
}

/// What one call's admission made: the tool's reader, and the known secrets every string of its
/// output is masked with. Typed by the tool whose admission made it, so running it recovers
/// nothing.
struct TypedReader<T: ToolRules> {
    tool: &'static str,
    redactor: Arc<Redactor>,
    feature: T::Reader,
}

impl<T: ToolRules> TypedReader<T> {
    /// The tool's execution on `input` (parsed again), every string of its output masked, and
    /// what its receipt records of it.
    fn run(&self, input: &Value) -> Result<Served, ErrorCode> {
        let output = T::execute(T::Args::parse(input)?, &self.feature)?;
        let facts = T::receipt_facts(&output);
        // A struct serializes to an object; anything else is a broken tool, refused.
        let Ok(Value::Object(mut output)) = serde_json::to_value(output) else {
            return Err(ErrorCode::Unavailable);
        };
        // One rule for every tool: no string leaves unmasked (names, ids, error text, metadata),
        // whatever the tool's own masking did. A tool masks across its own boundaries first
        // (answers before chunking, history across events and pages); this catches the rest.
        let mut whole = Value::Object(std::mem::take(&mut output));
        self.redactor.mask_json(&mut whole);
        if let Value::Object(masked) = whole {
            output = masked;
        }
        Ok(Served { output, facts })
    }
}

impl<T: ToolRules> FeatureReader for TypedReader<T> {
    fn tool(&self) -> &'static str {
        self.tool
    }

    fn execute(&self, _token: &ExecToken, input: &Value) -> Result<Served, ErrorCode> {
        self.run(input)
    }
}

/// An admitted call's reader, run by the gate ([`FeatureReader`]) or, for the owner's preview,
/// here ([`AdmittedReader::run_preview`]), which records nothing.
pub(crate) trait AdmittedReader: FeatureReader {
    fn run_preview(&self, input: &Value) -> Result<Map<String, Value>, ErrorCode>;
}

impl<T: ToolRules> AdmittedReader for TypedReader<T> {
    fn run_preview(&self, input: &Value) -> Result<Map<String, Value>, ErrorCode> {
        self.run(input).map(|served| served.output)
    }
}

/// [`ToolRules`] as the table ([`tools::Tool::rules`]) holds it: one admission per tool, each making
/// its own typed [`TypedReader`].
pub(crate) trait Rules: Sync {
    fn admit(&self, at: &AdmissionContext<'_>, args: &Value) -> Result<AdmittedCall, ErrorCode>;
    /// The schema of the tool's output type, as it serializes.
    #[cfg(test)]
    fn derived_output_schema(&self) -> Value;
}

impl<T: ToolRules> Rules for T {
    fn admit(&self, at: &AdmissionContext<'_>, args: &Value) -> Result<AdmittedCall, ErrorCode> {
        let parsed = T::Args::parse(args)?;
        let granted = T::admit(at, &parsed)?;
        let reading: TypedReader<T> = TypedReader {
            tool: at.def.name,
            redactor: at.redactor()?,
            feature: granted.reader,
        };
        Ok(AdmittedCall {
            input: T::input(args),
            target: granted.target,
            grant: granted.grant,
            run: granted.run,
            reader: Arc::new(reading),
        })
    }

    #[cfg(test)]
    fn derived_output_schema(&self) -> Value {
        crate::tools::schema::output_schema::<T::Output>()
    }
}

/// What admission hands the gate.
pub(crate) struct AdmittedCall {
    pub input: Value,
    pub target: Option<Target>,
    pub grant: Option<Grant>,
    pub run: Option<RunRecord>,
    /// The tool's reader with the known secrets its output is masked with.
    pub reader: Arc<dyn AdmittedReader>,
}

/// Admission steps 4 and 5 for `def`: exact arguments, then the grant and the target's currency.
pub(crate) fn admit(
    svc: &Reading,
    ctx: &KeyContext,
    def: &'static ToolDef,
    catalog: &'static [&'static ToolDef],
    args: &Value,
    now_ms: i64,
) -> Result<AdmittedCall, ErrorCode> {
    let at = AdmissionContext {
        svc,
        ctx,
        def,
        catalog,
        now_ms,
        redactor: std::cell::OnceCell::new(),
    };
    def.rules.admit(&at, args)
}
