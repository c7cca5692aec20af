//! What checkpoints cost: an `edit` call on a 1 MiB file in a workspace of 10,000 files,
//! with the run's checkpoints (the file's content before and after kept, in pieces, and a
//! line appended and fsync'd) and without (`checkpoints/edit_1mib_*`). Goal: ≤ 1 ms added
//! per call. And what 100 such edits leave in the store, printed beside the bytes they
//! changed (the store grows with about the changed bytes, not 100 copies of the file).
//! And what finding a command's changes costs in the same workspace
//! (`checkpoints/command_*`): the first look (every file read and kept), and the bracket
//! around each later command — with nothing changed, and with one file changed. Goal: ≤ 1
//! ms a call. Each timed path is then checked to have kept what it timed (the store logs
//! its failures and returns at once for an untracked workspace, so a broken path would read
//! as a speed-up).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_agent_loop::{Tool, ToolEnv};
use wonopcode_journal::{CheckpointStore, RunDir, Runs, changes};
use wonopcode_protocol::ContextPath;
use wonopcode_protocol::checkpoint::{Checkpoints, SharedCheckpoints};
use wonopcode_tools::EditTool;

/// The length of a line of the large file.
const LINE: usize = 58;

/// A workspace of 10,000 small files and one of 1 MiB.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("workspace");
    for d in 0..100 {
        let sub = dir.path().join(format!("d{d}"));
        std::fs::create_dir(&sub).expect("dir");
        for f in 0..100 {
            std::fs::write(sub.join(format!("f{f}.txt")), format!("small {d} {f}\n"))
                .expect("file");
        }
    }
    // Numbered lines, so each can be named by an edit.
    let mut big: String = (0..(1 << 20) / LINE)
        .map(|i| format!("line {i:06} of the quick brown fox over the lazy dog 0123\n"))
        .collect();
    big.push_str("marker alpha\n");
    std::fs::write(dir.path().join("big.txt"), big).expect("big");
    dir
}

fn env(root: &std::path::Path, checkpoints: Option<SharedCheckpoints>) -> ToolEnv {
    ToolEnv {
        shared: std::sync::Arc::new(wonopcode_agent_loop::RunShared {
            checkpoints,
            ..Default::default()
        }),
        ..ToolEnv::outside_a_run(root.canonicalize().expect("root"))
    }
}

/// One edit, flipping the marker back and forth.
fn flip(rt: &tokio::runtime::Runtime, tool: &EditTool, env: &ToolEnv, n: usize) {
    let (old, new) = if n.is_multiple_of(2) {
        ("marker alpha", "marker omega")
    } else {
        ("marker omega", "marker alpha")
    };
    let args = serde_json::json!({"path": "big.txt", "old_string": old, "new_string": new});
    let out = rt.block_on(tool.run(args, env)).expect("edit");
    assert!(!out.is_error, "{}", out.content);
}

fn bench_checkpoints(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let tool = EditTool::default();
    let mut group = c.benchmark_group("checkpoints");
    group.sample_size(50);
    let plain = workspace();
    let without = env(plain.path(), None);
    let mut n = 0;
    group.bench_function("edit_1mib_without", |b| {
        b.iter(|| {
            flip(&rt, &tool, &without, n);
            n += 1;
        });
    });
    let kept = workspace();
    let runs_dir = tempfile::tempdir().expect("runs");
    let run = Runs::at(runs_dir.path()).create("bench").expect("run");
    let store = Arc::new(CheckpointStore::open(&run).expect("store"));
    let with = env(kept.path(), Some(store.clone()));
    let mut n = 0;
    group.bench_function("edit_1mib_with_checkpoints", |b| {
        b.iter(|| {
            flip(&rt, &tool, &with, n);
            n += 1;
        });
    });
    group.finish();
    let kept = changes_of(&run, "big.txt");
    assert_eq!(kept, n, "{n} edits timed, {kept} changes kept");

    // 100 edits, each of a different line, into a fresh store.
    let fresh = workspace();
    let runs_dir = tempfile::tempdir().expect("runs");
    let run = Runs::at(runs_dir.path()).create("size").expect("run");
    let store = Arc::new(CheckpointStore::open(&run).expect("store"));
    let env = env(fresh.path(), Some(store));
    for edit in 0..100usize {
        // One line in a different place each time.
        let number = edit * 173 + 7;
        let old = format!("line {number:06} of");
        let new = format!("LINE {number:06} of");
        let args = serde_json::json!({"path": "big.txt", "old_string": old, "new_string": new});
        let out = rt.block_on(tool.run(args, &env)).expect("edit");
        assert!(!out.is_error, "{}", out.content);
    }
    let objects = run.path().join("checkpoints/objects");
    let stored: u64 = std::fs::read_dir(&objects)
        .expect("objects")
        .map(|e| e.expect("entry").metadata().expect("meta").len())
        .sum();
    eprintln!(
        "checkpoints/store_after_100_edits_of_1mib: {stored} bytes stored ({:.1} MiB; 100 whole copies: 100 MiB; bytes changed: {})",
        stored as f64 / f64::from(1 << 20),
        100 * 4
    );
}

/// A fresh store for a run in `runs`, and the run.
fn store_in(runs: &std::path::Path, id: &str) -> (CheckpointStore, RunDir) {
    let run = Runs::at(runs).create(id).expect("run");
    (CheckpointStore::open(&run).expect("store"), run)
}

/// How many changes of `path` the run's store kept.
fn changes_of(run: &RunDir, path: &str) -> usize {
    changes(run)
        .expect("changes")
        .iter()
        .filter(|c| c.path == path)
        .count()
}

fn bench_commands(c: &mut Criterion) {
    let mut group = c.benchmark_group("checkpoints");
    group.sample_size(10);
    let ws = workspace();
    let root = ws.path().canonicalize().expect("root");
    let runs = tempfile::tempdir().expect("runs");
    let context = ContextPath::root();
    let mut n = 0;
    group.bench_function("command_first_look_10k_files", |b| {
        b.iter_batched(
            || {
                n += 1;
                store_in(runs.path(), &format!("first{n}")).0
            },
            |store| store.command_starts(&root, &[]),
            criterion::BatchSize::PerIteration,
        );
    });
    group.finish();
    // The first look tracked the workspace: a change after it is kept.
    let (store, run) = store_in(runs.path(), "first-checked");
    store.command_starts(&root, &[]);
    std::fs::write(root.join("d1/f1.txt"), "changed\n").expect("write");
    store.command_ended(&context);
    assert_eq!(
        changes_of(&run, "d1/f1.txt"),
        1,
        "the first look tracked nothing"
    );

    let mut group = c.benchmark_group("checkpoints");
    group.sample_size(100);
    let (store, run) = store_in(runs.path(), "later");
    store.command_starts(&root, &[]);
    store.command_ended(&context);
    group.bench_function("command_unchanged_10k_files", |b| {
        b.iter(|| {
            store.command_starts(&root, &[]);
            store.command_ended(&context);
        });
    });
    let mut n = 0;
    group.bench_function("command_one_file_changed_10k_files", |b| {
        b.iter(|| {
            store.command_starts(&root, &[]);
            n += 1;
            std::fs::write(root.join("d42/f7.txt"), format!("changed {n}\n")).expect("write");
            store.command_ended(&context);
        });
    });
    group.finish();
    let kept = changes_of(&run, "d42/f7.txt");
    assert_eq!(kept, n, "{n} commands changed a file, {kept} changes kept");
    assert_eq!(
        changes(&run).expect("changes").len(),
        n,
        "an unchanged command kept a change"
    );
}

criterion_group!(benches, bench_checkpoints, bench_commands);
criterion_main!(benches);
