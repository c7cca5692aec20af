//! What a new user of the terminal hits first (issue: "The terminal a Claude Code or Codex
//! user reaches for first"): piped input with a prompt, output piped into `head`, the runs
//! listed, a misspelled command, a guest validated by its file.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::support::{Scratch, answer, command, stderr, wonopcode};

/// `wonopcode --replay T -C WS PROMPT` of `s`, keeping its run in `runs`, not yet run.
fn replaying(s: &Scratch, runs: &Path, t: &Path, prompt: &str) -> assert_cmd::Command {
    let mut cmd = wonopcode();
    cmd.env("WONOPCODE_RUNS_DIR", runs)
        .arg("--replay")
        .arg(t)
        .arg("-C")
        .arg(s.ws())
        .arg(prompt);
    cmd
}

/// The one run in `runs`' `run.json`.
fn only_meta(runs: &Path) -> Value {
    let dirs: Vec<_> = std::fs::read_dir(runs).unwrap().collect();
    assert_eq!(dirs.len(), 1);
    let dir = dirs.into_iter().next().unwrap().unwrap().path();
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
fn what_is_piped_goes_with_the_prompt_given() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[answer("Looks fine.")]);
    let runs = s.outside("runs");
    let out = replaying(&s, &runs, &t, "Review this change")
        .write_stdin("diff --git a/x b/x\n+added\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let meta = only_meta(&runs);
    assert_eq!(
        meta["prompts"][0],
        "Review this change\n\n<stdin>\ndiff --git a/x b/x\n+added\n</stdin>"
    );
    // Text that is not UTF-8 is refused in one line, before anything runs.
    let out = replaying(&s, &runs, &t, "Review this")
        .write_stdin(vec![0xff, 0xfe, 0x00])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("stdin is not UTF-8 text"),
        "{}",
        stderr(&out)
    );
}

/// Runs `wonopcode ARGS` with stdout a pipe nobody reads any more; its exit code and
/// stderr.
fn into_a_closed_pipe(args: &[&str], runs: &Path) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = command()
        .env("WONOPCODE_RUNS_DIR", runs)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (out.status.code(), stderr(&out))
}

#[test]
fn output_into_a_reader_that_went_away_ends_quietly() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    let t = s.transcript("t.jsonl", &[answer("Done.")]);
    let out = replaying(&s, &runs, &t, "Hi.").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for args in [
        &["completions", "zsh"][..],
        &["runs", "list"],
        &["sandbox", "check"],
    ] {
        let (code, err) = into_a_closed_pipe(args, &runs);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(code, Some(141), "{args:?}: {err}");
    }
    // clap writes the help itself and lets a failed write go.
    let (code, err) = into_a_closed_pipe(&["resume", "--help"], &runs);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn runs_list_has_a_header_says_when_there_are_none_and_a_failed_run_is_failed() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    let list = || {
        wonopcode()
            .env("WONOPCODE_RUNS_DIR", &runs)
            .args(["runs", "list"])
            .output()
            .unwrap()
    };
    let out = list();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("no runs in"), "{}", stderr(&out));
    // A run whose model failed.
    let t = s.transcript(
        "t.jsonl",
        &[vec![
            serde_json::json!({"type": "error", "message": "overloaded"}),
        ]],
    );
    let out = replaying(&s, &runs, &t, "go").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = list();
    let shown = String::from_utf8_lossy(&out.stdout);
    let mut lines = shown.lines();
    assert!(lines.next().unwrap().starts_with("ID "), "{shown}");
    assert!(lines.next().unwrap().contains(" failed "), "{shown}");
    assert_eq!(only_meta(&runs)["status"], "failed");
}

#[test]
fn a_misspelled_command_is_named_with_the_one_meant() {
    let out = wonopcode().args(["complitions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("unknown command `complitions`; did you mean `completions`?"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn the_provider_flag_names_every_provider() {
    let out = wonopcode().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    for provider in ["gemini", "azure", "bedrock", "vertex"] {
        assert!(help.contains(provider), "{provider} missing from --help");
    }
}
