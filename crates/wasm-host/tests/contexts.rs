//! The context stack on real guests: children run in their own stores with what seed 000's
//! isolation table says they share and keep apart, never get more tools than their parent,
//! end with a status on every limit while the parent goes on, and roll their usage up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::{World, keyed_transcript, load, load_with};
use wonopcode_contexts::{ContextLimits, LoopSource, ModuleResolver};
use wonopcode_protocol::{ContextStatus, EventKind, Message};
use wonopcode_wasm_host::HostConfig;
use wonopcode_wasm_host::guest_paths as guests;

/// `spawn JSON` for the misbehave guest.
fn spawn(spec: serde_json::Value) -> String {
    format!("spawn {spec}")
}

/// The `context.completed` events: (path, status, usage tokens, modified files).
fn completed(world: &World) -> Vec<(String, ContextStatus, u64, Vec<String>)> {
    world
        .events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ContextCompleted {
                status,
                usage,
                modified_files,
                ..
            } => Some((
                e.context.to_string(),
                status,
                usage.input_tokens + usage.output_tokens,
                modified_files,
            )),
            _ => None,
        })
        .collect()
}

fn no_model() -> World {
    World::new(keyed_transcript(&[]))
}

#[tokio::test]
async fn a_child_runs_in_its_own_context_and_returns_its_data() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": r#"result-data {"verdict":"ok"}"#})),
        )
        .await;
    let answer = answer.unwrap();
    assert!(answer.contains("status: completed"), "{answer}");
    assert!(answer.contains("answer:\ndata set"), "{answer}");
    assert!(answer.contains(r#"data: {"verdict":"ok"}"#), "{answer}");
    let started: Vec<String> = world
        .events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ContextStarted { module, task, .. } => {
                Some(format!("{} {module} {task}", e.context))
            }
            _ => None,
        })
        .collect();
    assert_eq!(started, [r#"0.1 misbehave result-data {"verdict":"ok"}"#]);
    assert_eq!(completed(&world)[0].1, ContextStatus::Completed);

    // The child saw its own place, its parent, its custom data; its state was its own.
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": "whoami", "data": "{\"k\":1}"})),
        )
        .await;
    let answer = answer.unwrap();
    assert!(
        answer.contains(r#"id=0.2 depth=1 parent=Some("0") data=Some("{\"k\":1}")"#),
        "{answer}"
    );
    assert!(
        !answer.contains("data: "),
        "state leaked between children: {answer}"
    );
    // The root was not spawned: no parameters, no parent.
    let (answer, _) = world.run(&agent, "whoami").await;
    assert!(
        answer
            .unwrap()
            .contains("id=0 depth=0 parent=None data=None")
    );
}

#[tokio::test]
async fn history_is_copied_only_when_the_child_inherits_it() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    world.messages = vec![Message::user("first"), Message::user("second")];
    let (fresh, _) = world.run(&agent, &spawn(json!({"task": "history"}))).await;
    assert!(fresh.unwrap().contains("answer:\n0 messages"));
    let (inherited, _) = world
        .run(&agent, &spawn(json!({"task": "history", "inherit": true})))
        .await;
    assert!(inherited.unwrap().contains("answer:\n2 messages"));
    assert_eq!(world.messages.len(), 2, "the parent's history is its own");
}

#[tokio::test]
async fn the_seeds_tool_names_reach_their_tools_and_an_unknown_one_says_the_nearest() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    // The seed's `patch` is `apply_patch`, in `allowed-tools` and in `enable-tool`.
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": "tools", "allow": ["read", "patch"]})),
        )
        .await;
    assert!(answer.unwrap().contains(
        "answer:
apply_patch,read
"
    ));
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": "enable patch", "allow": ["read", "patch"]})),
        )
        .await;
    let answer = answer.unwrap();
    assert!(answer.contains("Ok(()) apply_patch,read"), "{answer}");
    // And in `set-enabled-tools` and `is-tool-enabled`.
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": "set-enabled read,patch", "allow": ["read", "patch", "bash"]})),
        )
        .await;
    let answer = answer.unwrap();
    assert!(
        answer.contains("Ok(()) apply_patch,read [read=true patch=true]"),
        "{answer}"
    );
    let (answer, _) = world
        .run(&agent, &spawn(json!({"task": "set-enabled read,reed"})))
        .await;
    let answer = answer.unwrap();
    assert!(
        answer.contains("Err(\"unknown tool `reed`; did you mean `read`?\")"),
        "{answer}"
    );
    // A name no tool has is refused with the nearest one, not dropped.
    let (answer, _) = world
        .run(&agent, &spawn(json!({"task": "enable reed"})))
        .await;
    let answer = answer.unwrap();
    assert!(
        answer.contains("unknown tool `reed`; did you mean `read`?"),
        "{answer}"
    );
    // With the run's tool names known, a spawn naming a tool no context has is refused;
    // one the run has but this parent lacks (`lsp` here) is narrowing, not a mistake.
    let mut names: Vec<String> = world.tools.names().map(str::to_owned).collect();
    names.push("lsp".to_owned());
    world.shared.tool_names = names.into();
    for (spec, said) in [
        (
            json!({"task": "tools", "allow": ["read", "raed"]}),
            "allowed-tools: unknown tool `raed`; did you mean `read`?",
        ),
        (
            json!({"task": "tools", "deny": ["bahs"]}),
            "denied-tools: unknown tool `bahs`; did you mean `bash`?",
        ),
    ] {
        let (answer, _) = world.run(&agent, &spawn(spec)).await;
        let answer = answer.unwrap();
        assert!(
            answer.contains(&format!("was not started: {said}")),
            "{answer}"
        );
    }
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": "tools", "allow": ["read", "lsp", "mcp__gh__issues"]})),
        )
        .await;
    assert!(answer.unwrap().contains("answer:\nread\n"));
}

#[tokio::test]
async fn a_child_never_has_more_tools_than_its_parent() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": "tools", "allow": ["read", "grep", "write", "nope"], "deny": ["write"]})),
        )
        .await;
    assert!(answer.unwrap().contains("answer:\ngrep,read\n"));
    // enable-tool cannot widen the set.
    let (answer, _) = world
        .run(&agent, &spawn(json!({"task": "widen", "allow": ["read"]})))
        .await;
    let answer = answer.unwrap();
    assert!(answer.contains("Err("), "{answer}");
    assert!(answer.ends_with(") read\n"), "{answer}");
    // Nor can a grandchild ask for more than its parent had.
    let inner = spawn(json!({"task": "tools", "allow": ["read", "bash"]}));
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": inner, "allow": ["read", "grep"]})),
        )
        .await;
    assert!(answer.unwrap().contains("answer:\nread\n"));
}

#[tokio::test]
async fn limits_end_the_child_with_a_status_and_the_parent_goes_on() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    // Timeout while the child waits in a host call.
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": "sleep 30000", "timeout_ms": 200})),
        )
        .await;
    assert!(answer.unwrap().contains("status: timeout"));
    // Timeout while the child computes between host calls (the epoch yields to the timer).
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"task": "busy 30000", "timeout_ms": 200})),
        )
        .await;
    assert!(answer.unwrap().contains("status: timeout"));
    // A trap.
    let (answer, _) = world.run(&agent, &spawn(json!({"task": "trap"}))).await;
    let answer = answer.unwrap();
    assert!(
        answer.contains("status: error:") && answer.contains("trapped"),
        "{answer}"
    );
    // Cancelling the parent cancels the child.
    let cancel = world.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let (answer, _) = world
        .run(&agent, &spawn(json!({"task": "sleep 30000"})))
        .await;
    assert!(answer.unwrap().contains("status: cancelled"));
    let statuses: Vec<ContextStatus> = completed(&world).into_iter().map(|c| c.1).collect();
    assert_eq!(
        statuses,
        [
            ContextStatus::Timeout,
            ContextStatus::Timeout,
            ContextStatus::Error,
            ContextStatus::Cancelled
        ]
    );
}

#[tokio::test]
async fn a_spawn_bomb_meets_the_depth_and_live_context_limits() {
    let limits = ContextLimits {
        max_depth: 4,
        max_live: 6,
        max_parallel: 3,
        ..ContextLimits::default()
    };
    let config = HostConfig {
        contexts: limits,
        ..HostConfig::default()
    };
    let agent = load_with(guests::MISBEHAVE, config).await.unwrap();
    let mut world = no_model();
    let (answer, _) = world.run(&agent, "bomb").await;
    let answer = answer.unwrap();
    assert!(
        answer.contains(
            "depth 4: spawn failed: context 0.1.1.1.1.1 would be at depth 5, past the limit of 4"
        ),
        "{answer}"
    );
    let (answer, _) = world.run(&agent, "fanout 3").await;
    let answer = answer.unwrap();
    let refused: usize = answer
        .strip_prefix("fanout: ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(refused > 0, "{answer}");
    let events = world.events();
    let mut live = 1usize;
    let mut most = 1usize;
    for e in &events {
        match e.kind {
            EventKind::ContextStarted { .. } => live += 1,
            EventKind::ContextCompleted { .. } => live -= 1,
            _ => {}
        }
        most = most.max(live);
    }
    assert!(most <= 6, "{most} contexts were alive at once");
    // The next prompt runs as ever.
    let (answer, _) = world.run(&agent, "after").await;
    assert_eq!(answer.unwrap(), "echo: after");
}

#[tokio::test]
async fn parallel_children_answer_in_input_order_and_one_failure_fails_none_else() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    let children = json!([
        {"task": "result-data 0"},
        {"task": "trap"},
        {"task": "sleep 50"},
        {"task": "result-data 3"},
        {"module": {"named": "nowhere"}, "task": "x"},
    ]);
    let (answer, _) = world.run(&agent, &format!("spawn-all 2 {children}")).await;
    let answer = answer.unwrap();
    let lines: Vec<&str> = answer.lines().filter(|l| l.starts_with('[')).collect();
    assert!(lines[0].starts_with("[0] status: completed"), "{answer}");
    assert!(lines[1].starts_with("[1] status: error"), "{answer}");
    assert!(lines[2].starts_with("[2] status: completed"), "{answer}");
    assert!(lines[3].starts_with("[3] status: completed"), "{answer}");
    assert!(
        lines[4].starts_with("[4] spawn failed: cannot load module `nowhere`"),
        "{answer}"
    );
    assert!(answer.contains("data: 0") && answer.contains("data: 3"));
    // Paths follow the input order.
    let mut paths: Vec<String> = completed(&world).into_iter().map(|c| c.0).collect();
    paths.sort();
    assert_eq!(paths, ["0.1", "0.2", "0.3", "0.4"]);
}

/// Resolves `helper` to the misbehave guest, `default` to the embedded default guest.
struct Names;

#[async_trait::async_trait]
impl ModuleResolver for Names {
    async fn resolve(&self, name: &str) -> Result<LoopSource, String> {
        match name.trim_end_matches(".wasm") {
            "helper" => Ok(LoopSource::File(PathBuf::from(guests::MISBEHAVE))),
            "default" => Ok(LoopSource::Embedded),
            "standard" => Ok(LoopSource::Native),
            other => Err(format!("no module named `{other}`")),
        }
    }
}

fn named_config() -> HostConfig {
    HostConfig {
        resolver: Some(Arc::new(Names)),
        ..HostConfig::default()
    }
}

fn usage(input: u64, output: u64) -> serde_json::Value {
    json!({"type": "usage", "usage": {"input_tokens": input, "output_tokens": output}})
}

#[tokio::test]
async fn named_children_use_the_model_and_tools_and_usage_rolls_up() {
    let agent = load_with(guests::MISBEHAVE, named_config()).await.unwrap();
    let provider = keyed_transcript(&[
        (
            "0.1",
            json!([
                {"type": "tool_call_start", "id": "c1", "name": "write"},
                {"type": "tool_call_delta", "id": "c1", "arguments_delta": r#"{"path": "notes/new.txt", "content": "hi\n"}"#},
                {"type": "tool_call_end", "id": "c1"},
                usage(100, 20),
                {"type": "done", "stop_reason": "tool_use"}
            ]),
        ),
        (
            "0.1",
            json!([
                {"type": "text_delta", "text": "wrote it"},
                usage(150, 5),
                {"type": "done", "stop_reason": "end_turn"}
            ]),
        ),
        (
            "0.2",
            json!([
                {"type": "text_delta", "text": "native answer"},
                usage(10, 2),
                {"type": "done", "stop_reason": "end_turn"}
            ]),
        ),
    ]);
    let mut world = World::new(provider);
    let (answer, stats) = world
        .run(
            &agent,
            &spawn(json!({"module": {"named": "default.wasm"}, "task": "write a note"})),
        )
        .await;
    let answer = answer.unwrap();
    assert!(answer.contains("answer:\nwrote it"), "{answer}");
    assert!(answer.contains("modified files: notes/new.txt"), "{answer}");
    assert_eq!(
        std::fs::read_to_string(world.workspace().join("notes/new.txt")).unwrap(),
        "hi\n"
    );
    assert_eq!(stats.usage.input_tokens, 250);
    assert_eq!(stats.usage.output_tokens, 25);
    assert!(stats.usage.cost_micro_cents.is_some_and(|c| c > 0));
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"module": {"named": "standard"}, "task": "hello"})),
        )
        .await;
    assert!(answer.unwrap().contains("answer:\nnative answer"));
    let done = completed(&world);
    assert_eq!(done[0].2, 275);
    assert_eq!(done[0].3, ["notes/new.txt"]);
    assert_eq!(done[1].2, 12);
}

#[tokio::test]
async fn iteration_and_token_limits_end_the_child() {
    let agent = load_with(guests::MISBEHAVE, named_config()).await.unwrap();
    let call = |id: &str| {
        json!([
            {"type": "tool_call_start", "id": id, "name": "read"},
            {"type": "tool_call_delta", "id": id, "arguments_delta": r#"{"path": "a.txt"}"#},
            {"type": "tool_call_end", "id": id},
            usage(60, 10),
            {"type": "done", "stop_reason": "tool_use"}
        ])
    };
    let provider =
        keyed_transcript(&[("0.1", call("a")), ("0.2", call("b")), ("0.3.1", call("c"))]);
    let mut world = World::new(provider);
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"module": {"named": "default"}, "task": "go", "max_iterations": 1})),
        )
        .await;
    assert!(answer.unwrap().contains("status: max_iterations_reached"));
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"module": {"named": "default"}, "task": "go", "max_tokens": 50})),
        )
        .await;
    assert!(answer.unwrap().contains("status: token_limit_reached"));
    // A grandchild's tokens count against its parent's limit.
    let grandchild = spawn(json!({"module": {"named": "default"}, "task": "go"}));
    let (answer, _) = world
        .run(
            &agent,
            &spawn(json!({"module": {"named": "helper"}, "task": grandchild, "max_tokens": 50})),
        )
        .await;
    let answer = answer.unwrap();
    assert!(answer.contains("status: token_limit_reached"), "{answer}");
    let statuses: Vec<(String, ContextStatus)> =
        completed(&world).into_iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(
        statuses,
        [
            ("0.1".to_owned(), ContextStatus::MaxIterationsReached),
            ("0.2".to_owned(), ContextStatus::TokenLimitReached),
            ("0.3.1".to_owned(), ContextStatus::TokenLimitReached),
            ("0.3".to_owned(), ContextStatus::Completed),
        ]
    );
}

#[tokio::test]
async fn a_depth_100_chain_completes_and_depth_101_is_refused() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    let (answer, _) = world.run(&agent, "bomb").await;
    let answer = answer.unwrap();
    let deepest = format!("0{}", ".1".repeat(101));
    assert!(
        answer.contains(&format!(
            "depth 100: spawn failed: context {deepest} would be at depth 101, past the limit of 100"
        )),
        "{}",
        &answer[..answer.len().min(400)]
    );
    let done = completed(&world);
    assert_eq!(done.len(), 100);
    assert!(done.iter().all(|c| c.1 == ContextStatus::Completed));
}

#[tokio::test]
async fn a_guest_spawning_in_a_loop_frees_each_place_it_takes() {
    let config = HostConfig {
        contexts: ContextLimits {
            max_live: 2,
            ..ContextLimits::default()
        },
        ..HostConfig::default()
    };
    let agent = load_with(guests::MISBEHAVE, config).await.unwrap();
    let mut world = no_model();
    let (answer, _) = world.run(&agent, "spawn-seq 50").await;
    assert_eq!(answer.unwrap(), "50 children completed");
    // With the one place taken, a second level is refused with the cap's reason.
    let (answer, _) = world.run(&agent, "nest 2 echo").await;
    assert!(
        answer
            .unwrap()
            .contains("spawn failed: the limit of 2 live contexts in this run is reached")
    );
}

#[tokio::test]
async fn a_child_that_exhausts_its_memory_ends_with_an_error() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    let (answer, _) = world.run(&agent, &spawn(json!({"task": "alloc"}))).await;
    let answer = answer.unwrap();
    assert!(
        answer.contains("status: error") && answer.contains("memory limit"),
        "{answer}"
    );
    let (answer, _) = world.run(&agent, "after").await;
    assert_eq!(answer.unwrap(), "echo: after");
}

#[tokio::test]
async fn a_child_cannot_run_a_tool_its_parent_did_not_give_it() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    let run_bash = r#"run-tool bash {"command": "echo leaked > leak.txt"}"#;
    let (answer, _) = world
        .run(&agent, &spawn(json!({"task": run_bash, "allow": ["read"]})))
        .await;
    let answer = answer.unwrap();
    assert!(answer.contains("success=false"), "{answer}");
    assert!(!world.workspace().join("leak.txt").exists());
    // Not after `enable-tool` either.
    let widen_then_run = spawn(json!({"task": "widen", "allow": ["read"]}));
    let (answer, _) = world.run(&agent, &widen_then_run).await;
    assert!(answer.unwrap().contains("Err("));
    let (answer, _) = world
        .run(&agent, &spawn(json!({"task": run_bash, "deny": ["bash"]})))
        .await;
    assert!(answer.unwrap().contains("success=false"));
    assert!(!world.workspace().join("leak.txt").exists());
}

#[tokio::test]
async fn cancelling_the_root_cancels_every_descendant() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    let cancel = world.cancel.clone();
    let cancelled_at = Arc::new(std::sync::Mutex::new(None));
    let at = cancelled_at.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        *at.lock().unwrap() = Some(std::time::Instant::now());
        cancel.cancel();
    });
    let (answer, _) = world.run(&agent, "nest 3 sleep 30000").await;
    let waited = cancelled_at.lock().unwrap().unwrap().elapsed();
    assert!(answer.unwrap().contains("status: cancelled"));
    let statuses: Vec<(String, ContextStatus)> =
        completed(&world).into_iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(
        statuses,
        [
            ("0.1.1.1".to_owned(), ContextStatus::Cancelled),
            ("0.1.1".to_owned(), ContextStatus::Cancelled),
            ("0.1".to_owned(), ContextStatus::Cancelled),
        ]
    );
    // Not a speed target (that is the benchmark's job): the cascade must not wait on the
    // 30 s sleep.
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    eprintln!("the root's run returned {waited:?} after the cancel");
}

/// A guest passes the person's attachments on to a child, which reads them from its own
/// history; an attachment whose bytes are not what it says is refused, not sent.
#[tokio::test]
async fn a_guest_passes_the_prompts_attachments_to_a_child_and_a_forged_one_is_refused() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = no_model();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    let image = wonopcode_protocol::attachment::from_bytes(&png, "shot.png").unwrap();
    let pdf = wonopcode_protocol::attachment::from_bytes(b"%PDF-1.7\n", "/tmp/spec.pdf").unwrap();
    let (answer, _) = world
        .run_attached(
            &agent,
            &format!("spawn-attached {}", json!({"task": "attachments"})),
            vec![image, pdf],
        )
        .await;
    let answer = answer.unwrap();
    assert!(answer.starts_with("passed 2\n"), "{answer}");
    assert!(
        answer.contains(&format!(
            "attachments: [image/png {} bytes None, application/pdf 9 bytes Some(\"spec.pdf\")]",
            png.len()
        )),
        "{answer}"
    );

    let (answer, _) = world
        .run(
            &agent,
            &format!("spawn-forged {}", json!({"task": "attachments"})),
        )
        .await;
    assert_eq!(
        answer.unwrap(),
        "spawn failed: innocent.png is not a PNG, JPEG, GIF, WebP image or a PDF (read from its first bytes)"
    );
}
