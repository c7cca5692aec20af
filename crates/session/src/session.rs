//! A session: one conversation's history, services and loop, and the prompts run through it.
//! The binary builds one from its flags; an embedder builds one in a few lines
//! (`examples/embed.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::compaction::{Compactor, estimate_tokens};
use wonopcode_agent_loop::hook::{HookSite, TurnEvent};
use wonopcode_agent_loop::{
    AgentLoop, LoopConfig, LoopContext, LoopResult, RunShared, RunStats, Steering, ToolRegistry,
    resume_turn, run_turn,
};
use wonopcode_contexts::ContextTools;
use wonopcode_journal::{RunStatus, SessionCommand};
use wonopcode_protocol::message::pending_tool_calls;
use wonopcode_protocol::{
    Emitter, EventKind, LoopStatus, Message, ModelSource, Part, PendingCall, ProviderListing, Role,
    SharedGate, SharedModel,
};
use wonopcode_sandbox::SandboxMode;
use wonopcode_tools::permission::{Mode, PermissionPolicy};
use wonopcode_wasm_host::{CachePolicy, HostConfig};

use crate::config::Config;
use crate::error::SessionError;
use crate::generation::Generation;
use crate::loops::{self, Reload, Reloader};
use crate::module_tools::SessionResolver;
use crate::run_journal::RunJournal;
use crate::settings::Settings;
use crate::sink::{NoRenderer, SessionSink};

mod build;
mod builder;
mod plan;
mod rewind;

pub use build::workspace_root;
pub use builder::{Fork, SessionBuilder};
pub use rewind::{RewindScope, Rewound};

/// The system prompt unless the config replaces it. It names no absolute path, so recorded
/// transcripts replay on any machine.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are wonopcode, a coding agent working in the user's workspace. \
Use the tools to inspect and change files; paths are relative to the workspace root. \
Read before you edit, keep changes minimal, and finish with a short summary of what you did.";

/// Model requests allowed per prompt unless the caller or the config says otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 50;

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
    journal: Option<Arc<RunJournal>>,
    /// The agent file's name when the root runs one.
    agent_file: Option<String>,
    messages: Vec<Message>,
    provider: SharedModel,
    /// The models the root may switch to (`Session::switch_model`), under the run's budget.
    models: Arc<dyn ModelSource>,
    tools: ToolRegistry,
    policy: SharedGate,
    config: LoopConfig,
    /// What every context of the run shares: hooks, hidden paths, checkpoints, …
    shared: Arc<RunShared>,
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
    /// Whether the last turn ended suspended (its journal then ends `suspended`, resumable
    /// with answers).
    suspended: bool,
    /// Whether the last turn ended in an error (its journal then ends `failed`).
    failed: bool,
    /// The run's skills (the `skill` tool's).
    skills: Arc<[wonopcode_registry::Skill]>,
    /// The person's and (in a trusted workspace) the project's custom slash commands.
    command_files: Arc<[wonopcode_registry::command_file::CommandFile]>,
    /// Where each prompt of the run began in the conversation, by its number in the
    /// journal (from 0; `None`: not given in this session), to take it back to.
    prompt_starts: Vec<Option<rewind::PromptStart>>,
    /// What the person sends into the running turn (`Session::steering`).
    steering: Steering,
    /// The run's MCP servers, connecting in the background (`None`: none configured).
    servers: Option<Arc<wonopcode_mcp::Starting>>,
    /// What the model was last told of plan mode.
    plan: plan::Told,
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
    Prompt(&'p str, Vec<Part>),
    Resume(Vec<(String, String, bool)>),
}

impl Session {
    /// A builder for a session working in `workspace`. The workspace's hooks and its agents'
    /// hooks and MCP servers are used only when the workspace is trusted
    /// ([`SessionBuilder::trust_workspace`], or the user's trust file: `crate::trust`).
    pub fn builder(workspace: impl Into<PathBuf>) -> SessionBuilder {
        SessionBuilder {
            settings: Settings::new(workspace),
            config: Config::default(),
            model: None,
            source: None,
            renderer: Box::new(NoRenderer),
            trace: false,
            guest_echo: false,
            permissions: None,
            prompter: None,
            guest_prompter: None,
            ambient_generation: Generation::default(),
            cache: None,
            hot_reload: false,
            elicitor: None,
            catalog: None,
            runs: None,
            one_shot: true,
            json: false,
            resuming: None,
            continued: None,
            editor_files: None,
            fork: None,
            telemetry: None,
            trusted_when_asked: false,
            published: Default::default(),
            session_servers: Default::default(),
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
        self.prompt_with(prompt, Vec::new()).await
    }

    /// Runs one prompt with images or documents attached (`attachment::from_reader` and its
    /// kin make them); the prompt's message carries them, whichever loop runs it.
    pub async fn prompt_with(&mut self, prompt: &str, mut attachments: Vec<Part>) -> LoopResult {
        if let Some(journal) = &self.journal {
            let index = journal.prompts().len();
            self.prompt_starts.resize(index, None);
            self.prompt_starts
                .push(Some(rewind::PromptStart::of(&self.messages)));
            journal.prompted(prompt, &attachments);
        }
        // After the journal took the person's prompt: a run started again from it is told
        // by its own mode, not twice.
        if let Some(note) = self.plan.note(self.permission_policy.mode()) {
            attachments.push(Part::Text {
                text: note.to_owned(),
            });
        }
        self.turn(Turn::Prompt(prompt, attachments)).await
    }

    /// The id of the run's journal (`wonopcode runs show ID`), when it has one.
    pub fn run_id(&self) -> Option<&str> {
        self.journal.as_ref().map(|journal| journal.id())
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
        let prompted = matches!(turn, Turn::Prompt(..));
        let before = self.messages.len();
        let token = self.token.child_token();
        *self.current_turn.0.lock() = Some(token.clone());
        let agent = self.agent.clone();
        if let Some(servers) = &self.servers {
            crate::mcp::report(&self.events, servers);
            crate::mcp::take_tools(&self.events, &mut self.tools, servers);
        }
        let result = {
            let mut ctx = self.context(&token);
            match turn {
                Turn::Prompt(p, attachments) => {
                    ctx.attachments = attachments;
                    run_turn(agent.as_ref(), &mut ctx, p).await
                }
                Turn::Resume(answers) => resume_turn(agent.as_ref(), &mut ctx, answers).await,
            }
        };
        *self.current_turn.0.lock() = None;
        self.suspended = result.status == LoopStatus::Suspended;
        self.failed = result.status == LoopStatus::Error;
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
            shared: self.shared.clone(),
            cancel,
            events: &self.events,
            session_id: self.session_id.clone(),
            stats: RunStats::default(),
            attachments: Vec::new(),
            steering: self.steering.clone(),
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
        let location = switcher
            .resolver
            .published
            .located(entry.location)
            .await
            .map_err(SessionError::Choice)?;
        let (agent, reloader) =
            loops::load(&location, switcher.cache, switcher.host_config.clone()).await?;
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

    /// The inbox of what the person sends into the running turn from elsewhere: the root's
    /// run takes it before its next model request, and what no request took stays for the
    /// front-end to send as a prompt (`wonopcode_agent_loop::steering`).
    pub fn steering(&self) -> Steering {
        self.steering.clone()
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
                context: wonopcode_protocol::ContextPath::root(),
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
    ) -> Result<&wonopcode_protocol::ModelInfo, SessionError> {
        let opened = self
            .models
            .open(provider, model)
            .await
            .map_err(|e| SessionError::Choice(e.to_string()))?;
        self.provider = opened;
        self.kept(SessionCommand::Model {
            provider: provider.to_owned(),
            model: model.map(str::to_owned),
        });
        Ok(self.provider.info())
    }

    /// How much the root's model is asked to think.
    pub fn thinking(&self) -> crate::generation::Thinking {
        crate::generation::Thinking::of_budget(self.config.request.thinking_budget)
    }

    /// Asks the root's model to think `thinking` from the next prompt on; a setting the
    /// model cannot take changes nothing (one line naming the model and what it takes).
    pub fn set_thinking(
        &mut self,
        thinking: crate::generation::Thinking,
    ) -> Result<(), SessionError> {
        let mut generation = Generation::of_options(&self.config.request);
        generation.thinking = Some(thinking);
        self.config.request = generation
            .request_options(self.provider.info())
            .map_err(SessionError::Choice)?;
        self.kept(SessionCommand::Thinking { thinking });
        Ok(())
    }

    /// Gives a session command (one a resume reads back from the journal); what it cost.
    pub async fn command(
        &mut self,
        command: &SessionCommand,
    ) -> Result<wonopcode_protocol::Usage, SessionError> {
        match command {
            SessionCommand::Clear => self.clear(),
            SessionCommand::Compact => return Ok(self.compact().await.1),
            SessionCommand::Model { provider, model } => {
                self.switch_model(provider, model.as_deref()).await?;
            }
            SessionCommand::Thinking { thinking } => self.set_thinking(*thinking)?,
            SessionCommand::Rewind { prompt } => {
                self.rewind_conversation(*prompt)?;
            }
        }
        Ok(wonopcode_protocol::Usage::default())
    }

    /// Keeps `command` in the journal, in its place among the prompts.
    fn kept(&self, command: SessionCommand) {
        if let Some(journal) = &self.journal {
            journal.commanded(command);
        }
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
    pub async fn compact(&mut self) -> (bool, wonopcode_protocol::Usage) {
        let token = self.token.child_token();
        *self.current_turn.0.lock() = Some(token.clone());
        let mut usage = wonopcode_protocol::Usage::default();
        let compactor = Compactor {
            provider: &self.provider,
            config: &self.config,
            hooks: self.shared.hooks.as_ref(),
            events: &self.events,
            cancel: &token,
            session_id: &self.session_id,
            cwd: &self.root,
            trigger: "manual",
            known_tokens: None,
        };
        let changed = compactor.compact_now(&mut self.messages, &mut usage).await;
        *self.current_turn.0.lock() = None;
        self.kept(SessionCommand::Compact);
        (changed, usage)
    }

    /// Ends the session: its `SessionEnd` hooks run (`reason`: `prompt_input_exit` when the
    /// person left the REPL, else `other`), and its journal is marked finished (or
    /// interrupted, when a signal stopped it). Nothing runs after it.
    pub async fn end(&mut self, reason: &str, interrupted: bool) {
        if let Some(hooks) = &self.shared.hooks {
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
        let status = if interrupted {
            RunStatus::Interrupted
        } else if self.suspended {
            RunStatus::Suspended
        } else if self.failed {
            RunStatus::Failed
        } else {
            RunStatus::Finished
        };
        if let Some(journal) = &self.journal
            && let Err(e) = journal.end(status)
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
        self.kept(SessionCommand::Clear);
    }

    /// The prompts this session's run has been given, in order: what [`Session::rewind`]
    /// counts (none without a journal).
    pub fn prompts(&self) -> Vec<String> {
        self.journal
            .as_ref()
            .map(|j| j.prompts())
            .unwrap_or_default()
    }

    /// The run's skills, by name and description: what a person can ask for by name
    /// ([`Session::skill_prompt`]).
    pub fn skills(&self) -> Vec<(String, String)> {
        self.skills
            .iter()
            .map(|s| (s.name.clone(), s.description.clone()))
            .collect()
    }

    /// The prompt that asks for skill `name` by hand (a person's `/NAME REQUEST`): its
    /// instructions, then the request. `Err`: no such skill, or its file cannot be read.
    pub fn skill_prompt(&self, name: &str, request: &str) -> Result<String, SessionError> {
        let skill = self
            .skills
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| SessionError::Choice(format!("no skill `{name}`")))?;
        let body = skill.body().map_err(SessionError::Choice)?;
        let request = match request.trim() {
            "" => "Follow the skill.",
            given => given,
        };
        Ok(format!(
            "<skill name=\"{name}\" dir=\"{}\">\n{}\n</skill>\n\n{request}",
            skill.dir.display(),
            body.trim_end()
        ))
    }

    /// The custom slash commands (`.claude/commands/*.md`): the project's when the
    /// workspace is trusted, then the person's.
    pub fn command_files(&self) -> &[wonopcode_registry::command_file::CommandFile] {
        &self.command_files
    }

    /// The model answering the root context (provider, id, prices).
    pub fn model(&self) -> &wonopcode_protocol::ModelInfo {
        self.provider.info()
    }

    /// The root loop's name (an agent file's own name).
    pub fn loop_name(&self) -> &str {
        self.agent_file.as_deref().unwrap_or(self.agent.name())
    }

    /// The tools the root context has, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        // A server that came up since the last turn counts already.
        let mut tools = self.tools.clone();
        tools.refresh();
        let mut names: Vec<String> = tools.names().map(str::to_owned).collect();
        names.sort();
        names
    }

    /// Waits until every MCP server is up or has failed (each within its startup timeout):
    /// for a front-end whose prompts must have the servers' tools (an editor sends its
    /// servers with the session it opens, for the prompts that follow).
    pub async fn servers_ready(&self) {
        if let Some(servers) = &self.servers {
            servers.ready().await;
        }
    }

    /// Each configured MCP server, where it is (starting, ready, failed) and its tools the
    /// root context has, in the order configured: what `/mcp` and `/doctor` show.
    pub fn mcp_servers(&self) -> Vec<crate::mcp::ServerStatus> {
        match &self.servers {
            Some(servers) => crate::mcp::statuses(servers, &self.tool_names()),
            None => Vec::new(),
        }
    }

    /// How many tool calls were refused so far because they needed approval and nobody
    /// could be asked.
    pub fn unapproved(&self) -> usize {
        self.permission_policy.unapproved()
    }

    /// The approval mode now: ask, accept edits or plan.
    pub fn mode(&self) -> Mode {
        self.permission_policy.mode()
    }

    /// Switches the approval mode (Shift-Tab at the REPL): the calls after this are judged
    /// in `mode`, and the next prompt tells the model when plan mode starts or ends.
    pub fn set_mode(&self, mode: Mode) {
        self.permission_policy.set_mode(mode);
    }

    /// The mode the run's commands are confined in.
    pub fn sandbox_mode(&self) -> SandboxMode {
        self.sandbox_mode
    }

    /// The workspace root (canonical).
    pub fn workspace(&self) -> &Path {
        &self.root
    }

    /// Runs `command` as the person typed it (`!cmd` at the REPL) with the run's `bash`
    /// tool: in the workspace, under the run's sandbox, its timeout and its checks after a
    /// command, without asking (the person typed it), cancelled as a turn is (Ctrl-C). What
    /// the tool says (output and exit code), and whether it failed; `None` when the run has
    /// no `bash` tool.
    pub async fn shell(&self, command: &str) -> Option<(String, bool)> {
        let bash = self.tools.get("bash")?.clone();
        let token = CancellationToken::new();
        *self.current_turn.0.lock() = Some(token.clone());
        let env = wonopcode_agent_loop::tool::ToolEnv {
            cancel: token,
            // The hidden paths only: a command the person typed is not the model's, and
            // neither hooks nor checkpoints hear of it.
            shared: Arc::new(RunShared {
                hidden_paths: self.shared.hidden_paths.clone(),
                ..RunShared::default()
            }),
            ..wonopcode_agent_loop::tool::ToolEnv::outside_a_run(self.root.clone())
        };
        let said = bash
            .run(serde_json::json!({ "command": command }), &env)
            .await;
        *self.current_turn.0.lock() = None;
        Some(match said {
            Ok(output) => (output.content, output.is_error),
            Err(e) => (format!("`bash` failed: {e}"), true),
        })
    }

    /// The paths the sandbox hides from commands and file tools, which nothing the person
    /// names relative to the workspace reads either.
    pub fn hidden_paths(&self) -> &[PathBuf] {
        &self.shared.hidden_paths
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
