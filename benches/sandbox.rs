//! The sandbox's cost on a command: `bash -c true` through the `bash` tool, confined
//! (`workspace-write`: the cgroup, the namespace for `.git`, Landlock, seccomp) and
//! unconfined (`full-access`), in the same process, one after the other. Goal: ≤ 2 ms added
//! per call. Skipped with a message when the kernel cannot confine. And the same confined
//! call in a workspace of 7,000 directories (`bash_true_workspace-write_7000_dirs`): the
//! walk after each command for protected names made below the workspace's top. And in a
//! workspace of 10,000 files in 100 directories (`…_10000_files`), then the same with half
//! its directories packages of a `.venv` hard-linked from a cache outside it and a linked
//! file among the workspace's own (`…_10000_files_linked`: the mounts that keep them
//! read-only), with
//! a `write` tool call in it (`write_tool_10000_files_linked`). Goal: the links add ≤ 1 ms.
//!
//! And a file tool's open: the open by name the file tools made before
//! (`file_open/by_name`), the safe opener they make now (`file_open/beneath`: a descriptor of
//! the root, then `openat2` beneath it), and a whole `read` call of a small file with the
//! hidden list of this machine (`file_open/read_tool`).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use wonopcode_agent_loop::{Tool, ToolEnv};
use wonopcode_sandbox::{Sandbox, SandboxMode, SandboxPolicy, Support};
use wonopcode_tools::BashTool;

fn bench_sandbox(c: &mut Criterion) {
    let support = Support::detect();
    if !support.enforces() {
        eprintln!(
            "sandbox benchmarks skipped: this kernel cannot confine (wonopcode sandbox check)"
        );
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let workspace = tempfile::tempdir().expect("workspace");
    // A `.git` makes the confined call take its slowest path (the read-only mount).
    std::fs::create_dir(workspace.path().join(".git")).expect(".git");
    let env = ToolEnv::outside_a_run(workspace.path().to_path_buf());
    let mut group = c.benchmark_group("sandbox");
    group.sample_size(100);
    for mode in [SandboxMode::FullAccess, SandboxMode::WorkspaceWrite] {
        let sandbox = Sandbox::new(SandboxPolicy::new(mode)).expect("sandbox");
        let tool = BashTool::default().with_sandbox(Some(Arc::new(sandbox)));
        group.bench_function(format!("bash_true_{mode}"), |b| {
            b.iter(|| bash_true(&rt, &tool, &env));
        });
    }
    let big = tempfile::tempdir().expect("workspace");
    for top in 0..70 {
        for below in 0..100 {
            std::fs::create_dir_all(big.path().join(format!("d{top}/e{below}"))).expect("dirs");
        }
    }
    let env = ToolEnv {
        workspace_root: big.path().to_path_buf(),
        ..env
    };
    let sandbox = Sandbox::new(SandboxPolicy::new(SandboxMode::WorkspaceWrite)).expect("sandbox");
    let tool = BashTool::default().with_sandbox(Some(Arc::new(sandbox)));
    group.sample_size(20);
    group.bench_function("bash_true_workspace-write_7000_dirs", |b| {
        b.iter(|| bash_true(&rt, &tool, &env));
    });
    let cache = tempfile::tempdir().expect("cache");
    for linked in [false, true] {
        let files = ten_thousand_files(cache.path(), linked);
        let env = ToolEnv {
            workspace_root: files.path().canonicalize().expect("root"),
            ..env.clone()
        };
        let sandbox =
            Sandbox::new(SandboxPolicy::new(SandboxMode::WorkspaceWrite)).expect("sandbox");
        let tool = BashTool::default().with_sandbox(Some(Arc::new(sandbox)));
        let name = if linked { "_linked" } else { "" };
        group.bench_function(
            format!("bash_true_workspace-write_10000_files{name}"),
            |b| {
                b.iter(|| bash_true(&rt, &tool, &env));
            },
        );
        if linked {
            let write = wonopcode_tools::builtin_tools(wonopcode_tools::BuiltinOptions::default())
                .into_iter()
                .find(|t| t.spec().name == "write")
                .expect("write");
            group.bench_function("write_tool_10000_files_linked", |b| {
                b.iter(|| {
                    let out = rt
                        .block_on(write.run(
                            serde_json::json!({"path": "own/f0.txt", "content": "new\n"}),
                            &env,
                        ))
                        .expect("write");
                    assert!(!out.is_error, "{}", out.content);
                });
            });
        }
    }
    group.finish();
}

/// A workspace of 10,000 files in 100 directories, as a uv project lays them out: with
/// `linked`, the 50 package directories of `.venv/lib/site-packages` are hard links of files
/// in `cache` (beside two files of uv's own), and one file of `own` too.
fn ten_thousand_files(cache: &std::path::Path, linked: bool) -> tempfile::TempDir {
    let files = tempfile::tempdir().expect("workspace");
    let site = files.path().join(".venv/lib/site-packages");
    std::fs::create_dir_all(&site).expect("site-packages");
    std::fs::write(site.join("RECORD"), "own\n").expect("record");
    std::fs::write(site.join("own.pth"), "own\n").expect("pth");
    for dir in 0..100 {
        let (at, name) = match dir {
            0..50 => (site.join(format!("pkg{dir}")), format!("pkg{dir}")),
            99 => (files.path().join("own"), "own".to_owned()),
            _ => (files.path().join(format!("own{dir}")), format!("own{dir}")),
        };
        std::fs::create_dir_all(&at).expect("dir");
        for file in 0..100 {
            let path = at.join(format!("f{file}.txt"));
            if linked && (dir < 50 || (dir == 99 && file == 1)) {
                let kept = cache.join(format!("{name}-{file}"));
                std::fs::write(&kept, "cached\n").expect("cache file");
                std::fs::hard_link(&kept, &path).expect("link");
            } else {
                std::fs::write(&path, "own\n").expect("file");
            }
        }
    }
    files
}

/// One `bash -c true` call through `tool`.
fn bash_true(rt: &tokio::runtime::Runtime, tool: &BashTool, env: &ToolEnv) {
    let out = rt
        .block_on(tool.run(serde_json::json!({"command": "true"}), env))
        .expect("bash");
    assert!(!out.is_error, "{}", out.content);
}

fn bench_file_open(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("workspace");
    let root = dir.path().canonicalize().expect("root");
    std::fs::create_dir_all(root.join("src/module")).expect("dirs");
    let file = root.join("src/module/lib.rs");
    std::fs::write(&file, "fn main() {}\n".repeat(80)).expect("file");
    let mut group = c.benchmark_group("file_open");
    group.bench_function("by_name", |b| {
        b.iter(|| {
            use std::os::unix::fs::OpenOptionsExt;
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&file)
                .expect("open");
            assert!(opened.metadata().expect("metadata").is_file());
        });
    });
    group.bench_function("beneath", |b| {
        b.iter(|| {
            let opened =
                wonopcode_os::beneath::open(&root, &file, wonopcode_os::beneath::Access::Read)
                    .expect("open");
            assert!(opened.metadata().expect("metadata").is_file());
        });
    });
    let hidden: Vec<std::path::PathBuf> =
        Sandbox::new(SandboxPolicy::new(SandboxMode::WorkspaceWrite))
            .map(|s| s.hidden_paths())
            .unwrap_or_default();
    let env = ToolEnv {
        shared: std::sync::Arc::new(wonopcode_agent_loop::RunShared {
            hidden_paths: hidden.into(),
            ..Default::default()
        }),
        ..ToolEnv::outside_a_run(root.clone())
    };
    let read = wonopcode_tools::builtin_tools(wonopcode_tools::BuiltinOptions::default())
        .into_iter()
        .find(|t| t.spec().name == "read")
        .expect("read");
    group.bench_function("read_tool", |b| {
        b.iter(|| {
            let out = rt
                .block_on(read.run(serde_json::json!({"path": "src/module/lib.rs"}), &env))
                .expect("read");
            assert!(out.content.contains("fn main"), "{}", out.content);
        });
    });
    group.finish();
}

criterion_group!(benches, bench_sandbox, bench_file_open);
criterion_main!(benches);
