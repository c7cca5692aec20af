//! The registry's modules as the session resolves them: a name to its loop (the catalog),
//! and, for a context, what its lineage of grants makes of the run's tools: the sandbox its
//! commands run in (the run's, narrowed by each module's `grants.sandbox` and each spawn's
//! grants in turn — a grant can only narrow), the MCP servers `registry.yaml` gives its
//! module, started with the session's environment and form answerer and confined by that
//! sandbox, its tool allowlist and its limits. The root run of a named loop and every child
//! get them the same way.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use wonopcode_agent_loop::budget::{BudgetLimits, RunBudget, micro_cents};
use wonopcode_agent_loop::hook::SharedHooks;
use wonopcode_contexts::{ContextTools, Grant, LoopSource, ModuleResolver, SpawnSandbox};
use wonopcode_mcp::{Elicitor, ServerEntry};
use wonopcode_registry::{CatalogResolver, ModuleTools};
use wonopcode_sandbox::{Sandbox, SandboxPolicy};
use wonopcode_tools::{BuiltinOptions, Reach, WebFetchTool};

use crate::config::absolute_paths;
use crate::hook_loader::HookLoader;
use crate::oci_pins::PublishedModules;
use crate::skill_tool::SkillTool;

/// Resolves module names through the catalog and gives each context what its grants allow.
pub(crate) struct SessionResolver {
    pub catalog: CatalogResolver,
    /// Where servers without a `cwd` run.
    pub workspace: PathBuf,
    /// The environment servers start with.
    pub env: Arc<BTreeMap<String, String>>,
    /// Who fills in the servers' forms.
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// The run's sandbox policy (absolute paths): the widest any context gets.
    pub sandbox: SandboxPolicy,
    /// The run's built-in tool options, for the `bash` of a context with a narrower sandbox.
    pub builtins: BuiltinOptions,
    /// The sandboxes made for narrower policies, one per policy (each prepares its
    /// workspace once).
    pub narrower: Mutex<HashMap<SandboxPolicy, Arc<Sandbox>>>,
    /// The run's `skill` tool, narrowed for a module or agent that names its skills.
    pub skill_tool: Option<Arc<SkillTool>>,
    /// Makes a module's or agent's `hooks:` into hooks.
    pub hooks: Arc<HookLoader>,
    /// Each module's own hooks, made once (its components' instances shared by all its
    /// contexts).
    pub scoped_hooks: Mutex<HashMap<String, Option<SharedHooks>>>,
    /// The run's published modules, fetched as entries name them.
    pub published: Arc<PublishedModules>,
}

#[async_trait::async_trait]
impl ModuleResolver for SessionResolver {
    async fn resolve(&self, name: &str) -> Result<LoopSource, String> {
        let source = self.catalog.resolve(name).await?;
        self.published.located(source).await
    }

    fn module_dirs(&self) -> Vec<PathBuf> {
        self.catalog.module_dirs()
    }

    fn names(&self) -> Vec<(String, Option<String>)> {
        self.catalog.entries()
    }

    async fn context_tools(
        &self,
        module: Option<&str>,
        lineage: &[Grant],
    ) -> Result<ContextTools, String> {
        let policy = self.policy_of(lineage)?;
        let entry = module.and_then(|name| self.catalog.entry(name).ok());
        let mut own = match &entry {
            Some(entry) => self.start(&entry.name, &entry.context_tools, &policy).await,
            None => ContextTools::default(),
        };
        if let Some(entry) = &entry {
            own.hooks = self.scoped_hooks(&entry.name, &entry.context_tools)?;
            own.max_cost_usd = entry.context_tools.grants.max_cost;
            own.max_tokens = entry.context_tools.grants.max_tokens;
            if let (Some(only), Some(tool)) = (&entry.context_tools.skills, &self.skill_tool) {
                own.replacements.push(Arc::new(tool.narrowed(only)));
            }
        }
        if policy != self.sandbox {
            // A grant narrows the hosts `webfetch` reaches, as it narrows commands'.
            let reach = Reach::of(&policy, true);
            let options = BuiltinOptions {
                sandbox: Some(self.sandbox_for(policy)?),
                ..self.builtins.clone()
            };
            own.replacements.push(wonopcode_tools::bash_tool(&options));
            own.replacements.push(Arc::new(WebFetchTool::new(reach)));
        }
        Ok(own)
    }
}

impl SessionResolver {
    /// The hooks module `name` adds to its contexts, made at its first context.
    fn scoped_hooks(&self, name: &str, tools: &ModuleTools) -> Result<Option<SharedHooks>, String> {
        let Some(own) = &tools.hooks else {
            return Ok(None);
        };
        if let Some(made) = self.scoped_hooks.lock().get(name) {
            return Ok(made.clone());
        }
        let made = self
            .hooks
            .scoped(own)
            .map_err(|e| format!("module `{name}`: hooks: {e}"))?;
        self.scoped_hooks
            .lock()
            .insert(name.to_owned(), made.clone());
        Ok(made)
    }

    /// The budget a named root module's grants put the whole run under (`max_cost`,
    /// `max_tokens`), when they set one.
    pub(crate) fn module_budget(&self, name: &str) -> Result<Option<Arc<RunBudget>>, String> {
        let Ok(entry) = self.catalog.entry(name) else {
            return Ok(None);
        };
        let grants = &entry.context_tools.grants;
        let limits = BudgetLimits {
            max_cost_micro_cents: grants.max_cost.map(micro_cents).transpose()?,
            max_tokens: grants.max_tokens,
            max_wall: None,
        };
        Ok(limits
            .any()
            .then(|| RunBudget::scoped(limits, format!("module `{}`", entry.name))))
    }

    /// The sandbox policy of a context whose lineage is `lineage`: the run's, narrowed by
    /// each grant in turn. A grant wider than what it narrows is one line naming it.
    fn policy_of(&self, lineage: &[Grant]) -> Result<SandboxPolicy, String> {
        let home = dirs::home_dir();
        let mut policy = self.sandbox.clone();
        for grant in lineage {
            let (by, wanted) = match grant {
                Grant::Module(name) => {
                    let Ok(entry) = self.catalog.entry(name) else {
                        continue;
                    };
                    let Some(wanted) = &entry.context_tools.grants.sandbox else {
                        continue;
                    };
                    (
                        format!("the grants of module `{}`", entry.name),
                        absolute_paths(wanted, &self.workspace),
                    )
                }
                Grant::Spawn { context, sandbox } => {
                    let by = format!("the grants of context {context}");
                    let wanted = spawn_policy(sandbox, &policy, &self.workspace)
                        .map_err(|e| format!("{by}: {e}"))?;
                    (by, wanted)
                }
            };
            policy = policy
                .narrowed_to(&wanted, &self.workspace, home.as_deref())
                .map_err(|e| format!("{by}: {e}"))?;
        }
        Ok(policy)
    }

    /// The sandbox of `policy`, made once.
    fn sandbox_for(&self, policy: SandboxPolicy) -> Result<Arc<Sandbox>, String> {
        let mut made = self.narrower.lock();
        if let Some(sandbox) = made.get(&policy) {
            return Ok(sandbox.clone());
        }
        let sandbox = Arc::new(Sandbox::new(policy.clone()).map_err(|e| e.to_string())?);
        made.insert(policy, sandbox.clone());
        Ok(sandbox)
    }

    /// Starts the servers of `module`'s entry under `policy`; each entry that cannot be used
    /// is a failure naming it (`registry.yaml: module NAME: mcp_servers.SERVER: ...`).
    async fn start(
        &self,
        module: &str,
        tools: &ModuleTools,
        policy: &SandboxPolicy,
    ) -> ContextTools {
        let mut own = ContextTools {
            allowlist: tools.tools.clone(),
            generation: tools.generation,
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
        crate::mcp::confine_servers(&mut configs, policy, &self.workspace);
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

/// The policy a spawn's grants ask for, under a parent running `parent`: its mode (else the
/// parent's), its paths made absolute, its hosts parsed.
fn spawn_policy(
    grants: &SpawnSandbox,
    parent: &SandboxPolicy,
    workspace: &Path,
) -> Result<SandboxPolicy, String> {
    let mode = match &grants.mode {
        Some(mode) => mode.parse()?,
        None => parent.mode,
    };
    let network = grants
        .network
        .iter()
        .map(|host| host.parse())
        .collect::<Result<Vec<_>, String>>()?;
    let mut wanted = SandboxPolicy {
        write: grants.write.iter().map(PathBuf::from).collect(),
        read: grants.read.iter().map(PathBuf::from).collect(),
        network,
        ..SandboxPolicy::new(mode)
    };
    if let Some(max) = grants.max_processes {
        wanted.max_processes = max;
    }
    Ok(absolute_paths(&wanted, workspace))
}
