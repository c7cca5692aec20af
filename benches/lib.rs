//! Shared set-up of the criterion benchmarks: replayed transcripts of tool turns, a no-op
//! (or sleeping) read-only tool, and one run of any loop on them.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

pub mod peer_agents;
pub mod pty;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::{
    AgentLoop, LoopConfig, LoopContext, RunStats, Tool, ToolEnv, ToolError, ToolOutput,
    ToolRegistry,
};
use wonopcode_protocol::event::{EventSink, NullSink};
use wonopcode_protocol::{
    AllowAll, ContextPath, Emitter, SharedGate, SharedModel, ToolCategory, ToolKind, ToolSpec,
};
use wonopcode_providers::{ReplayProvider, Transcript};

/// A read-only tool that optionally sleeps.
pub struct Nap(ToolSpec, Duration);

impl Nap {
    /// A tool named `name` that sleeps `ms` milliseconds.
    pub fn new(name: &str, ms: u64) -> Self {
        Self(
            ToolSpec {
                name: name.into(),
                description: "does nothing".into(),
                parameters: json!({"type": "object", "properties": {"i": {"type": "integer"}}}),
                kind: ToolKind::ReadOnly,
                category: ToolCategory::Internal,
            },
            Duration::from_millis(ms),
        )
    }
}

#[async_trait]
impl Tool for Nap {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, _args: serde_json::Value, _env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        if !self.1.is_zero() {
            tokio::time::sleep(self.1).await;
        }
        Ok(ToolOutput::text("ok"))
    }
}

/// Runs "go" through a loop on a replayed transcript and checks it answers "Done.".
pub async fn run_once(agent: &dyn AgentLoop, provider: ReplayProvider, tools: &ToolRegistry) {
    assert_eq!(run_prompt(agent, provider, tools, "go").await, "Done.");
}

/// A registry holding one tool.
pub fn registry_with(tool: Nap) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(tool)).expect("register");
    registry
}

/// A replay provider for a transcript.
pub fn replay(transcript: &Transcript) -> ReplayProvider {
    ReplayProvider::new(transcript.clone(), Path::new("bench"))
}

/// Runs one prompt through any loop on an empty history (iteration limit 10,000) and
/// returns its answer.
pub async fn run_prompt(
    agent: &dyn AgentLoop,
    provider: ReplayProvider,
    tools: &ToolRegistry,
    prompt: &str,
) -> String {
    run_prompt_on(agent, Arc::new(provider), tools, prompt).await
}

/// The same with any model.
pub async fn run_prompt_on(
    agent: &dyn AgentLoop,
    provider: SharedModel,
    tools: &ToolRegistry,
    prompt: &str,
) -> String {
    run_prompt_into(agent, provider, tools, prompt, Arc::new(NullSink)).await
}

/// The same, its events going to `sink`.
pub async fn run_prompt_into(
    agent: &dyn AgentLoop,
    provider: SharedModel,
    tools: &ToolRegistry,
    prompt: &str,
    sink: Arc<dyn EventSink>,
) -> String {
    run_prompt_after(agent, provider, tools, prompt, sink, Vec::new()).await
}

/// The same, continuing the conversation `history`.
pub async fn run_prompt_after(
    agent: &dyn AgentLoop,
    provider: SharedModel,
    tools: &ToolRegistry,
    prompt: &str,
    sink: Arc<dyn EventSink>,
    history: Vec<wonopcode_protocol::Message>,
) -> String {
    let gate: SharedGate = Arc::new(AllowAll);
    let cwd = std::env::temp_dir();
    let mut messages = history;
    let config = LoopConfig {
        max_iterations: 10_000,
        ..LoopConfig::default()
    };
    let cancel = CancellationToken::new();
    let events = Emitter::new(sink, ContextPath::root());
    let mut ctx = LoopContext {
        cwd: &cwd,
        messages: &mut messages,
        provider: &provider,
        tools,
        permissions: &gate,
        config: &config,
        shared: Default::default(),
        cancel: &cancel,
        events: &events,
        session_id: "bench".into(),
        stats: RunStats::default(),
        attachments: Vec::new(),
        steering: Default::default(),
    };
    agent
        .run_prompt(&mut ctx, prompt)
        .await
        .expect("the prompt runs")
}

/// A transcript of `turns` tool turns making `calls` tool calls in all (spread as evenly as
/// possible), then an answer.
pub fn transcript(tool: &str, turns: usize, calls: usize) -> Transcript {
    let mut text = json!({"type":"header","format":"wonopcode-transcript","version":1,
        "model":{"id":"bench","provider":"bench","context_window":100_000_000,"max_output":1000}})
    .to_string();
    text.push('\n');
    let mut made = 0;
    for turn in 0..turns {
        let here = (calls - made) / (turns - turn);
        let mut chunks = vec![json!({"type":"text_delta","text":"Checking."})];
        for c in 0..here {
            let id = format!("t{turn}c{c}");
            chunks.push(json!({"type":"tool_call_start","id":id,"name":tool}));
            chunks.push(json!({"type":"tool_call_delta","id":id,"arguments_delta":format!("{{\"i\":{}}}", made + c)}));
            chunks.push(json!({"type":"tool_call_end","id":id}));
        }
        made += here;
        chunks.push(json!({"type":"done","stop_reason":"tool_use"}));
        text.push_str(
            &json!({"type":"turn","context":"0","turn":turn,"chunks":chunks}).to_string(),
        );
        text.push('\n');
    }
    let last = json!({"type":"turn","context":"0","turn":turns,"chunks":[
        {"type":"text_delta","text":"Done."},{"type":"done","stop_reason":"end_turn"}]});
    text.push_str(&last.to_string());
    text.push('\n');
    Transcript::parse(&text, "bench").expect("bench transcript parses")
}

/// The multi-threaded runtime and an uncached engine the WebAssembly benchmarks run on.
pub fn runtime_and_engine() -> (
    tokio::runtime::Runtime,
    Arc<wonopcode_wasm_host::WasmEngine>,
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = wonopcode_wasm_host::WasmEngine::new(wonopcode_wasm_host::EngineOptions {
        cache_dir: None,
        ..wonopcode_wasm_host::EngineOptions::default()
    })
    .expect("engine");
    (rt, engine)
}

/// A transcript with no turns, for guests that never ask the model.
pub fn no_turns() -> Transcript {
    Transcript::parse(
        r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}"#,
        "bench",
    )
    .expect("transcript")
}

/// The release `wonopcode` binary, built (or found fresh) by cargo.
pub fn release_bin() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--release",
            "--package",
            "wonopcode",
            "--bin",
            "wonopcode",
            "--message-format=json",
        ])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .output()
        .expect("running cargo build");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "wonopcode")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo reported the wonopcode executable")
}

/// Waits for process `pid`; its exit status and peak RSS in MiB: the largest resident set
/// of the process and of the children it waited for, not of other children of the
/// benchmark (such as the cargo that built the binary).
#[allow(unsafe_code)]
pub fn wait_with_peak_rss(pid: u32) -> (i32, f64) {
    let mut status = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: wait4 writes the status and a whole `rusage` into the pointers it is given;
    // the child is ours and not waited for elsewhere.
    let usage = unsafe {
        let waited = libc::wait4(pid as libc::pid_t, &mut status, 0, usage.as_mut_ptr());
        assert_eq!(waited, pid as libc::pid_t, "wait4");
        usage.assume_init()
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, usage.ru_maxrss as f64 / 1024.0)
}

/// Resident memory of this process, in KiB (`VmRSS` of `/proc/self/status`).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// The peak resident memory of this process while something runs, sampled every 5 ms on a
/// thread of its own (criterion measures only time).
pub struct PeakRss {
    before: u64,
    peak: std::sync::Arc<std::sync::atomic::AtomicU64>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    sampler: std::thread::JoinHandle<()>,
}

impl PeakRss {
    /// Starts sampling.
    pub fn start() -> Self {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let before = rss_kib();
        let peak = std::sync::Arc::new(AtomicU64::new(before));
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let sampler = {
            let (peak, done) = (peak.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    peak.fetch_max(rss_kib(), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        Self {
            before,
            peak,
            done,
            sampler,
        }
    }

    /// Stops sampling: the resident memory before the start and the peak since, in KiB.
    pub fn stop(self) -> (u64, u64) {
        use std::sync::atomic::Ordering;
        self.done.store(true, Ordering::Relaxed);
        let _ = self.sampler.join();
        (self.before, self.peak.load(Ordering::Relaxed))
    }
}

/// The client (`HttpModel`) of `api` for a loopback server at `base_url`: one attempt, no
/// retries, so a benchmark measures the client and not its back-off.
pub fn loopback_model(
    api: wonopcode_providers::Api,
    base_url: &str,
) -> wonopcode_providers::HttpModel {
    use wonopcode_providers::http::retry::RetryPolicy;
    wonopcode_providers::HttpModel::new(wonopcode_providers::HttpSettings {
        api,
        base_url: base_url.to_owned(),
        api_key: Some("bench".to_owned()),
        auth: Default::default(),
        api_version: None,
        key_env: None,
        aws_region: None,
        aws_profile: None,
        unsigned: false,
        extra_headers: Vec::new(),
        model: wonopcode_protocol::ModelInfo {
            id: "bench-model".to_owned(),
            provider: "bench".to_owned(),
            context_window: 200_000,
            max_output: 1024,
            pricing: None,
            capabilities: Default::default(),
        },
        connect_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(30),
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
        rate_limit: Default::default(),
        local_server: None,
        prompt_cache: Default::default(),
    })
    .expect("model")
}
