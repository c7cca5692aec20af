//! Typing while a turn runs, on a real pseudo-terminal that echoes as a person's does:
//! nothing typed lands in the status lines; Enter sends the line into the running turn at
//! its next model request, Tab sends it as the next prompt once the turn ends, a line left
//! half typed comes back at the prompt, and keys typed before an approval question never
//! answer it (`docs/repl.md`).

use std::path::Path;

use rexpect::session::PtySession;

use crate::parity::{history_messages, user_prompts};
use crate::repl::{enter, expect, quit, ready};
use crate::support::{Scratch, call, done, text, through_shell};
use crate::terminal::screen;

/// The REPL on `transcript` at an 80-column terminal that echoes what is typed, its
/// conversation kept in `history`.
fn repl(s: &Scratch, transcript: &Path, history: &Path, flags: &[&str]) -> PtySession {
    let mut cmd = through_shell(r#"stty echo cols 80 rows 50 && exec "$0" "$@""#);
    cmd.env("XDG_DATA_HOME", s.outside("data"))
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .arg("--replay")
        .arg(transcript)
        .arg("--history")
        .arg(history)
        .args(flags)
        .arg("-C")
        .arg(s.ws());
    rexpect::session::spawn_command(cmd, Some(30_000)).unwrap()
}

/// Types `keys` as they are, without Enter.
fn typed(session: &mut PtySession, keys: &str) {
    session.send(keys).unwrap();
    session.flush().unwrap();
}

#[test]
fn enter_during_a_turn_sends_the_line_into_it_at_its_next_request() {
    let s = Scratch::new();
    // The command runs until the test says (a file appears), not for a time: the line is
    // typed and drawn while it runs, however slow the machine.
    let mut first = call(
        "c1",
        "bash",
        r#"{"command": "until [ -e go ]; do sleep 0.05; done"}"#,
    );
    first.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[first, vec![text("Tabs it is."), done("end_turn")]],
    );
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &t, &history, &["--yes"]);
    ready(&mut session);
    enter(&mut session, "reformat the file");
    let (before, _) = session
        .exp_regex("bash until")
        .unwrap_or_else(|e| panic!("no spinner: {e}"));
    typed(&mut session, "use tabs\r");
    let (drawn, _) = session
        .exp_regex(r"into this turn at its next request: use tabs")
        .unwrap_or_else(|e| panic!("the line waiting for the request is not shown: {e}"));
    std::fs::write(s.ws().join("go"), "").unwrap();
    let (taken, _) = session
        .exp_regex(r"\(sent into the running turn\)")
        .unwrap_or_else(|e| panic!("not said when the turn took it: {e}"));
    expect(&mut session, "Tabs it is.");
    quit(&mut session);
    let lines = screen(&format!("{before}{drawn}{taken}"));
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("use tabs") && (l.contains("Working") || l.contains("until"))),
        "what was typed was echoed into the status lines: {lines:#?}"
    );
    // The model read it after the command's result, before its answer.
    let messages = history_messages(&history);
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user", "assistant"]);
    assert_eq!(messages[3]["parts"][0]["text"], "use tabs");
}

#[test]
fn tab_during_a_turn_sends_the_line_after_it_and_a_half_typed_line_comes_back() {
    let s = Scratch::new();
    let slow: Vec<_> = ["First ", "answer ", "comes ", "slowly."]
        .into_iter()
        .map(text)
        .chain([done("end_turn")])
        .collect();
    let t = s.transcript(
        "t.jsonl",
        &[slow, vec![text("Second answer."), done("end_turn")]],
    );
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &t, &history, &["--replay-pace", "400"]);
    ready(&mut session);
    enter(&mut session, "first question");
    expect(&mut session, "Working (");
    typed(&mut session, "second question\t");
    expect(&mut session, "after this turn: second question");
    typed(&mut session, "half typ");
    expect(&mut session, "half typ (Enter: into this turn");
    expect(&mut session, "slowly.");
    // The turn ended: the queued line is the next prompt, sent at once.
    expect(&mut session, "second question (typed during the last turn)");
    expect(&mut session, "Second answer.");
    // Then the prompt, already holding what was half typed, which goes on being edited.
    ready(&mut session);
    expect(&mut session, "half typ");
    typed(&mut session, "ed\x15");
    quit(&mut session);
    assert_eq!(
        user_prompts(&history),
        ["first question", "second question"]
    );
}

/// Longer than a one-key question waits for a person who was typing to pause (`SETTLE`
/// in `crates/cli/src/prompter.rs`).
const SETTLED: std::time::Duration = std::time::Duration::from_millis(900);

/// The REPL at a turn whose response (`before`, then a `touch FIRST` call, paced `pace` ms
/// a chunk) asks for approval, then answers `Not done.`; the session once the turn works,
/// and the history file.
fn asking_to_touch(
    s: &Scratch,
    before: &[serde_json::Value],
    pace: &str,
) -> (PtySession, std::path::PathBuf) {
    let mut first = before.to_vec();
    first.extend(call("c1", "bash", r#"{"command": "touch FIRST"}"#));
    first.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[first, vec![text("Not done."), done("end_turn")]],
    );
    let history = s.outside("history.jsonl");
    let mut session = repl(s, &t, &history, &["--replay-pace", pace]);
    ready(&mut session);
    enter(&mut session, "touch it");
    expect(&mut session, "Working (");
    (session, history)
}

#[test]
fn keys_typed_before_an_approval_question_do_not_answer_it() {
    let s = Scratch::new();
    let (mut session, history) = asking_to_touch(&s, &[], "400");
    // A `y` meant for the next prompt, typed while the model is still answering.
    typed(&mut session, "y");
    expect(&mut session, "allow `bash` on `touch FIRST`?");
    // The person stops, reads the question, and answers once a key can (the `y` may have
    // been typed within a second of it: the question then waits for a pause).
    std::thread::sleep(SETTLED);
    assert!(
        !s.ws().join("FIRST").exists(),
        "a key typed before the question answered it"
    );
    // The `y` is still the person's: at the prompt, not sent.
    said_no(&s, session);
    assert_eq!(user_prompts(&history), ["touch it"]);
}

#[test]
fn a_question_that_appears_while_the_person_types_takes_none_of_their_keys() {
    let s = Scratch::new();
    let (mut session, _) = asking_to_touch(&s, &[text("Looking.")], "300");
    // A steering line typed a key every 60 ms, on through the question: `a`, `p` and `y`
    // would each approve the command.
    for key in "maybe play a happy app, maybe play a happy app".chars() {
        typed(&mut session, &key.to_string());
        std::thread::sleep(std::time::Duration::from_millis(60));
    }
    expect(&mut session, "allow `bash` on `touch FIRST`?");
    expect(&mut session, "what you were typing is not an answer");
    assert!(
        !s.ws().join("FIRST").exists(),
        "a key of the steering line answered the question"
    );
    // Once the person stops and reads, a key answers.
    std::thread::sleep(SETTLED);
    said_no(&s, session);
}

/// Answers the question no once the person has paused (which stops the turn), and quits
/// with nothing touched.
fn said_no(s: &Scratch, mut session: PtySession) {
    typed(&mut session, "n");
    expect(&mut session, "(refused: the turn stopped");
    ready(&mut session);
    typed(&mut session, "\x15");
    quit(&mut session);
    assert!(!s.ws().join("FIRST").exists());
}

#[test]
fn esc_during_a_turn_stops_it_and_eats_no_key_typed_after_it() {
    let s = Scratch::new();
    // The command would run until a file appears, which nothing makes: only Esc ends it.
    let mut first = call(
        "c1",
        "bash",
        r#"{"command": "until [ -e never ]; do sleep 0.05; done"}"#,
    );
    first.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[first, vec![text("Tests too."), done("end_turn")]],
    );
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &t, &history, &["--yes"]);
    ready(&mut session);
    enter(&mut session, "reformat the file");
    expect(&mut session, "bash until");
    typed(&mut session, "also mention");
    expect(&mut session, "also mention (Enter: into this turn");
    typed(&mut session, "\x1b");
    expect(&mut session, "cancelling the turn (Esc)");
    // What was typed before Esc is back at the prompt, and the key typed next is not eaten.
    expect(&mut session, "back at the prompt");
    ready(&mut session);
    typed(&mut session, " tests\r");
    expect(&mut session, "Tests too.");
    ready(&mut session);
    quit(&mut session);
    assert_eq!(
        user_prompts(&history),
        ["reformat the file", "also mention tests"]
    );
}
