//! Bad tool calls from the model go back to the model as error results (fail-open): the run
//! goes on and completes.

use crate::support::{
    Scratch, call, done, events, repo_root, single_call, stderr, text, tool_output, tool_results,
    wonopcode,
};

#[test]
fn invalid_json_arguments_are_reported_to_the_model() {
    let s = Scratch::new();
    let item = single_call(&s, "read", r#"{"path": "a.txt""#, &[]);
    assert_eq!(item["status"], "failed");
    assert!(
        tool_output(&item).contains("arguments for `read` are not valid JSON"),
        "{item}"
    );
}

#[test]
fn unknown_tool_lists_the_available_ones() {
    let s = Scratch::new();
    let item = single_call(&s, "teleport", "{}", &[]);
    assert_eq!(item["status"], "failed");
    assert!(tool_output(&item).contains("unknown tool `teleport`; available tools: apply_patch, bash, edit, glob, grep, list, read, todo, webfetch, write"), "{item}");
}

#[test]
fn schema_violation_names_the_field() {
    let s = Scratch::new();
    let item = single_call(&s, "read", r#"{"path": "a.txt", "start_line": "ten"}"#, &[]);
    assert_eq!(item["status"], "failed");
    assert!(
        tool_output(&item).contains("invalid arguments for `read`: field `/start_line`"),
        "{item}"
    );
    let item = single_call(&s, "write", r#"{"path": "a.txt"}"#, &["--yes"]);
    assert!(
        tool_output(&item).contains("\"content\" is a required property"),
        "{item}"
    );
}

#[test]
fn paths_outside_the_workspace_are_refused() {
    let s = Scratch::new();
    std::fs::write(s.outside("secret.txt"), "secret").unwrap();
    let item = single_call(&s, "read", r#"{"path": "../secret.txt"}"#, &[]);
    assert!(
        tool_output(&item).contains("path `../secret.txt` is outside the workspace"),
        "{item}"
    );
    let abs = format!(r#"{{"path": "{}"}}"#, s.outside("secret.txt").display());
    let item = single_call(&s, "read", &abs, &[]);
    assert!(
        tool_output(&item).contains("is outside the workspace"),
        "{item}"
    );
    assert!(!tool_output(&item).contains("secret\n"));
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_workspace_are_refused() {
    let s = Scratch::new();
    std::fs::write(s.outside("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(s.dir.path(), s.ws().join("escape")).unwrap();
    let item = single_call(&s, "read", r#"{"path": "escape/secret.txt"}"#, &[]);
    assert!(
        tool_output(&item).contains("is outside the workspace"),
        "{item}"
    );
    let item = single_call(
        &s,
        "write",
        r#"{"path": "escape/planted.txt", "content": "x"}"#,
        &["--yes"],
    );
    assert!(
        tool_output(&item).contains("is outside the workspace"),
        "{item}"
    );
    assert!(!s.outside("planted.txt").exists());
}

#[test]
fn edit_without_a_match_says_so() {
    let s = Scratch::new();
    s.file("a.txt", "alpha\nbeta\n");
    let item = single_call(
        &s,
        "edit",
        r#"{"path": "a.txt", "old_string": "gamma", "new_string": "delta"}"#,
        &["--yes"],
    );
    assert_eq!(item["status"], "failed");
    assert!(
        tool_output(&item).contains("old_string was not found in `a.txt`"),
        "{item}"
    );
}

#[test]
fn edit_with_several_matches_says_how_many() {
    let s = Scratch::new();
    let path = s.file("a.txt", "x = 1\nx = 1\n");
    let item = single_call(
        &s,
        "edit",
        r#"{"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}"#,
        &["--yes"],
    );
    assert!(
        tool_output(&item).contains("old_string matches 2 places in `a.txt`"),
        "{item}"
    );
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        "x = 1\nx = 1\n",
        "file untouched"
    );
}

#[test]
fn edit_with_one_match_changes_the_file() {
    let s = Scratch::new();
    let path = s.file("a.txt", "x = 1\ny = 1\n");
    let item = single_call(
        &s,
        "edit",
        r#"{"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}"#,
        &["--yes"],
    );
    assert_eq!(item["status"], "completed");
    assert_eq!(item["file_change"]["kind"], "update");
    assert_eq!(std::fs::read_to_string(path).unwrap(), "x = 2\ny = 1\n");
}

#[test]
fn bash_timeout_kills_the_command() {
    let s = Scratch::new();
    let started = std::time::Instant::now();
    let item = single_call(
        &s,
        "bash",
        r#"{"command": "echo started; sleep 20; echo never", "timeout_ms": 300}"#,
        &["--yes"],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(item["status"], "failed");
    assert!(
        tool_output(&item).contains("timed out after 300 ms; the command was killed"),
        "{item}"
    );
    assert!(tool_output(&item).contains("started"));
    assert!(!tool_output(&item).contains("never"));
}

#[test]
fn denied_calls_are_declined_and_explained() {
    let s = Scratch::new();
    let item = single_call(&s, "write", r#"{"path": "a.txt", "content": "x"}"#, &[]);
    assert_eq!(item["status"], "declined");
    assert!(
        tool_output(&item).contains(
            "needs approval and nobody can be asked; run with --yes, or --allow 'write:a.txt'"
        ),
        "{item}"
    );
    assert!(!s.ws().join("a.txt").exists());
    // On the terminal: the reason under the call, and exit code 6 with how to let it run.
    let mut turn = call("c1", "bash", r#"{"command": "echo hi"}"#);
    turn.push(done("tool_use"));
    let t = s.transcript("t2.jsonl", &[turn, vec![text("ok"), done("end_turn")]]);
    let out = s.run(&t, &[], "go");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("(not run: `bash` on `echo hi` needs approval and nobody can be asked; run with --yes, or --allow 'bash:echo hi')"),
        "{said}"
    );
    assert!(
        said.contains("error: 1 tool call(s) needed approval and nobody could give it"),
        "{said}"
    );
    let item = single_call(
        &s,
        "bash",
        r#"{"command": "rm -f x"}"#,
        &["--yes", "--deny", "bash:rm"],
    );
    assert!(
        tool_output(&item).contains("denied by the permission policy"),
        "{item}"
    );
}

#[test]
fn apply_patch_changes_files_and_a_stale_hunk_changes_none() {
    let s = Scratch::new();
    s.file("greet.sh", "#!/bin/sh\necho \"Hello, $1\"\n");
    s.file("old.txt", "gone soon\n");
    let patch = "*** Begin Patch\n*** Update File: greet.sh\n@@\n #!/bin/sh\n-echo \"Hello, $1\"\n+echo \"Hello, $1!\"\n*** Add File: docs/usage.md\n+Run `greet.sh NAME`.\n*** Delete File: old.txt\n*** End Patch\n";
    let args = serde_json::json!({ "input": patch }).to_string();
    let item = single_call(&s, "apply_patch", &args, &["--yes"]);
    assert_eq!(item["status"], "completed", "{item}");
    assert_eq!(
        std::fs::read_to_string(s.ws().join("greet.sh")).unwrap(),
        "#!/bin/sh\necho \"Hello, $1!\"\n"
    );
    assert!(s.ws().join("docs/usage.md").exists());
    assert!(!s.ws().join("old.txt").exists());
    let kinds: Vec<&str> = item["file_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["update", "add", "delete"], "{item}");

    let stale = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: greet.sh\n@@\n-echo \"Bye\"\n+echo \"Bye!\"\n*** End Patch\n";
    let args = serde_json::json!({ "input": stale }).to_string();
    let item = single_call(&s, "apply_patch", &args, &["--yes"]);
    assert_eq!(item["status"], "failed", "{item}");
    assert!(
        item["output"]
            .as_str()
            .unwrap()
            .contains("`greet.sh`: hunk 1 (patch line 5) does not apply"),
        "{item}"
    );
    assert!(
        !s.ws().join("new.txt").exists(),
        "a failed patch writes nothing"
    );
}

#[test]
fn a_file_changed_since_the_model_read_it_is_not_edited_until_it_is_read_again() {
    let s = Scratch::new();
    s.file("a.txt", "one\n");
    let t = s.transcript(
        "t.jsonl",
        &[
            crate::support::calling("r1", "read", r#"{"path": "a.txt"}"#),
            // Someone else changes it (here a command; a sibling context or the person alike).
            crate::support::calling("b1", "bash", r#"{"command": "echo two >> a.txt"}"#),
            crate::support::calling(
                "e1",
                "edit",
                r#"{"path": "a.txt", "old_string": "one", "new_string": "ONE"}"#,
            ),
            crate::support::calling("r2", "read", r#"{"path": "a.txt"}"#),
            crate::support::calling(
                "e2",
                "edit",
                r#"{"path": "a.txt", "old_string": "one", "new_string": "ONE"}"#,
            ),
            crate::support::answer("Done."),
        ],
    );
    let out = s.run_json(&t, &["--yes"], "Edit a.txt.");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = crate::support::tool_results(&crate::support::events(&out));
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r["call_id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no result of {id}: {results:?}"))
    };
    let refused = by_id("e1");
    assert_eq!(refused["status"], "failed", "{refused}");
    assert!(tool_output(&refused).contains("read it again"), "{refused}");
    // Refused, it changed nothing; read again, the same edit is made on what is there.
    assert_eq!(by_id("e2")["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(s.ws().join("a.txt")).unwrap(),
        "ONE\ntwo\n"
    );
}

#[test]
fn a_guests_custom_tool_call_is_checked_against_its_schema_and_an_unknown_name_lists_the_guests_tools()
 {
    let s = Scratch::new();
    // The sample orchestrator's `delegate` requires `specialist` and `task`; `teleport` is
    // nobody's.
    let mut first = call("c1", "delegate", "{}");
    first.extend(call("c2", "teleport", "{}"));
    first.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[first, vec![text("ok"), done("end_turn")]]);
    let out = wonopcode()
        .arg("--loops-dir")
        .arg(repo_root().join("examples/agents"))
        .args(["--agent-loop-name", "orchestrator", "--json", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let delegate = tool_results(&events)
        .into_iter()
        .find(|i| i["name"] == "delegate")
        .unwrap_or_else(|| panic!("no delegate call: {events:?}"));
    assert!(
        tool_output(&delegate).starts_with(
            "invalid arguments for `delegate`: arguments: \"specialist\" is a required property"
        ),
        "{delegate}"
    );
    // What the model reads for `teleport`: the names it may call, the guest's own included.
    let tool_message = events
        .iter()
        .find(|e| e["type"] == "message.created" && e["message"]["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool message: {events:?}"))
        .to_string();
    assert!(
        tool_message.contains("unknown tool `teleport`; available tools: ")
            && tool_message.contains("delegate, delegate_parallel"),
        "{tool_message}"
    );
}
