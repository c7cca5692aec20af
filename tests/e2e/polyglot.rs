//! Guests in other languages than Rust, on the real binary: a Rust guest delegates to the
//! Python reviewer through the registry, and a Python exception ends that child with its
//! message while the parent goes on.
//!
//! The Python component is built by `scripts/build-polyglot-guests.sh` (it needs
//! componentize-py). Without it these tests say how to build it and skip, unless
//! `WONOPCODE_REQUIRE_POLYGLOT` is set (as `.ci/run` does), where a missing component fails.

use std::path::PathBuf;

use serde_json::{Value, json};
use wonopcode_wasm_host::guest_paths;

use crate::support::{Scratch, call, done, events, header, repo_root, stderr, text, wonopcode};

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
    let how = format!(
        "{} not built: run `python3 -m pip install -r guests/python-reviewer/requirements.txt && bash scripts/build-polyglot-guests.sh`",
        missing.join(", ")
    );
    if std::env::var_os("WONOPCODE_REQUIRE_POLYGLOT").is_some() {
        panic!("{how}");
    }
    eprintln!("skipped: {how}");
    None
}

/// A transcript of the child context `0.1`'s turns.
fn child_transcript(scratch: &Scratch, turns: &[Vec<Value>]) -> PathBuf {
    let mut out = header().to_string();
    out.push('\n');
    for (i, chunks) in turns.iter().enumerate() {
        out.push_str(&json!({"type":"turn","context":"0.1","turn":i,"chunks":chunks}).to_string());
        out.push('\n');
    }
    let path = scratch.outside("t.jsonl");
    std::fs::write(&path, out).unwrap();
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
    let out = wonopcode()
        .arg("--validate-module")
        .arg("--agent-loop")
        .arg(loops.join("python-reviewer.wasm"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(said.contains("valid: loop `python-reviewer`"), "{said}");
}
