//! The `Tool` trait: what a built-in (or, later, guest-registered) tool implements.

use std::path::PathBuf;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use wonopcode_protocol::context_path::ContextPath;
use wonopcode_protocol::event::{CommandDetails, FileChange, TodoItem};
use wonopcode_protocol::tool_spec::{ToolKind, ToolSpec};

/// What a tool gets besides its arguments.
#[derive(Clone)]
pub struct ToolEnv {
    /// Canonical workspace root; file tools are confined to it.
    pub workspace_root: PathBuf,
    /// Cancelled when the run is; tools stop (and kill their processes) promptly.
    pub cancel: CancellationToken,
    /// The context calling.
    pub context: ContextPath,
    /// The calling context's run (its model, tools, limits, events), for tools that start
    /// contexts of their own (delegation); `None` where a tool runs outside a run.
    /// Shared, so the per-call copy of the environment (each call its own `live`) copies a
    /// pointer, not the registry and the config.
    pub run: Option<std::sync::Arc<crate::services::RunServices>>,
    /// The run's permission gate, for tools that walk the workspace: what a rule denies is
    /// left out of a walk. `None`: nothing is left out.
    pub gate: Option<wonopcode_protocol::permission::SharedGate>,
    /// What every context of the run shares: the paths file tools may not open or list
    /// (the credentials the sandbox hides from commands), the editor's files when the run
    /// is driven from an editor that offers them, where a change to a file is recorded.
    pub shared: std::sync::Arc<crate::shared::RunShared>,
    /// Where a tool that prints as it runs (`bash`) shows it while the call lasts; set
    /// for each call of a run.
    pub live: Option<crate::live_output::LiveOutput>,
}

impl ToolEnv {
    /// What a tool gets when it runs outside a run (an embedder calling one tool, a test, a
    /// benchmark): the workspace at `workspace_root` (canonical), the root context, its own
    /// cancellation, and no gate, hidden paths, editor or checkpoints. Set a field with
    /// struct-update syntax to add one (`shared` for hidden paths, an editor, checkpoints).
    pub fn outside_a_run(workspace_root: PathBuf) -> Self {
        Self {
            workspace_root,
            cancel: CancellationToken::new(),
            context: ContextPath::default(),
            run: None,
            gate: None,
            shared: std::sync::Arc::default(),
            live: None,
        }
    }

    /// Paths (canonical) file tools may not open or list.
    pub fn hidden(&self) -> &[PathBuf] {
        &self.shared.hidden_paths
    }

    /// The editor's files, when the run is driven from an editor that offers them; `None`:
    /// the disk.
    pub fn editor(&self) -> Option<&wonopcode_protocol::editor_files::SharedEditorFiles> {
        self.shared.editor_files.as_ref()
    }

    /// Records that the calling context changed `path` (relative to the workspace) from
    /// `before` to `after` (`None`: no file), when the run keeps checkpoints.
    pub fn changed(&self, path: &str, before: Option<&[u8]>, after: Option<&[u8]>) {
        if let Some(checkpoints) = &self.shared.checkpoints {
            checkpoints.changed(&self.context, path, before, after);
        }
    }
}

impl std::fmt::Debug for ToolEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEnv")
            .field("workspace_root", &self.workspace_root)
            .field("context", &self.context)
            .field("gate", &self.gate.is_some())
            .finish_non_exhaustive()
    }
}

/// How a tool asks the loop to stop: to wait for an answer from outside the run, or to end
/// it with a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakLoop {
    /// Stop with status `suspended`; the call stays pending until resumed with an answer.
    Suspend,
    /// Stop with status `suspended` because these calls, deeper in the tree, wait for an
    /// answer (a child context the call read has suspended): the run waits on them, and
    /// this call stays pending with them.
    WaitsOn(Vec<wonopcode_protocol::status::PendingCall>),
    /// Stop with status `complete`, answering with `return_value` when given.
    Complete {
        /// The run's answer.
        return_value: Option<String>,
    },
}

/// A tool's result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// Text given to the model.
    pub content: String,
    /// True when the tool failed in a way the model should see and correct.
    pub is_error: bool,
    /// Process details, for the event stream.
    pub command: Option<CommandDetails>,
    /// File change, for the event stream.
    pub file_change: Option<FileChange>,
    /// The changes of a tool that changes several files at once, for the event stream.
    pub file_changes: Vec<FileChange>,
    /// The todo list as rewritten by this call.
    pub todo: Option<Vec<TodoItem>>,
    /// A request to end the run.
    pub break_loop: Option<BreakLoop>,
    /// Bytes of the tool's real output left out of `content` (a command that printed more
    /// than a tool keeps): the truncation notice counts them, so it tells the real size.
    pub omitted_bytes: u64,
    /// What the call spent on models (a child context's usage, which a delegation tool
    /// collects): added to the calling context's, so usage rolls up to the root.
    pub spent: Option<wonopcode_protocol::usage::Usage>,
}

impl ToolOutput {
    /// A successful text output.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// A failed output the model is told about.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            ..Self::default()
        }
    }
}

/// Why a tool could not produce output. Every variant goes back to the model as an error
/// result (fail-open); none ends the run.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ToolError {
    /// Arguments do not fit the tool (beyond what the schema catches).
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// A path leaves the workspace.
    #[error("path `{path}` is outside the workspace")]
    OutsideWorkspace {
        /// The path as given.
        path: String,
    },
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The tool ran out of time.
    #[error("timed out after {after_ms} ms")]
    Timeout {
        /// The limit.
        after_ms: u64,
    },
    /// The run was cancelled while the tool ran.
    #[error("{}", wonopcode_protocol::earlier_calls::CANCELLED)]
    Cancelled,
}

/// A tool the loop can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description, schema, kind and category.
    fn spec(&self) -> &ToolSpec;

    /// What a call acts on, for permission rules and approval caching (a path, a command).
    /// A path is given as rules see it: workspace-relative and normalized (`sub/../x` and the
    /// absolute path of `x` are both `x`), so no spelling walks around a rule.
    fn permission_subject(
        &self,
        _arguments: &serde_json::Value,
        _workspace_root: &std::path::Path,
    ) -> Option<String> {
        None
    }

    /// The change the call would make, as a unified diff, so a person asked to approve it
    /// sees what they approve. Only tools that change files in a way they can compute
    /// beforehand say; a call the tool would refuse has no preview.
    async fn preview(
        &self,
        _arguments: &serde_json::Value,
        _workspace_root: &std::path::Path,
    ) -> Option<String> {
        None
    }

    /// For a tool of an MCP server: the server's name and the tool's name there, so its
    /// calls show as `mcp_tool_call` items.
    fn mcp_origin(&self) -> Option<(&str, &str)> {
        None
    }

    /// The most bytes of output this tool gives the model, for a tool that pages its own
    /// output (cuts it between lines and says where to go on): a cut from the middle by the
    /// run's cap ([`crate::DispatchLimits::max_output_bytes`]) would take out lines the model
    /// cannot tell it lacks. `None`: the run's cap applies. It only ever raises the cap.
    fn output_cap(&self) -> Option<usize> {
        None
    }

    /// For a call an interrupted run started and never finished, whether it had its effect
    /// (resume asks before running it again). By default a read-only tool runs again and
    /// any other cannot tell.
    async fn interrupted(
        &self,
        _arguments: &serde_json::Value,
        _workspace_root: &std::path::Path,
    ) -> wonopcode_protocol::earlier_calls::Interrupted {
        match self.spec().kind {
            ToolKind::ReadOnly => wonopcode_protocol::earlier_calls::Interrupted::RunAgain,
            ToolKind::Mutating => wonopcode_protocol::earlier_calls::Interrupted::Unknown,
        }
    }

    /// Runs the tool. Arguments have already been validated against the schema.
    async fn run(
        &self,
        arguments: serde_json::Value,
        env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError>;
}
