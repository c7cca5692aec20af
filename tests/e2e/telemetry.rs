//! `--otlp-endpoint` (`docs/telemetry.md`): the real binary exports a parallel spawn's
//! context tree over OTLP/HTTP to a receiver here, which decodes it with the OpenTelemetry
//! project's own protobuf definitions (`opentelemetry-proto`): the span names, the parent
//! links across the eight parallel children, and the GenAI usage attributes.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

use crate::agents::{agents, eight_researchers};
use crate::support::{Scratch, copy_dir, stderr, wonopcode};

/// An OTLP/HTTP receiver: every span of every `POST /v1/traces`, decoded.
struct Receiver {
    url: String,
    spans: Arc<Mutex<Vec<Span>>>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (kept, asked) = (spans.clone(), paths.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (kept, asked) = (kept.clone(), asked.clone());
                std::thread::spawn(move || serve(stream, &kept, &asked));
            }
        });
        Self { url, spans, paths }
    }
}

/// Answers each request of a (kept-alive) connection.
fn serve(mut stream: std::net::TcpStream, spans: &Mutex<Vec<Span>>, paths: &Mutex<Vec<String>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let head_end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().to_owned())
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
        let body: Vec<u8> = buf.drain(..head_end + length).skip(head_end).collect();
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for resource in request.resource_spans {
            for scope in resource.scope_spans {
                spans.lock().unwrap().extend(scope.spans);
            }
        }
        paths.lock().unwrap().push(path);
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        );
    }
}

/// A span's attribute as text or a number.
fn attribute(span: &Span, key: &str) -> Option<String> {
    let value = span
        .attributes
        .iter()
        .find(|a| a.key == key)?
        .value
        .as_ref()?;
    match value.value.as_ref()? {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        AnyValue::DoubleValue(d) => Some(d.to_string()),
        AnyValue::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

#[test]
fn a_parallel_spawn_is_exported_as_a_tree_of_genai_spans() {
    let receiver = Receiver::start();
    let s = Scratch::new();
    copy_dir(&agents().join("workspace"), &s.ws());
    let transcript = eight_researchers(&s);
    let out = wonopcode()
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .arg("--loops-dir")
        .arg(agents())
        .args([
            "--agent-loop-name",
            "orchestrator",
            "--yes",
            "--otlp-endpoint",
        ])
        .arg(&receiver.url)
        // Each chunk 30 ms apart: a child's response lasts long enough for the others to start.
        .args(["--replay-pace", "30", "--replay"])
        .arg(&transcript)
        .arg("-C")
        .arg(s.ws())
        .arg("Ask eight researchers about greet.sh.")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        receiver
            .paths
            .lock()
            .unwrap()
            .iter()
            .all(|p| p == "/v1/traces")
    );
    let spans = receiver.spans.lock().unwrap().clone();
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };

    // The root turn: one trace, one root span.
    let root = named("invoke_agent orchestrator");
    assert_eq!(
        root.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let root = root[0];
    assert!(root.parent_span_id.is_empty());
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id));
    assert_eq!(
        attribute(root, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        attribute(root, "gen_ai.agent.name").as_deref(),
        Some("orchestrator")
    );

    // Eight children spawned at once: each a child of the root, in its own context.
    let children = named("invoke_agent researcher");
    assert_eq!(children.len(), 8);
    let mut contexts: Vec<String> = children
        .iter()
        .map(|c| {
            assert_eq!(c.parent_span_id, root.span_id);
            attribute(c, "wonopcode.context").unwrap()
        })
        .collect();
    contexts.sort();
    assert_eq!(
        contexts,
        (1..=8).map(|i| format!("0.{i}")).collect::<Vec<_>>()
    );
    // They ran at the same time: some child started before another ended.
    let overlap = children.iter().any(|a| {
        children.iter().any(|b| {
            a.span_id != b.span_id
                && a.start_time_unix_nano < b.end_time_unix_nano
                && b.start_time_unix_nano < a.end_time_unix_nano
        })
    });
    assert!(overlap, "the children's spans do not overlap");

    // A model response per context, under its context's span, with its usage and cost.
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 10, "two of the root's and one per child");
    for chat in &chats {
        assert_eq!(
            attribute(chat, "gen_ai.operation.name").as_deref(),
            Some("chat")
        );
        assert!(attribute(chat, "gen_ai.request.model").is_some());
        let parent = by_id[chat.parent_span_id.as_slice()];
        assert_eq!(
            attribute(parent, "wonopcode.context"),
            attribute(chat, "wonopcode.context")
        );
        assert!(chat.start_time_unix_nano >= parent.start_time_unix_nano);
        if parent.name == "invoke_agent researcher" {
            assert_eq!(
                attribute(chat, "gen_ai.usage.input_tokens").as_deref(),
                Some("1000")
            );
            assert_eq!(
                attribute(chat, "gen_ai.usage.output_tokens").as_deref(),
                Some("1000")
            );
            assert_eq!(
                attribute(chat, "wonopcode.cost_usd").as_deref(),
                Some("0.011")
            );
            // Nothing of the recorded prompts came from a cache.
            assert_eq!(
                attribute(chat, "wonopcode.cache_hit_ratio").as_deref(),
                Some("0")
            );
        }
    }
    // A child's span sums its usage.
    for child in &children {
        assert_eq!(
            attribute(child, "gen_ai.usage.output_tokens").as_deref(),
            Some("1000")
        );
    }

    // The delegation itself is a tool call of the root.
    let tools = named("execute_tool delegate_parallel");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].parent_span_id, root.span_id);
    assert_eq!(
        attribute(tools[0], "gen_ai.tool.name").as_deref(),
        Some("delegate_parallel")
    );
    assert_eq!(
        attribute(tools[0], "gen_ai.tool.call.id").as_deref(),
        Some("p1")
    );
}

#[test]
fn a_bad_endpoint_is_one_line() {
    let out = wonopcode()
        .args(["--otlp-endpoint", "not a url", "--replay", "x.jsonl", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("--otlp-endpoint"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
}
