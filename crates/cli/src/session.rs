//! One wonopcode session: builds the loop context from flags and config, runs prompts
//! (one-shot, piped, or an interactive REPL), and handles Ctrl-C.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use anyhow::{Context, bail};
use clap::ArgMatches;
use indicatif::{MultiProgress, ProgressDrawTarget};
use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::message::pending_tool_calls;
use wonopcode_agent_loop::{
    AgentLoop, Emitter, EventKind, LoopConfig, LoopContext, LoopResult, LoopStatus, Message,
    ModelSource, RunStats, SharedGate, SharedModel, ToolRegistry, resume_turn, run_turn,
};
use wonopcode_providers::{
    Catalog, CatalogSource, Choice, EnvReader, HttpModel, RecordingModel, RecordingSource,
    ReplayProvider, ReplaySource,
};
use wonopcode_registry::{CatalogResolver, SearchPath};
use wonopcode_tools::permission::{Action, PermissionPolicy, Prompter, Rule, Unattended};
use wonopcode_tools::{BuiltinOptions, register_builtins};
use wonopcode_wasm_host::{GuestPrompter, HostConfig};

use crate::args::{Args, UnattendedArg};
use crate::config::{self, Config};
use crate::exit;
use crate::history::History;
use crate::loops;
use crate::prompter::TerminalPrompter;
use crate::render::{CliSink, JsonlRenderer, Renderer, TerminalRenderer};

/// The system prompt of the standard loop unless the config replaces it. It names no
/// absolute path, so recorded transcripts replay on any machine.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are wonopcode, a coding agent working in the user's workspace. \
Use the tools to inspect and change files; paths are relative to the workspace root. \
Read before you edit, keep changes minimal, and finish with a short summary of what you did.";

/// A mistake in how wonopcode was invoked (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A usage error (exit code 2) saying `message`.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// Where prompts come from.
enum Input {
    One(String),
    /// Continue a suspended run, answering these pending calls (`(call id, text)`).
    Resume(Vec<(String, String)>),
    Repl,
}

/// Permission rules from flags, in the order they were given (first match wins).
fn flag_rules(args: &Args, matches: &ArgMatches) -> anyhow::Result<Vec<Rule>> {
    let mut indexed = Vec::new();
    for (id, values, action) in [
        ("allow", &args.allow, Action::Allow),
        ("ask", &args.ask, Action::Ask),
        ("deny", &args.deny, Action::Deny),
    ] {
        let indices = matches
            .indices_of(id)
            .map(Iterator::collect::<Vec<_>>)
            .unwrap_or_default();
        for (value, index) in values.iter().zip(indices) {
            let rule = Rule::parse(value, action).map_err(|e| usage(format!("--{id}: {e}")))?;
            indexed.push((index, rule));
        }
    }
    indexed.sort_by_key(|(i, _)| *i);
    Ok(indexed.into_iter().map(|(_, r)| r).collect())
}

fn workspace_root(args: &Args) -> anyhow::Result<PathBuf> {
    let dir = match &args.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot determine the current directory")?,
    };
    let canonical = dir.canonicalize().map_err(|e| {
        usage(format!(
            "-C/--cwd: workspace directory {} is not usable: {e}",
            dir.display()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(usage(format!(
            "-C/--cwd: {} is not a directory",
            dir.display()
        )));
    }
    Ok(canonical)
}

/// The model and the models guests may switch to: a recorded transcript (and the models it
/// recorded) with --replay, else a real provider chosen from the flags, the config file and
/// the keys in the environment (and the catalog's other providers); all of them recorded with
/// --record.
async fn model(
    args: &Args,
    config: &Config,
) -> anyhow::Result<(SharedModel, Arc<dyn ModelSource>)> {
    let (model, models): (SharedModel, Arc<dyn ModelSource>) = match &args.replay {
        Some(path) => {
            let mut replay = ReplayProvider::from_file(path)?;
            if let Some(ms) = args.replay_pace {
                replay = replay.paced(std::time::Duration::from_millis(ms));
            }
            let replay = Arc::new(replay);
            (replay.clone(), Arc::new(ReplaySource(replay)))
        }
        None => {
            let catalog = Catalog::builtin()?.with_overrides(&config.providers)?;
            // A model in the config belongs to the config's provider; with another
            // --provider, that provider's default applies.
            let model = args
                .model
                .as_deref()
                .or(match (&args.provider, &config.provider) {
                    (Some(flag), Some(own)) if flag != own => None,
                    _ => config.model.as_deref(),
                });
            let choice = Choice {
                // A bare --base-url means an OpenAI-compatible server.
                provider: args
                    .provider
                    .as_deref()
                    .or(config.provider.as_deref())
                    .or(args.base_url.as_ref().map(|_| "openai-compatible")),
                model,
                base_url: args.base_url.as_deref(),
            };
            let env: EnvReader = Arc::new(|name: &str| std::env::var(name).ok());
            let settings = catalog
                .resolve(choice, &*env)
                .await
                .map_err(|e| usage(e.to_string()))?;
            let first: SharedModel =
                Arc::new(HttpModel::new(settings).map_err(|e| usage(e.to_string()))?);
            let models = CatalogSource::new(catalog, env, first.clone(), args.base_url.clone());
            (first, Arc::new(models))
        }
    };
    match &args.record {
        Some(out) => {
            let recorder = Arc::new(
                RecordingModel::create(model, out)
                    .with_context(|| format!("cannot create transcript {}", out.display()))?,
            );
            let models = RecordingSource::new(models, recorder.clone());
            Ok((recorder, Arc::new(models)))
        }
        None => Ok((model, models)),
    }
}

fn input(args: &Args) -> anyhow::Result<Input> {
    if args.resume {
        return Ok(Input::Resume(args.answer.clone()));
    }
    if let Some(prompt) = &args.prompt {
        if prompt.trim().is_empty() {
            return Err(usage("the prompt is empty"));
        }
        return Ok(Input::One(prompt.clone()));
    }
    if std::io::stdin().is_terminal() {
        return Ok(Input::Repl);
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .context("cannot read the prompt from stdin")?;
    if text.trim().is_empty() {
        return Err(usage("no prompt: give one as an argument or on stdin"));
    }
    Ok(Input::One(text.trim_end().to_owned()))
}

fn new_session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("s{nanos:x}{:x}", std::process::id())
}

/// Runs the session; returns the exit code.
pub async fn run(args: Args, matches: ArgMatches) -> anyhow::Result<u8> {
    if args.list_loops {
        return loops::list(&args).await;
    }
    if args.validate_module {
        return loops::validate(&args).await;
    }
    if let (Some(dir), Some(lang)) = (&args.new_guest, args.lang) {
        return crate::new_guest::create(dir, lang);
    }
    let choice = loops::loop_choice(&args)?;
    let root = workspace_root(&args)?;
    let config: Config = config::load(args.config.as_deref())?;
    let mut policy_config = config.permissions.clone();
    let mut rules = flag_rules(&args, &matches)?;
    rules.append(&mut policy_config.rules);
    policy_config.rules = rules;
    if let Some(mode) = args.unattended {
        policy_config.unattended = match mode {
            UnattendedArg::Deny => Unattended::Deny,
            UnattendedArg::Suspend => Unattended::Suspend,
        };
    }
    let input = input(&args)?;
    let (provider, models) = model(&args, &config).await?;

    let mut tools = ToolRegistry::new();
    let mut options = BuiltinOptions::default();
    if let Some(ms) = args.bash_timeout_ms {
        options.bash_timeout = std::time::Duration::from_millis(ms);
    }
    register_builtins(&mut tools, options)?;

    let (history, mut messages) = match &args.history {
        Some(path) => {
            let (h, m) = History::open(path, &new_session_id())?;
            (Some(h), m)
        }
        None => (None, Vec::new()),
    };
    let session_id = history
        .as_ref()
        .map_or_else(new_session_id, |h| h.session_id.clone());

    let interactive =
        std::io::stdin().is_terminal() && !matches!(input, Input::One(_) if args.prompt.is_none());
    let progress = MultiProgress::with_draw_target(if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let terminal = interactive.then(|| {
        Arc::new(TerminalPrompter {
            progress: progress.clone(),
        })
    });
    let prompter = terminal.clone().map(|t| t as Arc<dyn Prompter>);
    let policy: SharedGate = Arc::new(PermissionPolicy::new(policy_config, args.yes, prompter));

    let renderer: Box<dyn Renderer> = if args.json {
        Box::new(JsonlRenderer)
    } else {
        Box::new(TerminalRenderer::new(progress.clone()))
    };
    let session_token = CancellationToken::new();
    let sink = Arc::new(CliSink::new(
        history,
        renderer,
        session_token.clone(),
        args.trace.is_some(),
    ));
    let events = Emitter::new(sink.clone(), wonopcode_agent_loop::ContextPath::root());

    let mut loop_config = LoopConfig {
        max_iterations: args.max_iterations.or(config.max_iterations).unwrap_or(50),
        system_prompt: Some(
            config
                .system_prompt
                .clone()
                .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned()),
        ),
        ..LoopConfig::default()
    };
    loop_config.compaction.max_messages = config.compact_after_messages;
    let host_config = HostConfig {
        values: config.guest.clone(),
        prompter: terminal.map(|t| t as Arc<dyn GuestPrompter>),
        contexts: config.contexts.limits(args.max_parallel),
        resolver: Some(Arc::new(CatalogResolver::new(SearchPath::standard(
            &args.loops_dir,
        )))),
        models: Some(models),
        ..HostConfig::default()
    };
    let (agent, reloader) =
        loops::agent_loop(choice, loops::cache_policy(&args, &config), host_config).await?;
    events.emit(EventKind::SessionStarted {
        session_id: session_id.clone(),
        loop_name: agent.name().to_owned(),
        model: provider.info().id.clone(),
        schema_version: wonopcode_agent_loop::event::EVENT_SCHEMA_VERSION,
    });

    let current_turn: Arc<Mutex<Option<CancellationToken>>> = Arc::new(Mutex::new(None));
    spawn_ctrl_c_handler(current_turn.clone());

    let mut session = Session {
        root,
        messages: &mut messages,
        provider: &provider,
        tools: &tools,
        policy: &policy,
        config: &loop_config,
        events: &events,
        session_id,
        session_token,
        current_turn,
        agent,
        // Only an interactive session has a "next prompt" to reload before.
        reloader: reloader.filter(|_| matches!(input, Input::Repl)),
        can_resume: args.history.is_some(),
        sink: &sink,
    };
    session.start().await?;
    let code = match input {
        Input::One(prompt) => session.prompt(&prompt).await,
        Input::Resume(answers) => {
            check_answers(session.messages, &answers)?;
            session.resume(answers).await
        }
        Input::Repl => session.repl().await?,
    };
    if let Some(path) = &args.trace {
        sink.write_trace(path)
            .with_context(|| format!("cannot write the trace to {}", path.display()))?;
    }
    Ok(code)
}

fn spawn_ctrl_c_handler(current_turn: Arc<Mutex<Option<CancellationToken>>>) {
    tokio::spawn(async move {
        loop {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            let active = current_turn.lock().clone();
            match active {
                Some(token) if !token.is_cancelled() => {
                    token.cancel();
                    eprintln!("\ncancelling the turn (Ctrl-C again quits)");
                }
                // Every stored message is already synced, so quitting keeps the history valid.
                _ => std::process::exit(i32::from(exit::CANCELLED)),
            }
        }
    });
}

/// What a turn starts from.
enum Turn<'p> {
    /// A new prompt.
    Prompt(&'p str),
    /// The answers to a suspended run's pending calls (`(call id, content, is_error)`).
    Resume(Vec<(String, String, bool)>),
}

/// Each `--answer` must name a call the suspended run waits on.
fn check_answers(messages: &[Message], answers: &[(String, String)]) -> anyhow::Result<()> {
    let pending = pending_tool_calls(messages);
    if pending.is_empty() {
        return Err(usage(
            "--resume: the history has no suspended run (no tool call waits for an answer)",
        ));
    }
    for (id, _) in answers {
        if !pending.iter().any(|(p, _, _)| p == id) {
            let waiting: Vec<String> = pending
                .iter()
                .map(|(id, name, _)| format!("{id} ({name})"))
                .collect();
            return Err(usage(format!(
                "--answer {id}=...: no pending call has that id; the run waits on {}",
                waiting.join(", ")
            )));
        }
    }
    Ok(())
}

struct Session<'a> {
    root: PathBuf,
    messages: &'a mut Vec<Message>,
    provider: &'a SharedModel,
    tools: &'a ToolRegistry,
    policy: &'a SharedGate,
    config: &'a LoopConfig,
    events: &'a Emitter,
    session_id: String,
    session_token: CancellationToken,
    current_turn: Arc<Mutex<Option<CancellationToken>>>,
    agent: Arc<dyn AgentLoop>,
    /// Watches a guest file for changes between REPL prompts.
    reloader: Option<loops::Reloader>,
    can_resume: bool,
    sink: &'a CliSink,
}

impl Session<'_> {
    fn context<'b>(&'b mut self, cancel: &'b CancellationToken) -> LoopContext<'b> {
        LoopContext {
            cwd: &self.root,
            messages: self.messages,
            provider: self.provider,
            tools: self.tools,
            permissions: self.policy,
            config: self.config,
            cancel,
            events: self.events,
            session_id: self.session_id.clone(),
            stats: RunStats::default(),
        }
    }

    async fn start(&mut self) -> anyhow::Result<()> {
        let token = self.session_token.child_token();
        let agent = self.agent.clone();
        let mut ctx = self.context(&token);
        agent
            .on_start(&mut ctx)
            .await
            .context("the loop failed to start")?;
        Ok(())
    }

    /// Runs one prompt and returns its exit code.
    async fn prompt(&mut self, prompt: &str) -> u8 {
        self.turn(Turn::Prompt(prompt)).await
    }

    /// Continues a suspended run with answers to pending calls; returns its exit code.
    async fn resume(&mut self, answers: Vec<(String, String)>) -> u8 {
        let answers = answers
            .into_iter()
            .map(|(id, text)| (id, text, false))
            .collect();
        self.turn(Turn::Resume(answers)).await
    }

    async fn turn(&mut self, turn: Turn<'_>) -> u8 {
        let token = self.session_token.child_token();
        *self.current_turn.lock() = Some(token.clone());
        let agent = self.agent.clone();
        let result = {
            let mut ctx = self.context(&token);
            match turn {
                Turn::Prompt(p) => run_turn(agent.as_ref(), &mut ctx, p).await,
                Turn::Resume(answers) => resume_turn(agent.as_ref(), &mut ctx, answers).await,
            }
        };
        *self.current_turn.lock() = None;
        if let Some(failure) = self.sink.failure() {
            eprintln!("error: {failure}");
            return exit::ERROR;
        }
        self.report(&result);
        exit::for_status(result.status)
    }

    fn report(&self, result: &LoopResult) {
        let error = result.error.as_deref().unwrap_or("");
        match result.status {
            LoopStatus::Complete => {}
            LoopStatus::Error => eprintln!("error: {error}"),
            LoopStatus::MaxIterations => {
                eprintln!("error: {error} (raise it with --max-iterations)")
            }
            LoopStatus::Cancelled => eprintln!("cancelled"),
            LoopStatus::Suspended => {
                let waiting: Vec<String> = result
                    .pending
                    .iter()
                    .map(|p| format!("{} ({})", p.id, p.name))
                    .collect();
                let how = if self.can_resume {
                    format!(
                        "continue with --resume (with --yes or an --allow rule to approve it, or --answer CALL_ID=TEXT; waiting: {})",
                        waiting.join(", ")
                    )
                } else {
                    "run with --history FILE to be able to resume".to_owned()
                };
                eprintln!("suspended: {error}; {how}");
            }
        }
    }

    /// Hot reload: a guest file that changed since the last prompt is validated and loaded;
    /// the history carries over, since it lives in the session, not in the guest.
    async fn reload_if_changed(&mut self) {
        let Some(reloader) = self.reloader.as_mut() else {
            return;
        };
        let Some(reloaded) = reloader.check().await else {
            return;
        };
        self.events.emit(EventKind::LoopReloaded {
            loop_name: reloaded.agent.name().to_owned(),
            module: reloaded.module,
            sha256: reloaded.sha256,
        });
        self.agent = reloaded.agent;
    }

    async fn repl(&mut self) -> anyhow::Result<u8> {
        eprintln!(
            "wonopcode · workspace {} · Ctrl-D or /exit to quit",
            self.root.display()
        );
        loop {
            let line = tokio::task::spawn_blocking(|| {
                eprint!("{} ", console::style(">").cyan().bold());
                let mut line = String::new();
                match std::io::stdin().read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line),
                }
            })
            .await
            .unwrap_or(None);
            let Some(line) = line else {
                return Ok(exit::SUCCESS);
            };
            let prompt = line.trim();
            match prompt {
                "" => continue,
                "/exit" | "/quit" => return Ok(exit::SUCCESS),
                _ => {}
            }
            self.reload_if_changed().await;
            let code = self.prompt(prompt).await;
            if code == exit::ERROR && self.sink.failure().is_some() {
                bail!("stopping: the history file can no longer be written");
            }
        }
    }
}
