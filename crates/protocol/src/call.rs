//! A tool call as the model made it (id, name, arguments), taken from a response's parts:
//! what a tool round runs, a hook is shown and a repeated-result check compares.

use crate::message::Part;

/// A call to run: one `tool_call` part of a response.
#[derive(Debug, Clone)]
pub struct Call {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model sent them.
    pub arguments: String,
}

/// The tool calls among a turn's parts, in order: what its tool round runs.
pub fn calls_in(parts: &[Part]) -> Vec<Call> {
    parts
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
        .collect()
}
