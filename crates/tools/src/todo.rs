//! `todo`: the model's plan, rewritten whole on each call and shown as a `todo_list` item.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use wonopcode_agent_loop::{Tool, ToolEnv, ToolError, ToolOutput};
use wonopcode_protocol::event::{TodoItem, TodoStatus};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::spec::{args, spec};

/// Keeps the todo list.
pub struct TodoTool(ToolSpec);

impl Default for TodoTool {
    fn default() -> Self {
        Self(spec(
            "todo",
            "Replace your todo list for this task. Give every item with its status (pending, in_progress, completed).",
            ToolKind::ReadOnly,
            ToolCategory::Internal,
            json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string", "minLength": 1},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                            },
                            "required": ["content", "status"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["todos"],
                "additionalProperties": false
            }),
        ))
    }
}

#[derive(Deserialize)]
struct Args {
    todos: Vec<TodoItem>,
}

#[async_trait]
impl Tool for TodoTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        _env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError> {
        let a: Args = args(arguments)?;
        let done = a
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        let mut out = ToolOutput::text(format!(
            "todo list updated: {done} of {} completed",
            a.todos.len()
        ));
        out.todo = Some(a.todos);
        Ok(out)
    }
}
