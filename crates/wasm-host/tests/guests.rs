//! Real guest components on the real host: bad modules are refused with one clear line, bad
//! guests end their run with a status while the same loop runs the next prompt, and a guest
//! built against the seed's 0.2.0 text still runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;
use std::sync::Arc;

use support::{World, default_guest, engine, load, transcript};
use wonopcode_agent_loop::AgentLoop;
use wonopcode_protocol::{LoopError, Role};
use wonopcode_wasm_host::guest_paths as guests;
use wonopcode_wasm_host::{
    EngineOptions, GuestPrompter, HostConfig, WasmAgentLoop, WasmEngine, WasmError,
};

#[tokio::test]
async fn modules_that_are_not_guests_are_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let text = write("notes.wasm", b"just some text\n");
    assert!(matches!(load(&text).await, Err(WasmError::NotWasm { .. })));
    let half = write(
        "half.wasm",
        &wonopcode_wasm_host::DEFAULT_LOOP[..wonopcode_wasm_host::DEFAULT_LOOP.len() / 2],
    );
    let err = load(&half).await.err().unwrap();
    assert!(matches!(err, WasmError::Malformed { .. }), "{err}");
    let core = write("core.wasm", b"\0asm\x01\0\0\0");
    let err = load(&core).await.err().unwrap().to_string();
    assert!(
        err.contains("is a core WebAssembly module, not a component"),
        "{err}"
    );
    let err = load(guests::OTHER_WORLD).await.err().unwrap().to_string();
    assert!(err.contains("is a component of another world"), "{err}");
    let err = load(guests::MISSING_EXPORT)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("does not export `wonopcode:agent-loop/custom-tool-handler`"),
        "{err}"
    );
    let err = load(guests::VERSION_0_1).await.err().unwrap().to_string();
    assert!(
        err.contains("wonopcode:agent-loop@0.1.0, which is not compatible"),
        "{err}"
    );
    let err = load(guests::VERSION_1_0).await.err().unwrap().to_string();
    assert!(
        err.contains("wonopcode:agent-loop@1.0.0, which is not compatible"),
        "{err}"
    );
    let missing = dir.path().join("nope.wasm");
    let err = load(&missing.display().to_string())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("cannot read") && err.contains("nope.wasm"),
        "{err}"
    );
}

/// Runs a misbehaving prompt, expects an error containing `needle`, then checks that the
/// same loop answers the next prompt.
async fn misbehave_then_recover(prompt: &str, needle: &str) {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = World::new(transcript(&[]));
    let (result, _) = world.run(&agent, prompt).await;
    match result {
        Err(LoopError::Guest(m) | LoopError::Internal(m)) => {
            assert!(m.contains(needle), "expected `{needle}` in: {m}")
        }
        other => panic!("expected an error containing `{needle}`, got {other:?}"),
    }
    let (next, _) = world.run(&agent, "still alive?").await;
    assert_eq!(next.unwrap(), "echo: still alive?", "after `{prompt}`");
}

#[tokio::test]
async fn a_trap_in_run_prompt_ends_the_run() {
    misbehave_then_recover("trap", "the guest panicked at misbehave/src/lib.rs:").await;
}

#[tokio::test]
async fn state_and_messages_kept_in_the_host_are_bounded() {
    misbehave_then_recover(
        "hoard-state",
        "the guest's key/value state would pass 64 MiB (storage.set-state)",
    )
    .await;
    misbehave_then_recover(
        "hoard-messages",
        "the guest added more than 256 MiB of messages in one run (storage.add-message)",
    )
    .await;
}

#[tokio::test]
async fn an_endless_loop_is_stopped_by_the_compute_budget() {
    misbehave_then_recover(
        "spin",
        "computed for more than 1 s without calling the host",
    )
    .await;
}

#[tokio::test]
async fn host_calls_renew_the_compute_budget() {
    // Three times the 1 s budget of computation, but with a host call in every round.
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = World::new(transcript(&[]));
    let (result, _) = world.run(&agent, "busy 3000").await;
    let text = result.unwrap();
    assert!(text.starts_with("busy for 3000 ms"), "{text}");
}

/// Answers guests' questions as a person at the terminal would.
struct Person;

#[async_trait::async_trait]
impl GuestPrompter for Person {
    async fn input(&self, guest: &str, prompt: &str) -> Option<String> {
        Some(format!("Ada (asked by {guest}: {prompt})"))
    }

    async fn confirm(&self, _guest: &str, message: &str) -> bool {
        message == "go on?"
    }
}

#[tokio::test]
async fn guest_questions_reach_the_prompter_or_get_no_answer() {
    let mut world = World::new(transcript(&[]));
    let alone = load(guests::MISBEHAVE).await.unwrap();
    let (result, _) = world.run(&alone, "ask").await;
    assert_eq!(result.unwrap(), "None false");

    let config = HostConfig {
        prompter: Some(Arc::new(Person)),
        ..HostConfig::default()
    };
    let attended = WasmAgentLoop::from_file(engine(), Path::new(guests::MISBEHAVE), config)
        .await
        .unwrap();
    let (result, _) = world.run(&attended, "ask").await;
    assert_eq!(
        result.unwrap(),
        r#"Some("Ada (asked by misbehave: your name?)") true"#
    );
}

#[tokio::test]
async fn a_memory_bomb_hits_the_memory_limit() {
    misbehave_then_recover("alloc", "exceeded its memory limit").await;
}

#[tokio::test]
async fn deep_recursion_overflows_the_stack() {
    misbehave_then_recover("recurse", "stack overflow").await;
}

#[tokio::test]
async fn host_calls_with_bad_input_get_error_values() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = World::new(transcript(&[]));
    let (out, _) = world.run(&agent, "bad-handle").await;
    assert!(out.unwrap().contains("unknown stream handle 9999"));
    let (out, _) = world.run(&agent, "outside").await;
    let out = out.unwrap();
    assert!(
        out.starts_with("success=false") && out.contains("outside the workspace"),
        "{out}"
    );
    let (out, _) = world.run(&agent, "disabled-tool").await;
    let out = out.unwrap();
    assert!(
        out.starts_with("success=false") && out.contains("unknown tool `read`"),
        "{out}"
    );
    let (out, _) = world.run(&agent, "custom-invalid-json").await;
    assert!(
        out.unwrap()
            .contains("the parameter schema of `shout` is not JSON")
    );
    let (out, _) = world.run(&agent, "custom-invalid-schema").await;
    assert!(out.unwrap().contains("is not a valid JSON Schema"));
    let (out, _) = world.run(&agent, "custom-collides").await;
    assert!(out.unwrap().contains("`read` is a host tool"));
}

#[tokio::test]
async fn a_tool_round_runs_once_for_a_stored_turn_of_host_tools() {
    let agent = load(guests::MISBEHAVE).await.unwrap();
    let mut world = World::new(transcript(&[
        serde_json::json!([
            {"type":"tool_call_start","id":"c1","name":"read"},
            {"type":"tool_call_delta","id":"c1","arguments_delta":"{\"path\":\"a.txt\"}"},
            {"type":"done","stop_reason":"tool_use"}
        ]),
        serde_json::json!([
            {"type":"tool_call_start","id":"c2","name":"shout"},
            {"type":"tool_call_delta","id":"c2","arguments_delta":"{}"},
            {"type":"done","stop_reason":"tool_use"}
        ]),
    ]));
    let (out, _) = world.run(&agent, "round-misuse").await;
    let out = out.unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7, "{out}");
    assert_eq!(lines[0], r#"Err("unknown turn 9999")"#);
    assert!(lines[1].contains("is not in the history"), "{out}");
    assert_eq!(lines[2], "Ok(())");
    assert!(lines[3].contains("is already in the history"), "{out}");
    assert_eq!(lines[4], "Ok([true])");
    assert!(lines[5].contains("has had its tool round"), "{out}");
    assert!(
        lines[6].contains("`shout` is a custom tool of this loop"),
        "{out}"
    );
    // The turn was stored once, and the round stored one tool message answering `c1` with
    // the file, after the call.
    let calls = world
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter(|p| matches!(p, wonopcode_protocol::Part::ToolCall { .. }))
        .count();
    assert_eq!(calls, 2, "{:?}", world.messages);
    let results: Vec<(&str, &str)> = world
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            wonopcode_protocol::Part::ToolResult {
                call_id, content, ..
            } => Some((call_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "{:?}", world.messages);
    assert_eq!(results[0].0, "c1");
    assert!(results[0].1.contains("alpha"), "{}", results[0].1);
}

#[tokio::test]
async fn a_guest_built_against_the_seed_text_runs_and_the_host_counts_its_usage() {
    let agent = load(guests::SEED_0_2_0).await.unwrap();
    assert_eq!(agent.name(), "seed-0.2.0");
    let provider = transcript(&[
        serde_json::json!([
            {"type":"tool_call_start","id":"c1","name":"read"},
            {"type":"tool_call_delta","id":"c1","arguments_delta":"{\"path\":\"a.txt\"}"},
            {"type":"usage","usage":{"input_tokens":1000,"output_tokens":10}},
            {"type":"done","stop_reason":"tool_use"}
        ]),
        serde_json::json!([
            {"type":"text_delta","text":"It says alpha."},
            {"type":"usage","usage":{"input_tokens":1200,"output_tokens":5}},
            {"type":"done","stop_reason":"end_turn"}
        ]),
    ]);
    let mut world = World::new(provider);
    let (out, stats) = world.run(&agent, "what is in a.txt?").await;
    assert_eq!(out.unwrap(), "It says alpha.");
    assert_eq!(stats.iterations, 2);
    assert_eq!(stats.usage.input_tokens, 2200);
    assert_eq!(stats.usage.cost_micro_cents, Some(221_500));
    let tool_result = world
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match p {
            wonopcode_protocol::Part::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        });
    assert!(tool_result.unwrap().contains("alpha"));
}

#[tokio::test]
async fn the_host_enforces_the_iteration_limit() {
    let turn = |i: u32| {
        serde_json::json!([
            {"type":"tool_call_start","id":format!("c{i}"),"name":"list"},
            {"type":"tool_call_delta","id":format!("c{i}"),"arguments_delta":format!("{{\"depth\":{}}}", i + 1)},
            {"type":"done","stop_reason":"tool_use"}
        ])
    };
    let agent = default_guest().await;
    let mut world = World::new(transcript(&[turn(0), turn(1), turn(2)]));
    world.config.max_iterations = 2;
    let (out, stats) = world.run(&agent, "go").await;
    assert_eq!(out, Err(LoopError::MaxIterations { limit: 2 }));
    assert_eq!(stats.iterations, 2);
}

#[tokio::test]
async fn compiled_guests_are_cached_and_a_corrupt_entry_is_recompiled() {
    let cache = tempfile::tempdir().unwrap();
    let engine = WasmEngine::new(EngineOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        ..EngineOptions::default()
    })
    .unwrap();
    let bytes = std::fs::read(guests::MISBEHAVE).unwrap();
    engine.compile(&bytes, "misbehave").unwrap();
    let entries: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "one cache entry: {entries:?}");
    assert!(entries[0].extension().is_some_and(|x| x == "cwasm"));
    // A corrupt entry is replaced, not trusted.
    std::fs::write(&entries[0], b"garbage").unwrap();
    engine.compile(&bytes, "misbehave").unwrap();
    assert!(
        std::fs::metadata(&entries[0]).unwrap().len() > 1000,
        "recompiled and rewritten"
    );
    let loaded = WasmAgentLoop::from_bytes(engine, &bytes, "misbehave", HostConfig::default())
        .await
        .unwrap();
    assert_eq!(loaded.name(), "misbehave");
}

#[tokio::test]
async fn validate_reports_the_api_version() {
    let info = WasmAgentLoop::validate(engine(), Path::new(guests::SEED_0_2_0))
        .await
        .unwrap();
    assert_eq!(info.api_version, "0.2.0");
    let info = WasmAgentLoop::validate(engine(), Path::new(guests::DEFAULT_LOOP))
        .await
        .unwrap();
    assert_eq!(info.api_version, "0.3.0");
}

#[tokio::test]
async fn a_context_overflow_is_compacted_and_retried_by_the_host() {
    let agent = default_guest().await;
    let provider = transcript(&[
        serde_json::json!([{"type":"context_overflow","message":"prompt is too long"}]),
        serde_json::json!([{"type":"text_delta","text":"SUMMARY"},{"type":"done","stop_reason":"end_turn"}]),
        serde_json::json!([{"type":"text_delta","text":"fits now"},{"type":"done","stop_reason":"end_turn"}]),
    ]);
    let mut world = World::new(provider);
    for i in 0..3 {
        world
            .messages
            .push(wonopcode_protocol::Message::user(format!("q{i}")));
        world.messages.push(wonopcode_protocol::Message::text(
            wonopcode_protocol::Role::Assistant,
            format!("a{i}"),
        ));
    }
    let (out, stats) = world.run(&agent, "q3").await;
    assert_eq!(out.unwrap(), "fits now");
    assert_eq!(stats.iterations, 2, "the refused request and its retry");
    let compacted = world.events().iter().any(|e| {
        matches!(
            e.kind,
            wonopcode_protocol::EventKind::ContextCompacted { .. }
        )
    });
    assert!(compacted);
    assert!(world.messages[0].text_content().contains("SUMMARY"));
}

/// A stream cut after some text: the default guest's `run-turn` stores the partial answer with
/// its `[incomplete: ...]` mark and the run fails with the provider's error, exactly as the
/// native loop does.
#[tokio::test]
async fn a_turn_cut_short_is_stored_marked_and_fails_the_run_as_natively() {
    let cut = || {
        transcript(&[serde_json::json!([
            {"type":"text_delta","text":"half an ans"},
            {"type":"error","message":"connection reset"}
        ])])
    };
    let guest = default_guest().await;
    let mut in_guest = World::new(cut());
    let (out, stats) = in_guest.run(&guest, "q").await;
    let err = out.unwrap_err().to_string();
    assert!(err.contains("connection reset"), "{err}");
    assert_eq!(stats.iterations, 1);

    let mut native = World::new(cut());
    let (out, _) = native.run(&wonopcode_agent_loop::StandardLoop, "q").await;
    assert!(out.is_err());
    let stored = |w: &World| {
        w.messages
            .iter()
            .map(|m| (m.role, m.text_content()))
            .collect::<Vec<_>>()
    };
    assert_eq!(stored(&in_guest), stored(&native));
    let answer = in_guest.messages.last().unwrap().text_content();
    assert!(
        answer.starts_with("half an ans") && answer.contains("[incomplete: "),
        "{answer}"
    );
}

/// A transcript whose turns came from two models: `p/m` (the header's, free) and `q/big`
/// (a dollar per million tokens each way).
const TWO_MODELS: &str = concat!(
    r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100,"pricing":{"input_per_mtok":0,"output_per_mtok":0}}}"#,
    "\n",
    r#"{"type":"turn","context":"0","turn":0,"model":{"id":"big","provider":"q","context_window":9000,"max_output":900,"pricing":{"input_per_mtok":100000000,"output_per_mtok":100000000}},"chunks":[{"type":"text_delta","text":"from big"},{"type":"usage","usage":{"input_tokens":1000000,"output_tokens":0}},{"type":"done","stop_reason":"end_turn"}]}"#,
    "\n",
    r#"{"type":"turn","context":"0","turn":1,"model":{"id":"big","provider":"q","context_window":9000,"max_output":900,"pricing":{"input_per_mtok":100000000,"output_per_mtok":100000000}},"chunks":[{"type":"text_delta","text":"still big"},{"type":"done","stop_reason":"end_turn"}]}"#,
    "\n",
    r#"{"type":"turn","context":"0.1","turn":0,"chunks":[{"type":"text_delta","text":"child from m"},{"type":"done","stop_reason":"end_turn"}]}"#,
    "\n",
);

#[tokio::test]
async fn guests_switch_between_the_hosts_models_and_children_start_on_their_preferred_one() {
    let replay = Arc::new(wonopcode_providers::ReplayProvider::new(
        wonopcode_providers::Transcript::parse(TWO_MODELS, "two-models").unwrap(),
        Path::new("two-models"),
    ));
    let config = HostConfig {
        models: Some(Arc::new(wonopcode_providers::ReplaySource(replay.clone()))),
        ..HostConfig::default()
    };
    let agent = support::load_with(guests::MISBEHAVE, config).await.unwrap();
    let mut world = World::new(replay);

    let (out, _) = world.run(&agent, "providers").await;
    assert_eq!(out.unwrap(), "p[m] q[big]");
    let (out, stats) = world.run(&agent, "switch q big").await;
    assert_eq!(out.unwrap(), "q/big: from big");
    // Priced at the model that answered: a million input tokens at a dollar.
    assert_eq!(stats.usage.cost_micro_cents, Some(100_000_000));
    // The switch lasts into the next prompt.
    let (out, _) = world.run(&agent, "answer").await;
    assert_eq!(out.unwrap(), "q/big: still big");
    // A child preferring `p` starts on p/m, whatever its parent switched to.
    let (out, _) = world
        .run(&agent, r#"spawn {"task": "answer", "provider": "p"}"#)
        .await;
    let out = out.unwrap();
    assert!(out.contains("p/m: child from m"), "{out}");
    let (out, _) = world.run(&agent, "switch nope").await;
    assert_eq!(
        out.unwrap(),
        "set-provider refused: transcript two-models has no turns from provider `nope`; it has p/m, q/big"
    );
    let (out, _) = world
        .run(&agent, r#"spawn {"task": "answer", "model": "tiny"}"#)
        .await;
    let out = out.unwrap();
    assert!(
        out.contains("spawn failed: the child's preferred model: transcript two-models has no turns from provider `q` model `tiny`"),
        "{out}"
    );
}

#[tokio::test]
async fn a_guest_that_asks_through_run_turn_is_steered_as_the_native_loop_is() {
    let agent = default_guest().await;
    let mut world = World::new(transcript(&[serde_json::json!([
        {"type":"text_delta","text":"done"},
        {"type":"done","stop_reason":"end_turn"}
    ])]));
    // Typed while the turn starts: its first request carries it, after the prompt.
    world.steering.send("in British English".to_owned());
    let (out, _) = world.run(&agent, "write the changelog").await;
    assert_eq!(out.unwrap(), "done");
    let texts: Vec<(Role, String)> = world
        .messages
        .iter()
        .map(|m| (m.role, m.text_content()))
        .collect();
    assert_eq!(
        texts,
        [
            (Role::User, "write the changelog".to_owned()),
            (Role::User, "in British English".to_owned()),
            (Role::Assistant, "done".to_owned()),
        ]
    );
    assert!(world.steering.is_empty());
}
