//! Conversations that continue (issue: "The terminal a Claude Code or Codex user reaches
//! for first"): every conversation is kept in the journal, `-c` goes on with this
//! workspace's latest, `-r ID` with the one named; the model is sent what was said.

use std::path::Path;

use crate::providers::anthropic_answering;
use crate::support::{Scratch, answer, stderr, wonopcode};

/// Starts the conversation `remember the word banana` (answered `Noted.`) in `s`'s
/// workspace, its journal in `runs`; its id.
pub(crate) fn a_kept_conversation(s: &Scratch, runs: &Path) -> String {
    let t = s.transcript("first.jsonl", &[answer("Noted.")]);
    let out = wonopcode()
        .env("WONOPCODE_RUNS_DIR", runs)
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("remember the word banana")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    crate::resume::only_run(runs).0
}

/// `wonopcode FLAGS -p "what was the word?"` against a loopback Anthropic API; its output
/// and the body of the one request it sent.
fn asked_again(s: &Scratch, runs: &Path, flags: &[&str]) -> (std::process::Output, String) {
    let server = anthropic_answering();
    let out = wonopcode()
        .env("WONOPCODE_RUNS_DIR", runs)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .args(["--provider", "anthropic", "-p"])
        .args(flags)
        .arg("-C")
        .arg(s.ws())
        .arg("what was the word?")
        .output()
        .unwrap();
    let sent = server.requests.lock().unwrap().first().cloned();
    (out, sent.unwrap_or_default())
}

#[test]
fn continue_and_resume_send_the_model_what_was_said() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    let first = a_kept_conversation(&s, &runs);
    for flags in [
        vec!["-c"],
        vec!["--resume", first.as_str()],
        vec!["-r", &first[..10]],
    ] {
        let (out, sent) = asked_again(&s, &runs, &flags);
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {}", stderr(&out));
        for said in ["remember the word banana", "Noted.", "what was the word?"] {
            assert!(sent.contains(said), "{flags:?}: `{said}` not sent: {sent}");
        }
        assert!(
            stderr(&out).contains(&format!("going on with conversation {first}")),
            "{}",
            stderr(&out)
        );
    }
    // Each went on from the one before: one conversation, its latest run last.
    let meta: Vec<serde_json::Value> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| {
            let text = std::fs::read_to_string(e.unwrap().path().join("run.json")).unwrap();
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    assert_eq!(meta.len(), 4);
    assert_eq!(
        meta.iter().filter(|m| m["continues"].is_string()).count(),
        3
    );
}

#[test]
fn nothing_to_continue_is_one_line_and_no_run() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    let (out, sent) = asked_again(&s, &runs, &["-c"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--continue: no conversation of"),
        "{}",
        stderr(&out)
    );
    assert!(sent.is_empty());
    a_kept_conversation(&s, &runs);
    for (flags, says) in [
        (vec!["-r", "20990101"], "no conversation `20990101`"),
        (
            vec!["-r", "2", "--history", "h.jsonl"],
            "--resume ID goes on with a conversation of the journal",
        ),
        (vec!["-c", "--history", "h.jsonl"], "cannot be used with"),
    ] {
        let (out, sent) = asked_again(&s, &runs, &flags);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{flags:?}: {}", stderr(&out));
        assert!(sent.is_empty());
    }
}

#[test]
fn a_session_closed_before_its_first_prompt_is_not_a_conversation_to_go_on_with() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    let first = a_kept_conversation(&s, &runs);
    // A REPL opened and closed with Ctrl-D, later than the conversation.
    let t = s.transcript("none.jsonl", &[]);
    let mut cmd = crate::support::command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs)
        .env("XDG_DATA_HOME", s.outside("data"))
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws());
    let mut session = rexpect::session::spawn_command(cmd, Some(30_000)).unwrap();
    crate::repl::ready(&mut session);
    session.send("\x04").unwrap();
    session.flush().unwrap();
    session.exp_eof().unwrap();
    assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 2);
    // `-c` goes on with the conversation that had a prompt.
    let (out, sent) = asked_again(&s, &runs, &["-c"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(sent.contains("remember the word banana"), "{sent}");
    assert!(
        stderr(&out).contains(&format!("going on with conversation {first}")),
        "{}",
        stderr(&out)
    );
}
