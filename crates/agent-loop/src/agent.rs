//! The `AgentLoop` trait, the context a loop runs in, and its errors.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use wonopcode_protocol::event::Emitter;
use wonopcode_protocol::message::{Message, Part};
use wonopcode_protocol::model::{RequestOptions, SharedModel};
use wonopcode_protocol::permission::SharedGate;
use wonopcode_protocol::status::LoopError;
use wonopcode_protocol::usage::Usage;

use crate::compaction::CompactionConfig;
use crate::shared::RunShared;
use crate::tool_registry::ToolRegistry;

/// What a loop implementation supports, the WIT's sub-context and custom-tool flags
/// included.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopCapabilities {
    /// Streams responses.
    pub streaming: bool,
    /// Handles extended thinking.
    pub extended_thinking: bool,
    /// Runs several tool calls at once.
    pub parallel_tools: bool,
    /// Shows tool results to the user before continuing.
    pub tool_observation: bool,
    /// Largest context it handles (0 = unlimited).
    pub max_context: usize,
    /// Compacts long conversations by itself.
    pub auto_compaction: bool,
    /// Spawns child contexts.
    pub supports_sub_contexts: bool,
    /// Registers its own tools.
    pub supports_custom_tools: bool,
    /// Anything else, for extensions.
    pub custom: HashMap<String, String>,
}

/// Settings of one loop run: its limits and options, which a child narrows. What every
/// context of the run shares (hooks, hidden paths, checkpoints, …) is [`RunShared`], beside
/// it.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// Model requests allowed per prompt (default 50).
    pub max_iterations: u32,
    /// Identical consecutive tool calls that count as a doom loop (default 3).
    pub doom_loop_threshold: usize,
    /// System prompt sent with every request.
    pub system_prompt: Option<String>,
    /// Generation options.
    pub request: RequestOptions,
    /// When and how to compact.
    pub compaction: CompactionConfig,
    /// Longest wait for the next chunk of a model stream.
    pub stream_idle_timeout: std::time::Duration,
    /// What every context of the run is told besides its own system prompt (the project's
    /// `AGENTS.md`, the skills it may load): appended to the system prompt of each request,
    /// so a child that brings its own prompt still gets it.
    pub instructions: Option<std::sync::Arc<str>>,
    /// The loop or agent this context runs (a module's, an agent file's or a loop's name),
    /// as hooks are told it; `None`: not named.
    pub agent: Option<std::sync::Arc<str>>,
}

impl LoopConfig {
    /// The name hooks are told for this context (empty when it has none).
    pub fn agent_name(&self) -> &str {
        self.agent.as_deref().unwrap_or_default()
    }

    /// Adds `text` to what every request is told after its own system prompt (a hook's
    /// `additionalContext` at a session's or a child's start).
    pub fn add_instructions(&mut self, text: &str) {
        self.instructions = Some(match &self.instructions {
            Some(own) => format!("{own}\n\n{text}").into(),
            None => text.into(),
        });
    }

    /// The system prompt of a request whose own is `own`: it, then the run's instructions.
    pub fn system_for(&self, own: Option<String>) -> Option<String> {
        match (own, &self.instructions) {
            (own, None) => own,
            (None, Some(added)) => Some(added.to_string()),
            (Some(own), Some(added)) => Some(format!("{own}\n\n{added}")),
        }
    }
}

impl Default for LoopConfig {
    fn default() -> Self {
        Self {
            max_iterations: 50,
            doom_loop_threshold: 3,
            system_prompt: None,
            request: RequestOptions::default(),
            compaction: CompactionConfig::default(),
            stream_idle_timeout: std::time::Duration::from_secs(300),
            instructions: None,
            agent: None,
        }
    }
}

/// Counters a loop keeps while it runs; the caller reads them into the `LoopResult`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Tokens and cost so far.
    pub usage: Usage,
    /// Model requests made so far.
    pub iterations: u32,
}

/// Everything a loop needs to run a prompt. The loop never writes storage: it changes
/// `messages` and emits `message.created` events, and the consumer persists them.
pub struct LoopContext<'a> {
    /// Workspace root (canonical); file tools are confined to it.
    pub cwd: &'a Path,
    /// Conversation history.
    pub messages: &'a mut Vec<Message>,
    /// The model.
    pub provider: &'a SharedModel,
    /// Available tools.
    pub tools: &'a ToolRegistry,
    /// Permission policy.
    pub permissions: &'a SharedGate,
    /// Limits and options.
    pub config: &'a LoopConfig,
    /// What every context of the run shares (hooks, hidden paths, checkpoints, …).
    pub shared: Arc<RunShared>,
    /// Cancels the run, its stream and its tools.
    pub cancel: &'a CancellationToken,
    /// Where events go, stamped with this context's path.
    pub events: &'a Emitter,
    /// Session id.
    pub session_id: String,
    /// Counters of the current run.
    pub stats: RunStats,
    /// Images and documents attached to this turn's prompt: the run puts them in the
    /// prompt's message (`Run::push_message`), for the native loop and guests alike.
    pub attachments: Vec<Part>,
    /// Text the person sends into the running turn, taken before its next model request
    /// (`crate::steering`); a child context's is its own, and stays empty.
    pub steering: crate::Steering,
}

/// An agent loop: the strategy that turns a prompt into model requests and tool calls.
/// Implemented natively by `StandardLoop` and, in the WebAssembly host, by guest components.
#[async_trait]
pub trait AgentLoop: Send + Sync {
    /// Executes a single prompt, returning the final response. Non-complete endings are
    /// `LoopError::Suspended`, `LoopError::MaxIterations` and `LoopError::Cancelled`.
    async fn run_prompt(
        &self,
        ctx: &mut LoopContext<'_>,
        user_input: &str,
    ) -> Result<String, LoopError>;

    /// Called when the loop starts (before the first prompt).
    async fn on_start(&self, _ctx: &mut LoopContext<'_>) -> Result<(), LoopError> {
        Ok(())
    }

    /// Called when a prompt completes successfully.
    async fn on_complete(
        &self,
        _ctx: &mut LoopContext<'_>,
        _result: &str,
    ) -> Result<(), LoopError> {
        Ok(())
    }

    /// Called when a prompt is cancelled.
    async fn on_cancel(&self, _ctx: &mut LoopContext<'_>) -> Result<(), LoopError> {
        Ok(())
    }

    /// Name of this loop implementation.
    fn name(&self) -> &'static str;

    /// Capabilities of this loop implementation.
    fn capabilities(&self) -> LoopCapabilities {
        LoopCapabilities::default()
    }

    /// A value the loop's last run left in its key/value state (a guest's `storage.set-state`),
    /// such as `__result_data__`, its result's structured data; `None` when there is none or
    /// the loop keeps no such state.
    fn state_value(&self, _key: &str) -> Option<String> {
        None
    }

    /// Continues a suspended run. `answers` are tool results for pending calls (as
    /// `(call_id, content, is_error)`); pending calls without an answer are executed now.
    async fn resume(
        &self,
        _ctx: &mut LoopContext<'_>,
        _answers: Vec<(String, String, bool)>,
    ) -> Result<String, LoopError> {
        Err(LoopError::Unsupported(format!(
            "`{}` cannot resume a suspended run",
            self.name()
        )))
    }
}
