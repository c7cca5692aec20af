//! A command hook's cost on a tool call: `CommandHooks::pre_tool_use` with one `PreToolUse`
//! hook (`exit 0`) against a bare fork and exec of the same command (`sh -c 'exit 0'` with
//! its stdin, no sandbox), unconfined and confined by the `workspace-write` sandbox the run
//! gives hooks. What a hook adds beyond starting its process (the JSON, the matching, the
//! `hook` item, the confinement) is the difference. The sandboxed case is skipped with a
//! message where the kernel cannot confine.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::process::Stdio;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::io::AsyncWriteExt;
use wonopcode_agent_loop::ContextPath;
use wonopcode_agent_loop::event::{Emitter, Event, EventSink};
use wonopcode_agent_loop::hook::{HookSite, Hooks};
use wonopcode_agent_loop::tool_round::Call;
use wonopcode_hooks::{CommandHooks, HookEnv, HookTable};
use wonopcode_sandbox::{Sandbox, SandboxMode, SandboxPolicy, Support};

/// Events go nowhere: the benchmark measures the hook, not a renderer.
struct Nowhere;

impl EventSink for Nowhere {
    fn emit(&self, _event: Event) {}
}

fn bench_hooks(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let workspace = tempfile::tempdir().expect("workspace");
    let table = HookTable::parse(
        &serde_json::json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 0"}]}]}),
        "bench",
    )
    .expect("table");
    let call = Call {
        id: "c1".to_owned(),
        name: "bash".to_owned(),
        arguments: r#"{"command": "ls"}"#.to_owned(),
    };
    let events = Emitter::new(Arc::new(Nowhere), ContextPath::root());
    let context = ContextPath::root();
    let site = HookSite {
        context: &context,
        events: &events,
        session_id: "s",
        cwd: workspace.path(),
    };
    let mut group = c.benchmark_group("hooks");
    group.sample_size(100);
    group.bench_function("bare_fork_exec", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut child = tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg("exit 0")
                    .current_dir(workspace.path())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("sh");
                if let Some(mut stdin) = child.stdin.take() {
                    let _ = stdin.write_all(b"{}").await;
                }
                let out = child.wait_with_output().await.expect("wait");
                assert!(out.status.success());
            })
        });
    });
    let support = Support::detect();
    let confining = support.landlock() && support.seccomp;
    if !confining {
        eprintln!("hooks/pre_tool_use_sandboxed skipped: this kernel cannot confine");
    }
    for (name, sandbox) in [
        ("pre_tool_use_unconfined", None),
        ("pre_tool_use_sandboxed", Some(SandboxMode::WorkspaceWrite)),
    ] {
        if sandbox.is_some() && !confining {
            continue;
        }
        let env = HookEnv {
            workspace: workspace.path().to_path_buf(),
            env: None,
            sandbox: sandbox
                .map(|mode| Arc::new(Sandbox::new(SandboxPolicy::new(mode)).expect("sandbox"))),
        };
        let hooks = CommandHooks::new(table.clone(), env);
        group.bench_function(name, |b| {
            b.iter(|| {
                let said = rt.block_on(hooks.pre_tool_use(&site, &call));
                assert_eq!(said.decision, None);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_hooks);
criterion_main!(benches);
