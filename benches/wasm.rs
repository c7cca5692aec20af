//! WebAssembly host benchmarks:
//! - `wasm/import_call`: a trivial guest->host import call (`system.is-cancelled`, synchronous, through
//!   the generated bindings) vs a raw Wasmtime no-op import called from a core module loop,
//!   per call (goal: ratio <= 2 and <= 100 ns), and vs a raw no-op component-model import (the
//!   canonical ABI without bindings, WASI or limits), which is the floor for any component.
//! - `wasm/instantiate`: a store and instance of the default guest from its `InstancePre`
//!   (goal <= 50 us).
//! - `wasm/compile_cold` vs `wasm/load_cached`: the default guest compiled by Cranelift vs
//!   loaded from the on-disk cache.
//! - `loops/standard_200x500` vs `loops/wasm_200x500`: the same replayed transcript of 200 turns
//!   and 500 no-op tool calls through StandardLoop and the default guest (goal ratio <= 1.10);
//!   after them, printed once, the ratio's median over pairs of runs made in alternation.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use wasmtime::{Engine, Linker, Module, Store};
use wonopcode_agent_loop::StandardLoop;
use wonopcode_benches::{Nap, registry_with, replay, run_once};
use wonopcode_wasm_host::{
    DEFAULT_LOOP, EngineOptions, HostConfig, WasmAgentLoop, WasmEngine, guest_paths,
};

const CALLS: u32 = 100_000;

/// A core module calling a no-op host import `n` times.
const RAW_LOOP: &str = r#"(module
  (import "env" "noop" (func $noop))
  (func (export "run") (param $n i32)
    (loop $l
      (call $noop)
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $l (local.get $n)))))"#;

/// The same loop as a component: a no-op component-model import (canonical ABI, no WIT
/// bindings, no WASI, no limits) called `n` times from one exported function.
const RAW_COMPONENT_LOOP: &str = r#"(component
  (import "noop" (func $noop))
  (core func $lowered (canon lower (func $noop)))
  (core module $m
    (import "host" "noop" (func $noop))
    (func (export "run") (param $n i32)
      (loop $l
        (call $noop)
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br_if $l (local.get $n)))))
  (core instance $host (export "noop" (func $lowered)))
  (core instance $i (instantiate $m (with "host" (instance $host))))
  (func (export "run") (param "n" u32) (canon lift (core func $i "run"))))"#;

fn bench_wasm(c: &mut Criterion) {
    let (rt, engine) = wonopcode_benches::runtime_and_engine();
    let mut group = c.benchmark_group("wasm");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));

    // Guest -> host: `calls N` in the misbehave guest makes N `system.is-cancelled` calls.
    let guest = rt
        .block_on(WasmAgentLoop::from_file(
            engine.clone(),
            Path::new(guest_paths::MISBEHAVE),
            HostConfig::default(),
        ))
        .expect("guest loads");
    let empty = wonopcode_benches::no_turns();
    let tools = registry_with(Nap::new("noop", 0));
    group.bench_function("import_call_x100k", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let (guest, tools, empty) = (&guest, &tools, &empty);
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    wonopcode_benches::run_prompt(
                        guest,
                        replay(empty),
                        tools,
                        &format!("calls {CALLS}"),
                    )
                    .await;
                    total += started.elapsed();
                }
                total
            }
        })
    });

    // The same number of calls to a raw no-op import, same engine settings (sync, no bindings).
    let raw_engine = Engine::default();
    let module = Module::new(&raw_engine, RAW_LOOP).expect("raw module");
    let mut linker = Linker::new(&raw_engine);
    linker.func_wrap("env", "noop", || {}).expect("noop import");
    let mut store = Store::new(&raw_engine, ());
    let instance = linker
        .instantiate(&mut store, &module)
        .expect("raw instance");
    let run = instance
        .get_typed_func::<i32, ()>(&mut store, "run")
        .expect("run export");
    group.bench_function("raw_import_call_x100k", |b| {
        b.iter(|| run.call(&mut store, CALLS as i32).expect("raw run"))
    });

    // The same calls to a no-op component-model import: what the canonical ABI itself costs.
    let component = wasmtime::component::Component::new(&raw_engine, RAW_COMPONENT_LOOP)
        .expect("raw component");
    let mut linker = wasmtime::component::Linker::<()>::new(&raw_engine);
    linker
        .root()
        .func_wrap("noop", |_, (): ()| Ok(()))
        .expect("noop component import");
    let mut store = Store::new(&raw_engine, ());
    let instance = linker
        .instantiate(&mut store, &component)
        .expect("raw component instance");
    let run = instance
        .get_typed_func::<(u32,), ()>(&mut store, "run")
        .expect("run export");
    group.bench_function("raw_component_import_call_x100k", |b| {
        b.iter(|| {
            run.call(&mut store, (CALLS,)).expect("raw component run");
        })
    });

    let default = rt
        .block_on(WasmAgentLoop::from_bytes(
            engine.clone(),
            DEFAULT_LOOP,
            "the default guest",
            HostConfig::default(),
        ))
        .expect("default guest");
    group.bench_function("instantiate", |b| {
        b.to_async(&rt)
            .iter(|| async { default.instantiate_fresh().await.expect("instantiate") })
    });

    group.bench_function("compile_cold", |b| {
        b.iter(|| engine.compile(DEFAULT_LOOP, "bench").expect("compile"))
    });
    let cache = tempfile::tempdir().expect("cache dir");
    let cached = WasmEngine::new(EngineOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        ..EngineOptions::default()
    })
    .expect("engine");
    cached
        .compile(DEFAULT_LOOP, "bench")
        .expect("warm the cache");
    group.bench_function("load_cached", |b| {
        b.iter(|| cached.compile(DEFAULT_LOOP, "bench").expect("load"))
    });
    group.finish();

    // 200 turns, 500 tool calls: 100 turns of 3 calls and 100 of 2.
    let mut loops = c.benchmark_group("loops");
    loops.sample_size(10);
    loops.measurement_time(Duration::from_secs(8));
    let noop = registry_with(Nap::new("noop", 0));
    let long = wonopcode_benches::transcript("noop", 200, 500);
    loops.bench_function("standard_200x500", |b| {
        b.to_async(&rt).iter_batched(
            || replay(&long),
            |p| run_once(&StandardLoop, p, &noop),
            BatchSize::SmallInput,
        )
    });
    let wasm = Arc::new(default);
    loops.bench_function("wasm_200x500", |b| {
        b.to_async(&rt).iter_batched(
            || replay(&long),
            |p| run_once(wasm.as_ref(), p, &noop),
            BatchSize::SmallInput,
        )
    });
    loops.finish();

    // The ratio itself, from runs of the two loops in alternation: the machine's drift, which
    // moves separate measurements by tens of percent, then moves both sides of a pair alike.
    let mut ratios: Vec<f64> = (0..RATIO_PAIRS)
        .map(|_| {
            let time = |agent: &dyn wonopcode_agent_loop::AgentLoop| {
                let provider = replay(&long);
                let started = Instant::now();
                rt.block_on(run_once(agent, provider, &noop));
                started.elapsed().as_secs_f64()
            };
            let standard = time(&StandardLoop);
            time(wasm.as_ref()) / standard
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: usize| ratios[(ratios.len() - 1) * q / 100];
    println!(
        "loops/wasm_over_standard: median {:.2} (quartiles {:.2}-{:.2}) over {RATIO_PAIRS} alternating pairs",
        at(50),
        at(25),
        at(75)
    );
}

/// Alternating pairs of runs behind the printed wasm/standard ratio.
const RATIO_PAIRS: usize = 200;

criterion_group!(benches, bench_wasm);
criterion_main!(benches);
