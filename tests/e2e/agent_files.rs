//! Agents written as Markdown (`docs/agents.md`) on the real binary: a Claude Code subagent
//! file, as its documentation writes one, runs by name and is spawned by the sample
//! orchestrator; its tool list holds and its model is the one it names.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use wonopcode_wasm_host::guest_paths::ORCHESTRATOR;

use crate::support::{
    Scratch, answer, call, calling, done, events, model_transcript, stderr, wonopcode,
};

/// A subagent file in the shape of Claude Code's documentation.
const CODE_REVIEWER: &str = "---
name: code-reviewer
description: Expert code review specialist. Proactively reviews code for quality, security, and maintainability. Use immediately after writing or modifying code.
tools: Read, Grep, Glob
model: haiku
color: blue
---

You are a senior code reviewer ensuring high standards of code quality and security.

When invoked:
1. Run git diff to see recent changes
2. Focus on modified files
3. Begin review immediately
";

/// The recorded model of Claude Code's `haiku`.
fn haiku() -> Value {
    json!({"id": "claude-haiku-4-5", "provider": "anthropic", "context_window": 200000,
           "max_output": 64000})
}

/// A transcript of `(context, model, chunks)` responses under a header model of `test/m`.
fn transcript(responses: &[(&str, Option<Value>, Vec<Value>)]) -> String {
    model_transcript(
        json!({"id": "m", "provider": "test", "context_window": 200000, "max_output": 1000}),
        responses,
    )
}

/// A workspace with the reviewer in `.claude/agents/`, and a home of its own (no user
/// agents or config of the machine's).
struct AgentScratch {
    scratch: Scratch,
    home: PathBuf,
}

impl AgentScratch {
    fn new() -> Self {
        let scratch = Scratch::new();
        let agents = scratch.ws().join(".claude/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(agents.join("code-reviewer.md"), CODE_REVIEWER).unwrap();
        scratch.file(
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 { a - b }\n",
        );
        let home = scratch.outside("home");
        std::fs::create_dir_all(&home).unwrap();
        Self { scratch, home }
    }

    fn run(&self, responses: &[(&str, Option<Value>, Vec<Value>)], extra: &[&str]) -> Output {
        let t = self.scratch.outside("t.jsonl");
        std::fs::write(&t, transcript(responses)).unwrap();
        wonopcode()
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".data"))
            .env_remove("WONOPCODE_AGENT_LOOPS_PATH")
            .args(["--yes", "--json", "--replay"])
            .arg(&t)
            .arg("-C")
            .arg(self.scratch.ws())
            .args(extra)
            .arg("Review src/lib.rs.")
            .output()
            .unwrap()
    }
}

/// The finished tool item of call `id`.
fn result_of(events: &[Value], id: &str) -> Value {
    events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["call_id"] == id)
        .unwrap_or_else(|| panic!("no result for call {id}: {events:?}"))["item"]
        .clone()
}

#[test]
fn a_claude_code_agent_file_runs_by_name_and_keeps_to_its_tools() {
    let s = AgentScratch::new();
    let out = s.run(
        &[
            (
                "0",
                None,
                calling("b1", "bash", r#"{"command": "touch made.txt"}"#),
            ),
            (
                "0",
                None,
                calling("r1", "read", r#"{"path": "src/lib.rs"}"#),
            ),
            ("0", None, answer("`add` subtracts.")),
        ],
        &["--agent-loop-name", "code-reviewer"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let started = events
        .iter()
        .find(|e| e["type"] == "session.started")
        .unwrap();
    assert_eq!(started["loop_name"], "code-reviewer");
    let refused = result_of(&events, "b1");
    assert_eq!(refused["status"], "failed", "{refused}");
    assert!(
        refused["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("unknown tool `bash`")),
        "{refused}"
    );
    assert!(!s.scratch.ws().join("made.txt").exists());
    let read = result_of(&events, "r1");
    assert!(read["output"].as_str().unwrap().contains("a - b"), "{read}");
    // The field wonopcode does not use is named once, on stderr.
    let err = stderr(&out);
    assert_eq!(
        err.matches("fields wonopcode does not use, ignored: color")
            .count(),
        1,
        "{err}"
    );
}

/// A registry with the sample orchestrator, and a config that names the reviewer as one
/// of its specialists.
fn orchestrated(s: &AgentScratch) -> Vec<String> {
    let loops = s.scratch.outside("loops");
    std::fs::create_dir_all(&loops).unwrap();
    std::fs::write(
        loops.join("registry.yaml"),
        format!("modules:\n  orchestrator:\n    path: {ORCHESTRATOR}\n"),
    )
    .unwrap();
    let config = s
        .scratch
        .config("guest:\n  orchestrator.specialists: code-reviewer\n");
    vec![
        "--config".into(),
        config,
        "--loops-dir".into(),
        loops.display().to_string(),
        "--agent-loop-name".into(),
        "orchestrator".into(),
    ]
}

#[test]
fn the_orchestrator_spawns_an_agent_file_on_the_model_it_names() {
    let s = AgentScratch::new();
    let args = orchestrated(&s);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let step = json!({"specialist": "code-reviewer", "task": "Review src/lib.rs."}).to_string();
    let out = s.run(
        &[
            ("0", None, calling("d1", "delegate", &step)),
            (
                "0.1",
                Some(haiku()),
                calling("b1", "bash", r#"{"command": "touch made.txt"}"#),
            ),
            (
                "0.1",
                Some(haiku()),
                calling("r1", "read", r#"{"path": "src/lib.rs"}"#),
            ),
            ("0.1", Some(haiku()), answer("`add` subtracts.")),
            ("0", None, answer("The reviewer found a bug in `add`.")),
        ],
        &args,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let started = events
        .iter()
        .find(|e| e["type"] == "context.started" && e["context"] == "0.1")
        .unwrap_or_else(|| panic!("no child: {events:?}"));
    assert_eq!(started["module"], "code-reviewer");
    assert!(
        result_of(&events, "b1")["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("unknown tool `bash`"))
    );
    assert!(!s.scratch.ws().join("made.txt").exists());
    let completed = events
        .iter()
        .find(|e| e["type"] == "context.completed" && e["context"] == "0.1")
        .unwrap();
    assert_eq!(completed["status"], "completed", "{completed}");
    let delegated = result_of(&events, "d1");
    assert!(
        delegated["output"]
            .as_str()
            .is_some_and(|o| o.contains("[code-reviewer]") && o.contains("`add` subtracts.")),
        "{delegated}"
    );
}

#[test]
fn an_agent_model_that_cannot_be_opened_fails_the_spawn_instead_of_using_another() {
    let s = AgentScratch::new();
    let args = orchestrated(&s);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let step = json!({"specialist": "code-reviewer", "task": "Review."}).to_string();
    // The recording has no haiku: the child cannot have its model, and does not start on
    // the parent's.
    let out = s.run(
        &[
            ("0", None, calling("d1", "delegate", &step)),
            ("0", None, answer("The reviewer could not start.")),
        ],
        &args,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let delegated = result_of(&events, "d1");
    let said = delegated["output"].as_str().unwrap_or_default();
    assert!(
        said.contains("the child's preferred model")
            && said.contains("provider `anthropic` model `claude-haiku-4-5`"),
        "{delegated}"
    );
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "context.started" && e["context"] == "0.1"),
        "no child started on another model"
    );
}

#[test]
fn agent_files_are_listed_validated_and_their_errors_name_file_and_line() {
    let s = AgentScratch::new();
    let own = s.scratch.ws().join(".wonopcode/agents");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        own.join("broken.md"),
        "---\nname: broken\ntimeout: soon\n---\nx\n",
    )
    .unwrap();
    let list = wonopcode()
        .env("HOME", &s.home)
        .env("XDG_CONFIG_HOME", s.home.join(".config"))
        .env("XDG_DATA_HOME", s.home.join(".data"))
        .args(["loops", "list", "--json", "-C"])
        .arg(s.scratch.ws())
        .output()
        .unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let listing: Value = serde_json::from_slice(&list.stdout).unwrap();
    let reviewer = listing["loops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "code-reviewer")
        .unwrap_or_else(|| panic!("{listing}"));
    assert_eq!(reviewer["location"]["kind"], "agent", "{reviewer}");
    assert_eq!(reviewer["source"]["kind"], "agent_file", "{reviewer}");
    assert!(
        reviewer["description"]
            .as_str()
            .unwrap()
            .starts_with("Expert code review")
    );
    let warnings = listing["warnings"].to_string();
    let broken = Path::new(".wonopcode/agents/broken.md");
    assert!(
        warnings.contains(&format!("{}:3: `timeout: soon`", broken.display())),
        "{warnings}"
    );

    // Validation checks what an agent names: its tools and its provider.
    std::fs::write(
        own.join("typo.md"),
        "---
tools: [read, reed]
---
Read.
",
    )
    .unwrap();
    let validate = |name: &str| {
        wonopcode()
            .env("HOME", &s.home)
            .env("XDG_CONFIG_HOME", s.home.join(".config"))
            .env("XDG_DATA_HOME", s.home.join(".data"))
            .args(["loops", "validate", name, "-C"])
            .arg(s.scratch.ws())
            .output()
            .unwrap()
    };
    let good = validate("code-reviewer");
    let said = String::from_utf8_lossy(&good.stdout);
    assert_eq!(good.status.code(), Some(0), "{said}{}", stderr(&good));
    assert!(
        said.contains("ok    tools             read, grep, glob"),
        "{said}"
    );
    assert!(said.contains("anthropic/claude-haiku-4-5"), "{said}");
    assert!(said.ends_with("valid: agent `code-reviewer`\n"), "{said}");
    let bad = validate("typo");
    let said = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "FAIL  tools             `reed` is not a wonopcode tool (did you mean `read`?)"
        ),
        "{said}"
    );

    // And its generation settings, against the model it names, before any run.
    std::fs::write(
        own.join("deep.md"),
        "---\nprovider: openai\nmodel: gpt-4o\nthinking: high\n---\nThink.\n",
    )
    .unwrap();
    let bad = validate("deep");
    let said = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{said}");
    assert!(
        said.contains("FAIL  generation        --thinking: model `gpt-4o` (openai) does not think"),
        "{said}"
    );
    std::fs::write(
        own.join("deep.md"),
        "---\nprovider: anthropic\nmodel: claude-haiku-4-5\nthinking: 4000\nmax-output-tokens: 16000\n---\nThink.\n",
    )
    .unwrap();
    let good = validate("deep");
    let said = String::from_utf8_lossy(&good.stdout);
    assert_eq!(good.status.code(), Some(0), "{said}");
    assert!(
        said.contains("ok    generation        thinking 4000 tokens, at most 16000 output tokens for anthropic/claude-haiku-4-5"),
        "{said}"
    );
}

/// A skill in Claude Code's layout, with a file beside its instructions.
fn release_skill(s: &AgentScratch) {
    let dir = s.scratch.ws().join(".claude/skills/release");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: release\ndescription: \"Cut a release: changelog, tag, notes.\"\n---\n# Releasing\n\nFill in templates/notes.md, then tag.\n",
    )
    .unwrap();
    std::fs::write(dir.join("templates/notes.md"), "## What changed\n").unwrap();
    s.scratch.file("secret.txt", "not a skill's file\n");
}

#[test]
fn a_skill_is_listed_by_its_description_and_loaded_when_asked() {
    let s = AgentScratch::new();
    release_skill(&s);
    let out = s.run(
        &[
            ("0", None, calling("s1", "skill", r#"{"name": "release"}"#)),
            (
                "0",
                None,
                calling(
                    "s2",
                    "skill",
                    r#"{"name": "release", "file": "templates/notes.md"}"#,
                ),
            ),
            (
                "0",
                None,
                calling(
                    "s3",
                    "skill",
                    r#"{"name": "release", "file": "../../../secret.txt"}"#,
                ),
            ),
            ("0", None, answer("Released.")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let loaded = result_of(&events, "s1")["output"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        loaded.starts_with("# Skill `release`\n\n# Releasing"),
        "{loaded}"
    );
    assert!(loaded.contains("templates/notes.md"), "{loaded}");
    assert_eq!(result_of(&events, "s2")["output"], "## What changed\n");
    let refused = result_of(&events, "s3");
    assert_eq!(refused["status"], "failed");
    assert!(
        refused["output"]
            .as_str()
            .unwrap()
            .contains("is not a file of the skill `release`"),
        "{refused}"
    );
}

#[test]
fn an_agent_sees_only_the_skills_it_names() {
    let s = AgentScratch::new();
    release_skill(&s);
    std::fs::write(
        s.scratch.ws().join(".claude/agents/writer.md"),
        "---\nname: writer\nskills: [docs-style]\n---\nWrite docs.\n",
    )
    .unwrap();
    let out = s.run(
        &[
            ("0", None, calling("s1", "skill", r#"{"name": "release"}"#)),
            ("0", None, answer("No release skill here.")),
        ],
        &["--agent-loop-name", "writer"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refused = result_of(&events(&out), "s1");
    assert_eq!(refused["status"], "failed", "{refused}");
    assert_eq!(
        refused["output"], "`skill` failed: no skill named `release`",
        "{refused}"
    );
}

/// A registry with the sample coder guest, for spawning a WebAssembly module by name.
fn coder_registry(s: &AgentScratch) -> String {
    let loops = s.scratch.outside("loops");
    std::fs::create_dir_all(&loops).unwrap();
    std::fs::write(
        loops.join("registry.yaml"),
        format!(
            "modules:\n  coder:\n    path: {}\n    description: changes files\n",
            wonopcode_wasm_host::guest_paths::CODER
        ),
    )
    .unwrap();
    loops.display().to_string()
}

/// Several calls in one response.
fn calls(list: &[(&str, &str, Value)]) -> Vec<Value> {
    let mut chunks: Vec<Value> = list
        .iter()
        .flat_map(|(id, name, args)| call(id, name, &args.to_string()))
        .collect();
    chunks.push(done("tool_use"));
    chunks
}

#[test]
fn the_native_loop_delegates_to_an_agent_file_and_a_module_and_follows_up() {
    let s = AgentScratch::new();
    let loops = coder_registry(&s);
    let record = s.scratch.outside("recorded.jsonl");
    let responses = [
        (
            "0",
            None,
            calls(&[
                (
                    "s1",
                    "spawn_agent",
                    json!({"agent": "code-reviewer", "task": "Review src/lib.rs."}),
                ),
                (
                    "s2",
                    "spawn_agent",
                    json!({"agent": "coder", "task": "Add a test."}),
                ),
            ]),
        ),
        ("0.1", Some(haiku()), answer("`add` subtracts.")),
        ("0.2", None, answer("Added a test.")),
        ("0", None, calls(&[("w1", "wait", json!({}))])),
        (
            "0",
            None,
            calls(&[(
                "f1",
                "send_input",
                json!({"id": "0.1", "message": "Is it tested?"}),
            )]),
        ),
        ("0.1", Some(haiku()), answer("No test covers it.")),
        ("0", None, calls(&[("w2", "wait", json!({"ids": ["0.1"]}))])),
        (
            "0",
            None,
            calls(&[
                ("c1", "close_agent", json!({"id": "0.1"})),
                ("c2", "close_agent", json!({"id": "0.2"})),
                ("l1", "list_agents", json!({})),
            ]),
        ),
        ("0", None, answer("Reviewed and tested.")),
    ];
    let record_arg = record.display().to_string();
    let flags = [
        "--agents",
        "code-reviewer,coder",
        "--loops-dir",
        &loops,
        "--record",
        &record_arg,
    ];
    let out = s.run(&responses, &flags);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let output = |id: &str| {
        result_of(&events, id)["output"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(output("s1").starts_with("agent 0.1 (`code-reviewer`) is working on it"));
    assert!(output("s2").starts_with("agent 0.2 (`coder`) is working on it"));
    let waited = output("w1");
    assert!(
        waited.contains("[0.1] completed\n`add` subtracts.")
            && waited.contains("[0.2] completed\nAdded a test."),
        "{waited}"
    );
    assert_eq!(output("w2"), "[0.1] completed\nNo test covers it.");
    assert_eq!(output("c1"), "closed agent 0.1 (`code-reviewer`)");
    assert!(
        output("l1").starts_with("no agents\nmay spawn: code-reviewer, coder"),
        "{}",
        output("l1")
    );
    let modules: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "context.started")
        .map(|e| {
            (
                e["context"].as_str().unwrap(),
                e["module"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        modules,
        [
            ("0.1", "code-reviewer"),
            ("0.2", "coder"),
            ("0.1", "code-reviewer")
        ]
    );
    // The follow-up went to the same child, its first exchange still in its history.
    let recorded = std::fs::read_to_string(&record).unwrap();
    let follow_up: Value = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["context"] == "0.1" && r["turn"] == 1)
        .unwrap_or_else(|| panic!("{recorded}"));
    // The record lists the messages after those it kept from the context's previous one.
    assert_eq!(
        follow_up["request"]["kept"].as_u64().unwrap_or(0) as usize
            + follow_up["request"]["messages"].as_array().unwrap().len(),
        3,
        "{follow_up}"
    );
    // The children's usage rolls up into the root's turn.
    let turn = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert!(turn["usage"].is_object(), "{turn}");
}

#[test]
fn a_spawn_past_the_live_limit_is_refused_and_closing_frees_a_place() {
    let s = AgentScratch::new();
    let config = s.scratch.config("contexts:\n  max_live: 2\n");
    let spawn = |id: &str| {
        (
            id.to_owned(),
            json!({"agent": "code-reviewer", "task": "Review."}),
        )
    };
    let (a, b, c) = (spawn("s1"), spawn("s2"), spawn("s3"));
    let responses = [
        ("0", None, calls(&[(&a.0, "spawn_agent", a.1.clone())])),
        ("0.1", Some(haiku()), answer("ok")),
        ("0", None, calls(&[(&b.0, "spawn_agent", b.1.clone())])),
        (
            "0",
            None,
            calls(&[("c1", "close_agent", json!({"id": "0.1"}))]),
        ),
        ("0", None, calls(&[(&c.0, "spawn_agent", c.1.clone())])),
        ("0.3", Some(haiku()), answer("ok")),
        ("0", None, calls(&[("w1", "wait", json!({}))])),
        ("0", None, answer("done")),
    ];
    let out = s.run(&responses, &["--config", &config, "--agents", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let refused = result_of(&events, "s2");
    assert_eq!(refused["status"], "failed", "{refused}");
    assert!(
        refused["output"]
            .as_str()
            .unwrap()
            .contains("the limit of 2 live contexts in this run is reached"),
        "{refused}"
    );
    assert!(
        result_of(&events, "s3")["output"]
            .as_str()
            .unwrap()
            .starts_with("agent 0.3"),
        "a closed agent's place is free again"
    );
}
