//! Interactive runs on a real pseudo-terminal, answered the way a person types: the
//! questions a run asks (a repeated call) are asked and honoured the same way by every loop.

use std::path::Path;

use rexpect::process::WaitStatus;
use rexpect::session::{PtySession, spawn_command};

use crate::parity::{history_messages, results, suspend, three_loops};
use crate::support::{Scratch, command, repo_root};
use crate::support::{call, done, text};

/// Starts wonopcode in a pseudo-terminal on a recorded run of one prompt (`-p`: at a
/// terminal a prompt would open the REPL), 30 s for each expectation.
pub(crate) fn spawn(s: &Scratch, transcript: &Path, flags: &[String], prompt: &str) -> PtySession {
    let mut cmd = command();
    cmd.arg("-p")
        .arg("--replay")
        .arg(transcript)
        .arg("-C")
        .arg(s.ws())
        .args(flags)
        .arg(prompt);
    spawn_command(cmd, Some(30_000)).unwrap()
}

/// Reads the rest of the session and its exit code.
/// Waits for `prompt` on the terminal (failing with `missing` when it does not come) and
/// types `answer`.
pub(crate) fn answer(session: &mut PtySession, prompt: &str, answer: &str, missing: &str) {
    session
        .exp_string(prompt)
        .unwrap_or_else(|e| panic!("{missing}: {e}"));
    session.send_line(answer).unwrap();
}

pub(crate) fn finish(mut session: PtySession) -> (String, i32) {
    let rest = session.exp_eof().unwrap();
    let code = match session.process().wait().unwrap() {
        WaitStatus::Exited(_, code) => code,
        other => panic!("wonopcode did not exit normally: {other:?}"),
    };
    (rest, code)
}

fn doom_loop_transcript() -> std::path::PathBuf {
    repo_root().join("tests/fixtures/transcripts/doom-loop/transcript.jsonl")
}

const QUESTION: &str =
    "the model called `list` 3 times in a row with the same arguments. Let it go on? [y/N]: ";

/// Runs the doom-loop recording in `flags`' loop, answers its question with `answer`, and
/// returns the rest of the screen and the exit code.
fn answer_the_repetition_question(label: &str, flags: &[String], answer: &str) -> (String, i32) {
    let s = Scratch::new();
    s.file("a.txt", "a");
    let mut session = spawn(&s, &doom_loop_transcript(), flags, "List the files.");
    session
        .exp_string(QUESTION)
        .unwrap_or_else(|e| panic!("{label}: no question: {e}"));
    session.send_line(answer).unwrap();
    finish(session)
}

#[test]
fn every_loop_asks_before_a_repeated_call_and_no_stops_the_run() {
    for (label, flags) in three_loops() {
        let (rest, code) = answer_the_repetition_question(label, &flags, "n");
        assert_eq!(code, 1, "{label}: {rest}");
        assert!(
            rest.contains(
                "doom loop detected: `list` was called 3 times in a row with the same arguments"
            ),
            "{label}: {rest}"
        );
        assert!(!rest.contains("never reached"), "{label}: {rest}");
    }
}

#[test]
fn every_loop_goes_on_after_a_yes() {
    for (label, flags) in three_loops() {
        let (rest, code) = answer_the_repetition_question(label, &flags, "y");
        assert_eq!(code, 0, "{label}: {rest}");
        assert!(rest.contains("never reached"), "{label}: {rest}");
        assert!(!rest.contains("doom loop"), "{label}: {rest}");
    }
}

#[test]
fn the_repl_shows_what_a_suspended_run_waits_on_and_the_typed_line_answers_it() {
    for (label, flags) in three_loops() {
        let s = Scratch::new();
        let history = s.outside("h.jsonl");
        let out = suspend(&s, &history, &flags);
        assert_eq!(out.status.code(), Some(3), "{label}");
        let second = s.transcript_after(
            "second.jsonl",
            1,
            &[vec![text("Fine, no summary file."), done("end_turn")]],
        );

        // No prompt and a terminal on stdin: the REPL, on the suspended history.
        let mut cmd = command();
        cmd.arg("--replay")
            .arg(&second)
            .arg("-C")
            .arg(s.ws())
            .arg("--history")
            .arg(&history)
            .args(&flags);
        let mut session = spawn_command(cmd, Some(30_000)).unwrap();
        session
            .exp_string(r#"the run waits on `write` (w): {"path": "SUMMARY.md""#)
            .unwrap_or_else(|e| panic!("{label}: no question: {e}"));
        session
            .exp_string("answer w (Enter: let it run) >")
            .unwrap_or_else(|e| panic!("{label}: no answer prompt: {e}"));
        session.send_line("No file, thanks.").unwrap();
        session
            .exp_string("Fine, no summary file.")
            .unwrap_or_else(|e| panic!("{label}: the run did not go on: {e}"));
        session.send_line("/exit").unwrap();
        let (rest, code) = finish(session);
        assert_eq!(code, 0, "{label}: {rest}");
        assert!(
            !s.ws().join("SUMMARY.md").exists(),
            "{label}: answered, not run"
        );
        let stored = results(&history_messages(&history));
        assert_eq!(
            stored.last().unwrap(),
            &("w".to_owned(), "No file, thanks.".to_owned()),
            "{label}"
        );
    }
}

#[test]
fn a_guests_form_is_asked_field_by_field_in_its_order() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("unused"), done("end_turn")]]);
    let flags = vec![
        "--agent-loop".to_owned(),
        wonopcode_wasm_host::guest_paths::MCP_FIXTURES.to_owned(),
    ];
    let prompt = r#"{"tool": "test_elicitation_sep1034_defaults", "arguments": {}}"#;
    let mut session = spawn(&s, &t, &flags, prompt);
    session
        .exp_string("`mcp-fixtures` asks: Please review and update the form fields")
        .unwrap();
    // In the order of the guest's JSON (serde_json writes keys sorted).
    answer(&mut session, "age (User age) [30]: ", "41", "the age field");
    answer(
        &mut session,
        "name (User name) [John Doe]: ",
        "",
        "the name field",
    );
    answer(
        &mut session,
        "score (User score) [95.5]: ",
        "",
        "the score field",
    );
    answer(
        &mut session,
        "status (User status) {active|inactive|pending} [active]: ",
        "gone",
        "the status field",
    );
    answer(
        &mut session,
        "one of active, inactive, pending",
        "pending",
        "the choice check",
    );
    answer(
        &mut session,
        "verified (Verification status) [true]: ",
        "no",
        "the verified field",
    );
    let (rest, code) = finish(session);
    assert_eq!(code, 0, "{rest}");
    // Defaults fill what was left out; typed values keep their types.
    assert!(rest.contains("action=accept"), "{rest}");
    assert!(rest.contains(r#""name":"John Doe""#), "{rest}");
    assert!(rest.contains(r#""age":41"#), "{rest}");
    assert!(rest.contains(r#""score":95.5"#), "{rest}");
    assert!(rest.contains(r#""status":"pending""#), "{rest}");
    assert!(rest.contains(r#""verified":false"#), "{rest}");
}

/// The recorded edit of `src/inventory.py` followed by `wc -l < src/inventory.py`.
fn edit_and_run() -> (std::path::PathBuf, String) {
    let dir = repo_root().join("tests/fixtures/transcripts/edit-and-run");
    let prompt = std::fs::read_to_string(dir.join("prompt.txt")).unwrap();
    (dir.join("transcript.jsonl"), prompt.trim_end().to_owned())
}

#[test]
fn an_approval_shows_the_change_and_what_always_covers_and_the_call_shows_what_it_did() {
    for (label, flags) in three_loops() {
        let s = Scratch::new();
        crate::support::copy_dir(&repo_root().join("examples/demo/workspace"), &s.ws());
        let (transcript, prompt) = edit_and_run();
        let mut session = spawn(&s, &transcript, &flags, &prompt);
        // The diff comes before the question, with its file headers and the added lines.
        for line in [
            "--- a/src/inventory.py",
            "+++ b/src/inventory.py",
            "@@ -24,6 +24,8 @@",
            "+        if title not in self.books:",
            "+            raise LookupError(",
        ] {
            session
                .exp_string(line)
                .unwrap_or_else(|e| panic!("{label}: no `{line}` in the approval: {e}"));
        }
        answer(
            &mut session,
            "allow `edit` on `src/inventory.py`?\r\n    y  yes, this once\r\n    a  yes, and always `edit` on `src/inventory.py` in this session\r\n    p  yes, and always in this project (kept in your config)\r\n    u  yes, and always, for you (kept in your config)\r\n    n  no (Esc)\r\n    t  no, and tell the model what to do instead\r\n  answer: ",
            "y",
            "the edit's question",
        );
        // After the call, its diff again, folded, without the file headers.
        session
            .exp_string("edit")
            .and_then(|_| session.exp_string("@@ -24,6 +24,8 @@"))
            .unwrap_or_else(|e| panic!("{label}: no folded diff after the edit: {e}"));
        answer(
            &mut session,
            "allow `bash` on `wc -l < src/inventory.py`?\r\n    y  yes, this once\r\n    a  yes, and always `wc -l < src/inventory.py` in this session\r\n    p  yes, and always in this project (kept in your config)\r\n    u  yes, and always, for you (kept in your config)\r\n    n  no (Esc)\r\n    t  no, and tell the model what to do instead\r\n  answer: ",
            "y",
            "the command's question",
        );
        let (rest, code) = finish(session);
        assert_eq!(code, 0, "{label}: {rest}");
        // The command's output under its line: `wc -l` printed 33.
        let plain = console_free(&rest);
        let mut lines = plain
            .lines()
            .filter(|l| !l.contains("Working ("))
            .skip_while(|l| !(l.contains("bash wc -l < src/inventory.py") && l.ends_with(" ms")))
            .skip(1);
        let first = lines.next().unwrap_or_default();
        assert!(first.trim_end().ends_with(" 33"), "{label}: {plain}");
        assert!(
            std::fs::read_to_string(s.ws().join("src/inventory.py"))
                .unwrap()
                .contains("raise LookupError"),
            "{label}"
        );
    }
}

#[test]
fn a_status_line_says_the_model_is_working_before_its_answer_streams() {
    let s = Scratch::new();
    let t = s.transcript(
        "slow.jsonl",
        &[vec![text("The answer, slowly."), done("end_turn")]],
    );
    let flags = vec!["--replay-pace".to_owned(), "400".to_owned()];
    let mut session = spawn(&s, &t, &flags, "Answer slowly.");
    let (before, _) = session
        .exp_regex(r"Working \(\d+\.\d s[^)]*Ctrl-C to interrupt\)")
        .unwrap_or_else(|e| panic!("no status line: {e}"));
    assert!(!before.contains("The answer"), "{before}");
    let (rest, code) = finish(session);
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains("The answer, slowly."), "{rest}");
}

/// `text` without colours and with carriage returns as line ends.
fn console_free(text: &str) -> String {
    let ansi = regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").unwrap();
    ansi.replace_all(text, "")
        .replace("\r\n", "\n")
        .replace('\r', "\n")
}

/// The screen a person sees once `output` (read from a pseudo-terminal, a byte per char) has
/// been drawn on an 80-column terminal: its non-empty lines.
pub(crate) fn screen(output: &str) -> Vec<String> {
    let mut parser = vt100::Parser::new(50, 80, 0);
    parser.process(&bytes(output));
    parser
        .screen()
        .contents()
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The spinner of the `sleep 30` call as drawn: its text, then the rest of its row erased
/// (or, as indicatif draws on its own, padded with spaces).
const SPINNER_DRAWN: &str = r"bash sleep 30(\x1b\[K| +)";

/// A run whose model has `sleep 30` run, on a person's terminal: 80 columns, echoing what is
/// typed (`^C` too), which a pseudo-terminal of the tests does not do unless told.
fn sleeping_on_a_terminal() -> (Scratch, PtySession) {
    let s = Scratch::new();
    let mut turn = call("a", "bash", r#"{"command": "sleep 30"}"#);
    turn.push(done("tool_use"));
    let t = s.transcript("slow.jsonl", &[turn]);
    let mut cmd =
        crate::support::through_shell(r#"stty echo echoctl cols 80 rows 50 && exec "$0" "$@""#);
    cmd.arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .args(["-p", "--yes", "Wait."]);
    (
        s,
        rexpect::session::spawn_command(cmd, Some(30_000)).unwrap(),
    )
}

#[test]
fn ctrl_c_during_a_command_leaves_no_status_line_or_spinner_behind() {
    let (_s, mut session) = sleeping_on_a_terminal();
    let (before, shown) = session
        .exp_regex(SPINNER_DRAWN)
        .unwrap_or_else(|e| panic!("no spinner: {e}"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    session.send_control('c').unwrap();
    let (rest, code) = finish(session);
    assert_eq!(code, 130, "{rest}");
    let lines = screen(&format!("{before}{shown}{rest}"));
    assert!(
        !lines.iter().any(|l| l.contains("Working (")),
        "a status line was left behind: {lines:#?}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains("sleep 30")).count(),
        1,
        "the finished call's line only: {lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("cancelling the turn")),
        "{lines:#?}"
    );
}

/// The rows of an 80-column terminal once `output` has been drawn, each as shown (a line
/// the terminal wrapped is two rows).
fn rows(output: &str) -> Vec<String> {
    let mut parser = vt100::Parser::new(50, 80, 0);
    parser.process(&bytes(output));
    parser
        .screen()
        .rows(0, 80)
        .map(|r| r.trim_end().to_owned())
        .filter(|r| !r.is_empty())
        .collect()
}

#[test]
fn two_status_lines_are_drawn_on_two_lines_of_the_screen() {
    let (_s, mut session) = sleeping_on_a_terminal();
    // The model's status and the command's spinner, drawn a few times.
    let lines = rows(&three_frames(&mut session));
    session.send_control('c').unwrap();
    let (rest, code) = finish(session);
    assert_eq!(code, 130, "{rest}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Working (") && !l.contains("bash")),
        "the status ran into the next line: {lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("bash sleep 30")),
        "the command's line was wrapped: {lines:#?}"
    );
    // Ctrl-C was not echoed into the drawing.
    assert!(!screen(&rest).iter().any(|l| l.contains("^C")), "{rest}");
}

/// Reads three frames of the `sleep 30` run's lines.
fn three_frames(session: &mut PtySession) -> String {
    let mut drawn = String::new();
    for _ in 0..3 {
        let (before, shown) = session
            .exp_regex(SPINNER_DRAWN)
            .unwrap_or_else(|e| panic!("no spinner: {e}"));
        drawn.push_str(&before);
        drawn.push_str(&shown);
    }
    drawn
}

/// The status lines on `screen`, each with whether the terminal would move it as one line
/// when it reflows: ended by a newline (not wrapped into the next row) and no wider than its
/// text (no padding written after it, which a narrower terminal would wrap onto a row of
/// its own).
fn status_rows(screen: &vt100::Screen) -> Vec<(String, bool)> {
    let (rows, cols) = screen.size();
    (0..rows)
        .filter_map(|row| {
            let text: String = (0..cols)
                .filter_map(|col| screen.cell(row, col))
                .map(|cell| cell.contents().to_owned())
                .collect();
            let shown = text.trim_end().to_owned();
            if !(shown.contains("Working (") || shown.contains("bash sleep 30")) {
                return None;
            }
            let written = (0..cols)
                .filter(|&col| screen.cell(row, col).is_some_and(|c| c.has_contents()))
                .count();
            let one_line = !screen.row_wrapped(row) && written == shown.chars().count();
            Some((shown, one_line))
        })
        .collect()
}

#[test]
fn narrowing_the_terminal_mid_turn_leaves_no_status_line_behind() {
    let (_s, mut session) = sleeping_on_a_terminal();
    let mut terminal = vt100::Parser::new(50, 80, 0);
    terminal.process(&bytes(&three_frames(&mut session)));
    let wide = status_rows(terminal.screen());
    assert_eq!(wide.len(), 2, "{wide:#?}");
    assert!(
        wide.iter().all(|(_, one_line)| *one_line),
        "a status line padded or wrapped, which a reflow splits: {wide:#?}"
    );
    // The person narrows the window to 56 columns.
    let pty = session.process().get_file_handle().unwrap();
    let narrow = rustix::termios::Winsize {
        ws_row: 50,
        ws_col: 56,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(&pty, narrow).unwrap();
    terminal.screen_mut().set_size(50, 56);
    terminal.process(&bytes(&three_frames(&mut session)));
    let narrowed = status_rows(terminal.screen());
    session.send_control('c').unwrap();
    let (rest, code) = finish(session);
    assert_eq!(code, 130, "{rest}");
    assert_eq!(narrowed.len(), 2, "a copy was left behind: {narrowed:#?}");
    assert!(
        narrowed.iter().all(|(_, one_line)| *one_line),
        "{narrowed:#?}"
    );
}

/// The bytes of `output` read from a pseudo-terminal (a byte per char).
fn bytes(output: &str) -> Vec<u8> {
    output.chars().map(|c| c as u32 as u8).collect()
}

/// A recording whose model runs `command` with `bash`, then answers `ok`.
fn one_bash_call(s: &Scratch, command: &str) -> std::path::PathBuf {
    let arguments = serde_json::json!({ "command": command }).to_string();
    let mut first = call("c1", "bash", &arguments);
    first.push(done("tool_use"));
    s.transcript("t.jsonl", &[first, vec![text("ok"), done("end_turn")]])
}

#[test]
fn t_at_an_approval_refuses_and_tells_the_model_what_to_do_instead() {
    let s = Scratch::new();
    let t = one_bash_call(&s, "rm -rf build");
    let mut session = spawn(&s, &t, &["--json".to_owned()], "go");
    session
        .exp_string("t  no, and tell the model what to do instead\r\n  answer: ")
        .unwrap_or_else(|e| panic!("no question: {e}"));
    session.send("t").unwrap();
    session.flush().unwrap();
    session
        .exp_string("tell the model what to do instead: ")
        .unwrap_or_else(|e| panic!("no line asked for: {e}"));
    session.send_line("use cargo clean instead").unwrap();
    let (rest, code) = finish(session);
    assert_eq!(code, 0, "{rest}");
    // The call's result, as the model reads it.
    assert!(
        rest.contains(
            "the user refused `bash` on `rm -rf build` and said: use cargo clean instead"
        ),
        "{rest}"
    );
}

/// Runs `transcript` in `workspace` with the config under `config_home`, answers its
/// approval with `key`, waits for `said`, and checks that the run succeeds.
pub(crate) fn answer_for_good(
    transcript: &Path,
    workspace: &Path,
    config_home: &Path,
    key: &str,
    said: &str,
) {
    let mut cmd = command();
    cmd.env("XDG_CONFIG_HOME", config_home)
        .arg("--replay")
        .arg(transcript)
        .arg("-C")
        .arg(workspace)
        .args(["-p", "go"]);
    let mut session = spawn_command(cmd, Some(30_000)).unwrap();
    session
        .exp_string(&format!("{key}  yes, and always"))
        .unwrap_or_else(|e| panic!("no question: {e}"));
    session.send(key).unwrap();
    session.flush().unwrap();
    session
        .exp_string(said)
        .unwrap_or_else(|e| panic!("not said: {e}"));
    let (rest, code) = finish(session);
    assert_eq!(code, 0, "{rest}");
}

/// The exit code of `transcript` run again in `workspace`, with nobody to ask, with the
/// config under `config_home`.
pub(crate) fn run_unattended(
    transcript: &Path,
    workspace: &Path,
    config_home: &Path,
) -> Option<i32> {
    crate::support::wonopcode()
        .env("XDG_CONFIG_HOME", config_home)
        .arg("--replay")
        .arg(transcript)
        .arg("-C")
        .arg(workspace)
        .arg("go")
        .output()
        .unwrap()
        .status
        .code()
}

#[test]
fn u_at_an_approval_allows_the_call_for_good_in_the_users_config() {
    let s = Scratch::new();
    let t = one_bash_call(&s, "touch FIRST");
    let config_home = s.outside("config");
    let file = config_home.join("wonopcode/config.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "model: test-model\n").unwrap();
    answer_for_good(
        &t,
        &s.ws(),
        &config_home,
        "u",
        "allowed from now on, in every workspace",
    );
    assert!(s.ws().join("FIRST").exists());
    let config: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(config["model"], "test-model");
    let rule = &config["permissions"]["rules"][0];
    assert_eq!(
        (
            rule["tool"].as_str(),
            rule["pattern"].as_str(),
            rule["action"].as_str()
        ),
        (Some("bash"), Some("touch FIRST"), Some("allow"))
    );
    // The next run, with nobody to ask, runs it; without the config it could not.
    assert_eq!(run_unattended(&t, &s.ws(), &config_home), Some(0));
    assert_eq!(
        run_unattended(&t, &s.ws(), &s.outside("no-config")),
        Some(6)
    );
}

#[test]
fn p_at_an_approval_allows_the_call_for_good_in_this_workspace_only() {
    let s = Scratch::new();
    let t = one_bash_call(&s, "touch FIRST");
    let config_home = s.outside("config");
    let file = config_home.join("wonopcode/config.yaml");
    answer_for_good(
        &t,
        &s.ws(),
        &config_home,
        "p",
        "allowed from now on, in this workspace",
    );
    let config: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let workspace = std::fs::canonicalize(s.ws()).unwrap();
    let rule = &config["projects"][workspace.to_str().unwrap()]["permissions"]["rules"][0];
    assert_eq!(
        (rule["tool"].as_str(), rule["pattern"].as_str()),
        (Some("bash"), Some("touch FIRST")),
        "{config:?}"
    );
    assert!(
        config["permissions"].is_null(),
        "not for every workspace: {config:?}"
    );
    // The next run here, with nobody to ask, runs it; in another workspace it asks.
    assert_eq!(run_unattended(&t, &s.ws(), &config_home), Some(0));
    let elsewhere = s.outside("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    assert_eq!(run_unattended(&t, &elsewhere, &config_home), Some(6));
}

#[test]
fn one_key_answers_an_approval_and_ctrl_c_there_stops_the_turn() {
    let s = Scratch::new();
    let mut first = call("c1", "bash", r#"{"command": "touch FIRST"}"#);
    first.push(done("tool_use"));
    let mut second = call("c2", "bash", r#"{"command": "touch SECOND"}"#);
    second.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[first, second, vec![text("done"), done("end_turn")]],
    );
    let mut session = spawn(&s, &t, &[], "go");
    session
        .exp_string("allow `bash` on `touch FIRST`?")
        .unwrap_or_else(|e| panic!("no first question: {e}"));
    // A key that answers nothing says which do; `y` alone, without Enter, answers.
    session.send("x").unwrap();
    session.flush().unwrap();
    session
        .exp_string("press y (once), a (always), p (always, for this project), u (always, for you: both written to your config), n or Esc (no), or t (no, and tell the model what to do instead)")
        .unwrap_or_else(|e| panic!("no hint: {e}"));
    session.send("y").unwrap();
    session.flush().unwrap();
    session
        .exp_string("allow `bash` on `touch SECOND`?")
        .unwrap_or_else(|e| panic!("no second question: {e}"));
    // Ctrl-C at the question: no, and the turn stops, at once.
    session.send_control('c').unwrap();
    let (rest, code) = finish(session);
    assert_eq!(code, 130, "{rest}");
    assert!(rest.contains("cancelling the turn"), "{rest}");
    assert!(s.ws().join("FIRST").exists());
    assert!(!s.ws().join("SECOND").exists());
}

/// An answer in Markdown: a heading, emphasis, code, a table and a code block.
fn markdown_answer(s: &Scratch) -> std::path::PathBuf {
    let answer = "# Plan\nRun **all** the `tests`:\n| step | time |\n|---|---|\n| build | 2 s |\n| test | 40 s |\n```rust\nfn main() {}\n```\nDone.";
    s.transcript("md.jsonl", &[vec![text(answer), done("end_turn")]])
}

#[test]
fn the_answers_markdown_is_rendered_at_a_terminal_and_plain_elsewhere() {
    let s = Scratch::new();
    let t = markdown_answer(&s);
    // At a terminal: the markers go, the table lines up (without colours, as NO_COLOR asks).
    let (rest, code) = finish(spawn(&s, &t, &[], "plan"));
    assert_eq!(code, 0, "{rest}");
    let rest = screen(&rest).join("\n");
    for drawn in [
        "Plan",
        "Run all the tests:",
        "build │ 2 s",
        "test  │ 40 s",
        "  fn main() {}",
    ] {
        assert!(rest.contains(drawn), "`{drawn}` not in {rest}");
    }
    for marker in ["# Plan", "**", "| build", "```"] {
        assert!(!rest.contains(marker), "`{marker}` left in {rest}");
    }
    // In colour: bold, and the code highlighted.
    let mut cmd = command();
    cmd.env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1")
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .args(["-p", "plan"]);
    let (rest, code) = finish(spawn_command(cmd, Some(30_000)).unwrap());
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains("\x1b[1mall"), "{rest:?}");
    assert!(rest.contains("\x1b[38;2;"), "{rest:?}");
    // --no-markdown, and stdout not a terminal: the text as the model sent it.
    let (rest, _) = finish(spawn(&s, &t, &["--no-markdown".to_owned()], "plan"));
    assert!(rest.contains("Run **all** the `tests`:"), "{rest}");
    let out = crate::support::wonopcode()
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("plan")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| build | 2 s |"), "{stdout}");
}

/// A command that prints a line every 150 ms, six in all, in colour and with a progress
/// line drawn over itself.
const SLOW_PRINTER: &str = "for i in 1 2 3 4 5 6; do printf '\\033[32mline%s\\033[0m\\n' $i; printf ' 10%%\\r100%%\\n'; sleep 0.15; done";

#[test]
fn a_running_command_shows_its_last_lines_as_they_come() {
    let s = Scratch::new();
    let t = one_bash_call(&s, SLOW_PRINTER);
    let mut session = spawn(&s, &t, &["--yes".to_owned()], "go");
    // Under the spinner while it runs, before the call's line: plain, as a terminal
    // leaves it (no colour codes, the progress line at its end).
    // The pseudo-terminal is read a byte a character: `│` is its three UTF-8 bytes.
    let bar = "\u{e2}\u{94}\u{82}";
    // Each line drawn ends by erasing the rest of its row.
    let end = "\u{1b}[K";
    session
        .exp_string(&format!("{bar} line3{end}"))
        .unwrap_or_else(|e| panic!("no live line: {e}"));
    let (rest, code) = finish(session);
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains(&format!("{bar} line6{end}")), "{rest}");
    assert!(rest.contains(&format!("{bar} 100%{end}")), "{rest}");
}

#[test]
fn live_output_goes_to_json_readers_and_not_into_the_journal() {
    let s = Scratch::new();
    let t = one_bash_call(&s, SLOW_PRINTER);
    let runs = s.outside("runs");
    let out = s.run_json_with_env(
        &t,
        &[("WONOPCODE_RUNS_DIR", runs.to_str().unwrap())],
        &["--yes"],
        "go",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::support::stderr(&out)
    );
    let updates: Vec<String> = crate::support::events(&out)
        .iter()
        .filter(|e| e["type"] == "item.updated" && e["item"]["kind"] == "tool_call")
        .map(|e| {
            assert_eq!(e["item"]["status"], "in_progress", "{e}");
            e["item"]["output"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(!updates.is_empty(), "no live output in the events");
    let last = updates.last().unwrap();
    assert!(last.contains("line2\n100%\n"), "{last:?}");
    assert!(!last.contains('\u{1b}'), "{last:?}");
    // The journal keeps the finished call, not what it printed on the way.
    let journals: Vec<String> = crate::batch::walk_files(&runs)
        .into_iter()
        .filter(|p| p.ends_with("events.jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(!journals.is_empty(), "no journal under {}", runs.display());
    for journal in journals {
        assert!(!journal.contains("\"item.updated\""), "{journal}");
        assert!(journal.contains("\"item.completed\""));
    }
}
