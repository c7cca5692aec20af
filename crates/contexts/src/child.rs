//! Running a child context (a guest's `context.spawn`, the native loop's `spawn_agent`).
//! Shared with the parent: host tools (narrowed), files, the provider
//! connection, cancellation (a child token of the parent's), read-only preferences, the
//! event stream. Isolated: the instance and its memory, history (a copy when
//! `inherit-messages`), provider/model preference, enabled tools, custom tools, key/value
//! state. Every limit ends the child with a status; the parent always gets a result.
//!
//! Each child runs in its own store and instance, as a future the parent's host call awaits:
//! the child's guest runs on a fiber of its own, nested in the parent's, so a child never
//! re-enters its parent's instance. A parallel batch's children are polled together by the
//! parent's task: concurrent (their model streams and tools, which do the waiting, run on
//! tasks of their own), not spread over cores. Dropping the future (a timeout, the parent's
//! cancellation) drops the child's store.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wonopcode_agent_loop::budget::{BudgetLimits, RunBudget, micro_cents, tighter};
use wonopcode_agent_loop::hook::{HookSite, TurnEvent};
use wonopcode_agent_loop::{
    AgentLoop, LoopContext, LoopResult, RunServices, RunShared, StandardLoop, ToolRegistry,
    canonical_tool_name, nearest_name, run_turn,
};
use wonopcode_protocol::event::{Item, ItemDetails};
use wonopcode_protocol::generation::Generation;
use wonopcode_protocol::{
    ContextPath, ContextStatus, Emitter, EventKind, LoopStatus, Message, ModelInfo, ModelSource,
    Part, PendingCall, RequestOptions, SharedModel, Usage,
};

use crate::agent_definition::AgentDefinition;
use crate::budget::{TokenBudget, open_model};
use crate::context_tools::{ContextTools, report_failures};
use crate::delegation::Delegation;
use crate::file_changes::{ChildSink, FileChanges};
use crate::grants::{Grant, without_resolver};
use crate::loader::{ChildSeat, Inheritance, LoopLoader};
use crate::loop_source::LoopSource;
use crate::resolver::ModuleResolver;
use crate::spawn::{ChildResult, ModuleRef, SpawnAsks, SpawnGrants, SpawnRequest};
use crate::tree::{ContextTree, LiveSlot};
use wonopcode_agent_loop::budget::BudgetedModel;

/// The state key whose value is a run's structured result: a child returns it as its
/// result's `data`, `wonopcode mcp-server` as the tool result's structured content.
pub const RESULT_DATA_KEY: &str = "__result_data__";

/// What a parent lends its children: taken from its store (a guest) or its delegation
/// tools (the native loop) before they start, so the children of one `spawn-parallel` call
/// share it.
pub struct ParentView {
    /// Where the parent sits in its tree.
    pub place: ParentPlace,
    /// The parent run's services, its tools narrowed to those the parent has enabled.
    pub services: RunServices,
    /// Its history, for a child that inherits it (else empty).
    pub messages: Vec<Message>,
}

/// Where a parent sits in its tree, as its children need it: the tree's limits and
/// resolver, what loads a guest, the models a child may ask for, and the lineage a child
/// extends (budgets, changed-file sets, grants, the root's sink).
#[derive(Clone)]
pub struct ParentPlace {
    /// Its tree.
    pub tree: Arc<ContextTree>,
    /// What loads its children's guests (and knows its own, which `same` names).
    pub loader: Arc<dyn LoopLoader>,
    /// The models a child may ask for by name; `None`: only the parent's.
    pub models: Option<Arc<dyn ModelSource>>,
    /// Its lineage.
    pub lineage: Inheritance,
}

/// A child's loop: a guest instance, or the native loop (`named("standard")`).
enum ChildLoop {
    Guest(Box<dyn AgentLoop>),
    Native(StandardLoop),
}

impl ChildLoop {
    fn agent(&self) -> &dyn AgentLoop {
        match self {
            Self::Guest(g) => g.as_ref(),
            Self::Native(n) => n,
        }
    }
}

/// Runs one child to its end; with the result comes its whole usage (descendants included),
/// which the parent adds to its own. `Err` only when it could not start (depth, live
/// contexts, an unknown or broken module); every ending after that is a result with a status.
pub async fn run_child(
    parent: &ParentView,
    path: ContextPath,
    params: SpawnRequest,
    asks: SpawnAsks,
) -> Result<(ChildResult, Usage), String> {
    let task = params.task.clone();
    let mut child = LiveChild::start(parent, path, params, asks).await?;
    Ok(child.turn(&task).await)
}

/// A child context that lives on after its turn: its loop, its history, its model, tools and
/// limits, and its place in the tree (it counts as live until dropped). A guest's `spawn`
/// runs one turn and drops it; the native loop's delegation tools keep it for follow-ups.
pub struct LiveChild {
    path: ContextPath,
    module: String,
    child: ChildLoop,
    cwd: std::path::PathBuf,
    provider: SharedModel,
    tools: ToolRegistry,
    gate: wonopcode_protocol::SharedGate,
    config: wonopcode_agent_loop::LoopConfig,
    /// Its parent's, with its module's and agent file's own hooks after the inherited ones.
    shared: Arc<RunShared>,
    events: Emitter,
    /// Cancelled when the child is closed or its parent's run is; each turn runs under a
    /// child token of it.
    cancel: CancellationToken,
    session_id: String,
    budget: Arc<TokenBudget>,
    budgets: Vec<Arc<TokenBudget>>,
    files: Arc<FileChanges>,
    messages: Vec<Message>,
    timeout_ms: Option<u64>,
    /// What it was started with (an agent file's settings laid in), which a fork repeats.
    params: SpawnRequest,
    /// What its next turn's message carries: the task's attachments, for the first turn.
    attachments: Vec<Part>,
    /// The grants and generation settings it was spawned with, which a fork repeats too.
    asks: SpawnAsks,
    /// Its own place, for the children it delegates to.
    place: ParentPlace,
    /// Its usage already handed to the parent.
    reported: Usage,
    /// Whether its first turn has begun (hooks are told of its start once).
    started: bool,
    /// Its own MCP servers and the like: they live as long as it does.
    _own: ContextTools,
    _slot: LiveSlot,
}

impl LiveChild {
    /// Sets a child up under `parent` at `path`: checks the tree's limits and the grants,
    /// loads its loop, opens its model. `Err`: one line, and nothing started.
    pub async fn start(
        parent: &ParentView,
        path: ContextPath,
        mut params: SpawnRequest,
        asks: SpawnAsks,
    ) -> Result<Self, String> {
        let attachments = std::mem::take(&mut params.attachments);
        if parent.services.cancel.is_cancelled() {
            return Err(format!(
                "context {path} was not started: the run is cancelled"
            ));
        }
        let tree = parent.place.tree.clone();
        if path.depth() > tree.limits.max_depth {
            return Err(format!(
                "context {path} would be at depth {}, past the limit of {}",
                path.depth(),
                tree.limits.max_depth
            ));
        }
        let slot = tree.enter()?;
        let Granted { own, lineage, cap } = granted(parent, &path, &params, asks.grants.clone())
            .await
            .map_err(|reason| refuse(parent, &path, &reason))?;
        let max_tokens = tighter(params.max_tokens, own.max_tokens);
        let budget = TokenBudget::new(max_tokens, cap);
        let inherited = &parent.place.lineage;
        let mut budgets = inherited.budgets.clone();
        budgets.push(budget.clone());
        let files = Arc::new(FileChanges::default());
        let mut changes = inherited.changes.clone();
        changes.push(files.clone());
        let root_sink = inherited
            .root_sink
            .clone()
            .unwrap_or_else(|| parent.services.events.sink().clone());
        let lineage = Inheritance {
            budgets: budgets.clone(),
            changes: changes.clone(),
            grants: lineage,
            root_sink: Some(root_sink.clone()),
        };
        // Where its own children go, should it delegate from the native loop.
        let own_place = ParentPlace {
            tree: tree.clone(),
            loader: parent.place.loader.for_native(),
            models: parent.place.models.clone(),
            lineage: lineage.clone(),
        };
        let (child, agent) = load_child(parent, &path, &params, lineage).await?;
        // An agent file's settings are its spawn's defaults: what the spawn sets itself
        // wins, and of two time limits the shorter holds.
        let mut params = params;
        if let Some(agent) = &agent {
            apply_agent(&mut params, agent);
        }
        let module = match &agent {
            Some(agent) => agent.name.clone(),
            None => child.agent().name().to_owned(),
        };
        let given = preferred_model(parent, &params).await?;
        given.context_began(&path, &module, params.custom_data.as_deref());
        let provider: SharedModel = BudgetedModel::wrap(given, budget.clone());
        let mut config = parent.services.config.clone();
        let shared =
            Arc::new(RunShared::clone(&parent.services.shared).with_own_hooks(own.hooks.clone()));
        config.agent = Some(module.as_str().into());
        if let Some(limit) = params.max_iterations {
            config.max_iterations = limit;
        }
        if let Some(prompt) = &params.system_prompt {
            config.system_prompt = Some(prompt.clone());
        }
        // Its module's, its agent file's and its spawn's generation settings, each over
        // what came before (its parent's first), checked against its own model before its
        // first request.
        let settings = [
            (format!("module `{module}`"), own.generation),
            (
                format!("agent `{module}`"),
                agent.as_ref().map(|a| a.generation).unwrap_or_default(),
            ),
            ("the spawn".to_owned(), asks.generation),
        ];
        for (whose, generation) in &settings {
            config.request = settings_request(whose, generation, &config.request, provider.info())
                .map_err(|reason| refuse(parent, &path, &reason))?;
        }
        let events = Emitter::new(
            Arc::new(ChildSink {
                root: root_sink,
                changes,
            }),
            path.clone(),
        );
        unknown_tool(&parent.services, &params)
            .map_or(Ok(()), |reason| Err(refuse(parent, &path, &reason)))?;
        let (tools, clashes) = own.apply(&restrict(
            &parent.services.tools,
            params.allowed_tools.as_deref(),
            params.denied_tools.as_deref(),
        ));
        report_failures(&events, &own, clashes);
        Ok(Self {
            path,
            module,
            child,
            cwd: parent.services.cwd.clone(),
            provider,
            tools,
            gate: parent.services.gate.clone(),
            config,
            shared,
            events,
            cancel: parent.services.cancel.child_token(),
            session_id: parent.services.session_id.clone(),
            budget,
            budgets,
            files,
            messages: if params.inherit_messages {
                parent.messages.clone()
            } else {
                Vec::new()
            },
            timeout_ms: params.timeout_ms,
            params,
            attachments,
            asks,
            place: own_place,
            reported: Usage::default(),
            started: false,
            _own: own,
            _slot: slot,
        })
    }

    /// A native child whose tools include the delegation tools gets its own, which put its
    /// children under it (its budgets, grants and path), not under its parent.
    pub fn give_delegation(&mut self, parent: &Delegation) {
        let delegates = self.tools.names().any(|n| n == "spawn_agent");
        if matches!(self.child, ChildLoop::Native(_)) && delegates {
            parent.child(self.place.clone()).replace_in(&mut self.tools);
        }
    }

    /// Its path in the tree.
    pub fn path(&self) -> &ContextPath {
        &self.path
    }

    /// A new child at `path` under `parent`, with this one's module, settings and grants
    /// and a copy of its history.
    pub async fn fork(
        &self,
        parent: &ParentView,
        path: ContextPath,
        task: &str,
    ) -> Result<Self, String> {
        let mut params = self.params.clone();
        params.task = task.to_owned();
        params.inherit_messages = false;
        let mut forked = Self::start(parent, path, params, self.asks.clone()).await?;
        forked.messages = self.messages.clone();
        Ok(forked)
    }

    /// Asks the run's hooks about this child's start (`SubagentStart`); what they add is told
    /// to each of its requests after its system prompt.
    async fn hooks_at_start(&mut self) {
        let Some(hooks) = self.shared.hooks.clone() else {
            return;
        };
        let site = HookSite::new(&self.events, &self.session_id, &self.cwd, &self.module);
        let event = TurnEvent::SubagentStarted {
            agent_type: &self.module,
        };
        if let Some(added) = hooks.turn_event(&site, event).await.context {
            self.config.add_instructions(&added);
        }
    }

    /// The module or agent it runs.
    pub fn module(&self) -> &str {
        &self.module
    }

    /// What cancels its turn in progress, and every later one.
    pub fn canceller(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Runs one turn on `prompt` (its history kept from the turns before), between
    /// `context.started` and `context.completed`; the result, and the usage spent since the
    /// last turn's (descendants included), for the parent to add to its own.
    pub async fn turn(&mut self, prompt: &str) -> (ChildResult, Usage) {
        let resumed = self
            .shared
            .earlier
            .as_ref()
            .is_some_and(|earlier| earlier.unfinished.contains(&self.path));
        self.events.emit(EventKind::ContextStarted {
            module: self.module.clone(),
            task: prompt.to_owned(),
            resumed,
        });
        if !self.started {
            self.started = true;
            self.hooks_at_start().await;
        }
        let started = Instant::now();
        let cancel = self.cancel.child_token();
        let attachments = std::mem::take(&mut self.attachments);
        let span = tracing::info_span!("context", context = %self.path, depth = self.path.depth(), module = %self.module);
        let run = async {
            let mut ctx = LoopContext {
                cwd: &self.cwd,
                messages: &mut self.messages,
                provider: &self.provider,
                tools: &self.tools,
                permissions: &self.gate,
                config: &self.config,
                shared: self.shared.clone(),
                cancel: &cancel,
                events: &self.events,
                session_id: self.session_id.clone(),
                stats: Default::default(),
                attachments,
                // The person steers the root only (`wonopcode_agent_loop::steering`).
                steering: Default::default(),
            };
            run_turn(self.child.agent(), &mut ctx, prompt).await
        }
        .instrument(span);
        let ended = match self.timeout_ms.map(Duration::from_millis) {
            Some(limit) => tokio::time::timeout(limit, run).await.ok(),
            None => Some(run.await),
        };
        let requests = ended.as_ref().map_or(0, |result| result.iterations);
        let (status, response, error, pending) = match ended {
            None => {
                cancel.cancel();
                let ms = self.timeout_ms.unwrap_or(0);
                (
                    ContextStatus::Timeout,
                    String::new(),
                    Some(format!("did not finish within {ms} ms")),
                    Vec::new(),
                )
            }
            Some(result) => classify(result, &self.budgets, &cancel),
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let usage = self.budget.usage();
        let modified_files = self.files.paths();
        self.events.emit(EventKind::ContextCompleted {
            module: self.module.clone(),
            status,
            error: error.clone(),
            duration_ms,
            requests,
            usage,
            modified_files: modified_files.clone(),
        });
        let spent = usage.since(&self.reported);
        self.reported = usage;
        let result = ChildResult {
            response,
            data: self.child.agent().state_value(RESULT_DATA_KEY),
            usage,
            status,
            error,
            modified_files,
            duration_ms,
            pending,
        };
        (result, spent)
    }
}

/// The child's loop, and the agent file's settings when it runs one: `same` is a fresh
/// instance of the parent's guest, `named` goes through the resolver, `path` is a component
/// file (relative to the workspace).
async fn load_child(
    parent: &ParentView,
    path: &ContextPath,
    params: &SpawnRequest,
    lineage: Inheritance,
) -> Result<(ChildLoop, Option<Arc<AgentDefinition>>), String> {
    let tree = &parent.place.tree;
    let source = match &params.module {
        ModuleRef::Same => None,
        ModuleRef::Named(name) => Some(
            tree.resolver
                .as_ref()
                .ok_or_else(|| {
                    format!("cannot load module `{name}`: this host has no module registry")
                })?
                .resolve(name)
                .await?,
        ),
        ModuleRef::Path(file) => Some(LoopSource::File(module_file(
            &parent.services.cwd,
            tree.resolver.as_deref(),
            file,
        )?)),
    };
    if let Some(source @ (LoopSource::Native | LoopSource::Agent(_))) = &source {
        return Ok((ChildLoop::Native(StandardLoop), source.agent().cloned()));
    }
    let seat = ChildSeat {
        tree: tree.clone(),
        request: params.clone(),
        parent_id: parent_of(path),
        lineage,
    };
    let guest = parent.place.loader.load(source.as_ref(), seat).await?;
    Ok((ChildLoop::Guest(guest), None))
}

/// An agent file's settings laid under a spawn's own: the spawn's system prompt, model and
/// iteration limit win; the agent's denied tools are added to the spawn's; the shorter
/// timeout holds.
fn apply_agent(params: &mut SpawnRequest, agent: &AgentDefinition) {
    if params.system_prompt.is_none() {
        params.system_prompt = Some(agent.system_prompt.clone());
    }
    if params.preferred_provider.is_none() && params.preferred_model.is_none() {
        params.preferred_provider = agent.provider.clone();
        params.preferred_model = agent.model.clone();
    }
    params.max_iterations = params.max_iterations.or(agent.max_iterations);
    params.timeout_ms = tighter(params.timeout_ms, agent.timeout_ms);
    if !agent.denied_tools.is_empty() {
        params
            .denied_tools
            .get_or_insert_with(Vec::new)
            .extend(agent.denied_tools.iter().cloned());
    }
}

/// The request options of a child whose module, agent file or spawn (`whose`) sets
/// `generation`:
/// those settings over its parent's `inherited`, checked against the child's `model`;
/// `inherited` as it is when nothing is set. `Err`: one line naming whose settings, the
/// model and what it accepts.
fn settings_request(
    whose: &str,
    generation: &Generation,
    inherited: &RequestOptions,
    model: &ModelInfo,
) -> Result<RequestOptions, String> {
    if generation.is_unset() {
        return Ok(inherited.clone());
    }
    generation
        .over(Generation::of_options(inherited))
        .request_options(model)
        .map_err(|e| format!("{whose}: {e}"))
}

/// What a child's grants give it.
struct Granted {
    /// Its module's servers and allowlist, its narrower `bash`, its module's limits.
    own: ContextTools,
    /// Every grant from the root to it.
    lineage: Vec<Grant>,
    /// Its own cost limit.
    cap: Option<Arc<RunBudget>>,
}

/// The child's grants: its parent's lineage, then what the spawn and its module grant,
/// resolved by the embedder. A named module's own MCP servers start here for this context
/// (and stop when it ends); its allowlist narrows what the parent lets it have. `Err`: a
/// grant wider than the parent's, one line.
async fn granted(
    parent: &ParentView,
    path: &ContextPath,
    params: &SpawnRequest,
    grants: Option<SpawnGrants>,
) -> Result<Granted, String> {
    let SpawnGrants {
        sandbox,
        max_cost_usd: spawn_cost,
    } = grants.unwrap_or_default();
    let mut lineage = parent.place.lineage.grants.clone();
    if let Some(sandbox) = sandbox {
        lineage.push(Grant::Spawn {
            context: path.to_string(),
            sandbox,
        });
    }
    let module = match &params.module {
        ModuleRef::Named(name) => Some(name.as_str()),
        _ => None,
    };
    lineage.extend(module.map(|name| Grant::Module(name.to_owned())));
    let own = match &parent.place.tree.resolver {
        Some(resolver) => resolver.context_tools(module, &lineage).await?,
        None => without_resolver(&lineage)?,
    };
    let cap = cost_cap(path, module, spawn_cost, own.max_cost_usd)?;
    Ok(Granted { own, lineage, cap })
}

/// A spawn refused for its grants: one line, shown as an error item of the parent's and
/// returned to it.
fn refuse(parent: &ParentView, path: &ContextPath, reason: &str) -> String {
    let line = format!("context {path} was not started: {reason}");
    let events = &parent.services.events;
    events.emit(EventKind::ItemCompleted {
        item: Item {
            id: events.next_item_id(),
            details: ItemDetails::Error {
                message: line.clone(),
            },
        },
    });
    line
}

/// The child's own cost limit: the smaller of its spawn's `max-cost-usd` and its module's
/// `max_cost`, as a budget named after the context; `None` when neither is set.
fn cost_cap(
    path: &ContextPath,
    module: Option<&str>,
    spawn: Option<f64>,
    granted: Option<f64>,
) -> Result<Option<Arc<RunBudget>>, String> {
    let spawn = spawn
        .map(|usd| micro_cents(usd).map_err(|e| format!("grants: max-cost-usd {e}")))
        .transpose()?;
    let granted = granted
        .map(|usd| micro_cents(usd).map_err(|e| format!("grants: max_cost {e}")))
        .transpose()?;
    let max = match (spawn, granted) {
        (Some(a), Some(b)) => a.min(b),
        (Some(max), None) | (None, Some(max)) => max,
        (None, None) => return Ok(None),
    };
    let scope = match module {
        Some(name) => format!("context {path} (module `{name}`)"),
        None => format!("context {path}"),
    };
    let limits = BudgetLimits {
        max_cost_micro_cents: Some(max),
        ..BudgetLimits::default()
    };
    Ok(Some(RunBudget::scoped(limits, scope)))
}

/// Largest module file a guest may name by path.
const MAX_MODULE_BYTES: u64 = 256 << 20;

/// The file a `context-module::path` names: relative to the workspace, and only a regular
/// file (at most `MAX_MODULE_BYTES`) inside the workspace or a directory loops come from.
/// Every refusal reads the same, so a guest learns nothing about files outside them.
fn module_file(
    workspace: &std::path::Path,
    resolver: Option<&dyn ModuleResolver>,
    file: &str,
) -> Result<std::path::PathBuf, String> {
    let refused = || {
        format!("module path `{file}`: not a component file in the workspace or a loop directory")
    };
    let path = workspace.join(file).canonicalize().map_err(|_| refused())?;
    let mut allowed = vec![workspace.to_path_buf()];
    allowed.extend(resolver.map(|r| r.module_dirs()).unwrap_or_default());
    let inside = allowed
        .iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .any(|dir| path.starts_with(dir));
    if !inside {
        return Err(refused());
    }
    let meta = std::fs::metadata(&path).map_err(|_| refused())?;
    if !meta.is_file() {
        return Err(refused());
    }
    if meta.len() > MAX_MODULE_BYTES {
        return Err(format!(
            "module path `{file}`: {} MiB, past the limit of {} MiB",
            meta.len() >> 20,
            MAX_MODULE_BYTES >> 20
        ));
    }
    Ok(path)
}

/// The model a child starts with: the one its `preferred-provider` / `preferred-model` name
/// (a model alone is one of the parent's provider), else its parent's current model. Drawing
/// on the ancestors' budgets; the child's own is added by the caller.
async fn preferred_model(
    parent: &ParentView,
    params: &SpawnRequest,
) -> Result<SharedModel, String> {
    let (provider, model) = match (&params.preferred_provider, &params.preferred_model) {
        (None, None) => return Ok(parent.services.provider.clone()),
        (provider, model) => (
            provider
                .clone()
                .unwrap_or_else(|| parent.services.provider.info().provider.clone()),
            model.as_deref(),
        ),
    };
    open_model(
        parent.place.models.as_deref(),
        &parent.services.provider,
        &parent.place.lineage.budgets,
        &provider,
        model,
    )
    .await
    .map_err(|e| format!("the child's preferred model: {e}"))
}

/// The parent's path of a child path (`0.1.2` → `0.1`).
fn parent_of(path: &ContextPath) -> String {
    let text = path.as_str();
    text.rsplit_once('.')
        .map_or(text, |(parent, _)| parent)
        .to_owned()
}

/// The parent's enabled host tools ∩ `allowed` − `denied`: a child never has more.
fn restrict(
    tools: &ToolRegistry,
    allowed: Option<&[String]>,
    denied: Option<&[String]>,
) -> ToolRegistry {
    // A seed guest's `patch` is `apply_patch`.
    let canonical = |list: Option<&[String]>| {
        list.map(|l| {
            l.iter()
                .map(|n| canonical_tool_name(n).to_owned())
                .collect::<Vec<_>>()
        })
    };
    let (allowed, denied) = (canonical(allowed), canonical(denied));
    let listed = |list: &Option<Vec<String>>, name: &str| {
        list.as_ref().is_some_and(|l| l.iter().any(|n| n == name))
    };
    tools.filtered_by(std::sync::Arc::new(move |name: &str| {
        (allowed.is_none() || listed(&allowed, name)) && !listed(&denied, name)
    }))
}

/// How the child's run ended, as a context status.
/// Why a spawn's `allowed-tools` or `denied-tools` names a tool no context of the run has
/// (a typo, a tool of another program), with the nearest name; a tool its parent only
/// lacks is not one: the child cannot have it either, and that is narrowing, not a
/// mistake. MCP tools (`mcp__SERVER__TOOL`) are not judged: their server may be down.
fn unknown_tool(parent: &RunServices, params: &SpawnRequest) -> Option<String> {
    let universe = &parent.shared.tool_names;
    if universe.is_empty() {
        return None;
    }
    let lists = [
        ("allowed-tools", &params.allowed_tools),
        ("denied-tools", &params.denied_tools),
    ];
    for (list, names) in lists {
        for name in names.iter().flatten() {
            let name = canonical_tool_name(name);
            let known = name.starts_with("mcp__")
                || universe.iter().any(|n| n == name)
                || parent.tools.get(name).is_some();
            if !known {
                let near = nearest_name(name, universe.iter().map(String::as_str));
                return Some(match near {
                    Some(near) => format!("{list}: unknown tool `{name}`; did you mean `{near}`?"),
                    None => format!("{list}: unknown tool `{name}`"),
                });
            }
        }
    }
    None
}

/// How a child's run ended: its status, answer, error line and (suspended) the calls it
/// waits on.
type Classified = (ContextStatus, String, Option<String>, Vec<PendingCall>);

fn classify(
    result: LoopResult,
    budgets: &[Arc<TokenBudget>],
    cancel: &CancellationToken,
) -> Classified {
    // A cancelled context is reported cancelled even when its guest went on to return: the
    // cascade is what the parent needs to see.
    let status = match result.status {
        _ if cancel.is_cancelled() => ContextStatus::Cancelled,
        LoopStatus::Complete => ContextStatus::Completed,
        _ if budgets.iter().any(|b| b.exhausted()) => ContextStatus::TokenLimitReached,
        LoopStatus::MaxIterations => ContextStatus::MaxIterationsReached,
        LoopStatus::Cancelled => ContextStatus::Cancelled,
        LoopStatus::Suspended => ContextStatus::Suspended,
        LoopStatus::Error => ContextStatus::Error,
        LoopStatus::BudgetExceeded => ContextStatus::BudgetExceeded,
    };
    let error = (status != ContextStatus::Completed).then(|| {
        let line = result
            .error
            .unwrap_or_else(|| status.as_str().replace('_', " "));
        if status != ContextStatus::Suspended {
            return line;
        }
        // What the child waits on, so the parent can say (or ask) what it needs.
        let waiting: Vec<String> = result
            .pending
            .iter()
            .map(|p| format!("{} `{}` {}", p.id, p.name, p.arguments))
            .collect();
        format!("{line}; waiting: {}", waiting.join(", "))
    });
    let pending = if status == ContextStatus::Suspended {
        result.pending
    } else {
        Vec::new()
    };
    (status, result.response.unwrap_or_default(), error, pending)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_of_paths() {
        let path = ContextPath::root().child(1).child(2);
        assert_eq!(parent_of(&path), "0.1");
        assert_eq!(parent_of(&ContextPath::root().child(3)), "0");
    }

    #[test]
    fn a_modules_or_agents_generation_settings_lie_over_its_parents_and_fit_its_own_model() {
        use wonopcode_protocol::generation::Thinking;
        use wonopcode_protocol::usage::ModelCapabilities;
        let model = |thinking: bool| ModelInfo {
            id: "m".into(),
            provider: "anthropic".into(),
            context_window: 200_000,
            max_output: 64_000,
            pricing: None,
            capabilities: ModelCapabilities {
                thinking,
                thinking_must_be_returned: thinking,
                ..ModelCapabilities::default()
            },
        };
        let mut generation = Generation::default();
        let agent_request =
            |generation: &Generation, parent: &RequestOptions, model: &ModelInfo| {
                settings_request("agent `thinker`", generation, parent, model)
            };
        let parent = RequestOptions {
            max_tokens: Some(40_000),
            temperature: None,
            thinking_budget: Some(2_048),
        };
        // Setting nothing, it runs as its parent asks, whatever its model.
        assert_eq!(
            agent_request(&generation, &parent, &model(false)),
            Ok(parent.clone())
        );
        generation.thinking = Some(Thinking::High);
        let got = agent_request(&generation, &parent, &model(true)).unwrap();
        assert_eq!(got.thinking_budget, Some(24_576));
        assert_eq!(got.max_tokens, Some(40_000), "the parent's cap stays");
        // Past the cap its parent set, the budget is refused, naming both.
        generation.thinking = Some(Thinking::Tokens(50_000));
        let over = agent_request(&generation, &parent, &model(true)).unwrap_err();
        assert!(over.contains("fewer than its output cap (40000)"), "{over}");
        generation.thinking = Some(Thinking::High);
        let refused = agent_request(&generation, &parent, &model(false)).unwrap_err();
        assert!(
            refused.starts_with("agent `thinker`: ") && refused.contains("does not think"),
            "{refused}"
        );
    }
}
