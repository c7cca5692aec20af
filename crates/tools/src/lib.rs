//! Built-in tools of wonopcode and the permission policy every loop shares.
//!
//! File tools are confined to the workspace root (`workspace::resolve`); directory walks are
//! gitignore-aware (ripgrep's `ignore` and `grep` crates); `bash` kills its whole process
//! group on timeout or cancellation.

mod bash;
mod call_processes;
mod diff;
mod edit;
mod file_times;
mod glob;
pub mod glob_pattern;
mod grep;
mod held_path;
mod list;
mod patch;
pub mod permission;
mod protected;
mod read;
mod shell_env;
mod spec;
mod text_files;
mod todo;
mod walk;
pub mod webfetch;
pub mod websearch;
pub mod workspace;
mod write;
mod write_guard;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use wonopcode_agent_loop::{Tool, ToolRegistry, tool_registry::ToolRegistryError};
use wonopcode_sandbox::Sandbox;
use write_guard::WriteGuard;

pub use bash::{BashTool, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
pub use edit::EditTool;
pub use file_times::FileTimes;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use list::ListTool;
pub use patch::ApplyPatchTool;
pub use protected::ProtectedWrites;
pub use read::ReadTool;
pub use shell_env::{Inherit, PatternError, ShellEnvironmentPolicy};
pub use todo::TodoTool;
pub use webfetch::{Reach, WebFetchTool};
pub use websearch::{SearchEngine, WebSearchTool};
/// The opener beneath a workspace root, where the file tools have always named it.
pub use write::WriteTool;

/// Options for the built-in tool set.
#[derive(Debug, Clone)]
pub struct BuiltinOptions {
    /// The environment commands run with (see [`ShellEnvironmentPolicy`]).
    pub command_env: Arc<BTreeMap<String, String>>,
    /// Timeout of `bash` calls that do not ask for one.
    pub bash_timeout: Duration,
    /// The longest any `bash` call may run: a call asking for more gets this.
    pub bash_ceiling: Duration,
    /// The sandbox `bash` commands run in; `None`: unconfined (an embedder's choice; the
    /// binary always sets one, `workspace-write` unless the user says otherwise).
    pub sandbox: Option<Arc<Sandbox>>,
}

impl BuiltinOptions {
    /// The user's limit on commands: the timeout of every call, and its ceiling.
    pub fn with_bash_limit(self, limit: Duration) -> Self {
        Self {
            bash_timeout: limit,
            bash_ceiling: limit,
            ..self
        }
    }
}

impl Default for BuiltinOptions {
    /// Commands get wonopcode's environment under the default policy (no keys, secrets or
    /// tokens).
    fn default() -> Self {
        let command_env = ShellEnvironmentPolicy::default()
            .environment(std::env::vars(), &[])
            .unwrap_or_default();
        Self {
            command_env: Arc::new(command_env),
            bash_timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            bash_ceiling: Duration::from_millis(MAX_TIMEOUT_MS),
            sandbox: None,
        }
    }
}

/// Every built-in tool.
pub fn builtin_tools(options: BuiltinOptions) -> Vec<Arc<dyn Tool>> {
    // What each context read, which the writing tools hold their changes to.
    let times = Arc::new(FileTimes::default());
    let guard = WriteGuard::new(ProtectedWrites::of(options.sandbox.clone()), times.clone());
    vec![
        Arc::new(ReadTool::default().seeing(times)),
        Arc::new(WriteTool::guarded(guard.clone())),
        Arc::new(EditTool::guarded(guard.clone())),
        Arc::new(ApplyPatchTool::guarded(guard)),
        Arc::new(ListTool::default()),
        Arc::new(GlobTool::default()),
        Arc::new(GrepTool::default()),
        bash_tool(&options),
        Arc::new(TodoTool::default()),
        Arc::new(WebFetchTool::new(Reach::Approved)),
    ]
}

/// The `bash` tool of `options`: also what a context confined by a narrower sandbox than
/// the run's gets in place of the run's (`options.sandbox` being its own).
pub fn bash_tool(options: &BuiltinOptions) -> Arc<dyn Tool> {
    Arc::new(
        BashTool::with_timeouts(options.bash_timeout, options.bash_ceiling)
            .with_env(options.command_env.clone())
            .with_sandbox(options.sandbox.clone()),
    )
}

/// Adds every built-in tool to `registry`.
pub fn register_builtins(
    registry: &mut ToolRegistry,
    options: BuiltinOptions,
) -> Result<(), ToolRegistryError> {
    for tool in builtin_tools(options) {
        registry.register(tool)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every property of every built-in tool's schema, with its tool's name.
    fn properties() -> Vec<(String, String, serde_json::Value)> {
        builtin_tools(BuiltinOptions::default())
            .iter()
            .flat_map(|tool| {
                let spec = tool.spec();
                let properties = spec.parameters["properties"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                properties
                    .into_iter()
                    .map(|(name, schema)| (spec.name.clone(), name, schema))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn every_tool_is_offered_plain_schemas_that_refuse_unknown_arguments() {
        for tool in builtin_tools(BuiltinOptions::default()) {
            let spec = tool.spec();
            assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
            assert_eq!(
                spec.parameters["additionalProperties"], false,
                "{}",
                spec.name
            );
            assert!(ToolRegistry::new().register(tool.clone()).is_ok());
        }
        let properties = properties();
        assert!(properties.len() >= 15, "{properties:?}");
        for (tool, name, schema) in properties {
            assert!(schema["type"].is_string(), "{tool}.{name}: {schema}");
            assert!(schema.get("format").is_none(), "{tool}.{name}: {schema}");
        }
    }
}
