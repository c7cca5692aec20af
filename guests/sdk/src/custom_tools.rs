//! Custom tools a guest registers with the host and runs itself (in-guest dispatch, so the
//! host never calls back into an instance that is waiting on it).

use crate::ToolCall;
use crate::bindings::wonopcode::agent_loop::custom_tools::{self, CustomToolDefinition};
use crate::bindings::wonopcode::agent_loop::ui;

/// A tool's implementation: its arguments' JSON in, the text the model reads (or the error)
/// out. A closure, so it may capture what it needs.
pub type ToolRun = Box<dyn Fn(&str) -> Result<String, String>>;

/// A tool implemented by the guest.
pub struct CustomTool {
    /// Name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters_schema: String,
    /// The implementation.
    pub run: ToolRun,
}

impl CustomTool {
    /// A tool whose arguments are `A`: their JSON Schema is derived from the type
    /// (`#[derive(serde::Deserialize, schemars::JsonSchema)]`, its doc comments the fields'
    /// descriptions), and `run` gets them parsed. The host checks each call against the
    /// schema before `run` sees it.
    ///
    /// ```ignore
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Count {
    ///     /// The text whose words are counted.
    ///     text: String,
    /// }
    /// let tool = CustomTool::typed("word_count", "Counts the words of a text.", |a: Count| {
    ///     Ok(a.text.split_whitespace().count().to_string())
    /// });
    /// ```
    pub fn typed<A>(
        name: impl Into<String>,
        description: impl Into<String>,
        run: impl Fn(A) -> Result<String, String> + 'static,
    ) -> Self
    where
        A: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or_default();
        // What the model is sent: the object's schema, without the meta keys.
        if let Some(object) = schema.as_object_mut() {
            object.remove("$schema");
            object.remove("title");
        }
        let name = name.into();
        let label = name.clone();
        Self {
            name,
            description: description.into(),
            parameters_schema: schema.to_string(),
            run: Box::new(move |arguments: &str| {
                let text = if arguments.trim().is_empty() {
                    "{}"
                } else {
                    arguments
                };
                let args: A = serde_json::from_str(text)
                    .map_err(|e| format!("invalid arguments for `{label}`: {e}"))?;
                run(args)
            }),
        }
    }

    /// A tool with its JSON Schema written out (`parameters_schema`), whose `run` parses the
    /// arguments itself.
    pub fn raw(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters_schema: impl Into<String>,
        run: impl Fn(&str) -> Result<String, String> + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters_schema: parameters_schema.into(),
            run: Box::new(run),
        }
    }
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
