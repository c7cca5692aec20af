//! JSONL serialization throughput of the event stream (`--json`): a realistic mix of
//! streamed deltas, tool-call items, messages and turn events.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use wonopcode_protocol::event::Item;
use wonopcode_protocol::event::{CommandDetails, ItemDetails, ItemStatus, ToolCallItem};
use wonopcode_protocol::{ContextPath, Event, EventKind, LoopStatus, Message, Usage};

fn sample() -> Vec<Event> {
    let ev = |kind| Event {
        context: ContextPath::root(),
        ts: "2026-11-22T02:03:58.840Z".into(),
        kind,
    };
    let call = ToolCallItem {
        call_id: "toolu_01".into(),
        name: "bash".into(),
        arguments: r#"{"command":"cargo test --workspace"}"#.into(),
        status: ItemStatus::Completed,
        output: Some("exit code: 0\nstdout:\n".to_owned() + &"test ok\n".repeat(40)),
        duration_ms: Some(1234),
        command: Some(CommandDetails {
            command: "cargo test --workspace".into(),
            exit_code: Some(0),
            sandbox: Some("workspace-write".into()),
            blocked: None,
        }),
        file_change: None,
        file_changes: Vec::new(),
        server: None,
        tool: None,
    };
    let mut events = vec![ev(EventKind::TurnStarted)];
    for i in 0..20 {
        events.push(ev(EventKind::ItemDelta {
            item_id: "item_1".into(),
            text: format!("token {i} "),
        }));
    }
    events.push(ev(EventKind::ItemStarted {
        item: Item {
            id: "item_2".into(),
            details: ItemDetails::ToolCall(ToolCallItem {
                status: ItemStatus::InProgress,
                output: None,
                ..call.clone()
            }),
        },
    }));
    events.push(ev(EventKind::ItemCompleted {
        item: Item {
            id: "item_2".into(),
            details: ItemDetails::ToolCall(call),
        },
    }));
    events.push(ev(EventKind::MessageCreated {
        message: Message::user("Find every TODO in this project."),
    }));
    events.push(ev(EventKind::TurnCompleted {
        status: LoopStatus::Complete,
        iterations: 3,
        usage: Usage {
            input_tokens: 1200,
            output_tokens: 300,
            ..Usage::default()
        },
        pending: Vec::new(),
    }));
    events
}

fn bench_events(c: &mut Criterion) {
    let events = sample();
    let mut group = c.benchmark_group("events");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("to_jsonl", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(64 * 1024);
            for e in &events {
                serde_json::to_writer(&mut out, e).expect("serializes");
                out.push(b'\n');
            }
            out
        })
    });
    group.finish();
}

criterion_group!(benches, bench_events);
criterion_main!(benches);
