//! The registry's modules as the session resolves them: a name to its loop (the catalog),
//! and, for a context that runs a module, the MCP servers `registry.yaml` gives it, started
//! with the session's environment and form answerer, with its tool allowlist. The root run
//! of a named loop and every child spawned by name get them the same way.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use wonopcode_mcp::{Elicitor, ServerEntry};
use wonopcode_registry::{CatalogResolver, ModuleTools};
use wonopcode_sandbox::SandboxPolicy;
use wonopcode_wasm_host::context_tools::ContextTools;
use wonopcode_wasm_host::{LoopSource, ModuleResolver};

/// Resolves module names through the catalog and starts their contexts' own servers.
pub(crate) struct SessionResolver {
    pub catalog: CatalogResolver,
    /// Where servers without a `cwd` run.
    pub workspace: PathBuf,
    /// The environment servers start with.
    pub env: Arc<BTreeMap<String, String>>,
    /// Who fills in the servers' forms.
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// The run's sandbox policy, which servers without their own are confined by.
    pub sandbox: SandboxPolicy,
}

#[async_trait::async_trait]
impl ModuleResolver for SessionResolver {
    fn resolve(&self, name: &str) -> Result<LoopSource, String> {
        self.catalog.resolve(name)
    }

    fn module_dirs(&self) -> Vec<PathBuf> {
        self.catalog.module_dirs()
    }

    async fn context_tools(&self, name: &str) -> ContextTools {
        match self.catalog.entry(name) {
            Ok(entry) => self.start(&entry.name, &entry.context_tools).await,
            Err(_) => ContextTools::default(),
        }
    }
}

impl SessionResolver {
    /// Starts the servers of `module`'s entry; each entry that cannot be used is a failure
    /// naming it (`registry.yaml: module NAME: mcp_servers.SERVER: ...`).
    async fn start(&self, module: &str, tools: &ModuleTools) -> ContextTools {
        let mut own = ContextTools {
            allowlist: tools.tools.clone(),
            ..ContextTools::default()
        };
        if tools.mcp_servers.is_empty() {
            return own;
        }
        let lookup = |name: &str| std::env::var(name).ok();
        let mut configs = Vec::new();
        for (server, value) in &tools.mcp_servers {
            let checked = serde_json::from_value::<ServerEntry>(value.clone())
                .map_err(|e| e.to_string())
                .and_then(|entry| entry.resolve(server, &lookup).map_err(|e| e.reason));
            match checked {
                Ok(Some(config)) => configs.push(config),
                Ok(None) => {}
                Err(reason) => own.failures.push((
                    server.clone(),
                    format!("registry.yaml: module `{module}`: mcp_servers.{server}: {reason}"),
                )),
            }
        }
        crate::mcp::confine_servers(&mut configs, &self.sandbox, &self.workspace);
        let started = wonopcode_mcp::start_all(
            configs,
            &self.workspace,
            Some(self.env.clone()),
            self.elicitor.clone(),
        )
        .await;
        own.sources = started.sources().collect();
        own.failures.extend(
            started
                .failures
                .iter()
                .map(|f| (f.server.clone(), f.reason.clone())),
        );
        own.keep = Some(Box::new(started));
        own
    }
}
