//! How a run ended, and the wrapper that turns any `AgentLoop`'s
//! `Result<String, LoopError>` into one, emitting the turn lifecycle events.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use crate::agent::{AgentLoop, LoopContext, LoopError, PendingCall, RunStats};
use crate::event::EventKind;
use crate::usage::Usage;

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

/// The outcome of one prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopResult {
    /// How it ended.
    pub status: LoopStatus,
    /// The final response, when complete.
    pub response: Option<String>,
    /// One line saying what went wrong, when it did.
    pub error: Option<String>,
    /// Calls waiting for answers, when suspended.
    pub pending: Vec<PendingCall>,
    /// Tokens and cost of this run.
    pub usage: Usage,
    /// Model requests made.
    pub iterations: u32,
}

impl LoopResult {
    /// Classifies a loop's return value.
    pub fn from_outcome(outcome: Result<String, LoopError>, stats: RunStats) -> Self {
        let base = Self {
            status: LoopStatus::Complete,
            response: None,
            error: None,
            pending: Vec::new(),
            usage: stats.usage,
            iterations: stats.iterations,
        };
        match outcome {
            Ok(response) => Self {
                response: Some(response),
                ..base
            },
            Err(LoopError::Suspended { pending, reason }) => Self {
                status: LoopStatus::Suspended,
                pending,
                error: Some(reason),
                ..base
            },
            Err(e @ LoopError::MaxIterations { .. }) => Self {
                status: LoopStatus::MaxIterations,
                error: Some(e.to_string()),
                ..base
            },
            Err(e @ LoopError::BudgetExceeded(_)) => Self {
                status: LoopStatus::BudgetExceeded,
                error: Some(e.to_string()),
                ..base
            },
            Err(LoopError::Cancelled) => Self {
                status: LoopStatus::Cancelled,
                error: Some("cancelled".to_owned()),
                ..base
            },
            Err(e) => Self {
                status: LoopStatus::Error,
                error: Some(e.to_string()),
                ..base
            },
        }
    }
}

/// Runs one prompt through any loop: emits `turn.started`, calls `run_prompt`, then
/// `on_complete` or `on_cancel`, and emits `turn.completed` or `turn.failed`.
pub async fn run_turn(
    agent: &dyn AgentLoop,
    ctx: &mut LoopContext<'_>,
    user_input: &str,
) -> LoopResult {
    ctx.stats = RunStats::default();
    ctx.events.emit(EventKind::TurnStarted);
    let span = turn_span(agent, ctx);
    let outcome = agent.run_prompt(ctx, user_input).instrument(span).await;
    finish_turn(agent, ctx, outcome).await
}

/// Continues a suspended run through any loop, with the same events as `run_turn`.
pub async fn resume_turn(
    agent: &dyn AgentLoop,
    ctx: &mut LoopContext<'_>,
    answers: Vec<(String, String, bool)>,
) -> LoopResult {
    ctx.stats = RunStats::default();
    ctx.events.emit(EventKind::TurnStarted);
    let span = turn_span(agent, ctx);
    let outcome = agent.resume(ctx, answers).instrument(span).await;
    finish_turn(agent, ctx, outcome).await
}

fn turn_span(agent: &dyn AgentLoop, ctx: &LoopContext<'_>) -> tracing::Span {
    let context = ctx.events.context();
    tracing::info_span!("turn", context = %context, depth = context.depth(), session = %ctx.session_id, agent_loop = agent.name())
}

async fn finish_turn(
    agent: &dyn AgentLoop,
    ctx: &mut LoopContext<'_>,
    mut outcome: Result<String, LoopError>,
) -> LoopResult {
    // A cancelled run is reported cancelled even when its loop went on to return (a guest
    // whose refused host calls it took as answers): the person asked it to stop.
    if outcome.is_ok() && ctx.cancel.is_cancelled() {
        outcome = Err(LoopError::Cancelled);
    }
    match &outcome {
        Ok(text) => {
            let text = text.clone();
            if let Err(e) = agent.on_complete(ctx, &text).await {
                outcome = Err(e);
            }
        }
        Err(LoopError::Cancelled) => {
            if let Err(e) = agent.on_cancel(ctx).await {
                tracing::warn!(error = %e, "on_cancel failed");
            }
        }
        Err(_) => {}
    }
    let result = LoopResult::from_outcome(outcome, ctx.stats);
    tracing::info!(context = %ctx.events.context(), status = ?result.status, iterations = result.iterations, tokens = result.usage.total_tokens(), "turn finished");
    match result.status {
        LoopStatus::Complete | LoopStatus::Suspended | LoopStatus::MaxIterations => {
            ctx.events.emit(EventKind::TurnCompleted {
                status: result.status,
                iterations: result.iterations,
                usage: result.usage,
            });
        }
        LoopStatus::Error | LoopStatus::Cancelled | LoopStatus::BudgetExceeded => {
            ctx.events.emit(EventKind::TurnFailed {
                status: result.status,
                error: result.error.clone().unwrap_or_default(),
                iterations: result.iterations,
                usage: result.usage,
            });
        }
    }
    result
}
