//! A hook's cost on a tool call. A command hook: `ConfiguredHooks::pre_tool_use` with one
//! `PreToolUse` hook (`exit 0`) against a bare fork and exec of the same command (`sh -c
//! 'exit 0'` with its stdin, no sandbox), unconfined and confined by the `workspace-write`
//! sandbox the run gives hooks; what a hook adds beyond starting its process (the JSON, the
//! matching, the `hook` item, the confinement) is the difference. The sandboxed case is
//! skipped with a message where the kernel cannot confine. A component hook: the same call
//! with the sample policy hook (`guests/policy-hook`) warm, against no hook at all.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::process::Stdio;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::io::AsyncWriteExt;
use wonopcode_agent_loop::hook::{HookSite, Hooks};
use wonopcode_hooks::{ConfiguredHooks, HookEnv, HookTable};
use wonopcode_protocol::ContextPath;
use wonopcode_protocol::call::Call;
use wonopcode_protocol::event::{Emitter, Event, EventSink};
use wonopcode_sandbox::{Sandbox, SandboxMode, SandboxPolicy, Support};
use wonopcode_wasm_host::guest_paths::POLICY_HOOK;

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
    let site = HookSite::new(&events, "s", workspace.path(), "standard");
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
    let confining = support.enforces();
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
        let hooks = ConfiguredHooks::new(table.clone(), env);
        group.bench_function(name, |b| {
            b.iter(|| {
                let said = rt.block_on(hooks.pre_tool_use(&site, &call));
                assert_eq!(said.decision, None);
            })
        });
    }
    bench_component(&mut group, &rt, &site, &call);
    group.finish();
}

/// One warm component hook on `PreToolUse` (the policy hook, passing the call), against a
/// table with no hook for the call: the difference is the component's cost per call.
fn bench_component(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    site: &HookSite<'_>,
    call: &Call,
) {
    let engine = wonopcode_wasm_host::WasmEngine::new(Default::default()).expect("engine");
    let policy = serde_json::json!({"type": "component", "component": POLICY_HOOK,
        "settings": {"deny": ["rm -rf", "git push --force"]}});
    for (name, matcher) in [
        ("pre_tool_use_no_hook", "Write"),
        ("pre_tool_use_component", "Bash"),
    ] {
        let value = serde_json::json!({"PreToolUse": [{"matcher": matcher, "hooks": [policy]}]});
        let mut table = HookTable::parse(&value, "bench").expect("table");
        table
            .load_components(&engine, site.cwd, &|_| None)
            .expect("policy hook");
        let hooks = ConfiguredHooks::new(table, HookEnv::default());
        // The first call starts the instance; the benchmark measures warm calls.
        rt.block_on(hooks.pre_tool_use(site, call));
        group.bench_function(name, |b| {
            b.iter(|| {
                let said = rt.block_on(hooks.pre_tool_use(site, call));
                assert_eq!(said.decision, None);
            })
        });
    }
}

criterion_group!(benches, bench_hooks);
criterion_main!(benches);
