//! Real sessions with one line of a type runread does not know inserted where a test wants it:
//! as a newer release of the agent could write it, derived from a committed fixture (never a
//! session written by hand).

use runread_sessions::Agent;

/// What only the inserted line holds (shaped as a secret, so that masking would not hide a
/// leak as a coincidence of its own): no reading, tool output or log may show it.
pub const MARKER: &str = "sk-ant-api03-unrecognised-MARKER-4711";

/// The keys a line of `agent` names itself and its parent by; `None` for an agent whose lines
/// do not link (Codex: turns).
fn link_keys(agent: Agent) -> Option<(&'static str, &'static str)> {
    match agent {
        Agent::Pi | Agent::Copilot => Some(("id", "parentId")),
        Agent::Claude => Some(("uuid", "parentUuid")),
        Agent::Codex | Agent::Gemini | Agent::OpenCode => None,
    }
}

fn json_line(text: &str, line: u64) -> serde_json::Value {
    let at = usize::try_from(line).expect("a line number") - 1;
    serde_json::from_str(text.lines().nth(at).expect("the line")).expect("a JSON line")
}

/// A line of type `line_type` that runread does not know, as `agent` would write it in the run
/// whose prompt is line `prompt` of `text` (its session, its cwd, its turn; Claude Code's says it
/// is version `9.9.9`), holding [`MARKER`] where an answer would be.
pub fn line(agent: Agent, text: &str, prompt: u64, line_type: &str) -> serde_json::Value {
    let p = json_line(text, prompt);
    match agent {
        Agent::Pi => serde_json::json!({
            "type": line_type, "id": "feedbeef", "timestamp": p["timestamp"], "answer": MARKER,
        }),
        Agent::Claude => serde_json::json!({
            "type": line_type, "uuid": "0badc0de-0000-4000-8000-000000004711",
            "isSidechain": false, "sessionId": p["sessionId"], "cwd": p["cwd"],
            "version": "9.9.9", "timestamp": p["timestamp"],
            "message": {"role": "assistant", "content": [{"type": "text", "text": MARKER}]},
        }),
        Agent::Gemini => serde_json::json!({
            "id": "0badc0de-0000-4000-8000-000000004711", "timestamp": p["timestamp"],
            "type": line_type, "content": MARKER,
        }),
        Agent::Copilot => serde_json::json!({
            "type": line_type, "data": {"content": MARKER},
            "id": "0badc0de-0000-4000-8000-000000004711", "timestamp": p["timestamp"],
        }),
        Agent::OpenCode => serde_json::json!({
            "type": line_type, "data": {"sessionID": p["data"]["sessionID"], "text": MARKER},
        }),
        Agent::Codex => serde_json::json!({
            "timestamp": p["timestamp"], "ordinal": p["ordinal"], "type": "response_item",
            "payload": {
                "type": line_type, "text": MARKER,
                "internal_chat_message_metadata_passthrough":
                    p["payload"]["internal_chat_message_metadata_passthrough"],
            },
        }),
    }
}

/// `text` (a session file of `agent`) with `line` inserted right after line `after` (1-based), on
/// the active branch: for the agents whose lines link to a parent, the inserted line is the child
/// of line `after`, and that line's children become the inserted line's.
pub fn insert_after(agent: Agent, text: &str, after: u64, line: serde_json::Value) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = usize::try_from(after).expect("a line number");
    let mut line = line;
    if let Some((id_key, parent_key)) = link_keys(agent) {
        let parent = json_line(text, after)[id_key].clone();
        let new_id = line[id_key].clone();
        line[parent_key] = parent.clone();
        for l in lines.iter_mut().skip(at) {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            if v.get(parent_key) == Some(&parent) {
                v[parent_key] = new_id.clone();
                *l = v.to_string();
            }
        }
    }
    lines.insert(at, line.to_string());
    lines.join("\n") + "\n"
}

/// `text` (a session file of `agent`, whose lines link to a parent) with `line` inserted right
/// before line `before` (1-based), on the active branch: the inserted line takes that line's
/// parent and becomes its parent.
pub fn insert_before(agent: Agent, text: &str, before: u64, line: serde_json::Value) -> String {
    let (id_key, parent_key) = link_keys(agent).expect("an agent whose lines link");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = usize::try_from(before).expect("a line number") - 1;
    let mut next = json_line(text, before);
    let mut line = line;
    line[parent_key] = next[parent_key].clone();
    next[parent_key] = line[id_key].clone();
    lines[at] = next.to_string();
    lines.insert(at, line.to_string());
    lines.join("\n") + "\n"
}

/// The session file at `path` (of `agent`) with a line of type `line_type` inserted right after
/// the prompt at line `prompt` (the run's own: [`line()`], [`insert_after`]); its mtime kept.
pub fn insert_in_run(agent: Agent, path: &std::path::Path, prompt: u64, line_type: &str) {
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime");
    let text = std::fs::read_to_string(path).expect("read session");
    let inserted = line(agent, &text, prompt, line_type);
    std::fs::write(path, insert_after(agent, &text, prompt, inserted)).expect("write");
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(mtime))
        .expect("set mtime");
}
