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

/// A recording whose model writes `made.txt`, then has `bash` write `by_bash.txt`.
fn writes_then_runs(s: &Scratch) -> std::path::PathBuf {
    s.transcript(
        "t.jsonl",
        &[
            calling("c1", "write", r#"{"path":"made.txt","content":"x"}"#),
            calling("c2", "bash", r#"{"command":"echo hi > by_bash.txt"}"#),
            answer("Done."),
        ],
    )
}

#[test]
fn full_auto_writes_the_workspace_without_questions_and_nothing_wider() {
    let s = Scratch::new();
    let t = writes_then_runs(&s);
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

/// Where `ours` lacks a key of `theirs`, or holds it as another kind of JSON value: each
/// difference, by its path. A map keyed by data (`modelUsage`'s model names) is compared
/// value by value; a list by its first item, where both have one.
fn shape_differences(
    ours: &serde_json::Value,
    theirs: &serde_json::Value,
    at: &str,
) -> Vec<String> {
    use serde_json::Value;
    match (ours, theirs) {
        (Value::Object(ours), Value::Object(theirs)) if at.ends_with(".modelUsage") => {
            match (ours.values().next(), theirs.values().next()) {
                (Some(o), Some(t)) => shape_differences(o, t, &format!("{at}.*")),
                (None, Some(_)) => vec![format!("{at}: no model")],
                _ => Vec::new(),
            }
        }
        (Value::Object(ours), Value::Object(theirs)) => theirs
            .iter()
            .flat_map(|(key, t)| match ours.get(key) {
                Some(o) => shape_differences(o, t, &format!("{at}.{key}")),
                None => vec![format!("{at}.{key}: missing")],
            })
            .collect(),
        (Value::Array(ours), Value::Array(theirs)) => match (ours.first(), theirs.first()) {
            (Some(o), Some(t)) => shape_differences(o, t, &format!("{at}[0]")),
            _ => Vec::new(),
        },
        (_, Value::Null) => Vec::new(),
        (Value::String(_), Value::String(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::Bool(_), Value::Bool(_)) => Vec::new(),
        (o, t) => vec![format!("{at}: {o} where Claude Code has {t}")],
    }
}

/// A line's kind: its type, subtype and first content block's type.
fn message_kind(line: &serde_json::Value) -> String {
    format!(
        "{}/{}/{}",
        line["type"].as_str().unwrap_or(""),
        line["subtype"].as_str().unwrap_or(""),
        line["message"]["content"][0]["type"].as_str().unwrap_or("")
    )
}

#[test]
fn stream_json_parses_as_claude_codes() {
    let s = Scratch::new();
    s.file("notes.txt", "remember the milk\n");
    let t = s.transcript(
        "t.jsonl",
        &[
            calling("c1", "read", r#"{"path": "notes.txt"}"#),
            answer("The notes say: remember the milk."),
        ],
    );
    let run = |format: &str| {
        let out = wonopcode()
            .arg("--replay")
            .arg(&t)
            .args(["-y", "--output-format", format, "-C"])
            .arg(s.ws())
            .arg("What do the notes say?")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"))
            })
            .collect::<Vec<_>>()
    };
    let ours = run("stream-json");
    let fixture = std::fs::read_to_string(
        crate::support::repo_root().join("tests/fixtures/claude-code/stream-json.jsonl"),
    )
    .unwrap();
    let theirs: Vec<serde_json::Value> = fixture
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds = |lines: &[serde_json::Value]| lines.iter().map(message_kind).collect::<Vec<_>>();
    assert_eq!(kinds(&ours), kinds(&theirs), "the messages, in order");
    for (o, t) in ours.iter().zip(&theirs) {
        let differences = shape_differences(o, t, "");
        assert!(
            differences.is_empty(),
            "{}: {differences:#?}\n{o}",
            message_kind(t)
        );
    }
    let result = ours.last().unwrap();
    assert_eq!(result["result"], "The notes say: remember the milk.");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(
        ours[2]["message"]["content"][0]["tool_use_id"],
        ours[1]["message"]["content"][0]["id"]
    );
    assert!(
        ours[2]["message"]["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("remember the milk")
    );
    // Every message is of the session the init named.
    assert!(
        ours.iter()
            .all(|l| l["session_id"] == ours[0]["session_id"])
    );
    // `json`: the result alone.
    let whole = run("json");
    assert_eq!(whole.len(), 1);
    assert!(shape_differences(&whole[0], theirs.last().unwrap(), "").is_empty());
    assert_eq!(whole[0]["result"], "The notes say: remember the milk.");
}

#[test]
fn the_system_prompt_flags_replace_and_add_to_what_the_model_is_told() {
    let s = Scratch::new();
    let (_, system) = crate::providers::one_openai_answer(|run| {
        run.args(["--system-prompt", "Answer in haiku."])
            .args(["--append-system-prompt", "Never use emoji."])
            .arg("-C")
            .arg(s.ws())
            .arg("hi");
    });
    assert!(
        system.starts_with("Answer in haiku.\n\nNever use emoji."),
        "{system}"
    );
    assert!(!system.contains("You are wonopcode"), "{system}");
    // The environment is still told after it.
    assert!(system.contains("<environment>"), "{system}");
}

#[test]
fn the_permission_modes_and_approval_policies_of_claude_code_and_codex() {
    let s = Scratch::new();
    let t = writes_then_runs(&s);
    let clean = || {
        let _ = std::fs::remove_file(s.ws().join("made.txt"));
        let _ = std::fs::remove_file(s.ws().join("by_bash.txt"));
    };
    // acceptEdits: the write runs; the command still needs someone to approve it.
    let out = s.run(&t, &["--permission-mode", "acceptEdits"], "make files");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(s.ws().join("made.txt").exists());
    assert!(!s.ws().join("by_bash.txt").exists());
    // plan: read-only, even with --yes; the model is told to plan.
    clean();
    let out = s.run(&t, &["--permission-mode", "plan", "--yes"], "make files");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!s.ws().join("made.txt").exists(), "plan mode wrote a file");
    if confining() {
        assert!(
            !s.ws().join("by_bash.txt").exists(),
            "plan mode's command wrote"
        );
    }
    // -a on-failure is --full-auto; -a never too, and never asks.
    for policy in ["on-failure", "never"] {
        clean();
        let out = s.run(&t, &["-a", policy], "make files");
        assert_eq!(out.status.code(), Some(0), "{policy}: {}", stderr(&out));
        assert!(s.ws().join("made.txt").exists(), "{policy}");
    }
    // untrusted and on-request ask as wonopcode does.
    clean();
    let out = s.run(&t, &["-a", "untrusted"], "make files");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    // Two flags that choose different approvals: one line, nothing run.
    let out = s.run(&t, &["--full-auto", "--permission-mode", "plan"], "x");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--full-auto and --permission-mode plan choose different approvals"),
        "{}",
        stderr(&out)
    );
    // bypassPermissions is --dangerously-skip-permissions.
    let out = s.run(
        &t,
        &["--permission-mode", "bypassPermissions"],
        "make files",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no questions and no sandbox"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn output_last_message_writes_the_answer_and_add_dir_lets_commands_write_there() {
    let s = Scratch::new();
    let other = s.outside("other");
    std::fs::create_dir_all(&other).unwrap();
    let other = other.canonicalize().unwrap();
    // The temp dirs (where the scratch directories are) are left out of what commands may
    // write, so only --add-dir lets them write `other`.
    let config = s.config("sandbox:\n  exclude_slash_tmp: true\n  exclude_tmpdir_env_var: true\n");
    let t = s.transcript(
        "t.jsonl",
        &[
            calling(
                "c1",
                "bash",
                &serde_json::json!({"command": format!("echo hi > {}/made.txt", other.display())})
                    .to_string(),
            ),
            answer("Wrote it."),
        ],
    );
    let last = s.outside("last.txt");
    let out = s.run(
        &t,
        &[
            "--config",
            &config,
            "-y",
            "-o",
            last.to_str().unwrap(),
            "--add-dir",
            other.to_str().unwrap(),
        ],
        "write there",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&last).unwrap(), "Wrote it.\n");
    if confining() {
        assert_eq!(
            std::fs::read_to_string(other.join("made.txt")).unwrap(),
            "hi\n"
        );
        // Without it, the sandbox keeps the command to the workspace.
        std::fs::remove_file(other.join("made.txt")).unwrap();
        let out = s.run(&t, &["--config", &config, "-y"], "write there");
        assert!(!other.join("made.txt").exists(), "{}", stderr(&out));
    }
    let out = s.run(&t, &["--add-dir", "/no/such/dir"], "x");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--add-dir /no/such/dir"),
        "{}",
        stderr(&out)
    );
}
