//! The process-wide Wasmtime engine: component model, async, epoch interruption with a
//! ticker thread, the pooling allocator where the OS allows it, one linker with WASI and the
//! `wonopcode:agent-loop` imports, and the on-disk cache of compiled components (`cache`).

use std::path::PathBuf;
use std::sync::Arc;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::bindings::{
    config, context, custom_tools, providers, storage, system, tools, types, ui,
};
use crate::cache::{CachePolicy, CompileCache};
use crate::error::WasmError;
use crate::exports::GuestPre;
use crate::host::config::{ConfigData, ConfigView};
use crate::host::context::{ContextData, ContextView};
use crate::host::providers::{ProvidersData, ProvidersView};
use crate::host::storage::{StorageData, StorageView};
use crate::host::system::{SystemData, SystemView};
use crate::host::tools::{ToolsData, ToolsView};
use crate::host::ui::{UiData, UiView};
use crate::limits::{EPOCH_TICK, GuestLimits};
use crate::loader::{PACKAGE, SERVED_VERSIONS};
use crate::since_v0_2;
use crate::state::HostState;

/// How to build the engine.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Limits for every guest.
    pub limits: GuestLimits,
    /// Where compiled components are cached; `None` disables the cache (`--no-cache`).
    pub cache_dir: Option<PathBuf>,
    /// How big and old the cache may grow.
    pub cache_policy: CachePolicy,
    /// Compile guests for a debugger: native debug info, no optimisation, backtraces with
    /// source lines (`crate::debug`; by default, whether `--debug-guest` is on).
    pub debug: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            limits: GuestLimits::default(),
            cache_dir: dirs::cache_dir().map(|d| d.join("wonopcode").join("components")),
            cache_policy: CachePolicy::default(),
            debug: crate::debug::is_on(),
        }
    }
}

/// The engine, its linker and its cache. Create one per process and share it.
pub struct WasmEngine {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
    pub(crate) limits: GuestLimits,
    cache: Option<CompileCache>,
    /// Whether the pooling allocator is in use (it falls back to on-demand).
    pub pooling: bool,
}

/// Component instances the pooling allocator holds slots for.
const POOL_COMPONENTS: u32 = 1100;

/// Bytes of a freed slot's memory (and of its tables) kept resident for the next instance.
const KEEP_RESIDENT: usize = 1 << 20;

fn config(limits: &GuestLimits, pooling: bool, debug: bool) -> Config {
    let mut config = Config::new();
    if debug {
        config.debug_info(true);
        config.wasm_backtrace_details(wasmtime::WasmBacktraceDetails::Enable);
        config.cranelift_opt_level(wasmtime::OptLevel::None);
    }
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.max_wasm_stack(1 << 20);
    config.async_stack_size(4 << 20);
    if pooling {
        // Room for a full context tree (1,000 live contexts by default) plus validation and
        // reload instances; an exhausted pool fails that one instantiation with an error.
        let mut pool = PoolingAllocationConfig::default();
        // A Rust guest is three core instances (its code, WASI's adapter, the shims) with
        // up to two memories and a few tables.
        pool.total_component_instances(POOL_COMPONENTS);
        pool.total_core_instances(POOL_COMPONENTS * 4);
        pool.total_memories(POOL_COMPONENTS * 2);
        pool.total_tables(POOL_COMPONENTS * 4);
        pool.total_stacks(POOL_COMPONENTS);
        // Freed slots are decommitted 32 at a time: one madvise and TLB flush instead of 32.
        pool.decommit_batch_size(32);
        // Where the kernel can say which pages a freed instance dirtied (`PAGEMAP_SCAN`,
        // Linux 6.7+), only those are reset, by copy, and stay resident: the next instance in
        // the slot takes no page faults on them. Elsewhere this changes nothing.
        pool.pagemap_scan(wasmtime::Enabled::Auto);
        pool.linear_memory_keep_resident(KEEP_RESIDENT);
        pool.table_keep_resident(KEEP_RESIDENT);
        pool.max_memory_size(limits.memory_bytes);
        pool.table_elements(limits.table_elements);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    config
}

/// Links each `wonopcode:agent-loop` interface on its own view of the store (`crate::host`),
/// once for each WIT version the host serves ([`SERVED_VERSIONS`]).
///
/// Every interface but `context` has the same shape in 0.3 as in 0.2.11; only its version
/// differs. The component model checks a guest's imports by their shapes, not by the Rust
/// types that implement them, so the same host functions are linked under both names: a
/// 0.2 guest's call costs what a 0.3 guest's does. `context` changed (one `spawn-request`
/// instead of ten calls): 0.2's has its own bindings, which forward to 0.3's
/// (`crate::since_v0_2`). A guest's `@0.2.4` import is satisfied by the host's `@0.2.11`
/// (Wasmtime matches semver-compatible names).
///
/// Every call into the host renews the guest's compute budget: the budget limits computation
/// *between* host calls. Doing it in the getters the bindings call anyway costs nothing; a
/// store call hook would cost every host call a second callback.
fn link_imports(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    fn renewed(state: &mut HostState) -> &mut HostState {
        state.guard.compute_ticks = 0;
        state
    }
    for version in SERVED_VERSIONS {
        let name = |interface: &str| format!("{PACKAGE}/{interface}@{version}");
        config::add_to_linker_instance::<_, ConfigData>(
            &mut linker.instance(&name("config"))?,
            |s| ConfigView::of(renewed(s)),
        )?;
        let custom = &mut linker.instance(&name("custom-tools"))?;
        custom_tools::add_to_linker_instance::<_, ToolsData>(custom, |s| {
            ToolsView::of(renewed(s))
        })?;
        providers::add_to_linker_instance::<_, ProvidersData>(
            &mut linker.instance(&name("providers"))?,
            |s| ProvidersView::of(renewed(s)),
        )?;
        storage::add_to_linker_instance::<_, StorageData>(
            &mut linker.instance(&name("storage"))?,
            |s| StorageView::of(renewed(s)),
        )?;
        system::add_to_linker_instance::<_, SystemData>(
            &mut linker.instance(&name("system"))?,
            |s| SystemView::of(renewed(s)),
        )?;
        tools::add_to_linker_instance::<_, ToolsData>(
            &mut linker.instance(&name("tools"))?,
            |s| ToolsView::of(renewed(s)),
        )?;
        ui::add_to_linker_instance::<_, UiData>(&mut linker.instance(&name("ui"))?, |s| {
            UiView::of(renewed(s))
        })?;
        // `types` declares types only; linked all the same, as the world's own linking would.
        types::add_to_linker_instance::<_, HasSelf<HostState>>(
            &mut linker.instance(&name("types"))?,
            |s| s,
        )?;
    }
    context::add_to_linker::<_, ContextData>(linker, |s| ContextView::of(renewed(s)))?;
    since_v0_2::context::add_to_linker::<_, ContextData>(linker, |s| ContextView::of(renewed(s)))?;
    Ok(())
}

impl WasmEngine {
    /// Builds the engine (pooling if possible), starts the epoch ticker and links the host.
    pub fn new(options: EngineOptions) -> Result<Arc<Self>, WasmError> {
        let (engine, pooling) = match Engine::new(&config(&options.limits, true, options.debug)) {
            Ok(engine) => (engine, true),
            Err(e) => {
                tracing::debug!(error = %e, "pooling allocator unavailable; using on-demand allocation");
                (
                    Engine::new(&config(&options.limits, false, options.debug))
                        .map_err(|e| WasmError::Engine(e.to_string()))?,
                    false,
                )
            }
        };
        start_ticker(&engine);
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| WasmError::Engine(e.to_string()))?;
        link_imports(&mut linker).map_err(|e| WasmError::Engine(e.to_string()))?;
        Ok(Arc::new(Self {
            engine,
            linker,
            limits: options.limits,
            cache: options
                .cache_dir
                .map(|dir| CompileCache::new(dir, options.cache_policy)),
            pooling,
        }))
    }

    /// Compiles a component, or loads it from the cache when this engine compiled the same
    /// bytes before. A corrupt cache entry is recompiled with a warning.
    pub fn compile(&self, bytes: &[u8], origin: &str) -> Result<Component, WasmError> {
        let Some(cache) = &self.cache else {
            return self.compile_fresh(bytes, origin);
        };
        let path = cache.entry_path(&self.engine, bytes);
        if path.is_file() {
            match cache.load(&self.engine, &path) {
                Ok(component) => return Ok(component),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring a corrupt compiled-component cache entry")
                }
            }
        }
        let component = self.compile_fresh(bytes, origin)?;
        if let Err(e) = cache.store(&component, &path) {
            tracing::warn!(path = %path.display(), error = %e, "cannot cache the compiled component");
        }
        Ok(component)
    }

    /// Links a compiled component: fails when it imports something the host lacks or lacks
    /// the world's exports.
    pub(crate) fn instance_pre(
        &self,
        component: &Component,
        origin: &str,
    ) -> Result<GuestPre, WasmError> {
        let pre =
            self.linker
                .instantiate_pre(component)
                .map_err(|e| WasmError::UnsatisfiedImport {
                    origin: origin.to_owned(),
                    reason: format!("{e:#}"),
                })?;
        GuestPre::new(pre, origin)
    }

    fn compile_fresh(&self, bytes: &[u8], origin: &str) -> Result<Component, WasmError> {
        Component::new(&self.engine, bytes).map_err(|e| WasmError::Compile {
            origin: origin.to_owned(),
            reason: format!("{e:#}"),
        })
    }
}

/// Advances the engine's epoch every `EPOCH_TICK` until the engine is dropped.
fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("wonopcode-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(EPOCH_TICK);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => return,
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the epoch ticker; guests will not be interrupted");
    }
}
