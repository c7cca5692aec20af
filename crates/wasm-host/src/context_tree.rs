//! The tree of contexts one root run grows: the limits every spawn checks (depth, live
//! contexts, concurrency), where named modules come from, and the guests already loaded for
//! it, so a specialist spawned a hundred times is compiled and linked once.

use crate::loop_source::LoopSource;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::frame::LoadedGuest;

/// Limits on the context tree: depth 100, 1,000 live contexts, 4 children of a batch at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextLimits {
    /// Deepest context allowed (the root is depth 0).
    pub max_depth: usize,
    /// Contexts alive at once in the whole tree, the root included.
    pub max_live: usize,
    /// Children of one `spawn-parallel` call running at once.
    pub max_parallel: usize,
}

impl Default for ContextLimits {
    fn default() -> Self {
        Self {
            max_depth: 100,
            max_live: 1000,
            max_parallel: 4,
        }
    }
}

/// Where a module named in `context-module::named` lives. The CLI answers from the registry
/// (`registry.yaml`, loop directories, built-ins); a library embedder may answer as it likes.
pub trait ModuleResolver: Send + Sync {
    /// The module called `name` (with or without `.wasm`), or one line saying why not.
    fn resolve(&self, name: &str) -> Result<LoopSource, String>;

    /// Directories a `context-module::path` may name a file in, besides the workspace.
    fn module_dirs(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }
}

/// One root run's tree.
pub(crate) struct ContextTree {
    pub limits: ContextLimits,
    pub resolver: Option<Arc<dyn ModuleResolver>>,
    live: AtomicUsize,
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
    pub fn new(limits: ContextLimits, resolver: Option<Arc<dyn ModuleResolver>>) -> Arc<Self> {
        Arc::new(Self {
            limits,
            resolver,
            // The root context is alive for as long as the tree.
            live: AtomicUsize::new(1),
            loaded: Mutex::new(HashMap::new()),
        })
    }

    /// Takes a place for a new context, or says the tree is full.
    pub fn enter(self: &Arc<Self>) -> Result<LiveSlot, String> {
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
        );
        let a = tree.enter().unwrap();
        let _b = tree.enter().unwrap();
        let refused = tree.enter().err().unwrap();
        assert!(refused.contains("3 live contexts"), "{refused}");
        drop(a);
        assert!(tree.enter().is_ok());
    }
}
