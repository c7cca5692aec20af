//! The terminal as a person meets it, whole-process on a pseudo-terminal: from launch to
//! the REPL's prompt (warm compile cache; goal <= 100 ms), from Enter to the first frame
//! of the status line (goal <= 50 ms), and from Enter to the answer's first code block
//! drawn highlighted (its syntaxes loaded then; goal <= 100 ms).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_benches::pty::Terminal;
use wonopcode_benches::release_bin;

/// What quits the REPL at its prompt.
const CTRL_D: &[u8] = b"\x04";

/// A transcript whose one response answers `text`, in `dir` as `name`.
fn transcript(dir: &Path, name: &str, text: &str) -> PathBuf {
    let header = serde_json::json!({"type": "header", "format": "wonopcode-transcript",
        "version": 1, "model": {"id": "m", "provider": "p", "context_window": 100000,
        "max_output": 1000}});
    let turn = serde_json::json!({"type": "turn", "context": "0", "turn": 0, "chunks": [
        {"type": "text_delta", "text": text}, {"type": "done", "stop_reason": "end_turn"}]});
    let path = dir.join(name);
    std::fs::write(&path, format!("{header}\n{turn}\n")).expect("transcript");
    path
}

/// The REPL on the embedded WebAssembly loop, its caches in `home`, without colours; the
/// transcript's chunks streamed 200 ms apart (the status line is then seen).
fn start(bin: &Path, home: &Path, transcript: &Path) -> Terminal {
    start_with(bin, home, transcript, &[("NO_COLOR", "1")], "200")
}

/// The same with these variables, each chunk `pace` ms after the one before.
fn start_with(
    bin: &Path,
    home: &Path,
    transcript: &Path,
    env: &[(&str, &str)],
    pace: &str,
) -> Terminal {
    let mut cmd = Command::new(bin);
    cmd.env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .args(["--loop-type", "wasm", "--replay-pace", pace, "--replay"])
        .arg(transcript)
        .arg("-C")
        .arg(home);
    Terminal::start(cmd)
}

fn bench_terminal(c: &mut Criterion) {
    let bin = release_bin();
    let home = tempfile::tempdir().expect("temp dir");
    let t = transcript(home.path(), "t.jsonl", "Hello.");
    let code = transcript(
        home.path(),
        "code.jsonl",
        "Here:\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n",
    );
    // Warm the compile cache.
    let mut warm = start(&bin, home.path(), &t);
    warm.until(">");
    warm.quit(CTRL_D);
    let mut group = c.benchmark_group("terminal");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("launch_to_prompt", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                let mut terminal = start(&bin, home.path(), &t);
                terminal.until(">");
                total += started.elapsed();
                terminal.quit(CTRL_D);
            }
            total
        });
    });
    group.bench_function("enter_to_status_line", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut terminal = start(&bin, home.path(), &t);
                terminal.until(">");
                terminal.type_keys(b"Say hello.");
                terminal.until("Say hello.");
                let started = Instant::now();
                terminal.type_keys(b"\r");
                terminal.until("Working (");
                total += started.elapsed();
                terminal.until("Hello.");
                terminal.until(">");
                terminal.quit(CTRL_D);
            }
            total
        });
    });
    group.bench_function("enter_to_highlighted_code", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let colour = [("CLICOLOR_FORCE", "1")];
                let mut terminal = start_with(&bin, home.path(), &code, &colour, "0");
                terminal.until(">");
                terminal.type_keys(b"Show it.");
                terminal.until("Show it.");
                let started = Instant::now();
                terminal.type_keys(b"\r");
                // A 24-bit colour: the code line, highlighted.
                terminal.until("\x1b[38;2;");
                total += started.elapsed();
                terminal.until(">");
                terminal.quit(CTRL_D);
            }
            total
        });
    });
    group.finish();
}

criterion_group!(benches, bench_terminal);
criterion_main!(benches);
