//! Component hooks built from `guests/`: the sample policy hook refuses and requires what
//! its settings say, keeping state per context across calls; a hook that traps, spins,
//! allocates 1 GiB or refuses its settings is contained, reported, and its failure mode
//! applies; it sees no variables or files but those its entry grants.

// Test set-up: a failure is a bug to see at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use wonopcode_agent_loop::hook::{HookDecision, HookSite, Hooks, TurnEvent};
use wonopcode_hooks::{ConfiguredHooks, HookEnv, HookTable};
use wonopcode_protocol::call::Call;
use wonopcode_protocol::event::{Event, EventKind, ItemDetails};
use wonopcode_protocol::{ContextPath, Emitter};
use wonopcode_wasm_host::guest_paths::{MISBEHAVE_HOOK, POLICY_HOOK};
use wonopcode_wasm_host::{EngineOptions, WasmEngine};

fn engine() -> Arc<WasmEngine> {
    WasmEngine::new(EngineOptions {
        cache_dir: None,
        ..EngineOptions::default()
    })
    .unwrap()
}

/// The hooks of `table` (a `hooks` value) with their components loaded, run in `workspace`.
fn hooks(table: Value, workspace: &Path, vars: &[(&str, &str)]) -> ConfiguredHooks {
    let mut table = HookTable::parse(&table, "settings.json").unwrap();
    let env = |name: &str| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    };
    table.load_components(&engine(), workspace, &env).unwrap();
    let env = HookEnv {
        workspace: workspace.to_path_buf(),
        ..HookEnv::default()
    };
    ConfiguredHooks::new(table, env)
}

fn bash(id: &str, command: &str) -> Call {
    Call {
        id: id.to_owned(),
        name: "bash".to_owned(),
        arguments: json!({ "command": command }).to_string(),
    }
}

/// An emitter for `context` and the `hook` items it reports.
fn site_events(context: ContextPath) -> (Emitter, UnboundedReceiver<Event>) {
    let (tx, rx) = unbounded_channel();
    (Emitter::new(Arc::new(tx), context), rx)
}

/// The `(decision, reason)` of each hook item reported so far.
fn reported(rx: &mut UnboundedReceiver<Event>) -> Vec<(String, Option<String>)> {
    let mut items = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let EventKind::ItemCompleted { item } = event.kind
            && let ItemDetails::Hook(hook) = item.details
        {
            let decision = serde_json::to_value(hook.decision).unwrap();
            items.push((decision.as_str().unwrap().to_owned(), hook.reason));
        }
    }
    items
}

#[tokio::test]
async fn the_policy_hook_refuses_listed_commands_and_wants_tests_after_a_change() {
    let ws = tempfile::tempdir().unwrap();
    let hook = json!({"type": "component", "component": POLICY_HOOK,
        "settings": {"deny": ["rm -rf", "git push --force"], "tests": "make test"}});
    let hooks = hooks(
        json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [hook]}],
            "PostToolUse": [{"hooks": [hook]}],
            "Stop": [{"hooks": [hook]}],
            "SubagentStop": [{"hooks": [hook]}]
        }),
        ws.path(),
        &[],
    );
    let (root_events, mut rx) = site_events(ContextPath::root());
    let root = HookSite::new(&root_events, "s1", ws.path(), "standard");
    let child_path = ContextPath::root().child(1);
    let (child_events, _child_rx) = site_events(child_path);
    let child = HookSite::new(&child_events, "s1", ws.path(), "standard");

    let refused = hooks.pre_tool_use(&root, &bash("c1", "rm -rf build")).await;
    match refused.decision {
        Some(HookDecision::Deny(why)) => assert!(why.contains("`rm -rf`"), "{why}"),
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(reported(&mut rx)[0].0, "deny");
    let passed = hooks.pre_tool_use(&root, &bash("c2", "ls")).await;
    assert_eq!(passed.decision, None);

    // The child writes; it may not stop until `make test` passed in it. The root may.
    let write = Call {
        id: "w1".to_owned(),
        name: "write".to_owned(),
        arguments: json!({"path": "a.txt", "content": "x"}).to_string(),
    };
    hooks
        .post_tool_use(&child, &write, "wrote a.txt", false)
        .await;
    let stop = TurnEvent::Stopped {
        answer: "Done.",
        again: false,
    };
    let blocked = hooks.turn_event(&child, stop).await.block;
    assert!(blocked.is_some_and(|b| b.contains("make test")));
    assert_eq!(hooks.turn_event(&root, stop).await.block, None);
    // A failed test run does not count; a passing one does.
    let tests = bash("t1", "make test");
    hooks.post_tool_use(&child, &tests, "exit 2", true).await;
    assert!(hooks.turn_event(&child, stop).await.block.is_some());
    hooks.post_tool_use(&child, &tests, "ok", false).await;
    assert_eq!(hooks.turn_event(&child, stop).await.block, None);
}

/// What one misbehaving hook before a `bash` call makes of it, and the item's reason.
async fn misbehaving(settings: Value, extra: Value) -> (Option<HookDecision>, Option<String>) {
    let ws = tempfile::tempdir().unwrap();
    let mut entry = json!({"type": "component", "component": MISBEHAVE_HOOK, "settings": settings, "timeout": 2});
    if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
        entry.extend(extra);
    }
    let hooks = hooks(
        json!({"PreToolUse": [{"hooks": [entry]}]}),
        ws.path(),
        &[("SECRET", "s3cret")],
    );
    let (events, mut rx) = site_events(ContextPath::root());
    let site = HookSite::new(&events, "s1", ws.path(), "standard");
    let decided = hooks.pre_tool_use(&site, &bash("c1", "ls")).await.decision;
    let reason = reported(&mut rx).pop().and_then(|(_, reason)| reason);
    (decided, reason)
}

#[tokio::test]
async fn a_trapping_spinning_or_bloating_hook_is_contained_and_fails_closed_before_a_tool() {
    let cases = [
        ("trap", "the hook panicked at misbehave-hook/src/lib.rs:"),
        (
            "print",
            "the hook's last words: Traceback: policy file missing",
        ),
        ("spin", "ran past its timeout of 2 s"),
        ("alloc", "memory limit"),
        (
            "refuse",
            "its configure refused the settings: refusing on purpose",
        ),
    ];
    for (what, says) in cases {
        let (decided, reason) = misbehaving(json!({"do": what}), Value::Null).await;
        let Some(HookDecision::Deny(why)) = decided else {
            panic!("{what}: not refused: {decided:?}");
        };
        assert!(why.contains("fails closed"), "{what}: {why}");
        let reason = reason.unwrap_or_default();
        assert!(reason.contains(says), "{what}: {reason}");
    }
    // Failing open, the call goes on and the failure is reported.
    let (decided, reason) = misbehaving(json!({"do": "trap"}), json!({"failure": "open"})).await;
    assert_eq!(decided, None);
    assert!(reason.is_some_and(|r| r.starts_with("trapped:")));
}

#[tokio::test]
async fn a_warm_hook_keeps_its_instance_and_a_trapped_one_starts_fresh() {
    let ws = tempfile::tempdir().unwrap();
    let entry =
        json!({"type": "component", "component": MISBEHAVE_HOOK, "settings": {"do": "count"}});
    let hooks = hooks(json!({"PreToolUse": [{"hooks": [entry]}]}), ws.path(), &[]);
    let (events, mut rx) = site_events(ContextPath::root());
    let site = HookSite::new(&events, "s1", ws.path(), "standard");
    for command in ["ls", "ls", "echo boom", "ls"] {
        hooks.pre_tool_use(&site, &bash("c1", command)).await;
    }
    let reasons: Vec<String> = reported(&mut rx)
        .into_iter()
        .map(|(_, reason)| reason.unwrap_or_default())
        .collect();
    assert_eq!(reasons[..2], ["calls served: 1", "calls served: 2"]);
    assert!(reasons[2].contains("trapped"), "{}", reasons[2]);
    assert_eq!(reasons[3], "calls served: 1");
}

#[tokio::test]
async fn a_component_hook_sees_only_granted_variables_and_directories() {
    let (_, bare) = misbehaving(json!({"do": "env"}), Value::Null).await;
    assert_eq!(bare.as_deref(), Some("HOME=None SECRET=None"));
    let granted = json!({"grants": {"env": ["SECRET"]}});
    let (_, seen) = misbehaving(json!({"do": "env"}), granted).await;
    assert_eq!(seen.as_deref(), Some("HOME=None SECRET=Some(\"s3cret\")"));

    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("policy.txt"), "no force pushes\n").unwrap();
    let file = outside.path().join("policy.txt");
    let read = json!({"do": "read", "path": file});
    let (_, denied) = misbehaving(read.clone(), Value::Null).await;
    assert!(denied.is_some_and(|d| d.starts_with("cannot read")));
    let granted = json!({"grants": {"read": [outside.path()]}});
    let (_, allowed) = misbehaving(read, granted).await;
    assert_eq!(allowed.as_deref(), Some("read: no force pushes"));
}

#[test]
fn a_component_that_cannot_load_names_its_file_and_where_it_is_configured() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("not.wasm"), "hello").unwrap();
    let cases = [
        ("missing.wasm", "cannot read"),
        ("not.wasm", "is not a WebAssembly file"),
        (
            wonopcode_wasm_host::guest_paths::PLANNER,
            "does not export `wonopcode:hooks/handler@0.1.0`",
        ),
    ];
    for (file, says) in cases {
        let value = json!({"PreToolUse": [{"hooks": [{"type": "component", "component": file}]}]});
        let mut table = HookTable::parse(&value, "settings.json").unwrap();
        let e = table
            .load_components(&engine(), ws.path(), &|_| None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("settings.json: a component hook: "), "{e}");
        assert!(e.contains(says), "{e}");
    }
}
