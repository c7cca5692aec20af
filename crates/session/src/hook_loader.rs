//! Hook tables made into the hooks a context asks: the run's (the config file's and Claude
//! Code's settings files'), and each module's or agent's own (`hooks:` in `registry.yaml` or
//! an agent file), all run in the workspace with the commands' environment and the run's
//! sandbox, their components compiled through the cache by one engine made when the first
//! component needs it.

use std::sync::{Arc, OnceLock};

use wonopcode_agent_loop::hook::SharedHooks;
use wonopcode_hooks::{ConfiguredHooks, HookEnv, HookTable};
use wonopcode_registry::ScopedHooks;
use wonopcode_wasm_host::{CachePolicy, WasmEngine};

use crate::loops;

/// Makes hook tables into hooks.
pub(crate) struct HookLoader {
    /// Where the hooks run.
    pub env: HookEnv,
    /// The compile cache's policy, for components.
    pub cache: Option<CachePolicy>,
    engine: OnceLock<Arc<WasmEngine>>,
}

impl HookLoader {
    /// Hooks that run in `env`, their components cached under `cache`.
    pub fn new(env: HookEnv, cache: Option<CachePolicy>) -> Self {
        Self {
            env,
            cache,
            engine: OnceLock::new(),
        }
    }

    /// The hooks of `table`, its components loaded; `None` when it has none. A component
    /// that cannot load is one line naming it.
    pub fn hooks(&self, mut table: HookTable) -> Result<Option<SharedHooks>, String> {
        if table.is_empty() {
            return Ok(None);
        }
        if table.has_components() {
            let engine = self.engine()?;
            let vars = |name: &str| match &self.env.env {
                Some(vars) => vars.get(name).cloned(),
                None => std::env::var(name).ok(),
            };
            table
                .load_components(&engine, &self.env.workspace, &vars)
                .map_err(|e| e.to_string())?;
        }
        Ok(Some(Arc::new(ConfiguredHooks::new(
            table,
            self.env.clone(),
        ))))
    }

    /// The hooks a module or agent adds to its contexts (`Stop` also at its end as a child).
    pub fn scoped(&self, own: &ScopedHooks) -> Result<Option<SharedHooks>, String> {
        let mut table = HookTable::parse(&own.table, &own.file.display().to_string())
            .map_err(|e| e.to_string())?;
        if own.from_workspace {
            let (marked, refused) = table.from_workspace();
            for line in refused {
                tracing::warn!("{line}");
            }
            table = marked;
        }
        self.hooks(table.scoped())
    }

    fn engine(&self) -> Result<Arc<WasmEngine>, String> {
        if let Some(engine) = self.engine.get() {
            return Ok(engine.clone());
        }
        let engine = loops::engine(self.cache).map_err(|e| e.to_string())?;
        Ok(self.engine.get_or_init(|| engine).clone())
    }
}
