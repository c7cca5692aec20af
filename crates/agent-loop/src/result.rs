//! How a run ended, and the wrapper that turns any `AgentLoop`'s
//! `Result<String, LoopError>` into one, emitting the turn lifecycle events.

use serde::{Deserialize, Serialize};
use tracing::Instrument;

use wonopcode_protocol::event::EventKind;
use wonopcode_protocol::status::LoopStatus;
use wonopcode_protocol::usage::Usage;
use wonopcode_protocol::{LoopError, PendingCall};

use crate::agent::{AgentLoop, LoopContext, RunStats};
use crate::hook::{HookSite, MAX_STOP_BLOCKS, TurnEvent};

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

/// Runs one prompt through any loop: emits `turn.started`, asks the hooks about the prompt,
/// calls `run_prompt` (again, with their reason, while a hook will not let the turn stop),
/// then `on_complete` or `on_cancel`, and emits `turn.completed` or `turn.failed`.
pub async fn run_turn(
    agent: &dyn AgentLoop,
    ctx: &mut LoopContext<'_>,
    user_input: &str,
) -> LoopResult {
    ctx.stats = RunStats::default();
    ctx.events.emit(EventKind::TurnStarted);
    let span = turn_span(agent, ctx);
    let hooks = ctx.shared.hooks.clone();
    let Some(hooks) = hooks else {
        let outcome = agent.run_prompt(ctx, user_input).instrument(span).await;
        return finish_turn(agent, ctx, outcome).await;
    };
    let said = hooks
        .turn_event(
            &site_of(ctx),
            TurnEvent::PromptSubmitted { prompt: user_input },
        )
        .await;
    if let Some(reason) = said.block {
        // The prompt never reaches the history, as Claude Code erases a blocked prompt.
        let refused = LoopError::PermissionDenied(format!("a hook blocked the prompt: {reason}"));
        return finish_turn(agent, ctx, Err(refused)).await;
    }
    let input = match said.context {
        Some(context) => format!("{user_input}\n\n{context}"),
        None => user_input.to_owned(),
    };
    let mut outcome = agent.run_prompt(ctx, &input).instrument(span.clone()).await;
    for again in 0..MAX_STOP_BLOCKS {
        let Ok(answer) = &outcome else { break };
        let event = TurnEvent::Stopped {
            answer,
            again: again > 0,
        };
        let Some(reason) = hooks.turn_event(&site_of(ctx), event).await.block else {
            break;
        };
        outcome = agent
            .run_prompt(ctx, &reason)
            .instrument(span.clone())
            .await;
    }
    finish_turn(agent, ctx, outcome).await
}

/// Where the hooks of a context's turn fire.
fn site_of<'a>(ctx: &'a LoopContext<'_>) -> HookSite<'a> {
    HookSite::new(
        ctx.events,
        &ctx.session_id,
        ctx.cwd,
        ctx.config.agent_name(),
    )
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
                pending: result.pending.clone(),
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
