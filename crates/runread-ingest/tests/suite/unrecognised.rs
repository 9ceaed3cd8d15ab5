//! A line of a type runread does not know (as a newer release of an agent could write), inserted
//! into a real session: inside a run it makes that run `unknown` with one fixed reason, and no
//! other run changes; outside every run it changes nothing; ingest logs the first such line of a
//! file once per pass, naming the agent, its version and the line's type only as short
//! identifiers, and nothing of the line.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use runread_sessions::{Agent, EvidenceFile, Resume, Run, RunStatus, UNRECOGNISED_LINE};
use runread_store::prelude::*;
use runread_testkit::unrecognised::{MARKER, insert_after, insert_before, line};
use runread_testkit::{Env, claude_fixture_sessions, codex_fixture_sessions, fixture_session};

/// A committed scenario of each agent with at least two completed runs.
const MULTI_RUN: [(Agent, &str); 4] = [
    (Agent::Pi, "multi-run"),
    (Agent::Claude, "continue-unicode"),
    (Agent::Codex, "continue-unicode"),
    (Agent::Copilot, "continue-unicode"),
];

fn fixture_text(agent: Agent, scenario: &str) -> String {
    let path = match agent {
        Agent::Pi => fixture_session(scenario),
        Agent::Claude => claude_fixture_sessions(scenario).remove(0),
        Agent::Codex => codex_fixture_sessions(scenario).remove(0),
        Agent::Gemini => runread_testkit::gemini_fixture_sessions(scenario).remove(0),
        Agent::Copilot => runread_testkit::copilot_fixture_sessions(scenario).remove(0),
        Agent::OpenCode => panic!("{agent} keeps no session file"),
    };
    std::fs::read_to_string(path).unwrap()
}

/// The runs the session reader cuts of the session file `text` of `agent`, and the first line of
/// a type it does not know that its scan saw.
fn runs_of(agent: Agent, text: &str) -> (Vec<Run>, Option<runread_sessions::Unrecognised>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, text).unwrap();
    let file = EvidenceFile::open(&path, None).unwrap();
    let scan = runread_sessions::scan(agent, &file, Resume::Fresh).unwrap();
    let branch = runread_sessions::cut_runs(agent, &scan.entries, &scan.malformed, scan.torn);
    (branch.runs, scan.first_unrecognised)
}

/// What a run's answer is, as far as the other runs must not change: id, status, reason, answer.
fn outcome(r: &Run) -> (String, RunStatus, Option<String>, Option<String>) {
    (
        r.run_id.clone(),
        r.status,
        r.unknown_reason.clone(),
        r.final_text_sha256.clone(),
    )
}

/// Per agent, a real session with one line of a type runread does not know inside its second
/// run: that run is `unknown` for that reason, every other run is as it was.
#[test]
fn an_unrecognised_line_inside_a_run_makes_only_that_run_unknown() {
    for (agent, scenario) in MULTI_RUN {
        let text = fixture_text(agent, scenario);
        let (before, none) = runs_of(agent, &text);
        assert_eq!(none, None);
        assert!(before.len() >= 2, "{agent}: {} runs", before.len());
        assert_eq!(before[1].status, RunStatus::Completed, "{agent}");
        let prompt = before[1].prompt_line.as_ref().unwrap().line;
        let inserted = line(agent, &text, prompt, "turn_note");
        let (after, seen) = runs_of(agent, &insert_after(agent, &text, prompt, inserted));
        let mut want: Vec<_> = before.iter().map(outcome).collect();
        want[1] = (
            before[1].run_id.clone(),
            RunStatus::Unknown,
            Some(UNRECOGNISED_LINE.to_owned()),
            after[1].final_text_sha256.clone(),
        );
        assert_eq!(
            after.iter().map(outcome).collect::<Vec<_>>(),
            want,
            "{agent}"
        );
        let seen = seen.unwrap();
        assert_eq!(seen.line, prompt + 1, "{agent}");
        let (line_type, version) = match agent {
            Agent::Pi => ("turn_note", None),
            Agent::Claude => ("turn_note", Some("9.9.9")),
            Agent::Codex => ("response_item/turn_note", Some("0.171.0")),
            Agent::Gemini => ("turn_note", None),
            Agent::Copilot => ("turn_note", Some("1.0.102")),
            Agent::OpenCode => ("turn_note", None),
        };
        assert_eq!(seen.line_type.as_deref(), Some(line_type), "{agent}");
        assert_eq!(seen.agent_version.as_deref(), version, "{agent}");
    }
}

/// Before the first run's prompt a line of a type runread does not know is in no run: no run
/// changes (it is seen all the same, for the log).
#[test]
fn an_unrecognised_line_before_the_first_prompt_changes_no_run() {
    for (agent, scenario) in [MULTI_RUN[0], MULTI_RUN[1]] {
        let text = fixture_text(agent, scenario);
        let (before, _) = runs_of(agent, &text);
        let prompt = before[0].prompt_line.as_ref().unwrap().line;
        let inserted = line(agent, &text, prompt, "turn_note");
        let (after, seen) = runs_of(agent, &insert_before(agent, &text, prompt, inserted));
        assert_eq!(seen.map(|s| s.line), Some(prompt), "{agent}");
        assert_eq!(
            after.iter().map(outcome).collect::<Vec<_>>(),
            before.iter().map(outcome).collect::<Vec<_>>(),
            "{agent}"
        );
    }
}

/// A Claude Code conversation line of a type runread does not know that hangs off the active
/// chain (its parent is on it, nothing follows from it: as a tool result hangs off) falls in the
/// run of its parent.
#[test]
fn a_claude_line_of_an_unknown_type_hanging_off_the_chain_falls_in_its_run() {
    let agent = Agent::Claude;
    let text = fixture_text(agent, "continue-unicode");
    let (before, _) = runs_of(agent, &text);
    let prompt = before[1].prompt_line.as_ref().unwrap().line;
    let mut inserted = line(agent, &text, prompt, "turn_note");
    let prompt_line: serde_json::Value = serde_json::from_str(
        text.lines()
            .nth(usize::try_from(prompt).unwrap() - 1)
            .unwrap(),
    )
    .unwrap();
    inserted["parentUuid"] = prompt_line["uuid"].clone();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.insert(usize::try_from(prompt).unwrap(), inserted.to_string());
    let (after, _) = runs_of(agent, &(lines.join("\n") + "\n"));
    let statuses = |runs: &[Run]| -> Vec<_> { runs.iter().map(|r| r.status).collect() };
    let mut want = statuses(&before);
    want[1] = RunStatus::Unknown;
    assert_eq!(statuses(&after), want);
    assert_eq!(after[1].unknown_reason.as_deref(), Some(UNRECOGNISED_LINE));
}

/// A Codex line of a type runread does not know that names no turn falls in the turn open where
/// it is: inside a turn it makes that run `unknown`; between two turns, no run.
#[test]
fn a_codex_line_of_an_unknown_type_without_a_turn_falls_in_the_open_turn() {
    let text = fixture_text(Agent::Codex, "continue-unicode");
    let (before, _) = runs_of(Agent::Codex, &text);
    let inserted = serde_json::json!({
        "timestamp": "2026-12-01T00:00:00Z", "ordinal": 0, "type": "turn_summary",
        "payload": {"text": MARKER},
    });
    let prompt = before[1].prompt_line.as_ref().unwrap().line;
    let with = insert_after(Agent::Codex, &text, prompt, inserted.clone());
    let (inside, seen) = runs_of(Agent::Codex, &with);
    assert_eq!(seen.unwrap().line_type.as_deref(), Some("turn_summary"));
    let statuses = |runs: &[Run]| -> Vec<_> { runs.iter().map(|r| r.status).collect() };
    let mut want = statuses(&before);
    want[1] = RunStatus::Unknown;
    assert_eq!(statuses(&inside), want);
    assert_eq!(inside[1].unknown_reason.as_deref(), Some(UNRECOGNISED_LINE));
    // Just before the second turn starts: the first one has ended, so no turn is open.
    let between = before[1].start_line - 1;
    let (outside, seen) = runs_of(
        Agent::Codex,
        &insert_after(Agent::Codex, &text, between, inserted),
    );
    assert!(seen.is_some());
    assert_eq!(
        outside.iter().map(outcome).collect::<Vec<_>>(),
        before.iter().map(outcome).collect::<Vec<_>>()
    );
}

// ---- the log ----

/// What a log subscriber wrote.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// What ingesting `env`'s sessions logged (everything, at every level).
fn ingest_logged(env: &Env) -> String {
    let out = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(out.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        env.ingest();
    });
    let bytes = out.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

/// Each agent's real session placed in `env` with lines of `types` (runread knows none of them)
/// inserted in its second run; returns the placed file.
fn place_with(env: &Env, agent: Agent, scenario: &str, types: &[&str]) -> std::path::PathBuf {
    let age = Duration::from_secs(60);
    let path = match agent {
        Agent::Pi => env.place(scenario, age),
        Agent::Claude => env.place_claude(scenario, age).remove(0),
        Agent::Codex => env.place_codex(scenario, age).remove(0),
        Agent::Gemini => env.place_gemini(scenario, age).remove(0),
        Agent::Copilot => env.place_copilot(scenario, age).remove(0),
        Agent::OpenCode => panic!("{agent} keeps no session file"),
    };
    let mut text = std::fs::read_to_string(&path).unwrap();
    let (runs, _) = runs_of(agent, &text);
    let prompt = runs[1].prompt_line.as_ref().unwrap().line;
    for t in types {
        let inserted = line(agent, &text, prompt, t);
        // The second one goes in first, so both stay in the run (each after the prompt).
        let inserted = match agent {
            Agent::Pi => {
                let mut v = inserted;
                v["id"] = serde_json::json!(format!("feed{:04x}", t.len()));
                v
            }
            Agent::Claude => {
                let mut v = inserted;
                v["uuid"] =
                    serde_json::json!(format!("0badc0de-0000-4000-8000-00000000{:04x}", t.len()));
                v
            }
            Agent::Gemini | Agent::Copilot | Agent::OpenCode => {
                let mut v = inserted;
                v["id"] =
                    serde_json::json!(format!("0badc0de-0000-4000-8000-00000000{:04x}", t.len()));
                v
            }
            Agent::Codex => inserted,
        };
        text = insert_after(agent, &text, prompt, inserted);
    }
    std::fs::write(&path, text).unwrap();
    runread_testkit::set_age(&path, age);
    path
}

/// Two lines of types runread does not know in one file: one warning, naming the agent, its
/// version where the file records it and the first line's type; nothing of either line (their
/// text, the other type) and not the file's path. The run they fall in is stored `unknown`.
#[test]
fn the_first_unrecognised_line_of_a_file_is_logged_once_without_its_content() {
    for (agent, scenario) in MULTI_RUN
        .into_iter()
        .chain([(Agent::Gemini, "continue-unicode")])
    {
        let env = Env::new();
        let path = place_with(&env, agent, scenario, &["second_kind", "first_kind"]);
        let log = ingest_logged(&env);
        let warnings: Vec<&str> = log.lines().filter(|l| l.contains("WARN")).collect();
        assert_eq!(warnings.len(), 1, "{agent}: {log}");
        let version = match agent {
            Agent::Pi => "(not recorded, or not shown)",
            Agent::Claude => "9.9.9",
            Agent::Codex => "0.171.0",
            Agent::Gemini => "(not recorded, or not shown)",
            Agent::Copilot => "1.0.102",
            Agent::OpenCode => "(not recorded, or not shown)",
        };
        for wanted in [agent.as_str(), agent.product(), version, "first_kind"] {
            assert!(
                warnings[0].contains(wanted),
                "{agent}: {wanted} not in {log}"
            );
        }
        let file_name = path.file_name().unwrap().to_str().unwrap();
        for leaked in [MARKER, "second_kind", file_name] {
            assert!(!log.contains(leaked), "{agent}: {leaked} in {log}");
        }
        // Gemini CLI's runs are all `unknown` (no answer is proven): the one with the line says
        // why it is, the others their own reason.
        let unknown: Vec<_> = env
            .store
            .runs()
            .unwrap()
            .into_iter()
            .filter(|r| r.run.status == RunStatus::Unknown)
            .map(|r| r.run.unknown_reason)
            .filter(|why| {
                agent != Agent::Gemini
                    || why.as_deref() != Some(runread_sessions::gemini::END_NOT_RECORDED)
            })
            .collect();
        assert_eq!(unknown, [Some(UNRECOGNISED_LINE.to_owned())], "{agent}");
        // The next pass reads nothing new: nothing is logged again.
        assert!(!ingest_logged(&env).contains("WARN"), "{agent}");
    }
}

/// The log names a line's type only as a short identifier: at the bound it does, one byte over
/// it or with any other character it does not (and says so).
#[test]
fn the_log_names_an_unrecognised_type_only_at_or_under_the_bound() {
    let max = runread_core::limits::REPORTED_EVENT_TYPE_MAX_BYTES;
    let at_bound = "a".repeat(max);
    let over = "b".repeat(max + 1);
    for (line_type, named) in [
        (at_bound.as_str(), true),
        (over.as_str(), false),
        ("Turn Note", false),
    ] {
        let env = Env::new();
        place_with(&env, Agent::Pi, "multi-run", &[line_type]);
        let log = ingest_logged(&env);
        let warning = log.lines().find(|l| l.contains("WARN")).unwrap();
        assert_eq!(warning.contains(line_type), named, "{line_type}: {log}");
        assert_eq!(
            warning.contains("line_type=\"(not recorded, or not shown)\""),
            !named,
            "{log}"
        );
    }
}
