//! Context stack benchmarks:
//! - `contexts/spawn_x100`: a guest spawns 100 trivial children one after another (each a
//!   fresh instance of the same guest that answers at once); time per spawn + run + return
//!   (goal <= 50 us).
//! - `contexts/depth_100_chain`: a chain of 100 nested children, the last refused at depth
//!   101 (goal <= 10 ms); its answer is checked once before it is timed.
//! - `contexts/send_x100`: one child held (WIT 0.2.8 `child`) and given 100 turns one after
//!   another, against `spawn_x100`'s 100 fresh children for the same turns; their ratio
//!   (goal: spawning >= 5x the send) is printed before the group.
//! - Before them, once: the peak resident memory of 1,000 concurrent idle children (goal
//!   <= 1 GiB), printed, since criterion measures time only.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_benches::{Nap, PeakRss, registry_with, replay, run_prompt};
use wonopcode_contexts::ContextLimits;
use wonopcode_wasm_host::{HostConfig, WasmAgentLoop, guest_paths};

/// Minor page faults of this process so far (`/proc/self/stat`, field 10).
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // The command name may hold spaces; the fields after it are plain numbers.
            let rest = s.rsplit_once(')')?.1.to_owned();
            rest.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}

fn bench_contexts(c: &mut Criterion) {
    let (rt, engine) = wonopcode_benches::runtime_and_engine();
    let config = HostConfig {
        // The root and its 1,000 children.
        contexts: ContextLimits {
            max_parallel: 1000,
            max_live: 1001,
            ..ContextLimits::default()
        },
        ..HostConfig::default()
    };
    let guest = rt
        .block_on(WasmAgentLoop::from_file(
            engine.clone(),
            Path::new(guest_paths::MISBEHAVE),
            config,
        ))
        .expect("guest loads");
    let none = wonopcode_benches::no_turns();
    let tools = registry_with(Nap::new("noop", 0));

    // 1,000 children alive at once, each sleeping 2 s in a host call.
    let idle: Vec<serde_json::Value> = (0..1000)
        .map(|_| serde_json::json!({"task": "sleep 2000"}))
        .collect();
    let prompt = format!("spawn-all 1000 {}", serde_json::Value::from(idle));
    let sampler = PeakRss::start();
    let started = Instant::now();
    let answer = rt.block_on(run_prompt(&guest, replay(&none), &tools, &prompt));
    let (before, peak) = sampler.stop();
    let completed = answer.matches("status: completed").count();
    println!(
        "contexts/idle_1000: {completed} children completed in {:.2} s; resident memory {} MiB before, peak {} MiB (+{} MiB)",
        started.elapsed().as_secs_f64(),
        before / 1024,
        peak / 1024,
        (peak - before) / 1024
    );
    let failure = answer
        .lines()
        .find(|l| l.contains("spawn failed") || l.contains("status: error"));
    assert_eq!(completed, 1000, "every idle child completes: {failure:?}");

    // Page faults dominate a spawn (each child's memory starts decommitted), and unlike time
    // they do not drift with the machine: counted once, per child.
    let faults = minor_faults();
    rt.block_on(run_prompt(&guest, replay(&none), &tools, "spawn-seq 1000"));
    println!(
        "contexts/spawn_page_faults: {:.1} minor page faults per spawned child",
        (minor_faults() - faults) as f64 / 1000.0
    );

    // Sending to a held child against spawning a fresh one, the same echoing turns: the
    // median of alternating runs.
    let mut ratios = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        let spawned = rt.block_on(run_prompt(&guest, replay(&none), &tools, "spawn-seq 100"));
        let spawning = started.elapsed();
        let started = Instant::now();
        let sent = rt.block_on(run_prompt(&guest, replay(&none), &tools, "send-seq 100"));
        let sending = started.elapsed();
        assert_eq!(spawned, "100 children completed");
        assert_eq!(sent, "100 turns completed");
        ratios.push(spawning.as_secs_f64() / sending.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "contexts/spawn_over_send: {:.1} (quartiles {:.1}-{:.1}): a fresh child per turn against one held child",
        ratios[7], ratios[3], ratios[11]
    );

    // The chain goes 100 deep and its last spawn is refused at the limit.
    let chain = rt.block_on(run_prompt(&guest, replay(&none), &tools, "bomb"));
    assert!(
        chain.contains("depth 100: spawn failed") && chain.contains("past the limit of 100"),
        "{chain}"
    );
    let mut group = c.benchmark_group("contexts");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("spawn_x100", |b| {
        b.to_async(&rt)
            .iter(|| run_prompt(&guest, replay(&none), &tools, "spawn-seq 100"))
    });
    group.bench_function("send_x100", |b| {
        b.to_async(&rt)
            .iter(|| run_prompt(&guest, replay(&none), &tools, "send-seq 100"))
    });
    group.bench_function("depth_100_chain", |b| {
        b.to_async(&rt)
            .iter(|| run_prompt(&guest, replay(&none), &tools, "bomb"))
    });
    group.finish();
}

criterion_group!(benches, bench_contexts);
criterion_main!(benches);
