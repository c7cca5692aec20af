//! `wonopcode batch`, whole-process: 1,000 tasks of a trivial replayed run (one answer, an
//! empty workspace) through `batch --concurrency 64`, from a fresh results directory.
//! Reported: wall time (criterion's figure; tasks per second = 1,000 / it) and, printed
//! once, the process's peak RSS. Every run writes a results directory of its own (see
//! [`batch`]). Goal: >= 200 tasks/s and <= 1 GiB on 2 cores.
//! - `batch/1000_tasks_x64`: as a user runs it, each task's journal kept;
//! - `batch/1000_tasks_x64_no_journal`: with `--no-journal`.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_benches::{release_bin, wait_with_peak_rss};

const TASKS: usize = 1000;

/// The tasks file and the transcript every task replays.
fn tasks(dir: &Path) {
    let transcript = dir.join("answer.jsonl");
    std::fs::write(
        &transcript,
        concat!(
            r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":100000,"max_output":1000}}"#,
            "\n",
            r#"{"type":"turn","context":"0","turn":0,"chunks":[{"type":"text_delta","text":"Done."},{"type":"usage","usage":{"input_tokens":100,"output_tokens":5}},{"type":"done","stop_reason":"end_turn"}]}"#,
            "\n"
        ),
    )
    .expect("transcript");
    let lines: String = (0..TASKS)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({"id": format!("t{i:04}"), "prompt": format!("Task {i}"), "replay": "answer.jsonl"})
            )
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), lines).expect("tasks");
}

/// One batch into a results directory of its own: its wall time and peak RSS in MiB.
///
/// Each run writes a new directory, and none is removed until the benchmark ends. A batch
/// leaves about 10,000 files; removed just before the next run, they would make its file
/// creation slow (ext4 scans past recently freed inodes when it allocates one), so the
/// benchmark would time its own clean-up rather than the batch a user runs into a fresh
/// directory.
// The child is waited for with `wait4` (for its own rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn batch(bin: &Path, dir: &Path, extra: &[&str]) -> (Duration, f64) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let out = dir.join(format!("out-{}", RUNS.fetch_add(1, Ordering::Relaxed)));
    let started = Instant::now();
    let mut child = Command::new(bin)
        .arg("batch")
        .arg(dir.join("tasks.jsonl"))
        .arg("--out")
        .arg(&out)
        .args(["--concurrency", "64", "--json", "--no-cache"])
        .args(extra)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("batch runs");
    let mut summary = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut summary)
        .expect("stdout");
    let (code, peak) = wait_with_peak_rss(child.id());
    let took = started.elapsed();
    assert_eq!(code, 0, "{}", summary.lines().last().unwrap_or(""));
    assert!(
        summary.contains(&format!("\"complete\":{TASKS}")),
        "{}",
        summary.lines().last().unwrap_or("")
    );
    (took, peak)
}

fn bench_batch(c: &mut Criterion) {
    let bin = release_bin();
    let dir = tempfile::tempdir().expect("temp dir");
    tasks(dir.path());
    let mut group = c.benchmark_group("batch");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for (name, extra) in [
        ("1000_tasks_x64", &[][..]),
        ("1000_tasks_x64_no_journal", &["--no-journal"][..]),
    ] {
        let mut peak = 0.0_f64;
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let (took, rss) = batch(&bin, dir.path(), extra);
                        peak = peak.max(rss);
                        took
                    })
                    .sum()
            })
        });
        println!("batch/{name}: peak RSS {peak:.0} MiB");
    }
    group.finish();
}

criterion_group!(benches, bench_batch);
criterion_main!(benches);
