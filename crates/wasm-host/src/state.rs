//! The data of one guest's store, in parts by concern: WASI and output, limits, the guest's
//! place in the tree, the run, the context's tools, its model and streams, what it shows,
//! and its key/value state.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wonopcode_agent_loop::{Run, RunServices, ToolRegistry};
use wonopcode_protocol::{ModelSource, SharedModel};

use crate::frame::Frame;
use crate::host::providers::OpenStream;
use crate::limits::GuestLimits;
use crate::memory_budget::{GuestLimiter, MemoryBudget};
use crate::prompter::GuestPrompter;
use wonopcode_contexts::{ContextLimits, ModuleResolver};

/// What the host's config tells guests (`config` interface): the user's choices, and who
/// answers their questions (`ui` interface).
#[derive(Clone, Default)]
pub struct HostConfig {
    /// The provider the user chose (flags, then config file).
    pub preferred_provider: Option<String>,
    /// The model the user chose.
    pub preferred_model: Option<String>,
    /// Arbitrary keys from the host config, readable with `config.get-config`.
    pub values: BTreeMap<String, String>,
    /// Asks the user for guests; `None`: nobody can answer, so guests hear `none` / `false`.
    pub prompter: Option<Arc<dyn GuestPrompter>>,
    /// Limits on the tree of contexts a guest spawns.
    pub contexts: ContextLimits,
    /// Where `context-module::named` modules come from; `None`: only `same` and `path` work.
    pub resolver: Option<Arc<dyn ModuleResolver>>,
    /// The providers and models guests may switch to (`set-provider`, `set-model`,
    /// `preferred-provider` / `preferred-model` of a child); `None`: only the run's model.
    pub models: Option<Arc<dyn ModelSource>>,
    /// The root context's grants (a named root module's), the start of every lineage.
    pub grants: Vec<wonopcode_contexts::Grant>,
    /// Where the guests' own lines go besides the log (a file per context, stderr).
    pub guest_logs: crate::GuestLogs,
}

impl std::fmt::Debug for HostConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfig")
            .field("preferred_provider", &self.preferred_provider)
            .field("preferred_model", &self.preferred_model)
            .field("values", &self.values)
            .field("prompter", &self.prompter.is_some())
            .field("contexts", &self.contexts)
            .field("resolver", &self.resolver.is_some())
            .field("models", &self.models.is_some())
            .field("grants", &self.grants)
            .field("guest_logs", &self.guest_logs)
            .finish()
    }
}

/// A guest-registered tool.
#[derive(Debug, Clone)]
pub(crate) struct CustomTool {
    /// Its label on screen (the definition's `name`); the map's key is its `id`.
    pub label: String,
    pub description: String,
    /// The parameter schema as the guest wrote it (for `list-tools`).
    pub schema: String,
    /// The same, parsed once at registration (for every request that offers the tool).
    pub parameters: serde_json::Value,
    /// The same, compiled: what `custom-tools.check-arguments` checks a call against.
    pub check: std::sync::Arc<wonopcode_agent_loop::ArgumentCheck>,
}

/// A tool call a guest announced with `ui.tool-start`, until its `ui.tool-result`.
pub(crate) struct ShownCall {
    pub item_id: String,
    pub name: String,
    pub started: std::time::Instant,
}

/// Everything a guest's store holds, one part per concern. Each WIT interface is
/// implemented on a view that borrows only the parts it needs (`crate::host`), the way
/// `wasmtime-wasi` gives each interface its own view of a store.
pub struct HostState {
    /// WASI and what the guest printed.
    pub(crate) io: GuestIo,
    /// The store's limits and the guest's compute budget.
    pub(crate) guard: Guard,
    /// Which guest this is and where its context sits.
    pub(crate) place: Place,
    /// The run in progress and what it showed.
    pub(crate) run: RunSlot,
    /// The tools this context may use, the guest's own among them.
    pub(crate) tools: ContextTools,
    /// The context's model and the responses it streams.
    pub(crate) responses: Responses,
    /// Items the guest shows itself (`ui`).
    pub(crate) items: ShownItems,
    /// The guest's key/value state (`storage.get-state` and friends).
    pub(crate) kv: KeyValues,
}

/// Bytes of key/value state one guest may keep in the host.
const MAX_KEY_VALUE_BYTES: usize = 64 << 20;

/// Bytes of messages one call into a guest may add to its history (`storage.add-message`).
pub(crate) const MAX_ADDED_MESSAGE_BYTES: usize = 256 << 20;

/// A guest's key/value state, held by the host and so outside the guest's memory limit:
/// bounded on its own, so a guest cannot grow the host without end one value at a time.
#[derive(Debug, Default)]
pub(crate) struct KeyValues {
    values: BTreeMap<String, String>,
    bytes: usize,
}

impl KeyValues {
    pub fn get(&self, key: &str) -> Option<&String> {
        self.values.get(key)
    }

    /// Sets `key`; traps when the state would pass [`MAX_KEY_VALUE_BYTES`].
    pub fn set(&mut self, key: String, value: String) -> wasmtime::Result<()> {
        let old = self.values.get(&key).map_or(0, |v| key.len() + v.len());
        let bytes = self.bytes - old + key.len() + value.len();
        if bytes > MAX_KEY_VALUE_BYTES {
            return Err(wasmtime::Error::msg(format!(
                "the guest's key/value state would pass {} MiB (storage.set-state)",
                MAX_KEY_VALUE_BYTES >> 20
            )));
        }
        self.bytes = bytes;
        self.values.insert(key, value);
        Ok(())
    }

    pub fn remove(&mut self, key: &str) {
        if let Some(value) = self.values.remove(key) {
            self.bytes -= key.len() + value.len();
        }
    }
}

/// WASI for the guest (no files, no environment, no sockets) and its captured output.
pub(crate) struct GuestIo {
    pub table: ResourceTable,
    pub wasi: WasiCtx,
    pub stdout: MemoryOutputPipe,
    pub stderr: MemoryOutputPipe,
    /// Bytes of stdout and stderr already logged.
    pub logged: [usize; 2],
    /// Bytes of stderr written before the current call into the guest.
    pub stderr_mark: usize,
}

/// What stops a guest from taking more than it may: memory and tables (the store's
/// limiter), and computation between host calls (epoch ticks).
pub(crate) struct Guard {
    pub limiter: GuestLimiter,
    pub limits: GuestLimits,
    /// Epoch ticks of guest computation since its last call into the host (reset by the
    /// linker's getters on every host call).
    pub compute_ticks: u64,
}

/// Which guest runs in the store and where its context sits in the tree.
pub(crate) struct Place {
    pub loop_name: String,
    pub host_config: HostConfig,
    /// The guest this store runs and where its context sits in the tree.
    pub frame: Option<Arc<Frame>>,
    /// Children spawned so far (over the whole session): the next one is `<path>.<n+1>`.
    pub children: u32,
}

impl Place {
    /// The request this context was spawned with; `None` for a root.
    pub(crate) fn spawn_request(&self) -> Option<&crate::bindings::context::SpawnRequest> {
        self.frame.as_ref().and_then(|f| f.params.as_ref())
    }
}

/// The run in progress, moved into the store for each call into the guest (its history
/// moved, not copied) and back out after it, with what the call showed and how it ended.
#[derive(Default)]
pub(crate) struct RunSlot {
    /// `None` between calls into the guest.
    pub run: Option<Run>,
    /// When the current call into the guest started (`context.get-current-context`).
    pub started_ms: u64,
    /// The last answer text the user saw (a stream's text or `ui.send-text`).
    pub shown: String,
    /// How a step of the last run ended it, when one did (kept after the run is handed back).
    pub ended: Option<Result<String, wonopcode_protocol::LoopError>>,
    /// Bytes of messages the guest added to the history in this call.
    pub added_bytes: usize,
}

impl RunSlot {
    /// The run in progress; a host call outside a run traps.
    pub(crate) fn get(&self) -> wasmtime::Result<&Run> {
        self.run.as_ref().ok_or_else(outside_a_run)
    }

    /// The run in progress, to change; a host call outside a run traps.
    pub(crate) fn get_mut(&mut self) -> wasmtime::Result<&mut Run> {
        self.run.as_mut().ok_or_else(outside_a_run)
    }

    /// The services of the run in progress.
    pub(crate) fn services(&self) -> wasmtime::Result<&RunServices> {
        Ok(self.get()?.services.as_ref())
    }
}

/// The tools a context may use: which host tools it enabled, and the tools the guest
/// registered and runs itself.
#[derive(Default)]
pub(crate) struct ContextTools {
    /// Host tools this context may use (`None`: all of the registry's).
    pub enabled: Option<BTreeSet<String>>,
    pub custom: BTreeMap<String, CustomTool>,
    pub custom_enabled: BTreeSet<String>,
}

impl ContextTools {
    /// Whether the host tool `name` is enabled here.
    pub(crate) fn host_enabled(&self, name: &str) -> bool {
        self.enabled.as_ref().is_none_or(|set| set.contains(name))
    }

    /// Names of the host tools of `registry` this context has enabled, sorted.
    pub(crate) fn enabled_host_tools(&self, registry: &ToolRegistry) -> Vec<String> {
        registry
            .names()
            .filter(|n| self.host_enabled(n))
            .map(str::to_owned)
            .collect()
    }
}

/// The model this context talks to and the responses it is streaming.
pub(crate) struct Responses {
    /// The model this context switched to (`set-provider` / `set-model`), kept across its
    /// prompts; `None`: the model its runs are given.
    pub model: Option<SharedModel>,
    /// Every stream of the run, by handle; looked up for every chunk read, hence the cheap
    /// hash (handles are the host's own counter, so a guest cannot choose colliding keys).
    pub streams: FxHashMap<u64, OpenStream>,
    pub next_stream: u64,
}

/// What the guest shows itself: its progress item and the tool calls it announced.
#[derive(Default)]
pub(crate) struct ShownItems {
    /// The progress item as the guest last said it, until it hides it.
    pub progress: Option<wonopcode_protocol::event::Item>,
    /// Tool calls the guest shows itself (`ui.tool-start`), by call id.
    pub calls: HashMap<String, ShownCall>,
}

/// Bytes of guest stdout/stderr kept between log flushes.
const PIPE_CAPACITY: usize = 1 << 20;

/// The trap of a host call made when no run is in progress.
pub(crate) fn outside_a_run() -> wasmtime::Error {
    wasmtime::Error::msg("host call outside of a run")
}

impl HostState {
    pub(crate) fn new(
        limits: GuestLimits,
        host_config: HostConfig,
        memory: Arc<MemoryBudget>,
    ) -> Self {
        let stdout = MemoryOutputPipe::new(PIPE_CAPACITY);
        let stderr = MemoryOutputPipe::new(PIPE_CAPACITY);
        // Minimal WASI: no preopened directories, no environment, no sockets, no stdin.
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_ip_name_lookup(false)
            .build();
        Self {
            io: GuestIo {
                table: ResourceTable::new(),
                wasi,
                stdout,
                stderr,
                logged: [0, 0],
                stderr_mark: 0,
            },
            guard: Guard {
                limiter: GuestLimiter::new(limits.store_limits(), memory),
                limits,
                compute_ticks: 0,
            },
            place: Place {
                loop_name: String::new(),
                host_config,
                frame: None,
                children: 0,
            },
            run: RunSlot::default(),
            tools: ContextTools::default(),
            responses: Responses {
                model: None,
                streams: FxHashMap::default(),
                next_stream: 1,
            },
            items: ShownItems::default(),
            kv: KeyValues::default(),
        }
    }

    /// What the guest last said on stderr during the current call, if anything.
    pub(crate) fn last_stderr_line(&self) -> Option<String> {
        let bytes = self.io.stderr.contents();
        last_words(&String::from_utf8_lossy(
            bytes.get(self.io.stderr_mark..).unwrap_or_default(),
        ))
    }

    /// Sends what the guest wrote to stdout and stderr, since the last time, to the log
    /// and to the guest's own log of `context` ([`crate::GuestLogs`]).
    pub(crate) fn flush_output(&mut self, context: &str) {
        let io = &mut self.io;
        for (i, (stream, pipe)) in [("stdout", &io.stdout), ("stderr", &io.stderr)]
            .into_iter()
            .enumerate()
        {
            let bytes = pipe.contents();
            let new = bytes.get(io.logged[i]..).unwrap_or_default();
            io.logged[i] = bytes.len();
            let text = String::from_utf8_lossy(new);
            for line in text.lines() {
                tracing::info!(guest = %self.place.loop_name, stream, "{line}");
            }
            self.place
                .host_config
                .guest_logs
                .keep(context, &self.place.loop_name, stream, &text);
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.io.wasi,
            table: &mut self.io.table,
        }
    }
}

/// The line of a guest's (or a hook's) stderr that says why it failed (cut to 300 bytes):
/// the exception line of the last Python traceback, else a Rust panic's place and message
/// (`panicked at src/lib.rs:9:5: why`), else the last non-empty line.
pub(crate) fn last_words(text: &str) -> Option<String> {
    // Rust's panic hook ends with a hint about backtraces, which says nothing here.
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
        .collect();
    // componentize-py prints the traceback, then its runtime panics with a generic line.
    let exception = lines
        .iter()
        .rposition(|l| l.starts_with("Traceback (most recent call last)"))
        .and_then(|at| lines[at + 1..].iter().find(|l| !l.starts_with(' ')));
    // A Rust panic: `thread '…' [(ID)] panicked at FILE:LINE:COL:`, then its message.
    let panic = || {
        let at = lines
            .iter()
            .rposition(|l| l.starts_with("thread '") && l.contains(" panicked at "))?;
        let place = lines[at]
            .split_once(" panicked at ")?
            .1
            .trim_end_matches(':');
        let message = lines.get(at + 1).map_or("", |m| m.trim());
        Some(format!("panicked at {place}: {message}"))
    };
    if exception.is_none()
        && let Some(panic) = panic()
    {
        return Some(clipped(&panic));
    }
    let line = exception.or(lines.last())?.trim();
    Some(clipped(line))
}

/// `line` cut to 300 bytes at a character's edge.
fn clipped(line: &str) -> String {
    let mut end = line.len().min(300);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::last_words;

    #[test]
    fn a_rust_panic_gives_its_place_and_message() {
        for thread in ["thread '<unnamed>'", "thread '<unnamed>' (1)"] {
            let text = format!(
                "\n{thread} panicked at src/lib.rs:366:23:\ndeliberate failure\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
            );
            assert_eq!(
                last_words(&text).unwrap(),
                "panicked at src/lib.rs:366:23: deliberate failure"
            );
        }
    }

    #[test]
    fn a_python_traceback_gives_its_exception_line() {
        let text = "Traceback (most recent call last):\n  File \"app.py\", line 3, in run_prompt\n    raise ReviewFailed(\"no JSON\")\napp.ReviewFailed: no JSON\nthread '<unnamed>' panicked at src/lib.rs:9:5:\nPython function threw an unexpected exception\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(last_words(text).unwrap(), "app.ReviewFailed: no JSON");
    }

    #[test]
    fn otherwise_the_last_line_that_says_something() {
        let text = "starting\nboom: no config\n\n";
        assert_eq!(last_words(text).unwrap(), "boom: no config");
        assert_eq!(last_words("\n \n"), None);
        assert_eq!(last_words(&"é".repeat(400)).unwrap().len(), 300);
    }
}
