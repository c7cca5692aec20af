//! `wonopcode loops test`: a guest's tests from a test file, each a real run of the guest
//! offline (scripted model, stand-in tools), a verdict per test and an exit code. The sample
//! orchestrator's own tests (`examples/agents/tests.yaml`) run here.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use wonopcode_wasm_host::guest_paths::{DEFAULT_LOOP, MISBEHAVE};

use crate::support::{Scratch, command, repo_root, stderr};

fn loops_test(args: &[&str], files: &[&Path]) -> Output {
    command()
        .args(["loops", "test"])
        .args(args)
        .args(files)
        .output()
        .unwrap()
}

fn said(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_sample_orchestrators_tests_pass() {
    let file = repo_root().join("examples/agents/tests.yaml");
    let out = loops_test(&[], &[&file]);
    assert_eq!(out.status.code(), Some(0), "{}{}", said(&out), stderr(&out));
    let lines: Vec<String> = said(&out).lines().map(str::to_owned).collect();
    assert!(
        lines[0].starts_with("ok    a question goes to the researcher"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("ok    the reviewer goes on"),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with("ok    two researchers at once answer from one script"),
        "{lines:?}"
    );
    assert_eq!(lines[3], "3 passed, 0 failed");
}

/// A test file for the default loop in `s`, with `tests` as its `tests:`.
fn suite(s: &Scratch, tests: &str) -> std::path::PathBuf {
    let file = s.outside("tests.yaml");
    std::fs::write(&file, format!("guest: {DEFAULT_LOOP}\ntests:\n{tests}")).unwrap();
    file
}

#[test]
fn a_test_that_does_not_hold_fails_saying_what_and_the_others_still_run() {
    let s = Scratch::new();
    let file = suite(
        &s,
        r#"  - name: reads the notes
    prompt: What do the notes say?
    model:
      "0":
        - calls: [{name: read, arguments: {path: notes.txt}}]
        - text: They say hello.
    tools:
      read: "hello"
    expect:
      answer_contains: [hello]
      tools_called: [read]
  - name: expects what is not there
    prompt: What do the notes say?
    model:
      "0":
        - text: Nothing.
    expect:
      answer_contains: [goodbye]
      tools_called: [read]
      children: [{module: coder}]
"#,
    );
    let out = loops_test(&[], &[&file]);
    assert_eq!(out.status.code(), Some(1), "{}{}", said(&out), stderr(&out));
    let text = said(&out);
    assert!(text.contains("ok    reads the notes"), "{text}");
    assert!(
        text.contains(r#"FAIL  expects what is not there"#)
            && text.contains(r#"the answer lacks "goodbye" (it is "Nothing.")"#)
            && text.contains("`read` was not called (called: none)")
            && text.contains("no child ran module `coder` (children: none)"),
        "{text}"
    );
    assert!(text.ends_with("1 passed, 1 failed\n"), "{text}");
    // --json: one document, a verdict per test.
    let out = loops_test(&["--json"], &[&file]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["passed"], 1);
    assert_eq!(doc["failed"], 1);
    assert_eq!(doc["tests"][0]["passed"], true);
    assert_eq!(doc["tests"][1]["failures"].as_array().unwrap().len(), 3);
}

#[test]
fn a_stand_in_is_what_the_model_reads_and_nothing_runs() {
    let s = Scratch::new();
    // A file the call's command makes where the sandbox lets it write; named for this test.
    let made = std::env::temp_dir().join(format!(
        "wonopcode-stand-in-{}",
        s.ws().file_name().unwrap().to_string_lossy()
    ));
    let test = |tools: &str| {
        format!(
            r#"  - name: bash is stood in for
    prompt: Make a file.
    model:
      "0":
        - calls: [{{name: bash, arguments: {{command: "touch {} && echo made"}}}}]
        - text: Done.
{tools}    expect:
      tools_called: [bash]
"#,
            made.display()
        )
    };
    // Without the stand-in, the command runs: the check below can see it run.
    let out = loops_test(&["--json"], &[&suite(&s, &test(""))]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["failed"], 0, "{doc}");
    assert!(
        made.exists(),
        "the control run's command did not run: {doc}"
    );
    std::fs::remove_file(&made).unwrap();
    // With it, `bash` answers and the command it was given never runs.
    let stood_in = test("    tools:\n      bash: {error: \"no shell in tests\"}\n");
    let out = loops_test(&["--json"], &[&suite(&s, &stood_in)]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["failed"], 0, "{doc}");
    assert!(!made.exists());
    // A stand-in for a tool the run lacks fails its test, naming it.
    let file = suite(
        &s,
        r#"  - name: a misspelt tool
    prompt: hi
    model: {"0": [{text: hi}]}
    tools: {raed: "x"}
"#,
    );
    let out = loops_test(&[], &[&file]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        said(&out).contains("a stand-in for `raed`: the run has no such tool (it has "),
        "{}",
        said(&out)
    );
}

#[test]
fn a_guest_that_hangs_or_traps_fails_its_test_and_the_file_goes_on() {
    let s = Scratch::new();
    let file = s.outside("tests.yaml");
    std::fs::write(
        &file,
        format!(
            "guest: {MISBEHAVE}\ntimeout_secs: 2\ntests:\n  - {{name: spins, prompt: spin}}\n  - {{name: traps, prompt: trap}}\n"
        ),
    )
    .unwrap();
    let out = loops_test(&[], &[&file]);
    assert_eq!(out.status.code(), Some(1));
    let text = said(&out);
    assert!(
        text.contains("FAIL  spins")
            && text.contains("the run took longer than 2 s and was stopped"),
        "{text}"
    );
    assert!(
        text.contains("FAIL  traps") && text.contains("the status is `error`"),
        "{text}"
    );
    // Without `--debug-guest` a verdict is one line: nothing of the run's stderr below it.
    assert!(!text.lines().any(|l| l.starts_with("      ")), "{text}");
}

#[test]
fn under_debug_guest_a_trapped_tests_verdict_shows_the_guests_backtrace() {
    let s = Scratch::new();
    let file = s.outside("tests.yaml");
    std::fs::write(
        &file,
        format!("guest: {MISBEHAVE}\ntests:\n  - {{name: traps, prompt: trap}}\n"),
    )
    .unwrap();
    let out = loops_test(&["--debug-guest"], &[&file]);
    assert_eq!(out.status.code(), Some(1));
    let text = said(&out);
    let below: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("FAIL  traps"))
        .skip(1)
        .take_while(|l| l.starts_with("      "))
        .collect();
    // The trap's frames, innermost first, as the guest's lines of its context (this guest
    // is a stripped release build: its frames are placed by code offset).
    assert!(
        below
            .iter()
            .any(|l| l.trim_start().starts_with("[0 misbehave] #0 ")),
        "{text}"
    );
    // The same under --json, as the test's `stderr`.
    let out = loops_test(&["--debug-guest", "--json"], &[&file]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = report["tests"][0]["stderr"].as_str().unwrap_or_default();
    assert!(
        said.lines().any(|l| l.starts_with("[0 misbehave] #0 ")),
        "{report}"
    );
}

#[test]
fn a_file_that_is_not_a_test_file_is_one_line_naming_it() {
    let s = Scratch::new();
    let file = s.outside("tests.yaml");
    std::fs::write(
        &file,
        "guest: x.wasm\ntests:\n  - {name: a, prompt: b, expct: {}}\n",
    )
    .unwrap();
    let out = loops_test(&[], &[&file]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: tests[0]: unknown field `expct`",
            file.display()
        )),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A scripted context that is not a context path, before any test runs.
    std::fs::write(
        &file,
        "guest: x.wasm\ntests:\n  - {name: a, prompt: b, model: {root: [{text: hi}]}}\n",
    )
    .unwrap();
    let out = loops_test(&[], &[&file]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("test `a`: model: `root` is not a context path"),
        "{}",
        stderr(&out)
    );
    let missing = s.outside("nope.yaml");
    let out = loops_test(&[], &[&missing]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope.yaml: "), "{}", stderr(&out));
}
