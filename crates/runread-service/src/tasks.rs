//! The Tasks extension (`io.modelcontextprotocol/tasks`) for `read_final_answer` and
//! `wait_for_access`: a client that declared the extension, calling `read_final_answer` on a run
//! that has not settled, gets a task handle instead of `saving`, and polls `tasks/get` until the
//! run settles; then the handle carries the answer's chunk the call returns at that moment. So
//! does `wait_for_access` on a request still waiting: its task completes with the owner's
//! decision (or the request's expiry).
//!
//! The handle is stateless: the call's exact arguments, signed with the store's cursor key and
//! bound to the reader, with an expiry ([`TASK_TTL_SECS`]; `runread_core::cursor::TaskHandle`).
//! Any gateway of the store answers it and a restart loses nothing. Making one reads through
//! admission (the grant of `final_answer`, the run's currency) and serves nothing, so it writes
//! no start record; the answer, when it is ready, is one gated call like any other.

use serde_json::Value;

use runread_core::cursor::TaskHandle;
use runread_core::limits::TASK_TTL_SECS;
use runread_core::{ErrorCode, Feature, Target};

use crate::admission::KeyContext;
use crate::evidence::Reading;
use crate::tools;
use crate::tools::adapters::ExactArgs;
use crate::tools::final_answer;
use crate::tools::wait::{Readiness, readiness};

/// A task handle made for a call.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub id: String,
    pub created_ms: i64,
    pub expires_ms: i64,
}

/// What a task handle stands for now.
#[derive(Debug, Clone)]
pub enum TaskPoll {
    /// The run has not settled: poll again.
    Working { created_ms: i64, expires_ms: i64 },
    /// Answer the call now (the run settled, or the reader may no longer read it: the call says
    /// which).
    Ready {
        tool: &'static str,
        args: Value,
        created_ms: i64,
        expires_ms: i64,
    },
}

/// What a deferred call waits for.
enum Awaited {
    /// `read_final_answer`: its run to settle.
    Answer(Target),
    /// `wait_for_access`: the owner's decision on its request.
    Decision(String),
}

/// The tool a task may stand for, and what it waits for, when `args` are its exact arguments.
fn awaited(tool: &str, args: &Value) -> Option<(&'static str, Awaited)> {
    if !tools::defers(tool) {
        return None;
    }
    match tool {
        tools::READ_FINAL_ANSWER => final_answer::Args::parse(args)
            .ok()
            .map(|a| (tools::READ_FINAL_ANSWER, Awaited::Answer(a.target))),
        tools::WAIT_FOR_ACCESS => crate::tools::access::request_id_of(args)
            .map(|id| (tools::WAIT_FOR_ACCESS, Awaited::Decision(id))),
        _ => None,
    }
}

/// Whether the call still waits at `now_ms` (`None`: it cannot be told now, poll again).
fn waits(reading: &Reading, ctx: &KeyContext, awaited: &Awaited, now_ms: i64) -> Option<bool> {
    match awaited {
        Awaited::Answer(target) => {
            match readiness(reading, ctx, target, Feature::FinalAnswer, now_ms) {
                Readiness::Unsettled(_) => Some(true),
                Readiness::Unknown => None,
                Readiness::Settled | Readiness::Unreadable => Some(false),
            }
        }
        Awaited::Decision(id) => {
            crate::access::standing_now(&*reading.store, &ctx.reader.id, id, now_ms)
                .ok()
                .map(|s| s.pending())
        }
    }
}

/// For a client that declared the Tasks extension: a task handle instead of an answer, when
/// `tool` may be deferred, its arguments are exact, and what it waits for has not come: the run
/// granted, current and not settled (`read_final_answer`), the request still waiting for the
/// owner (`wait_for_access`). `None`: answer the call now (through the gate, which
/// refuses it or serves it). On a blocking thread.
pub fn defer(
    reading: &Reading,
    ctx: &KeyContext,
    tool: &str,
    args: &Value,
    now_ms: i64,
) -> Option<NewTask> {
    let (tool, awaited) = awaited(tool, args)?;
    if waits(reading, ctx, &awaited, now_ms) != Some(true) {
        return None;
    }
    let handle = TaskHandle {
        tool: tool.to_owned(),
        args: args.clone(),
        created_ms: now_ms,
        expires_ms: now_ms.saturating_add(TASK_TTL_SECS * 1_000),
    };
    let id = reading
        .store
        .cursor_key()
        .seal_task(&ctx.reader.id, &handle)?;
    Some(NewTask {
        id,
        created_ms: handle.created_ms,
        expires_ms: handle.expires_ms,
    })
}

/// What the task handle `id` stands for now, for the reader `ctx` names. `invalid_task`
/// when it was tampered with, issued to another reader or by another store, or its time is
/// up. On a blocking thread.
pub fn poll(
    reading: &Reading,
    ctx: &KeyContext,
    id: &str,
    now_ms: i64,
) -> Result<TaskPoll, ErrorCode> {
    let handle = reading
        .store
        .cursor_key()
        .open_task(&ctx.reader.id, id, now_ms)
        .ok_or(ErrorCode::InvalidTask)?;
    let (tool, awaited) = awaited(&handle.tool, &handle.args).ok_or(ErrorCode::InvalidTask)?;
    Ok(match waits(reading, ctx, &awaited, now_ms) {
        Some(true) | None => TaskPoll::Working {
            created_ms: handle.created_ms,
            expires_ms: handle.expires_ms,
        },
        Some(false) => TaskPoll::Ready {
            tool,
            args: handle.args,
            created_ms: handle.created_ms,
            expires_ms: handle.expires_ms,
        },
    })
}
