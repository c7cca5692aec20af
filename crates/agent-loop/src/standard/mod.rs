//! `StandardLoop`: the native loop. Stream, assemble, run tools (in parallel where safe),
//! feed results back, repeat until the model answers; with doom-loop detection, fail-open
//! tool errors, cancellation, suspension and compaction.

use async_trait::async_trait;
use tracing::Instrument;

use crate::agent::{AgentLoop, LoopCapabilities, LoopContext, LoopError, PendingCall};
use crate::assemble::{AssembledTurn, stream_request as request_stream};
use crate::compaction::Compactor;
use crate::doom_loop::DoomLoopDetector;
use crate::event::{Emitter, EventKind, Item, ItemDetails};
use crate::message::{Message, Part, Role, pending_tool_calls};
use crate::model::ModelRequest;
use crate::tool::{BreakLoop, ToolEnv};
use crate::tool_round::{Call, CallOutcome, TodoTracker, calls_in, run_calls};

/// The built-in loop: fast, no WebAssembly.
#[derive(Debug, Default, Clone, Copy)]
pub struct StandardLoop;

impl StandardLoop {
    /// A standard loop.
    pub fn new() -> Self {
        Self
    }
}

#[async_trait]
impl AgentLoop for StandardLoop {
    async fn run_prompt(
        &self,
        ctx: &mut LoopContext<'_>,
        user_input: &str,
    ) -> Result<String, LoopError> {
        close_interrupted_calls(ctx);
        ctx.push_message(Message::user(user_input));
        drive(ctx).await
    }

    fn name(&self) -> &'static str {
        "standard"
    }

    fn capabilities(&self) -> LoopCapabilities {
        LoopCapabilities {
            streaming: true,
            extended_thinking: true,
            parallel_tools: true,
            tool_observation: true,
            max_context: 0,
            auto_compaction: true,
            ..LoopCapabilities::default()
        }
    }

    async fn resume(
        &self,
        ctx: &mut LoopContext<'_>,
        answers: Vec<(String, String, bool)>,
    ) -> Result<String, LoopError> {
        let pending = pending_tool_calls(ctx.messages);
        if pending.is_empty() {
            return Err(LoopError::Internal(
                "there is no suspended tool call to resume".to_owned(),
            ));
        }
        let mut parts = Vec::new();
        let mut to_run = Vec::new();
        for (id, name, arguments) in pending {
            match answers.iter().find(|(call_id, _, _)| *call_id == id) {
                Some((_, content, is_error)) => parts.push(Part::ToolResult {
                    call_id: id,
                    content: content.clone(),
                    is_error: *is_error,
                }),
                None => to_run.push(Call {
                    id,
                    name,
                    arguments,
                }),
            }
        }
        let mut todo = TodoTracker::default();
        let step = run_tool_round(ctx, &to_run, parts, &mut todo).await;
        todo.finish(ctx.events);
        match step {
            RoundEnd::Continue => drive(ctx).await,
            RoundEnd::Stop(outcome) => outcome,
        }
    }
}

/// Answers tool calls a previous, interrupted run left without results, so the history is
/// one every provider accepts.
pub fn close_interrupted_calls(ctx: &mut LoopContext<'_>) {
    let pending = pending_tool_calls(ctx.messages);
    if pending.is_empty() {
        return;
    }
    let parts = pending
        .into_iter()
        .map(|(id, _, _)| Part::ToolResult {
            call_id: id,
            content: "not run: the previous run stopped before this call finished".to_owned(),
            is_error: true,
        })
        .collect();
    ctx.push_message(Message {
        role: Role::Tool,
        parts,
    });
}

/// What a tool round decided.
enum RoundEnd {
    /// Send the results to the model.
    Continue,
    /// The run ends here.
    Stop(Result<String, LoopError>),
}

async fn drive(ctx: &mut LoopContext<'_>) -> Result<String, LoopError> {
    let mut doom = DoomLoopDetector::default();
    let mut todo = TodoTracker::default();
    let outcome = drive_inner(ctx, &mut doom, &mut todo).await;
    todo.finish(ctx.events);
    outcome
}

async fn drive_inner(
    ctx: &mut LoopContext<'_>,
    doom: &mut DoomLoopDetector,
    todo: &mut TodoTracker,
) -> Result<String, LoopError> {
    let mut overflow_retried = false;
    loop {
        if ctx.cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        if ctx.stats.iterations >= ctx.config.max_iterations {
            return Err(LoopError::MaxIterations {
                limit: ctx.config.max_iterations,
            });
        }
        compact(ctx, false).await;
        ctx.stats.iterations += 1;
        let request = ModelRequest {
            context: ctx.events.context().clone(),
            system: ctx.config.system_prompt.clone(),
            messages: ctx.messages.clone(),
            tools: ctx.tools.schemas(),
            options: ctx.config.request.clone(),
        };
        let started = std::time::Instant::now();
        let span = tracing::debug_span!(
            "model_request",
            iteration = ctx.stats.iterations,
            messages = request.messages.len()
        );
        let turn = stream_request(ctx, request, ctx.events)
            .instrument(span)
            .await?;
        tracing::debug!(
            iteration = ctx.stats.iterations,
            latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            stop_reason = ?turn.stop_reason,
            "model request finished"
        );
        // The provider counted the history past the window: compact and try once more.
        if turn.overflowed() && !overflow_retried {
            overflow_retried = true;
            if compact(ctx, true).await {
                continue;
            }
        }
        if let Some(error) = turn.error() {
            // Keep what the model said before the failure; drop half-streamed tool calls.
            if let Some(kept) = turn.message() {
                ctx.push_message(kept);
            }
            return Err(error);
        }
        let parts = turn.stored_parts();
        let calls = calls_in(&parts);
        let message = Message::new(Role::Assistant, parts);
        let text = message.text_content();
        ctx.push_message(message);
        if calls.is_empty() {
            return Ok(text);
        }
        if let Some(stop) = check_doom_loop(ctx, doom, &calls).await {
            return stop;
        }
        match run_tool_round(ctx, &calls, Vec::new(), todo).await {
            RoundEnd::Continue => {}
            RoundEnd::Stop(outcome) => return outcome,
        }
    }
}

/// Starts a request and consumes its stream, adding its usage (and cost) to the run.
async fn stream_request(
    ctx: &mut LoopContext<'_>,
    request: ModelRequest,
    events: &Emitter,
) -> Result<AssembledTurn, LoopError> {
    let turn = request_stream(
        ctx.provider,
        request,
        events,
        ctx.cancel,
        ctx.config.stream_idle_timeout,
    )
    .await?;
    ctx.stats.usage.add(&turn.usage);
    Ok(turn)
}

/// Stops the run when one call repeats `doom_loop_threshold` times in a row (across turns),
/// unless the permission gate lets it go on. The calls are answered so the history stays valid.
async fn check_doom_loop(
    ctx: &mut LoopContext<'_>,
    doom: &mut DoomLoopDetector,
    calls: &[Call],
) -> Option<Result<String, LoopError>> {
    // Identical calls within one turn are one request run in parallel, not a loop: each
    // distinct call of a turn is observed once.
    let mut seen = std::collections::HashSet::new();
    for call in calls
        .iter()
        .filter(|c| seen.insert((c.name.as_str(), c.arguments.as_str())))
    {
        let count = doom.observe(&call.name, &call.arguments);
        if count < ctx.config.doom_loop_threshold {
            continue;
        }
        if ctx.permissions.confirm_repetition(&call.name, count).await {
            doom.reset();
            continue;
        }
        let reason = format!(
            "`{}` was called {count} times in a row with the same arguments",
            call.name
        );
        let parts = calls
            .iter()
            .map(|c| Part::ToolResult {
                call_id: c.id.clone(),
                content: format!("not run: {reason}"),
                is_error: true,
            })
            .collect();
        ctx.push_message(Message {
            role: Role::Tool,
            parts,
        });
        ctx.events.emit(EventKind::ItemCompleted {
            item: Item {
                id: ctx.events.next_item_id(),
                details: ItemDetails::Error {
                    message: format!("doom loop: {reason}"),
                },
            },
        });
        return Some(Err(LoopError::DoomLoop(reason)));
    }
    None
}

/// Runs calls, appends their results (after `answered`), and decides whether to go on.
async fn run_tool_round(
    ctx: &mut LoopContext<'_>,
    calls: &[Call],
    mut answered: Vec<Part>,
    todo: &mut TodoTracker,
) -> RoundEnd {
    let env = ToolEnv {
        workspace_root: ctx.cwd.to_path_buf(),
        cancel: ctx.cancel.clone(),
        context: ctx.events.context().clone(),
    };
    let outcomes = run_calls(calls, ctx.tools, ctx.permissions.as_ref(), &env, ctx.events).await;
    let mut pending = Vec::new();
    let mut suspend_reason = None;
    let mut complete = None;
    for (call, outcome) in calls.iter().zip(outcomes) {
        match outcome {
            CallOutcome::Answered {
                content,
                is_error,
                break_loop,
                todo: list,
                ..
            } => {
                let part = Part::ToolResult {
                    call_id: call.id.clone(),
                    content,
                    is_error,
                };
                if let Some(items) = list {
                    todo.update(ctx.events, items);
                }
                match break_loop {
                    Some(BreakLoop::Suspend) => {
                        pending.push(call.clone());
                        suspend_reason.get_or_insert_with(|| {
                            format!("`{}` asked to wait for an answer", call.name)
                        });
                    }
                    Some(BreakLoop::Complete { return_value }) => {
                        complete.get_or_insert(return_value);
                        answered.push(part);
                    }
                    None => answered.push(part),
                }
            }
            CallOutcome::Suspended { reason } => {
                pending.push(call.clone());
                suspend_reason.get_or_insert(reason);
            }
        }
    }
    if !answered.is_empty() {
        ctx.push_message(Message {
            role: Role::Tool,
            parts: answered.into(),
        });
    }
    if ctx.cancel.is_cancelled() {
        return RoundEnd::Stop(Err(LoopError::Cancelled));
    }
    if let Some(reason) = suspend_reason {
        let pending = pending
            .into_iter()
            .map(|c| PendingCall {
                id: c.id,
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        return RoundEnd::Stop(Err(LoopError::Suspended { pending, reason }));
    }
    if let Some(return_value) = complete {
        let text = return_value.unwrap_or_else(|| {
            ctx.messages
                .iter()
                .rev()
                .find(|m| m.role == Role::Assistant)
                .map(Message::text_content)
                .unwrap_or_default()
        });
        return RoundEnd::Stop(Ok(text));
    }
    RoundEnd::Continue
}

/// Compacts the history when it is past the threshold, or at once when `force` (the
/// provider said it does not fit); returns whether it changed.
async fn compact(ctx: &mut LoopContext<'_>, force: bool) -> bool {
    let compactor = Compactor {
        provider: ctx.provider,
        config: ctx.config,
        events: ctx.events,
        cancel: ctx.cancel,
    };
    if force {
        compactor
            .compact_now(ctx.messages, &mut ctx.stats.usage)
            .await
    } else {
        compactor
            .compact_if_needed(ctx.messages, &mut ctx.stats.usage)
            .await
    }
}

#[cfg(test)]
mod tests;
