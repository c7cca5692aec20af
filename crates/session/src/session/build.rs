//! [`SessionBuilder::build`]: a session from its settings, in named steps whose order
//! matters — the workspace's trust before anything of it is read, the model and the journal
//! before anything is stored, the limits, the sandbox and the tools, the history, the hooks,
//! the resolver of named loops, delegation, then the loop loaded while the MCP servers
//! start (a one-prompt run waits for them; a person's session does not), and last the
//! session announced. Everything that can refuse the settings refuses
//! them before the journal records a run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::OPTIONAL_TOOLS;
use wonopcode_agent_loop::budget::{BudgetLimits, RunBudget, tighter};
use wonopcode_agent_loop::hook::SharedHooks;
use wonopcode_agent_loop::{LoopConfig, RunShared, ToolRegistry};
use wonopcode_contexts::Delegation;
use wonopcode_contexts::ModuleResolver;
use wonopcode_contexts::{AgentDefinition, ContextTools, Grant, LoopSource};
use wonopcode_hooks::HookEnv;
use wonopcode_journal::{Invocation, SealKey};
use wonopcode_protocol::event::{Item, ItemDetails};
use wonopcode_protocol::{
    ContextPath, Emitter, EventKind, Message, ModelInfo, ModelSource, Role, SharedGate, SharedModel,
};
use wonopcode_registry::{CatalogResolver, LoopCatalog, SearchPath};
use wonopcode_tools::permission::{PermissionPolicy, PolicyConfig};
use wonopcode_wasm_host::{CachePolicy, GuestLoader, GuestLogs, HostConfig};

use super::{LoopSwitcher, Session, SessionBuilder, TurnCanceller, new_session_id};
use crate::config::Config;
use crate::error::SessionError;
use crate::hook_loader::HookLoader;
use crate::instructions::ProjectInstructions;
use crate::loops;
use crate::mcp;
use crate::models::{self, EarlierResponses, ModelChoice};
use crate::module_tools::SessionResolver;
use crate::run_journal::{RunJournal, RunMetaParts};
use crate::settings::LoopChoice;
use crate::sink::SessionSink;
use wonopcode_mcp::{AcceptDefaults, Elicitor, Starting};

mod limits;
mod predecessor;
mod tooling;

use limits::{capped, limits};
use predecessor::{Announcement, Predecessor, open_history};
use tooling::Tooling;

impl SessionBuilder {
    /// Opens the model, the history and the loop, and announces the session.
    pub async fn build(mut self) -> Result<Session, SessionError> {
        let root = workspace_root(&self.settings.workspace)?;
        let mut notices = Vec::new();
        let asked = self.settings.trust_workspace || self.trusted_when_asked;
        let (trusted, trusted_scripts) = trust(&root, asked, &mut notices);
        let command_files = command_files(&root, trusted, &mut notices);
        self.cache = self
            .settings
            .compile_cache
            .then(|| self.config.cache.policy());
        let source = self.chosen_loop(&root, trusted, &mut notices).await?;
        let agent_file = source.agent().cloned();
        let (provider, models, journal) = self
            .model_and_journal(agent_file.as_deref(), &mut notices)
            .await?;
        let permissions = self
            .permissions
            .take()
            .unwrap_or_else(|| self.settings.policy(&self.config.permissions_for(&root)));
        let mut tooling = Tooling::set_up(&self, &root, &permissions, trusted_scripts)?;
        let environment = tooling.describe_environment(&root);
        let catalog = self.catalog.take();
        let mut loop_config = limits(&self, agent_file.as_deref(), &provider)?;
        let mut shared = RunShared {
            editor_files: self.editor_files.take(),
            checkpoints: journal.as_ref().and_then(|j| j.checkpoints()),
            // One hidden list for commands and file tools alike.
            hidden_paths: tooling.sandbox.hidden_paths().into(),
            ..RunShared::default()
        };
        notices.extend(tooling.sandbox.notices());
        notices.extend(std::mem::take(&mut tooling.skill_warnings));
        let permission_policy = self.permission_policy(permissions);
        let policy: SharedGate = permission_policy.clone();
        let token = CancellationToken::new();
        let (continued_from, continued_messages) = self.continued.take().unzip();
        let continued_messages = continued_messages.unwrap_or_default();
        let conversation =
            self.conversation(&provider, &token, continued_messages, &mut notices)?;
        let lineage = Predecessor::of(
            continued_from,
            self.resuming.take(),
            self.fork.take(),
            &mut shared,
            &mut notices,
        );
        let (hook_loader, instructions) = self.hooks_and_instructions(
            &root,
            trusted,
            &tooling,
            &mut loop_config,
            &mut shared,
            &mut notices,
        )?;
        let elicitor = self.servers_elicitor();
        let resolver = self.resolver(
            catalog,
            &root,
            trusted,
            &tooling,
            &hook_loader,
            elicitor.clone(),
        );
        let (root_grants, root_budget) = self.root_grants(&resolver)?;
        let (provider, models) = capped(provider, models, root_budget)?;
        let host_config = self.host_config(&resolver, &models, &root_grants, journal.as_ref());
        self.delegation(&source, &mut tooling.tools, &resolver, &host_config)?;
        let switcher = self.switcher(&resolver, &host_config);
        let tool_names = every_tool_name(&tooling.tools);
        let Loaded {
            agent,
            reloader,
            own,
            tools,
            clashes,
            servers,
        } = self
            .load(
                &source,
                &root,
                &resolver,
                &root_grants,
                host_config,
                &mut tooling,
                elicitor,
            )
            .await?;
        shared = shared.with_own_hooks(own.hooks.clone());
        shared.tool_names = with_loaded_names(tool_names, &tools).into();
        let loop_name = agent_file
            .as_ref()
            .map_or(agent.name(), |a| a.name.as_str())
            .to_owned();
        loop_config.agent = Some(loop_name.as_str().into());
        if let Some(journal) = &journal {
            let begun = (
                root.as_path(),
                loop_name.as_str(),
                provider.info(),
                &lineage,
            );
            self.begin_journal(journal, begun, &conversation.sink, &mut notices);
        }
        let announced = Announcement::of(&conversation, &root, loop_name, provider.info());
        loop_config.add_instructions(&environment.await.unwrap_or_default());
        announced
            .announce(
                lineage,
                &mut loop_config,
                shared.hooks.as_ref(),
                &instructions,
            )
            .await;
        // A person's session hears of its servers when a turn begins (`Session::turn`).
        let waited = servers.as_deref().filter(|_| self.one_shot);
        report_failures(&conversation.events, &own, clashes, waited);
        emit_notices(&conversation.events, &notices);
        Ok(Session {
            root,
            journal,
            agent_file: agent_file.map(|a| a.name.clone()),
            messages: conversation.messages,
            provider,
            models,
            tools,
            policy,
            config: loop_config,
            shared: Arc::new(shared),
            events: conversation.events,
            session_id: conversation.session_id,
            token,
            current_turn: TurnCanceller::default(),
            agent,
            reloader: reloader.filter(|_| self.hot_reload),
            switcher,
            sink: conversation.sink,
            notices,
            sandbox_mode: tooling.sandbox_policy.mode,
            permission_policy,
            _module_tools: own,
            suspended: false,
            failed: false,
            skills: tooling.skills(),
            command_files: command_files.commands.into(),
            prompt_starts: Vec::new(),
            steering: Default::default(),
            servers,
            plan: Default::default(),
        })
    }

    /// The permission policy over `permissions`: `--yes`, the mode, and the prompter (none
    /// when the person said never to ask).
    fn permission_policy(&mut self, permissions: PolicyConfig) -> Arc<PermissionPolicy> {
        let prompter = self.prompter.take().filter(|_| !self.settings.never_ask);
        Arc::new(
            PermissionPolicy::new(permissions, self.settings.yes, prompter)
                .in_mode(self.settings.mode),
        )
    }

    /// Who answers an MCP server's questions: the caller's, else, under `--yes`, one that
    /// takes each form's defaults; `None`: the servers' questions are declined.
    fn servers_elicitor(&mut self) -> Option<Arc<dyn Elicitor>> {
        self.elicitor.take().or_else(|| {
            self.settings
                .yes
                .then(|| Arc::new(AcceptDefaults) as Arc<dyn Elicitor>)
        })
    }

    /// A named root loop's grants, which start its lineage, and its module's limits, which
    /// cap the whole run under the run's own.
    fn root_grants(
        &self,
        resolver: &SessionResolver,
    ) -> Result<(Vec<Grant>, Option<Arc<RunBudget>>), SessionError> {
        let Some(name) = self.settings.loop_choice.name() else {
            return Ok((Vec::new(), None));
        };
        let budget = resolver.module_budget(name).map_err(SessionError::Choice)?;
        Ok((vec![Grant::Module(name.to_owned())], budget))
    }

    /// How the WebAssembly host runs this session's guests: the user's guest values and
    /// limits, the resolver and models a spawn may name, the root's grants, where guest
    /// logs go.
    fn host_config(
        &mut self,
        resolver: &Arc<SessionResolver>,
        models: &Arc<dyn ModelSource>,
        root_grants: &[Grant],
        journal: Option<&Arc<RunJournal>>,
    ) -> HostConfig {
        HostConfig {
            values: self.config.guest.clone(),
            prompter: self.guest_prompter.take(),
            contexts: self.config.contexts.limits(self.settings.max_parallel),
            resolver: Some(resolver.clone()),
            models: Some(models.clone()),
            grants: root_grants.to_vec(),
            guest_logs: GuestLogs {
                dir: journal.map(|j| j.dir().path().join("guest-logs")),
                echo: self.guest_echo,
            },
            ..HostConfig::default()
        }
    }

    /// Begins the run's journal with what it runs (the loop, the model, how it was started
    /// and from which run); a journal that cannot begin is a notice, and the run goes on
    /// unjournaled.
    fn begin_journal(
        &self,
        journal: &Arc<RunJournal>,
        (root, loop_name, model, lineage): (&Path, &str, &ModelInfo, &Predecessor),
        sink: &SessionSink,
        notices: &mut Vec<String>,
    ) {
        let parts = RunMetaParts {
            workspace: &root.display().to_string(),
            loop_name,
            model: &format!("{}/{}", model.provider, model.id),
            invocation: Some(self.invocation()),
            resumes: lineage.resumes.clone(),
            continues: lineage.continues.clone(),
            origin: lineage.origin.clone(),
            modules: self.published.begin_journal(journal.clone()),
        };
        match journal.begin(parts) {
            Ok(log) => sink.journal(log),
            Err(e) => notices.push(format!("the run is not journaled: {e}")),
        }
    }

    /// The model (the caller's, or one opened from the choice, an agent file's when the
    /// caller chose none), answered first from the journal it resumes or forks, recorded in
    /// the run's own journal, and drawing on the run's budget — a cost limit on a model
    /// without prices is refused here, before anything is stored.
    async fn model_and_journal(
        &mut self,
        agent_file: Option<&AgentDefinition>,
        notices: &mut Vec<String>,
    ) -> Result<(SharedModel, Arc<dyn ModelSource>, Option<Arc<RunJournal>>), SessionError> {
        // An agent file's model and time limit are the run's unless the caller chose its own.
        let mut choice: ModelChoice = self.settings.model.clone();
        let mut budget_limits: BudgetLimits = self.settings.budget;
        if let Some(agent) = agent_file {
            if choice.provider.is_none() && choice.model.is_none() {
                choice.provider = agent.provider.clone();
                choice.model = agent.model.clone();
            }
            let wall = agent.timeout_ms.map(std::time::Duration::from_millis);
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
        let (provider, models) = match self.model.take() {
            // A model of the caller's: the journal's responses are served before it.
            Some((model, models)) => match &earlier {
                Some(earlier) => models::resumed(earlier, model, models)?,
                None => (model, models),
            },
            None => models::open(&choice, &self.config, earlier.as_ref()).await?,
        };
        let journal = self.runs.as_ref().and_then(|runs| {
            RunJournal::create(runs)
                .map(Arc::new)
                .map_err(|e| notices.push(format!("the run is not journaled: {e}")))
                .ok()
        });
        let (provider, models) = match &journal {
            Some(journal) => journal.recording(provider, models)?,
            None => (provider, models),
        };
        // Every model of the run, the ones guests switch to included, draws on one budget.
        let run_budget = budget_limits.any().then(|| RunBudget::new(budget_limits));
        let (provider, models) = capped(provider, models, run_budget)?;
        Ok((provider, models, journal))
    }

    /// The loop that runs the prompts: the caller's, else the settings' choice — a name
    /// looked up in the catalog (the caller's, else discovered here, where the workspace
    /// adds to it only when trusted, and kept for the resolver).
    async fn chosen_loop(
        &mut self,
        root: &Path,
        trusted: bool,
        notices: &mut Vec<String>,
    ) -> Result<LoopSource, SessionError> {
        let chosen = match self.source.take() {
            Some(source) => source,
            None => {
                let choice = self.settings.loop_choice.clone();
                self.loop_of(&choice, root, trusted, notices)?
            }
        };
        // A published module (given, or a registry entry's) is fetched into a file.
        self.published
            .located(chosen)
            .await
            .map_err(SessionError::Choice)
    }

    /// The loop `choice` names; a name is looked up in the catalog.
    fn loop_of(
        &mut self,
        choice: &LoopChoice,
        root: &Path,
        trusted: bool,
        notices: &mut Vec<String>,
    ) -> Result<LoopSource, SessionError> {
        Ok(match choice {
            LoopChoice::Standard => LoopSource::Native,
            LoopChoice::Embedded => LoopSource::Embedded,
            LoopChoice::File(path) => LoopSource::File(path.clone()),
            LoopChoice::Oci(reference) => LoopSource::Oci(reference.clone()),
            LoopChoice::Named(name) => {
                let catalog = self.catalog.get_or_insert_with(|| {
                    let search = SearchPath::standard(&self.settings.loops_dirs, Some(root))
                        .trusting_workspace(trusted);
                    let catalog = LoopCatalog::discover(&search);
                    notices.extend(catalog.warnings.iter().map(ToString::to_string));
                    catalog
                });
                let entry = catalog
                    .find(name)
                    .map_err(|e| SessionError::Choice(e.to_string()))?;
                entry.location.clone()
            }
        })
    }

    /// How the run was started, for its journal: its settings and the front-end's shape,
    /// sealed under the user's key, so a later `resume` knows they were not planted.
    fn invocation(&self) -> Invocation {
        let mut invocation = Invocation {
            args: Vec::new(),
            settings: Some(self.settings.to_journal()),
            cwd: std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            one_shot: self.one_shot,
            json: self.json,
            seal: None,
        };
        if let Some(key) = SealKey::standard() {
            invocation.seal(&key);
        }
        invocation
    }

    /// The resolver of named loops (the catalog the workspace may add to when trusted) and
    /// of what a child context is given.
    fn resolver(
        &self,
        catalog: Option<LoopCatalog>,
        root: &Path,
        trusted: bool,
        tooling: &Tooling,
        hooks: &Arc<HookLoader>,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Arc<SessionResolver> {
        let search =
            SearchPath::standard(&self.settings.loops_dirs, Some(root)).trusting_workspace(trusted);
        Arc::new(SessionResolver {
            catalog: match catalog {
                Some(catalog) => CatalogResolver::discovered(search, catalog),
                None => CatalogResolver::new(search),
            },
            workspace: root.to_path_buf(),
            env: tooling.command_env.clone(),
            elicitor,
            sandbox: tooling.sandbox_policy.clone(),
            builtins: tooling.options.clone(),
            narrower: Default::default(),
            skill_tool: tooling.skill_tool.clone(),
            hooks: hooks.clone(),
            scoped_hooks: Default::default(),
            published: self.published.clone(),
        })
    }

    /// The conversation the session goes on with (its history file's, or a new one), the
    /// sink its events go to (the history, the renderer, the trace, telemetry) and the root's
    /// emitter. A continued conversation's answers were responses of the root already: a
    /// replay serves, and a recording numbers, the next one after them.
    fn conversation(
        &mut self,
        provider: &SharedModel,
        token: &CancellationToken,
        continued: Vec<Message>,
        notices: &mut Vec<String>,
    ) -> Result<Conversation, SessionError> {
        let (history, mut messages) = open_history(self.settings.history.as_deref(), notices)?;
        if history.is_none() {
            messages = continued;
        }
        for _ in messages.iter().filter(|m| m.role == Role::Assistant) {
            provider.skip_response(&ContextPath::root());
        }
        let session_id = history
            .as_ref()
            .map_or_else(new_session_id, |h| h.session_id.clone());
        let renderer = std::mem::replace(&mut self.renderer, Box::new(crate::sink::NoRenderer));
        let sink = Arc::new(SessionSink::new(
            history,
            renderer,
            token.clone(),
            self.trace,
        ));
        if let Some(recorder) = self.telemetry.take() {
            sink.telemetry(recorder);
        }
        let events = Emitter::new(sink.clone(), ContextPath::root());
        Ok(Conversation {
            messages,
            session_id,
            sink,
            events,
        })
    }

    /// The run's hooks (the workspace's only when it is trusted) and the project's
    /// instructions (`AGENTS.md`, `CLAUDE.md`): the hooks set in what the run shares, the
    /// instructions in the loop's config.
    fn hooks_and_instructions(
        &self,
        root: &Path,
        trusted: bool,
        tooling: &Tooling,
        loop_config: &mut LoopConfig,
        shared: &mut RunShared,
        notices: &mut Vec<String>,
    ) -> Result<(Arc<HookLoader>, ProjectInstructions), SessionError> {
        let hook_loader = Arc::new(HookLoader::new(
            HookEnv {
                workspace: root.to_path_buf(),
                env: Some(tooling.command_env.clone()),
                sandbox: Some(tooling.sandbox.clone()),
            },
            self.cache,
        ));
        shared.hooks = run_hooks(&self.config, root, &hook_loader, trusted, notices)?;
        let instructions = if self.settings.project_instructions {
            ProjectInstructions::find(root, &shared.hidden_paths)
        } else {
            ProjectInstructions::default()
        };
        if !instructions.text.is_empty() {
            loop_config.instructions = Some(instructions.text.as_str().into());
        }
        Ok((hook_loader, instructions))
    }

    /// What switching the root's loop later takes: the resolver, how this one was loaded,
    /// and the named root whose own tools and grants are set up for the whole run.
    fn switcher(&self, resolver: &Arc<SessionResolver>, host_config: &HostConfig) -> LoopSwitcher {
        LoopSwitcher {
            resolver: resolver.clone(),
            cache: self.cache,
            host_config: host_config.clone(),
            hot_reload: self.hot_reload,
            scoped_root: self.settings.loop_choice.name().and_then(|name| {
                let entry = resolver.catalog.entry(name).ok()?;
                let own = !entry.context_tools.is_empty() || entry.location.agent().is_some();
                own.then(|| name.to_owned())
            }),
        }
    }

    /// Loads the loop while the MCP servers (the config's, and a named root loop's own)
    /// start: a guest may compile, and the first request waits for the slowest, not for all.
    #[allow(clippy::too_many_arguments)]
    async fn load(
        &mut self,
        source: &LoopSource,
        root: &Path,
        resolver: &SessionResolver,
        root_grants: &[Grant],
        host_config: HostConfig,
        tooling: &mut Tooling,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<Loaded, SessionError> {
        // The builder is not `Sync` (its renderer): the futures borrow its fields alone.
        let (loop_name, cache) = (self.settings.loop_choice.name(), self.cache);
        let module_tools = async move {
            match loop_name {
                Some(name) => resolver.context_tools(Some(name), root_grants).await,
                None => Ok(ContextTools::default()),
            }
        };
        let mcp_configs = std::mem::take(&mut tooling.mcp_configs);
        let env = tooling.command_env.clone();
        let servers = mcp::spawn(mcp_configs, root, env, &mut tooling.tools, elicitor);
        // One prompt then exit: its first request has every server's tools, as a script
        // expects; a person's session is ready at once and takes them as they come.
        let one_shot = self.one_shot;
        let all_up = async {
            if let Some(servers) = servers.as_ref().filter(|_| one_shot) {
                servers.ready().await;
            }
        };
        let ((), loaded, own) = tokio::join!(
            all_up,
            loops::load(source, cache, host_config),
            module_tools,
        );
        let (agent, reloader) = loaded?;
        let own = own.map_err(SessionError::Choice)?;
        let (mut tools, clashes) = own.apply(&tooling.tools);
        // An agent file's `disallowedTools` are taken out last, whoever offered them.
        if let Some(file) = source.agent().filter(|a| !a.denied_tools.is_empty()) {
            let denied = file.denied_tools.clone();
            tools = tools.filtered_by(Arc::new(move |name: &str| {
                !denied.iter().any(|d| d == name)
            }));
        }
        Ok(Loaded {
            agent,
            reloader,
            own,
            tools,
            clashes,
            servers,
        })
    }

    /// Delegation from the native loop: on when asked for (`agents`), or when the root is
    /// an agent whose tools name it; refused for a WebAssembly root, which spawns itself.
    fn delegation(
        &self,
        source: &LoopSource,
        tools: &mut ToolRegistry,
        resolver: &SessionResolver,
        host_config: &HostConfig,
    ) -> Result<(), SessionError> {
        let agents = &self.settings.agents;
        let root_delegates = self.settings.loop_choice.name().is_some_and(|name| {
            resolver.catalog.entry(name).is_ok_and(|e| {
                e.context_tools
                    .tools
                    .as_ref()
                    .is_some_and(|t| t.iter().any(|n| n == "spawn_agent"))
            })
        });
        let native_root = matches!(source, LoopSource::Native | LoopSource::Agent(_));
        if native_root && (!agents.is_empty() || root_delegates) {
            register_delegation(tools, agents, self.cache, host_config)
        } else if !agents.is_empty() {
            Err(SessionError::Choice(
                "--agents lets the native loop delegate; a WebAssembly loop spawns with its own `context` calls".to_owned(),
            ))
        } else {
            Ok(())
        }
    }
}

/// The conversation a session goes on with: its history, its id, the sink its events go
/// to, and the root's emitter.
struct Conversation {
    messages: Vec<Message>,
    session_id: String,
    sink: Arc<SessionSink>,
    events: Emitter,
}

/// The loop loaded, the MCP servers starting, and the tools the root has with its module's
/// own.
struct Loaded {
    agent: Arc<dyn wonopcode_agent_loop::AgentLoop>,
    reloader: Option<crate::loops::Reloader>,
    own: ContextTools,
    tools: ToolRegistry,
    clashes: Vec<String>,
    /// The run's MCP servers, connecting in the background (`None`: none configured).
    servers: Option<Arc<Starting>>,
}

/// Reports what of the root's tools could not be used: the MCP servers that failed to
/// start (or are still starting), and the module's own tools that could not be set up or
/// clashed with the run's.
fn report_failures(
    events: &Emitter,
    own: &ContextTools,
    clashes: Vec<String>,
    servers: Option<&Starting>,
) {
    if let Some(servers) = servers {
        crate::mcp::report(events, servers);
    }
    wonopcode_contexts::context_tools::report_failures(events, own, clashes);
}

/// Starts the run's journal (`run.json` with how it was started) and has the sink write
/// to it; a journal that cannot start is a notice, not a failed run.
/// The slash-command files the workspace (when trusted) and the person's home hold; what
/// does not read is a notice.
fn command_files(
    root: &Path,
    trusted: bool,
    notices: &mut Vec<String>,
) -> wonopcode_registry::command_file::CommandFiles {
    let mut found = wonopcode_registry::command_file::CommandFiles::discover(
        root,
        trusted,
        crate::instructions::Homes::from_env().claude.as_deref(),
    );
    notices.append(&mut found.warnings);
    found
}

/// Every tool a context of the run could have, before the root's module narrows them, and
/// those only some runs have, for the spawns that name one (`RunShared::tool_names`); the
/// loaded root's own and its MCP servers' join after loading ([`with_loaded_names`]).
fn every_tool_name(tools: &ToolRegistry) -> Vec<String> {
    tools
        .names()
        .map(str::to_owned)
        .chain(OPTIONAL_TOOLS.map(str::to_owned))
        .chain(wonopcode_contexts::DELEGATION_TOOLS.map(str::to_owned))
        .collect()
}

/// `names` with the loaded root's tools it lacks.
fn with_loaded_names(mut names: Vec<String>, loaded: &ToolRegistry) -> Vec<String> {
    for name in loaded.names() {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// The notices gathered while the session was built, each a diagnostic item.
fn emit_notices(events: &Emitter, notices: &[String]) {
    for notice in notices {
        events.emit(EventKind::ItemCompleted {
            item: Item {
                id: events.next_item_id(),
                details: ItemDetails::Diagnostic {
                    message: notice.clone(),
                },
            },
        });
    }
}

/// Whether the workspace is trusted: a cloned repository runs nothing before the person
/// trusts it (what it would have run is one notice); and when it is, the script files its
/// hooks and servers run, which its commands may then not change.
fn trust(root: &Path, asked: bool, notices: &mut Vec<String>) -> (bool, Vec<PathBuf>) {
    let found = crate::trust::WorkspaceExecutables::scan(root);
    let trusted = crate::trust::trusted_with(root, asked, &found).unwrap_or_else(|e| {
        notices.push(format!("{e}: the workspace is taken as not trusted"));
        false
    });
    if !trusted && !found.is_empty() {
        notices.push(crate::trust::left_out_notice(&found));
    }
    (trusted, if trusted { found.scripts } else { Vec::new() })
}

/// The workspace as a canonical directory, or why it cannot be one. Every front-end
/// resolves its workspace here.
pub fn workspace_root(workspace: &Path) -> Result<PathBuf, SessionError> {
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
    let place = GuestLoader::root_place(engine, host_config.clone());
    let delegation = Delegation::root(place, allowed).map_err(SessionError::Choice)?;
    for tool in delegation.tools() {
        tools
            .register(tool)
            .map_err(|e| SessionError::Choice(format!("the delegation tools: {e}")))?;
    }
    Ok(())
}
