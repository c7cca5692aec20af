//! `StandardLoop`: the native loop. Stream, assemble, run tools (in parallel where safe),
//! feed results back, repeat until the model answers; with doom-loop detection, fail-open
//! tool errors, cancellation, suspension and compaction.

mod stream;
mod tool_round;

use std::sync::Arc;

use async_trait::async_trait;
use tracing::Instrument;

use crate::agent::{AgentLoop, LoopCapabilities, LoopContext, LoopError, PendingCall};
use crate::compaction::{SUMMARY_PROMPT, estimate_tokens, summarized_history};
use crate::doom_loop::DoomLoopDetector;
use crate::event::{Emitter, EventKind, Item, ItemDetails, NullSink, TodoItem};
use crate::message::{Message, Part, Role, pending_tool_calls};
use crate::model::ModelRequest;
use crate::tool::{BreakLoop, ToolEnv};
use stream::{AssembledTurn, StreamFailure, consume};
use tool_round::{Call, CallOutcome, run_calls};

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
fn close_interrupted_calls(ctx: &mut LoopContext<'_>) {
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

/// The todo-list item of one run: started on the first update, updated after, completed at
/// the end.
#[derive(Default)]
struct TodoTracker {
    current: Option<(String, Vec<TodoItem>)>,
}

impl TodoTracker {
    fn update(&mut self, events: &Emitter, items: Vec<TodoItem>) {
        match &mut self.current {
            Some((id, list)) => {
                *list = items.clone();
                events.emit(EventKind::ItemUpdated {
                    item: Item {
                        id: id.clone(),
                        details: ItemDetails::TodoList { items },
                    },
                });
            }
            None => {
                let id = events.next_item_id();
                events.emit(EventKind::ItemStarted {
                    item: Item {
                        id: id.clone(),
                        details: ItemDetails::TodoList {
                            items: items.clone(),
                        },
                    },
                });
                self.current = Some((id, items));
            }
        }
    }

    fn finish(self, events: &Emitter) {
        if let Some((id, items)) = self.current {
            events.emit(EventKind::ItemCompleted {
                item: Item {
                    id,
                    details: ItemDetails::TodoList { items },
                },
            });
        }
    }
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
    loop {
        if ctx.cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        if ctx.stats.iterations >= ctx.config.max_iterations {
            return Err(LoopError::MaxIterations {
                limit: ctx.config.max_iterations,
            });
        }
        compact_if_needed(ctx).await;
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
        let failure = turn.failure;
        let parts: Vec<Part> = turn
            .parts
            .into_iter()
            .filter(|p| !matches!(p, Part::Text { text } if text.is_empty()))
            .collect();
        if let Some(failure) = failure {
            // Keep what the model said before the failure; drop half-streamed tool calls.
            let kept: Vec<Part> = parts
                .into_iter()
                .filter(|p| {
                    matches!(
                        p,
                        Part::Text { .. }
                            | Part::Thinking {
                                signature: Some(_),
                                ..
                            }
                    )
                })
                .collect();
            if !kept.is_empty() {
                ctx.push_message(Message {
                    role: Role::Assistant,
                    parts: kept,
                });
            }
            return Err(match failure {
                StreamFailure::Cancelled => LoopError::Cancelled,
                StreamFailure::Provider(message) => LoopError::Provider(message),
                StreamFailure::Timeout(after) => {
                    LoopError::Provider(format!("no data from the model for {} s", after.as_secs()))
                }
            });
        }
        let calls: Vec<Call> = parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                } => Some(Call {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                }),
                _ => None,
            })
            .collect();
        let message = Message {
            role: Role::Assistant,
            parts,
        };
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
    let stream = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => return Err(LoopError::Cancelled),
        s = tokio::time::timeout(ctx.config.stream_idle_timeout, ctx.provider.stream(request)) => match s {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(LoopError::Provider(e.to_string())),
            Err(_) => return Err(LoopError::Provider(format!(
                "the model did not start answering within {} s",
                ctx.config.stream_idle_timeout.as_secs()
            ))),
        },
    };
    let mut turn = consume(stream, events, ctx.cancel, ctx.config.stream_idle_timeout).await;
    if turn.usage.cost_micro_cents.is_none()
        && let Some(pricing) = &ctx.provider.info().pricing
    {
        turn.usage.cost_micro_cents = Some(pricing.cost(&turn.usage));
    }
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
                part,
                break_loop,
                todo: list,
            } => {
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
            parts: answered,
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

/// Compacts the history when it passes the configured share of the model's window: prune old
/// tool outputs first, then summarize with the model if that was not enough.
async fn compact_if_needed(ctx: &mut LoopContext<'_>) {
    let cfg = &ctx.config.compaction;
    let window = ctx.provider.info().context_window;
    let system = ctx.config.system_prompt.as_deref();
    let before = estimate_tokens(system, ctx.messages);
    if !cfg.needs_compaction(before, ctx.messages.len(), window) {
        return;
    }
    let freed = cfg.prune_tool_outputs(ctx.messages);
    let mut strategy = "prune_tool_outputs";
    let still = estimate_tokens(system, ctx.messages);
    if (freed == 0 || cfg.needs_compaction(still, ctx.messages.len(), window))
        && let Some(split) = cfg.summary_split(ctx.messages)
    {
        let mut prefix = ctx.messages[..split].to_vec();
        prefix.push(Message::user(SUMMARY_PROMPT));
        let request = ModelRequest {
            context: ctx.events.context().clone(),
            system: ctx.config.system_prompt.clone(),
            messages: prefix,
            tools: Vec::new(),
            options: ctx.config.request.clone(),
        };
        // The summary is not shown to the user as an agent message.
        let quiet = Emitter::new(Arc::new(NullSink), ctx.events.context().clone());
        match stream_request(ctx, request, &quiet).await {
            Ok(turn) if turn.failure.is_none() => {
                let summary: String = turn
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let tail = ctx.messages[split..].to_vec();
                *ctx.messages = summarized_history(&summary, &tail);
                strategy = "summarize";
            }
            Ok(turn) => warn_compaction(ctx.events, &format!("{:?}", turn.failure)),
            Err(e) => warn_compaction(ctx.events, &e.to_string()),
        }
    } else if freed == 0 {
        return;
    }
    let after = estimate_tokens(system, ctx.messages);
    if after >= before {
        return;
    }
    ctx.events.emit(EventKind::ContextCompacted {
        strategy: strategy.to_owned(),
        tokens_before: before as u64,
        tokens_after: after as u64,
        messages: ctx.messages.clone(),
    });
}

fn warn_compaction(events: &Emitter, why: &str) {
    events.emit(EventKind::ItemCompleted {
        item: Item {
            id: events.next_item_id(),
            details: ItemDetails::Error {
                message: format!("compaction by summary failed: {why}"),
            },
        },
    });
}

#[cfg(test)]
mod tests;
