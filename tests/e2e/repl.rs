//! The REPL on a real pseudo-terminal, typed the way a person types: line editing, history
//! kept across runs, slash commands that never reach the model, Ctrl-C at each point
//! (`docs/repl.md`).

use std::path::Path;

use rexpect::session::{PtySession, spawn_command};

use crate::parity::{history_messages, user_prompts};
use crate::support::{Scratch, call, command, done, text};

const LEFT: &str = "\x1b[D";
const UP: &str = "\x1b[A";
const CTRL_C: &str = "\x03";

/// Starts the REPL on `transcript`, its history in `history`, its line history in the
/// scratch's own data directory.
fn repl(s: &Scratch, transcript: &Path, history: &Path) -> PtySession {
    repl_with(s, transcript, &["--history".as_ref(), history.as_os_str()])
}

/// Starts the REPL on `transcript` with the extra flags `args`, its line history in the
/// scratch's own data directory.
fn repl_with(s: &Scratch, transcript: &Path, args: &[&std::ffi::OsStr]) -> PtySession {
    let mut cmd = command();
    cmd.env("XDG_DATA_HOME", s.outside("data"))
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .arg("--replay")
        .arg(transcript)
        .args(args)
        .arg("-C")
        .arg(s.ws());
    spawn_command(cmd, Some(30_000)).unwrap()
}

pub(crate) fn expect(session: &mut PtySession, what: &str) {
    session
        .exp_string(what)
        .unwrap_or_else(|e| panic!("`{what}` did not appear: {e}"));
}

/// Types `line` and Enter.
pub(crate) fn enter(session: &mut PtySession, line: &str) {
    session.send(&format!("{line}\r")).unwrap();
    session.flush().unwrap();
}

/// Waits for the prompt, answering the editor's question for the cursor's position as a
/// terminal does (row 1, column 1).
pub(crate) fn ready(session: &mut PtySession) {
    expect(session, "\x1b[6n");
    session.send("\x1b[1;1R").unwrap();
    session.flush().unwrap();
}

/// At the prompt, types `line` and Enter, and waits for `answer`.
fn says(session: &mut PtySession, line: &str, answer: &str) {
    ready(session);
    enter(session, line);
    expect(session, answer);
}

/// At the prompt, types `/exit` and waits for the REPL to end.
pub(crate) fn quit(session: &mut PtySession) {
    ready(session);
    enter(session, "/exit");
    session.exp_eof().unwrap();
}

/// A recording of two prompts' answers, `First answer.` and `Second answer.`.
fn two_answers(s: &Scratch) -> std::path::PathBuf {
    s.transcript(
        "t.jsonl",
        &[
            vec![text("First answer."), done("end_turn")],
            vec![text("Second answer."), done("end_turn")],
        ],
    )
}

#[test]
fn a_prompt_given_at_a_terminal_opens_the_session_with_it() {
    let s = Scratch::new();
    let t = two_answers(&s);
    let history = s.outside("history.jsonl");
    let mut session = repl_with(
        &s,
        &t,
        &[
            "--history".as_ref(),
            history.as_os_str(),
            "first question".as_ref(),
        ],
    );
    // The banner, the prompt as if typed, its answer, then the prompt of the session.
    expect(&mut session, "Ctrl-D to quit");
    expect(&mut session, "> first question");
    expect(&mut session, "First answer.");
    says(&mut session, "second question", "Second answer.");
    quit(&mut session);
    assert_eq!(
        user_prompts(&history),
        ["first question", "second question"]
    );
    // `-p` keeps it one prompt, at a terminal too.
    let t = two_answers(&s);
    let mut session = repl_with(&s, &t, &["-p".as_ref(), "only this".as_ref()]);
    expect(&mut session, "First answer.");
    session.exp_eof().unwrap();
}

#[test]
fn the_repl_edits_lines_answers_slash_commands_and_quits_on_a_second_ctrl_c() {
    let s = Scratch::new();
    let t = two_answers(&s);
    let history = s.outside("h.jsonl");
    let mut session = repl(&s, &t, &history);
    // (The pseudo-terminal is read byte by byte as Latin-1: the banner's `·` is left out.)
    expect(&mut session, "loop standard");
    expect(&mut session, "sandbox workspace-write");
    expect(&mut session, "approvals: ask");
    expect(&mut session, "/help for commands");
    // `abc`, Left, Left, `X`: the line sent is `aXbc`.
    ready(&mut session);
    session.send(&format!("abc{LEFT}{LEFT}X")).unwrap();
    session.flush().unwrap();
    session.send("\r").unwrap();
    session.flush().unwrap();
    expect(&mut session, "First answer.");
    // Slash commands are wonopcode's; a typo gets the closest name.
    ready(&mut session);
    enter(&mut session, "/hlep");
    expect(
        &mut session,
        "unknown command `/hlep` (did you mean `/help`?",
    );
    says(&mut session, "/help", "/tools");
    ready(&mut session);
    enter(&mut session, "/tools");
    expect(
        &mut session,
        "apply_patch, bash, edit, glob, grep, list, read, todo, webfetch, write",
    );
    says(&mut session, "/model", "test/");
    says(&mut session, "/cost", "0 in / 0 out tokens");
    expect(&mut session, "(every context, since the REPL started)");
    // Ctrl-C drops a half-typed line (the editor redraws it, asking where the cursor is);
    // the next line is sent alone.
    ready(&mut session);
    session.send("never sent").unwrap();
    session.send(CTRL_C).unwrap();
    session.flush().unwrap();
    ready(&mut session);
    expect(&mut session, "(Ctrl-C again or Ctrl-D to quit)");
    says(&mut session, "second", "Second answer.");
    // At the empty prompt, a second Ctrl-C in a row quits.
    ready(&mut session);
    session.send(CTRL_C).unwrap();
    session.flush().unwrap();
    ready(&mut session);
    expect(&mut session, "(Ctrl-C again or Ctrl-D to quit)");
    ready(&mut session);
    session.send(CTRL_C).unwrap();
    session.flush().unwrap();
    session.exp_eof().unwrap();
    assert_eq!(user_prompts(&history), ["aXbc", "second"]);

    // The next run finds the lines typed before with Up.
    let t = s.transcript("t2.jsonl", &[vec![text("Third answer."), done("end_turn")]]);
    let mut session = repl(&s, &t, &s.outside("h2.jsonl"));
    expect(&mut session, "/help for commands");
    ready(&mut session);
    session.send(UP).unwrap();
    session.flush().unwrap();
    session.send("\r").unwrap();
    session.flush().unwrap();
    expect(&mut session, "Third answer.");
    quit(&mut session);
    assert_eq!(user_prompts(&s.outside("h2.jsonl")), ["second"]);
}

#[test]
fn a_line_ending_in_a_backslash_goes_on_and_a_double_slash_sends_a_slash() {
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[
            vec![text("Got both lines."), done("end_turn")],
            vec![text("Got the slash."), done("end_turn")],
            vec![text("Got the new line."), done("end_turn")],
        ],
    );
    let history = s.outside("h.jsonl");
    let mut session = repl(&s, &t, &history);
    expect(&mut session, "/help for commands");
    ready(&mut session);
    enter(&mut session, "first line \\");
    enter(&mut session, "second line");
    expect(&mut session, "Got both lines.");
    says(&mut session, "//etc is a directory", "Got the slash.");
    // Alt-Enter (ESC then CR; what a terminal set up for Shift-Enter sends too) breaks the
    // line without sending it.
    says(&mut session, "top\x1b\rbottom", "Got the new line.");
    ready(&mut session);
    enter(&mut session, "/quit");
    session.exp_eof().unwrap();
    assert_eq!(
        user_prompts(&history),
        [
            "first line \nsecond line",
            "/etc is a directory",
            "top\nbottom"
        ]
    );
}

#[test]
fn approvals_can_be_listed_and_revoked_and_the_conversation_cleared_compacted_and_traced() {
    let s = Scratch::new();
    let mut write = call(
        "w",
        "write",
        r#"{"path": "notes.txt", "content": "milk\n"}"#,
    );
    write.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[write, vec![text("Written."), done("end_turn")]],
    );
    let history = s.outside("h.jsonl");
    let mut session = repl(&s, &t, &history);
    ready(&mut session);
    enter(&mut session, "Note the milk.");
    // "always" approves this tool on this path for the session...
    expect(
        &mut session,
        "a  yes, and always `write` on `notes.txt` in this session",
    );
    enter(&mut session, "a");
    expect(&mut session, "Written.");
    says(
        &mut session,
        "/approvals",
        "approved for the rest of the session",
    );
    expect(&mut session, "1  `write` on `notes.txt`");
    // ...until it is taken back.
    ready(&mut session);
    enter(&mut session, "/approvals revoke 2");
    expect(
        &mut session,
        "`2` is not the number of an approval (1 to 1)",
    );
    ready(&mut session);
    enter(&mut session, "/approvals revoke 1");
    expect(
        &mut session,
        "revoked: `write` on `notes.txt` (it is asked about again)",
    );
    ready(&mut session);
    enter(&mut session, "/approvals");
    expect(
        &mut session,
        "no call is approved for the rest of the session",
    );
    // The models it can switch to; one it cannot is refused in a line.
    says(&mut session, "/model", "answering: test/test-model");
    expect(
        &mut session,
        "available (/model MODEL, /model PROVIDER, or /model PROVIDER/MODEL):",
    );
    says(&mut session, "/model nowhere/none", "/model nowhere/none: ");
    expect(&mut session, "has no turns from provider `nowhere`");
    // The trace so far, as Chrome trace-event JSON.
    let trace = s.outside("trace.json");
    says(
        &mut session,
        &format!("/trace {}", trace.display()),
        "trace written to ",
    );
    // A fresh conversation: the history file says so, and there is nothing to compact.
    says(&mut session, "/clear", "conversation cleared (~");
    says(&mut session, "/compact", "nothing to compact");
    says(&mut session, "/clear now", "`/clear` takes no argument");
    quit(&mut session);
    let traced: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(
        traced["traceEvents"]
            .as_array()
            .is_some_and(|e| !e.is_empty()),
        "{traced}"
    );
    assert_eq!(history_messages(&history), Vec::<serde_json::Value>::new());
    assert_eq!(
        std::fs::read_to_string(s.ws().join("notes.txt")).unwrap(),
        "milk\n"
    );
}

#[test]
fn a_replayed_session_says_which_prompt_it_expects_and_a_diverging_one_breaks_nothing_after() {
    let s = Scratch::new();
    let t = two_answers(&s);
    // Record a session of two prompts (its requests' fingerprints included)...
    let recorded = s.outside("recorded.jsonl");
    let mut session = repl_with(&s, &t, &["--record".as_ref(), recorded.as_os_str()]);
    for (prompt, answer) in [("first", "First answer."), ("second", "Second answer.")] {
        says(&mut session, prompt, answer);
    }
    quit(&mut session);
    // ...and replay it, typing another prompt first.
    let history = s.outside("h.jsonl");
    let mut session = repl(&s, &recorded, &history);
    says(&mut session, "wrong", "the prompt was not answered");
    expect(
        &mut session,
        r#"the recording's prompt is "first", this run's is "wrong""#,
    );
    for (prompt, answer) in [("first", "First answer."), ("second", "Second answer.")] {
        says(&mut session, prompt, answer);
    }
    quit(&mut session);
    assert_eq!(user_prompts(&history), ["first", "second"]);
}

#[test]
fn loop_lists_the_named_loops_and_switches_to_one_without_tools_or_grants_of_its_own() {
    let s = Scratch::new();
    let loops = s.outside("loops");
    std::fs::create_dir_all(&loops).unwrap();
    std::fs::copy(
        wonopcode_wasm_host::guest_paths::GUEST_HELLO,
        loops.join("hello.wasm"),
    )
    .unwrap();
    std::fs::write(
        loops.join("registry.yaml"),
        format!(
            "modules:\n  boxed:\n    path: {}\n    description: hello, read-only\n    grants:\n      sandbox: read-only\n",
            loops.join("hello.wasm").display()
        ),
    )
    .unwrap();
    let t = s.transcript("t.jsonl", &[vec![text("unused"), done("end_turn")]]);
    let mut session = repl_with(&s, &t, &["--loops-dir".as_ref(), loops.as_os_str()]);
    says(&mut session, "/loop", "running: standard");
    expect(&mut session, "boxed");
    expect(&mut session, "hello, read-only");
    says(&mut session, "/loop hello", "now running loop `hello`");
    says(&mut session, "/loop", "running: hello");
    // A module confined by its registry entry is not taken on mid-run.
    ready(&mut session);
    enter(&mut session, "/loop boxed");
    expect(
        &mut session,
        "/loop boxed: `boxed` has a prompt, tools or grants of its own",
    );
    says(
        &mut session,
        "/loop nope",
        "/loop nope: no agent loop named `nope`",
    );
    says(
        &mut session,
        "/loop standard",
        "now running loop `standard`",
    );
    quit(&mut session);
}

#[test]
fn compacting_and_leaving_the_repl_run_the_pre_compact_and_session_end_hooks() {
    let s = Scratch::new();
    let log = r#"{"type": "command", "command": "cat >> hooks.log && echo >> hooks.log"}"#;
    s.file(
        ".claude/settings.json",
        &format!(
            r#"{{"hooks": {{"PreCompact": [{{"matcher": "manual", "hooks": [{log}]}}], "SessionEnd": [{{"hooks": [{log}]}}]}}}}"#
        ),
    );
    let t = two_answers(&s);
    let mut cmd = command();
    cmd.env("XDG_DATA_HOME", s.outside("data"))
        .env("HOME", s.outside("home"))
        .arg("--trust-workspace")
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws());
    let mut session = spawn_command(cmd, Some(30_000)).unwrap();
    says(&mut session, "first?", "First answer.");
    says(&mut session, "/compact", "compact");
    quit(&mut session);
    let heard: Vec<serde_json::Value> = std::fs::read_to_string(s.ws().join("hooks.log"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let said: Vec<(&str, &str)> = heard
        .iter()
        .map(|h| {
            let what = h["trigger"].as_str().or(h["reason"].as_str());
            (h["hook_event_name"].as_str().unwrap(), what.unwrap_or(""))
        })
        .collect();
    assert_eq!(
        said,
        [
            ("PreCompact", "manual"),
            ("SessionEnd", "prompt_input_exit")
        ]
    );
}

#[test]
fn a_dropped_image_path_is_attached_and_a_missing_mention_sends_nothing() {
    let s = Scratch::new();
    let transcript = two_answers(&s);
    let history = s.outside("history.jsonl");
    let dropped = s.outside("screen shot.png");
    std::fs::write(&dropped, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let mut session = repl(&s, &transcript, &history);
    // A missing `@path` leaves the line unsent: the first answer still waits.
    ready(&mut session);
    enter(&mut session, "what is in @missing.png?");
    expect(
        &mut session,
        "cannot read @missing.png: no such file; nothing was sent",
    );
    // A terminal pastes a dragged file quoted.
    ready(&mut session);
    enter(
        &mut session,
        &format!("'{}' what is this?", dropped.display()),
    );
    expect(&mut session, "attached: image/png");
    expect(&mut session, "First answer.");
    // A terminal that escapes the spaces of a dropped path, pasting it bracketed.
    ready(&mut session);
    let escaped = dropped.display().to_string().replace(' ', "\\ ");
    session
        .send(&format!("\x1b[200~{escaped}\x1b[201~ and this?\r"))
        .unwrap();
    session.flush().unwrap();
    expect(&mut session, "attached: image/png");
    expect(&mut session, "Second answer.");
    quit(&mut session);
    let messages = history_messages(&history);
    let users: Vec<&serde_json::Value> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 2, "the unsent line is not stored");
    for user in users {
        let parts = user["parts"].as_array().unwrap();
        assert_eq!(parts[0]["type"], "image", "{parts:?}");
        assert_eq!(parts[0]["media_type"], "image/png");
        assert_eq!(parts[1]["type"], "text");
    }
}

/// A REPL whose run has had two prompts: `Write a.txt.` (which wrote it) and `Say hi.`.
fn two_prompts_one_write() -> (Scratch, PtySession) {
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[
            crate::support::calling("w1", "write", r#"{"path": "a.txt", "content": "hi\n"}"#),
            vec![text("Wrote it."), done("end_turn")],
            vec![text("Nothing to do."), done("end_turn")],
        ],
    );
    let mut session = repl_with(&s, &t, &["--yes".as_ref()]);
    says(&mut session, "Write a.txt.", "Wrote it.");
    says(&mut session, "Say hi.", "Nothing to do.");
    (s, session)
}

#[test]
fn rewind_lists_the_prompts_and_takes_back_a_prompts_file_changes() {
    let (s, mut session) = two_prompts_one_write();
    assert!(s.ws().join("a.txt").exists());
    says(&mut session, "/rewind", "1  Write a.txt.");
    expect(&mut session, "2  Say hi.");
    // Enter at the question changes nothing.
    expect(&mut session, "before which prompt?");
    enter(&mut session, "");
    says(&mut session, "/rewind 9", "this run has 2 prompt(s)");
    says(
        &mut session,
        "/rewind 2",
        "no file changes from prompt 2 on",
    );
    says(&mut session, "/rewind 1", "removed a.txt");
    quit(&mut session);
    assert!(!s.ws().join("a.txt").exists());
}

/// Types `keys` and reads what is drawn for `ms` milliseconds, answering each question
/// for the cursor's position (the editor asks at each key): what was drawn.
fn typed_answering(session: &mut PtySession, keys: &str, ms: u64) -> String {
    session.send(keys).unwrap();
    session.flush().unwrap();
    let mut drawn = String::new();
    let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    while std::time::Instant::now() < until {
        match session.try_read() {
            Some(c) => {
                drawn.push(c);
                if drawn.ends_with("\x1b[6n") {
                    session.send("\x1b[1;1R").unwrap();
                    session.flush().unwrap();
                }
            }
            None => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
    drawn
}

#[test]
fn esc_twice_clears_the_line_and_at_an_empty_prompt_opens_the_rewind_list() {
    let (s, mut session) = two_prompts_one_write();
    ready(&mut session);
    // Esc twice, as Claude Code's: the half-typed line goes, nothing is sent.
    typed_answering(&mut session, "never sent", 200);
    typed_answering(&mut session, "\x1b", 100);
    typed_answering(&mut session, "\x1b", 1000);
    // Then at the empty prompt: the rewind list.
    typed_answering(&mut session, "\x1b", 100);
    let drawn = typed_answering(&mut session, "\x1b", 1000);
    assert!(drawn.contains("1  Write a.txt."), "{drawn:?}");
    assert!(drawn.contains("2  Say hi."), "{drawn:?}");
    assert!(
        !drawn.contains("never sent"),
        "the cleared line was sent: {drawn:?}"
    );
    assert!(drawn.contains("before which prompt?"), "{drawn:?}");
    // Enter there takes nothing back.
    enter(&mut session, "");
    quit(&mut session);
    assert!(s.ws().join("a.txt").exists());
}

#[test]
fn rewind_picks_a_prompt_and_takes_back_its_conversation_its_code_or_both() {
    let (s, mut session) = two_prompts_one_write();
    // The picker: the prompts, then which, then what.
    says(&mut session, "/rewind", "1  Write a.txt.");
    expect(&mut session, "2  Say hi.");
    // One key each, as an approval takes: no Enter.
    expect(&mut session, "before which prompt?");
    session.send("2").unwrap();
    session.flush().unwrap();
    expect(&mut session, "con[v]ersation only? [b]");
    session.send("v").unwrap();
    session.flush().unwrap();
    expect(
        &mut session,
        "conversation: back to before prompt 2 (2 message(s) dropped)",
    );
    assert!(
        s.ws().join("a.txt").exists(),
        "the conversation alone was asked for"
    );
    says(&mut session, "/rewind 1 code", "removed a.txt");
    assert!(!s.ws().join("a.txt").exists());
    says(
        &mut session,
        "/rewind 1 conversation",
        "conversation: back to before prompt 1 (4 message(s) dropped)",
    );
    says(
        &mut session,
        "/rewind 2 conversation",
        "no longer has that point",
    );
    says(
        &mut session,
        "/rewind 1 everything",
        "is not what to take back",
    );
    // Enter at the picker's question changes nothing.
    says(&mut session, "/rewind", "before which prompt?");
    enter(&mut session, "");
    quit(&mut session);
    let runs = s.outside("runs");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert_eq!(
        events.matches(r#""strategy":"rewind""#).count(),
        2,
        "{events}"
    );
    let meta = std::fs::read_to_string(run.join("run.json")).unwrap();
    assert!(
        meta.contains(r#""command": "rewind""#) || meta.contains(r#""command":"rewind""#),
        "{meta}"
    );
}

#[test]
fn a_finished_runs_conversation_is_taken_back_into_a_run_that_goes_on_from_it() {
    let (s, mut session) = two_prompts_one_write();
    quit(&mut session);
    let wonopcode = |args: &[&str]| crate::rewind::wonopcode_in(&s, args);
    let runs = s.outside("runs");
    let ids = |runs: &Path| -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(runs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        ids.sort();
        ids
    };
    let id = ids(&runs).remove(0);
    let (code, out, err) = wonopcode(&["rewind", &id, "--to", "2", "--conversation", "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("would take the conversation back to before prompt 2 (2 message(s) left out)"),
        "{out}"
    );
    assert_eq!(ids(&runs).len(), 1, "a dry run made a run");
    // The conversation alone: the file stays.
    let (code, out, err) = wonopcode(&["rewind", &id, "--to", "2", "--conversation"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("conversation: back to before prompt 2"),
        "{out}"
    );
    assert!(s.ws().join("a.txt").exists());
    let new = ids(&runs).into_iter().find(|n| *n != id).unwrap();
    assert!(out.contains(&new), "{out}");
    let meta = std::fs::read_to_string(runs.join(&new).join("run.json")).unwrap();
    assert!(meta.contains(&id), "{meta}");
    // What goes on from it is the conversation before prompt 2: prompt 1, its call, its
    // result and its answer.
    let file = s.outside("back.jsonl");
    let (code, _, err) = wonopcode(&["runs", "history", &new, file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(history_messages(&file).len(), 4);
    // The run was gone on with: its conversation is the new run's to take back now.
    let (code, _, err) = wonopcode(&["rewind", &id, "--to", "1", "--conversation"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("was gone on with by run {new}")),
        "{err}"
    );
    // `undo` passes over the run without prompts to the last prompt of the one before.
    let ws = s.ws();
    let (code, out, err) = wonopcode(&["undo", "--dry-run", "-C", ws.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("the run changed no file from prompt 2 on"),
        "{out}"
    );
    // Its files still can be taken back.
    let (code, out, err) = wonopcode(&["rewind", &id, "--to", "1", "--code"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("remove a.txt"), "{out}");
}

#[test]
fn resume_lists_the_kept_conversations_and_goes_on_with_the_one_picked() {
    let s = Scratch::new();
    let first = crate::conversations::a_kept_conversation(&s, &s.outside("runs"));
    let t = two_answers(&s);
    let mut session = repl_with(&s, &t, &[]);
    says(
        &mut session,
        "/history",
        "nothing has been said in this conversation yet",
    );
    says(&mut session, "/resume", "remember the word banana");
    ready(&mut session);
    enter(&mut session, "/resume 1");
    expect(&mut session, &format!("going on with conversation {first}"));
    says(&mut session, "/history", "kept in the journal as run");
    quit(&mut session);
    // `-r` alone, with nothing interrupted: the list, and Enter picks the latest.
    let mut session = repl_with(&s, &t, &["-r".as_ref()]);
    expect(&mut session, "go on with which");
    session.send("\r").unwrap();
    session.flush().unwrap();
    expect(&mut session, &format!("going on with conversation {first}"));
    quit(&mut session);
}

/// `text` as a terminal in bracketed-paste mode hands a paste over: between its markers,
/// each newline a carriage return.
fn pasted(text: &str) -> String {
    format!("\x1b[200~{}\x1b[201~", text.replace('\n', "\r"))
}

#[test]
fn a_paste_of_many_lines_is_one_prompt_shown_as_a_placeholder_and_sent_whole() {
    let s = Scratch::new();
    let transcript = two_answers(&s);
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &transcript, &history);
    // The prompt asks the terminal for bracketed paste, so a paste arrives whole.
    expect(&mut session, "\x1b[?2004h");
    ready(&mut session);
    let long = "fn main() {\n    println!(\"hi\");\n}\n// end";
    session.send("Review this: ").unwrap();
    session.send(&pasted(long)).unwrap();
    session.flush().unwrap();
    expect(&mut session, "[Pasted text #1 +4 lines]");
    enter(&mut session, "");
    expect(&mut session, "First answer.");
    // A short paste goes into the line as it is, its newline kept.
    expect(&mut session, "\x1b[?2004h");
    ready(&mut session);
    session.send(&pasted("one\ntwo")).unwrap();
    enter(&mut session, " and three");
    expect(&mut session, "Second answer.");
    quit(&mut session);
    assert_eq!(
        user_prompts(&history),
        [
            format!("Review this: {long}"),
            "one\ntwo and three".to_owned()
        ]
    );
}

#[test]
fn a_hangup_at_the_prompt_leaves_the_terminal_as_it_was_found() {
    let s = Scratch::new();
    let transcript = two_answers(&s);
    let runs = s.outside("runs");
    // The shell the REPL was started from reads the terminal's settings once it is gone.
    let mut cmd = crate::support::through_shell(r#""$0" "$@"; echo "exit=$?"; stty -a"#);
    cmd.env("XDG_DATA_HOME", s.outside("data"))
        .env("WONOPCODE_RUNS_DIR", &runs)
        .arg("--replay")
        .arg(&transcript)
        .arg("-C")
        .arg(s.ws());
    let mut session = spawn_command(cmd, Some(30_000)).unwrap();
    expect(&mut session, "\x1b[?2004h");
    ready(&mut session);
    crate::resume::hang_up_the_only_run(&runs);
    let (said, _) = session.exp_regex("exit=[0-9]+").unwrap();
    let rest = session.exp_eof().unwrap();
    assert!(
        said.contains("\x1b[?2004l"),
        "bracketed paste left on: {said:?}"
    );
    // Cooked again: lines and signals as before (raw mode is `-isig -icanon`; the test's
    // terminal starts without echo).
    assert!(rest.contains("isig icanon"), "left in raw mode: {rest}");
}

#[test]
fn model_with_a_short_name_is_the_answering_providers_model_as_with_dash_m() {
    let s = Scratch::new();
    let mut cmd = command();
    cmd.env("XDG_DATA_HOME", s.outside("data"))
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .env("ANTHROPIC_API_KEY", "k")
        .env("OPENAI_API_KEY", "k")
        // Nothing is asked of a model here.
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .args(["--provider", "anthropic", "-m", "sonnet", "-C"])
        .arg(s.ws());
    let mut session = spawn_command(cmd, Some(30_000)).unwrap();
    says(
        &mut session,
        "/model opus",
        "now answering: anthropic/claude-opus-4-5",
    );
    says(&mut session, "/model openai", "now answering: openai/");
    says(
        &mut session,
        "/model anthropic/haiku",
        "now answering: anthropic/claude-haiku-4-5",
    );
    quit(&mut session);
}

#[test]
fn a_mentioned_text_file_goes_into_the_prompt_and_a_binary_one_sends_nothing() {
    let s = Scratch::new();
    s.file("notes.txt", "buy milk\n");
    std::fs::write(s.ws().join("blob.bin"), b"\0\x01").unwrap();
    let transcript = two_answers(&s);
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &transcript, &history);
    ready(&mut session);
    enter(&mut session, "what is in @blob.bin?");
    expect(
        &mut session,
        "cannot read @blob.bin: it is not text, an image or a PDF; nothing was sent",
    );
    says(&mut session, "summarize @notes.txt", "First answer.");
    quit(&mut session);
    assert_eq!(
        user_prompts(&history),
        ["summarize @notes.txt\n\n<file path=\"notes.txt\">\nbuy milk\n</file>"]
    );
}

#[test]
fn a_bang_runs_a_command_in_the_workspace_and_the_model_is_told_it_with_the_next_prompt() {
    let s = Scratch::new();
    let transcript = two_answers(&s);
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &transcript, &history);
    says(
        &mut session,
        "!echo made > made.txt && cat made.txt",
        "made",
    );
    says(&mut session, "what did I make?", "First answer.");
    quit(&mut session);
    assert_eq!(
        std::fs::read_to_string(s.ws().join("made.txt")).unwrap(),
        "made\n"
    );
    let prompts = user_prompts(&history);
    assert_eq!(
        prompts.len(),
        1,
        "the command itself is no prompt: {prompts:?}"
    );
    assert!(
        prompts[0].starts_with(
            "Before this prompt, the person did this in the workspace:\n<bash-input>echo made > made.txt && cat made.txt</bash-input>\n<bash-output>exit code: 0\nstdout:\nmade\n</bash-output>"
        ) && prompts[0].ends_with("\n\nwhat did I make?"),
        "{prompts:?}"
    );
}

#[test]
fn the_banner_says_how_calls_are_approved_under_full_auto_and_yes() {
    let s = Scratch::new();
    let transcript = two_answers(&s);
    for (flag, said) in [
        (
            "--full-auto",
            "approvals: none asked for work in the workspace (--full-auto)",
        ),
        ("--yes", "approvals: all approved (--yes)"),
    ] {
        let mut session = repl_with(&s, &transcript, &[flag.as_ref()]);
        expect(&mut session, said);
        quit(&mut session);
    }
}

#[test]
fn a_hash_note_goes_into_the_projects_instruction_file_and_to_the_model() {
    let s = Scratch::new();
    let transcript = two_answers(&s);
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &transcript, &history);
    says(
        &mut session,
        "# always use bun",
        "added to AGENTS.md: always use bun",
    );
    says(&mut session, "install the deps", "First answer.");
    quit(&mut session);
    assert_eq!(
        std::fs::read_to_string(s.ws().join("AGENTS.md")).unwrap(),
        "- always use bun\n"
    );
    assert_eq!(
        user_prompts(&history),
        [
            "Before this prompt, the person did this in the workspace:\n<memory-added file=\"AGENTS.md\">always use bun</memory-added>\n\ninstall the deps"
        ]
    );
}

#[test]
fn the_slash_commands_a_claude_code_or_codex_user_types() {
    let s = Scratch::new();
    let git = |args: &[&str]| crate::support::git(&s.ws(), args);
    s.file("app.py", "print('one')\n");
    s.file("AGENTS.md", "Run `make check`.\n");
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "first"]);
    s.file("app.py", "print('two')\n");
    let t = s.transcript(
        "t.jsonl",
        &[
            vec![text("Wrote AGENTS.md."), done("end_turn")],
            vec![text("One change: the print."), done("end_turn")],
        ],
    );
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &t, &history);
    says(&mut session, "/status", "model      test/test-model");
    expect(&mut session, "approvals  ask");
    says(&mut session, "/diff", "-print('one')");
    expect(&mut session, "+print('two')");
    says(&mut session, "/memory", "told to the model, in this order:");
    expect(&mut session, "AGENTS.md");
    says(&mut session, "/mcp", "no MCP server is configured");
    says(&mut session, "/config", "max_iterations: ");
    says(&mut session, "/doctor", "ok model: test/test-model");
    expect(&mut session, "ok mcp: no server configured");
    expect(&mut session, "ok workspace: nothing of its own would run");
    says(&mut session, "/agents", "named loops");
    says(&mut session, "/permissions", "approved");
    // `/init` and `/review` are prompts.
    says(&mut session, "/init", "Wrote AGENTS.md.");
    says(&mut session, "/review the print", "One change: the print.");
    says(&mut session, "/export", "the conversation is in");
    says(&mut session, "/export", "exists; name another file");
    quit(&mut session);
    let prompts = user_prompts(&history);
    assert!(
        prompts[0].starts_with("Explore this repository and write `AGENTS.md`"),
        "{prompts:?}"
    );
    assert!(prompts[1].starts_with("Review the changes"), "{prompts:?}");
    assert!(prompts[1].ends_with("Focus on: the print"), "{prompts:?}");
    let exported = std::fs::read_to_string(s.ws().join("conversation.md")).unwrap();
    assert!(
        exported.contains("## Answer\n\nOne change: the print."),
        "{exported}"
    );
}

#[test]
fn tab_with_nothing_to_complete_changes_nothing_and_the_next_enter_sends() {
    let s = Scratch::new();
    s.file("main.rs", "fn main() {}\n");
    let t = two_answers(&s);
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &t, &history);
    ready(&mut session);
    // Nothing starts with `@hel`: no menu, the line as typed.
    let drawn = typed_answering(&mut session, "say hi @hel\t", 500);
    assert!(!drawn.contains("NO RECORDS FOUND"), "{drawn:?}");
    typed_answering(&mut session, "\x15say hi\t", 300);
    enter(&mut session, "");
    expect(&mut session, "First answer.");
    // One file matches: Tab completes it at once.
    ready(&mut session);
    typed_answering(&mut session, "read @ma\t", 500);
    enter(&mut session, "");
    expect(&mut session, "Second answer.");
    quit(&mut session);
    let prompts = user_prompts(&history);
    assert_eq!(prompts[0], "say hi");
    assert!(prompts[1].starts_with("read @main.rs"), "{prompts:?}");
}

#[test]
fn claude_codes_custom_commands_are_prompts_and_a_projects_need_trust() {
    let s = Scratch::new();
    s.file(
        ".claude/commands/fix-issue.md",
        "---\ndescription: Fix an issue\nargument-hint: [number]\n---\nFix issue #$1.\n!`echo from-the-shell`\n",
    );
    let home = s.outside("claude");
    std::fs::create_dir_all(home.join("commands")).unwrap();
    std::fs::write(home.join("commands/tidy.md"), "Tidy the $ARGUMENTS.\n").unwrap();
    let t = two_answers(&s);
    let history = s.outside("history.jsonl");
    let run = |trust: &[&str], history: &Path| {
        let mut cmd = command();
        cmd.env("XDG_DATA_HOME", s.outside("data"))
            .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
            .env("CLAUDE_CONFIG_DIR", &home)
            .arg("--replay")
            .arg(&t)
            .arg("--history")
            .arg(history)
            .args(trust)
            .arg("-C")
            .arg(s.ws());
        spawn_command(cmd, Some(30_000)).unwrap()
    };
    let mut session = run(&["--trust-workspace", "--yes"], &history);
    says(&mut session, "/help", "custom commands (.claude/commands):");
    expect(&mut session, "Fix an issue (project)");
    expect(&mut session, "/fix-issue [number]");
    says(&mut session, "/fix-issue 42", "First answer.");
    says(&mut session, "/tidy imports", "Second answer.");
    quit(&mut session);
    let prompts = user_prompts(&history);
    assert!(
        prompts[0].starts_with("Fix issue #42.\n$ echo from-the-shell\n"),
        "{prompts:?}"
    );
    assert!(
        prompts[0].ends_with("\nfrom-the-shell"),
        "the command's output: {prompts:?}"
    );
    assert_eq!(prompts[1], "Tidy the imports.");
    // Untrusted, the project's command is not read: the line goes as it was typed.
    let history = s.outside("untrusted.jsonl");
    let mut session = run(&[], &history);
    says(&mut session, "/fix-issue 42", "First answer.");
    quit(&mut session);
    assert_eq!(user_prompts(&history), ["/fix-issue 42"]);
}

#[test]
fn compact_on_a_short_chat_asks_the_model_nothing() {
    let s = Scratch::new();
    let t = two_answers(&s);
    let history = s.outside("history.jsonl");
    let mut session = repl(&s, &t, &history);
    says(&mut session, "first?", "First answer.");
    says(&mut session, "/compact", "nothing to compact");
    // The recording's second answer was not spent on a summary: the next prompt gets it.
    says(&mut session, "second?", "Second answer.");
    quit(&mut session);
}

#[test]
fn the_prompt_is_ready_while_an_mcp_server_starts_and_its_tools_join_when_it_is_up() {
    let Some(everything) = crate::mcp::everything() else {
        return;
    };
    let s = Scratch::new();
    // A server that does not answer `initialize` until the test lets it: a slow `npx`.
    let gate = s.outside("gate");
    let config = s.config(&format!(
        "mcp_servers:\n  slow:\n    command: sh\n    args: ['-c', 'while [ ! -e {} ]; do sleep 0.05; done; exec {}']\n    startup_timeout_sec: 120\n",
        gate.display(),
        everything.display()
    ));
    let echo = |id: &str, message: &str| {
        let mut response = call(
            id,
            "mcp__slow__echo",
            &format!(r#"{{"message": "{message}"}}"#),
        );
        response.push(done("tool_use"));
        response
    };
    let t = s.transcript(
        "t.jsonl",
        &[
            echo("c1", "early"),
            vec![text("First answer."), done("end_turn")],
            echo("c2", "late"),
            vec![text("Second answer."), done("end_turn")],
        ],
    );
    let history = s.outside("history.jsonl");
    let mut session = repl_with(
        &s,
        &t,
        &[
            "--history".as_ref(),
            history.as_os_str(),
            "--config".as_ref(),
            config.as_ref(),
            "--allow".as_ref(),
            "mcp__slow".as_ref(),
        ],
    );
    // The prompt comes while the server is still held, and the first turn says so.
    says(&mut session, "/mcp", "slow             starting");
    says(&mut session, "first", "MCP server `slow` is still starting");
    expect(&mut session, "First answer.");
    std::fs::write(&gate, "").unwrap();
    let mut up = false;
    for _ in 0..200 {
        ready(&mut session);
        enter(&mut session, "/mcp");
        let (_, seen) = session
            .exp_regex(r"slow +(starting|failed|\d+ tool\(s\))")
            .unwrap();
        if seen.contains("tool(s)") {
            up = true;
            break;
        }
        assert!(!seen.contains("failed"), "the server failed: {seen}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(up, "the server never came up");
    says(&mut session, "second", "Second answer.");
    quit(&mut session);
    let results = crate::parity::results(&history_messages(&history));
    assert_eq!(results.len(), 2, "{results:?}");
    // Before it was up its tool was unknown to the run; after, it answered.
    assert!(results[0].1.contains("unknown tool"), "{results:?}");
    assert_eq!(results[1].1, "Echo: late", "{results:?}");
}

const SHIFT_TAB: &str = "\x1b[Z";

#[test]
fn shift_tab_goes_round_the_modes_and_a_plan_is_approved_before_anything_is_written() {
    let s = Scratch::new();
    let write = r#"{"path": "a.txt", "content": "hi\n"}"#;
    let t = s.transcript(
        "t.jsonl",
        &[
            // In plan mode the write is refused, and the model answers with its plan.
            crate::support::calling("w1", "write", write),
            vec![text("Plan: write a.txt."), done("end_turn")],
            // Approved, accepting edits: the write runs without a question.
            crate::support::calling("w2", "write", write),
            vec![text("Wrote it."), done("end_turn")],
        ],
    );
    let history = s.outside("h.jsonl");
    let mut session = repl(&s, &t, &history);
    ready(&mut session);
    // The line typed so far stays through each switch.
    typed_answering(&mut session, "Plan it", 200);
    let drawn = typed_answering(&mut session, SHIFT_TAB, 800);
    assert!(
        drawn.contains("file edits run without a question; commands still ask"),
        "{drawn:?}"
    );
    let drawn = typed_answering(&mut session, SHIFT_TAB, 800);
    assert!(drawn.contains("read-only: the model plans"), "{drawn:?}");
    assert!(
        drawn.contains("plan >"),
        "the prompt does not say the mode: {drawn:?}"
    );
    enter(&mut session, " out");
    expect(&mut session, "Plan: write a.txt.");
    expect(&mut session, "carry out this plan?");
    assert!(!s.ws().join("a.txt").exists(), "plan mode wrote a file");
    session.send("y").unwrap();
    session.flush().unwrap();
    expect(&mut session, "mode: accept edits");
    expect(&mut session, "The plan is approved: carry it out.");
    expect(&mut session, "Wrote it.");
    assert!(
        s.ws().join("a.txt").exists(),
        "the approved plan did not write"
    );
    // Round again to ask: the prompt is `>` alone.
    ready(&mut session);
    typed_answering(&mut session, SHIFT_TAB, 800);
    let drawn = typed_answering(&mut session, SHIFT_TAB, 800);
    assert!(drawn.contains("approvals as the rules say"), "{drawn:?}");
    enter(&mut session, "/exit");
    session.exp_eof().unwrap();
    let messages = history_messages(&history);
    let users: Vec<&serde_json::Value> = messages.iter().filter(|m| m["role"] == "user").collect();
    let texts = |m: &serde_json::Value| -> Vec<String> {
        m["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect()
    };
    let first = texts(users[0]);
    assert!(first.iter().any(|t| t == "Plan it out"), "{first:?}");
    assert!(
        first.iter().any(|t| t.starts_with("Plan mode:")),
        "{first:?}"
    );
    let second = texts(users[1]);
    assert!(
        second.iter().any(|t| t.starts_with("Plan mode has ended")),
        "{second:?}"
    );
    let refused = crate::parity::results(&messages);
    assert!(refused[0].1.contains("refused in plan mode"), "{refused:?}");
}

#[test]
fn a_no_at_an_approval_stops_the_turn_and_t_lets_the_model_go_on() {
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[
            crate::support::calling("c1", "bash", r#"{"command": "touch REFUSED"}"#),
            // Never asked for: the refusal stopped the turn.
            vec![text("Went on after the refusal."), done("end_turn")],
        ],
    );
    let t2 = s.transcript(
        "t2.jsonl",
        &[
            crate::support::calling("c1", "bash", r#"{"command": "touch REFUSED"}"#),
            vec![text("Used the other way."), done("end_turn")],
        ],
    );
    // `n`: the turn stops; the prompt waits, and the next prompt is the model's next request.
    let history = s.outside("h.jsonl");
    let mut session = repl(&s, &t, &history);
    ready(&mut session);
    enter(&mut session, "Make a file.");
    expect(&mut session, "n  no, and stop the turn (Esc)");
    session.send("n").unwrap();
    session.flush().unwrap();
    expect(&mut session, "(refused: the turn stopped");
    says(
        &mut session,
        "Do it another way.",
        "Went on after the refusal.",
    );
    quit(&mut session);
    assert!(!s.ws().join("REFUSED").exists());
    let prompts = user_prompts(&history);
    assert_eq!(
        prompts,
        ["Make a file.", "Do it another way."],
        "{prompts:?}"
    );
    // `t`: refused with a line for the model, and the turn goes on to its answer.
    let mut session = repl(&s, &t2, &s.outside("h2.jsonl"));
    ready(&mut session);
    enter(&mut session, "Make a file.");
    expect(&mut session, "t  no, and tell the model what to do instead");
    session.send("t").unwrap();
    session.flush().unwrap();
    expect(&mut session, "tell the model what to do instead: ");
    enter(&mut session, "use the other way");
    expect(&mut session, "Used the other way.");
    quit(&mut session);
    assert!(!s.ws().join("REFUSED").exists());
}

#[test]
fn sigterm_at_the_idle_prompt_ends_an_mcp_server_still_starting() {
    let s = Scratch::new();
    // A server that never answers and never reads its stdin: it writes its pid and waits.
    let pid_file = s.outside("server.pid");
    let config = s.config(&format!(
        "mcp_servers:\n  stuck:\n    command: sh\n    args: ['-c', 'echo $$ > {}; exec sleep 60']\n    startup_timeout_sec: 120\n",
        pid_file.display()
    ));
    let t = two_answers(&s);
    let mut session = repl_with(&s, &t, &["--config".as_ref(), config.as_ref()]);
    ready(&mut session);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < until,
            "the server never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    session
        .process_mut()
        .signal(rexpect::process::Signal::SIGTERM)
        .unwrap();
    session.exp_eof().unwrap();
    // Gone (or a zombie waiting for init to reap it) within a few seconds.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |stat| stat.split_whitespace().nth(2) == Some("Z"))
    };
    while !gone() {
        assert!(
            std::time::Instant::now() < until,
            "the still-starting server {pid} outlived wonopcode"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
