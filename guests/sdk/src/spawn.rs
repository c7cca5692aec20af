//! Delegation: spawn child contexts (a specialist guest, the same guest, a file) and read
//! their results. A child gets its own instance, history and state, and at most the tools of
//! its parent; the host enforces its limits and rolls its usage up into the parent's.

use crate::bindings::wonopcode::agent_loop::context::{
    self, ContextGeneration, ContextGrants, ContextModule, ContextResult, ContextStatus,
    SpawnRequest,
};
use crate::bindings::wonopcode::agent_loop::storage::{self, Attachment};
use crate::tiers::{Route, Tier};

/// The state key a child sets to return structured data: its value arrives in the
/// parent as the result's `data`.
pub const RESULT_DATA_KEY: &str = "__result_data__";

/// A child context to spawn, built up field by field: the WIT `spawn-request`, every
/// setting the parent's until one is set.
#[derive(Clone)]
pub struct Spawn(SpawnRequest);

/// What a child may use beyond its tools (`context-grants`): a narrower sandbox and a cost
/// limit. A grant wider than the parent's refuses the spawn.
#[derive(Clone, Default)]
pub struct Grants {
    /// `read-only`, `workspace-write` or `full-access`; `None`: the parent's mode.
    pub sandbox: Option<String>,
    /// More paths the child's commands may write.
    pub write: Vec<String>,
    /// Hidden paths they may read.
    pub read: Vec<String>,
    /// `HOST:PORT` they may reach.
    pub network: Vec<String>,
    /// The most processes one command may have.
    pub max_processes: Option<u32>,
    /// Dollars the child and its descendants may spend.
    pub max_cost_usd: Option<f64>,
}

impl Spawn {
    fn new(module: ContextModule, task: impl Into<String>) -> Self {
        Self(SpawnRequest {
            module,
            task: task.into(),
            system_prompt: None,
            allowed_tools: None,
            denied_tools: None,
            preferred_provider: None,
            preferred_model: None,
            max_iterations: None,
            max_tokens: None,
            timeout_ms: None,
            inherit_messages: false,
            custom_data: None,
            grants: ContextGrants {
                sandbox: None,
                write: Vec::new(),
                read: Vec::new(),
                network: Vec::new(),
                max_processes: None,
                max_cost_usd: None,
            },
            generation: ContextGeneration {
                thinking: None,
                max_output_tokens: None,
                temperature: None,
            },
            attachments: Vec::new(),
            extensions: Vec::new(),
        })
    }

    /// A module the host's registry knows by `name` (`coder`, `coder.wasm`, `standard`, an
    /// agent's name).
    pub fn named(name: &str, task: impl Into<String>) -> Self {
        Self::new(ContextModule::Named(name.to_owned()), task)
    }

    /// A fresh instance of the calling guest.
    pub fn same(task: impl Into<String>) -> Self {
        Self::new(ContextModule::Same, task)
    }

    /// A component file (relative to the workspace).
    pub fn path(path: &str, task: impl Into<String>) -> Self {
        Self::new(ContextModule::Path(path.to_owned()), task)
    }

    /// Only these of the parent's tools.
    pub fn allow(mut self, tools: &[&str]) -> Self {
        self.0.allowed_tools = Some(tools.iter().map(|t| (*t).to_owned()).collect());
        self
    }

    /// None of these tools.
    pub fn deny(mut self, tools: &[&str]) -> Self {
        self.0.denied_tools = Some(tools.iter().map(|t| (*t).to_owned()).collect());
        self
    }

    /// The model requests the child may make.
    pub fn max_iterations(mut self, n: u32) -> Self {
        self.0.max_iterations = Some(n);
        self
    }

    /// Tokens the child and its descendants may spend.
    pub fn max_tokens(mut self, n: u64) -> Self {
        self.0.max_tokens = Some(n);
        self
    }

    /// Wall time the child may take.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.0.timeout_ms = Some(ms);
        self
    }

    /// The provider and model the child should prefer.
    pub fn prefer(mut self, provider: Option<&str>, model: Option<&str>) -> Self {
        self.0.preferred_provider = provider.map(str::to_owned);
        self.0.preferred_model = model.map(str::to_owned);
        self
    }

    /// The current provider's model of `tier` ([`Route::of_tier`]: Haiku, Sonnet or Opus on
    /// Anthropic); the parent's model when the provider has no tiers or the host cannot open
    /// that one. `Spawn::named("researcher", task).tier(Tier::Fast)`.
    pub fn tier(self, tier: Tier) -> Self {
        match Route::of_tier(tier) {
            Some(route) => self.prefer(Some(&route.provider), Some(&route.model)),
            None => self,
        }
    }

    /// Starts the child with a copy of this context's history.
    pub fn inherit_messages(mut self) -> Self {
        self.0.inherit_messages = true;
        self
    }

    /// JSON the child reads with `context::get_spawn_request` (or [`spawn_request`]).
    pub fn custom_data(mut self, json: impl Into<String>) -> Self {
        self.0.custom_data = Some(json.into());
        self
    }

    /// The child's system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.0.system_prompt = Some(prompt.into());
        self
    }

    /// Narrower grants for the child.
    pub fn grants(mut self, grants: Grants) -> Self {
        self.0.grants = ContextGrants {
            sandbox: grants.sandbox,
            write: grants.write,
            read: grants.read,
            network: grants.network,
            max_processes: grants.max_processes,
            max_cost_usd: grants.max_cost_usd,
        };
        self
    }

    /// How much the child's model thinks: `off`, `low`, `medium`, `high` or a number of
    /// tokens.
    pub fn thinking(mut self, setting: impl Into<String>) -> Self {
        self.0.generation.thinking = Some(setting.into());
        self
    }

    /// The most tokens one of the child's responses may have.
    pub fn max_output_tokens(mut self, n: u32) -> Self {
        self.0.generation.max_output_tokens = Some(n);
        self
    }

    /// The child's sampling temperature, 0 to 2.
    pub fn temperature(mut self, t: f32) -> Self {
        self.0.generation.temperature = Some(t);
        self
    }

    /// Images and PDFs (the person's, from [`prompt_attachments`], or the guest's own) in
    /// the child's first task message, before its text. A fork does not repeat them.
    pub fn attach(mut self, attachments: &[Attachment]) -> Self {
        self.0.attachments = attachments.to_vec();
        self
    }

    /// The WIT request.
    pub fn request(&self) -> &SpawnRequest {
        &self.0
    }

    /// Spawns the child and waits for it. `Err`: it could not start.
    pub fn run(&self) -> Result<ContextResult, String> {
        context::spawn(&self.0)
    }

    /// Starts the child and returns at once with a handle that lives on after its turn:
    /// [`Child::wait`] for its answer, [`Child::send`] it follow-ups with its history kept.
    /// Its forks keep its grants and settings.
    pub fn start(&self) -> Result<Child, String> {
        context::start(&self.0).map(Child)
    }

    /// [`Spawn::run`] with `attachments` in the child's task message ([`Spawn::attach`]).
    pub fn run_with(&self, attachments: &[Attachment]) -> Result<ContextResult, String> {
        self.clone().attach(attachments).run()
    }

    /// [`Spawn::start`] with `attachments` in the first turn's task message.
    pub fn start_with(&self, attachments: &[Attachment]) -> Result<Child, String> {
        self.clone().attach(attachments).start()
    }
}

/// The request this context was started with (its `custom-data` says which role a child of
/// [`Spawn::same`] plays); `None` for the root.
pub fn spawn_request() -> Option<SpawnRequest> {
    context::get_spawn_request()
}

/// The images and documents of the newest user message of this context's history: what
/// the person attached to the prompt (once the loop has added it to the history), to pass
/// on to a child with [`Spawn::attach`].
pub fn prompt_attachments() -> Vec<Attachment> {
    let messages = storage::get_messages();
    let newest = messages.iter().rposition(|m| {
        m.role == crate::bindings::wonopcode::agent_loop::providers::MessageRole::User
    });
    newest
        .and_then(|i| u32::try_from(i).ok())
        .map(storage::get_attachments)
        .unwrap_or_default()
}

/// A child context that lives on after its turn. Dropping it closes the child: a turn in
/// progress is cancelled and its place in the tree is freed.
pub struct Child(context::Child);

impl Child {
    /// Its context id (`0.1`).
    pub fn id(&self) -> String {
        self.0.id()
    }

    /// Waits for the current turn's answer.
    pub fn wait(&self) -> Result<ContextResult, String> {
        self.0.wait()
    }

    /// The current turn's answer if it has finished, without waiting.
    pub fn poll(&self) -> Option<ContextResult> {
        self.0.poll()
    }

    /// Whether a turn runs, has an answer not yet taken, or the child waits for a follow-up.
    pub fn state(&self) -> context::ChildState {
        self.0.state()
    }

    /// Starts a follow-up turn; the child keeps its history.
    pub fn send(&self, message: &str) -> Result<(), String> {
        self.0.send(message)
    }

    /// [`Child::send`], then [`Child::wait`].
    pub fn ask(&self, message: &str) -> Result<ContextResult, String> {
        self.send(message)?;
        self.wait()
    }

    /// Cancels the turn in progress and every later one.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// A new child with a copy of this one's history, starting a turn on `task`.
    pub fn fork(&self, task: &str) -> Result<Child, String> {
        self.0.fork(task).map(Child)
    }
}

/// Spawns `children` concurrently (at most `max_concurrent` at once, and never more than the
/// host allows) and waits for all; results in the order given. Each child keeps all its
/// settings (grants, generation, attachments).
pub fn spawn_all(
    children: &[Spawn],
    max_concurrent: Option<u32>,
) -> Vec<Result<ContextResult, String>> {
    let requests: Vec<SpawnRequest> = children.iter().map(|c| c.0.clone()).collect();
    context::spawn_parallel(&requests, max_concurrent)
}

/// Returns structured data to the parent (as its result's `data`).
pub fn set_result_data(json: &str) {
    storage::set_state(RESULT_DATA_KEY, json);
}

/// The status as one word, and the child's error when it had one.
pub fn status_text(status: &ContextStatus) -> String {
    match status {
        ContextStatus::Completed => "completed".to_owned(),
        ContextStatus::Cancelled => "cancelled".to_owned(),
        ContextStatus::MaxIterationsReached => "max_iterations_reached".to_owned(),
        ContextStatus::TokenLimitReached => "token_limit_reached".to_owned(),
        ContextStatus::Timeout => "timeout".to_owned(),
        ContextStatus::Error(e) => format!("error: {e}"),
        ContextStatus::Suspended(e) => format!("suspended: {e}"),
        ContextStatus::BudgetExceeded(e) => format!("budget exceeded: {e}"),
    }
}

/// A child's result as text a model can read: status, answer, data and changed files.
pub fn describe(result: &ContextResult) -> String {
    let mut out = format!("status: {}\n", status_text(&result.status));
    if !result.response.is_empty() {
        out.push_str(&format!("answer:\n{}\n", result.response));
    }
    if let Some(data) = &result.data {
        out.push_str(&format!("data: {data}\n"));
    }
    if !result.modified_files.is_empty() {
        out.push_str(&format!(
            "modified files: {}\n",
            result.modified_files.join(", ")
        ));
    }
    out
}

/// What a child spent, in one line: `1,300 input + 80 output tokens, $0.0051` (`cost
/// unknown` when the host knows no price for its model). No wall time: the line goes back to
/// the model, and a replayed run must send the model what the recording did.
pub fn spent(result: &ContextResult) -> String {
    let cost = match result.usage.total_cost_microcents {
        // A microcent is 1e-8 dollars.
        Some(microcents) => format!("${:.4}", microcents as f64 / 1e8),
        None => "cost unknown".to_owned(),
    };
    format!(
        "{} input + {} output tokens, {cost}",
        grouped(result.usage.input_tokens),
        grouped(result.usage.output_tokens),
    )
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
