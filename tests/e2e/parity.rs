//! One run, two drivers: the rules of a run that take more than one process, a signal, a
//! server or a person's answer (suspension, resume with answers, compaction of a long
//! history, a context overflow retried, cancellation mid-stream, a stream gone quiet past
//! the idle timeout) hold the same for the native loop, the embedded guest and a guest
//! file. The single-process scenarios are recorded runs of the
//! differential test (`wasm.rs`, `tests/fixtures/transcripts`); the interactive ones are in
//! `terminal.rs`.

use std::path::Path;

use serde_json::{Value, json};
use wonopcode_wasm_host::guest_paths;

use crate::support::{
    Scratch, call, done, events, interrupt, spawn_until, stderr, text, transcript_after,
    transcript_of, wonopcode,
};

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

/// The history a file holds, read as wonopcode reads it: messages appended, a `reset`
/// (compaction) replacing all before it.
pub(crate) fn history_messages(path: &Path) -> Vec<Value> {
    let mut messages = Vec::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        match record["type"].as_str() {
            Some("message") => messages.push(record["message"].clone()),
            Some("reset") => messages = record["messages"].as_array().unwrap().clone(),
            _ => {}
        }
    }
    messages
}

/// The text of the user messages stored in a history file.
pub(crate) fn user_prompts(path: &Path) -> Vec<String> {
    history_messages(path)
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["parts"][0]["text"].as_str().map(str::to_owned))
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
        suspend_then_answer(label, &flags);
    }
}

#[test]
fn a_specialist_guest_resumes_too() {
    suspend_then_answer(
        "coder",
        &["--agent-loop".to_owned(), guest_paths::CODER.to_owned()],
    );
}

/// Suspends a run on its `write`, refuses an answer for a call that does not wait, then
/// answers the write and checks the run went on from the answer.
fn suspend_then_answer(label: &str, flags: &[String]) {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let out = suspend(&s, &history, flags);
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
    let second = s.transcript_after(
        "second.jsonl",
        1,
        &[vec![text("Fine, no summary file."), done("end_turn")]],
    );
    let before = std::fs::read_to_string(&history).unwrap();
    let out = resume(&s, &history, &second, &["--answer", "x=yes"], flags);
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
        flags,
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

#[test]
fn a_resume_without_answers_runs_the_waiting_call_in_every_loop() {
    for (label, flags) in three_loops() {
        let s = Scratch::new();
        let history = s.outside("h.jsonl");
        let out = suspend(&s, &history, &flags);
        assert_eq!(out.status.code(), Some(3), "{label}: {}", stderr(&out));
        let second = s.transcript_after(
            "second.jsonl",
            1,
            &[vec![text("Written."), done("end_turn")]],
        );
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
    let second = s.transcript_after("second.jsonl", 1, &[vec![text("never"), done("end_turn")]]);
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
    // A module named by path comes from the workspace (or a loop directory).
    std::fs::create_dir_all(s.ws().join("loops")).unwrap();
    std::fs::copy(guest_paths::DEFAULT_LOOP, s.ws().join("loops/default.wasm")).unwrap();
    let spec = serde_json::json!({
        "module": {"path": "loops/default.wasm"},
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
    // The child's suspension suspends the root (exit 3), on the child's own call.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
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
    let root = evs
        .iter()
        .rfind(|e| e["type"] == "turn.completed" && e["context"] == "0")
        .expect("the root's turn ended");
    assert_eq!(root["status"], "suspended", "{root}");
    assert_eq!(root["pending"][0]["context"], "0.1", "{root}");
    assert_eq!(root["pending"][0]["id"], "w", "{root}");
    assert!(
        stderr(&out).contains("waiting: 0.1:w (write)"),
        "{}",
        stderr(&out)
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
        let next = s.transcript_after(
            "next.jsonl",
            1,
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

/// Two answered prompts in `history`, then a third run on `third` (a transcript file's text,
/// numbered after the two answers):
/// the third run's comparable events, exit code and the history it leaves.
fn third_prompt(loop_flags: &[String], third: &str) -> (Vec<Value>, Option<i32>, Vec<Value>) {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let history_flag = ["--history", history.to_str().unwrap()];
    let mut flags: Vec<&str> = history_flag.to_vec();
    flags.extend(loop_flags.iter().map(String::as_str));
    for (i, answer) in [
        "The first answer, with enough words to take room in a window.",
        "The second answer, again with enough words to take room in a window.",
    ]
    .into_iter()
    .enumerate()
    {
        let t = s.transcript_after(
            &format!("{i}.jsonl"),
            i,
            &[vec![text(answer), done("end_turn")]],
        );
        let out = s.run_json(&t, &flags, &format!("Question {i}?"));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let path = s.outside("third.jsonl");
    std::fs::write(&path, third).unwrap();
    let out = s.run_json(&path, &flags, "Question 2?");
    (
        crate::wasm::comparable_events(&out),
        out.status.code(),
        history_messages(&history),
    )
}

/// Runs `third_prompt` in every loop, checks they agree, and gives the native run's.
fn same_in_every_loop(third: &str) -> (Vec<Value>, Option<i32>, Vec<Value>) {
    let [(_, native_flags), others @ ..] = three_loops();
    let native = third_prompt(&native_flags, third);
    for (label, flags) in others {
        let other = third_prompt(&flags, third);
        assert_eq!(native.1, other.1, "{label}: exit codes differ");
        assert_eq!(native.2, other.2, "{label}: histories differ");
        assert_eq!(
            native.0.len(),
            other.0.len(),
            "{label}: event counts differ"
        );
        for (i, (a, b)) in native.0.iter().zip(&other.0).enumerate() {
            assert_eq!(a, b, "{label}: event {i} differs");
        }
    }
    native
}

/// The summary record of a compaction, then the answer.
fn summary_then_answer() -> Vec<Vec<Value>> {
    vec![
        vec![
            text("The user asked two questions; both were answered."),
            done("end_turn"),
        ],
        vec![text("The third answer."), done("end_turn")],
    ]
}

fn assert_summarized(events: &[Value], history: &[Value]) {
    let compacted: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "context.compacted")
        .collect();
    assert_eq!(compacted.len(), 1, "{events:?}");
    assert_eq!(compacted[0]["strategy"], "summarize", "{:?}", compacted[0]);
    let first = history[0]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(
        first.starts_with("[Summary of the earlier conversation]\nThe user asked two questions"),
        "{first}"
    );
    let last = history.last().unwrap();
    assert_eq!(last["parts"][0]["text"], "The third answer.");
}

#[test]
fn a_history_past_the_window_is_summarized_the_same_in_every_loop() {
    // A window of 60 tokens: the third prompt's history is past 90 % of it.
    let third = transcript_after(2, &summary_then_answer()).replacen(
        r#""context_window":200000"#,
        r#""context_window":60"#,
        1,
    );
    assert!(third.contains(r#""context_window":60"#));
    let (events, code, history) = same_in_every_loop(&third);
    assert_eq!(code, Some(0), "{events:?}");
    assert_summarized(&events, &history);
}

#[test]
fn a_context_overflow_is_compacted_and_retried_the_same_in_every_loop() {
    let mut responses = vec![vec![
        json!({"type": "context_overflow", "message": "prompt is too long"}),
    ]];
    responses.extend(summary_then_answer());
    let (events, code, history) = same_in_every_loop(&transcript_after(2, &responses));
    assert_eq!(code, Some(0), "{events:?}");
    assert_summarized(&events, &history);
    assert!(
        !events
            .iter()
            .any(|e| e.to_string().contains("prompt is too long")),
        "the retried overflow is not shown as a failure: {events:?}"
    );
}

/// Starts a slow recorded answer in `loop_flags`' loop, interrupts it (SIGINT) once the
/// first words are on screen, and gives the exit code, the last two events and the history.
fn interrupt_mid_stream(loop_flags: &[String]) -> (Option<i32>, [Value; 2], Vec<Value>) {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let mut chunks: Vec<Value> = (0..200).map(|i| text(&format!("word{i} "))).collect();
    chunks.push(done("end_turn"));
    let slow = s.transcript("slow.jsonl", &[chunks]);
    let (mut child, lines) = spawn_until(
        crate::support::command()
            .args(["--json", "--replay-pace", "50", "--replay"])
            .arg(&slow)
            .arg("-C")
            .arg(s.ws())
            .arg("--history")
            .arg(&history)
            .args(loop_flags)
            .arg("Say many words."),
        &[r#""type":"item.delta""#],
    );
    let code = interrupt(&mut child);
    let mut events: Vec<Value> = lines
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .collect();
    let last = events.pop().unwrap_or(Value::Null);
    let before = events.pop().unwrap_or(Value::Null);
    (code, [before, last], history_messages(&history))
}

#[test]
fn an_answer_cancelled_mid_stream_ends_the_same_in_every_loop() {
    for (label, flags) in three_loops() {
        let (code, [failed, last], history) = interrupt_mid_stream(&flags);
        assert_eq!(code, Some(130), "{label}: {last}");
        assert_eq!(failed["type"], "turn.failed", "{label}: {failed}");
        assert_eq!(failed["status"], "cancelled", "{label}: {failed}");
        // Then the run says it stopped, and which run resumes it.
        assert_eq!(last["type"], "run.interrupted", "{label}: {last}");
        assert!(last["run_id"].is_string(), "{label}: {last}");
        // What was said is kept, marked as cut off; the history reads back whole.
        assert_eq!(history.len(), 2, "{label}: {history:?}");
        let said = history[1]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<String>();
        assert!(said.starts_with("word0 "), "{label}: {said}");
        assert!(said.contains("[incomplete: "), "{label}: {said}");
        assert!(!said.contains("word199"), "{label}: {said}");
    }
}

#[test]
fn a_provider_failure_reads_the_same_in_every_loop() {
    for (label, flags) in three_loops() {
        let s = Scratch::new();
        let t = s.transcript(
            "t.jsonl",
            &[vec![json!({"type": "error", "message": "overloaded"})]],
        );
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let out = s.run(&t, &flags, "go");
        assert_eq!(out.status.code(), Some(1), "{label}: {}", stderr(&out));
        let said = stderr(&out);
        assert!(
            said.lines()
                .any(|l| l == "error: provider error: overloaded"),
            "{label}: {said}"
        );
        assert!(
            !said.contains("provider error: provider error"),
            "{label}: {said}"
        );
    }
}

#[test]
fn a_response_that_failed_before_it_began_costs_an_unknown_amount_on_every_loop() {
    let s = Scratch::new();
    // A priced model whose one response failed with 529 before saying anything.
    let t = s.outside("failed.jsonl");
    let header = serde_json::json!({"type": "header", "format": "wonopcode-transcript", "version": 1,
        "model": {"id": "m", "provider": "p", "context_window": 1000, "max_output": 100,
            "pricing": {"input_per_mtok": 300000000, "output_per_mtok": 1500000000}}});
    let failed = serde_json::json!({"type": "turn", "context": "0", "turn": 0, "chunks": [],
        "error": {"status": 529, "message": "overloaded"}});
    std::fs::write(&t, format!("{header}\n{failed}\n")).unwrap();
    let mut closing = Vec::new();
    for (label, flags) in three_loops() {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let out = s.run(&t, &flags, "hi");
        assert_eq!(out.status.code(), Some(1), "{label}");
        let err = crate::support::stderr(&out);
        let line = err
            .lines()
            .find(|l| l.contains("model request(s)"))
            .unwrap_or_else(|| panic!("{label}: no closing line in {err}"))
            .to_owned();
        assert!(line.ends_with("cost unknown"), "{label}: {line}");
        // The provider's message, once.
        assert_eq!(err.matches("overloaded").count(), 1, "{label}: {err}");
        closing.push(line);
    }
    assert!(closing.windows(2).all(|w| w[0] == w[1]), "{closing:?}");
}

/// A loopback OpenAI-compatible server that answers each of `runs` requests with the head
/// and the first words of a stream, then says nothing for 10 s (far past the idle timeout
/// the test configures) before it hangs up.
fn going_quiet(runs: usize) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(runs) {
            let mut stream = stream.unwrap();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let mut read = Vec::new();
                while !read.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(n) = stream.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    read.extend_from_slice(&buf[..n]);
                }
                let first = r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Half an ans"},"finish_reason":null}]}"#;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{first}\n\n"
                );
                let _ = stream.write_all(reply.as_bytes());
                let _ = stream.flush();
                std::thread::sleep(std::time::Duration::from_secs(10));
            });
        }
    });
    base_url
}

#[test]
fn a_stream_that_goes_quiet_past_the_idle_timeout_ends_the_same_in_every_loop() {
    let base_url = going_quiet(3);
    let mut closing = Vec::new();
    for (label, flags) in three_loops() {
        let s = Scratch::new();
        let config = s.outside("config.yaml");
        std::fs::write(
            &config,
            "providers:\n  openai:\n    idle_timeout_ms: 300\n    max_attempts: 1\n",
        )
        .unwrap();
        let history = s.outside("h.jsonl");
        let out = crate::support::command()
            .env("OPENAI_API_KEY", "test-key")
            .args(["--provider", "openai", "--wire", "chat"])
            .args(["--model", "quiet-model", "--base-url"])
            .arg(&base_url)
            .arg("--config")
            .arg(&config)
            .arg("--history")
            .arg(&history)
            .arg("-C")
            .arg(s.ws())
            .args(&flags)
            .arg("Say something.")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{label}: {err}");
        let line = err
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("{label}: no error line in {err}"))
            .to_owned();
        assert_eq!(
            line,
            "error: provider error: the response broke off after it had started: no data from the model for 300 ms",
            "{label}"
        );
        // What was said before it went quiet is kept, marked as cut off.
        let history = history_messages(&history);
        let said: String = history
            .last()
            .and_then(|m| m["parts"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect();
        assert!(said.starts_with("Half an ans"), "{label}: {said}");
        assert!(said.contains("[incomplete: "), "{label}: {said}");
        closing.push(line);
    }
    assert!(closing.windows(2).all(|w| w[0] == w[1]), "{closing:?}");
}
