//! What a context's loop is made of: the loaded guest (`LoadedGuest`: compiled, linked, named),
//! shared by every context running it, and the context's place in its tree (`Frame`: the
//! tree, the parameters it was spawned with, its parent).

use std::sync::Arc;

use wonopcode_agent_loop::LoopCapabilities;
use wonopcode_contexts::{ContextTree, Inheritance};

use crate::bindings::context::SpawnRequest;
use crate::engine::WasmEngine;
use crate::exports::GuestPre;
use crate::guest_loader::TreeGuests;
use crate::loader::ModuleInfo;
use crate::state::HostConfig;

/// A guest ready to instantiate: each context gets its own store and instance from `pre`.
pub(crate) struct LoadedGuest {
    pub engine: Arc<WasmEngine>,
    pub pre: GuestPre,
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
    /// What the tree's guests share (compiled guests, memory).
    pub guests: Arc<TreeGuests>,
    pub tree: Arc<ContextTree>,
    /// The spawn request (`context.get-spawn-request`); `None` for a root.
    pub params: Option<SpawnRequest>,
    /// The parent's context path; `None` for a root.
    pub parent_id: Option<String>,
    /// What it inherits: the token budgets it draws on (a child reached its limit when any
    /// is spent), the changed-file sets it adds to, its grants, the root's sink.
    pub lineage: Inheritance,
}
