//! Provider client benchmarks over a loopback HTTP server:
//! - `providers/sse_assemble_1mb` (Anthropic Messages), `providers/chat_completions_1mb`,
//!   `providers/responses_1mb` and `providers/gemini_1mb`: a recorded stream of each API
//!   grown to about 1 MB (its text deltas, Gemini's thought summaries, repeated), parsed and
//!   decoded through the real client; reported as MB/s and, with 1 element per delta, time
//!   per chunk.
//! - `providers/bedrock_1mb`: the Anthropic stream of `sse_assemble_1mb` as Bedrock frames it
//!   (each event base64-encoded in an event-stream `chunk` message), read through the real
//!   client: the frame decoder, the base64 and the Anthropic decoder behind them.
//! - `providers/first_text_delta`: a request to the first text delta, the server answering at
//!   once with one text event (goal <= 1 ms from first byte; this includes the connection and
//!   the request, so it bounds that from above).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use wonopcode_protocol::{
    ContextPath, LanguageModel, Message, ModelRequest, RequestOptions, StreamChunk,
};
use wonopcode_providers::bedrock::frames::sse_as_frames;
use wonopcode_providers::openai::MaxTokensField;
use wonopcode_providers::{Api, HttpModel};

/// Each API's recorded stream (`crates/providers/tests/fixtures`), and what marks the
/// deltas repeated to grow it.
const RECORDED: [(&str, Api, &str, &str); 4] = [
    (
        "sse_assemble_1mb",
        Api::Anthropic,
        include_str!("../crates/providers/tests/fixtures/anthropic/thinking-signature-text.sse"),
        "\"text_delta\"",
    ),
    (
        "chat_completions_1mb",
        Api::OpenAi(MaxTokensField::MaxTokens),
        include_str!("../crates/providers/tests/fixtures/openai/text-include-usage.sse"),
        "\"content\":\"",
    ),
    (
        "responses_1mb",
        Api::Responses,
        include_str!(
            "../crates/providers/tests/fixtures/responses/text-after-tool-event-lines.sse"
        ),
        "response.output_text.delta",
    ),
    (
        "gemini_1mb",
        Api::Gemini,
        include_str!("../crates/providers/tests/fixtures/gemini/thought-summaries.sse"),
        "\"thought\": true",
    ),
];

/// A recorded stream with its text deltas (events containing `marker`) repeated until the
/// body is about 1 MB; and how many deltas it holds.
fn long_stream(recorded: &str, marker: &str) -> (String, u64) {
    // Google's streams end their lines with CRLF; the others with LF.
    let blank = if recorded.contains("\r\n\r\n") {
        "\r\n\r\n"
    } else {
        "\n\n"
    };
    let events: Vec<&str> = recorded
        .split(blank)
        .filter(|e| !e.trim().is_empty())
        .collect();
    let is_text = |e: &&str| e.contains(marker);
    let text: Vec<&str> = events.iter().copied().filter(is_text).collect();
    let last_text = events.iter().rposition(is_text).expect("text deltas");
    let mut body = String::new();
    let mut deltas = 0;
    for e in &events[..=last_text] {
        body.push_str(e);
        body.push_str(blank);
    }
    while body.len() < 1_000_000 {
        for e in &text {
            body.push_str(e);
            body.push_str(blank);
            deltas += 1;
        }
    }
    for e in &events[last_text + 1..] {
        body.push_str(e);
        body.push_str(blank);
    }
    (body, deltas + text.len() as u64)
}

/// Serves `body` as `content_type` to every connection.
async fn serve(body: Arc<Vec<u8>>, content_type: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&seen);
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let length: usize = text[..head_end]
                            .to_ascii_lowercase()
                            .lines()
                            .find_map(|l| {
                                l.strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if seen.len() >= head_end + 4 + length {
                            break;
                        }
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

fn request() -> ModelRequest {
    ModelRequest {
        context: ContextPath::root(),
        system: None,
        messages: vec![Message::user("hello")].into(),
        tools: Vec::new(),
        options: RequestOptions::default(),
    }
}

fn bench_providers(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("providers");

    let (anthropic, anthropic_deltas) = long_stream(RECORDED[0].2, RECORDED[0].3);
    let bedrock = sse_as_frames(&anthropic);
    let streams = RECORDED
        .into_iter()
        .map(|(name, api, recorded, marker)| {
            let (body, deltas) = long_stream(recorded, marker);
            (name, api, body.into_bytes(), "text/event-stream", deltas)
        })
        .chain([(
            "bedrock_1mb",
            Api::Bedrock,
            bedrock,
            "application/vnd.amazon.eventstream",
            anthropic_deltas,
        )]);
    for (name, api, body, content_type, deltas) in streams {
        let bytes = body.len() as u64;
        let url = rt.block_on(serve(Arc::new(body), content_type));
        let model: HttpModel = wonopcode_benches::loopback_model(api, &url);
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let mut stream = model.stream(request()).await.expect("stream");
                let mut text = 0usize;
                while let Some(chunk) = stream.next().await {
                    match chunk {
                        StreamChunk::TextDelta { text: t } => text += t.len(),
                        StreamChunk::Error { message } => panic!("{message}"),
                        _ => {}
                    }
                }
                assert!(text > 0);
            })
        });
        println!("providers/{name}: {bytes} bytes, {deltas} text deltas per run");
    }

    let first = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n";
    let short = rt.block_on(serve(
        Arc::new(first.as_bytes().to_vec()),
        "text/event-stream",
    ));
    let short_model = wonopcode_benches::loopback_model(Api::Anthropic, &short);
    group.throughput(Throughput::Elements(1));
    group.bench_function("first_text_delta", |b| {
        b.to_async(&rt).iter(|| async {
            let mut stream = short_model.stream(request()).await.expect("stream");
            loop {
                match stream.next().await {
                    Some(StreamChunk::TextDelta { .. }) => break,
                    Some(StreamChunk::Error { message }) => panic!("{message}"),
                    Some(_) => {}
                    None => panic!("no text delta"),
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench_providers);
criterion_main!(benches);
