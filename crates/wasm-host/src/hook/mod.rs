//! Component hooks: the user's policy as a WebAssembly component of the `wonopcode:hooks`
//! world (`wit/hooks/`), asked at the same points of a run as a command hook. A hook
//! component is compiled through the engine's cache, gets WASI with nothing but what its
//! entry grants, and runs under the guests' memory limit and compute budget and the timeout
//! of its entry. One instance serves the entry for the whole run, started at its first call
//! (so a warm call is a plain call into it); a trap or a timeout discards the instance and
//! the next call starts a fresh one.

mod bindings;
mod store;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use wasmtime::Store;
use wasmtime::component::Linker;

pub use bindings::handler::{BeforeToolAnswer, ToolVerdict, TurnAnswer};
pub use bindings::types::{Site, ToolCall, TurnEvent, TurnPoint};
pub use store::HookGrants;

use crate::engine::WasmEngine;
use crate::error::WasmError;
use crate::wasm_loop::trap_with_words;
use bindings::{Hook, HookPre};
use store::HookState;

/// Why a call into a hook component gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookFault {
    /// It trapped (a panic, its memory limit, its compute budget).
    #[error("trapped: {0}")]
    Trapped(String),
    /// It did not answer within its timeout.
    #[error("ran past its timeout of {} s", .0.as_secs_f64())]
    TimedOut(Duration),
    /// It could not start (a trap while instantiating or configuring, no store).
    #[error("could not start: {0}")]
    NotStarted(String),
    /// Its `configure` refused its settings, with its words.
    #[error("could not start: its configure refused the settings: {0}")]
    SettingsRefused(String),
}

/// A running hook instance.
struct Live {
    store: Store<HookState>,
    hook: Hook,
}

/// A hook component, loaded and linked, with its instance once it started.
pub struct HookComponent {
    engine: Arc<WasmEngine>,
    pre: HookPre<HookState>,
    settings: String,
    grants: HookGrants,
    live: tokio::sync::Mutex<Option<Live>>,
}

impl std::fmt::Debug for HookComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookComponent")
            .field("settings", &self.settings)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

impl HookComponent {
    /// Reads, compiles (or loads from the cache) and links the component at `path`;
    /// `settings` (JSON) are given to its `configure` when it starts.
    pub fn load(
        engine: &Arc<WasmEngine>,
        path: &Path,
        settings: String,
        grants: HookGrants,
    ) -> Result<Self, WasmError> {
        let origin = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| WasmError::Read {
            path: origin.clone(),
            reason: e.to_string(),
        })?;
        Self::from_bytes(engine, &bytes, origin, settings, grants)
    }

    /// [`HookComponent::load`] of bytes already read, named `origin` in errors.
    pub fn from_bytes(
        engine: &Arc<WasmEngine>,
        bytes: &[u8],
        origin: String,
        settings: String,
        grants: HookGrants,
    ) -> Result<Self, WasmError> {
        if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
            return Err(WasmError::NotWasm { origin });
        }
        let component = engine.compile(bytes, &origin)?;
        // Checked before linking, so an agent loop named as a hook is told what it lacks
        // rather than which of its imports a hook cannot have.
        let handler = component
            .component_type()
            .exports(&engine.engine)
            .any(|(name, _)| name.starts_with("wonopcode:hooks/handler@"));
        if !handler {
            return Err(WasmError::MissingExport {
                origin,
                export: format!("wonopcode:hooks/handler@{HOOKS_VERSION}"),
            });
        }
        let mut linker = Linker::<HookState>::new(&engine.engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| WasmError::Engine(e.to_string()))?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| WasmError::UnsatisfiedImport {
                origin: origin.clone(),
                reason: format!("{e:#}"),
            })?;
        let pre = HookPre::new(pre).map_err(|_| WasmError::MissingExport {
            origin,
            export: format!("wonopcode:hooks/handler@{HOOKS_VERSION}"),
        })?;
        Ok(Self {
            engine: engine.clone(),
            pre,
            settings,
            grants,
            live: tokio::sync::Mutex::new(None),
        })
    }

    /// Asks the hook before `call` runs.
    pub async fn before_tool(
        &self,
        site: Site,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<BeforeToolAnswer, HookFault> {
        self.call(timeout, move |hook, store| {
            Box::pin(async move {
                let handler = hook.wonopcode_hooks_handler();
                handler.call_before_tool(store, &site, &call).await
            })
        })
        .await
    }

    /// Asks the hook whether `call`, which needs approval, may run.
    pub async fn permission_request(
        &self,
        site: Site,
        call: ToolCall,
        timeout: Duration,
    ) -> Result<ToolVerdict, HookFault> {
        self.call(timeout, move |hook, store| {
            Box::pin(async move {
                let handler = hook.wonopcode_hooks_handler();
                handler.call_permission_request(store, &site, &call).await
            })
        })
        .await
    }

    /// Tells the hook what `call` answered; what the model is told besides.
    pub async fn after_tool(
        &self,
        site: Site,
        call: ToolCall,
        output: String,
        is_error: bool,
        timeout: Duration,
    ) -> Result<Option<String>, HookFault> {
        self.call(timeout, move |hook, store| {
            Box::pin(async move {
                let handler = hook.wonopcode_hooks_handler();
                handler
                    .call_after_tool(store, &site, &call, &output, is_error)
                    .await
            })
        })
        .await
    }

    /// Asks the hook at a point of a turn.
    pub async fn on_turn(
        &self,
        site: Site,
        event: TurnEvent,
        timeout: Duration,
    ) -> Result<TurnAnswer, HookFault> {
        self.call(timeout, move |hook, store| {
            Box::pin(async move {
                let handler = hook.wonopcode_hooks_handler();
                handler.call_on_turn(store, &site, &event).await
            })
        })
        .await
    }

    /// Starts the instance now (instantiated, `configure` given the settings), as the first
    /// call would: what `loops validate` asks of a hook.
    pub async fn start_now(&self, timeout: Duration) -> Result<(), HookFault> {
        let mut slot = self.live.lock().await;
        if slot.is_none() {
            *slot = Some(self.start(timeout).await?);
        }
        Ok(())
    }

    /// Runs `f` on the instance (starting one first when there is none) within `timeout`;
    /// a trap or a timeout discards the instance.
    async fn call<T>(
        &self,
        timeout: Duration,
        f: impl for<'a> FnOnce(&'a Hook, &'a mut Store<HookState>) -> BoxFuture<'a, wasmtime::Result<T>>,
    ) -> Result<T, HookFault> {
        let mut slot = self.live.lock().await;
        let live = match slot.take() {
            Some(live) => slot.insert(live),
            None => slot.insert(self.start(timeout).await?),
        };
        live.store.data_mut().ticks = 0;
        live.store.set_epoch_deadline(1);
        let Live { store, hook } = live;
        let outcome = tokio::time::timeout(timeout, f(hook, store)).await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(trap)) => {
                let said = store.data().last_stderr_line();
                *slot = None;
                Err(HookFault::Trapped(trap_with_words(&trap, said, "hook")))
            }
            Err(_) => {
                *slot = None;
                Err(HookFault::TimedOut(timeout))
            }
        }
    }

    /// A fresh instance, configured with the entry's settings.
    async fn start(&self, timeout: Duration) -> Result<Live, HookFault> {
        let mut store =
            store::new_store(&self.engine, &self.grants).map_err(HookFault::NotStarted)?;
        let started = tokio::time::timeout(timeout, async {
            let hook = self.pre.instantiate_async(&mut store).await?;
            let configured = hook
                .wonopcode_hooks_handler()
                .call_configure(&mut store, &self.settings)
                .await?;
            Ok::<_, wasmtime::Error>((hook, configured))
        })
        .await;
        match started {
            Ok(Ok((hook, Ok(())))) => Ok(Live { store, hook }),
            Ok(Ok((_, Err(refused)))) => Err(HookFault::SettingsRefused(refused)),
            Ok(Err(trap)) => {
                let said = store.data().last_stderr_line();
                Err(HookFault::NotStarted(trap_with_words(&trap, said, "hook")))
            }
            Err(_) => Err(HookFault::TimedOut(timeout)),
        }
    }
}

/// The `wonopcode:hooks` version the host implements.
pub const HOOKS_VERSION: &str = "0.1.0";
