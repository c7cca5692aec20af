//! [`GuestLoader`]: the context tree's [`LoopLoader`] for contexts that run WebAssembly
//! components. One tree shares what it compiled (a specialist spawned a hundred times is
//! compiled and linked once) and the memory all its instances may hold; each guest's
//! loader also knows that guest, which a child's `same` names.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use wonopcode_agent_loop::AgentLoop;
use wonopcode_contexts::{
    ChildSeat, ContextTree, Inheritance, LoopLoader, LoopSource, ParentPlace,
};

use crate::component::Component;
use crate::engine::WasmEngine;
use crate::frame::{Frame, LoadedGuest};
use crate::host::spawn_shapes::wit_request;
use crate::memory_budget::MemoryBudget;
use crate::state::HostConfig;
use crate::wasm_loop::{WasmAgentLoop, load_guest};

/// What one tree's guests share: the engine and settings they are loaded with, the memory
/// they may hold together, and the guests loaded so far.
pub(crate) struct TreeGuests {
    pub engine: Arc<WasmEngine>,
    pub host_config: HostConfig,
    pub memory: Arc<MemoryBudget>,
    loaded: Mutex<HashMap<LoopSource, Arc<LoadedGuest>>>,
}

impl TreeGuests {
    /// A tree's, under `host_config`'s memory limit.
    pub fn new(engine: Arc<WasmEngine>, host_config: HostConfig) -> Arc<Self> {
        Arc::new(Self {
            memory: MemoryBudget::new(host_config.contexts.max_memory_bytes),
            engine,
            host_config,
            loaded: Mutex::new(HashMap::new()),
        })
    }

    /// The guest loaded before from `source`, if any.
    fn loaded(&self, source: &LoopSource) -> Option<Arc<LoadedGuest>> {
        self.loaded.lock().get(source).cloned()
    }
}

/// Loads a tree's guest children.
pub struct GuestLoader {
    guests: Arc<TreeGuests>,
    /// The guest whose children these are, which `same` names; `None` for the native loop.
    same: Option<Arc<LoadedGuest>>,
}

impl GuestLoader {
    /// Where the native loop's root delegates from: a tree of its own under `host_config`'s
    /// limits and resolver, its guests loaded on `engine`.
    pub fn root_place(engine: Arc<WasmEngine>, host_config: HostConfig) -> ParentPlace {
        let tree = ContextTree::new(host_config.contexts, host_config.resolver.clone());
        ParentPlace {
            tree,
            models: host_config.models.clone(),
            lineage: Inheritance::root(host_config.grants.clone()),
            loader: Arc::new(Self {
                guests: TreeGuests::new(engine, host_config),
                same: None,
            }),
        }
    }

    /// The place of the guest in `frame`, for its children.
    pub(crate) fn place_of(frame: &Frame) -> ParentPlace {
        ParentPlace {
            tree: frame.tree.clone(),
            models: frame.guests.host_config.models.clone(),
            lineage: frame.lineage.clone(),
            loader: Arc::new(Self {
                guests: frame.guests.clone(),
                same: Some(frame.loaded.clone()),
            }),
        }
    }
}

#[async_trait]
impl LoopLoader for GuestLoader {
    async fn load(
        &self,
        source: Option<&LoopSource>,
        seat: ChildSeat,
    ) -> Result<Box<dyn AgentLoop>, String> {
        let guests = &self.guests;
        // A module loaded for the first time in this tree comes with an instance proven to
        // run (its name and capabilities read): the child uses it instead of making another.
        let (loaded, first) = match source {
            None => (
                self.same.clone().ok_or_else(|| {
                    "module `same` is the parent's own guest, and the native loop has none: name a module".to_owned()
                })?,
                None,
            ),
            Some(source) => match guests.loaded(source) {
                Some(loaded) => (loaded, None),
                None => {
                    let component = Component::of(source)
                        .map_err(|e| e.to_string())?
                        .ok_or_else(|| format!("{source:?} is not a component"))?;
                    let (loaded, first) = load_guest(
                        guests.engine.clone(),
                        &component.bytes,
                        &component.origin,
                        guests.host_config.clone(),
                        guests.memory.clone(),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                    let loaded = Arc::new(loaded);
                    guests.loaded.lock().insert(source.clone(), loaded.clone());
                    (loaded, Some(first))
                }
            },
        };
        let frame = Frame {
            loaded,
            guests: guests.clone(),
            tree: seat.tree,
            params: Some(wit_request(&seat.request)),
            parent_id: Some(seat.parent_id),
            lineage: seat.lineage,
        };
        Ok(Box::new(WasmAgentLoop::child(frame, first)))
    }

    fn for_native(&self) -> Arc<dyn LoopLoader> {
        Arc::new(Self {
            guests: self.guests.clone(),
            same: None,
        })
    }
}
