//! Bad invocations and bad input files: one clear line, the right exit code, nothing lost.

use crate::support::{
    Scratch, call, calling, done, events, header, repo_root, stderr, text, wonopcode,
};

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = wonopcode().arg("--frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unexpected argument '--frobnicate'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn missing_transcript_names_the_file() {
    let s = Scratch::new();
    let missing = s.outside("nope.jsonl");
    let out = s.run_json(&missing, &[], "hi");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("cannot read transcript") && err.contains("nope.jsonl"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout when the run cannot start"
    );
}

#[test]
fn unreadable_transcript_names_the_file() {
    let s = Scratch::new();
    let dir = s.outside("a-directory.jsonl");
    std::fs::create_dir(&dir).unwrap();
    let out = s.run_json(&dir, &[], "hi");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot read transcript"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn malformed_transcript_line_names_the_line() {
    let s = Scratch::new();
    let path = s.outside("bad.jsonl");
    let good = serde_json::json!({"type":"turn","context":"0","turn":0,"chunks":[text("hi"), done("end_turn")]});
    std::fs::write(
        &path,
        format!("{}\n{}\n{{\"type\":\"turn\",\"context\":\n", header(), good),
    )
    .unwrap();
    let out = s.run_json(&path, &[], "hi");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("bad.jsonl:3: invalid transcript record"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn transcript_divergence_says_what_differed_and_keeps_the_history() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let demo = repo_root().join("examples/demo/transcript.jsonl");
    let out = s.run_json(
        &demo,
        &["--history", history.to_str().unwrap()],
        "a different prompt",
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("transcript divergence at context 0, response 0"),
        "{err}"
    );
    assert!(
        err.contains("the recording's prompt is \"Find every TODO in this project"),
        "{err}"
    );
    // The prompt stays in the file, withdrawn from the conversation after the failed turn:
    // the next prompt starts where the last answer ended.
    let stored = std::fs::read_to_string(&history).unwrap();
    assert!(
        stored.contains("a different prompt"),
        "the user message is kept: {stored}"
    );
    assert!(crate::parity::history_messages(&history).is_empty());
    let events = events(&out);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types[types.len() - 2..],
        ["turn.failed", "context.compacted"]
    );
    assert_eq!(events.last().unwrap()["strategy"], "withdraw");
    let sequence: String = types.iter().map(|t| format!("{t} ")).collect();
    assert!(
        crate::events_doc::documented_sequence().is_match(&sequence),
        "{sequence}"
    );
}

#[test]
fn a_replay_whose_tool_output_changed_shows_the_recorded_message_beside_this_runs() {
    let s = Scratch::new();
    s.file("a.txt", "one\ntwo\nthree\n");
    let t = s.transcript(
        "t.jsonl",
        &[
            calling("c1", "read", r#"{"path": "a.txt"}"#),
            vec![text("Three lines."), done("end_turn")],
        ],
    );
    let recorded = s.outside("recorded.jsonl");
    let out = s.run_json(&t, &["--record", recorded.to_str().unwrap()], "count");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The file changed since the recording: the read's output is not what was recorded.
    s.file("a.txt", "one\n2\nthree\n");
    let out = s.run_json(&recorded, &[], "count");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("transcript divergence at context 0, response 1 of ")
            && err.contains(": message 2 (tool) differs from the recording"),
        "{err}"
    );
    assert!(err.contains("- recorded") && err.contains("two"), "{err}");
    assert!(err.contains("+ this run") && err.contains("2"), "{err}");
}

#[test]
fn running_past_the_transcript_names_the_missing_key() {
    let s = Scratch::new();
    let mut turn0 = call("c1", "list", "{}");
    turn0.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn0]);
    let out = s.run_json(&t, &[], "hi");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("has no record for context 0 turn 1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unwritable_history_is_refused_before_the_run() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("hi"), done("end_turn")]]);
    let dir_as_file = s.outside("history-dir");
    std::fs::create_dir(&dir_as_file).unwrap();
    let out = s.run_json(&t, &["--history", dir_as_file.to_str().unwrap()], "hi");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("history file"), "{}", stderr(&out));
    let out = s.run_json(&t, &["--history", "/proc/version/not-here.jsonl"], "hi");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("history file"), "{}", stderr(&out));
}

#[test]
fn bad_permission_rule_is_a_usage_error() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("hi"), done("end_turn")]]);
    let out = s.run_json(&t, &["--allow", "bash:"], "hi");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--allow: invalid permission rule `bash:`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn malformed_config_names_line_and_column() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("hi"), done("end_turn")]]);
    let cfg = s.outside("config.yaml");
    std::fs::write(&cfg, "permissions:\n  mutating: allow\n  colour: blue\n").unwrap();
    let out = s.run_json(&t, &["--config", cfg.to_str().unwrap()], "hi");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("config.yaml:3:3") && err.contains("unknown field `colour`"),
        "{err}"
    );
}

#[test]
fn missing_workspace_is_a_usage_error() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("hi"), done("end_turn")]]);
    let out = wonopcode()
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.outside("no-such-dir"))
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("-C/--cwd"), "{}", stderr(&out));
}

#[test]
fn a_mistyped_provider_gets_the_closest_name_and_a_missing_loops_dir_a_warning() {
    let s = Scratch::new();
    let out = wonopcode()
        .args(["--provider", "olama", "-C"])
        .arg(s.ws())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.starts_with("error: unknown provider `olama` (did you mean `ollama`?); known: "),
        "{said}"
    );
    assert_eq!(said.lines().count(), 1, "{said}");
    let missing = s.outside("no-such-dir");
    let out = wonopcode()
        .arg("--loops-dir")
        .arg(&missing)
        .arg("--list-loops")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "warning: --loops-dir {}: no such directory",
            missing.display()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_reader_that_goes_away_ends_the_run_with_141_whichever_stream_it_read() {
    let s = Scratch::new();
    s.file("notes.txt", "milk\n");
    // Each read is a line on stderr, a response apart: the reader is gone before the next.
    let mut responses: Vec<Vec<serde_json::Value>> = (0..4)
        .map(|n| calling(&format!("c{n}"), "read", r#"{"path": "notes.txt"}"#))
        .collect();
    responses.push(vec![text("Milk."), done("end_turn")]);
    let t = s.transcript("t.jsonl", &responses);
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#""$0" "$@" 2>&1 | head -1 >/dev/null; echo "${PIPESTATUS[0]}""#)
        .arg(crate::support::bin())
        .args(["-p", "read the notes", "--replay-pace", "300", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "141",
        "{}",
        stderr_of(&out)
    );
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
