//! An editor's prompt to the first words it shows, whole-process on the release binary:
//! `wonopcode acp` with a session already open, from writing `session/prompt` to reading
//! the first `agent_message_chunk`; beside it the same answer in the terminal's JSON Lines,
//! from launching `wonopcode --json` with the prompt to its first `item.delta` (the terminal
//! has no session to keep open, so its figure includes start-up). Both answer from the same
//! recorded transcript.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_benches::release_bin;

/// A transcript of one answer, as many times as the benchmark prompts.
fn transcript(dir: &Path, turns: usize) -> PathBuf {
    let header = serde_json::json!({"type": "header", "format": "wonopcode-transcript",
        "version": 1, "model": {"id": "m", "provider": "p", "context_window": 100000,
        "max_output": 1000}});
    let mut lines = vec![header.to_string()];
    for turn in 0..turns {
        lines.push(
            serde_json::json!({"type": "turn", "context": "0", "turn": turn, "chunks": [
                {"type": "text_delta", "text": "Hello."},
                {"type": "done", "stop_reason": "end_turn"}]})
            .to_string(),
        );
    }
    let path = dir.join("t.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("transcript");
    path
}

/// The binary with its config, caches and journals in `home`.
fn wonopcode(bin: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("WONOPCODE_RUNS_DIR", home.join("runs"));
    cmd
}

/// `wonopcode acp` with one session open.
struct Editor {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    session: String,
    next_id: u64,
}

impl Editor {
    fn start(bin: &Path, home: &Path, transcript: &Path) -> Self {
        let mut child = wonopcode(bin, home)
            .args(["acp", "--replay"])
            .arg(transcript)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut editor = Self {
            child,
            input,
            output,
            session: String::new(),
            next_id: 0,
        };
        editor.request(
            "initialize",
            serde_json::json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        editor.until("\"result\"");
        let ws = home.join("ws");
        std::fs::create_dir_all(&ws).expect("workspace");
        editor.request(
            "session/new",
            serde_json::json!({"cwd": ws, "mcpServers": []}),
        );
        let line = editor.until("sessionId");
        let response: serde_json::Value = serde_json::from_str(&line).expect("json");
        editor.session = response["result"]["sessionId"]
            .as_str()
            .expect("session id")
            .to_owned();
        editor
    }

    fn request(&mut self, method: &str, params: serde_json::Value) {
        self.next_id += 1;
        let message = serde_json::json!({"jsonrpc": "2.0", "id": self.next_id,
            "method": method, "params": params});
        writeln!(self.input, "{message}").expect("write");
        self.input.flush().expect("flush");
    }

    /// Reads lines until one holds `text`; that line.
    fn until(&mut self, text: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.output.read_line(&mut line).expect("read");
            assert!(n > 0, "wonopcode acp ended before `{text}`");
            if line.contains(text) {
                return line;
            }
        }
    }

    /// One prompt: the time to its first chunk; then the rest of its turn is read.
    fn prompt(&mut self) -> Duration {
        let session = self.session.clone();
        let started = Instant::now();
        self.request(
            "session/prompt",
            serde_json::json!({"sessionId": session,
                "prompt": [{"type": "text", "text": "Say hello."}]}),
        );
        self.until("agent_message_chunk");
        let first = started.elapsed();
        self.until("stopReason");
        first
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `wonopcode --json` on one prompt: the time from launch to its first `item.delta`.
fn terminal(bin: &Path, home: &Path, transcript: &Path) -> Duration {
    let ws = home.join("ws");
    std::fs::create_dir_all(&ws).expect("workspace");
    let started = Instant::now();
    let mut child = wonopcode(bin, home)
        .args(["--json", "--replay"])
        .arg(transcript)
        .arg("-C")
        .arg(&ws)
        .arg("Say hello.")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let first = loop {
        line.clear();
        let n = output.read_line(&mut line).expect("read");
        assert!(n > 0, "wonopcode ended before its first delta");
        if line.contains("\"item.delta\"") {
            break started.elapsed();
        }
    };
    let _ = child.wait();
    first
}

fn benches(c: &mut Criterion) {
    let bin = release_bin();
    let home = tempfile::tempdir().expect("home");
    let mut group = c.benchmark_group("acp");
    group.sample_size(30);
    group.bench_function("prompt_to_first_chunk", |b| {
        b.iter_custom(|iters| {
            let t = transcript(home.path(), iters as usize);
            let mut editor = Editor::start(&bin, home.path(), &t);
            (0..iters).map(|_| editor.prompt()).sum()
        });
    });
    group.bench_function("terminal_launch_to_first_delta", |b| {
        let t = transcript(home.path(), 1);
        b.iter_custom(|iters| (0..iters).map(|_| terminal(&bin, home.path(), &t)).sum());
    });
    group.finish();
}

criterion_group!(acp, benches);
criterion_main!(acp);
