//! `streaming/1000_children_x_2kb`: a guest spawns 1,000 child contexts at once, and each
//! streams one 2 KB response over real HTTP (the Anthropic client, `HttpModel`) from a
//! loopback SSE server. The server paces every response: 20 chunks of about 100 bytes, 50 ms
//! apart from the request's arrival, so the pacing alone is 1 s. Goal: wall time ≤ 1.3× the pacing, and resident
//! memory ≤ 1 GiB. The peak RSS of the first run is printed, since criterion measures only
//! time.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wonopcode_benches::{Nap, PeakRss, registry_with, run_prompt_on};
use wonopcode_contexts::ContextLimits;
use wonopcode_protocol::SharedModel;
use wonopcode_wasm_host::{HostConfig, WasmAgentLoop, guest_paths};

const CHILDREN: usize = 1000;
const CHUNKS: usize = 20;
const PACE: Duration = Duration::from_millis(50);

/// A loopback Anthropic server on a runtime and thread of its own (so it takes nothing from
/// the runtime it serves): every request gets 20 text deltas of about 100 bytes, the k-th
/// at k × 50 ms after the request arrived. Its backlog takes all 1,000 connections at once.
fn serve() -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("server runtime");
    let listener = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.0.1:0".parse().expect("address"))
            .expect("bind");
        socket.listen(4096).expect("listen")
    });
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        runtime.block_on(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(respond(stream));
            }
        });
    });
    url
}

/// Reads one request and streams the paced answer.
async fn respond(mut stream: tokio::net::TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let body_at = loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let arrived = tokio::time::Instant::now();
    let head = String::from_utf8_lossy(&buf[..body_at]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < body_at + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let start = concat!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":0}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    if stream.write_all(start.as_bytes()).await.is_err() {
        return;
    }
    let text = "x".repeat(100);
    for k in 1..=CHUNKS as u32 {
        tokio::time::sleep_until(arrived + PACE * k).await;
        let delta = format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n"
        );
        if stream.write_all(delta.as_bytes()).await.is_err() {
            return;
        }
    }
    let end = concat!(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":500}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let _ = stream.write_all(end.as_bytes()).await;
}

/// The Anthropic client for the server.
fn model(url: &str) -> SharedModel {
    Arc::new(wonopcode_benches::loopback_model(
        wonopcode_providers::Api::Anthropic,
        url,
    ))
}

fn bench_streaming(c: &mut Criterion) {
    let (rt, engine) = wonopcode_benches::runtime_and_engine();
    let config = HostConfig {
        contexts: ContextLimits {
            max_parallel: CHILDREN,
            max_live: CHILDREN + 1,
            ..ContextLimits::default()
        },
        ..HostConfig::default()
    };
    let guest = rt
        .block_on(WasmAgentLoop::from_file(
            engine,
            Path::new(guest_paths::MISBEHAVE),
            config,
        ))
        .expect("guest loads");
    let url = serve();
    let tools = registry_with(Nap::new("noop", 0));
    let tasks: Vec<serde_json::Value> = (0..CHILDREN)
        .map(|_| serde_json::json!({"task": "answer"}))
        .collect();
    let prompt = format!("spawn-all {CHILDREN} {}", serde_json::Value::from(tasks));
    let run = || async {
        let answer = run_prompt_on(&guest, model(&url), &tools, &prompt).await;
        let streamed = answer.matches(&"x".repeat(2000)).count();
        assert_eq!(streamed, CHILDREN, "every child streamed its 2 KB");
    };

    let sampler = PeakRss::start();
    let started = Instant::now();
    rt.block_on(run());
    let (before, peak) = sampler.stop();
    println!(
        "streaming/1000_children_x_2kb: first run {:.2} s against {:.2} s of pacing; resident memory {} MiB before, peak {} MiB",
        started.elapsed().as_secs_f64(),
        (PACE * CHUNKS as u32).as_secs_f64(),
        before / 1024,
        peak / 1024
    );

    let mut group = c.benchmark_group("streaming");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    group.bench_function("1000_children_x_2kb", |b| b.to_async(&rt).iter(run));
    group.finish();
}

criterion_group!(benches, bench_streaming);
criterion_main!(benches);
