//! Codex rollouts written by the real Codex CLI 0.171.0 (`fixtures/codex`, every scenario of
//! `../shared/harness/scenarios/codex/` and runread's own `secrets`), ingested and cut into runs.
//! The oracle is what Codex itself reported for each step on its `--json` stream
//! (`events-N.jsonl`, read by `runread_testkit::reported`), never runread's parser:
//! `turn.completed` is a completed run whose answer is the step's last `agent_message` item;
//! `turn.failed` a failed run; a stream that stopped without either (an interrupt) a cancelled
//! run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use runread_store::prelude::*;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use runread_sessions::{EvidenceFile, RunStatus};
use runread_store::RunRecord;
use runread_testkit::{CODEX_FIXTURES, Env, codex_steps};

fn runs_of(env: &Env) -> Vec<RunRecord> {
    let mut runs = env.store.runs().unwrap();
    runs.sort_by(|a, b| {
        (&a.target.session_id, a.run.start_line).cmp(&(&b.target.session_id, b.run.start_line))
    });
    runs
}

fn ingest(fixture: &str) -> (Env, Vec<RunRecord>, runread_ingest::Report) {
    let env = Env::new();
    env.place_codex(fixture, Duration::from_secs(60));
    let report = env.ingest();
    let runs = runs_of(&env);
    (env, runs, report)
}

/// What Codex's rollouts add to every recorded agent's suite (`recorded_agents`): the
/// bookkeeping lines it keeps are skipped, and every answered turn has its end and its model.
#[test]
fn every_codex_turn_has_its_end_and_its_model_and_bookkeeping_is_skipped() {
    for fixture in CODEX_FIXTURES {
        let (_env, runs, report) = ingest(fixture);
        assert!(
            report.skipped_lines > 0,
            "{fixture}: bookkeeping is skipped"
        );
        let steps = codex_steps(fixture);
        for run in &runs {
            let prompt = runread_testkit::prompt(run).unwrap_or_default();
            if runread_testkit::step_for(&steps, &prompt)
                .reported
                .answer()
                .is_some()
            {
                assert!(run.run.ended_at.is_some(), "{fixture}: {prompt}");
            }
            assert_eq!(run.run.run_models.len(), 1, "{fixture}: {prompt}");
        }
    }
}

/// The session id is the thread id Codex printed (`thread.started`) and the run ids are the
/// turns' ids in the rollout.
#[test]
fn the_target_is_the_thread_id_and_the_turn_id() {
    let (_env, runs, _) = ingest("continue-unicode");
    let events = std::fs::read_to_string(
        runread_testkit::codex_fixtures_dir().join("continue-unicode/events-0.jsonl"),
    )
    .unwrap();
    let thread: Value = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "thread.started")
        .unwrap();
    assert!(
        runs.iter()
            .all(|r| r.target.session_id == thread["thread_id"])
    );
    let rollout = std::fs::read_to_string(&runs[0].session_path).unwrap();
    let started: Vec<String> = rollout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["payload"]["type"] == "task_started")
        .map(|v| v["payload"]["turn_id"].as_str().unwrap().to_owned())
        .collect();
    let ids: Vec<&str> = runs.iter().map(|r| r.target.run_id.as_str()).collect();
    assert_eq!(ids, started);
    assert_eq!(runs[0].run.first_sequence, 1);
    assert_eq!(
        runs[1].run.first_sequence,
        1 + runs[0].run.message_lines.len() as u64
    );
}

/// A fork's file holds only its own turn, and says where its inherited history is in the
/// parent's file: that history is the parent's runs (their own targets), never the fork's.
#[test]
fn a_fork_holds_its_own_turns_and_points_into_its_parent() {
    let env = Env::new();
    let placed = env.place_codex("resume-fork", Duration::from_secs(60));
    env.ingest();
    let runs = runs_of(&env);
    let sessions: Vec<_> = placed
        .iter()
        .map(|p| {
            let id = p.file_stem().unwrap().to_str().unwrap();
            env.store
                .session(&id[id.len() - 36..])
                .unwrap()
                .expect("ingested")
        })
        .collect();
    let (parent, fork) = if sessions[0].header.fork.is_none() {
        (&sessions[0], &sessions[1])
    } else {
        (&sessions[1], &sessions[0])
    };
    let base = fork.header.fork.as_ref().expect("a fork");
    assert_eq!(base.parent_session_id, parent.session_id);
    assert_eq!(
        fork.header.parent_session.as_deref(),
        Some(parent.session_id.as_str())
    );
    let of =
        |s: &str| -> Vec<&RunRecord> { runs.iter().filter(|r| r.target.session_id == s).collect() };
    assert_eq!(of(&parent.session_id).len(), 2);
    let own = of(&fork.session_id);
    assert_eq!(own.len(), 1);
    assert_eq!(
        runread_testkit::prompt(own[0]).as_deref(),
        Some("Third, in a fork.")
    );
    // The parent still holds what the fork inherits.
    let parent_file = EvidenceFile::open(PathBuf::from(&parent.path).as_path(), None).unwrap();
    assert!(runread_sessions::codex::holds_fork_base(&parent_file, base));
    // Off by one byte, or another ordinal: not the fork's base.
    let mut shifted = base.clone();
    shifted.end_byte_offset -= 1;
    assert!(!runread_sessions::codex::holds_fork_base(
        &parent_file,
        &shifted
    ));
    let mut other = base.clone();
    other.end_ordinal_exclusive += 1;
    assert!(!runread_sessions::codex::holds_fork_base(
        &parent_file,
        &other
    ));
    // Another session's file is not the parent.
    let fork_file = EvidenceFile::open(PathBuf::from(&fork.path).as_path(), None).unwrap();
    assert!(!runread_sessions::codex::holds_fork_base(&fork_file, base));
}

/// History shows prompts, assistant messages and tool names — the custom `exec` of code mode and
/// the command it ran — and never reasoning, tool arguments or tool outputs.
#[test]
fn history_is_messages_and_tool_names_never_reasoning_arguments_or_outputs() {
    let (_env, runs, _) = ingest("code-mode");
    let run = &runs[0];
    let bytes = std::fs::read(&run.session_path).unwrap();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let views: Vec<runread_sessions::MessageView> = run
        .run
        .message_lines
        .iter()
        .map(|n| {
            runread_sessions::message_view(runread_core::Agent::Codex, lines[*n as usize - 1])
                .expect("an event line")
        })
        .collect();
    let roles: Vec<&str> = views.iter().map(|v| v.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "assistant", "assistant"]);
    let tools: Vec<&str> = views
        .iter()
        .flat_map(|v| v.tool_calls.iter().map(String::as_str))
        .collect();
    assert_eq!(
        tools,
        ["exec", runread_sessions::codex::NESTED_COMMAND_TOOL]
    );
    let served: String = views
        .iter()
        .map(|v| v.body.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for never in [
        "Use exec to run a shell command", // reasoning
        "tools.exec_command",              // the custom tool's input
        "echo hi; cat notes.txt",          // the command
        "Script completed",                // the output
        "environment_context",             // what Codex injects
        "You are Codex",                   // instructions
    ] {
        assert!(!served.contains(never), "{never}");
    }
    assert_eq!(views[0].body, "Show me notes.txt.");
}

/// A command Codex reports for a call the model made is that call: one event, not two. Lines of
/// a turn after its `turn_aborted` stay in that turn.
#[test]
fn a_turns_lines_after_its_abort_stay_in_it_and_commands_of_calls_are_not_doubled() {
    let (_env, runs, _) = ingest("interrupted");
    let first = &runs[0];
    assert_eq!(first.run.status, RunStatus::Cancelled);
    let bytes = std::fs::read(&first.session_path).unwrap();
    let line_of = |needle: &str| -> u64 {
        let text = std::str::from_utf8(&bytes).unwrap();
        text.lines()
            .position(|l| l.contains(needle))
            .map(|i| i as u64 + 1)
            .unwrap()
    };
    // The command's item was written after the turn_aborted line.
    let aborted = line_of("\"type\":\"turn_aborted\"");
    let command = line_of("\"type\":\"CommandExecution\"");
    assert!(command > aborted);
    assert!(first.run.end_line >= command);
    assert!(!first.run.message_lines.contains(&command));
    let views: Vec<Vec<String>> = first
        .run
        .message_lines
        .iter()
        .map(|n| {
            let line = bytes.split(|b| *b == b'\n').nth(*n as usize - 1).unwrap();
            runread_sessions::message_view(runread_core::Agent::Codex, line)
                .unwrap()
                .tool_calls
        })
        .collect();
    assert_eq!(views.concat(), ["exec_command"]);
    // The interruption note is the run's last event, as `interrupt`.
    let last = *first.run.message_lines.last().unwrap();
    let line = bytes.split(|b| *b == b'\n').nth(last as usize - 1).unwrap();
    assert_eq!(
        runread_sessions::message_view(runread_core::Agent::Codex, line)
            .unwrap()
            .role,
        "interrupt"
    );
    assert_eq!(runs[1].run.status, RunStatus::Cancelled);
    assert_eq!(runs[2].run.status, RunStatus::Completed);
}

/// `last_agent_message` must be the text of the turn's last assistant message: when they
/// disagree, the run is `unknown` and has no answer.
#[test]
fn a_reported_answer_that_is_not_the_last_message_makes_the_run_unknown() {
    let env = Env::new();
    let placed = env.place_codex("continue-unicode", Duration::from_secs(60));
    let text = std::fs::read_to_string(&placed[0]).unwrap();
    let changed = text.replacen(
        "\"last_agent_message\":\"notes.txt says: hello\"",
        "\"last_agent_message\":\"notes.txt says: goodbye\"",
        1,
    );
    assert_ne!(changed, text);
    std::fs::write(&placed[0], changed).unwrap();
    runread_testkit::set_age(&placed[0], Duration::from_secs(60));
    env.ingest();
    let runs = runs_of(&env);
    assert_eq!(runs[0].run.status, RunStatus::Unknown);
    assert!(runs[0].run.final_lines.is_empty());
    assert_eq!(
        runs[1].run.status,
        RunStatus::Completed,
        "the other turn stands"
    );
}

/// `codex exec resume` appends to the same file: the second pass reads only the new bytes, and
/// the new turn is a run of the same generation.
#[test]
fn a_resume_appends_and_costs_its_new_bytes() {
    let env = Env::new();
    let placed = env.place_codex("continue-unicode", Duration::from_secs(60));
    let path = &placed[0];
    let full = std::fs::read(path).unwrap();
    let text = std::str::from_utf8(&full).unwrap();
    // Cut before the second turn's task_started.
    let second_start = text
        .match_indices("\"type\":\"task_started\"")
        .nth(1)
        .map(|(i, _)| i)
        .unwrap();
    let cut = text[..second_start].rfind('\n').unwrap() + 1;
    std::fs::write(path, &full[..cut]).unwrap();
    runread_testkit::set_age(path, Duration::from_secs(60));
    let first = env.ingest();
    assert_eq!(first.new_generations, 1);
    assert_eq!(runs_of(&env).len(), 1);
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    std::io::Write::write_all(&mut f, &full[cut..]).unwrap();
    drop(f);
    runread_testkit::set_age(path, Duration::from_secs(60));
    let second = env.ingest();
    assert_eq!((second.appended, second.new_generations), (1, 0));
    assert_eq!(second.bytes_read, (full.len() - cut) as u64);
    let runs = runs_of(&env);
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.target.generation == 1));
    assert_eq!(runs[1].run.status, RunStatus::Completed);
}

/// Only `rollout-*.jsonl` files are sessions, wherever they are in the date folders; the folder
/// names (local time) are never read for anything.
#[test]
fn only_rollout_files_are_sessions_and_folder_dates_mean_nothing() {
    let env = Env::new();
    let placed = env.place_codex("tool-then-answer", Duration::from_secs(60));
    let elsewhere = env.codex_sessions.join("1999/01/01");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let moved = elsewhere.join(placed[0].file_name().unwrap());
    std::fs::rename(&placed[0], &moved).unwrap();
    std::fs::write(elsewhere.join("notes.jsonl"), b"{\"x\":1}\n").unwrap();
    let report = env.ingest();
    assert_eq!(report.files, 1, "{report:?}");
    let runs = runs_of(&env);
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].run.started_at.as_deref().map(|t| &t[..4]),
        Some("2026")
    );
}

/// The workspace rule: a rollout whose `session_meta` cwd lies outside every workspace is not
/// read; a turn whose `turn_context` names another directory is never taken for the session's.
#[test]
fn cwd_outside_the_workspaces_is_not_read_and_a_turn_elsewhere_is_unknown() {
    let env = Env::new();
    let placed = env.place_codex("tool-then-answer", Duration::from_secs(60));
    let bytes = std::fs::read(&placed[0]).unwrap();
    std::fs::write(
        &placed[0],
        runread_testkit::relocated_codex(&bytes, "/somewhere/else"),
    )
    .unwrap();
    runread_testkit::set_age(&placed[0], Duration::from_secs(60));
    let report = env.ingest();
    assert_eq!(report.outside_workspaces, 1);
    assert!(env.store.runs().unwrap().is_empty());

    let env = Env::new();
    let placed = env.place_codex("continue-unicode", Duration::from_secs(60));
    let text = std::fs::read_to_string(&placed[0]).unwrap();
    let ws = env.workspace.to_str().unwrap();
    // The second turn_context moves to a directory inside the workspace, but not the session's.
    let at = text
        .match_indices("\"type\":\"turn_context\"")
        .nth(1)
        .unwrap()
        .0;
    let (head, tail) = text.split_at(at);
    let tail = tail.replacen(
        &format!("\"cwd\":\"{ws}\""),
        &format!("\"cwd\":\"{ws}/sub\""),
        1,
    );
    std::fs::write(&placed[0], format!("{head}{tail}")).unwrap();
    runread_testkit::set_age(&placed[0], Duration::from_secs(60));
    let report = env.ingest();
    assert_eq!(report.malformed_lines, 1);
    let runs = runs_of(&env);
    assert_eq!(runs[0].run.status, RunStatus::Completed);
    assert_eq!(runs[1].run.status, RunStatus::Unknown);
}

/// Bad input never panics and never aborts an ingest: a torn last line, a line that is not JSON,
/// a response item without its turn, a line over the line bound. Each is counted; the run it
/// touches is `unknown`; the other run stands.
#[test]
fn bad_input_is_counted_and_taints_only_the_run_it_touches() {
    let env = Env::new();
    let placed = env.place_codex("continue-unicode", Duration::from_secs(60));
    let good = std::fs::read_to_string(&placed[0]).unwrap();
    std::fs::remove_file(&placed[0]).unwrap();
    let dir = placed[0].parent().unwrap().to_path_buf();
    let id = "01a231df-ce17-7233-8e91-7ec7827ae563";
    let second = good
        .match_indices("\"type\":\"task_started\"")
        .nth(1)
        .unwrap()
        .0;
    let second = good[..second].rfind('\n').unwrap() + 1;
    let variant = |n: u8, body: String| {
        let body = body.replace(id, &format!("{}{n}", &id[..id.len() - 1]));
        let p = dir.join(format!("rollout-variant-{n}.jsonl"));
        std::fs::write(&p, body).unwrap();
        runread_testkit::set_age(&p, Duration::from_secs(60));
    };
    // 1: a torn last line.
    variant(1, good[..good.len() - 40].to_owned());
    // 2: not JSON, inside the second turn.
    let (head, tail) = good.split_at(second);
    let after = tail.find('\n').unwrap() + 1;
    variant(
        2,
        format!(
            "{head}{}{{\"type\":\"event_msg\",broken\n{}",
            &tail[..after],
            &tail[after..]
        ),
    );
    // 3: an assistant message without its turn, and a line over the bound.
    let huge = format!(
        "{{\"type\":\"event_msg\",\"payload\":{{\"type\":\"blob\",\"b\":\"{}\"}}}}\n",
        "z".repeat(runread_core::limits::EVIDENCE_LINE_MAX_BYTES)
    );
    variant(
        3,
        format!(
            "{head}{}{{\"timestamp\":\"2026-12-01T00:00:00Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}}}\n{huge}{}",
            &tail[..after],
            &tail[after..]
        ),
    );
    let report = env.ingest();
    assert_eq!(report.torn_files, 1, "{report:?}");
    assert_eq!(report.malformed_lines, 3, "{report:?}");
    let runs = runs_of(&env);
    for n in 1..=3 {
        let of: Vec<&RunRecord> = runs
            .iter()
            .filter(|r| r.target.session_id.ends_with(&format!("{n}")))
            .collect();
        assert_eq!(of.len(), 2, "variant {n}");
        assert_eq!(of[0].run.status, RunStatus::Completed, "variant {n}");
        assert_eq!(of[1].run.status, RunStatus::Unknown, "variant {n}");
    }
}
