//! `wonopcode --list-loops` as a whole process, over 50 distinct modules in a temporary
//! registry directory: warm (metadata cached; goal <= 50 ms) and cold (the first listing:
//! empty metadata and compiled-component caches, so every module is validated and compiled);
//! and over 200 Markdown agents, warm (goal <= 50 ms; agent files are read every time).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_benches::release_bin;
use wonopcode_wasm_host::guest_paths;

const MODULES: usize = 50;

/// `bytes` with a custom section appended, so each copy has its own content hash.
fn distinct(bytes: &[u8], i: usize) -> Vec<u8> {
    let name = b"wonopcode-bench";
    let payload = format!("copy {i}");
    let size = 1 + name.len() + payload.len();
    let mut out = bytes.to_vec();
    out.push(0); // custom section
    out.push(u8::try_from(size).expect("small section"));
    out.push(u8::try_from(name.len()).expect("short name"));
    out.extend_from_slice(name);
    out.extend_from_slice(payload.as_bytes());
    out
}

fn list(bin: &Path, home: &Path, cache: &Path) {
    list_counting(bin, home, cache, MODULES + 2);
}

fn list_counting(bin: &Path, home: &Path, cache: &Path, expected: usize) {
    let out = Command::new(bin)
        .arg("--list-loops")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", cache)
        .env_remove("WONOPCODE_AGENT_LOOPS_PATH")
        .output()
        .expect("running wonopcode");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        listed.lines().filter(|l| l.contains(" ok")).count(),
        expected,
        "{listed}"
    );
}

fn bench_list_loops(c: &mut Criterion) {
    let bin = release_bin();
    let home = tempfile::tempdir().expect("temp dir");
    let loops = home.path().join("config/wonopcode/agent-loops");
    std::fs::create_dir_all(&loops).expect("loops dir");
    let hello = std::fs::read(guest_paths::GUEST_HELLO).expect("example guest");
    let mut registry = String::from("modules:\n");
    for i in 0..MODULES {
        let file = format!("loop-{i:02}.wasm");
        // Half are registry.yaml entries (files elsewhere), half loose files in the directory.
        if i % 2 == 0 {
            let path = home.path().join(&file);
            std::fs::write(&path, distinct(&hello, i)).expect("module");
            registry.push_str(&format!("  reg-{i:02}:\n    path: {}\n", path.display()));
        } else {
            std::fs::write(loops.join(&file), distinct(&hello, i)).expect("module");
        }
    }
    std::fs::write(loops.join("registry.yaml"), registry).expect("registry");

    let mut group = c.benchmark_group("registry");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    let warm_cache = home.path().join("warm-cache");
    list(&bin, home.path(), &warm_cache);
    group.bench_function("list_loops_50_warm", |b| {
        b.iter(|| list(&bin, home.path(), &warm_cache));
    });
    group.bench_function("list_loops_50_cold", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let cold = tempfile::tempdir().expect("cold cache");
                let started = Instant::now();
                list(&bin, home.path(), cold.path());
                total += started.elapsed();
            }
            total
        });
    });
    group.finish();
}

const AGENTS: usize = 200;

/// An agent file in the shape Claude Code's documentation gives.
fn agent_file(i: usize) -> String {
    format!(
        "---\nname: agent-{i:03}\ndescription: Reviews code for the {i}th team. Use after every change.\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\ncolor: blue\n---\n\nYou are reviewer {i}. Read the change, list each problem with its file and line,\nmost serious first, and say what test would have caught it.\n"
    )
}

fn bench_list_agents(c: &mut Criterion) {
    let bin = release_bin();
    let home = tempfile::tempdir().expect("temp dir");
    let agents = home.path().join("config/wonopcode/agents");
    std::fs::create_dir_all(&agents).expect("agents dir");
    for i in 0..AGENTS {
        std::fs::write(agents.join(format!("agent-{i:03}.md")), agent_file(i)).expect("agent");
    }
    let cache = home.path().join("cache");
    list_counting(&bin, home.path(), &cache, AGENTS + 2);
    let mut group = c.benchmark_group("registry");
    group.sample_size(20);
    group.bench_function("list_agents_200_warm", |b| {
        b.iter(|| list_counting(&bin, home.path(), &cache, AGENTS + 2));
    });
    group.finish();
}

criterion_group!(benches, bench_list_loops, bench_list_agents);
criterion_main!(benches);
