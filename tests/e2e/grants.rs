//! Grants per module and per context (`docs/grants.md`) on the real binary: a module's
//! `grants:` in `registry.yaml` and a guest's `spawn-with-grants` narrow a context's sandbox
//! and limit its spending; a grant wider than its parent's refuses the spawn with one line.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use wonopcode_wasm_host::guest_paths::{CODER, MISBEHAVE, ORCHESTRATOR};

use crate::support::{
    Scratch, assert_blocked_write, call, confining, done, events, priced_transcript_of,
    root_answer as answer, run_named_priced, stderr, text, usage, wonopcode,
};

/// A loops directory whose `registry.yaml` holds `modules` (the text under `modules:`).
fn registry(s: &Scratch, modules: &str) -> PathBuf {
    let loops = s.outside("loops");
    std::fs::create_dir_all(&loops).unwrap();
    std::fs::write(loops.join("registry.yaml"), format!("modules:\n{modules}")).unwrap();
    loops
}

/// Runs `prompt` on the misbehave guest with the registry in `loops`, replaying `turns`.
/// The run's commands may not write the temp dirs, where the scratch directories may be, so
/// a path beside the workspace is outside what the root may write.
fn misbehave(s: &Scratch, loops: &Path, turns: &[(&str, Vec<Value>)], prompt: &str) -> Output {
    let t = s.outside("t.jsonl");
    std::fs::write(&t, priced_transcript_of(turns)).unwrap();
    let config = s.config("sandbox:\n  exclude_slash_tmp: true\n  exclude_tmpdir_env_var: true\n");
    wonopcode()
        .args(["--config", &config])
        .args(["--json", "--yes", "--agent-loop", MISBEHAVE, "--loops-dir"])
        .arg(loops)
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg(prompt)
        .output()
        .unwrap()
}

#[test]
fn a_module_granted_read_only_cannot_write_through_its_bash() {
    if !confining() {
        return;
    }
    let s = Scratch::new();
    let loops = registry(
        &s,
        &format!(
            "  orchestrator:\n    path: {ORCHESTRATOR}\n  coder:\n    path: {CODER}\n    grants:\n      sandbox: read-only\n"
        ),
    );
    let step = json!({"specialist": "coder", "task": "Write a file."}).to_string();
    let mut delegate = call("d1", "delegate", &step);
    delegate.push(done("tool_use"));
    let mut command = call("b1", "bash", r#"{"command": "echo hi > made.txt"}"#);
    command.push(done("tool_use"));
    let turns = [
        ("0", delegate),
        ("0.1", command),
        ("0.1", vec![text("Blocked."), done("end_turn")]),
        ("0", vec![text("The coder could not."), done("end_turn")]),
    ];
    let out = run_named_priced(
        &s,
        &loops,
        "orchestrator",
        &turns,
        "Have the coder write a file.",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!s.ws().join("made.txt").exists());
    assert_blocked_write(&out, "b1");
}

#[test]
fn a_grant_wider_than_the_parent_is_refused_at_spawn_with_one_line() {
    let s = Scratch::new();
    let elsewhere = s.outside("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let loops = registry(
        &s,
        &format!(
            "  wide:\n    path: {CODER}\n    grants:\n      sandbox: {{write: [{}]}}\n",
            elsewhere.display()
        ),
    );
    // A spawn grant naming a path outside what the root may write.
    let spawn = json!({"module": "same", "task": "hi",
        "grants": {"write": [elsewhere.display().to_string()]}});
    let out = misbehave(&s, &loops, &[], &format!("spawn {spawn}"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = answer(&out);
    let line = format!(
        "spawn failed: context 0.1 was not started: the grants of context 0.1: write `{}` is outside what its parent may write",
        elsewhere.canonicalize().unwrap().display()
    );
    assert!(said.starts_with(&line), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    // The refusal is an error item of the parent's, and no child started.
    let events = events(&out);
    assert!(
        events.iter().any(|e| e["context"] == "0"
            && e["item"]["kind"] == "error"
            && e["item"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("context 0.1 was not started"))),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| e["type"] == "context.started"));
    // A module's registry grant is checked the same way.
    let spawn = json!({"module": {"named": "wide"}, "task": "hi"});
    let said = answer(&misbehave(&s, &loops, &[], &format!("spawn {spawn}")));
    assert!(
        said.starts_with(
            "spawn failed: context 0.1 was not started: the grants of module `wide`: write `"
        ),
        "{said}"
    );
    // A wider mode, and a host the parent may not reach.
    for (grants, says) in [
        (
            json!({"sandbox": "full-access"}),
            "sandbox `full-access` is wider than its parent's `workspace-write`",
        ),
        (
            json!({"network": ["127.0.0.1:9"]}),
            "network `127.0.0.1:9` is not granted to its parent",
        ),
        (
            json!({"sandbox": "everything"}),
            "unknown sandbox mode `everything`",
        ),
    ] {
        let spawn = json!({"module": "same", "task": "hi", "grants": grants});
        let said = answer(&misbehave(&s, &loops, &[], &format!("spawn {spawn}")));
        assert!(said.contains(says), "{grants}: {said}");
    }
}

#[test]
fn a_context_cost_limit_stops_its_request_before_it_is_sent() {
    let s = Scratch::new();
    // The coder's first request could cost up to $0.0114 (its prompt, and 1,000 output
    // tokens at $10 per million); its limit is half that, granted by its module or by its spawn.
    let cases = [
        (
            format!("  coder:\n    path: {CODER}\n    grants: {{max_cost: 0.005}}\n"),
            json!({"module": {"named": "coder"}, "task": "Do it."}),
        ),
        (
            format!("  coder:\n    path: {CODER}\n"),
            json!({"module": {"named": "coder"}, "task": "Do it.",
                "grants": {"max_cost_usd": 0.005}}),
        ),
    ];
    for (modules, spawn) in cases {
        let loops = registry(&s, &modules);
        let never = vec![text("never sent"), usage(10, 10), done("end_turn")];
        let out = misbehave(&s, &loops, &[("0.1", never)], &format!("spawn {spawn}"));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let said = answer(&out);
        assert!(
            said.contains(
                "budget exceeded: max_cost of context 0.1 (module `coder`) $0.0050: the next request could cost up to $0.01"
            ),
            "{said}"
        );
        let events = events(&out);
        let ended = events
            .iter()
            .find(|e| e["type"] == "context.completed")
            .unwrap_or_else(|| panic!("the child did not end: {events:?}"));
        assert_eq!(ended["status"], "budget_exceeded", "{ended}");
        assert_eq!(ended["usage"]["output_tokens"], 0, "{ended}");
    }
}

#[test]
fn list_loops_and_validate_module_show_a_modules_grants() {
    let s = Scratch::new();
    let loops = registry(
        &s,
        &format!(
            "  coder:\n    path: {CODER}\n    grants:\n      tools: [read, bash]\n      sandbox: {{mode: read-only, network: ['pypi.org:443']}}\n      max_cost: 0.25\n"
        ),
    );
    let with_loops = |flags: &[&str]| {
        wonopcode()
            .arg("--loops-dir")
            .arg(&loops)
            .args(flags)
            .output()
            .unwrap()
    };
    let out = with_loops(&["--list-loops", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let coder = listed["loops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "coder")
        .unwrap()
        .clone();
    assert_eq!(coder["tools"], json!(["read", "bash"]), "{coder}");
    assert_eq!(coder["grants"]["sandbox"]["mode"], "read-only", "{coder}");
    assert_eq!(
        coder["grants"]["sandbox"]["network"],
        json!(["pypi.org:443"])
    );
    assert_eq!(coder["grants"]["max_cost"], 0.25, "{coder}");
    let out = with_loops(&["--validate-module", "--agent-loop-name", "coder"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", stderr(&out));
    assert!(
        said.contains("  grants: sandbox read-only (network: pypi.org:443); max_cost $0.25"),
        "{said}"
    );
    // A bad grant is one line naming the file and the module.
    std::fs::write(
        loops.join("registry.yaml"),
        format!("modules:\n  coder:\n    path: {CODER}\n    grants: {{max_cost: 0}}\n"),
    )
    .unwrap();
    let out = with_loops(&["--validate-module", "--agent-loop-name", "coder"]);
    let said = stderr(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        said.contains(
            "registry.yaml: module `coder`: grants.max_cost: 0 must be more than 0 dollars"
        ),
        "{said}"
    );
}

#[test]
fn children_spawned_together_keep_their_generation_settings() {
    let s = Scratch::new();
    let loops = registry(&s, "");
    // The SDK's `spawn_all` with one child asking the transcript's model (which does not
    // think) to think: that child is refused by the host's check, so its settings arrived;
    // the other (the guest itself, echoing its task) runs.
    let specs = json!([
        {"module": "same", "task": "plain", "temperature": 0.3},
        {"module": "same", "task": "deep", "thinking": "high"},
    ]);
    let out = misbehave(&s, &loops, &[], &format!("spawn-all 2 {specs}"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = answer(&out);
    let first = said.split("[1]").next().unwrap_or_default();
    assert!(
        first.starts_with("[0] status: completed") && first.contains("echo: plain"),
        "{said}"
    );
    assert!(
        said.contains("[1] spawn failed") && said.contains("does not think"),
        "{said}"
    );
}

#[test]
fn a_spawns_generation_settings_are_checked_against_the_childs_model_before_it_starts() {
    let s = Scratch::new();
    let loops = registry(
        &s,
        &format!("  deep:\n    path: {CODER}\n    thinking: high\n"),
    );
    // The transcript's model does not think: a spawn asking it to is refused, naming it.
    let spawn = json!({"module": "same", "task": "hi", "thinking": "high"});
    let out = misbehave(&s, &loops, &[], &format!("spawn {spawn}"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = answer(&out);
    assert!(
        said.starts_with("spawn failed: context 0.1 was not started: the spawn: ")
            && said.contains("model `priced` (test) does not think"),
        "{said}"
    );
    assert!(!events(&out).iter().any(|e| e["type"] == "context.started"));
    // A setting that is not one is one line, before anything starts.
    let spawn = json!({"module": "same", "task": "hi", "thinking": "lots"});
    let said = answer(&misbehave(&s, &loops, &[], &format!("spawn {spawn}")));
    assert!(
        said.starts_with("spawn failed: generation: `lots` is not a thinking setting"),
        "{said}"
    );
    // A module's registry settings are checked the same way.
    let spawn = json!({"module": {"named": "deep"}, "task": "hi"});
    let said = answer(&misbehave(&s, &loops, &[], &format!("spawn {spawn}")));
    assert!(
        said.contains("was not started: module `") && said.contains("does not think"),
        "{said}"
    );
    // An output cap the model can take starts the child.
    let spawn = json!({"module": "same", "task": "hi", "max_output_tokens": 500});
    let out = misbehave(
        &s,
        &loops,
        &[("0.1", vec![text("fine"), done("end_turn")])],
        &format!("spawn {spawn}"),
    );
    assert!(
        !answer(&out).starts_with("spawn failed"),
        "{}",
        answer(&out)
    );
}
