//! `wonopcode --list-loops` as a whole process, over 50 distinct modules in a temporary
//! registry directory: warm (metadata cached; goal <= 50 ms) and cold (the first listing:
//! empty metadata and compiled-component caches, so every module is validated and compiled).

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
    let out = Command::new(bin)
        .arg("--list-loops")
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
        MODULES + 2,
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

criterion_group!(benches, bench_list_loops);
criterion_main!(benches);
