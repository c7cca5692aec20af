//! The run journal's cost: a 200-response run of the StandardLoop (199 tool turns, then an
//! answer) with its events going nowhere, against the same run with every event appended
//! to a run's event log and fsync'd at each effect, as a journaled run does; and the cost of
//! one fsync'd record on this machine's disk, which is most of the difference.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use wonopcode_agent_loop::StandardLoop;
use wonopcode_benches::{Nap, registry_with, replay, run_prompt_into, transcript};
use wonopcode_journal::EventLog;
use wonopcode_protocol::event::{Event, EventSink};

/// Appends every event to an event log.
struct Journaled(Mutex<EventLog>);

impl EventSink for Journaled {
    fn emit(&self, event: Event) {
        self.0
            .lock()
            .expect("journal")
            .append(&event)
            .expect("append");
    }
}

fn bench_journal(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("dir");
    let registry = registry_with(Nap::new("noop", 0));
    let noop = &registry;
    let turns = transcript("noop", 199, 199);
    let mut group = c.benchmark_group("journal");
    group.sample_size(20);
    group.bench_function("run_200_responses_no_journal", |b| {
        b.to_async(&rt).iter_batched(
            || replay(&turns),
            |provider| async move {
                let sink = Arc::new(wonopcode_protocol::event::NullSink);
                run_prompt_into(&StandardLoop, Arc::new(provider), noop, "go", sink).await;
            },
            BatchSize::SmallInput,
        )
    });
    let mut runs = 0u32;
    group.bench_function("run_200_responses_journaled", |b| {
        b.to_async(&rt).iter_batched(
            || {
                runs += 1;
                let log = EventLog::create(&dir.path().join(format!("events-{runs}.jsonl")))
                    .expect("log");
                (replay(&turns), Arc::new(Journaled(Mutex::new(log))))
            },
            |(provider, sink)| async move {
                run_prompt_into(&StandardLoop, Arc::new(provider), noop, "go", sink).await;
            },
            BatchSize::SmallInput,
        )
    });
    let mut file = std::fs::File::create(dir.path().join("fsync.jsonl")).expect("file");
    let line = [b'x'; 300];
    group.sample_size(100);
    group.bench_function("one_record_fsync", |b| {
        b.iter(|| {
            file.write_all(&line).expect("write");
            file.sync_data().expect("fsync");
        })
    });
    group.finish();
}

criterion_group!(benches, bench_journal);
criterion_main!(benches);
