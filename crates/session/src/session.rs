//! A session: one conversation's history, services and loop, and the prompts run through it.
//! The binary builds one from its flags; an embedder builds one in a few lines
//! (`examples/embed.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::budget::{BudgetLimits, CappedModel, CappedSource, RunBudget, tighter};
use wonopcode_agent_loop::compaction::{Compactor, estimate_tokens};
use wonopcode_agent_loop::hook::{HookSite, SharedHooks, TurnEvent};
use wonopcode_agent_loop::message::pending_tool_calls;
use wonopcode_agent_loop::{
    AgentLoop, ContextPath, Emitter, EventKind, LoopConfig, LoopContext, LoopResult, LoopStatus,
    Message, ModelSource, OnInterrupted, PendingCall, ProviderListing, Role, RunStats, SharedGate,
    SharedModel, ToolRegistry, resume_turn, run_turn,
};
use wonopcode_hooks::HookEnv;
use wonopcode_journal::{EarlierRun, Invocation, Runs};
use wonopcode_registry::{Catalog, CatalogResolver, SearchPath, Skills};
use wonopcode_sandbox::{Sandbox, SandboxMode};
use wonopcode_tools::permission::{PermissionPolicy, PolicyConfig, Prompter};
use wonopcode_tools::{BuiltinOptions, WebSearchTool, register_builtins};
use wonopcode_wasm_host::{CachePolicy, Delegation, Grant, GuestPrompter, HostConfig, LoopSource};

use crate::config::Config;
use crate::error::SessionError;
use crate::generation::Generation;
use crate::history::History;
use crate::hook_loader::HookLoader;
use crate::instructions::ProjectInstructions;
use crate::loops::{self, Reload, Reloader};
use crate::mcp;
use crate::models::{self, EarlierResponses, ModelChoice};
use crate::module_tools::SessionResolver;
use crate::run_journal::{RunJournal, RunMetaParts};
use crate::sink::{NoRenderer, Renderer, SessionSink};
use crate::skill_tool::SkillTool;
use crate::telemetry::SpanRecorder;
use wonopcode_mcp::{AcceptDefaults, Elicitor};
use wonopcode_wasm_host::ModuleResolver;
use wonopcode_wasm_host::context_tools::{ContextTools, report_failures};

/// The system prompt unless the config replaces it. It names no absolute path, so recorded
/// transcripts replay on any machine.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are wonopcode, a coding agent working in the user's workspace. \
Use the tools to inspect and change files; paths are relative to the workspace root. \
Read before you edit, keep changes minimal, and finish with a short summary of what you did.";

/// Model requests allowed per prompt unless the caller or the config says otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 50;

/// Builds a [`Session`]; every setting has a default but the workspace.
pub struct SessionBuilder {
    workspace: PathBuf,
    config: Config,
    model: Option<(SharedModel, Arc<dyn ModelSource>)>,
    model_choice: ModelChoice,
    source: LoopSource,
    history: Option<PathBuf>,
    renderer: Box<dyn Renderer>,
    trace: bool,
    permissions: Option<PolicyConfig>,
    yes: bool,
    prompter: Option<Arc<dyn Prompter>>,
    guest_prompter: Option<Arc<dyn GuestPrompter>>,
    max_iterations: Option<u32>,
    generation: Generation,
    ambient_generation: Generation,
    max_parallel: Option<u32>,
    loops_dirs: Vec<PathBuf>,
    cache: Option<CachePolicy>,
    bash_timeout: Option<Duration>,
    sandbox_mode: Option<SandboxMode>,
    budget: BudgetLimits,
    hot_reload: bool,
    /// MCP servers given for this run only (`--mcp NAME=COMMAND`).
    mcp: Vec<(String, String)>,
    /// Who fills in MCP servers' forms.
    elicitor: Option<Arc<dyn Elicitor>>,
    /// The registry name of the loop, when it was chosen by name (its own servers start).
    loop_name: Option<String>,
    catalog: Option<Catalog>,
    project_instructions: bool,
    agents: Vec<String>,
    /// Where the run's journal goes; `None`: no journal.
    runs: Option<Runs>,
    /// How the run was started, for its journal.
    invocation: Option<Invocation>,
    /// The interrupted run this one resumes, and what to do with its cut-off calls.
    resuming: Option<(EarlierRun, OnInterrupted)>,
    /// The run this one forks.
    fork: Option<Fork>,
    /// Turns the events into OpenTelemetry spans.
    telemetry: Option<Arc<SpanRecorder>>,
    /// The person trusts the workspace for this run (`--trust-workspace`, or a yes).
    trust_workspace: bool,
}

/// A run forked from another at one of its responses (`wonopcode fork`): the other run's
/// responses before that point are served from its journal, its tool calls run again (in the
/// workspace as it is), and from that response on the run asks its own model.
#[derive(Debug, Clone)]
pub struct Fork {
    /// The run forked.
    pub origin: String,
    /// Its journal's `responses.jsonl`.
    pub responses: PathBuf,
    /// The context forked.
    pub at: ContextPath,
    /// Its first response asked of the model.
    pub response: u32,
}

impl Fork {
    /// Where it forks, `CONTEXT:RESPONSE`.
    pub fn point(&self) -> String {
        format!("{}:{}", self.at, self.response)
    }
}

impl SessionBuilder {
    /// Keeps the run's journal under `runs` (`None`: no journal; the default for an
    /// embedder, which keeps its own records).
    pub fn journal(mut self, runs: Option<Runs>) -> Self {
        self.runs = runs;
        self
    }

    /// How the run was started (the command line), kept in its journal so `wonopcode
    /// resume` can start it again the same way.
    pub fn invocation(mut self, invocation: Invocation) -> Self {
        self.invocation = Some(invocation);
        self
    }

    /// Resumes `earlier`: its model responses are served from its journal before the
    /// model is asked anything, and its finished tool calls are answered from there in
    /// every context; a call it cut off is run again where that is safe, else as
    /// `on_interrupted` says. The caller gives the root the same prompts again.
    pub fn resuming(mut self, earlier: EarlierRun, on_interrupted: OnInterrupted) -> Self {
        self.resuming = Some((earlier, on_interrupted));
        self
    }

    /// Forks another run ([`Fork`]); the caller gives the root the same prompts again.
    pub fn forking(mut self, fork: Fork) -> Self {
        self.fork = Some(fork);
        self
    }

    /// The settings of the config file (default: none).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// The model and the models guests may switch to, opened by the caller.
    pub fn model(mut self, model: SharedModel, models: Arc<dyn ModelSource>) -> Self {
        self.model = Some((model, models));
        self
    }

    /// Which model to open (a transcript to replay, a provider, a model, a recording).
    pub fn model_choice(mut self, choice: ModelChoice) -> Self {
        self.model_choice = choice;
        self
    }

    /// Which loop runs the prompts (default: the native StandardLoop).
    pub fn loop_source(mut self, source: LoopSource) -> Self {
        self.source = source;
        self
    }

    /// Appends the conversation to this file, and continues the one it holds.
    pub fn history(mut self, path: impl Into<PathBuf>) -> Self {
        self.history = Some(path.into());
        self
    }

    /// Shows the events (default: nothing is shown).
    pub fn renderer(mut self, renderer: Box<dyn Renderer>) -> Self {
        self.renderer = renderer;
        self
    }

    /// Records a trace of the run (`Session::write_trace`).
    pub fn trace(mut self, trace: bool) -> Self {
        self.trace = trace;
        self
    }

    /// The permission policy (default: the config file's).
    pub fn permissions(mut self, policy: PolicyConfig) -> Self {
        self.permissions = Some(policy);
        self
    }

    /// Approves every `ask` without asking.
    pub fn yes(mut self, yes: bool) -> Self {
        self.yes = yes;
        self
    }

    /// Who answers permission questions and guests' questions (default: nobody).
    pub fn prompters(
        mut self,
        permissions: Arc<dyn Prompter>,
        guests: Arc<dyn GuestPrompter>,
    ) -> Self {
        self.prompter = Some(permissions);
        self.guest_prompter = Some(guests);
        self
    }

    /// Lets the native loop delegate (`spawn_agent` and its tools) to these agents and
    /// loops (`all`: every one the registry knows). Empty: only a root agent whose tools
    /// name `spawn_agent` delegates.
    pub fn agents(mut self, names: Vec<String>) -> Self {
        self.agents = names;
        self
    }

    /// Whether the project's `AGENTS.md` files are told to every context (default: yes).
    pub fn project_instructions(mut self, on: bool) -> Self {
        self.project_instructions = on;
        self
    }

    /// The catalog of named loops, when the caller has discovered it already (and reported
    /// what went wrong while looking); else the session discovers it on first use.
    pub fn catalog(mut self, catalog: Catalog) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// The registry name the loop was chosen by: the module's own MCP servers and tool
    /// allowlist (`registry.yaml`) apply to the root context, as to a child spawned by name.
    pub fn loop_name(mut self, name: impl Into<String>) -> Self {
        self.loop_name = Some(name.into());
        self
    }

    /// Who fills in the forms MCP servers ask for (`elicitation/create`). Default: with
    /// `yes`, every form is accepted with its defaults; else servers are told nobody can.
    pub fn elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.elicitor = Some(elicitor);
        self
    }

    /// Model requests allowed per prompt (default: the config's, else 50).
    pub fn max_iterations(mut self, limit: Option<u32>) -> Self {
        self.max_iterations = limit;
        self
    }

    /// Thinking, output cap and temperature the person chose (the config file's fill in
    /// what these leave unset); checked against the model before anything is stored.
    /// `ambient` (Claude Code's `MAX_THINKING_TOKENS`) fills in what both leave unset, and
    /// only for a model that thinks: a setting made for Claude models refuses no other.
    pub fn generation(mut self, chosen: Generation, ambient: Generation) -> Self {
        self.generation = chosen;
        self.ambient_generation = ambient;
        self
    }

    /// Children of one parallel spawn running at once (default: the config's).
    pub fn max_parallel(mut self, limit: Option<u32>) -> Self {
        self.max_parallel = limit;
        self
    }

    /// Directories searched first for named loops.
    pub fn loops_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.loops_dirs = dirs;
        self
    }

    /// The compile cache's policy (`None`: no cache; default: the config's).
    pub fn cache(mut self, cache: Option<CachePolicy>) -> Self {
        self.cache = cache;
        self
    }

    /// The user's limit on each `bash` command: its timeout, which a model may lower but
    /// not raise (default: 2 minutes, and a model may ask for up to 10).
    pub fn bash_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.bash_timeout = timeout;
        self
    }

    /// The run's spending limits (`--max-cost`, `--max-tokens`, `--max-wall`; default none),
    /// shared by all its contexts and kept before each request.
    pub fn budget(mut self, limits: BudgetLimits) -> Self {
        self.budget = limits;
        self
    }

    /// The sandbox mode of commands (`--sandbox`; default: the config file's, else
    /// `workspace-write`).
    pub fn sandbox_mode(mut self, mode: Option<SandboxMode>) -> Self {
        self.sandbox_mode = mode;
        self
    }

    /// MCP servers for this run besides the config file's: each a name and a command line
    /// (`--mcp NAME=COMMAND`).
    pub fn mcp_servers(mut self, servers: Vec<(String, String)>) -> Self {
        self.mcp = servers;
        self
    }

    /// Reloads a guest file that changed, before each prompt (`Session::reload_if_changed`).
    pub fn hot_reload(mut self, on: bool) -> Self {
        self.hot_reload = on;
        self
    }

    /// Turns the session's events into OpenTelemetry spans (`Telemetry::recorder`).
    pub fn telemetry(mut self, recorder: Option<Arc<SpanRecorder>>) -> Self {
        self.telemetry = recorder;
        self
    }

    /// Trust the workspace for this run: its hooks and its agents' hooks and MCP servers
    /// are used (without it, only when the user's trust file says so).
    pub fn trust_workspace(mut self, trusted: bool) -> Self {
        self.trust_workspace = trusted;
        self
    }

    /// Opens the model, the history and the loop, and announces the session.
    pub async fn build(self) -> Result<Session, SessionError> {
        let root = workspace_root(&self.workspace)?;
        let config = self.config;
        let mut notices = Vec::new();
        // A cloned repository runs nothing before the person trusts it.
        let found = crate::trust::WorkspaceExecutables::scan(&root);
        let trusted = crate::trust::trusted_with(&root, self.trust_workspace, &found)
            .unwrap_or_else(|e| {
                notices.push(format!("{e}: the workspace is taken as not trusted"));
                false
            });
        if !trusted && !found.is_empty() {
            notices.push(crate::trust::left_out_notice(&found));
        }
        // An agent file's model, iteration and time limits are the run's unless the caller
        // chose its own.
        let agent_file = self.source.agent().cloned();
        let mut model_choice = self.model_choice;
        let mut budget_limits = self.budget;
        if let Some(agent) = &agent_file {
            if model_choice.provider.is_none() && model_choice.model.is_none() {
                model_choice.provider = agent.provider.clone();
                model_choice.model = agent.model.clone();
            }
            let wall = agent.timeout_ms.map(Duration::from_millis);
            budget_limits.max_wall = tighter(budget_limits.max_wall, wall);
        }
        let earlier = match (&self.resuming, &self.fork) {
            (Some((earlier, _)), _) => Some(EarlierResponses {
                path: earlier.responses.clone(),
                cut: None,
            }),
            (None, Some(fork)) => Some(EarlierResponses {
                path: fork.responses.clone(),
                cut: Some((fork.at.clone(), fork.response)),
            }),
            (None, None) => None,
        };
        let (provider, models) = match self.model {
            // A model of the caller's: the journal's responses are served before it.
            Some((model, models)) => match &earlier {
                Some(earlier) => models::resumed(earlier, model, models)?,
                None => (model, models),
            },
            None => models::open(&model_choice, &config, earlier.as_ref()).await?,
        };
        let journal = self.runs.as_ref().and_then(|runs| {
            RunJournal::create(runs)
                .map_err(|e| notices.push(format!("the run is not journaled: {e}")))
                .ok()
        });
        let (provider, models) = match &journal {
            Some(journal) => journal.recording(provider, models)?,
            None => (provider, models),
        };
        // Every model of the run, the ones guests switch to included, draws on one budget;
        // a cost limit on a model without prices is refused before anything is stored.
        let run_budget = budget_limits.any().then(|| RunBudget::new(budget_limits));
        let (provider, models) = capped(provider, models, run_budget)?;
        let ambient = match provider.info().capabilities.thinking {
            true => self.ambient_generation,
            false => Generation::default(),
        };
        let agent_generation = agent_file
            .as_ref()
            .map(|a| a.generation)
            .unwrap_or_default();
        let request = self
            .generation
            .over(agent_generation)
            .over(config.generation())
            .over(ambient)
            .request_options(provider.info())
            .map_err(SessionError::Choice)?;
        let mut tools = ToolRegistry::new();
        let command_env = mcp::command_environment(&config)?;
        // A sandbox the kernel cannot enforce is refused here, before anything is stored.
        let sandbox_policy = config.sandbox_policy(self.sandbox_mode, &root);
        let sandbox_mode = sandbox_policy.mode;
        let sandbox = Sandbox::new(sandbox_policy.clone())
            .map(Arc::new)
            .map_err(|e| SessionError::Choice(e.to_string()))?;
        let mut options = BuiltinOptions {
            command_env: command_env.clone(),
            sandbox: Some(sandbox.clone()),
            ..BuiltinOptions::default()
        };
        if let Some(limit) = self.bash_timeout {
            options = options.with_bash_limit(limit);
        }
        register_builtins(&mut tools, options.clone())
            .map_err(|e| SessionError::Choice(format!("the built-in tools: {e}")))?;
        let skills = Skills::discover(&root);
        let skill_tool = register_optional_tools(&mut tools, &config, &skills)?;
        // MCP servers get the same environment as commands: the run's secrets stay out.
        let mut mcp_configs = mcp::server_configs(&config.mcp_servers, &self.mcp)?;
        mcp::confine_servers(&mut mcp_configs, &sandbox_policy, &root);
        // A rule for a tool the run lacks would match nothing: refused before anything is
        // stored.
        let permissions = self
            .permissions
            .unwrap_or_else(|| config.permissions.clone());
        for rule in &permissions.rules {
            if !mcp::names_a_server(&rule.tool) {
                rule.check_tool(tools.names())
                    .map_err(|e| SessionError::Choice(e.to_string()))?;
            }
        }
        notices.extend(sandbox.notices());
        notices.extend(skills.warnings);
        let (history, messages) = open_history(self.history.as_deref(), &mut notices)?;
        // A continued conversation's answers were responses of the root already: a replay
        // serves, and a recording numbers, the next one after them.
        for _ in messages.iter().filter(|m| m.role == Role::Assistant) {
            provider.skip_response(&ContextPath::root());
        }
        let session_id = history
            .as_ref()
            .map_or_else(new_session_id, |h| h.session_id.clone());
        let permission_policy =
            Arc::new(PermissionPolicy::new(permissions, self.yes, self.prompter));
        let policy: SharedGate = permission_policy.clone();
        let token = CancellationToken::new();
        let sink = Arc::new(SessionSink::new(
            history,
            self.renderer,
            token.clone(),
            self.trace,
        ));
        if let Some(recorder) = self.telemetry {
            sink.telemetry(recorder);
        }
        let events = Emitter::new(sink.clone(), ContextPath::root());
        let mut loop_config = LoopConfig {
            max_iterations: self
                .max_iterations
                .or(agent_file.as_ref().and_then(|a| a.max_iterations))
                .or(config.max_iterations)
                .unwrap_or(DEFAULT_MAX_ITERATIONS),
            system_prompt: Some(match &agent_file {
                Some(agent) => agent.system_prompt.clone(),
                None => config
                    .system_prompt
                    .clone()
                    .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned()),
            }),
            request,
            ..LoopConfig::default()
        };
        loop_config.compaction.max_messages = config.compact_after_messages;
        match config.clear_tool_outputs {
            Some(crate::config::ClearSetting::Off) => {
                loop_config.compaction.clear_tool_outputs = None
            }
            Some(crate::config::ClearSetting::On(sizes)) => {
                loop_config.compaction.clear_tool_outputs = Some(sizes);
            }
            None => {}
        }
        // One hidden list for commands and file tools alike.
        loop_config.hidden_paths = sandbox.hidden_paths().into();
        // The run this one resumes or forks, for its `run.json`.
        let resumes = self.resuming.as_ref().map(|(e, _)| e.meta.id.clone());
        let origin = self
            .fork
            .as_ref()
            .map(|f| format!("{}@{}", f.origin, f.point()));
        let mut resumed = None;
        if let Some((earlier, on_interrupted)) = self.resuming {
            let mut calls = earlier.calls;
            calls.on_interrupted = on_interrupted;
            resumed = Some(EventKind::RunResumed {
                from: earlier.meta.id.clone(),
                unfinished: {
                    let mut paths: Vec<&ContextPath> = calls.unfinished.iter().collect();
                    paths.sort();
                    paths.iter().map(|c| c.to_string()).collect()
                },
                calls: u32::try_from(calls.finished_count()).unwrap_or(u32::MAX),
            });
            if let Some(torn) = &earlier.torn {
                notices.push(format!(
                    "run {}'s journal ended in a record cut short (line {}): the run goes on from the record before it",
                    earlier.meta.id, torn.line
                ));
            }
            loop_config.earlier = Some(Arc::new(calls));
        }
        let forked = self.fork.map(|fork| EventKind::RunForked {
            at: fork.point(),
            from: fork.origin,
        });
        let hook_loader = Arc::new(HookLoader::new(
            HookEnv {
                workspace: root.clone(),
                env: Some(command_env.clone()),
                sandbox: Some(sandbox.clone()),
            },
            self.cache,
        ));
        loop_config.hooks = run_hooks(&config, &root, &hook_loader, trusted, &mut notices)?;
        let instructions = if self.project_instructions {
            ProjectInstructions::find(&root, &loop_config.hidden_paths)
        } else {
            ProjectInstructions::default()
        };
        if !instructions.text.is_empty() {
            loop_config.instructions = Some(instructions.text.as_str().into());
        }
        let elicitor = self.elicitor.or_else(|| {
            self.yes
                .then(|| Arc::new(AcceptDefaults) as Arc<dyn Elicitor>)
        });
        let resolver = Arc::new(SessionResolver {
            catalog: {
                let search =
                    SearchPath::standard(&self.loops_dirs, Some(&root)).trusting_workspace(trusted);
                match self.catalog {
                    Some(catalog) => CatalogResolver::discovered(search, catalog),
                    None => CatalogResolver::new(search),
                }
            },
            workspace: root.clone(),
            env: command_env.clone(),
            elicitor: elicitor.clone(),
            sandbox: sandbox_policy,
            builtins: options,
            narrower: Default::default(),
            skill_tool,
            hooks: hook_loader.clone(),
            scoped_hooks: Default::default(),
        });
        // A named root loop starts its lineage with its module's grants; its limits cap the
        // whole run under the run's own.
        let root_grants: Vec<Grant> = self.loop_name.iter().cloned().map(Grant::Module).collect();
        let root_budget = match &self.loop_name {
            Some(name) => resolver.module_budget(name).map_err(SessionError::Choice)?,
            None => None,
        };
        let (provider, models) = capped(provider, models, root_budget)?;
        let host_config = HostConfig {
            values: config.guest.clone(),
            prompter: self.guest_prompter,
            contexts: config.contexts.limits(self.max_parallel),
            resolver: Some(resolver.clone()),
            models: Some(models.clone()),
            grants: root_grants.clone(),
            ..HostConfig::default()
        };
        // Delegation from the native loop: on when asked for (`agents`), or when the root
        // is an agent whose tools name it.
        let root_delegates = self.loop_name.as_ref().is_some_and(|name| {
            resolver.catalog.entry(name).is_ok_and(|e| {
                e.context_tools
                    .tools
                    .as_ref()
                    .is_some_and(|t| t.iter().any(|n| n == "spawn_agent"))
            })
        });
        let native_root = matches!(self.source, LoopSource::Native | LoopSource::Agent(_));
        if native_root && (!self.agents.is_empty() || root_delegates) {
            register_delegation(&mut tools, &self.agents, self.cache, &host_config)?;
        } else if !self.agents.is_empty() {
            return Err(SessionError::Choice(
                "--agents lets the native loop delegate; a WebAssembly loop spawns with its own `context` calls".to_owned(),
            ));
        }
        // The MCP servers (the config's, and a named root loop's own) start while the loop
        // loads (a guest may compile): the first request waits for the slowest, not for all.
        let module_tools = async {
            match &self.loop_name {
                Some(name) => resolver.context_tools(Some(name), &root_grants).await,
                None => Ok(ContextTools::default()),
            }
        };
        let switcher = LoopSwitcher {
            resolver: resolver.clone(),
            cache: self.cache,
            host_config: host_config.clone(),
            hot_reload: self.hot_reload,
            scoped_root: self.loop_name.as_ref().and_then(|name| {
                let entry = resolver.catalog.entry(name).ok()?;
                let own = !entry.context_tools.is_empty() || entry.location.agent().is_some();
                own.then(|| name.clone())
            }),
        };
        let (mcp_failures, loaded, own) = tokio::join!(
            mcp::start(mcp_configs, &root, command_env, &mut tools, elicitor),
            loops::load(&self.source, self.cache, host_config),
            module_tools,
        );
        let (agent, reloader) = loaded?;
        let own = own.map_err(SessionError::Choice)?;
        let (mut tools, clashes) = own.apply(&tools);
        loop_config.hooks =
            wonopcode_agent_loop::hook::layered(loop_config.hooks.take(), own.hooks.clone());
        if let Some(file) = agent_file.as_ref().filter(|a| !a.denied_tools.is_empty()) {
            let kept: Vec<String> = tools
                .names()
                .filter(|name| !file.denied_tools.iter().any(|d| d == name))
                .map(str::to_owned)
                .collect();
            tools = tools.filtered(kept.iter().map(String::as_str));
        }
        let loop_name = agent_file
            .as_ref()
            .map_or(agent.name(), |a| a.name.as_str())
            .to_owned();
        loop_config.agent = Some(loop_name.as_str().into());
        if let Some(journal) = &journal {
            let info = provider.info();
            let parts = RunMetaParts {
                workspace: &root.display().to_string(),
                loop_name: &loop_name,
                model: &format!("{}/{}", info.provider, info.id),
                invocation: self.invocation.clone(),
                resumes,
                origin,
            };
            match journal.begin(parts) {
                Ok(log) => sink.journal(log),
                Err(e) => notices.push(format!("the run is not journaled: {e}")),
            }
        }
        events.emit(EventKind::SessionStarted {
            session_id: session_id.clone(),
            loop_name,
            model: provider.info().id.clone(),
            schema_version: wonopcode_agent_loop::event::EVENT_SCHEMA_VERSION,
        });
        for lineage in [resumed, forked].into_iter().flatten() {
            events.emit(lineage);
        }
        if let Some(hooks) = loop_config.hooks.clone() {
            let site = HookSite::new(&events, &session_id, &root, loop_config.agent_name());
            let source = if messages.is_empty() {
                "startup"
            } else {
                "resume"
            };
            let model = provider.info().id.clone();
            let said = hooks
                .turn_event(
                    &site,
                    TurnEvent::SessionStarted {
                        source,
                        model: &model,
                    },
                )
                .await;
            if let Some(added) = said.context {
                loop_config.add_instructions(&added);
            }
        }
        if !instructions.files.is_empty() {
            events.emit(EventKind::ProjectInstructionsLoaded {
                files: instructions
                    .files
                    .iter()
                    .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
                    .collect(),
                truncated: instructions.truncated,
            });
        }
        for failure in mcp_failures {
            events.emit(EventKind::McpServerFailed {
                server: failure.server,
                error: failure.reason,
            });
        }
        report_failures(&events, &own, clashes);
        Ok(Session {
            root,
            journal,
            agent_file: agent_file.map(|a| a.name.clone()),
            messages,
            provider,
            models,
            tools,
            policy,
            config: loop_config,
            events,
            session_id,
            token,
            current_turn: TurnCanceller::default(),
            agent,
            reloader: reloader.filter(|_| self.hot_reload),
            switcher,
            sink,
            notices,
            sandbox_mode,
            permission_policy,
            _module_tools: own,
        })
    }
}

/// The workspace as a canonical directory, or why it cannot be one.
fn workspace_root(workspace: &Path) -> Result<PathBuf, SessionError> {
    let root = workspace.canonicalize().map_err(|e| {
        SessionError::Choice(format!(
            "workspace directory {} is not usable: {e}",
            workspace.display()
        ))
    })?;
    if !root.is_dir() {
        return Err(SessionError::Choice(format!(
            "{} is not a directory",
            workspace.display()
        )));
    }
    Ok(root)
}

/// The model and the source of the models it may switch to, both drawing on `budget` when
/// there is one; a model without prices under a cost limit is refused.
fn capped(
    provider: SharedModel,
    models: Arc<dyn ModelSource>,
    budget: Option<Arc<RunBudget>>,
) -> Result<(SharedModel, Arc<dyn ModelSource>), SessionError> {
    let Some(budget) = budget else {
        return Ok((provider, models));
    };
    budget
        .check_model(provider.info())
        .map_err(SessionError::Choice)?;
    Ok((
        CappedModel::wrap(provider, budget.clone()),
        CappedSource::wrap(models, budget),
    ))
}

/// The tools a run has only when it is set up for them: `websearch` when the config names a
/// search engine, `skill` when there are skills (its description lists them). The skill
/// tool is returned too, for the contexts whose skills are narrowed.
fn register_optional_tools(
    tools: &mut ToolRegistry,
    config: &Config,
    skills: &Skills,
) -> Result<Option<Arc<SkillTool>>, SessionError> {
    if let Some(engine) = &config.websearch {
        let tool = WebSearchTool::new(engine.clone(), &|name| std::env::var(name).ok())
            .map_err(SessionError::Choice)?;
        tools
            .register(Arc::new(tool))
            .map_err(|e| SessionError::Choice(format!("the websearch tool: {e}")))?;
    }
    let skill_tool = SkillTool::of(skills).map(Arc::new);
    if let Some(tool) = &skill_tool {
        tools
            .register(tool.clone())
            .map_err(|e| SessionError::Choice(format!("the skill tool: {e}")))?;
    }
    Ok(skill_tool)
}

/// The history file at `path` and the conversation it holds (none without a file); a file
/// torn by a crash is repaired, with a notice saying where its tail was kept.
fn open_history(
    path: Option<&Path>,
    notices: &mut Vec<String>,
) -> Result<(Option<History>, Vec<Message>), SessionError> {
    let Some(path) = path else {
        return Ok((None, Vec::new()));
    };
    let (history, messages) = History::open(path, &new_session_id())?;
    if let Some(aside) = &history.torn {
        notices.push(format!(
            "the history file {} ended in an incomplete record (a crash or a full disk); it is kept in {} and the history goes on from the last whole record",
            path.display(),
            aside.display()
        ));
    }
    Ok((Some(history), messages))
}

/// The run's hooks: the config file's, then Claude Code's settings files' (the workspace's
/// when it is `trusted`; grants its hooks may not have are one notice each).
fn run_hooks(
    config: &Config,
    root: &Path,
    loader: &HookLoader,
    trusted: bool,
    notices: &mut Vec<String>,
) -> Result<Option<SharedHooks>, SessionError> {
    let file = config
        .file
        .as_ref()
        .map_or_else(|| "the config file".to_owned(), |f| f.display().to_string());
    let configured = config.hooks.as_ref().map(|h| (h, file.as_str()));
    let (table, refused) =
        wonopcode_hooks::discover(configured, root, dirs::home_dir().as_deref(), trusted)
            .map_err(|e| SessionError::Choice(format!("hooks: {e}")))?;
    notices.extend(refused);
    loader
        .hooks(table)
        .map_err(|e| SessionError::Choice(format!("hooks: {e}")))
}

/// The native loop's delegation tools (`spawn_agent` and the rest), for the agents `agents`
/// names (`all`, or none named: every one).
fn register_delegation(
    tools: &mut ToolRegistry,
    agents: &[String],
    cache: Option<CachePolicy>,
    host_config: &HostConfig,
) -> Result<(), SessionError> {
    let allowed = (!agents.iter().any(|a| a == "all")).then_some(agents);
    let allowed = allowed.filter(|a| !a.is_empty());
    let engine = loops::engine(cache)?;
    let delegation =
        Delegation::root(engine, host_config.clone(), allowed).map_err(SessionError::Choice)?;
    for tool in delegation.tools() {
        tools
            .register(tool)
            .map_err(|e| SessionError::Choice(format!("the delegation tools: {e}")))?;
    }
    Ok(())
}

/// Cancels the turn in progress, from another task (a Ctrl-C handler).
#[derive(Clone, Default)]
pub struct TurnCanceller(Arc<Mutex<Option<CancellationToken>>>);

impl TurnCanceller {
    /// Cancels the running turn; false when no turn is running (or it is cancelled already).
    pub fn cancel(&self) -> bool {
        match &*self.0.lock() {
            Some(token) if !token.is_cancelled() => {
                token.cancel();
                true
            }
            _ => false,
        }
    }
}

/// One conversation: run prompts with [`Session::prompt`], continue a suspended run with
/// [`Session::resume`].
pub struct Session {
    root: PathBuf,
    /// The run's journal, when it has one.
    journal: Option<RunJournal>,
    /// The agent file's name when the root runs one.
    agent_file: Option<String>,
    messages: Vec<Message>,
    provider: SharedModel,
    /// The models the root may switch to (`Session::switch_model`), under the run's budget.
    models: Arc<dyn ModelSource>,
    tools: ToolRegistry,
    policy: SharedGate,
    config: LoopConfig,
    events: Emitter,
    session_id: String,
    token: CancellationToken,
    current_turn: TurnCanceller,
    agent: Arc<dyn AgentLoop>,
    reloader: Option<Reloader>,
    /// What switching the root's loop takes.
    switcher: LoopSwitcher,
    sink: Arc<SessionSink>,
    /// What the user should know about how the session started (a repaired history file).
    notices: Vec<String>,
    /// The mode commands run in.
    sandbox_mode: SandboxMode,
    /// The permission policy (also `policy`), for what it refused unattended.
    permission_policy: Arc<PermissionPolicy>,
    /// The root loop's own MCP servers (a named module's), kept running with the session.
    _module_tools: ContextTools,
}

/// What [`Session::switch_loop`] needs: the catalog, and how the first loop was loaded.
struct LoopSwitcher {
    resolver: Arc<SessionResolver>,
    cache: Option<CachePolicy>,
    host_config: HostConfig,
    hot_reload: bool,
    /// The named root loop, when its registry entry has tools or grants of its own or it is
    /// an agent file: they are set up for the whole run, so the session keeps that loop.
    scoped_root: Option<String>,
}

/// What a turn starts from.
enum Turn<'p> {
    Prompt(&'p str),
    Resume(Vec<(String, String, bool)>),
}

impl Session {
    /// A builder for a session working in `workspace`. The workspace's hooks and its agents'
    /// hooks and MCP servers are used only when the workspace is trusted
    /// ([`SessionBuilder::trust_workspace`], or the user's trust file: `crate::trust`).
    pub fn builder(workspace: impl Into<PathBuf>) -> SessionBuilder {
        SessionBuilder {
            workspace: workspace.into(),
            config: Config::default(),
            model: None,
            model_choice: ModelChoice::default(),
            source: LoopSource::Native,
            history: None,
            renderer: Box::new(NoRenderer),
            trace: false,
            permissions: None,
            yes: false,
            prompter: None,
            guest_prompter: None,
            max_iterations: None,
            generation: Generation::default(),
            ambient_generation: Generation::default(),
            max_parallel: None,
            loops_dirs: Vec::new(),
            cache: Some(CachePolicy::default()),
            bash_timeout: None,
            sandbox_mode: None,
            budget: BudgetLimits::default(),
            hot_reload: false,
            mcp: Vec::new(),
            elicitor: None,
            loop_name: None,
            catalog: None,
            project_instructions: true,
            runs: None,
            agents: Vec::new(),
            invocation: None,
            resuming: None,
            fork: None,
            telemetry: None,
            trust_workspace: false,
        }
    }

    /// Starts the loop (`on_start`), before the first prompt.
    pub async fn start(&mut self) -> Result<(), SessionError> {
        let token = self.token.child_token();
        let agent = self.agent.clone();
        agent
            .on_start(&mut self.context(&token))
            .await
            .map_err(SessionError::Start)
    }

    /// Runs one prompt to its end.
    pub async fn prompt(&mut self, prompt: &str) -> LoopResult {
        if let Some(journal) = &self.journal {
            journal.prompted(prompt);
        }
        self.turn(Turn::Prompt(prompt)).await
    }

    /// The id of the run's journal (`wonopcode runs show ID`), when it has one.
    pub fn run_id(&self) -> Option<&str> {
        self.journal.as_ref().map(RunJournal::id)
    }

    /// Continues a suspended run: `answers` (`(call id, text)`) answer the calls it waits
    /// on, the others run under the session's permissions. An answer for a call nobody
    /// waits on, or a history with no suspended run, is refused before anything runs.
    pub async fn resume(
        &mut self,
        answers: Vec<(String, String)>,
    ) -> Result<LoopResult, SessionError> {
        check_answers(&self.messages, &answers)?;
        let answers = answers
            .into_iter()
            .map(|(id, text)| (id, text, false))
            .collect();
        Ok(self.turn(Turn::Resume(answers)).await)
    }

    async fn turn(&mut self, turn: Turn<'_>) -> LoopResult {
        let prompted = matches!(turn, Turn::Prompt(_));
        let before = self.messages.len();
        let token = self.token.child_token();
        *self.current_turn.0.lock() = Some(token.clone());
        let agent = self.agent.clone();
        let result = {
            let mut ctx = self.context(&token);
            match turn {
                Turn::Prompt(p) => run_turn(agent.as_ref(), &mut ctx, p).await,
                Turn::Resume(answers) => resume_turn(agent.as_ref(), &mut ctx, answers).await,
            }
        };
        *self.current_turn.0.lock() = None;
        if prompted && result.status == LoopStatus::Error {
            self.withdraw_unanswered(before);
        }
        result
    }

    /// Takes a prompt the model never answered (its turn failed before any response) out
    /// of the conversation, so the next prompt starts where the last answer ended and a
    /// replayed session stays in step with its recording. `context.compacted` (strategy
    /// `withdraw`) says so, and the history file records it.
    fn withdraw_unanswered(&mut self, before: usize) {
        let unanswered = matches!(
            self.messages.get(before..),
            Some([prompt]) if prompt.role == Role::User
        );
        if !unanswered {
            return;
        }
        let system = self.config.system_prompt.as_deref();
        let tokens_before = estimate_tokens(system, &self.messages);
        self.messages.truncate(before);
        self.events.emit(EventKind::ContextCompacted {
            strategy: "withdraw".to_owned(),
            tokens_before: tokens_before as u64,
            tokens_after: estimate_tokens(system, &self.messages) as u64,
            messages: self.messages.clone(),
        });
    }

    fn context<'b>(&'b mut self, cancel: &'b CancellationToken) -> LoopContext<'b> {
        LoopContext {
            cwd: &self.root,
            messages: &mut self.messages,
            provider: &self.provider,
            tools: &self.tools,
            permissions: &self.policy,
            config: &self.config,
            cancel,
            events: &self.events,
            session_id: self.session_id.clone(),
            stats: RunStats::default(),
        }
    }

    /// Hot reload: a guest file that changed since the last prompt is validated and loaded
    /// (`loop.reloaded`); the history carries over, since it lives in the session. Returns
    /// why a changed file was not loaded, if it was not.
    pub async fn reload_if_changed(&mut self) -> Option<String> {
        let reloader = self.reloader.as_mut()?;
        match reloader.check().await {
            Reload::Unchanged => None,
            Reload::Rejected(why) => Some(why),
            Reload::Loaded(reloaded) => {
                self.events.emit(EventKind::LoopReloaded {
                    loop_name: reloaded.agent.name().to_owned(),
                    module: reloaded.module,
                    sha256: reloaded.sha256,
                });
                self.agent = reloaded.agent;
                None
            }
        }
    }

    /// Runs the named loop `name` from the next prompt on: the conversation, model, tools
    /// and approvals carry over, and the new loop starts (`on_start`) at once. A loop whose
    /// registry entry has tools or grants of its own, or that is an agent file (or a session
    /// started on one) is refused in one line: those are set up when a run starts.
    pub async fn switch_loop(&mut self, name: &str) -> Result<&str, SessionError> {
        let switcher = &self.switcher;
        if let Some(root) = &switcher.scoped_root {
            return Err(SessionError::Choice(format!(
                "the running loop `{root}` has a prompt, tools or grants of its own, set up for the whole run: start a new run to leave it"
            )));
        }
        let entry = switcher
            .resolver
            .catalog
            .entry(name)
            .map_err(SessionError::Choice)?;
        if !entry.context_tools.is_empty() || entry.location.agent().is_some() {
            return Err(SessionError::Choice(format!(
                "`{name}` has a prompt, tools or grants of its own, which are set up when a run starts: run `wonopcode --agent-loop-name {name}` (with --history FILE to keep this conversation)"
            )));
        }
        let (agent, reloader) = loops::load(
            &entry.location,
            switcher.cache,
            switcher.host_config.clone(),
        )
        .await?;
        let hot_reload = switcher.hot_reload;
        let previous = std::mem::replace(&mut self.agent, agent);
        if let Err(e) = self.start().await {
            self.agent = previous;
            return Err(e);
        }
        self.reloader = reloader.filter(|_| hot_reload);
        self.config.agent = Some(self.agent.name().into());
        Ok(self.agent.name())
    }

    /// The named loops a session can switch to, with their descriptions.
    pub fn named_loops(&self) -> Vec<(String, Option<String>)> {
        self.switcher.resolver.catalog.entries()
    }

    /// Cancels the turn in progress from elsewhere.
    pub fn canceller(&self) -> TurnCanceller {
        self.current_turn.clone()
    }

    /// What the user should know about how the session started, one line each (a history
    /// file whose incomplete last record was set aside).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The calls a suspended run waits on (empty when no run is suspended): what
    /// [`Session::resume`] answers or runs.
    pub fn pending(&self) -> Vec<PendingCall> {
        pending_tool_calls(&self.messages)
            .into_iter()
            .map(|(id, name, arguments)| PendingCall {
                id,
                name,
                arguments,
            })
            .collect()
    }

    /// A JSON value the loop's last run left in its state under `key` (a guest's
    /// `__result_data__`, its result's structured data); `None` when it left none, or text
    /// that is not JSON.
    pub fn state_json(&self, key: &str) -> Option<serde_json::Value> {
        let text = self.agent.state_value(key)?;
        serde_json::from_str(&text).ok()
    }

    /// The providers and models [`Session::switch_model`] can open.
    pub fn providers(&self) -> Vec<ProviderListing> {
        self.models.providers()
    }

    /// Answers the root context with `provider`'s `model` (its default model when `None`)
    /// from the next prompt on; the conversation carries over. A provider or model that
    /// cannot be opened changes nothing.
    pub async fn switch_model(
        &mut self,
        provider: &str,
        model: Option<&str>,
    ) -> Result<&wonopcode_agent_loop::ModelInfo, SessionError> {
        let opened = self
            .models
            .open(provider, model)
            .await
            .map_err(|e| SessionError::Choice(e.to_string()))?;
        self.provider = opened;
        Ok(self.provider.info())
    }

    /// The "always" answers given so far (see `PermissionPolicy::approvals`).
    pub fn approvals(&self) -> Vec<String> {
        self.permission_policy.approvals()
    }

    /// Takes back an "always" answer; false when there was none under `key`.
    pub fn revoke(&self, key: &str) -> bool {
        self.permission_policy.revoke(key)
    }

    /// Compacts the conversation now, whatever its size: old tool outputs are pruned and
    /// the rest summarized by the model (`context.compacted`, which the history file records).
    /// Returns whether it got smaller, and what the summary cost. Ctrl-C stops the summary.
    pub async fn compact(&mut self) -> (bool, wonopcode_agent_loop::Usage) {
        let token = self.token.child_token();
        *self.current_turn.0.lock() = Some(token.clone());
        let mut usage = wonopcode_agent_loop::Usage::default();
        let compactor = Compactor {
            provider: &self.provider,
            config: &self.config,
            events: &self.events,
            cancel: &token,
            session_id: &self.session_id,
            cwd: &self.root,
            trigger: "manual",
            known_tokens: None,
        };
        let changed = compactor.compact_now(&mut self.messages, &mut usage).await;
        *self.current_turn.0.lock() = None;
        (changed, usage)
    }

    /// Ends the session: its `SessionEnd` hooks run (`reason`: `prompt_input_exit` when the
    /// person left the REPL, else `other`), and its journal is marked finished (or
    /// interrupted, when a signal stopped it). Nothing runs after it.
    pub async fn end(&mut self, reason: &str, interrupted: bool) {
        if let Some(hooks) = &self.config.hooks {
            let agent = self.config.agent_name();
            let site = HookSite::new(&self.events, &self.session_id, &self.root, agent);
            hooks
                .turn_event(&site, TurnEvent::SessionEnded { reason })
                .await;
        }
        if interrupted {
            self.events.emit(EventKind::RunInterrupted {
                run_id: self.run_id().map(str::to_owned),
            });
        }
        if let Some(journal) = &self.journal
            && let Err(e) = journal.end(interrupted)
        {
            tracing::warn!(error = %e, "cannot mark the run's journal ended");
        }
    }

    /// Starts the conversation afresh: every message is dropped (a `context.compacted` with
    /// strategy `clear`, so the history file starts afresh too); the loop and its settings
    /// stay.
    pub fn clear(&mut self) {
        let system = self.config.system_prompt.as_deref();
        let before = estimate_tokens(system, &self.messages);
        self.messages.clear();
        self.events.emit(EventKind::ContextCompacted {
            strategy: "clear".to_owned(),
            tokens_before: before as u64,
            tokens_after: estimate_tokens(system, &self.messages) as u64,
            messages: Vec::new(),
        });
    }

    /// The model answering the root context (provider, id, prices).
    pub fn model(&self) -> &wonopcode_agent_loop::ModelInfo {
        self.provider.info()
    }

    /// The root loop's name (an agent file's own name).
    pub fn loop_name(&self) -> &str {
        self.agent_file.as_deref().unwrap_or(self.agent.name())
    }

    /// The tools the root context has, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.names().map(str::to_owned).collect();
        names.sort();
        names
    }

    /// How many tool calls were refused so far because they needed approval and nobody
    /// could be asked.
    pub fn unapproved(&self) -> usize {
        self.permission_policy.unapproved()
    }

    /// The mode the run's commands are confined in.
    pub fn sandbox_mode(&self) -> SandboxMode {
        self.sandbox_mode
    }

    /// The workspace root (canonical).
    pub fn workspace(&self) -> &Path {
        &self.root
    }

    /// The history write failure that stopped the session, if any.
    pub fn failure(&self) -> Option<String> {
        self.sink.failure()
    }

    /// Writes the trace recorded so far (with `SessionBuilder::trace`) to `path`.
    pub fn write_trace(&self, path: &Path) -> std::io::Result<()> {
        self.sink.write_trace(path)
    }
}

/// Each answer must name a call the suspended run waits on.
fn check_answers(messages: &[Message], answers: &[(String, String)]) -> Result<(), SessionError> {
    let pending = pending_tool_calls(messages);
    if pending.is_empty() {
        return Err(SessionError::Choice(
            "the history has no suspended run (no tool call waits for an answer)".to_owned(),
        ));
    }
    for (id, _) in answers {
        if !pending.iter().any(|(p, _, _)| p == id) {
            let waiting: Vec<String> = pending
                .iter()
                .map(|(id, name, _)| format!("{id} ({name})"))
                .collect();
            return Err(SessionError::Choice(format!(
                "the answer for `{id}`: no pending call has that id; the run waits on {}",
                waiting.join(", ")
            )));
        }
    }
    Ok(())
}

fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("s{nanos:x}{:x}", std::process::id())
}
