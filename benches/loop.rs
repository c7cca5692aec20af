//! StandardLoop benchmarks on replayed transcripts:
//! - `standard_loop/turn_overhead`: a 21-request run whose 20 tool turns each call a no-op
//!   tool; time per run / 21 is the loop's overhead per turn (goal <= 50 us).
//! - `standard_loop/parallel_8x100ms`: one turn with 8 read-only tool calls of 100 ms each
//!   (goal <= 150 ms wall).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::event::NullSink;
use wonopcode_agent_loop::{
    AgentLoop, AllowAll, ContextPath, Emitter, LoopConfig, LoopContext, RunStats, SharedGate,
    SharedModel, StandardLoop, Tool, ToolCategory, ToolEnv, ToolError, ToolKind, ToolOutput,
    ToolRegistry, ToolSpec,
};
use wonopcode_providers::{ReplayProvider, Transcript};

/// A read-only tool that optionally sleeps.
struct Nap(ToolSpec, Duration);

impl Nap {
    fn new(name: &str, ms: u64) -> Self {
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

/// A transcript: `tool_turns` turns each calling `tool` `calls_per_turn` times, then an answer.
fn transcript(tool: &str, tool_turns: usize, calls_per_turn: usize) -> Transcript {
    let mut text = json!({"type":"header","format":"wonopcode-transcript","version":1,
        "model":{"id":"bench","provider":"bench","context_window":1_000_000,"max_output":1000}})
    .to_string();
    text.push('\n');
    for turn in 0..tool_turns {
        let mut chunks = vec![json!({"type":"text_delta","text":"Checking."})];
        for c in 0..calls_per_turn {
            let id = format!("t{turn}c{c}");
            chunks.push(json!({"type":"tool_call_start","id":id,"name":tool}));
            chunks.push(json!({"type":"tool_call_delta","id":id,"arguments_delta":format!("{{\"i\":{}}}", turn * 100 + c)}));
            chunks.push(json!({"type":"tool_call_end","id":id}));
        }
        chunks.push(json!({"type":"usage","usage":{"input_tokens":100,"output_tokens":20}}));
        chunks.push(json!({"type":"done","stop_reason":"tool_use"}));
        text.push_str(
            &json!({"type":"turn","context":"0","turn":turn,"chunks":chunks}).to_string(),
        );
        text.push('\n');
    }
    let last = json!({"type":"turn","context":"0","turn":tool_turns,"chunks":[
        {"type":"text_delta","text":"Done."},{"type":"done","stop_reason":"end_turn"}]});
    text.push_str(&last.to_string());
    text.push('\n');
    Transcript::parse(&text, "bench").expect("bench transcript parses")
}

async fn run_once(provider: ReplayProvider, tools: &ToolRegistry) {
    let provider: SharedModel = Arc::new(provider);
    let gate: SharedGate = Arc::new(AllowAll);
    let cwd = std::env::temp_dir();
    let mut messages = Vec::new();
    let config = LoopConfig::default();
    let cancel = CancellationToken::new();
    let events = Emitter::new(Arc::new(NullSink), ContextPath::root());
    let mut ctx = LoopContext {
        cwd: &cwd,
        messages: &mut messages,
        provider: &provider,
        tools,
        permissions: &gate,
        config: &config,
        cancel: &cancel,
        events: &events,
        session_id: "bench".into(),
        stats: RunStats::default(),
    };
    let answer = StandardLoop.run_prompt(&mut ctx, "go").await;
    assert_eq!(answer.as_deref(), Ok("Done."));
}

fn bench_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("standard_loop");

    let mut noop = ToolRegistry::new();
    noop.register(Arc::new(Nap::new("noop", 0)))
        .expect("register");
    let turns = transcript("noop", 20, 1);
    group.throughput(Throughput::Elements(21));
    group.bench_function("turn_overhead", |b| {
        b.to_async(&rt).iter_batched(
            || ReplayProvider::new(turns.clone(), Path::new("bench")),
            |provider| run_once(provider, &noop),
            BatchSize::SmallInput,
        )
    });

    let mut nap = ToolRegistry::new();
    nap.register(Arc::new(Nap::new("nap", 100)))
        .expect("register");
    let parallel = transcript("nap", 1, 8);
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("parallel_8x100ms", |b| {
        b.to_async(&rt).iter_batched(
            || ReplayProvider::new(parallel.clone(), Path::new("bench")),
            |provider| run_once(provider, &nap),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_loop);
criterion_main!(benches);
