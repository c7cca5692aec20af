//! A child that suspends suspends its parents up to the root (`docs/durability.md`), on the
//! real binary: the sample orchestrator's coders wait for approval of their edits, the run
//! ends `suspended` naming each waiting call in its context, and `wonopcode resume` (or
//! `--resume`) goes on — the person's answer reaching the child that asked, an approval
//! letting its call run — to the same end as a run that never stopped, with no response asked
//! of the model twice. The native loop's `wait` suspends the same way.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use crate::resume::{
    answer, changed_files, example_with, example_workspace, only_run, recorded, resume, run,
    uninterrupted,
};
use crate::support::{answer as answering, call, command, done, model_transcript};

/// The calls a root's `turn.completed` says the run waits on, as `CONTEXT:ID (tool)`.
fn waiting(events: &[Value]) -> BTreeSet<String> {
    let completed = events
        .iter()
        .rfind(|e| e["type"] == "turn.completed" && e["context"] == "0")
        .unwrap_or_else(|| panic!("no root turn.completed: {events:?}"));
    assert_eq!(completed["status"], "suspended", "{completed}");
    completed["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{}:{} ({})", p["context"], p["id"], p["name"]).replace('"', ""))
        .collect()
}

/// The finished item of call `id` in `context`.
fn item_of(events: &[Value], context: &str, id: &str) -> Value {
    events
        .iter()
        .rfind(|e| {
            e["type"] == "item.completed" && e["context"] == context && e["item"]["call_id"] == id
        })
        .unwrap_or_else(|| panic!("no item {context}:{id}"))["item"]
        .clone()
}

/// `run.json`'s status of the run in `dir`.
fn status_of(dir: &Path) -> String {
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    meta["status"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn the_orchestrators_coders_suspend_the_tree_and_an_approval_finishes_it_as_if_never_stopped() {
    let (server, whole, events) = uninterrupted();
    let expected = (answer(&events), changed_files(&whole.ws()));

    let s = example_workspace();
    let runs = s.outside("runs");
    let untouched = changed_files(&s.ws());
    let (events, code, err) = run(&mut example_with(
        &server,
        &s.ws(),
        &runs,
        &["--unattended", "suspend"],
    ));
    assert_eq!(code, Some(3), "{err}");
    // Both coders asked to edit; each call is named in the context that made it.
    let expected_waiting: BTreeSet<String> = ["0.2:toolu_06 (edit)", "0.3:toolu_09 (edit)"]
        .map(str::to_owned)
        .into();
    assert_eq!(waiting(&events), expected_waiting);
    assert!(
        err.contains("--answer CONTEXT:CALL_ID=TEXT")
            && err.contains("0.2:toolu_06 (edit)")
            && err.contains("0.3:toolu_09 (edit)"),
        "{err}"
    );
    assert_eq!(changed_files(&s.ws()), untouched, "nothing ran unapproved");
    let (id, dir) = only_run(&runs);
    assert_eq!(status_of(&dir), "suspended");
    let kept = recorded(&dir);

    let asked_before = server.asked().len();
    let (events, code, err) = run(&mut resume(&server, &runs, &id, &["--", "--yes"]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!((answer(&events), changed_files(&s.ws())), expected);
    let again: Vec<String> = server.asked()[asked_before..]
        .iter()
        .filter(|l| kept.contains(*l))
        .cloned()
        .collect();
    assert!(again.is_empty(), "asked again: {again:?}");
}

#[test]
fn an_answer_goes_to_the_child_that_asked_and_the_tree_goes_on() {
    let (server, _, _) = uninterrupted();
    let s = example_workspace();
    let runs = s.outside("runs");
    let readme = std::fs::read_to_string(s.ws().join("README.md")).unwrap();
    let (_, code, err) = run(&mut example_with(
        &server,
        &s.ws(),
        &runs,
        &["--unattended", "suspend"],
    ));
    assert_eq!(code, Some(3), "{err}");
    let (id, _) = only_run(&runs);

    // An answer naming no waiting call is refused in one line that names those that wait.
    let (_, code, err) = run(&mut resume(
        &server,
        &runs,
        &id,
        &["--answer", "0.2:nope=x"],
    ));
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("0.2:nope") && err.contains("0.3:toolu_09 (edit)"),
        "{err}"
    );

    // `--resume` finds the suspended run; the bare id names the one call that has it, and
    // --yes approves the other coder's edit.
    let told = "README.md is documented by hand; leave it.";
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .arg("--resume")
        .args(["--answer", &format!("toolu_09={told}"), "--yes"])
        .arg("-C")
        .arg(s.ws());
    let (events, code, err) = run(&mut cmd);
    assert_eq!(code, Some(0), "{err}");
    let answered = item_of(&events, "0.3", "toolu_09");
    assert_eq!(answered["output"], told, "{answered}");
    assert_eq!(answered["status"], "completed", "{answered}");
    let (greet, readme_after) = changed_files(&s.ws());
    assert!(greet.contains("shout"), "{greet}");
    assert_eq!(readme_after, readme, "the answered edit did not run");
}

/// An agent that writes a file.
const SCRIBE: &str = "---
name: scribe
description: Writes notes.
tools: Write
---

You write notes.
";

#[test]
fn the_native_loops_wait_on_a_suspended_agent_suspends_the_root() {
    let s = crate::support::Scratch::new();
    let agents = s.ws().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("scribe.md"), SCRIBE).unwrap();
    let home = s.outside("home");
    let runs = s.outside("runs");
    let calls = |id: &str, name: &str, args: Value| {
        let mut chunks = call(id, name, &args.to_string());
        chunks.push(done("tool_use"));
        chunks
    };
    let transcript = s.outside("t.jsonl");
    std::fs::write(
        &transcript,
        model_transcript(
            json!({"id": "m", "provider": "test", "context_window": 200000, "max_output": 1000}),
            &[
                (
                    "0",
                    None,
                    calls(
                        "s1",
                        "spawn_agent",
                        json!({"agent": "scribe", "task": "Write notes.md."}),
                    ),
                ),
                (
                    "0.1",
                    None,
                    calls(
                        "w1",
                        "write",
                        json!({"path": "notes.md", "content": "hello\n"}),
                    ),
                ),
                ("0", None, calls("w2", "wait", json!({}))),
                ("0.1", None, answering("Wrote notes.md.")),
                ("0", None, answering("The scribe is done.")),
            ],
        ),
    )
    .unwrap();
    let wonopcode = |args: &[&str]| {
        let mut cmd = command();
        cmd.env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".data"))
            .env("WONOPCODE_RUNS_DIR", &runs)
            .env_remove("WONOPCODE_AGENT_LOOPS_PATH")
            .args(args);
        cmd
    };
    let mut first = wonopcode(&["--json", "--unattended", "suspend", "--agents", "scribe"]);
    first
        .arg("--replay")
        .arg(&transcript)
        .arg("-C")
        .arg(s.ws())
        .arg("Have the scribe write notes.md.");
    let (events, code, err) = run(&mut first);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(
        waiting(&events),
        BTreeSet::from(["0.1:w1 (write)".to_owned()])
    );
    assert!(!s.ws().join("notes.md").exists());

    let (id, _) = only_run(&runs);
    let (events, code, err) = run(&mut wonopcode(&[
        "resume",
        &id,
        "--answer",
        "0.1:w1=The person wrote notes.md already.",
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        item_of(&events, "0.1", "w1")["output"],
        "The person wrote notes.md already."
    );
    assert_eq!(answer(&events), "The scribe is done.");
    assert!(
        !s.ws().join("notes.md").exists(),
        "the answered write did not run"
    );
}
