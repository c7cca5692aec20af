//! The services one context's run uses — its workspace, model, tools, permission gate,
//! limits, what the whole run shares, its events, cancellation and session — as owned
//! handles, each cheap to clone: what a `Run` holds, what a tool that starts contexts of
//! its own (delegation) reads from its call's environment, and what a child is built from.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use wonopcode_protocol::event::Emitter;
use wonopcode_protocol::model::SharedModel;
use wonopcode_protocol::permission::SharedGate;

use crate::agent::LoopConfig;
use crate::shared::RunShared;
use crate::tool_registry::ToolRegistry;

/// The services a run uses: owned handles (each cheap to clone), so a run can live where a
/// borrow cannot, such as a guest's store.
#[derive(Clone)]
pub struct RunServices {
    /// Workspace root (canonical); file tools are confined to it.
    pub cwd: PathBuf,
    /// The model requests go to.
    pub provider: SharedModel,
    /// The tools the run may execute.
    pub tools: ToolRegistry,
    /// The permission policy, which also confirms repeated calls.
    pub gate: SharedGate,
    /// Limits and options.
    pub config: LoopConfig,
    /// What every context of the run shares (hooks, hidden paths, checkpoints, …).
    pub shared: Arc<RunShared>,
    /// Where events go, stamped with the context's path.
    pub events: Emitter,
    /// Cancels the run, its streams and its tools.
    pub cancel: CancellationToken,
    /// Session id.
    pub session_id: String,
}

impl RunServices {
    /// The same services with only `tools` (a tool round or a child narrowed to some of
    /// the run's), the registry not copied first.
    pub fn with_tools(&self, tools: ToolRegistry) -> Self {
        Self {
            cwd: self.cwd.clone(),
            provider: self.provider.clone(),
            tools,
            gate: self.gate.clone(),
            config: self.config.clone(),
            shared: self.shared.clone(),
            events: self.events.clone(),
            cancel: self.cancel.clone(),
            session_id: self.session_id.clone(),
        }
    }
}
