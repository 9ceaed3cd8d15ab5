//! What `runread run` shows on the terminal while the agent works: the model's text on stdout,
//! tools, retries and failures on stderr — the agent's own terminal output is replaced by its
//! event stream, so this is what the user sees of it.

use std::io::Write as _;

use crate::claude::events::{Block, ClaudeEvent, UserKind};
use crate::claude::state::ClaudeSupervision;
use crate::codex::events::{CodexEvent, ItemKind};
use crate::codex::state::CodexSupervision;
use crate::pi::events::Event;

/// Longest failure text shown on the terminal (in characters).
const FAILURE_SHOWN_MAX_CHARS: usize = 200;

pub(crate) struct Terminal {
    /// Render the event stream (`Options::echo`); off, nothing is shown.
    pub(crate) echo: bool,
    /// Pi's streamed text ended without a newline yet.
    printed_text: bool,
}

impl Terminal {
    pub(crate) fn new(echo: bool) -> Terminal {
        Terminal {
            echo,
            printed_text: false,
        }
    }

    pub(crate) fn say(&self, line: &str) {
        if self.echo {
            eprintln!("{line}");
        }
    }

    /// Pi's events for the terminal: the model's text on stdout as it streams, everything else
    /// on stderr.
    pub(crate) fn pi(&mut self, event: &Event) {
        if !self.echo {
            return;
        }
        match event {
            Event::TextDelta(t) => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(t.as_bytes());
                let _ = out.flush();
                self.printed_text = true;
            }
            Event::AssistantMessage { .. } if self.printed_text => {
                println!();
                self.printed_text = false;
            }
            Event::ToolStart { name, detail, .. } => eprintln!("  ▸ {name}: {detail}"),
            Event::ToolEnd {
                name,
                is_error: true,
                ..
            } => eprintln!("  ▸ {name} failed"),
            Event::RetryStart {
                attempt,
                max,
                error,
            } => {
                eprintln!("  ⟳ provider error, retry {attempt}/{max}: {error}")
            }
            Event::CompactionStart => eprintln!("  ⋯ compacting the context"),
            _ => {}
        }
    }

    /// Claude Code's events for the terminal: the model's text on stdout, everything else on
    /// stderr. Called before the event is applied (a failed tool's name is still known).
    pub(crate) fn claude(&self, event: &ClaudeEvent, sup: &ClaudeSupervision) {
        if !self.echo {
            return;
        }
        match event {
            ClaudeEvent::Assistant {
                blocks,
                synthetic,
                error,
                sidechain,
                ..
            } => {
                for b in blocks {
                    match b {
                        Block::Text(t) if (*synthetic || *error) && !sidechain => {
                            eprintln!(
                                "  ✗ {}",
                                crate::stream::one_line(t, FAILURE_SHOWN_MAX_CHARS)
                            );
                        }
                        Block::Text(_) if *synthetic || *error => {}
                        Block::Text(t) if !sidechain => {
                            let mut out = std::io::stdout().lock();
                            let _ = out.write_all(t.as_bytes());
                            let _ = out.write_all(b"\n");
                            let _ = out.flush();
                        }
                        Block::ToolUse { name, detail, .. } if *sidechain => {
                            eprintln!("    ↳ {name}: {detail}")
                        }
                        Block::ToolUse { name, detail, .. } => eprintln!("  ▸ {name}: {detail}"),
                        _ => {}
                    }
                }
            }
            ClaudeEvent::User {
                kind: UserKind::ToolResults(results),
                sidechain: false,
                ..
            } => {
                for (id, is_error) in results {
                    if *is_error {
                        eprintln!("  ▸ {} failed", sup.tool_name(id).unwrap_or("tool"));
                    }
                }
            }
            ClaudeEvent::User {
                kind: UserKind::Interrupt,
                sidechain: false,
                ..
            } => eprintln!("  ⨯ interrupted"),
            ClaudeEvent::Retry {
                attempt,
                max,
                error,
            } => eprintln!("  ⟳ provider error, retry {attempt}/{max}: {error}"),
            ClaudeEvent::Status { compacting: true } => eprintln!("  ⋯ compacting the context"),
            ClaudeEvent::TaskStarted { description } => eprintln!("  ↳ subagent: {description}"),
            _ => {}
        }
    }

    /// Codex's events for the terminal: the model's messages on stdout, everything else on
    /// stderr. Called before the event is applied (an open tool's label is still known).
    pub(crate) fn codex(&self, event: &CodexEvent, sup: &CodexSupervision) {
        if !self.echo {
            return;
        }
        match event {
            CodexEvent::ItemCompleted(item) => match &item.kind {
                ItemKind::AgentMessage { text } => {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(text.as_bytes());
                    let _ = out.write_all(b"\n");
                    let _ = out.flush();
                }
                ItemKind::FileChange { changes, .. } => {
                    for (path, kind) in changes {
                        eprintln!("  ▸ {kind}: {path}");
                    }
                    if item.kind.failed() {
                        eprintln!("  ▸ file change failed");
                    }
                }
                ItemKind::CommandExecution { exit_code, .. } if item.kind.failed() => {
                    let label = sup.tool_label(&item.id).unwrap_or("command");
                    match exit_code {
                        Some(code) => eprintln!("  ▸ {label} failed (exit {code})"),
                        None => eprintln!("  ▸ {label} failed"),
                    }
                }
                ItemKind::McpToolCall { .. } if item.kind.failed() => {
                    eprintln!("  ▸ {} failed", sup.tool_label(&item.id).unwrap_or("tool"));
                }
                ItemKind::Error { message } => eprintln!("  ! {message}"),
                _ => {}
            },
            CodexEvent::ItemStarted(item) if sup.tool_label(&item.id).is_none() => {
                match &item.kind {
                    ItemKind::CommandExecution { command, .. } => eprintln!("  ▸ {command}"),
                    ItemKind::McpToolCall { server, tool, .. } => eprintln!("  ▸ {server}.{tool}"),
                    ItemKind::WebSearch { query } => eprintln!("  ▸ web search: {query}"),
                    _ => {}
                }
            }
            CodexEvent::Error { message } => eprintln!("  ✗ {message}"),
            // Codex reports the failure as an `error` first: shown once.
            CodexEvent::TurnFailed { message }
                if sup
                    .runs
                    .last()
                    .and_then(|r| r.last_error.as_ref())
                    .is_none_or(|e| e != message) =>
            {
                eprintln!("  ✗ {message}")
            }
            _ => {}
        }
    }
}
