//! `Run`: one prompt's run, owned in one place. It holds the history, the services, the
//! counters, the todo list and the doom-loop detector, and its step methods are the rules of
//! a run: request a response and store it (`response.rs`: cancellation, the iteration limit,
//! compaction, one retry after the provider says the history does not fit), check it for
//! repetition, run its tool round (break-loop and suspension). `StandardLoop` is a short loop over these steps;
//! the WebAssembly host keeps a `Run` in the guest's store and maps each WIT call to a step,
//! so a guest's run obeys the same rules as the native one.

use std::collections::BTreeSet;
use std::sync::Arc;

use wonopcode_protocol::context_path::ContextPath;
use wonopcode_protocol::event::{EventKind, Item, ItemDetails};
use wonopcode_protocol::message::{Message, Part, Role, SharedHistory, pending_tool_calls};
use wonopcode_protocol::model::{ModelRequest, RequestOptions, ToolSchema};
use wonopcode_protocol::{Call, LoopError, PendingCall};

use crate::agent::{LoopConfig, LoopContext, RunStats};
use crate::compaction::{Compactor, TokenTally};
use crate::doom_loop::DoomLoopDetector;
use crate::repeated_result;
use crate::services::RunServices;
use crate::tool::{BreakLoop, ToolEnv};
use crate::tool_round::{CallOutcome, TodoTracker, run_calls};

/// What a step decided: go on, or the run ends with this outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The run goes on.
    Continue,
    /// The run ends: the answer, or why not (including `Suspended` and `MaxIterations`).
    Stop(Result<String, LoopError>),
}

/// What a tool round did: whether the run goes on, and which calls succeeded (in call order;
/// a call left pending did not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    /// Whether the run goes on.
    pub next: Next,
    /// Per call, true when it ran and did not fail.
    pub succeeded: Vec<bool>,
}

/// The result of a call a loop ran itself (`Run::execute_for_loop`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopCallResult {
    /// Output for the model.
    pub content: String,
    /// True when the call failed or did not run.
    pub is_error: bool,
    /// How long it ran.
    pub duration: std::time::Duration,
}

/// A stored response: its text, and the calls its tool round runs (none: it is the answer).
#[derive(Debug, Clone)]
pub struct Response {
    /// The visible text.
    pub text: String,
    /// The tool calls, in order.
    pub calls: Vec<Call>,
}

/// One prompt's run. See the module documentation.
pub struct Run {
    /// The services, shared with each tool round's calls (`ToolEnv::run`) rather than
    /// copied for them; changed through `Arc::make_mut` (a guest switching model, a tool
    /// source that changed), which copies only while a call still holds them.
    pub services: Arc<RunServices>,
    /// The conversation history, shared with the request in flight. Add to it with
    /// [`Run::push_message`]; change it otherwise only through [`Run::history_mut`], which
    /// has the run count its tokens again.
    pub messages: SharedHistory,
    /// Usage and requests of this run.
    pub stats: RunStats,
    doom: DoomLoopDetector,
    todo: TodoTracker,
    /// The history's token estimate, kept as it grows.
    tally: TokenTally,
    /// The history size below which old tool outputs cannot add up to a batch to clear: a
    /// look that found too few is not made again until the history has grown by what was
    /// missing (so a long session is not walked before every request).
    clear_after: usize,
    /// Set once a step ended the run: later steps refuse to go on.
    ending: Option<Result<String, LoopError>>,
    /// Images and documents attached to the prompt, put in the first user message the
    /// loop adds (its prompt), whichever loop adds it.
    attachments: Vec<Part>,
    /// What the person sends into the turn while it runs, taken before each request.
    steering: crate::Steering,
}

impl Run {
    /// A run over `messages` with `services`.
    pub fn new(services: RunServices, messages: Vec<Message>) -> Self {
        Self {
            services: Arc::new(services),
            messages: Arc::new(messages),
            stats: RunStats::default(),
            doom: DoomLoopDetector::default(),
            todo: TodoTracker::default(),
            tally: TokenTally::owned(),
            clear_after: 0,
            ending: None,
            attachments: Vec::new(),
            steering: crate::Steering::default(),
        }
    }

    /// A run over a loop context: its history is moved (not copied) into the run, its
    /// services' handles cloned. `give_back` returns the history and adds the counters.
    pub fn take_from(ctx: &mut LoopContext<'_>) -> Self {
        let services = RunServices {
            cwd: ctx.cwd.to_path_buf(),
            provider: ctx.provider.clone(),
            tools: ctx.tools.clone(),
            gate: ctx.permissions.clone(),
            config: ctx.config.clone(),
            shared: ctx.shared.clone(),
            events: ctx.events.clone(),
            cancel: ctx.cancel.clone(),
            session_id: ctx.session_id.clone(),
        };
        let mut run = Self::new(services, std::mem::take(ctx.messages));
        run.attachments = std::mem::take(&mut ctx.attachments);
        run.steering = ctx.steering.clone();
        run
    }

    /// Hands the history back to the loop context, adds this run's counters to its stats,
    /// completes the todo-list item and returns the attachments no message took.
    pub fn give_back(self, ctx: &mut LoopContext<'_>) {
        self.todo.finish(&self.services.events);
        // Attachments no user message took (a guest's `on-start`) wait for the prompt's.
        ctx.attachments = self.attachments;
        *ctx.messages = Arc::unwrap_or_clone(self.messages);
        ctx.stats.usage.add(&self.stats.usage);
        ctx.stats.iterations += self.stats.iterations;
    }

    /// The inbox of what the person sends into this turn (`crate::steering`).
    pub(crate) fn steering(&self) -> &crate::Steering {
        &self.steering
    }

    /// How the run ended, once a step ended it.
    pub fn ending(&self) -> Option<&Result<String, LoopError>> {
        self.ending.as_ref()
    }

    /// Takes the outcome a step ended the run with.
    pub fn take_ending(&mut self) -> Option<Result<String, LoopError>> {
        self.ending.take()
    }

    /// Records how the run ends (the first ending wins) and returns it.
    fn end(&mut self, outcome: Result<String, LoopError>) -> Result<String, LoopError> {
        self.ending.get_or_insert(outcome).clone()
    }

    /// Ends the run with `error` (unless it had ended already) and returns the error.
    pub fn fail(&mut self, error: LoopError) -> LoopError {
        self.ending.get_or_insert_with(|| Err(error.clone()));
        error
    }

    /// Ends the run suspended on calls deeper in the tree (a child context it read has
    /// suspended): the run waits on them. Children read in one batch add theirs to the same
    /// suspension; any other ending that came first stands.
    pub fn wait_on(&mut self, deeper: Vec<PendingCall>) {
        match &mut self.ending {
            Some(Err(LoopError::Suspended { pending, .. })) => pending.extend(deeper),
            Some(_) => {}
            None => {
                let reason = waiting_on(&deeper);
                self.ending = Some(Err(LoopError::Suspended {
                    pending: deeper,
                    reason,
                }));
            }
        }
    }

    /// Appends a message to the history and announces it to the consumer. While the run is
    /// suspended, results for the calls it waits on are left out: only a resume answers them.
    pub fn push_message(&mut self, mut message: Message) {
        if let Some(Err(LoopError::Suspended { pending, .. })) = &self.ending
            && message.role == Role::Tool
        {
            let here = self.services.events.context();
            let waiting = |id: &str| pending.iter().any(|p| p.id == id && p.context == *here);
            let kept: Vec<Part> = message
                .parts
                .iter()
                .filter(|p| !matches!(p, Part::ToolResult { call_id, .. } if waiting(call_id)))
                .cloned()
                .collect();
            if kept.is_empty() {
                return;
            }
            message.parts = kept.into();
        }
        if message.role == Role::User && !self.attachments.is_empty() {
            // Before the text, where the APIs advise an image to go.
            let mut parts = std::mem::take(&mut self.attachments);
            parts.extend(message.parts.iter().cloned());
            message.parts = parts.into();
        }
        self.services.events.emit(EventKind::MessageCreated {
            message: message.clone(),
        });
        Arc::make_mut(&mut self.messages).push(message);
    }

    /// Answers tool calls a previous, interrupted run left without results, so the history is
    /// one every provider accepts.
    pub fn close_interrupted_calls(&mut self) {
        let pending = pending_tool_calls(&self.messages);
        if pending.is_empty() {
            return;
        }
        let parts = pending
            .into_iter()
            .map(|(id, _, _)| Part::ToolResult {
                call_id: id,
                content: "not run: the previous run stopped before this call finished".to_owned(),
                is_error: true,
            })
            .collect();
        self.push_message(Message {
            role: Role::Tool,
            parts,
        });
    }

    /// Counts a model request, or says why none may be made: the run ended, was cancelled,
    /// or reached its iteration limit (which ends it). Tools whose source changed (an MCP
    /// server's list) are taken here, so every request offers the tools as they are.
    pub fn begin_request(&mut self) -> Result<(), LoopError> {
        if let Some(ended) = &self.ending {
            return Err(match ended {
                Err(e) => e.clone(),
                Ok(_) => LoopError::Internal("the run has already ended".to_owned()),
            });
        }
        if self.services.cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        let limit = self.services.config.max_iterations;
        if self.stats.iterations >= limit {
            return Err(self.fail(LoopError::MaxIterations { limit }));
        }
        self.stats.iterations += 1;
        // A tool source that changed (an MCP server's list) is taken now, between responses.
        let refreshed = match self.services.tools.changed() {
            true => Arc::make_mut(&mut self.services).tools.refresh(),
            false => Vec::new(),
        };
        for error in refreshed {
            tracing::warn!(error = %error, "a changed tool cannot be offered");
        }
        Ok(())
    }

    /// A request of the run's history with these tools, under the run's system prompt and
    /// generation options overridden by `options` where it sets them.
    pub fn request(&self, tools: Vec<ToolSchema>, options: &RequestOptions) -> ModelRequest {
        let system = self.services.config.system_prompt.clone();
        self.request_of(system, self.messages.clone(), tools, options)
    }

    /// A request of other messages (a loop that keeps its own conversation), under the
    /// run's generation options overridden by `options` where it sets them, with the run's
    /// instructions after `system`.
    pub fn request_of(
        &self,
        system: Option<String>,
        messages: SharedHistory,
        tools: Vec<ToolSchema>,
        options: &RequestOptions,
    ) -> ModelRequest {
        let defaults = &self.services.config.request;
        ModelRequest {
            context: self.services.events.context().clone(),
            system: self.services.config.system_for(system),
            messages,
            tools,
            options: RequestOptions {
                max_tokens: options.max_tokens.or(defaults.max_tokens),
                temperature: options.temperature.or(defaults.temperature),
                thinking_budget: options.thinking_budget.or(defaults.thinking_budget),
            },
        }
    }

    /// Compacts the history when it is past the threshold, before a request (never past the
    /// iteration limit, where no request follows). True when it changed.
    pub async fn compact_if_needed(&mut self) -> bool {
        if self.stats.iterations >= self.services.config.max_iterations {
            return false;
        }
        self.compact(false).await
    }

    /// Compacts the history whatever its estimated size: the provider said it does not fit.
    /// True when it changed.
    pub async fn compact_now(&mut self) -> bool {
        self.compact(true).await
    }

    /// Summarizes the history now, whatever its size and without pruning tool outputs
    /// first (a loop asked for a summary). True when it changed.
    pub async fn summarize(&mut self) -> bool {
        let mut config = self.services.config.clone();
        // Any size counts as too big, and pruning frees nothing worth keeping.
        config.compaction.max_messages = Some(0);
        config.compaction.min_prune_tokens = usize::MAX;
        self.tally.forget();
        let s = &self.services;
        let messages = Arc::make_mut(&mut self.messages);
        compact(s, &config, messages, &mut self.stats.usage, false, None).await
    }

    /// The history to change other than by appending (clear it, drop its start): the run
    /// counts its tokens again.
    pub fn history_mut(&mut self) -> &mut Vec<Message> {
        self.tally.forget();
        self.clear_after = 0;
        Arc::make_mut(&mut self.messages)
    }

    /// The history's token estimate (with the system prompt), kept as it grows.
    pub fn estimated_tokens(&mut self) -> usize {
        let system = self.services.config.system_prompt.as_deref();
        self.tally.estimate(system, &self.messages)
    }

    async fn compact(&mut self, force: bool) -> bool {
        let known = self.estimated_tokens();
        let window = self.services.provider.info().context_window;
        let compaction = &self.services.config.compaction;
        let needed = force || compaction.needs_compaction(known, self.messages.len(), window);
        if !needed {
            if known < self.clear_after || !compaction.may_clear(known) {
                return false;
            }
            let short = compaction.clear_shortfall(&self.messages);
            if short > 0 {
                // No batch can be due before the history has grown by `short`.
                self.clear_after = known + short;
                return false;
            }
        }
        if needed {
            self.tally.forget();
        }
        // The services are borrowed, not cloned: this runs before every request.
        let s = &self.services;
        let changed = compact(
            s,
            &s.config,
            Arc::make_mut(&mut self.messages),
            &mut self.stats.usage,
            force,
            Some(known),
        )
        .await;
        if changed {
            self.tally.forget();
            self.clear_after = 0;
        }
        changed
    }

    /// Stops the run when one call of a stored response (`response`, the assistant message
    /// just stored) repeats `doom_loop_threshold` times in a row (across responses), unless
    /// the permission gate lets it go on. The calls are answered so the history stays valid.
    /// Identical calls within one response are one request run in parallel, not a loop:
    /// each distinct call of a response is observed once.
    pub async fn check_repetition(&mut self, response: &Message) -> Result<(), LoopError> {
        let calls: Vec<(&str, &str, &str)> = response.tool_calls().collect();
        for (i, &(_, name, arguments)) in calls.iter().enumerate() {
            if calls[..i]
                .iter()
                .any(|&(_, n, a)| n == name && a == arguments)
            {
                continue;
            }
            let count = self.doom.observe(name, arguments);
            if count < self.services.config.doom_loop_threshold {
                continue;
            }
            if self.services.gate.confirm_repetition(name, count).await {
                self.doom.reset();
                continue;
            }
            let reason =
                format!("`{name}` was called {count} times in a row with the same arguments");
            let parts = calls
                .iter()
                .map(|&(id, _, _)| Part::ToolResult {
                    call_id: id.to_owned(),
                    content: format!("not run: {reason}"),
                    is_error: true,
                })
                .collect();
            self.push_message(Message {
                role: Role::Tool,
                parts,
            });
            let events = &self.services.events;
            events.emit(EventKind::ItemCompleted {
                item: Item {
                    id: events.next_item_id(),
                    details: ItemDetails::Error {
                        message: format!("doom loop: {reason}"),
                    },
                },
            });
            return Err(self.fail(LoopError::DoomLoop(reason)));
        }
        Ok(())
    }

    /// Runs calls through the run's tools (only those named in `enabled`, when given), each
    /// shown as a `tool_call` item, and keeps the todo list a call rewrote. Outcomes come in
    /// call order.
    pub async fn execute(
        &mut self,
        calls: &[Call],
        enabled: Option<&BTreeSet<String>>,
    ) -> Vec<CallOutcome> {
        // The tools this round may use: the run's own services, shared; a copy only when
        // the round narrows the tools.
        let services = match enabled {
            None => self.services.clone(),
            Some(set) => Arc::new(
                self.services
                    .with_tools(self.services.tools.filtered(set.iter().map(String::as_str))),
            ),
        };
        let s = &services;
        let env = ToolEnv {
            workspace_root: s.cwd.clone(),
            cancel: s.cancel.clone(),
            context: s.events.context().clone(),
            gate: Some(s.gate.clone()),
            shared: s.shared.clone(),
            live: None,
            run: Some(services.clone()),
        };
        let mut outcomes = run_calls(calls, &s.tools, s.gate.as_ref(), &env, &s.events).await;
        for outcome in &mut outcomes {
            if let CallOutcome::Answered { todo, spent, .. } = outcome {
                if let Some(items) = todo.take() {
                    self.todo.update(&self.services.events, items);
                }
                if let Some(spent) = spent.take() {
                    self.stats.usage.add(&spent);
                }
            }
        }
        outcomes
    }

    /// A response's tool round: runs `calls`, stores their results after `answered` (answers
    /// given by a resume), and decides whether the run goes on. A call the permission gate
    /// suspended, or whose tool asked to wait, stays pending (no result) and the run ends
    /// `Suspended`; a tool that completes the run ends it with its value.
    pub async fn tool_round(
        &mut self,
        calls: &[Call],
        mut answered: Vec<Part>,
        enabled: Option<&BTreeSet<String>>,
    ) -> Round {
        let outcomes = self.execute(calls, enabled).await;
        let mut ending = Ending::new(self.services.events.context().clone());
        let mut succeeded = Vec::with_capacity(calls.len());
        for (call, outcome) in calls.iter().zip(outcomes) {
            let verdict = verdict_of(call, outcome);
            succeeded.push(verdict.succeeded());
            if call.name == crate::tool_names::WEB_SEARCH_TOOL && verdict.succeeded() {
                self.stats.usage.web_search_count += 1;
            }
            if let Ok(mut part) = ending.note(call, verdict) {
                if let Part::ToolResult {
                    content,
                    is_error: false,
                    ..
                } = &mut part
                    && let Some(pointer) = repeated_result::pointer(&self.messages, call, content)
                {
                    *content = pointer;
                }
                answered.push(part);
            }
        }
        if !answered.is_empty() {
            self.push_message(Message {
                role: Role::Tool,
                parts: answered.into(),
            });
        }
        let next = self.after_calls(ending);
        Round { next, succeeded }
    }

    /// How the run goes on after calls ran: cancelled, suspended on the pending calls,
    /// completed by a tool, or on.
    fn after_calls(&mut self, ending: Ending) -> Next {
        if self.services.cancel.is_cancelled() {
            return Next::Stop(self.end(Err(LoopError::Cancelled)));
        }
        if let Some(reason) = ending.suspend_reason {
            let pending = ending.pending;
            return Next::Stop(self.end(Err(LoopError::Suspended { pending, reason })));
        }
        if let Some(value) = ending.complete {
            let text = value.unwrap_or_else(|| self.last_answer_text());
            return Next::Stop(self.end(Ok(text)));
        }
        Next::Continue
    }

    /// Calls a loop runs itself, outside a stored response's tool round (it keeps its own
    /// conversation, or mixes in tools of its own): their results go back to the loop, as
    /// in call order. A call that waits for an answer or completes the
    /// run ends the run as in a tool round; a waiting call's result says so, and is not
    /// stored should the loop store it (`push_message`), so a resume can answer it.
    pub async fn execute_for_loop(
        &mut self,
        calls: &[Call],
        enabled: Option<&BTreeSet<String>>,
    ) -> Vec<LoopCallResult> {
        let outcomes = self.execute(calls, enabled).await;
        let mut ending = Ending::new(self.services.events.context().clone());
        let mut results = Vec::with_capacity(calls.len());
        for (call, outcome) in calls.iter().zip(outcomes) {
            let duration = match &outcome {
                CallOutcome::Answered { duration, .. } => *duration,
                CallOutcome::Suspended { .. } => std::time::Duration::ZERO,
            };
            let (content, is_error) = match ending.note(call, verdict_of(call, outcome)) {
                Ok(part) => result_of(part),
                Err(reason) => (format!("not run: {reason}; the run is suspended"), true),
            };
            results.push(LoopCallResult {
                content,
                is_error,
                duration,
            });
        }
        self.after_calls(ending);
        results
    }

    /// Answers the calls a suspended run waits on: from `answers` (`(call id, content,
    /// is_error)`) where given, by running them now otherwise; then the run goes on as after
    /// any tool round. Errors when nothing is pending.
    pub async fn resume_pending(
        &mut self,
        answers: &[(String, String, bool)],
        enabled: Option<&BTreeSet<String>>,
    ) -> Result<Next, LoopError> {
        let pending = pending_tool_calls(&self.messages);
        if pending.is_empty() {
            return Err(LoopError::Internal(
                "there is no suspended tool call to resume".to_owned(),
            ));
        }
        let mut parts = Vec::new();
        let mut to_run = Vec::new();
        for (id, name, arguments) in pending {
            match answers.iter().find(|(call_id, _, _)| *call_id == id) {
                Some((_, content, is_error)) => parts.push(Part::ToolResult {
                    call_id: id,
                    content: content.clone(),
                    is_error: *is_error,
                }),
                None => to_run.push(Call {
                    id,
                    name,
                    arguments,
                }),
            }
        }
        Ok(self.tool_round(&to_run, parts, enabled).await.next)
    }

    /// The text of the last assistant message: the answer of a run a tool completed without
    /// a value of its own.
    fn last_answer_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(Message::text_content)
            .unwrap_or_default()
    }
}

/// Compacts `messages` under `config` with the run's model, adding the summary's usage.
async fn compact(
    s: &RunServices,
    config: &LoopConfig,
    messages: &mut Vec<Message>,
    usage: &mut wonopcode_protocol::usage::Usage,
    force: bool,
    known_tokens: Option<usize>,
) -> bool {
    let compactor = Compactor {
        provider: &s.provider,
        config,
        hooks: s.shared.hooks.as_ref(),
        events: &s.events,
        cancel: &s.cancel,
        session_id: &s.session_id,
        cwd: &s.cwd,
        trigger: "auto",
        known_tokens,
    };
    if force {
        compactor.compact_now(messages, usage).await
    } else {
        compactor.compact_if_needed(messages, usage).await
    }
}

/// What the calls of one round mean for the run, gathered call by call: the calls that wait
/// (the first one's reason), the value a tool completed the run with.
struct Ending {
    /// The context whose round it is.
    context: ContextPath,
    pending: Vec<PendingCall>,
    suspend_reason: Option<String>,
    complete: Option<Option<String>>,
}

impl Ending {
    fn new(context: ContextPath) -> Self {
        Self {
            context,
            pending: Vec::new(),
            suspend_reason: None,
            complete: None,
        }
    }

    /// Notes one call's verdict; returns its result part, or why it waits.
    fn note(&mut self, call: &Call, verdict: CallVerdict) -> Result<Part, String> {
        match verdict {
            CallVerdict::Answered(part) => Ok(part),
            CallVerdict::Completes(part, value) => {
                self.complete.get_or_insert(value);
                Ok(part)
            }
            CallVerdict::Waits(reason, deeper) => {
                // A call that waits on calls deeper in the tree stands for them: the person
                // answers those, where they were made.
                if deeper.is_empty() {
                    self.pending.push(PendingCall {
                        context: self.context.clone(),
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    });
                } else {
                    self.pending.extend(deeper);
                }
                self.suspend_reason.get_or_insert_with(|| reason.clone());
                Err(reason)
            }
        }
    }
}

/// What one call's outcome means for the run.
enum CallVerdict {
    /// Its result goes to the model.
    Answered(Part),
    /// Its result goes to the model and the run ends with this value (`None`: the last
    /// answer's text).
    Completes(Part, Option<String>),
    /// It waits for an answer from outside the run: no result, the run suspends. The calls
    /// deeper in the tree it waits on, when a child's suspension is why.
    Waits(String, Vec<PendingCall>),
}

impl CallVerdict {
    /// True when the call ran and did not fail.
    fn succeeded(&self) -> bool {
        match self {
            Self::Answered(part) | Self::Completes(part, _) => {
                !matches!(part, Part::ToolResult { is_error: true, .. })
            }
            Self::Waits(..) => false,
        }
    }
}

/// A result part's content and error flag.
fn result_of(part: Part) -> (String, bool) {
    match part {
        Part::ToolResult {
            content, is_error, ..
        } => (content, is_error),
        _ => (String::new(), true),
    }
}

/// Classifies a call's outcome (break-loop requests and suspensions included).
fn verdict_of(call: &Call, outcome: CallOutcome) -> CallVerdict {
    match outcome {
        CallOutcome::Answered {
            content,
            is_error,
            break_loop,
            ..
        } => {
            let part = Part::ToolResult {
                call_id: call.id.clone(),
                content,
                is_error,
            };
            match break_loop {
                Some(BreakLoop::Suspend) => CallVerdict::Waits(
                    format!("`{}` asked to wait for an answer", call.name),
                    Vec::new(),
                ),
                Some(BreakLoop::WaitsOn(deeper)) => CallVerdict::Waits(waiting_on(&deeper), deeper),
                Some(BreakLoop::Complete { return_value }) => {
                    CallVerdict::Completes(part, return_value)
                }
                None => CallVerdict::Answered(part),
            }
        }
        CallOutcome::Suspended { reason } => CallVerdict::Waits(reason, Vec::new()),
    }
}

/// Why a run waits on calls deeper in the tree, naming them.
pub fn waiting_on(deeper: &[PendingCall]) -> String {
    let calls: Vec<String> = deeper
        .iter()
        .map(|p| format!("`{}` ({}) in context {}", p.name, p.id, p.context))
        .collect();
    format!(
        "a child context waits for an answer to {}",
        calls.join(", ")
    )
}
