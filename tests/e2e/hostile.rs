//! Hostile input holds: a model, a repository or a guest trying to do what the user did not
//! allow, each attack run on the real binary and its safe outcome asserted
//! (`docs/security.md` lists what is defended and how it is tested).

use std::time::{Duration, Instant};

use crate::support::{Scratch, call, done, events, single_call, stderr, text, tool_output};
use crate::terminal::{answer, finish, spawn};

#[test]
fn the_users_bash_limit_is_a_ceiling_the_model_cannot_raise() {
    let s = Scratch::new();
    let started = Instant::now();
    let item = single_call(
        &s,
        "bash",
        r#"{"command": "sleep 20; echo finished", "timeout_ms": 600000}"#,
        &["--yes", "--bash-timeout-ms", "500"],
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{item}");
    assert_eq!(item["status"], "failed", "{item}");
    assert!(
        tool_output(&item).contains("timed out after 500 ms; the command was killed"),
        "{item}"
    );
    assert!(!tool_output(&item).contains("finished"), "{item}");

    // Asking for less than the limit is honoured.
    let item = single_call(
        &s,
        "bash",
        r#"{"command": "sleep 20", "timeout_ms": 200}"#,
        &["--yes", "--bash-timeout-ms", "5000"],
    );
    assert!(
        tool_output(&item).contains("timed out after 200 ms"),
        "{item}"
    );
}

#[test]
fn a_rule_naming_an_unknown_tool_is_refused_with_a_suggestion() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let t = s.transcript("t.jsonl", &[vec![text("never"), done("end_turn")]]);
    for (flag, rule, said) in [
        ("--deny", "Bash", "did you mean `bash`?"),
        ("--deny", "bsh", "did you mean `bash`?"),
        ("--allow", "wirte:src/**", "did you mean `write`?"),
    ] {
        let out = s.run_json(
            &t,
            &[flag, rule, "--history", history.to_str().unwrap()],
            "go",
        );
        assert_eq!(out.status.code(), Some(2), "{rule}: {}", stderr(&out));
        let tool = rule.split(':').next().unwrap_or(rule);
        assert_eq!(
            stderr(&out).trim_end(),
            format!("error: the permission rule for `{tool}` names no tool of this run; {said}"),
            "{rule}"
        );
        assert!(events(&out).is_empty(), "{rule}: nothing ran");
        assert!(!history.exists(), "{rule}: nothing stored");
    }

    // The same from the config file.
    let config = s.config("permissions:\n  rules:\n    - tool: Bash\n      action: deny\n");
    let out = s.run_json(&t, &["--config", &config], "go");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("did you mean `bash`?"),
        "{}",
        stderr(&out)
    );
}

/// A command that repaints its own line: what a person reads must be what runs.
const FORGED: &str = "touch HIDDEN_EFFECT\r\u{1b}[2Kecho hello";

#[test]
fn the_approval_prompt_shows_the_exact_command_on_a_terminal() {
    let s = Scratch::new();
    let forged = serde_json::json!({ "command": FORGED }).to_string();
    let multi = serde_json::json!({ "command": "echo one\ntouch SECOND_LINE" }).to_string();
    let mut turn = call("c1", "bash", &forged);
    turn.extend(call("c2", "bash", &multi));
    turn.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, vec![text("done"), done("end_turn")]]);
    let mut session = spawn(&s, &t, &[], "go");
    answer(
        &mut session,
        concat!(
            r"allow `bash` on `touch HIDDEN_EFFECT\r\u{1b}[2Kecho hello`?",
            "\r\n    y  yes, this once"
        ),
        "n",
        "the command is not shown as it is",
    );
    answer(
        &mut session,
        "allow `bash` on\r\n    echo one\r\n    touch SECOND_LINE\r\n ?\r\n    y  yes, this once",
        "n",
        "a multi-line command is not shown in full",
    );
    let (rest, code) = finish(session);
    assert_eq!(code, 0, "{rest}");
    assert!(!s.ws().join("HIDDEN_EFFECT").exists());
    assert!(!s.ws().join("SECOND_LINE").exists());
}

#[test]
fn what_the_model_says_cannot_drive_the_terminal() {
    let s = Scratch::new();
    let mut turn = vec![text("Look: \u{1b}[2J\u{1b}[31mred\u{7}")];
    turn.extend(call(
        "c1",
        "bash",
        &serde_json::json!({ "command": "echo '\u{1b}]0;title\u{7}'" }).to_string(),
    ));
    turn.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[turn, vec![text("done\u{1b}[1A"), done("end_turn")]],
    );
    let out = s.run(&t, &["--yes"], "go");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Not a terminal: wonopcode's own colours are off, so any escape would be the model's.
    let said = String::from_utf8_lossy(&out.stdout);
    let shown = stderr(&out);
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{7}'),
        "{said:?}"
    );
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
    assert!(
        said.contains(r"Look: \u{1b}[2J\u{1b}[31mred\u{7}"),
        "{said:?}"
    );
    // `--json` keeps the data as it was.
    let out = s.run_json(&t, &["--yes"], "go");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(r"Look: \u001b[2J"), "{text}");
}

#[test]
fn commands_never_see_wonopcodes_keys() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    // A provider of the user's own, whose key lives in a variable with an innocent name.
    let config = s.config(
        "providers:\n  mine:\n    api: openai\n    base_url: http://127.0.0.1:9\n    key_env: MY_LLM_CREDENTIAL\n"
    );
    let mut turn = call("c1", "bash", r#"{"command": "env"}"#);
    turn.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, vec![text("ok"), done("end_turn")]]);
    let out = s.run_json_with_env(
        &t,
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-SECRET1"),
            ("OPENAI_API_KEY", "sk-SECRET2"),
            ("MY_LLM_CREDENTIAL", "SECRET3"),
            ("GITHUB_TOKEN", "SECRET4"),
            // Claude Code's gateway headers: a name no pattern would hide.
            ("ANTHROPIC_CUSTOM_HEADERS", "X-Gateway-Key: SECRET5"),
            ("ANTHROPIC_AUTH_TOKEN", "SECRET6"),
            ("HARMLESS_SETTING", "visible-value"),
        ],
        &[
            "--yes",
            "--history",
            history.to_str().unwrap(),
            "--config",
            &config,
        ],
        "go",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = crate::support::tool_results(&events(&out));
    let shown = tool_output(&results[0]);
    assert!(shown.contains("HARMLESS_SETTING=visible-value"), "{shown}");
    let everything = format!(
        "{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out),
        std::fs::read_to_string(&history).unwrap()
    );
    for secret in [
        "SECRET1", "SECRET2", "SECRET3", "SECRET4", "SECRET5", "SECRET6",
    ] {
        assert!(!everything.contains(secret), "{secret} leaked: {shown}");
    }

    // The policy of the config file: only what it lets through.
    std::fs::write(
        &config,
        "shell_environment_policy:\n  inherit: core\n  set:\n    CI: \"1\"\n  include_only: [PATH, CI]\n",
    )
    .unwrap();
    let out = crate::support::wonopcode()
        .args(["--json", "--yes", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("--config")
        .arg(&config)
        .arg("go")
        .env("HARMLESS_SETTING", "visible-value")
        .output()
        .unwrap();
    let results = crate::support::tool_results(&events(&out));
    let shown = tool_output(&results[0]);
    assert!(shown.contains("CI=1"), "{shown}");
    assert!(shown.contains("PATH="), "{shown}");
    assert!(!shown.contains("HARMLESS_SETTING"), "{shown}");
}

#[test]
fn a_torn_last_history_record_is_set_aside_and_nothing_is_lost() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    // Each run's transcript goes on from the answers the history holds.
    let answer = |name: &str, answered: usize, said: &str| {
        s.transcript_after(name, answered, &[vec![text(said), done("end_turn")]])
    };
    let first = answer("1.jsonl", 0, "First answer.");
    let out = s.run_json(&first, &["--history", history.to_str().unwrap()], "first?");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A crash or a full disk cuts the last record short.
    let whole = std::fs::read_to_string(&history).unwrap();
    let torn = &whole[..whole.len() - 12];
    std::fs::write(&history, torn).unwrap();

    // The first answer was in the torn record.
    let second = answer("2.jsonl", 0, "Second answer.");
    let out = s.run_json(
        &second,
        &["--history", history.to_str().unwrap()],
        "second?",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let aside = s.outside("h.jsonl.torn");
    assert_eq!(
        stderr(&out)
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .count(),
        1,
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains(&format!("it is kept in {}", aside.display())),
        "{}",
        stderr(&out)
    );
    let kept = std::fs::read_to_string(&aside).unwrap();
    assert_eq!(
        kept,
        format!("{}\n", &torn[torn.rfind('\n').unwrap() + 1..])
    );

    // The run after that reads the history back whole, with both prompts.
    let third = answer("3.jsonl", 1, "Third answer.");
    let out = s.run_json(&third, &["--history", history.to_str().unwrap()], "third?");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    for line in std::fs::read_to_string(&history).unwrap().lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("a history line is not whole ({e}): {line}"));
    }
    let users = crate::parity::user_prompts(&history);
    assert_eq!(users, ["first?", "second?", "third?"]);
}

#[test]
fn the_model_sees_the_real_end_of_a_long_output_and_its_real_size() {
    let s = Scratch::new();
    // 50 MB of output, then a last line to find.
    let item = single_call(
        &s,
        "bash",
        r#"{"command": "yes 0123456789 | head -c 50000000; echo THE-REAL-END"}"#,
        &["--yes"],
    );
    let shown = tool_output(&item);
    assert!(
        shown.trim_end().ends_with("THE-REAL-END"),
        "{}",
        &shown[shown.len().saturating_sub(200)..]
    );
    assert!(
        shown.contains("stdout:\n0123456789\n0123456789\n"),
        "{}",
        &shown[..200]
    );
    // 50,000,013 bytes of output and the headline, nearly all of it cut, said as such.
    let notice = shown
        .lines()
        .find(|l| l.starts_with("[... "))
        .unwrap_or_else(|| panic!("no notice in {}", &shown[..200]));
    let numbers: Vec<u64> = notice
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let (cut, total) = (numbers[0], numbers[numbers.len() - 1]);
    assert!(total > 50_000_000 && total < 50_000_100, "{notice}");
    assert!(cut > total - 10_100 && cut < total, "{notice}");
}

#[test]
fn walks_stay_inside_the_workspace_and_skip_special_files() {
    let s = Scratch::new();
    std::fs::write(s.outside("secret.txt"), "TOPSECRET outside\n").unwrap();
    std::fs::create_dir_all(s.outside("outdir")).unwrap();
    std::fs::write(s.outside("outdir/also.txt"), "TOPSECRET in a dir\n").unwrap();
    std::os::unix::fs::symlink(s.outside("secret.txt"), s.ws().join("lnfile")).unwrap();
    std::os::unix::fs::symlink(s.outside("outdir"), s.ws().join("lndir")).unwrap();
    s.file("inside.txt", "TOPSECRET is also a word inside\n");
    std::os::unix::fs::symlink(s.ws().join("inside.txt"), s.ws().join("lninside")).unwrap();
    let fifo = s.ws().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());

    let started = Instant::now();
    let item = single_call(&s, "grep", r#"{"pattern": "TOPSECRET"}"#, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a FIFO blocked the walk"
    );
    let found = tool_output(&item);
    assert!(
        !found.contains("outside") && !found.contains("in a dir"),
        "{found}"
    );
    assert!(found.contains("inside.txt:1:"), "{found}");
    assert!(
        found.contains("lninside:1:"),
        "a link inside the workspace is followed: {found}"
    );

    for (tool, args) in [
        ("list", r#"{"depth": 3}"#),
        ("glob", r#"{"pattern": "**/*"}"#),
    ] {
        let item = single_call(&s, tool, args, &[]);
        let listed = tool_output(&item);
        assert!(
            !listed.contains("lnfile") && !listed.contains("also.txt"),
            "{tool}: {listed}"
        );
        assert!(!listed.contains("pipe"), "{tool}: {listed}");
        assert!(listed.contains("inside.txt"), "{tool}: {listed}");
    }
}

#[test]
fn deny_rules_hold_however_the_path_is_spelled() {
    let s = Scratch::new();
    s.file("protected/f", "original\n");
    s.file("sub/keep.txt", "x\n");
    s.file(".env", "API_PASSWORD=hunter2\n");
    let denied_writes = [
        "--yes",
        "--deny",
        "write:protected/**",
        "--deny",
        "edit:protected/**",
    ];
    let item = single_call(
        &s,
        "write",
        r#"{"path": "sub/../protected/g", "content": "planted"}"#,
        &denied_writes,
    );
    assert_eq!(item["status"], "declined", "{item}");
    assert!(!s.ws().join("protected/g").exists());
    let absolute = s.ws().join("protected/f");
    let args = serde_json::json!({
        "path": absolute.to_str().unwrap(),
        "old_string": "original",
        "new_string": "changed",
    })
    .to_string();
    let item = single_call(&s, "edit", &args, &denied_writes);
    assert_eq!(item["status"], "declined", "{item}");
    assert_eq!(std::fs::read_to_string(&absolute).unwrap(), "original\n");

    let denied_reads = ["--deny", "read:.env"];
    for path in ["sub/../.env", ".//.env", "sub/./../.env", ".env"] {
        let args = serde_json::json!({ "path": path }).to_string();
        let item = single_call(&s, "read", &args, &denied_reads);
        assert_eq!(item["status"], "declined", "{path}: {item}");
        assert!(!tool_output(&item).contains("hunter2"), "{path}: {item}");
    }
    // A grep of the denied file itself finds nothing; without the rule it finds the text.
    let args = r#"{"pattern": "hunter2", "path": ".env"}"#;
    let item = single_call(&s, "grep", args, &[]);
    assert!(tool_output(&item).contains("hunter2"), "{item}");
    let item = single_call(&s, "grep", args, &denied_reads);
    assert!(!tool_output(&item).contains("hunter2"), "{item}");
    // A walk leaves a denied file out, wherever it starts. (Walks skip dotfiles anyway, so
    // the file walked for is not one: the control shows the walk finds it without the rule.)
    s.file("notes/keys.txt", "hunter2\n");
    let denied_notes = ["--deny", "read:notes/**"];
    for args in [
        r#"{"pattern": "hunter2"}"#,
        r#"{"pattern": "hunter2", "path": "sub/.."}"#,
    ] {
        let item = single_call(&s, "grep", args, &[]);
        assert!(
            tool_output(&item).contains("notes/keys.txt"),
            "{args}: {item}"
        );
        let item = single_call(&s, "grep", args, &denied_notes);
        assert!(!tool_output(&item).contains("hunter2"), "{args}: {item}");
        assert!(!tool_output(&item).contains("keys.txt"), "{args}: {item}");
    }
    let item = single_call(
        &s,
        "glob",
        r#"{"pattern": "**/*"}"#,
        &["--deny", "read:protected/**"],
    );
    assert!(!tool_output(&item).contains("protected/f"), "{item}");
    assert!(tool_output(&item).contains("sub/keep.txt"), "{item}");
}

#[test]
fn sigterm_and_sighup_stop_a_command_like_ctrl_c() {
    for (signal, code) in [("-TERM", 143), ("-HUP", 129)] {
        let s = Scratch::new();
        let history = s.outside("h.jsonl");
        let marker = format!("wonopcode-signal-test-{}", std::process::id());
        // Named, so that it can be looked for after wonopcode is gone.
        let command = format!("exec -a {marker}{signal} sleep 300");
        let (mut child, lines) = run_until_command_runs(&s, &history, &command, &[]);
        let sent = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{signal}: still running"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(code), "{signal}");
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        assert!(
            rest.iter().any(|l| l.contains(r#""status":"cancelled""#)),
            "{signal}: {rest:?}"
        );
        // The command is gone, not re-parented to init.
        assert!(
            !running(&format!("{marker}{signal}")),
            "{signal}: the command still runs"
        );
        // The history reads back, the cancelled call answered.
        let messages = crate::parity::history_messages(&history);
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "tool", "{signal}: {last}");
        assert_eq!(last["parts"][0]["is_error"], true, "{signal}: {last}");
    }
}

/// Starts a run (with `history`) whose model calls `bash` with `command`, then gives
/// `later` turns; returns once the command has been running for a moment, with the rest of
/// stdout.
fn run_until_command_runs(
    s: &Scratch,
    history: &std::path::Path,
    command: &str,
    later: &[Vec<serde_json::Value>],
) -> (
    std::process::Child,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    let mut turn = vec![text("Running.")];
    turn.extend(call(
        "c1",
        "bash",
        &serde_json::json!({ "command": command }).to_string(),
    ));
    turn.push(done("tool_use"));
    let mut turns = vec![turn];
    turns.extend_from_slice(later);
    let t = s.transcript("t.jsonl", &turns);
    let running = crate::support::spawn_until(
        crate::support::command()
            .args(["--json", "--yes", "--replay"])
            .arg(&t)
            .arg("-C")
            .arg(s.ws())
            .arg("--history")
            .arg(history)
            .arg("go"),
        &[r#""type":"item.started""#, r#""name":"bash""#],
    );
    std::thread::sleep(Duration::from_millis(300));
    running
}

/// Whether a process whose command line holds `name` is running (read from `/proc`).
fn running(name: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| String::from_utf8_lossy(&cmdline).contains(name))
}

#[test]
fn a_guest_cannot_load_or_probe_files_outside_by_module_path() {
    let s = Scratch::new();
    std::fs::write(s.outside("outside.wasm"), "not even a component").unwrap();
    let t = s.transcript("t.jsonl", &[]);
    let refusal = |file: &str| {
        format!(
            "spawn failed: module path `{file}`: not a component file in the workspace or a loop directory"
        )
    };
    let outside = s.outside("outside.wasm");
    let cases = [
        "/dev/zero".to_owned(),
        "/etc/shadow".to_owned(),
        "/no/such/file.wasm".to_owned(),
        "../outside.wasm".to_owned(),
        outside.display().to_string(),
    ];
    for file in &cases {
        let spec = serde_json::json!({ "module": { "path": file }, "task": "x" });
        let started = Instant::now();
        let out = s.run_json(
            &t,
            &["--agent-loop", wonopcode_wasm_host::guest_paths::MISBEHAVE],
            &format!("spawn {spec}"),
        );
        assert!(started.elapsed() < Duration::from_secs(120), "{file}");
        assert_eq!(out.status.code(), Some(0), "{file}: {}", stderr(&out));
        let answer = String::from_utf8_lossy(&out.stdout);
        // The same words whether the file exists, is special, or is outside.
        assert!(answer.contains(&refusal(file)), "{file}: {answer}");
    }
}

#[test]
fn bash_rules_see_every_command_the_shell_would_run() {
    let s = Scratch::new();
    s.file("x", "keep\n");
    // An allow rule must match every simple command; what it cannot prove safe is asked
    // about, and with nobody to ask it is declined.
    for command in [
        "ls && touch PWNED",
        "ls; touch PWNED",
        "ls $(touch PWNED)",
        "ls > PWNED",
        "env touch PWNED",
    ] {
        let args = serde_json::json!({ "command": command }).to_string();
        let item = single_call(&s, "bash", &args, &["--allow", "bash:ls"]);
        assert_eq!(item["status"], "declined", "{command}: {item}");
        assert!(!s.ws().join("PWNED").exists(), "{command}");
    }
    let item = single_call(
        &s,
        "bash",
        r#"{"command": "ls -a"}"#,
        &["--allow", "bash:ls"],
    );
    assert_eq!(item["status"], "completed", "{item}");

    // A deny rule holds however the command is spelled, even under --yes.
    for command in [
        "true; rm x",
        "/bin/rm x",
        "\\rm x",
        "'r'm x",
        "echo $(rm x)",
        "sh -c 'rm x'",
        "find . -name x -exec rm {} +",
    ] {
        let args = serde_json::json!({ "command": command }).to_string();
        let item = single_call(&s, "bash", &args, &["--yes", "--deny", "bash:rm"]);
        assert_eq!(item["status"], "declined", "{command}: {item}");
        assert!(s.ws().join("x").exists(), "{command}");
    }
}

#[test]
fn always_approves_the_exact_command_not_its_first_word() {
    let s = Scratch::new();
    let mut first = call("c1", "bash", r#"{"command": "ls -a"}"#);
    first.push(done("tool_use"));
    let mut second = call("c2", "bash", r#"{"command": "ls -a && touch X"}"#);
    second.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[first, second, vec![text("done"), done("end_turn")]],
    );
    let mut session = spawn(&s, &t, &[], "go");
    answer(
        &mut session,
        "allow `bash` on `ls -a`?",
        "a",
        "no prompt for the first command",
    );
    answer(
        &mut session,
        "allow `bash` on `ls -a && touch X`?",
        "n",
        "the second command was not asked about",
    );
    let (rest, code) = finish(session);
    assert_eq!(code, 0, "{rest}");
    assert!(!s.ws().join("X").exists());
}

#[test]
fn processes_a_command_detaches_end_with_its_call() {
    let s = Scratch::new();
    let command = "setsid sleep 8781 & (sleep 8782 &); nohup sleep 8783 >/dev/null 2>&1 & \
                   env -i /usr/bin/setsid /bin/sleep 8784 & sleep 0.3; echo started";
    let args = serde_json::json!({ "command": command }).to_string();
    let item = single_call(&s, "bash", &args, &["--yes"]);
    assert_eq!(item["status"], "completed", "{item}");
    assert!(tool_output(&item).contains("started"), "{item}");
    for seconds in ["8781", "8782", "8783", "8784"] {
        assert!(
            !running(&format!("sleep\0{seconds}")),
            "`sleep {seconds}` outlived its call"
        );
    }
}

#[test]
fn read_takes_only_what_it_returns_from_huge_files_and_file_tools_refuse_fifos() {
    let s = Scratch::new();
    // 32 KiB of text, then holes up to 4 GiB: only the lines asked for are read.
    let huge = s.ws().join("huge.log");
    let text: String = (1..=2048).map(|n| format!("line {n:>9}\n")).collect();
    std::fs::write(&huge, text).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&huge)
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    let item = single_call(
        &s,
        "read",
        r#"{"path": "huge.log", "start_line": 1, "end_line": 2}"#,
        &[],
    );
    assert_eq!(item["status"], "completed", "{item}");
    assert!(
        tool_output(&item).starts_with("line         1\nline         2\n"),
        "{item}"
    );
    assert!(
        tool_output(&item).contains("[more lines follow; read from start_line 3]"),
        "{item}"
    );
    let item = single_call(
        &s,
        "read",
        r#"{"path": "huge.log", "start_line": 2049}"#,
        &[],
    );
    assert!(tool_output(&item).contains("is a binary file"), "{item}");

    let fifo = s.ws().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for (tool, args) in [
        ("read", r#"{"path": "pipe"}"#),
        (
            "edit",
            r#"{"path": "pipe", "old_string": "a", "new_string": "b"}"#,
        ),
        ("write", r#"{"path": "pipe", "content": "x"}"#),
    ] {
        let item = single_call(&s, tool, args, &["--yes"]);
        assert_eq!(item["status"], "failed", "{tool}: {item}");
        assert!(
            tool_output(&item).contains("is not a regular file"),
            "{tool}: {item}"
        );
    }
}

/// Starts the misbehave guest on `prompt`, interrupts it (SIGINT) once `mark` is printed,
/// and returns its exit code and the events it printed after the mark.
fn interrupt_guest(prompt: &str, mark: &str) -> (Option<i32>, Vec<serde_json::Value>) {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("child answer"), done("end_turn")]]);
    let (mut child, lines) = crate::support::spawn_until(
        crate::support::command()
            .args(["--json", "--replay"])
            .arg(&t)
            .arg("-C")
            .arg(s.ws())
            .args(["--agent-loop", wonopcode_wasm_host::guest_paths::MISBEHAVE])
            .arg(prompt),
        &[mark],
    );
    // Read on while it runs: a full pipe would stop it at its next line.
    let reader = std::thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect()
    });
    std::thread::sleep(Duration::from_millis(500));
    let code = crate::support::interrupt(&mut child);
    (code, reader.join().unwrap())
}

#[test]
fn ctrl_c_stops_a_guest_wherever_it_is() {
    // Spinning in its own code, far from its compute budget (30 s).
    let (code, _) = interrupt_guest("spin", r#""type":"turn.started""#);
    assert_eq!(code, Some(130), "a spinning guest");

    // Spawning children one after another: it stops, and no child starts after the first
    // one cancelled.
    let (code, rest) = interrupt_guest("spawn-seq 1000000", r#""type":"context.started""#);
    assert_eq!(code, Some(130), "a spawning guest");
    // The first event that says so (the child in flight, or the root's turn if none was):
    // it must be there, or the check below would check nothing.
    let first_cancelled = rest
        .iter()
        .position(|e| e["status"] == "cancelled")
        .unwrap_or_else(|| panic!("no event says the run was cancelled: {rest:?}"));
    let late: Vec<_> = rest[first_cancelled..]
        .iter()
        .filter(|e| e["type"] == "context.started")
        .collect();
    assert!(
        late.is_empty(),
        "children started after cancellation: {late:?}"
    );
}

#[test]
fn a_run_has_one_memory_budget_and_a_bounded_number_of_contexts() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("unused"), done("end_turn")]]);
    let config = s.config("contexts:\n  max_memory_mb: 300\n  max_total: 30\n");
    let config = &config;
    let misbehave = wonopcode_wasm_host::guest_paths::MISBEHAVE;

    // Three nested contexts, the last allocating without end: the run's budget (300 MiB)
    // stops it, not each instance's own limit (512 MiB).
    let out = s.run_json(
        &t,
        &["--config", config, "--agent-loop", misbehave],
        "nest 3 alloc",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let nested = events(&out);
    let failed: Vec<&serde_json::Value> = nested
        .iter()
        .filter(|e| e["type"] == "context.completed" && e["status"] == "error")
        .collect();
    assert!(
        failed.iter().any(|e| e["error"]
            .as_str()
            .unwrap_or_default()
            .contains("the run's guests together would hold more than 300 MiB")),
        "{failed:?}"
    );

    // A tree where every context spawns three more ends once 30 have started.
    let out = s.run_json(
        &t,
        &["--config", config, "--agent-loop", misbehave],
        "fanout 3",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let started = events
        .iter()
        .filter(|e| e["type"] == "context.started")
        .count();
    assert_eq!(started, 30, "contexts started");
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("refused"), "{answer}");
}

#[test]
fn a_call_running_when_wonopcode_is_killed_is_recorded_as_started() {
    let s = Scratch::new();
    let history = s.outside("h.jsonl");
    let marker = format!("wonopcode-killed-test-{}", std::process::id());
    let command = format!("exec -a {marker} sleep 300");
    let answer = vec![text("the answer"), done("end_turn")];
    let (mut child, _lines) = run_until_command_runs(&s, &history, &command, &[answer]);
    // SIGKILL: nothing of wonopcode's own runs after it.
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::process::Command::new("pkill")
        .args(["-f", &marker])
        .status();

    let messages = crate::parity::history_messages(&history);
    assert_eq!(messages.last().unwrap()["role"], "assistant");
    // The next run reads the history and says what became of the call.
    let t2 = s.transcript_after("t2.jsonl", 1, &[vec![text("again"), done("end_turn")]]);
    let out = s.run_json(&t2, &["--history", history.to_str().unwrap()], "and now?");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let messages = crate::parity::history_messages(&history);
    let answer = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no answer to the call: {messages:?}"));
    let content = answer["parts"][0]["content"].as_str().unwrap_or_default();
    assert!(
        content.starts_with("interrupted: wonopcode stopped while this call was running"),
        "{answer}"
    );
}

/// A sibling swaps a directory of the workspace for a link to a directory outside it, and
/// back, as fast as it can, while the model writes into that directory again and again: no
/// write lands outside, however the swaps fall between the path check and the open.
#[test]
fn a_directory_swapped_for_a_link_mid_write_never_leads_a_write_out() {
    let s = Scratch::new();
    let outside = s.outside("ssh");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(s.ws().join("d")).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (ws, outside, stop) = (s.ws(), outside.clone(), stop.clone());
        std::thread::spawn(move || {
            let (dir, aside) = (ws.join("d"), ws.join("d.real"));
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if std::fs::rename(&dir, &aside).is_ok() {
                    let _ = std::os::unix::fs::symlink(&outside, &dir);
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(&dir);
                    let _ = std::fs::rename(&aside, &dir);
                    swaps += 1;
                    // The real directory stands a moment too, so some writes land even on
                    // a loaded machine (the test would else prove nothing).
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
            }
            swaps
        })
    };
    let turns: Vec<Vec<serde_json::Value>> = (0..150)
        .map(|i| {
            // Each call its own: the same call three times would end the run (doom loop).
            let args = serde_json::json!({"path": "d/authorized_keys", "content": format!("ssh-ed25519 ATTACKER{i}")});
            let mut turn = call(&format!("w{i}"), "write", &args.to_string());
            turn.push(done("tool_use"));
            turn
        })
        .chain([vec![text("ok"), done("end_turn")]])
        .collect();
    let t = s.transcript("t.jsonl", &turns);
    let out = s.run_json(&t, &["--yes", "--max-iterations", "200"], "write");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the swapper hardly ran ({swaps} swaps)");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The writes ran: those that fell between swaps landed inside.
    let written = crate::support::tool_results(&crate::support::events(&out))
        .iter()
        .filter(|item| item["status"] == "completed")
        .count();
    assert!(written > 0, "no write of the 150 succeeded");
    assert!(s.ws().join("d/authorized_keys").is_file());
    assert!(
        !outside.join("authorized_keys").exists(),
        "a write landed outside the workspace through a swapped directory"
    );
}
