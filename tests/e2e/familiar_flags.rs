//! The flags a Claude Code or Codex user types (issue: "The terminal a Claude Code or Codex
//! user reaches for first"): `-p`, `exec`, `-m` with a short name, `--full-auto`,
//! `--dangerously-skip-permissions`.

use crate::providers::anthropic_answering;
use crate::support::{Scratch, answer, calling, confining, stderr, wonopcode};

#[test]
fn print_with_a_short_model_name_asks_the_model_it_stands_for() {
    let s = Scratch::new();
    let server = anthropic_answering();
    let out = wonopcode()
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .args(["--provider", "anthropic", "-p", "-m", "opus", "-C"])
        .arg(s.ws())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sent: serde_json::Value =
        serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap();
    assert_eq!(sent["model"], "claude-opus-4-5");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("remember the milk"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // A short name another provider has is refused in one line, before any request.
    let out = wonopcode()
        .env("OPENAI_API_KEY", "k")
        .args(["--provider", "openai", "-m", "haiku", "-C"])
        .arg(s.ws())
        .arg("hi")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("`haiku` is a short name at anthropic"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn exec_runs_the_prompt_piped_or_given_as_a_dash_and_never_waits_at_a_prompt() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[answer("Done.")]);
    let runs = s.outside("runs");
    let exec = |prompt: Option<&str>, stdin: &str| {
        let mut cmd = wonopcode();
        cmd.env("WONOPCODE_RUNS_DIR", &runs)
            .args(["exec", "--replay"])
            .arg(&t)
            .arg("-C")
            .arg(s.ws())
            .args(prompt)
            .write_stdin(stdin)
            .output()
            .unwrap()
    };
    for prompt in [None, Some("-")] {
        let out = exec(prompt, "Summarize the repository\n");
        assert_eq!(out.status.code(), Some(0), "{prompt:?}: {}", stderr(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("Done."));
    }
    // Nothing to run is a usage error, not an interactive session.
    let out = exec(None, "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no prompt"), "{}", stderr(&out));
    let out = wonopcode()
        .args(["-p", "--replay"])
        .arg(&t)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn full_auto_writes_the_workspace_without_questions_and_nothing_wider() {
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[
            calling("c1", "write", r#"{"path":"made.txt","content":"x"}"#),
            calling("c2", "bash", r#"{"command":"echo hi > by_bash.txt"}"#),
            answer("Done."),
        ],
    );
    // Without it, nobody is there to approve the write.
    let out = s.run(&t, &[], "make files");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(!s.ws().join("made.txt").exists());
    let out = s.run(&t, &["--full-auto"], "make files");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(s.ws().join("made.txt").exists());
    if confining() {
        assert!(s.ws().join("by_bash.txt").exists());
    }
    // It is a sandbox of its own: another one with it is a usage error.
    let out = s.run(&t, &["--full-auto", "--sandbox", "full-access"], "x");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--full-auto"), "{}", stderr(&out));
}

#[test]
fn dangerously_skip_permissions_says_so_and_runs_commands_unconfined() {
    let s = Scratch::new();
    let outside = s.outside("outside.txt");
    let t = s.transcript(
        "t.jsonl",
        &[
            calling(
                "c1",
                "bash",
                &serde_json::json!({"command": format!("echo hi > {}", outside.display())})
                    .to_string(),
            ),
            answer("Done."),
        ],
    );
    for flag in [
        "--dangerously-skip-permissions",
        "--dangerously-bypass-approvals-and-sandbox",
    ] {
        let _ = std::fs::remove_file(&outside);
        let out = s.run(&t, &[flag], "write outside");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("no questions and no sandbox"),
            "{}",
            stderr(&out)
        );
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "hi\n");
    }
}

#[test]
fn claude_codes_allowed_and_disallowed_tools_and_max_turns_mean_what_they_mean_there() {
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[
            calling("c1", "bash", r#"{"command": "touch one.txt"}"#),
            calling("c2", "bash", r#"{"command": "rm keep.txt"}"#),
            answer("Done."),
        ],
    );
    let fresh = || {
        let _ = std::fs::remove_file(s.ws().join("one.txt"));
        s.file("keep.txt", "kept");
    };
    // `touch` is allowed; `rm` needed approval, and nobody could give it.
    fresh();
    let out = s.run(&t, &["--allowedTools", "Bash(touch:*)", "Read", "--"], "go");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(s.ws().join("one.txt").exists() && s.ws().join("keep.txt").exists());
    // A disallowed command stays so, whatever allows its tool, in either order.
    for flags in [
        [
            "--allowedTools",
            "Bash",
            "--disallowedTools",
            "Bash(rm:*)",
            "--",
        ],
        [
            "--disallowedTools",
            "Bash(rm:*)",
            "--allowed-tools",
            "Bash",
            "--",
        ],
    ] {
        fresh();
        let out = s.run(&t, &flags, "go");
        assert!(
            s.ws().join("one.txt").exists(),
            "{flags:?}: {}",
            stderr(&out)
        );
        assert!(
            s.ws().join("keep.txt").exists(),
            "{flags:?}: {}",
            stderr(&out)
        );
    }
    // A rule with no counterpart is one line, before anything runs.
    let out = s.run(&t, &["--allowedTools", "NotebookEdit", "--"], "go");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "--allowedTools: `NotebookEdit`: wonopcode has no tool Claude Code calls `NotebookEdit`"
        ),
        "{}",
        stderr(&out)
    );
    // A prompt the flag took is said so, not dropped.
    let out = s.run(&t, &["--allowedTools", "Read"], "fix it");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`fix` is no tool; give the prompt before the flag, or after `--`"),
        "{}",
        stderr(&out)
    );
    // `--max-turns` is the limit of model requests per prompt.
    fresh();
    let out = s.run(&t, &["--yes", "--max-turns", "1"], "go");
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(s.ws().join("one.txt").exists() && s.ws().join("keep.txt").exists());
}

#[test]
fn codexs_skip_git_repo_check_is_accepted_and_oss_is_refused_with_what_does_it() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[answer("Hi.")]);
    let out = s.run(&t, &["--skip-git-repo-check"], "hi");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = s.run(&t, &["--oss"], "hi");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--base-url http://localhost:11434/v1 with -m MODEL"),
        "{}",
        stderr(&out)
    );
}
