//! Guests in other languages than Rust, on the real binary: the three-language example (a
//! Rust orchestrator, a JavaScript researcher and a Python reviewer, both specialists on
//! their language's SDK), a Python exception that ends its child with its message while the
//! parent goes on, a guest of WIT 0.2 built by each componentizer running on the 0.3 host,
//! and broken JavaScript guests refused by `--validate-module` with the reason.
//!
//! The components are built by `scripts/build-polyglot-guests.sh` (it needs componentize-py
//! and componentize-js). Without it these tests say how to build it and skip, unless
//! `WONOPCODE_REQUIRE_POLYGLOT` is set (as `.ci/run` does), where a missing component fails.

use std::path::PathBuf;

use serde_json::Value;
use wonopcode_wasm_host::guest_paths;

use crate::support::{
    Scratch, call, done, events, repo_root, stderr, text, transcript_of, wonopcode,
};

/// The directory of the built polyglot guests, or `None` (with a message) when one is missing.
fn polyglot_dir(guests: &[&str]) -> Option<PathBuf> {
    let dir = repo_root().join("target/polyglot");
    let missing: Vec<&str> = guests
        .iter()
        .copied()
        .filter(|g| !dir.join(format!("{g}.wasm")).is_file())
        .collect();
    if missing.is_empty() {
        return Some(dir);
    }
    missing_tool(&format!(
        "{} not built: run `{INSTALL} && bash scripts/build-polyglot-guests.sh`",
        missing.join(", ")
    ));
    None
}

/// How to install the componentizers.
pub const INSTALL: &str = "python3 -m pip install -r guests/python-reviewer/requirements.txt && npm install --prefix guests/js-researcher";

/// Something a test needs is missing: a failure when `WONOPCODE_REQUIRE_POLYGLOT` is set,
/// else a message saying how to get it (the caller then skips).
pub fn missing_tool(how: &str) {
    crate::support::missing_part(how, "WONOPCODE_REQUIRE_POLYGLOT");
}

/// A transcript of the child context `0.1`'s turns.
fn child_transcript(scratch: &Scratch, turns: &[Vec<Value>]) -> PathBuf {
    let path = scratch.outside("t.jsonl");
    std::fs::write(&path, transcript_of("0.1", turns)).unwrap();
    path
}

/// Runs the misbehave guest (Rust) with `prompt`, named modules found in `loops`.
fn run(
    scratch: &Scratch,
    transcript: &PathBuf,
    loops: &PathBuf,
    prompt: &str,
) -> std::process::Output {
    wonopcode()
        .args([
            "--json",
            "--agent-loop",
            guest_paths::MISBEHAVE,
            "--loops-dir",
        ])
        .arg(loops)
        .arg("--replay")
        .arg(transcript)
        .arg("-C")
        .arg(scratch.ws())
        .arg(prompt)
        .output()
        .unwrap()
}

const SPAWN_REVIEWER: &str =
    r#"spawn {"module": {"named": "python-reviewer"}, "task": "Review notes.txt."}"#;

#[test]
fn a_rust_guest_delegates_to_the_python_reviewer() {
    let Some(loops) = polyglot_dir(&["python-reviewer"]) else {
        return;
    };
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    let mut first = vec![text("Reading the notes.")];
    first.extend(call("c1", "read", r#"{"path": "notes.txt"}"#));
    first.push(done("tool_use"));
    let transcript = child_transcript(
        &scratch,
        &[
            first,
            vec![
                text(r#"{"verdict": "approve", "issues": []}"#),
                done("end_turn"),
            ],
        ],
    );
    let out = run(&scratch, &transcript, &loops, SPAWN_REVIEWER);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let events = events(&out);
    // The Python guest ran the host's `read` on the real file, in its own context.
    let read = events
        .iter()
        .find(|e| {
            e["type"] == "item.completed"
                && e["context"] == "0.1"
                && e["item"]["kind"] == "tool_call"
        })
        .unwrap_or_else(|| panic!("no tool call in context 0.1: {events:?}"));
    assert!(
        read["item"]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("remember the milk"),
        "{read}"
    );
    let started = events
        .iter()
        .find(|e| e["type"] == "context.started")
        .unwrap();
    assert_eq!(started["module"], "python-reviewer");
    // Its verdict reaches the parent as data through `__result_data__`.
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("status: completed"), "{answer}");
    assert!(
        answer.contains(r#"data: {\"verdict\": \"approve\", \"issues\": []}"#),
        "{answer}"
    );
}

#[test]
fn a_python_exception_ends_the_child_with_its_message_and_the_parent_goes_on() {
    let Some(loops) = polyglot_dir(&["python-reviewer"]) else {
        return;
    };
    let scratch = Scratch::new();
    let prose = || vec![text("Looks fine to me."), done("end_turn")];
    let transcript = child_transcript(&scratch, &[prose(), prose()]);
    let out = run(&scratch, &transcript, &loops, SPAWN_REVIEWER);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("status: error"), "{answer}");
    assert!(
        answer.contains("ReviewFailed: the answer holds no JSON object"),
        "{answer}"
    );
}

#[test]
fn the_python_guest_validates() {
    let Some(loops) = polyglot_dir(&["python-reviewer"]) else {
        return;
    };
    assert_valid(&loops, "python-reviewer", "0.3.0");
}

#[test]
fn a_guest_given_as_the_one_argument_validates() {
    let Some(loops) = polyglot_dir(&["python-reviewer"]) else {
        return;
    };
    let file = loops.join("python-reviewer.wasm");
    let out = wonopcode()
        .arg("--validate-module")
        .arg(&file)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("valid: loop `python-reviewer`"), "{said}");
    // Not twice.
    let out = wonopcode()
        .arg("--validate-module")
        .arg(&file)
        .arg("--agent-loop")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("checks one guest"),
        "{}",
        stderr(&out)
    );
}

/// That `dir`'s `NAME.wasm` validates as the loop `name` of WIT `version`.
fn assert_valid(dir: &std::path::Path, name: &str, version: &str) {
    let (code, said) = validate(&dir.join(format!("{name}.wasm")));
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "valid: loop `{name}`, wonopcode:agent-loop@{version}"
        )),
        "{said}"
    );
}

/// `--validate-module` on a file: (exit code, everything it printed).
pub fn validate(path: &std::path::Path) -> (Option<i32>, String) {
    let out = wonopcode()
        .arg("--validate-module")
        .arg("--agent-loop")
        .arg(path)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    (out.status.code(), said)
}

#[test]
fn the_three_language_example_delegates_and_answers_from_both() {
    let Some(_) = polyglot_dir(&["js-researcher", "python-reviewer"]) else {
        return;
    };
    let example = repo_root().join("examples/polyglot");
    let scratch = Scratch::new();
    crate::support::copy_dir(
        &repo_root().join("examples/agents/workspace"),
        &scratch.ws(),
    );
    let prompt = std::fs::read_to_string(example.join("prompt.txt")).unwrap();
    let out = wonopcode()
        .arg("--loops-dir")
        .arg(&example)
        .args(["--agent-loop-name", "polyglot-orchestrator", "--replay"])
        .arg(example.join("transcript.jsonl"))
        .arg("-C")
        .arg(scratch.ws())
        .arg("--yes")
        .arg(prompt.trim())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "stderr: {err}");
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("The researcher (JavaScript)"), "{answer}");
    assert!(
        answer.contains("The reviewer (Python) approves"),
        "{answer}"
    );
    // Both specialists read the real file in their own contexts, at the same time.
    assert!(err.contains("[0.1 js-researcher] ✓ read greet.sh"), "{err}");
    assert!(
        err.contains("[0.2 python-reviewer] ✓ read greet.sh"),
        "{err}"
    );
    // The summary tree: the Rust root and its JavaScript and Python children, all done.
    let tree: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("contexts:"))
        .collect();
    for (path, module) in [
        ("0 ", "polyglot-orchestrator"),
        ("0.1", "js-researcher"),
        ("0.2", "python-reviewer"),
    ] {
        assert!(
            tree.iter().any(|l| l.trim_start().starts_with(path)
                && l.contains(module)
                && l.contains("completed")),
            "no completed {module} at {path} in: {tree:?}"
        );
    }
}

#[test]
fn a_js_guest_without_the_custom_tool_handler_is_refused_with_the_missing_export() {
    let Some(dir) = polyglot_dir(&["bad/js-missing-export"]) else {
        return;
    };
    let (code, said) = validate(&dir.join("bad/js-missing-export.wasm"));
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("does not export `wonopcode:agent-loop/custom-tool-handler`"),
        "{said}"
    );
}

#[test]
fn a_js_guest_built_against_an_incompatible_wit_version_is_refused_naming_both() {
    let Some(dir) = polyglot_dir(&["bad/js-version-0-4"]) else {
        return;
    };
    let (code, said) = validate(&dir.join("bad/js-version-0-4.wasm"));
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("built against wonopcode:agent-loop@0.4.0, which is not compatible with the host's wonopcode:agent-loop@0.3.0"),
        "{said}"
    );
}

#[test]
fn the_js_guest_validates() {
    let Some(dir) = polyglot_dir(&["js-researcher"]) else {
        return;
    };
    assert_valid(&dir, "js-researcher", "0.3.0");
}

#[test]
fn the_js_researcher_returns_the_files_it_read_and_not_one_it_failed_to() {
    let Some(loops) = polyglot_dir(&["js-researcher"]) else {
        return;
    };
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    let mut first = call("c1", "read", r#"{"path": "notes.txt"}"#);
    first.extend(call("c2", "read", r#"{"path": "missing.txt"}"#));
    first.extend(call("c3", "read", r#"{"path": "notes.txt"}"#));
    first.push(done("tool_use"));
    let transcript = child_transcript(
        &scratch,
        &[first, vec![text("It says to buy milk."), done("end_turn")]],
    );
    let out = run(
        &scratch,
        &transcript,
        &loops,
        r#"spawn {"module": {"named": "js-researcher"}, "task": "What do the notes say?"}"#,
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("It says to buy milk."), "{answer}");
    // Read twice, listed once; the read that failed is not a file read.
    assert!(
        answer.contains(r#"data: {\"files_read\":[\"notes.txt\"]}"#),
        "{answer}"
    );
}

/// Runs the 0.2 guest `name` (built by the build script) at the root, on a transcript that
/// reads a file and answers from it: its answer, after checking the read reached the guest.
fn run_v0_2_guest(name: &str) -> Option<String> {
    let dir = polyglot_dir(&[name])?;
    assert_valid(&dir, name, "0.2.11");
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    let transcript = scratch.outside("t.jsonl");
    let mut first = call("c1", "read", r#"{"path": "notes.txt"}"#);
    first.push(done("tool_use"));
    std::fs::write(
        &transcript,
        transcript_of("0", &[first, vec![text("Buy milk."), done("end_turn")]]),
    )
    .unwrap();
    let out = wonopcode()
        .arg("--json")
        .arg("--agent-loop")
        .arg(dir.join(format!("{name}.wasm")))
        .arg("--replay")
        .arg(&transcript)
        .arg("-C")
        .arg(scratch.ws())
        .arg("What do the notes say?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let read = events(&out)
        .into_iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_call")
        .unwrap_or_else(|| panic!("no tool call: {}", String::from_utf8_lossy(&out.stdout)));
    assert!(
        read["item"]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("remember the milk"),
        "{read}"
    );
    Some(crate::support::root_answer(&out))
}

#[test]
fn a_python_guest_of_wit_0_2_runs_on_the_0_3_host() {
    if let Some(answer) = run_v0_2_guest("python-v0-2") {
        assert_eq!(answer, "Buy milk.");
    }
}

#[test]
fn a_js_guest_of_wit_0_2_runs_on_the_0_3_host() {
    if let Some(answer) = run_v0_2_guest("js-v0-2") {
        assert_eq!(answer, "Buy milk.");
    }
}
