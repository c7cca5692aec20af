//! Per-response cost as one session grows. A session that already holds N tool responses
//! (each a call of a no-op tool and its result) runs ten more and answers; time per
//! iteration / 11 is what one response costs the loop at response N.
//! - `long_session/native_at_{10,2000}`: the native loop on a replayed model;
//! - `long_session/journaled_at_{10,2000}`: the same through the recorder every journaled run
//!   has, writing its transcript to a file (each record fsync'd, as the journal's are).
//!
//! Goal: at 2,000 no more than 1.5× at 10 (docs/benchmarks.md).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use wonopcode_agent_loop::event::NullSink;
use wonopcode_agent_loop::message::{Message, Part, Role};
use wonopcode_agent_loop::{SharedModel, StandardLoop};
use wonopcode_benches::{Nap, registry_with, replay, run_prompt_after, transcript};
use wonopcode_providers::RecordingModel;

/// A conversation of `responses` earlier tool responses, as a long session holds them.
fn history(responses: usize) -> Vec<Message> {
    let mut messages = vec![Message::user("start")];
    for i in 0..responses {
        let id = format!("h{i}");
        messages.push(Message {
            role: Role::Assistant,
            parts: vec![
                Part::Text {
                    text: format!("Looking at part {i} of the code base."),
                },
                Part::ToolCall {
                    id: id.clone(),
                    name: "noop".into(),
                    arguments: format!("{{\"i\":{i}}}"),
                },
            ]
            .into(),
        });
        messages.push(Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult {
                call_id: id,
                content: "ok: 40 lines of output a tool might give back ".repeat(4),
                is_error: false,
            }]
            .into(),
        });
        messages.push(Message::user(format!("continue {i}")));
    }
    messages
}

fn bench_long_session(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tools = registry_with(Nap::new("noop", 0));
    let more = transcript("noop", 10, 10);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("responses.jsonl");
    let mut group = c.benchmark_group("long_session");
    group.throughput(Throughput::Elements(11));
    for (journaled, name) in [(false, "native"), (true, "journaled")] {
        for at in [10usize, 2000] {
            let earlier = history(at);
            group.bench_function(format!("{name}_at_{at}"), |b| {
                b.to_async(&rt).iter_batched(
                    || {
                        let model: SharedModel = Arc::new(replay(&more));
                        let model: SharedModel = if journaled {
                            Arc::new(
                                RecordingModel::create(model, &out)
                                    .expect("recorder"),
                            )
                        } else {
                            model
                        };
                        (model, earlier.clone())
                    },
                    |(model, earlier)| {
                        let tools = &tools;
                        async move {
                            let answer = run_prompt_after(
                                &StandardLoop,
                                model,
                                tools,
                                "go on",
                                Arc::new(NullSink),
                                earlier,
                            )
                            .await;
                            assert_eq!(answer, "Done.");
                        }
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_long_session);
criterion_main!(benches);
