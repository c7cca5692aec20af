//! The event stream every loop emits: one typed enum, serialized one JSON object per line
//! for `--json`, rendered by the terminal otherwise. The schema is documented in
//! `docs/events.md`; a test keeps the two in step.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context_path::ContextPath;
use crate::message::Message;
use crate::status::{ContextStatus, LoopStatus, PendingCall};
use crate::usage::Usage;

/// Version of the JSONL event schema; bumped on any incompatible change.
pub const EVENT_SCHEMA_VERSION: u32 = 1;

/// One event, stamped with the context it comes from and the time it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Context path (`0` is the root context).
    pub context: ContextPath,
    /// RFC 3339 UTC timestamp with milliseconds.
    pub ts: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// Serializes the event as one JSON line (without the newline).
    pub fn to_json_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// What happened. Internally tagged with dotted names, like Codex's `exec --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum EventKind {
    /// A session begins (once per process, before any turn).
    #[serde(rename = "session.started")]
    SessionStarted {
        /// Session id, stable across resumes of the same history.
        session_id: String,
        /// The loop running the session.
        loop_name: String,
        /// The model in use.
        model: String,
        /// Schema version of this event stream.
        schema_version: u32,
    },
    /// This run resumes an interrupted one: right after `session.started`. Its finished
    /// responses and tool calls are answered from that run's journal (their events come
    /// again, as they happened), and the run goes on live where it stopped.
    #[serde(rename = "run.resumed")]
    RunResumed {
        /// The interrupted run's id.
        from: String,
        /// The contexts it left unfinished (the root as `0`), which go on where they
        /// stopped.
        unfinished: Vec<String>,
        /// The tool calls it finished, answered from its journal.
        calls: u32,
    },
    /// This run is a fork of another at one of its responses: right after
    /// `session.started`. The other run's responses before that point are served from its
    /// journal (their tool calls run again), and the run goes on live from there.
    #[serde(rename = "run.forked")]
    RunForked {
        /// The run forked.
        from: String,
        /// Where: `CONTEXT:RESPONSE`, the first response asked of the model.
        at: String,
    },
    /// The run was stopped (a signal, Ctrl-C) before its prompt's turn ended: the last
    /// event before the process exits. `wonopcode resume RUN_ID` goes on from here.
    #[serde(rename = "run.interrupted")]
    RunInterrupted {
        /// The run's id, when it is journaled (else it cannot be resumed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
    },
    /// An MCP server the user declared could not be started (or listed no usable tools):
    /// its tools are absent from the run. Reported once, right after `session.started`.
    #[serde(rename = "mcp.server_failed")]
    McpServerFailed {
        /// The server's name in the config (or `--mcp`).
        server: String,
        /// Why, in one line.
        error: String,
    },
    /// The instruction files (`AGENTS.md`, `CLAUDE.md`: the person's and the project's) told
    /// to every context of the run, after its own system prompt. Right after
    /// `session.started`, when any were found.
    #[serde(rename = "project_instructions.loaded")]
    ProjectInstructionsLoaded {
        /// The files in the order told (the person's, then the project's outermost first):
        /// relative to the workspace when inside it.
        files: Vec<String>,
        /// Whether they were longer than wonopcode tells (32 KiB) and were cut.
        truncated: bool,
    },
    /// Between prompts, the guest loop's file changed on disk and its new version was
    /// validated and loaded (hot reload). The history carries over; the guest's own state
    /// (key/value pairs, custom tools) starts afresh with `on-start`.
    #[serde(rename = "loop.reloaded")]
    LoopReloaded {
        /// The new version's loop name.
        loop_name: String,
        /// The file it was loaded from.
        module: String,
        /// SHA-256 of the new version, hex.
        sha256: String,
    },
    /// A sub-context was spawned; the event's `context` is the child's path, whose parent
    /// is the path without its last number.
    #[serde(rename = "context.started")]
    ContextStarted {
        /// The child's loop name (a guest's `get-name`, or `standard`).
        module: String,
        /// The task the parent gave it.
        task: String,
        /// In a resumed run: this context had started in the interrupted run and not ended,
        /// and goes on where it stopped (what it had done comes from the journal).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        resumed: bool,
    },
    /// A sub-context ended; its parent goes on whatever the status.
    #[serde(rename = "context.completed")]
    ContextCompleted {
        /// The child's loop name.
        module: String,
        /// How it ended.
        status: ContextStatus,
        /// One line saying what went wrong, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Wall time from spawn to end.
        duration_ms: u64,
        /// Model requests the child itself made (its own children report theirs).
        #[serde(default)]
        requests: u32,
        /// Tokens and cost of the child and all its descendants.
        usage: Usage,
        /// Files the child's tools (and its descendants') wrote or edited, relative to the
        /// workspace.
        modified_files: Vec<String>,
    },
    /// One model response ended (a compaction's summary is not reported): which model gave
    /// it, its usage and cost, how long it took from the request, and why it stopped.
    #[serde(rename = "response.completed")]
    ResponseCompleted {
        /// The provider.
        provider: String,
        /// The model.
        model: String,
        /// Tokens and cost of this response.
        usage: Usage,
        /// From the request to the end of the stream.
        duration_ms: u64,
        /// From the request to the stream's first chunk (time to first token); absent when
        /// nothing streamed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_chunk_ms: Option<u64>,
        /// Why the model stopped, when it said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<crate::model::StopReason>,
        /// What went wrong, when the response failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A model request failed before the model said anything and is tried again after a
    /// wait (rate limit, overload, server error, dropped connection).
    #[serde(rename = "model.retry")]
    ModelRetry {
        /// The attempt about to be made (2 for the first retry).
        attempt: u32,
        /// The wait before it, in milliseconds.
        delay_ms: u64,
        /// Why the previous attempt failed.
        reason: String,
    },
    /// A user prompt starts being processed.
    #[serde(rename = "turn.started")]
    TurnStarted,
    /// The prompt was processed; `status` says how it ended.
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        /// `complete`, `suspended` or `max_iterations`.
        status: LoopStatus,
        /// Model requests made.
        iterations: u32,
        /// Tokens and cost of this turn.
        usage: Usage,
        /// When `suspended`: the calls the run waits on, each in the context that made it (a
        /// child's suspension suspends its parents up to the root).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pending: Vec<PendingCall>,
    },
    /// The prompt could not be processed.
    #[serde(rename = "turn.failed")]
    TurnFailed {
        /// `error` or `cancelled`.
        status: LoopStatus,
        /// One line saying what went wrong.
        error: String,
        /// Model requests made.
        iterations: u32,
        /// Tokens and cost spent before the failure.
        usage: Usage,
    },
    /// An item (message, reasoning, tool call, todo list, error) begins.
    #[serde(rename = "item.started")]
    ItemStarted {
        /// The item as it is now.
        item: Item,
    },
    /// Streamed text of an `agent_message` or `reasoning` item.
    #[serde(rename = "item.delta")]
    ItemDelta {
        /// The item the text belongs to.
        item_id: String,
        /// The new text only.
        text: String,
    },
    /// An item changed (a todo list was rewritten, a tool call's status moved, a running
    /// command printed more: the engine's `live_output`).
    #[serde(rename = "item.updated")]
    ItemUpdated {
        /// The whole item as it is now.
        item: Item,
    },
    /// An item is final.
    #[serde(rename = "item.completed")]
    ItemCompleted {
        /// The whole final item.
        item: Item,
    },
    /// A message was added to the history; consumers persist these.
    #[serde(rename = "message.created")]
    MessageCreated {
        /// The message.
        message: Message,
    },
    /// The history was compacted; it now holds exactly `messages`.
    #[serde(rename = "context.compacted")]
    ContextCompacted {
        /// `prune_tool_outputs` or `summarize`; `clear` when the user started the
        /// conversation afresh; `withdraw` when a prompt the model never answered was taken
        /// out; `rewind` when the person took the conversation back to before a prompt.
        strategy: String,
        /// Estimated tokens before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
        /// The whole history after compaction.
        messages: Vec<Message>,
    },
}

/// Status of an item with a lifetime (tool calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Running.
    InProgress,
    /// Finished successfully.
    Completed,
    /// Finished with an error (the model is told).
    Failed,
    /// Not run: denied by the permission policy.
    Declined,
}

/// A unit of work shown to the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Item {
    /// Id unique within its context (`item_0`, `item_1`, ...).
    pub id: String,
    /// The item's kind and details.
    #[serde(flatten)]
    pub details: ItemDetails,
}

/// The kinds of items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ItemDetails {
    /// Text the model addressed to the user.
    AgentMessage {
        /// The text (complete on `item.completed`, empty on `item.started`).
        text: String,
    },
    /// Text the person sent into the running turn (steering): added to the history as a
    /// user message just before the next model request.
    UserMessage {
        /// The text, as typed (several sends before one request are joined by blank lines).
        text: String,
    },
    /// The model's visible reasoning.
    Reasoning {
        /// The text (complete on `item.completed`, empty on `item.started`).
        text: String,
    },
    /// A tool call.
    ToolCall(ToolCallItem),
    /// A call of an MCP server's tool: a tool call whose `server` and `tool` say which.
    McpToolCall(ToolCallItem),
    /// The model's todo list.
    TodoList {
        /// The items in order.
        items: Vec<TodoItem>,
    },
    /// A non-fatal error shown to the user.
    Error {
        /// One line.
        message: String,
    },
    /// What a loop says it is doing (a guest's `ui.show-progress`): started when it first
    /// says so, updated as it goes on, completed when it hides it or its run ends.
    Progress {
        /// What it is doing, one line.
        message: String,
        /// How far along, from 0 to 1, when it says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fraction: Option<f32>,
    },
    /// Something a loop or the host tells the user (a guest's `ui.show-message` at level
    /// info; an MCP server still starting as a turn begins).
    Info {
        /// One line.
        message: String,
    },
    /// One hook that ran (`docs/hooks.md`): what it was asked and what it said.
    Hook(HookItem),
    /// A warning of the host's about the run: a setting it could not honour, a file, hook
    /// or server it skipped (the lines the terminal prints as `warning:`), so that what
    /// reads the events sees them too.
    Diagnostic {
        /// One line.
        message: String,
    },
}

/// Details of a hook item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookItem {
    /// The event it ran on (`PreToolUse`, `Stop`, ...: `docs/hooks.md`).
    pub event: String,
    /// The hook: its command as configured.
    pub hook: String,
    /// The tool call it was asked about, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// That call's tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What it decided.
    pub decision: HookVerdict,
    /// Why, when it said (or how it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long it ran.
    pub duration_ms: u64,
}

/// What one hook decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookVerdict {
    /// It ran and had no say.
    None,
    /// The call runs without anyone being asked.
    Allow,
    /// The call does not run.
    Deny,
    /// The permission rules decide, as if the hook had not spoken.
    Ask,
    /// The call runs with the arguments the hook gave.
    Rewrite,
    /// Feedback for the model after the call (`PostToolUse`).
    Block,
    /// It crashed, hung or printed what could not be read; its failure mode applied.
    Failed,
}

impl ItemDetails {
    /// The call, for a tool call of any kind (built-in, guest's own, MCP).
    pub fn tool_call(&self) -> Option<&ToolCallItem> {
        match self {
            Self::ToolCall(call) | Self::McpToolCall(call) => Some(call),
            _ => None,
        }
    }

    /// `item` as the tool call it is: an `mcp_tool_call` when it names a server.
    pub fn for_call(item: ToolCallItem) -> Self {
        if item.server.is_some() {
            Self::McpToolCall(item)
        } else {
            Self::ToolCall(item)
        }
    }
}

/// Details of a tool-call item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallItem {
    /// The model's call id.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// Arguments as the model sent them.
    pub arguments: String,
    /// Where the call is.
    pub status: ItemStatus,
    /// Output given to the model (after truncation), once finished; while a command runs,
    /// the last lines it printed so far (the engine's `live_output`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Wall time, once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// For process tools: the command and its exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandDetails>,
    /// For file-writing tools: what changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_change: Option<FileChange>,
    /// For tools that change several files at once (`apply_patch`): each change, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_changes: Vec<FileChange>,
    /// For an MCP tool: the server, as named in the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// For an MCP tool: its name on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

impl ToolCallItem {
    /// A call of `name` with `arguments` as it starts: in progress, nothing known of its end.
    pub fn in_progress(call_id: String, name: String, arguments: String) -> Self {
        Self {
            call_id,
            name,
            arguments,
            status: ItemStatus::InProgress,
            output: None,
            duration_ms: None,
            command: None,
            file_change: None,
            file_changes: Vec::new(),
            server: None,
            tool: None,
        }
    }

    /// Every file the call changed, whichever of the two fields holds them.
    pub fn changes(&self) -> impl Iterator<Item = &FileChange> {
        self.file_change.iter().chain(&self.file_changes)
    }
}

/// A command a tool ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandDetails {
    /// The command line.
    pub command: String,
    /// Exit code, when the process exited on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The sandbox mode it ran under (`read-only`, `workspace-write`, `full-access`); absent
    /// when the embedder runs commands without a sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// What the sandbox denied it, when it failed because of that (`write to /x denied
    /// (...)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

/// A file a tool changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    /// Path relative to the workspace root.
    pub path: String,
    /// `add` for a new file, `update` for an existing one, `delete` for a removed one (a
    /// moved file is the old path deleted and the new one added or updated).
    pub kind: FileChangeKind,
    /// The change as a unified diff (`---`/`+++` headers, 3 lines of context), when the tool
    /// had the file's text before and after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    /// Created.
    Add,
    /// Modified.
    Update,
    /// Removed.
    Delete,
}

/// One entry of a todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    /// What to do.
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: TodoStatus,
}

/// State of a todo entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// Where events go. Implemented by channels, renderers and test collectors.
pub trait EventSink: Send + Sync {
    /// Delivers one event. Must not block for long: loops call it while streaming.
    fn emit(&self, event: Event);
}

impl EventSink for tokio::sync::mpsc::UnboundedSender<Event> {
    fn emit(&self, event: Event) {
        // A closed receiver means nobody listens any more; the run goes on regardless.
        let _ = self.send(event);
    }
}

/// A sink that drops everything (benchmarks, embedders without a UI).
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: Event) {}
}

/// Stamps events with a context path and the time, and hands out item ids.
#[derive(Clone)]
pub struct Emitter {
    sink: Arc<dyn EventSink>,
    context: ContextPath,
    next_item: Arc<AtomicU64>,
}

impl Emitter {
    /// An emitter for `context` writing to `sink`.
    pub fn new(sink: Arc<dyn EventSink>, context: ContextPath) -> Self {
        Self {
            sink,
            context,
            next_item: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Where this emitter writes, so a child context's emitter can forward to it.
    pub fn sink(&self) -> &Arc<dyn EventSink> {
        &self.sink
    }

    /// The context this emitter stamps.
    pub fn context(&self) -> &ContextPath {
        &self.context
    }

    /// Emits an event now.
    pub fn emit(&self, kind: EventKind) {
        self.sink.emit(Event {
            context: self.context.clone(),
            ts: now_rfc3339(),
            kind,
        });
    }

    /// A fresh item id, unique within this context.
    pub fn next_item_id(&self) -> String {
        format!("item_{}", self.next_item.fetch_add(1, Ordering::Relaxed))
    }
}

/// The current time as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    rfc3339_of(SystemTime::now())
}

/// `at` as an RFC 3339 UTC timestamp with milliseconds.
pub fn rfc3339_of(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_with_dotted_type_and_flat_item() {
        let event = Event {
            context: ContextPath::root(),
            ts: "2026-01-01T00:00:00.000Z".into(),
            kind: EventKind::ItemCompleted {
                item: Item {
                    id: "item_0".into(),
                    details: ItemDetails::AgentMessage { text: "hi".into() },
                },
            },
        };
        let line = event.to_json_line().unwrap();
        assert_eq!(
            line,
            r#"{"context":"0","ts":"2026-01-01T00:00:00.000Z","type":"item.completed","item":{"id":"item_0","kind":"agent_message","text":"hi"}}"#
        );
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, event);
    }
}
