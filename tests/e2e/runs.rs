//! Whole runs: interruption and resumption, suspension, doom loops, limits, piped prompts.

use std::time::Duration;

use crate::support::{
    Scratch, call, done, events, interrupt, priced_transcript_of, spawn_until, stderr, text,
    tool_results, usage, wonopcode,
};

fn history_records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("history line is not JSON ({e}): {l}"))
        })
        .collect()
}

#[test]
fn sigint_during_a_tool_keeps_a_valid_history_that_resumes() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let mut turn0 = vec![text("Running the slow command.")];
    turn0.extend(call("c1", "bash", r#"{"command": "sleep 30 & sleep 30"}"#));
    turn0.push(done("tool_use"));
    let first = s.transcript("first.jsonl", &[turn0]);
    let (mut child, lines) = spawn_until(
        crate::support::command()
            .args(["--json", "--yes", "--replay"])
            .arg(&first)
            .arg("-C")
            .arg(s.ws())
            .arg("--history")
            .arg(&history)
            .arg("run the slow thing"),
        &[r#""type":"item.started""#, r#""name":"bash""#],
    );
    std::thread::sleep(Duration::from_millis(200));
    let code = interrupt(&mut child);
    assert_eq!(code, Some(130));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.contains(r#""type":"turn.failed""#) && l.contains(r#""status":"cancelled""#)), "{rest:?}");

    let records = history_records(&history);
    assert_eq!(records[0]["type"], "session");
    let last = records.last().unwrap();
    assert_eq!(
        last["message"]["role"], "tool",
        "the cancelled call is answered: {last}"
    );
    assert_eq!(last["message"]["parts"][0]["is_error"], true);
    assert!(
        records
            .iter()
            .any(|r| r["message"]["parts"][0]["text"] == "Running the slow command."),
        "partial assistant text kept"
    );

    let second = s.transcript_after(
        "second.jsonl",
        1,
        &[vec![text("Back again."), done("end_turn")]],
    );
    let out = s.run_json(
        &second,
        &["--history", history.to_str().unwrap()],
        "carry on",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = history_records(&history);
    let users: Vec<_> = records
        .iter()
        .filter(|r| r["message"]["role"] == "user")
        .collect();
    assert_eq!(users.len(), 2);
    assert_eq!(
        records.last().unwrap()["message"]["parts"][0]["text"],
        "Back again."
    );
    assert_eq!(
        records.iter().filter(|r| r["type"] == "session").count(),
        1,
        "same session"
    );
}

#[test]
fn unattended_suspend_exits_3_and_resume_runs_the_pending_call() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let mut turn0 = call("w1", "write", r#"{"path": "out.txt", "content": "hello"}"#);
    turn0.push(done("tool_use"));
    let first = s.transcript("first.jsonl", &[turn0]);
    let out = s.run_json(
        &first,
        &[
            "--unattended",
            "suspend",
            "--history",
            history.to_str().unwrap(),
        ],
        "write it",
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("suspended: `write` on `out.txt` needs approval; continue with --resume"),
        "{}",
        stderr(&out)
    );
    assert!(!s.ws().join("out.txt").exists());
    let last = events(&out).pop().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["status"].as_str()),
        (Some("turn.completed"), Some("suspended"))
    );

    let second = s.transcript_after(
        "second.jsonl",
        1,
        &[vec![text("Written."), done("end_turn")]],
    );
    let out = wonopcode()
        .args(["--json", "--yes", "--resume", "--history"])
        .arg(&history)
        .arg("--replay")
        .arg(&second)
        .arg("-C")
        .arg(s.ws())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(s.ws().join("out.txt")).unwrap(),
        "hello"
    );
}

#[test]
fn resume_without_history_is_a_usage_error() {
    let out = wonopcode().arg("--resume").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_same_call_three_times_stops_the_run() {
    let s = Scratch::new();
    let turn = |id: &str| {
        let mut t = call(id, "list", r#"{"path": "."}"#);
        t.push(done("tool_use"));
        t
    };
    let t = s.transcript(
        "t.jsonl",
        &[
            turn("a"),
            turn("b"),
            turn("c"),
            vec![text("never"), done("end_turn")],
        ],
    );
    let out = s.run_json(&t, &[], "loop");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "doom loop detected: `list` was called 3 times in a row with the same arguments"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        tool_results(&events(&out)).len(),
        2,
        "the third call did not run"
    );
}

#[test]
fn iteration_limit_ends_with_exit_4() {
    let s = Scratch::new();
    let turn = |id: &str, depth: u32| {
        let mut t = call(id, "list", &format!(r#"{{"depth": {depth}}}"#));
        t.push(done("tool_use"));
        t
    };
    let t = s.transcript(
        "t.jsonl",
        &[
            turn("a", 1),
            turn("b", 2),
            vec![text("never"), done("end_turn")],
        ],
    );
    let out = s.run_json(&t, &["--max-iterations", "2"], "go");
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr(&out).contains("reached the limit of 2 iterations"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn prompt_is_read_from_piped_stdin() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("Hello."), done("end_turn")]]);
    let out = wonopcode()
        .arg("--json")
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .write_stdin("hello from a pipe\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let evs = events(&out);
    let user = evs.iter().find(|e| e["type"] == "message.created").unwrap();
    assert_eq!(user["message"]["parts"][0]["text"], "hello from a pipe");
}

#[test]
fn terminal_output_streams_text_and_reports_tools_without_color() {
    let s = Scratch::new();
    s.file("notes.txt", "one\ntwo\n");
    let mut turn0 = vec![text("Reading.")];
    turn0.extend(call("r", "read", r#"{"path": "notes.txt"}"#));
    turn0.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[turn0, vec![text("It has two lines."), done("end_turn")]],
    );
    let out = wonopcode()
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("read notes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout, "Reading.\nIt has two lines.\n");
    let err = stderr(&out);
    assert!(err.contains("✓ read notes.txt"), "{err}");
    assert!(!err.contains('\u{1b}'), "NO_COLOR honoured: {err:?}");
}

/// A priced transcript (`priced_transcript_of`) whose responses each call `list` (on a
/// directory that does not exist) and use 1,000 tokens in and 1,000 out ($0.011).
fn priced_transcript(s: &Scratch, responses: usize) -> std::path::PathBuf {
    let turns: Vec<(&str, Vec<serde_json::Value>)> = (0..responses)
        .map(|i| {
            // Different arguments each time: the same call three times in a row is a doom loop.
            let args = serde_json::json!({ "path": format!("d{i}") }).to_string();
            let mut chunks = call(&format!("c{i}"), "list", &args);
            chunks.extend([usage(1000, 1000), done("tool_use")]);
            ("0", chunks)
        })
        .collect();
    let path = s.outside("priced.jsonl");
    std::fs::write(&path, priced_transcript_of(&turns)).unwrap();
    path
}

#[test]
fn a_request_the_cost_budget_cannot_cover_is_never_sent() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let t = priced_transcript(&s, 5);
    // Two responses cost $0.022; the third's worst case ($0.01 of output and its prompt)
    // would pass $0.03.
    let out = s.run_json(
        &t,
        &[
            "--yes",
            "--max-cost",
            "0.03",
            "--history",
            history.to_str().unwrap(),
        ],
        "go",
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let all = events(&out);
    let failed = all
        .iter()
        .find(|e| e["type"] == "turn.failed")
        .unwrap_or_else(|| panic!("no turn.failed: {all:?}"));
    assert_eq!(failed["status"], "budget_exceeded", "{failed}");
    assert_eq!(
        failed["iterations"], 3,
        "the third request was counted, not sent: {failed}"
    );
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("budget exceeded: --max-cost $0.0300"),
        "{error}"
    );
    assert_eq!(
        stderr(&out).trim_end().lines().last().unwrap_or(""),
        format!("error: {error}")
    );
    // Two responses were streamed, and the history keeps both rounds.
    let started = all
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_call")
        .count();
    assert_eq!(started, 2, "{all:?}");
    // Only the two that were sent are reported as responses.
    let reported = all
        .iter()
        .filter(|e| e["type"] == "response.completed")
        .count();
    assert_eq!(reported, 2, "{all:?}");
    assert!(history.exists());
    // Under $0.05 four responses ($0.044) are paid for, and the fifth is not sent.
    let out = s.run_json(&t, &["--yes", "--max-cost", "0.05"], "go");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let failed = events(&out)
        .into_iter()
        .find(|e| e["type"] == "turn.failed")
        .unwrap();
    assert_eq!(failed["iterations"], 5, "{failed}");
}

#[test]
fn token_and_time_budgets_and_a_model_without_prices() {
    let s = Scratch::new();
    let t = priced_transcript(&s, 5);
    // 2,000 tokens each, and up to ~1,100 for the next: 5,000 lets two through.
    let out = s.run_json(&t, &["--yes", "--max-tokens", "5000"], "go");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("budget exceeded: --max-tokens 5000"),
        "{}",
        stderr(&out)
    );
    // An unpriced model under a cost limit is refused before it starts, with the fix.
    let unpriced = s.transcript("u.jsonl", &[vec![text("hi"), done("end_turn")]]);
    let out = s.run_json(&unpriced, &["--max-cost", "1"], "go");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--max-cost needs the prices of `test-model`")
            && err.contains("--max-tokens instead"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // Bad values are one line each.
    for (flag, value) in [
        ("--max-cost", "free"),
        ("--max-cost", "0"),
        ("--max-wall", "soon"),
        ("--max-tokens", "0"),
    ] {
        let out = s.run_json(&unpriced, &[flag, value], "go");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} {value}: {}",
            stderr(&out)
        );
    }
}
