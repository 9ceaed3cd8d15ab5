//! The owner's preview: what a reader holding a grant of every feature of one run would be
//! served, through the same admission and the same adapters (so the same masking, states and
//! evidence), but without the gate — no start record, no receipt — because nobody is granted
//! anything: the owner is looking at their own records (the console's run page).

use serde_json::{Map, Value, json};

use runread_core::{ErrorCode, Feature, Target};
use runread_store::{Grant, Reader};

use crate::admission::KeyContext;

use crate::owner::Owner;

use crate::tools::adapters;

use crate::tools::history;

use crate::tools;

/// Stand in for a grant id and a reader id in the preview's admission; never stored, never a key.
const PREVIEW_GRANT_ID: &str = "owner-preview";
const PREVIEW_READER_ID: &str = "owner-preview";

impl Owner {
    /// Runs `tool` (one of [`tools::ALL`]) with `args` for `target` as a reader granted every
    /// feature of exactly that run would get it: admitted against the run's current instance,
    /// revision and generation, read back and checked against the session file, every string
    /// masked with the known secrets. Blocking (store and file reads).
    pub fn preview(
        &self,
        target: &Target,
        tool: &str,
        mut args: Value,
        now_ms: i64,
    ) -> Result<Map<String, Value>, ErrorCode> {
        let def = tools::by_name(tool).ok_or(ErrorCode::UnknownTool)?;
        if let Value::Object(m) = &mut args {
            m.insert("target".into(), json!(target));
        }
        let ctx = KeyContext {
            key_hash: String::new(),
            reader: Reader {
                id: PREVIEW_READER_ID.to_owned(),
                name: String::new(),
                key_hash: String::new(),
                created_at_ms: now_ms,
                removed_at_ms: None,
            },
            live_grants: vec![Grant {
                id: PREVIEW_GRANT_ID.to_owned(),
                reader_id: PREVIEW_READER_ID.to_owned(),
                reader_name: String::new(),
                target: target.clone(),
                features: Feature::ALL.to_vec(),
                created_at_ms: now_ms,
                expires_at_ms: i64::MAX,
                revoked_at_ms: None,
                label: None,
            }],
            feature_cap: None,
        };
        let admitted = adapters::admit(&self.reading, &ctx, def, &tools::ALL, &args, now_ms)?;
        admitted.reader.run_preview(&admitted.input)
    }

    /// [`Owner::preview`] of the tool whose output `T` is, typed (and as a reader gets it).
    pub fn preview_as<T: crate::tools::outputs::ToolOutput>(
        &self,
        target: &Target,
        args: Value,
        now_ms: i64,
    ) -> Result<crate::tools::outputs::Previewed<T>, ErrorCode> {
        let json = Value::Object(self.preview(target, T::TOOL, args, now_ms)?);
        // The tool's own output type: only a broken build fails to read it back. Read from the
        // value in place (a history page may hold megabytes of text), not from a copy.
        let output = T::deserialize(&json).map_err(|_| ErrorCode::Unavailable)?;
        let Value::Object(json) = json else {
            return Err(ErrorCode::Unavailable);
        };
        Ok(crate::tools::outputs::Previewed { output, json })
    }

    /// The agent's own time of each of `target`'s history events, by sequence (as `read_history`
    /// numbers them): the times a reader is not served, for the owner's timeline. Only what
    /// parses as a time, re-rendered by runread ([`runread_core::timefmt::agent_time`]).
    pub fn event_times(&self, target: &Target) -> Result<Vec<(u64, Option<String>)>, ErrorCode> {
        let run = crate::admission::current_run(&self.reading, target)?;
        let lines: std::collections::HashSet<u64> = run.run.message_lines.iter().copied().collect();
        let entries = self
            .reading
            .store
            .entries(&target.session_id, target.generation)
            .map_err(crate::evidence::unavailable)?
            .into_iter()
            .filter(|e| lines.contains(&e.line))
            .collect();
        Ok(history::events_of(entries)
            .iter()
            .enumerate()
            .map(|(i, ev)| {
                (
                    run.run.first_sequence + i as u64,
                    runread_core::timefmt::agent_time(ev.timestamp()),
                )
            })
            .collect())
    }
}

/// Most chunks a whole answer is read in (`FINAL_ANSWER_MAX_BYTES` at the largest chunk, and
/// one more for `eof`): a preview that has not ended by then stops.
pub const ANSWER_CHUNKS_MAX: usize = runread_core::limits::FINAL_ANSWER_MAX_BYTES
    / runread_core::limits::FINAL_ANSWER_CHUNK_MAX_BYTES
    + 1;

/// A run's final answer as a reader would read it whole, chunk by chunk.
pub struct PreviewedAnswer {
    /// The whole text, its chunks joined (none when the answer is not readable).
    pub text: Option<String>,
    /// The first chunk: the answer's state, evidence, size and digest.
    pub first: crate::tools::outputs::Previewed<crate::tools::outputs::FinalAnswer>,
}

impl Owner {
    /// The owner's preview of `target`'s whole final answer (the console's run page and
    /// `runread show`): every chunk, through [`Owner::preview_as`].
    pub fn preview_answer(
        &self,
        target: &Target,
        now_ms: i64,
    ) -> Result<PreviewedAnswer, ErrorCode> {
        use crate::tools::outputs::FinalAnswer;
        use runread_core::limits::FINAL_ANSWER_CHUNK_MAX_BYTES;
        let mut text = String::new();
        let mut cursor: Option<String> = None;
        let mut first = None;
        for _ in 0..ANSWER_CHUNKS_MAX {
            let mut args = json!({"limit": FINAL_ANSWER_CHUNK_MAX_BYTES});
            if let (Some(cur), Value::Object(m)) = (&cursor, &mut args) {
                m.insert("cursor".into(), json!(cur));
            }
            let out = self.preview_as::<FinalAnswer>(target, args, now_ms)?;
            let chunk = &out.output.chunk;
            if let Some(t) = &chunk.text {
                text.push_str(t);
            }
            cursor.clone_from(&chunk.next_cursor);
            let eof = chunk.eof;
            if first.is_none() {
                first = Some(out);
            }
            if eof || cursor.is_none() {
                break;
            }
        }
        let first: crate::tools::outputs::Previewed<FinalAnswer> =
            first.ok_or(ErrorCode::Unavailable)?;
        Ok(PreviewedAnswer {
            text: first.output.chunk.text.as_ref().map(|_| text),
            first,
        })
    }
}
