//! [`LoopLoader`]: how the tree gets a child's guest loop. The tree decides everything else
//! about a child (limits, grants, budgets, model, tools, events) and runs the native loop
//! itself; a loop written as a WebAssembly component is loaded by the embedder's loader
//! (`wonopcode-wasm-host`'s), which keeps what it compiled for the whole tree.

use std::sync::Arc;

use async_trait::async_trait;
use wonopcode_agent_loop::AgentLoop;
use wonopcode_protocol::EventSink;

use crate::budget::TokenBudget;
use crate::file_changes::FileChanges;
use crate::grants::Grant;
use crate::loop_source::LoopSource;
use crate::spawn::SpawnRequest;
use crate::tree::ContextTree;

/// Loads the guest loops of a tree's children.
#[async_trait]
pub trait LoopLoader: Send + Sync {
    /// The guest loop of a child at `seat`: the one `source` names (a component), or, when
    /// `source` is `None`, a fresh instance of the parent's own guest (`same`). `Err`: one
    /// line (an unreadable or broken component, or `same` from a parent without a guest).
    async fn load(
        &self,
        source: Option<&LoopSource>,
        seat: ChildSeat,
    ) -> Result<Box<dyn AgentLoop>, String>;

    /// This loader for the children of a child that runs the native loop, which has no
    /// guest of its own for `same` to name.
    fn for_native(&self) -> Arc<dyn LoopLoader>;
}

/// Where a child sits: its tree, what it was asked, its parent, and what it inherits.
pub struct ChildSeat {
    /// The tree it grows in.
    pub tree: Arc<ContextTree>,
    /// What it was spawned with (an agent file's settings laid in).
    pub request: SpawnRequest,
    /// Its parent's context path.
    pub parent_id: String,
    /// What it inherits from its ancestors, its own parts added.
    pub lineage: Inheritance,
}

/// What a context inherits from its ancestors, with its own parts added last.
#[derive(Clone)]
pub struct Inheritance {
    /// The token budgets it draws on.
    pub budgets: Vec<Arc<TokenBudget>>,
    /// The changed-file sets it adds to.
    pub changes: Vec<Arc<FileChanges>>,
    /// Every grant from the root to it.
    pub grants: Vec<Grant>,
    /// The root's sink, which every descendant writes to directly; `None` for the root.
    pub root_sink: Option<Arc<dyn EventSink>>,
}

impl Inheritance {
    /// A root's: nothing inherited but the root's own grants.
    pub fn root(grants: Vec<Grant>) -> Self {
        Self {
            budgets: Vec::new(),
            changes: Vec::new(),
            grants,
            root_sink: None,
        }
    }
}
