//! What a context's loop is made of: the loaded guest (`LoadedGuest`: compiled, linked, named),
//! shared by every context running it, and the context's place in its tree (`Frame`: the
//! tree, the parameters it was spawned with, its parent).

use std::sync::Arc;

use wonopcode_agent_loop::{EventSink, LoopCapabilities};

use crate::bindings::AgentLoopWorldPre;
use crate::bindings::context::ContextParams;
use crate::context_tree::ContextTree;
use crate::engine::WasmEngine;
use crate::loader::ModuleInfo;
use crate::state::{HostConfig, HostState};
use wonopcode_contexts::{FileChanges, TokenBudget};

/// A guest ready to instantiate: each context gets its own store and instance from `pre`.
pub(crate) struct LoadedGuest {
    pub engine: Arc<WasmEngine>,
    pub pre: AgentLoopWorldPre<HostState>,
    pub origin: String,
    pub info: ModuleInfo,
    /// `get-name`; `&'static` because `AgentLoop::name` is (interned). One per loaded guest.
    pub name: &'static str,
    pub capabilities: LoopCapabilities,
    pub host_config: HostConfig,
}

/// Where a loop runs: its tree, and for a child, what its parent gave it.
pub(crate) struct Frame {
    pub loaded: Arc<LoadedGuest>,
    pub tree: Arc<ContextTree>,
    /// The spawn parameters (`context.get-context-params`); `None` for a root.
    pub params: Option<ContextParams>,
    /// The parent's context path; `None` for a root.
    pub parent_id: Option<String>,
    /// The token budgets this context draws on: its ancestors', then its own (empty for a
    /// root). A child reached the limit when any of them is spent.
    pub budgets: Vec<Arc<TokenBudget>>,
    /// The changed-file sets this context adds to: its ancestors', then its own (empty for a
    /// root).
    pub changes: Vec<Arc<FileChanges>>,
    /// Every grant from the root to this context, its own last.
    pub grants: Vec<wonopcode_contexts::Grant>,
    /// The root context's event sink, which every descendant writes to directly; `None` for
    /// a root (it writes to its own).
    pub root_sink: Option<Arc<dyn EventSink>>,
}
