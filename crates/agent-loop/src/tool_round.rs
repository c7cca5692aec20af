//! Running the tool calls of one model turn: read-only tools concurrently, mutating tools one
//! at a time (a read/write lock, as Codex does), results in call order, each shown as a
//! `tool_call` item. Shared by the native loop and the WebAssembly host.

use tokio::sync::RwLock;

use wonopcode_protocol::call::Call;
use wonopcode_protocol::earlier_calls::SUSPENDED;
use wonopcode_protocol::event::{
    Emitter, EventKind, Item, ItemDetails, ItemStatus, TodoItem, ToolCallItem,
};
use wonopcode_protocol::permission::PermissionGate;
use wonopcode_protocol::{ToolCategory, ToolKind};

use crate::hook::{HookDecision, HookSite, HookedGate};
use crate::live_output::LiveOutput;
use crate::resumed_calls::earlier_answer;
use crate::tool::{BreakLoop, ToolEnv};
use crate::tool_registry::{Dispatch, ToolRegistry};

/// The outcome of one call.
pub enum CallOutcome {
    /// A result to send back.
    Answered {
        /// Output for the model.
        content: String,
        /// True when the call failed.
        is_error: bool,
        /// The tool's request to end the run.
        break_loop: Option<BreakLoop>,
        /// The todo list, when the tool rewrote it.
        todo: Option<Vec<TodoItem>>,
        /// How long the call ran.
        duration: std::time::Duration,
        /// What the call spent on models (a delegated child's usage).
        spent: Option<wonopcode_protocol::usage::Usage>,
    },
    /// The permission gate suspended the run on this call.
    Suspended {
        /// Why.
        reason: String,
    },
}

/// Runs `calls`, emitting a `tool_call` item for each. Outcomes come back in call order.
pub async fn run_calls(
    calls: &[Call],
    registry: &ToolRegistry,
    gate: &dyn PermissionGate,
    env: &ToolEnv,
    emitter: &Emitter,
) -> Vec<CallOutcome> {
    let lock = RwLock::new(());
    let futures = calls
        .iter()
        .map(|call| run_one(call, registry, gate, env, emitter, &lock));
    futures::future::join_all(futures).await
}

async fn run_one(
    call: &Call,
    registry: &ToolRegistry,
    gate: &dyn PermissionGate,
    env: &ToolEnv,
    emitter: &Emitter,
    lock: &RwLock<()>,
) -> CallOutcome {
    // On a resume, what the interrupted run did with this call comes first.
    let tool = registry.get(&call.name);
    if let Some(earlier) = env.shared.earlier.as_deref()
        && let Some(tool) = tool.filter(|t| t.spec().category != ToolCategory::Internal)
        && let Some(answer) = earlier_answer(earlier, tool.as_ref(), call, gate, env, emitter).await
    {
        return answer;
    }
    // The run's hooks, where this context's run has any.
    let hooks = env.run.as_ref().and_then(|run| {
        let agent = run.config.agent_name();
        let site = HookSite::new(emitter, &run.session_id, &env.workspace_root, agent);
        env.shared.hooks.as_ref().map(|hooks| (hooks, site))
    });
    let mut decision = None;
    let mut rewritten = None;
    if let Some((hooks, site)) = &hooks {
        let pre = hooks.pre_tool_use(site, call).await;
        rewritten = pre.arguments.map(|arguments| Call {
            arguments,
            ..call.clone()
        });
        decision = pre.decision;
    }
    let call = rewritten.as_ref().unwrap_or(call);
    let hooked = HookedGate {
        gate,
        decision: decision.as_ref(),
        hooks: hooks
            .as_ref()
            .map(|(hooks, site)| (hooks.as_ref(), *site, call)),
    };
    let gate: &dyn PermissionGate = match &hooks {
        Some(_) => &hooked,
        None => gate,
    };
    let kind = tool.map_or(ToolKind::ReadOnly, |t| t.spec().kind);
    let (server, remote) = tool
        .and_then(|t| t.mcp_origin())
        .map_or((None, None), |(s, t)| {
            (Some(s.to_owned()), Some(t.to_owned()))
        });
    let item_id = emitter.next_item_id();
    let mut item = ToolCallItem {
        server,
        tool: remote,
        ..ToolCallItem::in_progress(call.id.clone(), call.name.clone(), call.arguments.clone())
    };
    if let Some(HookDecision::Deny(reason)) = &decision {
        return denied_by_hook(item, item_id, reason, emitter);
    }
    let dispatch = {
        // Hold the lock for the whole call: shared for read-only tools, exclusive otherwise.
        let (_read, _write);
        match kind {
            ToolKind::ReadOnly => _read = Some(lock.read().await),
            ToolKind::Mutating => _write = Some(lock.write().await),
        }
        emitter.emit(EventKind::ItemStarted {
            item: Item {
                id: item_id.clone(),
                details: ItemDetails::for_call(item.clone()),
            },
        });
        let env = ToolEnv {
            live: Some(LiveOutput::new(
                emitter.clone(),
                item_id.clone(),
                item.clone(),
            )),
            ..env.clone()
        };
        registry
            .dispatch(&call.name, &call.arguments, &env, gate)
            .await
    };
    match dispatch {
        Dispatch::Finished {
            output,
            status,
            duration,
        } => {
            let mut output = *output;
            if let Some((hooks, site)) = &hooks {
                let post = hooks
                    .post_tool_use(site, call, &output.content, output.is_error)
                    .await;
                if let Some(feedback) = post.feedback {
                    output.content = format!("{}\n\n{feedback}", output.content);
                }
            }
            item.status = status;
            item.output = Some(output.content.clone());
            item.duration_ms = Some(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
            item.command = output.command;
            item.file_change = output.file_change;
            item.file_changes = output.file_changes;
            emitter.emit(EventKind::ItemCompleted {
                item: Item {
                    id: item_id,
                    details: ItemDetails::for_call(item),
                },
            });
            CallOutcome::Answered {
                content: output.content,
                is_error: output.is_error,
                break_loop: output.break_loop,
                todo: output.todo,
                duration,
                spent: output.spent,
            }
        }
        Dispatch::Suspended { reason } => {
            item.status = ItemStatus::Declined;
            item.output = Some(format!("{SUSPENDED}{reason}"));
            emitter.emit(EventKind::ItemCompleted {
                item: Item {
                    id: item_id,
                    details: ItemDetails::for_call(item),
                },
            });
            CallOutcome::Suspended { reason }
        }
    }
}

/// A call a `PreToolUse` hook refused: shown declined, and the model told why.
fn denied_by_hook(
    mut item: ToolCallItem,
    id: String,
    reason: &str,
    emitter: &Emitter,
) -> CallOutcome {
    item.status = ItemStatus::Declined;
    item.output = Some(format!("denied by a hook: {reason}"));
    item.duration_ms = Some(0);
    answered_without_running(item, id, emitter)
}

/// A call answered without running it: shown started and finished as `item`, and the model
/// told its output.
pub(crate) fn answered_without_running(
    item: ToolCallItem,
    id: String,
    emitter: &Emitter,
) -> CallOutcome {
    emitter.emit(EventKind::ItemStarted {
        item: Item {
            id: id.clone(),
            details: ItemDetails::for_call(ToolCallItem {
                status: ItemStatus::InProgress,
                output: None,
                ..item.clone()
            }),
        },
    });
    let content = item.output.clone().unwrap_or_default();
    let is_error = item.status != ItemStatus::Completed;
    emitter.emit(EventKind::ItemCompleted {
        item: Item {
            id,
            details: ItemDetails::for_call(item),
        },
    });
    CallOutcome::Answered {
        content,
        is_error,
        break_loop: None,
        todo: None,
        duration: std::time::Duration::ZERO,
        spent: None,
    }
}

/// The todo-list item of one run: started on the first update, updated after, completed at
/// the end.
#[derive(Default)]
pub struct TodoTracker {
    current: Option<(String, Vec<TodoItem>)>,
}

impl TodoTracker {
    /// Shows a rewritten todo list.
    pub fn update(&mut self, events: &Emitter, items: Vec<TodoItem>) {
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

    /// Completes the todo-list item, if the run had one.
    pub fn finish(self, events: &Emitter) {
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
