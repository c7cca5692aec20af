//! StandardLoop behaviour against a scripted model and instrumented tools.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use wonopcode_protocol::event::{Emitter, Event, EventKind, EventSink, ItemDetails};
use wonopcode_protocol::message::{Message, Part, Role};
use wonopcode_protocol::model::{
    ChunkStream, LanguageModel, ModelError, ModelRequest, StopReason, StreamChunk,
};
use wonopcode_protocol::permission::AllowAll;
use wonopcode_protocol::usage::ModelInfo;
use wonopcode_protocol::{LoopError, ToolCategory, ToolKind, ToolSpec};

use crate::agent::{AgentLoop, LoopConfig, LoopContext, RunStats};
use crate::compaction::CompactionConfig;
use crate::tool::{BreakLoop, Tool, ToolEnv, ToolError, ToolOutput};
use crate::tool_registry::ToolRegistry;

use super::StandardLoop;

enum Script {
    Chunks(Vec<StreamChunk>),
    ChunksThenHang(Vec<StreamChunk>),
    /// The person sends the text into the inbox once the request is made, while this
    /// response streams.
    Steered(crate::Steering, String, Vec<StreamChunk>),
}

struct Scripted {
    info: ModelInfo,
    turns: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl Scripted {
    fn new(window: u64, turns: Vec<Script>) -> Self {
        Self {
            info: ModelInfo {
                id: "scripted".into(),
                provider: "test".into(),
                context_window: window,
                max_output: 1000,
                pricing: None,
                capabilities: Default::default(),
            },
            turns: Mutex::new(turns.into()),
            requests: Mutex::new(Vec::new()),
        }
    }
}

#[async_trait]
impl LanguageModel for Scripted {
    fn info(&self) -> &ModelInfo {
        &self.info
    }
    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        self.requests.lock().unwrap().push(request);
        match self.turns.lock().unwrap().pop_front() {
            Some(Script::Chunks(c)) => Ok(Box::pin(futures::stream::iter(c))),
            Some(Script::ChunksThenHang(c)) => Ok(Box::pin(
                futures::stream::iter(c).chain(futures::stream::pending()),
            )),
            Some(Script::Steered(inbox, text, c)) => {
                inbox.send(text);
                Ok(Box::pin(futures::stream::iter(c)))
            }
            None => Err(ModelError::Other("script exhausted".into())),
        }
    }
}

fn text(t: &str) -> StreamChunk {
    StreamChunk::TextDelta { text: t.into() }
}

fn call(id: &str, name: &str, args: &str) -> Vec<StreamChunk> {
    vec![
        StreamChunk::ToolCallStart {
            id: id.into(),
            name: name.into(),
        },
        StreamChunk::ToolCallDelta {
            id: id.into(),
            arguments_delta: args.into(),
        },
        StreamChunk::ToolCallEnd { id: id.into() },
    ]
}

fn done(reason: StopReason) -> StreamChunk {
    StreamChunk::Done {
        stop_reason: reason,
    }
}

/// A tool that sleeps and tracks how many of its kind run at once.
struct Probe {
    spec: ToolSpec,
    sleep: Duration,
    running: Arc<AtomicUsize>,
    max_running: Arc<AtomicUsize>,
    outcome: Option<BreakLoop>,
}

impl Probe {
    fn new(name: &str, kind: ToolKind, sleep_ms: u64) -> Self {
        Self {
            spec: ToolSpec {
                name: name.into(),
                description: name.into(),
                parameters: serde_json::json!({"type": "object"}),
                kind,
                category: ToolCategory::Internal,
            },
            sleep: Duration::from_millis(sleep_ms),
            running: Arc::default(),
            max_running: Arc::default(),
            outcome: None,
        }
    }
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn run(&self, _args: serde_json::Value, _env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(self.sleep).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        let mut out = ToolOutput::text(format!("{} done", self.spec.name));
        out.break_loop = self.outcome.clone();
        Ok(out)
    }
}

#[derive(Default)]
struct Collect(Mutex<Vec<Event>>);

impl EventSink for Collect {
    fn emit(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }
}

struct Harness {
    model: Arc<Scripted>,
    shared_model: wonopcode_protocol::SharedModel,
    gate: wonopcode_protocol::SharedGate,
    tools: ToolRegistry,
    config: LoopConfig,
    shared: crate::RunShared,
    cancel: CancellationToken,
    sink: Arc<Collect>,
    events: Emitter,
    messages: Vec<Message>,
    cwd: std::path::PathBuf,
    steering: crate::Steering,
}

impl Harness {
    fn new(model: Scripted, tools: Vec<Arc<dyn Tool>>) -> Self {
        let mut registry = ToolRegistry::new();
        for t in tools {
            registry.register(t).unwrap();
        }
        let sink = Arc::new(Collect::default());
        let model = Arc::new(model);
        Self {
            shared_model: model.clone(),
            gate: Arc::new(AllowAll),
            model,
            tools: registry,
            config: LoopConfig::default(),
            shared: crate::RunShared::default(),
            cancel: CancellationToken::new(),
            events: Emitter::new(sink.clone(), Default::default()),
            sink,
            messages: Vec::new(),
            cwd: std::env::temp_dir(),
            steering: Default::default(),
        }
    }

    fn context(&mut self) -> LoopContext<'_> {
        LoopContext {
            cwd: &self.cwd,
            messages: &mut self.messages,
            provider: &self.shared_model,
            tools: &self.tools,
            permissions: &self.gate,
            config: &self.config,
            shared: Arc::new(self.shared.clone()),
            cancel: &self.cancel,
            events: &self.events,
            session_id: "t".into(),
            stats: RunStats::default(),
            attachments: Vec::new(),
            steering: self.steering.clone(),
        }
    }

    async fn run(&mut self, prompt: &str) -> Result<String, LoopError> {
        StandardLoop.run_prompt(&mut self.context(), prompt).await
    }

    async fn resume(&mut self, answers: Vec<(String, String, bool)>) -> Result<String, LoopError> {
        StandardLoop.resume(&mut self.context(), answers).await
    }

    /// What `pick` takes from each event so far, in order.
    fn events_where<T>(&self, pick: impl Fn(&EventKind) -> Option<T>) -> Vec<T> {
        self.sink
            .0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| pick(&e.kind))
            .collect()
    }

    fn event_types(&self) -> Vec<String> {
        self.sink
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }
}

#[tokio::test]
async fn read_only_calls_overlap_and_mutating_calls_do_not() {
    let reader = Probe::new("peek", ToolKind::ReadOnly, 100);
    let readers_max = reader.max_running.clone();
    let writer = Probe::new("poke", ToolKind::Mutating, 30);
    let writers_max = writer.max_running.clone();
    let mut first = Vec::new();
    for i in 0..4 {
        first.extend(call(&format!("r{i}"), "peek", "{}"));
    }
    first.push(done(StopReason::ToolUse));
    let mut second = Vec::new();
    for i in 0..3 {
        second.extend(call(&format!("w{i}"), "poke", &format!("{{\"n\":{i}}}")));
    }
    second.push(done(StopReason::ToolUse));
    let model = Scripted::new(
        100_000,
        vec![
            Script::Chunks(first),
            Script::Chunks(second),
            Script::Chunks(vec![text("ok"), done(StopReason::EndTurn)]),
        ],
    );
    let mut h = Harness::new(model, vec![Arc::new(reader), Arc::new(writer)]);
    assert_eq!(h.run("go").await, Ok("ok".into()));
    assert_eq!(
        readers_max.load(Ordering::SeqCst),
        4,
        "the four reads ran together"
    );
    assert_eq!(
        writers_max.load(Ordering::SeqCst),
        1,
        "writes ran one at a time"
    );
    // Results are in call order whatever order they finished in.
    let tool_msg = &h.messages[2];
    let ids: Vec<&str> = tool_msg.answered_call_ids().collect();
    assert_eq!(ids, ["r0", "r1", "r2", "r3"]);
}

#[tokio::test]
async fn cancellation_stops_a_hanging_stream_and_keeps_partial_text() {
    let model = Scripted::new(
        100_000,
        vec![Script::ChunksThenHang(vec![text("half an ans")])],
    );
    let mut h = Harness::new(model, vec![]);
    let cancel = h.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    assert_eq!(h.run("go").await, Err(LoopError::Cancelled));
    // The stream never ends by itself: ending at all is the point; the bound only keeps a
    // regression from passing after a long wait on a busy machine.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let last = h.messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(
        last.text_content(),
        "half an ans\n\n[incomplete: cancelled]"
    );
}

#[tokio::test]
async fn a_stream_that_goes_quiet_past_the_idle_timeout_fails_and_keeps_what_it_said() {
    let model = Scripted::new(
        100_000,
        vec![Script::ChunksThenHang(vec![text("half an ans")])],
    );
    let mut h = Harness::new(model, vec![]);
    h.config.stream_idle_timeout = Duration::from_millis(50);
    let outcome = h.run("go").await;
    assert_eq!(
        outcome,
        Err(LoopError::Provider("no data from the model for 0 s".into()))
    );
    let last = h.messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert!(
        last.text_content()
            .starts_with("half an ans\n\n[incomplete: provider error: no data from the model"),
        "{}",
        last.text_content()
    );
    // The response is reported once, failed.
    let types = h.event_types();
    assert_eq!(
        types.iter().filter(|t| *t == "response.completed").count(),
        1,
        "{types:?}"
    );
}

#[tokio::test]
async fn a_request_refused_before_it_streamed_is_reported_and_not_counted() {
    // The script is empty: the model refuses the first request.
    let h = Harness::new(Scripted::new(100_000, vec![]), vec![]);
    let mut run = crate::Run::new(
        crate::RunServices {
            cwd: h.cwd.clone(),
            provider: h.shared_model.clone(),
            tools: h.tools.clone(),
            gate: h.gate.clone(),
            config: h.config.clone(),
            shared: Arc::default(),
            events: h.events.clone(),
            cancel: h.cancel.clone(),
            session_id: "t".into(),
        },
        Vec::new(),
    );
    let outcome = run.respond().await;
    assert!(
        matches!(&outcome, Err(LoopError::Provider(m)) if m.contains("script exhausted")),
        "{outcome:?}"
    );
    assert_eq!(run.stats.iterations, 1);
    assert_eq!(
        run.stats.usage,
        wonopcode_protocol::Usage::default(),
        "nothing was billed"
    );
    assert!(run.messages.is_empty(), "nothing was said");
    let completed: Vec<_> = h.events_where(|kind| match kind {
        wonopcode_protocol::EventKind::ResponseCompleted { error, .. } => Some(error.clone()),
        _ => None,
    });
    assert_eq!(completed.len(), 1, "{completed:?}");
    assert!(
        completed[0]
            .as_deref()
            .is_some_and(|e| e.contains("script exhausted"))
    );
}

#[tokio::test]
async fn cancellation_during_a_tool_answers_the_call() {
    let mut turn = call("slow", "peek", "{}");
    turn.push(done(StopReason::ToolUse));
    let model = Scripted::new(100_000, vec![Script::Chunks(turn)]);
    let mut h = Harness::new(
        model,
        vec![Arc::new(Probe::new("peek", ToolKind::ReadOnly, 10_000))],
    );
    let cancel = h.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    assert_eq!(h.run("go").await, Err(LoopError::Cancelled));
    // The tool would take 10 s: well under that means it was cut short.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let last = h.messages.last().unwrap();
    assert_eq!(last.role, Role::Tool);
    assert!(
        matches!(&last.parts[0], Part::ToolResult { is_error: true, content, .. } if content.contains("cancelled"))
    );
}

#[tokio::test]
async fn a_suspending_tool_suspends_and_resume_continues_the_same_run() {
    let mut asker = Probe::new("ask_user", ToolKind::ReadOnly, 1);
    asker.outcome = Some(BreakLoop::Suspend);
    let mut turn = call("q1", "ask_user", "{}");
    turn.extend(call("p1", "peek", "{}"));
    turn.push(done(StopReason::ToolUse));
    let model = Scripted::new(
        100_000,
        vec![
            Script::Chunks(turn),
            Script::Chunks(vec![text("thanks"), done(StopReason::EndTurn)]),
        ],
    );
    let mut h = Harness::new(
        model,
        vec![
            Arc::new(asker),
            Arc::new(Probe::new("peek", ToolKind::ReadOnly, 1)),
        ],
    );
    let Err(LoopError::Suspended { pending, .. }) = h.run("go").await else {
        panic!("not suspended")
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, "q1");
    // The other call's result is kept; the suspended one has none yet.
    assert_eq!(
        wonopcode_protocol::message::pending_tool_calls(&h.messages).len(),
        1
    );
    assert_eq!(
        h.resume(vec![("q1".into(), "blue".into(), false)]).await,
        Ok("thanks".into())
    );
    let requests = h.model.requests.lock().unwrap();
    let last_request = requests.last().unwrap();
    assert!(last_request.messages.iter().any(|m| m.parts.iter().any(|p| matches!(p, Part::ToolResult { call_id, content, .. } if call_id == "q1" && content == "blue"))));
}

#[tokio::test]
async fn provider_errors_end_the_run_and_keep_what_was_said() {
    let model = Scripted::new(
        100_000,
        vec![Script::Chunks(vec![
            text("partial"),
            StreamChunk::Error {
                message: "overloaded".into(),
            },
        ])],
    );
    let mut h = Harness::new(model, vec![]);
    assert_eq!(
        h.run("go").await,
        Err(LoopError::Provider("overloaded".into()))
    );
    let kept = h.messages.last().unwrap();
    assert_eq!(kept.parts.len(), 2, "the partial text, then the mark");
    assert_eq!(
        kept.text_content(),
        "partial\n\n[incomplete: provider error: overloaded]"
    );
    // The cut shows as an error item after the partial text.
    let events = h.sink.0.lock().unwrap();
    let last_item = events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::ItemCompleted { item } => Some(item.details.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        last_item,
        ItemDetails::Error {
            message: "the answer above is incomplete: provider error: overloaded".into()
        }
    );
}

#[tokio::test]
async fn a_context_overflow_compacts_and_retries_once() {
    let overflow = || {
        Script::Chunks(vec![StreamChunk::ContextOverflow {
            message: "prompt is too long".into(),
        }])
    };
    let model = Scripted::new(
        1_000_000,
        vec![
            overflow(),
            Script::Chunks(vec![text("SUMMARY"), done(StopReason::EndTurn)]),
            Script::Chunks(vec![text("fits now"), done(StopReason::EndTurn)]),
        ],
    );
    let mut h = Harness::new(model, vec![]);
    for i in 0..3 {
        h.messages.push(Message::user(format!("q{i}")));
        h.messages
            .push(Message::text(Role::Assistant, format!("a{i}")));
    }
    assert_eq!(h.run("q3").await.unwrap(), "fits now");
    {
        let requests = h.model.requests.lock().unwrap();
        assert_eq!(requests.len(), 3, "refused, summary, retry");
        assert!(requests[2].messages.len() < requests[0].messages.len());
    }
    assert!(h.event_types().contains(&"context.compacted".to_owned()));

    // A second overflow in the same run is an error, not another compaction.
    let model = Scripted::new(
        1_000_000,
        vec![
            overflow(),
            Script::Chunks(vec![text("SUMMARY"), done(StopReason::EndTurn)]),
            overflow(),
        ],
    );
    let mut h = Harness::new(model, vec![]);
    for i in 0..3 {
        h.messages.push(Message::user(format!("q{i}")));
        h.messages
            .push(Message::text(Role::Assistant, format!("a{i}")));
    }
    let err = h.run("q3").await.unwrap_err();
    assert_eq!(err, LoopError::Provider("prompt is too long".into()));
}

#[tokio::test]
async fn thinking_with_its_signature_is_sent_back() {
    let mut first = vec![
        StreamChunk::ThinkingDelta { text: "hmm".into() },
        StreamChunk::ThinkingSignature {
            signature: "sig".into(),
        },
    ];
    first.extend(call("p", "peek", "{}"));
    first.push(done(StopReason::ToolUse));
    let model = Scripted::new(
        100_000,
        vec![
            Script::Chunks(first),
            Script::Chunks(vec![text("ok"), done(StopReason::EndTurn)]),
        ],
    );
    let mut h = Harness::new(
        model,
        vec![Arc::new(Probe::new("peek", ToolKind::ReadOnly, 1))],
    );
    h.run("go").await.unwrap();
    let requests = h.model.requests.lock().unwrap();
    let assistant = requests[1]
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    assert_eq!(
        assistant.parts[0],
        Part::Thinking {
            text: "hmm".into(),
            signature: Some("sig".into())
        }
    );
}

/// Three calls, each with an output of 2,000 characters, added to `messages`.
fn three_big_tool_outputs(messages: &mut Vec<Message>) {
    for i in 0..3 {
        messages.push(Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall {
                id: format!("c{i}"),
                name: "peek".into(),
                arguments: "{}".into(),
            }]
            .into(),
        });
        messages.push(Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult {
                call_id: format!("c{i}"),
                content: "x".repeat(2_000),
                is_error: false,
            }]
            .into(),
        });
    }
}

#[tokio::test]
async fn old_tool_outputs_are_pruned_when_the_context_fills() {
    let model = Scripted::new(
        1_000,
        vec![Script::Chunks(vec![text("ok"), done(StopReason::EndTurn)])],
    );
    let mut h = Harness::new(model, vec![]);
    h.config.compaction = CompactionConfig {
        protect_tool_tokens: 100,
        min_prune_tokens: 50,
        ..CompactionConfig::default()
    };
    three_big_tool_outputs(&mut h.messages);
    h.run("go").await.unwrap();
    assert!(h.event_types().contains(&"context.compacted".to_owned()));
    let sent = &h.model.requests.lock().unwrap()[0];
    let pruned = sent.messages.iter().flat_map(|m| m.parts.iter()).filter(|p| matches!(p, Part::ToolResult { content, .. } if content == crate::compaction::PRUNED_MARKER)).count();
    assert_eq!(pruned, 2, "the newest output is protected");
}

#[tokio::test]
async fn long_histories_are_summarized_keeping_the_last_two_user_turns() {
    let model = Scripted::new(
        1_000_000,
        vec![
            Script::Chunks(vec![text("SUMMARY"), done(StopReason::EndTurn)]),
            Script::Chunks(vec![text("ok"), done(StopReason::EndTurn)]),
        ],
    );
    let mut h = Harness::new(model, vec![]);
    h.config.compaction = CompactionConfig {
        max_messages: Some(4),
        ..CompactionConfig::default()
    };
    for i in 0..3 {
        h.messages.push(Message::user(format!("q{i}")));
        h.messages
            .push(Message::text(Role::Assistant, format!("a{i}")));
    }
    h.run("q3").await.unwrap();
    let requests = h.model.requests.lock().unwrap();
    assert!(
        requests[0].tools.is_empty(),
        "the summary request offers no tools"
    );
    let texts: Vec<String> = requests[1]
        .messages
        .iter()
        .map(Message::text_content)
        .collect();
    assert_eq!(
        texts,
        [
            "[Summary of the earlier conversation]\nSUMMARY",
            "q2",
            "a2",
            "q3"
        ]
    );
    assert!(h.event_types().contains(&"context.compacted".to_owned()));
}

#[tokio::test]
async fn calls_left_open_by_an_interrupted_run_are_closed_first() {
    let model = Scripted::new(
        100_000,
        vec![Script::Chunks(vec![text("ok"), done(StopReason::EndTurn)])],
    );
    let mut h = Harness::new(model, vec![]);
    h.messages.push(Message::user("earlier"));
    h.messages.push(Message {
        role: Role::Assistant,
        parts: vec![Part::ToolCall {
            id: "x".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }]
        .into(),
    });
    h.run("again").await.unwrap();
    assert_eq!(h.messages[2].role, Role::Tool);
    assert_eq!(h.messages[3], Message::user("again"));
}

#[tokio::test]
async fn turn_lifecycle_events_wrap_the_run() {
    let model = Scripted::new(
        100_000,
        vec![Script::Chunks(vec![
            text("hi"),
            StreamChunk::Usage {
                usage: wonopcode_protocol::Usage {
                    input_tokens: 3,
                    output_tokens: 1,
                    ..Default::default()
                },
            },
            done(StopReason::EndTurn),
        ])],
    );
    let mut h = Harness::new(model, vec![]);
    let mut ctx = h.context();
    let result = crate::run_turn(&StandardLoop, &mut ctx, "hello").await;
    drop(ctx);
    assert_eq!(result.status, wonopcode_protocol::LoopStatus::Complete);
    assert_eq!(result.usage.input_tokens, 3);
    let events = h.sink.0.lock().unwrap();
    assert!(matches!(
        events.first().map(|e| &e.kind),
        Some(EventKind::TurnStarted)
    ));
    assert!(matches!(
        events.last().map(|e| &e.kind),
        Some(EventKind::TurnCompleted { iterations: 1, .. })
    ));
}

/// Hooks that remember the points of a turn they were asked at.
#[derive(Debug, Default)]
struct Heard(Mutex<Vec<String>>);

#[async_trait::async_trait]
impl crate::hook::Hooks for Heard {
    async fn pre_tool_use(
        &self,
        _site: &crate::hook::HookSite<'_>,
        _call: &wonopcode_protocol::call::Call,
    ) -> crate::hook::PreToolUse {
        crate::hook::PreToolUse::default()
    }

    async fn post_tool_use(
        &self,
        _site: &crate::hook::HookSite<'_>,
        _call: &wonopcode_protocol::call::Call,
        _output: &str,
        _is_error: bool,
    ) -> crate::hook::PostToolUse {
        crate::hook::PostToolUse::default()
    }

    async fn turn_event(
        &self,
        site: &crate::hook::HookSite<'_>,
        event: crate::hook::TurnEvent<'_>,
    ) -> crate::hook::TurnAnswer {
        if let crate::hook::TurnEvent::Compacting { trigger } = event {
            self.0
                .lock()
                .unwrap()
                .push(format!("PreCompact {trigger} {}", site.context));
        }
        crate::hook::TurnAnswer::default()
    }
}

#[tokio::test]
async fn the_pre_compact_hooks_hear_a_compaction_before_it_happens() {
    let answer = || Script::Chunks(vec![text("ok"), done(StopReason::EndTurn)]);
    let model = Scripted::new(1_000, vec![answer(), answer()]);
    let mut h = Harness::new(model, vec![]);
    h.config.compaction = CompactionConfig {
        protect_tool_tokens: 100,
        min_prune_tokens: 50,
        ..CompactionConfig::default()
    };
    let heard = Arc::new(Heard::default());
    h.shared.hooks = Some(heard.clone());
    h.run("go").await.unwrap();
    // A small history: nothing to compact, nothing heard.
    assert!(heard.0.lock().unwrap().is_empty());
    three_big_tool_outputs(&mut h.messages);
    h.run("go on").await.unwrap();
    assert_eq!(*heard.0.lock().unwrap(), ["PreCompact auto 0"]);
    assert!(h.event_types().contains(&"context.compacted".to_owned()));
}

#[tokio::test]
async fn web_searches_that_ran_are_counted_in_the_turns_usage() {
    let search = Probe::new("websearch", ToolKind::ReadOnly, 0);
    let mut first = call("s1", "websearch", "{}");
    first.extend(call("s2", "websearch", "{}"));
    first.extend(call("s3", "nosuchtool", "{}"));
    first.push(done(StopReason::ToolUse));
    let model = Scripted::new(
        100_000,
        vec![
            Script::Chunks(first),
            Script::Chunks(vec![text("ok"), done(StopReason::EndTurn)]),
        ],
    );
    let mut h = Harness::new(model, vec![Arc::new(search)]);
    let result = crate::run_turn(&StandardLoop, &mut h.context(), "find it").await;
    assert_eq!(result.usage.web_search_count, 2, "the two that ran");
    let json = serde_json::to_value(result.usage).unwrap();
    assert_eq!(json["web_search_count"], 2);
}

/// A tool during which the person sends text into the turn.
struct Typed {
    spec: ToolSpec,
    inbox: crate::Steering,
}

#[async_trait]
impl Tool for Typed {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn run(&self, _args: serde_json::Value, _env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        self.inbox.send("use tabs, not spaces".to_owned());
        self.inbox.send("and keep it short".to_owned());
        Ok(ToolOutput::text("typed"))
    }
}

#[tokio::test]
async fn text_sent_into_a_turn_reaches_its_next_request_after_the_tool_results() {
    let mut first = call("c1", "type", "{}");
    first.push(done(StopReason::ToolUse));
    let model = Scripted::new(
        100_000,
        vec![
            Script::Chunks(first),
            Script::Chunks(vec![text("ok"), done(StopReason::EndTurn)]),
        ],
    );
    let inbox = crate::Steering::default();
    let typed = Typed {
        spec: Probe::new("type", ToolKind::ReadOnly, 0).spec,
        inbox: inbox.clone(),
    };
    let mut h = Harness::new(model, vec![Arc::new(typed)]);
    h.steering = inbox.clone();
    assert_eq!(h.run("format the file").await, Ok("ok".into()));
    let requests = h.model.requests.lock().unwrap();
    let second = &requests[1].messages;
    let roles: Vec<Role> = second.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::User]);
    assert_eq!(
        second[3].text_content(),
        "use tabs, not spaces\n\nand keep it short",
        "both sends, in order, as one message"
    );
    assert!(inbox.is_empty(), "the run took them");
    let announced: Vec<String> = h.events_where(|kind| match kind {
        EventKind::ItemCompleted { item } => match &item.details {
            ItemDetails::UserMessage { text } => Some(text.clone()),
            _ => None,
        },
        _ => None,
    });
    assert_eq!(announced, ["use tabs, not spaces\n\nand keep it short"]);
}

#[tokio::test]
async fn text_sent_after_the_last_request_stays_for_the_next_prompt() {
    let mut h = Harness::new(Scripted::new(100_000, vec![]), vec![]);
    // Sent while the final answer streams: the run makes no request after it.
    h.model.turns.lock().unwrap().push_back(Script::Steered(
        h.steering.clone(),
        "one more thing".to_owned(),
        vec![text("done"), done(StopReason::EndTurn)],
    ));
    assert_eq!(h.run("hello").await, Ok("done".into()));
    assert_eq!(h.steering.waiting(), ["one more thing"]);
    let requests = h.model.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    let said = |m: &Message| format!("{:?}", m.parts).contains("one more thing");
    assert!(!requests[0].messages.iter().any(said));
    assert!(
        !h.messages.iter().any(said),
        "the history has no message of it"
    );
}

#[tokio::test]
async fn text_waiting_for_a_calls_result_does_not_come_between_the_call_and_it() {
    let mut h = Harness::new(Scripted::new(100_000, vec![]), vec![]);
    h.messages = vec![
        Message::user("go"),
        Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            }]
            .into(),
        },
    ];
    h.steering.send("stop".to_owned());
    let mut ctx = h.context();
    let mut run = crate::Run::take_from(&mut ctx);
    run.ready_for_response().await.unwrap();
    assert_eq!(run.messages.len(), 2, "nothing added after the open call");
    assert_eq!(h.steering.waiting(), ["stop"]);
}
