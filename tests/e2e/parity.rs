//! One run, two drivers: the rules of a run that take more than one process or a person's
//! answer (suspension, resume with answers) hold the same for the native loop, the embedded
//! guest and a guest file. The single-process scenarios are recorded runs of the
//! differential test (`wasm.rs`, `tests/fixtures/transcripts`).

use std::path::Path;

use serde_json::Value;
use wonopcode_wasm_host::guest_paths;

use crate::support::{Scratch, call, done, events, stderr, text, transcript_of, wonopcode};

/// The three ways to run the same loop: native, the embedded default guest, the same guest
/// loaded from its file.
pub fn three_loops() -> [(&'static str, Vec<String>); 3] {
    [
        ("native", Vec::new()),
        ("embedded guest", vec!["--loop-type=wasm".to_owned()]),
        (
            "guest file",
            vec![
                "--agent-loop".to_owned(),
                guest_paths::DEFAULT_LOOP.to_owned(),
            ],
        ),
    ]
}

/// A first turn that reads a file and writes another: under `--unattended suspend` the read
/// runs and the write waits.
fn read_then_write(s: &Scratch) -> std::path::PathBuf {
    s.file("notes.txt", "remember the milk\n");
    let mut turn = vec![text("Reading first.")];
    turn.extend(call("r", "read", r#"{"path": "notes.txt"}"#));
    turn.extend(call(
        "w",
        "write",
        r#"{"path": "SUMMARY.md", "content": "milk"}"#,
    ));
    turn.push(done("tool_use"));
    s.transcript("first.jsonl", &[turn])
}

pub(crate) fn suspend(s: &Scratch, history: &Path, loop_flags: &[String]) -> std::process::Output {
    let first = read_then_write(s);
    let mut args = vec![
        "--unattended",
        "suspend",
        "--history",
        history.to_str().unwrap(),
    ];
    args.extend(loop_flags.iter().map(String::as_str));
    s.run_json(&first, &args, "Summarize my notes.")
}

fn resume(
    s: &Scratch,
    history: &Path,
    transcript: &Path,
    extra: &[&str],
    loop_flags: &[String],
) -> std::process::Output {
    wonopcode()
        .args(["--json", "--resume", "--history"])
        .arg(history)
        .arg("--replay")
        .arg(transcript)
        .arg("-C")
        .arg(s.ws())
        .args(extra)
        .args(loop_flags)
        .output()
        .unwrap()
}

pub(crate) fn history_messages(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "message")
        .map(|r| r["message"].clone())
        .collect()
}

/// The tool results of a history, as `(call id, content)`.
pub(crate) fn results(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .map(|p| {
            (
                p["call_id"].as_str().unwrap_or("").to_owned(),
                p["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_suspended_run_resumes_with_the_users_answer_in_every_loop() {
    for (label, flags) in three_loops() {
        let s = Scratch::new();
        let history = s.outside("h.jsonl");
        let out = suspend(&s, &history, &flags);
        assert_eq!(out.status.code(), Some(3), "{label}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("or --answer CALL_ID=TEXT; waiting: w (write)"),
            "{label}: {}",
            stderr(&out)
        );
        let last = events(&out).pop().unwrap();
        assert_eq!(last["status"], "suspended", "{label}");
        // The read ran and is answered; the write waits, with no result in the history.
        let stored = results(&history_messages(&history));
        assert_eq!(stored.len(), 1, "{label}: {stored:?}");
        assert_eq!(stored[0].0, "r", "{label}");
        assert!(stored[0].1.contains("remember the milk"), "{label}");

        // An answer for a call that does not wait is refused in one line; nothing is stored.
        let second = s.transcript(
            "second.jsonl",
            &[vec![text("Fine, no summary file."), done("end_turn")]],
        );
        let before = std::fs::read_to_string(&history).unwrap();
        let out = resume(&s, &history, &second, &["--answer", "x=yes"], &flags);
        assert_eq!(out.status.code(), Some(2), "{label}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(
                "the answer for `x`: no pending call has that id; the run waits on w (write)"
            ),
            "{label}: {}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read_to_string(&history).unwrap(),
            before,
            "{label}"
        );

        let out = resume(
            &s,
            &history,
            &second,
            &["--answer", "w=The user says: no file, thanks."],
            &flags,
        );
        assert_eq!(out.status.code(), Some(0), "{label}: {}", stderr(&out));
        assert!(
            !s.ws().join("SUMMARY.md").exists(),
            "{label}: answered, not run"
        );
        let messages = history_messages(&history);
        let stored = results(&messages);
        assert_eq!(
            stored.last().unwrap(),
            &("w".to_owned(), "The user says: no file, thanks.".to_owned()),
            "{label}"
        );
        assert_eq!(
            messages.last().unwrap()["parts"][0]["text"],
            "Fine, no summary file.",
            "{label}"
        );
    }
}

#[test]
fn a_resume_without_answers_runs_the_waiting_call_in_every_loop() {
    for (label, flags) in three_loops() {
        let s = Scratch::new();
        let history = s.outside("h.jsonl");
        let out = suspend(&s, &history, &flags);
        assert_eq!(out.status.code(), Some(3), "{label}: {}", stderr(&out));
        let second = s.transcript("second.jsonl", &[vec![text("Written."), done("end_turn")]]);
        let out = resume(&s, &history, &second, &["--yes"], &flags);
        assert_eq!(out.status.code(), Some(0), "{label}: {}", stderr(&out));
        assert_eq!(
            std::fs::read_to_string(s.ws().join("SUMMARY.md")).unwrap(),
            "milk",
            "{label}"
        );
    }
}

#[test]
fn a_guest_of_the_seed_version_suspends_but_cannot_resume() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let flags = vec![
        "--agent-loop".to_owned(),
        guest_paths::SEED_0_2_0.to_owned(),
    ];
    let out = suspend(&s, &history, &flags);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // The guest stored the results it was given; the waiting call's was left out.
    let stored = results(&history_messages(&history));
    assert_eq!(
        stored.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["r"]
    );
    let second = s.transcript("second.jsonl", &[vec![text("never"), done("end_turn")]]);
    let out = resume(&s, &history, &second, &["--yes"], &flags);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "does not export `resumable` (WIT 0.2.5), so it cannot continue a suspended run"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!s.ws().join("SUMMARY.md").exists());
}

#[test]
fn a_child_that_waits_for_an_answer_is_reported_suspended_with_its_question() {
    let s = Scratch::new();
    let mut turn = call("w", "write", r#"{"path": "SUMMARY.md", "content": "milk"}"#);
    turn.push(done("tool_use"));
    let transcript = s.outside("t.jsonl");
    std::fs::write(&transcript, transcript_of("0.1", &[turn])).unwrap();
    let spec = serde_json::json!({
        "module": {"path": guest_paths::DEFAULT_LOOP},
        "task": "Write the summary.",
    });
    let out = s.run_json(
        &transcript,
        &[
            "--unattended",
            "suspend",
            "--agent-loop",
            guest_paths::MISBEHAVE,
        ],
        &format!("spawn {spec}"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let evs = events(&out);
    let child = evs
        .iter()
        .find(|e| e["type"] == "context.completed")
        .expect("the child ended");
    assert_eq!(child["status"], "suspended", "{child}");
    assert!(
        child["error"].as_str().unwrap().ends_with(
            r#"needs approval; waiting: w `write` {"path": "SUMMARY.md", "content": "milk"}"#
        ),
        "{child}"
    );
    // The parent heard it through the 0.2 status, as an error that says so.
    let answer = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        answer.contains("status: error: suspended: `write` on `SUMMARY.md` needs approval"),
        "{answer}"
    );
    assert!(!s.ws().join("SUMMARY.md").exists());
}

#[test]
fn a_new_prompt_after_a_suspension_closes_the_waiting_call_in_every_loop() {
    for (label, flags) in three_loops() {
        let s = Scratch::new();
        let history = s.outside("h.jsonl");
        let out = suspend(&s, &history, &flags);
        assert_eq!(out.status.code(), Some(3), "{label}: {}", stderr(&out));
        let next = s.transcript(
            "next.jsonl",
            &[vec![text("Something else."), done("end_turn")]],
        );
        let mut args = vec!["--history", history.to_str().unwrap()];
        args.extend(flags.iter().map(String::as_str));
        let out = s.run_json(&next, &args, "Never mind, do something else.");
        assert_eq!(out.status.code(), Some(0), "{label}: {}", stderr(&out));
        let stored = results(&history_messages(&history));
        assert_eq!(
            stored.last().unwrap(),
            &(
                "w".to_owned(),
                "not run: the previous run stopped before this call finished".to_owned()
            ),
            "{label}"
        );
    }
}
