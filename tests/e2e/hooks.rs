//! Hooks on the real binary (`docs/hooks.md`): a hook script written for Claude Code, read
//! from the workspace's `.claude/settings.json`, governs the tool calls of a grandchild
//! context as it would Claude Code's own; a broken or hung hook is reported and its failure
//! mode applies; command and component hooks fire alike for every driver; the example's
//! policy component refuses and sends a stop back.

use serde_json::{Value, json};
use wonopcode_wasm_host::guest_paths::{MISBEHAVE, MISBEHAVE_HOOK, POLICY_HOOK};

use crate::support::{Scratch, calling, done, events, model_transcript, stderr, text, wonopcode};

/// A PreToolUse/PostToolUse hook in Python, as a Claude Code user writes one: it logs each
/// call with the context wonopcode adds, refuses `rm -rf`, moves every write under `safe/`,
/// and asks for the formatter after a write.
const GUARD: &str = r#"import json, os, sys
data = json.load(sys.stdin)
log = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "hooks.log")
with open(log, "a") as f:
    f.write("%s %s %s %s %s\n" % (data["hook_event_name"], data["tool_name"], data["context"], data["depth"], data["agent"]))
if data["hook_event_name"] == "PostToolUse":
    if data["tool_name"] == "Write":
        print(json.dumps({"decision": "block", "reason": "run the formatter on it"}))
    sys.exit(0)
if data["tool_name"] == "Bash" and "rm -rf" in data["tool_input"]["command"]:
    print("rm -rf is not allowed in this project", file=sys.stderr)
    sys.exit(2)
if data["tool_name"] == "Write":
    moved = dict(data["tool_input"], file_path="safe/" + data["tool_input"]["file_path"])
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": moved}}))
"#;

/// The settings file of a Claude Code project with the guard on Bash and Write.
const SETTINGS: &str = r#"{
  "permissions": {"allow": ["Bash(npm test:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py", "timeout": 30}]}
    ],
    "PostToolUse": [
      {"matcher": "Write", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py"}]}
    ]
  }
}"#;

/// Runs the misbehave guest on `prompt` in `s`'s workspace with `responses` for the native
/// grandchild it spawns, and extra flags; a home of its own (no settings of the machine's).
fn run(
    s: &Scratch,
    responses: &[(&str, Option<Value>, Vec<Value>)],
    extra: &[&str],
) -> std::process::Output {
    let t = s.outside("t.jsonl");
    std::fs::write(
        &t,
        model_transcript(
            json!({"id": "m", "provider": "test", "context_window": 200000, "max_output": 1000}),
            responses,
        ),
    )
    .unwrap();
    let home = s.outside("home");
    std::fs::create_dir_all(&home).unwrap();
    // A chain two deep: the guest's child spawns the native loop, whose calls are hooked.
    let spawn = json!({"module": {"named": "standard"}, "task": "Clean up and write out.txt."});
    wonopcode()
        .env("HOME", &home)
        // The workspace's hooks run only in a trusted workspace.
        .args([
            "--trust-workspace",
            "--json",
            "--yes",
            "--agent-loop",
            MISBEHAVE,
            "--replay",
        ])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .args(extra)
        .arg(format!("nest 1 spawn {spawn}"))
        .output()
        .unwrap()
}

/// The finished item of call `id`.
fn call_item(events: &[Value], id: &str) -> Value {
    events
        .iter()
        .find(|e| {
            e["type"] == "item.completed"
                && e["item"]["call_id"] == id
                && e["item"]["kind"] != "hook"
        })
        .unwrap_or_else(|| panic!("no result for call {id}: {events:?}"))["item"]
        .clone()
}

/// The hook items about call `id`.
fn hook_items(events: &[Value], id: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| {
            e["type"] == "item.completed"
                && e["item"]["kind"] == "hook"
                && e["item"]["call_id"] == id
        })
        .cloned()
        .collect()
}

#[test]
fn a_claude_code_hook_script_governs_a_grandchild_context() {
    let s = Scratch::new();
    s.file(".claude/settings.json", SETTINGS);
    s.file(".claude/hooks/guard.py", GUARD);
    s.file("build/old.o", "old");
    let out = run(
        &s,
        &[
            (
                "0.1.1",
                None,
                calling("b1", "bash", r#"{"command": "rm -rf build"}"#),
            ),
            (
                "0.1.1",
                None,
                calling(
                    "w1",
                    "write",
                    r#"{"path": "out.txt", "content": "hello\n"}"#,
                ),
            ),
            ("0.1.1", None, vec![text("Done."), done("end_turn")]),
        ],
        &[],
    );
    // The rm -rf never ran: the hook's stderr is what the model was told.
    let events = refused_in_the_grandchild(
        &s,
        &out,
        "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py",
        "rm -rf is not allowed in this project",
    );

    // The write went where the hook moved it, and the model heard the PostToolUse hook.
    assert!(!s.ws().join("out.txt").exists());
    assert_eq!(
        std::fs::read_to_string(s.ws().join("safe/out.txt")).unwrap(),
        "hello\n"
    );
    let wrote = call_item(&events, "w1");
    assert_eq!(wrote["status"], "completed", "{wrote}");
    assert!(
        wrote["arguments"]
            .as_str()
            .unwrap()
            .contains("safe/out.txt"),
        "{wrote}"
    );
    assert!(
        wrote["output"]
            .as_str()
            .unwrap()
            .ends_with(": run the formatter on it"),
        "{wrote}"
    );
    let decisions: Vec<Value> = hook_items(&events, "w1")
        .iter()
        .map(|h| h["item"]["decision"].clone())
        .collect();
    assert_eq!(decisions, [json!("rewrite"), json!("block")]);

    // Every call was seen with the grandchild's context, depth and loop, by Claude Code's
    // names.
    let log = std::fs::read_to_string(s.ws().join("hooks.log")).unwrap();
    assert_eq!(
        log,
        "PreToolUse Bash 0.1.1 2 standard\nPreToolUse Write 0.1.1 2 standard\nPostToolUse Write 0.1.1 2 standard\n"
    );
}

#[test]
fn the_sample_policy_component_refuses_the_same_call_in_a_grandchild() {
    let s = Scratch::new();
    s.file("build/old.o", "old");
    let config = s.config(&format!(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{{type: component, component: {POLICY_HOOK}, settings: {{deny: [\"rm -rf\"]}}}}]\n"
    ));
    let out = run(
        &s,
        &[
            (
                "0.1.1",
                None,
                calling("b1", "bash", r#"{"command": "rm -rf build"}"#),
            ),
            ("0.1.1", None, vec![text("Done."), done("end_turn")]),
        ],
        &["--config", &config],
    );
    refused_in_the_grandchild(
        &s,
        &out,
        "policy_hook.wasm",
        "the workspace policy refuses commands containing `rm -rf`",
    );
}

/// Checks that the grandchild's `rm -rf build` (call `b1`) was refused by the hook `hook`
/// saying `why`, before it ran, and reported once in the grandchild's context; the run's
/// events.
fn refused_in_the_grandchild(
    s: &Scratch,
    out: &std::process::Output,
    hook: &str,
    why: &str,
) -> Vec<Value> {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    let events = events(out);
    assert!(s.ws().join("build/old.o").exists());
    let refused = call_item(&events, "b1");
    assert_eq!(refused["status"], "declined", "{refused}");
    assert_eq!(
        refused["output"],
        format!("denied by a hook: `{hook}`: {why}")
    );
    let said = hook_items(&events, "b1");
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0]["context"], "0.1.1");
    assert_eq!(said[0]["item"]["event"], "PreToolUse");
    assert_eq!(said[0]["item"]["hook"], hook);
    assert_eq!(said[0]["item"]["decision"], "deny");
    assert_eq!(said[0]["item"]["tool"], "bash");
    events
}

#[test]
fn a_broken_or_hung_hook_is_reported_and_its_failure_mode_applies() {
    let s = Scratch::new();
    // wonopcode's config, in the same shape: a hook that prints broken JSON before a read
    // (refused: a check that cannot be read fails closed), and one that hangs before a
    // write but fails open.
    let config = s.config(
        "hooks:\n  PreToolUse:\n    - matcher: read\n      hooks:\n        - type: command\n          command: \"echo '{not json'\"\n    - matcher: write\n      hooks:\n        - type: command\n          command: sleep 30\n          timeout: 0.5\n          failure: open\n",
    );
    s.file("a.txt", "secret\n");
    let out = run(
        &s,
        &[
            ("0.1.1", None, calling("r1", "read", r#"{"path": "a.txt"}"#)),
            (
                "0.1.1",
                None,
                calling("w1", "write", r#"{"path": "b.txt", "content": "x"}"#),
            ),
            ("0.1.1", None, vec![text("Done."), done("end_turn")]),
        ],
        &["--config", &config],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let read = call_item(&events, "r1");
    assert_eq!(read["status"], "declined", "{read}");
    assert!(
        read["output"]
            .as_str()
            .unwrap()
            .contains("the hook failed (printed JSON that does not parse"),
        "{read}"
    );
    let hung = hook_items(&events, "w1");
    assert_eq!(hung[0]["item"]["decision"], "failed", "{hung:?}");
    assert_eq!(hung[0]["item"]["reason"], "ran past its timeout of 0.5 s");
    assert_eq!(std::fs::read_to_string(s.ws().join("b.txt")).unwrap(), "x");
}

/// A Stop hook that sends the turn on once, as Claude Code's documentation shows one.
const STOP: &str = r#"import json, sys
data = json.load(sys.stdin)
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "Run the tests before you stop."}))
"#;

#[test]
fn a_prompt_hook_adds_context_or_blocks_and_a_stop_hook_sends_the_turn_on() {
    let s = Scratch::new();
    s.file(".claude/hooks/stop.py", STOP);
    s.file(
        ".claude/settings.json",
        r#"{"hooks": {
          "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'This project indents with tabs.'"}]}],
          "Stop": [{"hooks": [{"type": "command", "command": "python3 .claude/hooks/stop.py"}]}]
        }}"#,
    );
    let t = s.transcript(
        "t.jsonl",
        &[
            vec![text("Done."), done("end_turn")],
            vec![text("Tests pass; done."), done("end_turn")],
        ],
    );
    let history = s.outside("h.jsonl");
    let out = wonopcode()
        .env("HOME", s.outside("home"))
        // The workspace's hooks run only in a trusted workspace.
        .arg("--trust-workspace")
        .args(["--json", "--yes", "--replay"])
        .arg(&t)
        .arg("--history")
        .arg(&history)
        .arg("-C")
        .arg(s.ws())
        .arg("Tidy up.")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let prompts = crate::parity::user_prompts(&history);
    assert_eq!(
        prompts,
        [
            "Tidy up.\n\nThis project indents with tabs.",
            "Run the tests before you stop."
        ]
    );
    let events = events(&out);
    let stops: Vec<&Value> = events
        .iter()
        .filter(|e| e["item"]["kind"] == "hook" && e["item"]["event"] == "Stop")
        .map(|e| &e["item"]["decision"])
        .collect();
    assert_eq!(stops, [&json!("block"), &json!("none")]);

    // A prompt hook that exits 2 keeps the prompt from the model and from the history.
    s.file(
        ".claude/settings.json",
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'no secrets in prompts' >&2; exit 2"}]}]}}"#,
    );
    let history = s.outside("h2.jsonl");
    let out = wonopcode()
        .env("HOME", s.outside("home"))
        // The workspace's hooks run only in a trusted workspace.
        .arg("--trust-workspace")
        .args(["--yes", "--replay"])
        .arg(&t)
        .arg("--history")
        .arg(&history)
        .arg("-C")
        .arg(s.ws())
        .arg("My key is sk-123.")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("a hook blocked the prompt: no secrets in prompts"),
        "{}",
        stderr(&out)
    );
    let stored = std::fs::read_to_string(&history).unwrap_or_default();
    assert!(!stored.contains("sk-123"), "{stored}");
}

/// Logs each hook call as `EVENT TOOL CONTEXT`, one line each.
const LOG: &str = r#"import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "hooks.log"), "a") as f:
    f.write("%s %s %s\n" % (data["hook_event_name"], data.get("tool", "-"), data["context"]))
"#;

#[test]
fn hooks_fire_alike_for_the_native_loop_the_embedded_guest_and_an_agent_file_child() {
    let every = r#"[{"hooks": [{"type": "command", "command": "python3 .claude/hooks/log.py"}]}]"#;
    let settings = format!(
        r#"{{"hooks": {{"UserPromptSubmit": {every}, "PreToolUse": {every}, "PostToolUse": {every}, "Stop": {every}, "SubagentStop": {every}}}}}"#
    );
    let work = [
        ("w", None, calling("r1", "read", r#"{"path": "a.txt"}"#)),
        ("w", None, vec![text("It says hi."), done("end_turn")]),
    ];
    // The hooked work of each run, in the context that does it: (event, tool) in order, a
    // child's stop under Claude Code's name for the root's.
    let hooked = |loop_flags: &[&str],
                  around: &[(&str, Option<Value>, Vec<Value>)],
                  context: &str| {
        let s = Scratch::new();
        s.file("a.txt", "hi\n");
        s.file(".claude/hooks/log.py", LOG);
        s.file(".claude/settings.json", &settings);
        s.file(
            ".wonopcode/agents/helper.md",
            "---\nname: helper\ndescription: Reads files.\ntools: Read\n---\nRead what you are asked to.\n",
        );
        let responses: Vec<(&str, Option<Value>, Vec<Value>)> = around
            .iter()
            .cloned()
            .chain(work.iter().map(|(_, m, c)| (context, m.clone(), c.clone())))
            .collect();
        let mut responses = responses;
        // The root's answer after its child, when there is a child.
        if context != "0" {
            responses.push(("0", None, vec![text("Done."), done("end_turn")]));
        }
        let t = s.outside("t.jsonl");
        std::fs::write(
            &t,
            model_transcript(
                json!({"id": "m", "provider": "test", "context_window": 200000, "max_output": 1000}),
                &responses,
            ),
        )
        .unwrap();
        // The same events also go to a component hook that has no say; it is seen
        // through its `hook` items.
        let component = format!(
            "[{{hooks: [{{type: component, component: {MISBEHAVE_HOOK}, settings: {{do: pass}}}}]}}]"
        );
        let config = s.config(&format!(
            "hooks:\n  UserPromptSubmit: {component}\n  PreToolUse: {component}\n  PostToolUse: {component}\n  Stop: {component}\n  SubagentStop: {component}\n"
        ));
        let out = wonopcode()
            .env("HOME", s.outside("home"))
            // The workspace's hooks run only in a trusted workspace.
            .arg("--trust-workspace")
            .arg("--config")
            .arg(&config)
            .args(["--json", "--yes", "--replay"])
            .arg(&t)
            .arg("-C")
            .arg(s.ws())
            .args(loop_flags)
            .arg("Read a.txt.")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{loop_flags:?}: {}",
            stderr(&out)
        );
        let by_command: Vec<String> = std::fs::read_to_string(s.ws().join("hooks.log"))
            .unwrap()
            .lines()
            .filter(|l| l.ends_with(&format!(" {context}")))
            .map(|l| {
                l.replace("SubagentStop", "Stop")
                    .replace(&format!(" {context}"), "")
            })
            .collect();
        let by_component: Vec<String> = events(&out)
            .iter()
            .filter(|e| e["item"]["hook"] == "misbehave_hook.wasm" && e["context"] == context)
            .map(|e| {
                let event = e["item"]["event"].as_str().unwrap_or_default();
                let tool = e["item"]["tool"].as_str().unwrap_or("-");
                format!("{} {tool}", event.replace("SubagentStop", "Stop"))
            })
            .collect();
        (by_command, by_component)
    };
    let spawn = calling(
        "s1",
        "spawn_agent",
        r#"{"agent": "helper", "task": "Read a.txt."}"#,
    );
    let wait = calling("w1", "wait", r#"{}"#);
    let table = [
        ("StandardLoop", hooked(&[], &[], "0")),
        ("embedded guest", hooked(&["--loop-type", "wasm"], &[], "0")),
        (
            "agent file child",
            hooked(
                &["--agents", "helper"],
                &[("0", None, spawn), ("0", None, wait)],
                "0.1",
            ),
        ),
    ];
    let expected = [
        "UserPromptSubmit -",
        "PreToolUse read",
        "PostToolUse read",
        "Stop -",
    ];
    for (driver, (by_command, by_component)) in &table {
        assert_eq!(by_command, &expected, "{driver}: the command hook");
        assert_eq!(by_component, &expected, "{driver}: the component hook");
    }
}

#[test]
fn the_examples_policy_component_refuses_rm_and_sends_the_first_done_back() {
    let s = Scratch::new();
    crate::support::copy_dir(
        &crate::support::repo_root().join("examples/agents/workspace"),
        &s.ws(),
    );
    let example = crate::support::repo_root().join("examples/hooks");
    let prompt = std::fs::read_to_string(example.join("prompt.txt")).unwrap();
    let out = wonopcode()
        .env("HOME", s.outside("home"))
        // The workspace's hooks run only in a trusted workspace.
        .arg("--trust-workspace")
        .arg("--config")
        .arg(example.join("config.yaml"))
        .args(["--json", "--yes", "--replay"])
        .arg(example.join("transcript.jsonl"))
        .arg("-C")
        .arg(s.ws())
        .arg(prompt.trim_end())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    // `rm -rf build` is refused by the component, before anyone is asked.
    let refused = hook_items(&events, "toolu_01");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["item"]["event"], "PreToolUse");
    assert_eq!(refused[0]["item"]["hook"], "policy_hook.wasm");
    assert_eq!(refused[0]["item"]["decision"], "deny");
    assert_eq!(call_item(&events, "toolu_01")["status"], "declined");
    // The first "done" after the edit is sent back; the one after `make test` stands.
    let stops: Vec<&str> = events
        .iter()
        .filter(|e| e["item"]["kind"] == "hook" && e["item"]["event"] == "Stop")
        .map(|e| e["item"]["decision"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(stops, ["block", "none"]);
    assert_eq!(call_item(&events, "toolu_03")["command"]["exit_code"], 0);
    let usage = std::process::Command::new("sh")
        .arg(s.ws().join("greet.sh"))
        .arg("-h")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&usage.stdout),
        "usage: sh greet.sh [NAME]\n"
    );
}

/// A `PermissionRequest` hook that approves `echo` commands and refuses the rest.
const APPROVE: &str = r#"import json, sys
data = json.load(sys.stdin)
command = data["tool_input"]["command"]
if command.startswith("echo "):
    decision = {"behavior": "allow"}
else:
    decision = {"behavior": "deny", "message": "only echo is approved here"}
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}))
"#;

#[test]
fn permission_request_and_ask_hooks_answer_for_the_person_and_the_session_end_is_heard() {
    let s = Scratch::new();
    s.file("secret.txt", "s3cret\n");
    // The user's own settings: a hook of the workspace's may refuse, never approve.
    let home = s.outside("home");
    std::fs::create_dir_all(home.join(".claude/hooks")).unwrap();
    let approve = home.join(".claude/hooks/approve.py");
    std::fs::write(&approve, APPROVE).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        r#"{"hooks": {
          "PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 \"$HOME\"/.claude/hooks/approve.py"}]}],
          "PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command",
            "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"secrets need a person\"}}'"}]}],
          "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > ended.json"}]}]
        }}"#,
    )
    .unwrap();
    let t = s.transcript(
        "t.jsonl",
        &[
            calling("b1", "bash", r#"{"command": "echo approved > a.txt"}"#),
            calling("b2", "bash", r#"{"command": "touch b.txt"}"#),
            calling("r1", "read", r#"{"path": "secret.txt"}"#),
            vec![text("Done."), done("end_turn")],
        ],
    );
    // No --yes and no terminal: nobody can be asked, so only a hook can approve.
    let out = wonopcode()
        .env("HOME", &home)
        .args(["--json", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("Go.")
        .output()
        .unwrap();
    // The read the hook wanted asked is the one call nobody could approve (exit 6).
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 tool call(s) needed approval"));
    let events = events(&out);
    let decision = |id: &str| hook_items(&events, id)[0]["item"]["decision"].clone();
    assert_eq!(decision("b1"), "allow");
    assert_eq!(call_item(&events, "b1")["status"], "completed");
    assert!(s.ws().join("a.txt").is_file());
    assert_eq!(decision("b2"), "deny");
    let refused = call_item(&events, "b2");
    assert!(
        refused["output"]
            .as_str()
            .is_some_and(|o| o.contains("only echo is approved here")),
        "{refused}"
    );
    assert!(!s.ws().join("b.txt").exists());
    // `ask` on a read the rules allow: put to the person, and nobody is there.
    assert_eq!(decision("r1"), "ask");
    let read = call_item(&events, "r1");
    assert!(
        read["output"]
            .as_str()
            .is_some_and(|o| o.contains("nobody can be asked")),
        "{read}"
    );
    let ended: Value =
        serde_json::from_str(&std::fs::read_to_string(s.ws().join("ended.json")).unwrap()).unwrap();
    assert_eq!(ended["hook_event_name"], "SessionEnd");
    assert_eq!(ended["reason"], "other");
}

/// An agent file with hooks of its own: it may run no command, and its first stop is sent
/// back (a `Stop` hook in an agent file runs at its end as a child, as in Claude Code).
const CAREFUL: &str = r#"---
name: careful
description: Changes nothing by command.
tools: Bash, Write
hooks:
  PreToolUse:
    - matcher: Bash
      hooks: [{type: command, command: "echo 'careful agents run no commands' >&2; exit 2"}]
  Stop:
    - hooks: [{type: command, command: "python3 -c \"import json,sys; d=json.load(sys.stdin); print('' if d['stop_hook_active'] else json.dumps({'decision': 'block', 'reason': 'Say DONE in capitals.'}))\""}]
---
Do what you are asked, carefully.
"#;

#[test]
fn an_agents_own_hooks_hold_in_its_context_only_and_the_inherited_ones_hold_everywhere() {
    let s = Scratch::new();
    s.file(".wonopcode/agents/careful.md", CAREFUL);
    s.file(
        ".wonopcode/agents/free.md",
        "---\nname: free\ndescription: Runs commands.\ntools: Bash, Write\n---\nDo it.\n",
    );
    // The run's own hook, which every context inherits: no writes anywhere.
    s.file(
        ".claude/settings.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo 'no writes in this run' >&2; exit 2"}]}]}}"#,
    );
    let spawn = |agent: &str| {
        calling(
            &format!("s-{agent}"),
            "spawn_agent",
            &json!({"agent": agent, "task": "Work."}).to_string(),
        )
    };
    let write = |id: &str| calling(id, "write", r#"{"path": "x.txt", "content": "x"}"#);
    let responses = [
        ("0", None, spawn("careful")),
        ("0", None, calling("w1", "wait", "{}")),
        (
            "0.1",
            None,
            calling("c-bash", "bash", r#"{"command": "echo hi > c.txt"}"#),
        ),
        ("0.1", None, write("c-write")),
        ("0.1", None, vec![text("done"), done("end_turn")]),
        ("0.1", None, vec![text("DONE"), done("end_turn")]),
        ("0", None, spawn("free")),
        ("0", None, calling("w2", "wait", "{}")),
        (
            "0.2",
            None,
            calling("f-bash", "bash", r#"{"command": "echo hi > f.txt"}"#),
        ),
        ("0.2", None, write("f-write")),
        ("0.2", None, vec![text("done"), done("end_turn")]),
        ("0", None, vec![text("Both finished."), done("end_turn")]),
    ];
    let t = s.outside("t.jsonl");
    std::fs::write(
        &t,
        model_transcript(
            json!({"id": "m", "provider": "test", "context_window": 200000, "max_output": 1000}),
            &responses,
        ),
    )
    .unwrap();
    let out = wonopcode()
        .env("HOME", s.outside("home"))
        // The workspace's hooks run only in a trusted workspace.
        .arg("--trust-workspace")
        .args(["--json", "--yes", "--agents", "careful,free", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("Have both agents work.")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let status = |id: &str| call_item(&events, id)["status"].clone();
    // The agent's own hook refuses its command; the inherited one its write.
    assert_eq!(status("c-bash"), "declined");
    assert!(!s.ws().join("c.txt").exists());
    assert_eq!(status("c-write"), "declined");
    // The other agent runs its command; the inherited hook still refuses its write.
    assert_eq!(status("f-bash"), "completed");
    assert!(s.ws().join("f.txt").is_file());
    assert_eq!(status("f-write"), "declined");
    // The careful agent's first stop was sent back, in its own context only.
    let stops: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["item"]["kind"] == "hook" && e["item"]["event"] == "SubagentStop")
        .map(|e| {
            let context = e["context"].as_str().unwrap_or_default().to_owned();
            let decision = e["item"]["decision"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (context, decision)
        })
        .collect();
    assert_eq!(
        stops,
        [
            ("0.1".to_owned(), "block".to_owned()),
            ("0.1".to_owned(), "none".to_owned())
        ]
    );
}
