//! Resuming an interrupted run (`wonopcode resume`), whole-process: a run whose root guest
//! spawned 100 children that each asked the model once (all finished, journaled), stopped
//! before its root's next prompt was answered; the time from starting `wonopcode resume` to
//! the first model request it makes, which is the root's new one (the 100 children's
//! responses come from the journal). Goal: <= 200 ms. Beside it, a fresh run of the same
//! guest to its first request: what starting the process and the guest costs without the
//! journal's 100 contexts.
//!
//! The model is a loopback server speaking Anthropic Messages that answers every request at
//! once and notes when each arrived.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_wasm_host::guest_paths;

/// One answer: "ok", and done.
const ANSWER: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":0}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

/// A loopback model server; each request's arrival is sent on the receiver.
fn serve() -> (String, Receiver<Instant>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base_url = format!("http://{}", listener.local_addr().expect("addr"));
    let (arrived, arrivals) = channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let arrived = arrived.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 65536];
                loop {
                    let Ok(n) = stream.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&seen);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length: usize = text[..end]
                            .to_ascii_lowercase()
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        if seen.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let _ = arrived.send(Instant::now());
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{ANSWER}",
                    ANSWER.len()
                );
            });
        }
    });
    (base_url, arrivals)
}

/// `wonopcode` against the server, journaled under `runs`.
fn wonopcode(bin: &Path, base_url: &str, runs: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env("ANTHROPIC_API_KEY", "bench")
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("WONOPCODE_RUNS_DIR", runs)
        .env("XDG_CONFIG_HOME", "/nonexistent-wonopcode-config")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// The run to resume: 100 finished children, then a second prompt not yet answered.
fn interrupted_run(bin: &Path, base_url: &str, arrivals: &Receiver<Instant>, dir: &Path) -> String {
    let runs = dir.join("runs");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("workspace");
    let children: Vec<serde_json::Value> = (0..100)
        .map(|_| serde_json::json!({"task": "answer"}))
        .collect();
    let status = wonopcode(bin, base_url, &runs)
        .args(["--agent-loop", guest_paths::MISBEHAVE])
        .args([
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
            "--yes",
        ])
        .arg("-C")
        .arg(&ws)
        .arg(format!(
            "spawn-all 100 {}",
            serde_json::Value::from(children)
        ))
        .status()
        .expect("the first run");
    assert!(status.success(), "the first run failed");
    assert_eq!(arrivals.try_iter().count(), 100, "one request per child");
    let run: PathBuf = std::fs::read_dir(&runs)
        .expect("runs")
        .next()
        .expect("a run")
        .expect("entry")
        .path();
    // As a REPL run killed while its second prompt's request was in flight leaves it.
    let meta_path = run.join("run.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).expect("run.json"))
            .expect("json");
    meta["status"] = "interrupted".into();
    meta["prompts"]
        .as_array_mut()
        .expect("prompts")
        .push("answer".into());
    std::fs::write(&meta_path, meta.to_string()).expect("run.json");
    run.file_name().expect("id").to_string_lossy().into_owned()
}

/// Starts `cmd` and times it to the server's next request; the process is then let finish,
/// having asked the model nothing else (a resume that asked again for a journaled response
/// would be timed to that one instead).
fn to_first_request(mut cmd: Command, arrivals: &Receiver<Instant>) -> Duration {
    let started = Instant::now();
    let mut child = cmd.spawn().expect("wonopcode");
    let arrived = arrivals
        .recv_timeout(Duration::from_secs(60))
        .expect("a model request");
    let status = child.wait().expect("wonopcode ends");
    assert!(status.success(), "wonopcode failed");
    assert_eq!(arrivals.try_iter().count(), 0, "one model request only");
    arrived - started
}

fn bench_resume(c: &mut Criterion) {
    let bin = wonopcode_benches::release_bin();
    let (base_url, arrivals) = serve();
    let dir = tempfile::tempdir().expect("dir");
    let id = interrupted_run(&bin, &base_url, &arrivals, dir.path());
    let runs = dir.path().join("runs");
    let mut group = c.benchmark_group("resume");
    group.sample_size(10);
    group.bench_function("100_finished_contexts_to_first_request", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    let mut cmd = wonopcode(&bin, &base_url, &runs);
                    cmd.args(["resume", &id]);
                    to_first_request(cmd, &arrivals)
                })
                .sum()
        })
    });
    let ws = dir.path().join("ws");
    group.bench_function("fresh_run_to_first_request", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    let mut cmd = wonopcode(&bin, &base_url, &runs);
                    cmd.args(["--agent-loop", guest_paths::MISBEHAVE])
                        .args(["--provider", "anthropic", "--model", "claude-sonnet-4-5"])
                        .arg("-C")
                        .arg(&ws)
                        .arg("answer");
                    to_first_request(cmd, &arrivals)
                })
                .sum()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_resume);
criterion_main!(benches);
