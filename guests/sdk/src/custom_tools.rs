//! Custom tools a guest registers with the host and runs itself (in-guest dispatch, so the
//! host never calls back into an instance that is waiting on it).

use crate::ToolCall;
use crate::bindings::wonopcode::agent_loop::custom_tools::{self, CustomToolDefinition};
use crate::bindings::wonopcode::agent_loop::ui;

/// A tool implemented by the guest.
pub struct CustomTool {
    /// Name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters_schema: String,
    /// The implementation: arguments JSON in, output text or an error out.
    pub run: fn(&str) -> Result<String, String>,
}

/// The guest's custom tools.
#[derive(Default)]
pub struct CustomTools {
    tools: Vec<CustomTool>,
}

impl CustomTools {
    /// Registers `tool` with the host (which checks the name and schema) and keeps it here.
    pub fn register(&mut self, tool: CustomTool) -> Result<(), String> {
        custom_tools::register_tool(&CustomToolDefinition {
            id: tool.name.clone(),
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters_schema: tool.parameters_schema.clone(),
            enabled_by_default: true,
        })?;
        self.tools.push(tool);
        Ok(())
    }

    /// Whether `name` is one of these tools.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// Runs a call of one of these tools, in the guest, once the host has checked its
    /// arguments against the tool's schema (`Err` is then the line the model reads, as for
    /// the host's own tools).
    pub fn dispatch(&self, name: &str, arguments: &str) -> Result<String, String> {
        match self.tools.iter().find(|t| t.name == name) {
            Some(tool) => {
                custom_tools::check_arguments(name, arguments)?;
                (tool.run)(arguments)
            }
            None => Err(format!("no custom tool `{name}`")),
        }
    }

    /// Runs a call of one of these tools and shows it as a tool call (`ui.tool-start` and
    /// `ui.tool-result`), as the host shows its own; returns the output and whether it failed.
    pub fn run_shown(&self, call: &ToolCall) -> (String, bool) {
        ui::tool_start(&call.id, &call.name);
        let (content, is_error) = match self.dispatch(&call.name, &call.arguments) {
            Ok(out) => (out, false),
            Err(e) => (e, true),
        };
        ui::tool_result(&call.id, &content, is_error);
        (content, is_error)
    }
}
