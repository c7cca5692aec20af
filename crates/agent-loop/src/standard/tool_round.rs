//! Running the tool calls of one model turn: read-only tools concurrently, mutating tools one
//! at a time (a read/write lock, as Codex does), results in call order.

use tokio::sync::RwLock;

use crate::event::{Emitter, EventKind, Item, ItemDetails, ItemStatus, TodoItem, ToolCallItem};
use crate::message::Part;
use crate::permission::PermissionGate;
use crate::registry::{Dispatch, ToolRegistry};
use crate::tool::{BreakLoop, ToolEnv, ToolKind};

/// A call to run.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The outcome of one call.
pub(crate) enum CallOutcome {
    /// A result to send back.
    Answered {
        part: Part,
        break_loop: Option<BreakLoop>,
        todo: Option<Vec<TodoItem>>,
    },
    /// The permission gate suspended the run on this call.
    Suspended { reason: String },
}

/// Runs `calls`, emitting a `tool_call` item for each. Outcomes come back in call order.
pub(crate) async fn run_calls(
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
    let kind = registry
        .get(&call.name)
        .map_or(ToolKind::ReadOnly, |t| t.spec().kind);
    let item_id = emitter.next_item_id();
    let mut item = ToolCallItem {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        status: ItemStatus::InProgress,
        output: None,
        duration_ms: None,
        command: None,
        file_change: None,
    };
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
                details: ItemDetails::ToolCall(item.clone()),
            },
        });
        registry
            .dispatch(&call.name, &call.arguments, env, gate)
            .await
    };
    match dispatch {
        Dispatch::Finished {
            output,
            status,
            duration,
        } => {
            item.status = status;
            item.output = Some(output.content.clone());
            item.duration_ms = Some(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
            item.command = output.command;
            item.file_change = output.file_change;
            emitter.emit(EventKind::ItemCompleted {
                item: Item {
                    id: item_id,
                    details: ItemDetails::ToolCall(item),
                },
            });
            CallOutcome::Answered {
                part: Part::ToolResult {
                    call_id: call.id.clone(),
                    content: output.content,
                    is_error: output.is_error,
                },
                break_loop: output.break_loop,
                todo: output.todo,
            }
        }
        Dispatch::Suspended { reason } => {
            item.status = ItemStatus::Declined;
            item.output = Some(format!("suspended: {reason}"));
            emitter.emit(EventKind::ItemCompleted {
                item: Item {
                    id: item_id,
                    details: ItemDetails::ToolCall(item),
                },
            });
            CallOutcome::Suspended { reason }
        }
    }
}
