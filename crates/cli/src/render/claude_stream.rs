//! `--output-format stream-json` and `--output-format json`: the run in the shape Claude
//! Code's `claude -p` prints, so a script written for it reads wonopcode's output unchanged.
//! `stream-json` writes one message per line as the run goes — `system` (`init`), then
//! `assistant` (a text or a `tool_use` block), `user` (a `tool_result`), and last `result`
//! with the final text, the turns, the time, the tokens and the cost; `json` writes only the
//! `result`. Only the root context's work is written (a specialist's is in its tool's
//! result), as Claude Code writes its subagents' only with a `parent_tool_use_id`.
//!
//! The shapes follow the Agent SDK's `SDKMessage` types; `tests/fixtures/claude-code/
//! stream-json.jsonl` is a stream in that schema, and the e2e test `familiar_flags::
//! stream_json_parses_as_claude_codes` checks every key a script there could read is here.
//! `--json` stays wonopcode's own event stream (`docs/events.md`).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::time::Instant;

use serde_json::{Value, json};
use wonopcode_protocol::claude_code::{claude_arguments, claude_tool};
use wonopcode_protocol::event::{ItemDetails, ItemStatus, ToolCallItem};
use wonopcode_protocol::{Event, EventKind, LoopStatus, Usage};

use super::Renderer;

/// Writes the run as Claude Code's `-p` does with `--output-format stream-json` or `json`.
pub struct ClaudeStreamRenderer {
    /// Every message (`stream-json`), or only the result (`json`).
    streaming: bool,
    cwd: String,
    session_id: String,
    model: String,
    started: Option<Instant>,
    /// Time spent in model responses.
    api_ms: u64,
    /// The last answer text of the root: the result.
    last_text: String,
    denials: Vec<Value>,
    /// Messages written, for their ids.
    written: u64,
}

impl ClaudeStreamRenderer {
    /// Writes every message when `streaming`, else only the result; `cwd` is the
    /// workspace, as `init` names it.
    pub fn new(streaming: bool, cwd: &std::path::Path) -> Self {
        Self {
            streaming,
            cwd: cwd.display().to_string(),
            session_id: String::new(),
            model: String::new(),
            started: None,
            api_ms: 0,
            last_text: String::new(),
            denials: Vec::new(),
            written: 0,
        }
    }

    /// A UUID-shaped id for the next message, unique in the session.
    fn uuid(&mut self) -> String {
        self.written += 1;
        let half = |salt: u8| {
            let mut h = DefaultHasher::new();
            (&self.session_id, self.written, salt).hash(&mut h);
            h.finish()
        };
        let hex = format!("{:016x}{:016x}", half(0), half(1));
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }

    fn write(&mut self, mut message: Value) {
        if let Some(object) = message.as_object_mut() {
            object.insert("uuid".to_owned(), self.uuid().into());
            object.insert("session_id".to_owned(), self.session_id.clone().into());
        }
        let mut out = std::io::stdout().lock();
        // A closed stdout (`| head`) is not worth failing the run for.
        let _ = writeln!(out, "{message}").and_then(|()| out.flush());
    }

    fn stream(&mut self, message: Value) {
        if self.streaming {
            self.write(message);
        }
    }

    /// An `assistant` message holding one content block.
    fn assistant(&mut self, block: Value) {
        let message = json!({
            "type": "assistant",
            "message": {
                "id": format!("msg_{}", self.written + 1),
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [block],
                "stop_reason": Value::Null,
                "stop_sequence": Value::Null,
                "usage": usage(&Usage::default()),
            },
            "parent_tool_use_id": Value::Null,
        });
        self.stream(message);
    }

    /// A call as Claude Code's tool would have been called (`Read` with `file_path`).
    fn tool_started(&mut self, call: &ToolCallItem) {
        self.assistant(json!({
            "type": "tool_use",
            "id": call.call_id,
            "name": claude_tool(&call.name),
            "input": claude_input(call),
        }));
    }

    fn tool_finished(&mut self, call: &ToolCallItem) {
        if call.status == ItemStatus::Declined {
            self.denials.push(json!({
                "tool_name": claude_tool(&call.name),
                "tool_use_id": call.call_id,
                "tool_input": claude_input(call),
            }));
        }
        let message = json!({
            "type": "user",
            "message": {
                "role": "user",
                "content": [{
                    "type": "tool_result",
                    "tool_use_id": call.call_id,
                    "content": call.output.clone().unwrap_or_default(),
                    "is_error": call.status != ItemStatus::Completed,
                }],
            },
            "parent_tool_use_id": Value::Null,
        });
        self.stream(message);
    }

    /// The `result` message of a turn that ended with `status`.
    fn result(&mut self, status: LoopStatus, iterations: u32, spent: &Usage, error: Option<&str>) {
        let subtype = match status {
            LoopStatus::Complete | LoopStatus::Suspended => "success",
            LoopStatus::MaxIterations => "error_max_turns",
            LoopStatus::BudgetExceeded => "error_max_budget_usd",
            LoopStatus::Error | LoopStatus::Cancelled => "error_during_execution",
        };
        let is_error = subtype != "success";
        let mut message = json!({
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": self.started.map_or(0, |s| s.elapsed().as_millis() as u64),
            "duration_api_ms": self.api_ms,
            "num_turns": iterations,
            "result": match error {
                Some(error) => error.to_owned(),
                None => self.last_text.clone(),
            },
            "total_cost_usd": spent.cost_micro_cents.map_or(0.0, |c| c as f64 / 1e8),
            "usage": usage(spent),
            "modelUsage": { self.model.clone(): model_usage(spent) },
            "permission_denials": std::mem::take(&mut self.denials),
        });
        if is_error && let Some(object) = message.as_object_mut() {
            object.insert("errors".to_owned(), json!([error.unwrap_or(subtype)]));
        }
        self.write(message);
    }
}

/// A call's arguments under Claude Code's names; arguments that are no JSON object as they
/// were sent.
fn claude_input(call: &ToolCallItem) -> Value {
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(arguments) => claude_arguments(&arguments),
        Err(_) => json!({ "arguments": call.arguments }),
    }
}

/// Usage as the Messages API reports it, which Claude Code passes on.
fn usage(spent: &Usage) -> Value {
    json!({
        "input_tokens": spent.input_tokens,
        "cache_creation_input_tokens": spent.cache_write_tokens,
        "cache_read_input_tokens": spent.cache_read_tokens,
        "output_tokens": spent.output_tokens,
        "server_tool_use": { "web_search_requests": spent.web_search_count },
        "service_tier": "standard",
    })
}

/// One model's share of the usage, as `result.modelUsage` gives it.
fn model_usage(spent: &Usage) -> Value {
    json!({
        "inputTokens": spent.input_tokens,
        "outputTokens": spent.output_tokens,
        "cacheReadInputTokens": spent.cache_read_tokens,
        "cacheCreationInputTokens": spent.cache_write_tokens,
        "webSearchRequests": spent.web_search_count,
        "costUSD": spent.cost_micro_cents.map_or(0.0, |c| c as f64 / 1e8),
    })
}

impl Renderer for ClaudeStreamRenderer {
    fn render(&mut self, event: &Event) {
        if event.context.depth() > 0 {
            return;
        }
        match &event.kind {
            EventKind::SessionStarted {
                session_id, model, ..
            } => {
                self.session_id = session_id.clone();
                self.model = model.clone();
                let init = json!({
                    "type": "system",
                    "subtype": "init",
                    "cwd": self.cwd,
                    "tools": [],
                    "mcp_servers": [],
                    "model": model,
                    "permissionMode": "default",
                    "slash_commands": [],
                    "apiKeySource": "none",
                    "output_style": "default",
                    "agents": [],
                    "skills": [],
                    "plugins": [],
                });
                self.stream(init);
            }
            EventKind::TurnStarted => {
                self.started = Some(Instant::now());
                self.api_ms = 0;
                self.last_text.clear();
            }
            EventKind::ResponseCompleted { duration_ms, .. } => self.api_ms += duration_ms,
            EventKind::ItemStarted { item } => {
                if let ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) = &item.details
                {
                    self.tool_started(call);
                }
            }
            EventKind::ItemCompleted { item } => match &item.details {
                ItemDetails::AgentMessage { text } if !text.is_empty() => {
                    self.last_text = text.clone();
                    self.assistant(json!({ "type": "text", "text": text }));
                }
                ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                    self.tool_finished(call);
                }
                _ => {}
            },
            EventKind::TurnCompleted {
                status,
                iterations,
                usage,
                ..
            } => self.result(*status, *iterations, usage, None),
            EventKind::TurnFailed {
                status,
                error,
                iterations,
                usage,
            } => self.result(*status, *iterations, usage, Some(error)),
            _ => {}
        }
    }
}
