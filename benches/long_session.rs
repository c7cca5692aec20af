//! What one more response costs as a session grows. A session already holds N tool
//! responses (each a call of a no-op tool, its result, and a user line); a prompt then runs
//! twelve more responses, and the time from its second request to its twelfth is ten
//! responses' cost at response N. The first request is left out: it is where a prompt's run
//! counts the history once (the token tally) and a new journal hashes it once.
//! - `long_session/native_at_{10,2000}`: the native loop on a replayed model;
//! - `long_session/journaled_at_{10,2000}`: the same through the recorder every journaled run
//!   has, writing its transcript to a file (each record fsync'd, as the journal's are).
//!
//! Goal: at 2,000 no more than 1.5× at 10 (docs/benchmarks.md).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use parking_lot::Mutex;
use wonopcode_agent_loop::StandardLoop;
use wonopcode_benches::{Nap, registry_with, replay, run_prompt_after, transcript};
use wonopcode_protocol::event::NullSink;
use wonopcode_protocol::message::{Message, Part, Role};
use wonopcode_protocol::{
    ChunkStream, ContextPath, LanguageModel, ModelError, ModelInfo, ModelRequest, SharedModel,
};
use wonopcode_providers::RecordingModel;

/// A conversation of `responses` earlier tool responses, as a long session holds them.
fn history(responses: usize) -> Vec<Message> {
    let mut messages = vec![Message::user("start")];
    for i in 0..responses {
        let id = format!("h{i}");
        messages.push(Message::new(
            Role::Assistant,
            vec![
                Part::Text {
                    text: format!("Looking at part {i} of the code base."),
                },
                Part::ToolCall {
                    id: id.clone(),
                    name: "noop".into(),
                    arguments: format!("{{\"i\":{i}}}"),
                },
            ],
        ));
        messages.push(Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: id,
                content: "ok: 40 lines of output a tool might give back ".repeat(4),
                is_error: false,
            }],
        ));
        messages.push(Message::user(format!("continue {i}")));
    }
    messages
}

/// The model the loop sees, noting when each request was made.
struct Stopwatch {
    inner: SharedModel,
    asked: Mutex<Vec<Instant>>,
}

#[async_trait]
impl LanguageModel for Stopwatch {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn skip_response(&self, context: &ContextPath) {
        self.inner.skip_response(context);
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        self.asked.lock().push(Instant::now());
        self.inner.stream(request).await
    }
}

fn bench_long_session(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tools = registry_with(Nap::new("noop", 0));
    let more = transcript("noop", 12, 12);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("responses.jsonl");
    let mut group = c.benchmark_group("long_session");
    group.throughput(Throughput::Elements(10));
    for (journaled, name) in [(false, "native"), (true, "journaled")] {
        for at in [10usize, 2000] {
            let earlier = history(at);
            group.bench_function(format!("{name}_at_{at}"), |b| {
                b.to_async(&rt).iter_custom(|iters| {
                    let (earlier, tools, more, out) = (&earlier, &tools, &more, &out);
                    async move {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            let model: SharedModel = Arc::new(replay(more));
                            let model: SharedModel = if journaled {
                                Arc::new(RecordingModel::create(model, out).expect("recorder"))
                            } else {
                                model
                            };
                            let watch = Arc::new(Stopwatch {
                                inner: model,
                                asked: Mutex::new(Vec::new()),
                            });
                            let answer = run_prompt_after(
                                &StandardLoop,
                                watch.clone(),
                                tools,
                                "go on",
                                Arc::new(NullSink),
                                earlier.clone(),
                            )
                            .await;
                            assert_eq!(answer, "Done.");
                            let asked = watch.asked.lock();
                            assert_eq!(asked.len(), 13);
                            total += asked[11] - asked[1];
                        }
                        total
                    }
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_long_session);
criterion_main!(benches);
