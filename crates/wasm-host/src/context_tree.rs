//! The tree of contexts one root run grows: the limits every spawn checks (depth, live
//! contexts, concurrency), where named modules come from, and the guests already loaded for
//! it, so a specialist spawned a hundred times is compiled and linked once.

use crate::loop_source::LoopSource;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::frame::LoadedGuest;
use crate::memory_budget::MemoryBudget;

/// Limits on the context tree: depth 100, 1,000 live contexts, 10,000 contexts in a turn, 4
/// children of a batch at once, and a quarter of the machine's memory for all guests together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextLimits {
    /// Deepest context allowed (the root is depth 0).
    pub max_depth: usize,
    /// Contexts alive at once in the whole tree, the root included.
    pub max_live: usize,
    /// Contexts started in one turn of the root, ended ones included: a tree that keeps
    /// replacing its children (a fan-out that never ends) stops here.
    pub max_total: usize,
    /// Bytes of linear memory all live guest instances of the tree may hold together.
    pub max_memory_bytes: usize,
    /// Children of one `spawn-parallel` call running at once.
    pub max_parallel: usize,
}

impl Default for ContextLimits {
    fn default() -> Self {
        Self {
            max_depth: 100,
            max_live: 1000,
            max_total: 10_000,
            max_memory_bytes: crate::memory_budget::default_limit(),
            max_parallel: 4,
        }
    }
}

/// Where a module named in `context-module::named` lives. The CLI answers from the registry
/// (`registry.yaml`, loop directories, built-ins); a library embedder may answer as it likes.
#[async_trait::async_trait]
pub trait ModuleResolver: Send + Sync {
    /// The module called `name` (with or without `.wasm`), or one line saying why not.
    fn resolve(&self, name: &str) -> Result<LoopSource, String>;

    /// What a context gets besides its parent's tools, given its `lineage` (every grant from
    /// the root to it, its own last) and the module it runs when named: that module's own MCP
    /// servers, started now, and allowlist; a `bash` confined by the sandbox the lineage
    /// narrows the run's to; its module's limits. `Err`: one line naming a grant wider than
    /// its parent's (the context does not start). Default: nothing, and no spawn grants.
    async fn context_tools(
        &self,
        _module: Option<&str>,
        lineage: &[crate::grants::Grant],
    ) -> Result<crate::context_tools::ContextTools, String> {
        crate::grants::without_resolver(lineage)
    }

    /// Directories a `context-module::path` may name a file in, besides the workspace.
    fn module_dirs(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }

    /// Every name `resolve` knows, with what it does when known, in lookup order: what the
    /// native loop's `spawn_agent` offers. Default: none.
    fn names(&self) -> Vec<(String, Option<String>)> {
        Vec::new()
    }
}

/// One root run's tree.
pub(crate) struct ContextTree {
    pub limits: ContextLimits,
    pub resolver: Option<Arc<dyn ModuleResolver>>,
    /// The memory all the tree's guest instances draw on.
    pub memory: Arc<MemoryBudget>,
    live: AtomicUsize,
    /// Contexts started in the root's current turn.
    started: AtomicUsize,
    loaded: Mutex<HashMap<LoopSource, Arc<LoadedGuest>>>,
}

/// A live context's place in the count; dropping it frees the place.
pub(crate) struct LiveSlot(Arc<ContextTree>);

impl Drop for LiveSlot {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ContextTree {
    pub fn new(
        limits: ContextLimits,
        resolver: Option<Arc<dyn ModuleResolver>>,
        memory: Arc<MemoryBudget>,
    ) -> Arc<Self> {
        Arc::new(Self {
            limits,
            resolver,
            memory,
            // The root context is alive for as long as the tree.
            live: AtomicUsize::new(1),
            started: AtomicUsize::new(0),
            loaded: Mutex::new(HashMap::new()),
        })
    }

    /// A new turn of the root: its count of started contexts begins again.
    pub fn begin_turn(&self) {
        self.started.store(0, Ordering::Release);
    }

    /// Takes a place for a new context, or says the tree is full or has started all the
    /// contexts a turn may.
    pub fn enter(self: &Arc<Self>) -> Result<LiveSlot, String> {
        let total = self.limits.max_total;
        if self
            .started
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < total).then_some(n + 1)
            })
            .is_err()
        {
            return Err(format!(
                "the limit of {total} contexts started in this turn is reached"
            ));
        }
        let cap = self.limits.max_live;
        let taken = self
            .live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < cap).then_some(n + 1)
            });
        match taken {
            Ok(_) => Ok(LiveSlot(self.clone())),
            Err(_) => Err(format!(
                "the limit of {cap} live contexts in this run is reached"
            )),
        }
    }

    /// A guest loaded before from this source.
    pub fn loaded(&self, key: &LoopSource) -> Option<Arc<LoadedGuest>> {
        self.loaded.lock().get(key).cloned()
    }

    /// Keeps a loaded guest for the next spawn of the same module.
    pub fn keep_loaded(&self, key: LoopSource, loaded: Arc<LoadedGuest>) {
        self.loaded.lock().insert(key, loaded);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_cap_counts_the_root_and_frees_places() {
        let tree = ContextTree::new(
            ContextLimits {
                max_live: 3,
                ..ContextLimits::default()
            },
            None,
            MemoryBudget::new(1 << 20),
        );
        let a = tree.enter().unwrap();
        let _b = tree.enter().unwrap();
        let refused = tree.enter().err().unwrap();
        assert!(refused.contains("3 live contexts"), "{refused}");
        drop(a);
        assert!(tree.enter().is_ok());
    }

    #[test]
    fn a_turn_starts_a_bounded_number_of_contexts() {
        let tree = ContextTree::new(
            ContextLimits {
                max_total: 2,
                ..ContextLimits::default()
            },
            None,
            MemoryBudget::new(1 << 20),
        );
        drop(tree.enter().unwrap());
        drop(tree.enter().unwrap());
        let refused = tree.enter().err().unwrap();
        assert_eq!(
            refused,
            "the limit of 2 contexts started in this turn is reached"
        );
        tree.begin_turn();
        assert!(tree.enter().is_ok());
    }
}
