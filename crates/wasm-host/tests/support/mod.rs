//! The harness of the guest tests: one engine with tight limits, replayed transcripts, and a
//! workspace with the built-in tools, events collected for the tests that read them.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::{AgentLoop, LoopConfig, LoopContext, RunStats, ToolRegistry};
use wonopcode_protocol::{
    AllowAll, ContextPath, Emitter, Event, EventSink, LoopError, Message, SharedGate, SharedModel,
};
use wonopcode_providers::{ReplayProvider, Transcript};
use wonopcode_wasm_host::{
    EngineOptions, GuestLimits, HostConfig, WasmAgentLoop, WasmEngine, WasmError,
};

/// One engine for the whole test binary, with tight limits so runaway guests stop quickly.
pub fn engine() -> Arc<WasmEngine> {
    static ENGINE: OnceLock<Arc<WasmEngine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let limits = GuestLimits {
                memory_bytes: 64 << 20,
                compute_budget: Duration::from_secs(1),
                ..GuestLimits::default()
            };
            WasmEngine::new(EngineOptions {
                limits,
                cache_dir: None,
                ..EngineOptions::default()
            })
            .unwrap()
        })
        .clone()
}

pub async fn load(path: &str) -> Result<WasmAgentLoop, WasmError> {
    load_with(path, HostConfig::default()).await
}

/// The embedded default guest, with the default host configuration.
pub async fn default_guest() -> WasmAgentLoop {
    WasmAgentLoop::from_bytes(
        engine(),
        wonopcode_wasm_host::DEFAULT_LOOP,
        "the default guest",
        HostConfig::default(),
    )
    .await
    .unwrap()
}

pub async fn load_with(path: &str, config: HostConfig) -> Result<WasmAgentLoop, WasmError> {
    WasmAgentLoop::from_file(engine(), Path::new(path), config).await
}

/// A replay of the root context's turns.
pub fn transcript(turns: &[serde_json::Value]) -> SharedModel {
    let keyed: Vec<(&str, serde_json::Value)> = turns.iter().map(|c| ("0", c.clone())).collect();
    keyed_transcript(&keyed)
}

/// A replay of turns of several contexts, `(context path, chunks)`, numbered per context.
pub fn keyed_transcript(turns: &[(&str, serde_json::Value)]) -> SharedModel {
    let mut text = r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":100000,"max_output":1000,"pricing":{"input_per_mtok":100000000,"output_per_mtok":100000000}}}"#.to_owned();
    text.push('\n');
    let mut counts: std::collections::HashMap<&str, u32> = Default::default();
    for (context, chunks) in turns {
        let turn = counts.entry(context).or_default();
        text.push_str(
            &serde_json::json!({"type":"turn","context":context,"turn":*turn,"chunks":chunks})
                .to_string(),
        );
        *turn += 1;
        text.push('\n');
    }
    Arc::new(ReplayProvider::new(
        Transcript::parse(&text, "test").unwrap(),
        Path::new("test"),
    ))
}

/// Keeps every event.
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<Event>>);

impl EventSink for Collect {
    fn emit(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }
}

pub struct World {
    pub dir: tempfile::TempDir,
    pub provider: SharedModel,
    pub tools: ToolRegistry,
    pub gate: SharedGate,
    pub config: LoopConfig,
    /// What every context of the run shares (the run's tool names, …).
    pub shared: wonopcode_agent_loop::RunShared,
    pub cancel: CancellationToken,
    pub events: Emitter,
    pub collected: Arc<Collect>,
    pub messages: Vec<Message>,
    /// What a test sends into the running turn.
    pub steering: wonopcode_agent_loop::Steering,
}

impl World {
    pub fn new(provider: SharedModel) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
        std::fs::write(dir.path().join("ws/a.txt"), "alpha\n").unwrap();
        let mut tools = ToolRegistry::new();
        wonopcode_tools::register_builtins(&mut tools, Default::default()).unwrap();
        let collected = Arc::new(Collect::default());
        Self {
            dir,
            provider,
            tools,
            gate: Arc::new(AllowAll),
            config: LoopConfig::default(),
            shared: Default::default(),
            cancel: CancellationToken::new(),
            events: Emitter::new(collected.clone(), ContextPath::root()),
            collected,
            messages: Vec::new(),
            steering: Default::default(),
        }
    }

    pub fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    pub async fn run(
        &mut self,
        agent: &dyn AgentLoop,
        prompt: &str,
    ) -> (Result<String, LoopError>, RunStats) {
        self.run_attached(agent, prompt, Vec::new()).await
    }

    /// [`World::run`] with images or documents attached to the prompt.
    pub async fn run_attached(
        &mut self,
        agent: &dyn AgentLoop,
        prompt: &str,
        attachments: Vec<wonopcode_protocol::Part>,
    ) -> (Result<String, LoopError>, RunStats) {
        let root = self.workspace();
        let mut ctx = LoopContext {
            cwd: &root,
            messages: &mut self.messages,
            provider: &self.provider,
            tools: &self.tools,
            permissions: &self.gate,
            config: &self.config,
            shared: std::sync::Arc::new(self.shared.clone()),
            cancel: &self.cancel,
            events: &self.events,
            session_id: "test".into(),
            stats: RunStats::default(),
            attachments,
            steering: self.steering.clone(),
        };
        let result = agent.run_prompt(&mut ctx, prompt).await;
        (result, ctx.stats)
    }

    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.collected.0.lock().unwrap().clone()
    }
}
