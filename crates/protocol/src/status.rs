//! How a run and a sub-context end, why a run did not complete, and the tool calls a
//! suspended run waits on: the words every loop, front-end and journal uses for an ending.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context_path::ContextPath;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoopStatus {
    /// The model gave its answer.
    Complete,
    /// Waiting on answers to pending tool calls.
    Suspended,
    /// Failed.
    Error,
    /// The iteration limit was reached.
    MaxIterations,
    /// Cancelled by the user or a parent.
    Cancelled,
    /// A limit of the run's budget (`--max-cost`, `--max-tokens`, `--max-wall`) would have
    /// been passed by the next request, which was not sent.
    BudgetExceeded,
}

/// How a sub-context ended: the WIT's `context-status`, plus `suspended`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextStatus {
    /// The child gave its answer.
    Completed,
    /// Cancelled by its parent or the user.
    Cancelled,
    /// Its `max-iterations` was reached.
    MaxIterationsReached,
    /// Its `max-tokens` (counted over it and its descendants) was reached.
    TokenLimitReached,
    /// Its `timeout-ms` passed.
    Timeout,
    /// It failed: a trap, a guest error, a provider error.
    Error,
    /// It waits for an answer to a tool call (the WIT `context-status` of 0.2.x has no such
    /// case: a guest sees `error("suspended: ...")`, naming the calls it waits on).
    Suspended,
    /// The run's budget would have been passed by its next request (a guest sees
    /// `error("budget exceeded: ...")`, naming the limit).
    BudgetExceeded,
}

impl ContextStatus {
    /// The status as it is written in events and the summary tree.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::MaxIterationsReached => "max_iterations_reached",
            Self::TokenLimitReached => "token_limit_reached",
            Self::Timeout => "timeout",
            Self::Error => "error",
            Self::Suspended => "suspended",
            Self::BudgetExceeded => "budget_exceeded",
        }
    }
}

/// A tool call a suspended run is waiting on: in the run's own context, or in a child
/// context whose suspension suspended the run (the call that asked, wherever it is in the
/// tree, so the person's answer goes to it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PendingCall {
    /// The context whose call it is.
    #[serde(default = "ContextPath::root")]
    pub context: ContextPath,
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model sent them.
    pub arguments: String,
}

/// Why a run did not complete, including the two endings that are not failures
/// (`Suspended`, `MaxIterations`), so that `run_prompt` keeps its
/// `Result<String, LoopError>` signature (see `docs/decisions.md`).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LoopError {
    /// The model provider failed.
    #[error("provider error: {0}")]
    Provider(String),
    /// A tool failed in a way the loop could not hand back to the model.
    #[error("tool execution failed: {0}")]
    ToolExecution(String),
    /// A permission was refused and the run cannot go on.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The model repeated the same call.
    #[error("doom loop detected: {0}")]
    DoomLoop(String),
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The conversation no longer fits the model.
    #[error("context limit exceeded")]
    ContextLimitExceeded,
    /// The run stopped to wait for answers to these calls; `resume` continues it.
    #[error("suspended: {reason}")]
    Suspended {
        /// The calls without answers.
        pending: Vec<PendingCall>,
        /// Why.
        reason: String,
    },
    /// The iteration limit was reached while the model still wanted tools.
    #[error("reached the limit of {limit} iterations")]
    MaxIterations {
        /// The limit.
        limit: u32,
    },
    /// A limit of the run's budget would have been passed by the next request, which was
    /// not sent; the message names the limit.
    #[error("budget exceeded: {0}")]
    BudgetExceeded(String),
    /// The loop does not implement this operation.
    #[error("not supported by this loop: {0}")]
    Unsupported(String),
    /// A guest loop failed on its own (it trapped, or did not return in time): its fault,
    /// not wonopcode's; the message names the guest.
    #[error("{0}")]
    Guest(String),
    /// A bug or an unexpected state.
    #[error("internal error: {0}")]
    Internal(String),
}

impl LoopError {
    /// The message without the `provider error: ` its display puts before a provider's
    /// failure: what a guest hears from a failed stream, so that a guest passing it on as
    /// its own `provider-error` is not reported as `provider error: provider error: ...`.
    pub fn detail(&self) -> String {
        match self {
            Self::Provider(message) => message.clone(),
            other => other.to_string(),
        }
    }
}
