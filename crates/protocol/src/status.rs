//! How a run and a sub-context end, and the tool calls a suspended run waits on: the words
//! every loop, front-end and journal uses for an ending.

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

