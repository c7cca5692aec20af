//! `WasmAgentLoop`: an `AgentLoop` whose decisions a guest component makes. The CLI treats it
//! like `StandardLoop`. One instance serves a session (its custom tools and key/value state
//! persist between prompts); a trap, timeout or limit ends the run with a status and one
//! line, drops the instance, and the next prompt starts a fresh one.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Mutex;
use tracing::Instrument;
use wasmtime::{Store, UpdateDeadline};
use wonopcode_agent_loop::{AgentLoop, LoopCapabilities, LoopContext, Next, Run};
use wonopcode_contexts::{ContextTree, Inheritance};
use wonopcode_protocol::LoopError;
use wonopcode_protocol::event::ItemDetails;
use wonopcode_protocol::message::pending_tool_calls;

use crate::bindings::types::LoopError as WitError;
use crate::engine::WasmEngine;
use crate::error::WasmError;
use crate::exports::{GuestExports, GuestPre};
use crate::frame::{Frame, LoadedGuest};
use crate::guest_loader::TreeGuests;
use crate::host::ui::UiView;
use crate::host::ui::emit_text_item;
use crate::loader::{ModuleInfo, inspect};
use crate::loop_name::interned;
use crate::memory_budget::MemoryBudget;
use crate::state::{HostConfig, HostState, RunSlot};

/// A live instance and its store.
pub(crate) struct Live {
    store: Store<HostState>,
    guest: Guest,
    started: bool,
}

/// What the host calls in a live instance: its exports (`crate::exports`).
pub(crate) struct Guest {
    exports: GuestExports,
}

/// How long a cancelled guest has to return by itself (its host calls fail at once) before
/// its call is dropped.
const CANCEL_GRACE: Duration = Duration::from_millis(30);

/// How long a guest's `on-cancel` may take.
const ON_CANCEL_LIMIT: Duration = Duration::from_secs(1);

/// A guest loop.
pub struct WasmAgentLoop {
    frame: Arc<Frame>,
    live: Mutex<Option<Live>>,
}

impl WasmAgentLoop {
    /// Loads a guest from a file.
    pub async fn from_file(
        engine: Arc<WasmEngine>,
        path: &Path,
        host_config: HostConfig,
    ) -> Result<Self, WasmError> {
        let bytes = std::fs::read(path).map_err(|e| WasmError::Read {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::from_bytes(engine, &bytes, &path.display().to_string(), host_config).await
    }

    /// Loads a guest from bytes; `origin` names it in messages.
    pub async fn from_bytes(
        engine: Arc<WasmEngine>,
        bytes: &[u8],
        origin: &str,
        host_config: HostConfig,
    ) -> Result<Self, WasmError> {
        let guests = TreeGuests::new(engine.clone(), host_config.clone());
        let (loaded, live) =
            load_guest(engine, bytes, origin, host_config, guests.memory.clone()).await?;
        let tree = ContextTree::new(
            loaded.host_config.contexts,
            loaded.host_config.resolver.clone(),
        );
        let lineage = Inheritance::root(loaded.host_config.grants.clone());
        let frame = Arc::new(Frame {
            loaded: Arc::new(loaded),
            guests,
            tree,
            params: None,
            parent_id: None,
            lineage,
        });
        let mut live = live;
        live.store.data_mut().place.frame = Some(frame.clone());
        Ok(Self {
            frame,
            live: Mutex::new(Some(live)),
        })
    }

    /// A loop of a child context: its own instance of a loaded guest, `first` when loading
    /// the guest made one, else made on first use.
    pub(crate) fn child(frame: Frame, first: Option<Live>) -> Self {
        let frame = Arc::new(frame);
        let live = first.map(|mut live| {
            live.store.data_mut().place.frame = Some(frame.clone());
            live
        });
        Self {
            frame,
            live: Mutex::new(live),
        }
    }

    /// A value of the guest's key/value state (`storage.set-state`), such as
    /// `__result_data__`, which a child context returns as its result's `data`. `None` while
    /// the guest is running (never waits for it).
    pub fn state_value(&self, key: &str) -> Option<String> {
        self.live
            .try_lock()
            .ok()?
            .as_ref()
            .and_then(|l| l.store.data().kv.get(key).cloned())
    }

    /// Checks a guest file without keeping it: header, component, world, version, exports,
    /// imports, instantiation, `get-name` and `get-capabilities`.
    pub async fn validate(engine: Arc<WasmEngine>, path: &Path) -> Result<ModuleInfo, WasmError> {
        Ok(Self::from_file(engine, path, HostConfig::default())
            .await?
            .info()
            .clone())
    }

    /// Instantiates a fresh store from the prepared component, for benchmarks and checks.
    #[doc(hidden)]
    pub async fn instantiate_fresh(&self) -> Result<(), WasmError> {
        instantiate(&self.frame).await.map(drop)
    }

    /// What validation found about the guest.
    pub fn info(&self) -> &ModuleInfo {
        &self.frame.loaded.info
    }

    /// Names of the custom tools the guest has registered (in `on-start` or since).
    pub async fn custom_tool_names(&self) -> Vec<String> {
        self.lock_live()
            .await
            .as_ref()
            .map(|l| l.store.data().tools.custom.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Calls the guest's `custom-tool-handler` for a call the host starts itself (the CLI's
    /// validation, another context). Never from inside one of this guest's own host calls:
    /// the component model forbids re-entering an instance, which is why guests dispatch
    /// their own tools in the guest (see the SDK's docs). The outer `Err` is a trap or a
    /// timeout; the inner one the tool's own error.
    pub async fn call_custom_tool(
        &self,
        ctx: &mut LoopContext<'_>,
        name: &str,
        arguments: &str,
    ) -> Result<Result<String, String>, LoopError> {
        self.ensure_started(ctx).await?;
        let (name, arguments) = (name.to_owned(), arguments.to_owned());
        self.with_instance(ctx, |guest, store| {
            Box::pin(async move {
                guest
                    .exports
                    .call_handle_tool_call(store, &name, &arguments)
                    .await
            })
        })
        .await
    }

    /// How a call into the guest that runs a prompt ended the run. When a step of the run
    /// ended it (the iteration limit, a doom loop, a suspension, a tool that completes the
    /// run), that is the outcome, whatever the guest made of it. What the user has not seen of
    /// the answer (not streamed, not sent with `ui`) is shown, so a guest's result never goes
    /// missing: all of it, or only what follows the text already shown when the answer goes
    /// on from there (an orchestrator's ledger after the model's last words).
    async fn outcome(
        &self,
        ctx: &LoopContext<'_>,
        returned: Result<String, WitError>,
    ) -> Result<String, LoopError> {
        let (ended, shown) = self
            .lock_live()
            .await
            .as_mut()
            .map(|l| {
                let state = l.store.data_mut();
                (state.run.ended.take(), std::mem::take(&mut state.run.shown))
            })
            .unwrap_or_default();
        let outcome = match (ended, returned) {
            (Some(ended), _) => ended,
            (None, Ok(text)) => Ok(text),
            (None, Err(e)) => Err(loop_error(e)),
        };
        if let Ok(text) = &outcome {
            let unseen = match text.strip_prefix(shown.as_str()) {
                Some(rest) if !shown.is_empty() => rest.trim_start(),
                _ => text.as_str(),
            };
            if !unseen.is_empty() {
                emit_text_item(
                    ctx.events,
                    |text| ItemDetails::AgentMessage { text },
                    unseen.to_owned(),
                );
            }
        }
        outcome
    }

    /// A root's new turn may start its own number of contexts; a child's run counts toward
    /// its root's turn.
    fn begin_turn(&self) {
        if self.frame.params.is_none() {
            self.frame.tree.begin_turn();
        }
    }

    /// The instance, locked. Taken without waiting when nobody holds it, which is always
    /// the case but for concurrent calls: an awaited lock spends the task's tokio budget, and
    /// a chain of nested children (each locking its instance several times) would run it
    /// out, forcing a yield that re-enters every level of the chain.
    async fn lock_live(&self) -> tokio::sync::MutexGuard<'_, Option<Live>> {
        match self.live.try_lock() {
            Ok(guard) => guard,
            Err(_) => self.live.lock().await,
        }
    }

    async fn with_instance<F, T>(&self, ctx: &mut LoopContext<'_>, call: F) -> Result<T, LoopError>
    where
        F: for<'a> FnOnce(
            &'a Guest,
            &'a mut Store<HostState>,
        ) -> futures::future::BoxFuture<'a, wasmtime::Result<T>>,
    {
        let mut guard = self.lock_live().await;
        if guard.is_none() {
            let fresh = instantiate(&self.frame)
                .await
                .map_err(|e| LoopError::Internal(e.to_string()))?;
            *guard = Some(fresh);
        }
        let Some(live) = guard.as_mut() else {
            return Err(LoopError::Internal("no guest instance".to_owned()));
        };
        let loaded = &self.frame.loaded;
        begin_run(live.store.data_mut(), ctx);
        live.store.set_epoch_deadline(1);
        let limits = loaded.engine.limits;
        // Everything the guest logs, and every host call it makes, is inside this span.
        let context = ctx.events.context();
        let span = tracing::info_span!(
            "guest",
            guest = loaded.name,
            context = %context,
            depth = context.depth()
        );
        let started = Instant::now();
        let future = call(&live.guest, &mut live.store);
        // Cancellation reaches the guest wherever it is. Its host calls fail at once once the
        // run is cancelled, so a guest that returns by itself does so within
        // `CANCEL_GRACE`; one that does not (spinning in its own code, or in a host call that
        // waits) is dropped then: it yields to the host at every epoch tick (10 ms), so that
        // happens within a tick. A call entered after cancellation (`on-cancel`) has
        // `ON_CANCEL_LIMIT` instead.
        let cancel = ctx.cancel.clone();
        let stop = async move {
            if cancel.is_cancelled() {
                tokio::time::sleep(ON_CANCEL_LIMIT).await;
            } else {
                cancel.cancelled().await;
                tokio::time::sleep(CANCEL_GRACE).await;
            }
        };
        let bounded = async {
            match limits.run_timeout {
                Some(limit) => match tokio::time::timeout(limit, future).await {
                    Ok(r) => r.map_err(Some),
                    Err(_) => Err(None),
                },
                None => future.await.map_err(Some),
            }
        };
        let outcome = tokio::select! {
            outcome = bounded.instrument(span.clone()) => outcome,
            () = stop => {
                // The instance stopped part way through a call and cannot be entered again.
                end_run(live.store.data_mut(), ctx);
                *guard = None;
                tracing::debug!(guest = loaded.name, "guest call dropped after cancellation");
                return Err(LoopError::Cancelled);
            }
        };
        span.in_scope(|| {
            tracing::debug!(
                latency_ms = started.elapsed().as_millis() as u64,
                ok = outcome.is_ok(),
                "guest call returned"
            );
        });
        end_run(live.store.data_mut(), ctx);
        match outcome {
            Ok(value) => Ok(value),
            Err(trap) => {
                let report = trap.as_ref().map(|e| trap_report(live.store.data(), e));
                if let Some(trace) = trap.as_ref().and_then(crate::debug::backtrace) {
                    let place = &live.store.data().place;
                    place.host_config.guest_logs.keep(
                        &context.to_string(),
                        &place.loop_name,
                        "backtrace",
                        &trace,
                    );
                }
                // The instance cannot be entered again after a trap; the next call starts anew.
                *guard = None;
                if let Some(e) = &trap {
                    tracing::debug!(guest = loaded.name, error = ?e, "guest trapped");
                }
                Err(LoopError::Guest(match report {
                    Some(report) => format!(
                        "guest `{}` ({}) trapped: {report}",
                        loaded.name, loaded.origin
                    ),
                    None => format!(
                        "guest `{}` did not finish within {} s",
                        loaded.name,
                        limits.run_timeout.map_or(0, |t| t.as_secs())
                    ),
                }))
            }
        }
    }

    async fn ensure_started(&self, ctx: &mut LoopContext<'_>) -> Result<(), LoopError> {
        let needs_start = self.lock_live().await.as_ref().is_none_or(|l| !l.started);
        if !needs_start {
            return Ok(());
        }
        let result = self
            .with_instance(ctx, |guest, store| {
                Box::pin(async move { guest.exports.call_on_start(store).await })
            })
            .await?;
        if let Some(live) = self.lock_live().await.as_mut() {
            live.started = true;
        }
        result.map_err(loop_error)
    }
}

/// Compiles (or loads from the cache), links and instantiates a guest, and asks it its name
/// and capabilities, which proves it runs. The instance is returned for a first use.
pub(crate) async fn load_guest(
    engine: Arc<WasmEngine>,
    bytes: &[u8],
    origin: &str,
    host_config: HostConfig,
    memory: Arc<MemoryBudget>,
) -> Result<(LoadedGuest, Live), WasmError> {
    let info = inspect(bytes, origin)?;
    let component = engine.compile(bytes, origin)?;
    let pre = engine.instance_pre(&component, origin)?;
    let mut live = new_instance(&engine, &pre, origin, &host_config, memory).await?;
    let agent = &live.guest.exports;
    let call_error = |live: &Live, export: &'static str, e: wasmtime::Error| WasmError::GuestCall {
        origin: origin.to_owned(),
        export,
        reason: trap_report(live.store.data(), &e),
    };
    let name = match agent.call_get_name(&mut live.store).await {
        Ok(name) => name,
        Err(e) => return Err(call_error(&live, "get-name", e)),
    };
    let caps = match agent.call_get_capabilities(&mut live.store).await {
        Ok(caps) => caps,
        Err(e) => return Err(call_error(&live, "get-capabilities", e)),
    };
    live.store.data_mut().place.loop_name = name.clone();
    let capabilities = LoopCapabilities {
        streaming: caps.streaming,
        extended_thinking: caps.extended_thinking,
        parallel_tools: caps.parallel_tools,
        tool_observation: caps.tool_observation,
        max_context: caps.max_context as usize,
        auto_compaction: caps.auto_compaction,
        supports_sub_contexts: caps.supports_sub_contexts,
        supports_custom_tools: caps.supports_custom_tools,
        custom: Default::default(),
    };
    let loaded = LoadedGuest {
        engine,
        pre,
        origin: origin.to_owned(),
        info,
        name: interned(&name),
        capabilities,
        host_config,
    };
    Ok((loaded, live))
}

/// A fresh store and instance for a context of this frame.
async fn instantiate(frame: &Arc<Frame>) -> Result<Live, WasmError> {
    let t = &frame.loaded;
    let memory = frame.guests.memory.clone();
    let mut live = new_instance(&t.engine, &t.pre, &t.origin, &t.host_config, memory).await?;
    let state = live.store.data_mut();
    state.place.loop_name = t.name.to_owned();
    state.place.frame = Some(frame.clone());
    Ok(live)
}

async fn new_instance(
    engine: &WasmEngine,
    pre: &GuestPre,
    origin: &str,
    host_config: &HostConfig,
    memory: Arc<MemoryBudget>,
) -> Result<Live, WasmError> {
    let limits = engine.limits;
    let state = HostState::new(limits, host_config.clone(), memory);
    let mut store = Store::new(&engine.engine, state);
    store.limiter(|state| &mut state.guard.limiter);
    let budget = limits.compute_ticks();
    let budget_secs = limits.compute_budget.as_secs();
    store.epoch_deadline_callback(move |mut ctx| {
        let guard = &mut ctx.data_mut().guard;
        guard.compute_ticks += 1;
        if guard.compute_ticks > budget {
            return Err(wasmtime::Error::msg(format!(
                "the guest computed for more than {budget_secs} s without calling the host"
            )));
        }
        Ok(UpdateDeadline::Yield(1))
    });
    store.set_epoch_deadline(1);
    let failed = |e: wasmtime::Error| WasmError::Instantiate {
        origin: origin.to_owned(),
        reason: trap_line(&e),
    };
    let instance = pre
        .pre
        .instantiate_async(&mut store)
        .await
        .map_err(failed)?;
    let exports = pre.exports(&mut store, &instance).map_err(failed)?;
    Ok(Live {
        store,
        guest: Guest { exports },
        started: false,
    })
}

/// Moves the loop context's run into the store for one call: its history is moved, not
/// copied, and the model this context switched to (if any) replaces the context's.
fn begin_run(state: &mut HostState, ctx: &mut LoopContext<'_>) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mut run = Run::take_from(ctx);
    if let Some(model) = &state.responses.model {
        Arc::make_mut(&mut run.services).provider = model.clone();
    }
    state.run = RunSlot {
        run: Some(run),
        started_ms: u64::try_from(now_ms).unwrap_or(u64::MAX),
        shown: String::new(),
        ended: None,
        added_bytes: 0,
    };
    state.io.stderr_mark = state.io.stderr.contents().len();
    state.responses.streams.clear();
    state.guard.compute_ticks = 0;
}

/// Hands the run back to the loop context (history and counters), keeping how a step of the
/// run ended it, if one did.
fn end_run(state: &mut HostState, ctx: &mut LoopContext<'_>) {
    UiView::of(state).end_progress();
    let context = state
        .run
        .run
        .as_ref()
        .map(|r| r.services.events.context().to_string())
        .unwrap_or_else(|| "0".to_owned());
    if let Some(mut run) = state.run.run.take() {
        state.run.ended = run.take_ending();
        run.give_back(ctx);
    }
    state.responses.streams.clear();
    state.flush_output(&context);
}

/// The first line of a trap, with the guest's backtrace left to the debug log.
pub(crate) fn trap_line(error: &wasmtime::Error) -> String {
    let trap = error
        .chain()
        .find_map(|e| e.downcast_ref::<wasmtime::Trap>());
    let text = match trap {
        Some(wasmtime::Trap::StackOverflow) => {
            "stack overflow (the guest recursed too deeply)".to_owned()
        }
        // Rust's panics and C's `abort` end here; a Rust panic says where first (on stderr,
        // which [`trap_with_words`] reads).
        Some(wasmtime::Trap::UnreachableCodeReached) => {
            "unreachable code reached (an abort or a panic that printed nothing)".to_owned()
        }
        // Rust and C guests keep their stack in linear memory; running off it is the usual
        // cause of this trap.
        Some(wasmtime::Trap::MemoryOutOfBounds) => {
            "out of bounds memory access (a stack overflow in the guest, or a bad pointer)"
                .to_owned()
        }
        Some(other) => other.to_string(),
        None => error.root_cause().to_string(),
    };
    let text = if text.contains("forcing trap when growing memory") {
        "the guest exceeded its memory limit".to_owned()
    } else {
        text
    };
    text.lines().next().unwrap_or("trap").to_owned()
}

/// The trap's line, with the last line the guest wrote to stderr when there is one: an
/// interpreter (Python, JavaScript) prints the exception there before it traps, and that
/// line says more than "unreachable".
fn trap_report(state: &HostState, error: &wasmtime::Error) -> String {
    trap_with_words(error, state.last_stderr_line(), "guest")
}

/// A trap's line with what the component (`who`: `guest`, `hook`) said last on stderr: a
/// Rust panic that printed its place reads `the guest panicked at src/lib.rs:12:5: why`
/// in place of the bare trap, and any other last line is added as its last words.
pub(crate) fn trap_with_words(error: &wasmtime::Error, said: Option<String>, who: &str) -> String {
    let unreachable = error
        .chain()
        .find_map(|e| e.downcast_ref::<wasmtime::Trap>())
        .is_some_and(|t| *t == wasmtime::Trap::UnreachableCodeReached);
    match said {
        Some(panic) if unreachable && panic.starts_with("panicked at ") => {
            format!("the {who} {panic}")
        }
        Some(said) => format!("{}; the {who}'s last words: {said}", trap_line(error)),
        None => trap_line(error),
    }
}

/// A WIT loop error as the core one.
fn loop_error(error: WitError) -> LoopError {
    match error {
        WitError::ProviderError(m) => LoopError::Provider(m),
        WitError::ToolError(m) => LoopError::ToolExecution(m),
        WitError::PermissionDenied(m) => LoopError::PermissionDenied(m),
        WitError::DoomLoop(m) => LoopError::DoomLoop(m),
        WitError::Cancelled => LoopError::Cancelled,
        WitError::ContextLimitExceeded => LoopError::ContextLimitExceeded,
        WitError::ContextSpawnFailed(m) => {
            LoopError::Internal(format!("context spawn failed: {m}"))
        }
        WitError::Internal(m) => LoopError::Internal(m),
    }
}

#[async_trait]
impl AgentLoop for WasmAgentLoop {
    async fn run_prompt(
        &self,
        ctx: &mut LoopContext<'_>,
        user_input: &str,
    ) -> Result<String, LoopError> {
        self.begin_turn();
        self.ensure_started(ctx).await?;
        let input = user_input.to_owned();
        let result = self
            .with_instance(ctx, |guest, store| {
                Box::pin(async move {
                    // A new prompt answers what an interrupted run left open.
                    store.data_mut().run.get_mut()?.close_interrupted_calls();
                    guest.exports.call_run_prompt(store, &input).await
                })
            })
            .await;
        self.outcome(ctx, result?).await
    }

    async fn resume(
        &self,
        ctx: &mut LoopContext<'_>,
        answers: Vec<(String, String, bool)>,
    ) -> Result<String, LoopError> {
        if pending_tool_calls(ctx.messages).is_empty() {
            return Err(LoopError::Internal(
                "there is no suspended tool call to resume".to_owned(),
            ));
        }
        self.begin_turn();
        self.ensure_started(ctx).await?;
        let result = self
            .with_instance(ctx, |guest, store| {
                Box::pin(async move {
                    if !guest.exports.can_resume() {
                        return Ok(None);
                    }
                    let state = store.data_mut();
                    let enabled = state.tools.enabled.as_ref();
                    match state.run.get_mut()?.resume_pending(&answers, enabled).await {
                        Ok(Next::Continue) => {}
                        // The resumed round ended the run (it recorded how).
                        Ok(Next::Stop(_)) => {
                            return Ok(Some(Err(WitError::Internal("ended".to_owned()))));
                        }
                        Err(e) => return Ok(Some(Err(WitError::Internal(e.to_string())))),
                    }
                    guest.exports.call_resume(store).await.transpose()
                })
            })
            .await?;
        match result {
            Some(result) => self.outcome(ctx, result).await,
            None => Err(LoopError::Unsupported(format!(
                "the loop `{}` ({}) does not export `resumable` (WIT 0.2.5), so it cannot continue a suspended run",
                self.frame.loaded.name, self.frame.loaded.origin
            ))),
        }
    }

    async fn on_start(&self, ctx: &mut LoopContext<'_>) -> Result<(), LoopError> {
        self.ensure_started(ctx).await
    }

    async fn on_complete(&self, ctx: &mut LoopContext<'_>, result: &str) -> Result<(), LoopError> {
        let result = result.to_owned();
        self.with_instance(ctx, |guest, store| {
            Box::pin(async move { guest.exports.call_on_complete(store, &result).await })
        })
        .await?
        .map_err(loop_error)
    }

    async fn on_cancel(&self, ctx: &mut LoopContext<'_>) -> Result<(), LoopError> {
        // A guest dropped part way through its run has nothing left to tidy.
        if self.lock_live().await.is_none() {
            return Ok(());
        }
        self.with_instance(ctx, |guest, store| {
            Box::pin(async move { guest.exports.call_on_cancel(store).await })
        })
        .await?
        .map_err(loop_error)
    }

    fn name(&self) -> &'static str {
        self.frame.loaded.name
    }

    fn capabilities(&self) -> LoopCapabilities {
        self.frame.loaded.capabilities.clone()
    }

    fn state_value(&self, key: &str) -> Option<String> {
        WasmAgentLoop::state_value(self, key)
    }
}
