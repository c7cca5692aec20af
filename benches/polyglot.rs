//! Guests in Python and JavaScript (built by `scripts/build-polyglot-guests.sh`; skipped with
//! a message when they are missing):
//! - `polyglot/{python,js}_compile_cold`: compiling the component (an interpreter inside).
//! - `polyglot/{python,js}_load_cached`: loading it from the compile cache (goal <= 150 ms and
//!   >= 50x faster than cold).
//! - `polyglot/python_child_spawn_run`: a Rust guest spawns the Python reviewer (on the
//!   Python SDK), which asks for one model turn and returns its verdict as data; spawn + run + return, with the component
//!   compiled once and cached (reported, no goal).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_benches::{Nap, registry_with, run_prompt_on};
use wonopcode_protocol::{
    ChunkStream, LanguageModel, ModelError, ModelInfo, ModelRequest, StopReason, StreamChunk,
};
use wonopcode_wasm_host::{EngineOptions, HostConfig, WasmAgentLoop, WasmEngine, guest_paths};

/// A model that approves whatever it is asked to review, at once.
struct Approver(ModelInfo);

#[async_trait]
impl LanguageModel for Approver {
    fn info(&self) -> &ModelInfo {
        &self.0
    }

    async fn stream(&self, _request: ModelRequest) -> Result<ChunkStream, ModelError> {
        Ok(Box::pin(futures::stream::iter([
            StreamChunk::TextDelta {
                text: r#"{"verdict": "approve", "issues": []}"#.to_owned(),
            },
            StreamChunk::Done {
                stop_reason: StopReason::EndTurn,
            },
        ])))
    }
}

fn component(name: &str) -> Option<(PathBuf, Vec<u8>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/polyglot")
        .join(format!("{name}.wasm"));
    match std::fs::read(&path) {
        Ok(bytes) => Some((path, bytes)),
        Err(_) => {
            println!(
                "polyglot: {} is missing; build it with `bash scripts/build-polyglot-guests.sh`",
                path.display()
            );
            None
        }
    }
}

fn bench_polyglot(c: &mut Criterion) {
    let Some((python_path, python)) = component("python-reviewer") else {
        return;
    };
    let Some((_, js)) = component("js-researcher") else {
        return;
    };
    let (rt, uncached) = wonopcode_benches::runtime_and_engine();
    let cache = tempfile::tempdir().expect("cache dir");
    let cached = WasmEngine::new(EngineOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        ..EngineOptions::default()
    })
    .expect("engine");

    let mut group = c.benchmark_group("polyglot");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for (name, bytes) in [("python", &python), ("js", &js)] {
        group.bench_function(format!("{name}_compile_cold"), |b| {
            b.iter(|| uncached.compile(bytes, name).expect("compile"))
        });
        cached.compile(bytes, name).expect("warm the cache");
        group.bench_function(format!("{name}_load_cached"), |b| {
            b.iter(|| cached.compile(bytes, name).expect("load"))
        });
    }

    let root = rt
        .block_on(WasmAgentLoop::from_file(
            cached.clone(),
            Path::new(guest_paths::MISBEHAVE),
            HostConfig::default(),
        ))
        .expect("root guest loads");
    let model: wonopcode_protocol::SharedModel = Arc::new(Approver(ModelInfo {
        id: "m".into(),
        provider: "p".into(),
        context_window: 100_000,
        max_output: 1000,
        pricing: None,
        capabilities: Default::default(),
    }));
    let tools = registry_with(Nap::new("read", 0));
    let prompt = format!(
        r#"spawn {{"module": {{"path": "{}"}}, "task": "Review nothing."}}"#,
        python_path.display()
    );
    let answer = rt.block_on(run_prompt_on(&root, model.clone(), &tools, &prompt));
    assert!(answer.contains("status: completed"), "{answer}");
    group.bench_function("python_child_spawn_run", |b| {
        b.to_async(&rt)
            .iter(|| run_prompt_on(&root, model.clone(), &tools, &prompt))
    });
    group.finish();
}

criterion_group!(benches, bench_polyglot);
criterion_main!(benches);
