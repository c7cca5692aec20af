//! The host serves guests of WIT 0.3 and of 0.2.x from the same code: a 0.2.11 guest starts
//! children every 0.2 way (served by forwarding to 0.3's `spawn-request`), and a 0.3 guest's
//! request is checked as a whole (an unknown extension refuses it).

use std::process::Output;

use serde_json::json;
use wonopcode_wasm_host::guest_paths::{MISBEHAVE, SPAWN_V0_2};

use crate::support::{Scratch, events, priced_transcript_of, root_answer, stderr, wonopcode};

/// Runs `prompt` on `guest` with an empty priced transcript (the guests here ask no model).
fn run(s: &Scratch, guest: &str, prompt: &str) -> Output {
    let t = s.outside("t.jsonl");
    std::fs::write(&t, priced_transcript_of(&[])).unwrap();
    wonopcode()
        .args(["--json", "--yes", "--agent-loop", guest, "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg(prompt)
        .output()
        .unwrap()
}

/// What the root context answered, from a run that exited 0.
fn answer(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    root_answer(out)
}

#[test]
fn a_0_2_guest_starts_children_every_0_2_way_on_the_0_3_host() {
    let s = Scratch::new();
    // `spawn-with-generation`: the settings reach the child's model check and it runs.
    assert_eq!(
        answer(&run(&s, SPAWN_V0_2, "generation")),
        "completed: echo: g data=gen depth=1"
    );
    // A thinking setting that is not one is still one line, before anything starts.
    let said = answer(&run(&s, SPAWN_V0_2, "bad-generation"));
    assert!(
        said.starts_with("spawn failed: generation: `lots` is not a thinking setting"),
        "{said}"
    );
    // `spawn-parallel-with-grants`: both children, each under its grants, in order.
    assert_eq!(
        answer(&run(&s, SPAWN_V0_2, "parallel-grants")),
        "completed: echo: a data=one depth=1\ncompleted: echo: b data=two depth=1"
    );
    // `start-with-grants`, then the 0.2 `child` handle's `wait`, `state` and `id`.
    assert_eq!(
        answer(&run(&s, SPAWN_V0_2, "start")),
        "completed: echo: s data=held depth=1\nid=0.1 state=ChildState::Idle"
    );
    // `spawn-with-attachments` checks each attachment by its bytes, as 0.3 does.
    let said = answer(&run(&s, SPAWN_V0_2, "attachments"));
    assert!(
        said.starts_with("spawn failed: attachment 1 is not a PNG, JPEG, GIF, WebP image"),
        "{said}"
    );
}

#[test]
fn a_custom_tool_is_keyed_by_its_id_and_labelled_by_its_name_as_the_seed_defines_them() {
    let s = Scratch::new();
    assert_eq!(
        answer(&run(&s, SPAWN_V0_2, "custom-tool")),
        r#"Ok(()) ids=["wc"] label=Some("Word count") enabled=true"#
    );
}

#[test]
fn a_0_3_request_with_a_setting_the_host_does_not_know_is_refused_naming_it() {
    let s = Scratch::new();
    let spec = json!({"module": "same", "task": "hi", "extensions": {"isolation": "worktree"}});
    let out = run(&s, MISBEHAVE, &format!("spawn-extended {spec}"));
    let said = answer(&out);
    assert_eq!(
        said,
        "spawn failed: spawn-request.extensions: `isolation` is not a setting this host knows (it knows none)"
    );
    assert!(!events(&out).iter().any(|e| e["type"] == "context.started"));
    // Without it, the same request starts the child.
    let spec = json!({"module": "same", "task": "hi"});
    let out = run(&s, MISBEHAVE, &format!("spawn-extended {spec}"));
    assert!(
        answer(&out).starts_with("status: completed"),
        "{}",
        answer(&out)
    );
}
