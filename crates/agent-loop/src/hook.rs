//! Hooks: the user's own code at fixed points of a run — when a prompt is submitted, before
//! a tool call runs, after it ran, when a turn would stop. The run asks them there, in every
//! context of the tree and whichever loop drives it (the turn and the tool round are the
//! run's, so a guest's calls and a child's pass the same places). What
//! a hook is (a command, a component) and how hooks are matched and combined belongs to the
//! implementation (`crates/hooks`); the loop only needs the answers.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use crate::context_path::ContextPath;
use crate::event::Emitter;
use crate::permission::{PermissionDecision, PermissionGate, PermissionRequest, PermissionStatus};
use crate::tool_round::Call;

/// Where a hook fires: which context, in which session and workspace, and where to report
/// each hook that ran (a `hook` item).
#[derive(Clone, Copy)]
pub struct HookSite<'a> {
    /// The context the call belongs to (`0.1.2`).
    pub context: &'a ContextPath,
    /// The context's events.
    pub events: &'a Emitter,
    /// The session's id.
    pub session_id: &'a str,
    /// The workspace the run works in.
    pub cwd: &'a Path,
}

impl<'a> HookSite<'a> {
    /// The site of the context `events` reports for.
    pub fn new(events: &'a Emitter, session_id: &'a str, cwd: &'a Path) -> Self {
        Self {
            context: events.context(),
            events,
            session_id,
            cwd,
        }
    }
}

/// What the `PreToolUse` hooks made of a call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreToolUse {
    /// Arguments to run the call with instead of the model's (`updatedInput`).
    pub arguments: Option<String>,
    /// What they decided; `None`: the permission rules decide as always.
    pub decision: Option<HookDecision>,
}

/// A hook's say over a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Run it without asking anyone; the user's deny rules still hold.
    Allow,
    /// Do not run it; the model is told why.
    Deny(String),
}

/// What the `PostToolUse` hooks said about a finished call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PostToolUse {
    /// Told to the model after the call's output (`decision: block` with its reason, or a
    /// hook's exit-2 stderr).
    pub feedback: Option<String>,
}

/// A point of a run, besides its tool calls, where hooks are asked.
#[derive(Debug, Clone, Copy)]
pub enum TurnEvent<'a> {
    /// The session started (`SessionStart`), at the root, before its first prompt.
    SessionStarted {
        /// `startup`, or `resume` when it goes on from a history.
        source: &'a str,
        /// The model it answers with.
        model: &'a str,
    },
    /// A child context starts its first turn (`SubagentStart`).
    SubagentStarted {
        /// The module or agent it runs.
        agent_type: &'a str,
    },
    /// A prompt is about to run: the root's prompt, or a child's task or follow-up
    /// (`UserPromptSubmit`).
    PromptSubmitted {
        /// The prompt as given.
        prompt: &'a str,
    },
    /// The context's turn answered (`Stop` at the root, `SubagentStop` in a child).
    Stopped {
        /// The answer.
        answer: &'a str,
        /// Whether a hook already sent this turn on once (Claude Code's
        /// `stop_hook_active`): a hook that always objects must let it end some time.
        again: bool,
    },
}

/// What the hooks said about a [`TurnEvent`]: `block` is heeded on a prompt and a stop,
/// `context` on a prompt (added to it) and at a session's or a child's start (added to what
/// the context is told besides its system prompt).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TurnAnswer {
    /// Why the prompt must not run, or (on `Stopped`) what the context must do before it
    /// may stop: `decision: block` with its reason, or a hook's exit-2 stderr.
    pub block: Option<String>,
    /// Added to the prompt for the model (`additionalContext`, or the plain text a
    /// `UserPromptSubmit` hook printed).
    pub context: Option<String>,
}

/// The hooks of a run, asked at each tool call and turn of each context.
#[async_trait]
pub trait Hooks: Send + Sync + std::fmt::Debug {
    /// Asked before `call` runs (and before anyone is asked to approve it).
    async fn pre_tool_use(&self, site: &HookSite<'_>, call: &Call) -> PreToolUse;

    /// Asked after `call` ran, with what it answered.
    async fn post_tool_use(
        &self,
        site: &HookSite<'_>,
        call: &Call,
        output: &str,
        is_error: bool,
    ) -> PostToolUse;

    /// Asked at a point of a context's turn.
    async fn turn_event(&self, site: &HookSite<'_>, event: TurnEvent<'_>) -> TurnAnswer;
}

/// How many times hooks may send one turn on before it ends anyway.
pub const MAX_STOP_BLOCKS: usize = 3;

/// The hooks a run (and every context under it) asks.
pub type SharedHooks = Arc<dyn Hooks>;

/// The permission gate of a call a hook allowed: nobody is asked, but what the user's rules
/// deny stays denied.
pub struct HookAllowed<'a>(pub &'a dyn PermissionGate);

#[async_trait]
impl PermissionGate for HookAllowed<'_> {
    async fn decide(&self, request: &PermissionRequest) -> PermissionDecision {
        match self.0.status(request) {
            PermissionStatus::Denied => self.0.decide(request).await,
            PermissionStatus::Allowed | PermissionStatus::NeedsApproval => {
                PermissionDecision::Allow
            }
        }
    }

    fn status(&self, request: &PermissionRequest) -> PermissionStatus {
        match self.0.status(request) {
            PermissionStatus::Denied => PermissionStatus::Denied,
            PermissionStatus::Allowed | PermissionStatus::NeedsApproval => {
                PermissionStatus::Allowed
            }
        }
    }

    async fn escalate(&self, tool: &str, subject: &str, blocked: &str) -> bool {
        self.0.escalate(tool, subject, blocked).await
    }

    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool {
        self.0.confirm_repetition(tool, count).await
    }
}
