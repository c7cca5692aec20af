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
    use serde_json::json;

    use super::*;

    /// The schemas every recorded transcript was made with. A request's fingerprint hashes
    /// the tools' schemas (`Fingerprint::of`'s options), so a schema that changes, even in a
    /// description, stops every recording from replaying: it must be a deliberate change,
    /// made here and with the recordings made again.
    fn recorded_schemas() -> serde_json::Value {
        json!({
            "read": {"type": "object", "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root"},
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
                "numbered": {"type": "boolean"}
            }, "required": ["path"], "additionalProperties": false},
            "write": {"type": "object", "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root"},
                "content": {"type": "string"}
            }, "required": ["path", "content"], "additionalProperties": false},
            "edit": {"type": "object", "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string", "minLength": 1},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean", "default": false}
            }, "required": ["path", "old_string", "new_string"], "additionalProperties": false},
            "apply_patch": {"type": "object", "properties": {
                "input": {"type": "string", "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`"}
            }, "required": ["input"], "additionalProperties": false},
            "list": {"type": "object", "properties": {
                "path": {"type": "string", "default": "."},
                "depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2}
            }, "additionalProperties": false},
            "glob": {"type": "object", "properties": {
                "pattern": {"type": "string", "minLength": 1},
                "path": {"type": "string", "default": "."}
            }, "required": ["pattern"], "additionalProperties": false},
            "grep": {"type": "object", "properties": {
                "pattern": {"type": "string", "minLength": 1},
                "path": {"type": "string", "default": "."},
                "glob": {"type": "string"},
                "case_insensitive": {"type": "boolean", "default": false}
            }, "required": ["pattern"], "additionalProperties": false},
            "bash": {"type": "object", "properties": {
                "command": {"type": "string", "minLength": 1},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": bash::MAX_TIMEOUT_MS}
            }, "required": ["command"], "additionalProperties": false},
            "webfetch": {"type": "object", "properties": {
                "url": {"type": "string", "description": "The http(s) URL"},
                "timeout": {"type": "integer", "minimum": 1, "maximum": webfetch::MAX_TIMEOUT_SECS, "description": "Seconds the whole fetch may take (default 30)"}
            }, "required": ["url"], "additionalProperties": false},
            "websearch": {"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1}
            }, "required": ["query"], "additionalProperties": false},
        })
    }

    #[test]
    fn the_typed_tools_offer_exactly_the_schemas_the_recordings_were_made_with() {
        let recorded = recorded_schemas();
        let mut tools = builtin_tools(BuiltinOptions::default());
        let engine = SearchEngine::Searxng {
            url: "http://127.0.0.1:9".to_owned(),
        };
        tools.push(Arc::new(WebSearchTool::new(engine, &|_| None).unwrap()));
        let mut checked = 0;
        for tool in &tools {
            let spec = tool.spec();
            let Some(expected) = recorded.get(&spec.name) else {
                continue;
            };
            assert_eq!(&spec.parameters, expected, "{}", spec.name);
            assert!(ToolRegistry::new().register(tool.clone()).is_ok());
            checked += 1;
        }
        assert_eq!(checked, recorded.as_object().map_or(0, |r| r.len()));
    }
}
