//! OpenCode's reader on the real databases of `fixtures/opencode/1.18.33` (each copied into a
//! temporary folder first: even a read-only open may create the database's `-shm`), and edits of
//! them.
#![cfg(test)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use super::*;
use crate::file::EvidenceFile;
use crate::model::{LineRef, Resume};
use crate::profile::AgentProfile;
use crate::runs::{FIRST_SEQUENCE, Run, RunStatus};

/// A copy of fixture `name`'s database in a folder of its own.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/opencode/1.18.33")
            .join(name)
            .join("sessions");
        let dir = tempfile::tempdir().unwrap();
        // The database and its WAL, where the fixture keeps the agent's as it left them.
        for f in std::fs::read_dir(&from).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
        }
        Fixture { dir }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("opencode.db")
    }

    /// The top-level sessions' names, oldest first.
    fn sessions(&self) -> Vec<PathBuf> {
        let mut names = PROFILE.session_files(self.dir.path());
        let created = |n: &PathBuf| {
            let (_, id) = database::split_name(n).unwrap();
            self.sql()
                .query_row(
                    "SELECT time_created FROM session WHERE id = ?1",
                    [id],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap()
        };
        names.sort_by_key(created);
        names
    }

    fn only(&self) -> PathBuf {
        let s = self.sessions();
        assert_eq!(s.len(), 1, "{s:?}");
        s.into_iter().next().unwrap()
    }

    /// A writable connection, for editing the copy.
    fn sql(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.db()).unwrap()
    }
}

struct Read {
    file: EvidenceFile,
    scan: Scan,
    runs: Vec<Run>,
}

fn read(name: &Path) -> Read {
    let file = PROFILE.open(name, None).unwrap();
    let scan = scan(&file, Resume::Fresh, ReadAhead::Off).unwrap();
    assert!(scan.malformed.is_empty(), "{:?}", scan.malformed);
    assert_eq!(scan.first_unrecognised, None);
    let runs = cut_runs(&scan.entries, &scan.malformed, scan.torn).runs;
    Read { file, scan, runs }
}

impl Read {
    fn line(&self, at: &LineRef) -> Vec<u8> {
        let bytes = self
            .file
            .read_at(at.offset, usize::try_from(at.bytes).unwrap())
            .unwrap();
        assert_eq!(runread_core::sha256_hex(&bytes), at.sha256);
        bytes
    }

    fn line_no(&self, n: u64) -> Vec<u8> {
        let e = self.scan.entries.iter().find(|e| e.line == n).unwrap();
        self.line(&e.line_ref().unwrap())
    }

    /// The run's answer as the service reads it back: its lines' answers joined by `\n`, checked
    /// against the run's length and digest.
    fn answer(&self, run: &Run) -> Option<String> {
        if run.final_lines.is_empty() {
            return None;
        }
        let texts: Vec<String> = run
            .final_lines
            .iter()
            .map(|l| message_view(&self.line(l)).unwrap().answer.unwrap())
            .collect();
        let digests: Vec<String> = texts
            .iter()
            .map(|t| runread_core::sha256_hex(t.as_bytes()))
            .collect();
        let text = texts.join("\n");
        assert_eq!(text.len() as u64, run.final_bytes);
        assert_eq!(
            run.final_text_sha256.as_deref(),
            Some(crate::model::answer_digest(digests.iter().map(String::as_str)).as_str())
        );
        Some(text)
    }

    /// The run's history events as the service merges them: (role, body, tool calls).
    fn history(&self, run: &Run) -> Vec<(String, String, Vec<String>)> {
        let mut out: Vec<(Option<String>, MessageView)> = Vec::new();
        for l in &run.message_lines {
            let e = self.scan.entries.iter().find(|e| e.line == *l).unwrap();
            let view = message_view(&self.line_no(*l)).unwrap();
            assert_eq!(view.body.len() as u64, e.body_bytes);
            match out.last_mut() {
                Some((g, v)) if e.group.is_some() && *g == e.group => {
                    *v = MessageView::merge(vec![std::mem::take(v), view]);
                }
                _ => out.push((e.group.clone(), view)),
            }
        }
        out.into_iter()
            .map(|(_, v)| (v.role, v.body, v.tool_calls))
            .collect()
    }

    fn prompt(&self, run: &Run) -> String {
        message_view(&self.line(run.prompt_line.as_ref().unwrap()))
            .unwrap()
            .body
    }
}

#[test]
fn tool_then_answer_is_one_completed_run_with_the_models_answer() {
    let f = Fixture::new("tool-then-answer");
    let name = f.only();
    let r = read(&name);
    let (_, id) = database::split_name(&name).unwrap();
    assert_eq!(r.scan.header.session_id, id);
    assert!(
        r.scan.header.cwd.ends_with("/workspace"),
        "{}",
        r.scan.header.cwd
    );
    assert_eq!(r.scan.header.agent_version.as_deref(), Some("1.18.33"));
    assert!(r.scan.header.timestamp.as_deref().unwrap().ends_with('Z'));
    let header = message_view(&r.line(&r.scan.header.line_ref())).unwrap();
    assert_eq!(header.role, role::SESSION);
    assert_eq!(header.agent_version.as_deref(), Some("1.18.33"));
    assert_eq!(r.runs.len(), 1);
    let run = &r.runs[0];
    assert_eq!(run.status, RunStatus::Completed);
    assert!(!run.final_truncated);
    assert_eq!(
        r.answer(run).unwrap(),
        "This is **demo**, a tiny Rust project with one binary (`src/main.rs`) that prints `hi`.\n\nFiles: README.md, src/main.rs."
    );
    assert_eq!(
        r.prompt(run),
        "List the files and tell me what the project is."
    );
    assert_eq!(run.run_models, ["mock-1"]);
    assert!(run.started_at.is_some() && run.ended_at.is_some());
    let history = r.history(run);
    let roles: Vec<&str> = history.iter().map(|(r, _, _)| r.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "assistant", "assistant"]);
    assert_eq!(history[1].1, "Let me look around.");
    assert_eq!(history[1].2, ["bash"]);
    assert_eq!(history[2].2, ["read"]);
    // Reasoning is never served.
    assert!(history.iter().all(|(_, b, _)| !b.contains("I should look")));
    assert_eq!(run.first_sequence, FIRST_SEQUENCE);
}

#[test]
fn usage_is_each_assistant_message_once_from_its_last_record() {
    let f = Fixture::new("tool-then-answer");
    let r = read(&f.only());
    let mut runs = r.runs.clone();
    crate::usage::attribute(PROFILE.usage_kind(), &r.scan.entries, &mut runs);
    let usage = runs[0].usage.as_ref().unwrap();
    assert_eq!(usage.calls, 3);
    assert_eq!(usage.total.input, 100 + 101 + 102);
    assert_eq!(usage.total.output, 4 + 4 + 29);
}

#[test]
fn continued_sessions_have_a_run_per_prompt_and_keep_unicode() {
    let f = Fixture::new("continue-unicode");
    let sessions = f.sessions();
    // Its last step forks the session: a session of its own, with the history copied.
    assert_eq!(sessions.len(), 2);
    assert_eq!(read(&sessions[1]).runs.len(), 4);
    let r = read(&sessions[0]);
    assert_eq!(r.runs.len(), 3);
    assert_eq!(r.prompt(&r.runs[1]), "Say it again, with feeling.");
    assert_eq!(
        r.answer(&r.runs[1]).unwrap(),
        "Again: hello — naïve 日本語 🎉"
    );
    for run in &r.runs {
        assert_eq!(run.status, RunStatus::Completed, "{run:?}");
        assert!(!r.answer(run).unwrap().is_empty());
    }
    assert!(r.runs.windows(2).all(|w| w[0].end_line < w[1].start_line));
    assert!(r.runs[1].first_sequence > r.runs[0].first_sequence);
}

#[test]
fn a_length_cut_off_is_completed_and_truncated() {
    let f = Fixture::new("length-cutoff");
    let r = read(&f.only());
    assert_eq!(r.runs.len(), 2);
    assert_eq!(r.runs[0].status, RunStatus::Completed);
    assert!(r.runs[0].final_truncated);
    assert!(
        r.answer(&r.runs[0])
            .unwrap()
            .starts_with("This answer was cut off")
    );
    assert!(!r.runs[1].final_truncated);
    assert_eq!(r.answer(&r.runs[1]).unwrap(), "Short report: all fine.");
}

#[test]
fn a_provider_error_fails_its_run_and_the_next_goes_on() {
    let f = Fixture::new("provider-error");
    let r = read(&f.only());
    let statuses: Vec<RunStatus> = r.runs.iter().map(|r| r.status).collect();
    use RunStatus::*;
    assert_eq!(statuses, [Completed, Completed, Failed, Failed, Completed]);
    assert!(r.runs[2].final_lines.is_empty());
    assert_eq!(
        r.answer(&r.runs[4]).unwrap(),
        "Final answer after the failed runs."
    );
    let failed = r
        .scan
        .entries
        .iter()
        .filter(|e| e.api_error)
        .map(|e| e.stop_reason.as_deref())
        .collect::<Vec<_>>();
    assert_eq!(failed, [Some("apierror"), Some("apierror")]);
}

#[test]
fn after_a_broken_stream_the_runs_last_message_decides() {
    let f = Fixture::new("stream-failures");
    let r = read(&f.only());
    assert_eq!(r.runs.len(), 3);
    assert!(r.runs.iter().all(|run| run.status == RunStatus::Completed));
    let answer = r.answer(&r.runs[1]).unwrap();
    assert!(
        answer.starts_with("Recovered after the broken stream"),
        "{answer}"
    );
    // The broken message's partial text is history, not the answer.
    let history = r.history(&r.runs[1]);
    assert!(
        history
            .iter()
            .any(|(_, b, _)| b == "partial before the stream broke")
    );
}

#[test]
fn interrupted_runs_are_unknown_and_a_killed_last_run_is_running() {
    for name in ["interrupted", "interrupted-late"] {
        let f = Fixture::new(name);
        let r = read(&f.only());
        assert_eq!(r.runs.len(), 3, "{name}");
        for run in &r.runs[..2] {
            assert_eq!(run.status, RunStatus::Unknown, "{name}: {run:?}");
            assert_eq!(run.unknown_reason.as_deref(), Some(NO_END));
            assert!(run.final_lines.is_empty());
        }
        assert_eq!(r.runs[2].status, RunStatus::Completed, "{name}");
    }
    // The late interrupt left its tool running: cut after it, the run is the session's last.
    let f = Fixture::new("interrupted-late");
    let r = read(&f.only());
    let upto = r.runs[0].end_line;
    let entries: Vec<EntrySummary> = r
        .scan
        .entries
        .iter()
        .filter(|e| e.line <= upto)
        .cloned()
        .collect();
    let runs = cut_runs(&entries, &[], false).runs;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Running);
    assert!(runs[0].waiting_on_tool);
    let history = r.history(&runs[0]);
    assert_eq!(history[1].2, ["bash"]);
}

#[test]
fn a_subagent_is_its_runs_child_and_not_a_session() {
    let f = Fixture::new("subagent");
    let name = f.only();
    let r = read(&name);
    assert_eq!(r.runs.len(), 1);
    assert_eq!(r.runs[0].status, RunStatus::Completed);
    let tool_lines: Vec<Vec<u8>> = r
        .scan
        .entries
        .iter()
        .filter(|e| e.has_tool_call && r.runs[0].message_lines.contains(&e.line))
        .map(|e| r.line(&e.line_ref().unwrap()))
        .collect();
    assert_eq!(tool_lines.len(), 1);
    let id = &r.scan.header.session_id;
    let children = PROFILE.children(&name, id, &tool_lines).unwrap();
    assert_eq!(children.len(), 1);
    let child = children[0].unwrap();
    assert!(child.finished);
    let (child_id, updated): (String, i64) = f
        .sql()
        .query_row(
            "SELECT id, time_updated FROM session WHERE parent_id IS NOT NULL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(child.transcript_modified_ns, Some(updated * 1_000_000));
    // Another session's child is no record of this one's.
    assert_eq!(children_of_other(&name, &tool_lines), vec![None]);
    // The child's own log reads as a session (its prompt unquoted), parented.
    let child_log = read(&database::session_name(&f.db(), &child_id));
    assert_eq!(
        child_log.scan.header.parent_session.as_deref(),
        Some(id.as_str())
    );
    assert_eq!(
        child_log.prompt(&child_log.runs[0]),
        "Read notes.txt and report its content."
    );
}

fn children_of_other(name: &Path, lines: &[Vec<u8>]) -> Vec<Option<ChildRecord>> {
    children(name, "ses_0000000000000000000000000", lines)
}

#[test]
fn a_fork_is_a_session_of_its_own_without_a_link() {
    let f = Fixture::new("fork");
    let sessions = f.sessions();
    assert_eq!(sessions.len(), 2);
    let original = read(&sessions[0]);
    let fork = read(&sessions[1]);
    assert_eq!(fork.scan.header.parent_session, None);
    assert_eq!(fork.scan.header.fork, None);
    assert_eq!(original.runs.len(), 1);
    assert_eq!(fork.runs.len(), 2);
    assert_eq!(fork.answer(&fork.runs[0]).unwrap(), "Blue.");
    assert_eq!(fork.prompt(&fork.runs[1]), "Name a fruit instead.");
    assert!(fork.runs.iter().all(|r| r.status == RunStatus::Completed));
}

#[test]
fn secrets_are_served_as_written_for_masking_above() {
    let f = Fixture::new("secrets");
    let r = read(&f.only());
    assert!(!r.runs.is_empty());
    for run in &r.runs {
        assert_eq!(run.status, RunStatus::Completed);
        assert!(run.context_before.to_edge || run.context_before.sufficient());
    }
}

#[test]
fn the_quotes_opencode_run_adds_are_not_the_prompt() {
    assert_eq!(strip_quotes("\"Say hi.\""), "Say hi.");
    assert_eq!(strip_quotes("\"a\" and \"b\""), "a\" and \"b");
    assert_eq!(strip_quotes("no quotes"), "no quotes");
    assert_eq!(strip_quotes("\""), "\"");
    assert_eq!(strip_quotes("\"\""), "");
}

#[test]
fn a_resumed_scan_reads_on_from_the_next_record() {
    let f = Fixture::new("tool-then-answer");
    let name = f.only();
    let full = read(&name);
    let file = PROFILE.open(&name, None).unwrap();
    let part = full.scan.entries.iter().position(|e| e.line > 20).unwrap();
    let before = &full.scan.entries[part - 1];
    let resumed = scan(
        &file,
        Resume::After {
            header: &full.scan.header,
            offset: before.offset + 1,
            lines: before.line,
            last_id: None,
        },
        ReadAhead::Off,
    )
    .unwrap();
    assert_eq!(resumed.entries, full.scan.entries[part..]);
    assert_eq!(full.scan.consumed, file.identity().size);
}

// ---- rewrites, on records appended to a copy ----

/// Appends an event for the fixture's session: `data` with `sessionID` set.
fn append(f: &Fixture, session: &str, kind: &str, data: serde_json::Value) {
    let c = f.sql();
    let seq: i64 = c
        .query_row(
            "SELECT max(seq) + 1 FROM event WHERE aggregate_id = ?1",
            [session],
            |r| r.get(0),
        )
        .unwrap();
    let mut data = data;
    data["sessionID"] = session.into();
    c.execute(
        "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![
            format!("evt_test{seq}"),
            session,
            seq,
            kind,
            data.to_string()
        ],
    )
    .unwrap();
}

/// The last record of `id` in the fixture's session, as stored.
fn last_data(f: &Fixture, session: &str, key: &str, id: &str) -> serde_json::Value {
    let c = f.sql();
    let mut s = c
        .prepare("SELECT data FROM event WHERE aggregate_id = ?1 ORDER BY seq")
        .unwrap();
    let rows: Vec<String> = s
        .query_map([session], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.iter()
        .map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap())
        .rfind(|d| d[key]["id"] == id)
        .unwrap()
}

/// `rewrites` for the records appended to `f`'s session by `edit`.
fn rewrites_after(f: &Fixture, edit: impl FnOnce(&str, &Read)) -> (bool, Read) {
    let name = f.only();
    let old = read(&name);
    let session = old.scan.header.session_id.clone();
    edit(&session, &old);
    let new = read(&name);
    let appended = &new.scan.entries[old.scan.entries.len()..];
    (rewrites(&old.scan.entries, appended), new)
}

fn answer_part(r: &Read) -> String {
    let l = r.runs.last().unwrap().final_lines[0].line;
    let e = r.scan.entries.iter().find(|e| e.line == l).unwrap();
    e.id.clone()
}

#[test]
fn changing_a_settled_answer_is_a_rewrite() {
    let f = Fixture::new("tool-then-answer");
    let (rewritten, new) = rewrites_after(&f, |session, old| {
        let id = answer_part(old);
        let mut data = last_data(&f, session, "part", &id);
        data["part"]["text"] = "Something else.".into();
        append(&f, session, PART_UPDATED, data);
    });
    assert!(rewritten);
    // Read as a new generation, the record's last line is its truth.
    assert_eq!(new.answer(&new.runs[0]).unwrap(), "Something else.");
    // The message's usage still counts, though a part of it now comes after its record.
    let mut runs = new.runs.clone();
    crate::usage::attribute(PROFILE.usage_kind(), &new.scan.entries, &mut runs);
    assert_eq!(runs[0].usage.as_ref().unwrap().calls, 3);
    assert_eq!(runs[0].usage.as_ref().unwrap().total.output, 4 + 4 + 29);
}

#[test]
fn a_settled_message_ending_otherwise_is_a_rewrite_and_a_summary_is_not() {
    let f = Fixture::new("tool-then-answer");
    let (rewritten, _) = rewrites_after(&f, |session, old| {
        let user = old.runs[0].run_id.clone();
        let data = last_data(&f, session, "info", &user);
        append(&f, session, MESSAGE_UPDATED, data);
    });
    assert!(!rewritten, "the prompt written again with its summary");
    let (rewritten, new) = rewrites_after(&f, |session, old| {
        let m = old.runs[0].final_message_sha256.clone().unwrap();
        let e = old
            .scan
            .entries
            .iter()
            .find(|e| e.line_sha256.as_deref() == Some(&m))
            .unwrap();
        let mut data = last_data(&f, session, "info", &e.id);
        data["info"]["finish"] = "tool-calls".into();
        append(&f, session, MESSAGE_UPDATED, data);
    });
    assert!(rewritten);
    assert_eq!(new.runs[0].status, RunStatus::Running);
}

#[test]
fn a_run_moving_on_is_no_rewrite() {
    // The tool part and the message of a run still being written, cut short and then completed.
    let f = Fixture::new("tool-then-answer");
    let name = f.only();
    let full = read(&name);
    for cut in [14, 17, 20, 30, 38, 40] {
        let (old, new) = full
            .scan
            .entries
            .split_at(full.scan.entries.iter().position(|e| e.line > cut).unwrap());
        assert!(!rewrites(old, new), "cut after line {cut}");
    }
}

#[test]
fn an_unknown_record_type_makes_its_run_unknown() {
    let f = Fixture::new("tool-then-answer");
    let name = f.only();
    let old = read(&name);
    append(
        &f,
        &old.scan.header.session_id,
        "message.wondrous.1",
        serde_json::json!({}),
    );
    let file = PROFILE.open(&name, None).unwrap();
    let s = scan(&file, Resume::Fresh, ReadAhead::Off).unwrap();
    assert_eq!(
        s.first_unrecognised.unwrap().line_type.as_deref(),
        Some("message.wondrous.1")
    );
    let runs = cut_runs(&s.entries, &s.malformed, s.torn).runs;
    assert_eq!(runs[0].status, RunStatus::Unknown);
}

#[test]
fn a_log_not_opened_by_its_session_is_not_a_session() {
    let f = Fixture::new("tool-then-answer");
    let name = f.only();
    let (_, id) = database::split_name(&name).unwrap();
    f.sql()
        .execute(
            "UPDATE event SET type = 'session.updated.1' WHERE aggregate_id = ?1 AND seq = 0",
            [id],
        )
        .unwrap();
    let file = PROFILE.open(&name, None).unwrap();
    assert!(matches!(
        scan(&file, Resume::Fresh, ReadAhead::Off),
        Err(ScanError::NotASession)
    ));
}

#[test]
fn message_view_never_panics_and_serves_no_tool_input() {
    let tool = br#"{"type":"message.part.updated.1","data":{"sessionID":"ses_a","part":{"id":"prt_a","messageID":"msg_a","type":"tool","tool":"bash","state":{"status":"completed","input":{"command":"cat secret"},"output":"s3cr3t"}}}}"#;
    let v = message_view(tool).unwrap();
    assert_eq!(v.tool_calls, ["bash"]);
    assert!(v.body.is_empty() && v.answer.is_none());
    for bad in [
        &b""[..],
        b"{}",
        b"[]",
        b"null",
        br#"{"type":"message.updated.1"}"#,
        br#"{"type":"message.updated.1","data":{"info":{"role":7}}}"#,
        br#"{"type":"message.part.updated.1","data":{"part":{"type":"text","time":5}}}"#,
        br#"{"type":"session.created.1","data":{"info":{}}}"#,
    ] {
        let _ = message_view(bad);
    }
    let reasoning = br#"{"type":"message.part.updated.1","data":{"part":{"id":"prt_a","messageID":"msg_a","type":"reasoning","text":"hm"}}}"#;
    assert_eq!(message_view(reasoning), None);
}

const FIXTURES: &[&str] = &[
    "continue-unicode",
    "fork",
    "interrupted",
    "interrupted-late",
    "length-cutoff",
    "provider-error",
    "secrets",
    "stream-failures",
    "subagent",
    "tool-then-answer",
];

#[test]
fn no_session_of_the_fixtures_rewrites_itself_wherever_a_pass_ends() {
    for name in FIXTURES {
        let f = Fixture::new(name);
        for session in f.sessions() {
            let r = read(&session);
            let e = &r.scan.entries;
            for k in 1..e.len() {
                assert!(!rewrites(&e[..k], &e[k..]), "{name}: cut at entry {k}");
            }
        }
    }
}

#[test]
fn every_served_line_of_the_fixtures_has_a_view_of_its_size() {
    for name in FIXTURES {
        let f = Fixture::new(name);
        for session in f.sessions() {
            let r = read(&session);
            for run in &r.runs {
                for l in &run.message_lines {
                    let e = r.scan.entries.iter().find(|e| e.line == *l).unwrap();
                    let view = message_view(&r.line_no(*l)).unwrap();
                    assert_eq!(view.body.len() as u64, e.body_bytes, "{name}");
                }
                if run.status == RunStatus::Completed {
                    r.answer(run).unwrap();
                }
            }
        }
    }
}

#[test]
fn a_task_part_names_its_child_in_its_metadata_else_its_output() {
    let line = |state: serde_json::Value| {
        serde_json::json!({"type": PART_UPDATED, "data": {"part": {
            "id": "prt_a", "messageID": "msg_a", "type": "tool", "tool": "task", "state": state
        }}})
        .to_string()
        .into_bytes()
    };
    let by_metadata = line(serde_json::json!({
        "status": "running", "metadata": {"sessionId": "ses_child1"}
    }));
    assert_eq!(
        subagent_call(&by_metadata),
        Some(("ses_child1".into(), false))
    );
    let by_output = line(serde_json::json!({
        "status": "completed", "output": "<task id=\"ses_child2\" state=\"completed\">\n…</task>"
    }));
    assert_eq!(subagent_call(&by_output), Some(("ses_child2".into(), true)));
    assert_eq!(
        subagent_call(&line(serde_json::json!({"status": "pending"}))),
        None
    );
}

#[test]
fn an_aborted_message_cancels_its_run() {
    let f = Fixture::new("provider-error");
    let name = f.only();
    let (_, id) = database::split_name(&name).unwrap();
    let c = f.sql();
    let n = c
        .execute(
            "UPDATE event SET data = replace(data, '\"name\":\"APIError\"', '\"name\":\"MessageAbortedError\"') \
             WHERE aggregate_id = ?1 AND type = 'message.updated.1'",
            [id],
        )
        .unwrap();
    assert!(n >= 2);
    let r = read(&name);
    assert_eq!(r.runs[2].status, RunStatus::Cancelled);
    assert_eq!(r.runs[3].status, RunStatus::Cancelled);
}
