//! The sandbox's cost on a command: `bash -c true` through the `bash` tool, confined
//! (`workspace-write`: the cgroup, the namespace for `.git`, Landlock, seccomp) and
//! unconfined (`full-access`), in the same process, one after the other. Goal: ≤ 2 ms added
//! per call. Skipped with a message when the kernel cannot confine.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::{Tool, ToolEnv};
use wonopcode_sandbox::{Sandbox, SandboxMode, SandboxPolicy, Support};
use wonopcode_tools::BashTool;

fn bench_sandbox(c: &mut Criterion) {
    let support = Support::detect();
    if !(support.landlock() && support.seccomp) {
        eprintln!(
            "sandbox benchmarks skipped: this kernel cannot confine (wonopcode sandbox check)"
        );
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let workspace = tempfile::tempdir().expect("workspace");
    // A `.git` makes the confined call take its slowest path (the read-only mount).
    std::fs::create_dir(workspace.path().join(".git")).expect(".git");
    let env = ToolEnv {
        workspace_root: workspace.path().to_path_buf(),
        cancel: CancellationToken::new(),
        context: Default::default(),
        gate: None,
        hidden: std::sync::Arc::from([]),
        run: None,
    };
    let mut group = c.benchmark_group("sandbox");
    group.sample_size(100);
    for mode in [SandboxMode::FullAccess, SandboxMode::WorkspaceWrite] {
        let sandbox = Sandbox::new(SandboxPolicy::new(mode)).expect("sandbox");
        let tool = BashTool::default().with_sandbox(Some(Arc::new(sandbox)));
        group.bench_function(format!("bash_true_{mode}"), |b| {
            b.iter(|| {
                let out = rt
                    .block_on(tool.run(serde_json::json!({"command": "true"}), &env))
                    .expect("bash");
                assert!(!out.is_error, "{}", out.content);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_sandbox);
criterion_main!(benches);
