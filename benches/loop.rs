//! StandardLoop benchmarks on replayed transcripts:
//! - `standard_loop/turn_overhead`: a 21-request run whose 20 tool turns each call a no-op
//!   tool; time per run / 21 is the loop's overhead per turn (goal <= 50 us).
//! - `standard_loop/parallel_8x100ms`: one turn with 8 read-only tool calls of 100 ms each
//!   (goal <= 150 ms wall).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use wonopcode_agent_loop::StandardLoop;
use wonopcode_benches::{Nap, registry_with, replay, run_once, transcript};

fn bench_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("standard_loop");

    let noop = registry_with(Nap::new("noop", 0));
    let turns = transcript("noop", 20, 20);
    group.throughput(Throughput::Elements(21));
    group.bench_function("turn_overhead", |b| {
        b.to_async(&rt).iter_batched(
            || replay(&turns),
            |provider| run_once(&StandardLoop, provider, &noop),
            BatchSize::SmallInput,
        )
    });

    let nap = registry_with(Nap::new("nap", 100));
    let parallel = transcript("nap", 1, 8);
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("parallel_8x100ms", |b| {
        b.to_async(&rt).iter_batched(
            || replay(&parallel),
            |provider| run_once(&StandardLoop, provider, &nap),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_loop);
criterion_main!(benches);
